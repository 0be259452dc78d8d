//! Overlap: the streams of each rank and what runs on them, communication time overlapped by
//! compute on any stream (|∪comm ∩ ∪compute| / |∪comm|, `docs/METRICS.md`), and a verdict.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{ns_to_ms, Context, Scope};
use crate::metrics::intervals::{intersection_len, total_len, union_in_place, Interval};
use crate::metrics::{MetricId, MetricMap};
use crate::taxonomy::Category;

/// Below this overlap (%) communication is called near-zero overlapped.
pub(crate) const NEAR_ZERO_PCT: f64 = 5.0;
/// At or above this overlap (%) communication is called mostly hidden.
pub(crate) const MOSTLY_PCT: f64 = 50.0;

/// The overlap verdict in one word; the report says it in a sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No comm kernel in scope.
    NoComm,
    /// Every rank runs all its kernels on one stream: zero overlap by construction.
    SingleStream,
    /// Several streams, but comm is (almost) never overlapped (< 5 % on the lowest rank).
    NearZero,
    /// Some of the comm time is overlapped (5 % to 50 % on the lowest rank).
    Partial,
    /// Most comm time is overlapped (≥ 50 % on the lowest rank).
    Mostly,
}

#[derive(Debug, Clone, Serialize)]
pub struct OverlapSection {
    pub scope: Scope,
    pub verdict: Verdict,
    /// The lowest rank's overlap, %.
    pub min_overlap_pct: Option<f64>,
    pub ranks: Vec<RankOverlap>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RankOverlap {
    pub rank: u32,
    pub label: String,
    pub streams: Vec<StreamUse>,
    /// Streams that carry comm kernels.
    pub comm_streams: Vec<u64>,
    /// |∪comm| and |∪comm ∩ ∪compute|: per step (mean) in decode, whole trace otherwise, ms.
    pub comm_union_ms: f64,
    pub overlap_ms: f64,
    /// Decode: median of the per-step overlap (`overlap_pct` of the rank); whole trace: the ratio.
    pub overlap_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StreamUse {
    pub stream: u64,
    /// Activities on the stream in scope (all steps, or the whole trace).
    pub kernels: u64,
    /// Per decode step (decode scope only).
    pub kernels_per_step: Option<f64>,
    /// Kernel time, per step (decode) or whole trace, ms.
    pub ms: f64,
    pub comm_calls: u64,
    /// Per decode step (decode scope only).
    pub comm_calls_per_step: Option<f64>,
    /// Categories by time on this stream, most first (at most 3).
    pub top_categories: Vec<Category>,
    /// Activities of this stream that run while another stream of the rank is busy.
    pub overlapping_other_streams: u64,
}

/// Whole-trace figures of one rank, exact nanoseconds (for comparison with other tools).
#[derive(Debug, Clone, Serialize)]
pub struct WholeTraceRank {
    pub rank: u32,
    pub label: String,
    pub activities: u64,
    pub streams: usize,
    /// Last end minus first start of all GPU activities.
    pub span_ns: i64,
    /// |∪ all activities|.
    pub busy_ns: i64,
    /// span − busy.
    pub idle_ns: i64,
    /// Sum of durations of all activities.
    pub kernel_ns: i64,
    /// Sum of durations of comm kernels.
    pub comm_kernel_ns: i64,
    pub comm_union_ns: i64,
    pub compute_union_ns: i64,
    /// |∪comm ∩ ∪compute|.
    pub overlap_ns: i64,
    /// overlap / |∪comm| × 100; `None` without comm.
    pub overlap_pct: Option<f64>,
}

struct StreamAcc {
    intervals: Vec<Interval>,
    ns: i64,
    comm_calls: u64,
    by_category: BTreeMap<Category, i64>,
}

/// Per stream of one set of activities: use, and how many overlap another stream.
fn streams(ctx: &Context<'_>, acts: &[(usize, u32)], units: usize) -> Vec<StreamUse> {
    let mut per_stream: BTreeMap<u64, StreamAcc> = BTreeMap::new();
    for &(t, i) in acts {
        let Some(a) = ctx.activity(t, i) else {
            continue;
        };
        let s = per_stream.entry(a.stream()).or_insert_with(|| StreamAcc {
            intervals: Vec::new(),
            ns: 0,
            comm_calls: 0,
            by_category: BTreeMap::new(),
        });
        s.intervals.push((a.ts, a.end()));
        s.ns += a.dur;
        let category = ctx.category(t, a);
        if category == Category::Comm {
            s.comm_calls += 1;
        }
        *s.by_category.entry(category).or_default() += a.dur;
    }
    let unions: BTreeMap<u64, Vec<Interval>> = per_stream
        .iter()
        .map(|(&s, acc)| {
            let mut v = acc.intervals.clone();
            union_in_place(&mut v);
            (s, v)
        })
        .collect();
    let per_unit = |x: f64| {
        if ctx.scope == Scope::Decode && units > 0 {
            x / units as f64
        } else {
            x
        }
    };
    per_stream
        .iter()
        .map(|(&stream, acc)| {
            let mut others: Vec<Interval> = unions
                .iter()
                .filter(|(&s, _)| s != stream)
                .flat_map(|(_, v)| v.iter().copied())
                .collect();
            union_in_place(&mut others);
            let overlapping = acc
                .intervals
                .iter()
                .filter(|&&(s, e)| {
                    let k = others.partition_point(|o| o.1 <= s);
                    others.get(k).is_some_and(|o| o.0 < e)
                })
                .count() as u64;
            let mut cats: Vec<(Category, i64)> =
                acc.by_category.iter().map(|(&c, &ns)| (c, ns)).collect();
            cats.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            StreamUse {
                stream,
                kernels: acc.intervals.len() as u64,
                kernels_per_step: (ctx.scope == Scope::Decode && units > 0)
                    .then(|| acc.intervals.len() as f64 / units as f64),
                ms: per_unit(ns_to_ms(acc.ns)),
                comm_calls: acc.comm_calls,
                comm_calls_per_step: (ctx.scope == Scope::Decode && units > 0)
                    .then(|| acc.comm_calls as f64 / units as f64),
                top_categories: cats.into_iter().take(3).map(|(c, _)| c).collect(),
                overlapping_other_streams: overlapping,
            }
        })
        .collect()
}

/// Unions of all, comm and compute activities.
fn unions(ctx: &Context<'_>, acts: &[(usize, u32)]) -> [Vec<Interval>; 3] {
    let (mut all, mut comm, mut compute) = (Vec::new(), Vec::new(), Vec::new());
    for &(t, i) in acts {
        let Some(a) = ctx.activity(t, i) else {
            continue;
        };
        let iv = (a.ts, a.end());
        all.push(iv);
        match ctx.category(t, a) {
            Category::Comm => comm.push(iv),
            c if c.is_compute() => compute.push(iv),
            _ => {}
        }
    }
    union_in_place(&mut all);
    union_in_place(&mut comm);
    union_in_place(&mut compute);
    [all, comm, compute]
}

/// Overlap per rank; in decode scope each rank's share is the registry's `overlap_pct` for the
/// rank, read from `metrics` (the extraction's), not recomputed.
pub(crate) fn overlap_section(ctx: &Context<'_>, metrics: &MetricMap) -> OverlapSection {
    let mut ranks = Vec::new();
    for rs in ctx.rank_steps {
        let (acts, units) = ctx.rank_activities(rs);
        if units == 0 {
            continue;
        }
        let streams = streams(ctx, &acts, units);
        let comm_streams = streams
            .iter()
            .filter(|s| s.comm_calls > 0)
            .map(|s| s.stream)
            .collect();
        let (comm_union_ms, overlap_ms, overlap_pct) = match ctx.scope {
            Scope::Decode => {
                let (figures, _) = ctx.decode_figures(rs);
                let n = figures.len().max(1) as f64;
                let registry = metrics.get(&MetricId::OverlapPct);
                (
                    figures
                        .iter()
                        .map(|f| ns_to_ms(f.comm_union_ns))
                        .fold(0.0, |a, b| a + b)
                        / n,
                    figures
                        .iter()
                        .map(|f| ns_to_ms(f.overlap_ns))
                        .fold(0.0, |a, b| a + b)
                        / n,
                    registry.and_then(|m| m.per_rank.get(&rs.rank.index).copied()),
                )
            }
            Scope::WholeTrace => {
                let [_, comm, compute] = unions(ctx, &acts);
                let (c, o) = (total_len(&comm), intersection_len(&comm, &compute));
                (
                    ns_to_ms(c),
                    ns_to_ms(o),
                    (c > 0).then(|| o as f64 / c as f64 * 100.0),
                )
            }
        };
        ranks.push(RankOverlap {
            rank: rs.rank.index,
            label: rs.rank.label.clone(),
            streams,
            comm_streams,
            comm_union_ms,
            overlap_ms,
            overlap_pct,
        });
    }
    let min_overlap_pct = ranks
        .iter()
        .filter_map(|r| r.overlap_pct)
        .min_by(f64::total_cmp);
    let any_comm = ranks.iter().any(|r| !r.comm_streams.is_empty());
    let single_stream = ranks.iter().all(|r| r.streams.len() <= 1);
    let verdict = match min_overlap_pct {
        _ if !any_comm => Verdict::NoComm,
        _ if single_stream => Verdict::SingleStream,
        Some(p) if p >= MOSTLY_PCT => Verdict::Mostly,
        Some(p) if p >= NEAR_ZERO_PCT => Verdict::Partial,
        _ => Verdict::NearZero,
    };
    OverlapSection {
        scope: ctx.scope,
        verdict,
        min_overlap_pct,
        ranks,
    }
}

pub(crate) fn whole_trace(ctx: &Context<'_>) -> Vec<WholeTraceRank> {
    let whole = Context {
        run: ctx.run,
        classes: ctx.classes,
        rank_steps: ctx.rank_steps,
        scope: Scope::WholeTrace,
    };
    ctx.rank_steps
        .iter()
        .map(|rs| {
            let (acts, _) = whole.rank_activities(rs);
            let [all, comm, compute] = unions(&whole, &acts);
            let (mut first, mut last, mut kernel_ns, mut comm_kernel_ns) =
                (i64::MAX, i64::MIN, 0i64, 0i64);
            let mut stream_ids = std::collections::BTreeSet::new();
            for &(t, i) in &acts {
                if let Some(a) = whole.activity(t, i) {
                    first = first.min(a.ts);
                    last = last.max(a.end());
                    kernel_ns += a.dur;
                    stream_ids.insert(a.stream());
                    if whole.category(t, a) == Category::Comm {
                        comm_kernel_ns += a.dur;
                    }
                }
            }
            let span_ns = if acts.is_empty() { 0 } else { last - first };
            let busy_ns = total_len(&all);
            let comm_union_ns = total_len(&comm);
            let overlap_ns = intersection_len(&comm, &compute);
            WholeTraceRank {
                rank: rs.rank.index,
                label: rs.rank.label.clone(),
                activities: acts.len() as u64,
                streams: stream_ids.len(),
                span_ns,
                busy_ns,
                idle_ns: span_ns - busy_ns,
                kernel_ns,
                comm_kernel_ns,
                comm_union_ns,
                compute_union_ns: total_len(&compute),
                overlap_ns,
                overlap_pct: (comm_union_ns > 0)
                    .then(|| overlap_ns as f64 / comm_union_ns as f64 * 100.0),
            }
        })
        .collect()
}
