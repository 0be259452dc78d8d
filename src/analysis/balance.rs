//! Per-rank balance of the decode steps: wall, kernel time, comm time and share per rank, the skews
//! between ranks, and any rank whose allreduce calls stand out (H200's rank-0 twoshot).

use std::collections::HashMap;

use serde::Serialize;

use super::{ns_to_ms, Context};
use crate::metrics::waits::{RankWait, Waits};
use crate::metrics::{Extraction, MetricId, MetricMap};
use crate::stats::{mean, median};
use crate::steps::is_allreduce;

/// A rank whose mean allreduce call is at least this many times the median of the other ranks'
/// means stands out (only slow ranks are flagged: with two ranks, one would otherwise flag both).
pub(crate) const ALLREDUCE_OUTLIER_FACTOR: f64 = 1.5;

#[derive(Debug, Clone, Serialize)]
pub struct BalanceSection {
    pub ranks: Vec<RankBalance>,
    /// Decode steps kept on every rank whose collectives were matched across ranks (wait and
    /// transfer are measured on these), and those left out because the sequences differed.
    pub matched_steps: usize,
    pub mismatched_steps: usize,
    /// The registry's `rank_skew_ms` (per matched step, the wait of the rank that waits most
    /// minus the rank that waits least), and those two ranks.
    pub rank_skew_ms: Option<f64>,
    pub waits_most_rank: Option<u32>,
    pub waits_least_rank: Option<u32>,
    /// The rank that arrived last at most matched collectives.
    pub last_arrival_rank: Option<u32>,
    /// Max − min of the per-rank decode wall (near 0 when collectives synchronise the ranks).
    pub wall_skew_ms: Option<f64>,
    /// Max − min of the per-rank comm time per step, and the ranks that have them.
    pub comm_skew_ms: Option<f64>,
    pub comm_max_rank: Option<u32>,
    pub comm_min_rank: Option<u32>,
    /// The registry's `allreduce_rank_ratio`: highest over lowest per-rank mean allreduce call.
    pub allreduce_rank_ratio: Option<f64>,
    /// The allreduce-class kernel with the most calls: outliers are judged on its calls alone,
    /// so that a few long NCCL calls do not blur a per-layer allreduce's asymmetry.
    pub main_allreduce_kernel: Option<String>,
    pub allreduce_outliers: Vec<AllreduceOutlier>,
}

/// One rank's decode figures: `wall_ms`, `comm_pct` and `gpu_util_pct` are the rank's values of
/// the registry's `decode_step_ms`, `comm_pct` and `gpu_util_pct` (read from the extraction, not
/// recomputed); the others are medians over the rank's kept decode steps.
#[derive(Debug, Clone, Serialize)]
pub struct RankBalance {
    pub rank: u32,
    pub label: String,
    pub steps: usize,
    pub wall_ms: Option<f64>,
    pub kernel_ms: Option<f64>,
    pub comm_ms: Option<f64>,
    pub comm_pct: Option<f64>,
    pub gpu_util_pct: Option<f64>,
    pub allreduce_calls: usize,
    /// Mean allreduce-class call, µs.
    pub allreduce_mean_us: Option<f64>,
    /// Mean call of the main allreduce kernel, µs.
    pub main_allreduce_mean_us: Option<f64>,
    /// Medians per matched step (`docs/METRICS.md`, "Waiting in collectives"): compute
    /// (non-comm kernel time), and the collectives' time split into waiting for the last rank and
    /// transfer, ms.
    pub compute_ms: Option<f64>,
    pub wait_ms: Option<f64>,
    pub transfer_ms: Option<f64>,
    /// Share of the matched collectives this rank arrived at last, %.
    pub last_arrival_pct: Option<f64>,
    /// Estimated clock offset against the first rank, µs (about 0 on one host).
    pub clock_offset_us: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AllreduceOutlier {
    pub rank: u32,
    pub label: String,
    pub mean_us: f64,
    /// Median of the other ranks' means, µs.
    pub others_median_us: f64,
    pub ratio: f64,
}

/// The allreduce-class kernel name with the most calls in the kept decode steps of all ranks.
fn main_allreduce(ctx: &Context<'_>) -> Option<String> {
    let mut calls: HashMap<&str, u64> = HashMap::new();
    for rs in ctx.rank_steps {
        for s in &rs.decode {
            for &i in &s.activities {
                if let Some(a) = ctx.activity(s.trace, i) {
                    if is_allreduce(a, ctx.classes_of(s.trace)) {
                        *calls.entry(ctx.name(s.trace, a)).or_default() += 1;
                    }
                }
            }
        }
    }
    calls
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(name, _)| name.to_string())
}

/// Mean duration (µs) of the calls of kernel `name` in a rank's kept decode steps.
fn kernel_mean_us(ctx: &Context<'_>, rs: &crate::steps::RankSteps, name: &str) -> Option<f64> {
    let durations: Vec<f64> = rs
        .decode
        .iter()
        .flat_map(|s| s.activities.iter().map(move |&i| (s.trace, i)))
        .filter_map(|(t, i)| ctx.activity(t, i).map(|a| (t, a)))
        .filter(|(t, a)| ctx.name(*t, a) == name)
        .map(|(_, a)| a.dur as f64 / 1e3)
        .collect();
    mean(&durations)
}

/// A registry metric's value for one rank, as the extraction computed it.
fn rank_value(metrics: &MetricMap, id: MetricId, rank: u32) -> Option<f64> {
    metrics.get(&id)?.per_rank.get(&rank).copied()
}

