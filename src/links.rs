//! Links between the GPU and host sides of one rank: kernel → runtime launch (correlation) →
//! CPU op (External id, or, in older traces where the ids differ, the innermost op on the
//! launching thread that encloses the launch).

use rustc_hash::FxHashMap as HashMap;

use crate::reader::{GpuActivity, Launch, RankTrace};

/// How far back to look for an enclosing CPU op among earlier siblings on one thread.
const MAX_SIBLINGS_WALKED: usize = 512;

pub struct Links<'a> {
    trace: &'a RankTrace,
    launch_by_corr: HashMap<u64, usize>,
    op_by_ext: HashMap<u64, usize>,
    /// CPU op indices per host thread, in start order.
    ops_by_tid: HashMap<u64, Vec<usize>>,
}

impl<'a> Links<'a> {
    pub fn new(trace: &'a RankTrace) -> Self {
        let launch_by_corr = trace
            .launches
            .iter()
            .enumerate()
            .map(|(i, l)| (l.correlation, i))
            .collect();
        let mut op_by_ext = HashMap::default();
        let mut ops_by_tid: HashMap<u64, Vec<usize>> = HashMap::default();
        for (i, op) in trace.cpu_ops.iter().enumerate() {
            if let Some(ext) = op.external_id {
                op_by_ext.entry(ext).or_insert(i);
            }
            ops_by_tid.entry(op.tid).or_default().push(i);
        }
        Links {
            trace,
            launch_by_corr,
            op_by_ext,
            ops_by_tid,
        }
    }

    /// The runtime launch that started this activity.
    pub fn launch_of(&self, activity: &GpuActivity) -> Option<&'a Launch> {
        let i = *self.launch_by_corr.get(&activity.correlation()?)?;
        Some(&self.trace.launches[i])
    }

    /// The index of the CPU op this activity belongs to.
    pub fn cpu_op_of(&self, activity: &GpuActivity) -> Option<usize> {
        let launch = self.launch_of(activity);
        let by_id = activity
            .external_id()
            .into_iter()
            .chain(launch.and_then(|l| l.external_id))
            .find_map(|ext| self.op_by_ext.get(&ext).copied());
        by_id.or_else(|| launch.and_then(|l| self.enclosing_op(l.tid, l.ts)))
    }

    /// The innermost CPU op on `tid` that encloses time `ts`.
    fn enclosing_op(&self, tid: u64, ts: i64) -> Option<usize> {
        let ops = self.ops_by_tid.get(&tid)?;
        let after = ops.partition_point(|&i| self.trace.cpu_ops[i].ts <= ts);
        ops[..after]
            .iter()
            .rev()
            .take(MAX_SIBLINGS_WALKED)
            .copied()
            .find(|&i| self.trace.cpu_ops[i].ts + self.trace.cpu_ops[i].dur >= ts)
    }
}
