//! Decode iterations: a serving loop's time between one decode forward's start and the next one's,
//! the forward plus whatever the host did before the next (scheduling, sampling, input
//! preparation, Python between graph replays). The GPU idles in that gap; users pay for it in
//! time per output token.
//!
//! Consecutive means within one uninterrupted decode loop of one trace: the next forward of the
//! rank's trace is a decode forward, with no prefill, mixed or other-label step between them. The
//! last forward of a trace (its window's end) has no iteration.

use crate::reader::model::RankTrace;

use super::Step;

/// One decode iteration of one rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iteration {
    /// Index into [`Run::traces`](crate::reader::model::Run) of the trace.
    pub trace: usize,
    /// The decode forward's first start and last end, ns.
    pub start: i64,
    pub end: i64,
    /// The next decode forward's first start, ns.
    pub next: i64,
    /// GPU busy time (the union over streams) of activities that start between the forward's
    /// end and the next forward's start, ns: kernels outside any step (sampling, copies).
    pub gap_busy_ns: i64,
    /// Whether the forward is among the steady ones (not a stalled outlier).
    pub kept: bool,
}

impl Iteration {
    /// Start to next start, ns.
    pub fn iter_ns(&self) -> i64 {
        self.next - self.start
    }

    /// The time between the forward's end and the next forward's start, ns.
    pub fn gap_ns(&self) -> i64 {
        self.next - self.end
    }

    /// The GPU-idle part of the gap, ns.
    pub fn idle_ns(&self) -> i64 {
        (self.gap_ns() - self.gap_busy_ns).max(0)
    }
}

/// Where a step of any kind lies on its trace, and whether it is a decode forward (kept or not).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mark {
    pub trace: usize,
    pub start: i64,
    pub end: i64,
    pub kind: MarkKind,
}

/// What a marked step is, as far as iterations care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MarkKind {
    /// A decode forward after warm-up: kept in the steady state, or a stalled outlier.
    Decode { kept: bool },
    /// A warm-up decode forward: it ends the iteration before it, and starts none.
    WarmupDecode,
    /// Prefill, mixed or other-label: it breaks the loop.
    Other,
}

impl Mark {
    pub(super) fn of(step: &Step, kind: MarkKind) -> Mark {
        Mark {
            trace: step.trace,
            start: step.start,
            end: step.end,
            kind,
        }
    }
}

/// The iterations of one rank from the marks of all its steps: one per decode forward after
/// warm-up whose next step on the same trace is a decode forward. `traces[i]` is the trace whose
/// index in the run is `indices[i]`.
pub(super) fn iterations(
    traces: &[&RankTrace],
    indices: &[usize],
    marks: &mut [Mark],
) -> Vec<Iteration> {
    marks.sort_by_key(|m| (m.trace, m.start, m.end));
    let mut out = Vec::new();
    for pair in marks.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let MarkKind::Decode { kept } = a.kind else {
            continue;
        };
        if a.trace != b.trace || b.start < a.end || b.kind == MarkKind::Other {
            continue;
        }
        let Some(pos) = indices.iter().position(|&t| t == a.trace) else {
            continue;
        };
        out.push(Iteration {
            trace: a.trace,
            start: a.start,
            end: a.end,
            next: b.start,
            gap_busy_ns: busy_between(traces[pos], a.end, b.start),
            kept,
        });
    }
    out
}

/// The union of the busy time of the activities of `trace` that start in `[from, to)`, clipped
/// to it, ns. Activities are sorted by start, so this is a binary search and a walk.
pub(super) fn busy_between(trace: &RankTrace, from: i64, to: i64) -> i64 {
    let first = trace.gpu.partition_point(|a| a.ts < from);
    let mut busy = 0;
    let mut reach = from;
    for a in trace.gpu[first..].iter().take_while(|a| a.ts < to) {
        let (s, e) = (a.ts.max(reach), a.end().min(to));
        if e > s {
            busy += e - s;
            reach = e;
        }
    }
    busy
}
