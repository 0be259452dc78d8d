//! Prefill or decode, from the evidence a trace holds, for forward passes that no annotation,
//! graph launch or stage-split file names. In order:
//!
//! 1. the GEMM M dimension from `Input Dims`: a decode forward multiplies one token per sequence
//!    (M = the batch), a prefill every prompt token (M = the tokens), so the M of the two kinds
//!    sit apart: the largest jump (at least 4x) in the sorted M splits them;
//! 2. the attention kernels: a forward whose attention kernels are those of known decode steps is a
//!    decode; one that shares none with them is a prefill (the other kind);
//! 3. the execution mode: in a rank whose decode steps are graph launches, an eager forward is a
//!    prefill (engines capture graphs for decode batch sizes; a prefill's token count varies, so it
//!    runs eagerly);
//! 4. the wall: a prefill is one cluster, decodes another; against known decode steps, a wall
//!    within half to twice their median is a decode and one over 4x a prefill; without them, the
//!    largest jump (at least 4x) in the sorted walls splits long (prefill) from short (decode).
//!
//! A forward none of these decides stays undecided: it is reported, never guessed.

use std::collections::HashSet;

use serde::Serialize;

use crate::links::Links;
use crate::reader::model::{parse_input_dims, NameId, RankTrace};
use crate::taxonomy::{Category, Class};

use super::segment::MIN_JUMP;
use super::{category_of, is_attention, StepKind};

/// What decided the kind of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// A `-DECODE` / `-EXTEND` file name.
    StageFile,
    /// The GEMM M dimension from `Input Dims`.
    GemmM,
    /// The attention kernels, against those of known steps.
    AttentionKernels,
    /// Eager among graph-launched decode steps.
    EagerAmongGraphs,
    /// The wall, against known decode steps or as a cluster of its own.
    Wall,
    /// Nothing decided: the step is not counted as either kind.
    Undecided,
}

/// The label of one forward pass found by segmentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StepLabel {
    /// Index into [`crate::reader::model::Run::traces`].
    pub trace: usize,
    pub start: i64,
    pub end: i64,
    /// `None`: undecided.
    pub kind: Option<StepKind>,
    pub evidence: Evidence,
    /// The largest GEMM M of the step, from `Input Dims`.
    pub gemm_m: Option<i64>,
}

/// Steps decided per kind of evidence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EvidenceCounts {
    pub stage_file: u64,
    pub gemm_m: u64,
    pub attention_kernels: u64,
    pub eager_among_graphs: u64,
    pub wall: u64,
    pub undecided: u64,
}

impl EvidenceCounts {
    /// No step labelled.
    pub fn is_empty(&self) -> bool {
        *self == EvidenceCounts::default()
    }

    pub fn add(&mut self, evidence: Evidence) {
        match evidence {
            Evidence::StageFile => self.stage_file += 1,
            Evidence::GemmM => self.gemm_m += 1,
            Evidence::AttentionKernels => self.attention_kernels += 1,
            Evidence::EagerAmongGraphs => self.eager_among_graphs += 1,
            Evidence::Wall => self.wall += 1,
            Evidence::Undecided => self.undecided += 1,
        }
    }

    pub fn merge(&mut self, other: &EvidenceCounts) {
        self.stage_file += other.stage_file;
        self.gemm_m += other.gemm_m;
        self.attention_kernels += other.attention_kernels;
        self.eager_among_graphs += other.eager_among_graphs;
        self.wall += other.wall;
        self.undecided += other.undecided;
    }
}

/// What a forward pass holds that tells its kind.
#[derive(Debug, Clone, Default)]
pub(crate) struct Facts {
    pub gemm_m: Option<i64>,
    pub attention: Vec<NameId>,
    pub wall: i64,
    /// A known step launched by one graph launch, or a segment holding graph-launched activities
    /// (piecewise graphs): not an eager forward.
    pub graph: bool,
}

