//! `tracegate inspect` output.

use super::markup::{Inline, Markdown, Markup, Terminal};
use super::table::{Align, Table};
use super::{fixed, percent, Format};
use crate::inspect::{RankInspection, RunInspection};
use crate::units::{Unit, MISSING};

pub(crate) fn render(inspection: &RunInspection, format: Format) -> String {
    match format {
        Format::Json => {
            serde_json::to_string_pretty(inspection).expect("inspection serialises") + "\n"
        }
        Format::Markdown => render_text(inspection, &Markdown),
        Format::Table => render_text(inspection, &Terminal),
    }
}

fn render_text(run: &RunInspection, m: &dyn Markup) -> String {
    let mut out = String::new();
    out.push_str(&m.heading(3, &[Inline::Prose("Ranks")]));
    if let Some(missing) = &run.missing_ranks {
        out.push_str(&m.paragraph(&[Inline::Prose(&format!("Partial run: {missing}."))]));
    }
    for file in &run.skipped {
        out.push_str(&m.paragraph(&[
            Inline::Prose("Skipped "),
            Inline::Code(file),
            Inline::Prose(": a CPU-only trace that names no rank (a serving frontend's)."),
        ]));
    }
    let mut t = Table::new(&[
        ("rank", Align::Left),
        ("device", Align::Left),
        ("stage", Align::Left),
        ("GPU span ms", Align::Right),
        ("kernels", Align::Right),
        ("memcpy", Align::Right),
        ("memset", Align::Right),
        ("cpu ops", Align::Right),
        ("launches", Align::Right),
        ("graph launches", Align::Right),
        ("annotations", Align::Right),
        ("file", Align::Left),
    ]);
    for r in &run.ranks {
        t.row(vec![
            r.label.clone(),
            r.device.clone().unwrap_or_else(|| MISSING.into()),
            r.stage
                .map(|s| format!("{s:?}").to_lowercase())
                .unwrap_or_else(|| MISSING.into()),
            Unit::Ms.number(r.gpu_span_ms),
            r.kernels.to_string(),
            r.memcpys.to_string(),
            r.memsets.to_string(),
            r.cpu_ops.to_string(),
            r.runtime_launches.to_string(),
            r.graph_launches.launches.to_string(),
            r.annotations.to_string(),
            r.file.clone(),
        ]);
    }
    out.push_str(&m.table(&t));

    out.push_str(&m.heading(3, &[Inline::Prose("Streams")]));
    let mut t = Table::new(&[
        ("rank", Align::Left),
        ("stream", Align::Right),
        ("activities", Align::Right),
        ("kernel ms", Align::Right),
    ]);
    for r in &run.ranks {
        for s in &r.streams {
            t.row(vec![
                r.label.clone(),
                s.stream.to_string(),
                s.activities.to_string(),
                Unit::Ms.number(s.kernel_ms),
            ]);
        }
    }
    out.push_str(&m.table(&t));

    out.push_str(&m.heading(3, &[Inline::Prose("Links")]));
    let mut t = Table::new(&[
        ("rank", Align::Left),
        ("kernels", Align::Right),
        ("with launch", Align::Right),
        ("with CPU op", Align::Right),
        ("with External id", Align::Right),
        ("graph kernels", Align::Right),
        ("max per graph", Align::Right),
    ]);
    for r in &run.ranks {
        let l = &r.links;
        t.row(vec![
            r.label.clone(),
            l.kernels.to_string(),
            format!(
                "{} ({})",
                l.kernels_with_launch,
                percent(l.kernels_with_launch, l.kernels)
            ),
            format!(
                "{} ({})",
                l.kernels_with_cpu_op,
                percent(l.kernels_with_cpu_op, l.kernels)
            ),
            format!(
                "{} ({})",
                l.kernels_with_external_id,
                percent(l.kernels_with_external_id, l.kernels)
            ),
            r.graph_launches.kernels.to_string(),
            r.graph_launches.max_kernels_per_launch.to_string(),
        ]);
    }
    out.push_str(&m.table(&t));

    out.push_str(&m.heading(3, &[Inline::Prose("Input Dims")]));
    let mut t = Table::new(&[
        ("rank", Align::Left),
        ("cpu ops", Align::Right),
        ("with dims", Align::Right),
        ("empty dims", Align::Right),
        ("no Input Dims", Align::Right),
        ("top ops with empty dims", Align::Left),
    ]);
    for r in &run.ranks {
        let d = &r.input_dims;
        let top: Vec<String> = d
            .top_empty_ops
            .iter()
            .take(4)
            .map(|o| format!("{} {}", o.name, o.count))
            .collect();
        t.row(vec![
            r.label.clone(),
            d.cpu_ops.to_string(),
            d.with_dims.to_string(),
            d.empty_dims.to_string(),
            d.without_key.to_string(),
            top.join(", "),
        ]);
    }
    out.push_str(&m.table(&t));
    out.push_str(&totals_line(&run.ranks));
    out.push_str(&m.heading(3, &[Inline::Prose("Read")]));
    let mut t = Table::new(&[
        ("rank", Align::Left),
        ("events", Align::Right),
        ("python_function", Align::Right),
        ("frames kept", Align::Right),
        ("incomplete", Align::Right),
        ("negative dur", Align::Right),
        ("malformed", Align::Right),
        ("unattributed", Align::Right),
        ("MB JSON", Align::Right),
    ]);
    for r in &run.ranks {
        let s = &r.read;
        t.row(vec![
            r.label.clone(),
            s.events_by_category.values().sum::<u64>().to_string(),
            s.python_functions_skipped.to_string(),
            s.python_frames_kept.to_string(),
            s.incomplete_events.to_string(),
            s.negative_durations.to_string(),
            s.malformed_events.to_string(),
            s.unattributed_events.to_string(),
            fixed(s.json_bytes as f64 / 1e6, 1),
        ]);
    }
    out.push_str(&m.table(&t));
    out
}

fn totals_line(ranks: &[RankInspection]) -> String {
    let with: u64 = ranks.iter().map(|r| r.input_dims.with_dims).sum();
    let empty: u64 = ranks.iter().map(|r| r.input_dims.empty_dims).sum();
    let missing: u64 = ranks.iter().map(|r| r.input_dims.without_key).sum();
    format!(
        "Input Dims over all ranks: {} events, {with} with dims, {empty} empty (ops without tensor inputs), {missing} without the argument.\n\n",
        with + empty + missing
    )
}
