//! Analysis: the full picture of one run that `tracegate report` prints, as in the reference
//! analyses: breakdown by category, communication, overlap and streams, per-rank balance, the
//! prefill phase, GEMM shapes and `Input Dims` coverage.
//!
//! It runs from the steps ([`crate::steps::find_steps_with`]) and the run directly, so a trace without a
//! decode step (an eager prefill, a training step) is still analysed over the whole trace. The gated
//! figures of [`crate::metrics::extract`] are used where decode steps exist.
//!
//! This module computes; it never formats. The JSON of `report --format json` is the `Serialize`
//! form of [`RunAnalysis`] (documented in `docs/REPORT.md`).

pub(crate) mod balance;
pub(crate) mod capture;
pub(crate) mod code;
pub(crate) mod comm;
pub(crate) mod compare;
pub(crate) mod coverage;
pub(crate) mod overlap;
pub(crate) mod prefill;
pub(crate) mod roofline;
pub(crate) mod shapes;
pub(crate) mod unclassified;

use std::collections::HashSet;

use serde::Serialize;

use crate::metrics::breakdown::{combine, Breakdown, RankTotals};
use crate::metrics::compute::{step_figures, Scratch, StepFigures};
use crate::metrics::{Extraction, MetricId, MetricMap};
use crate::reader::model::{GpuActivity, Run};
use crate::steps::{category_of, Detection, RankSteps, Step};
use crate::taxonomy::Class;
use shapes::ShapesSection;

/// Version of the `report --format json` schema; bumped on any incompatible change (2:
/// `unclassified.other_share_pct`, apart from the metric `other_pct`; `metrics` added).
pub(crate) const REPORT_SCHEMA_VERSION: u32 = 2;

/// Which activities a section describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The steady decode steps; figures are per step (mean over ranks of the per-rank mean).
    Decode,
    /// Every GPU activity of the trace; figures are per rank (mean over ranks).
    WholeTrace,
}

/// How the run is analysed.
#[derive(Debug, Clone, Default)]
pub(crate) struct AnalysisOptions {
    /// Warm-up decode steps to drop, when steps are found here (without an extraction).
    pub warmup_steps: usize,
    /// `--step-gap`, ns.
    pub step_gap: Option<i64>,
    /// Graph captures to join replays to (`--capture`, or found beside the run).
    pub captures: Vec<code::CaptureInput>,
    /// Python scope frames per row of the model view (`--scope-depth`).
    pub scope_depth: usize,
    /// `--peak`: peak figures over (or instead of) the device's table.
    pub peak: Option<roofline::PeakOverride>,
}

/// The whole analysis of one run.
#[derive(Debug, Clone, Serialize)]
pub struct RunAnalysis {
    pub run: RunSummary,
    /// Steps found per rank.
    pub phases: Vec<RankPhases>,
    /// The registry's metrics as `extract` computed them (the same values, never recomputed
    /// here); empty without a steady decode step.
    #[serde(skip_serializing_if = "MetricMap::is_empty")]
    pub metrics: MetricMap,
    /// Decode wall clock, utilization and comm share; `None` without a decode step.
    pub decode: Option<DecodeFigures>,
    /// Kernel time by category and kernel, per decode step or per rank over the whole trace.
    pub breakdown: BreakdownSection,
    pub comm: comm::CommSection,
    pub overlap: overlap::OverlapSection,
    /// Whole-trace figures per rank, whatever the scope of the other sections.
    pub whole_trace: Vec<overlap::WholeTraceRank>,
    /// Per-rank decode figures; `None` without a decode step.
    pub balance: Option<balance::BalanceSection>,
    /// `None` without a prefill step.
    pub prefill: Option<prefill::PrefillSection>,
    pub shapes: ShapesSection,
    /// Time per op and shape and per Python scope (issue 41).
    pub code: code::view::ModelView,
    pub coverage: coverage::Coverage,
    /// Kernels in `other`, with a rule to paste for those no rule matched.
    pub unclassified: unclassified::UnclassifiedSection,
    /// Every decode step of the slowest rank (the one that decides `decode_step_ms`), for the
    /// report's chart; `None` without a decode step.
    #[serde(skip)]
    pub decode_steps: Option<(u32, Vec<crate::steps::DecodePoint>)>,
}

