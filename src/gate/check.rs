//! A whole run against a baseline: one judgement per metric, one status for the run.

use serde::Serialize;

use super::explain::{explain, Explanation};
use super::verdict::{judge, MetricCheck, Observation, Verdict};
use crate::baseline::{Baseline, Meta};
use crate::exit;
use crate::metrics::catalog::{MetricDef, Samples, METRICS};
use crate::metrics::{Extraction, Metric};

/// Version of the check JSON schema (`check --format json`, `--verdict-out`).
pub const CHECK_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// Fail on an improvement beyond tolerance too, so that baselines cannot drift loose.
    pub fail_on_improvement: bool,
    /// Judge a run on other hardware (or another rank count) than the baseline's anyway.
    pub allow_other_hardware: bool,
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
}

#[derive(Debug, Clone, Serialize)]
pub struct BaselineInfo {
    pub path: String,
    pub meta: Meta,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub device: Option<String>,
    pub ranks: Vec<u32>,
    pub decode_steps_kept: usize,
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
        Samples::PerRank => Vec::new(),
    };
    Observation {
        value: m.value,
        samples,
        statistic: def.statistic,
    }
}

/// A stable seed per metric, so the same run always gets the same interval.
fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

pub fn check(x: &Extraction, b: &Baseline, opts: &CheckOptions) -> CheckResult {
    let mut metrics = Vec::new();
    for spec in METRICS {
        let current = x.metrics.get(spec.name);
        let Some(base) = b.metrics.get(spec.name) else {
            if let Some(m) = current {
                metrics.push(new_metric(spec.name, m));
            }
            continue;
        };
        let direction = base.direction.unwrap_or(spec.direction);
        let observed = current.map(|m| observation(spec, m));
        let j = judge(
            base,
            direction,
            spec.unit,
            observed.as_ref(),
            seed_of(spec.name),
        );
        metrics.push(MetricCheck {
            name: spec.name.to_string(),
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
        });
    }
    let problems = if opts.allow_other_hardware {
        Vec::new()
    } else {
        mismatches(x, b)
    };
    let status = if problems.is_empty() {
        status_of(&metrics, opts)
    } else {
        Status::CannotJudge
    };
    let explanation = explain(x, b, &metrics);
    let run = RunSummary {
        device: x.run.device.clone(),
        ranks: x.run.ranks.clone(),
        decode_steps_kept: x.steps.values().map(|s| s.decode_kept).min().unwrap_or(0),
        warnings: x.warnings.clone(),
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
        metrics,
        explanation,
    }
}

/// A baseline for other hardware or another rank count says nothing about this run.
fn mismatches(x: &Extraction, b: &Baseline) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(device) = x.run.device.as_deref() {
        if !b.meta.hardware.is_empty() && !device.is_empty() && device != b.meta.hardware {
            problems.push(format!(
                "the baseline is for {:?} but the run is on {device:?} (--allow-other-hardware to judge anyway)",
                b.meta.hardware
            ));
        }
    }
    if let Some(tp) = b.meta.tp {
        if tp as usize != x.run.ranks.len() {
            problems.push(format!(
                "the baseline is for {tp} ranks (tp) but the run has {} (--allow-other-hardware to judge anyway)",
                x.run.ranks.len()
            ));
        }
    }
    problems
}

fn new_metric(name: &str, m: &Metric) -> MetricCheck {
    MetricCheck {
        name: name.to_string(),
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
    }
}

/// Cannot-judge outranks regression: an unknown state is the worse news for a gate.
fn status_of(metrics: &[MetricCheck], opts: &CheckOptions) -> Status {
    let gated = || metrics.iter().filter(|m| m.gated);
    if gated().any(|m| matches!(m.verdict, Verdict::Missing | Verdict::Noisy)) {
        Status::CannotJudge
    } else if gated().any(|m| {
        m.verdict == Verdict::Regressed
            || (opts.fail_on_improvement && m.verdict == Verdict::Improved)
    }) {
        Status::Regression
    } else {
        Status::Pass
    }
}

fn names_with(metrics: &[MetricCheck], verdict: Verdict) -> Vec<&str> {
    metrics
        .iter()
        .filter(|m| m.gated && m.verdict == verdict)
        .map(|m| m.name.as_str())
        .collect()
}

fn summary_line(status: Status, metrics: &[MetricCheck]) -> String {
    let gated = metrics.iter().filter(|m| m.gated).count();
    let regressed = names_with(metrics, Verdict::Regressed);
    let missing = names_with(metrics, Verdict::Missing);
    let noisy = names_with(metrics, Verdict::Noisy);
    let improved = names_with(metrics, Verdict::Improved);
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
    if !improved.is_empty() {
        parts.push(format!("improved (re-baseline): {}", improved.join(", ")));
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
