//! `tracegate compare` output: runs side by side with the ratio to the first run, time per
//! category, and the kernel libraries per category. Nothing here computes a figure.

use super::analysis::Doc;
use super::table::{free_text, printable, table_code_span, Align, Table};
use super::Format;
use crate::analysis::compare::{Comparison, MetricRow, COMPARE_SCHEMA_VERSION};
use crate::analysis::Scope;
use crate::units::MISSING;

pub fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Json => {
            let mut value = serde_json::json!({ "schema_version": COMPARE_SCHEMA_VERSION });
            if let (Some(out), serde_json::Value::Object(fields)) = (
                value.as_object_mut(),
                serde_json::to_value(c).expect("comparison serialises"),
            ) {
                out.extend(fields);
            }
            serde_json::to_string_pretty(&value).expect("comparison serialises") + "\n"
        }
        Format::Markdown => render_text(c, true),
        Format::Table => render_text(c, false),
    }
}

fn metric_table(c: &Comparison, rows: &[MetricRow], first: &str) -> Table {
    let mut headers: Vec<(String, Align)> = vec![(first.to_string(), Align::Left)];
    for r in &c.runs {
        headers.push((r.label.clone(), Align::Right));
    }
    let short = c.runs.iter().all(|r| r.label.chars().count() <= 16);
    for (i, r) in c.runs.iter().enumerate().skip(1) {
        headers.push((
            if short {
                format!("{} / {}", r.label, c.runs[0].label)
            } else {
                format!("run {} / run 1", i + 1)
            },
            Align::Right,
        ));
    }
    let cols: Vec<(&str, Align)> = headers.iter().map(|(h, a)| (h.as_str(), *a)).collect();
    let mut t = Table::new(&cols);
    for m in rows {
        if m.values.iter().all(Option::is_none) {
            continue;
        }
        let mut row = vec![m.label.clone()];
        row.extend(m.values.iter().map(|v| m.unit.figure_or_missing(*v)));
        row.extend(
            m.ratios
                .iter()
                .skip(1)
                .map(|r| r.map_or_else(|| MISSING.into(), crate::units::times)),
        );
        t.row(row);
    }
    t
}

/// Kernel names as a table cell: code spans in markdown (the column is a
/// [`Table::markdown_column`]), plain in a terminal; `rest` (a count) after them as text.
fn names_cell(names: &[String], rest: Option<String>, markdown: bool) -> String {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut shown: Vec<String> = super::names::distinct_labels(&refs, super::names::NAME_WIDTH)
        .into_iter()
        .map(|name| {
            if markdown {
                table_code_span(&name)
            } else {
                name
            }
        })
        .collect();
    shown.extend(rest);
    if shown.is_empty() {
        MISSING.into()
    } else {
        shown.join("; ")
    }
}

fn render_text(c: &Comparison, markdown: bool) -> String {
    let mut d = Doc::new(markdown);
    // Labels default to directory names: free text, escaped (and cut) like any other.
    let labels: Vec<String> = c
        .runs
        .iter()
        .map(|r| {
            if markdown {
                free_text(&r.label)
            } else {
                printable(&r.label).into_owned()
            }
        })
        .collect();
    d.heading(2, &format!("tracegate compare: {}", labels.join(" vs ")));
    let mut runs = Table::new(&[
        ("Run", Align::Left),
        ("Device", Align::Left),
        ("Ranks", Align::Right),
        ("Figures over", Align::Left),
    ]);
    for r in &c.runs {
        runs.row(vec![
            r.label.clone(),
            r.device.clone().unwrap_or_else(|| MISSING.into()),
            r.ranks.to_string(),
            match r.scope {
                Scope::Decode => "decode steps (per step)".into(),
                Scope::WholeTrace => "whole trace (no decode step; per rank)".into(),
            },
        ]);
    }
    d.table(&runs);
    d.heading(3, "Metrics, as extract computes them");
    d.table(&metric_table(c, &c.metrics, "Metric"));
    d.heading(3, "Head-to-head");
    d.table(&metric_table(c, &c.figures, "Figure"));
    let mut facts = Table::new(
        &std::iter::once(("", Align::Left))
            .chain(c.runs.iter().map(|r| (r.label.as_str(), Align::Left)))
            .collect::<Vec<_>>(),
    );
    if markdown {
        for i in 1..=c.runs.len() {
            facts = facts.markdown_column(i);
        }
    }
    for f in &c.facts {
        if f.values.iter().all(Option::is_none) {
            continue;
        }
        let mut row = vec![f.label.clone()];
        row.extend(f.values.iter().map(|v| match v {
            None => MISSING.into(),
            // Kernel names in code spans, as `check` shows them.
            Some(k) if f.key.ends_with("_kernel") => {
                names_cell(std::slice::from_ref(k), None, markdown)
            }
            Some(text) if markdown => free_text(text),
            Some(text) => text.clone(),
        }));
        facts.row(row);
    }
    if !facts.is_empty() {
        d.table(&facts);
    }
    d.heading(3, "Time per category");
    d.table(&metric_table(c, &c.categories, "Category (ms)"));
    d.heading(3, "Kernel libraries per category");
    for lib in &c.libraries {
        let mut t = Table::new(&[
            ("Run", Align::Left),
            ("Top kernels", Align::Left),
            ("Only in this run", Align::Left),
        ]);
        if markdown {
            t = t.markdown_column(1).markdown_column(2);
        }
        for (i, r) in c.runs.iter().enumerate() {
            let top = lib
                .top
                .get(i)
                .map_or_else(|| MISSING.into(), |ks| names_cell(ks, None, markdown));
            let only = lib.only_here.get(i).map_or_else(
                || MISSING.into(),
                |only| {
                    let rest = (only.len() > 3).then(|| format!("and {} more", only.len() - 3));
                    names_cell(&only[..only.len().min(3)], rest, markdown)
                },
            );
            t.row(vec![r.label.clone(), top, only]);
        }
        d.folded_table(lib.category.label(), &t);
    }
    d.out.trim_end().to_string() + "\n"
}
