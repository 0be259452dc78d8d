//! SGLang `step[...]` CPU annotations: parsing and lookup by host thread and time.

use std::collections::HashMap;

use super::StepKind;

/// A parsed CPU `step[...]` annotation.
pub(super) struct StepAnnotation {
    pub(super) ts: i64,
    pub(super) end: i64,
    pub(super) kind: Option<StepKind>,
    pub(super) batch_size: Option<u32>,
    /// Its part in a speculative-decoding iteration, if the name says.
    pub(super) spec: Option<SpecRole>,
}

/// The part a forward plays in a speculative-decoding (EAGLE/MTP) iteration: SGLang's loop runs
/// the draft model's decode steps, the target model's verify, then the draft model's extend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpecRole {
    /// The target model's `TARGET_VERIFY` forward.
    Verify,
    /// A draft-model forward before the verify (`draft step[DECODE ...]`).
    Draft,
    /// The draft model's extend after the verify (`DRAFT_EXTEND`, `DRAFT_EXTEND_V2`).
    DraftExtend,
}

/// What an annotation's name says: the step kind (`None`: not a forward of the loop), the batch
/// size, and the part the forward plays in a speculative iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Label {
    pub(super) kind: Option<StepKind>,
    pub(super) batch_size: Option<u32>,
    pub(super) spec: Option<SpecRole>,
}

impl Label {
    fn plain(kind: Option<StepKind>, batch_size: Option<u32>) -> Label {
        Label {
            kind,
            batch_size,
            spec: None,
        }
    }
}

/// Parses `step[DECODE bs=64]`, `step[EXTEND bs=15 toks=15360]`: the mode and the batch size.
/// `None` when the name is not a step annotation; a `kind` of `None` for a mode that is not a step.
///
/// The names are SGLang's `build_step_span_name` (sgl-project/sglang,
/// `python/sglang/srt/utils/profile_utils.py`): `step[{forward_mode.name} bs={batch_size}]`,
/// `step[EXTEND bs=N toks=T]`, written by `ModelRunner.forward` around every forward of the target
/// and of the draft model runner alike. Speculative decoding (`eagle_worker.py` and
/// `eagle_worker_v2.py`, `forward_batch_generation`) runs per decode iteration the draft model's
/// decode steps (`draft`), the target's verify (`verify`: `TARGET_VERIFY`), then the draft model's
/// extend over the accepted tokens (`forward_draft_extend_after_decode`: `DRAFT_EXTEND`;
/// `_draft_extend_for_decode` in v2: `DRAFT_EXTEND_V2`). A draft step writes its own mode
/// (`DECODE`), so later SGLang prefixes the draft runner's spans with `draft ` (`draft
/// step[DECODE bs=32]`); a plain `step[DECODE ...]` in a trace that holds verify steps is a draft
/// step too (the target never decodes outside a verify when speculating). `DRAFT_EXTEND` is part of
/// the decode iteration, not a prefill: the draft model's prefill after a target prefill is an
/// `EXTEND` (prefixed `draft ` or not).
pub(super) fn parse_step_annotation(name: &str) -> Option<Label> {
    let (draft, name) = match name.strip_prefix("draft ") {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    let body = name.strip_prefix("step[")?;
    let body = body.strip_suffix(']').unwrap_or(body);
    let mut words = body.split_whitespace();
    let (kind, spec) = match (words.next(), draft) {
        (Some("DECODE"), false) => (Some(StepKind::Decode), None),
        (Some("DECODE") | Some("TARGET_VERIFY"), true) => {
            (Some(StepKind::Decode), Some(SpecRole::Draft))
        }
        (Some("TARGET_VERIFY"), false) => (Some(StepKind::Decode), Some(SpecRole::Verify)),
        (Some("DRAFT_EXTEND") | Some("DRAFT_EXTEND_V2"), _) => {
            (Some(StepKind::Decode), Some(SpecRole::DraftExtend))
        }
        (Some("EXTEND"), _) => (Some(StepKind::Prefill), None),
        (Some("MIXED"), _) => (Some(StepKind::Mixed), None),
        _ => (None, None),
    };
    let batch_size = words
        .filter_map(|w| w.strip_prefix("bs="))
        .find_map(|v| v.parse::<u32>().ok());
    Some(Label {
        kind,
        batch_size,
        spec,
    })
}

/// Parses vLLM's step annotation: `execute_context_1(888_788544)_generation_0(0)`, the default
/// since vllm-project/vllm#22496, or `execute_8192_context_9(...)_generation_37(...)` with the
/// forward's tokens first (`detailed_trace_annotation=true`, vllm-project/vllm#37524): the
/// requests in prefill (context) and in decode (generation). Both: mixed; context alone:
/// prefill; generation alone: decode. `None` when the name is not such an annotation; a forward
/// of neither is not a step (`Some((None, _))`).
pub(super) fn parse_execute_annotation(name: &str) -> Option<Label> {
    let rest = name.strip_prefix("execute_")?;
    let rest = match rest.strip_prefix("context_") {
        Some(stock) => stock,
        None => {
            let (tokens, rest) = rest.split_once("_context_")?;
            // The detailed form: a token count, nothing else (not `execute_diffusion_…`).
            tokens.parse::<u64>().ok()?;
            rest
        }
    };
    let count = |s: &str| -> Option<u64> {
        let digits: &str = &s[..s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len())];
        digits.parse().ok()
    };
    let context = count(rest)?;
    let (_, after) = rest.split_once("_generation_")?;
    let generation = count(after)?;
    let kind = match (context > 0, generation > 0) {
        (true, true) => Some(StepKind::Mixed),
        (true, false) => Some(StepKind::Prefill),
        (false, true) => Some(StepKind::Decode),
        (false, false) => None,
    };
    let requests = context.saturating_add(generation);
    Some(Label::plain(
        kind,
        u32::try_from(requests).ok().filter(|&n| n > 0),
    ))
}

