//! Run figures from every rank's figures: the generic per-step metric (a statistic per rank, the
//! ranks combined) and the metrics that take all ranks at once (pooled allreduce calls, the rank
//! ratio, rank skew), plus the MoE layer count they divide by.

use std::collections::BTreeMap;

use super::def::{Across, Compute, MetricDef, Phase};
use super::figures::{Context, RankFigures, RunFigures};
use super::{Metric, MetricMap, MoeLayers};
use crate::stats::{self, Statistic};
use crate::steps::Stalls;

/// Computes every metric of the registry, in its order; metrics without inputs are absent.
pub(crate) fn all_metrics(figures: &RunFigures<'_>, defs: &[MetricDef]) -> MetricMap {
    let mut metrics = MetricMap::new();
    for def in defs.iter().filter(|d| d.runs.include(figures.kind)) {
        let metric = match def.compute {
            Compute::PerStep { sample, across } => per_step_metric(figures, def, sample, across),
            Compute::Run(f) => f(def, figures, &metrics),
        };
        if let Some(m) = metric {
            metrics.insert(def.id, m);
        }
    }
    metrics
}

/// A metric whose per-rank value is its statistic of per-step samples and whose run value is the
/// max or min over ranks; ranks without a sample do not take part; `None` when no rank has one.
/// With `with_p90`, each rank also has a p90 and the run's p90 is the max of them.
fn per_step_metric(
    figures: &RunFigures<'_>,
    def: &MetricDef,
    sample: fn(&super::compute::StepFigures, &Context) -> Option<f64>,
    across: Across,
) -> Option<Metric> {
    ranked_metric(figures, def, across, |f| {
        let steps = match def.phase {
            Phase::Decode => &f.decode,
            Phase::Prefill => &f.prefill,
            Phase::Mixed => &f.mixed,
        };
        steps
            .iter()
            .filter_map(|s| sample(s, &figures.context))
            .collect()
    })
}

