//! Comparison of two or more analysed runs: the head-to-head figures with their ratio to the first
//! run, time per category, and the kernel libraries each run uses per category.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{RunAnalysis, Scope};
use crate::metrics::catalog::METRICS;
use crate::metrics::MetricId;
use crate::taxonomy::Category;
use crate::units::Unit;

/// Version of the `compare --format json` schema; bumped on any incompatible change (2: `metrics`
/// holds the registry's metrics alone, the analysis' own figures moved to `figures`, and the main
/// allreduce kernel's mean is `main_allreduce_kernel_us`, no longer `allreduce_us`).
pub(crate) const COMPARE_SCHEMA_VERSION: u32 = 2;

/// Kernels per category and run shown as "what it uses".
pub(crate) const TOP_KERNELS_PER_CATEGORY: usize = 3;

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub runs: Vec<ComparedRun>,
    /// The registry's metrics side by side, as `extract` computed them for each run, with the
    /// ratio of each run to the first; keyed by the metric's name.
    pub metrics: Vec<MetricRow>,
    /// The analysis' own figures side by side (none is a registry metric, and none has a
    /// registry metric's name).
    pub figures: Vec<MetricRow>,
    /// Time per category per step (or per rank over the whole trace), ms.
    pub categories: Vec<MetricRow>,
    /// Time per Python scope per step (or per rank), ms: the scopes with most time in any run.
    pub scopes: Vec<MetricRow>,
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
    /// "1 of 4 ranks" for a run missing some of its ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks_of: Option<String>,
    pub scope: Scope,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    pub key: String,
    pub label: String,
    #[serde(serialize_with = "unit_json")]
    pub unit: Unit,
    pub values: Vec<Option<f64>>,
    /// value / first run's value; `None` where either is missing or the first is zero.
    pub ratios: Vec<Option<f64>>,
}

