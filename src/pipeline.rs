//! The pipeline as a library: read → classify → steps → metrics (or the full analysis) → gate.
//!
//! Every command of the CLI is a thin wrapper over these functions; a program that embeds
//! tracegate calls them the same way (see `examples/library.rs`). Nothing here parses arguments,
//! prints or exits.

use std::path::{Path, PathBuf};

use crate::analysis::{AnalysisOptions, RunAnalysis};
use crate::baseline::{Baseline, BaselineError};
use crate::gate::{CheckOptions, CheckResult};
use crate::metrics::{ExtractOptions, Extraction, MetricsError};
use crate::reader::{ReadError, Run};
use crate::steps::DEFAULT_WARMUP_STEPS;
use crate::taxonomy::{Taxonomy, TaxonomyError};

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
    /// `warmup_steps` was asked for: not below a rank's decode steps is an error (see
    /// [`ExtractOptions::warmup_asked`]).
    pub warmup_asked: bool,
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
fn stage_done(stage: &'static str, run: &Run) -> Result<(), PipelineError> {
    crate::reader::check_stage(stage).map_err(|error| {
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

/// Reads the traces of one run (files or directories), in parallel; `on_file(done, total)` is
/// called as files finish.
pub fn read_run(
    paths: &[PathBuf],
    on_file: &(dyn Fn(usize, usize) + Sync),
) -> Result<Run, ReadError> {
    crate::reader::read_run_with_progress(paths, on_file)
}

/// The gated figures of a run already read, with a baseline's rules and MoE layers if given.
pub fn extract(
    run: &Run,
    paths: &[PathBuf],
    config: &AnalysisConfig,
    baseline: Option<&Baseline>,
) -> Result<Extraction, PipelineError> {
    let (taxonomy, options) = config.taxonomy_and_options(baseline)?;
    let classes = taxonomy.classify_run(run);
    stage_done("classifying kernels", run)?;
    let extraction = crate::metrics::extract(run, &classes, &options).map_err(|error| {
        PipelineError::Metrics {
            paths: describe_paths(paths),
            error,
        }
    })?;
    stage_done("computing the figures", run)?;
    Ok(extraction)
}

/// The full analysis of a run already read (`report`, `compare`): the gated figures where decode
/// steps exist, the whole trace otherwise.
pub fn analyse(run: &Run, config: &AnalysisConfig) -> Result<RunAnalysis, PipelineError> {
    let taxonomy = config.taxonomy()?;
    let classes = taxonomy.classify_run(run);
    stage_done("classifying kernels", run)?;
    // No decode step is not an error here: the analysis covers the whole trace instead.
    let extraction = crate::metrics::extract(run, &classes, &config.extract_options()).ok();
    stage_done("computing the figures", run)?;
    let options = AnalysisOptions {
        warmup_steps: config.warmup_steps,
        step_gap: config.step_gap,
    };
    let analysis = crate::analysis::analyse_run(run, &classes, extraction.as_ref(), &options);
    stage_done("analysing the run", run)?;
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
    let extraction = extract(run, paths, config, Some(baseline))?;
    let result = crate::gate::check(&extraction, baseline, options);
    stage_done("gating", run)?;
    Ok(result)
}

/// Reads a baseline file.
pub fn load_baseline(path: &Path) -> Result<Baseline, PipelineError> {
    Ok(Baseline::load(path)?)
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
