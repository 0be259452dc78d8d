//! The check's markdown as a pull request shows it, compact in the style of CodSpeed and
//! Bencher: the first line (verdict and cause), one count line, a table of only the metrics that
//! moved with its notes under it, then Why and its chart; the full table, the kernel diffs and
//! the run's details folded. A check that cannot judge judges nothing on the page: it shows what
//! differs and the next step, or, for a metric too noisy to judge, its interval, its limit and how
//! many more steps would decide it.

use super::check::{
    calibration_lines, calibration_of, change, delta_table, details, detectable_text, fit,
    metric_mark, metric_name_cell, moved, tolerance_text, unclassified_words, undetectable, value,
    verdict_word, why_words, BUDGET,
};
use super::sections::{folds, head};
use super::table::{escape_markdown, Align, Table};
use super::Format;
use crate::gate::explain::{Cause, Delta};
use crate::gate::{CheckResult, MetricCheck, Status, Verdict};
use crate::metrics::MetricId;
use crate::units::MISSING;

/// `tracegate check`'s output in `format`: the comment's markdown, the terminal table, or the
/// verdict's JSON.
pub(crate) fn render(result: &CheckResult, format: Format) -> String {
    match format {
        Format::Json => super::check::json(result),
        Format::Markdown => markdown(result),
        Format::Table => super::check::terminal(result),
    }
}

/// The comment's markdown, within GitHub's comment limit.
pub(crate) fn markdown(result: &CheckResult) -> String {
    fit(markdown_parts(result), BUDGET)
}

/// The markdown parts, most important first; later parts are dropped to fit GitHub's limit.
pub(crate) fn markdown_parts(result: &CheckResult) -> Vec<String> {
    if !result.problems.is_empty() {
        return super::cannot_judge::parts(result);
    }
    let noisy: Vec<&MetricCheck> = gated(result)
        .filter(|m| m.verdict == Verdict::Noisy)
        .collect();
    if result.status == Status::CannotJudge && !noisy.is_empty() {
        return super::cannot_judge::too_noisy(result, &noisy);
    }
    verdict_parts(result)
}

fn gated(result: &CheckResult) -> impl Iterator<Item = &MetricCheck> {
    result.metrics.iter().filter(|m| m.gated)
}

fn verdict_parts(result: &CheckResult) -> Vec<String> {
    let e = &result.explanation;
    let pass = result.status == Status::Pass;
    let mut parts = vec![head(result, &count_line(result))];
    // Said once: as the cause when it is the cause, else as a warning.
    if let Some(u) = e
        .unclassified
        .as_ref()
        .filter(|_| !matches!(e.cause, Cause::Unclassified { .. }))
    {
        parts.push(format!(
            "> ⚠️ **Unclassified kernels:** {}\n\n",
            unclassified_words(u).markdown()
        ));
    }
    let shown: Vec<&MetricCheck> = result
        .metrics
        .iter()
        .filter(|m| moved_metric(result, m))
        .collect();
    if !shown.is_empty() {
        let mut notes = Notes::default();
        let table = metric_table(result, &shown, &mut notes).to_markdown();
        parts.push(format!("{table}\n{}", notes.markdown()));
    }
    if let Some(line) = detectable_line(result) {
        parts.push(format!("{}\n\n", escape_markdown(&line)));
    }
    let noise = e.noise_ms_per_step;
    let (moved_categories, folded): (Vec<Delta>, Vec<Delta>) = e
        .categories
        .iter()
        .cloned()
        .partition(|d| !pass && moved(d, noise));
    if !pass {
        let mut why = String::from("#### Why\n\n");
        why.push_str(&why_words(result).markdown());
        why.push_str("\n\n");
        // One category is said in the sentence above; a table is for several.
        if moved_categories.len() > 1 {
            why.push_str(&delta_table(&moved_categories, false).to_markdown());
            why.push('\n');
        }
        parts.push(why);
    }
    // A regression gets a picture of its decode steps against the baseline's band; `fit` drops
    // it, with a note, when the comment would outgrow GitHub's limit.
    if result.status == Status::Regression {
        if let Some(chart) = super::chart::decode_steps(&result.decode_series) {
            parts.push(chart);
        }
    }
    parts.push(all_metrics(result));
    parts.extend(folds(result, folded));
    parts
}

