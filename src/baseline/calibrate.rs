//! `baseline calibrate`: tolerances measured from a few clean runs of one configuration instead
//! of guessed.
//!
//! Each gated metric's value is the median of the runs' values. Its tolerance is the allowance
//! that a clean run of this configuration exceeds with probability at most its share of
//! `--false-alarm` (one-sided): a prediction interval, Student's t of the robust spread's degrees
//! of freedom times the runs' between-run spread (small-sample corrected) and the within-run
//! standard error, so that a spread estimated from few runs is not taken as known. Outliers
//! are left out first, by a robust screen (Qn) and a leave-one-out test, so that a regressed run
//! does not widen the spread. The minimum detectable change
//! is the smallest regression a run then fails on in at least 95% of runs, at the upper 95%
//! bound of the spread. The model and a worked example are in `docs/BASELINES.md`, "How
//! tolerances are chosen".

use std::collections::BTreeMap;

use serde::Deserialize;
use toml_edit::{value, Array, DocumentMut, Item, Table};

use super::budget;
use super::tolerance::{Tolerance, Unit};
use super::write::round6;
use crate::metrics::catalog::{MetricDef, MetricId, Samples, StartTolerance, METRICS};
use crate::metrics::Extraction;
use crate::stats::{robust_spread, Statistic};
use crate::units;

/// Fewer clean runs than this cannot be calibrated.
pub(crate) const MIN_RUNS: usize = 3;
/// Fewer than this is calibrated with a warning.
pub(crate) const RECOMMENDED_RUNS: usize = 10;
/// The default chance that a clean run fails the whole check, percent.
pub(crate) const DEFAULT_FALSE_ALARM_PCT: f64 = 1.0;
/// A run further than this many robust between-run spreads (Qn of all the runs) from the median
/// of a metric is an outlier whatever the other test says (the gross screen).
pub(crate) const OUTLIER_SPREADS: f64 = 6.0;
/// The chance, over the runs of one metric, that the leave-one-out test leaves out a clean run.
pub(crate) const OUTLIER_ALPHA: f64 = 0.01;
/// The registry's floor: this share of the metric's starting tolerance (a count-based metric,
/// which moves in whole steps, keeps its whole starting tolerance).
pub(crate) const FLOOR_SHARE: f64 = 0.25;
/// The default maximum: this many times the metric's starting tolerance.
pub(crate) const MAX_TIMES_START: f64 = 5.0;
/// One-sided normal quantile of 95% power.
pub(crate) const Z_POWER: f64 = 1.644_854;
const Z95: f64 = 1.959_964;

/// A calibration that cannot be made: exit 2 with the reason.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error("calibrate needs at least {MIN_RUNS} clean runs of the configuration, got {0} (10 or more is recommended)")]
    TooFewRuns(usize),
    #[error("the runs are not of one configuration: {0}")]
    Mixed(String),
    #[error("{0}")]
    Option(String),
    #[error(
        "the same run is given twice: {0}; each run must be a separate launch of the configuration"
    )]
    Duplicate(String),
}

/// Refuses a run given twice: the same path, or figures identical to another run's (a copy).
fn check_distinct(runs: &[RunFigures]) -> Result<(), CalibrateError> {
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[..i] {
            if a.label == b.label {
                return Err(CalibrateError::Duplicate(a.label.clone()));
            }
            if !a.values.is_empty() && a.values == b.values {
                return Err(CalibrateError::Duplicate(format!(
                    "{} and {} have the same figures",
                    b.label, a.label
                )));
            }
        }
    }
    Ok(())
}

/// One clean run's figures.
#[derive(Debug, Clone, Default)]
pub struct RunFigures {
    /// How the run is named in messages (its path).
    pub label: String,
    pub hardware: Option<String>,
    pub ranks: usize,
    pub framework: Option<String>,
    pub image: Option<String>,
    pub date: Option<String>,
    pub values: BTreeMap<MetricId, f64>,
    /// Standard error of each value within its run (per-step samples), in the metric's unit.
    pub within: BTreeMap<MetricId, f64>,
}

/// How much noisier than its mean the run's statistic is, for its standard error.
fn statistic_factor(statistic: Statistic) -> f64 {
    match statistic {
        Statistic::Mean => 1.0,
        Statistic::Median => 1.2533,
        // sqrt(0.9 × 0.1) / φ(1.2816) for normal data.
        _ => 1.7094,
    }
}

impl RunFigures {
    /// The figures of one run's extraction.
    pub fn from_extraction(
        x: &Extraction,
        label: String,
        framework: Option<String>,
        image: Option<String>,
        date: Option<String>,
    ) -> RunFigures {
        let mut values = BTreeMap::new();
        let mut within = BTreeMap::new();
        for def in METRICS {
            let Some(m) = x.metrics.get(&def.id) else {
                continue;
            };
            if !m.value.is_finite() {
                continue;
            }
            values.insert(def.id, m.value);
            let per_step = matches!(def.samples, Samples::PerStep | Samples::PerCall);
            let se = robust_spread(&m.samples)
                .filter(|_| per_step && m.samples.len() > 1)
                .map_or(0.0, |s| {
                    statistic_factor(def.statistic) * s / (m.samples.len() as f64).sqrt()
                });
            within.insert(def.id, se);
        }
        RunFigures {
            label,
            hardware: x.run.device.clone(),
            ranks: x.run.ranks.len(),
            framework,
            image,
            date,
            values,
            within,
        }
    }
}

/// Qn, Rousseeuw and Croux's robust scale (the first quartile of the pairwise distances, × 2.2219
/// for normal data), with its small-sample correction factor; `None` below 2 values.
pub(crate) fn qn_spread(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mut d: Vec<f64> = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            d.push((values[i] - values[j]).abs());
        }
    }
    d.sort_by(f64::total_cmp);
    let h = n / 2 + 1;
    let k = h * (h - 1) / 2;
    let q = d[k.clamp(1, d.len()) - 1];
    let nf = n as f64;
    let correction = match n {
        2 => 0.399,
        3 => 0.994,
        4 => 0.512,
        5 => 0.844,
        6 => 0.611,
        7 => 0.857,
        8 => 0.669,
        9 => 0.872,
        _ if n % 2 == 1 => nf / (nf + 1.4),
        _ => nf / (nf + 3.8),
    };
    Some(2.2219 * correction * q)
}

