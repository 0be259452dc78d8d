//! A whole run against a baseline: one judgement per metric, one status for the run.

use rayon::prelude::*;
use serde::Serialize;

use super::explain::{explain, Explanation};
use super::verdict::{judge_widened, MetricCheck, Observation, Verdict};
use crate::baseline::{Baseline, Meta};
use crate::exit;
use crate::metrics::catalog::{MetricDef, Samples, METRICS};
use crate::metrics::{Extraction, Metric, MetricId};
use crate::units::Unit;

/// Version of the check JSON schema (`check --format json`, `--verdict-out`); 2: `unclassified`
/// names its pooled shares `other_share_pct` and `baseline_other_share_pct`.
pub(crate) const CHECK_SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Fail on an improvement beyond tolerance too, so that baselines cannot drift loose.
    pub fail_on_improvement: bool,
    /// Judge a run on other hardware (or another rank count) than the baseline's anyway.
    pub allow_other_hardware: bool,
    /// Judge a run of another decode batch than the baseline's anyway.
    pub allow_other_batch: bool,
    /// The run's hardware, asserted by the user (`--hardware`) where the trace does not name it
    /// or the baseline does not say.
    pub hardware: Option<String>,
    /// Judge a run whose flags override a structural field the baseline records (`--moe-layers`
    /// against its `moe_layers`), which is otherwise exit 2; the report says so.
    pub allow_override: bool,
}

/// The outcome of the whole check, one meaning per exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Regression,
    CannotJudge,
}

impl Status {
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Pass => exit::PASS,
            Status::Regression => exit::REGRESSION,
            Status::CannotJudge => exit::CANNOT_JUDGE,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub schema_version: u32,
    pub status: Status,
    pub exit_code: i32,
    /// One line for the top of a report.
    pub summary: String,
    /// Why the run cannot be judged against this baseline at all (other hardware, other rank
    /// count); empty when it can.
    pub problems: Vec<String>,
    pub baseline: BaselineInfo,
    pub run: RunSummary,
    pub metrics: Vec<MetricCheck>,
    pub explanation: Explanation,
    /// What the baseline's calibration and history say of each metric (calibrated tolerance,
    /// minimum detectable change, between-run spread of the history); empty for a baseline
    /// with neither.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calibration: Vec<CalibrationNote>,
    /// The run's decode steps against the baseline, for the markdown chart; not in the JSON,
    /// whose `metrics` hold their statistics.
    #[serde(skip)]
    pub decode_series: DecodeSeries,
}

/// A metric's calibration as the baseline records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationNote {
    pub metric: MetricId,
    /// Clean runs the tolerance was calibrated from, while the tolerance is still the one
    /// calibrated (a tolerance edited by hand is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibrated_runs: Option<u32>,
    /// Minimum detectable change (the smallest regression caught in 95% of runs), in the
    /// metric's unit, and relative to the value, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mdc: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mdc_pct: Option<f64>,
    /// The history's between-run spread that widened the interval, in the metric's unit, and
    /// the runs it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_spread: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_runs: Option<usize>,
    /// The baseline's `[calibration]` names the metric, but its tolerance is not the one
    /// calibrated: edited in `[metrics]`, or the table's figures edited (its digest no longer
    /// matches). Shown as hand-set, never as calibrated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hand_set: bool,
}

/// The calibration notes of the metrics judged.
fn calibration_notes(b: &Baseline, metrics: &[MetricCheck]) -> Vec<CalibrationNote> {
    metrics
        .iter()
        .filter(|m| m.gated)
        .filter_map(|m| {
            let base = b.metrics.get(&m.name)?;
            let named = b
                .calibration
                .as_ref()
                .is_some_and(|c| c.metrics.contains_key(m.name.name()));
            let calibrated = b.calibration.as_ref().and_then(|c| {
                let cm = c.metrics.get(m.name.name())?;
                // A tolerance edited since the calibration, or a table edited by hand (its
                // digest no longer matches), is no longer the calibrated one.
                (c.intact() && cm.tolerance == base.tolerance).then_some((c.runs, cm))
            });
            let hand_set = named && calibrated.is_none();
            let history = b.history.as_ref().and_then(|h| h.spread(m.name));
            if calibrated.is_none() && history.is_none() && !hand_set {
                return None;
            }
            Some(CalibrationNote {
                metric: m.name,
                calibrated_runs: calibrated.map(|(runs, _)| runs),
                mdc: calibrated.map(|(_, cm)| cm.mdc),
                mdc_pct: calibrated.and_then(|(_, cm)| cm.mdc_pct),
                history_spread: history.map(|(s, _)| s),
                history_runs: history.map(|(_, n)| n),
                hand_set,
            })
        })
        .collect()
}

