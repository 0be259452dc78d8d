//! Per-hardware baselines: TOML files people edit and review in pull requests.
//!
//! The schema is in `docs/BASELINES.md`. Unknown keys and bad values are errors that name the
//! file, the line and the key, because a typo in a baseline must never silently turn a gate off.

mod budget;
pub(crate) mod calibrate;
pub(crate) mod discover;
pub(crate) mod file;
pub(crate) mod history;
pub(crate) mod options;
pub(crate) mod shipped;
pub(crate) mod tolerance;
pub(crate) mod write;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) use tolerance::{Tolerance, Unit};

pub(crate) use crate::metrics::Direction;
use crate::metrics::MetricId;

/// The `[meta]` table: what configuration the figures belong to and where they came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Device name as the trace reports it, e.g. "AMD Instinct MI355X".
    pub hardware: String,
    /// `hardware` was asserted with `--hardware` because the baseline's trace named no device:
    /// `check` then takes a run whose trace names none as on this hardware (and says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hardware_asserted: bool,
    pub model: Option<String>,
    pub precision: Option<String>,
    pub framework: Option<String>,
    pub image: Option<String>,
    /// The image of the baseline before `baseline update --image` recorded a new one.
    pub previous_image: Option<String>,
    pub tp: Option<u32>,
    /// Which ranks of how many the figures came from ("0 of 4"), where the run held only some
    /// (`--partial-ranks`): `check` judges only a run of the same ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial_ranks: Option<String>,
    /// `"loop"`: the figures are of a ProfilerStep loop's iterations (`iteration_ms`), written by
    /// tracegate; absent: of a serving run. `check` judges only a run of the same kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_kind: Option<crate::metrics::RunKind>,
    pub ep: Option<u32>,
    pub concurrency: Option<u32>,
    /// MoE layers of the model, for `moe_us_per_layer` (else counted from router launches).
    pub moe_layers: Option<u32>,
    /// Sequences decoding per step in the run the figures came from (`bs=N`, vLLM's generation
    /// requests), written by tracegate where the steps carry one: a run of another batch is
    /// another configuration.
    pub batch: Option<u32>,
    /// Where the figures came from (a workflow run, a `synth` command).
    pub source: Option<String>,
    pub date: Option<String>,
    pub tracegate_version: Option<String>,
    /// Free pairs of the run's identity (`--meta sglang=0.5.3`), an inline table of strings.
    #[serde(default)]
    pub extra: BTreeMap<String, String>,
}

impl Meta {
    /// The kind of run the figures are of (a baseline without `run_kind` is of a serving run).
    pub fn kind(&self) -> crate::metrics::RunKind {
        self.run_kind.unwrap_or_default()
    }