/// c4(n): the mean of the sample standard deviation of `n` normal draws over σ (the
/// small-sample correction that makes it unbiased); 1 below 2.
pub(crate) fn c4(n: usize) -> f64 {
    if n < 2 {
        return 1.0;
    }
    // r(k) = Γ(k/2) / Γ((k-1)/2): r(2) = 1/√π, r(k+1) = ((k-1)/2) / r(k).
    let mut r = 1.0 / std::f64::consts::PI.sqrt();
    for k in 2..n {
        r = (k as f64 - 1.0) / 2.0 / r;
    }
    (2.0 / (n as f64 - 1.0)).sqrt() * r
}

/// The between-run spread of the runs kept, once the outlier tests ([`find_outliers`]: a robust
/// screen, then a leave-one-out test) have left out what does not belong: their standard
/// deviation over [`c4`], with n - 1 degrees of freedom ([`spread_df`]); 0 below 2 runs. Not Qn:
/// Qn spends efficiency on robustness (about 0.6 (n - 1) degrees of freedom at 5 to 20 runs,
/// measured; docs/BASELINES.md), which in a prediction interval more than doubles the
/// tolerance at 8 runs, and the outlier tests already keep a regressed run out of it.
pub(crate) fn between_run_spread(values: &[f64]) -> f64 {
    sd_spread(values)
}

/// The degrees of freedom of [`between_run_spread`] over `n` runs: n - 1.
pub(crate) fn spread_df(n: usize) -> f64 {
    n.saturating_sub(1) as f64
}

/// The standard deviation over [`c4`].
pub(crate) fn sd_spread(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0);
    var.sqrt() / c4(n)
}

/// How a metric's tolerance is written: a share of the value, or an amount in a unit.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    Relative,
    Absolute(Unit),
}

/// The metric's starting tolerance (the registry's), at `value`, and the form it is written in.
fn starting(def: &MetricDef, value: f64, decode_step: Option<f64>) -> (f64, Form) {
    match def.tolerance {
        StartTolerance::Fixed(text) => {
            let t: Tolerance = text.parse().unwrap_or(Tolerance::Relative(5.0));
            let allowance = t.allowance(value, def.unit).unwrap_or(0.0);
            match t {
                Tolerance::Relative(_) if value != 0.0 => (allowance, Form::Relative),
                _ => (allowance, Form::Absolute(def.unit)),
            }
        }
        StartTolerance::ShareOfDecodeStep { pct, floor_ms }
        | StartTolerance::ShareOfValue { pct, floor_ms } => {
            let of = match def.tolerance {
                StartTolerance::ShareOfValue { .. } => Some(value),
                _ => decode_step,
            };
            let ms = of.map_or(floor_ms, |s| (s * pct / 100.0).max(floor_ms));
            let allowance = Tolerance::Absolute {
                amount: ms,
                unit: Unit::Ms,
            }
            .allowance(value, def.unit)
            .unwrap_or(ms);
            (allowance, Form::Absolute(def.unit))
        }
    }
}

/// A `--min-tolerance` / `--max-tolerance`: for one metric (`METRIC=TOL`) or every metric whose
/// unit it fits (`TOL`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bound {
    pub metric: Option<MetricId>,
    pub tolerance: Tolerance,
}

impl std::str::FromStr for Bound {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (metric, tol) = match text.split_once('=') {
            Some((m, t)) => {
                let m = m.trim();
                let id = MetricId::from_name(m)
                    .ok_or_else(|| format!("{text}: unknown metric `{m}`"))?;
                (Some(id), t)
            }
            None => (None, text),
        };
        if let Some(id) = metric {
            let def = id.def();
            let t: Tolerance = tol.parse().map_err(|e| format!("{text}: {e}"))?;
            t.allowance(1.0, def.unit)
                .map_err(|e| format!("{text}: {e}"))?;
            return Ok(Bound {
                metric,
                tolerance: t,
            });
        }
        let t: Tolerance = tol.parse().map_err(|e| format!("{text}: {e}"))?;
        Ok(Bound {
            metric: None,
            tolerance: t,
        })
    }
}

/// The allowance a list of bounds sets for a metric: the one naming it, else the first that fits
/// its unit.
fn bound_for(bounds: &[Bound], def: &MetricDef, value: f64) -> Option<f64> {
    let named = bounds.iter().find(|b| b.metric == Some(def.id));
    let any = || {
        bounds
            .iter()
            .filter(|b| b.metric.is_none())
            .find(|b| b.tolerance.allowance(value, def.unit).is_ok())
    };
    named
        .or_else(any)
        .and_then(|b| b.tolerance.allowance(value, def.unit).ok())
}

/// What `calibrate` is asked for.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The chance a clean run fails the whole check, percent (0 < x < 50).
    pub false_alarm_pct: f64,
    pub min: Vec<Bound>,
    pub max: Vec<Bound>,
    /// `--target-mdc PCT`: say how many runs would bring each metric's minimum detectable change
    /// to this share of its value.
    pub target_mdc_pct: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            false_alarm_pct: DEFAULT_FALSE_ALARM_PCT,
            min: Vec::new(),
            max: Vec::new(),
            target_mdc_pct: None,
        }
    }
}

/// `--false-alarm`: `1%`, `0.5%` or `1` (percent).
pub(crate) fn parse_false_alarm(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    match number.parse::<f64>() {
        Ok(p) if p.is_finite() && p > 0.0 && p < 50.0 => Ok(p),
        _ => Err(format!(
            "--false-alarm {text:?}: give a percentage above 0 and below 50, e.g. 1%"
        )),
    }
}

/// One gated metric, calibrated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MetricCalibration {
    pub name: MetricId,
    pub unit: Unit,
    /// The median of the runs' values.
    pub value: f64,
    /// The between-run spread ([`between_run_spread`]), in the metric's unit.
    pub spread: f64,
    /// The runs' median within-run standard error, in the metric's unit.
    pub within: f64,
    /// The sd of a clean run's value about the baseline's: the spread with its small-sample
    /// correction and the within-run error, in quadrature.
    pub sigma: f64,
    /// The allowance the budget asks for, before the floor and the maximum.
    pub wanted: f64,
    pub floor: f64,
    pub max: f64,
    /// The allowance written, in the metric's unit (`wanted`, raised to the floor).
    pub allowance: f64,
    /// The tolerance as written.
    pub tolerance: Tolerance,
    /// The smallest regression caught in 95% of runs, in the metric's unit.
    pub mdc: f64,
    /// `false`: above the maximum, written `gate = false`.
    pub gated: bool,
    /// Why it is not gated: "too noisy to gate at this size: N more runs or a longer profile".
    pub too_noisy: Option<String>,
    /// With `--target-mdc`: how many runs in all would bring the minimum detectable change to
    /// the target (`Some(None)`: no number of runs would).
    pub runs_for_target: Option<Option<usize>>,
}

