use super::segment::CutMethod;
use super::*;
use crate::testing::{run_of, TraceBuilder, MS, TID, US};

const ATTN: Category = Category::Attention;
const GEMM: Category = Category::DenseGemm;

/// One forward (attention + GEMM) per graph launch, `wall` long, launches 100 ms apart.
fn graph_steps(b: &mut TraceBuilder, walls_ms: &[i64]) {
    for (k, &w) in walls_ms.iter().enumerate() {
        let t = k as i64 * 100 * MS;
        let c = b.launch(t, true);
        b.forward(c, t + MS, w * MS);
    }
}

#[test]
fn annotations_claim_the_activities_launched_inside_them_on_the_same_thread() {
    let mut b = TraceBuilder::new(0);
    b.annotation("step[DECODE bs=64]", 0, 100 * US, TID);
    b.annotation("step[EXTEND bs=15 toks=15360]", 200 * US, 100 * US, TID);
    b.annotation("step[IDLE]", 400 * US, 100 * US, TID);
    let c1 = b.launch(10 * US, false);
    let c2 = b.launch(100 * US, false); // on the closing edge: inside
    let c3 = b.launch(250 * US, false);
    let c4 = b.launch(450 * US, false);
    let a = b.kernel("mla_decode", ATTN, 20 * US, 30 * US, 0);
    let g = b.kernel("nvjet_tst", GEMM, 120 * US, 10 * US, 0);
    let p = b.kernel("fmha_prefill", ATTN, 260 * US, 40 * US, 0);
    let idle = b.kernel("nvjet_tst", GEMM, 460 * US, 7 * US, 0);
    b.link(a, c1);
    b.link(g, c2);
    b.link(p, c3);
    b.link(idle, c4);
    let (trace, classes) = b.build();
    let (run, classes) = run_of(vec![(trace, classes)]);

    let ranks = find_steps(&run, &classes, 0);
    assert_eq!(ranks.len(), 1);
    let r = &ranks[0];
    assert_eq!(r.decode.len(), 1);
    let d = &r.decode[0];
    assert_eq!(
        (d.kind, d.source, d.batch_size),
        (StepKind::Decode, StepSource::Annotation, Some(64))
    );
    assert_eq!(d.activities, vec![a, g]);
    assert_eq!((d.start, d.end, d.wall()), (20 * US, 130 * US, 110 * US));
    assert_eq!(r.prefill.len(), 1);
    assert_eq!(r.prefill[0].activities, vec![p]);
    assert_eq!(r.prefill[0].batch_size, Some(15));
    // The IDLE kernel is not a step and not left to the gap rule: other-label time in the mix.
    assert_eq!(r.unassigned_ns, 0);
    assert_eq!(r.mix.other_label, 7 * US);
    assert_eq!(r.found.step_annotations, 3);
    assert_eq!(r.found.non_step_annotations, 1);
    assert_eq!(r.found.gap_activities, 0);
}

#[test]
fn a_launch_on_another_thread_is_not_claimed_by_the_annotation() {
    let mut b = TraceBuilder::new(0);
    b.annotation("step[DECODE bs=8]", 0, 100 * US, TID);
    let c = b.launch(10 * US, false);
    let other = b.launch(20 * US, false);
    let a = b.kernel("mla_decode", ATTN, 20 * US, 30 * US, 0);
    let x = b.kernel("nvjet_tst", GEMM, 60 * US, 10 * US, 0);
    b.link(a, c);
    b.link(x, other);
    let (mut trace, classes) = b.build();
    let l = trace
        .launches
        .iter_mut()
        .find(|l| l.correlation == other)
        .unwrap();
    l.tid = TID + 1;
    let (run, classes) = run_of(vec![(trace, classes)]);
    let r = &find_steps(&run, &classes, 0)[0];
    assert_eq!(r.decode[0].activities, vec![a]);
    assert_eq!(r.found.gap_activities, 1);
    // The lone GEMM is a gap segment without attention: unassigned.
    assert_eq!(r.unassigned_ns, 10 * US);
}

