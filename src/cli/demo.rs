//! `synth` and `demo`: synthetic runs, and the main job end to end on them.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::args::{DemoArgs, SynthArgs};
use super::write_verdict_output;
use crate::exit;
use crate::pipeline;

pub(super) fn synth(args: SynthArgs, limits: pipeline::ReadLimits) -> Result<i32> {
    // The directory written, confined like every other output in a workflow.
    super::confine_paths(&[], &[("--out", Some(&args.out))])?;
    let injections = args
        .inject
        .iter()
        .map(|spec| spec.parse::<pipeline::Injection>())
        .collect::<Result<Vec<_>, _>>()?;
    let options = pipeline::SynthOptions {
        scenario: args.scenario,
        ranks: args.ranks,
        decode_steps: args.decode_steps,
        seed: args.seed,
        scale: args.scale,
        python_functions_per_step: args.python_functions_per_step,
        injections,
        layout: args.layout,
        gzip_level: args.gzip_level.0,
        run_jitter: args.run_jitter,
        run_jitter_mode: args.run_jitter_mode,
        with_stack: args.with_stack,
    };
    let summary = pipeline::synth(&options, &args.out, &limits)?;
    crate::output::note(&format!(
        "wrote {} trace files and {} ({} MB of JSON, {} MB on disk)",
        summary.files.len(),
        summary.truth_path.display(),
        crate::units::fixed(summary.bytes_uncompressed as f64 / 1e6, 1),
        crate::units::fixed(summary.bytes_compressed as f64 / 1e6, 1)
    ));
    Ok(exit::PASS)
}

/// Generates one demo run and checks it against the scenario's built-in baseline.
fn demo_check(
    args: &DemoArgs,
    dir: &std::path::Path,
    inject: Option<&str>,
    config: &pipeline::AnalysisConfig,
) -> Result<pipeline::CheckResult> {
    let bar = super::progress_bar();
    let result = pipeline::demo_run(&args.scenario, dir, inject, config, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    Ok(result?)
}

pub(super) fn demo(args: DemoArgs, limits: pipeline::ReadLimits) -> Result<i32> {
    // Every argument is checked before anything is generated.
    pipeline::shipped_baseline(&args.scenario)?;
    args.inject
        .parse::<pipeline::Injection>()
        .with_context(|| format!("--inject {:?}", args.inject))?;
    let config = pipeline::AnalysisConfig {
        limits,
        ..Default::default()
    };
    // Removed when the demo ends, however it ends (an error included).
    let temp = TempDir(tempfile_dir()?);
    let root = args.keep.clone().unwrap_or_else(|| temp.0.clone());
    crate::output::note(&format!(
        "demo: synthetic {} runs in {}",
        args.scenario,
        root.display()
    ));
    let clean = demo_check(&args, &root.join("clean"), None, &config)?;
    crate::output::stdout(&format!(
        "1. A clean run against its baseline: {}\n\n",
        crate::text::printable(&clean.summary)
    ));
    let regressed = demo_check(&args, &root.join("regressed"), Some(&args.inject), &config)?;
    crate::output::stdout(&format!(
        "2. The same run with `--inject {}`:\n\n",
        crate::text::printable(&args.inject)
    ));
    write_verdict_output(
        &crate::report::comment::render(&regressed, args.format),
        None,
        false,
    )?;
    let expected = (pipeline::Status::Pass, pipeline::Status::Regression);
    if (clean.status, regressed.status) == expected {
        Ok(exit::PASS)
    } else {
        anyhow::bail!(
            "demo: expected pass then regression, got {:?} then {:?}",
            clean.status,
            regressed.status
        )
    }
}

/// A directory removed with everything in it when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh directory under the system temporary directory.
fn tempfile_dir() -> Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("tracegate-demo-{}-{stamp}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    Ok(dir)
}