impl MetricCalibration {
    /// A figure relative to the value, percent, where that means something.
    pub(crate) fn pct(&self, amount: f64) -> Option<f64> {
        (self.value != 0.0).then(|| amount / self.value.abs() * 100.0)
    }

    /// How the tolerance was obtained, for the comment above the metric.
    pub(crate) fn how(&self, runs: usize, z: f64, df: f64) -> String {
        let shown = |v: f64| match (self.pct(v), self.unit) {
            (_, Unit::Pct) => format!("{} pp", fmt_sig(v)),
            (Some(p), _) => format!("{}%", units::fixed(p, 2)),
            (None, unit) => format!("{} {}", fmt_sig(v), unit.label()),
        };
        let mut text = format!(
            "calibrated from {runs} runs: between-run spread {} (sd / c4), within-run error {}; \
             tolerance = t {} ({} df) x sqrt(spread^2 (1 + pi/2n) + within^2) = {}",
            shown(self.spread),
            shown(self.within),
            units::stat(z),
            units::fixed(df, 1),
            shown(self.wanted)
        );
        // Only when the floor did it: rounding the tolerance up also leaves it above `wanted`.
        if self.floor > self.wanted {
            text.push_str(&format!(", raised to the floor {}", shown(self.floor)));
        }
        text.push_str(&format!(
            "; catches a regression of {} or more in 95% of runs (at the spread's and the median's 95% bounds)",
            shown(self.mdc)
        ));
        if let Some(why) = &self.too_noisy {
            text.push_str(&format!("; above the maximum {}: {why}", shown(self.max)));
        }
        text
    }
}

/// A run left out of the calibration, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outlier {
    pub label: String,
    pub reasons: Vec<String>,
}

/// The whole calibration.
#[derive(Debug, Clone)]
pub(crate) struct Calibration {
    /// The runs kept, in the order given.
    pub kept: Vec<usize>,
    pub outliers: Vec<Outlier>,
    pub false_alarm_pct: f64,
    /// The tolerance, in sigmas, of each metric the budget sets ([`budget::t_for_budget`]:
    /// Student's t of `df`; metrics held at their floor are charged only their chance of
    /// passing it).
    pub z: f64,
    /// The degrees of freedom of the spread ([`spread_df`] of the runs kept).
    pub df: f64,
    pub metrics: Vec<MetricCalibration>,
    /// The kept run nearest the median decode step: its breakdown and samples go in the file.
    pub representative: usize,
}

impl Calibration {
    /// The z that the same share of the budget would take with the spread known (the normal
    /// quantile): what the few runs cost, for the message.
    pub(crate) fn known_spread_z(&self) -> f64 {
        budget::normal_quantile(1.0 - budget::t_upper_tail(self.z, self.df))
    }
}

/// Significant digits for comments and tables.
fn fmt_sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".into();
    }
    units::significant(v, 3)
}

/// `v` rounded *up* to three significant digits, so a written tolerance is never below the
/// computed one.
fn round_up3(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return v.max(0.0);
    }
    let e = 2 - v.log10().floor() as i32;
    let f = 10f64.powi(e);
    let up = (v * f - 1e-9).ceil() / f;
    // Printing at the same precision keeps it exact in the text.
    let digits = e.max(0) as usize;
    units::fixed(up, digits).parse().unwrap_or(up)
}

fn tolerance_of(allowance: f64, form: Form, value: f64) -> Tolerance {
    match form {
        Form::Relative if value != 0.0 => {
            Tolerance::Relative(round_up3(allowance / value.abs() * 100.0))
        }
        Form::Relative => Tolerance::Absolute {
            amount: round_up3(allowance),
            unit: Unit::Ratio,
        },
        Form::Absolute(unit) => Tolerance::Absolute {
            amount: round_up3(allowance),
            unit,
        },
    }
}

fn median(values: &[f64]) -> f64 {
    Statistic::Median.of(values)
}

/// One field of a run's configuration: its name and how to read it.
type ConfigurationField = (&'static str, fn(&RunFigures) -> String);

/// Refuses runs that are not of one configuration: other hardware, rank count or framework.
fn check_same_configuration(runs: &[RunFigures]) -> Result<(), CalibrateError> {
    let fields: [ConfigurationField; 3] = [
        ("hardware", |r| {
            r.hardware.clone().unwrap_or_else(|| "unknown".into())
        }),
        ("rank count", |r| r.ranks.to_string()),
        ("framework", |r| {
            r.framework.clone().unwrap_or_else(|| "unknown".into())
        }),
    ];
    for (what, get) in fields {
        let mut seen: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for r in runs {
            seen.entry(get(r)).or_default().push(&r.label);
        }
        if seen.len() > 1 {
            let list: Vec<String> = seen
                .iter()
                .map(|(v, labels)| format!("{v} ({})", labels.join(", ")))
                .collect();
            return Err(CalibrateError::Mixed(format!(
                "different {what}: {}",
                list.join(" vs ")
            )));
        }
    }
    Ok(())
}

/// The gated metrics every run has, with their registry entry.
fn gated_metrics(runs: &[&RunFigures]) -> Vec<&'static MetricDef> {
    METRICS
        .iter()
        .filter(|d| d.gated && runs.iter().all(|r| r.values.contains_key(&d.id)))
        .collect()
}

/// How far a run is from the others, and whether that makes it an outlier.
fn describe_outlier(def: &MetricDef, v: f64, med: f64) -> String {
    let how = if med != 0.0 {
        format!("{} the median", units::times(v / med))
    } else {
        format!("{} against a median of 0", fmt_sig(v))
    };
    format!("{} {how}", def.name())
}