#[test]
fn graph_launch_kernels_sharing_one_correlation_make_one_decode_step() {
    let mut b = TraceBuilder::new(0);
    let c1 = b.launch(0, true);
    let c2 = b.launch(50 * US, true);
    let mut first = Vec::new();
    for k in 0..5 {
        let (name, category) = if k == 0 {
            ("mla_decode", ATTN)
        } else {
            ("fused_moe_kernel", Category::MoeGemm)
        };
        let i = b.kernel(name, category, 10 * US + k * 5 * US, 3 * US, 0);
        b.link(i, c1);
        first.push(i);
    }
    // Walls 23, 20 and 20 µs: no outlier.
    let second = b.forward(c2, 60 * US, 20 * US);
    // A graph launch inside a step annotation belongs to the annotation.
    b.annotation("step[DECODE bs=4]", 100 * US, 10 * US, TID);
    let c3 = b.launch(105 * US, true);
    let k = b.kernel("mla_decode", ATTN, 120 * US, 20 * US, 0);
    b.link(k, c3);
    let (trace, classes) = b.build();
    let (run, classes) = run_of(vec![(trace, classes)]);
    let r = &find_steps(&run, &classes, 0)[0];
    assert_eq!(r.decode.len(), 3);
    assert_eq!(r.decode[0].source, StepSource::GraphLaunch);
    assert_eq!(r.decode[0].activities, first);
    assert_eq!((r.decode[0].start, r.decode[0].end), (10 * US, 33 * US));
    assert_eq!(r.decode[1].activities, second);
    assert_eq!(r.decode[2].source, StepSource::Annotation);
    assert_eq!(r.found.graph_launches, 2);
    assert_eq!(
        r.found.decode,
        SourceCounts {
            annotation: 1,
            graph_launch: 2,
            gap: 0
        }
    );
}

#[test]
fn a_correlation_shared_by_two_graph_launches_makes_one_step() {
    // A runtime and a driver event with the same id: the first links, the second is ignored.
    let mut b = TraceBuilder::new(0);
    let c = b.launch(0, true);
    b.forward(c, 10 * US, 20 * US);
    let (mut trace, classes) = b.build();
    let mut twin = trace.launches[0].clone();
    twin.ts += US;
    trace.launches.push(twin);
    let (run, classes) = run_of(vec![(trace, classes)]);
    let r = &find_steps(&run, &classes, 0)[0];
    assert_eq!(r.decode.len(), 1);
    assert_eq!(r.found.graph_launches, 1);
}

/// A forward of `layers` layers (attention then GEMM, 5 µs apart) from `t`, each kernel `k` long.
fn eager_forward(b: &mut TraceBuilder, t: i64, layers: i64, k: i64) -> i64 {
    let mut t = t;
    for _ in 0..layers {
        b.kernel("mla", ATTN, t, k, 0);
        b.kernel("nvjet", GEMM, t + k + 5 * US, k, 0);
        t += 2 * k + 10 * US;
    }
    t - 5 * US
}

#[test]
fn the_largest_jump_in_the_gaps_cuts_steps_and_a_comm_only_burst_is_not_a_step() {
    let mut b = TraceBuilder::new(0);
    // A prefill (kernels 10x longer), then 6 decode forwards 100 µs to 4 ms apart, with an RCCL
    // burst (comm only) between the third and fourth; inside a forward kernels are 5 µs apart.
    let mut t = eager_forward(&mut b, 0, 4, 200 * US);
    for (k, gap) in [100, 350, 4000, 900, 120, 2500].iter().enumerate() {
        t += gap * US;
        if k == 3 {
            b.kernel("rcclGenericKernel", Category::Comm, t, 30 * US, 0);
            t += 30 * US + 800 * US;
        }
        t = eager_forward(&mut b, t, 4, 20 * US);
    }
    let (trace, classes) = b.build();
    let (run, classes) = run_of(vec![(trace, classes)]);
    let r = &find_steps(&run, &classes, 0)[0];
    let seg = &r.found.segmentation[0];
    assert_eq!(seg.method, CutMethod::GapDistribution);
    // The break lies between the 5 µs inside a forward and the 100 µs between two: the threshold
    // is its geometric middle (22 µs), raised to the 50 µs floor.
    assert_eq!(seg.break_ns, Some((5 * US, 100 * US)));
    assert_eq!(seg.threshold_ns, Some(50 * US));
    assert_eq!((seg.forwards_by_gap, seg.fragments_by_gap), (7, 0));
    assert_eq!(seg.attention_per_forward, Some(4));
    assert_eq!((r.decode.len(), r.prefill.len()), (6, 1));
    assert_eq!(r.prefill[0].start, 0);
    assert!(r.decode.iter().all(|s| s.source == StepSource::Gap));
    // No GEMM M, no known step: the walls (1.6 ms against 0.19 ms) decided every kind.
    assert_eq!(r.found.labelled_by.wall, 7);
    assert_eq!(r.unassigned_ns, 30 * US);
    assert_eq!(
        (r.found.gap_segments, r.found.gap_segments_rejected),
        (8, 1)
    );
}

