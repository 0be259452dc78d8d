//! Why a run moved: the decode step's change decomposed into categories and kernels, kernels that
//! appeared or vanished, and the straggling rank. One cause, not five alarms.
//!
//! Ranks wait for each other in every collective, so a rank with more compute makes the *others*'
//! allreduce calls longer: when the waiting grew (`rank_skew_ms` beyond its tolerance) and the
//! transfer did not (`allreduce_transfer_us` within it), the explanation leads with the straggler,
//! the rank that arrived last most often, and what it slowed in; when the transfer grew, it names
//! the collective and no rank.

use std::collections::{BTreeMap, BTreeSet};

use rayon::iter::{IntoParallelRefIterator, ParallelIterator};
use rayon::slice::ParallelSliceMut;
use rustc_hash::FxHashSet;
use serde::Serialize;

use super::verdict::MetricCheck;
use super::verdict::Verdict;
use crate::baseline::Baseline;
use crate::metrics::breakdown::Breakdown;
use crate::metrics::run::SLOW_FACTOR;
use crate::metrics::{Extraction, MetricId};
use crate::taxonomy::{readable, untruncated_short_name, Category, OTHER_LIMIT_PCT};

/// A vanished and an appeared kernel of one category are the same kernel renamed when their
/// demangled, shortened names are at least this similar (`similar`'s character ratio: twice the
/// matching characters over both lengths). A new template argument, a namespace suffix or a build
/// tag on a 40-character name stays above 0.85; two unrelated kernels of one library rarely reach it.
pub(crate) const RENAME_SIMILARITY: f32 = 0.85;
/// ... and their calls per step differ by at most this share of the larger count.
pub(crate) const RENAME_CALLS_TOLERANCE: f64 = 0.10;

/// Name pairs compared character by character at most, per check (each diff is cheap; a
/// million of them is not).
const RENAME_DIFFS: usize = 10_000;
/// Characters of each name compared past the common prefix and suffix of a pair; the rest of a
/// longer differing middle counts as unmatched. Real renames (a template argument, a build tag)
/// differ in a few dozen characters, and their ratio is `similar`'s exactly; a pair of names
/// that differ over more than this is at most as similar as the window makes it.
const RENAME_WINDOW: usize = 512;
/// Work (characters compared, diagonals stepped) spent pairing renames per check at most: a
/// bound on the whole of [`pair_renamed`], whatever the number and length of the names. Real
/// runs spend a few thousand; when it runs out, the pairs not yet compared stay appeared and
/// vanished.
const RENAME_WORK: u64 = 50_000_000;
/// Kernels kept in the explanation's delta list.
const TOP_KERNEL_DELTAS: usize = 10;
/// Changes smaller than this (ms per step) are rounding, not movement: a microsecond.
const NOISE_FLOOR_MS: f64 = 0.001;
/// A category moved beyond noise, and the net kernel-time change is worth dividing into
/// shares, from this share of the decode step's tolerance on.
const MATERIAL_SHARE_OF_TOLERANCE: f64 = 0.05;

/// The one cause of a run's change, as facts: the report words it, once. The first that holds
/// wins, in this order: time moved into unclassified kernels (the figures that follow miss it),
/// stalled decode steps, a straggling rank, a slower collective, a category led by a renamed
impl Cause {
    /// The kernel the cause names, if it names one.
    pub fn kernel(&self) -> Option<&str> {
        match self {
            Cause::Unclassified { kernel, .. }
            | Cause::Straggler { kernel, .. }
            | Cause::SlowerCollective { kernel, .. }
            | Cause::Category { kernel, .. } => kernel.as_deref(),
            Cause::Renamed { new, .. } => Some(new),
            _ => None,
        }
    }
}

/// kernel, a category, a step that moved outside kernel time; `None` when nothing moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Cause {
    /// Kernel time moved into kernels no rule classifies.
    Unclassified {
        /// `other` time per step, current − baseline, ms.
        moved_ms_per_step: f64,
        /// Share of kernel time in `other` now, %, and in the baseline.
        other_share_pct: f64,
        baseline_other_share_pct: Option<f64>,
        /// The `other` kernel with most time, and whether the baseline lacks it.
        kernel: Option<String>,
        new: bool,
    },
    /// Decode steps stalled (see [`StallNote`]).
    Stalls {
        rank: u32,
        stalled: usize,
        steps: usize,
        factor: f64,
        ms_per_step: f64,
        baseline_ms_per_step: Option<f64>,
    },
    /// The GPU waits longer between decode forwards: host time (scheduler, sampling, Python
    /// between graph replays), not a kernel.
    HostGap {
        /// `decode_host_gap_ms`, baseline and run, ms.
        baseline_ms: f64,
        current_ms: f64,
        /// `decode_iter_ms` change, ms, where both sides have it.
        iteration_change_ms: Option<f64>,
    },
    /// Decode iterations slower than 1.5x the median but below the stall line (2x).
    SlowSteps {
        rank: u32,
        /// Iterations between 1.5x and 2x the median, and all iterations.
        slow: usize,
        iterations: usize,
        /// `decode_slow_ms_per_iter`, run and baseline.
        ms_per_iter: f64,
        baseline_ms_per_iter: Option<f64>,
    },
    /// The rank the others wait for (see [`Straggler`]).
    Straggler {
        rank: u32,
        compute_excess_ms: f64,
        category: Option<String>,
        kernel: Option<String>,
        last_arrival_pct: f64,
        wait_change_ms: f64,
        waits_in: String,
    },
    /// The collective's calls got slower net of waiting.
    SlowerCollective {
        /// `allreduce` (the metric that moved is `allreduce_transfer_us`).
        collective: String,
        kernel: Option<String>,
        change_us: f64,
        change_pct: Option<f64>,
        /// The comm category's change per step, ms.
        comm_delta_ms_per_step: f64,
    },
    /// A category's time moved, led by a kernel that was renamed.
    Renamed {
        category: String,
        category_delta_ms_per_step: f64,
        old: String,
        new: String,
        baseline_ms_per_step: f64,
        delta_ms_per_step: f64,
    },
    /// A category's time moved, led by one kernel.
    Category {
        category: String,
        delta_ms_per_step: f64,
        kernel: Option<String>,
        kernel_delta_ms_per_step: Option<f64>,
        kernel_baseline_ms_per_step: Option<f64>,
    },
    /// The decode step moved while kernel time did not: concurrency or idle time.
    OutsideKernels {
        decode_step_change_ms: f64,
        kernel_time_change_ms: f64,
    },
    /// Nothing moved beyond noise.
    None,
}

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
    /// For a kernel paired as renamed: its baseline name (the baseline figures are that one's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
}

