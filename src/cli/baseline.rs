//! `baseline new` and `baseline update`: write a run's figures into a baseline file.

use anyhow::{Context, Result};

use super::args::{BaselineNewArgs, BaselineUpdateArgs, BaselineWriteArgs};
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
    let traced = x.run.device.clone().filter(|d| !d.trim().is_empty());
    if traced.is_none() && asserted.is_none() {
        anyhow::bail!(
            "{}: the trace names no device, so the baseline would hold for any hardware; give the run's with --hardware NAME (e.g. --hardware \"AMD Instinct MI300X\")",
            pipeline::describe_paths(&w.paths)
        );
    }
    check_run_identity(w, &x, asserted, args.tp, &identity)?;
    let stamp = stamp_for(w, &x, identity);
    let framework = args
        .framework
        .clone()
        .or_else(|| crate::identity::framework_of(&run).map(str::to_string));
    let meta = crate::baseline::Meta {
        // The trace's device where it names one (a forced --hardware that contradicts it
        // aside); else the asserted hardware, recorded as asserted.
        hardware_asserted: traced.is_none(),
        hardware: asserted.map(str::to_string).or(traced).unwrap_or_default(),
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
    let (new, changes) = crate::baseline::write::update_baseline(
        &old,
        &x,
        &stamp_for(w, &x, identity),
        args.add_new,
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", w.baseline.display()))?;
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
