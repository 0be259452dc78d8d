//! The iteration metrics of `truth.json`: `decode_iter_ms`, `decode_host_gap_ms`,
//! `decode_phase_util_pct`, `decode_slow_ms_per_iter`, `decode_tokens_per_s` and
//! `unassigned_pct`, from the steps' placed intervals.
//!
//! An iteration runs from a decode step after warm-up to the next step of the rank when that is
//! a decode step (a speculative iteration: from its first draft forward to the next one's); the
//! generator places nothing on the GPU between two steps, so the gap is all idle.

use serde_json::{Map, Value};

use super::metrics::{metric, per_rank_obj, sampled, Combine, PerRank, Steps};
use super::{median, StepKind, StepSummary};
use crate::metrics::MetricId;

/// One iteration: its length, its idle gap and its busy share (for a kept step), ns and %.
struct Iter {
    iter: f64,
    gap: f64,
    util: Option<f64>,
}

fn rank_iterations(steps: &[StepSummary], kept: &[usize], warmup: usize) -> Vec<Iter> {
    let mut order: Vec<usize> = (0..steps.len()).collect();
    order.sort_by_key(|&i| steps[i].start);
    let decode: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| steps[i].kind == StepKind::Decode)
        .collect();
    let after_warmup: Vec<usize> = if decode.len() > warmup {
        decode[warmup..].to_vec()
    } else {
        decode.clone()
    };
    let mut out = Vec::new();
    for w in order.windows(2) {
        let (a, b) = (&steps[w[0]], &steps[w[1]]);
        if !after_warmup.contains(&w[0]) || b.kind != StepKind::Decode {
            continue;
        }
        let iter = (b.start - a.start) as f64;
        // After the forward's last end (a speculative iteration's draft extend), not after its
        // wall: the gaps between draft and verify are inside the iteration's forward.
        let gap = (b.start - a.end) as f64;
        out.push(Iter {
            iter,
            gap,
            util: kept.contains(&w[0]).then(|| a.busy as f64 / iter * 100.0),
        });
    }
    out
}

/// Inserts the iteration metrics into `out`.
pub(super) fn metrics(out: &mut Map<String, Value>, steps: &Steps<'_>, warmup: usize) {
    let per_rank: Vec<(u32, Vec<Iter>)> = (0..steps.ranks.len())
        .map(|ri| {
            let r = &steps.ranks[ri];
            (r.rank, rank_iterations(&r.steps, &steps.kept[ri], warmup))
        })
        .collect();
    let ms = |f: fn(&Iter) -> Option<f64>| -> Vec<(u32, Vec<f64>)> {
        per_rank
            .iter()
            .map(|(r, it)| (*r, it.iter().filter_map(f).collect()))
            .collect()
    };
    let iters = ms(|i| Some(i.iter / 1e6));
    sampled(
        out,
        MetricId::DecodeIterMs,
        "ms",
        "lower",
        Combine::Max,
        true,
        iters.clone(),
    );
    let gaps = ms(|i| Some(i.gap / 1e6));
    sampled(
        out,
        MetricId::DecodeHostGapMs,
        "ms",
        "lower",
        Combine::Max,
        false,
        gaps,
    );
    let util = ms(|i| i.util);
    sampled(
        out,
        MetricId::DecodePhaseUtilPct,
        "%",
        "higher",
        Combine::Min,
        false,
        util,
    );
    slow(out, &iters);
    tokens(out, steps);
    unassigned(out, steps);
}

/// `decode_slow_ms_per_iter`: per rank, the iterations above 1.5x its median iteration, each
/// less the median, summed over its iterations; across ranks the max.
fn slow(out: &mut Map<String, Value>, iters: &[(u32, Vec<f64>)]) {
    let per: Vec<PerRank> = iters
        .iter()
        .filter_map(|(rank, v)| {
            let m = median(v)?;
            let lost: f64 = v.iter().filter(|&&t| t > 1.5 * m).map(|t| t - m).sum();
            Some(PerRank {
                rank: *rank,
                value: lost / v.len() as f64,
                p90: None,
            })
        })
        .collect();
    insert_max(out, MetricId::DecodeSlowMsPerIter, "ms", "lower", &per);
}

/// `decode_tokens_per_s`: the batch × 1000 / `decode_iter_ms`.
fn tokens(out: &mut Map<String, Value>, steps: &Steps<'_>) {
    let Some(batch) = steps.ranks.iter().find_map(|r| r.batch) else {
        return;
    };
    let Some(iter) = out
        .get(MetricId::DecodeIterMs.name())
        .and_then(|m| m["value"].as_f64())
    else {
        return;
    };
    let value = f64::from(batch) * 1000.0 / iter;
    out.insert(
        MetricId::DecodeTokensPerS.name().into(),
        Value::Object(metric("tok/s", "higher", value)),
    );
}

/// `unassigned_pct`: per rank, kernel time in no step over all its kernel time; the max.
fn unassigned(out: &mut Map<String, Value>, steps: &Steps<'_>) {
    let per: Vec<PerRank> = steps
        .ranks
        .iter()
        .map(|r| {
            let in_steps: u64 = r.steps.iter().map(|s| s.kernel).sum();
            let total = in_steps + r.unassigned_ns;
            PerRank {
                rank: r.rank,
                value: r.unassigned_ns as f64 / total.max(1) as f64 * 100.0,
                p90: None,
            }
        })
        .collect();
    insert_max(out, MetricId::UnassignedPct, "%", "lower", &per);
}

fn insert_max(out: &mut Map<String, Value>, id: MetricId, unit: &str, dir: &str, per: &[PerRank]) {
    let Some(value) = per.iter().map(|p| p.value).reduce(f64::max) else {
        return;
    };
    let mut m = metric(unit, dir, value);
    m.insert("per_rank".into(), per_rank_obj(per));
    out.insert(id.name().into(), Value::Object(m));
}
