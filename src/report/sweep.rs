//! `tracegate sweep` output: one answer for a whole matrix of configurations.

use super::check::{fit, mark, GITHUB_COMMENT_LIMIT};
use super::table::{escape_html, escape_markdown, free_code, free_text, printable, Align, Table};
use super::Format;
use crate::gate::Status;
use crate::sweep::{headline_metrics, Configuration, Sweep};
use crate::units::MISSING;

/// Headroom kept below GitHub's comment limit for a marker added by the caller.
const BUDGET: usize = GITHUB_COMMENT_LIMIT - 2_048;

pub(crate) fn render(sweep: &Sweep, format: Format) -> String {
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

/// "+4.6% ❌" for a metric of a configuration, "—" when it has none: the change in the unit of
/// its tolerance, as `check` shows it (`rank_skew_ms` in ms, not in % of a near-zero skew), and
/// ℹ️ for an improvement `check` calls an artefact. Joined by a no-break space.
fn cell(c: &Configuration, metric: &str) -> String {
    let Some(m) = c.metrics.iter().find(|m| m.name == metric) else {
        return MISSING.into();
    };
    let absolute = matches!(
        m.tolerance.as_deref().map(str::parse),
        Some(Ok(crate::baseline::Tolerance::Absolute { .. }))
    );
    let change = match m.change {
        Some(c) if absolute => m.unit.change(c),
        Some(_) => super::change_text(m.unit, m.change, m.change_pct),
        None => m.unit.figure_or_missing(m.current),
    };
    let shown = if m.artefact.is_some() {
        "ℹ️"
    } else {
        mark(m.verdict)
    };
    format!("{change}\u{a0}{shown}")
}

/// The configuration's image, baseline → run, plain (the table escapes it): the tags alone when
/// both are of one repository (`v0.5.8 → v0.5.9`), so the column stays narrow; the line above
/// the table names the images in full.
fn image_cell(c: &Configuration) -> String {
    let (before, after) = (c.baseline_image.as_deref(), c.run.image.as_deref());
    let labels = match (before, after) {
        (Some(b), Some(a)) if a != b => Some(crate::taxonomy::names::image_labels(b, a)),
        _ => None,
    };
    let (before, after) = match &labels {
        Some((b, a)) => (Some(b.as_str()), Some(a.as_str())),
        None => (before, after),
    };
    crate::identity::transition(before, after, str::to_string).unwrap_or_else(|| MISSING.into())
}

/// A metric's name as a column header: in markdown, a zero-width space after each `_` lets a
/// long name wrap there, so that six metric columns fit GitHub's comment column; it reads the
/// same.
fn metric_header(name: &str, markdown: bool) -> String {
    if markdown {
        name.replace('_', "_\u{200b}")
    } else {
        name.to_string()
    }
}

fn table(sweep: &Sweep, markdown: bool) -> Table {
    // The image column only when configurations ran or were baselined in different images: one
    // bump shared by all is the line above the table, and the column would only widen it.
    let bumps = sweep.image_bumps();
    let images = bumps.len() > 1
        || bumps
            .first()
            .is_some_and(|b| b.2 < sweep.configurations.len());
    let headers: Vec<String> = headline_metrics()
        .map(|m| metric_header(m.name(), markdown))
        .collect();
    let mut columns = vec![("", Align::Left), ("configuration", Align::Left)];
    if images {
        columns.push(("image", Align::Left));
    }
    columns.extend(headers.iter().map(|m| (m.as_str(), Align::Right)));
    let mut t = Table::new(&columns);
    for c in &sweep.configurations {
        let mut row = vec![status_mark(c.status).to_string(), c.name.clone()];
        if images {
            row.push(image_cell(c));
        }
        row.extend(headline_metrics().map(|m| cell(c, m.name())));
        t.row(row);
    }
    t
}

/// "image `a` → `b`" per distinct bump (with its count when there are several), then the pairs
/// every run shares: "commit `abc`". `None` when there is nothing to say.
pub(crate) fn identity_line(sweep: &Sweep, markdown: bool) -> Option<String> {
    let show = |v: &str| {
        if markdown {
            free_code(v)
        } else {
            printable(v).into_owned()
        }
    };
    let bumps = sweep.image_bumps();
    let mut parts: Vec<String> = bumps
        .iter()
        .filter_map(|&(before, after, n)| {
            let t = crate::identity::transition(before, after, show)?;
            Some(if bumps.len() > 1 {
                let s = if n == 1 { "" } else { "s" };
                format!("image {t} ({n} configuration{s})")
            } else {
                format!("image {t}")
            })
        })
        .collect();
    for (key, value) in sweep.common_meta() {
        let key = if markdown {
            free_text(&key)
        } else {
            printable(&key).into_owned()
        };
        parts.push(format!("{key} {}", show(&value)));
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

fn details(c: &Configuration) -> String {
    let mut body = format!("{}\n\n", free_text(&c.summary));
    if let Some(lead) = &c.lead {
        body.push_str(&format!("{}\n\n", super::table::text_with_code(lead)));
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
                if m.artefact.is_some() {
                    "ℹ️"
                } else {
                    mark(m.verdict)
                }
                .to_string(),
                m.name.clone(),
                v(m.baseline),
                v(m.current),
            ]);
        }
        body.push_str(&t.to_markdown());
    }
    // Inside an HTML block markdown escapes do not apply: the name is HTML-escaped.
    format!(
        "<details><summary>{} {}</summary>\n\n{body}\n</details>\n\n",
        status_mark(c.status),
        escape_html(&c.name)
    )
}

/// The sweep markdown in parts, for [`markdown`] and for the job summary and comment, which fit
/// the parts to their own limits.
pub(crate) fn markdown_parts(sweep: &Sweep) -> Vec<String> {
    let mut head = format!(
        "{} **tracegate sweep**: {}\n\n",
        status_mark(sweep.status),
        escape_markdown(&sweep.summary)
    );
    if let Some(line) = identity_line(sweep, true) {
        head.push_str(&line);
        head.push_str("\n\n");
    }
    let mut parts = vec![head, table(sweep, true).to_markdown() + "\n"];
    parts.extend(
        sweep
            .configurations
            .iter()
            .filter(|c| c.status != Status::Pass)
            .map(details),
    );
    parts
}

pub(crate) fn markdown(sweep: &Sweep) -> String {
    fit(markdown_parts(sweep), BUDGET)
}

fn terminal(sweep: &Sweep) -> String {
    let mut out = format!("{}\n\n", printable(&sweep.summary));
    if let Some(line) = identity_line(sweep, false) {
        out.push_str(&line);
        out.push_str("\n\n");
    }
    out.push_str(&table(sweep, false).to_terminal());
    for c in sweep
        .configurations
        .iter()
        .filter(|c| c.status != Status::Pass)
    {
        out.push_str(&format!(
            "\n{}: {}\n",
            printable(&c.name),
            printable(&c.summary)
        ));
        if let Some(lead) = &c.lead {
            out.push_str(&format!("  {}\n", printable(lead)));
        }
    }
    out
}
