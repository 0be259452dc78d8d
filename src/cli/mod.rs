//! The command line: parses arguments and wires the pipeline (`crate::pipeline`) to the
//! renderers and to GitHub. No analysis here: each command's handler reads its inputs, calls the
//! pipeline, writes what it got and returns the exit status.

mod analyse;
pub(crate) mod args;
mod baseline;
mod demo;
mod gate;

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::pipeline;
use args::BaselineCommand;
pub(crate) use args::{Cli, Command};

/// Runs the parsed command and returns the exit status.
pub(crate) fn run(cli: Cli) -> Result<i32> {
    let limits = limits(&cli)?;
    match cli.command {
        Command::Inspect(args) => analyse::inspect(args, limits),
        Command::Extract(args) => analyse::extract(args, limits),
        Command::Check(args) => gate::check(args, limits),
        Command::Baseline(BaselineCommand::New(args)) => baseline::new(args, limits),
        Command::Baseline(BaselineCommand::Update(args)) => baseline::update(args, limits),
        Command::Baseline(BaselineCommand::Calibrate(args)) => baseline::calibrate(args, limits),
        Command::Synth(args) => demo::synth(args, limits),
        Command::Demo(args) => demo::demo(args, limits),
        Command::Report(args) => analyse::report(args, limits),
        Command::Compare(args) => analyse::compare(args, limits),
        Command::Sweep(args) => gate::sweep(args),
    }
}

/// `--max-memory`, `--max-string` (or their environment variables) and `--threads`: the limits
/// every analysis of this command runs under, handed to the pipeline inside its configuration.
fn limits(cli: &Cli) -> Result<pipeline::ReadLimits> {
    let from_env = |flag: &Option<String>, var: &str| {
        flag.clone()
            .or_else(|| std::env::var(var).ok().filter(|v| !v.is_empty()))
    };
    let size = |text: Option<String>, flag: &str| -> Result<Option<u64>> {
        text.map(|t| pipeline::parse_size(&t).map_err(|e| anyhow::anyhow!("{flag}: {e}")))
            .transpose()
    };
    let mut limits = pipeline::ReadLimits {
        memory: size(
            from_env(&cli.max_memory, "TRACEGATE_MAX_MEMORY"),
            "--max-memory",
        )?,
        threads: cli.threads.map(usize::from),
        ..Default::default()
    };
    if let Some(bytes) = size(
        from_env(&cli.max_string, "TRACEGATE_MAX_STRING"),
        "--max-string",
    )? {
        limits.max_string = bytes;
    }
    Ok(limits)
}

/// `tracegate: error: ...` on stderr for an error that ends the command; a failed write is
/// ignored (the exit status says it), never a panic.
pub(crate) fn print_error(e: &anyhow::Error) {
    crate::output::note(&format!("error: {e:#}"));
}

/// Writes a command's output to `output` or stdout. For the commands whose output is the answer
/// (`extract`, `report`, `compare`, `inspect`...), a failed write is an error.
pub(crate) fn write_output(text: &str, output: Option<&PathBuf>) -> Result<()> {
    match output {
        Some(path) => write_atomically(path, text.as_bytes())
            .with_context(|| format!("{}: cannot write", path.display())),
        None => crate::output::try_stdout(text).context("cannot write to standard output"),
    }
}

/// Writes the report of a verdict (`check`, `sweep`, `demo`): to `output` as [`write_output`]
/// does, or to stdout, where a failed write is a warning on stderr and the exit status stays the
/// verdict's. With `runner` (GitHub mode) the report on stdout is wrapped so that the Actions
/// runner runs no command in it ([`crate::output::wrap_for_runner`]).
pub(crate) fn write_verdict_output(
    text: &str,
    output: Option<&PathBuf>,
    runner: bool,
) -> Result<()> {
    match output {
        Some(_) => write_output(text, output),
        None if runner => {
            crate::output::stdout(&crate::output::wrap_for_runner(text));
            Ok(())
        }
        None => {
            crate::output::stdout(text);
            Ok(())
        }
    }
}

