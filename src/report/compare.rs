//! `tracegate compare` output: runs side by side with the ratio to the first run, time per
//! category, and the kernel libraries per category. Nothing here computes a figure.

use super::doc::Doc;
use super::table::{free_text, printable, table_code_span, Align, Table};
use super::Format;
use crate::analysis::compare::{Comparison, MetricRow, COMPARE_SCHEMA_VERSION};
use crate::analysis::Scope;
use crate::units::MISSING;

pub(crate) fn render(c: &Comparison, format: Format) -> String {
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
fn names_cell(names: &[String], rest: Option<String>, markdown: bool, width: usize) -> String {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut shown: Vec<String> = super::names::distinct_labels(&refs, width)
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

/// Characters of the kernel names of one fact row (the main allreduce, MoE GEMM, ... kernel),
/// shared by the runs side by side; each gets at least [`MIN_NAME_WIDTH`].
const FACTS_NAME_WIDTH: usize = 72;
const MIN_NAME_WIDTH: usize = 24;
/// Characters of a kernel name in a category's table of kernels (one name a row).
const LIBRARY_NAME_WIDTH: usize = 64;
/// Kernels only in one run listed per run; the rest are counted.
const ONLY_HERE_SHOWN: usize = 3;

/// A category's kernels per run, one a row (a list in one cell would widen the comment past its
/// column): the run's top kernels, then up to [`ONLY_HERE_SHOWN`] kernels no other run has.
fn library_table(c: &Comparison, lib: &crate::analysis::compare::LibraryRow) -> Table {
    let mut t = Table::new(&[
        ("Run", Align::Left),
        ("Kernel", Align::Left),
        ("", Align::Left),
    ])
    .code_column(1)
    .name_width(LIBRARY_NAME_WIDTH);
    for (i, r) in c.runs.iter().enumerate() {
        let top: &[String] = lib.top.get(i).map_or(&[], Vec::as_slice);
        let only: &[String] = lib.only_here.get(i).map_or(&[], Vec::as_slice);
        for k in top {
            let note = if only.contains(k) {
                "top, only in this run"
            } else {
                "top"
            };
            t.row(vec![
                r.label.clone(),
                super::display_kernel_name(k),
                note.into(),
            ]);
        }
        let rest: Vec<&String> = only.iter().filter(|k| !top.contains(k)).collect();
        for k in rest.iter().take(ONLY_HERE_SHOWN) {
            t.row(vec![
                r.label.clone(),
                super::display_kernel_name(k),
                "only in this run".into(),
            ]);
        }
        if rest.len() > ONLY_HERE_SHOWN {
            t.row(vec![
                r.label.clone(),
                MISSING.into(),
                format!("and {} more only in this run", rest.len() - ONLY_HERE_SHOWN),
            ]);
        }
        if top.is_empty() && rest.is_empty() {
            t.row(vec![r.label.clone(), MISSING.into(), String::new()]);
        }
    }
    t
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
            r.ranks_of.clone().unwrap_or_else(|| r.ranks.to_string()),
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
            Some(k) if f.key.ends_with("_kernel") => names_cell(
                std::slice::from_ref(k),
                None,
                markdown,
                (FACTS_NAME_WIDTH / c.runs.len().max(1)).max(MIN_NAME_WIDTH),
            ),
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
    if !c.scopes.is_empty() {
        d.heading(3, "Time per Python scope");
        d.table(&metric_table(c, &c.scopes, "Scope (ms)").code_column(0));
    }
    d.heading(3, "Kernel libraries per category");
    for lib in &c.libraries {
        d.folded_table(lib.category.label(), &library_table(c, lib));
    }
    d.out.trim_end().to_string() + "\n"
}
