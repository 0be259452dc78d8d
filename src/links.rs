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
    ops_by_tid: HashMap<u64, ThreadOps>,
}

/// The CPU ops of one host thread, in start order, each with the op that was open when it began.
#[derive(Default)]
struct ThreadOps {
    ops: Vec<usize>,
    /// Position in `ops` of the latest-starting op still open when this one started. Every op
    /// that encloses a time after an op's start is on that op's chain of parents, so the
    /// innermost one is found in a few steps instead of a walk over earlier siblings.
    parent: Vec<u32>,
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
        let mut ops_by_tid: HashMap<u64, ThreadOps> = HashMap::default();
        for (i, op) in trace.cpu_ops.iter().enumerate() {
            if let Some(ext) = op.external_id {
                op_by_ext.entry(ext).or_insert(i);
            }
            ops_by_tid.entry(op.tid).or_default().ops.push(i);
        }
        for thread in ops_by_tid.values_mut() {
            thread.parent = open_parents(trace, &thread.ops);
        }
        Links {
            trace,
            launch_by_corr,
            op_by_ext,
            ops_by_tid,
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

    /// The innermost (latest-starting) CPU op on `tid` that encloses time `ts`.
    fn enclosing_op(&self, tid: u64, ts: i64) -> Option<usize> {
        let thread = self.ops_by_tid.get(&tid)?;
        let ops = &self.trace.cpu_ops;
        let after = thread.ops.partition_point(|&i| ops[i].ts <= ts);
        let mut at = after.checked_sub(1)? as u32;
        for _ in 0..MAX_CHAIN_WALKED {
            let i = thread.ops[at as usize];
            if ops[i].ts + ops[i].dur >= ts {
                return Some(i);
            }
            at = thread.parent[at as usize];
            if at == NO_PARENT {
                return None;
            }
        }
        None
    }
}

/// For each op of one thread (`thread_ops`, in start order), the position of the latest-starting
/// earlier op that had not ended when it started. An op popped here ended before a later op
/// began, so it cannot enclose any time from then on.
fn open_parents(trace: &RankTrace, thread_ops: &[usize]) -> Vec<u32> {
    let ops = &trace.cpu_ops;
    let mut parent = Vec::with_capacity(thread_ops.len());
    let mut open: Vec<u32> = Vec::new();
    for (at, &i) in thread_ops.iter().enumerate() {
        while let Some(&top) = open.last() {
            let t = thread_ops[top as usize];
            if ops[t].ts + ops[t].dur >= ops[i].ts {
                break;
            }
            open.pop();
        }
        parent.push(open.last().copied().unwrap_or(NO_PARENT));
        open.push(at as u32);
    }
    parent
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
