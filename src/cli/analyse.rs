//! `inspect`, `extract`, `report` and `compare`: commands that describe runs and never gate.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::args::{CompareArgs, ExtractArgs, InspectArgs, ReportArgs};
use super::{confine_paths, read_run, write_output};
use crate::exit;
use crate::pipeline::{self, AnalysisConfig};

pub(super) fn inspect(args: InspectArgs, limits: pipeline::ReadLimits) -> Result<i32> {
    confine_paths(&[], &[("--output", args.output.as_ref())])?;
    let config = AnalysisConfig {
        limits,
        ..Default::default()
    };
    let run = read_run(&args.paths, &config)?;
    let inspection = pipeline::inspect(&run, &args.paths, &config)?;
    write_output(
        &crate::report::inspect::render(&inspection, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}

pub(super) fn extract(args: ExtractArgs, limits: pipeline::ReadLimits) -> Result<i32> {
    confine_paths(
        &[("--rules", args.analysis.rules.as_ref())],
        &[("--output", args.output.as_ref())],
    )?;
    let config = args.analysis.config(limits);
    let run = read_run(&args.paths, &config)?;
    let extraction = pipeline::extract(&run, &args.paths, &config, None)?;
    write_output(
        &crate::report::extract::render(&extraction, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}

/// Reads and analyses one run for `report` and `compare`.
fn analyse_report(paths: &[PathBuf], config: &AnalysisConfig) -> Result<pipeline::RunAnalysis> {
    let run = read_run(paths, config)?;
    Ok(pipeline::analyse(&run, paths, config)?)
}

pub(super) fn report(args: ReportArgs, limits: pipeline::ReadLimits) -> Result<i32> {
    confine_paths(
        &[("--rules", args.analysis.rules.as_ref())],
        &[("--output", args.output.as_ref())],
    )?;
    let analysis = analyse_report(&args.paths, &args.analysis.config(limits))?;
    write_output(
        &crate::report::analysis::render(&analysis, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}

/// The runs of `compare`, in order, with their names.
fn compare_runs(args: &CompareArgs) -> Result<Vec<(String, PathBuf)>> {
    let file_name = |p: &PathBuf| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let mut runs: Vec<(String, PathBuf)> = args
        .runs
        .iter()
        .map(|p| {
            // Two runs with the same file name are told apart by their parent directory.
            let same = args
                .runs
                .iter()
                .filter(|q| file_name(q) == file_name(p))
                .count();
            let name = match p.parent().and_then(|d| d.file_name()) {
                Some(dir) if same > 1 => format!("{}/{}", dir.to_string_lossy(), file_name(p)),
                _ => file_name(p),
            };
            (name, p.clone())
        })
        .collect();
    for spec in &args.label {
        let Some((name, path)) = spec.split_once('=') else {
            anyhow::bail!("--label {spec:?}: expected NAME=PATH");
        };
        let path = PathBuf::from(path);
        match runs.iter_mut().find(|(_, p)| *p == path) {
            Some(run) => run.0 = name.to_string(),
            None => runs.push((name.to_string(), path)),
        }
    }
    if runs.len() < 2 {
        anyhow::bail!("compare needs at least two runs (paths or --label NAME=PATH)");
    }
    Ok(runs)
}

pub(super) fn compare(args: CompareArgs, limits: pipeline::ReadLimits) -> Result<i32> {
    confine_paths(
        &[("--rules", args.analysis.rules.as_ref())],
        &[("--output", args.output.as_ref())],
    )?;
    let runs = compare_runs(&args)?;
    let config = args.analysis.config(limits);
    let mut analyses = Vec::with_capacity(runs.len());
    for (name, path) in &runs {
        let analysis = analyse_report(std::slice::from_ref(path), &config)
            .with_context(|| format!("run {name}"))?;
        analyses.push((name.clone(), analysis));
    }
    let refs: Vec<(String, &pipeline::RunAnalysis)> =
        analyses.iter().map(|(n, a)| (n.clone(), a)).collect();
    let comparison = pipeline::compare(&refs);
    write_output(
        &crate::report::compare::render(&comparison, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}
