//! The figures of each rank: per-step figures of its kept decode steps and its prefill steps, its
//! allreduce calls, its router calls per step and its breakdown totals. Every metric is computed
//! from these.

use rustc_hash::FxHashMap;

use crate::reader::model::{NameId, Run};
use crate::steps::{category_of, RankSteps, Step};
use crate::taxonomy::{Category, Class};

use super::breakdown::RankTotals;
use super::compute::{step_figures, Scratch, StepFigures};

/// The figures of one rank.
pub(crate) struct RankFigures<'a> {
    pub rank: u32,
    pub decode: Vec<StepFigures>,
    pub prefill: Vec<StepFigures>,
    pub mixed: Vec<StepFigures>,
    /// Allreduce-class call durations of the kept decode steps, ns, in step order.
    pub allreduce_ns: Vec<i64>,
    /// Per `moe_routing` kernel name, its calls in each kept decode step.
    pub routing_calls: FxHashMap<&'a str, Vec<u32>>,
    pub totals: RankTotals<'a>,
    /// Its decode steps after warm-up that stalled (slow outliers).
    pub stalls: crate::steps::Stalls,
}

/// What a per-step figure may depend on beyond its own step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context {
    /// Some kept decode step of some rank holds a `comm` activity.
    pub decode_comm: bool,
    /// Some prefill step of some rank holds a `comm` activity.
    pub prefill_comm: bool,
    /// The MoE layer count, when known and some kept decode step holds a `moe_gemm` kernel.
    pub moe_layers: Option<f64>,
}

/// Every rank's figures, with the context the per-step figures need.
pub struct RunFigures<'a> {
    pub(crate) ranks: &'a [RankFigures<'a>],
    pub context: Context,
    /// The collectives matched across ranks (`super::waits`).
    pub waits: Option<&'a super::waits::Waits>,
}

pub(crate) fn rank_figures<'a>(
    run: &'a Run,
    classes: &[Vec<Class>],
    rs: &RankSteps,
) -> RankFigures<'a> {
    let mut scratch = Scratch::default();
    let mut allreduce_ns = Vec::new();
    let mut routing_calls: FxHashMap<&'a str, Vec<u32>> = FxHashMap::default();
    let mut totals = RankTotals {
        steps: rs.decode.len(),
        ..RankTotals::default()
    };
    let n_steps = rs.decode.len();
    let mut decode = Vec::with_capacity(n_steps);
    // Keyed by (trace, name id) while counting: hashing an integer, not a 100-byte kernel name,
    // per activity.
    let mut by_id: FxHashMap<(usize, NameId, Category), (i64, u64)> = FxHashMap::default();
    for (k, step) in rs.decode.iter().enumerate() {
        let (trace, cls) = (&run.traces[step.trace], classes[step.trace].as_slice());
        decode.push(step_figures(
            trace,
            cls,
            step,
            &mut scratch,
            &mut allreduce_ns,
        ));
        for &i in &step.activities {
            let Some(a) = trace.gpu.get(i as usize) else {
                continue;
            };
            let category = category_of(a, cls);
            let e = by_id
                .entry((step.trace, a.name, category))
                .or_insert((0, 0));
            e.0 += a.dur;
            e.1 += 1;
            if category == Category::MoeRouting {
                routing_calls
                    .entry(trace.name(a.name))
                    .or_insert_with(|| vec![0; n_steps])[k] += 1;
            }
        }
    }
    for ((t, name, category), (ns, calls)) in by_id {
        totals.add(run.traces[t].name(name), category, ns, calls);
    }
    let mut ignored = Vec::new();
    let prefill = rs
        .prefill
        .iter()
        .map(|step: &Step| {
            let (trace, cls) = (&run.traces[step.trace], classes[step.trace].as_slice());
            step_figures(trace, cls, step, &mut scratch, &mut ignored)
        })
        .collect();
    let mixed = rs
        .mixed
        .iter()
        .map(|step: &Step| {
            let (trace, cls) = (&run.traces[step.trace], classes[step.trace].as_slice());
            step_figures(trace, cls, step, &mut scratch, &mut ignored)
        })
        .collect();
    RankFigures {
        rank: rs.rank.index,
        decode,
        prefill,
        mixed,
        allreduce_ns,
        routing_calls,
        totals,
        stalls: crate::steps::stalls(rs),
    }
}
