//! Per-rank balance of the decode steps: wall, kernel time, comm time and share per rank, the skews
//! between ranks, and any rank whose allreduce calls stand out (H200's rank-0 twoshot).

use std::collections::HashMap;

use serde::Serialize;

use super::{ns_to_ms, Context};
use crate::stats::{mean, median};
use crate::steps::is_allreduce;

/// A rank whose mean allreduce call is at least this many times the median of the other ranks'
/// means stands out (only slow ranks are flagged: with two ranks, one would otherwise flag both).
pub const ALLREDUCE_OUTLIER_FACTOR: f64 = 1.5;

#[derive(Debug, Clone, Serialize)]
pub struct BalanceSection {
    pub ranks: Vec<RankBalance>,
    /// Max − min of the per-rank decode wall (`rank_skew_ms`).
    pub wall_skew_ms: Option<f64>,
    /// Max − min of the per-rank comm time per step, and the ranks that have them.
    pub comm_skew_ms: Option<f64>,
    pub comm_max_rank: Option<u32>,
    pub comm_min_rank: Option<u32>,
    /// Highest over lowest per-rank mean allreduce call (`allreduce_rank_ratio`).
    pub allreduce_rank_ratio: Option<f64>,
    /// The allreduce-class kernel with the most calls: outliers are judged on its calls alone,
    /// so that a few long NCCL calls do not blur a per-layer allreduce's asymmetry.
    pub main_allreduce_kernel: Option<String>,
    pub allreduce_outliers: Vec<AllreduceOutlier>,
}

/// Medians over the rank's kept decode steps (so `wall_ms` and `comm_pct` are the rank's
/// `decode_step_ms` and `comm_pct`).
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

pub(crate) fn balance_section(ctx: &Context<'_>) -> BalanceSection {
    let main_allreduce_kernel = main_allreduce(ctx);
    let mut ranks = Vec::new();
    for rs in ctx.rank_steps {
        let (figures, allreduce) = ctx.decode_figures(rs);
        let med = |f: &dyn Fn(&crate::metrics::compute::StepFigures) -> Option<f64>| {
            let mut v: Vec<f64> = figures.iter().filter_map(f).collect();
            median(&mut v)
        };
        let allreduce_us: Vec<f64> = allreduce.iter().map(|&ns| ns as f64 / 1e3).collect();
        ranks.push(RankBalance {
            rank: rs.rank.index,
            label: rs.rank.label.clone(),
            steps: figures.len(),
            wall_ms: med(&|f| Some(f.wall_ms())),
            kernel_ms: med(&|f| Some(ns_to_ms(f.kernel_ns))),
            comm_ms: med(&|f| Some(ns_to_ms(f.comm_ns))),
            comm_pct: med(&|f| f.comm_pct()),
            gpu_util_pct: med(&|f| f.gpu_util_pct()),
            allreduce_calls: allreduce_us.len(),
            allreduce_mean_us: mean(&allreduce_us),
            main_allreduce_mean_us: main_allreduce_kernel
                .as_deref()
                .and_then(|k| kernel_mean_us(ctx, rs, k)),
        });
    }
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
    let all_means: Vec<f64> = ranks.iter().filter_map(|r| r.allreduce_mean_us).collect();
    let allreduce_rank_ratio = (all_means.len() >= 2)
        .then(|| {
            let hi = all_means.iter().copied().fold(f64::MIN, f64::max);
            let lo = all_means.iter().copied().fold(f64::MAX, f64::min);
            (lo > 0.0).then(|| hi / lo)
        })
        .flatten();
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
        wall_skew_ms: spread(walls).map(|s| s.0),
        comm_skew_ms: comm_spread.map(|s| s.0),
        comm_max_rank: comm_spread.map(|s| s.1),
        comm_min_rank: comm_spread.map(|s| s.2),
        allreduce_rank_ratio,
        main_allreduce_kernel,
        allreduce_outliers,
        ranks,
    }
}