/// [`per_step_metric`] over the samples `samples_of` gives each rank.
fn ranked_metric(
    figures: &RunFigures<'_>,
    def: &MetricDef,
    across: Across,
    samples_of: impl Fn(&RankFigures<'_>) -> Vec<f64>,
) -> Option<Metric> {
    let mut best: Option<(u32, f64, Vec<f64>)> = None;
    let mut per_rank = BTreeMap::new();
    let mut run_p90: Option<f64> = None;
    for f in figures.ranks {
        let samples = samples_of(f);
        if samples.is_empty() {
            continue;
        }
        let value = def.statistic.of(&samples);
        if def.with_p90 {
            let q = Statistic::P90.of(&samples);
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
        p90: run_p90,
        per_rank,
        samples,
        decided_by: Some(rank),
        ..Metric::new(def, value)
    })
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

/// `rank_skew_ms`: per matched step, the wait of the rank that waits most minus that of the rank
/// that waits least (by their median wait per step); the median over steps. Per rank: its median
/// wait per step. Absent when no step's collectives could be matched.
pub(crate) fn rank_skew_ms(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    let w = figures.waits.filter(|w| !w.steps.is_empty())?;
    let (_, _, samples) = w.skew()?;
    Some(
        Metric {
            per_rank: figures
                .ranks
                .iter()
                .map(|f| f.rank)
                .zip(w.median_wait_ms())
                .collect(),
            ..Metric::new(def, def.statistic.of(&samples))
        }
        .sampled(samples),
    )
}

/// `allreduce_transfer_us`: every allreduce-class call of the matched steps net of its wait, all
/// ranks pooled.
pub(crate) fn allreduce_transfer_us(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    let pooled: Vec<f64> = figures
        .waits?
        .allreduce_transfer_ns
        .iter()
        .map(|&ns| ns as f64 / 1e3)
        .collect();
    pooled_us(def, pooled)
}

/// `allreduce_us`: every allreduce-class call of the kept decode steps, all ranks pooled.
pub(crate) fn allreduce_us(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    let pooled: Vec<f64> = figures
        .ranks
        .iter()
        .flat_map(|f| f.allreduce_ns.iter().map(|&ns| ns as f64 / 1e3))
        .collect();
    pooled_us(def, pooled)
}

/// `allreduce_rank_ratio`: max / min over ranks of the rank's mean allreduce call.
pub(crate) fn allreduce_rank_ratio(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    let per_rank: BTreeMap<u32, f64> = figures
        .ranks
        .iter()
        .filter_map(|f| {
            let calls: Vec<f64> = f.allreduce_ns.iter().map(|&ns| ns as f64 / 1e3).collect();
            stats::mean(&calls).map(|m| (f.rank, m))
        })
        .collect();
    if per_rank.len() < 2 {
        return None;
    }
    let means: Vec<f64> = per_rank.values().copied().collect();
    let (lo, hi) = min_max(&means);
    if lo <= 0.0 {
        return None;
    }
    Some(Metric {
        per_rank,
        samples: means,
        ..Metric::new(def, hi / lo)
    })
}

/// The MoE layer count: given, else for each `moe_routing` kernel name its median calls per kept
/// decode step over all ranks' kept decode steps, the smallest of those medians that is at least 1.
pub(crate) fn moe_layers(figures: &[RankFigures<'_>], given: Option<u32>) -> Option<MoeLayers> {
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
        // Steps where the kernel ran: with zeros in more than half of the steps the median is 0,
        // below the bar, and a run of a million one-off names skips the sort of each.
        let ran: usize = figures
            .iter()
            .filter_map(|f| f.routing_calls.get(name))
            .map(|c| c.iter().filter(|&&n| n > 0).count())
            .sum();
        if total_steps - ran > total_steps / 2 {
            continue;
        }
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

/// `decode_stall_pct`: per rank the share of its decode steps after warm-up that stalled, the
/// run's the largest; samples are the deciding rank's, one per step (100 stalled, 0 not).
pub(crate) fn decode_stall_pct(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    worst_rank_stalls(def, figures, Stalls::pct, Stalls::samples)
}

/// `decode_stall_ms_per_step`: per rank the time its stalls cost (each stalled step's wall minus
/// the median wall) over its decode steps after warm-up, the run's the largest; samples are the
/// deciding rank's, one per step (the time a stalled step cost, 0 for the others).
pub(crate) fn decode_stall_ms_per_step(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    worst_rank_stalls(def, figures, Stalls::lost_ms_per_step, Stalls::lost_samples)
}

/// A stall metric: `value` of each rank's stalls, the run's the largest, with the samples of the
/// rank that decided it.
fn worst_rank_stalls(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    value: fn(&Stalls) -> Option<f64>,
    samples: fn(&Stalls) -> Vec<f64>,
) -> Option<Metric> {
    let mut per_rank = BTreeMap::new();
    let mut best: Option<(u32, f64, &Stalls)> = None;
    for f in figures.ranks {
        let Some(v) = value(&f.stalls) else {
            continue;
        };
        per_rank.insert(f.rank, v);
        if best.is_none_or(|(_, b, _)| v > b) {
            best = Some((f.rank, v, &f.stalls));
        }
    }
    let (rank, value, stalls) = best?;
    Some(Metric {
        per_rank,
        samples: samples(stalls),
        decided_by: Some(rank),
        ..Metric::new(def, value)
    })
}

/// A metric over pooled calls (µs): their mean, with p50 and p99 beside it.
fn pooled_us(def: &MetricDef, pooled: Vec<f64>) -> Option<Metric> {
    let mean = stats::mean(&pooled)?;
    let mut sorted = pooled.clone();
    sorted.sort_unstable_by(f64::total_cmp);
    Some(Metric {
        p50: stats::percentile_sorted(&sorted, 50.0),
        p99: stats::percentile_sorted(&sorted, 99.0),
        samples: pooled,
        ..Metric::new(def, mean)
    })
}

/// `decode_iter_ms`: per rank the median of its decode iterations (a forward's start to the next
/// one's), the slowest rank's; samples one per iteration.
pub(crate) fn decode_iter_ms(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    ranked_metric(figures, def, Across::Max, |f| {
        f.iterations.iter().map(|i| i.iter_ms).collect()
    })
}

/// `iteration_ms`: per rank the median of its ProfilerStep loop's iterations (one iteration's
/// first GPU activity to the next one's), the slowest rank's; samples one per iteration.
pub(crate) fn iteration_ms(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    metrics: &MetricMap,
) -> Option<Metric> {
    decode_iter_ms(def, figures, metrics)
}

/// `decode_host_gap_ms`: per rank the median GPU-idle time between consecutive decode forwards,
/// the largest; samples one per iteration.
pub(crate) fn decode_host_gap_ms(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    ranked_metric(figures, def, Across::Max, |f| {
        f.iterations.iter().map(|i| i.host_gap_ms).collect()
    })
}

/// `decode_phase_util_pct`: per rank the median busy share of its kept iterations, the least.
pub(crate) fn decode_phase_util_pct(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    ranked_metric(figures, def, Across::Min, |f| {
        f.iterations.iter().filter_map(|i| i.util_pct).collect()
    })
}

/// Slow iterations are those above this multiple of the median iteration.
pub(crate) const SLOW_FACTOR: f64 = 1.5;

/// The time each iteration of a rank lost to slowness, ms: above [`SLOW_FACTOR`] × the median
/// iteration, its excess over the median; 0 for the others. Empty without iterations.
pub(crate) fn slow_losses(iter_ms: &[f64]) -> (Option<f64>, Vec<f64>) {
    let median = stats::median(&mut iter_ms.to_vec());
    let losses = match median {
        Some(m) => iter_ms
            .iter()
            .map(|&t| if t > SLOW_FACTOR * m { t - m } else { 0.0 })
            .collect(),
        None => Vec::new(),
    };
    (median, losses)
}

/// `decode_slow_ms_per_iter`: per rank the time its slow iterations cost over its iterations,
/// the largest; samples the deciding rank's losses, one per iteration.
pub(crate) fn decode_slow_ms_per_iter(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    let mut per_rank = BTreeMap::new();
    let mut best: Option<(u32, f64, Vec<f64>)> = None;
    for f in figures.ranks {
        let iters: Vec<f64> = f.iterations.iter().map(|i| i.iter_ms).collect();
        let (_, losses) = slow_losses(&iters);
        let Some(v) = stats::mean(&losses) else {
            continue;
        };
        // Folded from +0.0: a sum of nothing but zeros prints as 0.000, never -0.000.
        let v = v + 0.0;
        per_rank.insert(f.rank, v);
        if best.as_ref().is_none_or(|(_, b, _)| v > *b) {
            best = Some((f.rank, v, losses));
        }
    }
    let (rank, value, samples) = best?;
    Some(Metric {
        per_rank,
        samples,
        decided_by: Some(rank),
        ..Metric::new(def, value)
    })
}

/// The run's decode batch: the median over ranks of each rank's median batch, where any rank's
/// steps carry one.
pub(crate) fn decode_batch(figures: &[RankFigures<'_>]) -> Option<f64> {
    let mut batches: Vec<f64> = figures.iter().filter_map(|f| f.batch).collect();
    stats::median(&mut batches)
}

/// `decode_tokens_per_s`: the decode batch × 1000 / `decode_iter_ms`: tokens the run decodes per
/// second, each sequence one token per iteration.
pub(crate) fn decode_tokens_per_s(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    metrics: &MetricMap,
) -> Option<Metric> {
    let batch = decode_batch(figures.ranks)?;
    let iter = metrics.get(&super::MetricId::DecodeIterMs)?.value;
    (iter > 0.0).then(|| Metric::new(def, batch * 1000.0 / iter))
}

/// `unassigned_pct`: per rank the kernel time no step holds over all its kernel time, the largest.
pub(crate) fn unassigned_pct(
    def: &MetricDef,
    figures: &RunFigures<'_>,
    _: &MetricMap,
) -> Option<Metric> {
    let per_rank: BTreeMap<u32, f64> = figures
        .ranks
        .iter()
        .filter(|f| f.mix.total() > 0)
        .map(|f| {
            (
                f.rank,
                f.mix.unassigned as f64 / f.mix.total() as f64 * 100.0,
            )
        })
        .collect();
    let (&rank, &value) = per_rank.iter().max_by(|a, b| a.1.total_cmp(b.1))?;
    Some(Metric {
        per_rank,
        decided_by: Some(rank),
        ..Metric::new(def, value)
    })
}
