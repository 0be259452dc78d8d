//! Metrics: per-step figures of the steady decode steps and the prefill steps of every rank,
//! combined into the run figures of `docs/METRICS.md` ("Metrics"), with the per-step samples the
//! gate judges and a breakdown per category and kernel.
//!
//! This module computes; it never formats. The JSON a machine reads is the `Serialize` form of
//! [`Extraction`].

pub mod breakdown;
pub mod compute;
pub mod stats;
pub mod waits;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use serde::Serialize;

use crate::reader::model::{NameId, Run};
use crate::steps::{self, category_of, Detection, RankSteps, Step, DEFAULT_WARMUP_STEPS};
use crate::taxonomy::{Category, Class};

use breakdown::{Breakdown, RankTotals};
use compute::{step_figures, Scratch, StepFigures};

/// Metric names, in the order of `docs/METRICS.md`.
pub const DECODE_STEP_MS: &str = "decode_step_ms";
pub const GPU_UTIL_PCT: &str = "gpu_util_pct";
pub const COMM_PCT: &str = "comm_pct";
pub const ALLREDUCE_US: &str = "allreduce_us";
pub const ALLREDUCE_TRANSFER_US: &str = "allreduce_transfer_us";
pub const ALLREDUCE_RANK_RATIO: &str = "allreduce_rank_ratio";
pub const MOE_US_PER_LAYER: &str = "moe_us_per_layer";
pub const RANK_SKEW_MS: &str = "rank_skew_ms";
pub const OVERLAP_PCT: &str = "overlap_pct";
pub const PREFILL_STEP_MS: &str = "prefill_step_ms";
pub const PREFILL_GPU_UTIL_PCT: &str = "prefill_gpu_util_pct";
pub const PREFILL_COMM_PCT: &str = "prefill_comm_pct";

/// Every metric with its unit and better direction, in the order reports list them.
pub const CATALOG: [(&str, &str, Direction); 12] = [
    (DECODE_STEP_MS, "ms", Direction::Lower),
    (GPU_UTIL_PCT, "%", Direction::Higher),
    (COMM_PCT, "%", Direction::Lower),
    (ALLREDUCE_US, "us", Direction::Lower),
    (ALLREDUCE_TRANSFER_US, "us", Direction::Lower),
    (ALLREDUCE_RANK_RATIO, "ratio", Direction::Lower),
    (MOE_US_PER_LAYER, "us", Direction::Lower),
    (RANK_SKEW_MS, "ms", Direction::Lower),
    (OVERLAP_PCT, "%", Direction::Higher),
    (PREFILL_STEP_MS, "ms", Direction::Lower),
    (PREFILL_GPU_UTIL_PCT, "%", Direction::Higher),
    (PREFILL_COMM_PCT, "%", Direction::Lower),
];

/// What `extract` may be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractOptions {
    /// Decode steps dropped at the start of each rank (`--warmup-steps`).
    pub warmup_steps: usize,
    /// MoE layers of the model (`--moe-layers`, or the baseline's `meta.moe_layers`); counted when `None`.
    pub moe_layers: Option<u32>,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            warmup_steps: DEFAULT_WARMUP_STEPS,
            moe_layers: None,
        }
    }
}

/// Why no figures could be extracted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    #[error("classification given for {got} traces, but the run has {expected}")]
    ClassesMismatch { expected: usize, got: usize },
    #[error("no decode step in any rank: {found}")]
    NoDecodeStep { found: String },
    #[error(
        "no steady decode step in any rank: {found} decode steps found, {warmup} dropped as warm-up \
         (warm-up steps: {warmup_steps}), {outliers} dropped as outliers"
    )]
    NoSteadyDecodeStep {
        found: usize,
        warmup: usize,
        outliers: usize,
        warmup_steps: usize,
    },
    #[error(
        "the ranks found different numbers of decode steps ({counts}): in one run every rank runs \
         every forward pass, so a rank's trace was cut or comes from another run"
    )]
    StepCountMismatch { counts: String },
}

/// Whether a lower or a higher value is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Lower,
    Higher,
}

