//! Metrics on hand-built traces whose figures are computed by hand, to the nanosecond.

use super::compute::{step_figures, Scratch, StepFigures};
use super::*;
use crate::reader::model::{RankTrace, Stage};
use crate::steps::Step;
use crate::steps::{StepKind, StepSource};
use crate::taxonomy::Category;
use crate::testing::{run_of, TraceBuilder, MS, TID, US};

/// The extraction, with the default options, of a run of these ranks.
fn extracted(ranks: Vec<(RankTrace, Vec<Class>)>) -> Extraction {
    let (run, classes) = run_of(ranks);
    extract(&run, &classes, &ExtractOptions::default()).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[track_caller]
fn assert_close(a: f64, b: f64) {
    assert!(close(a, b), "{a} != {b}");
}

/// A step made of every activity of the trace.
fn whole(trace: &RankTrace) -> Step {
    let activities: Vec<u32> = (0..trace.gpu.len() as u32).collect();
    let start = trace.gpu.iter().map(|a| a.ts).min().unwrap_or(0);
    let end = trace.gpu.iter().map(|a| a.end()).max().unwrap_or(0);
    Step {
        kind: StepKind::Decode,
        source: StepSource::Gap,
        trace: 0,
        activities,
        start,
        end,
        batch_size: None,
        spec: None,
    }
}

fn figures(b: TraceBuilder) -> StepFigures {
    let (trace, classes) = b.build();
    let step = whole(&trace);
    step_figures(
        &trace,
        &classes,
        &step,
        &mut Scratch::default(),
        &mut Vec::new(),
    )
}

#[test]
fn overlap_on_one_stream_is_zero() {
    let mut b = TraceBuilder::new(0);
    b.kernel("nvjet", Category::DenseGemm, 0, 10 * US, 0);
    b.allreduce("cross_device_reduce", 10 * US, 10 * US, 0);
    b.kernel("mla", Category::Attention, 20 * US, 10 * US, 0);
    let f = figures(b);
    assert_eq!((f.comm_union_ns, f.overlap_ns), (10 * US, 0));
    assert_eq!(f.overlap_pct(), Some(0.0));
}

#[test]
fn comm_entirely_under_compute_on_another_stream_is_full_overlap() {
    let mut b = TraceBuilder::new(0);
    b.kernel("fused_moe", Category::MoeGemm, 0, 30 * US, 0);
    b.allreduce("ncclDevKernel_AllReduce", 10 * US, 10 * US, 1);
    let f = figures(b);
    assert_eq!(f.overlap_pct(), Some(100.0));
    assert_eq!(
        (f.busy_ns, f.kernel_ns, f.wall_ns),
        (30 * US, 40 * US, 30 * US)
    );
}

#[test]
fn half_overlapped_comm_is_exactly_fifty_percent() {
    let mut b = TraceBuilder::new(0);
    b.allreduce("ncclDevKernel_AllReduce", 0, 20 * US, 1);
    b.kernel("fused_moe", Category::MoeGemm, 10 * US, 20 * US, 0);
    let f = figures(b);
    assert_eq!((f.comm_union_ns, f.overlap_ns), (20 * US, 10 * US));
    assert_eq!(f.overlap_pct(), Some(50.0));
}

#[test]
fn comm_on_two_streams_counts_its_union_not_its_sum() {
    let mut b = TraceBuilder::new(0);
    b.kernel("nvjet", Category::DenseGemm, 0, 10 * US, 0);
    b.allreduce("ncclDevKernel_AllReduce", 0, 10 * US, 1);
    b.kernel(
        "ncclDevKernel_AllGather",
        Category::Comm,
        5 * US,
        15 * US,
        2,
    );
    let f = figures(b);
    // ∪comm = [0, 20) = 20 µs (the sum would be 25); under compute: [0, 10).
    assert_eq!(
        (f.comm_union_ns, f.comm_ns, f.overlap_ns),
        (20 * US, 25 * US, 10 * US)
    );
    assert_eq!(f.overlap_pct(), Some(50.0));
}

#[test]
fn memcpy_is_neither_comm_nor_compute_whatever_its_name() {
    let mut b = TraceBuilder::new(0);
    b.allreduce("cross_device_reduce", 0, 10 * US, 1);
    b.memcpy("Memcpy DtoD gemm-looking", 0, 10 * US, 0);
    let f = figures(b);
    assert_eq!(f.overlap_pct(), Some(0.0));
    assert_eq!(f.moe_gemm_ns, 0);
    assert_eq!(f.comm_pct(), Some(50.0));
}

#[test]
fn steps_without_comm_or_time_give_no_ratio_sample() {
    let mut b = TraceBuilder::new(0);
    b.kernel("nvjet", Category::DenseGemm, 5, 0, 0);
    let f = figures(b);
    assert_eq!(
        (f.gpu_util_pct(), f.comm_pct(), f.overlap_pct()),
        (None, None, None)
    );
    assert_eq!(f.wall_ms(), 0.0);
}

/// One decode step of the hand-computed run, starting at `t0`, `x` µs idle before the last kernel.
/// `ar` is the allreduce call in µs (10 on rank 0, 20 on rank 1). Returns the step's activities.
///
/// ```text
/// align ×3 [0,0)  A attn [0,100)  R1 ar [100,100+ar)  T1 topk +10  M1 moe +100  T2 topk +10  M2 moe +100
/// R2 ar on stream 1, starting 5 µs before M2 ends       C (memcpy on rank 0, `other` on rank 1), 10 µs,
///                                                        x µs after R2 ends
/// ```
fn decode_step(
    b: &mut TraceBuilder,
    t0: i64,
    ar: i64,
    x: i64,
    last_is_other: bool,
    extra_sort: bool,
) -> Vec<u32> {
    let mut v = Vec::new();
    for _ in 0..3 {
        v.push(b.kernel("moe_align_block_size", Category::MoeRouting, t0, 0, 0));
    }
    if extra_sort {
        v.push(b.kernel("moe_sort", Category::MoeRouting, t0, 0, 0));
    }
    let mut t = t0;
    let mut next = |b: &mut TraceBuilder, name: &str, category: Category, dur: i64| {
        let i = if category == Category::Comm {
            b.allreduce(name, t, dur * US, 0)
        } else {
            b.kernel(name, category, t, dur * US, 0)
        };
        t += dur * US;
        i
    };
    v.push(next(b, "mla_decode", Category::Attention, 100));
    v.push(next(b, "cross_device_reduce", Category::Comm, ar));
    v.push(next(b, "topk", Category::MoeRouting, 10));
    v.push(next(b, "fused_moe_kernel", Category::MoeGemm, 100));
    v.push(next(b, "topk", Category::MoeRouting, 10));
    v.push(next(b, "fused_moe_kernel", Category::MoeGemm, 100));
    let r2 = t - 5 * US;
    v.push(b.allreduce("cross_device_reduce", r2, ar * US, 1));
    let c = r2 + ar * US + x * US;
    v.push(if last_is_other {
        b.kernel("mystery_kernel", Category::Other, c, 10 * US, 0)
    } else {
        b.memcpy("Memcpy DtoH", c, 10 * US, 0)
    });
    v
}

/// One prefill step under a `step[EXTEND ...]` annotation: attention 1 ms, GEMM 2 ms, allreduce
/// `ar_us`, `idle_us` idle, elementwise `tail_us`.
fn prefill_step(b: &mut TraceBuilder, t0: i64, ar_us: i64, idle_us: i64, tail_us: i64) {
    b.annotation("step[EXTEND bs=2 toks=4096]", t0 - 100 * US, 50 * US, TID);
    let link = |b: &mut TraceBuilder, i: u32| {
        let c = b.launch(t0 - 90 * US, false);
        b.link(i, c);
    };
    let i = b.kernel("fmha_fwd", Category::Attention, t0, MS, 0);
    link(b, i);
    let i = b.kernel("Cijk_gemm", Category::DenseGemm, t0 + MS, 2 * MS, 0);
    link(b, i);
    let i = b.allreduce("cross_device_reduce", t0 + 3 * MS, ar_us * US, 0);
    link(b, i);
    let i = b.kernel(
        "add_kernel",
        Category::Elementwise,
        t0 + 3 * MS + (ar_us + idle_us) * US,
        tail_us * US,
        0,
    );
    link(b, i);
}

/// Rank 0: decode steps by graph launch, x = 1000 (warm-up), 0, 55, 155, 1000 (outlier).
/// Rank 1: decode steps by `step[DECODE]` annotation, x = 0 (warm-up), 35, 85, 135.
fn two_rank_run() -> (Run, Vec<Vec<Class>>) {
    let mut r0 = TraceBuilder::new(0);
    for (k, x) in [1000, 0, 55, 155, 1000].into_iter().enumerate() {
        let t0 = k as i64 * 10 * MS;
        let c = r0.launch(t0 - 50 * US, true);
        for i in decode_step(&mut r0, t0, 10, x, false, k == 1) {
            r0.link(i, c);
        }
    }
    prefill_step(&mut r0, 100 * MS, 500, 500, 500);

    // Rank 1 runs the same five forward passes; its last is an outlier too.
    let mut r1 = TraceBuilder::new(1);
    for (k, x) in [0, 35, 85, 135, 1000].into_iter().enumerate() {
        let t0 = k as i64 * 10 * MS;
        r1.annotation("step[DECODE bs=4]", t0 - 100 * US, 60 * US, TID);
        let c = r1.launch(t0 - 50 * US, false);
        for i in decode_step(&mut r1, t0, 20, x, true, false) {
            r1.link(i, c);
        }
    }
    prefill_step(&mut r1, 100 * MS, 1000, 0, 1000);
    run_of(vec![r0.build(), r1.build()])
}

#[test]
fn every_metric_of_a_two_rank_run_matches_the_hand_computation() {
    let (run, classes) = two_rank_run();
    let opts = ExtractOptions {
        warmup_steps: 1,
        moe_layers: None,
        ..Default::default()
    };
    let x = extract(&run, &classes, &opts).unwrap();
    let m = |id: MetricId| x.metrics.get(&id).unwrap_or_else(|| panic!("{id} missing"));

    // Steps: rank 0 keeps walls 345, 400, 500 µs (1345 is an outlier above 2 × 450);
    // rank 1 keeps 400, 450, 500 µs (1365 is an outlier above 2 × 450).
    let (s0, s1) = (&x.steps[&0], &x.steps[&1]);
    for (rank, s) in [(0, s0), (1, s1)] {
        assert_eq!(
            (
                s.decode_kept,
                s.dropped_warmup,
                s.dropped_outliers,
                s.prefill
            ),
            (3, 1, 1, 1),
            "rank {rank}"
        );
    }
    assert_eq!(s0.found.decode.graph_launch, 5);
    assert_eq!(s1.found.decode.annotation, 5);
    assert_eq!((s0.unassigned_ms, s1.unassigned_ms), (0.0, 0.0));
    assert!(x.warnings.is_empty(), "{:?}", x.warnings);

    // decode_step_ms: rank 0 median 0.400, p90 0.400 + 0.8 × 0.100; rank 1 0.450, p90 0.490.
    let d = m(MetricId::DecodeStepMs);
    assert_close(d.value, 0.45);
    assert_close(d.p90.unwrap(), 0.49);
    assert_close(d.per_rank[&0], 0.4);
    assert_close(d.per_rank[&1], 0.45);
    assert_eq!(d.decided_by, Some(1));
    assert_eq!(d.samples, vec![0.4, 0.45, 0.5]);

    // decode_step_p90_ms: rank 1's p90 of (0.4, 0.45, 0.5) is 0.49, its samples the gate resamples.
    let p90 = m(MetricId::DecodeStepP90Ms);
    assert_close(p90.value, 0.49);
    assert_close(p90.per_rank[&1], 0.49);
    assert_eq!(p90.decided_by, Some(1));
    assert_eq!(p90.samples, vec![0.4, 0.45, 0.5]);

    // Waits. The fixture's collective ends are not aligned (rank 1's calls last 10 µs longer),
    // which reads as a clock offset: rank 1's ends are 10 and 20 µs after rank 0's, median 15 µs.
    // Corrected, rank 1 arrives 15 µs before rank 0 at the first allreduce (waits 15, transfer 5)
    // and 5 µs before at the second (waits 5, transfer 15); rank 0 arrives last at both.
    let w = x.waits.as_ref().unwrap();
    assert_eq!(w.clock_offsets_ns, vec![0, 15 * US]);
    assert_eq!(w.steps.len(), 3);
    assert_eq!(
        (w.steps[0][1].wait_ns, w.steps[0][1].transfer_ns),
        (20 * US, 20 * US)
    );
    assert_eq!(
        (w.steps[0][0].last_arrivals, w.steps[0][1].last_arrivals),
        (2, 0)
    );
    let skew = m(MetricId::RankSkewMs);
    assert_close(skew.value, 0.02);
    assert_close(skew.per_rank[&0], 0.0);
    assert_close(skew.per_rank[&1], 0.02);
    assert_eq!(skew.samples, vec![0.02; 3]);
    let t = m(MetricId::AllreduceTransferUs);
    assert_close(t.value, 10.0);
    assert_eq!(t.samples.len(), 12);

    // gpu_util_pct: busy 345 µs / walls on rank 0 (100, 86.25, 69); 365 µs on rank 1.
    let u = m(MetricId::GpuUtilPct);
    assert_close(u.per_rank[&0], 86.25);
    assert_close(u.per_rank[&1], 365.0 / 450.0 * 100.0);
    assert_close(u.value, 365.0 / 450.0 * 100.0);
    assert_eq!(u.direction, Direction::Higher);

    // comm_pct: 20 / 350 and 40 / 370 of kernel time.
    let c = m(MetricId::CommPct);
    assert_close(c.per_rank[&0], 20.0 / 350.0 * 100.0);
    assert_close(c.value, 40.0 / 370.0 * 100.0);

    // overlap_pct: 5 µs of R2 under M2; ∪comm 20 µs on rank 0, 40 µs on rank 1.
    let o = m(MetricId::OverlapPct);
    assert_close(o.per_rank[&0], 25.0);
    assert_close(o.per_rank[&1], 12.5);
    assert_close(o.value, 12.5);

    // allreduce_us: 6 calls of 10 µs and 6 of 20 µs pooled.
    let a = m(MetricId::AllreduceUs);
    assert_close(a.value, 15.0);
    assert_close(a.p50.unwrap(), 15.0);
    assert_close(a.p99.unwrap(), 20.0);
    assert!(a.per_rank.is_empty());
    assert_eq!(a.samples.len(), 12);
    let r = m(MetricId::AllreduceRankRatio);
    assert_close(r.value, 2.0);
    assert_close(r.per_rank[&1], 20.0);

    // moe_us_per_layer: topk twice per step (align 3, sort 1/6 → median 0): 2 layers, 200 µs / 2.
    let layers = x.moe_layers.as_ref().unwrap();
    assert_eq!(
        (layers.value, layers.source, layers.kernel.as_deref()),
        (2.0, "counted", Some("topk"))
    );
    assert_close(m(MetricId::MoeUsPerLayer).value, 100.0);

    // Prefill: rank 0 wall 4.5 ms, busy 4.0, comm 0.5 of 4.0; rank 1 wall 5.0, busy 5.0, comm 1 of 5.
    assert_close(m(MetricId::PrefillStepMs).value, 5.0);
    assert_close(m(MetricId::PrefillStepMs).per_rank[&0], 4.5);
    assert_close(m(MetricId::PrefillGpuUtilPct).value, 4.0 / 4.5 * 100.0);
    assert_close(m(MetricId::PrefillCommPct).value, 20.0);
    assert_close(m(MetricId::PrefillCommPct).per_rank[&0], 12.5);
    // other_pct: rank 1's mystery kernel, 10 of 370 µs of kernel time per step (attention 100,
    // allreduce 2 × 20, topk 2 × 10, MoE 2 × 100, other 10); rank 0 has a memcpy instead: 0.
    assert_close(m(MetricId::OtherPct).value, 10.0 / 370.0 * 100.0);
    assert_close(m(MetricId::OtherPct).per_rank[&0], 0.0);
    assert_eq!(m(MetricId::OtherPct).decided_by, Some(1));
    // Stalls: each rank's one slow outlier (1345 and 1365 µs) of its 4 steps after warm-up.
    assert_close(m(MetricId::DecodeStallPct).value, 25.0);
    assert_close(m(MetricId::DecodeStallPct).per_rank[&1], 25.0);
    assert_eq!(
        m(MetricId::DecodeStallPct)
            .samples
            .iter()
            .filter(|&&v| v == 100.0)
            .count(),
        1
    );
    // What they cost: rank 0's walls after warm-up 345, 400, 500, 1345 µs (median 450), rank 1's
    // 400, 450, 500, 1365 (median 475): 895 and 890 µs over 4 steps.
    let lost = m(MetricId::DecodeStallMsPerStep);
    assert_close(lost.value, 0.895 / 4.0);
    assert_close(lost.per_rank[&1], 0.890 / 4.0);
    assert_eq!(lost.decided_by, Some(0));
    assert_close(lost.samples.iter().sum::<f64>(), 0.895);
    // The 16 figures of the forwards, and the 6 of the iterations between them (decode_iter_ms,
    // decode_host_gap_ms, decode_phase_util_pct, decode_slow_ms_per_iter, decode_tokens_per_s
    // from the annotated batch) and of the kernel time in no step (unassigned_pct, 0 here).
    assert_eq!(x.metrics.len(), 22);
    assert_eq!(m(MetricId::UnassignedPct).value, 0.0);

    // Breakdown: per-step means over ranks. Kernel time per step 0.350 and 0.370 ms → 0.360.
    let cat = |c: Category| &x.breakdown.categories[&c];
    assert_close(cat(Category::MoeGemm).ms_per_step, 0.2);
    assert_close(cat(Category::MoeGemm).calls_per_step, 2.0);
    assert_close(cat(Category::MoeGemm).pct, 0.2 / 0.36 * 100.0);
    assert_close(cat(Category::Comm).ms_per_step, 0.03);
    assert_close(cat(Category::Memcpy).ms_per_step, 0.005);
    assert_close(
        cat(Category::MoeRouting).calls_per_step,
        (2.0 + 3.0 + 1.0 / 3.0 + 2.0 + 3.0) / 2.0,
    );
    assert_close(x.other_share_pct, 0.005 / 0.36 * 100.0);
    let k0 = &x.breakdown.kernels[0];
    assert_eq!(
        (k0.name.as_str(), k0.category),
        ("fused_moe_kernel", Category::MoeGemm)
    );
    assert_close(k0.ms_per_step, 0.2);
    let sort = x
        .breakdown
        .kernels
        .iter()
        .find(|k| k.name == "moe_sort")
        .unwrap();
    assert_close(sort.calls_per_step, 1.0 / 6.0);

    assert_eq!(x.run.ranks, vec![0, 1]);
    assert_eq!(x.run.device.as_deref(), Some("AMD Instinct MI355X"));
}

#[test]
fn given_moe_layers_override_the_count() {
    let (run, classes) = two_rank_run();
    let opts = ExtractOptions {
        warmup_steps: 1,
        moe_layers: Some(4),
        ..Default::default()
    };
    let x = extract(&run, &classes, &opts).unwrap();
    assert_close(x.metrics[&MetricId::MoeUsPerLayer].value, 50.0);
    assert_eq!(x.moe_layers.unwrap().source, "given");
}

#[test]
fn json_has_the_documented_shape_without_samples() {
    let (run, classes) = two_rank_run();
    let x = extract(
        &run,
        &classes,
        &ExtractOptions {
            warmup_steps: 1,
            moe_layers: None,
            ..Default::default()
        },
    )
    .unwrap();
    let v = serde_json::to_value(&x).unwrap();
    let d = &v["metrics"]["decode_step_ms"];
    assert_eq!(d["unit"], "ms");
    assert_eq!(d["direction"], "lower");
    assert!(d["per_rank"]["0"].is_number() && d["per_rank"]["1"].is_number());
    assert!(d["p90"].is_number());
    assert!(d.get("samples").is_none() && d.get("p50").is_none());
    let a = &v["metrics"]["allreduce_us"];
    assert_eq!(a["unit"], "us");
    assert!(a["p50"].is_number() && a["p99"].is_number() && a.get("per_rank").is_none());
    assert_eq!(v["metrics"]["gpu_util_pct"]["unit"], "%");
    assert_eq!(v["metrics"]["gpu_util_pct"]["direction"], "higher");
    assert_eq!(v["steps"]["0"]["decode_kept"], 3);
    assert_eq!(v["steps"]["0"]["decode_dropped"], 2);
    assert_eq!(v["steps"]["1"]["prefill"], 1);
    assert!(v["breakdown"]["categories"]["moe_gemm"]["ms_per_step"].is_number());
    assert_eq!(v["breakdown"]["kernels"][0]["category"], "moe_gemm");
    assert!(v["other_share_pct"].is_number());
    assert!(v["warnings"].as_array().unwrap().is_empty());
}

/// A decode step graph-launched at `t0`: attention for 100 µs, then a dense GEMM for 100 µs.
/// Returns the launch's correlation.
fn attention_and_gemm_step(b: &mut TraceBuilder, t0: i64) -> u64 {
    let c = b.launch(t0, true);
    let i = b.kernel("mla", Category::Attention, t0 + US, 100 * US, 0);
    b.link(i, c);
    let i = b.kernel("nvjet", Category::DenseGemm, t0 + 101 * US, 100 * US, 0);
    b.link(i, c);
    c
}

#[test]
fn absent_inputs_give_absent_metrics() {
    // One rank, decode steps by graph launch of attention + GEMM only: no comm, no MoE, no prefill.
    let mut b = TraceBuilder::new(0);
    for k in 0..4 {
        attention_and_gemm_step(&mut b, k * 10 * MS);
    }
    let x = extracted(vec![b.build()]);
    let names: Vec<MetricId> = x.metrics.keys().copied().collect();
    assert_eq!(
        names,
        vec![
            MetricId::DecodeHostGapMs,
            MetricId::DecodeIterMs,
            MetricId::DecodePhaseUtilPct,
            MetricId::DecodeSlowMsPerIter,
            MetricId::DecodeStallMsPerStep,
            MetricId::DecodeStallPct,
            MetricId::DecodeStepMs,
            MetricId::DecodeStepP90Ms,
            MetricId::GpuUtilPct,
            MetricId::OtherPct,
            MetricId::UnassignedPct
        ]
    );
    assert_close(x.metrics[&MetricId::DecodeStepMs].value, 0.2);
    // Forwards 10 ms apart, 0.2 ms each: after 2 warm-up steps, one iteration (the last forward
    // ends the trace) of 10 ms, 9.8 ms of it idle, busy 2% of it.
    assert_close(x.metrics[&MetricId::DecodeIterMs].value, 10.0);
    assert_close(x.metrics[&MetricId::DecodeHostGapMs].value, 9.8);
    assert_close(x.metrics[&MetricId::DecodePhaseUtilPct].value, 2.0);
    assert_eq!(x.metrics[&MetricId::DecodeIterMs].samples.len(), 1);
    assert_close(x.metrics[&MetricId::GpuUtilPct].value, 100.0);
    assert!(x.moe_layers.is_none());
}

#[test]
fn ranks_keeping_different_step_counts_is_a_warning_not_an_error() {
    // Both ranks run five forward passes; rank 1's last is an outlier, dropped.
    let mut r0 = TraceBuilder::new(0);
    let mut r1 = TraceBuilder::new(1);
    for (b, slow) in [(&mut r0, 1), (&mut r1, 10)] {
        for k in 0..5 {
            let t0 = k * 10 * MS;
            let c = b.launch(t0, true);
            let dur = if k == 4 { slow * 100 * US } else { 100 * US };
            b.forward(c, t0 + US, dur);
        }
    }
    let x = extracted(vec![r0.build(), r1.build()]);
    assert_eq!(
        x.warnings,
        vec!["ranks kept different numbers of decode steps (rank 0: 3, rank 1: 2)".to_string()]
    );
}

#[test]
fn a_prefill_only_run_has_its_prefill_metrics_and_no_decode_ones() {
    let mut b = TraceBuilder::new(0);
    b.annotation("step[EXTEND bs=1 toks=128]", 0, 10 * US, TID);
    let c = b.launch(US, false);
    b.forward(c, 2 * US, 300 * US);
    let x = extracted(vec![b.build()]);
    assert!(
        x.metrics.contains_key(&MetricId::PrefillStepMs),
        "{:?}",
        x.metrics.keys()
    );
    assert!(!x.metrics.contains_key(&MetricId::DecodeStepMs));
    assert_eq!(x.steps[&0].prefill, 1);
}

#[test]
fn a_mixed_step_gives_mixed_step_ms_with_its_samples() {
    let mut b = TraceBuilder::new(0);
    for k in 0..3 {
        let t0 = k * 10 * MS;
        b.annotation(
            "execute_8192_context_9(sq1)_generation_37(sq37)",
            t0,
            10 * US,
            TID,
        );
        let c = b.launch(t0 + US, false);
        b.forward(c, t0 + 2 * US, (k + 1) * 100 * US);
    }
    let x = extracted(vec![b.build()]);
    let m = &x.metrics[&MetricId::MixedStepMs];
    assert_eq!(m.samples.len(), 3);
    assert!(m.value > 0.0);
    assert!(!x.metrics.contains_key(&MetricId::DecodeStepMs));
    assert!(!x.metrics.contains_key(&MetricId::PrefillStepMs));
    assert_eq!(x.steps[&0].found.mixed.annotation, 3);
}

#[test]
fn no_step_at_all_says_what_was_found_in_one_short_line_with_a_next_step() {
    let mut b = TraceBuilder::new(0);
    // 1,204 comm kernels in one burst: not a step.
    for k in 0..1204 {
        b.kernel(
            "rcclGenericKernel",
            Category::Comm,
            100 * MS + k * US,
            US,
            0,
        );
    }
    let (run, classes) = run_of(vec![b.build()]);
    let err = extract(&run, &classes, &ExtractOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no decode step (nor prefill or mixed) in any rank: 1,204 GPU activities in 1 rank, \
         1 segment cut from the rest, 0 forwards, no CPU annotation; \
         `tracegate report` shows how the trace was cut; --step-gap DURATION sets the cut"
    );
}

#[test]
fn a_rank_with_no_more_steps_than_the_warmup_keeps_them_all() {
    let mut b = TraceBuilder::new(0).stage(Stage::Decode);
    for k in 0..2 {
        let c = b.launch(k * 10 * MS, true);
        b.forward(c, k * 10 * MS + US, US);
    }
    let x = extracted(vec![b.build()]);
    assert_eq!(
        (x.steps[&0].decode_kept, x.steps[&0].dropped_warmup),
        (2, 0)
    );
}

#[test]
fn empty_run_and_mismatched_classes_are_errors_not_panics() {
    let run = Run::default();
    assert!(matches!(
        extract(&run, &[], &ExtractOptions::default()),
        Err(MetricsError::NoDecodeStep { .. })
    ));
    let (run, _) = run_of(vec![TraceBuilder::new(0).build()]);
    assert_eq!(
        extract(&run, &[], &ExtractOptions::default()).unwrap_err(),
        MetricsError::ClassesMismatch {
            expected: 1,
            got: 0
        }
    );
}

/// 100,000 kernels in 1,000 graph-launched decode steps on two ranks: the figures stay exact at
/// volume (speed is measured by the benchmark, not here).
#[test]
fn many_graph_launched_steps_extract_exactly() {
    let mut traces = Vec::new();
    for rank in 0..2 {
        let mut b = TraceBuilder::new(rank);
        for k in 0..500i64 {
            let t0 = k * 20 * MS;
            let c = b.launch(t0, true);
            for j in 0..100i64 {
                let (name, category) = match j % 5 {
                    0 => ("mla_decode", Category::Attention),
                    1 => ("cross_device_reduce", Category::Comm),
                    2 => ("topk", Category::MoeRouting),
                    3 => ("fused_moe_kernel", Category::MoeGemm),
                    _ => ("rmsnorm", Category::Norm),
                };
                let i = if category == Category::Comm {
                    b.allreduce(name, t0 + j * 10 * US, 8 * US, 0)
                } else {
                    b.kernel(name, category, t0 + j * 10 * US, 9 * US, 0)
                };
                b.link(i, c);
            }
        }
        traces.push(b.build());
    }
    let x = extracted(traces);
    assert_eq!(x.steps[&0].decode_kept, 498);
    assert_close(x.metrics[&MetricId::DecodeStepMs].value, 0.999);
    assert_close(x.moe_layers.unwrap().value, 20.0);
}

#[test]
fn events_the_reader_skipped_are_warned_about() {
    let mut b = TraceBuilder::new(0);
    let c = b.launch(0, true);
    b.forward(c, US, 100 * US);
    let (mut trace, classes) = b.build();
    trace.stats.negative_durations = 2;
    trace.stats.malformed_events = 1;
    let x = extracted(vec![(trace, classes)]);
    assert_eq!(
        x.warnings,
        vec!["test-TP-0.trace.json.gz: skipped 1 malformed events, 2 GPU activities with a negative duration".to_string()]
    );
}

#[test]
fn ranks_with_different_decode_step_counts_are_refused() {
    let rank_with = |rank: u32, steps: i64| {
        let mut b = TraceBuilder::new(rank).stage(Stage::Decode);
        for k in 0..steps {
            let c = b.launch(k * 10 * MS, true);
            b.forward(c, k * 10 * MS + US, 100 * US);
        }
        b.build()
    };
    let (run, classes) = run_of(vec![rank_with(0, 6), rank_with(1, 6)]);
    assert!(extract(&run, &classes, &ExtractOptions::default()).is_ok());
    let (run, classes) = run_of(vec![rank_with(0, 6), rank_with(1, 5), rank_with(2, 6)]);
    let err = extract(&run, &classes, &ExtractOptions::default()).unwrap_err();
    assert_eq!(
        err,
        MetricsError::StepCountMismatch {
            counts: "TP00 6, TP01 5, TP02 6".into()
        }
    );
    assert!(err.to_string().contains("a rank's trace was cut"));
}

#[test]
fn other_pct_is_the_share_of_other_kernel_time_on_the_worst_rank() {
    // Rank 0: attention 100 µs, GEMM 100 µs, an unknown kernel 50 µs per step → 20%;
    // rank 1: the unknown kernel takes 25 µs → 25 / 225 = 11.1%. Run value: the worst rank.
    let rank = |r: u32, other_us: i64| {
        let mut b = TraceBuilder::new(r);
        for k in 0..4 {
            let t0 = k * 10 * MS;
            let c = attention_and_gemm_step(&mut b, t0);
            let i = b.kernel("zz_fork", Category::Other, t0 + 201 * US, other_us * US, 0);
            b.link(i, c);
        }
        b.build()
    };
    let (run, classes) = run_of(vec![rank(0, 50), rank(1, 25)]);
    let opts = ExtractOptions {
        warmup_steps: 0,
        ..ExtractOptions::default()
    };
    let x = extract(&run, &classes, &opts).unwrap();
    let m = &x.metrics[&MetricId::OtherPct];
    assert_close(m.value, 20.0);
    assert_close(m.per_rank[&1], 25.0 / 225.0 * 100.0);
    assert!(m.samples.len() == 4 && m.samples.iter().all(|&v| (v - 20.0).abs() < 1e-9));
    assert_eq!(m.decided_by, Some(0));
}

#[test]
fn a_profiler_step_loop_gives_iteration_ms_and_no_decode_metric() {
    let mut b = TraceBuilder::new(0);
    for k in 0..5 {
        let t = k * 20 * MS + if k == 3 { 2 * MS } else { 0 };
        b.annotation(&format!("ProfilerStep#{k}"), t, MS, crate::testing::TID);
        let c = b.launch(t + 10 * US, false);
        let g = b.kernel("nvjet_tst", Category::DenseGemm, t + 100 * US, 8 * MS, 0);
        b.link(g, c);
    }
    let (run, classes) = run_of(vec![b.build()]);
    let x = extract(&run, &classes, &ExtractOptions::default()).unwrap();
    assert_eq!(x.run.kind, RunKind::Loop);
    // Iterations 20, 20, 22, 18 ms: median 20.
    let it = &x.metrics[&MetricId::IterationMs];
    assert_close(it.value, 20.0);
    assert_eq!(it.samples.len(), 4);
    assert_close(x.metrics[&MetricId::GpuUtilPct].value, 100.0);
    for id in [
        MetricId::DecodeStepMs,
        MetricId::DecodeIterMs,
        MetricId::DecodeStallPct,
        MetricId::PrefillStepMs,
    ] {
        assert!(!x.metrics.contains_key(&id), "{id}");
    }
    assert!(x.metrics.contains_key(&MetricId::UnassignedPct));
}

#[test]
fn a_diffusion_pipeline_is_refused_saying_so() {
    let mut b = TraceBuilder::new(0);
    for k in 0..4 {
        let c = b.launch(k * 100 * MS, true);
        b.forward(c, k * 100 * MS + MS, 5 * MS);
    }
    b.annotation(
        "execute_diffusion_1_256x256",
        0,
        400 * MS,
        crate::testing::TID,
    );
    let (run, classes) = run_of(vec![b.build()]);
    let err = extract(&run, &classes, &ExtractOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(
            "a diffusion pipeline (1 `execute_diffusion_1_256x256` annotation, xDiT's), not a \
             decode loop"
        ),
        "{text}"
    );
}
