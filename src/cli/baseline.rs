//! `baseline new` and `baseline update`: write a run's figures into a baseline file.

use anyhow::{Context, Result};

use std::path::{Path, PathBuf};

use super::args::{BaselineCalibrateArgs, BaselineNewArgs, BaselineUpdateArgs, BaselineWriteArgs};
use super::{read_run, write_output};
use crate::exit;
use crate::pipeline;

/// `--image` and `--meta`, refused before any trace is read when a baseline cannot hold them.
fn identity(args: &BaselineWriteArgs) -> Result<crate::identity::Identity> {
    let identity = args.identity.resolve()?;
    crate::baseline::write::check_identity(&identity).map_err(anyhow::Error::msg)?;
    Ok(identity)
}

fn stamp_for(
    args: &BaselineWriteArgs,
    x: &crate::metrics::Extraction,
    identity: crate::identity::Identity,
) -> crate::baseline::write::Stamp {
    crate::baseline::write::Stamp {
        source: args
            .source
            .clone()
            .unwrap_or_else(|| pipeline::describe_paths(&args.paths)),
        date: crate::baseline::write::today(),
        device: x.run.device.clone(),
        ranks: x.run.ranks.len(),
        identity,
    }
}

/// Writes the new text unless this is a dry run, and ends with one line on stderr: what was
/// written and how many metrics it gates. The diff is printed with `--diff` or `--dry-run` only.
fn finish_baseline_write(args: &BaselineWriteArgs, old: &str, new: &str) -> Result<i32> {
    let shown = args.baseline.display().to_string();
    if args.diff || args.dry_run {
        let diff = crate::baseline::write::diff(&shown, old, new);
        write_output(
            if diff.is_empty() {
                "no change\n"
            } else {
                &diff
            },
            None,
        )?;
    }
    // A baseline the gate cannot load is never written; the old one is replaced whole or not
    // at all (temporary file and rename), so a crash or a full disk cannot leave half of it;
    // through a symlink, keeping its mode, refusing a read-only one (baseline::file).
    let parsed = crate::baseline::Baseline::parse(new, &args.baseline)?;
    let gated = parsed.metrics.values().filter(|m| m.gate).count();
    let gated = format!("{gated} gated metric{}", if gated == 1 { "" } else { "s" });
    if args.dry_run {
        crate::output::note(&format!(
            "would write {shown} ({gated}); nothing written (--dry-run)"
        ));
    } else {
        crate::baseline::file::write(&args.baseline, new.as_bytes())
            .with_context(|| format!("{shown}: cannot write baseline"))?;
        crate::output::note(&format!("wrote {shown} ({gated})"));
    }
    Ok(exit::PASS)
}

/// What the run says that a baseline's identity must not contradict: the ranks' devices agree
/// (no mixed hardware, no rank without a device beside ranks with one), `--hardware` is the
/// device the trace names, and `tp` (`--tp`, `--meta tp=N`) is the number of ranks. Refused
/// unless `--force`, naming the file and the fix.
fn check_run_identity(
    w: &BaselineWriteArgs,
    x: &crate::metrics::Extraction,
    hardware: Option<&str>,
    tp: Option<u32>,
    identity: &crate::identity::Identity,
) -> Result<()> {
    let mut problems = crate::gate::check::device_problems(x);
    let traced = x.run.device.as_deref().filter(|d| !d.trim().is_empty());
    if let (Some(h), Some(t)) = (hardware.map(str::trim), traced) {
        if h != t.trim() {
            problems.push(format!(
                "--hardware {h:?} contradicts the trace, which names {t:?}"
            ));
        }
    }
    let ranks = x.run.ranks.len();
    if let Some(tp) = tp.filter(|&tp| tp as usize != ranks) {
        problems.push(format!(
            "--tp {tp} contradicts the run, which has {ranks} ranks"
        ));
    }
    if let Some(tp) = identity
        .meta
        .get("tp")
        .filter(|v| v.parse::<usize>() != Ok(ranks))
    {
        problems.push(format!(
            "--meta tp={tp} contradicts the run, which has {ranks} ranks"
        ));
    }
    match problems.first() {
        Some(_) if w.force => Ok(()),
        Some(_) => anyhow::bail!(
            "{}: {}; nothing written (--force to write it anyway)",
            w.baseline.display(),
            problems.join("; ")
        ),
        None => Ok(()),
    }
}

