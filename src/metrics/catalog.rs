//! The metric registry: one entry per metric, and everything every stage needs to know about it.
//!
//! `extract` computes the metrics in this order from these entries; the baseline reader validates
//! against them and the writer takes their starting tolerances; the gate takes each metric's
//! statistic and whether its samples can be resampled; the sweep takes its columns; `docs/METRICS.md`
//! and the synthetic truth are tested against it. Adding a metric is one entry here plus its
//! computation (a per-step figure in `compute.rs`, or a whole-run function in `run.rs`).

use serde::Serialize;

use super::compute::StepFigures;
use super::run::{self, Context, RunFigures};
use super::{Direction, Metric, MetricMap};
use crate::stats::Statistic;
use crate::units::Unit;

/// Which steps a metric is measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Decode,
    Prefill,
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
    Run(fn(&RunFigures<'_>, &MetricMap) -> Option<Metric>),
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
pub const GPU_UTIL_PCT: &str = "gpu_util_pct";
pub const COMM_PCT: &str = "comm_pct";
pub const ALLREDUCE_US: &str = "allreduce_us";
pub const ALLREDUCE_TRANSFER_US: &str = "allreduce_transfer_us";
pub const ALLREDUCE_RANK_RATIO: &str = "allreduce_rank_ratio";
pub const MOE_US_PER_LAYER: &str = "moe_us_per_layer";
pub const RANK_SKEW_MS: &str = "rank_skew_ms";
pub const OVERLAP_PCT: &str = "overlap_pct";
pub const PREFILL_STEP_MS: &str = "prefill_step_ms";
pub const PREFILL_GPU_UTIL_PCT: &str = "prefill_gpu_util_pct";
pub const PREFILL_COMM_PCT: &str = "prefill_comm_pct";

/// The defaults most entries share; each entry says what differs.
const BASE: MetricDef = MetricDef {
    name: "",
    unit: Unit::Ms,
    direction: Direction::Lower,
    phase: Phase::Decode,
    statistic: Statistic::Median,
    samples: Samples::PerStep,
    tolerance: StartTolerance::Fixed("5pp"),
    gated: true,
    headline: false,
    with_p90: false,
    meaning: "",
    compute: Compute::PerStep {
        sample: |s, _| Some(s.wall_ms()),
        across: Across::Max,
    },
};

/// Every metric, in the order reports list them and `extract` computes them.
pub const METRICS: &[MetricDef] = &[
    MetricDef {
        name: DECODE_STEP_MS,
        tolerance: StartTolerance::Fixed("3%"),
        headline: true,
        with_p90: true,
        meaning: "wall of a decode step: median per rank, slowest rank",
        ..BASE
    },
    MetricDef {
        name: GPU_UTIL_PCT,
        unit: Unit::Pct,
        direction: Direction::Higher,
        tolerance: StartTolerance::Fixed("1pp"),
        headline: true,
        meaning: "busy time / wall of a decode step: median per rank, least busy rank",
        compute: Compute::PerStep {
            sample: |s, _| s.gpu_util_pct(),
            across: Across::Min,
        },
        ..BASE
    },
    MetricDef {
        name: COMM_PCT,
        unit: Unit::Pct,
        tolerance: StartTolerance::Fixed("1.5pp"),
        headline: true,
        meaning: "comm kernel time / kernel time of a decode step: median per rank, max over ranks",
        compute: Compute::PerStep {
            sample: |s, c| c.decode_comm.then(|| s.comm_pct()).flatten(),
            across: Across::Max,
        },
        ..BASE
    },
    MetricDef {
        name: ALLREDUCE_US,
        unit: Unit::Us,
        statistic: Statistic::Mean,
        samples: Samples::PerCall,
        tolerance: StartTolerance::Fixed("10%"),
        headline: true,
        meaning: "mean allreduce-class call of the kept decode steps, all ranks pooled",
        compute: Compute::Run(run::allreduce_us),
        ..BASE
    },
    MetricDef {
        name: ALLREDUCE_TRANSFER_US,
        unit: Unit::Us,
        statistic: Statistic::Mean,
        samples: Samples::PerCall,
        tolerance: StartTolerance::Fixed("10%"),
        meaning: "mean allreduce-class call net of waiting for the last rank (matched steps), all ranks pooled",
        compute: Compute::Run(run::allreduce_transfer_us),
        ..BASE
    },
    MetricDef {
        name: ALLREDUCE_RANK_RATIO,
        unit: Unit::Ratio,
        statistic: Statistic::Mean,
        samples: Samples::PerRank,
        tolerance: StartTolerance::Fixed("15%"),
        meaning: "max / min over ranks of the rank's mean allreduce call",
        compute: Compute::Run(run::allreduce_rank_ratio),
        ..BASE
    },
    MetricDef {
        name: MOE_US_PER_LAYER,
        unit: Unit::Us,
        tolerance: StartTolerance::Fixed("5%"),
        headline: true,
        meaning: "moe_gemm kernel time of a decode step / MoE layers: median per rank, max over ranks",
        compute: Compute::PerStep {
            sample: |s, c| Some(s.moe_gemm_ns as f64 / 1e3 / c.moe_layers?),
            across: Across::Max,
        },
        ..BASE
    },
    MetricDef {
        name: RANK_SKEW_MS,
        samples: Samples::PerStep,
        tolerance: StartTolerance::Fixed("0.25ms"),
        headline: true,
        meaning: "time per decode step ranks lose waiting for the slowest: per step, the wait in collectives of the rank that waits most minus the rank that waits least",
        compute: Compute::Run(run::rank_skew_ms),
        ..BASE
    },
    MetricDef {
        name: OVERLAP_PCT,
        unit: Unit::Pct,
        direction: Direction::Higher,
        meaning: "share of comm time overlapped by compute in a decode step: median per rank, min over ranks",
        compute: Compute::PerStep {
            sample: |s, _| s.overlap_pct(),
            across: Across::Min,
        },
        ..BASE
    },
    MetricDef {
        name: PREFILL_STEP_MS,
        phase: Phase::Prefill,
        tolerance: StartTolerance::Fixed("10%"),
        meaning: "wall of a prefill step: median per rank, slowest rank",
        ..BASE
    },
    MetricDef {
        name: PREFILL_GPU_UTIL_PCT,
        unit: Unit::Pct,
        direction: Direction::Higher,
        phase: Phase::Prefill,
        meaning: "busy time / wall of a prefill step: median per rank, least busy rank",
        compute: Compute::PerStep {
            sample: |s, _| s.gpu_util_pct(),
            across: Across::Min,
        },
        ..BASE
    },
    MetricDef {
        name: PREFILL_COMM_PCT,
        unit: Unit::Pct,
        phase: Phase::Prefill,
        meaning: "comm kernel time / kernel time of a prefill step: median per rank, max over ranks",
        compute: Compute::PerStep {
            sample: |s, c| c.prefill_comm.then(|| s.comm_pct()).flatten(),
            across: Across::Max,
        },
        ..BASE
    },
];

/// The entry of a metric, by name.
pub fn def(name: &str) -> Option<&'static MetricDef> {
    METRICS.iter().find(|d| d.name == name)
}

/// Names of every metric, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> {
    METRICS.iter().map(|d| d.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_tolerances_parse_in_their_unit() {
        let mut seen = std::collections::HashSet::new();
        for d in METRICS {
            assert!(seen.insert(d.name), "{} twice", d.name);
            assert!(!d.meaning.is_empty(), "{} has no meaning", d.name);
            if let StartTolerance::Fixed(t) = d.tolerance {
                let t: crate::baseline::Tolerance = t.parse().unwrap();
                t.allowance(1.0, d.unit)
                    .unwrap_or_else(|e| panic!("{}: {e}", d.name));
            }
            // A per-rank statistic other than the median needs per-step samples to mean anything.
            if d.samples == Samples::PerRank {
                assert!(matches!(d.compute, Compute::Run(_)), "{}", d.name);
            }
        }
        assert_eq!(def(DECODE_STEP_MS).unwrap().unit, Unit::Ms);
        assert!(def("furlongs").is_none());
    }

    #[test]
    fn the_metrics_doc_defines_every_metric() {
        let doc = include_str!("../../docs/METRICS.md");
        for d in METRICS {
            let unit = match d.unit {
                Unit::Us => "µs",
                u => u.json(),
            };
            let row = format!("| `{}` | {unit} |", d.name);
            assert!(doc.contains(&row), "docs/METRICS.md has no row {row}");
        }
    }
}