/// A kernel that vanished paired with one that appeared in the same category, with a similar
/// name and call count: the same kernel under a new name (a new template argument, a new build).
#[derive(Debug, Clone, Serialize)]
pub struct Renamed {
    /// Baseline name (raw, as the baseline lists it).
    pub old: String,
    /// Current name (raw).
    pub new: String,
    pub category: String,
    /// `similar`'s ratio of the two demangled names, 0 to 1.
    pub similarity: f64,
    pub baseline_ms_per_step: f64,
    pub current_ms_per_step: f64,
    pub delta_ms_per_step: f64,
    pub baseline_calls_per_step: f64,
    pub current_calls_per_step: f64,
}

/// The rank the others wait for.
#[derive(Debug, Clone, Serialize)]
pub struct Straggler {
    pub rank: u32,
    /// Share of the matched collectives it arrived at last, %.
    pub last_arrival_pct: f64,
    /// Its compute (non-comm kernel time) per decode step minus the median of the other ranks', ms.
    pub compute_excess_ms: f64,
    /// The compute category whose time per step exceeds the others' median most, and its excess.
    pub category: Option<String>,
    pub category_excess_ms: f64,
    /// The kernel of that category that exceeds most.
    pub kernel: Option<String>,
    /// Change of `rank_skew_ms` against the baseline: the extra waiting per step, ms.
    pub wait_change_ms: f64,
    /// What the others wait in: `allreduce` or `collectives`.
    pub waits_in: String,
}

/// The collective whose calls got slower net of waiting.
#[derive(Debug, Clone, Serialize)]
pub struct SlowerTransfer {
    /// `allreduce_transfer_us` change, µs and %.
    pub change_us: f64,
    pub change_pct: Option<f64>,
    /// The comm kernel whose time per step grew most.
    pub kernel: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// Change of the decode step, ms (current − baseline), when both exist.
    pub decode_step_change_ms: Option<f64>,
    /// Kernel time per step, summed over categories, current − baseline.
    pub kernel_time_change_ms: f64,
    /// The one cause a report leads with, as data (the report writes it in words; the JSON
    /// adds a plain-text `lead` rendered from it for older readers of the verdict).
    pub cause: Cause,
    /// The cause and its supporting sentence as plain text, kept in the JSON for readers of
    /// older verdicts (the sweep shows it). The gate leaves it empty: `report::check` writes
    /// it from [`Cause`] when it writes the JSON, once.
    pub lead: String,
    /// A category or kernel whose time per step moved less than this (ms) did not move beyond
    /// noise: a microsecond, or 5% of the decode step's tolerance when the baseline has one.
    pub noise_ms_per_step: f64,
    pub categories: Vec<Delta>,
    pub kernels: Vec<Delta>,
    pub appeared: Vec<String>,
    pub vanished: Vec<String>,
    /// Vanished kernels paired with an appeared one as renamed (not in `appeared`/`vanished`).
    pub renamed: Vec<Renamed>,
    /// Unified diff of the sorted kernel-name lists (baseline → current), empty when equal.
    pub kernel_diff: String,
    /// The code that launched the kernel the cause names (its scope, op and shapes), where the
    /// run's trace or its graph capture says; set by the pipeline after the gate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site: Option<crate::analysis::code::lead::LeadSite>,
    pub straggler: Option<Straggler>,
    /// Kernel time in `other` worth a word: above 5% of kernel time, or risen over the
    /// baseline's share (a finding in its own right: that time counts in no category).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unclassified: Option<Unclassified>,
    /// Set when the collectives themselves got slower (transfer, not waiting).
    pub slower_transfer: Option<SlowerTransfer>,
    /// Decode steps that stalled, when `decode_stall_pct` rose beyond its tolerance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalls: Option<StallNote>,
}

/// The stalled decode steps of the rank that decided `decode_stall_ms_per_step` (or
/// `decode_stall_pct`), and what they cost.
#[derive(Debug, Clone, Serialize)]
pub struct StallNote {
    pub rank: u32,
    /// Decode steps after warm-up.
    pub steps: usize,
    /// Positions of the stalled ones among those, 1-based.
    pub positions: Vec<usize>,
    /// Median over the stalled steps of their wall / the median wall.
    pub factor: f64,
    /// The stalled steps' walls minus as many median walls, ms: the time the stalls cost.
    pub lost_ms: f64,
    /// `lost_ms` / `steps`: the rank's `decode_stall_ms_per_step`.
    pub ms_per_step: f64,
    /// The baseline's `decode_stall_ms_per_step`, when it records one.
    pub baseline_ms_per_step: Option<f64>,
}

/// The stalls behind `decode_stall_ms_per_step` or `decode_stall_pct`, when either moved beyond
/// its tolerance.
fn stall_note(x: &Extraction, b: &Baseline, metrics: &[MetricCheck]) -> Option<StallNote> {
    let metric = [MetricId::DecodeStallMsPerStep, MetricId::DecodeStallPct]
        .into_iter()
        .find(|&id| beyond_tolerance(metrics, id))?;
    let rank = x.metrics.get(&metric)?.decided_by?;
    let rs = x.rank_steps.iter().find(|r| r.rank.index == rank)?;
    let s = crate::steps::stalls(rs);
    if s.positions.is_empty() {
        return None;
    }
    Some(StallNote {
        rank,
        steps: s.steps,
        factor: crate::stats::Statistic::Median.of(&s.factors),
        lost_ms: s.lost_ms(),
        ms_per_step: s.lost_ms_per_step().unwrap_or(0.0),
        baseline_ms_per_step: b
            .metrics
            .get(&MetricId::DecodeStallMsPerStep)
            .map(|m| m.value),
        positions: s.positions,
    })
}

/// The host gap as the cause, when `decode_host_gap_ms` regressed.
fn host_gap(metrics: &[MetricCheck]) -> Option<Cause> {
    let m = metrics
        .iter()
        .find(|m| m.name == MetricId::DecodeHostGapMs && m.verdict == Verdict::Regressed)?;
    Some(Cause::HostGap {
        baseline_ms: m.baseline?,
        current_ms: m.current?,
        iteration_change_ms: metric_change(metrics, MetricId::DecodeIterMs),
    })
}