/// Every decode step found on the rank that decided `decode_step_ms` (warm-up, kept and left
/// out, in start order), with the baseline's value and the allowance its tolerance gives.
#[derive(Debug, Clone, Default)]
pub struct DecodeSeries {
    pub steps: Vec<DecodePoint>,
    pub baseline_ms: Option<f64>,
    pub allowance_ms: Option<f64>,
    /// The rank the steps are of.
    pub rank: Option<u32>,
}

pub(crate) use crate::steps::{DecodePoint, PointKind};

#[derive(Debug, Clone, Serialize)]
pub struct BaselineInfo {
    pub path: String,
    pub meta: Meta,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub device: Option<String>,
    pub ranks: Vec<u32>,
    /// Which ranks of how many a partial run holds (`--partial-ranks`), "0 of 4".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial_ranks: Option<String>,
    pub decode_steps_kept: usize,
    /// Sequences decoded per step, where the trace says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<f64>,
    /// The serving framework the trace tells (`sglang`, `vllm`), where it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    /// `device` was asserted with `--hardware`, not read from the trace.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hardware_asserted: bool,
    /// `device` is the baseline's asserted hardware: the trace names no device and the baseline
    /// was made from a run that named none either (`hardware_asserted` in its `[meta]`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hardware_from_baseline: bool,
    pub warnings: Vec<String>,
    /// `image` and `meta`: what the run was made with (`--image`, `--meta`), as given.
    #[serde(flatten)]
    pub identity: crate::identity::Identity,
}

/// How the gate reads a metric's samples: the statistic its value is, and whether the samples
/// are draws it can resample at all (one value per rank is not: judged on the value).
fn observation(def: &MetricDef, m: &Metric) -> Observation {
    let samples = match def.samples {
        Samples::PerStep | Samples::PerCall => m.samples.clone(),
        Samples::PerRank | Samples::Count => Vec::new(),
    };
    Observation {
        value: m.value,
        samples,
        statistic: def.statistic,
    }
}

/// One metric against its baseline entry; a metric the baseline lacks is listed as new, and one
/// neither has is left out.
fn check_metric(spec: &MetricDef, x: &Extraction, b: &Baseline) -> Option<MetricCheck> {
    let current = x.metrics.get(&spec.id);
    let Some(base) = b.metrics.get(&spec.id) else {
        return current.map(|m| new_metric(spec.id, m));
    };
    // The metric's own direction: a baseline that says otherwise is refused when it is read.
    let direction = spec.direction;
    let observed = current.map(|m| observation(spec, m));
    let between_run = b
        .history
        .as_ref()
        .and_then(|h| h.spread(spec.id))
        .map_or(0.0, |(s, _)| s);
    let j = judge_widened(
        base,
        direction,
        spec.unit,
        observed.as_ref(),
        seed_of(spec.name()),
        between_run,
    );
    Some(MetricCheck {
        name: spec.id,
        unit: spec.unit,
        direction,
        gated: base.gate,
        baseline: Some(base.value),
        current: current.map(|m| m.value),
        change: j.change,
        change_pct: j.change_pct,
        tolerance: Some(base.tolerance.to_string()),
        allowance: Some(j.allowance),
        interval: j.interval,
        samples: observed.map_or(0, |o| o.samples.len()),
        verdict: j.verdict,
        artefact: None,
    })
}

/// A stable seed per metric, so the same run always gets the same interval.
fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

