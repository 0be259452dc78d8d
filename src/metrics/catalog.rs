//! The metric registry: one entry per metric, and everything every stage needs to know about it.
//!
//! `extract` computes the metrics in this order from these entries; the baseline reader validates
//! against them and the writer takes their starting tolerances; the gate takes each metric's
//! statistic and whether its samples can be resampled; the sweep takes its columns; `docs/METRICS.md`
//! and the synthetic truth are tested against it. Adding a metric is one entry here plus its
//! computation (a per-step figure in `compute.rs`, or a whole-run function in `run.rs`).

pub use super::def::*;
use super::run;
use super::Direction;
use crate::stats::Statistic;
use crate::units::Unit;

/// The defaults most entries share; each entry says what differs.
const BASE: MetricDef = MetricDef {
    id: MetricId::DecodeStepMs,
    unit: Unit::Ms,
    direction: Direction::Lower,
    phase: Phase::Decode,
    statistic: Statistic::Median,
    samples: Samples::PerStep,
    tolerance: StartTolerance::Fixed("5pp"),
    gated: true,
    headline: false,
    with_p90: false,
    runs: Runs::Serving,
    meaning: "",
    compute: Compute::PerStep {
        sample: |s, _| Some(s.wall_ms()),
        across: Across::Max,
    },
};

/// Every metric's entry, in the order of [`MetricId::ALL`]: the order reports list them and
/// `extract` computes them.
pub const METRICS: &[MetricDef] = &TABLE;

const TABLE: [MetricDef; MetricId::ALL.len()] = {
    let mut table = [BASE; MetricId::ALL.len()];
    let mut i = 0;
    while i < MetricId::ALL.len() {
        table[i] = entry(MetricId::ALL[i]);
        i += 1;
    }
    table
};