/// What the run is.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub device: Option<String>,
    pub ranks: Vec<RankLabel>,
    pub traces: usize,
    /// "1 of 4 ranks (rank(s) 1, 2, 3 missing: …)" where the run holds only some of its ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_ranks: Option<String>,
    /// "1 of 4 ranks", with `missing_ranks`.
    #[serde(skip)]
    pub ranks_of: Option<String>,
    /// True when at least one rank kept a decode step.
    pub has_decode: bool,
    /// The scope of the breakdown, comm, overlap and shapes sections.
    pub scope: Scope,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankLabel {
    pub rank: u32,
    pub label: String,
}

/// Steps found in one rank.
#[derive(Debug, Clone, Serialize)]
pub struct RankPhases {
    pub rank: u32,
    pub label: String,
    pub decode_kept: usize,
    pub decode_dropped: usize,
    pub dropped_warmup: usize,
    pub dropped_outliers: usize,
    /// Decode steps (kept or dropped) whose kernels came from a CUDA/HIP graph launch.
    pub decode_graph_launched: usize,
    pub prefill: usize,
    /// Steps that mix prefill and decode tokens (chunked prefill).
    #[serde(skip_serializing_if = "is_zero")]
    pub mixed: usize,
    /// Kernel time in no step, ms.
    pub unassigned_ms: f64,
    pub found: Detection,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The gated decode figures (run values as `extract` defines them).
#[derive(Debug, Clone, Serialize)]
pub struct DecodeFigures {
    /// `decode_step_ms`: median wall per rank, max over ranks.
    pub wall_ms: Option<f64>,
    pub wall_p90_ms: Option<f64>,
    /// `gpu_util_pct`: min over ranks.
    pub gpu_util_pct: Option<f64>,
    /// `comm_pct`: max over ranks.
    pub comm_pct: Option<f64>,
    /// Kept decode steps, all ranks.
    pub kept_steps: usize,
    pub moe_layers: Option<f64>,
}

/// Kernel time by category and by kernel.
#[derive(Debug, Clone, Serialize)]
pub struct BreakdownSection {
    pub scope: Scope,
    /// Sum over categories of ms per step (decode) or per rank (whole trace).
    pub total_ms: f64,
    pub total_calls: f64,
    /// Categories and kernels; `ms_per_step` and `calls_per_step` are per rank for the whole trace.
    #[serde(flatten)]
    pub breakdown: Breakdown,
}

/// What every section reads: the run, its classes, its steps and the scope.
pub(crate) struct Context<'a> {
    pub run: &'a Run,
    pub classes: &'a [Vec<Class>],
    pub rank_steps: &'a [RankSteps],
    pub scope: Scope,
}

impl<'a> Context<'a> {
    pub(crate) fn classes_of(&self, trace: usize) -> &'a [Class] {
        self.classes.get(trace).map_or(&[][..], |c| c.as_slice())
    }

    pub(crate) fn activity(&self, trace: usize, index: u32) -> Option<&'a GpuActivity> {
        self.run.traces.get(trace)?.gpu.get(index as usize)
    }

    pub(crate) fn name(&self, trace: usize, activity: &GpuActivity) -> &'a str {
        self.run.traces[trace].name(activity.name)
    }

    /// The class of a kernel name (memcpy/memset and unknown names have none).
    pub(crate) fn class_of(&self, trace: usize, activity: &GpuActivity) -> Option<&'a Class> {
        self.classes_of(trace).get(activity.name as usize)
    }

    pub(crate) fn category(
        &self,
        trace: usize,
        activity: &GpuActivity,
    ) -> crate::taxonomy::Category {
        category_of(activity, self.classes_of(trace))
    }

    /// The activities of a rank in scope, as (trace, index), and the number of units (kept
    /// decode steps, or 1 for the whole trace; 0 when the rank has nothing in scope).
    pub(crate) fn rank_activities(&self, rs: &RankSteps) -> (Vec<(usize, u32)>, usize) {
        match self.scope {
            Scope::Decode => {
                let acts = rs
                    .decode
                    .iter()
                    .flat_map(|s| s.activities.iter().map(move |&i| (s.trace, i)))
                    .collect();
                (acts, rs.decode.len())
            }
            Scope::WholeTrace => {
                let acts: Vec<(usize, u32)> = rs
                    .traces
                    .iter()
                    .flat_map(|&t| {
                        let n = self.run.traces.get(t).map_or(0, |tr| tr.gpu.len());
                        (0..n as u32).map(move |i| (t, i))
                    })
                    .collect();
                let units = usize::from(!acts.is_empty());
                (acts, units)
            }
        }
    }

    /// Figures of each kept decode step of a rank, and its allreduce-class call durations (ns).
    pub(crate) fn decode_figures(&self, rs: &RankSteps) -> (Vec<StepFigures>, Vec<i64>) {
        let mut scratch = Scratch::default();
        let mut allreduce = Vec::new();
        let figures = rs
            .decode
            .iter()
            .filter_map(|s| {
                let trace = self.run.traces.get(s.trace)?;
                Some(step_figures(
                    trace,
                    self.classes_of(s.trace),
                    s,
                    &mut scratch,
                    &mut allreduce,
                ))
            })
            .collect();
        (figures, allreduce)
    }
}

