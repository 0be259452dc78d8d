//! What a metric definition is (the registry's entry type) and which metrics there are
//! ([`MetricId`], and each one's name); the table of definitions is `catalog.rs`.

use serde::Serialize;

use super::compute::StepFigures;
use super::figures::{Context, RunFigures};
use super::{Direction, Metric, MetricMap};
use crate::stats::Statistic;
use crate::steps::RunKind;
use crate::units::Unit;

/// Which steps a metric is measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Decode,
    Prefill,
    /// Forward passes that mix prefill and decode tokens (chunked prefill).
    Mixed,
}

/// The kinds of run a metric is measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Serving runs only (the decode, prefill and mixed figures).
    Serving,
    /// ProfilerStep loops only (`iteration_ms`).
    Loop,
    /// Both: on a loop, a per-step figure of its iterations in place of its decode steps.
    Both,
}

impl Runs {
    pub fn include(self, kind: RunKind) -> bool {
        matches!(
            (self, kind),
            (Runs::Both, _) | (Runs::Serving, RunKind::Serving) | (Runs::Loop, RunKind::Loop)
        )
    }
}

/// How the per-rank values of a per-step metric make the run's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Across {
    /// The largest per-rank value (the worst rank for a lower-is-better metric).
    Max,
    /// The smallest per-rank value.
    Min,
}

/// What the gate can resample to tell a change from noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Samples {
    /// One per kept step, of the rank that decided the value.
    PerStep,
    /// One per call, pooled over ranks.
    PerCall,
    /// One value per rank: too few and not draws of one thing; the value alone decides.
    PerRank,
    /// A count of events among the steps (one 0-or-100 sample per step), or the time they took:
    /// exact, not an estimate, so the value alone decides.
    Count,
}

/// The tolerance `baseline new` writes for a metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StartTolerance {
    /// As written: `"3%"`, `"1pp"`, `"0.5ms"`.
    Fixed(&'static str),
    /// A share of the run's `decode_step_ms`, in ms, with a floor (what ranks lose scales with the step).
    ShareOfDecodeStep { pct: f64, floor_ms: f64 },
    /// A share of the metric's own value, in ms, with a floor (a host gap of 0.3 ms moves by
    /// 0.1 ms between launches; one of 25 ms by several).
    ShareOfValue { pct: f64, floor_ms: f64 },
}

/// How a metric is computed.
#[derive(Clone, Copy)]
pub enum Compute {
    /// A figure of each kept step of the phase; the metric's statistic of them per rank; the ranks
    /// combined by `across`.
    PerStep {
        sample: fn(&StepFigures, &Context) -> Option<f64>,
        across: Across,
    },
    /// A function of every rank's figures and of the metrics computed before it.
    Run(fn(&MetricDef, &RunFigures<'_>, &MetricMap) -> Option<Metric>),
}

/// One metric.
#[derive(Clone, Copy)]
pub struct MetricDef {
    pub id: MetricId,
    pub unit: Unit,
    pub direction: Direction,
    pub phase: Phase,
    /// The statistic the value is of its samples (per rank for per-step metrics).
    pub statistic: Statistic,
    pub samples: Samples,
    pub tolerance: StartTolerance,
    /// Whether `baseline new` writes it gated (`false`: `gate = false`, reported only).
    pub gated: bool,
    /// A column of the sweep table.
    pub headline: bool,
    /// Per-step metrics: also report `p90`, the max over ranks of the per-rank 90th percentile.
    pub with_p90: bool,
    /// The kinds of run it is measured on.
    pub runs: Runs,
    /// One line for people: what the value is.
    pub meaning: &'static str,
    pub compute: Compute,
}

impl MetricDef {
    /// The metric's name.
    pub const fn name(&self) -> &'static str {
        self.id.name()
    }
}

impl std::fmt::Debug for MetricDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricDef")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// A metric of the registry. Variants are declared in the order of their names, so that the
/// derived order (and a `MetricMap`'s) is the names' order, as the JSON has always listed them;
/// [`MetricId::ALL`] is the registry's order. Serialises as its name.
///
/// Adding a metric: a variant here, its name in [`MetricId::name`], its place in
/// [`MetricId::ALL`], and its entry in `catalog.rs`; the compiler then lists every `match` that
/// must consider it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize)]
#[serde(into = "&'static str")]
pub enum MetricId {
    AllreduceRankRatio,
    AllreduceTransferUs,
    AllreduceUs,
    CommPct,
    DecodeHostGapMs,
    DecodeIterMs,
    DecodePhaseUtilPct,
    DecodeSlowMsPerIter,
    DecodeStallMsPerStep,
    DecodeStallPct,
    DecodeStepMs,
    DecodeStepP90Ms,
    DecodeTokensPerS,
    GpuUtilPct,
    IterationMs,
    MixedStepMs,
    MoeUsPerLayer,
    OtherPct,
    OverlapPct,
    PrefillCommPct,
    PrefillGpuUtilPct,
    PrefillStepMs,
    RankSkewMs,
    SpecDraftMs,
    SpecDraftPct,
    SpecVerifyMs,
    UnassignedPct,
}

impl MetricId {
    /// Every metric, in the order reports list them and `extract` computes them.
    pub const ALL: [MetricId; 27] = [
        MetricId::DecodeStepMs,
        MetricId::DecodeStepP90Ms,
        MetricId::DecodeIterMs,
        MetricId::DecodeHostGapMs,
        MetricId::DecodeSlowMsPerIter,
        MetricId::DecodeStallPct,
        MetricId::DecodeStallMsPerStep,
        MetricId::DecodeTokensPerS,
        // A ProfilerStep loop's: first of a loop's figures, absent from a serving run's.
        MetricId::IterationMs,
        MetricId::GpuUtilPct,
        MetricId::DecodePhaseUtilPct,
        MetricId::SpecDraftPct,
        MetricId::SpecDraftMs,
        MetricId::SpecVerifyMs,
        MetricId::CommPct,
        MetricId::AllreduceUs,
        MetricId::AllreduceTransferUs,
        MetricId::AllreduceRankRatio,
        MetricId::MoeUsPerLayer,
        MetricId::RankSkewMs,
        MetricId::OverlapPct,
        MetricId::OtherPct,
        MetricId::UnassignedPct,
        MetricId::PrefillStepMs,
        MetricId::PrefillGpuUtilPct,
        MetricId::PrefillCommPct,
        MetricId::MixedStepMs,
    ];

