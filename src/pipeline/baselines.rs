//! `baseline new`, `baseline update` and `baseline calibrate` as library calls: a run's figures
//! made into the text of a baseline file, which the caller shows, checks and writes
//! ([`BaselineText`]). What a command would say on stderr on the way (a warning, the
//! calibration's table) goes to the caller's `notes`.

use std::path::{Path, PathBuf};

use super::{describe_paths, extract, read_run, AnalysisConfig, PipelineError};
use crate::baseline::calibrate::{self as cal, Bound, RunFigures};
use crate::baseline::{Baseline, BaselineError};
use crate::identity::Identity;
use crate::metrics::Extraction;
use crate::reader::Run;

/// Why a baseline could not be written (`baseline new`, `update`, `calibrate`). Displays as one
/// line naming the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum BaselineWriteError {
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    #[error(transparent)]
    File(#[from] crate::baseline::file::BaselineFileError),
    #[error("cannot write the baseline: {0}")]
    Write(crate::baseline::file::BaselineFileError),
    #[error(transparent)]
    Calibrate(#[from] cal::CalibrateError),
    /// What was asked contradicts the run, the file or another option; nothing was written.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Trace(#[from] crate::reader::ReadError),
    #[error("{path}: cannot read: {source}")]
    CannotRead {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The baseline's text could not be edited (not TOML, or not a baseline's layout).
    #[error("{path}: {message}")]
    Edit { path: PathBuf, message: String },
}

type Result<T, E = BaselineWriteError> = std::result::Result<T, E>;

/// Returns `Refused` with a formatted message.
macro_rules! refused {
    ($($arg:tt)*) => {
        Err(BaselineWriteError::Refused(format!($($arg)*)))
    };
}

/// An edit of the baseline at `path` that failed.
fn edit_error(path: &Path) -> impl Fn(&dyn std::fmt::Display) -> BaselineWriteError + '_ {
    move |e| BaselineWriteError::Edit {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Reads a baseline's text.
fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| BaselineWriteError::CannotRead {
        path: path.to_path_buf(),
        source,
    })
}

/// What the writing of a baseline says on the way, for the caller to show (on stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// One line: a warning or what was done.
    Line(String),
    /// A block of text (the calibration's table).
    Block(String),
}

/// Where the caller hears of files read (`on_file(done, total)`) and of notes.
pub struct Progress<'a> {
    pub on_file: &'a (dyn Fn(usize, usize) + Sync),
    pub note: &'a dyn Fn(Note),
}

/// What `baseline new` and `baseline update` share.
#[derive(Debug, Clone)]
pub struct WriteSettings {
    /// The run's traces.
    pub paths: Vec<PathBuf>,
    /// The baseline file written.
    pub baseline: PathBuf,
    pub config: AnalysisConfig,
    /// `[meta] source` (default: the paths).
    pub source: Option<String>,
    /// Nothing is written, nothing locked.
    pub dry_run: bool,
    /// new: overwrite; update: accept another hardware or rank count; both: a run whose
    /// devices contradict what is asserted.
    pub force: bool,
    /// The run's image and `--meta` pairs.
    pub identity: Identity,
}

/// `baseline new`.
#[derive(Debug, Clone)]
pub struct NewSettings {
    pub write: WriteSettings,
    pub hardware: Option<String>,
    pub model: Option<String>,
    pub precision: Option<String>,
    pub framework: Option<String>,
    pub tp: Option<u32>,
    pub ep: Option<u32>,
    pub concurrency: Option<u32>,
}

/// `baseline update`.
#[derive(Debug, Clone)]
pub struct UpdateSettings {
    pub write: WriteSettings,
    /// Record a run that `check` calls a regression (as one) instead of refusing it.
    pub accept_regression: bool,
    pub add_new: bool,
    pub rebase: bool,
    pub history_size: Option<usize>,
}