/// One run figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    pub value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    /// `ms`, `%`, `us` or `ratio`.
    pub unit: &'static str,
    pub direction: Direction,
    /// Per-rank value, keyed by rank index; empty (and not serialised) where the table says "—".
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub per_rank: BTreeMap<u32, f64>,
    /// The samples behind the value, in the metric's unit, not serialised: the per-step samples of
    /// the rank that decided the value (in step order), the pooled calls for `allreduce_us` and
    /// `allreduce_transfer_us`, the per-step skew for `rank_skew_ms`, one value per rank for
    /// `allreduce_rank_ratio`.
    #[serde(skip)]
    pub samples: Vec<f64>,
    /// The rank whose samples `samples` are, when one rank decided the value.
    #[serde(skip)]
    pub decided_by: Option<u32>,
}

/// What the run is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// Rank indices, ascending.
    pub ranks: Vec<u32>,
    /// Trace files (or shares of merged files).
    pub traces: usize,
    /// Device name of the first trace that reports one.
    pub device: Option<String>,
    pub warmup_steps: usize,
}

/// How many steps a rank has, kept and dropped, and how they were found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankStepSummary {
    pub decode_kept: usize,
    pub decode_dropped: usize,
    pub prefill: usize,
    pub dropped_warmup: usize,
    pub dropped_outliers: usize,
    /// Kernel time in no step, ms.
    pub unassigned_ms: f64,
    pub found: Detection,
}

/// The MoE layer count `moe_us_per_layer` divides by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoeLayers {
    pub value: f64,
    /// `given` or `counted`.
    pub source: &'static str,
    /// The `moe_routing` kernel counted, when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

/// Everything `extract` produces; serialises to the JSON shape of `docs/METRICS.md`.
#[derive(Debug, Clone, Serialize)]
pub struct Extraction {
    pub run: RunInfo,
    pub metrics: BTreeMap<&'static str, Metric>,
    pub steps: BTreeMap<u32, RankStepSummary>,
    pub breakdown: Breakdown,
    /// Share of kernel time of the kept decode steps in category `other`, %.
    pub other_pct: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_layers: Option<MoeLayers>,
    pub warnings: Vec<String>,
    /// The steps behind the figures, for later stages (shapes, reports).
    #[serde(skip)]
    pub rank_steps: Vec<RankSteps>,
    /// The collectives matched across ranks (wait and transfer), for reports and the gate's
    /// explanation; `None` without a decode step.
    #[serde(skip)]
    pub waits: Option<waits::Waits>,
}