/// The leave-one-out critical distance for `m` runs: a clean run's distance from the mean of
/// the `m - 1` others, over their standard deviation × sqrt(1 + 1/(m - 1)), follows Student's t
/// of m - 2 degrees of freedom; [`OUTLIER_ALPHA`] is split over the m runs, two-sided.
pub(crate) fn outlier_critical(m: usize) -> f64 {
    if m < 4 {
        return f64::INFINITY;
    }
    budget::t_quantile(1.0 - OUTLIER_ALPHA / (2.0 * m as f64), m as f64 - 2.0)
}

/// Outliers among the runs, on any gated metric: first the gross screen (further than
/// [`OUTLIER_SPREADS`] × Qn of all the runs from their median), then, one run at a time, the
/// leave-one-out test ([`outlier_critical`]: the run furthest from the mean of the others, in
/// their standard deviations, while it is beyond the critical distance), so that a +15% run
/// among 8 clean runs at 1% jitter is named although it inflates every spread it is part of.
/// Either way the run must also be more than twice the metric's floor from the median.
fn find_outliers(runs: &[RunFigures], decode_step: Option<f64>, opts: &Options) -> Vec<Outlier> {
    let all: Vec<&RunFigures> = runs.iter().collect();
    let defs = gated_metrics(&all);
    let mut reasons: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let floors: Vec<(f64, f64)> = defs
        .iter()
        .map(|def| {
            let values: Vec<f64> = runs.iter().map(|r| r.values[&def.id]).collect();
            let med = median(&values);
            (med, floor_of(def, med, decode_step, opts))
        })
        .collect();
    for (def, &(med, floor)) in defs.iter().zip(&floors) {
        let values: Vec<f64> = runs.iter().map(|r| r.values[&def.id]).collect();
        let spread = qn_spread(&values).unwrap_or(0.0);
        let limit = (OUTLIER_SPREADS * spread).max(2.0 * floor);
        for (i, v) in values.iter().enumerate() {
            if (v - med).abs() > limit {
                reasons
                    .entry(i)
                    .or_default()
                    .push(describe_outlier(def, *v, med));
            }
        }
    }
    // The leave-one-out test on what the screen kept, worst run first.
    loop {
        let kept: Vec<usize> = (0..runs.len())
            .filter(|i| !reasons.contains_key(i))
            .collect();
        let m = kept.len();
        let critical = outlier_critical(m);
        if m <= MIN_RUNS || !critical.is_finite() {
            break;
        }
        // (score over the critical distance, run, metric index)
        let mut worst: Option<(f64, usize, usize)> = None;
        for (k, (def, &(med, floor))) in defs.iter().zip(&floors).enumerate() {
            let values: Vec<f64> = kept.iter().map(|&i| runs[i].values[&def.id]).collect();
            for (j, &v) in values.iter().enumerate() {
                if (v - med).abs() <= 2.0 * floor {
                    continue;
                }
                let others: Vec<f64> = values
                    .iter()
                    .enumerate()
                    .filter(|&(o, _)| o != j)
                    .map(|(_, &x)| x)
                    .collect();
                let mean = others.iter().sum::<f64>() / others.len() as f64;
                let sd = sd_spread(&others) * c4(others.len());
                let scale = sd * (1.0 + 1.0 / others.len() as f64).sqrt();
                let score = if scale > 0.0 {
                    (v - mean).abs() / scale / critical
                } else {
                    f64::INFINITY
                };
                if score > 1.0 && worst.is_none_or(|(w, _, _)| score > w) {
                    worst = Some((score, kept[j], k));
                }
            }
        }
        let Some((_, i, k)) = worst else { break };
        let (med, _) = floors[k];
        reasons.entry(i).or_default().push(describe_outlier(
            defs[k],
            runs[i].values[&defs[k].id],
            med,
        ));
    }
    reasons
        .into_iter()
        .map(|(i, reasons)| Outlier {
            label: runs[i].label.clone(),
            reasons,
        })
        .collect()
}

fn floor_of(def: &MetricDef, value: f64, decode_step: Option<f64>, opts: &Options) -> f64 {
    bound_for(&opts.min, def, value).unwrap_or_else(|| {
        let (start, _) = starting(def, value, decode_step);
        if def.samples == Samples::Count {
            start
        } else {
            FLOOR_SHARE * start
        }
    })
}

fn max_of(def: &MetricDef, value: f64, decode_step: Option<f64>, opts: &Options) -> f64 {
    bound_for(&opts.max, def, value)
        .unwrap_or_else(|| MAX_TIMES_START * starting(def, value, decode_step).0)
}

/// The sd of a clean run's value about a baseline value that is the median of `n` runs: the
/// between-run spread with the median's own error (π/2n) and the within-run error, in
/// quadrature.
pub(crate) fn sigma_at(spread: f64, within: f64, n: usize) -> f64 {
    (spread * spread * (1.0 + std::f64::consts::PI / (2.0 * n as f64)) + within * within).sqrt()
}

/// The prediction interval's allowance at `n` runs for a metric whose share of the false-alarm
/// budget is `share` (one-sided): Student's t of [`spread_df`]`(n)` times [`sigma_at`].
pub(crate) fn allowance_at(share: f64, spread: f64, within: f64, n: usize) -> f64 {
    budget::t_quantile(1.0 - share, spread_df(n)) * sigma_at(spread, within, n)
}

/// The minimum detectable change at `n` runs with this allowance: the regression a run fails on
/// in 95% of runs although the spread be at the upper end of its 95% confidence interval and the
/// baseline's median as far off as it is in 5% of calibrations (the two margins added, each at
/// the one-sided 95% quantile): a claim that holds for this calibration, not only on average.
pub(crate) fn mdc_for(allowance: f64, spread: f64, within: f64, n: usize) -> f64 {
    let upper = spread * budget::spread_upper_bound_factor_df(spread_df(n));
    let run = (upper * upper + within * within).sqrt();
    let median_off = upper * (std::f64::consts::PI / (2.0 * n as f64)).sqrt();
    allowance + Z95 * std::f64::consts::SQRT_2 * within + Z_POWER * (run + median_off)
}

/// The most runs [`runs_for`] looks at.
const MOST_RUNS: usize = 1000;