#[test]
fn warmup_then_outliers_outside_half_and_twice_the_median_are_dropped() {
    let mut b = TraceBuilder::new(0);
    // After 2 warm-up steps: 10,10,10,5,20,4,21,10 → median 10; 5 and 20 stay, 4 and 21 go.
    graph_steps(&mut b, &[50, 40, 10, 10, 10, 5, 20, 4, 21, 10]);
    let (trace, classes) = b.build();
    let (run, classes) = run_of(vec![(trace, classes)]);
    let r = &find_steps(&run, &classes, 2)[0];
    assert_eq!(
        (r.decode.len(), r.dropped_warmup, r.dropped_outliers),
        (6, 2, 2)
    );
    let kept: Vec<i64> = r.decode.iter().map(|s| s.wall() / MS).collect();
    assert_eq!(kept, vec![10, 10, 10, 5, 20, 10]);
    let dropped: Vec<(i64, DropReason)> = r
        .dropped
        .iter()
        .map(|d| (d.step.wall() / MS, d.reason))
        .collect();
    assert_eq!(
        dropped,
        vec![
            (50, DropReason::Warmup),
            (40, DropReason::Warmup),
            (4, DropReason::Outlier),
            (21, DropReason::Outlier)
        ]
    );
    // No more steps than warm-up steps: none is warm-up (that would leave nothing); the
    // outlier rule still applies.
    let r = &find_steps(&run, &classes, 20)[0];
    assert_eq!(
        (r.decode.len(), r.dropped_warmup, r.dropped_outliers),
        (6, 0, 4)
    );
}

#[test]
fn slow_outliers_are_stalls_numbered_after_warm_up_and_fast_ones_are_not() {
    let mut b = TraceBuilder::new(0);
    // After 2 warm-up steps: 10,10,30,10,4,10,25,10 → median 10; 30 and 25 stalled (steps 3 and
    // 7 of 8, at 3.0x and 2.5x), 4 is a fast outlier, not a stall.
    graph_steps(&mut b, &[50, 40, 10, 10, 30, 10, 4, 10, 25, 10]);
    let (trace, classes) = b.build();
    let (run, classes) = run_of(vec![(trace, classes)]);
    let r = &find_steps(&run, &classes, 2)[0];
    let s = super::stalls(r);
    assert_eq!((s.steps, s.positions.clone()), (8, vec![3, 7]));
    assert_eq!(s.factors, vec![3.0, 2.5]);
    assert_eq!(s.pct(), Some(25.0));
    assert_eq!(
        s.samples(),
        vec![0.0, 0.0, 100.0, 0.0, 0.0, 0.0, 100.0, 0.0]
    );
    // What they cost: (30 - 10) + (25 - 10) ms over 8 steps.
    assert_eq!(s.lost_ms(), 35.0);
    assert_eq!(s.lost_ms_per_step(), Some(35.0 / 8.0));
    assert_eq!(
        s.lost_samples(),
        vec![0.0, 0.0, 20.0, 0.0, 0.0, 0.0, 15.0, 0.0]
    );
}

#[test]
fn odd_median_half_bounds_are_exact() {
    // Median 3 ns (odd count): 1 < 1.5 dropped, 2 kept, 6 kept, 7 dropped.
    let mut b = TraceBuilder::new(0);
    for (k, w) in [1i64, 2, 3, 3, 3, 6, 7].iter().enumerate() {
        let t = k as i64 * 100 * MS;
        let c = b.launch(t, true);
        b.forward(c, t + MS, *w);
    }
    let (trace, classes) = b.build();
    let (run, classes) = run_of(vec![(trace, classes)]);
    let r = &find_steps(&run, &classes, 0)[0];
    let kept: Vec<i64> = r.decode.iter().map(Step::wall).collect();
    assert_eq!(kept, vec![2, 3, 3, 3, 6]);
    assert_eq!(r.dropped_outliers, 2);
}

