//! Why a run moved: the decode step's change decomposed into categories and kernels, kernels that
//! appeared or vanished, and the straggling rank. One cause, not five alarms.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::verdict::MetricCheck;
use super::verdict::Verdict;
use crate::baseline::Baseline;
use crate::metrics::{Extraction, DECODE_STEP_MS, OTHER_PCT, RANK_SKEW_MS};
use crate::taxonomy::{readable, short_name, Category, OTHER_LIMIT_PCT};

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
    /// Kernel time in `other` worth a word: above 5% of kernel time, or risen over the
    /// baseline's share (a finding in its own right: that time counts in no category).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unclassified: Option<Unclassified>,
}

/// Kernels no rule classifies, as the gate saw them.
#[derive(Debug, Clone, Serialize)]
pub struct Unclassified {
    /// Share of kernel time in `other` (the run's breakdown), %.
    pub other_pct: f64,
    /// The same share in the baseline's breakdown, when it has one.
    pub baseline_other_pct: Option<f64>,
    /// `other` time per step, current − baseline, ms.
    pub change_ms_per_step: f64,
    /// Above 5% of kernel time.
    pub over_limit: bool,
    /// Rose beyond `other_pct`'s tolerance (2 points without one in the baseline).
    pub rose: bool,
    /// The `other` kernels with most time, at most five.
    pub kernels: Vec<OtherKernel>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OtherKernel {
    pub name: String,
    pub ms_per_step: f64,
    /// Share of kernel time, %.
    pub pct: f64,
    /// Not in the baseline's kernel list.
    pub new: bool,
}

/// A rise of `other` this large is a finding when the baseline does not gate `other_pct`.
const OTHER_RISE_PP: f64 = 2.0;
/// `other` kernels named.
const OTHER_KERNELS_NAMED: usize = 5;

/// The baseline's share of kernel time in `other`, from its breakdown.
fn baseline_other_pct(b: &Baseline) -> Option<f64> {
    let total: f64 = b.breakdown.categories.values().map(|c| c.ms_per_step).sum();
    (total > 0.0).then(|| {
        b.breakdown
            .categories
            .get(Category::Other.key())
            .map_or(0.0, |c| c.ms_per_step / total * 100.0)
    })
}

fn unclassified(x: &Extraction, b: &Baseline, metrics: &[MetricCheck]) -> Option<Unclassified> {
    let other_pct = x.breakdown.other_pct();
    let baseline_other_pct = baseline_other_pct(b);
    let rose = match metrics
        .iter()
        .find(|m| m.name == OTHER_PCT && m.baseline.is_some())
    {
        Some(m) => m.verdict == Verdict::Regressed,
        None => other_pct - baseline_other_pct.unwrap_or(0.0) > OTHER_RISE_PP,
    };
    let over_limit = other_pct > OTHER_LIMIT_PCT;
    if !rose && !over_limit {
        return None;
    }
    let known: BTreeSet<&str> = b
        .breakdown
        .kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    let base_ms = b
        .breakdown
        .categories
        .get(Category::Other.key())
        .map_or(0.0, |c| c.ms_per_step);
    let cur_ms = x
        .breakdown
        .categories
        .get(&Category::Other)
        .map_or(0.0, |c| c.ms_per_step);
    let kernels = x
        .breakdown
        .kernels
        .iter()
        .filter(|k| k.category == Category::Other)
        .take(OTHER_KERNELS_NAMED)
        .map(|k| OtherKernel {
            name: k.name.clone(),
            ms_per_step: k.ms_per_step,
            pct: k.pct,
            new: !known.is_empty() && !known.contains(k.name.as_str()),
        })
        .collect();
    Some(Unclassified {
        other_pct,
        baseline_other_pct,
        change_ms_per_step: cur_ms - base_ms,
        over_limit,
        rose,
        kernels,
    })
}

/// The sentence about `other`, first in the lead: it says which figures cannot be trusted.
fn unclassified_sentence(u: &Unclassified) -> String {
    let named: Vec<String> = u
        .kernels
        .iter()
        .map(|k| {
            format!(
                "`{}` ({:.1}%{})",
                short_name(&k.name),
                k.pct,
                if k.new { ", new in this run" } else { "" }
            )
        })
        .collect();
    let baseline = u
        .baseline_other_pct
        .map(|p| format!(", baseline {p:.1}%"))
        .unwrap_or_default();
    let head = if u.rose && u.change_ms_per_step >= NOISE_FLOOR_MS {
        format!(
            "{:.3} ms per step moved into kernels no rule classifies: `other` is {:.1}% of kernel time{baseline}",
            u.change_ms_per_step, u.other_pct
        )
    } else {
        format!(
            "{:.1}% of kernel time is in kernels no rule classifies (`other`{baseline}, above {OTHER_LIMIT_PCT:.0}%)",
            u.other_pct
        )
    };
    format!(
        "{head}, led by {}. That time counts in no category, so comm_pct, moe_us_per_layer and overlap_pct miss it: add a rule for each (`tracegate report` prints one).",
        if named.is_empty() {
            "no kernel listed".to_string()
        } else {
            named.join(", ")
        }
    )
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
    let unclassified = unclassified(x, b, metrics);
    let mut lead = lead_sentence(
        decode_step_change_ms,
        total,
        &categories,
        &kernel_deltas,
        &appeared,
        &vanished,
        straggler.as_ref(),
    );
    // Unclassified time first: it says which of the figures that follow miss time.
    if let Some(u) = &unclassified {
        lead = format!("{} {lead}", unclassified_sentence(u));
    }
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
        unclassified,
    }
}

fn metric_change(metrics: &[MetricCheck], name: &str) -> Option<f64> {
    metrics
        .iter()
        .find(|m| m.name == name)
        .and_then(|m| m.change)
}

/// Unified diff of sorted kernel names (demangled, as every table shows them); only changed
/// lines and no context, to stay short.
fn name_diff(base: &BTreeSet<&str>, cur: &BTreeSet<&str>) -> String {
    let join = |s: &BTreeSet<&str>| {
        let names: BTreeSet<String> = s.iter().map(|n| readable(n).into_owned()).collect();
        names.iter().map(|n| format!("{n}\n")).collect::<String>()
    };
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
            .map(|n| format!("`{}`", short_name(n)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
