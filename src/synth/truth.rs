//! Ground truth for synthetic traces: the metrics of `docs/METRICS.md`, computed from the exact
//! integer-nanosecond intervals the generator placed and the category it assigned to each kernel.
//!
//! Self-contained on purpose: it depends on no other module of the crate (not the reader, not the
//! taxonomy, not the metric code it is the reference for), only on `serde_json` for the output and
//! on [`MetricId`] for the metrics' names (never their definitions).

use crate::metrics::MetricId;
use serde_json::{json, Map, Value};

/// One GPU activity of a step: `[start, end)` in ns and an index into the name table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Activity {
    pub start: u64,
    pub end: u64,
    pub name: u32,
    /// For a collective: the time this rank waited in it for the last rank (0 for the last).
    pub wait: u64,
}

/// What the generator knows about a kernel name.
#[derive(Debug, Clone)]
pub(crate) struct NameInfo {
    pub name: String,
    /// `comm`, `moe_gemm`, `dense_gemm`, `attention`, `moe_routing`, `norm`, `quant`,
    /// `elementwise`, `memcpy`, `other`.
    pub category: &'static str,
    /// A `comm` kernel whose collective kind is `allreduce`.
    pub allreduce: bool,
    /// The collective kind of a `comm` kernel (`allreduce`, `allgather`, `other`).
    pub collective: Option<&'static str>,
}

