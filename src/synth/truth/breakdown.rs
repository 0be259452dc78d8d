//! The `breakdown` member of `truth.json` (time and calls per step, by category and by kernel)
//! and the `balance` member (per rank, compute, comm and waiting on the matched steps).

use serde_json::{json, Map, Value};

use super::metrics::Steps;
use super::{median, NameInfo, RankSteps, StepSummary};

/// Per rank, the mean over kept decode steps; the run's value is the mean over the ranks with
/// kept steps. Empty when no rank kept a step.
pub(super) fn breakdown(steps: &Steps<'_>, names: &[NameInfo]) -> Map<String, Value> {
    let mut out = Map::new();
    let Some((name_ms, name_calls)) = per_name(steps, names.len()) else {
        return out;
    };
    let total: f64 = name_ms.iter().sum();
    let pct = |x: f64| if total > 0.0 { x / total * 100.0 } else { 0.0 };
    out.insert(
        "categories".into(),
        categories(names, &name_ms, &name_calls, &pct),
    );
    out.insert(
        "kernels".into(),
        kernels(names, &name_ms, &name_calls, &pct),
    );
    out
}

/// Per name id, the ms and calls per kept decode step, averaged over the ranks with kept steps;
/// `None` when there is no such rank.
fn per_name(steps: &Steps<'_>, n_names: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let mut name_ms = vec![0f64; n_names];
    let mut name_calls = vec![0f64; n_names];
    let mut nranks = 0usize;
    for (ri, k) in steps.kept.iter().enumerate() {
        let n = k.len();
        if n == 0 {
            continue;
        }
        nranks += 1;
        let mut time = vec![0u64; n_names];
        let mut calls = vec![0u64; n_names];
        for s in steps.decode(ri) {
            for (id, &(t, c)) in s.per_name.iter().enumerate() {
                time[id] += t;
                calls[id] += u64::from(c);
            }
        }
        for id in 0..n_names {
            name_ms[id] += time[id] as f64 / 1e6 / n as f64;
            name_calls[id] += calls[id] as f64 / n as f64;
        }
    }
    if nranks == 0 {
        return None;
    }
    for v in name_ms.iter_mut().chain(name_calls.iter_mut()) {
        *v /= nranks as f64;
    }
    Some((name_ms, name_calls))
}

/// The categories of the names called, most time first (ties by category).
fn categories(
    names: &[NameInfo],
    name_ms: &[f64],
    name_calls: &[f64],
    pct: &dyn Fn(f64) -> f64,
) -> Value {
    let mut cats: Vec<(&'static str, f64, f64)> = Vec::new();
    for (id, info) in names.iter().enumerate() {
        if name_calls[id] == 0.0 {
            continue;
        }
        match cats.iter_mut().find(|c| c.0 == info.category) {
            Some(c) => {
                c.1 += name_ms[id];
                c.2 += name_calls[id];
            }
            None => cats.push((info.category, name_ms[id], name_calls[id])),
        }
    }
    cats.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let mut cat_obj = Map::new();
    for (c, t, n) in cats {
        cat_obj.insert(
            c.into(),
            json!({"ms_per_step": t, "calls_per_step": n, "pct": pct(t)}),
        );
    }
    Value::Object(cat_obj)
}

/// The names called, most time first (ties by name).
fn kernels(
    names: &[NameInfo],
    name_ms: &[f64],
    name_calls: &[f64],
    pct: &dyn Fn(f64) -> f64,
) -> Value {
    let mut ids: Vec<usize> = (0..names.len())
        .filter(|&id| name_calls[id] > 0.0)
        .collect();
    ids.sort_by(|&a, &b| {
        name_ms[b]
            .total_cmp(&name_ms[a])
            .then(names[a].name.cmp(&names[b].name))
    });
    let kernels = ids
        .into_iter()
        .map(|id| {
            let mut k = json!({
                "name": names[id].name,
                "category": names[id].category,
                "ms_per_step": name_ms[id],
                "calls_per_step": name_calls[id],
                "pct": pct(name_ms[id]),
            });
            if let Some(c) = names[id].collective {
                k["collective"] = json!(c);
            }
            k
        })
        .collect();
    Value::Array(kernels)
}

/// `balance` of truth.json: per rank, on the matched steps, compute (non-comm kernel time), comm,
/// wait and transfer per step (medians, and every step in order), and how often it arrived last
/// at a collective.
pub(super) fn balance(ranks: &[RankSteps], matched: &[Vec<usize>]) -> Value {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut per = Map::new();
    for (ri, r) in ranks.iter().enumerate() {
        let steps: Vec<&StepSummary> = matched.iter().map(|m| &r.steps[m[ri]]).collect();
        let series = |f: &dyn Fn(&StepSummary) -> u64| -> Vec<f64> {
            steps.iter().map(|s| ms(f(s))).collect()
        };
        let compute = series(&|s| s.compute);
        let comm = series(&|s| s.comm);
        let wait = series(&|s| s.wait);
        let transfer = series(&|s| s.transfer);
        let collectives: u64 = steps.iter().map(|s| u64::from(s.collectives)).sum();
        let last: u64 = steps.iter().map(|s| u64::from(s.last_arrivals)).sum();
        let per_step: Vec<Value> = (0..steps.len())
            .map(|j| {
                json!({"compute_ms": compute[j], "comm_ms": comm[j], "wait_ms": wait[j],
                       "transfer_ms": transfer[j]})
            })
            .collect();
        per.insert(
            r.rank.to_string(),
            json!({
                "compute_ms": median(&compute),
                "comm_ms": median(&comm),
                "wait_ms": median(&wait),
                "transfer_ms": median(&transfer),
                "collectives": collectives,
                "last_arrivals": last,
                "last_arrival_pct": (collectives > 0).then(|| last as f64 / collectives as f64 * 100.0),
                "steps": per_step,
            }),
        );
    }
    json!({"matched_steps": matched.len(), "ranks": per})
}