/// Every decode step of the rank that decided `decode_step_ms` (else of the rank with the
/// slowest median kept step), with what the selection did with each.
fn slowest_rank_steps(
    rank_steps: &[RankSteps],
    extraction: Option<&Extraction>,
) -> Option<(u32, Vec<crate::steps::DecodePoint>)> {
    let decided = extraction
        .and_then(|x| x.metrics.get(&MetricId::DecodeStepMs))
        .and_then(|m| m.decided_by);
    let median = |rs: &RankSteps| {
        let mut w: Vec<i64> = rs.decode.iter().map(Step::wall).collect();
        w.sort_unstable();
        w.get(w.len() / 2).copied()
    };
    let rs = match decided {
        Some(r) => rank_steps.iter().find(|rs| rs.rank.index == r),
        None => rank_steps
            .iter()
            .filter(|rs| !rs.decode.is_empty())
            .max_by_key(|rs| median(rs)),
    }?;
    let points = crate::steps::decode_points(rs);
    (!points.is_empty()).then_some((rs.rank.index, points))
}

pub(crate) fn ns_to_ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// Analyses a run. `classes[i]` classifies the names of `run.traces[i]`; `extraction` is the
/// result of [`crate::metrics::extract`] when it succeeded (its steps are reused).
pub(crate) fn analyse_run(
    run: &Run,
    classes: &[Vec<Class>],
    extraction: Option<&Extraction>,
    options: &AnalysisOptions,
) -> RunAnalysis {
    let found;
    let rank_steps: &[RankSteps] = match extraction {
        Some(x) if !x.rank_steps.is_empty() => &x.rank_steps,
        _ => {
            let opts = crate::steps::StepOptions {
                warmup: options.warmup_steps,
                step_gap: options.step_gap,
            };
            found = crate::steps::find_steps_with(run, classes, &opts);
            &found
        }
    };
    let has_decode = rank_steps.iter().any(|r| !r.decode.is_empty());
    let scope = if has_decode {
        Scope::Decode
    } else {
        Scope::WholeTrace
    };
    let ctx = Context {
        run,
        classes,
        rank_steps,
        scope,
    };

    let device = run
        .traces
        .iter()
        .find_map(|t| t.device.as_ref().map(|d| d.name.clone()))
        .filter(|n| !n.is_empty());
    let ranks = rank_steps
        .iter()
        .map(|rs| RankLabel {
            rank: rs.rank.index,
            label: rs.rank.label.clone(),
        })
        .collect();

    let metrics: MetricMap = extraction.map(|x| x.metrics.clone()).unwrap_or_default();
    let overlap = overlap::overlap_section(&ctx, &metrics);
    let decode = has_decode.then(|| decode_figures(rank_steps, extraction));
    let decode_steps = slowest_rank_steps(rank_steps, extraction);
    let breakdown = breakdown(&ctx, extraction);
    let unclassified = unclassified::unclassified_section(&ctx, &breakdown.breakdown);
    RunAnalysis {
        decode_steps,
        run: RunSummary {
            device,
            ranks,
            traces: run.traces.len(),
            missing_ranks: run.missing.as_ref().map(|m| m.to_string()),
            ranks_of: run.missing.as_ref().map(|m| m.share()),
            has_decode,
            scope,
        },
        phases: phases(&ctx),
        metrics,
        decode,
        breakdown,
        comm: comm::comm_section(&ctx),
        overlap,
        whole_trace: overlap::whole_trace(&ctx),
        // Per-rank figures only where the extraction computed the registry's (it did wherever a
        // steady decode step exists); they are read from it, not recomputed.
        balance: extraction
            .filter(|_| has_decode)
            .map(|x| balance::balance_section(&ctx, x)),
        prefill: prefill::prefill_section(&ctx),
        shapes: crate::analysis::shapes::shape_section(run, classes, rank_steps, scope),
        code: model_view(&ctx, options),
        coverage: coverage::coverage(run),
        unclassified,
    }
}