/// PyTorch profiler's iteration annotation, `ProfilerStep#N` (written by `torch.profiler.profile`
/// on each `step()`): the iteration number, `None` for another name.
pub(super) fn parse_profiler_step(name: &str) -> Option<u64> {
    name.strip_prefix("ProfilerStep#")?.parse().ok()
}

/// xDiT's annotation of one diffusion pipeline call, `execute_diffusion_1_256x256`: its steps
/// are stages of different shape (text encoder, denoising steps, VAE decode), not forwards of a
/// decode loop.
pub(super) fn is_diffusion_annotation(name: &str) -> bool {
    name.starts_with("execute_diffusion_")
}

/// An annotation name with every run of digits folded to `N` (`ProfilerStep#12` →
/// `ProfilerStep#N`), so that the names a trace repeats with a counter count as one.
pub(super) fn folded_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

/// Step annotations of one host thread, sorted by start, with the running maximum end so that a
/// lookup can stop as soon as no earlier annotation can still contain the time.
struct ThreadAnnotations {
    /// (start, index into the annotation list), sorted by start.
    starts: Vec<(i64, usize)>,
    /// Running maximum of the ends over `starts[..=i]`.
    max_end: Vec<i64>,
}

pub(super) struct AnnotationIndex {
    threads: HashMap<u64, ThreadAnnotations>,
}

impl AnnotationIndex {
    pub(super) fn new(annotations: &[(u64, StepAnnotation)]) -> Self {
        let mut by_thread: HashMap<u64, Vec<(i64, usize)>> = HashMap::new();
        for (i, (tid, a)) in annotations.iter().enumerate() {
            by_thread.entry(*tid).or_default().push((a.ts, i));
        }
        let threads = by_thread
            .into_iter()
            .map(|(tid, mut starts)| {
                starts.sort_unstable();
                let mut max_end = Vec::with_capacity(starts.len());
                let mut running = i64::MIN;
                for &(_, i) in &starts {
                    running = running.max(annotations[i].1.end);
                    max_end.push(running);
                }
                (tid, ThreadAnnotations { starts, max_end })
            })
            .collect();
        AnnotationIndex { threads }
    }

    /// The latest-starting annotation of thread `tid` whose `[ts, ts+dur]` contains `t`.
    pub(super) fn containing(
        &self,
        annotations: &[(u64, StepAnnotation)],
        tid: u64,
        t: i64,
    ) -> Option<usize> {
        let thread = self.threads.get(&tid)?;
        let mut k = thread.starts.partition_point(|&(s, _)| s <= t);
        while k > 0 {
            k -= 1;
            if thread.max_end[k] < t {
                return None;
            }
            let i = thread.starts[k].1;
            if annotations[i].1.end >= t {
                return Some(i);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> Option<(Option<StepKind>, Option<u32>)> {
        parse_execute_annotation(name).map(|l| (l.kind, l.batch_size))
    }

    #[test]
    fn execute_annotations_tell_the_kind_by_their_request_counts() {
        assert_eq!(
            p("execute_8192_context_9(sq8155sk8430sqsq7475785sqsk7671310)_generation_37(sq37sk34489sqsq37sqsk34489)"),
            Some((Some(StepKind::Mixed), Some(46)))
        );
        assert_eq!(
            p("execute_15360_context_15(sq15360sk15360)_generation_0(sq0sk0sqsq0sqsk0)"),
            Some((Some(StepKind::Prefill), Some(15)))
        );
        assert_eq!(
            p("execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086)"),
            Some((Some(StepKind::Decode), Some(32)))
        );
        assert_eq!(
            p("execute_0_context_0()_generation_0()"),
            Some((None, None))
        );
        assert_eq!(p("execute_diffusion_1_256x256"), None);
        // vLLM's default (no token count), as in the shared B200 trace: the parentheses hold
        // `_`-separated counts.
        assert_eq!(
            p("execute_context_1(888_788544)_generation_0(0)"),
            Some((Some(StepKind::Prefill), Some(1)))
        );
        assert_eq!(
            p("execute_context_0(0)_generation_64(64_120000)"),
            Some((Some(StepKind::Decode), Some(64)))
        );
        assert_eq!(
            p("execute_context_2(30_4000)_generation_30(30_9000)"),
            Some((Some(StepKind::Mixed), Some(32)))
        );
        assert_eq!(p("execute_context_x_generation_1"), None);
        assert_eq!(p("execute_1_context_x_generation_1"), None);
        assert_eq!(p("step[DECODE bs=1]"), None);
        assert!(
            parse_execute_annotation("execute_context_1(1)_generation_0(0)")
                .is_some_and(|l| l.spec.is_none())
        );
    }

    #[test]
    fn profiler_steps_and_diffusion_calls_are_told_by_their_names() {
        assert_eq!(parse_profiler_step("ProfilerStep#1009"), Some(1009));
        assert_eq!(parse_profiler_step("ProfilerStep#"), None);
        assert_eq!(parse_profiler_step("ProfilerStep"), None);
        assert!(is_diffusion_annotation("execute_diffusion_1_256x256"));
        assert!(!is_diffusion_annotation(
            "execute_context_1(8)_generation_0(0)"
        ));
        assert_eq!(folded_name("ProfilerStep#12"), "ProfilerStep#N");
        assert_eq!(folded_name("nccl:all_reduce"), "nccl:all_reduce");
        assert_eq!(folded_name("a12b3"), "aNbN");
    }
}
