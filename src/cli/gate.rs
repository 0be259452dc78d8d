//! `check` and `sweep`: the commands whose exit status is a verdict.

use anyhow::{Context, Result};

use super::args::{CheckArgs, GithubArgs, SweepArgs};
use super::{confine_paths, read_run, write_output, write_verdict_output};
use crate::pipeline::{self, BaselineChoice};

pub(super) fn check(args: CheckArgs, limits: pipeline::ReadLimits) -> Result<i32> {
    let result = match judge(&args, limits) {
        Ok(result) => result,
        Err(e) => {
            if args.github.enabled() {
                publish_error(&args, &e);
            }
            return Err(e);
        }
    };
    if let Some(path) = &args.verdict_out {
        write_output(
            &crate::report::comment::render(&result, crate::report::Format::Json),
            Some(path),
        )?;
    }
    if let Some(dir) = &args.repro {
        write_repro(dir, &result)?;
    }
    write_verdict_output(
        &crate::report::comment::render(&result, args.format),
        args.output.as_ref(),
        args.github.enabled(),
    )?;
    // The verdict in every log, whatever --output and --format say.
    crate::output::stderr(&plain_headline(&crate::report::comment::markdown(&result)));
    if args.github.enabled() {
        // Never changes the exit status: failures here are warnings.
        let options = args
            .github
            .options(args.output.as_ref(), args.fail_on_improvement);
        let mut publication = crate::github::Publication::of_check(&result, &options);
        if args.baselines.is_some() {
            // Keyed by what the job asked for, not by the baseline it found: a later run that
            // finds none replaces this comment too.
            publication.marker = comment_of(&args).1;
        }
        crate::github::publish(&publication, &options);
    }
    Ok(result.exit_code)
}

