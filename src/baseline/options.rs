//! `[analysis]`: the analysis options a baseline's figures were made with (`--warmup-steps`,
//! `--hta-comm`, `--step-gap`) and the version of the built-in taxonomy that classified its
//! kernels. Written whole by every write of the figures; `check` refuses a run analysed with
//! other options (exit 2, naming them). A baseline without the table was made before
//! tracegate recorded them: it is taken as made with the defaults.

use serde::Deserialize;
use toml_edit::{value, DocumentMut, Item, Table};

/// The options that change a figure, as a run was analysed with them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisOptions {
    pub warmup_steps: usize,
    pub hta_comm: bool,
    /// ns; `None`: chosen from the run's own gaps.
    pub step_gap: Option<i64>,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            warmup_steps: crate::steps::DEFAULT_WARMUP_STEPS,
            hta_comm: false,
            step_gap: None,
        }
    }
}

/// The `[analysis]` table as a baseline holds it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recorded {
    #[serde(default = "default_warmup")]
    pub warmup_steps: usize,
    #[serde(default)]
    pub hta_comm: bool,
    /// A duration (`500us`), or `auto`.
    #[serde(default)]
    pub step_gap: Option<String>,
    /// The built-in taxonomy's version ([`crate::taxonomy::version`]).
    #[serde(default)]
    pub taxonomy: Option<String>,
}

fn default_warmup() -> usize {
    crate::steps::DEFAULT_WARMUP_STEPS
}

impl Recorded {
    /// The options recorded; an unreadable `step_gap` is an error naming it.
    pub fn options(&self) -> Result<AnalysisOptions, String> {
        let step_gap = match self.step_gap.as_deref().map(str::trim) {
            None | Some("auto") => None,
            Some(text) => Some(
                crate::steps::segment::parse_duration(text)
                    .map_err(|e| format!("[analysis] step_gap {e}"))?,
            ),
        };
        Ok(AnalysisOptions {
            warmup_steps: self.warmup_steps,
            hta_comm: self.hta_comm,
            step_gap,
        })
    }
}

/// A step gap as `--step-gap` takes it: whole ms, else µs, else ns.
pub(crate) fn duration_text(ns: i64) -> String {
    match ns {
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// Writes `[analysis]` whole: the options and the built-in taxonomy's version.
pub(crate) fn write(doc: &mut DocumentMut, o: &AnalysisOptions) {
    let mut t = Table::new();
    t.decor_mut().set_prefix(
        "\n# Written by tracegate: the analysis options the figures were made with and the version \
         of the built-in kernel rules; check refuses a run analysed otherwise.\n",
    );
    t.insert("warmup_steps", value(o.warmup_steps as i64));
    t.insert("hta_comm", value(o.hta_comm));
    t.insert(
        "step_gap",
        value(o.step_gap.map_or_else(|| "auto".to_string(), duration_text)),
    );
    t.insert("taxonomy", value(crate::taxonomy::version()));
    doc.insert("analysis", Item::Table(t));
}

/// Each option of the run that differs from the baseline's, as `--flag` words: (what the
/// baseline was made with, what the run is analysed with).
pub(crate) fn differences(base: &AnalysisOptions, run: &AnalysisOptions) -> Vec<(String, String)> {
    let gap = |g: Option<i64>| match g {
        Some(ns) => format!("--step-gap {}", duration_text(ns)),
        None => "the step gap chosen from the run".to_string(),
    };
    let hta = |h: bool| if h { "--hta-comm" } else { "no --hta-comm" }.to_string();
    let mut out = Vec::new();
    if base.warmup_steps != run.warmup_steps {
        out.push((
            format!("--warmup-steps {}", base.warmup_steps),
            format!("--warmup-steps {}", run.warmup_steps),
        ));
    }
    if base.hta_comm != run.hta_comm {
        out.push((hta(base.hta_comm), hta(run.hta_comm)));
    }
    if base.step_gap != run.step_gap {
        out.push((gap(base.step_gap), gap(run.step_gap)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_gap_is_written_as_the_flag_takes_it_and_read_back() {
        for ns in [500_000, 2_000_000, 1_500, 7] {
            let text = duration_text(ns);
            assert_eq!(
                crate::steps::segment::parse_duration(&text),
                Ok(ns),
                "{text}"
            );
        }
    }

    #[test]
    fn each_option_that_differs_is_named() {
        let base = AnalysisOptions::default();
        assert!(differences(&base, &base).is_empty());
        let run = AnalysisOptions {
            warmup_steps: 3,
            hta_comm: true,
            step_gap: Some(500_000),
        };
        let d = differences(&base, &run);
        assert_eq!(d.len(), 3);
        assert_eq!(d[1], ("no --hta-comm".into(), "--hta-comm".into()));
        assert_eq!(d[2].1, "--step-gap 500us");
    }
}