/// The hardware a baseline of this run records, and whether it was asserted: `--hardware` where
/// given (a forced one that contradicts the trace included), else the trace's device. A run
/// whose trace names no device needs `--hardware`: a baseline with no hardware would hold for
/// any, and `check` could never judge a run against it.
fn baseline_hardware(
    x: &crate::metrics::Extraction,
    asserted: Option<&str>,
    paths: &[std::path::PathBuf],
) -> Result<(String, bool)> {
    let traced = x.run.device.as_deref().filter(|d| !d.trim().is_empty());
    match (asserted, traced) {
        (Some(h), _) => Ok((h.to_string(), traced.is_none())),
        (None, Some(t)) => Ok((t.to_string(), false)),
        (None, None) => anyhow::bail!(
            "{}: the trace names no device, so the baseline would hold for any hardware; give the run's with --hardware NAME (e.g. --hardware \"AMD Instinct MI300X\")",
            pipeline::describe_paths(paths)
        ),
    }
}

/// The baseline is read and written, `--rules` read: confined in a workflow.
fn confine(w: &BaselineWriteArgs) -> Result<()> {
    super::confine_paths(
        &[("--rules", w.analysis.rules.as_ref())],
        &[("--baseline", Some(&w.baseline))],
    )
}

pub(super) fn new(args: BaselineNewArgs) -> Result<i32> {
    let w = &args.write;
    confine(w)?;
    if w.baseline.exists() && !w.force && !w.dry_run {
        anyhow::bail!(
            "{}: already exists (use `baseline update`, or --force to overwrite)",
            w.baseline.display()
        );
    }
    let identity = identity(w)?;
    let asserted = args
        .hardware
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty());
    let run = read_run(&w.paths)?;
    let x = pipeline::extract(&run, &w.paths, &w.analysis.config(), None)?;
    let (hardware, hardware_asserted) = baseline_hardware(&x, asserted, &w.paths)?;
    check_run_identity(w, &x, asserted, args.tp, &identity)?;
    let stamp = stamp_for(w, &x, identity);
    let framework = args
        .framework
        .clone()
        .or_else(|| crate::identity::framework_of(&run).map(str::to_string));
    let meta = crate::baseline::Meta {
        hardware,
        hardware_asserted,
        model: args.model.clone(),
        precision: args.precision.clone(),
        framework,
        image: stamp.identity.image.clone(),
        tp: args.tp.or(Some(x.run.ranks.len() as u32)),
        ep: args.ep,
        concurrency: args.concurrency,
        moe_layers: w.analysis.moe_layers,
        ..Default::default()
    };
    let text = crate::baseline::write::new_baseline(&x, &meta, &stamp);
    let _lock = (!w.dry_run)
        .then(|| crate::baseline::file::lock(&w.baseline))
        .transpose()?;
    finish_baseline_write(w, "", &text)
}

