//! Ground truth for synthetic traces: the metrics of `docs/METRICS.md`, computed from the exact
//! integer-nanosecond intervals the generator placed and the category it assigned to each kernel.
//!
//! Self-contained on purpose: it depends on no other module of the crate (not the reader, not the
//! taxonomy, not the metric code it is the reference for), only on `serde_json` for the output and
//! on [`MetricId`](crate::metrics::MetricId) for the metrics' names (never their definitions).

use serde_json::{json, Map, Value};

mod breakdown;
mod iterations;
mod metrics;

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
    /// `step[MIXED ...]`: in no decode or prefill figure.
    Mixed,
    /// `step[IDLE]` and other modes that are no forward of the loop.
    OtherLabel,
}

/// The parts of a speculative-decoding iteration (one decode step): the draft model's forwards and
/// the target's verify, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpecParts {
    /// Kernel time (sum of durations) of the draft forwards and of the verify.
    pub draft_kernel: u64,
    pub verify_kernel: u64,
    /// The draft forwards' own time (the union of their spans) and the verify's wall.
    pub draft: u64,
    pub verify: u64,
}

/// The reductions of one step that the metrics need (so that huge runs need not keep activities).
#[derive(Debug, Clone)]
pub(crate) struct StepSummary {
    pub kind: StepKind,
    pub start: u64,
    /// The last end of its activities.
    pub end: u64,
    /// The forward's time: `end - start`; for a speculative iteration, the union of its forwards'
    /// spans (the gaps between draft and verify left out).
    pub wall: u64,
    /// A speculative iteration's parts.
    pub spec: Option<SpecParts>,
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
        end,
        wall: end - start,
        spec: None,
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
    /// Kernel time in no step (a set-up burst), ns.
    pub unassigned_ns: u64,
    /// The batch the decode steps' annotations say, where they carry one.
    pub batch: Option<u32>,
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

/// Computes metrics, step counts and the breakdown. Returns the `metrics`, `steps`,
/// `breakdown` and `balance` members of `truth.json`.
pub(crate) fn compute(
    names: &[NameInfo],
    ranks: &[RankSteps],
    warmup: usize,
) -> Map<String, Value> {
    let (kept, step_counts) = step_counts(ranks, warmup);
    let steps = metrics::Steps { ranks, kept: &kept };
    let matched = matched_steps(ranks, &kept);
    let mut out = Map::new();
    out.insert(
        "metrics".into(),
        Value::Object(metrics::metrics(&steps, names, &matched, warmup)),
    );
    out.insert("steps".into(), Value::Object(step_counts));
    out.insert(
        "breakdown".into(),
        Value::Object(breakdown::breakdown(&steps, names)),
    );
    out.insert("balance".into(), breakdown::balance(ranks, &matched));
    out
}

/// Per rank, the indices of its kept decode steps ([`kept_decode`]), and the `steps` member of
/// `truth.json`: decode steps kept and dropped, and prefill steps.
fn step_counts(ranks: &[RankSteps], warmup: usize) -> (Vec<Vec<usize>>, Map<String, Value>) {
    let mut counts = Map::new();
    let kept = ranks
        .iter()
        .map(|r| {
            let (k, dropped) = kept_decode(&r.steps, warmup);
            let prefill = r
                .steps
                .iter()
                .filter(|s| s.kind == StepKind::Prefill)
                .count();
            counts.insert(
                r.rank.to_string(),
                json!({"decode_kept": k.len(), "decode_dropped": dropped, "prefill": prefill}),
            );
            k
        })
        .collect();
    (kept, counts)
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
            end: start + wall,
            wall,
            spec: None,
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
