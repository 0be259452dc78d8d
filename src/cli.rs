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
