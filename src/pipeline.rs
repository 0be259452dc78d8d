//! The pipeline as a library: read → classify → steps → metrics (or the full analysis) → gate.
//!
//! Every command of the CLI is a thin wrapper over these functions (settings → `pipeline::x` →
//! a renderer → exit status; `.ci/layers.py` holds the CLI to it); a program that embeds
//! tracegate calls them the same way (see `examples/library.rs`). Nothing here parses arguments,
//! prints or exits, and nothing is process-wide: the limits of an analysis
//! ([`ReadLimits`]) travel in its [`AnalysisConfig`], and each call runs on a thread pool of its
//! own.

use std::path::{Path, PathBuf};

use crate::analysis::AnalysisOptions;
pub use crate::analysis::RunAnalysis;
use crate::baseline::{Baseline, BaselineError};
use crate::metrics::{ExtractOptions, Extraction, MetricsError};
use crate::reader::ReadError;
use crate::taxonomy::{Taxonomy, TaxonomyError};

mod baselines;
mod captures;

pub use crate::analysis::compare::Comparison;
pub use crate::gate::{CheckOptions, CheckResult, Status};
pub use crate::identity::{resolve as resolve_identity, Identity};
pub use crate::inspect::RunInspection;
/// The `--max-memory` watchdog, started by the command line from the first trace read.
pub(crate) use crate::reader::watch_memory;
pub use crate::reader::{parse_size, ReadLimits, Run};
pub use crate::steps::{segment::parse_duration, DEFAULT_WARMUP_STEPS};
pub use crate::sweep::Sweep;
pub use crate::synth::{
    scenario_names, Injection, InjectionKind, JitterMode, Layout, SynthError, SynthOptions,
    SynthSummary,
};
pub use baselines::{
    calibrate, calibrate_target, check_identity, new_baseline, update_baseline, BaselineText,
    BaselineWriteError, CalibrateSettings, NewSettings, Note, Progress, UpdateSettings,
    WriteSettings,
};
pub use captures::{capture_dirs, CaptureChoice, CAPTURE_DIR};

/// How a run is analysed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisConfig {
    /// Extra taxonomy rules (the format of the built-in `rules.toml`), tried before the built-in ones.
    pub rules: Option<PathBuf>,
    /// MoE layers of the model; counted from router launches when `None`.
    pub moe_layers: Option<u32>,
    /// Decode steps dropped at the start of each rank as warm-up.
    pub warmup_steps: usize,
    /// Count only NCCL-named kernels as communication, as Holistic Trace Analysis does.
    pub hta_comm: bool,
    /// The idle GPU time that separates forward passes, ns; chosen from the run when `None`.
    pub step_gap: Option<i64>,
    /// `warmup_steps` was asked for (`--warmup-steps N`): a count at or above the decode steps a
    /// rank found is an error, not silently no warm-up (which the default allows).
    pub warmup_asked: bool,
    /// Gate a run that holds only some of its ranks (`--partial-ranks`): the baseline records
    /// which, and a later run must hold the same ones. Without it the commands that gate refuse
    /// a partial run.
    pub partial_ranks: bool,
    /// Where graph captures are taken from, to give replayed kernels their op, shapes and
    /// Python scope.
    pub capture: CaptureChoice,
    /// Python scope frames per row of the model view (`--scope-depth`).
    pub scope_depth: usize,
    /// `--peak`: peak FLOP/s per dtype and HBM bandwidth over (or instead of) the device's
    /// datasheet table (`bf16=989T,hbm=4.8T`).
    pub peak: Option<String>,
    /// Memory, longest string and threads for this analysis alone: the reader and every stage
    /// after it run under them, on a thread pool built for the call.
    pub limits: ReadLimits,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        AnalysisConfig {
            rules: None,
            moe_layers: None,
            warmup_steps: DEFAULT_WARMUP_STEPS,
            hta_comm: false,
            step_gap: None,
            warmup_asked: false,
            partial_ranks: false,
            capture: CaptureChoice::default(),
            scope_depth: crate::analysis::code::scope::DEFAULT_DEPTH,
            peak: None,
            limits: ReadLimits::default(),
        }
    }
}