/// Slow iterations (1.5x to 2x the median) as the cause, when `decode_slow_ms_per_iter`
/// regressed: counted on the rank that decided it.
fn slow_steps(x: &Extraction, b: &Baseline, metrics: &[MetricCheck]) -> Option<Cause> {
    metrics
        .iter()
        .find(|m| m.name == MetricId::DecodeSlowMsPerIter && m.verdict == Verdict::Regressed)?;
    let metric = x.metrics.get(&MetricId::DecodeSlowMsPerIter)?;
    let rank = metric.decided_by?;
    let rs = x.rank_steps.iter().find(|r| r.rank.index == rank)?;
    let iters: Vec<f64> = rs.iterations.iter().map(|i| i.iter_ns() as f64).collect();
    let median = crate::stats::median(&mut iters.clone())?;
    let slow = iters
        .iter()
        .filter(|&&t| t > SLOW_FACTOR * median && t <= 2.0 * median)
        .count();
    Some(Cause::SlowSteps {
        rank,
        slow,
        iterations: iters.len(),
        ms_per_iter: metric.value,
        baseline_ms_per_iter: b
            .metrics
            .get(&MetricId::DecodeSlowMsPerIter)
            .map(|m| m.value),
    })
}

/// Kernels no rule classifies, as the gate saw them.
#[derive(Debug, Clone, Serialize)]
pub struct Unclassified {
    /// Share of kernel time in `other` (the run's breakdown), %.
    pub other_share_pct: f64,
    /// The same share in the baseline's breakdown, when it has one.
    pub baseline_other_share_pct: Option<f64>,
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
fn baseline_other_share_pct(b: &Baseline) -> Option<f64> {
    let total: f64 = b.breakdown.categories.values().map(|c| c.ms_per_step).sum();
    (total > 0.0).then(|| {
        b.breakdown
            .categories
            .get(Category::Other.key())
            .map_or(0.0, |c| c.ms_per_step / total * 100.0)
    })
}

fn unclassified(x: &Extraction, b: &Baseline, metrics: &[MetricCheck]) -> Option<Unclassified> {
    let other_share_pct = x.breakdown.other_share_pct();
    let baseline_other_share_pct = baseline_other_share_pct(b);
    let rose = match metrics
        .iter()
        .find(|m| m.name == MetricId::OtherPct && m.baseline.is_some())
    {
        Some(m) => m.verdict == Verdict::Regressed,
        None => other_share_pct - baseline_other_share_pct.unwrap_or(0.0) > OTHER_RISE_PP,
    };
    let over_limit = other_share_pct > OTHER_LIMIT_PCT;
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
        other_share_pct,
        baseline_other_share_pct,
        change_ms_per_step: cur_ms - base_ms,
        over_limit,
        rose,
        kernels,
    })
}

/// Milliseconds and calls per step.
type PerStep = (f64, f64);
/// A kernel's category and its baseline and current figures.
type KernelSides<'a> = (Option<&'a str>, PerStep, PerStep);

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
        renamed_from: None,
    }
}

/// Each delta's share of the net change `total`, when the change is material (at least
/// `material` ms per step) and no share falls outside ±100% (time that moved between
/// categories nets out, and its shares would read +187839%): otherwise none has a share.
fn with_shares(mut deltas: Vec<Delta>, total: f64, material: f64) -> Vec<Delta> {
    let shares: Option<Vec<f64>> = (total.abs() >= material.max(NOISE_FLOOR_MS))
        .then(|| {
            deltas
                .iter()
                .map(|d| d.delta_ms_per_step / total * 100.0)
                .collect::<Vec<f64>>()
        })
        .filter(|s| s.iter().all(|p| p.abs() <= 100.0 + 1e-9));
    for (i, d) in deltas.iter_mut().enumerate() {
        d.share_of_change_pct = shares.as_ref().map(|s| s[i]);
    }
    deltas.sort_by(|a, b| {
        b.delta_ms_per_step
            .abs()
            .total_cmp(&a.delta_ms_per_step.abs())
    });
    deltas
}