pub(crate) fn check(
    x: &Extraction,
    b: &Baseline,
    opts: &CheckOptions,
    edits: &super::integrity::Edits<'_>,
) -> CheckResult {
    // Metrics are judged side by side: a bootstrap over a run's pooled collective calls is most
    // of a check's time. Each has its own seed, so the result is the same on any thread count.
    let mut metrics: Vec<MetricCheck> = METRICS
        .par_iter()
        .filter_map(|spec| check_metric(spec, x, b))
        .collect();
    let mut problems = unjudgeable(x, &metrics);
    problems.extend(mismatches(x, b, opts));
    let mut integrity = super::integrity::findings(x, b, edits);
    // The analysis options and the built-in taxonomy against the baseline's.
    super::configuration::findings(x, b, edits, &mut integrity);
    problems.extend(integrity.problems);
    let explanation = explain(x, b, &metrics);
    mark_artefacts(&mut metrics, &explanation);
    let status = if problems.is_empty() {
        status_of(&metrics, opts)
    } else {
        Status::CannotJudge
    };
    let (device, source) = run_hardware(x, b, opts);
    let run = RunSummary {
        device,
        hardware_asserted: source == HardwareSource::Asserted,
        hardware_from_baseline: source == HardwareSource::Baseline,
        ranks: x.run.ranks.clone(),
        partial_ranks: x.run.partial_ranks.clone(),
        decode_steps_kept: x.steps.values().map(|s| s.decode_kept).min().unwrap_or(0),
        batch: x.decode_batch,
        framework: x.run.framework.clone(),
        warnings: x.warnings.iter().cloned().chain(integrity.notes).collect(),
        identity: Default::default(),
    };
    CheckResult {
        schema_version: CHECK_SCHEMA_VERSION,
        status,
        exit_code: status.exit_code(),
        summary: match problems.first() {
            Some(p) => format!("CANNOT JUDGE: {p}"),
            None => summary_line(status, &metrics),
        },
        problems,
        baseline: BaselineInfo {
            path: b.path.display().to_string(),
            meta: b.meta.clone(),
        },
        run,
        decode_series: decode_series(x, &metrics, &explanation),
        calibration: calibration_notes(b, &metrics),
        metrics,
        explanation,
    }
}

/// The decode steps the chart draws: of the rank the cause names (the stalled or the straggling
/// rank), so that "Why" and the chart tell one story about one rank; else of the rank that
/// decided `decode_step_ms`.
fn decode_series(x: &Extraction, metrics: &[MetricCheck], e: &Explanation) -> DecodeSeries {
    use super::explain::Cause;
    let judged = metrics.iter().find(|m| m.name == MetricId::DecodeStepMs);
    let rank = match &e.cause {
        Cause::Stalls { rank, .. } | Cause::Straggler { rank, .. } => Some(*rank),
        _ => x
            .metrics
            .get(&MetricId::DecodeStepMs)
            .and_then(|m| m.decided_by),
    };
    let steps = rank
        .and_then(|r| x.rank_steps.iter().find(|s| s.rank.index == r))
        .map(crate::steps::decode_points)
        .unwrap_or_default();
    DecodeSeries {
        steps,
        baseline_ms: judged.and_then(|m| m.baseline),
        allowance_ms: judged.and_then(|m| m.allowance),
        rank,
    }
}

/// Where the hardware a run is judged as comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HardwareSource {
    Trace,
    Asserted,
    Baseline,
    Unknown,
}

/// The hardware the run is on, for the report: the device the trace names (even when
/// `--hardware` contradicts it: the report must not show the asserted name for a run that says
/// otherwise; asserted when `--hardware` says the same), else what `--hardware` asserts, else
/// the baseline's asserted hardware.
fn run_hardware(
    x: &Extraction,
    b: &Baseline,
    opts: &CheckOptions,
) -> (Option<String>, HardwareSource) {
    let traced = x.run.device.clone().filter(|d| !d.trim().is_empty());
    let asserted = opts
        .hardware
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(str::to_string);
    match (traced, asserted) {
        (Some(t), Some(a)) if t.trim() == a => (Some(a), HardwareSource::Asserted),
        (Some(t), _) => (Some(t), HardwareSource::Trace),
        (None, Some(a)) => (Some(a), HardwareSource::Asserted),
        (None, None) if baseline_asserts_hardware(b) => (
            Some(b.meta.hardware.trim().to_string()),
            HardwareSource::Baseline,
        ),
        (None, None) => (None, HardwareSource::Unknown),
    }
}

