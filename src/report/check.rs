//! `tracegate check` output: the verdict, the metric table, and why.
//!
//! The markdown is made for a pull-request comment: a one-line verdict first, the table, the
//! cause, and the long parts folded. It never exceeds GitHub's comment limit.

use super::table::{
    escape_markdown, free_code, free_text, printable, text_with_code, Align, Table,
};
use super::Format;
use crate::gate::explain::{Delta, Unclassified};
use crate::gate::{CheckResult, MetricCheck, Status, Verdict};
use crate::units::{Unit, MISSING};

/// GitHub refuses comments longer than this many characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;
/// Headroom kept below the limit for a marker and a footer added by the caller.
const BUDGET: usize = GITHUB_COMMENT_LIMIT - 2_048;
/// Category and kernel rows shown before the rest folds away.
const SHOWN_ROWS: usize = 6;

pub fn render(result: &CheckResult, format: Format) -> String {
    match format {
        Format::Json => {
            serde_json::to_string_pretty(result).expect("check result serialises") + "\n"
        }
        Format::Markdown => markdown(result),
        Format::Table => terminal(result),
    }
}

pub fn mark(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Ok => "✅",
        Verdict::Regressed => "❌",
        Verdict::Improved => "🚀",
        Verdict::Noisy => "⚠️",
        Verdict::Missing => "❓",
        Verdict::New => "🆕",
    }
}

fn verdict_word(m: &MetricCheck) -> String {
    let word = match m.verdict {
        Verdict::Ok => "ok",
        Verdict::Regressed => "regressed",
        Verdict::Improved => "improved",
        Verdict::Noisy => "too noisy to judge",
        Verdict::Missing => "missing",
        Verdict::New => "new",
    };
    if m.gated || m.verdict == Verdict::New {
        word.to_string()
    } else {
        format!("{word} (report only)")
    }
}

/// A metric value with its unit, or the missing mark.
pub fn value(v: Option<f64>, unit: Unit) -> String {
    unit.figure_or_missing(v)
}

/// A metric's change as shown in the table.
pub fn change(m: &MetricCheck) -> String {
    super::change_text(m.unit, m.change, m.change_pct)
}

fn metric_table(result: &CheckResult, with_marks: bool) -> Table {
    let mut columns = vec![
        ("metric", Align::Left),
        ("baseline", Align::Right),
        ("current", Align::Right),
    ];
    columns.extend([
        ("change", Align::Right),
        ("tolerance", Align::Right),
        ("verdict", Align::Left),
    ]);
    if with_marks {
        columns.insert(0, ("", Align::Left));
    }
    let mut t = Table::new(&columns);
    for m in &result.metrics {
        let mut row = vec![
            m.name.clone(),
            value(m.baseline, m.unit),
            value(m.current, m.unit),
            change(m),
            tolerance_cell(result, m),
            verdict_word(m),
        ];
        if with_marks {
            row.insert(0, mark(m.verdict).to_string());
        }
        t.row(row);
    }
    t
}

/// The tolerance, and where it came from when it was calibrated: "3.1% (calibrated, 8 runs)".
fn tolerance_cell(result: &CheckResult, m: &MetricCheck) -> String {
    let tolerance = m.tolerance.clone().unwrap_or_else(|| MISSING.into());
    let runs = result
        .calibration
        .iter()
        .find(|c| c.metric == m.name)
        .and_then(|c| c.calibrated_runs);
    match runs {
        Some(n) => format!("{tolerance} (calibrated, {n} runs)"),
        None => tolerance,
    }
}

/// A figure of a metric's unit with its share of the baseline value: `0.120 ms (0.60%)`.
fn figure_with_share(m: &MetricCheck, v: f64) -> String {
    match (m.unit, m.baseline.filter(|b| *b != 0.0)) {
        (Unit::Pct, _) => format!("{} pp", m.unit.number(v)),
        (_, Some(b)) => format!("{} ({:.2}%)", m.unit.figure(v), v / b.abs() * 100.0),
        (_, None) => m.unit.figure(v),
    }
}

