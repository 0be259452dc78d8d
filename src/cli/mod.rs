//! The command line: parses arguments and wires the pipeline (`crate::pipeline`) to the
//! renderers and to GitHub. No analysis here: each command's handler reads its inputs, calls the
//! pipeline, writes what it got and returns the exit status.

mod analyse;
pub mod args;
mod baseline;
mod demo;
mod gate;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use args::BaselineCommand;
pub use args::{Cli, Command};

/// Runs the parsed command and returns the exit status.
pub fn run(cli: Cli) -> Result<i32> {
    let max_memory = cli.max_memory.clone().or_else(|| {
        std::env::var("TRACEGATE_MAX_MEMORY")
            .ok()
            .filter(|v| !v.is_empty())
    });
    if let Some(text) = max_memory {
        let bytes =
            crate::reader::parse_size(&text).map_err(|e| anyhow::anyhow!("--max-memory: {e}"))?;
        crate::reader::set_memory_limit(Some(bytes));
    }
    if let Some(n) = cli.threads {
        crate::reader::set_threads(Some(n.into()));
        // Every later stage's parallel work too; it only fails if a pool already exists.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n.into())
            .build_global();
    }
    match cli.command {
        Command::Inspect(args) => analyse::inspect(args),
        Command::Extract(args) => analyse::extract(args),
        Command::Check(args) => gate::check(args),
        Command::Baseline(BaselineCommand::New(args)) => baseline::new(args),
        Command::Baseline(BaselineCommand::Update(args)) => baseline::update(args),
        Command::Synth(args) => demo::synth(args),
        Command::Demo(args) => demo::demo(args),
        Command::Report(args) => analyse::report(args),
        Command::Compare(args) => analyse::compare(args),
        Command::Sweep(args) => gate::sweep(args),
    }
}

pub(crate) fn write_output(text: &str, output: Option<&PathBuf>) -> Result<()> {
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
pub(crate) fn read_run(paths: &[PathBuf]) -> Result<crate::reader::Run> {
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "reading traces {bar:30} {pos}/{len} files {elapsed}",
        )
        .expect("valid template"),
    );
    let run = crate::pipeline::read_run(paths, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    Ok(run?)
}

/// In GitHub mode, the paths a workflow input may carry must stay in the job's directories.
pub(crate) fn confine_inputs(paths: &[(&'static str, Option<&PathBuf>)]) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    for (flag, path) in paths {
        if let Some(path) = path {
            crate::github::confine(flag, path, &env)?;
        }
    }
    Ok(())
}