pub(super) fn update(args: BaselineUpdateArgs) -> Result<i32> {
    confine(&args.write)?;
    let w = &args.write;
    let identity = identity(w)?;
    let baseline = crate::baseline::Baseline::load(&w.baseline)?;
    let run = read_run(&w.paths)?;
    let x = pipeline::extract(&run, &w.paths, &w.analysis.config(), Some(&baseline))?;
    // A run whose trace names no device is on the baseline's hardware only when the baseline
    // asserted it for such a run.
    let device = x
        .run
        .device
        .clone()
        .filter(|d| !d.trim().is_empty())
        .or_else(|| {
            Some(baseline.meta.hardware.clone()).filter(|_| baseline.meta.hardware_asserted)
        })
        .unwrap_or_default();
    check_run_identity(w, &x, None, None, &identity)?;
    if !w.force && !baseline.meta.hardware.is_empty() && device != baseline.meta.hardware {
        anyhow::bail!(
            "{}: the baseline is for {:?} but the run is on {:?}; refusing to overwrite (use --force)",
            w.baseline.display(),
            baseline.meta.hardware,
            device
        );
    }
    let ranks = x.run.ranks.len();
    if let Some(tp) = baseline
        .meta
        .tp
        .filter(|&tp| !w.force && tp as usize != ranks)
    {
        anyhow::bail!(
            "{}: the baseline is for {tp} ranks (tp) but the run has {ranks}; refusing to overwrite (use --force)",
            w.baseline.display(),
        );
    }
    // Held from reading the old text to writing the new: a concurrent update waits, then reads
    // what this one wrote.
    let _lock = (!w.dry_run)
        .then(|| crate::baseline::file::lock(&w.baseline))
        .transpose()?;
    let old = std::fs::read_to_string(&w.baseline)
        .with_context(|| format!("{}: cannot read", w.baseline.display()))?;
    let stamp = stamp_for(w, &x, identity);
    // A calibrated baseline, or one with a history, learns from the run: the run joins the
    // history and the values stay as they are unless --rebase.
    let learning =
        baseline.calibration.is_some() || baseline.history.is_some() || args.history_size.is_some();
    let (new, changes) = if learning && !args.rebase {
        (old.clone(), Default::default())
    } else {
        crate::baseline::write::update_baseline(&old, &x, &stamp, args.add_new)
            .map_err(|e| anyhow::anyhow!("{}: {e}", w.baseline.display()))?
    };
    let new = if learning {
        let mut doc: toml_edit::DocumentMut = new
            .parse()
            .map_err(|e: toml_edit::TomlError| anyhow::anyhow!("{}: {e}", w.baseline.display()))?;
        crate::baseline::history::append(
            &mut doc,
            &x,
            &stamp.date,
            stamp.identity.image.as_deref(),
            &stamp.source,
            args.history_size,
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", w.baseline.display()))?;
        doc.to_string()
    } else {
        new
    };
    let shown = w.baseline.display();
    if !changes.lacking.is_empty() {
        crate::output::note(&format!(
            "warning: {shown}: the run does not produce {}; their old figures are kept",
            changes.lacking.join(", ")
        ));
    }
    if !changes.not_added.is_empty() {
        crate::output::note(&format!(
            "warning: {shown}: the run also has {}, not in the baseline and not added (--add-new to add them)",
            changes.not_added.join(", ")
        ));
    }
    finish_baseline_write(w, &old, &new)
}

/// One RUN argument as the paths of its traces: a directory or file, or files joined with commas.
fn run_paths(run: &Path) -> Vec<PathBuf> {
    let text = run.to_string_lossy();
    if run.exists() || !text.contains(',') {
        return vec![run.to_path_buf()];
    }
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// The UTC date of the newest file of a run (a directory's files, one level down).
fn run_date(paths: &[PathBuf]) -> Option<String> {
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let newest = paths
        .iter()
        .flat_map(|p| {
            let mut times = vec![mtime(p)];
            if p.is_dir() {
                if let Ok(entries) = std::fs::read_dir(p) {
                    times.extend(entries.flatten().map(|e| mtime(&e.path())));
                }
            }
            times
        })
        .flatten()
        .max()?;
    let secs = newest.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(crate::baseline::write::civil_date(secs.div_euclid(86_400)))
}

fn calibrate_options(args: &BaselineCalibrateArgs) -> Result<crate::baseline::calibrate::Options> {
    use crate::baseline::calibrate::{parse_false_alarm, Bound, Options};
    let bounds = |list: &[String], flag: &str| -> Result<Vec<Bound>> {
        list.iter()
            .map(|t| {
                t.parse::<Bound>()
                    .map_err(|e| anyhow::anyhow!("{flag} {e}"))
            })
            .collect()
    };
    Ok(Options {
        false_alarm_pct: parse_false_alarm(&args.false_alarm).map_err(anyhow::Error::msg)?,
        min: bounds(&args.min_tolerance, "--min-tolerance")?,
        max: bounds(&args.max_tolerance, "--max-tolerance")?,
    })
}

/// Says what was left out and prints the table, on stderr.
fn report_calibration(cal: &crate::baseline::calibrate::Calibration, total: usize) {
    for o in &cal.outliers {
        crate::output::note(&format!(
            "warning: {} left out as an outlier among the runs: {}",
            o.label,
            o.reasons.join(", ")
        ));
    }
    let n = cal.kept.len();
    if n < crate::baseline::calibrate::RECOMMENDED_RUNS {
        crate::output::note(&format!(
            "warning: calibrated from {n} runs; {} or more give tolerances that are not mostly small-sample margin",
            crate::baseline::calibrate::RECOMMENDED_RUNS
        ));
    }
    for m in cal.metrics.iter().filter(|m| !m.gated) {
        if let Some(why) = &m.too_noisy {
            crate::output::note(&format!(
                "warning: {}: {why}; written with gate = false",
                m.name
            ));
        }
    }
    crate::output::stderr(&format!(
        "calibrated from {n} of {total} runs, false-alarm budget {}% over {} gated metrics (z {:.2} each):\n{}",
        cal.false_alarm_pct,
        cal.metrics.len(),
        cal.z,
        crate::baseline::calibrate::table(cal)
    ));
}

/// Writes `text` to `path` (or prints the diff of a dry run).
fn finish_calibrate(
    path: &Path,
    old: &str,
    text: &str,
    dry_run: bool,
    gated: usize,
) -> Result<i32> {
    let shown = path.display().to_string();
    crate::baseline::Baseline::parse(text, path)?;
    if dry_run {
        write_output(&crate::baseline::write::diff(&shown, old, text), None)?;
        return Ok(exit::PASS);
    }
    crate::baseline::file::write(path, text.as_bytes())
        .with_context(|| format!("{shown}: cannot write baseline"))?;
    crate::output::note(&format!("wrote {shown} ({gated} gated metrics)"));
    Ok(exit::PASS)
}

pub(super) fn calibrate(args: BaselineCalibrateArgs) -> Result<i32> {
    use crate::baseline::calibrate::{self as cal, RunFigures};
    let target = args
        .baseline
        .clone()
        .or_else(|| args.from_history.clone())
        .context("--baseline FILE is required")?;
    super::confine_paths(
        &[
            ("--rules", args.analysis.rules.as_ref()),
            ("--from-history", args.from_history.as_ref()),
        ],
        &[("--baseline", Some(&target))],
    )?;
    let opts = calibrate_options(&args)?;
    let identity = args.identity.resolve()?;
    crate::baseline::write::check_identity(&identity).map_err(anyhow::Error::msg)?;
    if let Some(file) = &args.from_history {
        return calibrate_from_history(&args, file, &target, &opts);
    }
    if args.runs.len() < cal::MIN_RUNS {
        return Err(cal::CalibrateError::TooFewRuns(args.runs.len()).into());
    }
    if target.exists() && !args.force && !args.dry_run {
        anyhow::bail!(
            "{}: already exists (--force to overwrite it with the calibrated baseline)",
            target.display()
        );
    }
    let framework = args
        .framework
        .clone()
        .or_else(|| identity.meta.get("framework").cloned());
    let mut figures = Vec::with_capacity(args.runs.len());
    let mut extractions = Vec::with_capacity(args.runs.len());
    for run_arg in &args.runs {
        let paths = run_paths(run_arg);
        let run = read_run(&paths)?;
        let x = pipeline::extract(&run, &paths, &args.analysis.config(), None)?;
        figures.push(RunFigures::from_extraction(
            &x,
            run_arg.display().to_string(),
            framework
                .clone()
                .or_else(|| crate::identity::framework_of(&run).map(str::to_string)),
            identity.image.clone(),
            run_date(&paths),
        ));
        extractions.push(x);
    }
    let calibration = cal::calibrate(&figures, &opts)?;
    report_calibration(&calibration, figures.len());
    let x = &extractions[calibration.representative];
    let stamp = crate::baseline::write::Stamp {
        source: args.source.clone().unwrap_or_else(|| {
            format!(
                "baseline calibrate of {} runs: {}",
                args.runs.len(),
                pipeline::describe_paths(&args.runs)
            )
        }),
        date: crate::baseline::write::today(),
        device: x.run.device.clone(),
        ranks: x.run.ranks.len(),
        identity: identity.clone(),
    };
    let asserted = args
        .hardware
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty());
    let (hardware, hardware_asserted) = baseline_hardware(x, asserted, &args.runs)?;
    let meta = crate::baseline::Meta {
        hardware,
        hardware_asserted,
        model: args.model.clone(),
        precision: args.precision.clone(),
        framework: framework.or_else(|| figures[calibration.representative].framework.clone()),
        image: identity.image.clone(),
        tp: Some(x.run.ranks.len() as u32),
        ep: args.ep,
        concurrency: args.concurrency,
        moe_layers: args.analysis.moe_layers,
        ..Default::default()
    };
    let text = crate::baseline::write::new_baseline(x, &meta, &stamp);
    let mut doc: toml_edit::DocumentMut = text.parse().context("a baseline just written")?;
    cal::write_calibration(&mut doc, &calibration, &figures, true)
        .map_err(|e| anyhow::anyhow!("{}: {e}", target.display()))?;
    let gated = calibration.metrics.iter().filter(|m| m.gated).count();
    finish_calibrate(&target, "", &doc.to_string(), args.dry_run, gated)
}

/// `--from-history FILE`: the tolerances of FILE re-derived from its `[history]` alone; the
/// values stay.
fn calibrate_from_history(
    args: &BaselineCalibrateArgs,
    file: &Path,
    target: &Path,
    opts: &crate::baseline::calibrate::Options,
) -> Result<i32> {
    use crate::baseline::calibrate as cal;
    let baseline = crate::baseline::Baseline::load(file)?;
    let history = baseline
        .history
        .clone()
        .unwrap_or_else(|| crate::baseline::history::History {
            max_runs: crate::baseline::history::DEFAULT_MAX_RUNS,
            runs: Vec::new(),
        });
    if history.runs.len() < cal::MIN_RUNS {
        anyhow::bail!(
            "{}: the history holds {} runs; calibrate needs at least {} (`baseline update` adds one per run)",
            file.display(),
            history.runs.len(),
            cal::MIN_RUNS
        );
    }
    let ranks = baseline.meta.tp.unwrap_or(1) as usize;
    let mut runs = history.as_runs(
        &baseline.meta.hardware,
        ranks,
        baseline.meta.framework.as_deref(),
    );
    // The history keeps values only: the within-run error comes from the baseline's own spread.
    for def in crate::metrics::catalog::METRICS {
        if let Some(m) = baseline.metrics.get(def.name) {
            if let (Some(spread), Some(n)) = (m.spread, m.samples.filter(|&n| n > 1)) {
                let se = spread / (n as f64).sqrt()
                    * if def.statistic == crate::stats::Statistic::Mean {
                        1.0
                    } else {
                        1.2533
                    };
                for r in &mut runs {
                    r.within.insert(def.name.to_string(), se);
                }
            }
        }
    }
    let calibration = cal::calibrate(&runs, opts)?;
    report_calibration(&calibration, runs.len());
    let old = std::fs::read_to_string(file)
        .with_context(|| format!("{}: cannot read", file.display()))?;
    let mut doc: toml_edit::DocumentMut = old
        .parse()
        .map_err(|e: toml_edit::TomlError| anyhow::anyhow!("{}: {e}", file.display()))?;
    cal::write_calibration(&mut doc, &calibration, &runs, false)
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let before = if target == file {
        old
    } else {
        std::fs::read_to_string(target).unwrap_or_default()
    };
    let gated = calibration.metrics.iter().filter(|m| m.gated).count();
    finish_calibrate(target, &before, &doc.to_string(), args.dry_run, gated)
}