pub(crate) fn explain(x: &Extraction, b: &Baseline, metrics: &[MetricCheck]) -> Explanation {
    // Categories: the union of both sides.
    let mut cats: BTreeMap<String, (PerStep, PerStep)> = BTreeMap::new();
    for (name, e) in &b.breakdown.categories {
        cats.entry(name.clone()).or_default().0 = (e.ms_per_step, e.calls_per_step);
    }
    for (cat, e) in &x.breakdown.categories {
        cats.entry(cat.key().to_string()).or_default().1 = (e.ms_per_step, e.calls_per_step);
    }
    let total: f64 = cats.values().map(|(b, c)| c.0 - b.0).sum();
    let noise = metrics
        .iter()
        .find(|m| m.name == MetricId::DecodeStepMs)
        .and_then(|m| m.allowance)
        .filter(|a| a.is_finite())
        .map_or(NOISE_FLOOR_MS, |a| {
            (a * MATERIAL_SHARE_OF_TOLERANCE).max(NOISE_FLOOR_MS)
        });
    let largest = cats
        .values()
        .map(|(b, c)| (c.0 - b.0).abs())
        .fold(0.0, f64::max);
    let material = noise.max(largest * MATERIAL_SHARE_OF_TOLERANCE);
    let categories = with_shares(
        cats.iter()
            .map(|(n, (b, c))| delta(n, None, *b, *c))
            .collect(),
        total,
        material,
    );

    // The current kernels sorted by name once (a run may have a million): the set of names and
    // the map are built from sorted input in one pass each. A name listed twice keeps its last
    // figures, as inserting them in order would.
    let mut current: Vec<(&str, usize)> = x
        .breakdown
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| (k.name.as_str(), i))
        .collect();
    current.par_sort_unstable();
    let cur_names: BTreeSet<&str> = current.iter().map(|&(n, _)| n).collect();
    let mut kernels: BTreeMap<&str, KernelSides> = current
        .iter()
        .map(|&(n, i)| {
            let k = &x.breakdown.kernels[i];
            let sides = (
                Some(k.category.key()),
                (0.0, 0.0),
                (k.ms_per_step, k.calls_per_step),
            );
            (n, sides)
        })
        .collect();
    for k in &b.breakdown.kernels {
        let e = kernels.entry(k.name.as_str()).or_default();
        // The current category wins over the baseline's.
        if !cur_names.contains(k.name.as_str()) {
            e.0 = Some(k.category.as_str());
        }
        e.1 = (k.ms_per_step, k.calls_per_step);
    }

    // Appeared / vanished only count when the baseline lists kernels at all.
    let base_names: BTreeSet<&str> = b
        .breakdown
        .kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    let (mut appeared, mut vanished, kernel_diff): (Vec<&str>, Vec<&str>, String) =
        if base_names.is_empty() {
            (Vec::new(), Vec::new(), String::new())
        } else {
            (
                cur_names.difference(&base_names).copied().collect(),
                base_names.difference(&cur_names).copied().collect(),
                name_diff(&base_names, &cur_names),
            )
        };
    let renamed = pair_renamed(&kernels, &mut vanished, &mut appeared);
    let appeared: Vec<String> = appeared.iter().map(|s| s.to_string()).collect();
    let vanished: Vec<String> = vanished.iter().map(|s| s.to_string()).collect();

    // A renamed kernel is one row: its current name, its baseline figures under the old name.
    // The rows are ranked as references and only the top ones made: a run with a million kernel
    // names must not copy each of them.
    let paired: FxHashSet<&str> = renamed
        .iter()
        .flat_map(|r| [r.old.as_str(), r.new.as_str()])
        .collect();
    type Row<'a> = (&'a str, Option<&'a str>, PerStep, PerStep, Option<&'a str>);
    let mut rows: Vec<Row<'_>> = kernels
        .iter()
        .filter(|(n, _)| !paired.contains(*n))
        .map(|(n, (c, b, cur))| (*n, *c, *b, *cur, None))
        .collect();
    rows.extend(renamed.iter().map(|r| {
        (
            r.new.as_str(),
            Some(r.category.as_str()),
            (r.baseline_ms_per_step, r.baseline_calls_per_step),
            (r.current_ms_per_step, r.current_calls_per_step),
            Some(r.old.as_str()),
        )
    }));
    // Stable, as `with_shares` sorts: equal changes keep name order, renamed rows last.
    rows.sort_by(|a, b| (b.3 .0 - b.2 .0).abs().total_cmp(&(a.3 .0 - a.2 .0).abs()));
    rows.truncate(TOP_KERNEL_DELTAS);
    let rows: Vec<Delta> = rows
        .into_iter()
        .map(|(n, c, b, cur, from)| Delta {
            renamed_from: from.map(str::to_string),
            ..delta(n, c.map(str::to_string), b, cur)
        })
        .collect();
    let kernel_deltas = with_shares(rows, total, material);

    // A ProfilerStep loop has no decode step: its iteration is what moved.
    let decode_step_change_ms = metric_change(metrics, MetricId::DecodeStepMs)
        .or_else(|| metric_change(metrics, MetricId::IterationMs));
    let unclassified = unclassified(x, b, metrics);
    let transfer_grew = beyond_tolerance(metrics, MetricId::AllreduceTransferUs);
    let straggler = if transfer_grew {
        None
    } else {
        straggler(x, metrics)
    };
    let slower_transfer = transfer_grew.then(|| {
        let m = metrics
            .iter()
            .find(|m| m.name == MetricId::AllreduceTransferUs);
        SlowerTransfer {
            change_us: m.and_then(|m| m.change).unwrap_or(0.0),
            change_pct: m.and_then(|m| m.change_pct),
            kernel: kernel_deltas
                .iter()
                .filter(|k| k.category.as_deref() == Some(Category::Comm.key()))
                .max_by(|a, b| a.delta_ms_per_step.total_cmp(&b.delta_ms_per_step))
                .map(|k| k.name.clone()),
        }
    });
    let stalls = stall_note(x, b, metrics);
    let cause = cause_of(&Facts {
        regressed: metrics
            .iter()
            .any(|m| m.gated && m.verdict == Verdict::Regressed),
        worst_categories: worst_metric_categories(metrics),
        host_gap: host_gap(metrics),
        slow_steps: slow_steps(x, b, metrics),
        decode_change: decode_step_change_ms,
        total,
        noise,
        categories: &categories,
        kernels: &kernel_deltas,
        straggler: straggler.as_ref(),
        slower_transfer: slower_transfer.as_ref(),
        stalls: stalls.as_ref(),
        unclassified: unclassified.as_ref(),
    });
    Explanation {
        decode_step_change_ms,
        kernel_time_change_ms: total,
        cause,
        lead: String::new(),
        noise_ms_per_step: noise,
        categories,
        kernels: kernel_deltas,
        appeared,
        vanished,
        renamed,
        kernel_diff,
        site: None,
        straggler,
        unclassified,
        slower_transfer,
        stalls,
    }
}

/// The categories whose kernel time makes up the gated metric that failed worst (change over
/// its tolerance), where the metric is one category's: a MoE regression is explained by MoE
/// kernels, never by another category that moved more.
fn worst_metric_categories(metrics: &[MetricCheck]) -> Option<&'static [Category]> {
    let worst = metrics
        .iter()
        .filter(|m| m.gated && m.verdict == Verdict::Regressed)
        .filter_map(|m| Some((m, (m.change? / m.allowance.filter(|a| *a > 0.0)?).abs())))
        .max_by(|a, b| a.1.total_cmp(&b.1))?
        .0;
    match worst.name {
        MetricId::MoeUsPerLayer => Some(&[Category::MoeGemm]),
        MetricId::AllreduceUs | MetricId::AllreduceTransferUs | MetricId::CommPct => {
            Some(&[Category::Comm])
        }
        MetricId::OtherPct => Some(&[Category::Other]),
        _ => None,
    }
}

/// What [`cause_of`] chooses from.
struct Facts<'a> {
    /// Whether a gated metric regressed: then only a category that got slower is a cause.
    regressed: bool,
    /// The categories of the worst-failing metric, where it is one category's.
    worst_categories: Option<&'static [Category]>,
    /// The host-gap and slow-iteration causes, when their metric regressed.
    host_gap: Option<Cause>,
    slow_steps: Option<Cause>,
    decode_change: Option<f64>,
    total: f64,
    noise: f64,
    categories: &'a [Delta],
    kernels: &'a [Delta],
    straggler: Option<&'a Straggler>,
    slower_transfer: Option<&'a SlowerTransfer>,
    stalls: Option<&'a StallNote>,
    unclassified: Option<&'a Unclassified>,
}