/// The baseline names hardware that was asserted for a trace naming no device.
fn baseline_asserts_hardware(b: &Baseline) -> bool {
    b.meta.hardware_asserted && !b.meta.hardware.trim().is_empty()
}

/// Why the ranks' devices cannot be taken as one hardware: ranks that name different devices,
/// or a rank that names none beside ranks that name one (it cannot be assumed to be on theirs).
/// Each names the files.
pub(crate) fn device_problems(x: &Extraction) -> Vec<String> {
    let mut problems = Vec::new();
    // Each device named with the files that name it.
    let mut devices: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    let mut unnamed: Vec<String> = Vec::new();
    for (file, device) in &x.run.trace_devices {
        if device.is_empty() {
            unnamed.push(file.display().to_string());
        } else {
            devices
                .entry(device)
                .or_default()
                .push(file.display().to_string());
        }
    }
    if devices.len() > 1 {
        let list: Vec<String> = devices
            .iter()
            .map(|(d, files)| format!("{d} in {}", files.join(", ")))
            .collect();
        problems.push(format!(
            "the ranks are on different hardware: {}",
            list.join("; ")
        ));
    }
    if !devices.is_empty() && !unnamed.is_empty() {
        unnamed.sort();
        unnamed.dedup();
        let named: Vec<&str> = devices.keys().copied().collect();
        problems.push(format!(
            "{} name{} no device while the other ranks name {}: a rank's hardware is never assumed (record every rank's trace with its device properties)",
            unnamed.join(", "),
            if unnamed.len() == 1 { "s" } else { "" },
            named.join(", ")
        ));
    }
    problems
}

/// How far apart two figures may be before they cannot be of one configuration.
const OTHER_CONFIGURATION_RATIO: f64 = 10.0;

/// Why nothing can be judged, whatever `--allow-other-hardware` says: a baseline that gates
/// nothing, ranks on different hardware, a baseline whose every gated figure is more than 10x
/// away from the run's.
fn unjudgeable(x: &Extraction, metrics: &[MetricCheck]) -> Vec<String> {
    let mut problems = Vec::new();
    if !metrics.iter().any(|m| m.gated) {
        problems.push(
            "the baseline gates no metric, so nothing would be judged (0 gated metrics)"
                .to_string(),
        );
    }
    problems.extend(device_problems(x));
    // Figures both sides have, non-zero and finite: a ratio means something.
    let far: Vec<(bool, &MetricCheck)> = metrics
        .iter()
        .filter(|m| m.gated)
        .filter_map(|m| {
            let (base, cur) = (m.baseline?, m.current?);
            let comparable = base.is_finite() && cur.is_finite() && base != 0.0 && cur != 0.0;
            comparable.then(|| {
                let ratio = (cur / base).abs();
                let apart = base.signum() != cur.signum()
                    || !(1.0 / OTHER_CONFIGURATION_RATIO..=OTHER_CONFIGURATION_RATIO)
                        .contains(&ratio);
                (apart, m)
            })
        })
        .collect();
    if !far.is_empty() && far.iter().all(|(apart, _)| *apart) {
        let names: Vec<&str> = far.iter().map(|(_, m)| m.name.name()).collect();
        problems.push(format!(
            "this baseline is not of this configuration: every gated metric differs from the run by more than {OTHER_CONFIGURATION_RATIO}x ({})",
            names.join(", ")
        ));
    }
    problems
}