    /// The value of `key` as text: a `[meta]` field, else an `extra` pair.
    pub fn get(&self, key: &str) -> Option<String> {
        let text = |v: &Option<String>| v.clone();
        let num = |v: Option<u32>| v.map(|v| v.to_string());
        match key {
            "hardware" => Some(self.hardware.clone()).filter(|h| !h.is_empty()),
            "hardware_asserted" => Some(self.hardware_asserted.to_string()),
            "model" => text(&self.model),
            "precision" => text(&self.precision),
            "framework" => text(&self.framework),
            "image" => text(&self.image),
            "previous_image" => text(&self.previous_image),
            "tp" => num(self.tp),
            "partial_ranks" => text(&self.partial_ranks),
            "run_kind" => Some(
                match self.kind() {
                    crate::metrics::RunKind::Serving => "serving",
                    crate::metrics::RunKind::Loop => "loop",
                }
                .to_string(),
            ),
            "ep" => num(self.ep),
            "concurrency" => num(self.concurrency),
            "moe_layers" => num(self.moe_layers),
            "batch" => num(self.batch),
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
    /// The metric's direction, if written: it must be the metric's own (a property of the metric,
    /// not of the baseline), else the baseline is refused.
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
    /// Written by tracegate: the run's kernel time by kind of step.
    #[serde(default)]
    step_mix: Option<crate::metrics::MixShares>,
    /// Extra taxonomy rules: `[[rules]]` tables (each one rule, as a rules file's `[[rule]]`),
    /// or the older `[rules]` table holding `[[rules.rule]]`.
    #[serde(default)]
    rules: Option<toml::Value>,
    /// Written by `baseline calibrate`.
    #[serde(default)]
    calibration: Option<calibrate::CalibrationTable>,
    /// Appended by `baseline update`.
    #[serde(default)]
    history: Option<history::History>,
    /// Written by tracegate: the analysis options and taxonomy the figures were made with.
    #[serde(default)]
    analysis: Option<options::Recorded>,
}

/// A parsed and validated baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    pub path: PathBuf,
    pub meta: Meta,
    /// Keyed by metric, in the order of their names (as the file lists them when written).
    pub metrics: BTreeMap<MetricId, MetricBaseline>,
    pub breakdown: Breakdown,
    /// The kernel time by kind of step of the run it was made from (`[step_mix]`), when recorded.
    pub step_mix: Option<crate::metrics::MixShares>,
    /// The baseline's own taxonomy rules, as a rules-file table (`rule` = the array of rules),
    /// checked when the baseline was read; tried after `--rules`, before the built-in table.
    pub rules: Option<toml::Table>,
    /// How the tolerances were calibrated (`baseline calibrate`), when they were.
    pub calibration: Option<calibrate::CalibrationTable>,
    /// The last runs' values (`baseline update`), when kept.
    pub history: Option<history::History>,
    /// The analysis options and taxonomy version the figures were made with (`[analysis]`);
    /// `None` in a baseline written before tracegate recorded them.
    pub analysis: Option<options::Recorded>,
}

/// How a baseline's rules are named in messages.
pub(crate) const RULES_KEY: &str = "[[rules]]";

/// A baseline that cannot be used. Displayed as `<file>[:<line>]: <what is wrong>`.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    // The I/O error is part of the message, not a source: a chain of causes would say it twice
    // ("Is a directory: Is a directory").
    #[error("{}: cannot read baseline: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: {message}", path.display())]
    Rules { path: PathBuf, message: String },
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
        let text =
            crate::files::read_text_capped(path, crate::files::TEXT_CAP).map_err(|error| {
                BaselineError::Io {
                    path: path.to_path_buf(),
                    error,
                }
            })?;
        Baseline::parse(&text, path)
    }

    /// Validates a baseline's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Baseline, BaselineError> {
        let text = &*history::without_dropped_runs(text);
        let mut file: BaselineFile = toml::from_str(text).map_err(|e| {
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
        // A history past its bound is read as the one `baseline update` would have kept.
        if let Some(h) = &mut file.history {
            h.cap();
        }
        if file.meta.moe_layers == Some(0) {
            return Err(BaselineError::Invalid {
                path: path.to_path_buf(),
                line: text
                    .lines()
                    .position(|l| l.trim_start().starts_with("moe_layers"))
                    .map_or(0, |i| i + 1),
                message: "[meta] moe_layers = 0: a MoE model has at least one MoE layer (remove \
                          the key to count them from the router kernels)"
                    .to_string(),
            });
        }
        let metric_error = |metric: &str, message: String| BaselineError::Metric {
            path: path.to_path_buf(),
            metric: metric.to_owned(),
            message,
        };
        let mut metrics = BTreeMap::new();
        for (name, m) in file.metrics {
            let name = name.as_str();
            let Some(id) = MetricId::from_name(name) else {
                let names: Vec<&str> = crate::metrics::catalog::names().collect();
                return Err(metric_error(
                    name,
                    format!("unknown metric; known metrics: {}", names.join(", ")),
                ));
            };
            let figures = [
                ("value", Some(m.value)),
                ("spread", m.spread),
                ("p50", m.p50),
                ("p90", m.p90),
                ("p99", m.p99),
            ];
            for (key, v) in figures {
                if let Some(v) = v.filter(|v| !v.is_finite()) {
                    return Err(metric_error(
                        name,
                        format!("{key} {v} is not a finite number"),
                    ));
                }
            }
            let spec = id.def();
            if let Some(d) = m.direction.filter(|d| *d != spec.direction) {
                let word = |d: Direction| match d {
                    Direction::Lower => "lower",
                    Direction::Higher => "higher",
                };
                return Err(BaselineError::Invalid {
                    path: path.to_path_buf(),
                    line: direction_line(text, name),
                    message: format!(
                        "metric `{name}`: direction = \"{}\", but {} is better for `{name}`: the \
                         direction is the metric's, not the baseline's (remove the line)",
                        word(d),
                        word(spec.direction)
                    ),
                });
            }
            if let Some(spread) = m.spread.filter(|s| *s < 0.0) {
                return Err(metric_error(name, format!("spread {spread} is negative")));
            }
            m.tolerance
                .allowance(m.value, spec.unit)
                .map_err(|e| metric_error(name, e.to_string()))?;
            metrics.insert(id, m);
        }
        let rules = file
            .rules
            .map(|value| rules_table(value, text, path))
            .transpose()?;
        let section_error = |section: &str, message: String| BaselineError::Invalid {
            path: path.to_path_buf(),
            line: text
                .lines()
                .position(|l| l.trim_start().starts_with(section))
                .map_or(0, |i| i + 1),
            message,
        };
        if let Some(c) = &file.calibration {
            c.validate().map_err(|m| section_error("[calibration", m))?;
        }
        if let Some(h) = &file.history {
            h.validate().map_err(|m| section_error("[history", m))?;
        }
        if let Some(a) = &file.analysis {
            a.options().map_err(|m| section_error("[analysis", m))?;
        }
        Ok(Baseline {
            path: path.to_path_buf(),
            meta: file.meta,
            metrics,
            breakdown: file.breakdown,
            step_mix: file.step_mix,
            rules,
            calibration: file.calibration,
            history: file.history,
            analysis: file.analysis,
        })
    }

    /// The analysis options the figures were made with: the defaults where the baseline
    /// records none (`[analysis]` absent, or unreadable, which `parse` refuses).
    pub(crate) fn analysis_options(&self) -> options::AnalysisOptions {
        self.analysis
            .as_ref()
            .and_then(|a| a.options().ok())
            .unwrap_or_default()
    }

    /// The baseline's rules, compiled; named `<file> [[rules]]` in errors.
    pub fn taxonomy_rules(
        &self,
    ) -> Result<Vec<crate::taxonomy::Rule>, crate::taxonomy::TaxonomyError> {
        match &self.rules {
            Some(table) => crate::taxonomy::Taxonomy::rules_from_table(
                table,
                &format!("{} {RULES_KEY}", self.path.display()),
            ),
            None => Ok(Vec::new()),
        }
    }
}