/// `baseline calibrate`.
#[derive(Debug, Clone)]
pub struct CalibrateSettings {
    pub runs: Vec<PathBuf>,
    pub baseline: Option<PathBuf>,
    pub from_history: Option<PathBuf>,
    pub false_alarm: String,
    /// `--target-mdc PCT`: how many runs would bring each detectable change to PCT%.
    pub target_mdc: Option<f64>,
    pub min_tolerance: Vec<String>,
    pub max_tolerance: Vec<String>,
    pub config: AnalysisConfig,
    pub source: Option<String>,
    pub dry_run: bool,
    pub force: bool,
    pub hardware: Option<String>,
    pub model: Option<String>,
    pub precision: Option<String>,
    pub framework: Option<String>,
    pub ep: Option<u32>,
    pub concurrency: Option<u32>,
    pub identity: Identity,
}

/// A baseline file's text before and after, ready to be shown and written. Holds the file's
/// lock (unless a dry run) from reading the old text to writing the new.
pub struct BaselineText {
    pub path: PathBuf,
    pub old: String,
    pub new: String,
    _lock: Option<crate::baseline::file::Lock>,
}

impl BaselineText {
    /// The change as a unified diff; empty when there is none.
    pub fn diff(&self) -> String {
        crate::baseline::write::diff(&self.path.display().to_string(), &self.old, &self.new)
    }

    /// The new text as the gate loads it (a baseline it cannot load is never written): how
    /// many metrics it gates.
    pub fn gated_metrics(&self) -> Result<usize, BaselineError> {
        let parsed = Baseline::parse(&self.new, &self.path)?;
        Ok(parsed.metrics.values().filter(|m| m.gate).count())
    }

    /// Writes the new text: replaced whole or not at all (temporary file and rename), so a
    /// crash or a full disk cannot leave half of it; through a symlink, keeping its mode,
    /// refusing a read-only one (`baseline::file`).
    pub fn write(&self) -> Result<()> {
        Ok(crate::baseline::file::write(
            &self.path,
            self.new.as_bytes(),
        )?)
    }
}

/// `--image` and `--meta`, refused before any trace is read when a baseline cannot hold them.
pub fn check_identity(identity: &Identity) -> Result<()> {
    crate::baseline::write::check_identity(identity).map_err(BaselineWriteError::Refused)
}

fn stamp_for(
    w: &WriteSettings,
    x: &Extraction,
    identity: Identity,
) -> crate::baseline::write::Stamp {
    crate::baseline::write::Stamp {
        source: w.source.clone().unwrap_or_else(|| describe_paths(&w.paths)),
        date: crate::baseline::write::today(),
        device: x.run.device.clone(),
        ranks: x.run.ranks.len(),
        identity,
        analysis: w.config.recorded_options(),
    }
}

