//! `[history]`: the values of the last runs `baseline update` saw (bounded, 20 by default), so
//! that the gate keeps learning how much each figure moves between clean runs. Once it holds
//! [`MIN_RUNS_TO_WIDEN`] runs, `check` widens each metric's interval by the history's
//! between-run spread, in quadrature; `baseline calibrate --from-history` re-derives the
//! tolerances from it.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml_edit::{value, ArrayOfTables, DocumentMut, InlineTable, Item, Table};

use super::calibrate::{qn_spread, RunFigures};
use super::write::round6;
use crate::metrics::catalog::{MetricId, METRICS};
use crate::metrics::Extraction;

/// Runs kept when the file does not say.
pub(crate) const DEFAULT_MAX_RUNS: usize = 20;
/// The most a history may be asked to keep.
pub(crate) const MAX_MAX_RUNS: usize = 1000;
/// Runs the history needs before `check` widens by its spread.
pub(crate) const MIN_RUNS_TO_WIDEN: usize = 5;

/// The `[history]` table as read back from a baseline.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct History {
    #[serde(default = "default_max_runs")]
    pub max_runs: usize,
    /// The last [`MAX_MAX_RUNS`] runs of the file at most (a longer history is read in one pass
    /// and bounded memory, the older runs dropped as read), then the last `max_runs`
    /// ([`History::cap`]).
    #[serde(default, deserialize_with = "last_runs")]
    pub runs: Vec<HistoryRun>,
}

/// The last [`MAX_MAX_RUNS`] runs of the array, in order.
fn last_runs<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<HistoryRun>, D::Error> {
    struct Last;
    impl<'de> serde::de::Visitor<'de> for Last {
        type Value = Vec<HistoryRun>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of runs")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut kept = std::collections::VecDeque::new();
            while let Some(run) = seq.next_element::<HistoryRun>()? {
                if kept.len() == MAX_MAX_RUNS {
                    kept.pop_front();
                }
                kept.push_back(run);
            }
            Ok(kept.into())
        }
    }
    d.deserialize_seq(Last)
}

fn default_max_runs() -> usize {
    DEFAULT_MAX_RUNS
}

/// One run of the history.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryRun {
    pub date: String,
    pub image: Option<String>,
    pub source: Option<String>,
    /// Written by `baseline update --accept-regression`: what `check` called a regression. The
    /// run starts a new level: what came before is not learned from with it.
    #[serde(default)]
    pub accepted_regression: Option<String>,
    #[serde(default)]
    pub values: BTreeMap<String, f64>,
}

impl History {
    /// Keeps the last `max_runs` runs (the bound the file gives, at most [`MAX_MAX_RUNS`]): a
    /// file edited past its bound is read as the history `baseline update` would have kept.
    pub fn cap(&mut self) {
        let excess = self
            .runs
            .len()
            .saturating_sub(self.max_runs.clamp(1, MAX_MAX_RUNS));
        self.runs.drain(..excess);
    }