#[test]
fn stage_split_files_force_the_label_and_combine_into_one_rank() {
    // -DECODE file: a gap segment becomes a decode step.
    let mut d = TraceBuilder::new(3).stage(Stage::Decode);
    d.kernel("mla", ATTN, 0, MS, 0);
    d.kernel("nvjet", GEMM, MS, MS, 0);
    // -EXTEND file of the same rank: a graph launch becomes a prefill step.
    let mut e = TraceBuilder::new(3).stage(Stage::Extend);
    let c = e.launch(50 * MS, true);
    let i = e.kernel("fmha", ATTN, 51 * MS, 3 * MS, 0);
    e.link(i, c);
    let g = e.kernel("nvjet", GEMM, 54 * MS, MS, 0);
    e.link(g, c);
    let (run, classes) = run_of(vec![d.build(), e.build()]);
    let ranks = find_steps(&run, &classes, 0);
    assert_eq!(ranks.len(), 1);
    let r = &ranks[0];
    assert_eq!(r.rank.index, 3);
    assert_eq!(r.traces, vec![0, 1]);
    assert_eq!(r.decode.len(), 1);
    assert_eq!(
        (r.decode[0].source, r.decode[0].trace),
        (StepSource::Gap, 0)
    );
    assert_eq!(r.prefill.len(), 1);
    assert_eq!(
        (r.prefill[0].source, r.prefill[0].trace),
        (StepSource::GraphLaunch, 1)
    );
    assert_eq!(r.found.decode.gap, 1);
    assert_eq!(r.found.prefill.graph_launch, 1);
}

#[test]
fn odd_input_does_not_panic() {
    // Empty trace, a zero-duration single-kernel step, a kernel linked to no launch.
    let empty = TraceBuilder::new(0);
    let mut one = TraceBuilder::new(1);
    let c = one.launch(0, true);
    one.forward(c, 10, 0);
    one.kernel("k", GEMM, 20, 0, 0);
    let (mut run, classes) = run_of(vec![empty.build(), one.build()]);
    run.traces[1].gpu[2].set_correlation(Some(999));
    let ranks = find_steps(&run, &classes, 0);
    assert_eq!(ranks.len(), 2);
    assert!(ranks[0].decode.is_empty() && ranks[0].prefill.is_empty());
    assert_eq!(ranks[1].decode.len(), 1);
    assert_eq!(ranks[1].decode[0].wall(), 0);
    // Names beyond the classification are `other`: the graph launch holds no GEMM, no step.
    let mut unclassified = classes.clone();
    unclassified[1].clear();
    let ranks = find_steps(&run, &unclassified[..1], 0);
    assert!(ranks[1].decode.is_empty());
}

#[test]
fn annotation_names_parse_mode_batch_size_and_speculative_part() {
    use super::annotations::SpecRole::{Draft, DraftExtend, Verify};
    let p = |name: &str| parse_step_annotation(name).map(|l| (l.kind, l.batch_size, l.spec));
    assert_eq!(
        p("step[DECODE bs=64]"),
        Some((Some(StepKind::Decode), Some(64), None))
    );
    assert_eq!(
        p("step[EXTEND bs=15 toks=15360]"),
        Some((Some(StepKind::Prefill), Some(15), None))
    );
    assert_eq!(
        p("step[MIXED bs=3]"),
        Some((Some(StepKind::Mixed), Some(3), None))
    );
    // Speculative decoding (SGLang's EAGLE/MTP loop): the verify is a decode forward, the draft
    // extend after it too (no prefill), and `draft `-prefixed spans are the draft model's.
    assert_eq!(
        p("step[TARGET_VERIFY bs=2]"),
        Some((Some(StepKind::Decode), Some(2), Some(Verify)))
    );
    assert_eq!(
        p("step[DRAFT_EXTEND]"),
        Some((Some(StepKind::Decode), None, Some(DraftExtend)))
    );
    assert_eq!(
        p("step[DRAFT_EXTEND_V2 bs=8]"),
        Some((Some(StepKind::Decode), Some(8), Some(DraftExtend)))
    );
    assert_eq!(
        p("draft step[DECODE bs=32]"),
        Some((Some(StepKind::Decode), Some(32), Some(Draft)))
    );
    assert_eq!(
        p("draft step[TARGET_VERIFY bs=8]"),
        Some((Some(StepKind::Decode), Some(8), Some(Draft)))
    );
    assert_eq!(
        p("draft step[EXTEND bs=4 toks=100]"),
        Some((Some(StepKind::Prefill), Some(4), None))
    );
    assert_eq!(p("step[IDLE]"), Some((None, None, None)));
    assert_eq!(p("forward"), None);
    assert_eq!(p("draft forward"), None);
}

/// A host sync call (`hipStreamSynchronize`) at `ts`, `dur` long.
fn sync(trace: &mut crate::reader::model::RankTrace, ts: i64, dur: i64) {
    let name = trace.names.intern("hipStreamSynchronize");
    let correlation = 1_000_000 + trace.launches.len() as u64;
    trace.launches.push(crate::reader::model::Launch {
        name,
        ts,
        dur,
        tid: TID,
        correlation,
        external_id: None,
        graph: false,
    });
}

