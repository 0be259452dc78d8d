//! Per-hardware baselines: TOML files people edit and review in pull requests.
//!
//! The schema is in `docs/BASELINES.md`. Unknown keys and bad values are errors that name the
//! file, the line and the key, because a typo in a baseline must never silently turn a gate off.

pub mod discover;
pub mod shipped;
pub mod tolerance;
pub mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use tolerance::{Tolerance, ToleranceError, Unit};

pub use crate::metrics::Direction;

/// The `[meta]` table: what configuration the figures belong to and where they came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Device name as the trace reports it, e.g. "AMD Instinct MI355X".
    pub hardware: String,
    pub model: Option<String>,
    pub precision: Option<String>,
    pub framework: Option<String>,
    pub image: Option<String>,
    /// The image of the baseline before `baseline update --image` recorded a new one.
    pub previous_image: Option<String>,
    pub tp: Option<u32>,
    pub ep: Option<u32>,
    pub concurrency: Option<u32>,
    /// MoE layers of the model, for `moe_us_per_layer` (else counted from router launches).
    pub moe_layers: Option<u32>,
    /// Where the figures came from (a workflow run, a `synth` command).
    pub source: Option<String>,
    pub date: Option<String>,
    pub tracegate_version: Option<String>,
    /// Free pairs of the run's identity (`--meta sglang=0.5.3`), an inline table of strings.
    #[serde(default)]
    pub extra: BTreeMap<String, String>,
}

impl Meta {
    /// The value of `key` as text: a `[meta]` field, else an `extra` pair.
    pub fn get(&self, key: &str) -> Option<String> {
        let text = |v: &Option<String>| v.clone();
        let num = |v: Option<u32>| v.map(|v| v.to_string());
        match key {
            "hardware" => Some(self.hardware.clone()).filter(|h| !h.is_empty()),
            "model" => text(&self.model),
            "precision" => text(&self.precision),
            "framework" => text(&self.framework),
            "image" => text(&self.image),
            "previous_image" => text(&self.previous_image),
            "tp" => num(self.tp),
            "ep" => num(self.ep),
            "concurrency" => num(self.concurrency),
            "moe_layers" => num(self.moe_layers),
            "source" => text(&self.source),
            "date" => text(&self.date),
            "tracegate_version" => text(&self.tracegate_version),
            _ => self.extra.get(key).cloned(),
        }
    }
}

/// One gated (or report-only) metric.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricBaseline {
    pub value: f64,
    pub tolerance: Tolerance,
    /// Overrides the metric's natural direction.
    pub direction: Option<Direction>,
    /// `false`: reported, never fails the check.
    #[serde(default = "default_true")]
    pub gate: bool,
    /// Robust per-step spread of the baseline run (MAD scaled to σ), in the metric's unit.
    pub spread: Option<f64>,
    /// Number of per-step samples the baseline value came from.
    pub samples: Option<u64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

fn default_true() -> bool {
    true
}