/// What the run says that a baseline's identity must not contradict: the ranks' devices agree
/// (no mixed hardware, no rank without a device beside ranks with one), `--hardware` is the
/// device the trace names, and `tp` (`--tp`, `--meta tp=N`) is the number of ranks. Refused
/// unless `--force`, naming the file and the fix.
fn check_run_identity(
    w: (&Path, bool),
    x: &Extraction,
    hardware: Option<&str>,
    tp: Option<u32>,
    identity: &Identity,
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
    let ranks = x.run.group_ranks;
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
    let (baseline, force) = w;
    match problems.first() {
        Some(_) if force => Ok(()),
        Some(_) => refused!(
            "{}: {}; nothing written (--force to write it anyway)",
            baseline.display(),
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
    x: &Extraction,
    asserted: Option<&str>,
    paths: &[PathBuf],
) -> Result<(String, bool)> {
    let traced = x.run.device.as_deref().filter(|d| !d.trim().is_empty());
    match (asserted, traced) {
        (Some(h), _) => Ok((h.to_string(), traced.is_none())),
        (None, Some(t)) => Ok((t.to_string(), false)),
        (None, None) => refused!(
            "{}: the trace names no device, so the baseline would hold for any hardware; give the run's with --hardware NAME (e.g. --hardware \"AMD Instinct MI300X\")",
            describe_paths(paths)
        ),
    }
}

/// `baseline new`: the text of a new baseline of the run.
pub fn new_baseline(s: &NewSettings, progress: &Progress<'_>) -> Result<BaselineText> {
    let w = &s.write;
    if w.baseline.exists() && !w.force && !w.dry_run {
        return refused!(
            "{}: already exists (use `baseline update`, or --force to overwrite)",
            w.baseline.display()
        );
    }
    check_identity(&w.identity)?;
    let asserted = s
        .hardware
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty());
    let run = read_run(&w.paths, &w.config, progress.on_file)?;
    super::require_whole(&run, &w.paths, &w.config)?;
    let x = extract(&run, &w.paths, &w.config, None)?;
    let (hardware, hardware_asserted) = baseline_hardware(&x, asserted, &w.paths)?;
    check_run_identity((&w.baseline, w.force), &x, asserted, s.tp, &w.identity)?;
    let stamp = stamp_for(w, &x, w.identity.clone().with_producer(&run));
    let framework = s
        .framework
        .clone()
        .or_else(|| crate::identity::framework_of(&run).map(str::to_string));
    let meta = crate::baseline::Meta {
        hardware,
        hardware_asserted,
        model: s.model.clone(),
        precision: s.precision.clone(),
        framework,
        image: stamp.identity.image.clone(),
        tp: s.tp.or(Some(x.run.group_ranks as u32)),
        partial_ranks: x.run.partial_ranks.clone(),
        ep: s.ep,
        concurrency: s.concurrency,
        moe_layers: w.config.moe_layers,
        ..Default::default()
    };
    let text = crate::baseline::write::new_baseline(&x, &meta, &stamp);
    let lock = (!w.dry_run)
        .then(|| crate::baseline::file::lock(&w.baseline))
        .transpose()?;
    Ok(BaselineText {
        path: w.baseline.clone(),
        old: String::new(),
        new: text,
        _lock: lock,
    })
}

/// `baseline update`: the baseline's text with the run's figures (or, for a calibrated
/// baseline or one with a history, the run added to its history).
pub fn update_baseline(s: &UpdateSettings, progress: &Progress<'_>) -> Result<BaselineText> {
    let w = &s.write;
    check_identity(&w.identity)?;
    let baseline = Baseline::load(&w.baseline)?;
    let run = read_run(&w.paths, &w.config, progress.on_file)?;
    super::require_whole(&run, &w.paths, &w.config)?;
    let x = extract(&run, &w.paths, &w.config, Some(&baseline))?;
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
    check_run_identity((&w.baseline, w.force), &x, None, None, &w.identity)?;
    if !w.force && !baseline.meta.hardware.is_empty() && device != baseline.meta.hardware {
        return refused!(
            "{}: the baseline is for {:?} but the run is on {:?}; refusing to overwrite (use --force)",
            w.baseline.display(),
            baseline.meta.hardware,
            device
        );
    }
    let ranks = x.run.group_ranks;
    if let Some(tp) = baseline
        .meta
        .tp
        .filter(|&tp| !w.force && tp as usize != ranks)
    {
        return refused!(
            "{}: the baseline is for {tp} ranks (tp) but the run has {ranks}; refusing to overwrite (use --force)",
            w.baseline.display(),
        );
    }
    if !w.force && baseline.meta.kind() != x.run.kind {
        return refused!(
            "{}: the baseline's figures are of {} (run_kind) but the run is {}; refusing to \
             overwrite (use --force)",
            w.baseline.display(),
            baseline.meta.kind().describe(),
            x.run.kind.describe()
        );
    }
    let learning =
        baseline.calibration.is_some() || baseline.history.is_some() || s.history_size.is_some();
    if learning && !s.rebase {
        refuse_other_options(&baseline, &w.config)?;
    }
    // Held from reading the old text to writing the new: a concurrent update waits, then reads
    // what this one wrote.
    let lock = (!w.dry_run)
        .then(|| crate::baseline::file::lock(&w.baseline))
        .transpose()?;
    let old = read_text(&w.baseline)?;
    let stamp = stamp_for(w, &x, w.identity.clone().with_producer(&run));
    // A run `check` would call a regression is not learned as the baseline's level unless
    // --accept-regression says it is the new one (and then it is recorded as such). A run
    // analysed with other options re-records the figures (--rebase, or a baseline that does not
    // learn): its figures are of another analysis, and no comparison with the old ones holds.
    let regression = if options_differ(&baseline, &w.config) {
        None
    } else {
        regression_of(&x, &baseline, &w.config)?
    };
    if let Some(what) = &regression {
        if !s.accept_regression {
            return refused!(
                "{}: the run is a regression against the baseline (`check` would exit 1: {what}); nothing written (--accept-regression to record it as the new level, marked as an accepted regression)",
                w.baseline.display()
            );
        }
        (progress.note)(Note::Line(format!(
            "{}: recording the run as an accepted regression ({what})",
            w.baseline.display()
        )));
    }
    // A calibrated baseline, or one with a history, learns from the run: the run joins the
    // history and the values stay as they are unless --rebase; a calibrated one takes the
    // run's image and re-derives its values from the history since the last boundary.
    let calibrated = baseline.calibration.is_some();
    let (new, changes) = if learning && !s.rebase {
        (old.clone(), Default::default())
    } else {
        crate::baseline::write::update_baseline(&old, &x, &stamp, s.add_new)
            .map_err(|e| edit_error(&w.baseline)(&e))?
    };
    let new = if learning {
        let mut doc: toml_edit::DocumentMut = new
            .parse()
            .map_err(|e: toml_edit::TomlError| edit_error(&w.baseline)(&e))?;
        crate::baseline::history::append(
            &mut doc,
            &x,
            &stamp.date,
            stamp.identity.image.as_deref(),
            &stamp.source,
            s.history_size,
            regression.as_deref(),
        )
        .map_err(|e| edit_error(&w.baseline)(&e))?;
        if calibrated && !s.rebase {
            rederive_calibrated(&mut doc, &stamp.identity, &w.baseline, progress)?;
        }
        doc.to_string()
    } else {
        new
    };
    let shown = w.baseline.display();
    if !changes.lacking.is_empty() {
        (progress.note)(Note::Line(format!(
            "warning: {shown}: the run does not produce {}; their old figures are kept",
            changes.lacking.join(", ")
        )));
    }
    if !changes.not_added.is_empty() {
        (progress.note)(Note::Line(format!(
            "warning: {shown}: the run also has {}, not in the baseline and not added (--add-new to add them)",
            changes.not_added.join(", ")
        )));
    }
    Ok(BaselineText {
        path: w.baseline.clone(),
        old,
        new,
        _lock: lock,
    })
}

/// The run is analysed with other options than the baseline's figures were.
fn options_differ(baseline: &Baseline, config: &AnalysisConfig) -> bool {
    !crate::baseline::options::differences(&baseline.analysis_options(), &config.recorded_options())
        .is_empty()
}

/// A run analysed with other options than the baseline's figures would join its `[history]`
/// as figures of another analysis: refused (`--rebase` re-records the values instead).
fn refuse_other_options(baseline: &Baseline, config: &AnalysisConfig) -> Result<()> {
    let moved = crate::baseline::options::differences(
        &baseline.analysis_options(),
        &config.recorded_options(),
    );
    if moved.is_empty() {
        return Ok(());
    }
    let said: Vec<String> = moved
        .iter()
        .map(|(base, run)| format!("made with {base}, the run analysed with {run}"))
        .collect();
    refused!(
        "{}: the baseline's figures were {}: the run's values would join [history] as figures of          another analysis; give the baseline's options, or --rebase to re-record its values          with these; nothing written",
        baseline.path.display(),
        said.join("; ")
    )
}

/// What `check` of the run against the baseline calls a regression ("moe_us_per_layer +15.2%
/// beyond 3.83%, ..."), or `None` when it does not.
fn regression_of(
    x: &Extraction,
    baseline: &Baseline,
    config: &AnalysisConfig,
) -> Result<Option<String>> {
    let file_rules = config
        .taxonomy()
        .map_err(PipelineError::from)?
        .user_rules()
        .to_vec();
    let baseline_rules = baseline.taxonomy_rules().map_err(PipelineError::from)?;
    let edits = crate::gate::Edits {
        file_rules: &file_rules,
        baseline_rules: &baseline_rules,
        moe_layers: config.moe_layers,
        allow_override: false,
        // Options are compared before (refuse_other_options), or re-recorded by --rebase.
        analysis: None,
    };
    let result = crate::gate::check(x, baseline, &Default::default(), &edits);
    if result.status != crate::gate::Status::Regression {
        return Ok(None);
    }
    let regressed: Vec<String> = result
        .metrics
        .iter()
        .filter(|m| m.gated && m.verdict == crate::gate::Verdict::Regressed)
        .map(|m| {
            let change = m
                .change_pct
                .map(|p| {
                    format!(
                        " {}{}%",
                        if p >= 0.0 { "+" } else { "" },
                        crate::units::fixed(p, 1)
                    )
                })
                .unwrap_or_default();
            let tolerance = m
                .tolerance
                .as_deref()
                .map(|t| format!(" beyond {t}"))
                .unwrap_or_default();
            format!("{}{change}{tolerance}", m.name)
        })
        .collect();
    Ok(Some(if regressed.is_empty() {
        result.summary.clone()
    } else {
        regressed.join(", ")
    }))
}

/// `baseline update` of a calibrated baseline: the run's image in `[meta]`, and each metric's
/// value the median of the history since its last boundary (image or accepted regression); the
/// calibrated tolerances stay. Says so.
fn rederive_calibrated(
    doc: &mut toml_edit::DocumentMut,
    identity: &crate::identity::Identity,
    path: &Path,
    progress: &Progress<'_>,
) -> Result<()> {
    crate::baseline::write::stamp_identity_of(doc, identity);
    let history: crate::baseline::history::History =
        toml::from_str::<toml::Table>(&doc.to_string())
            .ok()
            .and_then(|t| t.get("history").cloned())
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| {
                BaselineWriteError::Refused(format!(
                    "{}: [history] could not be read back",
                    path.display()
                ))
            })?;
    let level = history.current_level();
    let medians = level.medians();
    let metrics = doc
        .get_mut("metrics")
        .and_then(toml_edit::Item::as_table_mut)
        .ok_or_else(|| {
            BaselineWriteError::Refused(format!("{}: no [metrics] table", path.display()))
        })?;
    let mut changed = 0;
    for (id, v) in &medians {
        if let Some(t) = metrics
            .get_mut(id.name())
            .and_then(toml_edit::Item::as_table_mut)
        {
            if t.contains_key("value") {
                t.insert(
                    "value",
                    toml_edit::value(crate::baseline::write::round6(*v)),
                );
                changed += 1;
            }
        }
    }
    (progress.note)(Note::Line(format!(
        "{}: calibrated baseline: the run joined [history]; {changed} values re-derived as the median of the {} runs since the last image or accepted regression; the calibrated tolerances kept{}",
        path.display(),
        level.runs.len(),
        identity
            .image
            .as_deref()
            .map(|i| format!("; image {i} recorded"))
            .unwrap_or_default()
    )));
    Ok(())
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

fn calibrate_options(s: &CalibrateSettings) -> Result<cal::Options> {
    let bounds = |list: &[String], flag: &str| -> Result<Vec<Bound>> {
        list.iter()
            .map(|t| {
                t.parse::<Bound>()
                    .map_err(|e| BaselineWriteError::Refused(format!("{flag} {e}")))
            })
            .collect()
    };
    Ok(cal::Options {
        false_alarm_pct: cal::parse_false_alarm(&s.false_alarm)
            .map_err(BaselineWriteError::Refused)?,
        min: bounds(&s.min_tolerance, "--min-tolerance")?,
        max: bounds(&s.max_tolerance, "--max-tolerance")?,
        target_mdc_pct: match s.target_mdc {
            Some(t) if !(t.is_finite() && t > 0.0) => {
                return refused!("--target-mdc {t}: give a percentage above 0, e.g. 2");
            }
            t => t,
        },
    })
}

/// Says what was left out, how far each kept run is from the median, how much the few runs
/// widen the tolerances, and the table.
fn report_calibration(
    calibration: &cal::Calibration,
    runs: &[RunFigures],
    target_mdc: Option<f64>,
    note: &dyn Fn(Note),
) {
    let total = runs.len();
    for o in &calibration.outliers {
        note(Note::Line(format!(
            "warning: {} left out as an outlier among the runs: {}",
            o.label,
            o.reasons.join(", ")
        )));
    }
    let n = calibration.kept.len();
    if n < cal::RECOMMENDED_RUNS {
        note(Note::Line(format!(
            "warning: calibrated from {n} runs; {} or more give tolerances and detectable changes that are not mostly small-sample margin (see the table)",
            cal::RECOMMENDED_RUNS
        )));
    }
    for m in calibration.metrics.iter().filter(|m| !m.gated) {
        if let Some(why) = &m.too_noisy {
            note(Note::Line(format!(
                "warning: {}: {why}; written with gate = false",
                m.name
            )));
        }
    }
    let z = calibration.known_spread_z();
    note(Note::Block(format!(
        "kept runs, each by its furthest gated metric from the median:\n{}\n",
        cal::distances(calibration, runs)
            .iter()
            .map(|d| format!("  {d}"))
            .collect::<Vec<_>>()
            .join("\n")
    )));
    note(Note::Block(format!(
        "calibrated from {n} of {total} runs, false-alarm budget {}% over {} gated metrics; the spread of {n} runs is itself uncertain ({} degrees of freedom), so tolerances take Student's t {} where a known spread would take z {}: tolerances and detectable changes are wider with few runs{}:\n{}",
        calibration.false_alarm_pct,
        calibration.metrics.len(),
        crate::units::fixed(calibration.df, 1),
        crate::units::stat(calibration.z),
        crate::units::stat(z),
        if target_mdc.is_some() { "; the last column says how many runs in all would bring each to the target" } else { " (--target-mdc PCT says how many runs would bring each to a target)" },
        cal::table(calibration, target_mdc)
    )));
}

/// The file `baseline calibrate` writes: `--baseline`, else the `--from-history` file.
pub fn calibrate_target(s: &CalibrateSettings) -> Result<PathBuf> {
    s.baseline
        .clone()
        .or_else(|| s.from_history.clone())
        .ok_or_else(|| BaselineWriteError::Refused("--baseline FILE is required".into()))
}

/// `baseline calibrate`: a calibrated baseline from several runs, or the tolerances of a
/// baseline re-derived from its history (`from_history`). Returns the text and how many
/// metrics it gates.
pub fn calibrate(s: &CalibrateSettings, progress: &Progress<'_>) -> Result<(BaselineText, usize)> {
    let target = calibrate_target(s)?;
    let opts = calibrate_options(s)?;
    let identity = &s.identity;
    check_identity(identity)?;
    if let Some(file) = &s.from_history {
        return calibrate_from_history(file, &target, &opts, progress);
    }
    if s.runs.len() < cal::MIN_RUNS {
        return Err(cal::CalibrateError::TooFewRuns(s.runs.len()).into());
    }
    if target.exists() && !s.force && !s.dry_run {
        return refused!(
            "{}: already exists (--force to overwrite it with the calibrated baseline)",
            target.display()
        );
    }
    let framework = s
        .framework
        .clone()
        .or_else(|| identity.meta.get("framework").cloned());
    let mut figures = Vec::with_capacity(s.runs.len());
    let mut extractions = Vec::with_capacity(s.runs.len());
    for run_arg in &s.runs {
        let paths = run_paths(run_arg);
        let run: Run = read_run(&paths, &s.config, progress.on_file)?;
        super::require_whole(&run, &paths, &s.config)?;
        let x = extract(&run, &paths, &s.config, None)?;
        // `calibrate` writes only what `new` would accept of each run: --hardware and
        // --meta tp=N must not contradict it.
        check_run_identity(
            (&target, s.force),
            &x,
            s.hardware
                .as_deref()
                .map(str::trim)
                .filter(|h| !h.is_empty()),
            None,
            identity,
        )?;
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
    report_calibration(&calibration, &figures, s.target_mdc, progress.note);
    let x = &extractions[calibration.representative];
    let stamp = crate::baseline::write::Stamp {
        source: s.source.clone().unwrap_or_else(|| {
            format!(
                "baseline calibrate of {} runs: {}",
                s.runs.len(),
                describe_paths(&s.runs)
            )
        }),
        date: crate::baseline::write::today(),
        device: x.run.device.clone(),
        ranks: x.run.ranks.len(),
        identity: identity.clone(),
        analysis: s.config.recorded_options(),
    };
    let asserted = s
        .hardware
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty());
    let (hardware, hardware_asserted) = baseline_hardware(x, asserted, &s.runs)?;
    let meta = crate::baseline::Meta {
        hardware,
        hardware_asserted,
        model: s.model.clone(),
        precision: s.precision.clone(),
        framework: framework.or_else(|| figures[calibration.representative].framework.clone()),
        image: identity.image.clone(),
        tp: Some(x.run.group_ranks as u32),
        partial_ranks: x.run.partial_ranks.clone(),
        ep: s.ep,
        concurrency: s.concurrency,
        moe_layers: s.config.moe_layers,
        ..Default::default()
    };
    let text = crate::baseline::write::new_baseline(x, &meta, &stamp);
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| edit_error(&target)(&e))?;
    cal::write_calibration(&mut doc, &calibration, &figures, true)
        .map_err(|e| edit_error(&target)(&e))?;
    let gated = calibration.metrics.iter().filter(|m| m.gated).count();
    let text = BaselineText {
        path: target,
        old: String::new(),
        new: doc.to_string(),
        _lock: None,
    };
    Ok((text, gated))
}