/// A baseline for other hardware or another rank count says nothing about this run, and
/// neither does one whose hardware is unknown on either side, unless `--hardware` asserts it
/// (`--allow-other-hardware` lets another hardware or rank count through, not an unknown one).
fn mismatches(x: &Extraction, b: &Baseline, opts: &CheckOptions) -> Vec<String> {
    let mut problems = Vec::new();
    let asserted = opts
        .hardware
        .as_deref()
        .map(str::trim)
        .filter(|h| !h.is_empty());
    let traced = x.run.device.as_deref().filter(|d| !d.is_empty());
    let baseline = b.meta.hardware.trim();
    match (asserted, traced) {
        (Some(a), Some(t)) if a != t => problems.push(format!(
            "--hardware asserts {a:?} but the trace says the run is on {t:?}"
        )),
        // A baseline made with --hardware from a run that named no device takes such a run as
        // on its hardware; the report says so.
        (None, None) if baseline_asserts_hardware(b) => {}
        (None, None) => problems.push(
            "the run's hardware is unknown: the trace names no device (--hardware NAME to assert it)"
                .to_string(),
        ),
        _ => {}
    }
    let run = asserted
        .or(traced)
        .or(Some(baseline).filter(|_| baseline_asserts_hardware(b)));
    if baseline.is_empty() {
        if asserted.is_none() {
            problems.push(
                "the baseline names no hardware (hardware = \"\"), so it could be of any (--hardware NAME to assert the run's)"
                    .to_string(),
            );
        }
    } else if let Some(run) = run.filter(|_| !opts.allow_other_hardware) {
        if run != baseline {
            problems.push(format!(
                "the baseline is for {baseline:?} but the run is on {run:?} (--allow-other-hardware to judge anyway)"
            ));
        }
    }
    problems.extend(moved_kernels(b));
    if !opts.allow_other_batch {
        problems.extend(other_batch(x, b));
    }
    problems.extend(other_step_mix(x, b));
    if b.meta.tp.is_none() {
        problems.push(format!(
            "{}: the baseline has no `tp` in [meta], the rank count it is of, so it would judge a \
             run of any rank count: add `tp = N`, or run `tracegate baseline update --baseline {}`, \
             which adds it from the run",
            b.path.display(),
            b.path.display()
        ));
    }
    if let Some(tp) = b.meta.tp.filter(|_| !opts.allow_other_hardware) {
        if tp as usize != x.run.group_ranks {
            problems.push(format!(
                "the baseline is for {tp} ranks (tp) but the run has {} (--allow-other-hardware to judge anyway)",
                x.run.group_ranks
            ));
        }
    }
    problems.extend(other_rank_set(x, b));
    problems.extend(other_run_kind(x, b));
    if !opts.allow_other_hardware {
        problems.extend(super::configuration::other_framework(x, b));
    }
    problems
}

/// A serving run judged against a loop's baseline (or the other way round) shares few metrics
/// with it, and would pass on those alone: refused.
fn other_run_kind(x: &Extraction, b: &Baseline) -> Option<String> {
    let (run, base) = (x.run.kind, b.meta.kind());
    (run != base).then(|| {
        format!(
            "the run is {} but the baseline's figures are of {} (run_kind): another kind of run, \
             so the check cannot judge it",
            run.describe(),
            base.describe()
        )
    })
}

/// A partial run (`--partial-ranks`) is judged only against a baseline of the same ranks, and a
/// whole run only against a whole baseline: waits, skew and stragglers depend on the ranks held.
fn other_rank_set(x: &Extraction, b: &Baseline) -> Option<String> {
    let (run, base) = (&x.run.partial_ranks, &b.meta.partial_ranks);
    if run == base {
        return None;
    }
    let said = |p: &Option<String>| match p {
        Some(p) => format!("ranks {p}"),
        None => "every rank".to_string(),
    };
    Some(format!(
        "the run holds {} but the baseline's figures are of {} (partial_ranks): waits, skew and \
         stragglers depend on the ranks present, so only a run of the same ranks is judged",
        said(run),
        said(base)
    ))
}

