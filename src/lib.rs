//! tracegate: reads the PyTorch-profiler (Kineto) traces of an LLM inference profile run, extracts
//! the figures that matter and gates them against a per-hardware baseline.
//!
//! The pipeline runs one way: reader → taxonomy → steps → metrics → gate → report
//! (`docs/ARCHITECTURE.md`). [`pipeline`] strings the stages together; the items re-exported
//! here are the API a program embedding tracegate needs (`examples/library.rs`):
//!
//! ```no_run
//! use tracegate::{pipeline, AnalysisConfig, CheckOptions};
//! let paths = [std::path::PathBuf::from("traces/")];
//! let config = AnalysisConfig::default();
//! let run = pipeline::read_run(&paths, &config, &|_, _| {})?;
//! let baseline = pipeline::load_baseline("baselines/x.toml".as_ref())?;
//! let result = pipeline::check(&run, &paths, &config, &baseline, &CheckOptions::default())?;
//! std::process::exit(result.exit_code);
//! # Ok::<(), tracegate::PipelineError>(())
//! ```

pub(crate) mod analysis;
pub mod baseline;
pub mod cli;
pub(crate) mod confine;
pub mod exit;
pub(crate) mod files;
pub mod gate;
pub(crate) mod github;
pub(crate) mod identity;
pub(crate) mod inspect;
pub(crate) mod links;
pub mod metrics;
pub(crate) mod output;
pub mod pipeline;
pub mod reader;
pub(crate) mod report;
pub mod stats;
pub(crate) mod steps;
pub(crate) mod sweep;
pub mod synth;
pub mod taxonomy;
pub(crate) mod text;
pub(crate) mod units;

#[cfg(test)]
mod testing;

pub use analysis::RunAnalysis;
pub use baseline::{Baseline, BaselineError, Tolerance};
pub use gate::{CheckOptions, CheckResult, MetricCheck, Status, Verdict};
pub use metrics::{Extraction, Metric, MetricDef, METRICS};
pub use pipeline::{AnalysisConfig, PipelineError};
pub use reader::{ReadError, Run};
pub use report::Format;
pub use sweep::Sweep;
pub use synth::SynthOptions;
pub use taxonomy::{Category, Taxonomy};
pub use units::Unit;