/// A metric's entry: one arm per metric, no default, so a new metric cannot go without one.
const fn entry(id: MetricId) -> MetricDef {
    let def = match id {
        MetricId::DecodeStepMs => MetricDef {
            tolerance: StartTolerance::Fixed("3%"),
            headline: true,
            with_p90: true,
            meaning: "wall of a decode step: median per rank, slowest rank",
            ..BASE
        },
        MetricId::IterationMs => MetricDef {
            tolerance: StartTolerance::Fixed("3%"),
            with_p90: true,
            runs: Runs::Loop,
            meaning: "iteration of a ProfilerStep loop: from the first GPU activity launched in \
                      one ProfilerStep#N to the next one's: median per rank, slowest rank",
            compute: Compute::Run(run::iteration_ms),
            ..BASE
        },
        MetricId::DecodeStepP90Ms => MetricDef {
            statistic: Statistic::P90,
            tolerance: StartTolerance::Fixed("5%"),
            meaning: "90th percentile of the decode step wall per rank, slowest rank: the tail a \
                      median hides (stalls, slow steps)",
            ..BASE
        },
        MetricId::DecodeStallPct => MetricDef {
            unit: Unit::Pct,
            statistic: Statistic::Mean,
            samples: Samples::Count,
            tolerance: StartTolerance::Fixed("10pp"),
            meaning: "decode steps that stalled (slow outliers, above 2x the median wall, which every \
                      per-step figure leaves out) / decode steps after warm-up: per rank, max over ranks",
            compute: Compute::Run(run::decode_stall_pct),
            ..BASE
        },
        MetricId::DecodeIterMs => MetricDef {
            tolerance: StartTolerance::Fixed("3%"),
            with_p90: true,
            meaning: "decode iteration: from one decode forward's start to the next one's (the \
                      forward plus the host time before the next, what a token costs): median per \
                      rank, slowest rank",
            compute: Compute::Run(run::decode_iter_ms),
            ..BASE
        },
        MetricId::DecodeHostGapMs => MetricDef {
            tolerance: StartTolerance::ShareOfValue {
                pct: 25.0,
                floor_ms: 0.5,
            },
            meaning: "GPU-idle time between consecutive decode forwards (host scheduling, sampling, \
                      Python between graph replays): median per rank, max over ranks",
            compute: Compute::Run(run::decode_host_gap_ms),
            ..BASE
        },
        MetricId::DecodeSlowMsPerIter => MetricDef {
            statistic: Statistic::Mean,
            samples: Samples::Count,
            tolerance: StartTolerance::ShareOfDecodeStep {
                pct: 2.5,
                floor_ms: 0.5,
            },
            meaning: "time slow decode iterations cost per iteration: those above 1.5x the median \
                      iteration (stalls included), each less the median, over the iterations: per \
                      rank, max over ranks",
            compute: Compute::Run(run::decode_slow_ms_per_iter),
            ..BASE
        },
        MetricId::DecodeTokensPerS => MetricDef {
            unit: Unit::TokPerS,
            direction: Direction::Higher,
            statistic: Statistic::Mean,
            samples: Samples::PerRank,
            tolerance: StartTolerance::Fixed("3%"),
            gated: false,
            meaning: "decode tokens per second: the decode batch (sequences per step) x 1000 / \
                      decode_iter_ms; report-only (the gate judges decode_iter_ms and the batch)",
            compute: Compute::Run(run::decode_tokens_per_s),
            ..BASE
        },
        MetricId::DecodePhaseUtilPct => MetricDef {
            unit: Unit::Pct,
            direction: Direction::Higher,
            gated: false,
            meaning: "GPU busy time / decode iteration (forward and the gap after it): median per \
                      rank, least busy rank; report-only, beside gpu_util_pct (inside forwards)",
            compute: Compute::Run(run::decode_phase_util_pct),
            ..BASE
        },
        MetricId::UnassignedPct => MetricDef {
            runs: Runs::Both,
            unit: Unit::Pct,
            statistic: Statistic::Mean,
            samples: Samples::Count,
            tolerance: StartTolerance::Fixed("2pp"),
            meaning: "kernel time in no step (no forward holds it) / the run's kernel time: per \
                      rank, max over ranks",
            compute: Compute::Run(run::unassigned_pct),
            ..BASE
        },
        MetricId::DecodeStallMsPerStep => MetricDef {
            statistic: Statistic::Mean,
            samples: Samples::Count,
            tolerance: StartTolerance::ShareOfDecodeStep {
                pct: 2.5,
                floor_ms: 0.5,
            },
            meaning: "time the stalls cost per decode step: the stalled steps' walls minus as many \
                      median walls, over the decode steps after warm-up: per rank, max over ranks",
            compute: Compute::Run(run::decode_stall_ms_per_step),
            ..BASE
        },
        MetricId::GpuUtilPct => MetricDef {
            runs: Runs::Both,
            unit: Unit::Pct,
            direction: Direction::Higher,
            tolerance: StartTolerance::Fixed("1pp"),
            headline: true,
            meaning: "busy time / wall of a decode step (a loop's iteration: its kernels' span), \
                      inside the forward (decode_phase_util_pct counts the gaps between forwards \
                      too): median per rank, least busy rank",
            compute: Compute::PerStep {
                sample: |s, _| s.gpu_util_pct(),
                across: Across::Min,
            },
            ..BASE
        },
        MetricId::SpecDraftPct => MetricDef {
            unit: Unit::Pct,
            tolerance: StartTolerance::Fixed("2pp"),
            meaning: "speculative decoding (EAGLE/MTP): the draft model's kernel time / the kernel \
                      time of the draft and verify forwards of an iteration: median per rank, max \
                      over ranks; absent without speculative iterations",
            compute: Compute::PerStep {
                sample: |s, _| s.spec_draft_pct(),
                across: Across::Max,
            },
            ..BASE
        },
        MetricId::SpecDraftMs => MetricDef {
            tolerance: StartTolerance::Fixed("5%"),
            gated: false,
            meaning: "speculative decoding: the draft forwards' own time in an iteration (the union \
                      of their spans; with spec_verify_ms it makes decode_step_ms): median per rank, \
                      slowest rank; report-only",
            compute: Compute::PerStep {
                sample: |s, _| s.spec.map(|p| p.draft_ns as f64 / 1e6),
                across: Across::Max,
            },
            ..BASE
        },
        MetricId::SpecVerifyMs => MetricDef {
            tolerance: StartTolerance::Fixed("5%"),
            gated: false,
            meaning: "speculative decoding: the target model's verify forward in an iteration (its \
                      wall): median per rank, slowest rank; report-only",
            compute: Compute::PerStep {
                sample: |s, _| s.spec.map(|p| p.verify_ns as f64 / 1e6),
                across: Across::Max,
            },
            ..BASE
        },
        MetricId::CommPct => MetricDef {
            runs: Runs::Both,
            unit: Unit::Pct,
            tolerance: StartTolerance::Fixed("1.5pp"),
            headline: true,
            meaning: "comm kernel time / kernel time of a decode step (a loop's iteration): median \
                      per rank, max over ranks",
            compute: Compute::PerStep {
                sample: |s, c| c.decode_comm.then(|| s.comm_pct()).flatten(),
                across: Across::Max,
            },
            ..BASE
        },
        MetricId::AllreduceUs => MetricDef {
            runs: Runs::Both,
            unit: Unit::Us,
            statistic: Statistic::Mean,
            samples: Samples::PerCall,
            tolerance: StartTolerance::Fixed("10%"),
            headline: true,
            meaning: "mean allreduce-class call of the kept decode steps (a loop's iterations), all \
                      ranks pooled",
            compute: Compute::Run(run::allreduce_us),
            ..BASE
        },
        MetricId::AllreduceTransferUs => MetricDef {
            unit: Unit::Us,
            statistic: Statistic::Mean,
            samples: Samples::PerCall,
            tolerance: StartTolerance::Fixed("10%"),
            meaning: "mean allreduce-class call net of waiting for the last rank (matched steps), all ranks pooled",
            compute: Compute::Run(run::allreduce_transfer_us),
            ..BASE
        },
        MetricId::AllreduceRankRatio => MetricDef {
            runs: Runs::Both,
            unit: Unit::Ratio,
            statistic: Statistic::Mean,
            samples: Samples::PerRank,
            tolerance: StartTolerance::Fixed("15%"),
            meaning: "max / min over ranks of the rank's mean allreduce call",
            compute: Compute::Run(run::allreduce_rank_ratio),
            ..BASE
        },
        MetricId::MoeUsPerLayer => MetricDef {
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
        MetricId::RankSkewMs => MetricDef {
            samples: Samples::PerStep,
            tolerance: StartTolerance::Fixed("0.25ms"),
            headline: true,
            meaning: "time per decode step ranks lose waiting for the slowest: per step, the wait in collectives of the rank that waits most minus the rank that waits least",
            compute: Compute::Run(run::rank_skew_ms),
            ..BASE
        },
        MetricId::OverlapPct => MetricDef {
            runs: Runs::Both,
            unit: Unit::Pct,
            direction: Direction::Higher,
            meaning: "share of comm time overlapped by compute in a decode step (a loop's \
                      iteration): median per rank, min over ranks",
            compute: Compute::PerStep {
                sample: |s, _| s.overlap_pct(),
                across: Across::Min,
            },
            ..BASE
        },
        MetricId::OtherPct => MetricDef {
            runs: Runs::Both,
            unit: Unit::Pct,
            tolerance: StartTolerance::Fixed("2pp"),
            meaning: "kernel time in category other (no rule knows the kernel) / kernel time of a \
                      decode step (a loop's iteration): median per rank, max over ranks",
            compute: Compute::PerStep {
                sample: |s, _| s.other_pct(),
                across: Across::Max,
            },
            ..BASE
        },
        MetricId::PrefillStepMs => MetricDef {
            phase: Phase::Prefill,
            tolerance: StartTolerance::Fixed("10%"),
            meaning: "wall of a prefill step: median per rank, slowest rank",
            ..BASE
        },
        MetricId::PrefillGpuUtilPct => MetricDef {
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
        MetricId::PrefillCommPct => MetricDef {
            unit: Unit::Pct,
            phase: Phase::Prefill,
            meaning: "comm kernel time / kernel time of a prefill step: median per rank, max over ranks",
            compute: Compute::PerStep {
                sample: |s, c| c.prefill_comm.then(|| s.comm_pct()).flatten(),
                across: Across::Max,
            },
            ..BASE
        },
        MetricId::MixedStepMs => MetricDef {
            phase: Phase::Mixed,
            tolerance: StartTolerance::Fixed("10%"),
            meaning: "wall of a mixed step (prefill and decode tokens in one forward, chunked \
                      prefill): median per rank, slowest rank",
            ..BASE
        },
    };
    MetricDef { id, ..def }
}

impl MetricId {
    /// The metric's registry entry.
    pub fn def(self) -> &'static MetricDef {
        &METRICS[POSITION[self as usize]]
    }
}

/// Each metric's place in [`MetricId::ALL`] (and in [`METRICS`]), by declaration order.
const POSITION: [usize; MetricId::ALL.len()] = {
    let mut position = [usize::MAX; MetricId::ALL.len()];
    let mut i = 0;
    while i < MetricId::ALL.len() {
        let d = MetricId::ALL[i] as usize;
        // A variant missing from `ALL` shifts a listed one past the end, which fails here.
        assert!(
            d < MetricId::ALL.len(),
            "a metric is missing from MetricId::ALL"
        );
        assert!(
            position[d] == usize::MAX,
            "a metric is twice in MetricId::ALL"
        );
        position[d] = i;
        i += 1;
    }
    position
};

/// The entry of a metric, by name.
pub(crate) fn def(name: &str) -> Option<&'static MetricDef> {
    MetricId::from_name(name).map(MetricId::def)
}