/// A run of another decode batch than the baseline's (by more than 10%) is of another load:
/// its time per token says nothing against the baseline's.
fn other_batch(x: &Extraction, b: &Baseline) -> Option<String> {
    let (run, base) = (x.decode_batch?, f64::from(b.meta.batch?));
    ((run - base).abs() > 0.1 * base).then(|| {
        format!(
            "the run decodes {} sequences per step, the baseline {} (batch): another load, so its \
             time per token says nothing against the baseline's (--allow-other-batch to judge anyway)",
            Unit::Count.number(run),
            Unit::Count.number(base)
        )
    })
}

/// A share of kernel time (%) in a kind of step the baseline has (almost) none of, from which
/// on that kind counts as appeared.
const APPEARED_SHARE_PCT: f64 = 1.0;

/// A run whose time is spent in other kinds of step than the baseline's is another workload: its
/// decode share fell by more than a quarter of itself, or mixed or other-label steps hold a
/// share the baseline's run did not have.
fn other_step_mix(x: &Extraction, b: &Baseline) -> Option<String> {
    let base = b.step_mix?;
    let run = x.step_mix;
    let fell = run.decode_pct < 0.75 * base.decode_pct;
    let appeared = |r: f64, b: f64| r >= APPEARED_SHARE_PCT && b < r / 10.0;
    let new_kind = appeared(run.mixed_pct, base.mixed_pct)
        || appeared(run.other_label_pct, base.other_label_pct);
    if !fell && !new_kind {
        return None;
    }
    let moved: Vec<String> = run
        .kinds()
        .iter()
        .zip(base.kinds())
        .filter(|((_, r), (_, b))| (r - b).abs() >= 0.5)
        .map(|((kind, r), (_, b))| {
            format!("{kind} {} → {}", Unit::Pct.figure(b), Unit::Pct.figure(*r))
        })
        .collect();
    Some(format!(
        "the run's steps are of another mix than the baseline's (share of kernel time: {}): \
         decode steps were relabelled or another workload ran, so its decode figures say nothing \
         against the baseline's",
        moved.join(", ")
    ))
}

/// A baseline whose own `[[rules]]` move a kernel its `[breakdown]` records in another category
/// was recorded under other rules: its figures and the run's would be of different taxonomies.
fn moved_kernels(b: &Baseline) -> Option<String> {
    let moved = b.rules_moving_recorded_kernels();
    let first = moved.first()?;
    let more = match moved.len() - 1 {
        0 => String::new(),
        1 => " (and 1 more kernel)".to_string(),
        n => format!(" (and {n} more kernels)"),
    };
    Some(format!(
        "{}: {} moves kernel {} to {}, but the baseline's [breakdown] records it as {}{more}: its \
         figures were recorded under other rules; re-record the baseline with these rules \
         (tracegate baseline update --baseline {})",
        b.path.display(),
        first.rule,
        crate::baseline::shown_text(&first.kernel),
        first.moved_to,
        first.recorded,
        b.path.display(),
    ))
}

fn new_metric(name: MetricId, m: &Metric) -> MetricCheck {
    MetricCheck {
        name,
        unit: m.unit,
        direction: m.direction,
        gated: false,
        baseline: None,
        current: Some(m.value),
        change: None,
        change_pct: None,
        tolerance: None,
        allowance: None,
        interval: None,
        samples: m.samples.len(),
        verdict: Verdict::New,
        artefact: None,
    }
}

/// What can make a metric look better while the run got worse.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flattered {
    /// Figured from kernel time by category: time that moves out of its category (into `other`,
    /// or into a kernel that appeared under another) makes it look better.
    ByTimeLeavingItsCategory,
    /// Utilisation: ranks that wait inside a collective kernel count as busy.
    ByRanksWaitingInCollectives,
    Never,
}