/// `--from-history FILE`: the tolerances of FILE re-derived from its `[history]` alone; the
/// values stay.
fn calibrate_from_history(
    file: &Path,
    target: &Path,
    opts: &cal::Options,
    progress: &Progress<'_>,
) -> Result<(BaselineText, usize)> {
    let baseline = Baseline::load(file)?;
    let history = baseline
        .history
        .clone()
        .unwrap_or_else(|| crate::baseline::history::History {
            max_runs: crate::baseline::history::DEFAULT_MAX_RUNS,
            runs: Vec::new(),
        });
    if history.runs.len() < cal::MIN_RUNS {
        return refused!(
            "{}: the history holds {} runs; calibrate needs at least {} (`baseline update` adds one per run)",
            file.display(),
            history.runs.len(),
            cal::MIN_RUNS
        );
    }
    let ranks = baseline.meta.tp.unwrap_or(1) as usize;
    let start = history.level_start();
    if start > 0 {
        let r = &history.runs[start];
        let why = match &r.accepted_regression {
            Some(what) => format!("an accepted regression ({what})"),
            None => format!(
                "a new image ({} after {})",
                r.image.as_deref().unwrap_or("none"),
                history.runs[start - 1].image.as_deref().unwrap_or("none")
            ),
        };
        (progress.note)(Note::Line(format!(
            "{}: the history's runs 1-{start} are of an earlier level: run {} is {why}; calibrating from the {} runs since",
            file.display(),
            start + 1,
            history.runs.len() - start
        )));
    }
    let history = history.current_level();
    if history.runs.len() < cal::MIN_RUNS {
        return refused!(
            "{}: the history holds {} runs since its last image or accepted regression; calibrate needs at least {} (`baseline update` adds one per run)",
            file.display(),
            history.runs.len(),
            cal::MIN_RUNS
        );
    }
    let mut runs = history.as_runs(
        &baseline.meta.hardware,
        ranks,
        baseline.meta.framework.as_deref(),
    );
    // The history keeps values only: the within-run error comes from the baseline's own spread.
    for def in crate::metrics::catalog::METRICS {
        if let Some(m) = baseline.metrics.get(&def.id) {
            if let (Some(spread), Some(n)) = (m.spread, m.samples.filter(|&n| n > 1)) {
                let se = spread / (n as f64).sqrt()
                    * if def.statistic == crate::stats::Statistic::Mean {
                        1.0
                    } else {
                        1.2533
                    };
                for r in &mut runs {
                    r.within.insert(def.id, se);
                }
            }
        }
    }
    let calibration = cal::calibrate(&runs, opts)?;
    report_calibration(&calibration, &runs, opts.target_mdc_pct, progress.note);
    let old = read_text(file)?;
    let mut doc: toml_edit::DocumentMut = old
        .parse()
        .map_err(|e: toml_edit::TomlError| edit_error(file)(&e))?;
    cal::write_calibration(&mut doc, &calibration, &runs, false)
        .map_err(|e| edit_error(file)(&e))?;
    let before = if target == file {
        old
    } else {
        std::fs::read_to_string(target).unwrap_or_default()
    };
    let gated = calibration.metrics.iter().filter(|m| m.gated).count();
    let text = BaselineText {
        path: target.to_path_buf(),
        old: before,
        new: doc.to_string(),
        _lock: None,
    };
    Ok((text, gated))
}