/// The one cause, in [`Cause`]'s order of precedence.
fn cause_of(f: &Facts) -> Cause {
    if let Some(u) = f
        .unclassified
        .filter(|u| u.rose && u.change_ms_per_step >= NOISE_FLOOR_MS)
    {
        let top = u.kernels.first();
        return Cause::Unclassified {
            moved_ms_per_step: u.change_ms_per_step,
            other_share_pct: u.other_share_pct,
            baseline_other_share_pct: u.baseline_other_share_pct,
            kernel: top.map(|k| k.name.clone()),
            new: top.is_some_and(|k| k.new),
        };
    }
    if let Some(s) = f.stalls {
        return Cause::Stalls {
            rank: s.rank,
            stalled: s.positions.len(),
            steps: s.steps,
            factor: s.factor,
            ms_per_step: s.ms_per_step,
            baseline_ms_per_step: s.baseline_ms_per_step,
        };
    }
    if let Some(c) = f.host_gap.clone().or_else(|| f.slow_steps.clone()) {
        return c;
    }
    if let Some(s) = f.straggler {
        return Cause::Straggler {
            rank: s.rank,
            compute_excess_ms: s.compute_excess_ms,
            category: s.category.clone(),
            kernel: s.kernel.clone(),
            last_arrival_pct: s.last_arrival_pct,
            wait_change_ms: s.wait_change_ms,
            waits_in: s.waits_in.clone(),
        };
    }
    if let Some(t) = f.slower_transfer {
        return Cause::SlowerCollective {
            collective: "allreduce".into(),
            kernel: t.kernel.clone(),
            change_us: t.change_us,
            change_pct: t.change_pct,
            comm_delta_ms_per_step: f
                .categories
                .iter()
                .find(|d| d.name == Category::Comm.key())
                .map_or(0.0, |d| d.delta_ms_per_step),
        };
    }
    let change = f.decode_change.unwrap_or(f.total).abs();
    // The failing metric's own category, when it got slower: that is the cause, whatever the
    // total did (another category may have got faster by more).
    let own = f.worst_categories.and_then(|cats| {
        f.categories.iter().find(|d| {
            d.delta_ms_per_step >= f.noise.max(NOISE_FLOOR_MS)
                && cats.iter().any(|c| c.key() == d.name)
        })
    });
    let top = f
        .categories
        .iter()
        .find(|d| !f.regressed || d.delta_ms_per_step > 0.0)
        .filter(|d| d.delta_ms_per_step.abs() >= f.noise);
    let top = match own {
        Some(own) => Some(own),
        None if f.total.abs() >= NOISE_FLOOR_MS && f.total.abs() >= 0.25 * change => top,
        None => None,
    };
    match top {
        // Kernel time explains the change only when it moved by a fair part of it.
        Some(top) => {
            // The kernel that moved most the way its category did.
            let in_top = |k: &&Delta| k.category.as_deref() == Some(top.name.as_str());
            let leader = f
                .kernels
                .iter()
                .filter(in_top)
                .find(|k| (k.delta_ms_per_step > 0.0) == (top.delta_ms_per_step > 0.0))
                .or_else(|| f.kernels.iter().find(in_top));
            match leader {
                Some(k) if k.renamed_from.is_some() => Cause::Renamed {
                    category: top.name.clone(),
                    category_delta_ms_per_step: top.delta_ms_per_step,
                    old: k.renamed_from.clone().unwrap_or_default(),
                    new: k.name.clone(),
                    baseline_ms_per_step: k.baseline_ms_per_step,
                    delta_ms_per_step: k.delta_ms_per_step,
                },
                _ => Cause::Category {
                    category: top.name.clone(),
                    delta_ms_per_step: top.delta_ms_per_step,
                    kernel: leader.map(|k| k.name.clone()),
                    kernel_delta_ms_per_step: leader.map(|k| k.delta_ms_per_step),
                    kernel_baseline_ms_per_step: leader.map(|k| k.baseline_ms_per_step),
                },
            }
        }
        _ => match f.decode_change {
            Some(d) if d.abs() >= f.noise => Cause::OutsideKernels {
                decode_step_change_ms: d,
                kernel_time_change_ms: f.total,
            },
            _ => Cause::None,
        },
    }
}

/// Pairs each vanished kernel with the appeared kernel of its category whose demangled name is
/// most similar, when the names are at least [`RENAME_SIMILARITY`] alike and the calls per step
/// within [`RENAME_CALLS_TOLERANCE`], and they name the same function ([`same_function`]); the most similar pairs are taken first and each kernel
/// pairs once. Paired names leave `vanished` and `appeared`.
fn pair_renamed(
    kernels: &BTreeMap<&str, KernelSides>,
    vanished: &mut Vec<&str>,
    appeared: &mut Vec<&str>,
) -> Vec<Renamed> {
    let mut candidates: Vec<(f32, &str, &str)> = Vec::new();
    // Each kernel's figures looked up once, and its short name made only when the cheap tests
    // pass: a run with a million new names must not make this quadratic, nor demangle them all.
    let (old_sides, new_sides) = (sides_of(kernels, vanished), sides_of(kernels, appeared));
    let mut old_names: Vec<Option<(String, Vec<char>)>> = vec![None; vanished.len()];
    let mut new_names: Vec<Option<(String, Vec<char>)>> = vec![None; appeared.len()];
    let short = |name: &str| {
        let s = untruncated_short_name(name);
        let chars = s.chars().collect();
        (s, chars)
    };
    let mut diffs_left = RENAME_DIFFS;
    let mut work = RenameWork::new(RENAME_WORK);
    'pairs: for (i, &old) in vanished.iter().enumerate() {
        let (old_cat, old_base, _) = old_sides[i];
        for (j, &new) in appeared.iter().enumerate() {
            let (new_cat, _, new_cur) = new_sides[j];
            if old_cat != new_cat || !similar_calls(old_base.1, new_cur.1) {
                continue;
            }
            let (old_name, old_chars) = old_names[i].get_or_insert_with(|| short(old));
            let (new_name, new_chars) = new_names[j].get_or_insert_with(|| short(new));
            if !same_function(old_name, new_name) {
                continue;
            }
            if diffs_left == 0 || work.left == 0 {
                break 'pairs;
            }
            diffs_left -= 1;
            if let Some(ratio) = name_similarity(old_chars, new_chars, &mut work) {
                candidates.push((ratio, old, new));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)).then(a.2.cmp(b.2)));
    let mut renamed = Vec::new();
    let (mut paired_old, mut paired_new) = (FxHashSet::default(), FxHashSet::default());
    for (ratio, old, new) in candidates {
        if paired_old.contains(old) || paired_new.contains(new) {
            continue;
        }
        paired_old.insert(old);
        paired_new.insert(new);
        let (category, base, _) = &kernels[old];
        let (_, _, cur) = &kernels[new];
        renamed.push(Renamed {
            old: old.to_string(),
            new: new.to_string(),
            category: category.unwrap_or_default().to_string(),
            similarity: f64::from(ratio),
            baseline_ms_per_step: base.0,
            current_ms_per_step: cur.0,
            delta_ms_per_step: cur.0 - base.0,
            baseline_calls_per_step: base.1,
            current_calls_per_step: cur.1,
        });
    }
    vanished.retain(|n| !paired_old.contains(n));
    appeared.retain(|n| !paired_new.contains(n));
    renamed.sort_by(|a, b| {
        b.delta_ms_per_step
            .abs()
            .total_cmp(&a.delta_ms_per_step.abs())
    });
    renamed
}

/// What [`pair_renamed`] may still spend, and what it spent.
struct RenameWork {
    left: u64,
    spent: u64,
}

