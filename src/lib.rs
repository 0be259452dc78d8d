//! tracegate reads the PyTorch-profiler (Kineto) traces of an LLM inference profile run, extracts
//! the figures that matter (decode step time, communication share, MoE and attention time...) and
//! gates them against a per-hardware baseline.
//!
//! # The library in one page
//!
//! The stages run one way: read → classify → steps → metrics → gate → report
//! (`docs/ARCHITECTURE.md`). A program drives them through [`pipeline`], which does what the
//! command line does, without parsing arguments, printing or exiting:
//!
//! 1. [`pipeline::read_run`] reads a run (trace files or directories) into a [`Run`];
//! 2. [`pipeline::extract`] computes its figures, an [`Extraction`]: one [`Metric`] for each entry
//!    of the registry [`METRICS`] the run can produce, each with its per-step samples;
//!    [`pipeline::analyse`] gives the whole [`RunAnalysis`] that `report` and `compare` print;
//! 3. [`pipeline::load_baseline`] (or [`Baseline::parse`]) reads a [`Baseline`];
//! 4. [`pipeline::check`] gates the run against it: a [`CheckResult`] holding a [`Verdict`] per
//!    metric, the overall [`Status`] and its exit code ([`exit`]: 0 pass, 1 regression,
//!    2 cannot judge).
//!
//! [`AnalysisConfig`] and [`CheckOptions`] carry the settings (`--rules`, `--warmup-steps`,
//! `--moe-layers`...); every error is a [`PipelineError`] that displays as one line naming the
//! file. Figures are written with their [`Unit`]; reports come in each [`Format`].
//!
//! # Example
//!
//! A synthetic run (the same generator as `tracegate synth`), a baseline made from its own step
//! time, then a run with a slowed allreduce gated against it:
//!
//! ```
//! use tracegate::{exit, pipeline, AnalysisConfig, Baseline, CheckOptions, MetricId, SynthOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let synth = |name: &str, inject: &[&str]| -> Result<std::path::PathBuf, Box<dyn std::error::Error>> {
//!     let mut opts = SynthOptions::new("mi355x-dsr1-fp4-tp4");
//!     opts.decode_steps = 12;
//!     opts.python_functions_per_step = 0;
//!     opts.gzip_level = None;
//!     for spec in inject {
//!         opts.injections.push(spec.parse()?);
//!     }
//!     let out = dir.path().join(name);
//!     tracegate::generate_synth_run(&opts, &out)?;
//!     Ok(out)
//! };
//! let config = AnalysisConfig::default();
//!
//! // Read a run and extract its figures: every metric of the registry the run produces.
//! let clean = [synth("clean", &[])?];
//! let run = pipeline::read_run(&clean, &config, &|_done, _total| {})?;
//! let extraction = pipeline::extract(&run, &clean, &config, None)?;
//! let step = MetricId::DecodeStepMs;
//! let value = extraction.metrics[&step].value;
//! println!("{step}: {}", step.def().unit.figure(value));
//!
//! // A baseline is TOML (`tracegate baseline new` writes one): the hardware and rank count it
//! // is of and, per metric, the value and how far it may move.
//! let toml = format!(
//!     "[meta]\nhardware = \"{}\"\ntp = {}\n\n[metrics.{}]\nvalue = {value}\ntolerance = \"3%\"\n",
//!     extraction.run.device.as_deref().unwrap_or_default(),
//!     extraction.run.ranks.len(),
//!     step.name(),
//! );
//! let baseline = Baseline::parse(&toml, "baseline.toml".as_ref())?;
//!
//! // The run the baseline came from passes...
//! let result = pipeline::check(&run, &clean, &config, &baseline, &CheckOptions::default())?;
//! assert_eq!(result.exit_code, exit::PASS, "{}", result.summary);
//!
//! // ...and one whose allreduce is twice as slow is a regression.
//! let slow = [synth("slow", &["allreduce=2"])?];
//! let run = pipeline::read_run(&slow, &config, &|_, _| {})?;
//! let result = pipeline::check(&run, &slow, &config, &baseline, &CheckOptions::default())?;
//! assert_eq!(result.exit_code, exit::REGRESSION, "{}", result.summary);
//! # Ok(())
//! # }
//! ```
//!
//! The command line is [`run_cli`]; `examples/library.rs` is a program that embeds the library.
//!
//! # Features
//!
//! `testing` makes `tracegate::testing` public: the lower-level readers and helpers the integration tests
//! drive directly. It is not part of the API and may change at any time.

#![warn(unreachable_pub)]

// `pub(crate)` by default: an item is `pub` only when it is part of the API below (or of
// `testing`), and `unreachable_pub` says so when it is not.

pub(crate) mod analysis;
pub(crate) mod baseline;
pub(crate) mod cli;
pub(crate) mod confine;
pub mod exit;
pub(crate) mod files;
pub(crate) mod gate;
pub(crate) mod github;
pub(crate) mod identity;
pub(crate) mod inspect;
pub(crate) mod links;
pub(crate) mod metrics;
pub(crate) mod output;
pub mod pipeline;
pub(crate) mod reader;
pub(crate) mod report;
pub(crate) mod stats;
pub(crate) mod steps;
pub(crate) mod sweep;
pub(crate) mod synth;
pub(crate) mod taxonomy;
pub(crate) mod text;
pub(crate) mod units;

#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;

// The public API: the pipeline, its settings, its results and errors (22 items with the two
// modules above). Everything else is `pub(crate)`; a type reachable only through these (a field's
// type, say) is nameable by a program through the field, not by path.

// Reading a run.
pub use reader::{ReadError, Run};
// Settings and errors of every pipeline stage.
pub use pipeline::{AnalysisConfig, PipelineError};
// The registry of metrics (one `MetricId` per metric, its `MetricDef` from `MetricId::def`) and
// the extracted figures, keyed by `MetricId`.
pub use metrics::{Extraction, Metric, MetricDef, MetricId, METRICS};
// The full analysis (`report`, `compare`).
pub use analysis::RunAnalysis;
// Baselines.
pub use baseline::Baseline;
// The gate.
pub use gate::{CheckOptions, CheckResult, Status, Verdict};
// How figures and reports are written.
pub use report::Format;
pub use units::Unit;
// Synthetic runs: `tracegate synth` as a function.
pub use synth::{generate_to_dir as generate_synth_run, JitterMode, SynthOptions};

/// The `tracegate` command line: parses `std::env::args`, runs the command and returns the exit
/// status ([`exit`]); an error that ends the command is printed on stderr (status 2).
pub fn run_cli() -> i32 {
    let cli = cli::Cli::parse_args();
    match cli::run(cli) {
        Ok(status) => status,
        Err(e) => {
            // Never a panic when stderr cannot be written: the status is the answer.
            cli::print_error(&e);
            exit::CANNOT_JUDGE
        }
    }
}