    /// Checks what a file can get wrong: a bound out of range, unknown metrics, values that are
    /// not finite.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_MAX_RUNS).contains(&self.max_runs) {
            return Err(format!(
                "[history]: max_runs {} is not between 1 and {MAX_MAX_RUNS}",
                self.max_runs
            ));
        }
        for (i, run) in self.runs.iter().enumerate() {
            for (name, v) in &run.values {
                if MetricId::from_name(name).is_none() {
                    return Err(format!(
                        "[[history.runs]] {}: unknown metric `{name}`",
                        i + 1
                    ));
                }
                if !v.is_finite() {
                    return Err(format!(
                        "[[history.runs]] {}: {name} = {v} is not a finite number",
                        i + 1
                    ));
                }
            }
        }
        Ok(())
    }

    /// The between-run spread (Qn) of a metric and the runs behind it, once the history holds
    /// [`MIN_RUNS_TO_WIDEN`] runs with the metric.
    pub fn spread(&self, metric: MetricId) -> Option<(f64, usize)> {
        let values: Vec<f64> = self
            .runs
            .iter()
            .filter_map(|r| r.values.get(metric.name()).copied())
            .collect();
        if values.len() < MIN_RUNS_TO_WIDEN {
            return None;
        }
        qn_spread(&values).map(|s| (s, values.len()))
    }

    /// Where the runs of the current level start: after the last boundary, a run of another
    /// image than the one before it, or one recorded as an accepted regression.
    pub fn level_start(&self) -> usize {
        (1..self.runs.len())
            .rev()
            .find(|&i| {
                self.runs[i].image != self.runs[i - 1].image
                    || self.runs[i].accepted_regression.is_some()
            })
            .unwrap_or(0)
    }

    /// The runs of the current level ([`History::level_start`]).
    pub fn current_level(&self) -> History {
        History {
            max_runs: self.max_runs,
            runs: self.runs[self.level_start()..].to_vec(),
        }
    }

    /// The median of each metric over the history's runs.
    pub fn medians(&self) -> BTreeMap<MetricId, f64> {
        let mut by: BTreeMap<MetricId, Vec<f64>> = BTreeMap::new();
        for r in &self.runs {
            for (name, v) in &r.values {
                if let Some(id) = MetricId::from_name(name) {
                    by.entry(id).or_default().push(*v);
                }
            }
        }
        by.into_iter()
            .map(|(id, v)| (id, crate::stats::Statistic::Median.of(&v)))
            .collect()
    }

    /// The history's runs as calibration runs (values only: no within-run error), named by
    /// their position, date and image.
    pub fn as_runs(
        &self,
        hardware: &str,
        ranks: usize,
        framework: Option<&str>,
    ) -> Vec<RunFigures> {
        self.runs
            .iter()
            .enumerate()
            .map(|(i, r)| RunFigures {
                label: format!("history run {} ({})", i + 1, r.date),
                hardware: Some(hardware.to_string()),
                ranks,
                framework: framework.map(str::to_string),
                image: r.image.clone(),
                date: Some(r.date.clone()),
                values: r
                    .values
                    .iter()
                    .filter_map(|(name, v)| Some((MetricId::from_name(name)?, *v)))
                    .collect(),
                within: BTreeMap::new(),
            })
            .collect()
    }
}