/// Why a run could not be analysed. Displays as one line naming the files.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Rules(#[from] TaxonomyError),
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    #[error(transparent)]
    Synth(#[from] crate::synth::SynthError),
    /// `--peak` that does not parse (the message names the flag).
    #[error("{0}")]
    Peak(String),
    #[error("no built-in baseline for scenario {scenario:?}; valid: {valid}")]
    NoShippedBaseline { scenario: String, valid: String },
    #[error(transparent)]
    Discovery(#[from] crate::baseline::discover::DiscoveryError),
    // The metrics error is part of the message, not a source: a chain of causes would print it
    // twice ("PATH: no decode step ...: no decode step ...").
    #[error("{paths}: {error}")]
    Metrics { paths: String, error: MetricsError },
    /// `--max-memory` passed in a stage after reading (part of the message, as above).
    #[error("{paths}: {error}")]
    Memory {
        paths: String,
        error: crate::reader::OverMemory,
    },
}

/// The end of a stage: an error when the process has held more than `--max-memory` so far.
fn stage_done(stage: &'static str, run: &Run, limits: &ReadLimits) -> Result<(), PipelineError> {
    limits.check_stage(stage).map_err(|error| {
        let mut files: Vec<PathBuf> = run.traces.iter().map(|t| t.file.clone()).collect();
        files.dedup();
        PipelineError::Memory {
            paths: describe_paths(&files),
            error,
        }
    })
}

impl AnalysisConfig {
    /// The taxonomy: built-in (or HTA-compatible) rules, after the `--rules` file's.
    pub fn taxonomy(&self) -> Result<Taxonomy, TaxonomyError> {
        let base = if self.hta_comm {
            Taxonomy::hta_compatible()
        } else {
            Taxonomy::builtin()
        };
        match &self.rules {
            Some(path) => base.with_rules_file(path),
            None => Ok(base),
        }
    }

    /// The options that change a figure, as a baseline records them (`[analysis]`).
    pub(crate) fn recorded_options(&self) -> crate::baseline::options::AnalysisOptions {
        crate::baseline::options::AnalysisOptions {
            warmup_steps: self.warmup_steps,
            hta_comm: self.hta_comm,
            step_gap: self.step_gap,
        }
    }

    /// `--peak` parsed.
    pub(crate) fn peak_override(
        &self,
    ) -> Result<Option<crate::analysis::roofline::PeakOverride>, PipelineError> {
        self.peak
            .as_deref()
            .map(crate::analysis::roofline::parse_peak)
            .transpose()
            .map_err(PipelineError::Peak)
    }

    pub fn extract_options(&self) -> ExtractOptions {
        ExtractOptions {
            warmup_steps: self.warmup_steps,
            moe_layers: self.moe_layers,
            step_gap: self.step_gap,
            warmup_asked: self.warmup_asked,
        }
    }

    /// This configuration with a baseline's own rules and MoE layer count where it has them.
    fn taxonomy_and_options(
        &self,
        baseline: Option<&Baseline>,
    ) -> Result<(Taxonomy, ExtractOptions), TaxonomyError> {
        let mut taxonomy = self.taxonomy()?;
        let mut options = self.extract_options();
        if let Some(b) = baseline {
            // The baseline's own [[rules]]: after --rules, before the built-in table.
            taxonomy = taxonomy.with_rules(b.taxonomy_rules()?);
            options.moe_layers = options.moe_layers.or(b.meta.moe_layers);
        }
        Ok((taxonomy, options))
    }
}

/// Reads the traces of one run (files or directories), in parallel under `config.limits`;
/// `on_file(done, total)` is called as files finish.
pub fn read_run(
    paths: &[PathBuf],
    config: &AnalysisConfig,
    on_file: &(dyn Fn(usize, usize) + Sync),
) -> Result<Run, ReadError> {
    crate::reader::read_run_with(paths, &config.limits, on_file)
}

/// For the commands that gate: a run missing some of its ranks is refused (exit 2, naming
/// them) unless `config.partial_ranks`, since the ranks present would be judged as the whole run.
pub fn require_whole(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
) -> Result<(), ReadError> {
    match &run.missing {
        Some(m) if !config.partial_ranks => Err(ReadError::missing_ranks(paths, m)),
        _ => Ok(()),
    }
}

/// The gated figures of a run already read, with a baseline's rules and MoE layers if given.
pub fn extract(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
    baseline: Option<&Baseline>,
) -> Result<Extraction, PipelineError> {
    config
        .limits
        .install(|| extract_here(run, paths, config, baseline))
}

/// [`extract`] on the caller's thread pool.
fn extract_here(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
    baseline: Option<&Baseline>,
) -> Result<Extraction, PipelineError> {
    let limits = &config.limits;
    let (taxonomy, options) = config.taxonomy_and_options(baseline)?;
    let classes = taxonomy.classify_run(run);
    stage_done("classifying kernels", run, limits)?;
    let extraction = crate::metrics::extract(run, &classes, &options).map_err(|error| {
        PipelineError::Metrics {
            paths: describe_paths(paths),
            error,
        }
    })?;
    stage_done("computing the figures", run, limits)?;
    Ok(extraction)
}

/// The full analysis of a run already read from `paths` (`report`, `compare`): the gated figures
/// where decode steps exist, the whole trace otherwise.
pub fn analyse(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
) -> Result<RunAnalysis, PipelineError> {
    config.limits.install(|| analyse_here(run, paths, config))
}

fn analyse_here(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
) -> Result<RunAnalysis, PipelineError> {
    let limits = &config.limits;
    let taxonomy = config.taxonomy()?;
    let classes = taxonomy.classify_run(run);
    stage_done("classifying kernels", run, limits)?;
    // No decode step is not an error here: the analysis covers the whole trace instead.
    let extraction = crate::metrics::extract(run, &classes, &config.extract_options()).ok();
    stage_done("computing the figures", run, limits)?;
    let options = AnalysisOptions {
        warmup_steps: config.warmup_steps,
        step_gap: config.step_gap,
        captures: captures::read_captures(run, paths, &config.capture)?,
        scope_depth: config.scope_depth,
        peak: config.peak_override()?,
    };
    let analysis = crate::analysis::analyse_run(run, &classes, extraction.as_ref(), &options);
    stage_done("analysing the run", run, limits)?;
    Ok(analysis)
}

/// A run against a baseline: extraction with the baseline's rules, then the gate.
pub fn check(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
    baseline: &Baseline,
    options: &CheckOptions,
) -> Result<CheckResult, PipelineError> {
    config.limits.install(|| {
        let extraction = extract_here(run, paths, config, Some(baseline))?;
        // What a pull request can edit beside the figures: the rules and the layer count.
        let file_rules = config.taxonomy()?.user_rules().to_vec();
        let baseline_rules = baseline.taxonomy_rules()?;
        let analysis = config.recorded_options();
        let edits = crate::gate::Edits {
            file_rules: &file_rules,
            baseline_rules: &baseline_rules,
            moe_layers: config.moe_layers,
            allow_override: options.allow_override,
            analysis: Some(&analysis),
        };
        let mut result = crate::gate::check(&extraction, baseline, options, &edits);
        stage_done("gating", run, &config.limits)?;
        result.explanation.site = lead_site(run, paths, config, &extraction, &result)?;
        Ok(result)
    })
}

/// The code behind the kernel the Why names: only that kernel's calls in the kept decode steps
/// are looked at, and the captures are read only when it was replayed from a graph.
fn lead_site(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
    extraction: &Extraction,
    result: &CheckResult,
) -> Result<Option<crate::analysis::code::lead::LeadSite>, PipelineError> {
    let Some(kernel) = result.explanation.cause.kernel() else {
        return Ok(None);
    };
    let captures = captures::read_captures(run, paths, &config.capture)?;
    let ids: Vec<Option<crate::reader::model::NameId>> =
        run.traces.iter().map(|t| t.names.lookup(kernel)).collect();
    let wanted = |t: usize, i: usize| {
        ids[t].is_some_and(|id| run.traces[t].gpu.get(i).is_some_and(|a| a.name == id))
    };
    let sites = crate::analysis::code::code_sites(run, &captures, &wanted);
    let peaks = crate::analysis::device_peaks(run, config.peak_override()?.as_ref());
    Ok(crate::analysis::code::lead::lead_site(
        run,
        &sites,
        &extraction.rank_steps,
        kernel,
        config.scope_depth,
        peaks.as_ref().ok(),
    ))
}

/// What a run holds, for `inspect`: files, ranks, event counts, steps found (no taxonomy).
pub fn inspect(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
) -> Result<RunInspection, PipelineError> {
    let inspection = config.limits.install(|| crate::inspect::inspect(run));
    // --max-memory holds after reading too.
    config
        .limits
        .check_stage("inspecting the run")
        .map_err(|error| PipelineError::Memory {
            paths: describe_paths(paths),
            error,
        })?;
    Ok(inspection)
}

/// Several runs analysed side by side (`compare`), in the order given, with their names.
pub fn compare(runs: &[(String, &RunAnalysis)]) -> Comparison {
    crate::analysis::compare::compare(runs)
}

/// Where `check` takes its baseline from.
#[derive(Debug, Clone, Copy)]
pub enum BaselineChoice<'a> {
    /// This file (`--baseline FILE`).
    File(&'a Path),
    /// The one baseline of `dir` that matches the run (`--baselines DIR`): its hardware
    /// (`hardware`, else the device the trace names), its ranks, the framework the trace tells,
    /// and every `keys` pair (`name=value`, matched against each baseline's `[meta]`).
    Discover {
        dir: &'a Path,
        hardware: Option<&'a str>,
        keys: &'a [String],
    },
}

/// The baseline a run is checked against, as `check` picks it. `env` reads the environment:
/// in a workflow (`GITHUB_WORKSPACE` set), a baseline of the directory that leads out of the
/// job's directories is refused.
pub fn select_baseline(
    run: &Run,
    choice: BaselineChoice<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Baseline, PipelineError> {
    use crate::baseline::discover::{discover_confined, parse_keys, RunIdentity};
    match choice {
        BaselineChoice::File(path) => load_baseline(path),
        BaselineChoice::Discover {
            dir,
            hardware,
            keys,
        } => {
            let identity = RunIdentity {
                hardware: hardware
                    .map(str::to_string)
                    .or_else(|| crate::metrics::run_device(run)),
                ranks: run.rank_indices().len(),
                framework: crate::identity::framework_of(run).map(str::to_string),
                keys: parse_keys(keys)?,
                batch: crate::steps::annotated_decode_batch(run),
            };
            Ok(discover_confined(dir, &identity, env)?)
        }
    }
}

/// The verdict files of a sweep merged into one verdict (`sweep`): `expect` names the
/// configurations that must be there (blank names are ignored), `run` is the identity of the
/// sweep's own run (`--image`, `--meta`).
pub fn sweep(paths: &[PathBuf], expect: &[String], run: Identity) -> Sweep {
    let expect: Vec<String> = expect
        .iter()
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect();
    crate::sweep::merge(paths, &expect).with_run(run)
}

/// Writes a synthetic run (`synth`), on a thread pool of `limits.threads`.
pub fn synth(
    options: &SynthOptions,
    out: &Path,
    limits: &ReadLimits,
) -> Result<SynthSummary, SynthError> {
    limits.install(|| crate::synth::generate_to_dir(options, out))
}

/// The built-in baseline of a synthetic scenario (`demo`): its file name and text.
pub fn shipped_baseline(scenario: &str) -> Result<(&'static str, &'static str), PipelineError> {
    crate::baseline::shipped::for_scenario(scenario).ok_or_else(|| {
        PipelineError::NoShippedBaseline {
            scenario: scenario.to_string(),
            valid: scenario_names().join(", "),
        }
    })
}

/// One run of `demo`: a synthetic run of `scenario` (seed 42, with `inject` if given) written
/// to `dir`, read and checked against the scenario's built-in baseline.
pub fn demo_run(
    scenario: &str,
    dir: &Path,
    inject: Option<&str>,
    config: &AnalysisConfig,
    on_file: &(dyn Fn(usize, usize) + Sync),
) -> Result<CheckResult, PipelineError> {
    let (file, text) = shipped_baseline(scenario)?;
    let injections = inject
        .map(str::parse::<Injection>)
        .transpose()?
        .into_iter()
        .collect();
    let options = SynthOptions {
        scenario: scenario.to_string(),
        seed: 42,
        injections,
        ..Default::default()
    };
    synth(&options, dir, &config.limits)?;
    let baseline = Baseline::parse(text, Path::new(file))?;
    let paths = [dir.to_path_buf()];
    let run = read_run(&paths, config, on_file)?;
    check(&run, &paths, config, &baseline, &CheckOptions::default())
}

/// Reads a baseline file.
pub fn load_baseline(path: &Path) -> Result<Baseline, PipelineError> {
    Ok(Baseline::load(path)?)
}

/// Checks a `--peak` value (`bf16=989T,hbm=4.8T`) as the command line reads it.
pub fn parse_peak_text(text: &str) -> Result<String, String> {
    crate::analysis::roofline::parse_peak(text).map(|_| text.to_string())
}

/// The paths of a run, for the head of an error message: the first three and how many more.
pub fn describe_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .take(3)
        .map(|p| p.display().to_string())
        .collect();
    let more = paths.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_described_by_the_first_three() {
        let p: Vec<PathBuf> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(describe_paths(&p), "a, b, c and 2 more");
        assert_eq!(describe_paths(&p[..1]), "a");
    }
}