/// "tracegate on AMD Instinct MI355X: **6 regressed**, 0 improved, 14 unchanged · 1
/// report-only figure moved.": gated metrics by verdict; artefacts, metrics that cannot be
/// judged and report-only figures counted apart.
fn count_line(result: &CheckResult) -> String {
    let count = |f: &dyn Fn(&MetricCheck) -> bool| gated(result).filter(|m| f(m)).count();
    let regressed = count(&|m| m.verdict == Verdict::Regressed);
    let improved = count(&|m| m.verdict == Verdict::Improved && m.artefact.is_none());
    let unchanged = count(&|m| m.verdict == Verdict::Ok);
    let artefacts = count(&|m| m.artefact.is_some());
    let unjudged = count(&|m| matches!(m.verdict, Verdict::Noisy | Verdict::Missing));
    let report_moved = result
        .metrics
        .iter()
        .filter(|m| !m.gated && report_only_moved(m))
        .count();
    let regressed = if regressed > 0 {
        format!("**{regressed} regressed**")
    } else {
        "0 regressed".to_string()
    };
    let mut line = format!(
        "tracegate on {}: {regressed}, {improved} improved, {unchanged} unchanged",
        escape_markdown(&super::check::hardware_words(result))
    );
    let apart = [
        (artefacts, "not an improvement", "not improvements"),
        (unjudged, "cannot be judged", "cannot be judged"),
        (
            report_moved,
            "report-only figure moved",
            "report-only figures moved",
        ),
    ];
    for (n, one, many) in apart {
        if n > 0 {
            line.push_str(&format!(" · {n} {}", if n == 1 { one } else { many }));
        }
    }
    line.push('.');
    line
}

/// A report-only figure that moved beyond its tolerance (it fails nothing).
fn report_only_moved(m: &MetricCheck) -> bool {
    matches!(m.verdict, Verdict::Regressed | Verdict::Improved)
}

/// A metric the compact table shows: one that moved beyond tolerance (gated or report-only),
/// an artefact, one that cannot be judged, and one that moved below what the baseline can
/// detect.
fn moved_metric(result: &CheckResult, m: &MetricCheck) -> bool {
    if m.verdict == Verdict::New {
        return false;
    }
    m.artefact.is_some()
        || (m.gated && m.verdict != Verdict::Ok)
        || (!m.gated && report_only_moved(m))
        || undetectable(result, m).is_some()
}

/// Notes under a table, numbered in the order the cells call them.
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    /// Adds a note; its mark for the cell.
    fn add(&mut self, text: String) -> String {
        self.0.push(text);
        superscript(self.0.len())
    }

    fn markdown(&self) -> String {
        self.0
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{} {}\n", superscript(i + 1), n))
            .collect::<Vec<_>>()
            .join("\n")
            + if self.0.is_empty() { "" } else { "\n" }
    }
}

fn superscript(n: usize) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string()
        .chars()
        .map(|c| DIGITS[c.to_digit(10).unwrap_or(0) as usize])
        .collect()
}

