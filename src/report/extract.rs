//! `tracegate extract` output: the gated figures, the steps behind them and the breakdown.

use super::markup::{Inline, Markdown, Markup, Terminal};
use super::table::{Align, Table};
use super::ExtractFormat;
use crate::metrics::{Extraction, Metric, MetricMap, METRICS};
use crate::taxonomy::Category;
use crate::units::{Unit, MISSING};

/// Version of the `extract --format json` schema; bumped on any incompatible change (2: the
/// pooled `other` share is `other_share_pct`, apart from the metric `other_pct`).
pub(crate) const EXTRACT_SCHEMA_VERSION: u32 = 2;

/// Kernels listed in the text breakdown (JSON and TOML list them all).
const TOP_KERNELS: usize = 15;

pub(crate) fn render(x: &Extraction, format: ExtractFormat) -> String {
    match format {
        ExtractFormat::Json => {
            serde_json::to_string_pretty(&to_json(x)).expect("extraction serialises") + "\n"
        }
        ExtractFormat::Toml => to_toml(x),
        ExtractFormat::Markdown => render_text(x, &Markdown),
        ExtractFormat::Table => render_text(x, &Terminal),
    }
}

/// The JSON document: the extraction with its schema version first.
pub(crate) fn to_json(x: &Extraction) -> serde_json::Value {
    super::versioned_json(EXTRACT_SCHEMA_VERSION, x)
}

/// TOML has no null: absent values are dropped before conversion.
fn strip_nulls(v: serde_json::Value) -> Option<serde_json::Value> {
    use serde_json::Value;
    match v {
        Value::Null => None,
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(strip_nulls).collect(),
        )),
        Value::Object(map) => Some(Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| strip_nulls(v).map(|v| (k, v)))
                .collect(),
        )),
        other => Some(other),
    }
}

fn to_toml(x: &Extraction) -> String {
    let value = strip_nulls(to_json(x)).unwrap_or_default();
    toml::to_string(&value).expect("extraction converts to TOML")
}

fn metric_row(name: &str, m: &Metric) -> Vec<String> {
    let opt = |v: Option<f64>| m.unit.number_or_missing(v);
    // A metric of one value per rank (ratio, skew) keeps its inputs in per_rank, in another unit.
    let of_ranks = crate::metrics::catalog::def(name)
        .is_some_and(|d| d.samples == crate::metrics::catalog::Samples::PerRank);
    let ranks = if m.per_rank.len() > 1 && !of_ranks {
        let (lo, hi) = m
            .per_rank
            .values()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        format!("{} – {}", m.unit.number(lo), m.unit.number(hi))
    } else {
        MISSING.into()
    };
    vec![
        name.to_string(),
        m.unit.number(m.value),
        opt(m.p50),
        opt(m.p90),
        opt(m.p99),
        m.unit.label().to_string(),
        format!("{:?}", m.direction).to_lowercase(),
        ranks,
    ]
}

/// The registry's metrics of a run, in the registry's order: the one table `extract` and `report`
/// print them in, so that a figure reads the same in both.
pub(crate) fn metrics_table(metrics: &MetricMap) -> Table {
    let mut t = Table::new(&[
        ("metric", Align::Left),
        ("value", Align::Right),
        ("p50", Align::Right),
        ("p90", Align::Right),
        ("p99", Align::Right),
        ("unit", Align::Left),
        ("better", Align::Left),
        ("range over ranks", Align::Right),
    ]);
    for def in METRICS {
        if let Some(m) = metrics.get(&def.id) {
            t.row(metric_row(def.name(), m));
        }
    }
    t
}

fn render_text(x: &Extraction, m: &dyn Markup) -> String {
    let mut out = String::new();
    let section = |title: &str, table: &Table, out: &mut String| {
        out.push_str(&m.heading(3, &[Inline::Prose(title)]));
        out.push_str(&m.table(table));
    };
    let device = x
        .run
        .device
        .clone()
        .unwrap_or_else(|| "unknown device".into());
    let kept = x.steps.values().map(|s| s.decode_kept).min().unwrap_or(0);
    let warmup = x
        .steps
        .values()
        .map(|s| s.dropped_warmup)
        .max()
        .unwrap_or(0);
    let (ranks, kept, warmup) = (
        x.run.ranks.len().to_string(),
        kept.to_string(),
        warmup.to_string(),
    );
    out.push_str(&m.paragraph(&[
        Inline::Figure(&ranks),
        Inline::Prose(" rank(s) on "),
        Inline::Text(&device),
        Inline::Prose("; at least "),
        Inline::Figure(&kept),
        Inline::Prose(" steady decode step(s) per rank ("),
        Inline::Figure(&warmup),
        Inline::Prose(" dropped as warm-up)."),
    ]));

    let t = metrics_table(&x.metrics);
    section("Metrics", &t, &mut out);

    let mut t = Table::new(&[
        ("rank", Align::Left),
        ("decode kept", Align::Right),
        ("warm-up dropped", Align::Right),
        ("outliers dropped", Align::Right),
        ("prefill", Align::Right),
        ("unassigned ms", Align::Right),
    ]);
    for (rank, s) in &x.steps {
        t.row(vec![
            rank.to_string(),
            s.decode_kept.to_string(),
            s.dropped_warmup.to_string(),
            s.dropped_outliers.to_string(),
            s.prefill.to_string(),
            Unit::Ms.number(s.unassigned_ms),
        ]);
    }
    section("Steps", &t, &mut out);

    let mut t = Table::new(&[
        ("category", Align::Left),
        ("calls/step", Align::Right),
        ("ms/step", Align::Right),
        ("%", Align::Right),
    ]);
    let mut cats: Vec<(&Category, _)> = x.breakdown.categories.iter().collect();
    cats.sort_by(|a, b| b.1.ms_per_step.total_cmp(&a.1.ms_per_step));
    let (mut calls, mut ms) = (0.0, 0.0);
    for (cat, share) in cats {
        calls += share.calls_per_step;
        ms += share.ms_per_step;
        t.row(vec![
            cat.label().to_string(),
            crate::units::count(share.calls_per_step),
            Unit::Ms.number(share.ms_per_step),
            Unit::Pct.number(share.pct),
        ]);
    }
    t.row(vec![
        "Total".into(),
        crate::units::count(calls),
        Unit::Ms.number(ms),
        "100.0".into(),
    ]);
    section("Decode step breakdown", &t, &mut out);

    let mut t = Table::new(&[
        ("kernel", Align::Left),
        ("category", Align::Left),
        ("calls/step", Align::Right),
        ("ms/step", Align::Right),
        ("%", Align::Right),
    ])
    .code_column(0);
    for k in x.breakdown.kernels.iter().take(TOP_KERNELS) {
        t.row(vec![
            super::display_kernel_name(&k.name),
            k.category.key().to_string(),
            crate::units::count(k.calls_per_step),
            Unit::Ms.number(k.ms_per_step),
            Unit::Pct.number(k.pct),
        ]);
    }
    section(&format!("Top {TOP_KERNELS} kernels"), &t, &mut out);
    let other = Unit::Pct.figure(x.other_share_pct);
    out.push_str(&m.line(&[
        Inline::Prose("Kernel time left in "),
        Inline::Code("other"),
        Inline::Prose(": "),
        Inline::Figure(&other),
        Inline::Prose(".\n"),
    ]));
    for w in &x.warnings {
        out.push_str(&m.line(&[
            Inline::Prose("\nWarning: "),
            Inline::TextWithCode(w),
            Inline::Prose("\n"),
        ]));
    }
    out
}
