//! SGLang `step[...]` CPU annotations: parsing and lookup by host thread and time.

use std::collections::HashMap;

use super::StepKind;

/// A parsed CPU `step[...]` annotation.
pub(super) struct StepAnnotation {
    pub(super) ts: i64,
    pub(super) end: i64,
    pub(super) kind: Option<StepKind>,
    pub(super) batch_size: Option<u32>,
}

/// Parses `step[DECODE bs=64]`, `step[EXTEND bs=15 toks=15360]`: the mode and the batch size.
/// `None` when the name is not a step annotation; `Some((None, _))` for a mode that is not a step.
pub(super) fn parse_step_annotation(name: &str) -> Option<(Option<StepKind>, Option<u32>)> {
    let body = name.strip_prefix("step[")?;
    let body = body.strip_suffix(']').unwrap_or(body);
    let mut words = body.split_whitespace();
    let kind = match words.next() {
        Some("DECODE") => Some(StepKind::Decode),
        Some("EXTEND") | Some("MIXED") | Some("DRAFT_EXTEND") => Some(StepKind::Prefill),
        _ => None,
    };
    let batch_size = words
        .filter_map(|w| w.strip_prefix("bs="))
        .find_map(|v| v.parse::<u32>().ok());
    Some((kind, batch_size))
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