/// The facts of a set of activities of `trace`.
pub(crate) fn facts(
    trace: &RankTrace,
    links: &Links<'_>,
    activities: &[u32],
    classes: &[Class],
) -> Facts {
    let mut gemm_m: Option<i64> = None;
    let mut attention = Vec::new();
    let (mut start, mut end) = (i64::MAX, i64::MIN);
    for &i in activities {
        let a = &trace.gpu[i as usize];
        start = start.min(a.ts);
        end = end.max(a.end());
        if is_attention(a, classes) {
            attention.push(a.name);
        }
        if matches!(
            category_of(a, classes),
            Category::DenseGemm | Category::MoeGemm
        ) {
            let m = links
                .cpu_op_of(a)
                .and_then(|op| trace.cpu_ops.get(op))
                .and_then(|op| op_gemm_m(trace.name(op.name), trace.name(op.input_dims?)));
            gemm_m = gemm_m.max(m);
        }
    }
    attention.sort_unstable();
    attention.dedup();
    Facts {
        gemm_m,
        attention,
        wall: end.saturating_sub(start).max(0),
        graph: false,
    }
}

/// The M of a GEMM op from its `Input Dims`: the rows of its activation (`addmm`: the second
/// input; batched products: the middle dimension; else every dimension of the first matrix but
/// the last). `None` when the dims say nothing.
fn op_gemm_m(op_name: &str, raw_dims: &str) -> Option<i64> {
    let inputs = parse_input_dims(raw_dims);
    let name = op_name.to_ascii_lowercase();
    let a = if name.contains("addmm") {
        inputs.get(1)?
    } else {
        inputs.iter().find(|d| d.len() >= 2)?
    };
    let m = match a.len() {
        3 if name.contains("bmm") => a[1],
        n if n >= 2 => a[..n - 1]
            .iter()
            .try_fold(1i64, |acc, &d| acc.checked_mul(d))?,
        _ => return None,
    };
    (m > 0).then_some(m)
}

/// The geometric middle of the largest jump (at least [`MIN_JUMP`]) in the sorted values.
fn split_point(values: impl Iterator<Item = i64>) -> Option<f64> {
    let mut v: Vec<i64> = values.filter(|&x| x > 0).collect();
    v.sort_unstable();
    v.dedup();
    v.windows(2)
        .map(|w| (w[1] as f64 / w[0] as f64, w[0], w[1]))
        .filter(|&(r, _, _)| r >= MIN_JUMP)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, lo, hi)| (lo as f64 * hi as f64).sqrt())
}

fn side(value: i64, split: f64) -> StepKind {
    if (value as f64) < split {
        StepKind::Decode
    } else {
        StepKind::Prefill
    }
}

/// Labels `steps` (the forward passes segmentation found) given the steps of known kind of the
/// same trace. One `(kind, evidence)` per step.
pub(crate) fn label(
    steps: &[Facts],
    known: &[(StepKind, Facts)],
) -> Vec<(Option<StepKind>, Evidence)> {
    let mut out = vec![(None, Evidence::Undecided); steps.len()];
    by_gemm_m(steps, known, &mut out);
    by_attention(steps, known, &mut out);
    by_mode(steps, known, &mut out);
    by_wall(steps, known, &mut out);
    out
}

fn by_gemm_m(
    steps: &[Facts],
    known: &[(StepKind, Facts)],
    out: &mut [(Option<StepKind>, Evidence)],
) {
    let all = steps
        .iter()
        .chain(known.iter().map(|(_, f)| f))
        .filter_map(|f| f.gemm_m);
    let Some(split) = split_point(all) else {
        return;
    };
    // Known steps on the wrong side: M does not separate the kinds in this trace.
    let consistent = known
        .iter()
        .all(|(k, f)| f.gemm_m.is_none_or(|m| side(m, split) == *k));
    if !consistent {
        return;
    }
    for (f, o) in steps.iter().zip(out.iter_mut()) {
        if let Some(m) = f.gemm_m {
            *o = (Some(side(m, split)), Evidence::GemmM);
        }
    }
}