impl RenameWork {
    fn new(budget: u64) -> RenameWork {
        RenameWork {
            left: budget,
            spent: 0,
        }
    }

    /// Takes `units`; false (and nothing left) when they were not there.
    fn take(&mut self, units: u64) -> bool {
        self.spent += units.min(self.left);
        match self.left.checked_sub(units) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.left = 0;
                false
            }
        }
    }
}

/// `similar`'s character ratio of two names (twice the longest common subsequence over both
/// lengths) when it is at least [`RENAME_SIMILARITY`], `None` below it, in work linear in the
/// names and bounded: the common prefix and suffix match, and of the differing middles only the
/// first [`RENAME_WINDOW`] characters of each are diffed (the rest counts as unmatched), with
/// the diff stopped as soon as it has more edits than the threshold allows. Where both middles
/// fit the window, the ratio is `similar`'s exactly.
fn name_similarity(a: &[char], b: &[char], work: &mut RenameWork) -> Option<f32> {
    let total = a.len() + b.len();
    if total == 0 {
        return Some(1.0);
    }
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a_rest, b_rest) = (&a[prefix..], &b[prefix..]);
    let suffix = a_rest
        .iter()
        .rev()
        .zip(b_rest.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    if !work.take((prefix + suffix + 1) as u64) {
        return None;
    }
    let a_mid = &a_rest[..a_rest.len() - suffix];
    let b_mid = &b_rest[..b_rest.len() - suffix];
    let (a_win, b_win) = (
        &a_mid[..a_mid.len().min(RENAME_WINDOW)],
        &b_mid[..b_mid.len().min(RENAME_WINDOW)],
    );
    let beyond = (a_mid.len() - a_win.len()) + (b_mid.len() - b_win.len());
    // Unmatched characters the threshold allows, with one to spare for rounding: the exact
    // ratio is tested below.
    let allowed = ((1.0 - f64::from(RENAME_SIMILARITY)) * total as f64).ceil() as usize + 1;
    let edits = edit_distance_within(a_win, b_win, allowed.checked_sub(beyond)?, work)?;
    let matched = prefix + suffix + (a_win.len() + b_win.len() - edits) / 2;
    // As `similar` computes it, in f32.
    let ratio = 2.0 * matched as f32 / total as f32;
    (ratio >= RENAME_SIMILARITY).then_some(ratio)
}

/// The fewest insertions and deletions that turn `a` into `b` (Myers' greedy algorithm), or
/// `None` when more than `max` are needed or `work` runs out: at most `max` rounds of at most
/// `2·max + 1` diagonals, each step charged to `work`.
fn edit_distance_within(
    a: &[char],
    b: &[char],
    max: usize,
    work: &mut RenameWork,
) -> Option<usize> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let max = max.min(a.len() + b.len()) as isize;
    const UNREACHED: isize = isize::MIN / 2;
    // v[k + offset]: the furthest x reached on diagonal k = x - y.
    let offset = max + 1;
    let mut v = vec![UNREACHED; (2 * max + 3) as usize];
    v[(offset + 1) as usize] = 0;
    for d in 0..=max {
        // Diagonals of d's parity, inside the grid.
        let mut lo = (-d).max(-m);
        if (lo + d) % 2 != 0 {
            lo += 1;
        }
        let mut hi = d.min(n);
        if (d - hi) % 2 != 0 {
            hi -= 1;
        }
        let mut k = lo;
        while k <= hi {
            let at = (k + offset) as usize;
            // Down from diagonal k + 1 (an insertion), or right from k - 1 (a deletion).
            let down = v[at + 1];
            let down = if down != UNREACHED && down - (k + 1) < m {
                down
            } else {
                UNREACHED
            };
            let right = v[at - 1];
            let right = if right != UNREACHED && right < n {
                right + 1
            } else {
                UNREACHED
            };
            let mut x = down.max(right);
            if x != UNREACHED {
                let start = x;
                while x < n && x - k < m && a[x as usize] == b[(x - k) as usize] {
                    x += 1;
                }
                if !work.take((x - start) as u64 + 1) {
                    return None;
                }
                if x >= n && x - k >= m {
                    return Some(d as usize);
                }
            }
            v[at] = x;
            k += 2;
        }
    }
    None
}

/// The figures of each of `names`, which are keys of `kernels`: one walk along the map when the
/// names are in its order (set differences are), a lookup each otherwise.
fn sides_of<'m, 'a>(
    kernels: &'m BTreeMap<&'a str, KernelSides<'a>>,
    names: &[&str],
) -> Vec<&'m KernelSides<'a>> {
    if !names.windows(2).all(|w| w[0] < w[1]) {
        return names.iter().map(|&n| &kernels[n]).collect();
    }
    let mut walk = kernels.iter();
    names
        .iter()
        .map(|n| loop {
            match walk.next() {
                Some((k, sides)) if k == n => break sides,
                Some(_) => {}
                None => break &kernels[*n],
            }
        })
        .collect()
}

/// The kernel's own function name: the last `::` part before its template or parameter list.
fn function_name(name: &str) -> &str {
    let head = &name[..name.find(['<', '(']).unwrap_or(name.len())];
    head.rsplit("::").next().unwrap_or(head).trim()
}

/// A rename keeps the function (the namespace, the template arguments and a build suffix such as
/// `_v2` may change); another implementation of the same job does not (`cross_device_reduce_2stage`
/// → `_1stage`, `oneshot` → `twoshot`), however similar the whole names are.
pub(super) fn same_function(old: &str, new: &str) -> bool {
    let (a, b) = (function_name(old), function_name(new));
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    !short.is_empty()
        && long
            .strip_prefix(short)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('_'))
}

pub(super) fn similar_calls(a: f64, b: f64) -> bool {
    (a - b).abs() <= RENAME_CALLS_TOLERANCE * a.max(b)
}

/// The metric moved beyond its tolerance in its bad direction (regressed, or too noisy to say).
fn beyond_tolerance(metrics: &[MetricCheck], name: MetricId) -> bool {
    metrics
        .iter()
        .any(|m| m.name == name && matches!(m.verdict, Verdict::Regressed | Verdict::Noisy))
}

fn metric_change(metrics: &[MetricCheck], name: MetricId) -> Option<f64> {
    metrics
        .iter()
        .find(|m| m.name == name)
        .and_then(|m| m.change)
}

/// Lines of the kernel diff kept for the report and the comment; the verdict JSON lists every
/// name in `appeared` and `vanished`.
pub(crate) const KERNEL_DIFF_LINES: usize = 200;

