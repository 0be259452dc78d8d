//! `synth` and `demo`: synthetic runs, and the main job end to end on them.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::args::{DemoArgs, SynthArgs};
use super::{read_run, write_verdict_output};
use crate::exit;
use crate::pipeline;

pub(super) fn synth(args: SynthArgs) -> Result<i32> {
    // The directory written, confined like every other output in a workflow.
    super::confine_paths(&[], &[("--out", Some(&args.out))])?;
    let injections = args
        .inject
        .iter()
        .map(|spec| spec.parse::<crate::synth::Injection>())
        .collect::<Result<Vec<_>, _>>()?;
    let options = crate::synth::SynthOptions {
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
    };
    let summary = crate::synth::generate_to_dir(&options, &args.out)?;
    crate::output::note(&format!(
        "wrote {} trace files and {} ({:.1} MB of JSON, {:.1} MB on disk)",
        summary.files.len(),
        summary.truth_path.display(),
        summary.bytes_uncompressed as f64 / 1e6,
        summary.bytes_compressed as f64 / 1e6
    ));
    Ok(exit::PASS)
}

/// Generates one demo run and checks it against the scenario's built-in baseline.
fn demo_check(
    args: &DemoArgs,
    dir: &std::path::Path,
    inject: Option<&str>,
) -> Result<crate::gate::CheckResult> {
    let (file, text) = crate::baseline::shipped::for_scenario(&args.scenario).ok_or_else(|| {
        anyhow::anyhow!(
            "no built-in baseline for scenario {:?}; valid: {}",
            args.scenario,
            crate::synth::scenario_names().join(", ")
        )
    })?;
    let injections = inject
        .map(str::parse::<crate::synth::Injection>)
        .transpose()?
        .into_iter()
        .collect();
    let options = crate::synth::SynthOptions {
        scenario: args.scenario.clone(),
        seed: 42,
        injections,
        ..Default::default()
    };
    crate::synth::generate_to_dir(&options, dir)?;
    let baseline = crate::baseline::Baseline::parse(text, std::path::Path::new(file))?;
    let paths = [dir.to_path_buf()];
    let run = read_run(&paths)?;
    Ok(pipeline::check(
        &run,
        &paths,
        &pipeline::AnalysisConfig::default(),
        &baseline,
        &crate::gate::CheckOptions::default(),
    )?)
}

pub(super) fn demo(args: DemoArgs) -> Result<i32> {
    // Every argument is checked before anything is generated.
    if crate::baseline::shipped::for_scenario(&args.scenario).is_none() {
        anyhow::bail!(
            "no built-in baseline for scenario {:?}; valid: {}",
            args.scenario,
            crate::synth::scenario_names().join(", ")
        );
    }
    args.inject
        .parse::<crate::synth::Injection>()
        .with_context(|| format!("--inject {:?}", args.inject))?;
    // Removed when the demo ends, however it ends (an error included).
    let temp = TempDir(tempfile_dir()?);
    let root = args.keep.clone().unwrap_or_else(|| temp.0.clone());
    crate::output::note(&format!(
        "demo: synthetic {} runs in {}",
        args.scenario,
        root.display()
    ));
    let clean = demo_check(&args, &root.join("clean"), None)?;
    crate::output::stdout(&format!(
        "1. A clean run against its baseline: {}\n\n",
        crate::text::printable(&clean.summary)
    ));
    let regressed = demo_check(&args, &root.join("regressed"), Some(&args.inject))?;
    crate::output::stdout(&format!(
        "2. The same run with `--inject {}`:\n\n",
        crate::text::printable(&args.inject)
    ));
    write_verdict_output(
        &crate::report::check::render(&regressed, args.format),
        None,
        false,
    )?;
    let expected = (crate::gate::Status::Pass, crate::gate::Status::Regression);
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