/// A launch-bound eager forward from `t`: `layers` x (attention, GEMM), each kernel 20 µs and
/// launched 10 µs before it starts, 300 µs of idle GPU between kernels (the host is slower than
/// the GPU). Returns the end of the last kernel.
fn launch_bound_forward(b: &mut TraceBuilder, t: i64, layers: i64) -> i64 {
    let mut t = t;
    for _ in 0..layers {
        for (name, cat) in [("mla", ATTN), ("nvjet", GEMM)] {
            let c = b.launch(t - 10 * US, false);
            let k = b.kernel(name, cat, t, 20 * US, 0);
            b.link(k, c);
            t += 320 * US;
        }
    }
    t - 300 * US
}

#[test]
fn host_syncs_decide_when_gaps_inside_a_forward_outgrow_those_between() {
    let mut b = TraceBuilder::new(0);
    let mut ends = Vec::new();
    let mut t = 0;
    for _ in 0..5 {
        let end = launch_bound_forward(&mut b, t, 3);
        ends.push(end);
        // The sampled tokens come back (the host waits for the GPU), then 100 µs of scheduling.
        t = end + 100 * US;
    }
    let (mut trace, classes) = b.build();
    for &end in &ends {
        sync(&mut trace, end - 5 * US, 10 * US);
    }
    let (run, cls) = run_of(vec![(trace.clone(), classes.clone())]);
    let r = &find_steps(&run, &cls, 0)[0];
    let seg = &r.found.segmentation[0];
    assert_eq!(seg.method, CutMethod::HostSync);
    assert_eq!((seg.host_syncs, seg.forwards_by_host), (5, 5));
    assert_eq!(seg.attention_per_forward, Some(3));
    // Five forwards, none decided: no GEMM M, no known step, walls alike.
    assert_eq!(r.found.labelled_by.undecided, 5);
    assert_eq!(r.labels.len(), 5);
    assert!(r.labels.iter().all(|l| l.kind.is_none()));
    assert_eq!(r.labels[1].start, ends[0] + 100 * US);
    // Without the syncs the 300 µs gaps inside a forward outgrow the 100 µs between: no gap
    // stands out, nothing is cut, and the five forwards read as one.
    let (run, classes) = run_of(vec![(b_without_syncs(&trace), classes)]);
    let r = &find_steps(&run, &classes, 0)[0];
    let seg = &r.found.segmentation[0];
    assert_eq!((seg.method, seg.threshold_ns), (CutMethod::None, None));
    assert_eq!(r.found.gap_segments, 1);
}

fn b_without_syncs(trace: &crate::reader::model::RankTrace) -> crate::reader::model::RankTrace {
    let mut t = trace.clone();
    t.launches
        .retain(|l| !t.names.get(l.name).contains("Synchronize"));
    t
}

/// Gives the GEMMs of `trace` an op (`aten::mm`) whose `Input Dims` say M = `m` for the GEMMs
/// starting in `[from, to)`.
fn gemm_m(trace: &mut crate::reader::model::RankTrace, from: i64, to: i64, m: i64) {
    let dims = trace.names.intern(&format!("[[{m}, 1024], [1024, 4096]]"));
    let name = trace.names.intern("aten::mm");
    let gemm = trace.names.lookup("nvjet").unwrap();
    for i in 0..trace.gpu.len() {
        let a = &trace.gpu[i];
        if a.name != gemm || a.ts < from || a.ts >= to {
            continue;
        }
        let ext = 5_000_000 + i as u64;
        trace.cpu_ops.push(crate::reader::model::CpuOp {
            name,
            ts: a.ts - 20 * US,
            dur: 10 * US,
            tid: TID,
            external_id: Some(ext),
            input_dims: Some(dims),
            input_types: None,
        });
        trace.gpu[i].set_external_id(Some(ext));
    }
}