impl NameInfo {
    fn is_comm(&self) -> bool {
        self.category == "comm"
    }
    fn is_compute(&self) -> bool {
        self.category != "comm" && self.category != "memcpy"
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepKind {
    Decode,
    Prefill,
}

/// The reductions of one step that the metrics need (so that huge runs need not keep activities).
#[derive(Debug, Clone)]
pub(crate) struct StepSummary {
    pub kind: StepKind,
    pub start: u64,
    pub wall: u64,
    pub busy: u64,
    pub kernel: u64,
    pub comm: u64,
    pub moe_gemm: u64,
    pub comm_union: u64,
    pub comm_compute_overlap: u64,
    /// Durations (ns) of the allreduce-class calls, in start order.
    pub allreduce_calls: Vec<u64>,
    /// Their transfer times (duration − wait), in the same order.
    pub allreduce_transfers: Vec<u64>,
    /// Kernel time of activities that are neither comm nor memcpy.
    pub compute: u64,
    /// Summed over the collectives (comm activities): time spent waiting for the last rank, and
    /// the rest of their duration.
    pub wait: u64,
    pub transfer: u64,
    /// Collectives, and how many of them this rank arrived at last (waited 0).
    pub collectives: u32,
    pub last_arrivals: u32,
    /// Per name id: (kernel time ns, calls).
    pub per_name: Vec<(u64, u32)>,
}

/// Merged union of half-open intervals, sorted.
fn union(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        if e <= s {
            continue;
        }
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn length(u: &[(u64, u64)]) -> u64 {
    u.iter().map(|(s, e)| e - s).sum()
}

/// Length of the intersection of two merged unions.
fn intersection(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        if e > s {
            total += e - s;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

pub(crate) fn summarize(kind: StepKind, acts: &[Activity], names: &[NameInfo]) -> StepSummary {
    let mut per_name = vec![(0u64, 0u32); names.len()];
    let start = acts.iter().map(|a| a.start).min().unwrap_or(0);
    let end = acts.iter().map(|a| a.end).max().unwrap_or(0);
    let (mut kernel, mut comm, mut moe_gemm) = (0, 0, 0);
    let mut all = Vec::with_capacity(acts.len());
    let mut comm_iv = Vec::new();
    let mut compute_iv = Vec::with_capacity(acts.len());
    let mut ar: Vec<(u64, u64, u64)> = Vec::new();
    let (mut compute, mut wait, mut collectives, mut last_arrivals) = (0, 0, 0, 0);
    for a in acts {
        let info = &names[a.name as usize];
        let d = a.end - a.start;
        kernel += d;
        per_name[a.name as usize].0 += d;
        per_name[a.name as usize].1 += 1;
        all.push((a.start, a.end));
        if info.is_comm() {
            comm += d;
            comm_iv.push((a.start, a.end));
            wait += a.wait;
            collectives += 1;
            last_arrivals += u32::from(a.wait == 0);
            if info.allreduce {
                ar.push((a.start, d, d - a.wait));
            }
        } else if info.is_compute() {
            compute += d;
            compute_iv.push((a.start, a.end));
        }
        if info.category == "moe_gemm" {
            moe_gemm += d;
        }
    }
    ar.sort_unstable();
    let comm_u = union(comm_iv);
    let compute_u = union(compute_iv);
    StepSummary {
        kind,
        start,
        wall: end - start,
        busy: length(&union(all)),
        kernel,
        comm,
        moe_gemm,
        comm_union: length(&comm_u),
        comm_compute_overlap: intersection(&comm_u, &compute_u),
        allreduce_calls: ar.iter().map(|c| c.1).collect(),
        allreduce_transfers: ar.iter().map(|c| c.2).collect(),
        compute,
        wait,
        transfer: comm - wait,
        collectives,
        last_arrivals,
        per_name,
    }
}

/// METRICS.md median: middle value, or mean of the two middle values.
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// numpy-default linear percentile.
pub(crate) fn percentile(v: &[f64], p: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let h = (s.len() - 1) as f64 * p / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(s.len() - 1);
    Some(s[lo] + (h - lo as f64) * (s[hi] - s[lo]))
}

/// The steps of one rank, in start order.
#[derive(Debug, Clone)]
pub(crate) struct RankSteps {
    pub rank: u32,
    pub steps: Vec<StepSummary>,
}

/// Indices of the kept decode steps and the number dropped (warm-up + outliers).
pub(crate) fn kept_decode(steps: &[StepSummary], warmup: usize) -> (Vec<usize>, usize) {
    let mut decode: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].kind == StepKind::Decode)
        .collect();
    decode.sort_by_key(|&i| steps[i].start);
    let total = decode.len();
    let rest: Vec<usize> = decode.into_iter().skip(warmup).collect();
    let walls: Vec<f64> = rest.iter().map(|&i| steps[i].wall as f64).collect();
    let kept = match median(&walls) {
        Some(m) => rest
            .into_iter()
            .filter(|&i| {
                let w = steps[i].wall as f64;
                !(w < 0.5 * m || w > 2.0 * m)
            })
            .collect(),
        None => Vec::new(),
    };
    let dropped = total - kept.len();
    (kept, dropped)
}

struct PerRank {
    rank: u32,
    value: f64,
    p90: Option<f64>,
}

fn metric(unit: &str, direction: &str, value: f64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("value".into(), json!(value));
    m.insert("unit".into(), json!(unit));
    m.insert("direction".into(), json!(direction));
    m
}

fn per_rank_obj(v: &[PerRank]) -> Value {
    let mut m = Map::new();
    for p in v {
        m.insert(p.rank.to_string(), json!(p.value));
    }
    Value::Object(m)
}

enum Combine {
    Max,
    Min,
}

/// A per-step-sampled metric: per rank the median of the samples, across ranks max or min.
fn sampled(
    out: &mut Map<String, Value>,
    key: &str,
    unit: &str,
    direction: &str,
    combine: Combine,
    with_p90: bool,
    per_rank_samples: Vec<(u32, Vec<f64>)>,
) {
    let per: Vec<PerRank> = per_rank_samples
        .into_iter()
        .filter_map(|(rank, s)| {
            median(&s).map(|value| PerRank {
                rank,
                value,
                p90: percentile(&s, 90.0),
            })
        })
        .collect();
    if per.is_empty() {
        return;
    }
    let values = per.iter().map(|p| p.value);
    let value = match combine {
        Combine::Max => values.fold(f64::NEG_INFINITY, f64::max),
        Combine::Min => values.fold(f64::INFINITY, f64::min),
    };
    let mut m = metric(unit, direction, value);
    if with_p90 {
        let p90 = per
            .iter()
            .filter_map(|p| p.p90)
            .fold(f64::NEG_INFINITY, f64::max);
        m.insert("p90".into(), json!(p90));
    }
    m.insert("per_rank".into(), per_rank_obj(&per));
    out.insert(key.into(), Value::Object(m));
}

/// A per-step-sampled tail metric: per rank the p90 of the samples, across ranks the max.
fn tail(out: &mut Map<String, Value>, key: &str, per_rank_samples: Vec<(u32, Vec<f64>)>) {
    let per: Vec<PerRank> = per_rank_samples
        .into_iter()
        .filter_map(|(rank, s)| {
            percentile(&s, 90.0).map(|value| PerRank {
                rank,
                value,
                p90: None,
            })
        })
        .collect();
    let Some(value) = per.iter().map(|p| p.value).reduce(f64::max) else {
        return;
    };
    let mut m = metric("ms", "lower", value);
    m.insert("per_rank".into(), per_rank_obj(&per));
    out.insert(key.into(), Value::Object(m));
}

/// `decode_stall_pct`: per rank, the decode steps after warm-up whose wall is above twice their
/// median, as a share of those steps; across ranks the max. `decode_stall_ms_per_step`: per rank,
/// the walls of those steps less one median each, summed, over the decode steps after warm-up
/// (ms); across ranks the max.
fn stall_pct(out: &mut Map<String, Value>, ranks: &[RankSteps], warmup: usize) {
    let (pct, lost): (Vec<PerRank>, Vec<PerRank>) = ranks
        .iter()
        .filter_map(|r| {
            let mut decode: Vec<&StepSummary> = r
                .steps
                .iter()
                .filter(|s| s.kind == StepKind::Decode)
                .collect();
            decode.sort_by_key(|s| s.start);
            let warmup = if decode.len() > warmup { warmup } else { 0 };
            let walls: Vec<f64> = decode[warmup..].iter().map(|s| s.wall as f64).collect();
            let m = median(&walls)?;
            let stalled: Vec<f64> = walls.iter().copied().filter(|&w| w > 2.0 * m).collect();
            let lost_ns: f64 = stalled.iter().map(|w| w - m).sum();
            let per = |value| PerRank {
                rank: r.rank,
                value,
                p90: None,
            };
            Some((
                per(stalled.len() as f64 / walls.len() as f64 * 100.0),
                per(lost_ns / 1e6 / walls.len() as f64),
            ))
        })
        .unzip();
    for (key, unit, per) in [
        (MetricId::DecodeStallPct.name(), "%", pct),
        (MetricId::DecodeStallMsPerStep.name(), "ms", lost),
    ] {
        let Some(value) = per.iter().map(|p| p.value).reduce(f64::max) else {
            return;
        };
        let mut m = metric(unit, "lower", value);
        m.insert("per_rank".into(), per_rank_obj(&per));
        out.insert(key.into(), Value::Object(m));
    }
}

/// Computes metrics, step counts and the breakdown. Returns the `metrics`, `steps` and
/// `breakdown` members of `truth.json`.
pub(crate) fn compute(
    names: &[NameInfo],
    ranks: &[RankSteps],
    warmup: usize,
) -> Map<String, Value> {
    let mut metrics = Map::new();
    let mut steps_obj = Map::new();
    let kept: Vec<Vec<usize>> = ranks
        .iter()
        .map(|r| {
            let (k, dropped) = kept_decode(&r.steps, warmup);
            let prefill = r
                .steps
                .iter()
                .filter(|s| s.kind == StepKind::Prefill)
                .count();
            steps_obj.insert(
                r.rank.to_string(),
                json!({"decode_kept": k.len(), "decode_dropped": dropped, "prefill": prefill}),
            );
            k
        })
        .collect();
    let kept_steps = |ri: usize| kept[ri].iter().map(move |&i| &ranks[ri].steps[i]);
    let prefill_steps = |ri: usize| {
        ranks[ri]
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::Prefill)
    };

    let samples =
        |f: &dyn Fn(&StepSummary) -> Option<f64>, prefill: bool| -> Vec<(u32, Vec<f64>)> {
            (0..ranks.len())
                .map(|ri| {
                    let v: Vec<f64> = if prefill {
                        prefill_steps(ri).filter_map(f).collect()
                    } else {
                        kept_steps(ri).filter_map(f).collect()
                    };
                    (ranks[ri].rank, v)
                })
                .collect()
        };
    let wall_ms = |s: &StepSummary| Some(s.wall as f64 / 1e6);
    let util = |s: &StepSummary| (s.wall > 0).then(|| s.busy as f64 / s.wall as f64 * 100.0);
    let comm_pct =
        |s: &StepSummary| (s.kernel > 0).then(|| s.comm as f64 / s.kernel as f64 * 100.0);

    sampled(
        &mut metrics,
        MetricId::DecodeStepMs.name(),
        "ms",
        "lower",
        Combine::Max,
        true,
        samples(&wall_ms, false),
    );
    tail(
        &mut metrics,
        MetricId::DecodeStepP90Ms.name(),
        samples(&wall_ms, false),
    );
    stall_pct(&mut metrics, ranks, warmup);
    sampled(
        &mut metrics,
        MetricId::GpuUtilPct.name(),
        "%",
        "higher",
        Combine::Min,
        false,
        samples(&util, false),
    );
    let any_comm = (0..ranks.len()).any(|ri| kept_steps(ri).any(|s| s.comm > 0));
    if any_comm {
        sampled(
            &mut metrics,
            MetricId::CommPct.name(),
            "%",
            "lower",
            Combine::Max,
            false,
            samples(&comm_pct, false),
        );
    }

    // other_pct: kernel time of names whose category is `other` (the scenarios have none; a kernel
    // renamed by `unknown-moe` keeps its true category here).
    let other_ids: Vec<usize> = (0..names.len())
        .filter(|&n| names[n].category == "other")
        .collect();
    let other_pct = |s: &StepSummary| {
        (s.kernel > 0).then(|| {
            let other: u64 = other_ids.iter().map(|&n| s.per_name[n].0).sum();
            other as f64 / s.kernel as f64 * 100.0
        })
    };
    sampled(
        &mut metrics,
        MetricId::OtherPct.name(),
        "%",
        "lower",
        Combine::Max,
        false,
        samples(&other_pct, false),
    );

    // allreduce_us: every allreduce-class call of kept decode steps, all ranks pooled.
    let mut pooled = Vec::new();
    let mut rank_means = Vec::new();
    for (ri, r) in ranks.iter().enumerate() {
        let calls: Vec<f64> = kept_steps(ri)
            .flat_map(|s| s.allreduce_calls.iter().map(|&d| d as f64 / 1e3))
            .collect();
        if !calls.is_empty() {
            rank_means.push(PerRank {
                rank: r.rank,
                value: calls.iter().sum::<f64>() / calls.len() as f64,
                p90: None,
            });
        }
        pooled.extend(calls);
    }
    if !pooled.is_empty() {
        let mean = pooled.iter().sum::<f64>() / pooled.len() as f64;
        let mut m = metric("us", "lower", mean);
        m.insert("p50".into(), json!(percentile(&pooled, 50.0)));
        m.insert("p99".into(), json!(percentile(&pooled, 99.0)));
        m.insert("calls".into(), json!(pooled.len()));
        metrics.insert(MetricId::AllreduceUs.name().into(), Value::Object(m));
    }
    if rank_means.len() >= 2 {
        let max = rank_means
            .iter()
            .map(|p| p.value)
            .fold(f64::NEG_INFINITY, f64::max);
        let min = rank_means
            .iter()
            .map(|p| p.value)
            .fold(f64::INFINITY, f64::min);
        if min > 0.0 {
            let mut m = metric("ratio", "lower", max / min);
            m.insert("per_rank".into(), per_rank_obj(&rank_means));
            metrics.insert(MetricId::AllreduceRankRatio.name().into(), Value::Object(m));
        }
    }

    // moe_us_per_layer, with the counted-layers rule.
    let routing: Vec<usize> = (0..names.len())
        .filter(|&n| names[n].category == "moe_routing")
        .collect();
    let mut moe_layers = Map::new();
    let moe_samples: Vec<(u32, Vec<f64>)> = (0..ranks.len())
        .filter_map(|ri| {
            let layers = routing
                .iter()
                .filter_map(|&n| {
                    let calls: Vec<f64> =
                        kept_steps(ri).map(|s| f64::from(s.per_name[n].1)).collect();
                    median(&calls)
                })
                .filter(|&m| m >= 1.0)
                .fold(f64::INFINITY, f64::min);
            if !layers.is_finite() {
                return None;
            }
            moe_layers.insert(ranks[ri].rank.to_string(), json!(layers));
            let v = kept_steps(ri)
                .map(|s| s.moe_gemm as f64 / 1e3 / layers)
                .collect();
            Some((ranks[ri].rank, v))
        })
        .collect();
    sampled(
        &mut metrics,
        MetricId::MoeUsPerLayer.name(),
        "us",
        "lower",
        Combine::Max,
        false,
        moe_samples,
    );
    if let Some(Value::Object(m)) = metrics.get_mut(MetricId::MoeUsPerLayer.name()) {
        m.insert("moe_layers".into(), Value::Object(moe_layers));
    }

    // Waiting in collectives, on the decode steps every rank kept (matched by their order).
    let matched = matched_steps(ranks, &kept);
    let wait_ms = |ri: usize, j: usize| ranks[ri].steps[matched[j][ri]].wait as f64 / 1e6;
    if !matched.is_empty() {
        // rank_skew_ms: per rank its median wait per step; the run value is, per step, the wait
        // of the rank that waits most minus that of the rank that waits least (by those medians,
        // ties to the lower rank), the median over steps.
        let per: Vec<PerRank> = (0..ranks.len())
            .map(|ri| PerRank {
                rank: ranks[ri].rank,
                value: median(
                    &(0..matched.len())
                        .map(|j| wait_ms(ri, j))
                        .collect::<Vec<_>>(),
                )
                .unwrap_or(0.0),
                p90: None,
            })
            .collect();
        let most = (0..per.len()).fold(0, |a, i| if per[i].value > per[a].value { i } else { a });
        let least = (0..per.len()).fold(0, |a, i| if per[i].value < per[a].value { i } else { a });
        let skew: Vec<f64> = (0..matched.len())
            .map(|j| wait_ms(most, j) - wait_ms(least, j))
            .collect();
        let mut m = metric("ms", "lower", median(&skew).unwrap_or(0.0));
        m.insert("per_rank".into(), per_rank_obj(&per));
        metrics.insert(MetricId::RankSkewMs.name().into(), Value::Object(m));

        // allreduce_transfer_us: every allreduce-class call net of its wait, all ranks pooled.
        let transfers: Vec<f64> = matched
            .iter()
            .flat_map(|m| {
                m.iter().enumerate().flat_map(|(ri, &i)| {
                    ranks[ri].steps[i]
                        .allreduce_transfers
                        .iter()
                        .map(|&d| d as f64 / 1e3)
                })
            })
            .collect();
        if !transfers.is_empty() {
            let mean = transfers.iter().sum::<f64>() / transfers.len() as f64;
            let mut m = metric("us", "lower", mean);
            m.insert("p50".into(), json!(percentile(&transfers, 50.0)));
            m.insert("p99".into(), json!(percentile(&transfers, 99.0)));
            m.insert("calls".into(), json!(transfers.len()));
            metrics.insert(
                MetricId::AllreduceTransferUs.name().into(),
                Value::Object(m),
            );
        }
    }

    let overlap = |s: &StepSummary| {
        (s.comm_union > 0).then(|| s.comm_compute_overlap as f64 / s.comm_union as f64 * 100.0)
    };
    sampled(
        &mut metrics,
        MetricId::OverlapPct.name(),
        "%",
        "higher",
        Combine::Min,
        false,
        samples(&overlap, false),
    );

    sampled(
        &mut metrics,
        MetricId::PrefillStepMs.name(),
        "ms",
        "lower",
        Combine::Max,
        false,
        samples(&wall_ms, true),
    );
    sampled(
        &mut metrics,
        MetricId::PrefillGpuUtilPct.name(),
        "%",
        "higher",
        Combine::Min,
        false,
        samples(&util, true),
    );
    let any_prefill_comm = (0..ranks.len()).any(|ri| prefill_steps(ri).any(|s| s.comm > 0));
    if any_prefill_comm {
        sampled(
            &mut metrics,
            MetricId::PrefillCommPct.name(),
            "%",
            "lower",
            Combine::Max,
            false,
            samples(&comm_pct, true),
        );
    }

    // Breakdown: per rank, mean over kept decode steps; run = mean over ranks with kept steps.
    let mut name_ms = vec![0f64; names.len()];
    let mut name_calls = vec![0f64; names.len()];
    let mut nranks = 0usize;
    for (ri, k) in kept.iter().enumerate() {
        let n = k.len();
        if n == 0 {
            continue;
        }
        nranks += 1;
        let mut time = vec![0u64; names.len()];
        let mut calls = vec![0u64; names.len()];
        for s in kept_steps(ri) {
            for (id, &(t, c)) in s.per_name.iter().enumerate() {
                time[id] += t;
                calls[id] += u64::from(c);
            }
        }
        for id in 0..names.len() {
            name_ms[id] += time[id] as f64 / 1e6 / n as f64;
            name_calls[id] += calls[id] as f64 / n as f64;
        }
    }
    let mut breakdown = Map::new();
    if nranks > 0 {
        for v in name_ms.iter_mut().chain(name_calls.iter_mut()) {
            *v /= nranks as f64;
        }
        let total: f64 = name_ms.iter().sum();
        let pct = |x: f64| if total > 0.0 { x / total * 100.0 } else { 0.0 };
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
        let mut ids: Vec<usize> = (0..names.len())
            .filter(|&id| name_calls[id] > 0.0)
            .collect();
        ids.sort_by(|&a, &b| {
            name_ms[b]
                .total_cmp(&name_ms[a])
                .then(names[a].name.cmp(&names[b].name))
        });
        let kernels: Vec<Value> = ids
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
        breakdown.insert("categories".into(), Value::Object(cat_obj));
        breakdown.insert("kernels".into(), Value::Array(kernels));
    }

    let mut out = Map::new();
    out.insert("metrics".into(), Value::Object(metrics));
    out.insert("steps".into(), Value::Object(steps_obj));
    out.insert("breakdown".into(), Value::Object(breakdown));
    out.insert("balance".into(), balance(ranks, &matched));
    out
}

/// The decode steps kept on every rank, matched by their order among each rank's decode steps:
/// per matched step, the index of that step in each rank's `steps`.
pub(crate) fn matched_steps(ranks: &[RankSteps], kept: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let ordered: Vec<Vec<usize>> = ranks
        .iter()
        .map(|r| {
            let mut d: Vec<usize> = (0..r.steps.len())
                .filter(|&i| r.steps[i].kind == StepKind::Decode)
                .collect();
            d.sort_by_key(|&i| r.steps[i].start);
            d
        })
        .collect();
    let is_kept: Vec<Vec<bool>> = ranks
        .iter()
        .zip(kept)
        .map(|(r, k)| {
            let mut v = vec![false; r.steps.len()];
            for &i in k {
                v[i] = true;
            }
            v
        })
        .collect();
    let n = ordered.iter().map(Vec::len).min().unwrap_or(0);
    (0..n)
        .filter(|&j| (0..ranks.len()).all(|ri| is_kept[ri][ordered[ri][j]]))
        .map(|j| (0..ranks.len()).map(|ri| ordered[ri][j]).collect())
        .collect()
}

/// `balance` of truth.json: per rank, on the matched steps, compute (non-comm kernel time), comm,
/// wait and transfer per step (medians, and every step in order), and how often it arrived last
/// at a collective.
fn balance(ranks: &[RankSteps], matched: &[Vec<usize>]) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<NameInfo> {
        vec![
            NameInfo {
                name: "ar".into(),
                category: "comm",
                allreduce: true,
                collective: Some("allreduce"),
            },
            NameInfo {
                name: "gemm".into(),
                category: "moe_gemm",
                allreduce: false,
                collective: None,
            },
            NameInfo {
                name: "topk".into(),
                category: "moe_routing",
                allreduce: false,
                collective: None,
            },
            NameInfo {
                name: "cpy".into(),
                category: "memcpy",
                allreduce: false,
                collective: None,
            },
        ]
    }

    #[test]
    fn medians_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 90.0), Some(3.7));
        assert_eq!(percentile(&[5.0], 99.0), Some(5.0));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn step_summary_unions_and_overlap() {
        let n = names();
        let acts = [
            Activity {
                start: 0,
                end: 100,
                name: 1,
                wait: 0,
            },
            Activity {
                start: 50,
                end: 150,
                name: 0,
                wait: 30,
            },
            Activity {
                start: 140,
                end: 200,
                name: 0,
                wait: 0,
            },
            Activity {
                start: 300,
                end: 310,
                name: 3,
                wait: 0,
            },
            Activity {
                start: 310,
                end: 320,
                name: 2,
                wait: 0,
            },
        ];
        let s = summarize(StepKind::Decode, &acts, &n);
        assert_eq!(s.wall, 320);
        assert_eq!(s.busy, 200 + 20);
        assert_eq!(s.kernel, 100 + 100 + 60 + 10 + 10);
        assert_eq!(s.comm, 160);
        assert_eq!(s.comm_union, 150);
        assert_eq!(s.comm_compute_overlap, 50);
        assert_eq!(s.allreduce_calls, vec![100, 60]);
        assert_eq!(s.allreduce_transfers, vec![70, 60]);
        assert_eq!((s.compute, s.wait, s.transfer), (110, 30, 130));
        assert_eq!((s.collectives, s.last_arrivals), (2, 1));
        assert_eq!(s.moe_gemm, 100);
    }

    #[test]
    fn warmup_and_outliers() {
        let mk = |start: u64, wall: u64| StepSummary {
            kind: StepKind::Decode,
            start,
            wall,
            busy: wall,
            kernel: wall,
            comm: 0,
            moe_gemm: 0,
            comm_union: 0,
            comm_compute_overlap: 0,
            allreduce_calls: vec![],
            allreduce_transfers: vec![],
            compute: 0,
            wait: 0,
            transfer: 0,
            collectives: 0,
            last_arrivals: 0,
            per_name: vec![],
        };
        let steps: Vec<StepSummary> = [100, 100, 10, 20, 21, 22, 50, 9]
            .iter()
            .enumerate()
            .map(|(i, &w)| mk(i as u64 * 1000, w))
            .collect();
        let (kept, dropped) = kept_decode(&steps, 2);
        // rest: 10 20 21 22 50 9, median 20.5: below 10.25 (10, 9) or above 41 (50) dropped
        assert_eq!(kept, vec![3, 4, 5]);
        assert_eq!(dropped, 5);
    }
}