/// How many runs would bring the allowance within `max`, or the minimum detectable change within
/// `target` (`mdc`), the spread and within-run error staying as measured; `None` when no number
/// of runs up to 1,000 does (the floor, or the within-run error, is above it).
fn runs_for(m: &MetricCalibration, share: f64, goal: f64, mdc: bool) -> Option<usize> {
    (MIN_RUNS..=MOST_RUNS).find(|&n| {
        let allowance = allowance_at(share, m.spread, m.within, n).max(m.floor);
        let figure = if mdc {
            mdc_for(allowance, m.spread, m.within, n)
        } else {
            allowance
        };
        figure <= goal
    })
}

/// "N more runs or a longer profile", or only the profile when no number of runs would do.
fn more_runs(m: &MetricCalibration, share: f64, n: usize) -> String {
    match runs_for(m, share, m.max, false) {
        Some(total) if total > n => format!(
            "too noisy to gate at this size: {} more runs or a longer profile",
            total - n
        ),
        _ => "too noisy to gate at this size: more runs will not do; a longer profile, or a \
              wider --max-tolerance"
            .to_string(),
    }
}

/// One metric's figures over the kept runs, before the budget sets its tolerance.
struct Measured {
    def: &'static MetricDef,
    value: f64,
    spread: f64,
    within: f64,
    sigma: f64,
    floor: f64,
    max: f64,
}

fn measure(
    def: &'static MetricDef,
    runs: &[&RunFigures],
    decode_step: Option<f64>,
    opts: &Options,
) -> Measured {
    let values: Vec<f64> = runs.iter().map(|r| r.values[&def.id]).collect();
    let withins: Vec<f64> = runs
        .iter()
        .map(|r| r.within.get(&def.id).copied().unwrap_or(0.0))
        .collect();
    let value = median(&values);
    let spread = between_run_spread(&values);
    let within = median(&withins);
    let floor = floor_of(def, value, decode_step, opts);
    Measured {
        def,
        value,
        spread,
        within,
        sigma: sigma_at(spread, within, runs.len()),
        floor,
        max: max_of(def, value, decode_step, opts).max(floor),
    }
}

/// Calibrates the gated metrics from clean runs; fewer than [`MIN_RUNS`] runs (before or after
/// leaving out outliers), or runs of different hardware, rank count or framework, are an error.
pub(crate) fn calibrate(
    runs: &[RunFigures],
    opts: &Options,
) -> Result<Calibration, CalibrateError> {
    if runs.len() < MIN_RUNS {
        return Err(CalibrateError::TooFewRuns(runs.len()));
    }
    check_distinct(runs)?;
    check_same_configuration(runs)?;
    let decode_step = |rs: &[&RunFigures]| {
        let v: Vec<f64> = rs
            .iter()
            .filter_map(|r| r.values.get(&MetricId::DecodeStepMs).copied())
            .collect();
        (!v.is_empty()).then(|| median(&v))
    };
    let all: Vec<&RunFigures> = runs.iter().collect();
    let outliers = find_outliers(runs, decode_step(&all), opts);
    let kept: Vec<usize> = (0..runs.len())
        .filter(|&i| !outliers.iter().any(|o| o.label == runs[i].label))
        .collect();
    if kept.len() < MIN_RUNS {
        return Err(CalibrateError::Mixed(format!(
            "only {} of the {} runs agree; left out as outliers: {}",
            kept.len(),
            runs.len(),
            outliers
                .iter()
                .map(|o| format!("{} ({})", o.label, o.reasons.join(", ")))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let kept_runs: Vec<&RunFigures> = kept.iter().map(|&i| &runs[i]).collect();
    let step = decode_step(&kept_runs);
    let defs = gated_metrics(&kept_runs);
    if defs.is_empty() {
        return Err(CalibrateError::Mixed(
            "the runs have no gated metric in common".into(),
        ));
    }
    let n = kept_runs.len();
    let measured: Vec<Measured> = defs
        .iter()
        .map(|def| measure(def, &kept_runs, step, opts))
        .collect();
    // The prediction interval: a clean run's distance in estimated sigmas follows Student's t
    // of the spread's degrees of freedom, for the floors' charges as for the budget's multiplier.
    let df = spread_df(n);
    let floor_sigmas: Vec<f64> = measured
        .iter()
        .map(|m| {
            if m.sigma > 0.0 {
                m.floor / m.sigma
            } else {
                f64::INFINITY
            }
        })
        .collect();
    let z = budget::t_for_budget(opts.false_alarm_pct / 100.0, &floor_sigmas, df);
    let share = budget::t_upper_tail(z, df);
    let metrics = measured
        .into_iter()
        .map(|m| {
            let Measured {
                def,
                value,
                spread,
                within,
                sigma,
                floor,
                max,
            } = m;
            let wanted = z * sigma;
            let allowance = wanted.max(floor);
            let (_, form) = starting(def, value, step);
            let tolerance = tolerance_of(allowance, form, value);
            let written = tolerance.allowance(value, def.unit).unwrap_or(allowance);
            let mdc = mdc_for(written, spread, within, n);
            let mut c = MetricCalibration {
                name: def.id,
                unit: def.unit,
                value,
                spread,
                within,
                sigma,
                wanted,
                floor,
                max,
                allowance: written,
                tolerance,
                mdc,
                gated: true,
                too_noisy: None,
                runs_for_target: None,
            };
            if written > max {
                c.too_noisy = Some(more_runs(&c, share, n));
                c.gated = false;
            }
            if let Some(target) = opts.target_mdc_pct {
                let goal = target / 100.0 * value.abs();
                c.runs_for_target = Some(runs_for(&c, share, goal, true));
            }
            c
        })
        .collect();
    let representative = kept
        .iter()
        .copied()
        .min_by(|&a, &b| {
            let d = |i: usize| {
                runs[i]
                    .values
                    .get(&MetricId::DecodeStepMs)
                    .map_or(f64::INFINITY, |v| (v - step.unwrap_or(0.0)).abs())
            };
            d(a).total_cmp(&d(b))
        })
        .unwrap_or(kept[0]);
    Ok(Calibration {
        kept,
        outliers,
        false_alarm_pct: opts.false_alarm_pct,
        z,
        df,
        metrics,
        representative,
    })
}

/// The `[calibration]` table as read back from a baseline.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationTable {
    pub runs: u32,
    pub false_alarm_pct: f64,
    pub gated_metrics: u32,
    pub z: f64,
    /// The spread's degrees of freedom (Student's t of the tolerance).
    #[serde(default)]
    pub df: Option<f64>,
    #[serde(default)]
    pub sources: Vec<String>,
    #[serde(default)]
    pub images: Vec<String>,
    #[serde(default)]
    pub dates: Vec<String>,
    #[serde(default)]
    pub left_out: Vec<String>,
    /// [`digest`] of the figures above and below as `calibrate` wrote them: a hand edit of any
    /// of them (a widened tolerance, a larger run count) no longer matches.
    #[serde(default)]
    pub digest: Option<String>,
    #[serde(default)]
    pub metrics: BTreeMap<String, CalibratedMetric>,
}

/// FNV-1a (64 bits) of `text`, as 16 hex digits.
fn fnv_hex(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{h:016x}")
}

/// The digest of a calibration's figures: its run count, budget, multiplier, sources and each
/// metric's spread, within-run error, tolerance, detectable change and gate, in a fixed order.
fn digest<'a>(
    runs: u32,
    false_alarm_pct: f64,
    z: f64,
    sources: &[String],
    metrics: impl Iterator<Item = (&'a str, f64, f64, String, f64, bool)>,
) -> String {
    let mut text =
        format!("runs={runs};false_alarm_pct={false_alarm_pct:?};z={z:?};sources={sources:?}");
    for (name, spread, within, tolerance, mdc, gated) in metrics {
        text.push_str(&format!(
            ";{name}:{spread:?},{within:?},{tolerance},{mdc:?},{gated}"
        ));
    }
    fnv_hex(&text)
}

/// One metric of `[calibration.metrics]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibratedMetric {
    /// Between-run spread, in the metric's unit.
    pub spread: f64,
    /// Within-run standard error, in the metric's unit.
    pub within: f64,
    pub tolerance: Tolerance,
    /// Minimum detectable change, in the metric's unit.
    pub mdc: f64,
    /// The same relative to the value, percent (absent for a value of 0).
    pub mdc_pct: Option<f64>,
    pub gated: bool,
}

impl CalibrationTable {
    /// Whether the table is as `calibrate` wrote it: its digest matches its figures.
    pub fn intact(&self) -> bool {
        let computed = digest(
            self.runs,
            self.false_alarm_pct,
            self.z,
            &self.sources,
            self.metrics.iter().map(|(name, m)| {
                (
                    name.as_str(),
                    m.spread,
                    m.within,
                    m.tolerance.to_string(),
                    m.mdc,
                    m.gated,
                )
            }),
        );
        self.digest.as_deref() == Some(computed.as_str())
    }

    /// Checks what a file can get wrong: figures not finite or negative, unknown metrics.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.false_alarm_pct.is_finite() && self.z.is_finite()) {
            return Err("[calibration]: false_alarm_pct and z must be finite numbers".into());
        }
        for (name, m) in &self.metrics {
            if MetricId::from_name(name).is_none() {
                return Err(format!("[calibration.metrics.{name}]: unknown metric"));
            }
            let figures = [("spread", m.spread), ("within", m.within), ("mdc", m.mdc)];
            for (key, v) in figures {
                if !v.is_finite() || v < 0.0 {
                    return Err(format!(
                        "[calibration.metrics.{name}]: {key} {v} is not a finite number >= 0"
                    ));
                }
            }
        }
        Ok(())
    }
}