/// The model view over the activities in scope, every rank pooled.
fn model_view(ctx: &Context<'_>, options: &AnalysisOptions) -> code::view::ModelView {
    let (mut activities, mut units) = (Vec::new(), 0usize);
    for rs in ctx.rank_steps {
        let (acts, n) = ctx.rank_activities(rs);
        units += n;
        let mut by_trace: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
        for (t, i) in acts {
            by_trace.entry(t).or_default().push(i);
        }
        activities.extend(by_trace);
    }
    let mut wanted: Vec<Vec<bool>> = ctx
        .run
        .traces
        .iter()
        .map(|t| vec![false; t.gpu.len()])
        .collect();
    for (t, indices) in &activities {
        for &i in indices {
            wanted[*t][i as usize] = true;
        }
    }
    let sites = code::code_sites(ctx.run, &options.captures, &|t, i| wanted[t][i]);
    let in_scope = code::view::InScope {
        activities,
        per: units as f64,
        scope: ctx.scope,
    };
    let peaks = device_peaks(ctx.run, options.peak.as_ref());
    code::view::model_view(
        ctx.run,
        &sites,
        &in_scope,
        options.scope_depth.max(1),
        peaks,
    )
}

/// The peaks of the run's device: its table, `--peak` over it, or why there is none.
pub(crate) fn device_peaks(
    run: &Run,
    peak: Option<&roofline::PeakOverride>,
) -> Result<roofline::DevicePeaks, String> {
    let device = run
        .traces
        .iter()
        .find_map(|t| t.device.as_ref().map(|d| d.name.clone()))
        .filter(|n| !n.is_empty());
    let matched = match &device {
        Some(name) => roofline::match_device(name),
        None => Err("the trace names no device: pass --peak".to_string()),
    };
    match peak {
        Some(p) => Ok(p.apply(device.as_deref().unwrap_or("unknown device"), matched)),
        None => matched.cloned(),
    }
}

fn decode_figures(rank_steps: &[RankSteps], extraction: Option<&Extraction>) -> DecodeFigures {
    let metric = |id: MetricId| extraction.and_then(|x| x.metrics.get(&id));
    DecodeFigures {
        wall_ms: metric(MetricId::DecodeStepMs).map(|m| m.value),
        wall_p90_ms: metric(MetricId::DecodeStepMs).and_then(|m| m.p90),
        gpu_util_pct: metric(MetricId::GpuUtilPct).map(|m| m.value),
        comm_pct: metric(MetricId::CommPct).map(|m| m.value),
        kept_steps: rank_steps.iter().map(|r| r.decode.len()).sum(),
        moe_layers: extraction.and_then(|x| x.moe_layers.as_ref().map(|m| m.value)),
    }
}

/// True when a step's kernels came from a graph launch.
fn graph_launched(step: &Step, run: &Run, graph_correlations: &[HashSet<u64>]) -> bool {
    let (Some(trace), Some(graphs)) = (
        run.traces.get(step.trace),
        graph_correlations.get(step.trace),
    ) else {
        return false;
    };
    step.activities.iter().any(|&i| {
        trace
            .gpu
            .get(i as usize)
            .and_then(|a| a.correlation())
            .is_some_and(|c| graphs.contains(&c))
    })
}