/// `check --repro DIR`: the repro files of the kernel the verdict names, each written
/// atomically; other files in `dir` are left alone.
fn write_repro(dir: &std::path::Path, result: &pipeline::CheckResult) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--repro {}: cannot create the directory", dir.display()))?;
    let records = crate::report::repro::records(result);
    for (name, text) in crate::report::repro::repro_files(&records) {
        let path = dir.join(name);
        super::write_atomically(&path, text.as_bytes())
            .with_context(|| format!("--repro: cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Everything `check` does up to the verdict.
fn judge(args: &CheckArgs, limits: pipeline::ReadLimits) -> Result<pipeline::CheckResult> {
    confine_paths(
        &[
            ("--baseline", args.baseline.as_ref()),
            ("--baselines", args.baselines.as_ref()),
            ("--rules", args.analysis.rules.as_ref()),
        ],
        &[
            ("--output", args.output.as_ref()),
            ("--verdict-out", args.verdict_out.as_ref()),
            ("--repro", args.repro.as_ref()),
        ],
    )?;
    check_event_file(&args.github)?;
    let identity = args.identity.resolve()?;
    let config = args.analysis.config(limits);
    let run = read_run(&args.paths, &config)?;
    pipeline::require_whole(&run, &args.paths, &config)?;
    let choice = match (&args.baseline, &args.baselines) {
        (Some(file), _) => BaselineChoice::File(file),
        (None, Some(dir)) => BaselineChoice::Discover {
            dir,
            hardware: args.hardware.as_deref(),
            keys: &args.key,
        },
        (None, None) => anyhow::bail!("check needs --baseline FILE or --baselines DIR"),
    };
    let env = |name: &str| std::env::var(name).ok();
    let baseline = pipeline::select_baseline(&run, choice, &env)?;
    let options = pipeline::CheckOptions {
        fail_on_improvement: args.fail_on_improvement,
        allow_other_hardware: args.allow_other_hardware,
        allow_other_batch: args.allow_other_batch,
        hardware: args.hardware.clone(),
        allow_override: args.allow_override,
    };
    let mut result = pipeline::check(&run, &args.paths, &config, &baseline, &options)?;
    result.run.identity = identity.with_producer(&run);
    Ok(result)
}

/// A check that could not judge at all says so where its verdict would have gone: the step
/// summary, an `::error`, the outputs and the sticky comment of the check ([`comment_of`]), so
/// that an earlier ✅ never stands under a red check.
fn publish_error(args: &CheckArgs, e: &anyhow::Error) {
    let (name, marker) = comment_of(args);
    let options = args.github.options(None, args.fail_on_improvement);
    let publication =
        crate::github::Publication::of_error(&format!("{e:#}"), &name, marker, &options);
    crate::github::publish(&publication, &options);
}

/// What a check is of, and the marker of its sticky comment: with `--baseline FILE` the file's
/// (as a judged run's); with `--baselines DIR` the job's, whatever baseline a run finds or fails
/// to find: the Action's `name` input (`TRACEGATE_NAME`), else the directory with the `--key`s
/// and `--hardware` asked for.
fn comment_of(args: &CheckArgs) -> (String, String) {
    match (&args.baseline, &args.baselines) {
        (Some(file), _) => {
            let path = file.display().to_string();
            let name = file
                .file_stem()
                .map_or_else(|| path.clone(), |s| s.to_string_lossy().into_owned());
            (name, crate::github::marker("baseline", &path))
        }
        (None, _) if std::env::var("TRACEGATE_NAME").is_ok_and(|n| !n.trim().is_empty()) => {
            let name = std::env::var("TRACEGATE_NAME").unwrap_or_default();
            (name.clone(), crate::github::marker("check", name.trim()))
        }
        (None, dir) => {
            let mut scope = dir
                .as_ref()
                .map_or_else(String::new, |d| d.display().to_string());
            for k in args.key.iter().chain(args.hardware.iter()) {
                scope.push(' ');
                scope.push_str(k);
            }
            (scope.clone(), crate::github::marker("baselines", &scope))
        }
    }
}

pub(super) fn sweep(args: SweepArgs) -> Result<i32> {
    confine_paths(&[], &[("--output", args.output.as_ref())])?;
    check_event_file(&args.github)?;
    let merged = pipeline::sweep(&args.paths, &args.expect, args.identity.resolve()?);
    write_verdict_output(
        &crate::report::sweep::render(&merged, args.format),
        args.output.as_ref(),
        args.github.enabled(),
    )?;
    crate::output::stderr(&plain_headline(&crate::report::sweep::markdown(&merged)));
    if args.github.enabled() {
        // As for check: failures here are warnings, the exit status stays the sweep's.
        let options = args.github.options(args.output.as_ref(), false);
        let publication = crate::github::Publication::of_sweep(&merged, &args.name, &options);
        crate::github::publish(&publication, &options);
    }
    Ok(merged.exit_code)
}

/// The first line of a markdown report as plain text, for standard error: the bold marks
/// dropped, backslash escapes undone, and the word joiners and control characters that the
/// markdown or a crafted device name could hold removed, so the line stays one line that no CI
/// runner reads as a command (it starts with the verdict's mark).
fn plain_headline(markdown: &str) -> String {
    let line = markdown.lines().next().unwrap_or_default();
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(char::is_ascii_punctuation) => {
                out.extend(chars.next());
            }
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
            }
            '\u{2060}' => {}
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// With `--github`, an event payload no runner writes is refused before anything is read.
fn check_event_file(github: &GithubArgs) -> Result<()> {
    if github.enabled() {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        crate::github::context::check_event_file(&github.options(None, false), &env)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::plain_headline;

    #[test]
    fn the_plain_headline_undoes_the_markdown_of_the_first_line_only() {
        let md = "❌ **tracegate** on AMD\\_X \\*x\\*: REGRESSION; regressed: decode\\_step\\_ms\n\nrest";
        assert_eq!(
            plain_headline(md),
            "❌ tracegate on AMD_X *x*: REGRESSION; regressed: decode_step_ms"
        );
        assert_eq!(plain_headline("✅ a@\u{2060}b \u{1b}[31m"), "✅ a@b  [31m");
    }
}
