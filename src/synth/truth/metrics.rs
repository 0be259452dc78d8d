//! The `metrics` member of `truth.json`, one stage per group of metrics: step time, shares of the
//! step, allreduce, MoE, waiting in collectives, overlap and prefill. Each stage inserts what it
//! computes into the map; a metric with no sample is left out.

use serde_json::{json, Map, Value};

use super::{median, percentile, NameInfo, RankSteps, StepKind, StepSummary};
use crate::metrics::MetricId;

/// The run's steps as the metrics see them: every rank's steps and, per rank, the indices of
/// its kept decode steps.
pub(super) struct Steps<'a> {
    pub ranks: &'a [RankSteps],
    pub kept: &'a [Vec<usize>],
}

impl<'a> Steps<'a> {
    /// The kept decode steps of rank index `ri`.
    pub(super) fn decode(&self, ri: usize) -> impl Iterator<Item = &'a StepSummary> + '_ {
        self.kept[ri].iter().map(move |&i| &self.ranks[ri].steps[i])
    }

    /// Every step of a kind of rank index `ri` (prefill, mixed).
    fn every(&self, ri: usize, kind: StepKind) -> impl Iterator<Item = &'a StepSummary> {
        self.ranks[ri].steps.iter().filter(move |s| s.kind == kind)
    }

    /// Per rank, `f` of each step of the phase (kept decode steps, or every step of another
    /// kind).
    fn samples(
        &self,
        f: &dyn Fn(&StepSummary) -> Option<f64>,
        phase: StepKind,
    ) -> Vec<(u32, Vec<f64>)> {
        (0..self.ranks.len())
            .map(|ri| {
                let v: Vec<f64> = if phase == StepKind::Decode {
                    self.decode(ri).filter_map(f).collect()
                } else {
                    self.every(ri, phase).filter_map(f).collect()
                };
                (self.ranks[ri].rank, v)
            })
            .collect()
    }

    /// Whether any rank has a step of the phase with communication.
    fn any_comm(&self, phase: StepKind) -> bool {
        (0..self.ranks.len()).any(|ri| {
            if phase == StepKind::Decode {
                self.decode(ri).any(|s| s.comm > 0)
            } else {
                self.every(ri, phase).any(|s| s.comm > 0)
            }
        })
    }
}

/// Every metric: the `metrics` member of `truth.json`. `matched` are the decode steps every rank
/// kept ([`super::matched_steps`]).
pub(super) fn metrics(
    steps: &Steps<'_>,
    names: &[NameInfo],
    matched: &[Vec<usize>],
    warmup: usize,
) -> Map<String, Value> {
    let mut out = Map::new();
    step_time(&mut out, steps, warmup);
    shares(&mut out, steps, names);
    speculative(&mut out, steps);
    allreduce(&mut out, steps);
    moe(&mut out, steps, names);
    waits(&mut out, steps.ranks, matched);
    overlap(&mut out, steps);
    prefill(&mut out, steps);
    super::iterations::metrics(&mut out, steps, warmup);
    out
}

fn wall_ms(s: &StepSummary) -> Option<f64> {
    Some(s.wall as f64 / 1e6)
}

fn util(s: &StepSummary) -> Option<f64> {
    (s.wall > 0).then(|| s.busy as f64 / s.wall as f64 * 100.0)
}

fn comm_share(s: &StepSummary) -> Option<f64> {
    (s.kernel > 0).then(|| s.comm as f64 / s.kernel as f64 * 100.0)
}

/// `decode_step_ms` (with its p90), `decode_step_p90_ms`, `decode_stall_pct` and
/// `decode_stall_ms_per_step`.
fn step_time(out: &mut Map<String, Value>, steps: &Steps<'_>, warmup: usize) {
    let id = MetricId::DecodeStepMs;
    sampled(
        out,
        id,
        "ms",
        "lower",
        Combine::Max,
        true,
        steps.samples(&wall_ms, StepKind::Decode),
    );
    tail(
        out,
        MetricId::DecodeStepP90Ms,
        steps.samples(&wall_ms, StepKind::Decode),
    );
    stall_pct(out, steps.ranks, warmup);
}

/// A per-step figure of a step.
type Sample = dyn Fn(&StepSummary) -> Option<f64>;

