//! `tracegate sweep` output: one answer for a whole matrix of configurations.

use super::check::{fit, mark, GITHUB_COMMENT_LIMIT};
use super::table::{escape_markdown, Align, Table};
use super::Format;
use crate::gate::Status;
use crate::sweep::{headline_metrics, Configuration, Sweep};
use crate::units::MISSING;

/// Headroom kept below GitHub's comment limit for a marker added by the caller.
const BUDGET: usize = GITHUB_COMMENT_LIMIT - 2_048;

pub fn render(sweep: &Sweep, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string_pretty(sweep).expect("sweep serialises") + "\n",
        Format::Markdown => markdown(sweep),
        Format::Table => terminal(sweep),
    }
}

fn status_mark(s: Status) -> &'static str {
    match s {
        Status::Pass => "✅",
        Status::Regression => "❌",
        Status::CannotJudge => "⚠️",
    }
}

/// "+4.6% ❌" for a metric of a configuration, "—" when it has none.
fn cell(c: &Configuration, metric: &str) -> String {
    let Some(m) = c.metrics.iter().find(|m| m.name == metric) else {
        return MISSING.into();
    };
    let change = match m.change {
        Some(_) => super::change_text(m.unit, m.change, m.change_pct),
        None => m.unit.figure_or_missing(m.current),
    };
    format!("{change} {}", mark(m.verdict))
}

fn table(sweep: &Sweep) -> Table {
    let mut columns = vec![("", Align::Left), ("configuration", Align::Left)];
    columns.extend(headline_metrics().map(|m| (m, Align::Right)));
    let mut t = Table::new(&columns);
    for c in &sweep.configurations {
        let mut row = vec![status_mark(c.status).to_string(), c.name.clone()];
        row.extend(headline_metrics().map(|m| cell(c, m)));
        t.row(row);
    }
    t
}

fn details(c: &Configuration) -> String {
    let mut body = format!("{}\n\n", escape_markdown(&c.summary));
    if let Some(lead) = &c.lead {
        body.push_str(&format!("{}\n\n", escape_markdown(lead)));
    }
    let failing: Vec<_> = c
        .metrics
        .iter()
        .filter(|m| m.gated && m.verdict != crate::gate::Verdict::Ok)
        .collect();
    if !failing.is_empty() {
        let mut t = Table::new(&[
            ("", Align::Left),
            ("metric", Align::Left),
            ("baseline", Align::Right),
            ("current", Align::Right),
        ]);
        for m in failing {
            let v = |x: Option<f64>| m.unit.figure_or_missing(x);
            t.row(vec![
                mark(m.verdict).to_string(),
                m.name.clone(),
                v(m.baseline),
                v(m.current),
            ]);
        }
        body.push_str(&t.to_markdown());
    }
    format!(
        "<details><summary>{} {}</summary>\n\n{body}\n</details>\n\n",
        status_mark(c.status),
        escape_markdown(&c.name)
    )
}

/// The sweep markdown in parts, for [`markdown`] and for the job summary and comment, which fit
/// the parts to their own limits.
pub fn markdown_parts(sweep: &Sweep) -> Vec<String> {
    let mut parts = vec![
        format!(
            "{} **tracegate sweep**: {}\n\n",
            status_mark(sweep.status),
            escape_markdown(&sweep.summary)
        ),
        table(sweep).to_markdown() + "\n",
    ];
    parts.extend(
        sweep
            .configurations
            .iter()
            .filter(|c| c.status != Status::Pass)
            .map(details),
    );
    parts
}

pub fn markdown(sweep: &Sweep) -> String {
    fit(markdown_parts(sweep), BUDGET)
}

fn terminal(sweep: &Sweep) -> String {
    let mut out = format!("{}\n\n{}", sweep.summary, table(sweep).to_terminal());
    for c in sweep
        .configurations
        .iter()
        .filter(|c| c.status != Status::Pass)
    {
        out.push_str(&format!("\n{}: {}\n", c.name, c.summary));
        if let Some(lead) = &c.lead {
            out.push_str(&format!("  {lead}\n"));
        }
    }
    out
}