/// Names of every metric, in registry order.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    MetricId::ALL.into_iter().map(MetricId::name)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_tolerances_parse_in_their_unit() {
        let mut seen = std::collections::HashSet::new();
        for d in METRICS {
            assert!(seen.insert(d.name()), "{} twice", d.name());
            assert!(!d.meaning.is_empty(), "{} has no meaning", d.name());
            if let StartTolerance::Fixed(t) = d.tolerance {
                let t: crate::baseline::Tolerance = t.parse().unwrap();
                t.allowance(1.0, d.unit)
                    .unwrap_or_else(|e| panic!("{}: {e}", d.name()));
            }
            // A per-rank statistic other than the median needs per-step samples to mean anything.
            if matches!(d.samples, Samples::PerRank | Samples::Count) {
                assert!(matches!(d.compute, Compute::Run(_)), "{}", d.name());
            }
        }
        assert_eq!(MetricId::DecodeStepMs.def().unit, Unit::Ms);
        assert!(def("furlongs").is_none());
    }

    #[test]
    fn every_id_has_its_own_entry_name_and_serialises_as_its_name() {
        assert_eq!(METRICS.len(), MetricId::ALL.len());
        for (d, id) in METRICS.iter().zip(MetricId::ALL) {
            assert_eq!(d.id, id);
            assert_eq!(id.def().id, id);
            assert_eq!(MetricId::from_name(id.name()), Some(id));
            assert_eq!(
                serde_json::to_string(&id).unwrap(),
                format!("\"{}\"", id.name())
            );
        }
        assert_eq!(MetricId::from_name("furlongs"), None);
    }

    #[test]
    fn ids_order_as_their_names_so_the_json_order_is_unchanged() {
        let mut by_id = MetricId::ALL.to_vec();
        by_id.sort();
        let mut by_name = MetricId::ALL.to_vec();
        by_name.sort_by_key(|id| id.name());
        assert_eq!(by_id, by_name);
    }

    #[test]
    fn the_metrics_doc_defines_every_metric() {
        let doc = include_str!("../../docs/METRICS.md");
        for d in METRICS {
            let unit = match d.unit {
                Unit::Us => "µs",
                u => u.json(),
            };
            let row = format!("| `{}` | {unit} |", d.name());
            assert!(doc.contains(&row), "docs/METRICS.md has no row {row}");
        }
    }
}
