//! The prefill phase per rank: wall, kernel and busy time, utilization, comm share, the largest
//! collective and the idle gaps between kernels.

use serde::Serialize;

use super::{ns_to_ms, Context};
use crate::metrics::compute::{step_figures, Scratch};
use crate::taxonomy::Category;

/// Idle gaps at least this long (ns) are counted.
pub(crate) const GAP_COUNTED_NS: i64 = 1_000_000;

#[derive(Debug, Clone, Serialize)]
pub struct PrefillSection {
    pub ranks: Vec<RankPrefill>,
}

/// All prefill steps of one rank together (sums of their figures).
#[derive(Debug, Clone, Serialize)]
pub struct RankPrefill {
    pub rank: u32,
    pub label: String,
    pub steps: usize,
    pub kernels: u64,
    pub wall_ms: f64,
    pub kernel_ms: f64,
    pub busy_ms: f64,
    pub gpu_util_pct: Option<f64>,
    pub comm_ms: f64,
    pub comm_pct: Option<f64>,
    pub largest_collective: Option<Collective>,
    /// Wall minus busy.
    pub idle_ms: f64,
    /// Idle gaps of at least [`GAP_COUNTED_NS`].
    pub gaps_over_1ms: u64,
    pub largest_gap_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Collective {
    pub name: String,
    pub ms: f64,
}

pub(crate) fn prefill_section(ctx: &Context<'_>) -> Option<PrefillSection> {
    let mut ranks = Vec::new();
    let mut scratch = Scratch::default();
    let mut allreduce = Vec::new();
    for rs in ctx.rank_steps {
        if rs.prefill.is_empty() {
            continue;
        }
        let (mut wall, mut kernel, mut busy, mut comm, mut kernels) =
            (0i64, 0i64, 0i64, 0i64, 0u64);
        let (mut gaps, mut largest_gap) = (0u64, 0i64);
        let mut largest: Option<(i64, &str)> = None;
        for step in &rs.prefill {
            let Some(trace) = ctx.run.traces.get(step.trace) else {
                continue;
            };
            let f = step_figures(
                trace,
                ctx.classes_of(step.trace),
                step,
                &mut scratch,
                &mut allreduce,
            );
            wall += f.wall_ns;
            kernel += f.kernel_ns;
            busy += f.busy_ns;
            comm += f.comm_ns;
            kernels += step.activities.len() as u64;
            let mut running_end: Option<i64> = None;
            for &i in &step.activities {
                let Some(a) = ctx.activity(step.trace, i) else {
                    continue;
                };
                if let Some(end) = running_end {
                    let gap = a.ts - end;
                    if gap >= GAP_COUNTED_NS {
                        gaps += 1;
                    }
                    largest_gap = largest_gap.max(gap);
                }
                running_end = Some(running_end.map_or(a.end(), |e| e.max(a.end())));
                if ctx.category(step.trace, a) == Category::Comm
                    && largest.is_none_or(|(d, _)| a.dur > d)
                {
                    largest = Some((a.dur, ctx.name(step.trace, a)));
                }
            }
        }
        ranks.push(RankPrefill {
            rank: rs.rank.index,
            label: rs.rank.label.clone(),
            steps: rs.prefill.len(),
            kernels,
            wall_ms: ns_to_ms(wall),
            kernel_ms: ns_to_ms(kernel),
            busy_ms: ns_to_ms(busy),
            gpu_util_pct: (wall > 0).then(|| busy as f64 / wall as f64 * 100.0),
            comm_ms: ns_to_ms(comm),
            comm_pct: (kernel > 0).then(|| comm as f64 / kernel as f64 * 100.0),
            largest_collective: largest.map(|(d, name)| Collective {
                name: name.to_string(),
                ms: ns_to_ms(d),
            }),
            idle_ms: ns_to_ms(wall - busy),
            gaps_over_1ms: gaps,
            largest_gap_ms: ns_to_ms(largest_gap),
        });
    }
    (!ranks.is_empty()).then_some(PrefillSection { ranks })
}