/// Unified diff of sorted kernel names (demangled, as every table shows them); only changed
/// lines and no context, to stay short, and at most [`KERNEL_DIFF_LINES`] of them. Both sides
/// are sorted sets, so the diff is one merge of the two: n log n in the names (the sort), where
/// a general line diff is quadratic when most lines differ.
fn name_diff(base: &BTreeSet<&str>, cur: &BTreeSet<&str>) -> String {
    // Demangled and sorted on every core: a run may have a million names.
    let readable_set = |s: &BTreeSet<&str>| -> BTreeSet<String> {
        // Control characters escaped: a newline in a name cannot forge a `+`/`-` line.
        let mut shown: Vec<String> = s
            .par_iter()
            .map(|n| crate::text::printable(&readable(n)).into_owned())
            .collect();
        shown.par_sort_unstable();
        shown.into_iter().collect()
    };
    let (old, new) = (readable_set(base), readable_set(cur));
    let total = old.difference(&new).count() + new.difference(&old).count();
    if total == 0 {
        return String::new();
    }
    let (mut gone, mut came) = (
        old.difference(&new).peekable(),
        new.difference(&old).peekable(),
    );
    let mut out = String::from("--- baseline kernels\n+++ current kernels\n");
    let mut shown = 0;
    // In name order, as a line diff of the two sorted lists reads.
    loop {
        let take_gone = match (gone.peek(), came.peek()) {
            (Some(g), Some(c)) => g <= c,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if shown == KERNEL_DIFF_LINES {
            out.push_str(&format!(
                "# ... and {} more (the verdict JSON lists them all in appeared and vanished)\n",
                total - shown
            ));
            break;
        }
        let (sign, name) = if take_gone {
            ('-', gone.next())
        } else {
            ('+', came.next())
        };
        if let Some(name) = name {
            out.push(sign);
            out.push_str(name);
            out.push('\n');
        }
        shown += 1;
    }
    out
}

/// The rank the others wait for, when the waiting grew beyond tolerance: the rank that arrived
/// last at most matched collectives (ties: the one that waits least), with its compute against the
/// median of the other ranks', per category and kernel.
fn straggler(x: &Extraction, metrics: &[MetricCheck]) -> Option<Straggler> {
    if !beyond_tolerance(metrics, MetricId::RankSkewMs) {
        return None;
    }
    let w = x.waits.as_ref().filter(|w| !w.steps.is_empty())?;
    let ranks = &x.run.ranks;
    if ranks.len() < 2 {
        return None;
    }
    let collectives: u64 = w.steps.iter().map(|s| u64::from(s[0].collectives)).sum();
    let last: Vec<u64> = (0..ranks.len())
        .map(|i| w.steps.iter().map(|s| u64::from(s[i].last_arrivals)).sum())
        .collect();
    let waits = w.median_wait_ms();
    let i = (0..ranks.len()).fold(0, |a, i| {
        if last[i] > last[a] || (last[i] == last[a] && waits[i] < waits[a]) {
            i
        } else {
            a
        }
    });
    let compute: Vec<f64> = (0..ranks.len())
        .map(|r| crate::stats::median(&mut w.series(r, |s| s.compute_ns)).unwrap_or(0.0))
        .collect();
    let others_median = |v: &dyn Fn(usize) -> f64| {
        let mut o: Vec<f64> = (0..ranks.len()).filter(|&r| r != i).map(v).collect();
        crate::stats::median(&mut o).unwrap_or(0.0)
    };
    let compute_excess_ms = compute[i] - others_median(&|r| compute[r]);
    let rank = ranks[i];
    let breakdowns: Vec<Option<&Breakdown>> =
        ranks.iter().map(|r| x.rank_breakdowns.get(r)).collect();
    let cat_ms = |r: usize, c: Category| {
        breakdowns[r]
            .and_then(|b| b.categories.get(&c))
            .map_or(0.0, |s| s.ms_per_step)
    };
    let (category, category_excess_ms) = breakdowns[i]
        .and_then(|b| {
            b.categories
                .keys()
                .filter(|c| !matches!(c, Category::Comm | Category::Memcpy))
                .map(|&c| (c, cat_ms(i, c) - others_median(&|r| cat_ms(r, c))))
                .max_by(|a, b| a.1.total_cmp(&b.1))
        })
        .map_or((None, 0.0), |(c, d)| (Some(c), d));
    let kernel = category.and_then(|c| {
        let kernel_ms = |r: usize, name: &str| {
            breakdowns[r]
                .and_then(|b| b.kernels.iter().find(|k| k.name == name))
                .map_or(0.0, |k| k.ms_per_step)
        };
        breakdowns[i]?
            .kernels
            .iter()
            .filter(|k| k.category == c)
            .map(|k| {
                (
                    k.name.as_str(),
                    k.ms_per_step - others_median(&|r| kernel_ms(r, &k.name)),
                )
            })
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(n, _)| n.to_string())
    });
    Some(Straggler {
        rank,
        last_arrival_pct: if collectives > 0 {
            last[i] as f64 / collectives as f64 * 100.0
        } else {
            0.0
        },
        compute_excess_ms,
        category: category.map(|c| c.key().to_string()),
        category_excess_ms,
        kernel,
        wait_change_ms: metric_change(metrics, MetricId::RankSkewMs).unwrap_or(0.0),
        waits_in: if x.metrics.contains_key(&MetricId::AllreduceUs) {
            "allreduce".into()
        } else {
            "collectives".into()
        },
    })
}

#[cfg(test)]
mod diff_tests {
    use super::*;

    #[test]
    fn shares_are_given_only_for_a_material_change_and_never_beyond_a_hundred_percent() {
        let d = |name: &str, delta: f64| delta_of(name, delta);
        // Time that moved between categories nets out: no share, rather than +187839%.
        let moved = with_shares(vec![d("other", 3.946), d("moe_gemm", -3.944)], 0.002, 0.03);
        assert!(moved.iter().all(|d| d.share_of_change_pct.is_none()));
        // Material, but one category's share would pass 100%: none.
        let mixed = with_shares(vec![d("comm", 1.5), d("moe_gemm", -0.5)], 1.0, 0.03);
        assert!(mixed.iter().all(|d| d.share_of_change_pct.is_none()));
        // Material and within ±100%: every row has its share.
        let plain = with_shares(vec![d("comm", 0.853), d("norm", 0.0)], 0.853, 0.03);
        assert_eq!(plain[0].share_of_change_pct, Some(100.0));
        assert_eq!(plain[1].share_of_change_pct, Some(0.0));
        // Noise: a 4 µs change is not split into ±50% shares.
        let noise = with_shares(vec![d("a", 0.002), d("b", 0.002)], 0.004, 0.03);
        assert!(noise.iter().all(|d| d.share_of_change_pct.is_none()));
    }