/// The figures of one rank.
/// Events the reader had to skip: said, so that a figure never changes silently.
fn read_warnings(run: &Run) -> Vec<String> {
    let mut warnings = Vec::new();
    for t in &run.traces {
        let s = &t.stats;
        let parts: Vec<String> = [
            (s.malformed_events, "malformed events"),
            (
                s.negative_durations,
                "GPU activities with a negative duration",
            ),
            (s.incomplete_events, "events without a usable ts or dur"),
            (s.unattributed_events, "events of no rank (merged file)"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if !parts.is_empty() {
            warnings.push(format!(
                "{}: skipped {}",
                t.file.display(),
                parts.join(", ")
            ));
        }
    }
    warnings
}

struct RankFigures<'a> {
    rank: u32,
    decode: Vec<StepFigures>,
    prefill: Vec<StepFigures>,
    /// Allreduce-class call durations of the kept decode steps, ns, in step order.
    allreduce_ns: Vec<i64>,
    /// Per `moe_routing` kernel name, its calls in each kept decode step.
    routing_calls: HashMap<&'a str, Vec<u32>>,
    totals: RankTotals<'a>,
}

/// Extracts the figures of a run. `classes[i]` classifies the names of `run.traces[i]` by `NameId`.
pub fn extract(
    run: &Run,
    classes: &[Vec<Class>],
    opts: &ExtractOptions,
) -> Result<Extraction, MetricsError> {
    if classes.len() != run.traces.len() {
        return Err(MetricsError::ClassesMismatch {
            expected: run.traces.len(),
            got: classes.len(),
        });
    }
    let rank_steps = steps::find_steps(run, classes, opts.warmup_steps);
    check_decode_steps(&rank_steps, opts.warmup_steps)?;
    check_same_step_counts(&rank_steps)?;

    let figures: Vec<RankFigures<'_>> = rank_steps
        .par_iter()
        .map(|rs| rank_figures(run, classes, rs))
        .collect();

    let mut metrics = BTreeMap::new();
    let mut warnings = read_warnings(run);
    let any_decode_comm = figures
        .iter()
        .flat_map(|f| &f.decode)
        .any(|s| s.comm_calls > 0);
    let any_prefill_comm = figures
        .iter()
        .flat_map(|f| &f.prefill)
        .any(|s| s.comm_calls > 0);
    let any_moe_gemm = figures
        .iter()
        .flat_map(|f| &f.decode)
        .any(|s| s.moe_gemm_calls > 0);

    let decode_step = per_rank_metric(
        &figures,
        Phase::Decode,
        |s| Some(s.wall_ms()),
        Across::Max,
        "ms",
        Direction::Lower,
        true,
    );
    insert(&mut metrics, DECODE_STEP_MS, decode_step);
    insert(
        &mut metrics,
        GPU_UTIL_PCT,
        per_rank_metric(
            &figures,
            Phase::Decode,
            StepFigures::gpu_util_pct,
            Across::Min,
            "%",
            Direction::Higher,
            false,
        ),
    );
    if any_decode_comm {
        insert(
            &mut metrics,
            COMM_PCT,
            per_rank_metric(
                &figures,
                Phase::Decode,
                StepFigures::comm_pct,
                Across::Max,
                "%",
                Direction::Lower,
                false,
            ),
        );
    }
    insert(
        &mut metrics,
        OVERLAP_PCT,
        per_rank_metric(
            &figures,
            Phase::Decode,
            StepFigures::overlap_pct,
            Across::Min,
            "%",
            Direction::Higher,
            false,
        ),
    );
    allreduce_metrics(&figures, &mut metrics);
    let waits = waits::match_collectives(run, classes, &rank_steps);
    if let Some(w) = &waits {
        wait_metrics(w, &rank_steps, &mut metrics);
        warnings.extend(w.warnings.iter().cloned());
    }

    let moe_layers = moe_layers(&figures, opts.moe_layers);
    if let (Some(layers), true) = (&moe_layers, any_moe_gemm) {
        let n = layers.value;
        insert(
            &mut metrics,
            MOE_US_PER_LAYER,
            per_rank_metric(
                &figures,
                Phase::Decode,
                |s| Some(s.moe_gemm_ns as f64 / 1e3 / n),
                Across::Max,
                "us",
                Direction::Lower,
                false,
            ),
        );
    }

    insert(
        &mut metrics,
        PREFILL_STEP_MS,
        per_rank_metric(
            &figures,
            Phase::Prefill,
            |s| Some(s.wall_ms()),
            Across::Max,
            "ms",
            Direction::Lower,
            false,
        ),
    );
    insert(
        &mut metrics,
        PREFILL_GPU_UTIL_PCT,
        per_rank_metric(
            &figures,
            Phase::Prefill,
            StepFigures::gpu_util_pct,
            Across::Min,
            "%",
            Direction::Higher,
            false,
        ),
    );
    if any_prefill_comm {
        insert(
            &mut metrics,
            PREFILL_COMM_PCT,
            per_rank_metric(
                &figures,
                Phase::Prefill,
                StepFigures::comm_pct,
                Across::Max,
                "%",
                Direction::Lower,
                false,
            ),
        );
    }

    // Warnings: ranks that disagree on their steady state.
    let kept: Vec<(u32, usize)> = rank_steps
        .iter()
        .map(|r| (r.rank.index, r.decode.len()))
        .collect();
    if kept.windows(2).any(|w| w[0].1 != w[1].1) {
        let list: Vec<String> = kept.iter().map(|(r, n)| format!("rank {r}: {n}")).collect();
        warnings.push(format!(
            "ranks kept different numbers of decode steps ({})",
            list.join(", ")
        ));
    }
    let mut devices: Vec<&str> = run
        .traces
        .iter()
        .filter_map(|t| t.device.as_ref().map(|d| d.name.as_str()))
        .collect();
    devices.sort_unstable();
    devices.dedup();
    if devices.len() > 1 {
        warnings.push(format!(
            "traces report different devices: {}",
            devices.join(", ")
        ));
    }

    let totals: Vec<RankTotals<'_>> = figures.into_iter().map(|f| f.totals).collect();
    let breakdown = breakdown::combine(&totals);
    let steps = rank_steps
        .iter()
        .map(|r| {
            (
                r.rank.index,
                RankStepSummary {
                    decode_kept: r.decode.len(),
                    decode_dropped: r.dropped.len(),
                    prefill: r.prefill.len(),
                    dropped_warmup: r.dropped_warmup,
                    dropped_outliers: r.dropped_outliers,
                    unassigned_ms: r.unassigned_ns as f64 / 1e6,
                    found: r.found.clone(),
                },
            )
        })
        .collect();
    Ok(Extraction {
        run: RunInfo {
            ranks: rank_steps.iter().map(|r| r.rank.index).collect(),
            traces: run.traces.len(),
            device: run
                .traces
                .iter()
                .find_map(|t| t.device.as_ref().map(|d| d.name.clone())),
            warmup_steps: opts.warmup_steps,
        },
        metrics,
        steps,
        other_pct: breakdown.other_pct(),
        breakdown,
        moe_layers,
        warnings,
        rank_steps,
        waits,
    })
}

/// `rank_skew_ms` (per step, the wait of the rank that waits most minus the rank that waits
/// least; per rank its median wait per step) and `allreduce_transfer_us` (allreduce-class calls
/// net of waiting, pooled), from the matched collectives; absent when nothing matched.
fn wait_metrics(
    w: &waits::Waits,
    rank_steps: &[RankSteps],
    metrics: &mut BTreeMap<&'static str, Metric>,
) {
    let Some((_, _, samples)) = w.skew() else {
        return;
    };
    let mut sorted = samples.clone();
    metrics.insert(
        RANK_SKEW_MS,
        Metric {
            value: stats::median(&mut sorted).unwrap_or(0.0),
            p50: None,
            p90: None,
            p99: None,
            unit: "ms",
            direction: Direction::Lower,
            per_rank: rank_steps
                .iter()
                .map(|r| r.rank.index)
                .zip(w.median_wait_ms())
                .collect(),
            samples,
            decided_by: None,
        },
    );
    let pooled: Vec<f64> = w
        .allreduce_transfer_ns
        .iter()
        .map(|&ns| ns as f64 / 1e3)
        .collect();
    let Some(mean) = stats::mean(&pooled) else {
        return;
    };
    let mut sorted = pooled.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    metrics.insert(
        ALLREDUCE_TRANSFER_US,
        Metric {
            value: mean,
            p50: stats::percentile_sorted(&sorted, 50.0),
            p90: None,
            p99: stats::percentile_sorted(&sorted, 99.0),
            unit: "us",
            direction: Direction::Lower,
            per_rank: BTreeMap::new(),
            samples: pooled,
            decided_by: None,
        },
    );
}

fn insert(
    metrics: &mut BTreeMap<&'static str, Metric>,
    name: &'static str,
    metric: Option<Metric>,
) {
    if let Some(m) = metric {
        metrics.insert(name, m);
    }
}

/// Fails when no rank holds a decode step, or none is left after warm-up and outlier removal,
/// saying what was found instead.
fn check_decode_steps(ranks: &[RankSteps], warmup_steps: usize) -> Result<(), MetricsError> {
    if ranks.iter().any(|r| !r.decode.is_empty()) {
        return Ok(());
    }
    let mut found = Detection::default();
    for r in ranks {
        found.merge(&r.found);
    }
    let decode_found = found.decode.total() as usize;
    if decode_found > 0 {
        return Err(MetricsError::NoSteadyDecodeStep {
            found: decode_found,
            warmup: ranks.iter().map(|r| r.dropped_warmup).sum(),
            outliers: ranks.iter().map(|r| r.dropped_outliers).sum(),
            warmup_steps,
        });
    }
    Err(MetricsError::NoDecodeStep {
        found: describe(&found, ranks.len()),
    })
}

/// Every rank of a tensor-parallel run runs every forward pass: the decode steps found (before
/// warm-up and outliers are dropped, which may differ per rank) must be as many on each rank.
fn check_same_step_counts(ranks: &[RankSteps]) -> Result<(), MetricsError> {
    let found = |r: &RankSteps| r.decode.len() + r.dropped_warmup + r.dropped_outliers;
    let Some(first) = ranks.first().map(found) else {
        return Ok(());
    };
    if ranks.iter().all(|r| found(r) == first) {
        return Ok(());
    }
    let counts = ranks
        .iter()
        .map(|r| format!("{} {}", r.rank.label, found(r)))
        .collect::<Vec<_>>()
        .join(", ");
    Err(MetricsError::StepCountMismatch { counts })
}

/// "3 prefill steps (3 from annotations, 0 from graph launches, 0 from gaps); 12 step annotations
/// (9 not forward passes); 0 graph launches outside step annotations; 1,204 GPU activities in 1
/// rank, 1,204 left to gap segmentation in 7 segments, 7 without both an attention kernel and a GEMM".
fn describe(found: &Detection, ranks: usize) -> String {
    let p = &found.prefill;
    format!(
        "{} ({} from annotations, {} from graph launches, {} from gaps); {} ({} not forward passes); \
         {} outside step annotations ({} only pieces of a forward); {} in {}, {} left to gap segmentation in {}, \
         {} without both an attention kernel and a GEMM",
        count(p.total(), "prefill step"),
        thousands(p.annotation),
        thousands(p.graph_launch),
        thousands(p.gap),
        count(found.step_annotations, "step annotation"),
        thousands(found.non_step_annotations),
        count(found.graph_launches, "graph launch"),
        thousands(found.graph_launches_partial),
        count(found.activities, "GPU activity"),
        count(ranks as u64, "rank"),
        thousands(found.gap_activities),
        count(found.gap_segments, "segment"),
        thousands(found.gap_segments_rejected),
    )
}

/// "1 rank", "1,204 GPU activities", "0 graph launches".
fn count(n: u64, what: &str) -> String {
    let plural = if n == 1 {
        what.to_string()
    } else if let Some(stem) = what.strip_suffix('y') {
        format!("{stem}ies")
    } else if what.ends_with("ch") {
        format!("{what}es")
    } else {
        format!("{what}s")
    };
    format!("{} {plural}", thousands(n))
}

/// 1204 → "1,204".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn rank_figures<'a>(run: &'a Run, classes: &[Vec<Class>], rs: &RankSteps) -> RankFigures<'a> {
    let mut scratch = Scratch::default();
    let mut allreduce_ns = Vec::new();
    let mut routing_calls: HashMap<&'a str, Vec<u32>> = HashMap::new();
    let mut totals = RankTotals {
        steps: rs.decode.len(),
        ..RankTotals::default()
    };
    let n_steps = rs.decode.len();
    let mut decode = Vec::with_capacity(n_steps);
    // Keyed by (trace, name id) while counting: hashing an integer, not a 100-byte kernel name,
    // per activity.
    let mut by_id: HashMap<(usize, NameId, Category), (i64, u64)> = HashMap::new();
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
    RankFigures {
        rank: rs.rank.index,
        decode,
        prefill,
        allreduce_ns,
        routing_calls,
        totals,
    }
}