/// The 1-based line of `direction` in the table of metric `name`: the first `direction` key after
/// its `[metrics.NAME]` header and before the next header, or the line of an inline table
/// `NAME = { ... direction ... }`; 0 when not found.
fn direction_line(text: &str, name: &str) -> usize {
    let header = |l: &str| {
        let l = l.trim();
        l.starts_with('[')
            && l.trim_matches(|c| c == '[' || c == ']')
                .split('.')
                .map(|part| part.trim().trim_matches('"'))
                .eq(["metrics", name])
    };
    let mut in_table = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with('[') {
            in_table = header(t);
        } else if (in_table && t.starts_with("direction"))
            || (t.starts_with(name) && t.contains("direction"))
        {
            return i + 1;
        }
    }
    0
}

/// A kernel of a baseline's `[breakdown]` that its own `[[rules]]` put in another category than
/// the one the breakdown records: the figures were recorded under other rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedKernel {
    /// `[[rules]] rule 1 (prefix "ck::kernel_moe")`.
    pub rule: String,
    pub kernel: String,
    pub recorded: String,
    pub moved_to: String,
}

impl Baseline {
    /// The kernels of `[breakdown]` that the baseline's own `[[rules]]` classify into another
    /// category than the one recorded for them: the first of its rules that matches a kernel's
    /// name (as written or demangled) decides, as it would in the run.
    pub fn rules_moving_recorded_kernels(&self) -> Vec<MovedKernel> {
        let Ok(rules) = self.taxonomy_rules() else {
            return Vec::new();
        };
        if rules.is_empty() {
            return Vec::new();
        }
        let mut moved = Vec::new();
        for k in &self.breakdown.kernels {
            let demangled = crate::taxonomy::demangle(&k.name);
            let Some(rule) = rules
                .iter()
                .find(|r| r.matches(&k.name) || demangled.as_deref().is_some_and(|d| r.matches(d)))
            else {
                continue;
            };
            if rule.category.key() != k.category {
                moved.push(MovedKernel {
                    rule: describe_rule(rule),
                    kernel: k.name.clone(),
                    recorded: k.category.clone(),
                    moved_to: rule.category.key().to_string(),
                });
            }
        }
        moved
    }
}

/// Text from a baseline for a message: quoted, control characters escaped, at most 120
/// characters.
pub(crate) fn shown_text(text: &str) -> String {
    const MAX: usize = 120;
    let mut out: String = text.chars().take(MAX).collect();
    if text.chars().nth(MAX).is_some() {
        out.push('…');
    }
    format!("{out:?}")
}

