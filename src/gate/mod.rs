//! The gate: a run's metrics against a baseline, metric by metric, into one verdict.
//!
//! Deciding is kept apart from measuring (metrics) and from reporting (report), as criterion
//! keeps its analysis apart from its harness.

pub mod check;
pub mod explain;
pub mod verdict;

pub use check::{
    check, CalibrationNote, CheckOptions, CheckResult, DecodePoint, DecodeSeries, PointKind, Status,
};
pub use verdict::{judge, judge_widened, Judgement, MetricCheck, Observation, Verdict};