#[derive(Clone, Copy)]
enum Phase {
    Decode,
    Prefill,
}

#[derive(Clone, Copy, PartialEq)]
enum Across {
    Max,
    Min,
}

/// A metric whose per-rank value is the median of per-step samples and whose run value is the
/// max or min over ranks; ranks without a sample do not take part; `None` when no rank has one.
/// With `p90`, each rank also has a p90 and the run's p90 is the max of them.
fn per_rank_metric(
    figures: &[RankFigures<'_>],
    phase: Phase,
    sample: impl Fn(&StepFigures) -> Option<f64>,
    across: Across,
    unit: &'static str,
    direction: Direction,
    p90: bool,
) -> Option<Metric> {
    let mut best: Option<(u32, f64, Vec<f64>)> = None;
    let mut per_rank = BTreeMap::new();
    let mut run_p90: Option<f64> = None;
    for f in figures {
        let steps = match phase {
            Phase::Decode => &f.decode,
            Phase::Prefill => &f.prefill,
        };
        let samples: Vec<f64> = steps.iter().filter_map(&sample).collect();
        let mut sorted = samples.clone();
        let Some(value) = stats::median(&mut sorted) else {
            continue;
        };
        if p90 {
            let q = stats::percentile_sorted(&sorted, 90.0).unwrap_or(value);
            run_p90 = Some(run_p90.map_or(q, |r| r.max(q)));
        }
        per_rank.insert(f.rank, value);
        let better = match (&best, across) {
            (None, _) => true,
            (Some((_, v, _)), Across::Max) => value > *v,
            (Some((_, v, _)), Across::Min) => value < *v,
        };
        if better {
            best = Some((f.rank, value, samples));
        }
    }
    let (rank, value, samples) = best?;
    Some(Metric {
        value,
        p50: None,
        p90: run_p90,
        p99: None,
        unit,
        direction,
        per_rank,
        samples,
        decided_by: Some(rank),
    })
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// `allreduce_us` (pooled calls) and `allreduce_rank_ratio` (max / min of per-rank mean calls).
fn allreduce_metrics(figures: &[RankFigures<'_>], metrics: &mut BTreeMap<&'static str, Metric>) {
    let pooled: Vec<f64> = figures
        .iter()
        .flat_map(|f| f.allreduce_ns.iter().map(|&ns| ns as f64 / 1e3))
        .collect();
    let Some(mean) = stats::mean(&pooled) else {
        return;
    };
    let mut sorted = pooled.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    metrics.insert(
        ALLREDUCE_US,
        Metric {
            value: mean,
            p50: stats::percentile_sorted(&sorted, 50.0),
            p90: None,
            p99: stats::percentile_sorted(&sorted, 99.0),
            unit: "us",
            direction: Direction::Lower,
            per_rank: BTreeMap::new(),
            samples: pooled,
            decided_by: None,
        },
    );

    let per_rank: BTreeMap<u32, f64> = figures
        .iter()
        .filter_map(|f| {
            let calls: Vec<f64> = f.allreduce_ns.iter().map(|&ns| ns as f64 / 1e3).collect();
            stats::mean(&calls).map(|m| (f.rank, m))
        })
        .collect();
    if per_rank.len() < 2 {
        return;
    }
    let means: Vec<f64> = per_rank.values().copied().collect();
    let (lo, hi) = min_max(&means);
    if lo <= 0.0 {
        return;
    }
    metrics.insert(
        ALLREDUCE_RANK_RATIO,
        Metric {
            value: hi / lo,
            p50: None,
            p90: None,
            p99: None,
            unit: "ratio",
            direction: Direction::Lower,
            per_rank,
            samples: means,
            decided_by: None,
        },
    );
}

/// The MoE layer count: given, else for each `moe_routing` kernel name its median calls per kept
/// decode step over all ranks' kept decode steps, the smallest of those medians that is at least 1.
fn moe_layers(figures: &[RankFigures<'_>], given: Option<u32>) -> Option<MoeLayers> {
    if let Some(n) = given.filter(|&n| n > 0) {
        return Some(MoeLayers {
            value: f64::from(n),
            source: "given",
            kernel: None,
        });
    }
    let total_steps: usize = figures.iter().map(|f| f.decode.len()).sum();
    let mut names: Vec<&str> = figures
        .iter()
        .flat_map(|f| f.routing_calls.keys().copied())
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut best: Option<(f64, &str)> = None;
    for name in names {
        let mut calls: Vec<f64> = Vec::with_capacity(total_steps);
        for f in figures {
            match f.routing_calls.get(name) {
                Some(c) => calls.extend(c.iter().map(|&n| f64::from(n))),
                None => calls.extend(std::iter::repeat_n(0.0, f.decode.len())),
            }
        }
        let Some(m) = stats::median(&mut calls) else {
            continue;
        };
        if m >= 1.0 && best.is_none_or(|(b, _)| m < b) {
            best = Some((m, name));
        }
    }
    best.map(|(value, name)| MoeLayers {
        value,
        source: "counted",
        kernel: Some(name.to_string()),
    })
}
