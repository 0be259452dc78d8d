use std::path::PathBuf;

use super::gemm::{gemm_shape, gemm_throughput};
use super::join::{attribute, join, JoinMethod, Refusal, ReplayKernel};
use crate::reader::{Capture, CaptureKind, CaptureLaunch, CaptureOp};

fn op(name: &str, ts: i64, dims: &[&[u64]]) -> CaptureOp {
    CaptureOp {
        name: name.into(),
        ts,
        input_dims: dims.iter().map(|d| d.to_vec()).collect(),
        input_types: vec!["c10::BFloat16".into(); dims.len()],
    }
}

fn launch(kernel: &str, node: Option<u64>) -> CaptureLaunch {
    CaptureLaunch {
        kind: CaptureKind::Kernel,
        kernel: kernel.into(),
        ts: 0,
        tid: "1".into(),
        correlation: None,
        graph_node: node,
        op: None,
        library_op: None,
        python: Vec::new(),
    }
}

fn kernel(name: &str, dur_ns: i64, node: Option<u64>) -> ReplayKernel {
    ReplayKernel {
        kind: CaptureKind::Kernel,
        name: name.into(),
        dur_ns,
        graph_node: node,
    }
}

fn capture(launches: Vec<CaptureLaunch>) -> Capture {
    Capture {
        file: PathBuf::from("bs_32.json"),
        launches,
    }
}

#[test]
fn aten_mm_takes_b_as_k_by_n_and_aiter_as_n_by_k() {
    let mm = gemm_shape(&op("aten::mm", 0, &[&[32, 4096], &[4096, 6144]])).unwrap();
    let aiter = gemm_shape(&op("aiter::gemm_a16w16", 0, &[&[32, 4096], &[6144, 4096]])).unwrap();
    assert_eq!((mm.m, mm.n, mm.k), (32, 6144, 4096));
    assert_eq!((aiter.m, aiter.n, aiter.k), (32, 6144, 4096));
    // Read the other way, the inner dimensions disagree: no GEMM.
    assert!(gemm_shape(&op("aten::mm", 0, &[&[32, 4096], &[6144, 4096]])).is_none());
    assert!(gemm_shape(&op("aiter::gemm_a16w16", 0, &[&[32, 4096], &[4096, 6144]])).is_none());
    // TraceLens's counts: 2·M·N·K, and A, B and the output once each at 2 bytes.
    assert_eq!(mm.flops(), 2.0 * 32.0 * 6144.0 * 4096.0);
    assert_eq!(
        mm.bytes(),
        (32.0 * 4096.0 + 4096.0 * 6144.0 + 32.0 * 6144.0) * 2.0
    );
}

#[test]
fn names_align_past_a_kernel_missing_on_either_side() {
    let captured: Vec<_> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|n| launch(n, None))
        .collect();
    // "b" was not replayed, "x" and "y" were never captured.
    let replayed: Vec<_> = ["a", "c", "x", "d", "e", "y"]
        .iter()
        .map(|n| kernel(n, 1, None))
        .collect();
    let j = join(&captured, &replayed);
    assert_eq!(j.method, JoinMethod::KernelNames);
    assert_eq!(j.pairs, [Some(0), Some(2), None, Some(3), Some(4), None]);
    assert_eq!(j.matched(), 4);

    // Forty launches, one not replayed: every replayed kernel found, attribution given.
    let names: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    let c = capture(names.iter().map(|n| launch(n, None)).collect());
    let replayed: Vec<_> = names
        .iter()
        .filter(|n| *n != "k17")
        .map(|n| kernel(n, 1, None))
        .collect();
    let a = attribute(&c, None, &replayed, None).unwrap();
    assert_eq!(
        (a.join.method, a.join.matched()),
        (JoinMethod::KernelNames, 39)
    );
    assert_eq!(a.join.pairs[17], Some(18));
}

#[test]
fn graph_node_ids_win_over_names_where_both_sides_carry_them() {
    let captured = vec![launch("a", Some(10)), launch("b", Some(11))];
    let replayed = [kernel("b", 1, Some(11)), kernel("a", 1, Some(10))];
    let j = join(&captured, &replayed);
    assert_eq!(j.method, JoinMethod::GraphNode);
    assert_eq!(j.pairs, [Some(1), Some(0)]);
}

#[test]
fn position_stands_in_only_for_equal_counts() {
    let captured: Vec<_> = ["a", "b", "c"].iter().map(|n| launch(n, None)).collect();
    let renamed = [
        kernel("x", 1, None),
        kernel("y", 1, None),
        kernel("z", 1, None),
    ];
    let c = capture(captured.clone());
    let same_count = attribute(&c, None, &renamed, None).unwrap();
    assert_eq!(same_count.join.method, JoinMethod::Position);
    assert_eq!(same_count.join.pairs, [Some(0), Some(1), Some(2)]);

    let one_more = [
        kernel("x", 1, None),
        kernel("y", 1, None),
        kernel("z", 1, None),
        kernel("w", 1, None),
    ];
    let refusal = attribute(&c, None, &one_more, None).unwrap_err();
    assert!(matches!(
        refusal,
        Refusal::LowMatch {
            method: JoinMethod::KernelNames,
            matched: 0,
            replayed: 4,
            captured: 3
        }
    ));
    let said = refusal.to_string();
    assert!(said.contains("4 replayed, 3 captured"), "{said}");
}

#[test]
fn a_capture_of_another_batch_is_refused() {
    let c = capture(vec![launch("a", None)]);
    let replayed = [kernel("a", 1, None)];
    let refusal = attribute(&c, Some(32), &replayed, Some(64)).unwrap_err();
    assert_eq!(
        refusal,
        Refusal::OtherBatch {
            capture: 32,
            replay: 64
        }
    );
    assert!(refusal.to_string().contains("batch 32"));
    assert!(attribute(&c, Some(64), &replayed, Some(64)).is_ok());
}

#[test]
fn gemm_throughput_is_the_median_call_of_each_op_and_shape() {
    // Three calls of one shape, each one kernel under aten::mm under aiter; one call is slow.
    let mut launches = Vec::new();
    for call in 0..3 {
        let mut l = launch("gemm", None);
        l.op = Some(op(
            "aten::mm",
            call * 100 + 1,
            &[&[32, 4096], &[4096, 4096]],
        ));
        l.library_op = Some(op(
            "aiter::gemm_a16w16",
            call * 100,
            &[&[32, 4096], &[4096, 4096]],
        ));
        launches.push(l);
    }
    let c = capture(launches);
    let replayed = [
        kernel("gemm", 10_000, None),
        kernel("gemm", 30_000, None),
        kernel("gemm", 12_000, None),
    ];
    let a = attribute(&c, None, &replayed, None).unwrap();
    let out = gemm_throughput(&a);
    let ops: Vec<&str> = out.iter().map(|g| g.shape.op.as_str()).collect();
    assert_eq!(ops, ["aiter::gemm_a16w16", "aten::mm"]);
    for g in &out {
        assert_eq!((g.calls, g.median_ns), (3, 12_000.0));
        let flops = 2.0 * 32.0 * 4096.0 * 4096.0;
        assert!((g.tflops - flops / 12e-6 / 1e12).abs() < 1e-9);
        let bytes = (32.0 * 4096.0 * 2.0 + 4096.0 * 4096.0) * 2.0;
        assert!((g.tbps - bytes / 12e-6 / 1e12).abs() < 1e-12);
    }
}
