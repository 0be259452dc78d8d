//! Tolerances as people write them in a baseline: `"5%"`, `"0.5ms"`, `"20us"`, `"1pp"`, `"0.2"`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer};

pub(crate) use crate::units::Unit;

/// How far a metric may move before it counts as changed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// A share of the baseline value, in percent (`"5%"`).
    Relative(f64),
    /// An absolute amount in the metric's own unit (`"0.5ms"` on an ms metric, `"1pp"` on a
    /// percentage, `"500us"` converted to ms on an ms metric).
    Absolute { amount: f64, unit: Unit },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToleranceError {
    #[error("tolerance {0:?} is not a number followed by %, ms, us or pp (for example \"5%\", \"0.5ms\", \"1pp\")")]
    Syntax(String),
    #[error("tolerance {0:?} is negative or not finite")]
    Negative(String),
    #[error("tolerance {text:?} is in {given} but the metric is in {metric}")]
    WrongUnit {
        text: String,
        given: &'static str,
        metric: &'static str,
    },
}

fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Ms => "ms",
        Unit::Us => "us",
        Unit::Pct => "percentage points",
        Unit::Ratio => "a plain number",
        Unit::Count => "a count",
        Unit::TokPerS => "tokens per second",
    }
}

impl FromStr for Tolerance {
    type Err = ToleranceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        let (number, kind) = if let Some(n) = t.strip_suffix('%') {
            (n, None)
        } else if let Some(n) = t.strip_suffix("ms") {
            (n, Some(Unit::Ms))
        } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
            (n, Some(Unit::Us))
        } else if let Some(n) = t.strip_suffix("pp") {
            (n, Some(Unit::Pct))
        } else {
            (t, Some(Unit::Ratio))
        };
        let amount: f64 = number
            .trim()
            .parse()
            .map_err(|_| ToleranceError::Syntax(text.to_owned()))?;
        if !amount.is_finite() || amount < 0.0 {
            return Err(ToleranceError::Negative(text.to_owned()));
        }
        Ok(match kind {
            None => Tolerance::Relative(amount),
            Some(unit) => Tolerance::Absolute { amount, unit },
        })
    }
}

impl<'de> Deserialize<'de> for Tolerance {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tolerance::Relative(p) => write!(f, "{p}%"),
            Tolerance::Absolute { amount, unit } => match unit {
                Unit::Ms => write!(f, "{amount}ms"),
                Unit::Us => write!(f, "{amount}us"),
                Unit::Pct => write!(f, "{amount}pp"),
                Unit::Ratio | Unit::Count | Unit::TokPerS => write!(f, "{amount}"),
            },
        }
    }
}

impl Tolerance {
    /// The tolerance as people read it in a report: `5%`, `0.25 ms`, `20 µs`, `10 pp`, `0.2`
    /// (the baseline's own syntax, `10pp`, is [`fmt::Display`]).
    pub fn text(&self) -> String {
        match *self {
            Tolerance::Relative(p) => format!("{}%", crate::units::trimmed(p, 3)),
            Tolerance::Absolute { amount, unit } => unit.amount(amount),
        }
    }

    /// The allowed move, in the metric's unit, around `baseline`.
    pub fn allowance(&self, baseline: f64, metric_unit: Unit) -> Result<f64, ToleranceError> {
        match *self {
            Tolerance::Relative(p) => Ok(baseline.abs() * p / 100.0),
            Tolerance::Absolute { amount, unit } => match (unit, metric_unit) {
                (a, b) if a == b => Ok(amount),
                (Unit::Ratio, _) => Ok(amount),
                (Unit::Us, Unit::Ms) => Ok(amount / 1000.0),
                (Unit::Ms, Unit::Us) => Ok(amount * 1000.0),
                (given, metric) => Err(ToleranceError::WrongUnit {
                    text: self.to_string(),
                    given: unit_name(given),
                    metric: unit_name(metric),
                }),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerances_read_in_report_text_with_a_spaced_unit() {
        let text = |t: &str| t.parse::<Tolerance>().unwrap().text();
        assert_eq!(text("10pp"), "10 pp");
        assert_eq!(text("0.25ms"), "0.25 ms");
        assert_eq!(text("20us"), "20 µs");
        assert_eq!(text("5%"), "5%");
        assert_eq!(text("0.2"), "0.2");
        // The baseline's own syntax is unchanged.
        assert_eq!("10pp".parse::<Tolerance>().unwrap().to_string(), "10pp");
    }

    #[test]
    fn tolerances_parse_in_every_written_form() {
        assert_eq!("5%".parse(), Ok(Tolerance::Relative(5.0)));
        assert_eq!(
            " 0.5ms".parse(),
            Ok(Tolerance::Absolute {
                amount: 0.5,
                unit: Unit::Ms
            })
        );
        assert_eq!(
            "20us".parse(),
            Ok(Tolerance::Absolute {
                amount: 20.0,
                unit: Unit::Us
            })
        );
        assert_eq!(
            "1pp".parse(),
            Ok(Tolerance::Absolute {
                amount: 1.0,
                unit: Unit::Pct
            })
        );
        assert_eq!(
            "0.2".parse(),
            Ok(Tolerance::Absolute {
                amount: 0.2,
                unit: Unit::Ratio
            })
        );
    }

    #[test]
    fn bad_tolerances_say_what_is_wrong() {
        assert!(matches!(
            "abc".parse::<Tolerance>(),
            Err(ToleranceError::Syntax(_))
        ));
        assert!(matches!(
            "%".parse::<Tolerance>(),
            Err(ToleranceError::Syntax(_))
        ));
        assert!(matches!(
            "-5%".parse::<Tolerance>(),
            Err(ToleranceError::Negative(_))
        ));
        assert!(matches!(
            "NaN%".parse::<Tolerance>(),
            Err(ToleranceError::Negative(_))
        ));
        assert!(matches!(
            "inf".parse::<Tolerance>(),
            Err(ToleranceError::Negative(_))
        ));
    }

    #[test]
    fn allowances_convert_units_or_refuse() {
        let ms = Unit::Ms;
        assert_eq!(
            "5%".parse::<Tolerance>().unwrap().allowance(20.0, ms),
            Ok(1.0)
        );
        assert_eq!(
            "500us".parse::<Tolerance>().unwrap().allowance(20.0, ms),
            Ok(0.5)
        );
        assert_eq!(
            "0.5ms"
                .parse::<Tolerance>()
                .unwrap()
                .allowance(20.0, Unit::Us),
            Ok(500.0)
        );
        assert!("1pp"
            .parse::<Tolerance>()
            .unwrap()
            .allowance(20.0, ms)
            .is_err());
    }
}
