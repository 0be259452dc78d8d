//! `baseline new`, `baseline update` and `baseline calibrate`: write a run's figures into a
//! baseline file. The pipeline makes the text (`pipeline::new_baseline`...); here it is shown,
//! checked and written.

use anyhow::Result;

use super::args::{BaselineCalibrateArgs, BaselineNewArgs, BaselineUpdateArgs, BaselineWriteArgs};
use super::write_output;
use crate::exit;
use crate::pipeline::{self, BaselineText, Note, Progress, ReadLimits};

/// A note of the pipeline on stderr: a line as `tracegate: ...`, a block as it is.
fn show(note: Note) {
    match note {
        Note::Line(line) => crate::output::note(&line),
        Note::Block(text) => crate::output::stderr(&text),
    }
}

/// Runs `work` with a progress bar of the files read and the notes shown on stderr.
fn with_progress<T, E>(work: impl FnOnce(&Progress<'_>) -> Result<T, E>) -> Result<T>
where
    anyhow::Error: From<E>,
{
    let bar = super::progress_bar();
    let on_file = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let progress = Progress {
        on_file: &on_file,
        note: &show,
    };
    let result = work(&progress);
    bar.finish_and_clear();
    Ok(result?)
}

/// The settings `baseline new` and `baseline update` share; `--image` and `--meta` are
/// resolved (and refused when a baseline cannot hold them) before any trace is read.
fn write_settings(w: &BaselineWriteArgs, limits: ReadLimits) -> Result<pipeline::WriteSettings> {
    let identity = w.identity.resolve()?;
    pipeline::check_identity(&identity)?;
    Ok(pipeline::WriteSettings {
        paths: w.paths.clone(),
        baseline: w.baseline.clone(),
        config: w.analysis.config(limits),
        source: w.source.clone(),
        dry_run: w.dry_run,
        force: w.force,
        identity,
    })
}

/// Writes the new text unless this is a dry run, and ends with one line on stderr: what was
/// written and how many metrics it gates. The diff is printed with `--diff` or `--dry-run` only.
fn finish_baseline_write(args: &BaselineWriteArgs, text: &BaselineText) -> Result<i32> {
    let shown = args.baseline.display().to_string();
    if args.diff || args.dry_run {
        let diff = text.diff();
        write_output(
            if diff.is_empty() {
                "no change\n"
            } else {
                &diff
            },
            None,
        )?;
    }
    // A baseline the gate cannot load is never written.
    let gated = text.gated_metrics()?;
    let gated = format!("{gated} gated metric{}", if gated == 1 { "" } else { "s" });
    if args.dry_run {
        crate::output::note(&format!(
            "would write {shown} ({gated}); nothing written (--dry-run)"
        ));
    } else {
        text.write()?;
        crate::output::note(&format!("wrote {shown} ({gated})"));
    }
    Ok(exit::PASS)
}

/// The baseline is read and written, `--rules` read: confined in a workflow.
fn confine(w: &BaselineWriteArgs) -> Result<()> {
    super::confine_paths(
        &[("--rules", w.analysis.rules.as_ref())],
        &[("--baseline", Some(&w.baseline))],
    )
}

pub(super) fn new(args: BaselineNewArgs, limits: ReadLimits) -> Result<i32> {
    let w = &args.write;
    confine(w)?;
    let settings = pipeline::NewSettings {
        write: write_settings(w, limits)?,
        hardware: args.hardware.clone(),
        model: args.model.clone(),
        precision: args.precision.clone(),
        framework: args.framework.clone(),
        tp: args.tp,
        ep: args.ep,
        concurrency: args.concurrency,
    };
    let text = with_progress(|progress| pipeline::new_baseline(&settings, progress))?;
    finish_baseline_write(w, &text)
}

pub(super) fn update(args: BaselineUpdateArgs, limits: ReadLimits) -> Result<i32> {
    confine(&args.write)?;
    let settings = pipeline::UpdateSettings {
        write: write_settings(&args.write, limits)?,
        accept_regression: args.accept_regression,
        add_new: args.add_new,
        rebase: args.rebase,
        history_size: args.history_size,
    };
    let text = with_progress(|progress| pipeline::update_baseline(&settings, progress))?;
    finish_baseline_write(&args.write, &text)
}

pub(super) fn calibrate(args: BaselineCalibrateArgs, limits: ReadLimits) -> Result<i32> {
    let mut settings = pipeline::CalibrateSettings {
        runs: args.runs.clone(),
        baseline: args.baseline.clone(),
        from_history: args.from_history.clone(),
        false_alarm: args.false_alarm.clone(),
        target_mdc: args.target_mdc,
        min_tolerance: args.min_tolerance.clone(),
        max_tolerance: args.max_tolerance.clone(),
        config: args.analysis.config(limits),
        source: args.source.clone(),
        dry_run: args.dry_run,
        force: args.force,
        hardware: args.hardware.clone(),
        model: args.model.clone(),
        precision: args.precision.clone(),
        framework: args.framework.clone(),
        ep: args.ep,
        concurrency: args.concurrency,
        identity: Default::default(),
    };
    let target = pipeline::calibrate_target(&settings)?;
    super::confine_paths(
        &[
            ("--rules", args.analysis.rules.as_ref()),
            ("--from-history", args.from_history.as_ref()),
        ],
        &[("--baseline", Some(&target))],
    )?;
    settings.identity = args.identity.resolve()?;
    let (text, gated) = with_progress(|progress| pipeline::calibrate(&settings, progress))?;
    // A baseline the gate cannot load is never written.
    text.gated_metrics()?;
    if args.dry_run {
        write_output(&text.diff(), None)?;
        return Ok(exit::PASS);
    }
    text.write()?;
    crate::output::note(&format!(
        "wrote {} ({gated} gated metrics)",
        text.path.display()
    ));
    Ok(exit::PASS)
}