fn string_array<'a>(items: impl IntoIterator<Item = &'a str>) -> Item {
    let mut a = Array::new();
    for s in items {
        a.push(s);
    }
    value(a)
}

/// Writes the calibration into a baseline document `baseline new` made from the representative
/// run: each metric's value and tolerance, `gate = false` for one too noisy, a comment saying how
/// it was obtained, and the `[calibration]` table.
/// With `set_values` false (`--from-history`), the values stay as they are.
pub(crate) fn write_calibration(
    doc: &mut DocumentMut,
    cal: &Calibration,
    runs: &[RunFigures],
    set_values: bool,
) -> Result<(), String> {
    let n = cal.kept.len();
    let metrics = doc
        .get_mut("metrics")
        .and_then(Item::as_table_mut)
        .ok_or("the baseline has no [metrics] table")?;
    for m in &cal.metrics {
        let Some(t) = metrics.get_mut(m.name.name()).and_then(Item::as_table_mut) else {
            continue;
        };
        if set_values {
            t.insert("value", value(round6(m.value)));
        }
        t.insert("tolerance", value(m.tolerance.to_string()));
        if m.gated {
            t.remove("gate");
        } else {
            t.insert("gate", value(false));
        }
        let mut comment = format!("\n# {}\n", m.how(n, cal.z, cal.df));
        if let Some(why) = &m.too_noisy {
            comment.push_str(&format!("# gate = false: {why}\n"));
        }
        t.decor_mut().set_prefix(comment);
    }
    let mut c = Table::new();
    c.decor_mut().set_prefix(format!(
        "\n# Written by `tracegate baseline calibrate`: {n} clean runs; a clean run of this \
         configuration fails the check with a chance of at most {}% in all over the {} gated \
         metrics: a metric held at its floor is charged its chance of passing it, and the \
         others share the rest (Student's t {} each, of the spread's {} degrees of freedom: a \
         prediction interval). `mdc` is the minimum detectable change: the smallest regression \
         the check catches in 95% of runs. `digest` covers these figures: a hand edit shows as \
         hand-set. See docs/BASELINES.md, \"How tolerances are chosen\".\n",
        cal.false_alarm_pct,
        cal.metrics.len(),
        units::stat(cal.z),
        units::fixed(cal.df, 1)
    ));
    c.insert("runs", value(n as i64));
    c.insert("false_alarm_pct", value(cal.false_alarm_pct));
    c.insert("gated_metrics", value(cal.metrics.len() as i64));
    c.insert("z", value(round6(cal.z)));
    c.insert("df", value(round6(cal.df)));
    let kept: Vec<&RunFigures> = cal.kept.iter().map(|&i| &runs[i]).collect();
    c.insert(
        "sources",
        string_array(kept.iter().map(|r| r.label.as_str())),
    );
    c.insert(
        "images",
        string_array(kept.iter().map(|r| r.image.as_deref().unwrap_or(""))),
    );
    c.insert(
        "dates",
        string_array(kept.iter().map(|r| r.date.as_deref().unwrap_or(""))),
    );
    let left_out: Vec<String> = cal
        .outliers
        .iter()
        .map(|o| format!("{}: {}", o.label, o.reasons.join(", ")))
        .collect();
    if !left_out.is_empty() {
        c.insert(
            "left_out",
            string_array(left_out.iter().map(String::as_str)),
        );
    }
    let mut per_metric = Table::new();
    per_metric.set_implicit(true);
    for m in &cal.metrics {
        let mut t = Table::new();
        t.insert("spread", value(round6(m.spread)));
        t.insert("within", value(round6(m.within)));
        t.insert("tolerance", value(m.tolerance.to_string()));
        t.insert("mdc", value(round6(m.mdc)));
        if let Some(p) = m.pct(m.mdc).filter(|_| m.unit != Unit::Pct) {
            t.insert("mdc_pct", value(round6(p)));
        }
        t.insert("gated", value(m.gated));
        per_metric.insert(m.name.name(), Item::Table(t));
    }
    let sources: Vec<String> = kept.iter().map(|r| r.label.clone()).collect();
    let mut by_name: Vec<&MetricCalibration> = cal.metrics.iter().collect();
    by_name.sort_by_key(|m| m.name.name());
    let d = digest(
        n as u32,
        cal.false_alarm_pct,
        round6(cal.z),
        &sources,
        by_name.iter().map(|m| {
            (
                m.name.name(),
                round6(m.spread),
                round6(m.within),
                m.tolerance.to_string(),
                round6(m.mdc),
                m.gated,
            )
        }),
    );
    c.insert("digest", value(d));
    c.insert("metrics", Item::Table(per_metric));
    doc.insert("calibration", Item::Table(c));
    Ok(())
}