/// `spec_draft_pct`, `spec_draft_ms` and `spec_verify_ms`: the draft and verify parts of the
/// kept speculative iterations (absent without any).
fn speculative(out: &mut Map<String, Value>, steps: &Steps<'_>) {
    let pct = |s: &StepSummary| {
        let p = s.spec?;
        let total = p.draft_kernel + p.verify_kernel;
        (total > 0).then(|| p.draft_kernel as f64 / total as f64 * 100.0)
    };
    let draft = |s: &StepSummary| s.spec.map(|p| p.draft as f64 / 1e6);
    let verify = |s: &StepSummary| s.spec.map(|p| p.verify as f64 / 1e6);
    let parts: [(MetricId, &str, &Sample); 3] = [
        (MetricId::SpecDraftPct, "%", &pct),
        (MetricId::SpecDraftMs, "ms", &draft),
        (MetricId::SpecVerifyMs, "ms", &verify),
    ];
    for (id, unit, f) in parts {
        let samples = steps.samples(f, StepKind::Decode);
        sampled(out, id, unit, "lower", Combine::Max, false, samples);
    }
}

/// Shares of the decode step: `gpu_util_pct`, `comm_pct` (where any step communicates) and
/// `other_pct`.
fn shares(out: &mut Map<String, Value>, steps: &Steps<'_>, names: &[NameInfo]) {
    util_and_comm(out, steps, StepKind::Decode);
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
    let other = steps.samples(&other_pct, StepKind::Decode);
    sampled(
        out,
        MetricId::OtherPct,
        "%",
        "lower",
        Combine::Max,
        false,
        other,
    );
}

/// `allreduce_us`: every allreduce-class call of kept decode steps, all ranks pooled.
/// `allreduce_rank_ratio`: the largest over the smallest per-rank mean call (two ranks or more).
fn allreduce(out: &mut Map<String, Value>, steps: &Steps<'_>) {
    let mut pooled = Vec::new();
    let mut rank_means = Vec::new();
    for (ri, r) in steps.ranks.iter().enumerate() {
        let calls: Vec<f64> = steps
            .decode(ri)
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
    pooled_calls(out, MetricId::AllreduceUs, &pooled);
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
            out.insert(MetricId::AllreduceRankRatio.name().into(), Value::Object(m));
        }
    }
}

/// `moe_us_per_layer`, with the counted-layers rule: per rank, the layers are the fewest calls
/// per step (median over kept steps) of a routing kernel called at least once.
fn moe(out: &mut Map<String, Value>, steps: &Steps<'_>, names: &[NameInfo]) {
    let routing: Vec<usize> = (0..names.len())
        .filter(|&n| names[n].category == "moe_routing")
        .collect();
    let mut moe_layers = Map::new();
    let moe_samples: Vec<(u32, Vec<f64>)> = (0..steps.ranks.len())
        .filter_map(|ri| {
            let layers = routing
                .iter()
                .filter_map(|&n| {
                    let calls: Vec<f64> = steps
                        .decode(ri)
                        .map(|s| f64::from(s.per_name[n].1))
                        .collect();
                    median(&calls)
                })
                .filter(|&m| m >= 1.0)
                .fold(f64::INFINITY, f64::min);
            if !layers.is_finite() {
                return None;
            }
            let rank = steps.ranks[ri].rank;
            moe_layers.insert(rank.to_string(), json!(layers));
            let v = steps
                .decode(ri)
                .map(|s| s.moe_gemm as f64 / 1e3 / layers)
                .collect();
            Some((rank, v))
        })
        .collect();
    let id = MetricId::MoeUsPerLayer;
    sampled(out, id, "us", "lower", Combine::Max, false, moe_samples);
    if let Some(Value::Object(m)) = out.get_mut(id.name()) {
        m.insert("moe_layers".into(), Value::Object(moe_layers));
    }
}

/// Waiting in collectives, on the decode steps every rank kept (matched by their order):
/// `rank_skew_ms` and `allreduce_transfer_us`.
fn waits(out: &mut Map<String, Value>, ranks: &[RankSteps], matched: &[Vec<usize>]) {
    if matched.is_empty() {
        return;
    }
    let wait_ms = |ri: usize, j: usize| ranks[ri].steps[matched[j][ri]].wait as f64 / 1e6;
    // rank_skew_ms: per rank its median wait per step; the run value is, per step, the wait of
    // the rank that waits most minus that of the rank that waits least (by those medians, ties
    // to the lower rank), the median over steps.
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
    out.insert(MetricId::RankSkewMs.name().into(), Value::Object(m));

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
    pooled_calls(out, MetricId::AllreduceTransferUs, &transfers);
}

