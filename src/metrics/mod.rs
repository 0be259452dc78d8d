//! Metrics: per-step figures of the steady decode steps and the prefill steps of every rank,
//! combined into the run figures of `docs/METRICS.md` ("Metrics"), with the per-step samples the
//! gate judges and a breakdown per category and kernel.
//!
//! This module computes; it never formats. The JSON a machine reads is the `Serialize` form of
//! [`Extraction`].

pub(crate) mod breakdown;
pub(crate) mod catalog;
pub(crate) mod compute;
mod def;
pub(crate) mod figures;
pub(crate) mod intervals;
pub(crate) mod run;
pub(crate) mod waits;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::reader::model::Run;
use crate::steps::{self, Detection, RankSteps, DEFAULT_WARMUP_STEPS};
use crate::taxonomy::Class;
use crate::units::Unit;

pub(crate) use crate::steps::RunKind;
use breakdown::{Breakdown, RankTotals};
pub use catalog::{MetricDef, MetricId, METRICS};
use figures::{rank_figures, RankFigures};
use figures::{Context, RunFigures};

/// The metrics of a run, in the order of their names (as the JSON lists them).
pub(crate) type MetricMap = BTreeMap<MetricId, Metric>;

/// What `extract` may be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractOptions {
    /// Decode steps dropped at the start of each rank (`--warmup-steps`).
    pub warmup_steps: usize,
    /// MoE layers of the model (`--moe-layers`, or the baseline's `meta.moe_layers`); counted when `None`.
    pub moe_layers: Option<u32>,
    /// `--step-gap`: the gap threshold that cuts steps, ns (else chosen from the run).
    pub step_gap: Option<i64>,
    /// `warmup_steps` was asked for (`--warmup-steps N`): a count at or above the decode steps a
    /// rank found is an error, not silently no warm-up (which the default allows, for a trace cut
    /// to one or two forward passes).
    pub warmup_asked: bool,
}

impl Default for ExtractOptions {
    fn default() -> Self {
        ExtractOptions {
            warmup_steps: DEFAULT_WARMUP_STEPS,
            moe_layers: None,
            step_gap: None,
            warmup_asked: false,
        }
    }
}

/// Why no figures could be extracted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    #[error("classification given for {got} traces, but the run has {expected}")]
    ClassesMismatch { expected: usize, got: usize },
    /// One line: what was found, and what to try.
    #[error("no decode step (nor prefill or mixed) in any rank: {found}; {next}")]
    NoDecodeStep { found: String, next: String },
    /// xDiT's `execute_diffusion_…` annotations: the run's steps are stages of different shape.
    #[error(
        "a diffusion pipeline ({calls} `{name}` annotation{s}, xDiT's), not a decode loop: its \
         steps are stages of different shape (text encoder, denoising steps, VAE), so it has no \
         decode step to gate; `tracegate report` analyses it",
        s = if *calls == 1 { "" } else { "s" }
    )]
    Diffusion { calls: u64, name: String },
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
        "--warmup-steps {warmup_steps} is not below the {found} decode steps {rank} found, so no \
         step would be dropped as warm-up and every one kept: give fewer (--warmup-steps 0 for none)"
    )]
    WarmupNotBelowSteps {
        warmup_steps: usize,
        found: usize,
        rank: String,
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
    /// `ms`, `%`, `us` or `ratio` in JSON.
    pub unit: Unit,
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

impl Metric {
    /// A metric of `def` with its value alone.
    pub fn new(def: &MetricDef, value: f64) -> Metric {
        Metric {
            value,
            p50: None,
            p90: None,
            p99: None,
            unit: def.unit,
            direction: def.direction,
            per_rank: BTreeMap::new(),
            samples: Vec::new(),
            decided_by: None,
        }
    }

    /// The same metric with these samples behind its value.
    pub fn sampled(self, samples: Vec<f64>) -> Metric {
        Metric { samples, ..self }
    }
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
    /// `loop` for a ProfilerStep loop; absent for a serving run.
    #[serde(skip_serializing_if = "RunKind::is_serving")]
    pub kind: RunKind,
    /// Which ranks of how many a partial run holds ("0 of 4", "0,1 of 4"); absent when whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_ranks: Option<String>,
    /// The ranks of the run's group: the ranks found, or for a partial run those it should have
    /// (what `tp` records).
    #[serde(skip)]
    pub group_ranks: usize,
    /// Each trace file and the device name it reports (empty when none), for telling a run on
    /// mixed hardware apart.
    #[serde(skip)]
    pub trace_devices: Vec<(std::path::PathBuf, String)>,
    /// The serving framework the trace tells (`identity::framework_of`), set by the pipeline.
    #[serde(skip)]
    pub framework: Option<String>,
}

/// How many steps a rank has, kept and dropped, and how they were found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankStepSummary {
    pub decode_kept: usize,
    pub decode_dropped: usize,
    pub prefill: usize,
    /// Steps that mix prefill and decode tokens.
    #[serde(skip_serializing_if = "is_zero")]
    pub mixed: usize,
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
    pub metrics: MetricMap,
    pub steps: BTreeMap<u32, RankStepSummary>,
    pub breakdown: Breakdown,
    /// The breakdown's share of kernel time in category `other`, pooled over ranks, % (not the
    /// metric `other_pct`, which is per step, median per rank, worst rank).
    pub other_share_pct: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_layers: Option<MoeLayers>,
    /// Sequences decoding per step (`bs=N`, vLLM's generation requests): the median over ranks
    /// of each rank's median over its kept decode steps; absent where steps carry none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_batch: Option<f64>,
    /// The run's kernel time by the kind of step that holds it, all ranks pooled.
    pub step_mix: MixShares,
    pub warnings: Vec<String>,
    /// The steps behind the figures, for later stages (shapes, reports).
    #[serde(skip)]
    pub rank_steps: Vec<RankSteps>,
    /// The collectives matched across ranks (wait and transfer), for reports and the gate's
    /// explanation; `None` when the ranks found different numbers of decode steps.
    #[serde(skip)]
    pub waits: Option<waits::Waits>,
    /// Each rank's own breakdown (per kept decode step), for naming what a straggler slowed in.
    #[serde(skip)]
    pub rank_breakdowns: BTreeMap<u32, Breakdown>,
}