/// What the calibration claims and what the history widened, one line each (empty when the
/// baseline has neither): the smallest regression each calibrated metric is caught at, since a
/// smaller one is not claimed, and the history's between-run spread.
pub fn calibration_lines(result: &CheckResult) -> Vec<String> {
    let find = |name: &str| result.metrics.iter().find(|m| m.name == name);
    let mdc: Vec<String> = result
        .calibration
        .iter()
        .filter_map(|c| {
            Some(format!(
                "{} {}",
                c.metric,
                figure_with_share(find(&c.metric)?, c.mdc?)
            ))
        })
        .collect();
    let mut lines = Vec::new();
    if !mdc.is_empty() {
        lines.push(format!(
            "Calibrated: a regression is caught in 95% of runs from its minimum detectable change on; a smaller one is not claimed, and a pass says nothing of it: {}.",
            mdc.join(", ")
        ));
    }
    let history: Vec<String> = result
        .calibration
        .iter()
        .filter_map(|c| {
            let m = find(&c.metric)?;
            Some(format!(
                "{} between-run spread {} from {} runs",
                c.metric,
                figure_with_share(m, c.history_spread?),
                c.history_runs?
            ))
        })
        .collect();
    if !history.is_empty() {
        lines.push(format!(
            "Intervals widened in quadrature by the baseline's history: {}.",
            history.join("; ")
        ));
    }
    lines
}

fn headline(result: &CheckResult) -> String {
    let icon = match result.status {
        Status::Pass => "✅",
        Status::Regression => "❌",
        Status::CannotJudge => "⚠️",
    };
    // The run's hardware, not the baseline's: a run on other hardware must not look like one
    // on the baseline's.
    let run = &result.run;
    let hardware = match (
        &run.device,
        run.hardware_asserted,
        run.hardware_from_baseline,
    ) {
        (Some(d), true, _) => format!("{} (asserted by --hardware)", free_text(d)),
        (Some(d), _, true) => format!(
            "{} (the baseline's, asserted: the trace names no device)",
            free_text(d)
        ),
        (Some(d), false, false) => free_text(d),
        (None, _, _) => "unknown hardware".to_string(),
    };
    format!(
        "{icon} **tracegate** on {hardware}: {}",
        escape_markdown(&result.summary)
    )
}