/// The metrics `rows` as a table: mark, name, baseline, current, change, tolerance, what the
/// baseline can detect (calibrated baselines), verdict. Long explanations go to `notes`.
fn metric_table(result: &CheckResult, rows: &[&MetricCheck], notes: &mut Notes) -> Table {
    let catches = !result.calibration.iter().all(|c| c.mdc.is_none());
    let mut columns = vec![
        ("", Align::Left),
        ("metric", Align::Left),
        ("baseline", Align::Right),
        ("current", Align::Right),
        ("change", Align::Right),
        ("tolerance", Align::Right),
    ];
    if catches {
        columns.push(("catches ≥", Align::Right));
    }
    columns.push(("verdict", Align::Left));
    let mut t = Table::new(&columns);
    for m in rows {
        let mut row = vec![
            metric_mark(m).to_string(),
            metric_name_cell(result, m),
            value(m.baseline, m.unit),
            value(m.current, m.unit),
            change(m),
            tolerance_cell(result, m),
        ];
        if catches {
            row.push(
                calibration_of(result, m.name)
                    .and_then(|c| c.mdc)
                    .map_or_else(|| MISSING.into(), |mdc| detectable_text(m, mdc)),
            );
        }
        row.push(match (&m.artefact, undetectable(result, m)) {
            (Some(why), _) => {
                let mark = notes.add(format!(
                    "`{}` is not an improvement: {}",
                    m.name.name(),
                    escape_markdown(why)
                ));
                format!("not an improvement {mark}")
            }
            (None, Some(mdc)) => format!(
                "below what this baseline can detect ({})",
                detectable_text(m, mdc)
            ),
            (None, None) => verdict_word(m),
        });
        t.row(row);
    }
    t
}

/// The tolerance as the baseline states it, "(hand-set)" where the baseline's calibration names
/// the metric but its tolerance is not the calibrated one (the calibrated ones are said once,
/// under the table).
fn tolerance_cell(result: &CheckResult, m: &MetricCheck) -> String {
    let tolerance = tolerance_text(m)
        .or_else(|| m.tolerance.clone())
        .unwrap_or_else(|| MISSING.into());
    let hand_set = result
        .calibration
        .iter()
        .any(|c| c.metric == m.name && c.hand_set);
    if hand_set {
        format!("{tolerance} (hand-set)")
    } else {
        tolerance
    }
}

/// "Tolerances calibrated from 6 runs (decode_step_ms set by hand). This baseline catches a
/// decode-step regression of 2.1% or more; a smaller one passes unseen.": what a calibrated
/// baseline can see, once; `None` for a baseline that is not calibrated.
fn detectable_line(result: &CheckResult) -> Option<String> {
    let by_hand: Vec<&str> = result
        .calibration
        .iter()
        .filter(|c| c.hand_set)
        .map(|c| c.metric.name())
        .collect();
    let Some(runs) = result.calibration.iter().find_map(|c| c.calibrated_runs) else {
        return (!by_hand.is_empty()).then(|| {
            format!(
                "Tolerances set by hand: the baseline's calibration no longer matches them ({}).",
                by_hand.join(", ")
            )
        });
    };
    let mut line = format!("Tolerances calibrated from {runs} runs");
    if !by_hand.is_empty() {
        line.push_str(&format!(" ({} set by hand)", by_hand.join(", ")));
    }
    line.push('.');
    let headline = [MetricId::DecodeStepMs, MetricId::IterationMs]
        .into_iter()
        .find_map(|id| {
            let m = result.metrics.iter().find(|m| m.name == id)?;
            Some((m, calibration_of(result, id)?.mdc?))
        });
    if let Some((m, mdc)) = headline {
        let what = if m.name == MetricId::DecodeStepMs {
            "decode-step"
        } else {
            "iteration"
        };
        line.push_str(&format!(
            " This baseline catches a {what} regression of {} or more; a smaller one passes unseen.",
            detectable_text(m, mdc)
        ));
    }
    Some(line)
}

/// Every metric, folded: the table with every verdict and the calibration's lines.
fn all_metrics(result: &CheckResult) -> String {
    let every: Vec<&MetricCheck> = result.metrics.iter().collect();
    let mut notes = Notes::default();
    let mut body = metric_table(result, &every, &mut notes).to_markdown();
    body.push('\n');
    body.push_str(&notes.markdown());
    for line in calibration_lines(result) {
        body.push_str(&format!("{}\n\n", escape_markdown(&line)));
    }
    details(&format!("All {} metrics", every.len()), &body)
}