/// Shares of the run's kernel time (all ranks pooled) by what holds it, %: decode, prefill and
/// mixed steps, steps of another label (`IDLE`, `TARGET_VERIFY`, unknown modes), and no step.
/// Shares, not counts: profile windows differ in length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct MixShares {
    pub decode_pct: f64,
    pub prefill_pct: f64,
    pub mixed_pct: f64,
    pub other_label_pct: f64,
    pub no_step_pct: f64,
}

impl MixShares {
    fn of(mix: &steps::StepMix) -> MixShares {
        let total = mix.total() as f64;
        let pct = |ns: i64| {
            if total > 0.0 {
                ns as f64 / total * 100.0
            } else {
                0.0
            }
        };
        MixShares {
            decode_pct: pct(mix.decode),
            prefill_pct: pct(mix.prefill),
            mixed_pct: pct(mix.mixed),
            other_label_pct: pct(mix.other_label),
            no_step_pct: pct(mix.unassigned),
        }
    }

    /// Each kind with its share, in the order above.
    pub fn kinds(&self) -> [(&'static str, f64); 5] {
        [
            ("decode", self.decode_pct),
            ("prefill", self.prefill_pct),
            ("mixed", self.mixed_pct),
            ("other-label", self.other_label_pct),
            ("no step", self.no_step_pct),
        ]
    }
}

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
        for bucket in &s.unreadable_log_buckets {
            warnings.push(format!(
                "{}: skipped its top-level {bucket} log array, which is not valid JSON \
                 (quotes left unescaped by older Kineto, pytorch/kineto#1459); the events are read whole",
                t.file.display()
            ));
        }
    }
    warnings
}