#[test]
fn gemm_m_tells_prefill_from_decode_and_a_lone_forward_stays_undecided() {
    let mut b = TraceBuilder::new(0);
    // Four forwards alike in every way but M: one prefill (4096 tokens), three decodes (16).
    let mut t = 0;
    let mut starts = Vec::new();
    for _ in 0..4 {
        starts.push(t);
        t = eager_forward(&mut b, t, 2, 20 * US) + 2 * MS;
    }
    let (mut trace, classes) = b.build();
    gemm_m(&mut trace, starts[0], starts[1], 16);
    gemm_m(&mut trace, starts[1], starts[2], 4096);
    gemm_m(&mut trace, starts[2], i64::MAX, 16);
    let (run, cls) = run_of(vec![(trace.clone(), classes.clone())]);
    let r = &find_steps(&run, &cls, 0)[0];
    assert_eq!((r.decode.len(), r.prefill.len()), (3, 1));
    assert_eq!(r.prefill[0].start, starts[1]);
    assert_eq!(r.found.labelled_by.gemm_m, 4);
    assert_eq!(r.labels[1].gemm_m, Some(4096));
    assert_eq!(r.labels[1].evidence, Evidence::GemmM);
    // M the same everywhere: M cannot tell, nor can anything else; never guessed.
    gemm_m(&mut trace, 0, i64::MAX, 16);
    trace
        .cpu_ops
        .retain(|op| trace.names.get(op.input_dims.unwrap()).starts_with("[[16,"));
    let (run, cls) = run_of(vec![(trace, classes)]);
    let r = &find_steps(&run, &cls, 0)[0];
    assert!(r.decode.is_empty() && r.prefill.is_empty());
    assert_eq!(r.found.labelled_by.undecided, 4);
    assert!(r.unassigned_ns > 0);
}

#[test]
fn a_given_step_gap_overrides_the_chosen_threshold() {
    let mut b = TraceBuilder::new(0);
    let mut t = eager_forward(&mut b, 0, 2, 200 * US);
    for gap in [100, 3000, 150] {
        t = eager_forward(&mut b, t + gap * US, 2, 20 * US);
    }
    let (trace, classes) = b.build();
    let (run, classes) = run_of(vec![(trace, classes)]);
    let opts = StepOptions {
        warmup: 0,
        step_gap: Some(MS),
    };
    let r = &find_steps_with(&run, &classes, &opts)[0];
    let seg = &r.found.segmentation[0];
    assert_eq!(seg.method, CutMethod::Given);
    assert_eq!(seg.threshold_ns, Some(MS));
    // Only the 3 ms gap is at least 1 ms: two segments of two forwards each.
    assert_eq!(r.found.gap_segments, 2);
    assert!(seg
        .describe()
        .starts_with("cut at the given gap threshold 1.00 ms"));
    // Chosen from the run: four forwards.
    let r = &find_steps(&run, &classes, 0)[0];
    assert_eq!(r.found.gap_segments, 4);
}

#[test]
fn the_threshold_sits_in_the_largest_jump_above_the_floor() {
    use segment::{breaks, GAP_FLOOR_NS};
    // Inside forwards 2-8 µs, between 0.1-4 ms: the break is 8 µs → 100 µs.
    let gaps = [2, 5, 8, 3, 100, 180, 4000, 300, 700, 1200, 2500, 7].map(|g| g * US);
    let b = breaks(&gaps);
    assert_eq!((b[0].below, b[0].above), (8 * US, 100 * US));
    assert_eq!(b[0].threshold(), GAP_FLOOR_NS);
    // Jumps below the floor are no break: 1 µs → 40 µs, all below 50 µs.
    assert!(breaks(&[US, 40 * US, 45 * US]).is_empty());
    // A jump under 4x is no break.
    assert!(breaks(&[100 * US, 300 * US]).is_empty());
    // The geometric middle when it is above the floor: 1 ms → 100 ms gives 10 ms.
    assert_eq!(breaks(&[MS, 100 * MS])[0].threshold(), 10 * MS);
}

#[test]
fn step_gap_durations_parse_with_a_unit() {
    use segment::parse_duration;
    assert_eq!(parse_duration("500us"), Ok(500 * US));
    assert_eq!(parse_duration("500µs"), Ok(500 * US));
    assert_eq!(parse_duration("2ms"), Ok(2 * MS));
    assert_eq!(parse_duration("0.25 ms"), Ok(250 * US));
    assert_eq!(parse_duration("1s"), Ok(1000 * MS));
    assert_eq!(parse_duration("80ns"), Ok(80));
    for bad in ["5", "ms", "-1ms", "2 hours", "0us", "1e9s"] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
}

