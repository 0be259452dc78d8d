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
    /// Its decode iterations, in start order.
    pub iterations: Vec<IterFigures>,
    /// The median batch (`bs=N`, vLLM's generation requests) of its kept decode steps, where
    /// they carry one.
    pub batch: Option<f64>,
    /// Its kernel time by what holds it.
    pub mix: crate::steps::StepMix,
}

/// The figures of one decode iteration, in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct IterFigures {
    /// From the forward's start to the next forward's start.
    pub iter_ms: f64,
    /// GPU-idle time between the forward's end and the next forward's start.
    pub host_gap_ms: f64,
    /// GPU busy time over the iteration (the forward's busy time plus the gap's), %; `None` for
    /// a stalled forward (not among the kept ones, whose figures are known).
    pub util_pct: Option<f64>,
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
    /// Which metrics the run has: a loop's figures are of its iterations.
    pub kind: crate::steps::RunKind,
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
    // A loop's iterations stand where a serving run's kept decode steps do.
    let main = rs.main_steps();
    let mut totals = RankTotals {
        steps: main.len(),
        ..RankTotals::default()
    };
    let n_steps = main.len();
    let mut decode = Vec::with_capacity(n_steps);
    // Keyed by (trace, name id) while counting: hashing an integer, not a 100-byte kernel name,
    // per activity.
    let mut by_id: FxHashMap<(usize, NameId, Category), (i64, u64)> = FxHashMap::default();
    for (k, step) in main.iter().enumerate() {
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
    let iterations = iteration_figures(rs, &decode);
    let mut batches: Vec<f64> = rs
        .decode
        .iter()
        .filter_map(|s| s.batch_size.map(f64::from))
        .collect();
    RankFigures {
        rank: rs.rank.index,
        iterations,
        batch: crate::stats::median(&mut batches),
        mix: rs.mix,
        decode,
        prefill,
        mixed,
        allreduce_ns,
        routing_calls,
        totals,
        stalls: crate::steps::stalls(rs),
    }
}

/// The figures of each iteration of a rank; `decode` are the figures of its kept decode steps, in
/// the order of `rs.decode`, for the busy time of the forward.
fn iteration_figures(rs: &RankSteps, decode: &[StepFigures]) -> Vec<IterFigures> {
    let busy: FxHashMap<(usize, i64), i64> = rs
        .main_steps()
        .iter()
        .zip(decode)
        .map(|(s, f)| ((s.trace, s.start), f.busy_ns))
        .collect();
    rs.iterations
        .iter()
        .map(|it| {
            let iter_ns = it.iter_ns();
            let forward_busy = busy.get(&(it.trace, it.start)).filter(|_| it.kept);
            IterFigures {
                iter_ms: iter_ns as f64 / 1e6,
                host_gap_ms: it.idle_ns() as f64 / 1e6,
                util_pct: forward_busy
                    .filter(|_| iter_ns > 0)
                    .map(|b| (b + it.gap_busy_ns) as f64 / iter_ns as f64 * 100.0),
            }
        })
        .collect()
}
