//! Breakdown: per category and per kernel name, kernel time and calls per kept decode step, per
//! rank, then the mean over ranks ("Breakdown" in `docs/METRICS.md`).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use serde::Serialize;

use crate::taxonomy::Category;

/// Kernel time and calls of one rank's kept decode steps, summed over the steps.
#[derive(Debug, Default)]
pub(crate) struct RankTotals<'a> {
    /// Number of kept decode steps the sums cover.
    pub steps: usize,
    pub kernels: FxHashMap<(&'a str, Category), (i64, u64)>,
}

impl<'a> RankTotals<'a> {
    /// Adds `calls` calls of `name` taking `ns` in all.
    pub(crate) fn add(&mut self, name: &'a str, category: Category, ns: i64, calls: u64) {
        let e = self.kernels.entry((name, category)).or_insert((0, 0));
        e.0 += ns;
        e.1 += calls;
    }
}

/// Time and calls per step of one category, with its share of kernel time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CategoryShare {
    pub ms_per_step: f64,
    pub calls_per_step: f64,
    pub pct: f64,
}

/// Time and calls per step of one kernel name, with its share of kernel time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelShare {
    pub name: String,
    pub category: Category,
    pub ms_per_step: f64,
    pub calls_per_step: f64,
    pub pct: f64,
}

/// The run breakdown: the mean over ranks of each rank's per-step means.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Breakdown {
    pub categories: BTreeMap<Category, CategoryShare>,
    /// Sorted by time per step, longest first, then by name.
    pub kernels: Vec<KernelShare>,
}

impl Breakdown {
    /// The share of the breakdown's kernel time in category `other` (0 when none): pooled over
    /// ranks, unlike the metric `other_pct` (per step, median per rank, worst rank).
    pub fn other_share_pct(&self) -> f64 {
        self.categories.get(&Category::Other).map_or(0.0, |c| c.pct)
    }
}

/// Combines the totals of the ranks that kept at least one decode step.
pub(crate) fn combine(ranks: &[RankTotals<'_>]) -> Breakdown {
    let ranks: Vec<&RankTotals<'_>> = ranks.iter().filter(|r| r.steps > 0).collect();
    if ranks.is_empty() {
        return Breakdown::default();
    }
    let n_ranks = ranks.len() as f64;
    // Sums over ranks of per-step means, divided by the rank count at the end.
    let most = ranks.iter().map(|r| r.kernels.len()).max().unwrap_or(0);
    let mut kernels: FxHashMap<(&str, Category), (f64, f64)> =
        FxHashMap::with_capacity_and_hasher(most, Default::default());
    let mut categories: BTreeMap<Category, (f64, f64)> = BTreeMap::new();
    for r in &ranks {
        let steps = r.steps as f64;
        let mut per_category: BTreeMap<Category, (i64, u64)> = BTreeMap::new();
        for (&(name, category), &(ns, calls)) in &r.kernels {
            let k = kernels.entry((name, category)).or_insert((0.0, 0.0));
            k.0 += ns as f64 / steps / 1e6;
            k.1 += calls as f64 / steps;
            let c = per_category.entry(category).or_insert((0, 0));
            c.0 += ns;
            c.1 += calls;
        }
        for (category, (ns, calls)) in per_category {
            let c = categories.entry(category).or_insert((0.0, 0.0));
            c.0 += ns as f64 / steps / 1e6;
            c.1 += calls as f64 / steps;
        }
    }
    let total_ms: f64 = categories.values().map(|c| c.0 / n_ranks).sum();
    let pct = |ms: f64| {
        if total_ms > 0.0 {
            ms / total_ms * 100.0
        } else {
            0.0
        }
    };
    let categories = categories
        .into_iter()
        .map(|(category, (ms, calls))| {
            let ms = ms / n_ranks;
            (
                category,
                CategoryShare {
                    ms_per_step: ms,
                    calls_per_step: calls / n_ranks,
                    pct: pct(ms),
                },
            )
        })
        .collect();
    // Ranked as references and copied once in order: a million kernel names are not moved
    // around the sort as owned rows.
    let mut ranked: Vec<(&str, Category, f64, f64)> = kernels
        .into_iter()
        .map(|((name, category), (ms, calls))| (name, category, ms / n_ranks, calls / n_ranks))
        .collect();
    ranked.sort_unstable_by(|a, b| {
        b.2.total_cmp(&a.2)
            .then_with(|| a.0.cmp(b.0))
            .then_with(|| a.1.cmp(&b.1))
    });
    let kernels: Vec<KernelShare> = ranked
        .into_iter()
        .map(|(name, category, ms, calls)| KernelShare {
            name: name.to_string(),
            category,
            ms_per_step: ms,
            calls_per_step: calls,
            pct: pct(ms),
        })
        .collect();
    Breakdown {
        categories,
        kernels,
    }
}
