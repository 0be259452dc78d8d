//! One metric against its baseline: ok, regressed, improved, noisy, missing or new.

use serde::Serialize;

use crate::baseline::{Direction, MetricBaseline, Unit};
use crate::metrics::MetricId;
use crate::stats::{bootstrap_interval, Statistic};

/// The judgement of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within tolerance, or beyond it in the good direction without support.
    Ok,
    /// Worse than tolerance, and the per-step samples support it.
    Regressed,
    /// Better than tolerance, and the samples support it: time to re-baseline.
    Improved,
    /// Worse than tolerance by its point value, but the samples' interval reaches back inside the
    /// band: cannot be told from noise.
    Noisy,
    /// In the baseline, but the run cannot produce it.
    Missing,
    /// Produced by the run, not in the baseline.
    New,
}

/// One metric of a check: its figures, the tolerance and the verdict.
#[derive(Debug, Clone, Serialize)]
pub struct MetricCheck {
    /// Serialised as the metric's name.
    pub name: MetricId,
    pub unit: Unit,
    pub direction: Direction,
    /// False for report-only metrics (`gate = false`) and metrics absent from the baseline.
    pub gated: bool,
    pub baseline: Option<f64>,
    pub current: Option<f64>,
    pub change: Option<f64>,
    pub change_pct: Option<f64>,
    pub tolerance: Option<String>,
    /// The tolerance in the metric's unit.
    pub allowance: Option<f64>,
    pub interval: Option<(f64, f64)>,
    /// Per-step samples the judgement rested on (0: the value alone decided).
    pub samples: usize,
    pub verdict: Verdict,
    /// Why a gain beyond tolerance is no improvement: the regression's own mechanism explains
    /// it (time that moved into `other` or into a kernel that appeared; utilisation raised by
    /// ranks waiting inside collectives). The verdict stays `improved`; reports do not call it
    /// one, and nothing offers to re-baseline it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artefact: Option<String>,
}

