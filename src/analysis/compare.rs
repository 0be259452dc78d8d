//! Comparison of two or more analysed runs: the head-to-head figures with their ratio to the first
//! run, time per category, and the kernel libraries each run uses per category.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{RunAnalysis, Scope};
use crate::taxonomy::Category;

/// Kernels per category and run shown as "what it uses".
pub const TOP_KERNELS_PER_CATEGORY: usize = 3;

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub runs: Vec<ComparedRun>,
    /// Figures side by side, with the ratio of each run to the first.
    pub metrics: Vec<MetricRow>,
    /// Time per category per step (or per rank over the whole trace), ms.
    pub categories: Vec<MetricRow>,
    /// Words side by side (allreduce kernel and protocol, main kernels).
    pub facts: Vec<FactRow>,
    /// Per category: the top kernels of each run and those only one run uses.
    pub libraries: Vec<LibraryRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComparedRun {
    pub label: String,
    pub device: Option<String>,
    pub ranks: usize,
    pub scope: Scope,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    pub key: String,
    pub label: String,
    pub unit: &'static str,
    pub values: Vec<Option<f64>>,
    /// value / first run's value; `None` where either is missing or the first is zero.
    pub ratios: Vec<Option<f64>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FactRow {
    pub key: String,
    pub label: String,
    pub values: Vec<Option<String>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LibraryRow {
    pub category: Category,
    /// Per run: its top kernels of the category by time.
    pub top: Vec<Vec<String>>,
    /// Per run: kernels of the category no other run has.
    pub only_here: Vec<Vec<String>>,
}

fn metric_row(key: &str, label: &str, unit: &'static str, values: Vec<Option<f64>>) -> MetricRow {
    let first = values.first().copied().flatten();
    let ratios = values
        .iter()
        .map(|v| match (v, first) {
            (Some(v), Some(f)) if f != 0.0 => Some(v / f),
            _ => None,
        })
        .collect();
    MetricRow {
        key: key.to_string(),
        label: label.to_string(),
        unit,
        values,
        ratios,
    }
}

fn category_ms(a: &RunAnalysis, c: Category) -> Option<f64> {
    a.breakdown
        .breakdown
        .categories
        .get(&c)
        .map(|s| s.ms_per_step)
}

fn top_kernel(a: &RunAnalysis, c: Category) -> Option<String> {
    a.breakdown
        .breakdown
        .kernels
        .iter()
        .filter(|k| k.category == c)
        .max_by(|x, y| x.ms_per_step.total_cmp(&y.ms_per_step))
        .map(|k| k.name.clone())
}

/// The rank of the decode head-to-head: the one with the highest comm share (the rank
/// `comm_pct` reports).
fn decisive_rank(a: &RunAnalysis) -> Option<&super::balance::RankBalance> {
    let b = a.balance.as_ref()?;
    b.ranks
        .iter()
        .filter(|r| r.comm_pct.is_some())
        .max_by(|x, y| {
            x.comm_pct
                .unwrap_or(0.0)
                .total_cmp(&y.comm_pct.unwrap_or(0.0))
                .then(y.rank.cmp(&x.rank))
        })
        .or_else(|| b.ranks.first())
}

/// Kernel and comm time (ms) as the head-to-head shows them: per decode step of the rank with
/// the highest comm share (the rank `comm_pct` reports), else per rank over the whole trace.
fn decisive(a: &RunAnalysis) -> Option<(f64, f64)> {
    if a.balance.is_some() {
        return decisive_rank(a).and_then(|r| Some((r.kernel_ms?, r.comm_ms.unwrap_or(0.0))));
    }
    Some((a.breakdown.total_ms, a.comm.ms))
}

/// Compares analysed runs, the first being the reference of the ratios.
pub fn compare(runs: &[(String, &RunAnalysis)]) -> Comparison {
    let values = |f: &dyn Fn(&RunAnalysis) -> Option<f64>| -> Vec<Option<f64>> {
        runs.iter().map(|(_, a)| f(a)).collect()
    };
    let main_allreduce = |a: &RunAnalysis| {
        a.comm
            .kernels
            .iter()
            .find(|k| k.collective == Some(crate::taxonomy::Collective::Allreduce))
            .cloned()
    };
    let metrics = vec![
        metric_row(
            "decode_step_ms",
            "Decode wall time",
            "ms",
            values(&|a| a.decode.as_ref().and_then(|d| d.wall_ms)),
        ),
        metric_row(
            "kernel_ms",
            "Kernel time (decode: rank with the highest comm %)",
            "ms",
            values(&|a| decisive(a).map(|f| f.0)),
        ),
        metric_row(
            "compute_ms",
            "Compute time (kernel − comm, same rank)",
            "ms",
            values(&|a| decisive(a).map(|f| f.0 - f.1)),
        ),
        metric_row(
            "comm_ms",
            "Comm time (same rank)",
            "ms",
            values(&|a| {
                decisive(a)
                    .map(|f| f.1)
                    .filter(|_| !a.comm.kernels.is_empty())
            }),
        ),
        metric_row(
            "wait_ms",
            "of which waiting for the last rank (same rank)",
            "ms",
            values(&|a| decisive_rank(a).and_then(|r| r.wait_ms)),
        ),
        metric_row(
            "transfer_ms",
            "of which transfer (same rank)",
            "ms",
            values(&|a| decisive_rank(a).and_then(|r| r.transfer_ms)),
        ),
        metric_row(
            "rank_skew_ms",
            "Rank skew: time per step lost waiting for the slowest rank",
            "ms",
            values(&|a| a.balance.as_ref().and_then(|b| b.rank_skew_ms)),
        ),
        metric_row(
            "comm_pct",
            "Comm %",
            "%",
            values(&|a| {
                a.decode
                    .as_ref()
                    .and_then(|d| d.comm_pct)
                    .or(a.comm.pct_of_kernel_time)
            }),
        ),
        metric_row(
            "gpu_util_pct",
            "GPU utilization",
            "%",
            values(&|a| a.decode.as_ref().and_then(|d| d.gpu_util_pct)),
        ),
        metric_row(
            "allreduce_us",
            "Main allreduce, mean per call",
            "us",
            values(&|a| main_allreduce(a).map(|k| k.mean_us)),
        ),
        metric_row(
            "overlap_pct",
            "Comm overlapped by compute (lowest rank)",
            "%",
            values(&|a| a.overlap.min_overlap_pct),
        ),
        metric_row(
            "streams",
            "Streams (most on a rank)",
            "count",
            values(&|a| {
                a.overlap
                    .ranks
                    .iter()
                    .map(|r| r.streams.len())
                    .max()
                    .map(|n| n as f64)
            }),
        ),
        metric_row(
            "ranks",
            "Ranks",
            "count",
            values(&|a| Some(a.run.ranks.len() as f64)),
        ),
        metric_row(
            "prefill_ms",
            "Prefill wall (slowest rank)",
            "ms",
            values(&|a| {
                a.prefill
                    .as_ref()
                    .and_then(|p| p.ranks.iter().map(|r| r.wall_ms).max_by(f64::total_cmp))
            }),
        ),
    ];
    let categories = Category::ALL
        .iter()
        .filter(|&&c| runs.iter().any(|(_, a)| category_ms(a, c).is_some()))
        .map(|&c| metric_row(c.key(), c.label(), "ms", values(&|a| category_ms(a, c))))
        .collect();
    let facts_of = |f: &dyn Fn(&RunAnalysis) -> Option<String>| -> Vec<Option<String>> {
        runs.iter().map(|(_, a)| f(a)).collect()
    };
    let fact = |key: &str, label: &str, values: Vec<Option<String>>| FactRow {
        key: key.to_string(),
        label: label.to_string(),
        values,
    };
    let facts = vec![
        fact(
            "allreduce_kernel",
            "Allreduce kernel",
            facts_of(&|a| main_allreduce(a).map(|k| k.name)),
        ),
        fact(
            "allreduce_protocol",
            "Allreduce protocol",
            facts_of(&|a| main_allreduce(a).and_then(|k| k.note)),
        ),
        fact(
            "moe_gemm_kernel",
            "MoE GEMM kernel",
            facts_of(&|a| top_kernel(a, Category::MoeGemm)),
        ),
        fact(
            "dense_gemm_kernel",
            "Dense GEMM kernel",
            facts_of(&|a| top_kernel(a, Category::DenseGemm)),
        ),
        fact(
            "attention_kernel",
            "Attention kernel",
            facts_of(&|a| top_kernel(a, Category::Attention)),
        ),
    ];
    let libraries = Category::ALL
        .iter()
        .filter_map(|&c| {
            let names: Vec<BTreeSet<&str>> = runs
                .iter()
                .map(|(_, a)| {
                    a.breakdown
                        .breakdown
                        .kernels
                        .iter()
                        .filter(|k| k.category == c)
                        .map(|k| k.name.as_str())
                        .collect()
                })
                .collect();
            if names.iter().all(|n| n.is_empty()) {
                return None;
            }
            let top = runs
                .iter()
                .map(|(_, a)| {
                    let mut ks: Vec<_> = a
                        .breakdown
                        .breakdown
                        .kernels
                        .iter()
                        .filter(|k| k.category == c)
                        .collect();
                    ks.sort_by(|x, y| {
                        y.ms_per_step
                            .total_cmp(&x.ms_per_step)
                            .then_with(|| x.name.cmp(&y.name))
                    });
                    ks.iter()
                        .take(TOP_KERNELS_PER_CATEGORY)
                        .map(|k| k.name.clone())
                        .collect()
                })
                .collect();
            let only_here = names
                .iter()
                .enumerate()
                .map(|(i, mine)| {
                    mine.iter()
                        .filter(|n| {
                            names
                                .iter()
                                .enumerate()
                                .all(|(j, other)| j == i || !other.contains(*n))
                        })
                        .map(|n| n.to_string())
                        .collect()
                })
                .collect();
            Some(LibraryRow {
                category: c,
                top,
                only_here,
            })
        })
        .collect();
    Comparison {
        runs: runs
            .iter()
            .map(|(label, a)| ComparedRun {
                label: label.clone(),
                device: a.run.device.clone(),
                ranks: a.run.ranks.len(),
                scope: a.run.scope,
            })
            .collect(),
        metrics,
        categories,
        facts,
        libraries,
    }
}