/// One arm per metric, no default: a new metric must say what can flatter it.
fn flattered_by(id: MetricId) -> Flattered {
    match id {
        MetricId::MoeUsPerLayer
        | MetricId::CommPct
        | MetricId::PrefillCommPct
        | MetricId::AllreduceUs
        | MetricId::AllreduceTransferUs
        | MetricId::OverlapPct => Flattered::ByTimeLeavingItsCategory,
        MetricId::GpuUtilPct | MetricId::PrefillGpuUtilPct | MetricId::DecodePhaseUtilPct => {
            Flattered::ByRanksWaitingInCollectives
        }
        MetricId::AllreduceRankRatio
        | MetricId::DecodeHostGapMs
        | MetricId::DecodeIterMs
        | MetricId::IterationMs
        | MetricId::DecodeSlowMsPerIter
        | MetricId::DecodeTokensPerS
        | MetricId::UnassignedPct
        | MetricId::DecodeStallMsPerStep
        | MetricId::DecodeStallPct
        | MetricId::DecodeStepMs
        | MetricId::DecodeStepP90Ms
        | MetricId::MixedStepMs
        | MetricId::OtherPct
        | MetricId::PrefillStepMs
        | MetricId::RankSkewMs
        | MetricId::SpecDraftMs
        | MetricId::SpecDraftPct
        | MetricId::SpecVerifyMs => Flattered::Never,
    }
}

/// Marks the improvements that the run's own regression explains (the verdict stays; see
/// [`MetricCheck::artefact`]).
fn mark_artefacts(metrics: &mut [MetricCheck], e: &Explanation) {
    let moved_out = if e.unclassified.as_ref().is_some_and(|u| u.rose) {
        Some("its time moved into kernels no rule classifies")
    } else if !e.appeared.is_empty() {
        Some("its time moved into a kernel that appeared")
    } else {
        None
    };
    for m in metrics
        .iter_mut()
        .filter(|m| m.verdict == Verdict::Improved)
    {
        let flattered = flattered_by(m.name);
        m.artefact = if let Some(why) =
            moved_out.filter(|_| flattered == Flattered::ByTimeLeavingItsCategory)
        {
            Some(why.to_string())
        } else {
            e.straggler
                .as_ref()
                .filter(|_| flattered == Flattered::ByRanksWaitingInCollectives)
                .map(|s| {
                    format!(
                        "the other ranks wait for rank {} inside their collectives, which counts as busy",
                        s.rank
                    )
                })
        };
    }
}

/// Regression outranks cannot-judge: if any gated metric regressed, the run regressed.
fn status_of(metrics: &[MetricCheck], opts: &CheckOptions) -> Status {
    let gated = || metrics.iter().filter(|m| m.gated);
    if gated().any(|m| {
        m.verdict == Verdict::Regressed
            || (opts.fail_on_improvement && m.verdict == Verdict::Improved)
    }) {
        // A regression beyond doubt is news whatever else could not be judged; the summary lists
        // the noisy and missing metrics beside it.
        Status::Regression
    } else if gated().any(|m| {
        matches!(m.verdict, Verdict::Missing | Verdict::Noisy)
            || (m.verdict == Verdict::Improved && m.artefact.is_some())
    }) {
        // Nothing regressed, but an unknown state is not a pass, and neither is an improvement
        // the run itself explains away (time moved out of the metric's category).
        Status::CannotJudge
    } else {
        Status::Pass
    }
}

fn names_with(metrics: &[MetricCheck], verdict: Verdict) -> Vec<&'static str> {
    metrics
        .iter()
        .filter(|m| m.gated && m.verdict == verdict)
        .map(|m| m.name.name())
        .collect()
}

