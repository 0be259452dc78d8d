//! Links between the GPU and host sides of one rank: kernel → runtime launch (correlation) →
//! CPU op (External id, or, in older traces where the ids differ, the innermost op on the
//! launching thread that encloses the launch).

use rustc_hash::FxHashMap as HashMap;

use crate::reader::{GpuActivity, Launch, RankTrace};

/// How many enclosing candidates to try for one launch. Properly nested ops give a chain as deep
/// as the call stack; the cap bounds ops that overlap without nesting.
const MAX_CHAIN_WALKED: usize = 512;
/// No parent in [`ThreadOps::parent`].
const NO_PARENT: u32 = u32::MAX;

pub(crate) struct Links<'a> {
    trace: &'a RankTrace,
    launch_by_corr: HashMap<u64, usize>,
    op_by_ext: HashMap<u64, usize>,
    ops_by_tid: HashMap<u64, Nesting>,
    frames_by_tid: HashMap<u64, Nesting>,
}

/// The spans of one host thread (ops or Python frames), in start order, each with the span that
/// was open when it began.
#[derive(Default)]
struct Nesting {
    /// Indices into the trace's list, in start order.
    spans: Vec<usize>,
    /// Position in `spans` of the latest-starting span still open when this one started. Every
    /// span that encloses a time after a span's start is on that span's chain of parents, so
    /// the innermost one is found in a few steps instead of a walk over earlier siblings.
    parent: Vec<u32>,
}

impl Nesting {
    /// Per thread, from `(tid, start, end)` of each span in start order.
    fn by_thread(spans: impl Iterator<Item = (u64, i64, i64)>) -> HashMap<u64, Nesting> {
        // Per thread: the nesting, and the spans still open (end, position), innermost last.
        let mut by_tid: HashMap<u64, (Nesting, Vec<(i64, u32)>)> = HashMap::default();
        for (i, (tid, ts, end)) in spans.enumerate() {
            let (thread, open) = by_tid.entry(tid).or_default();
            // A span popped here ended before a later one began: it encloses nothing after.
            while open.last().is_some_and(|&(e, _)| e < ts) {
                open.pop();
            }
            let at = thread.spans.len() as u32;
            thread
                .parent
                .push(open.last().map_or(NO_PARENT, |&(_, p)| p));
            thread.spans.push(i);
            open.push((end, at));
        }
        by_tid.into_iter().map(|(tid, (n, _))| (tid, n)).collect()
    }

    /// The innermost span that holds `[ts, end]`, then each enclosing one outwards.
    fn enclosing(&self, ts: i64, end: i64, span: impl Fn(usize) -> (i64, i64)) -> Vec<usize> {
        let mut out = Vec::new();
        let after = self.spans.partition_point(|&i| span(i).0 <= ts);
        let Some(mut at) = after.checked_sub(1).map(|a| a as u32) else {
            return out;
        };
        for _ in 0..MAX_CHAIN_WALKED {
            let i = self.spans[at as usize];
            if span(i).1 >= end {
                out.push(i);
            }
            at = self.parent[at as usize];
            if at == NO_PARENT {
                break;
            }
        }
        out
    }
}

impl<'a> Links<'a> {
    pub(crate) fn new(trace: &'a RankTrace) -> Self {
        let launch_by_corr = trace
            .launches
            .iter()
            .enumerate()
            .map(|(i, l)| (l.correlation, i))
            .collect();
        let mut op_by_ext = HashMap::default();
        for (i, op) in trace.cpu_ops.iter().enumerate() {
            if let Some(ext) = op.external_id {
                op_by_ext.entry(ext).or_insert(i);
            }
        }
        let ops = trace.cpu_ops.iter().map(|o| (o.tid, o.ts, o.ts + o.dur));
        let frames = trace
            .python_frames
            .iter()
            .map(|f| (f.tid, f.ts, f.ts + f.dur));
        Links {
            trace,
            launch_by_corr,
            op_by_ext,
            ops_by_tid: Nesting::by_thread(ops),
            frames_by_tid: Nesting::by_thread(frames),
        }
    }