fn unit_json<S: serde::Serializer>(unit: &Unit, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(unit.json())
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

fn metric_row(key: &str, label: &str, unit: Unit, values: Vec<Option<f64>>) -> MetricRow {
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

/// The rank of the decode head-to-head: the one that decided `comm_pct` (the highest comm share).
fn decisive_rank(a: &RunAnalysis) -> Option<&super::balance::RankBalance> {
    let b = a.balance.as_ref()?;
    let decided = a.metrics.get(&MetricId::CommPct).and_then(|m| m.decided_by);
    b.ranks
        .iter()
        .find(|r| Some(r.rank) == decided)
        .or_else(|| b.ranks.first())
}

/// Kernel and comm time (ms) as the head-to-head shows them: per decode step of the rank that
/// decided `comm_pct`, else per rank over the whole trace.
fn decisive(a: &RunAnalysis) -> Option<(f64, f64)> {
    if a.balance.is_some() {
        return decisive_rank(a).and_then(|r| Some((r.kernel_ms?, r.comm_ms.unwrap_or(0.0))));
    }
    Some((a.breakdown.total_ms, a.comm.ms))
}

/// The main allreduce kernel (the allreduce-class kernel with the most time) of a run.
fn main_allreduce(a: &RunAnalysis) -> Option<&super::comm::CommKernel> {
    a.comm
        .kernels
        .iter()
        .find(|k| k.collective == Some(crate::taxonomy::Collective::Allreduce))
}

/// A figure of runs analysed over the whole trace (no decode step), where no registry metric
/// exists; `None` for a decode run, which has the registry's.
fn whole_trace(a: &RunAnalysis, value: Option<f64>) -> Option<f64> {
    value.filter(|_| a.run.scope == Scope::WholeTrace)
}

/// A figure of one run.
type Figure<'a> = &'a dyn Fn(&RunAnalysis) -> Option<f64>;

/// The analysis' own figures, under names no registry metric has.
fn own_figures(values: &dyn Fn(Figure<'_>) -> Vec<Option<f64>>) -> Vec<MetricRow> {
    vec![
        metric_row(
            "kernel_ms",
            &format!(
                "Kernel time (decode: the rank that decided {})",
                MetricId::CommPct.name()
            ),
            Unit::Ms,
            values(&|a| decisive(a).map(|f| f.0)),
        ),
        metric_row(
            "compute_ms",
            "Compute time (kernel − comm, same rank)",
            Unit::Ms,
            values(&|a| decisive(a).map(|f| f.0 - f.1)),
        ),
        metric_row(
            "comm_ms",
            "Comm time (same rank)",
            Unit::Ms,
            values(&|a| {
                decisive(a)
                    .map(|f| f.1)
                    .filter(|_| !a.comm.kernels.is_empty())
            }),
        ),
        metric_row(
            "wait_ms",
            "of which waiting for the last rank (same rank)",
            Unit::Ms,
            values(&|a| decisive_rank(a).and_then(|r| r.wait_ms)),
        ),
        metric_row(
            "transfer_ms",
            "of which transfer (same rank)",
            Unit::Ms,
            values(&|a| decisive_rank(a).and_then(|r| r.transfer_ms)),
        ),
        metric_row(
            "main_allreduce_kernel_us",
            "Main allreduce kernel, mean per call",
            Unit::Us,
            values(&|a| main_allreduce(a).map(|k| k.mean_us)),
        ),
        metric_row(
            "whole_trace_comm_pct",
            "Comm % of kernel time (whole trace)",
            Unit::Pct,
            values(&|a| whole_trace(a, a.comm.pct_of_kernel_time)),
        ),
        metric_row(
            "whole_trace_overlap_pct",
            "Comm overlapped by compute (whole trace, lowest rank)",
            Unit::Pct,
            values(&|a| whole_trace(a, a.overlap.min_overlap_pct)),
        ),
        metric_row(
            "streams",
            "Streams (most on a rank)",
            Unit::Count,
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
            Unit::Count,
            values(&|a| Some(a.run.ranks.len() as f64)),
        ),
        metric_row(
            "prefill_wall_slowest_rank_ms",
            "Prefill wall (slowest rank)",
            Unit::Ms,
            values(&|a| {
                a.prefill
                    .as_ref()
                    .and_then(|p| p.ranks.iter().map(|r| r.wall_ms).max_by(f64::total_cmp))
            }),
        ),
    ]
}

/// Compares analysed runs, the first being the reference of the ratios.
pub(crate) fn compare(runs: &[(String, &RunAnalysis)]) -> Comparison {
    let values = |f: &dyn Fn(&RunAnalysis) -> Option<f64>| -> Vec<Option<f64>> {
        runs.iter().map(|(_, a)| f(a)).collect()
    };
    // Read, not recomputed: each run's value is the one its extraction computed.
    let metrics = METRICS
        .iter()
        .map(|def| {
            let value = |a: &RunAnalysis| a.metrics.get(&def.id).map(|m| m.value);
            metric_row(def.name(), def.name(), def.unit, values(&value))
        })
        .collect();
    let figures = own_figures(&values);
    let categories = Category::ALL
        .iter()
        .filter(|&&c| runs.iter().any(|(_, a)| category_ms(a, c).is_some()))
        .map(|&c| metric_row(c.key(), c.label(), Unit::Ms, values(&|a| category_ms(a, c))))
        .collect();
    let scopes = scope_names(runs)
        .into_iter()
        .map(|scope| {
            let ms = |a: &RunAnalysis| {
                a.code
                    .scopes
                    .iter()
                    .find(|r| r.scope == scope)
                    .map(|r| r.ms)
            };
            metric_row(&scope, &scope, Unit::Ms, values(&ms))
        })
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
            facts_of(&|a| main_allreduce(a).map(|k| k.name.clone())),
        ),
        fact(
            "allreduce_protocol",
            "Allreduce protocol",
            facts_of(&|a| main_allreduce(a).and_then(|k| k.note.clone())),
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
                ranks_of: a.run.ranks_of.clone(),
                scope: a.run.scope,
            })
            .collect(),
        metrics,
        figures,
        categories,
        scopes,
        facts,
        libraries,
    }
}

/// Python scopes compared: the first [`SCOPES_COMPARED`] of each run, by time, first seen first.
fn scope_names(runs: &[(String, &RunAnalysis)]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (_, a) in runs {
        for row in a.code.scopes.iter().take(SCOPES_COMPARED) {
            if !names.contains(&row.scope) {
                names.push(row.scope.clone());
            }
        }
    }
    names
}

/// Scopes per run in the comparison.
const SCOPES_COMPARED: usize = 12;