fn summary_line(status: Status, metrics: &[MetricCheck]) -> String {
    let gated = metrics.iter().filter(|m| m.gated).count();
    let regressed = names_with(metrics, Verdict::Regressed);
    let missing = names_with(metrics, Verdict::Missing);
    let noisy = names_with(metrics, Verdict::Noisy);
    let artefacts: Vec<&str> = metrics
        .iter()
        .filter(|m| m.gated && m.verdict == Verdict::Improved && m.artefact.is_some())
        .map(|m| m.name.name())
        .collect();
    // An artefact of the regression is no improvement, and nothing is re-baselined while the
    // run regressed.
    let improved: Vec<&str> = metrics
        .iter()
        .filter(|m| m.gated && m.verdict == Verdict::Improved && m.artefact.is_none())
        .map(|m| m.name.name())
        .collect();
    let mut parts = Vec::new();
    if !regressed.is_empty() {
        parts.push(format!("regressed: {}", regressed.join(", ")));
    }
    if !missing.is_empty() {
        parts.push(format!("missing from the run: {}", missing.join(", ")));
    }
    if !noisy.is_empty() {
        parts.push(format!("too noisy to judge: {}", noisy.join(", ")));
    }
    // Said where it decides the status: beside a regression it is only not an improvement.
    if !artefacts.is_empty() && status != Status::Regression {
        parts.push(format!(
            "improved only as an artefact of the run: {}",
            artefacts.join(", ")
        ));
    }
    if !improved.is_empty() {
        if status == Status::Regression {
            parts.push(format!("improved: {}", improved.join(", ")));
        } else {
            parts.push(format!("improved (re-baseline): {}", improved.join(", ")));
        }
    }
    let head = match status {
        Status::Pass => format!("PASS: {gated} gated metrics within tolerance"),
        Status::Regression => "REGRESSION".to_string(),
        Status::CannotJudge => "CANNOT JUDGE".to_string(),
    };
    if parts.is_empty() {
        head
    } else {
        format!("{head}; {}", parts.join("; "))
    }
}

#[cfg(test)]
mod precedence_tests {
    use super::*;
    use crate::metrics::Direction;
    use crate::units::Unit;

    fn metric(name: MetricId, verdict: Verdict, gated: bool) -> MetricCheck {
        MetricCheck {
            name,
            unit: Unit::Ms,
            direction: Direction::Lower,
            gated,
            baseline: Some(1.0),
            current: Some(1.0),
            change: None,
            change_pct: None,
            tolerance: None,
            allowance: None,
            interval: None,
            samples: 0,
            verdict,
            artefact: None,
        }
    }

    #[test]
    fn a_regression_outranks_noisy_and_missing_metrics_and_they_are_listed_beside_it() {
        let opts = CheckOptions::default();
        let metrics = vec![
            metric(MetricId::DecodeStepMs, Verdict::Noisy, true),
            metric(MetricId::RankSkewMs, Verdict::Regressed, true),
            metric(MetricId::CommPct, Verdict::Missing, true),
        ];
        let status = status_of(&metrics, &opts);
        assert_eq!((status, status.exit_code()), (Status::Regression, 1));
        assert_eq!(
            summary_line(status, &metrics),
            "REGRESSION; regressed: rank_skew_ms; missing from the run: comm_pct; \
             too noisy to judge: decode_step_ms"
        );
    }

    #[test]
    fn an_improvement_the_report_calls_an_artefact_never_passes() {
        let opts = CheckOptions::default();
        let mut moe = metric(MetricId::MoeUsPerLayer, Verdict::Improved, true);
        moe.artefact = Some("its time moved into a kernel that appeared".into());
        let metrics = vec![metric(MetricId::DecodeStepMs, Verdict::Ok, true), moe];
        let status = status_of(&metrics, &opts);
        assert_eq!((status, status.exit_code()), (Status::CannotJudge, 2));
        assert_eq!(
            summary_line(status, &metrics),
            "CANNOT JUDGE; improved only as an artefact of the run: moe_us_per_layer"
        );
        // A regression beside it still decides.
        let mut with_regression = metrics.clone();
        with_regression[0].verdict = Verdict::Regressed;
        assert_eq!(status_of(&with_regression, &opts), Status::Regression);
    }

    #[test]
    fn without_a_regression_noisy_or_missing_cannot_be_judged_and_report_only_does_not_count() {
        let opts = CheckOptions::default();
        let noisy = vec![
            metric(MetricId::DecodeStepMs, Verdict::Noisy, true),
            metric(MetricId::RankSkewMs, Verdict::Regressed, false),
        ];
        assert_eq!(status_of(&noisy, &opts), Status::CannotJudge);
        assert_eq!(status_of(&noisy, &opts).exit_code(), 2);
        let ok = vec![
            metric(MetricId::DecodeStepMs, Verdict::Ok, true),
            metric(MetricId::RankSkewMs, Verdict::Noisy, false),
        ];
        assert_eq!(status_of(&ok, &opts), Status::Pass);
    }
}