    /// The runtime launch that started this activity.
    pub(crate) fn launch_of(&self, activity: &GpuActivity) -> Option<&'a Launch> {
        let i = *self.launch_by_corr.get(&activity.correlation()?)?;
        Some(&self.trace.launches[i])
    }

    /// The index of the CPU op this activity belongs to.
    pub(crate) fn cpu_op_of(&self, activity: &GpuActivity) -> Option<usize> {
        let launch = self.launch_of(activity);
        let by_id = activity
            .external_id()
            .into_iter()
            .chain(launch.and_then(|l| l.external_id))
            .find_map(|ext| self.op_by_ext.get(&ext).copied());
        by_id.or_else(|| launch.and_then(|l| self.enclosing_op(l.tid, l.ts)))
    }

    /// The ops that enclose op `op` on its thread, innermost first (not `op` itself).
    pub(crate) fn ops_around(&self, op: usize) -> Vec<usize> {
        let o = &self.trace.cpu_ops[op];
        let Some(thread) = self.ops_by_tid.get(&o.tid) else {
            return Vec::new();
        };
        let ops = &self.trace.cpu_ops;
        let mut around =
            thread.enclosing(o.ts, o.ts + o.dur, |i| (ops[i].ts, ops[i].ts + ops[i].dur));
        around.retain(|&i| i != op);
        around
    }

    /// The Python frames around a launch on its thread, innermost first (indices into
    /// [`RankTrace::python_frames`]).
    pub(crate) fn frames_around(&self, launch: &Launch) -> Vec<usize> {
        let Some(thread) = self.frames_by_tid.get(&launch.tid) else {
            return Vec::new();
        };
        let frames = &self.trace.python_frames;
        thread.enclosing(launch.ts, launch.ts + launch.dur, |i| {
            (frames[i].ts, frames[i].ts + frames[i].dur)
        })
    }

    /// The innermost (latest-starting) CPU op on `tid` that encloses time `ts`.
    fn enclosing_op(&self, tid: u64, ts: i64) -> Option<usize> {
        let thread = self.ops_by_tid.get(&tid)?;
        let ops = &self.trace.cpu_ops;
        thread
            .enclosing(ts, ts, |i| (ops[i].ts, ops[i].ts + ops[i].dur))
            .first()
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::CpuOp;
    use crate::testing::{TraceBuilder, XorShift};

    fn op(tid: u64, ts: i64, dur: i64) -> CpuOp {
        CpuOp {
            name: 0,
            ts,
            dur,
            tid,
            external_id: None,
            input_dims: None,
            input_types: None,
        }
    }

    /// The innermost op by the definition: the latest-starting op on the thread whose span holds `ts`.
    fn by_definition(trace: &RankTrace, tid: u64, ts: i64) -> Option<usize> {
        (0..trace.cpu_ops.len()).rev().find(|&i| {
            let o = &trace.cpu_ops[i];
            o.tid == tid && o.ts <= ts && o.ts + o.dur >= ts
        })
    }

    fn trace_of(ops: Vec<CpuOp>) -> RankTrace {
        let (mut trace, _) = TraceBuilder::new(0).build();
        trace.cpu_ops = ops;
        trace.cpu_ops.sort_by_key(|o| o.ts);
        trace
    }

    #[test]
    fn the_innermost_enclosing_op_is_found_in_nested_and_overlapping_ops() {
        // A step holding a layer holding two ops; a second step; an op overlapping its
        // neighbours without nesting; and an op on another thread.
        let trace = trace_of(vec![
            op(1, 0, 100),
            op(1, 10, 50),
            op(1, 12, 5),
            op(1, 20, 30),
            op(1, 40, 40),
            op(1, 200, 10),
            op(2, 0, 1000),
        ]);
        let links = Links::new(&trace);
        for ts in -5..260 {
            for tid in [1, 2, 3] {
                assert_eq!(
                    links.enclosing_op(tid, ts),
                    by_definition(&trace, tid, ts),
                    "tid {tid}, ts {ts}"
                );
            }
        }
    }

    #[test]
    fn an_enclosing_op_far_back_among_many_short_siblings_is_found() {
        // A long op opened before thousands of short ones: a walk over siblings would stop
        // after its cap, the chain of open ops reaches it in one step.
        let mut ops = vec![op(1, 0, 1_000_000)];
        ops.extend((0..5_000).map(|k| op(1, 10 + 10 * k, 5)));
        let trace = trace_of(ops);
        let links = Links::new(&trace);
        assert_eq!(links.enclosing_op(1, 60_000), Some(0));
        assert_eq!(links.enclosing_op(1, 10 + 10 * 4_999 + 2), Some(5_000));
        assert_eq!(links.enclosing_op(1, 2_000_000), None);
    }

    #[test]
    fn randomised_spans_agree_with_the_definition() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        let mut next = |m: u64| rng.below(m) as i64;
        for _ in 0..50 {
            let ops = (0..60)
                .map(|_| op(1 + next(2) as u64, next(500), next(120)))
                .collect();
            let trace = trace_of(ops);
            let links = Links::new(&trace);
            for ts in (-2..650).step_by(3) {
                for tid in [1, 2] {
                    assert_eq!(links.enclosing_op(tid, ts), by_definition(&trace, tid, ts));
                }
            }
        }
    }
}