fn phases(ctx: &Context<'_>) -> Vec<RankPhases> {
    let graph_correlations: Vec<HashSet<u64>> = ctx
        .run
        .traces
        .iter()
        .map(|t| {
            t.launches
                .iter()
                .filter(|l| l.graph)
                .map(|l| l.correlation)
                .collect()
        })
        .collect();
    ctx.rank_steps
        .iter()
        .map(|rs| {
            let decode_graph_launched = rs
                .decode
                .iter()
                .chain(rs.dropped.iter().map(|d| &d.step))
                .filter(|s| graph_launched(s, ctx.run, &graph_correlations))
                .count();
            RankPhases {
                rank: rs.rank.index,
                label: rs.rank.label.clone(),
                decode_kept: rs.decode.len(),
                decode_dropped: rs.dropped.len(),
                dropped_warmup: rs.dropped_warmup,
                dropped_outliers: rs.dropped_outliers,
                decode_graph_launched,
                prefill: rs.prefill.len(),
                mixed: rs.mixed.len(),
                unassigned_ms: ns_to_ms(rs.unassigned_ns),
                found: rs.found.clone(),
            }
        })
        .collect()
}

fn breakdown(ctx: &Context<'_>, extraction: Option<&Extraction>) -> BreakdownSection {
    let breakdown = match (ctx.scope, extraction) {
        (Scope::Decode, Some(x)) => x.breakdown.clone(),
        _ => {
            let totals: Vec<RankTotals<'_>> = ctx
                .rank_steps
                .iter()
                .map(|rs| {
                    let (acts, units) = ctx.rank_activities(rs);
                    let mut totals = RankTotals {
                        steps: units,
                        ..RankTotals::default()
                    };
                    for (t, i) in acts {
                        if let Some(a) = ctx.activity(t, i) {
                            totals.add(ctx.name(t, a), ctx.category(t, a), a.dur, 1);
                        }
                    }
                    totals
                })
                .collect();
            combine(&totals)
        }
    };
    BreakdownSection {
        scope: ctx.scope,
        total_ms: breakdown
            .categories
            .values()
            .map(|c| c.ms_per_step)
            .fold(0.0, |a, b| a + b),
        total_calls: breakdown
            .categories
            .values()
            .map(|c| c.calls_per_step)
            .fold(0.0, |a, b| a + b),
        breakdown,
    }
}

#[cfg(test)]
mod tests {
    use super::overlap::Verdict;
    use super::*;
    use crate::taxonomy::Category;
    use crate::testing::{run_of, TraceBuilder, MS, US};

    /// The analysis as the pipeline runs it: with the extraction when one succeeds.
    fn analyse(traces: Vec<(crate::reader::RankTrace, Vec<Class>)>) -> RunAnalysis {
        let (run, classes) = run_of(traces);
        let options = crate::metrics::ExtractOptions {
            warmup_steps: 0,
            ..crate::metrics::ExtractOptions::default()
        };
        let extraction = crate::metrics::extract(&run, &classes, &options).ok();
        analyse_run(
            &run,
            &classes,
            extraction.as_ref(),
            &AnalysisOptions {
                warmup_steps: 0,
                ..Default::default()
            },
        )
    }

    #[test]
    fn comm_on_a_side_stream_under_compute_is_overlapped_over_the_whole_trace() {
        let mut b = TraceBuilder::new(0);
        b.kernel("gemm", Category::DenseGemm, 0, 100 * US, 7);
        b.allreduce("ncclDevKernel_AllReduce", 50 * US, 100 * US, 20);
        let a = analyse(vec![b.build()]);
        assert!(!a.run.has_decode);
        assert_eq!(a.run.scope, Scope::WholeTrace);
        let w = &a.whole_trace[0];
        assert_eq!(
            (w.busy_ns, w.comm_union_ns, w.overlap_ns),
            (150 * US, 100 * US, 50 * US)
        );
        assert_eq!((w.span_ns, w.idle_ns, w.streams), (150 * US, 0, 2));
        assert_eq!(w.overlap_pct, Some(50.0));
        assert_eq!(a.overlap.verdict, Verdict::Mostly);
        let streams = &a.overlap.ranks[0].streams;
        assert_eq!(streams.len(), 2);
        assert!(streams.iter().all(|s| s.overlapping_other_streams == 1));
        assert_eq!(a.overlap.ranks[0].comm_streams, vec![20]);
        assert!(a.balance.is_none() && a.decode.is_none());
    }