/// `n` speculative iterations 10 ms apart, as SGLang's EAGLE/MTP loop runs them: the draft
/// model's decode steps (one graph, 0.5 ms; `draft step[DECODE ...]` when `named`), the target's
/// `step[TARGET_VERIFY ...]` (a graph, 5 ms, 0.1 ms later), the draft extend
/// (`step[DRAFT_EXTEND_V2 ...]`, eager, 0.4 ms, 0.1 ms later), then 3.9 ms of host time; and the
/// next iteration's draft forward, cut by the end of the window.
fn spec_loop(b: &mut TraceBuilder, n: i64, named: bool) {
    let draft = |b: &mut TraceBuilder, t: i64| {
        if named {
            b.annotation("draft step[DECODE bs=8]", t, 50 * US, TID);
        }
        let c = b.launch(t + 10 * US, true);
        b.forward(c, t + 100 * US, 500 * US);
    };
    for k in 0..n {
        let t = k * 10 * MS;
        draft(b, t);
        b.annotation("step[TARGET_VERIFY bs=8]", t + 650 * US, 40 * US, TID);
        let c = b.launch(t + 660 * US, true);
        b.forward(c, t + 700 * US, 5 * MS);
        b.annotation("step[DRAFT_EXTEND_V2 bs=8]", t + 5750 * US, 40 * US, TID);
        let c = b.launch(t + 5760 * US, false);
        b.forward(c, t + 5800 * US, 400 * US);
    }
    draft(b, n * 10 * MS);
}

#[test]
fn a_target_verify_and_its_draft_forwards_are_one_decode_iteration() {
    for (named, stage) in [
        (false, None),
        (true, None),
        (false, Some(Stage::Extend)),
        (false, Some(Stage::Decode)),
    ] {
        let mut b = TraceBuilder::new(0);
        if let Some(stage) = stage {
            b = b.stage(stage);
        }
        spec_loop(&mut b, 6, named);
        let (run, classes) = run_of(vec![b.build()]);
        let r = &find_steps(&run, &classes, 0)[0];
        let what = format!("named {named}, stage {stage:?}");
        // Read by its annotation, whatever file SGLang put it in (sgl-project/sglang#34942).
        assert!(r.prefill.is_empty(), "{what}");
        assert_eq!(r.decode.len(), 6, "{what}");
        for (k, d) in r.decode.iter().enumerate() {
            let t = k as i64 * 10 * MS;
            assert_eq!(d.activities.len(), 6, "{what}");
            assert_eq!((d.start, d.end), (t + 100 * US, t + 6200 * US), "{what}");
            assert_eq!(d.batch_size, Some(8));
            // The forward: the draft and verify forwards' own time, not the gaps between them.
            assert_eq!(d.wall(), 5900 * US, "{what}");
            let s = d.spec.unwrap();
            assert_eq!(s.drafts, 2);
            assert_eq!((s.draft_ns, s.verify_ns), (900 * US, 5 * MS));
            assert_eq!((s.draft_kernel_ns, s.verify_kernel_ns), (900 * US, 5 * MS));
        }
        assert_eq!(r.found.spec_iterations, 6);
        assert_eq!(r.found.spec_drafts, 12);
        // The next iteration's draft, cut by the window: other-label time, in no iteration.
        assert_eq!(r.found.spec_orphans, 1);
        assert_eq!(r.mix.other_label, 500 * US);
        assert_eq!(r.unassigned_ns, 0);
        // One iteration from a first draft to the next; the host gap is after the draft extend.
        assert_eq!(r.iterations.len(), 5, "{what}");
        for it in &r.iterations {
            assert_eq!((it.iter_ns(), it.gap_ns()), (10 * MS, 3900 * US));
        }
        assert!(r.found.how().contains("6 speculative iterations"));
    }
}

#[test]
fn draft_forwards_split_at_the_host_gap_whichever_side_is_longer() {
    // Without names (every draft graph-launched), the split follows the gaps: an extend 2 ms after
    // its verify still ends that iteration when the host's gap is longer.
    let mut b = TraceBuilder::new(0);
    for k in 0..4 {
        let t = k * 20 * MS;
        let c = b.launch(t, true);
        b.forward(c, t + 100 * US, 500 * US);
        b.annotation("step[TARGET_VERIFY bs=4]", t + 650 * US, 40 * US, TID);
        let c = b.launch(t + 660 * US, true);
        b.forward(c, t + 700 * US, 5 * MS);
        let c = b.launch(t + 7 * MS, true);
        b.forward(c, t + 7700 * US, 400 * US);
    }
    let (run, classes) = run_of(vec![b.build()]);
    let r = &find_steps(&run, &classes, 0)[0];
    assert_eq!(r.decode.len(), 4);
    for (k, d) in r.decode.iter().enumerate() {
        let t = k as i64 * 20 * MS;
        assert_eq!((d.start, d.end), (t + 100 * US, t + 8100 * US));
        assert_eq!(d.spec.unwrap().drafts, 2);
    }
    assert_eq!(r.found.spec_orphans, 0);
}

