//! Why a run moved: the decode step's change decomposed into categories and kernels, kernels that
//! appeared or vanished, and the straggling rank. One cause, not five alarms.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::verdict::MetricCheck;
use super::verdict::Verdict;
use crate::baseline::Baseline;
use crate::metrics::{Extraction, DECODE_STEP_MS, RANK_SKEW_MS};
use crate::taxonomy::short_name;

/// Kernels kept in the explanation's delta list.
const TOP_KERNEL_DELTAS: usize = 10;
/// A rank this much slower than the median of the others straggles.
const STRAGGLER_MARGIN: f64 = 1.03;
/// Changes smaller than this (ms per step) are rounding, not movement: a microsecond.
const NOISE_FLOOR_MS: f64 = 0.001;

#[derive(Debug, Clone, Serialize)]
pub struct Delta {
    pub name: String,
    /// Category key, for kernels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub baseline_ms_per_step: f64,
    pub current_ms_per_step: f64,
    pub delta_ms_per_step: f64,
    pub baseline_calls_per_step: f64,
    pub current_calls_per_step: f64,
    /// This delta as a share of the summed kernel-time change, percent (signed).
    pub share_of_change_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Straggler {
    pub rank: u32,
    pub decode_step_ms: f64,
    /// Median of the other ranks' decode step.
    pub others_median_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// Change of the decode step, ms (current − baseline), when both exist.
    pub decode_step_change_ms: Option<f64>,
    /// Kernel time per step, summed over categories, current − baseline.
    pub kernel_time_change_ms: f64,
    /// The sentence a report leads with.
    pub lead: String,
    pub categories: Vec<Delta>,
    pub kernels: Vec<Delta>,
    pub appeared: Vec<String>,
    pub vanished: Vec<String>,
    /// Unified diff of the sorted kernel-name lists (baseline → current), empty when equal.
    pub kernel_diff: String,
    pub straggler: Option<Straggler>,
}

/// Milliseconds and calls per step.
type PerStep = (f64, f64);
/// A kernel's category and its baseline and current figures.
type KernelSides = (Option<String>, PerStep, PerStep);

fn delta(name: &str, category: Option<String>, base: PerStep, cur: PerStep) -> Delta {
    Delta {
        name: name.to_string(),
        category,
        baseline_ms_per_step: base.0,
        current_ms_per_step: cur.0,
        delta_ms_per_step: cur.0 - base.0,
        baseline_calls_per_step: base.1,
        current_calls_per_step: cur.1,
        share_of_change_pct: None,
    }
}

fn with_shares(mut deltas: Vec<Delta>, total: f64) -> Vec<Delta> {
    for d in &mut deltas {
        d.share_of_change_pct =
            (total.abs() >= NOISE_FLOOR_MS).then(|| d.delta_ms_per_step / total * 100.0);
    }
    deltas.sort_by(|a, b| {
        b.delta_ms_per_step
            .abs()
            .total_cmp(&a.delta_ms_per_step.abs())
    });
    deltas
}

pub fn explain(x: &Extraction, b: &Baseline, metrics: &[MetricCheck]) -> Explanation {
    // Categories: the union of both sides.
    let mut cats: BTreeMap<String, (PerStep, PerStep)> = BTreeMap::new();
    for (name, e) in &b.breakdown.categories {
        cats.entry(name.clone()).or_default().0 = (e.ms_per_step, e.calls_per_step);
    }
    for (cat, e) in &x.breakdown.categories {
        cats.entry(cat.key().to_string()).or_default().1 = (e.ms_per_step, e.calls_per_step);
    }
    let total: f64 = cats.values().map(|(b, c)| c.0 - b.0).sum();
    let categories = with_shares(
        cats.iter()
            .map(|(n, (b, c))| delta(n, None, *b, *c))
            .collect(),
        total,
    );

    let mut kernels: BTreeMap<&str, KernelSides> = BTreeMap::new();
    for k in &b.breakdown.kernels {
        let e = kernels.entry(k.name.as_str()).or_default();
        e.0 = Some(k.category.clone());
        e.1 = (k.ms_per_step, k.calls_per_step);
    }
    for k in &x.breakdown.kernels {
        let e = kernels.entry(k.name.as_str()).or_default();
        e.0 = Some(k.category.key().to_string());
        e.2 = (k.ms_per_step, k.calls_per_step);
    }
    let mut kernel_deltas = with_shares(
        kernels
            .iter()
            .map(|(n, (c, b, cur))| delta(n, c.clone(), *b, *cur))
            .collect(),
        total,
    );
    kernel_deltas.truncate(TOP_KERNEL_DELTAS);

    // Appeared / vanished only count when the baseline lists kernels at all.
    let base_names: BTreeSet<&str> = b
        .breakdown
        .kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    let cur_names: BTreeSet<&str> = x
        .breakdown
        .kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    let (appeared, vanished, kernel_diff) = if base_names.is_empty() {
        (Vec::new(), Vec::new(), String::new())
    } else {
        (
            cur_names
                .difference(&base_names)
                .map(|s| s.to_string())
                .collect(),
            base_names
                .difference(&cur_names)
                .map(|s| s.to_string())
                .collect(),
            name_diff(&base_names, &cur_names),
        )
    };

    let decode_step_change_ms = metric_change(metrics, DECODE_STEP_MS);
    let straggler = straggler(x, metrics);
    let lead = lead_sentence(
        decode_step_change_ms,
        total,
        &categories,
        &kernel_deltas,
        &appeared,
        &vanished,
        straggler.as_ref(),
    );
    Explanation {
        decode_step_change_ms,
        kernel_time_change_ms: total,
        lead,
        categories,
        kernels: kernel_deltas,
        appeared,
        vanished,
        kernel_diff,
        straggler,
    }
}

fn metric_change(metrics: &[MetricCheck], name: &str) -> Option<f64> {
    metrics
        .iter()
        .find(|m| m.name == name)
        .and_then(|m| m.change)
}

/// Unified diff of sorted kernel names; only changed lines and no context, to stay short.
fn name_diff(base: &BTreeSet<&str>, cur: &BTreeSet<&str>) -> String {
    let join = |s: &BTreeSet<&str>| s.iter().map(|n| format!("{n}\n")).collect::<String>();
    let (old, new) = (join(base), join(cur));
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(0)
        .header("baseline kernels", "current kernels")
        .to_string()
}

/// The rank whose decode step is slowest, when rank skew regressed or it is clearly slower.
fn straggler(x: &Extraction, metrics: &[MetricCheck]) -> Option<Straggler> {
    let per_rank = &x.metrics.get(DECODE_STEP_MS)?.per_rank;
    if per_rank.len() < 2 {
        return None;
    }
    let (&rank, &slowest) = per_rank.iter().max_by(|a, b| a.1.total_cmp(b.1))?;
    let mut others: Vec<f64> = per_rank
        .iter()
        .filter(|(r, _)| **r != rank)
        .map(|(_, v)| *v)
        .collect();
    let others_median = crate::stats::median(&mut others)?;
    // Without a skew regression, only a rank clearly slower than the rest is worth naming.
    let skew_regressed = metrics
        .iter()
        .any(|m| m.name == RANK_SKEW_MS && m.verdict == Verdict::Regressed);
    (skew_regressed || slowest > others_median * STRAGGLER_MARGIN).then_some(Straggler {
        rank,
        decode_step_ms: slowest,
        others_median_ms: others_median,
    })
}

fn lead_sentence(
    decode_change: Option<f64>,
    total: f64,
    categories: &[Delta],
    kernels: &[Delta],
    appeared: &[String],
    vanished: &[String],
    straggler: Option<&Straggler>,
) -> String {
    let mut sentences = Vec::new();
    match decode_change {
        Some(change) if change.abs() >= NOISE_FLOOR_MS => {
            sentences.push(format!("The decode step moved by {change:+.3} ms."))
        }
        Some(_) => sentences.push("The decode step did not move.".into()),
        None => {}
    }
    // A straggler is the one cause behind skew, slower allreduces on the others and a longer step.
    if let Some(s) = straggler {
        sentences.push(format!(
            "Rank {} straggles: {:.3} ms per decode step against {:.3} ms for the other ranks.",
            s.rank, s.decode_step_ms, s.others_median_ms
        ));
    }
    let change = decode_change.unwrap_or(total).abs();
    let top = categories
        .first()
        .filter(|d| d.delta_ms_per_step.abs() >= NOISE_FLOOR_MS);
    match top {
        // Kernel time explains the change only when it moved by a fair part of it.
        Some(top) if total.abs() >= NOISE_FLOOR_MS && total.abs() >= 0.25 * change => {
            let share = top
                .share_of_change_pct
                .map(|s| format!(", {s:.0}% of the kernel-time change"))
                .unwrap_or_default();
            let led_by = kernels
                .iter()
                .find(|k| k.category.as_deref() == Some(top.name.as_str()))
                .map(|k| format!(", led by `{}` ({:+.3} ms per step)", short_name(&k.name), k.delta_ms_per_step))
                .unwrap_or_default();
            sentences.push(format!(
                "Most of it is {} ({:+.3} ms per step{share}){led_by}.",
                top.name, top.delta_ms_per_step
            ));
        }
        // With a straggler named, its slower kernels are diluted in the mean over ranks: say no more.
        _ if straggler.is_some() => {}
        _ if change >= NOISE_FLOOR_MS => sentences.push(format!(
            "Kernel time per step moved by only {total:+.3} ms: the step changed through concurrency or idle time, not slower kernels."
        )),
        _ => sentences.push("No category's kernel time per step moved by a microsecond or more.".into()),
    }
    if !appeared.is_empty() || !vanished.is_empty() {
        sentences.push(format!(
            "Kernels appeared: {}; vanished: {}.",
            list(appeared),
            list(vanished)
        ));
    }
    sentences.join(" ")
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