/// `overlap_pct`: the share of communication time that compute overlaps.
fn overlap(out: &mut Map<String, Value>, steps: &Steps<'_>) {
    let overlap = |s: &StepSummary| {
        (s.comm_union > 0).then(|| s.comm_compute_overlap as f64 / s.comm_union as f64 * 100.0)
    };
    let v = steps.samples(&overlap, StepKind::Decode);
    sampled(
        out,
        MetricId::OverlapPct,
        "%",
        "higher",
        Combine::Min,
        false,
        v,
    );
}

/// `prefill_step_ms`, `prefill_gpu_util_pct` and `prefill_comm_pct` (where any prefill step
/// communicates), over every prefill step; `mixed_step_ms` over every mixed step.
fn prefill(out: &mut Map<String, Value>, steps: &Steps<'_>) {
    let mixed = steps.samples(&wall_ms, StepKind::Mixed);
    sampled(
        out,
        MetricId::MixedStepMs,
        "ms",
        "lower",
        Combine::Max,
        false,
        mixed,
    );
    let wall = steps.samples(&wall_ms, StepKind::Prefill);
    sampled(
        out,
        MetricId::PrefillStepMs,
        "ms",
        "lower",
        Combine::Max,
        false,
        wall,
    );
    util_and_comm(out, steps, StepKind::Prefill);
}

/// A phase's `gpu_util_pct` and, where any of its steps communicates, its `comm_pct`
/// (`prefill_gpu_util_pct` and `prefill_comm_pct` for prefill).
fn util_and_comm(out: &mut Map<String, Value>, steps: &Steps<'_>, phase: StepKind) {
    let (util_id, comm_id) = if phase == StepKind::Decode {
        (MetricId::GpuUtilPct, MetricId::CommPct)
    } else {
        (MetricId::PrefillGpuUtilPct, MetricId::PrefillCommPct)
    };
    let u = steps.samples(&util, phase);
    sampled(out, util_id, "%", "higher", Combine::Min, false, u);
    if steps.any_comm(phase) {
        let c = steps.samples(&comm_share, phase);
        sampled(out, comm_id, "%", "lower", Combine::Max, false, c);
    }
}

pub(super) struct PerRank {
    pub rank: u32,
    pub value: f64,
    pub p90: Option<f64>,
}

pub(super) fn metric(unit: &str, direction: &str, value: f64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("value".into(), json!(value));
    m.insert("unit".into(), json!(unit));
    m.insert("direction".into(), json!(direction));
    m
}

pub(super) fn per_rank_obj(v: &[PerRank]) -> Value {
    let mut m = Map::new();
    for p in v {
        m.insert(p.rank.to_string(), json!(p.value));
    }
    Value::Object(m)
}

/// A metric of pooled calls (µs): their mean, with p50, p99 and the count; none without calls.
fn pooled_calls(out: &mut Map<String, Value>, id: MetricId, calls: &[f64]) {
    if calls.is_empty() {
        return;
    }
    let mean = calls.iter().sum::<f64>() / calls.len() as f64;
    let mut m = metric("us", "lower", mean);
    m.insert("p50".into(), json!(percentile(calls, 50.0)));
    m.insert("p99".into(), json!(percentile(calls, 99.0)));
    m.insert("calls".into(), json!(calls.len()));
    out.insert(id.name().into(), Value::Object(m));
}

pub(super) enum Combine {
    Max,
    Min,
}

/// A per-step-sampled metric: per rank the median of the samples, across ranks max or min.
pub(super) fn sampled(
    out: &mut Map<String, Value>,
    id: MetricId,
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
    out.insert(id.name().into(), Value::Object(m));
}

/// A per-step-sampled tail metric: per rank the p90 of the samples, across ranks the max.
fn tail(out: &mut Map<String, Value>, id: MetricId, per_rank_samples: Vec<(u32, Vec<f64>)>) {
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
    out.insert(id.name().into(), Value::Object(m));
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
    for (id, unit, per) in [
        (MetricId::DecodeStallPct, "%", pct),
        (MetricId::DecodeStallMsPerStep, "ms", lost),
    ] {
        let Some(value) = per.iter().map(|p| p.value).reduce(f64::max) else {
            return;
        };
        let mut m = metric(unit, "lower", value);
        m.insert("per_rank".into(), per_rank_obj(&per));
        out.insert(id.name().into(), Value::Object(m));
    }
}
