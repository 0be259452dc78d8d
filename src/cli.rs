//! The command line: parses arguments and wires the pipeline stages together. No analysis here.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::exit;
use crate::report::Format;

#[derive(Debug, Parser)]
#[command(
    name = "tracegate",
    version,
    about = "Guards LLM inference performance: reads PyTorch-profiler traces of every rank, extracts the figures that matter and gates them against a per-hardware baseline."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What the reader finds in each rank: devices, streams, launches, graph replays, Input Dims.
    Inspect(InspectArgs),
    /// The gated figures of a run: decode step time, utilization, comm share, allreduce, MoE...
    Extract(ExtractArgs),
}

/// How a run is analysed; shared by the commands that compute metrics.
#[derive(Debug, Args)]
pub struct AnalysisArgs {
    /// Extra taxonomy rules (TOML, the format of the built-in rules.toml), tried first.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// MoE layers of the model (else counted from router launches).
    #[arg(long, value_name = "N")]
    pub moe_layers: Option<u32>,
    /// Decode steps dropped at the start of each rank as warm-up.
    #[arg(long, value_name = "N", default_value_t = crate::steps::DEFAULT_WARMUP_STEPS)]
    pub warmup_steps: usize,
    /// Count only NCCL-named kernels as communication, as Holistic Trace Analysis does.
    #[arg(long)]
    pub hta_comm: bool,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// Runs the parsed command and returns the exit status.
pub fn run(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Inspect(args) => inspect(args),
        Command::Extract(args) => extract(args),
    }
}

fn write_output(text: &str, output: Option<&PathBuf>) -> Result<()> {
    match output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a message.
            match stdout.write_all(text.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("cannot write to standard output"),
            }
        }
    }
}

/// Reads a run, showing a progress bar on a terminal (nothing when stderr is not one).
pub fn read_run(paths: &[PathBuf]) -> Result<crate::reader::Run> {
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "reading traces {bar:30} {pos}/{len} files {elapsed}",
        )
        .expect("valid template"),
    );
    let run = crate::reader::read_run_with_progress(paths, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    Ok(run?)
}

fn inspect(args: InspectArgs) -> Result<i32> {
    let run = read_run(&args.paths)?;
    let inspection = crate::inspect::inspect(&run);
    write_output(
        &crate::report::inspect::render(&inspection, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}

impl AnalysisArgs {
    pub fn taxonomy(&self) -> Result<crate::taxonomy::Taxonomy> {
        let base = if self.hta_comm {
            crate::taxonomy::Taxonomy::hta_compatible()
        } else {
            crate::taxonomy::Taxonomy::builtin()
        };
        Ok(match &self.rules {
            Some(path) => base.with_rules_file(path)?,
            None => base,
        })
    }

    pub fn options(&self) -> crate::metrics::ExtractOptions {
        crate::metrics::ExtractOptions {
            warmup_steps: self.warmup_steps,
            moe_layers: self.moe_layers,
        }
    }
}

/// Reads and analyses a run: the reader, the taxonomy, steps and metrics.
pub fn analyse(paths: &[PathBuf], analysis: &AnalysisArgs) -> Result<crate::metrics::Extraction> {
    let taxonomy = analysis.taxonomy()?;
    let run = read_run(paths)?;
    let classes = taxonomy.classify_run(&run);
    let described = describe_paths(paths);
    crate::metrics::extract(&run, &classes, &analysis.options()).with_context(|| described)
}

/// The paths of a run, for the head of an error message.
fn describe_paths(paths: &[PathBuf]) -> String {
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

fn extract(args: ExtractArgs) -> Result<i32> {
    let extraction = analyse(&args.paths, &args.analysis)?;
    write_output(
        &crate::report::extract::render(&extraction, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}