/// Extracts the figures of a run. `classes[i]` classifies the names of `run.traces[i]` by `NameId`.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))] // public through `testing`
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
    let step_opts = steps::StepOptions {
        warmup: opts.warmup_steps,
        step_gap: opts.step_gap,
    };
    let rank_steps = steps::find_steps_with(run, classes, &step_opts);
    check_warmup(&rank_steps, opts)?;
    check_decode_steps(&rank_steps, opts.warmup_steps)?;
    check_same_step_counts(&rank_steps)?;

    let figures: Vec<RankFigures<'_>> = rank_steps
        .par_iter()
        .map(|rs| rank_figures(run, classes, rs))
        .collect();
    let moe_layers = run::moe_layers(&figures, opts.moe_layers);
    let decode_batch = run::decode_batch(&figures);
    let mut mix = steps::StepMix::default();
    for f in &figures {
        mix.add(&f.mix);
    }
    let context = context(&figures, moe_layers.as_ref());
    let waits = waits::match_collectives(run, classes, &rank_steps);
    let kind = if rank_steps.iter().any(|r| !r.loop_steps.is_empty()) {
        RunKind::Loop
    } else {
        RunKind::Serving
    };
    let metrics = run::all_metrics(
        &RunFigures {
            kind,
            ranks: &figures,
            context,
            waits: waits.as_ref(),
        },
        catalog::METRICS,
    );
    let mut warnings = read_warnings(run);
    for file in &run.skipped {
        warnings.push(format!(
            "{}: skipped: a CPU-only trace that names no rank (a serving frontend's, such as \
             vLLM's async_llm trace)",
            file.display()
        ));
    }
    if let Some(m) = &run.missing {
        warnings.push(format!(
            "{m}: waits, rank skew and stragglers are measured among the ranks present only"
        ));
    }
    if let Some(group) = &run.dp_group {
        warnings.push(format!(
            "judged as one data-parallel replica, {group}: the files hold that group whole, \
             and the other groups' are not given"
        ));
    }
    warnings.extend(rank_warnings(run, &rank_steps));
    warnings.extend(waits.iter().flat_map(|w| w.warnings.iter().cloned()));

    let ranks: Vec<u32> = figures.iter().map(|f| f.rank).collect();
    let totals: Vec<RankTotals<'_>> = figures.into_iter().map(|f| f.totals).collect();
    let breakdown = breakdown::combine(&totals);
    let rank_breakdowns = ranks
        .into_iter()
        .zip(&totals)
        .map(|(r, t)| (r, breakdown::combine(std::slice::from_ref(t))))
        .collect();
    Ok(Extraction {
        run: RunInfo {
            ranks: rank_steps.iter().map(|r| r.rank.index).collect(),
            traces: run.traces.len(),
            device: run_device(run),
            warmup_steps: if kind == RunKind::Loop {
                0
            } else {
                opts.warmup_steps
            },
            kind,
            framework: crate::identity::framework_of(run).map(str::to_string),
            partial_ranks: run.missing.as_ref().map(|m| {
                let present: Vec<String> =
                    run.rank_indices().iter().map(|r| r.to_string()).collect();
                format!("{} of {}", present.join(","), m.expected)
            }),
            group_ranks: run
                .missing
                .as_ref()
                .map_or(rank_steps.len(), |m| m.expected as usize),
            trace_devices: run
                .traces
                .iter()
                .map(|t| {
                    let name = t.device.as_ref().map_or("", |d| d.name.trim());
                    (t.file.clone(), name.to_string())
                })
                .collect(),
        },
        metrics,
        steps: step_summaries(&rank_steps),
        other_share_pct: breakdown.other_share_pct(),
        breakdown,
        moe_layers,
        decode_batch,
        step_mix: MixShares::of(&mix),
        warnings,
        rank_steps,
        waits,
        rank_breakdowns,
    })
}

/// The device of the run: the first non-empty device name a trace reports.
pub(crate) fn run_device(run: &Run) -> Option<String> {
    run.traces
        .iter()
        .filter_map(|t| t.device.as_ref().map(|d| d.name.trim()))
        .find(|name| !name.is_empty())
        .map(str::to_string)
}

