//! Per-step figures: the raw nanosecond quantities every metric of a step is computed from.

use crate::reader::model::RankTrace;
use crate::steps::{category_of, is_allreduce, SpecSplit, Step};
use crate::taxonomy::{Category, Class};

use super::intervals::{intersection_len, total_len, union_in_place, Interval};

/// The figures of one step, in ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepFigures {
    /// Last end minus first start.
    pub wall_ns: i64,
    /// Length of the union of all activities.
    pub busy_ns: i64,
    /// Sum of the durations of all activities.
    pub kernel_ns: i64,
    /// Sum of the durations of `comm` activities.
    pub comm_ns: i64,
    /// Number of `comm` activities.
    pub comm_calls: u32,
    /// Length of the union of `comm` activities.
    pub comm_union_ns: i64,
    /// Length of ∪comm ∩ ∪compute.
    pub overlap_ns: i64,
    /// Sum of the durations of `moe_gemm` kernels.
    pub moe_gemm_ns: i64,
    /// Number of `moe_gemm` kernels.
    pub moe_gemm_calls: u32,
    /// Sum of the durations of `other` kernels (no rule knows them, or a rule put them there).
    pub other_ns: i64,
    /// A speculative iteration's draft and verify parts.
    pub spec: Option<SpecSplit>,
}

/// Reusable buffers, so that a million steps do not allocate a million times.
#[derive(Default)]
pub(crate) struct Scratch {
    all: Vec<Interval>,
    comm: Vec<Interval>,
    compute: Vec<Interval>,
}

/// Computes the figures of `step` and appends the durations (ns) of its allreduce-class calls.
pub(crate) fn step_figures(
    trace: &RankTrace,
    classes: &[Class],
    step: &Step,
    scratch: &mut Scratch,
    allreduce_ns: &mut Vec<i64>,
) -> StepFigures {
    scratch.all.clear();
    scratch.comm.clear();
    scratch.compute.clear();
    let mut f = StepFigures {
        wall_ns: step.wall(),
        spec: step.spec,
        ..StepFigures::default()
    };
    for &i in &step.activities {
        let Some(a) = trace.gpu.get(i as usize) else {
            continue;
        };
        let interval = (a.ts, a.end());
        f.kernel_ns += a.dur;
        scratch.all.push(interval);
        match category_of(a, classes) {
            Category::Comm => {
                f.comm_ns += a.dur;
                f.comm_calls += 1;
                scratch.comm.push(interval);
                if is_allreduce(a, classes) {
                    allreduce_ns.push(a.dur);
                }
            }
            Category::Memcpy => {}
            category => {
                scratch.compute.push(interval);
                if category == Category::MoeGemm {
                    f.moe_gemm_ns += a.dur;
                    f.moe_gemm_calls += 1;
                } else if category == Category::Other {
                    f.other_ns += a.dur;
                }
            }
        }
    }
    union_in_place(&mut scratch.all);
    union_in_place(&mut scratch.comm);
    union_in_place(&mut scratch.compute);
    f.busy_ns = total_len(&scratch.all);
    f.comm_union_ns = total_len(&scratch.comm);
    f.overlap_ns = intersection_len(&scratch.comm, &scratch.compute);
    f
}

impl StepFigures {
    /// Wall in ms.
    pub fn wall_ms(&self) -> f64 {
        self.wall_ns as f64 / 1e6
    }

    /// Busy / wall × 100; `None` for a zero wall.
    pub fn gpu_util_pct(&self) -> Option<f64> {
        (self.wall_ns > 0).then(|| self.busy_ns as f64 / self.wall_ns as f64 * 100.0)
    }

    /// Comm kernel time / kernel time × 100; `None` when the step has no kernel time.
    pub fn comm_pct(&self) -> Option<f64> {
        (self.kernel_ns > 0).then(|| self.comm_ns as f64 / self.kernel_ns as f64 * 100.0)
    }

    /// `other` kernel time / kernel time × 100; `None` when the step has no kernel time.
    pub fn other_pct(&self) -> Option<f64> {
        (self.kernel_ns > 0).then(|| self.other_ns as f64 / self.kernel_ns as f64 * 100.0)
    }

    /// Draft kernel time / the draft and verify forwards' kernel time × 100; `None` for a step
    /// that is no speculative iteration or has no kernel time.
    pub fn spec_draft_pct(&self) -> Option<f64> {
        let s = self.spec?;
        let total = s.draft_kernel_ns + s.verify_kernel_ns;
        (total > 0).then(|| s.draft_kernel_ns as f64 / total as f64 * 100.0)
    }

    /// |∪comm ∩ ∪compute| / |∪comm| × 100; `None` for a step without comm time.
    pub fn overlap_pct(&self) -> Option<f64> {
        (self.comm_union_ns > 0).then(|| self.overlap_ns as f64 / self.comm_union_ns as f64 * 100.0)
    }
}