/// A metric as the run measured it.
#[derive(Debug, Clone)]
pub(crate) struct Observation {
    pub value: f64,
    /// Per-step (or per-call) samples the value summarises; empty when the metric has none.
    pub samples: Vec<f64>,
    pub statistic: Statistic,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Judgement {
    pub verdict: Verdict,
    /// Current minus baseline, in the metric's unit.
    pub change: Option<f64>,
    /// Change relative to the baseline, percent.
    pub change_pct: Option<f64>,
    /// The tolerance in the metric's unit.
    pub allowance: f64,
    /// Confidence interval of the current value, widened by the baseline's own uncertainty.
    pub interval: Option<(f64, f64)>,
}

const Z95: f64 = 1.959_964;

/// Standard error of the baseline value from its recorded spread and sample count.
fn baseline_standard_error(b: &MetricBaseline, statistic: Statistic) -> f64 {
    match (b.spread, b.samples) {
        (Some(spread), Some(n)) if n > 0 && spread.is_finite() => {
            // The median of normal data is ~1.25x noisier than the mean.
            let factor = if statistic == Statistic::Median {
                1.2533
            } else {
                1.0
            };
            factor * spread / (n as f64).sqrt()
        }
        _ => 0.0,
    }
}

/// The interval of the observed value: bootstrap of its statistic, re-centred on the value (which
/// may combine ranks), widened in quadrature by the baseline's standard error.
fn interval(observed: &Observation, baseline_se: f64, seed: u64) -> Option<(f64, f64)> {
    let (lo, hi) = bootstrap_interval(&observed.samples, observed.statistic, seed)?;
    let centre = observed.statistic.of(&observed.samples);
    let widen = |half: f64| (half * half + (Z95 * baseline_se).powi(2)).sqrt();
    Some((
        observed.value - widen(centre - lo),
        observed.value + widen(hi - centre),
    ))
}

#[cfg(test)]
pub(crate) fn judge(
    baseline: &MetricBaseline,
    direction: Direction,
    unit: Unit,
    observed: Option<&Observation>,
    seed: u64,
) -> Judgement {
    judge_widened(baseline, direction, unit, observed, seed, 0.0)
}

/// [`judge`], with the interval also widened in quadrature by `between_run` (a standard
/// deviation in the metric's unit: the spread of the baseline's history between clean runs).
pub(crate) fn judge_widened(
    baseline: &MetricBaseline,
    direction: Direction,
    unit: Unit,
    observed: Option<&Observation>,
    seed: u64,
    between_run: f64,
) -> Judgement {
    let allowance = baseline
        .tolerance
        .allowance(baseline.value, unit)
        .unwrap_or(0.0);
    let Some(observed) = observed else {
        return Judgement {
            verdict: Verdict::Missing,
            change: None,
            change_pct: None,
            allowance,
            interval: None,
        };
    };
    let change = observed.value - baseline.value;
    let change_pct = (baseline.value != 0.0).then(|| change / baseline.value.abs() * 100.0);
    let baseline_se = baseline_standard_error(baseline, observed.statistic);
    let between_run = if between_run.is_finite() {
        between_run
    } else {
        0.0
    };
    let interval = interval(observed, baseline_se.hypot(between_run), seed);
    // Positive `worse` means the metric moved in its bad direction.
    let (worse, worse_bound, better_bound) = match direction {
        Direction::Lower => (
            change,
            interval.map(|i| i.0 - baseline.value),
            interval.map(|i| baseline.value - i.1),
        ),
        Direction::Higher => (
            -change,
            interval.map(|i| baseline.value - i.1),
            interval.map(|i| i.0 - baseline.value),
        ),
    };
    let verdict = if worse > allowance {
        // Without samples the value alone decides; with them, the whole interval must be out.
        if worse_bound.is_none_or(|w| w > allowance) {
            Verdict::Regressed
        } else {
            Verdict::Noisy
        }
    } else if -worse > allowance && better_bound.is_none_or(|b| b > allowance) {
        Verdict::Improved
    } else {
        Verdict::Ok
    };
    Judgement {
        verdict,
        change: Some(change),
        change_pct,
        allowance,
        interval,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::Tolerance;

    fn baseline(value: f64, tol: &str) -> MetricBaseline {
        MetricBaseline {
            value,
            tolerance: tol.parse::<Tolerance>().unwrap(),
            direction: None,
            gate: true,
            spread: None,
            samples: None,
            p50: None,
            p90: None,
            p99: None,
        }
    }

    fn observed(centre: f64, jitter: f64, n: usize) -> Observation {
        let samples = (0..n)
            .map(|i| centre + jitter * (((i * 7) % 11) as f64 - 5.0) / 5.0)
            .collect::<Vec<_>>();
        Observation {
            value: Statistic::Median.of(&samples),
            samples,
            statistic: Statistic::Median,
        }
    }

    #[test]
    fn clear_slowdown_beyond_tolerance_is_a_regression() {
        let j = judge(
            &baseline(20.0, "3%"),
            Direction::Lower,
            Unit::Ms,
            Some(&observed(22.0, 0.1, 40)),
            1,
        );
        assert_eq!(j.verdict, Verdict::Regressed);
        assert!((j.change.unwrap() - 2.0).abs() < 0.2);
    }

    #[test]
    fn slowdown_inside_tolerance_is_ok() {
        let j = judge(
            &baseline(20.0, "5%"),
            Direction::Lower,
            Unit::Ms,
            Some(&observed(20.5, 0.1, 40)),
            1,
        );
        assert_eq!(j.verdict, Verdict::Ok);
    }

    #[test]
    fn borderline_change_with_wide_spread_is_noisy() {
        let j = judge(
            &baseline(20.0, "3%"),
            Direction::Lower,
            Unit::Ms,
            Some(&observed(20.7, 3.0, 8)),
            1,
        );
        assert_eq!(j.verdict, Verdict::Noisy, "{j:?}");
    }

    #[test]
    fn higher_is_better_metrics_regress_downwards() {
        let j = judge(
            &baseline(99.0, "1pp"),
            Direction::Higher,
            Unit::Pct,
            Some(&observed(90.0, 0.2, 30)),
            1,
        );
        assert_eq!(j.verdict, Verdict::Regressed);
        let j = judge(
            &baseline(90.0, "1pp"),
            Direction::Higher,
            Unit::Pct,
            Some(&observed(99.0, 0.2, 30)),
            1,
        );
        assert_eq!(j.verdict, Verdict::Improved);
    }

    #[test]
    fn missing_observation_is_missing_and_sampleless_values_decide_alone() {
        assert_eq!(
            judge(&baseline(1.0, "5%"), Direction::Lower, Unit::Ratio, None, 1).verdict,
            Verdict::Missing
        );
        let o = Observation {
            value: 1.2,
            samples: vec![],
            statistic: Statistic::Mean,
        };
        assert_eq!(
            judge(
                &baseline(1.0, "5%"),
                Direction::Lower,
                Unit::Ratio,
                Some(&o),
                1
            )
            .verdict,
            Verdict::Regressed
        );
    }
}