/// Time and calls per decode step of one category or kernel, for the explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakdownEntry {
    pub ms_per_step: f64,
    pub calls_per_step: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelEntry {
    pub name: String,
    pub category: String,
    pub ms_per_step: f64,
    pub calls_per_step: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Breakdown {
    #[serde(default)]
    pub categories: BTreeMap<String, BreakdownEntry>,
    #[serde(default)]
    pub kernels: Vec<KernelEntry>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineFile {
    meta: Meta,
    #[serde(default)]
    metrics: BTreeMap<String, MetricBaseline>,
    #[serde(default)]
    breakdown: Breakdown,
    /// Extra taxonomy rules, in the rules-file format; handed to the taxonomy as they are.
    #[serde(default)]
    rules: Option<toml::Table>,
}

/// A parsed and validated baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub path: PathBuf,
    pub meta: Meta,
    pub metrics: BTreeMap<String, MetricBaseline>,
    pub breakdown: Breakdown,
    pub rules: Option<toml::Table>,
}

/// A baseline that cannot be used. Displayed as `<file>[:<line>]: <what is wrong>`.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    #[error("{}: cannot read baseline: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: metric `{metric}`: {message}", path.display())]
    Metric {
        path: PathBuf,
        metric: String,
        message: String,
    },
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl Baseline {
    /// Reads and validates a baseline file against the metric registry.
    pub fn load(path: &Path) -> Result<Baseline, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Baseline::parse(&text, path)
    }

    /// Validates a baseline's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Baseline, BaselineError> {
        let file: BaselineFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| line_of(text, s.start));
            let source_line = text
                .lines()
                .nth(line.saturating_sub(1))
                .unwrap_or("")
                .trim();
            let message = e.message().trim().to_owned();
            let message = if source_line.is_empty() {
                message
            } else {
                format!("in `{source_line}`: {message}")
            };
            BaselineError::Invalid {
                path: path.to_path_buf(),
                line,
                message,
            }
        })?;
        let metric_error = |metric: &str, message: String| BaselineError::Metric {
            path: path.to_path_buf(),
            metric: metric.to_owned(),
            message,
        };
        for (name, m) in &file.metrics {
            let Some(spec) = crate::metrics::catalog::def(name) else {
                let names: Vec<&str> = crate::metrics::catalog::names().collect();
                return Err(metric_error(
                    name,
                    format!("unknown metric; known metrics: {}", names.join(", ")),
                ));
            };
            if !m.value.is_finite() {
                return Err(metric_error(
                    name,
                    format!("value {} is not a finite number", m.value),
                ));
            }
            m.tolerance
                .allowance(m.value, spec.unit)
                .map_err(|e| metric_error(name, e.to_string()))?;
        }
        Ok(Baseline {
            path: path.to_path_buf(),
            meta: file.meta,
            metrics: file.metrics,
            breakdown: file.breakdown,
            rules: file.rules,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Baseline, BaselineError> {
        Baseline::parse(text, Path::new("baselines/x.toml"))
    }

    const GOOD: &str = r#"
# hand comment
[meta]
hardware = "AMD Instinct MI355X"
tp = 4

[metrics.decode_step_ms]
value = 20.11
tolerance = "3%"

[metrics.comm_pct]
value = 10.5
tolerance = "1pp"
gate = false

[breakdown.categories.moe_gemm]
ms_per_step = 7.41
calls_per_step = 116.0
"#;

    #[test]
    fn a_good_baseline_parses() {
        let b = parse(GOOD).unwrap();
        assert_eq!(b.meta.hardware, "AMD Instinct MI355X");
        assert_eq!(
            b.metrics["decode_step_ms"].tolerance,
            Tolerance::Relative(3.0)
        );
        assert!(!b.metrics["comm_pct"].gate);
        assert_eq!(b.breakdown.categories["moe_gemm"].calls_per_step, 116.0);
    }

    #[test]
    fn unknown_keys_name_file_line_and_key() {
        let text = GOOD.replace(
            "tolerance = \"3%\"",
            "tolerance = \"3%\"\ntolerence = \"1%\"",
        );
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.starts_with("baselines/x.toml:10:"), "{e}");
        assert!(e.contains("tolerence"), "{e}");
    }

    #[test]
    fn bad_tolerance_is_an_error_with_its_line() {
        let e = parse(&GOOD.replace("\"3%\"", "\"abc\""))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("baselines/x.toml:9:"), "{e}");
        assert!(e.contains("abc"), "{e}");
        let e = parse(&GOOD.replace("\"3%\"", "\"-3%\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative"), "{e}");
    }

    #[test]
    fn unknown_metric_and_wrong_unit_are_errors() {
        let e = parse(&GOOD.replace("metrics.comm_pct", "metrics.comm_percent"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("comm_percent") && e.contains("unknown metric"),
            "{e}"
        );
        let e = parse(&GOOD.replace("\"1pp\"", "\"1ms\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("comm_pct") && e.contains("ms"), "{e}");
    }

    #[test]
    fn invalid_toml_is_an_error_with_its_line() {
        let e = parse("[meta\nhardware = 1").unwrap_err().to_string();
        assert!(e.starts_with("baselines/x.toml:1:"), "{e}");
        let e = parse("[metrics.decode_step_ms]\nvalue = 1.0\ntolerance = \"3%\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("meta"), "{e}");
    }
}