    fn delta_of(name: &str, change: f64) -> Delta {
        delta(name, None, (1.0, 1.0), (1.0 + change, 1.0))
    }

    #[test]
    fn the_kernel_diff_of_many_names_is_a_capped_merge() {
        // 300,000 names against 3: a line diff (Myers) of two lists that differ almost
        // everywhere is quadratic and would not finish; the merge of two sorted sets does.
        let current: Vec<String> = (0..300_000).map(|i| format!("kernel_{i:06}")).collect();
        let cur: BTreeSet<&str> = current.iter().map(String::as_str).collect();
        let base: BTreeSet<&str> = ["kernel_000001", "aaa_gone", "zzz_gone"].into();
        let diff = name_diff(&base, &cur);
        let lines: Vec<&str> = diff.lines().collect();
        assert_eq!(lines.len(), 2 + KERNEL_DIFF_LINES + 1, "{diff}");
        assert_eq!(
            &lines[..4],
            [
                "--- baseline kernels",
                "+++ current kernels",
                "-aaa_gone",
                "+kernel_000000"
            ]
        );
        // kernel_000001 is on both sides: no line.
        assert_eq!(lines[4], "+kernel_000002");
        assert!(lines.last().unwrap().contains("and 299801 more"), "{diff}");
        assert_eq!(name_diff(&base, &base), "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    fn similar_ratio(a: &str, b: &str) -> f32 {
        similar::TextDiff::from_chars(a, b).ratio()
    }

    #[test]
    fn the_bounded_similarity_is_similars_ratio_on_names_that_fit_the_window() {
        let mut pairs: Vec<(String, String)> = vec![
            (
                "ck::kernel_moe_mxgemm_2lds<a, 1>".into(),
                "ck::kernel_moe_mxgemm_2lds<a, 1, 1>".into(),
            ),
            (
                "aiter::mla_decode<4>".into(),
                "aiter_v2::mla_decode<4>".into(),
            ),
            (
                "nvjet_tst_64x32_TNT".into(),
                "nvjet_tst_64x32_TNT_v2".into(),
            ),
            ("abc".into(), "abc".into()),
            ("".into(), "x".into()),
            ("kernel<1>".into(), "kernel<2>".into()),
            ("aaaa".into(), "bbbb".into()),
            ("ab".into(), "ba".into()),
        ];
        // Pseudo-random names over a small alphabet: many near and far pairs.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for _ in 0..3000 {
            let len = 1 + next(120) as usize;
            let a: String = (0..len).map(|_| (b'a' + next(4) as u8) as char).collect();
            let mut b: Vec<char> = a.chars().collect();
            for _ in 0..next(12) {
                let at = next(b.len() as u64 + 1) as usize;
                match next(3) {
                    0 if at < b.len() => {
                        b.remove(at);
                    }
                    1 if at < b.len() => b[at] = (b'a' + next(4) as u8) as char,
                    _ => b.insert(at, (b'a' + next(4) as u8) as char),
                }
            }
            pairs.push((a, b.into_iter().collect()));
        }
        let mut at_or_above = 0;
        for (a, b) in &pairs {
            let exact = similar_ratio(a, b);
            let mut work = RenameWork::new(u64::MAX);
            let got = name_similarity(&chars(a), &chars(b), &mut work);
            if exact >= RENAME_SIMILARITY {
                at_or_above += 1;
                assert_eq!(got, Some(exact), "{a:?} {b:?}");
            } else {
                assert_eq!(got, None, "{a:?} {b:?}: {exact}");
            }
        }
        assert!(
            at_or_above > 200 && at_or_above < pairs.len() - 200,
            "{at_or_above}"
        );
    }

    #[test]
    fn the_similarity_of_long_names_costs_work_linear_in_their_length() {
        // One pair of 60,000-character names that differ everywhere after a short prefix (a
        // character diff of them is quadratic: 23 s), and one that differs in the middle only.
        let far_a: String = "ns::kernel<"
            .chars()
            .chain((0..60_000).map(|i| char::from(b'a' + (i * 7 % 26) as u8)))
            .collect();
        let far_b: String = "ns::kernel<"
            .chars()
            .chain((0..60_000).map(|i| char::from(b'a' + (i * 11 % 26) as u8)))
            .collect();
        let mut work = RenameWork::new(u64::MAX);
        assert_eq!(
            name_similarity(&chars(&far_a), &chars(&far_b), &mut work),
            None
        );
        assert!(work.spent < 200_000, "{}", work.spent);
        let near_b = format!("{}X{}", &far_a[..30_000], &far_a[30_001..]);
        let mut work = RenameWork::new(u64::MAX);
        let ratio = name_similarity(&chars(&far_a), &chars(&near_b), &mut work).unwrap();
        assert!(ratio > 0.999, "{ratio}");
        assert!(work.spent < 200_000, "{}", work.spent);
        // Middles of the window's size that differ as much as the threshold allows: the diff
        // stops at the threshold, at most (2·allowed + 1) diagonals of the window each round.
        let a: String = (0..RENAME_WINDOW)
            .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
            .collect();
        let b: String = (0..RENAME_WINDOW)
            .map(|i| char::from(b'a' + (i * 5 % 26) as u8))
            .collect();
        let mut work = RenameWork::new(u64::MAX);
        assert_eq!(name_similarity(&chars(&a), &chars(&b), &mut work), None);
        assert!(work.spent < 400_000, "{}", work.spent);
        // And a budget that runs out stops it.
        let mut work = RenameWork::new(1000);
        assert_eq!(name_similarity(&chars(&a), &chars(&b), &mut work), None);
        assert_eq!(work.left, 0);
    }

    #[test]
    fn a_rename_keeps_the_function_and_another_implementation_does_not() {
        assert!(same_function(
            "ck::kernel_moe_mxgemm_2lds<a, 1>",
            "ck::kernel_moe_mxgemm_2lds<a, 1, 1>"
        ));
        assert!(same_function(
            "aiter::mla_decode<4>",
            "aiter_v2::mla_decode<4>"
        ));
        assert!(same_function(
            "nvjet_tst_64x32_TNT",
            "nvjet_tst_64x32_TNT_v2"
        ));
        assert!(!same_function(
            "aiter::cross_device_reduce_2stage<__hip_bfloat16, 4>",
            "aiter::cross_device_reduce_1stage<__hip_bfloat16, 4>"
        ));
        assert!(!same_function(
            "ns::allreduce_fusion_kernel_oneshot_lamport<1>",
            "ns::allreduce_fusion_kernel_twoshot_sync<1>"
        ));
    }
}