    /// The metric's name, as baselines, JSON and reports spell it.
    pub const fn name(self) -> &'static str {
        match self {
            MetricId::AllreduceRankRatio => "allreduce_rank_ratio",
            MetricId::AllreduceTransferUs => "allreduce_transfer_us",
            MetricId::AllreduceUs => "allreduce_us",
            MetricId::CommPct => "comm_pct",
            MetricId::DecodeHostGapMs => "decode_host_gap_ms",
            MetricId::DecodeIterMs => "decode_iter_ms",
            MetricId::DecodePhaseUtilPct => "decode_phase_util_pct",
            MetricId::DecodeSlowMsPerIter => "decode_slow_ms_per_iter",
            MetricId::DecodeStallMsPerStep => "decode_stall_ms_per_step",
            MetricId::DecodeStallPct => "decode_stall_pct",
            MetricId::DecodeStepMs => "decode_step_ms",
            MetricId::DecodeStepP90Ms => "decode_step_p90_ms",
            MetricId::DecodeTokensPerS => "decode_tokens_per_s",
            MetricId::GpuUtilPct => "gpu_util_pct",
            MetricId::IterationMs => "iteration_ms",
            MetricId::MixedStepMs => "mixed_step_ms",
            MetricId::MoeUsPerLayer => "moe_us_per_layer",
            MetricId::OtherPct => "other_pct",
            MetricId::OverlapPct => "overlap_pct",
            MetricId::PrefillCommPct => "prefill_comm_pct",
            MetricId::PrefillGpuUtilPct => "prefill_gpu_util_pct",
            MetricId::PrefillStepMs => "prefill_step_ms",
            MetricId::RankSkewMs => "rank_skew_ms",
            MetricId::SpecDraftMs => "spec_draft_ms",
            MetricId::SpecDraftPct => "spec_draft_pct",
            MetricId::SpecVerifyMs => "spec_verify_ms",
            MetricId::UnassignedPct => "unassigned_pct",
        }
    }

    /// The metric of a name, `None` for a name no metric has.
    pub fn from_name(name: &str) -> Option<MetricId> {
        MetricId::ALL.into_iter().find(|id| id.name() == name)
    }
}

impl From<MetricId> for &'static str {
    fn from(id: MetricId) -> &'static str {
        id.name()
    }
}

impl std::fmt::Display for MetricId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