/// `[[rules]] rule 1 (prefix "ck::kernel_moe")`: a rule of a baseline's `[[rules]]` as a message names it.
fn describe_rule(rule: &crate::taxonomy::Rule) -> String {
    describe_rule_from(rule, RULES_KEY)
}

/// `ORIGIN rule 1 (prefix "ck::kernel_moe")`: a user rule as a message names it, its patterns
/// shown as [`shown_text`] shows baseline text.
pub(crate) fn describe_rule_from(rule: &crate::taxonomy::Rule, origin: &str) -> String {
    use crate::taxonomy::Matcher;
    let (key, patterns): (&str, Vec<&str>) = match &rule.matcher {
        Matcher::Prefix(p) => ("prefix", p.iter().map(String::as_str).collect()),
        Matcher::Contains(p) => ("contains", p.iter().map(String::as_str).collect()),
        Matcher::Regex(p) => ("regex", p.iter().map(|r| r.as_str()).collect()),
    };
    let shown: Vec<String> = patterns.iter().map(|p| shown_text(p)).collect();
    format!("{origin} rule {} ({key} {})", rule.index, shown.join(", "))
}

/// The `rules` value of a baseline as a rules-file table, checked rule by rule so that a bad
/// rule is an error when the baseline is read, naming the file, the line of the rules and what
/// is wrong.
fn rules_table(value: toml::Value, text: &str, path: &Path) -> Result<toml::Table, BaselineError> {
    let line = text
        .lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with("[[rules") || l.starts_with("[rules")
        })
        .map_or(0, |i| i + 1);
    let bad = |message: String| BaselineError::Rules {
        path: path.to_path_buf(),
        message: format!("line {line}: {message}"),
    };
    let table = match value {
        toml::Value::Array(items) => {
            let mut t = toml::Table::new();
            t.insert("rule".into(), toml::Value::Array(items));
            t
        }
        toml::Value::Table(t) => t,
        other => {
            return Err(bad(format!(
                "`rules` must be [[rules]] tables, not {}",
                other.type_str()
            )))
        }
    };
    crate::taxonomy::Taxonomy::rules_from_table(&table, RULES_KEY)
        .map_err(|e| bad(e.to_string()))?;
    Ok(table)
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
            b.metrics[&MetricId::DecodeStepMs].tolerance,
            Tolerance::Relative(3.0)
        );
        assert!(!b.metrics[&MetricId::CommPct].gate);
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
    fn a_direction_other_than_the_metrics_is_an_error_naming_its_line() {
        let text = GOOD.replace(
            "tolerance = \"3%\"",
            "tolerance = \"3%\"\ndirection = \"higher\"",
        );
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.starts_with("baselines/x.toml:10: metric `decode_step_ms`"),
            "{e}"
        );
        assert!(
            e.contains("direction = \"higher\"") && e.contains("lower is better"),
            "{e}"
        );
        // Inline, and on a higher-is-better metric.
        let inline = format!("{HEAD_ONLY}gpu_util_pct = {{ value = 99.0, tolerance = \"1pp\", direction = \"lower\" }}\n");
        let e = parse(&inline).unwrap_err().to_string();
        assert!(
            e.starts_with("baselines/x.toml:5: metric `gpu_util_pct`"),
            "{e}"
        );
        // The metric's own direction, written out, is fine.
        let same = GOOD.replace(
            "tolerance = \"3%\"",
            "tolerance = \"3%\"\ndirection = \"lower\"",
        );
        assert_eq!(
            parse(&same).unwrap().metrics[&MetricId::DecodeStepMs].direction,
            Some(Direction::Lower)
        );
    }

    #[test]
    fn moe_layers_zero_is_an_error_naming_its_line() {
        let e = parse(&GOOD.replace("tp = 4", "tp = 4\nmoe_layers = 0"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("baselines/x.toml:6: [meta] moe_layers = 0"),
            "{e}"
        );
        assert!(parse(&GOOD.replace("tp = 4", "tp = 4\nmoe_layers = 58")).is_ok());
    }

    const HEAD_ONLY: &str = "[meta]\nhardware = \"AMD Instinct MI355X\"\ntp = 4\n[metrics]\n";

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

#[cfg(test)]
mod rules_tests {
    use super::*;

    fn parse(text: &str) -> Result<Baseline, BaselineError> {
        Baseline::parse(text, Path::new("baselines/x.toml"))
    }

    const HEAD: &str = "[meta]\nhardware = \"NVIDIA H800\"\n";

    #[test]
    fn rules_tables_classify_the_kernel_they_name() {
        let b = parse(&format!(
            "{HEAD}\n[[rules]]\nprefix = \"acme_dispatch_v9\"\ncategory = \"comm\"\ncollective = \"all_to_all\"\n"
        ))
        .unwrap();
        let rules = b.taxonomy_rules().unwrap();
        let taxonomy = crate::taxonomy::Taxonomy::builtin().with_rules(rules);
        let class = taxonomy.classify("acme_dispatch_v9_kernel");
        assert_eq!(class.category, crate::taxonomy::Category::Comm);
        assert_eq!(
            class.collective,
            Some(crate::taxonomy::Collective::AllToAll)
        );
        // Without the baseline's rule the name is unknown.
        assert_eq!(
            crate::taxonomy::Taxonomy::builtin()
                .classify("acme_dispatch_v9_kernel")
                .category,
            crate::taxonomy::Category::Other
        );
    }

    #[test]
    fn rules_that_move_a_recorded_kernel_are_named_with_the_kernel() {
        let kernels = "[[breakdown.kernels]]\nname = \"void big_moe_gemm<1>(int)\"\ncategory = \"moe_gemm\"\n\
            ms_per_step = 3.0\ncalls_per_step = 58.0\n\n[[breakdown.kernels]]\nname = \"attn_fwd\"\n\
            category = \"attention\"\nms_per_step = 1.0\ncalls_per_step = 61.0\n";
        let moving = format!(
            "{HEAD}\n{kernels}\n[[rules]]\nprefix = \"attn\"\ncategory = \"attention\"\n\n\
             [[rules]]\nprefix = \"big_moe\"\ncategory = \"dense_gemm\"\n"
        );
        let moved = parse(&moving).unwrap().rules_moving_recorded_kernels();
        assert_eq!(
            moved,
            vec![MovedKernel {
                rule: "[[rules]] rule 2 (prefix \"big_moe\")".into(),
                kernel: "void big_moe_gemm<1>(int)".into(),
                recorded: "moe_gemm".into(),
                moved_to: "dense_gemm".into(),
            }]
        );
        // Rules that agree with the breakdown, or match none of its kernels, move nothing.
        let agreeing = moving.replace("\"dense_gemm\"", "\"moe_gemm\"");
        assert!(parse(&agreeing)
            .unwrap()
            .rules_moving_recorded_kernels()
            .is_empty());
        let elsewhere = moving.replace("\"big_moe\"", "\"tiny_moe\"");
        assert!(parse(&elsewhere)
            .unwrap()
            .rules_moving_recorded_kernels()
            .is_empty());
        // The first of the baseline's rules that matches decides, as in the run.
        let shadowed = format!(
            "{HEAD}\n{kernels}\n[[rules]]\ncontains = \"moe_gemm\"\ncategory = \"moe_gemm\"\n\n\
             [[rules]]\nprefix = \"big_moe\"\ncategory = \"dense_gemm\"\n"
        );
        assert!(parse(&shadowed)
            .unwrap()
            .rules_moving_recorded_kernels()
            .is_empty());
    }

    #[test]
    fn the_older_rules_table_still_reads() {
        let b = parse(&format!(
            "{HEAD}\n[rules]\n[[rules.rule]]\nprefix = \"acme\"\ncategory = \"norm\"\n"
        ))
        .unwrap();
        assert_eq!(b.taxonomy_rules().unwrap().len(), 1);
    }

    #[test]
    fn a_bad_rule_is_an_error_naming_the_file_the_line_and_the_rule() {
        let text = format!(
            "{HEAD}\n[[rules]]\nprefix = \"a\"\ncategory = \"comm\"\n\n[[rules]]\nregex = \"(\"\ncategory = \"comm\"\n"
        );
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.starts_with("baselines/x.toml: line 4: [[rules]]: rule 2: bad regex"),
            "{e}"
        );
        let e = parse(&format!(
            "{HEAD}\n[[rules]]\nprefix = \"a\"\ncategory = \"comms\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("rule 1: unknown category `comms`"), "{e}");
        let e = parse(&format!("rules = 3\n{HEAD}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("`rules` must be [[rules]] tables"), "{e}");
        let e = parse(&format!("{HEAD}\n[[rules]]\ncategory = \"norm\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no matcher"), "{e}");
    }
}