    #[test]
    fn one_stream_is_zero_overlap_by_construction() {
        let mut b = TraceBuilder::new(0);
        b.kernel("gemm", Category::DenseGemm, 0, 100 * US, 7);
        b.allreduce("cross_device_reduce", 100 * US, 100 * US, 7);
        let a = analyse(vec![b.build()]);
        assert_eq!(a.overlap.verdict, Verdict::SingleStream);
        assert_eq!(a.whole_trace[0].overlap_pct, Some(0.0));
    }

    /// Three ranks of five graph-launched decode steps, each with one allreduce; rank 0's is slow.
    fn decode_run() -> RunAnalysis {
        let traces = (0..3)
            .map(|rank| {
                let mut b = TraceBuilder::new(rank);
                for step in 0..5 {
                    let ts = step * 10 * MS;
                    let corr = b.launch(ts, true);
                    b.forward(corr, ts + MS, 2 * MS);
                    let slow = if rank == 0 { 500 } else { 100 };
                    // The first call of rank 0 is cold.
                    let dur = if rank == 0 && step == 0 {
                        5 * MS
                    } else {
                        slow * US
                    };
                    let ar = b.allreduce("cross_device_reduce", ts + 3 * MS, dur, 0);
                    b.link(ar, corr);
                }
                b.build()
            })
            .collect();
        analyse(traces)
    }

    #[test]
    fn decode_steps_give_comm_balance_and_the_rank_whose_allreduce_stands_out() {
        let a = decode_run();
        assert!(a.run.has_decode);
        assert_eq!(
            a.phases
                .iter()
                .map(|p| p.decode_graph_launched)
                .sum::<usize>(),
            15
        );
        let comm = &a.comm.kernels[0];
        assert_eq!(comm.calls, 1.0);
        assert_eq!(comm.first_call_rank, Some(0));
        assert_eq!(comm.first_call_us, Some(5000.0));
        assert!(comm.cold_first_call);
        assert_eq!(a.comm.layers.as_ref().map(|l| l.value), Some(1.0));
        let b = a.balance.as_ref().unwrap();
        assert_eq!(b.ranks.len(), 3);
        assert_eq!(b.ranks[1].allreduce_mean_us, Some(100.0));
        assert_eq!(b.allreduce_outliers.len(), 1);
        assert_eq!(b.allreduce_outliers[0].rank, 0);
        assert_eq!(b.allreduce_outliers[0].others_median_us, 100.0);
        assert_eq!(
            b.main_allreduce_kernel.as_deref(),
            Some("cross_device_reduce")
        );
        // Rank 0's steps: the cold 7 ms step and four of 2 ms forward + 0.5 ms allreduce; median
        // 2.5 ms. Ranks 1 and 2: 2.1 ms.
        assert_eq!(b.ranks[0].wall_ms, Some(2.5));
        assert!((b.wall_skew_ms.unwrap() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn comparing_a_run_with_itself_gives_ratios_of_one() {
        let a = decode_run();
        let c = compare::compare(&[("a".into(), &a), ("b".into(), &a)]);
        let kernel = c.figures.iter().find(|m| m.key == "kernel_ms").unwrap();
        assert_eq!(kernel.ratios, vec![Some(1.0), Some(1.0)]);
        // The registry's figures are read from the extraction, one row per metric.
        assert_eq!(c.metrics.len(), crate::metrics::METRICS.len());
        let step = c
            .metrics
            .iter()
            .find(|m| Some(m.key.as_str()) == crate::metrics::METRICS.first().map(|d| d.name()));
        assert_eq!(
            step.unwrap().values,
            vec![a.decode.as_ref().and_then(|d| d.wall_ms); 2]
        );
        assert!(c
            .libraries
            .iter()
            .all(|l| l.only_here.iter().all(Vec::is_empty)));
    }
}
