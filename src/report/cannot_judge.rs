//! A check that cannot judge, as its comment shows it: no ✅, ❌ or 🚀 per metric and no Why,
//! since nothing was judged. A run of another configuration gets a short table of what differs
//! and the next step; a metric too noisy to judge gets its interval, its limit and how many more
//! steps would decide it.

use super::check::{tolerance_of, worse_change};
use super::sections::{folds, head, run_folds};
use super::table::{escape_markdown, Align, Table};
use crate::baseline::Tolerance;
use crate::gate::{CheckResult, MetricCheck};
use crate::metrics::{Direction, MetricId};
use crate::units::{Unit, MISSING};

/// The comment of a run that cannot be judged against this baseline at all.
pub(super) fn parts(result: &CheckResult) -> Vec<String> {
    let mut parts = vec![head(
        result,
        "Nothing was judged: no metric of this run is compared with this baseline.",
    )];
    let (table, differs) = differences(result);
    let mut body = table.to_markdown();
    body.push('\n');
    for p in &result.problems {
        body.push_str(&format!("- {}\n", escape_markdown(p)));
    }
    body.push('\n');
    body.push_str(&format!("**Next step:** {}\n\n", next_step(differs)));
    parts.push(body);
    // Kernel diffs against another configuration's baseline say nothing: only the run's details.
    parts.extend(run_folds(result));
    parts
}

/// The configuration side by side, `≠` where it differs: hardware, ranks, batch, framework and
/// the decode step's scale; whether any differs.
fn differences(result: &CheckResult) -> (Table, bool) {
    let meta = &result.baseline.meta;
    let run = &result.run;
    let mut t = Table::new(&[
        ("", Align::Left),
        ("", Align::Left),
        ("baseline", Align::Right),
        ("run", Align::Right),
    ]);
    let text = |v: Option<String>| v.unwrap_or_else(|| MISSING.to_string());
    let mut rows: Vec<(&str, Option<String>, Option<String>)> = vec![
        (
            "hardware",
            Some(meta.hardware.clone()).filter(|h| !h.is_empty()),
            run.device.clone(),
        ),
        (
            "ranks",
            meta.tp.map(|t| t.to_string()),
            Some(run.ranks.len().to_string()),
        ),
    ];
    if meta.batch.is_some() || run.batch.is_some() {
        rows.push((
            "batch",
            meta.batch.map(|b| b.to_string()),
            run.batch.map(|b| Unit::Count.number(b)),
        ));
    }
    if meta.framework.is_some() || run.framework.is_some() {
        rows.push(("framework", meta.framework.clone(), run.framework.clone()));
    }
    let mut differs = false;
    for (what, base, now) in rows {
        let differ = match (&base, &now) {
            (Some(b), Some(n)) => !b.eq_ignore_ascii_case(n),
            _ => false,
        };
        differs |= differ;
        t.row(vec![
            if differ { "≠" } else { "" }.to_string(),
            what.to_string(),
            text(base),
            text(now),
        ]);
    }
    if let Some(row) = scale_row(result) {
        t.row(row);
    }
    (t, differs)
}

/// The decode step (or a loop's iteration) on both sides, with how many times apart: a run 52×
/// slower than its baseline is of another configuration whatever the labels say.
fn scale_row(result: &CheckResult) -> Option<Vec<String>> {
    let m = [MetricId::DecodeStepMs, MetricId::IterationMs]
        .into_iter()
        .find_map(|id| result.metrics.iter().find(|m| m.name == id))?;
    let (base, now) = (m.baseline?, m.current?);
    let ratio = (base > 0.0).then(|| now / base)?;
    let apart = !(0.5..=2.0).contains(&ratio);
    let times = format!(
        "{}× the baseline",
        crate::units::fixed(ratio, if ratio < 10.0 { 2 } else { 1 })
    );
    Some(vec![
        if apart { "≠" } else { "" }.to_string(),
        m.name.name().to_string(),
        m.unit.figure(base),
        format!("{} ({times})", m.unit.figure(now)),
    ])
}

fn next_step(configuration_differs: bool) -> &'static str {
    if configuration_differs {
        "judge this run against a baseline of its own configuration (`tracegate check RUN \
         --baselines DIR` picks one by hardware and ranks), or record one with `tracegate \
         baseline new`. Each line above says what would let this baseline judge it."
    } else {
        "mend what each line above names; until then no figure of this run is judged."
    }
}

/// The comment of a run whose gated metrics nothing regressed, but one or more moved across
/// their limit with an interval that straddles it.
pub(super) fn too_noisy(result: &CheckResult, noisy: &[&MetricCheck]) -> Vec<String> {
    let names: Vec<&str> = noisy.iter().map(|m| m.name.name()).collect();
    let mut parts = vec![head(
        result,
        &escape_markdown(&format!(
            "Too noisy to judge: {} moved across its limit, but the interval of its change \
             holds both sides of the limit.",
            names.join(", ")
        )),
    )];
    let mut t = Table::new(&[
        ("metric", Align::Left),
        ("change", Align::Right),
        ("interval of the change", Align::Right),
        ("limit", Align::Right),
        ("steps", Align::Right),
        ("to decide", Align::Right),
    ]);
    for m in noisy {
        t.row(noisy_row(m));
    }
    parts.push(format!(
        "{}\n\"To decide\": about how many more steps would narrow the interval to one side of \
         the limit, if the steps vary as much; profile that much longer, or calibrate the \
         baseline from several runs. Nothing else decides this check.\n\n",
        t.to_markdown()
    ));
    parts.extend(folds(result, Vec::new()));
    parts
}

/// A noisy metric's row: its change, the interval of the change, the limit, the steps it rests
/// on and the steps more that would decide it.
fn noisy_row(m: &MetricCheck) -> Vec<String> {
    let base = m.baseline.unwrap_or(0.0);
    let unit = m.unit;
    let relative = matches!(tolerance_of(m), Some(Tolerance::Relative(_))) && base != 0.0;
    // In the tolerance's terms: percent of the baseline (two decimals: the interval of a noisy
    // metric is narrow), else the metric's unit.
    let signed = |v: f64| {
        if relative {
            format!("{}%", crate::units::fixed_signed(v / base.abs() * 100.0, 2))
        } else {
            unit.change(v)
        }
    };
    let interval = m
        .interval
        .map(|(lo, hi)| format!("{} to {}", signed(lo - base), signed(hi - base)));
    let limit = m.allowance.map(|a| match m.direction {
        Direction::Lower => signed(a),
        Direction::Higher => signed(-a),
    });
    vec![
        m.name.name().to_string(),
        m.change.map_or_else(|| MISSING.into(), signed),
        interval.unwrap_or_else(|| MISSING.into()),
        limit.unwrap_or_else(|| MISSING.into()),
        m.samples.to_string(),
        more_steps(m).map_or_else(|| "many".into(), |n| format!("+{n}")),
    ]
}

/// About how many more steps would put the interval on one side of the limit: its half-width
/// shrinks as one over the square root of the steps.
fn more_steps(m: &MetricCheck) -> Option<usize> {
    let (lo, hi) = m.interval?;
    let half = (hi - lo) / 2.0;
    let distance = (worse_change(m)? - m.allowance?).abs();
    let n = m.samples as f64;
    if distance <= 0.0 || n == 0.0 {
        return None;
    }
    let needed = n * (half / distance).powi(2);
    Some(((needed - n).max(1.0)).ceil() as usize)
}