/// The bar of files read, drawn on a terminal (nothing when stderr is not one).
fn progress_bar() -> indicatif::ProgressBar {
    indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "reading traces {bar:30} {pos}/{len} files {elapsed}",
        )
        .expect("valid template"),
    )
}

/// Reads a run, showing a progress bar on a terminal.
pub(crate) fn read_run(
    paths: &[PathBuf],
    config: &pipeline::AnalysisConfig,
) -> Result<pipeline::Run> {
    watch_memory(paths, &config.limits);
    let bar = progress_bar();
    let run = pipeline::read_run(paths, config, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    let run = run?;
    // A capture directory, given or found beside the traces, is an input like a trace.
    for dir in pipeline::capture_dirs(paths, &config.capture) {
        confine_paths(&[("--capture", Some(&dir))], &[])?;
    }
    Ok(run)
}

/// From the first run read on, `--max-memory` is watched for the rest of the command (analysis,
/// report, comment): past it, exit 2 naming the run, whichever allocation grew.
fn watch_memory(paths: &[PathBuf], limits: &pipeline::ReadLimits) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    let Some(limit) = limits.memory.filter(|&l| l > 0) else {
        return;
    };
    let run = pipeline::describe_paths(paths);
    STARTED.call_once(|| {
        pipeline::watch_memory(limit, move |held| {
            crate::output::note(&format!(
                "error: {run}: stopped after tracegate grew past the limit: it holds {}, over the \
                 --max-memory limit of {}",
                crate::units::bytes(held),
                crate::units::bytes(limit)
            ));
            std::process::exit(crate::exit::CANNOT_JUDGE)
        });
    });
}

/// Whenever `GITHUB_WORKSPACE` is set (a workflow step, `--github` or not), the paths a workflow
/// input may carry stay in the job's directories, and an output is never a symlink.
pub(crate) fn confine_paths(
    inputs: &[(&'static str, Option<&PathBuf>)],
    outputs: &[(&'static str, Option<&PathBuf>)],
) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    for (flag, path) in inputs {
        if let Some(path) = path {
            // Everywhere, not only in a workflow: a device or a FIFO is refused before any work.
            crate::confine::check_not_special(path)
                .with_context(|| format!("{flag} {}", path.display()))?;
            crate::confine::confine(flag, path, &env)?;
        }
    }
    for (flag, path) in outputs {
        if let Some(path) = path {
            // A FIFO or a device would block the job or take the output anywhere.
            crate::confine::check_output(path)
                .with_context(|| format!("{flag} {}", path.display()))?;
            crate::confine::confine_output(flag, path, &env)?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename, so that
/// a crash, a kill or a full disk never leaves half a file where a whole one was.
pub(crate) fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    // A FIFO, a socket or a device is refused (writing could block the job); `/dev/null` is
    // written to, never replaced.
    crate::confine::check_output(path)?;
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return std::fs::write(path, bytes);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    let temp = dir.join(format!(".{name}.tracegate-{}.tmp", std::process::id()));
    let result = std::fs::File::create(&temp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::write_atomically;

    #[cfg(unix)]
    #[test]
    fn an_atomic_write_replaces_the_file_whole_and_leaves_no_temporary() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baseline.toml");
        std::fs::write(&path, "old").unwrap();
        let before = std::fs::metadata(&path).unwrap().ino();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        // A new file renamed over the old one: a reader sees one or the other, never a mix.
        assert_ne!(std::fs::metadata(&path).unwrap().ino(), before);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
        // A write that cannot happen leaves nothing behind.
        assert!(write_atomically(&dir.path().join("missing/x.toml"), b"x").is_err());
        assert!(!dir.path().join("missing").exists());
        // A device is written to, never replaced.
        write_atomically(std::path::Path::new("/dev/null"), b"x").unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
    }
}