/// `n` ProfilerStep iterations 10 ms apart, each a GEMM launched from the main thread and an
/// allreduce launched from another (the autograd thread), 4 ms of GPU work; returns each
/// iteration's kernels.
fn profiler_loop(b: &mut TraceBuilder, n: i64) -> Vec<Vec<u32>> {
    (0..n)
        .map(|k| {
            let t = k * 10 * MS;
            b.annotation(&format!("ProfilerStep#{}", k + 7), t, 2 * MS, TID);
            let c1 = b.launch(t + 100 * US, false);
            let c2 = b.launch_on(t + MS, TID + 1);
            let g = b.kernel("nvjet_tst", GEMM, t + 200 * US, 3 * MS, 0);
            let a = b.allreduce("ncclDevKernel_AllReduce", t + 3200 * US, MS, 1);
            b.link(g, c1);
            b.link(a, c2);
            vec![g, a]
        })
        .collect()
}

#[test]
fn three_or_more_profiler_steps_without_a_serving_step_are_a_loop_of_their_iterations() {
    let mut b = TraceBuilder::new(0);
    let kernels = profiler_loop(&mut b, 4);
    // A kernel launched outside every ProfilerStep is in no iteration.
    let stray = b.kernel("nvjet_tst", GEMM, 45 * MS, MS, 0);
    let c = b.launch(44 * MS, false);
    b.link(stray, c);
    let (run, classes) = run_of(vec![b.build()]);
    let ranks = find_steps(&run, &classes, 2);
    let r = &ranks[0];
    assert!(r.decode.is_empty() && r.prefill.is_empty() && r.dropped.is_empty());
    assert_eq!(r.loop_steps.len(), 4);
    for (step, acts) in r.loop_steps.iter().zip(&kernels) {
        // Both threads' launches: the allreduce is launched off the annotation's thread.
        assert_eq!(&step.activities, acts);
    }
    assert_eq!(r.main_steps().len(), 4);
    // 4 iterations, 3 between them: from one's first kernel to the next one's.
    let iters: Vec<i64> = r.iterations.iter().map(Iteration::iter_ns).collect();
    assert_eq!(iters, vec![10 * MS; 3]);
    assert_eq!(r.iterations[0].idle_ns(), 10 * MS - 4 * MS);
    assert_eq!(r.found.loop_iterations, 4);
    assert_eq!(r.found.profiler_steps, 4);
    assert_eq!(r.unassigned_ns, MS);
    assert_eq!(r.mix.loop_iterations, 16 * MS);
    assert_eq!(r.mix.unassigned, MS);
    assert!(r.found.how().contains("4 ProfilerStep iterations"));
}

#[test]
fn two_profiler_steps_or_a_serving_step_are_no_loop() {
    let mut b = TraceBuilder::new(0);
    profiler_loop(&mut b, 2);
    let (run, classes) = run_of(vec![b.build()]);
    let r = &find_steps(&run, &classes, 2)[0];
    assert!(r.loop_steps.is_empty());
    assert_eq!(r.found.profiler_steps, 2);
    assert_eq!(r.found.loop_iterations, 0);
    assert_eq!(
        r.found.annotations_seen,
        vec![("ProfilerStep#N".to_string(), 2)]
    );

    // A graph-launched decode step makes it a serving run, whatever ProfilerSteps it holds.
    let mut b = TraceBuilder::new(0);
    profiler_loop(&mut b, 4);
    let c = b.launch(50 * MS, true);
    b.forward(c, 51 * MS, MS);
    let (run, classes) = run_of(vec![b.build()]);
    let r = &find_steps(&run, &classes, 0)[0];
    assert!(r.loop_steps.is_empty());
    assert_eq!(r.decode.len(), 1);
}

#[test]
fn a_diffusion_pipeline_gets_no_step_at_all() {
    let mut b = TraceBuilder::new(0);
    graph_steps(&mut b, &[5, 5, 5, 5]);
    b.annotation("execute_diffusion_1_256x256", 0, 400 * MS, TID);
    let (run, classes) = run_of(vec![b.build()]);
    let r = &find_steps(&run, &classes, 0)[0];
    assert!(r.decode.is_empty() && r.prefill.is_empty() && r.mixed.is_empty());
    assert_eq!(r.found.diffusion_calls, 1);
    assert_eq!(
        r.found.diffusion_name.as_deref(),
        Some("execute_diffusion_1_256x256")
    );
    assert_eq!(r.unassigned_ns, 4 * 5 * MS);
}
