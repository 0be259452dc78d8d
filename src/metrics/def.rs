//! What a metric definition is (the registry's entry type) and the metric names; the table of
//! definitions is `catalog.rs`.

use serde::Serialize;

use super::compute::StepFigures;
use super::figures::{Context, RunFigures};
use super::{Direction, Metric, MetricMap};
use crate::stats::Statistic;
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
    pub name: &'static str,
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
    /// One line for people: what the value is.
    pub meaning: &'static str,
    pub compute: Compute,
}

impl std::fmt::Debug for MetricDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

pub const DECODE_STEP_MS: &str = "decode_step_ms";
pub const DECODE_STEP_P90_MS: &str = "decode_step_p90_ms";
pub const DECODE_STALL_PCT: &str = "decode_stall_pct";
pub const DECODE_STALL_MS_PER_STEP: &str = "decode_stall_ms_per_step";
pub const GPU_UTIL_PCT: &str = "gpu_util_pct";
pub const COMM_PCT: &str = "comm_pct";
pub const ALLREDUCE_US: &str = "allreduce_us";
pub const ALLREDUCE_TRANSFER_US: &str = "allreduce_transfer_us";
pub const ALLREDUCE_RANK_RATIO: &str = "allreduce_rank_ratio";
pub const MOE_US_PER_LAYER: &str = "moe_us_per_layer";
pub const RANK_SKEW_MS: &str = "rank_skew_ms";
pub const OVERLAP_PCT: &str = "overlap_pct";
pub const OTHER_PCT: &str = "other_pct";
pub const PREFILL_STEP_MS: &str = "prefill_step_ms";
pub const PREFILL_GPU_UTIL_PCT: &str = "prefill_gpu_util_pct";
pub const PREFILL_COMM_PCT: &str = "prefill_comm_pct";
pub const MIXED_STEP_MS: &str = "mixed_step_ms";