/// Attention kernel names of the steps of one kind, known or decided.
fn names_of(
    kind: StepKind,
    steps: &[Facts],
    known: &[(StepKind, Facts)],
    out: &[(Option<StepKind>, Evidence)],
) -> HashSet<NameId> {
    let decided = steps
        .iter()
        .zip(out)
        .filter(|(_, o)| o.0 == Some(kind))
        .map(|(f, _)| f);
    known
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, f)| f)
        .chain(decided)
        .flat_map(|f| f.attention.iter().copied())
        .collect()
}

fn by_attention(
    steps: &[Facts],
    known: &[(StepKind, Facts)],
    out: &mut [(Option<StepKind>, Evidence)],
) {
    let decode = names_of(StepKind::Decode, steps, known, out);
    let prefill = names_of(StepKind::Prefill, steps, known, out);
    for (f, o) in steps.iter().zip(out.iter_mut()) {
        if o.0.is_some() || f.attention.is_empty() {
            continue;
        }
        let within = |set: &HashSet<NameId>| f.attention.iter().all(|n| set.contains(n));
        let apart = |set: &HashSet<NameId>| f.attention.iter().all(|n| !set.contains(n));
        // Without prefill kernels to tell apart, sharing decode's kernels proves nothing: a
        // prefill may run the same attention kernel.
        let kind =
            if !decode.is_empty() && !prefill.is_empty() && within(&decode) && apart(&prefill) {
                Some(StepKind::Decode)
            } else if (!decode.is_empty() && apart(&decode))
                || (!prefill.is_empty() && within(&prefill))
            {
                Some(StepKind::Prefill)
            } else {
                None
            };
        if kind.is_some() {
            *o = (kind, Evidence::AttentionKernels);
        }
    }
}

fn by_mode(steps: &[Facts], known: &[(StepKind, Facts)], out: &mut [(Option<StepKind>, Evidence)]) {
    let graph_decode = known.iter().any(|(k, f)| *k == StepKind::Decode && f.graph);
    if !graph_decode {
        return;
    }
    for (f, o) in steps.iter().zip(out.iter_mut()) {
        if o.0.is_none() && !f.graph {
            *o = (Some(StepKind::Prefill), Evidence::EagerAmongGraphs);
        }
    }
}

fn median(values: &mut [i64]) -> Option<f64> {
    values.sort_unstable();
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2] as f64),
        _ => Some((values[n / 2 - 1] as f64 + values[n / 2] as f64) / 2.0),
    }
}

fn by_wall(steps: &[Facts], known: &[(StepKind, Facts)], out: &mut [(Option<StepKind>, Evidence)]) {
    let mut decode_walls: Vec<i64> = known
        .iter()
        .filter(|(k, _)| *k == StepKind::Decode)
        .map(|(_, f)| f.wall)
        .chain(
            steps
                .iter()
                .zip(out.iter())
                .filter(|(_, o)| o.0 == Some(StepKind::Decode))
                .map(|(f, _)| f.wall),
        )
        .collect();
    if let Some(m) = median(&mut decode_walls).filter(|&m| m > 0.0) {
        for (f, o) in steps.iter().zip(out.iter_mut()) {
            let r = f.wall as f64 / m;
            let kind = if o.0.is_some() {
                None
            } else if (0.5..=2.0).contains(&r) {
                Some(StepKind::Decode)
            } else if r >= MIN_JUMP {
                Some(StepKind::Prefill)
            } else {
                None
            };
            if kind.is_some() {
                *o = (kind, Evidence::Wall);
            }
        }
        return;
    }
    let open: Vec<usize> = (0..steps.len()).filter(|&i| out[i].0.is_none()).collect();
    if let Some(split) = split_point(open.iter().map(|&i| steps[i].wall)) {
        for i in open {
            out[i] = (Some(side(steps[i].wall, split)), Evidence::Wall);
        }
    }
}