/// The stderr table: metric, between-run spread, tolerance, minimum detectable change.
pub(crate) fn table(cal: &Calibration, target_mdc_pct: Option<f64>) -> String {
    let relative = |m: &MetricCalibration, v: f64| match (m.pct(v), m.unit) {
        (_, Unit::Pct) => format!("{} pp", m.unit.number(v)),
        (Some(p), _) => format!("{} ({}%)", m.unit.figure(v), units::fixed(p, 2)),
        (None, _) => m.unit.figure(v),
    };
    let mut header = vec![
        "metric".to_string(),
        "between-run spread".to_string(),
        "tolerance".to_string(),
        "min detectable change".to_string(),
    ];
    if let Some(t) = target_mdc_pct {
        header.push(format!("runs for a {t}% detectable change"));
    }
    let mut rows = vec![header];
    for m in &cal.metrics {
        let tolerance = if m.gated {
            m.tolerance.to_string()
        } else {
            format!("{} (not gated: too noisy)", m.tolerance)
        };
        let mut row = vec![
            m.name.name().to_string(),
            relative(m, m.spread),
            tolerance,
            relative(m, m.mdc),
        ];
        if target_mdc_pct.is_some() {
            row.push(match m.runs_for_target {
                _ if m.unit == Unit::Pct || m.value == 0.0 => "-".to_string(),
                Some(Some(r)) if r <= cal.kept.len() => format!("{r} (reached)"),
                Some(Some(r)) => r.to_string(),
                _ => "never: the spread itself, the floor or the within-run error is above it"
                    .to_string(),
            });
        }
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Each kept run's distance from the median, on the gated metric where it is furthest in
/// between-run spreads: `run3: moe_us_per_layer +1.21% (0.9 spreads)`.
pub(crate) fn distances(cal: &Calibration, runs: &[RunFigures]) -> Vec<String> {
    cal.kept
        .iter()
        .map(|&i| {
            let r = &runs[i];
            let furthest = cal
                .metrics
                .iter()
                .filter(|m| m.spread > 0.0)
                .filter_map(|m| {
                    let v = r.values.get(&m.name)?;
                    Some((m, v - m.value, (v - m.value).abs() / m.spread))
                })
                .max_by(|a, b| a.2.total_cmp(&b.2));
            match furthest {
                Some((m, d, k)) => {
                    let sign = if d >= 0.0 { "+" } else { "-" };
                    let shown = match (m.pct(d.abs()), m.unit) {
                        (_, Unit::Pct) => format!("{sign}{} pp", m.unit.number(d.abs())),
                        (Some(p), _) => format!("{sign}{}%", units::fixed(p, 2)),
                        (None, _) => format!("{sign}{}", m.unit.figure(d.abs())),
                    };
                    format!(
                        "{}: {} {shown} ({} spreads)",
                        r.label,
                        m.name,
                        units::fixed(k, 1)
                    )
                }
                None => format!("{}: at the median of every metric", r.label),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::budget::normal_quantile;

    #[test]
    fn qn_estimates_sigma_and_resists_one_outlier() {
        // Normal quantiles at (i - 0.5) / n: a sample with sd ~1.
        let n = 41;
        let xs: Vec<f64> = (1..=n)
            .map(|i| normal_quantile((i as f64 - 0.5) / n as f64))
            .collect();
        let q = qn_spread(&xs).unwrap();
        assert!((q - 1.0).abs() < 0.1, "{q}");
        let mut with_outlier = xs.clone();
        with_outlier[0] = 1000.0;
        let q2 = qn_spread(&with_outlier).unwrap();
        assert!((q2 - q).abs() < 0.15, "{q} {q2}");
        assert_eq!(qn_spread(&[1.0]), None);
        assert_eq!(qn_spread(&[2.0, 2.0, 2.0]), Some(0.0));
    }

    #[test]
    fn c4_makes_the_standard_deviation_unbiased() {
        assert!((c4(2) - 0.797_885).abs() < 1e-6);
        assert!((c4(3) - 0.886_227).abs() < 1e-6);
        assert!((c4(10) - 0.972_659).abs() < 1e-6);
        let s = sd_spread(&[1.0, 2.0, 3.0]);
        assert!((s - 1.0 / 0.886_227).abs() < 1e-5, "{s}");
        assert_eq!(sd_spread(&[4.0]), 0.0);
        assert_eq!(between_run_spread(&[4.0]), 0.0);
    }

    #[test]
    fn tolerances_round_up() {
        assert_eq!(round_up3(2.3412), 2.35);
        assert_eq!(round_up3(2.34), 2.34);
        assert_eq!(round_up3(0.012_341), 0.0124);
        assert_eq!(round_up3(14.61), 14.7);
    }

    fn run(label: &str, values: &[(MetricId, f64)]) -> RunFigures {
        RunFigures {
            label: label.into(),
            hardware: Some("AMD Instinct MI355X".into()),
            ranks: 4,
            framework: Some("sglang".into()),
            values: values.iter().copied().collect(),
            ..Default::default()
        }
    }

    /// Runs whose decode step and MoE move by `sd` relative (deterministic normal quantiles).
    fn runs(n: usize, sd: f64) -> Vec<RunFigures> {
        (0..n)
            .map(|i| {
                let z = normal_quantile((i as f64 + 0.5) / n as f64);
                // Interleave, so the order says nothing.
                let z2 = normal_quantile(((i * 3 % n) as f64 + 0.5) / n as f64);
                run(
                    &format!("run{i}"),
                    &[
                        (MetricId::DecodeStepMs, 20.0 * (1.0 + sd * z)),
                        (MetricId::MoeUsPerLayer, 120.0 * (1.0 + sd * z2)),
                    ],
                )
            })
            .collect()
    }

    #[test]
    fn the_tolerance_follows_the_spread_and_the_budget() {
        let cal = calibrate(&runs(10, 0.01), &Options::default()).unwrap();
        let moe = cal
            .metrics
            .iter()
            .find(|m| m.name == MetricId::MoeUsPerLayer)
            .unwrap();
        // Two gated metrics share 1%: z of 0.5% one-sided.
        assert!((cal.z - budget::t_quantile(0.995, spread_df(10))).abs() < 1e-6);
        let spread_pct = moe.pct(moe.spread).unwrap();
        assert!((spread_pct - 1.0).abs() < 0.25, "{spread_pct}");
        let expected = cal.z * moe.sigma / 120.0 * 100.0;
        match moe.tolerance {
            Tolerance::Relative(p) => {
                assert!(p >= expected && p < expected + 0.01, "{p} {expected}")
            }
            other => panic!("{other:?}"),
        }
        assert!(moe.mdc > moe.allowance + 1.6 * moe.sigma);
        // A tighter budget widens the tolerance; more spread too.
        let tight = calibrate(
            &runs(10, 0.01),
            &Options {
                false_alarm_pct: 0.1,
                ..Options::default()
            },
        )
        .unwrap();
        assert!(tight.metrics[0].allowance > cal.metrics[0].allowance);
        let wide = calibrate(&runs(10, 0.02), &Options::default()).unwrap();
        assert!(wide.metrics[1].allowance > 1.8 * cal.metrics[1].allowance);
    }

    #[test]
    fn the_floor_and_the_maximum_bound_the_tolerance() {
        // No spread at all: the registry's floor (a quarter of 3% on the decode step).
        let flat = calibrate(&runs(5, 1e-9), &Options::default()).unwrap();
        assert_eq!(flat.metrics[0].tolerance, Tolerance::Relative(0.75));
        let opts = Options {
            min: vec!["decode_step_ms=1%".parse().unwrap()],
            max: vec!["2%".parse().unwrap()],
            ..Options::default()
        };
        let c = calibrate(&runs(5, 1e-9), &opts).unwrap();
        assert_eq!(c.metrics[0].tolerance, Tolerance::Relative(1.0));
        // Too noisy for a 2% maximum: not gated, and the message says how many more runs.
        let noisy = calibrate(&runs(5, 0.01), &opts).unwrap();
        let m = &noisy.metrics[0];
        assert!(!m.gated);
        let why = m.too_noisy.as_deref().unwrap();
        assert!(why.starts_with("too noisy to gate at this size: "), "{why}");
        assert!(why.contains("a longer profile"), "{why}");
    }

    #[test]
    fn too_few_runs_and_mixed_configurations_are_refused() {
        let e = calibrate(&runs(2, 0.01), &Options::default()).unwrap_err();
        assert!(e.to_string().contains("at least 3"), "{e}");
        for change in 0..3 {
            let mut rs = runs(4, 0.01);
            match change {
                0 => rs[1].hardware = Some("NVIDIA B200".into()),
                1 => rs[1].ranks = 8,
                _ => rs[1].framework = None,
            }
            let e = calibrate(&rs, &Options::default()).unwrap_err().to_string();
            let what = ["hardware", "rank count", "framework"][change];
            assert!(e.contains(what) && e.contains("run1"), "{e}");
        }
    }

    #[test]
    fn an_outlier_run_is_named_and_left_out() {
        let mut rs = runs(6, 0.005);
        rs[2].values.insert(MetricId::MoeUsPerLayer, 120.0 * 1.3);
        let cal = calibrate(&rs, &Options::default()).unwrap();
        assert_eq!(cal.outliers.len(), 1);
        assert_eq!(cal.outliers[0].label, "run2");
        assert!(cal.outliers[0].reasons[0].contains("moe_us_per_layer 1.30×"));
        assert!(!cal.kept.contains(&2));
        // Its MoE does not widen the tolerance.
        let clean = calibrate(&runs(6, 0.005), &Options::default()).unwrap();
        assert!(cal.metrics[1].allowance < 1.5 * clean.metrics[1].allowance);
    }

    #[test]
    fn the_comment_says_raised_to_the_floor_only_when_the_floor_did_it() {
        // Spread well above the floor: the tolerance is `wanted`, rounded up, and not raised.
        let cal = calibrate(&runs(10, 0.01), &Options::default()).unwrap();
        let step = &cal.metrics[0];
        assert!(step.wanted > step.floor && step.allowance > step.wanted);
        let how = step.how(10, cal.z, cal.df);
        assert!(!how.contains("raised to the floor"), "{how}");
        // No spread: the floor sets it, and the comment says so.
        let flat = calibrate(&runs(5, 1e-9), &Options::default()).unwrap();
        let how = flat.metrics[0].how(5, flat.z, flat.df);
        assert!(how.contains("raised to the floor 0.75%"), "{how}");
    }

    #[test]
    fn bounds_and_budgets_parse_or_say_why() {
        assert!("moe_us_per_layer=2%".parse::<Bound>().is_ok());
        assert!("furlongs=2%"
            .parse::<Bound>()
            .unwrap_err()
            .contains("unknown metric"));
        assert!("comm_pct=1ms".parse::<Bound>().is_err());
        assert_eq!(parse_false_alarm("1%"), Ok(1.0));
        assert_eq!(parse_false_alarm("0.5"), Ok(0.5));
        assert!(parse_false_alarm("0").is_err());
        assert!(parse_false_alarm("abc").is_err());
    }
}