fn context(figures: &[RankFigures<'_>], moe_layers: Option<&MoeLayers>) -> Context {
    let decode = || figures.iter().flat_map(|f| &f.decode);
    let any_moe_gemm = decode().any(|s| s.moe_gemm_calls > 0);
    Context {
        decode_comm: decode().any(|s| s.comm_calls > 0),
        prefill_comm: figures
            .iter()
            .flat_map(|f| &f.prefill)
            .any(|s| s.comm_calls > 0),
        moe_layers: moe_layers.filter(|_| any_moe_gemm).map(|l| l.value),
    }
}

fn step_summaries(rank_steps: &[RankSteps]) -> BTreeMap<u32, RankStepSummary> {
    rank_steps
        .iter()
        .map(|r| {
            (
                r.rank.index,
                RankStepSummary {
                    decode_kept: r.decode.len(),
                    decode_dropped: r.dropped.len(),
                    prefill: r.prefill.len(),
                    mixed: r.mixed.len(),
                    dropped_warmup: r.dropped_warmup,
                    dropped_outliers: r.dropped_outliers,
                    unassigned_ms: r.unassigned_ns as f64 / 1e6,
                    found: r.found.clone(),
                },
            )
        })
        .collect()
}

/// Ranks that disagree on their steady state, traces that report different devices.
fn rank_warnings(run: &Run, rank_steps: &[RankSteps]) -> Vec<String> {
    let mut warnings = Vec::new();
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
    warnings
}

/// Fails when no rank holds a step of any kind, or decode steps were found and none is left after
/// warm-up and outlier removal, saying what was found instead. A run of prefill or mixed steps
/// alone is a run: it has the metrics of those.
fn check_decode_steps(ranks: &[RankSteps], warmup_steps: usize) -> Result<(), MetricsError> {
    let mut found = Detection::default();
    for r in ranks {
        found.merge(&r.found);
    }
    if found.diffusion_calls > 0 {
        return Err(MetricsError::Diffusion {
            calls: found.diffusion_calls,
            name: found.diffusion_name.clone().unwrap_or_default(),
        });
    }
    if ranks
        .iter()
        .any(|r| !r.decode.is_empty() || !r.loop_steps.is_empty())
    {
        return Ok(());
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
    if ranks
        .iter()
        .any(|r| !r.prefill.is_empty() || !r.mixed.is_empty())
    {
        return Ok(());
    }
    Err(MetricsError::NoDecodeStep {
        found: describe(
            &found,
            ranks.len(),
            ranks
                .iter()
                .map(|r| r.found.profiler_steps)
                .max()
                .unwrap_or(0),
        ),
        next: next_step(&found),
    })
}

/// A warm-up asked for that is not below the decode steps a rank found would drop nothing (the
/// steady state keeps every step then): refused, naming the rank with fewest steps.
fn check_warmup(ranks: &[RankSteps], opts: &ExtractOptions) -> Result<(), MetricsError> {
    if !opts.warmup_asked || opts.warmup_steps == 0 {
        return Ok(());
    }
    let found = |r: &RankSteps| r.decode.len() + r.dropped_warmup + r.dropped_outliers;
    match ranks
        .iter()
        .filter(|r| found(r) > 0)
        .min_by_key(|r| found(r))
    {
        Some(r) if found(r) <= opts.warmup_steps => Err(MetricsError::WarmupNotBelowSteps {
            warmup_steps: opts.warmup_steps,
            found: found(r),
            rank: r.rank.label.to_string(),
        }),
        _ => Ok(()),
    }
}

/// What to try when no step was found: a trace that records a graph capture runs almost nothing
/// (the replay is what serves); otherwise see how the trace was cut, or cut it by hand.
fn next_step(found: &Detection) -> String {
    if found.graph_captures > 0 {
        "this trace records a CUDA-graph capture: profile the replay (the serving loop) instead"
            .into()
    } else if found.profiler_steps > 0 {
        "`tracegate report` shows how the trace was cut".into()
    } else {
        "`tracegate report` shows how the trace was cut; --step-gap DURATION sets the cut".into()
    }
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

/// "1,204 GPU activities in 1 rank, 7 segments cut from the rest, 0 forwards, 2 ProfilerSteps
/// (fewer than 3 is not a loop), annotations: `ProfilerStep#N`, `Optimizer.step#SGD.step`":
/// short (step annotations and graph launches only where there are any), the details are
/// `report`'s.
fn describe(found: &Detection, ranks: usize, profiler_steps_per_rank: u64) -> String {
    let forwards = found
        .gap_segments
        .saturating_sub(found.gap_segments_rejected);
    let undecided = found.labelled_by.undecided;
    let mut line = format!(
        "{} in {}",
        count(found.activities, "GPU activity"),
        count(ranks as u64, "rank"),
    );
    // Step annotations and graph launches where there are any: the annotations seen say the rest.
    for (n, what) in [
        (found.step_annotations, "step annotation"),
        (found.graph_launches, "graph launch"),
    ] {
        if n > 0 {
            line.push_str(&format!(", {}", count(n, what)));
        }
    }
    line.push_str(&format!(
        ", {} cut from the rest, {}",
        count(found.gap_segments, "segment"),
        count(forwards, "forward"),
    ));
    if undecided > 0 {
        line.push_str(&format!(
            " ({} neither prefill nor decode by any evidence)",
            thousands(undecided)
        ));
    }
    if profiler_steps_per_rank > 0 {
        line.push_str(&format!(
            ", {}{} (fewer than {} is not a loop)",
            count(profiler_steps_per_rank, "ProfilerStep"),
            if ranks > 1 { " per rank" } else { "" },
            steps::LOOP_MIN_ITERATIONS
        ));
    }
    if !found.annotations_seen.is_empty() {
        let names: Vec<String> = found
            .annotations_seen
            .iter()
            .take(3)
            .map(|(name, _)| format!("`{}`", shortened(name)))
            .collect();
        line.push_str(&format!(", annotations: {}", names.join(", ")));
    } else {
        line.push_str(", no CPU annotation");
    }
    if found.graph_captures > 0 {
        line.push_str(&format!(
            ", {}",
            count(found.graph_captures, "graph capture")
        ));
    }
    line
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

/// An annotation name cut to 32 characters, with an ellipsis where it was cut.
fn shortened(name: &str) -> String {
    const MAX: usize = 32;
    if name.chars().count() <= MAX {
        return name.to_string();
    }
    let mut cut: String = name.chars().take(MAX - 1).collect();
    cut.push('…');
    cut
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