/// A baseline's text with the oldest `[[history.runs]]` beyond [`MAX_MAX_RUNS`] blanked out
/// (each of their lines left empty, so that every line keeps its number in messages), where they
/// stand together with nothing but their own keys and sub-tables between them: the parser then
/// never builds what the bound drops, and a history of any length is read in time and memory of
/// the bound. Any other text is returned as it is (and read whole).
pub(crate) fn without_dropped_runs(text: &str) -> std::borrow::Cow<'_, str> {
    let header = |l: &str| l.trim() == "[[history.runs]]";
    let heads: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| header(l))
        .map(|(i, _)| i)
        .collect();
    if heads.len() <= MAX_MAX_RUNS {
        return std::borrow::Cow::Borrowed(text);
    }
    let (from, to) = (heads[0], heads[heads.len() - MAX_MAX_RUNS]);
    let foreign = text.lines().skip(from).take(to - from).any(|l| {
        let l = l.trim_start();
        l.starts_with('[') && !header(l) && !l.starts_with("[history.runs.")
    });
    if foreign {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() / 2);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if (from..to).contains(&i) {
            if line.ends_with('\n') {
                out.push('\n');
            }
        } else {
            out.push_str(line);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Appends the run's values of the metrics to the document's `[history]` (created with `max_runs`
/// when absent, else its own bound kept unless `max_runs` is given), dropping the oldest runs
/// beyond the bound. Everything else in the document is left as it is.
pub(crate) fn append(
    doc: &mut DocumentMut,
    x: &Extraction,
    date: &str,
    image: Option<&str>,
    source: &str,
    max_runs: Option<usize>,
    accepted_regression: Option<&str>,
) -> Result<(), String> {
    let entry = doc.entry("history").or_insert_with(|| {
        let mut t = Table::new();
        t.decor_mut().set_prefix(
            "\n# Written by `tracegate baseline update`: the values of the last runs, oldest first. \
             From 5 runs on, `check` widens each metric's interval by their between-run spread.\n",
        );
        Item::Table(t)
    });
    let history = entry.as_table_mut().ok_or("`history` is not a table")?;
    let bound = match max_runs {
        Some(b) => b,
        None => history
            .get("max_runs")
            .and_then(Item::as_integer)
            .map_or(DEFAULT_MAX_RUNS, |b| b.max(1) as usize),
    };
    if !(1..=MAX_MAX_RUNS).contains(&bound) {
        return Err(format!(
            "a history of {bound} runs: give 1 to {MAX_MAX_RUNS}"
        ));
    }
    history.insert("max_runs", value(bound as i64));
    let runs = history
        .entry("runs")
        .or_insert(Item::ArrayOfTables(ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .ok_or("`history.runs` is not an array of tables")?;
    let mut t = Table::new();
    t.insert("date", value(date));
    if let Some(image) = image {
        t.insert("image", value(image));
    }
    t.insert("source", value(source));
    if let Some(what) = accepted_regression {
        t.insert("accepted_regression", value(what));
    }
    let mut values = InlineTable::new();
    for def in METRICS {
        if let Some(m) = x.metrics.get(&def.id).filter(|m| m.value.is_finite()) {
            values.insert(def.name(), round6(m.value).into());
        }
    }
    t.insert("values", value(values));
    runs.push(t);
    // The oldest runs beyond the bound, dropped in one pass.
    let excess = runs.len().saturating_sub(bound);
    let mut seen = 0;
    runs.retain(|_| {
        seen += 1;
        seen > excess
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(values: &[f64]) -> History {
        History {
            max_runs: 20,
            runs: values
                .iter()
                .map(|v| HistoryRun {
                    date: "2026-12-05".into(),
                    image: None,
                    source: None,
                    accepted_regression: None,
                    values: [("decode_step_ms".to_string(), *v)].into(),
                })
                .collect(),
        }
    }

    #[test]
    fn the_spread_needs_five_runs() {
        assert_eq!(
            history(&[20.0, 20.1, 19.9, 20.2]).spread(MetricId::DecodeStepMs),
            None
        );
        let (s, n) = history(&[20.0, 20.1, 19.9, 20.2, 19.8])
            .spread(MetricId::DecodeStepMs)
            .unwrap();
        assert_eq!(n, 5);
        assert!(s > 0.05 && s < 0.4, "{s}");
        assert_eq!(history(&[20.0; 6]).spread(MetricId::MoeUsPerLayer), None);
    }

    #[test]
    fn a_history_past_its_bound_keeps_its_last_runs() {
        let mut h = history(&[1.0, 2.0, 3.0, 4.0]);
        h.max_runs = 2;
        h.cap();
        let kept: Vec<f64> = h.runs.iter().map(|r| r.values["decode_step_ms"]).collect();
        assert_eq!(kept, [3.0, 4.0]);
    }

    #[test]
    fn runs_past_the_largest_bound_are_blanked_before_parsing_keeping_line_numbers() {
        let run = "[[history.runs]]\ndate = \"d\"\nvalues = { decode_step_ms = 1.0 }\n";
        let text = format!(
            "[meta]\n\n[history]\nmax_runs = 5\n{}",
            run.repeat(MAX_MAX_RUNS + 3)
        );
        let kept = without_dropped_runs(&text);
        assert_eq!(kept.lines().count(), text.lines().count());
        assert_eq!(
            kept.lines().filter(|l| *l == "[[history.runs]]").count(),
            MAX_MAX_RUNS
        );
        // A foreign table among the runs: read whole.
        let odd = format!(
            "[history]\n{}[other]\n{}",
            run,
            run.repeat(MAX_MAX_RUNS + 1)
        );
        assert_eq!(without_dropped_runs(&odd), odd);
    }

    #[test]
    fn the_current_level_starts_at_the_last_image_or_accepted_regression() {
        let mut h = history(&[20.0, 20.1, 22.0, 22.1, 22.2, 24.0]);
        assert_eq!(h.level_start(), 0);
        for r in &mut h.runs[2..] {
            r.image = Some("v2".into());
        }
        assert_eq!(h.level_start(), 2);
        h.runs[5].accepted_regression = Some("decode_step_ms +8%".into());
        assert_eq!(h.level_start(), 5);
        assert_eq!(h.current_level().runs.len(), 1);
        h.runs[5].accepted_regression = None;
        let med = h.current_level().medians()[&MetricId::DecodeStepMs];
        assert_eq!(med, 22.15);
    }

    #[test]
    fn bad_histories_say_why() {
        let mut h = history(&[20.0]);
        h.max_runs = 0;
        assert!(h.validate().unwrap_err().contains("max_runs"));
        let mut h = history(&[f64::NAN]);
        assert!(h.validate().unwrap_err().contains("finite"));
        h.runs[0].values = [("furlongs".to_string(), 1.0)].into();
        assert!(h.validate().unwrap_err().contains("furlongs"));
    }
}
