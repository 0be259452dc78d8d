//! The gate: a run's metrics against a baseline, metric by metric, into one verdict.
//!
//! Deciding is kept apart from measuring (metrics) and from reporting (report), as criterion
//! keeps its analysis apart from its harness.

pub(crate) mod check;
pub(crate) mod configuration;
pub(crate) mod explain;
pub(crate) mod integrity;
pub(crate) mod verdict;

pub(crate) use check::{check, DecodePoint, DecodeSeries, PointKind};
pub use check::{CheckOptions, CheckResult, Status};
pub(crate) use integrity::Edits;
pub(crate) use verdict::MetricCheck;
pub use verdict::Verdict;