/// The balance of the extraction's decode steps; registry figures are read from it.
pub(crate) fn balance_section(ctx: &Context<'_>, x: &Extraction) -> BalanceSection {
    let main_allreduce_kernel = main_allreduce(ctx);
    let metrics = &x.metrics;
    let waits = x.waits.as_ref().filter(|w| !w.steps.is_empty());
    let mut ranks = Vec::new();
    for (i, rs) in ctx.rank_steps.iter().enumerate() {
        let wait_median = |f: fn(&RankWait) -> i64| waits.and_then(|w| median(&mut w.series(i, f)));
        let (collectives, last): (u64, u64) = waits.map_or((0, 0), |w| {
            w.steps.iter().fold((0, 0), |(c, l), s| {
                (
                    c + u64::from(s[i].collectives),
                    l + u64::from(s[i].last_arrivals),
                )
            })
        });
        let (figures, allreduce) = ctx.decode_figures(rs);
        let med = |f: &dyn Fn(&crate::metrics::compute::StepFigures) -> Option<f64>| {
            let mut v: Vec<f64> = figures.iter().filter_map(f).collect();
            median(&mut v)
        };
        let allreduce_us: Vec<f64> = allreduce.iter().map(|&ns| ns as f64 / 1e3).collect();
        let rank = rs.rank.index;
        ranks.push(RankBalance {
            rank,
            label: rs.rank.label.clone(),
            steps: figures.len(),
            wall_ms: rank_value(metrics, MetricId::DecodeStepMs, rank),
            kernel_ms: med(&|f| Some(ns_to_ms(f.kernel_ns))),
            comm_ms: med(&|f| Some(ns_to_ms(f.comm_ns))),
            comm_pct: rank_value(metrics, MetricId::CommPct, rank),
            gpu_util_pct: rank_value(metrics, MetricId::GpuUtilPct, rank),
            allreduce_calls: allreduce_us.len(),
            allreduce_mean_us: mean(&allreduce_us),
            main_allreduce_mean_us: main_allreduce_kernel
                .as_deref()
                .and_then(|k| kernel_mean_us(ctx, rs, k)),
            compute_ms: wait_median(|w| w.compute_ns),
            wait_ms: wait_median(|w| w.wait_ns),
            transfer_ms: wait_median(|w| w.transfer_ns),
            last_arrival_pct: (collectives > 0).then(|| last as f64 / collectives as f64 * 100.0),
            clock_offset_us: waits
                .and_then(|w| w.clock_offsets_ns.get(i))
                .map(|&ns| ns as f64 / 1e3),
        });
    }
    let skew = waits.and_then(Waits::skew);
    let value = |id: MetricId| metrics.get(&id).map(|m| m.value);
    let rank_of = |i: usize| ranks.get(i).map(|r: &RankBalance| r.rank);
    let last_arrival_rank = ranks
        .iter()
        .filter(|r| r.last_arrival_pct.is_some())
        .max_by(|a, b| {
            a.last_arrival_pct
                .unwrap_or(0.0)
                .total_cmp(&b.last_arrival_pct.unwrap_or(0.0))
                .then(b.rank.cmp(&a.rank))
        })
        .map(|r| r.rank);
    let spread = |values: Vec<(u32, f64)>| -> Option<(f64, u32, u32)> {
        let max = values.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
        let min = values.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
        Some((max.1 - min.1, max.0, min.0))
    };
    let walls = ranks
        .iter()
        .filter_map(|r| r.wall_ms.map(|w| (r.rank, w)))
        .collect();
    let comms: Vec<(u32, f64)> = ranks
        .iter()
        .filter_map(|r| r.comm_ms.map(|w| (r.rank, w)))
        .collect();
    let comm_spread = if comms.iter().any(|c| c.1 > 0.0) {
        spread(comms)
    } else {
        None
    };
    let means: Vec<(u32, &str, f64)> = ranks
        .iter()
        .filter_map(|r| {
            r.main_allreduce_mean_us
                .map(|m| (r.rank, r.label.as_str(), m))
        })
        .collect();
    let mut allreduce_outliers = Vec::new();
    if means.len() >= 2 {
        for (k, &(rank, label, m)) in means.iter().enumerate() {
            let mut others: Vec<f64> = means
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != k)
                .map(|(_, o)| o.2)
                .collect();
            let Some(others_median) = median(&mut others) else {
                continue;
            };
            if others_median <= 0.0 {
                continue;
            }
            let ratio = m / others_median;
            if ratio >= ALLREDUCE_OUTLIER_FACTOR {
                allreduce_outliers.push(AllreduceOutlier {
                    rank,
                    label: label.to_string(),
                    mean_us: m,
                    others_median_us: others_median,
                    ratio,
                });
            }
        }
    }
    BalanceSection {
        matched_steps: waits.map_or(0, |w| w.steps.len()),
        mismatched_steps: waits.map_or(0, |w| w.mismatched_steps),
        rank_skew_ms: value(MetricId::RankSkewMs),
        waits_most_rank: skew.as_ref().and_then(|s| rank_of(s.0)),
        waits_least_rank: skew.as_ref().and_then(|s| rank_of(s.1)),
        last_arrival_rank,
        wall_skew_ms: spread(walls).map(|s| s.0),
        comm_skew_ms: comm_spread.map(|s| s.0),
        comm_max_rank: comm_spread.map(|s| s.1),
        comm_min_rank: comm_spread.map(|s| s.2),
        allreduce_rank_ratio: value(MetricId::AllreduceRankRatio),
        main_allreduce_kernel,
        allreduce_outliers,
        ranks,
    }
}