/// The run's image and `--meta` pairs beside the baseline's: "image `v0.5.3` → `v0.5.4` ·
/// sglang `0.5.3` → `0.5.4`" in markdown (values in code spans), the same without backticks
/// for a terminal; `None` when neither side has any. Pairs only the baseline has are shown
/// too, so a run that does not say is visible.
pub fn identity_line(result: &CheckResult, markdown: bool) -> Option<String> {
    let (base, run) = (&result.baseline.meta, &result.run.identity);
    // Free text from the command line or the baseline: cut in markdown (the JSON has it all),
    // escaped everywhere.
    let show = |v: &str| {
        if markdown {
            free_code(v)
        } else {
            printable(v).into_owned()
        }
    };
    let mut parts = Vec::new();
    if let Some(t) = crate::identity::transition(base.image.as_deref(), run.image.as_deref(), show)
    {
        parts.push(format!("image {t}"));
    }
    let keys: std::collections::BTreeSet<&String> =
        run.meta.keys().chain(base.extra.keys()).collect();
    for key in keys {
        let before = base.get(key);
        let after = run.meta.get(key).map(String::as_str);
        if let Some(t) = crate::identity::transition(before.as_deref(), after, show) {
            let key = if markdown {
                free_text(key)
            } else {
                printable(key).into_owned()
            };
            parts.push(format!("{key} {t}"));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

fn delta_table(deltas: &[Delta], kernels: bool) -> Table {
    let mut columns = vec![(if kernels { "kernel" } else { "category" }, Align::Left)];
    if kernels {
        columns.push(("category", Align::Left));
    }
    columns.extend([
        ("baseline ms/step", Align::Right),
        ("current ms/step", Align::Right),
        ("Δ ms/step", Align::Right),
        ("calls/step", Align::Right),
        ("share of change", Align::Right),
    ]);
    let mut t = Table::new(&columns);
    if kernels {
        t = t.code_column(0);
    }
    for d in deltas {
        let mut row = vec![if kernels {
            super::display_kernel_name(&d.name)
        } else {
            d.name.clone()
        }];
        if kernels {
            row.push(d.category.clone().unwrap_or_default());
        }
        row.extend([
            format!("{:.3}", d.baseline_ms_per_step),
            format!("{:.3}", d.current_ms_per_step),
            format!("{:+.3}", d.delta_ms_per_step),
            format!(
                "{} → {}",
                crate::units::count(d.baseline_calls_per_step),
                crate::units::count(d.current_calls_per_step)
            ),
            d.share_of_change_pct
                .map_or_else(|| "—".into(), |s| format!("{s:+.0}%")),
        ]);
        t.row(row);
    }
    t
}

/// A code fence longer than any run of backticks in `text`, so no kernel name can close it.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

fn details(summary: &str, body: &str) -> String {
    format!("<details><summary>{summary}</summary>\n\n{body}\n</details>\n\n")
}

fn meta_table(result: &CheckResult) -> Table {
    let m = &result.baseline.meta;
    let id = &result.run.identity;
    let mut t = Table::new(&[
        ("", Align::Left),
        ("baseline", Align::Left),
        ("run", Align::Left),
    ]);
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "—".into());
    let given = |key: &str| opt(&id.meta.get(key).cloned());
    let num = |v: Option<u32>| v.map_or_else(|| "—".into(), |v| v.to_string());
    t.row(vec![
        "hardware".into(),
        m.hardware.clone(),
        result.run.device.clone().unwrap_or_else(|| "—".into()),
    ]);
    t.row(vec![
        "ranks (TP)".into(),
        num(m.tp),
        result.run.ranks.len().to_string(),
    ]);
    t.row(vec!["model".into(), opt(&m.model), given("model")]);
    t.row(vec![
        "precision".into(),
        opt(&m.precision),
        given("precision"),
    ]);
    t.row(vec!["image".into(), opt(&m.image), opt(&id.image)]);
    if m.previous_image.is_some() {
        t.row(vec![
            "previous image".into(),
            opt(&m.previous_image),
            "—".into(),
        ]);
    }
    let keys: std::collections::BTreeSet<&String> = id.meta.keys().chain(m.extra.keys()).collect();
    for key in keys
        .into_iter()
        .filter(|k| !["model", "precision"].contains(&k.as_str()))
    {
        t.row(vec![key.clone(), opt(&m.get(key)), given(key)]);
    }
    t.row(vec![
        "steady decode steps".into(),
        "—".into(),
        result.run.decode_steps_kept.to_string(),
    ]);
    t.row(vec!["source".into(), opt(&m.source), "—".into()]);
    t.row(vec!["date".into(), opt(&m.date), "—".into()]);
    t.row(vec![
        "file".into(),
        result.baseline.path.clone(),
        "—".into(),
    ]);
    t
}

/// The unclassified kernels' names, cut with no two alike ([`super::names::distinct_labels`]).
fn kernel_labels(u: &Unclassified) -> Vec<String> {
    let names: Vec<&str> = u.kernels.iter().map(|k| k.name.as_str()).collect();
    super::names::distinct_labels(&names, super::names::NAME_WIDTH)
}

/// One line on the time in kernels no rule classifies, naming the top ones with their share
/// (plain text: the `::warning` annotation and, escaped, the markdown).
pub fn unclassified_line(u: &Unclassified) -> String {
    let named: Vec<String> = u
        .kernels
        .iter()
        .zip(kernel_labels(u))
        .map(|(k, name)| format!("{name} {:.1}%", k.pct))
        .collect();
    let baseline = u
        .baseline_other_pct
        .map(|p| format!(" (baseline {p:.1}%)"))
        .unwrap_or_default();
    format!(
        "{:.1}% of kernel time is in kernels no rule classifies{baseline}: {}. Category figures miss that time; add rules (tracegate report prints them).",
        u.other_pct,
        named.join(", ")
    )
}

/// [`unclassified_line`] in markdown, the names in code spans.
fn unclassified_markdown(u: &Unclassified) -> String {
    let named: Vec<String> = u
        .kernels
        .iter()
        .zip(kernel_labels(u))
        .map(|(k, name)| format!("{} {:.1}%", super::table::code_span(&name), k.pct))
        .collect();
    let baseline = u
        .baseline_other_pct
        .map(|p| format!(" \\(baseline {p:.1}%\\)"))
        .unwrap_or_default();
    format!(
        "{:.1}% of kernel time is in kernels no rule classifies{baseline}: {}. Category figures miss that time; add rules \\(tracegate report prints them\\).",
        u.other_pct,
        named.join(", ")
    )
}

/// The markdown parts, most important first; later parts are dropped to fit the budget.
pub fn markdown_parts(result: &CheckResult) -> Vec<String> {
    let e = &result.explanation;
    let mut parts = vec![format!("{}\n\n", headline(result))];
    if let Some(line) = identity_line(result, true) {
        parts[0].push_str(&line);
        parts[0].push_str("\n\n");
    }
    for p in &result.problems {
        parts.push(format!("> **Cannot judge:** {}\n\n", escape_markdown(p)));
    }
    if let Some(u) = &e.unclassified {
        parts.push(format!(
            "> ⚠️ **Unclassified kernels:** {}\n\n",
            unclassified_markdown(u)
        ));
    }
    parts.push(metric_table(result, true).to_markdown() + "\n");
    let calibration = calibration_lines(result);
    if !calibration.is_empty() {
        let text: String = calibration
            .iter()
            .map(|l| format!("{}\n\n", escape_markdown(l)))
            .collect();
        parts.push(text);
    }
    let mut why = String::from("#### Why\n\n");
    why.push_str(&text_with_code(&e.lead));
    why.push_str("\n\n");
    let top: Vec<Delta> = e.categories.iter().take(SHOWN_ROWS).cloned().collect();
    if !top.is_empty() {
        why.push_str(&delta_table(&top, false).to_markdown());
        why.push('\n');
    }
    parts.push(why);
    // A regression gets a picture of its decode steps against the baseline's band; `fit` drops
    // it, with a note, when the comment would outgrow GitHub's limit.
    if result.status == Status::Regression {
        if let Some(chart) = super::chart::decode_steps(&result.decode_series) {
            parts.push(chart);
        }
    }
    if let Some(s) = &e.straggler {
        parts.push(format!(
            "**Straggling rank {}**: arrived last at {:.0}% of the collectives; compute {:+.3} ms per decode step against the other ranks' median; the others wait {:+.3} ms more per step.\n\n",
            s.rank, s.last_arrival_pct, s.compute_excess_ms, s.wait_change_ms
        ));
    }
    if !e.kernel_diff.is_empty() {
        let fence = fence_for(&e.kernel_diff);
        parts.push(details(
            "Kernels that appeared or vanished",
            &format!("{fence}diff\n{}{fence}\n", e.kernel_diff),
        ));
    }
    if !e.kernels.is_empty() {
        parts.push(details(
            "Kernels whose time per step moved most",
            &delta_table(&e.kernels, true).to_markdown(),
        ));
    }
    if e.categories.len() > SHOWN_ROWS {
        parts.push(details(
            "All categories",
            &delta_table(&e.categories, false).to_markdown(),
        ));
    }
    parts.push(details(
        "Run and baseline",
        &meta_table(result).to_markdown(),
    ));
    if !result.run.warnings.is_empty() {
        let list: String = result
            .run
            .warnings
            .iter()
            .map(|w| format!("- {}\n", escape_markdown(w)))
            .collect();
        parts.push(details("Warnings", &list));
    }
    parts
}

/// Joins parts while they fit the comment budget, saying what was left out.
pub fn fit(parts: Vec<String>, budget: usize) -> String {
    let mut out = String::new();
    let mut omitted = 0;
    for part in parts {
        if out.chars().count() + part.chars().count() <= budget {
            out.push_str(&part);
        } else {
            omitted += 1;
        }
    }
    if omitted > 0 {
        out.push_str(&format!("_{omitted} section(s) left out to fit GitHub's comment limit; the JSON verdict has everything._\n"));
    }
    out
}

pub fn markdown(result: &CheckResult) -> String {
    fit(markdown_parts(result), BUDGET)
}

fn terminal(result: &CheckResult) -> String {
    let e = &result.explanation;
    let mut out = format!("{}\n\n", printable(&result.summary));
    if let Some(line) = identity_line(result, false) {
        out.push_str(&line);
        out.push_str("\n\n");
    }
    out.push_str(&metric_table(result, false).to_terminal());
    out.push('\n');
    for line in calibration_lines(result) {
        out.push_str(&line);
        out.push_str("\n\n");
    }
    out.push_str(&e.lead);
    out.push_str("\n\n");
    let top: Vec<Delta> = e.categories.iter().take(SHOWN_ROWS).cloned().collect();
    if !top.is_empty() {
        out.push_str(&delta_table(&top, false).to_terminal());
        out.push('\n');
    }
    if !e.kernels.is_empty() {
        out.push_str(&delta_table(&e.kernels, true).to_terminal());
        out.push('\n');
    }
    if !e.kernel_diff.is_empty() {
        out.push_str(&e.kernel_diff);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backticks_in_names() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a````b"), "`````");
    }

    #[test]
    fn fitting_drops_late_parts_and_says_so() {
        let parts = vec!["a".repeat(10), "b".repeat(10), "c".repeat(3)];
        let out = fit(parts, 15);
        assert!(out.starts_with(&"a".repeat(10)));
        assert!(out.contains("ccc") && !out.contains("bbb"));
        assert!(out.contains("1 section(s) left out"));
    }
}
