//! `tracegate inspect` on real traces: counts agree with an independent full parse.

use crate::common;

use std::path::PathBuf;

use crate::common::{
    fixture, independent_counts, inspect_json, inspected_counts, load_json, run_ok, tracegate,
};

#[test]
fn fixture_counts_agree_with_an_independent_parse() {
    for name in [
        "mi250_minitoy.json.gz",
        "sglang_qwen3_decode.json.gz",
        "vllm_gptoss_decode_graph.json.gz",
    ] {
        let path = fixture(name);
        let json = inspect_json(&[&path]);
        assert_eq!(json["ranks"].as_array().unwrap().len(), 1, "{name}");
        assert_eq!(
            inspected_counts(&json["ranks"][0]),
            independent_counts(&load_json(&path)),
            "{name}"
        );
    }
}

#[test]
fn graph_launch_with_many_kernels_is_seen() {
    let json = inspect_json(&[&fixture("sglang_qwen3_decode.json.gz")]);
    let graphs = &json["ranks"][0]["graph_launches"];
    assert_eq!(graphs["launches"], 1);
    assert_eq!(graphs["max_kernels_per_launch"], 544);
    assert_eq!(json["ranks"][0]["device"], "AMD Instinct MI300X");
}

/// SGLang's merged file: string pids `"[TP0r] pid"`, ids that repeat across ranks.
fn merged_trace(ranks: u32) -> String {
    let mut events = Vec::new();
    for r in 0..ranks {
        let cpu = format!("\"[TP{r:02}] 251\"");
        let gpu = format!("\"[TP{r:02}] {r}\"");
        events.push(format!(r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": {cpu}, "tid": 251, "ts": 100, "dur": 50, "args": {{"External id": 7, "Input Dims": [[64, 7168], [7168, 1536]]}}}}"#));
        events.push(format!(r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {cpu}, "tid": 251, "ts": 110, "dur": 5, "args": {{"External id": 7, "correlation": 9}}}}"#));
        for k in 0..=r {
            events.push(format!(r#"{{"ph": "X", "cat": "kernel", "name": "nvjet_tst_64x32", "pid": {gpu}, "tid": 7, "ts": {ts}.5, "dur": 10.25, "args": {{"stream": 7, "correlation": 9, "External id": 7}}}}"#, ts = 200 + 20 * k));
        }
        events.push(format!(r#"{{"ph": "X", "cat": "python_function", "name": "forward", "pid": {cpu}, "tid": 251, "ts": 90, "dur": 100}}"#));
    }
    events.push(r#"{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 0, "dur": 1000}"#.into());
    format!(
        r#"{{"schemaVersion": 1, "deviceProperties": [{{"id": 0, "name": "NVIDIA B200"}}, {{"id": 1, "name": "NVIDIA B200"}}, {{"id": 2, "name": "NVIDIA B200"}}], "distributedInfo": {{"backend": "nccl", "rank": 0, "world_size": {ranks}}}, "traceEvents": [{}]}}"#,
        events.join(",\n")
    )
}

#[test]
fn merged_file_splits_into_ranks_and_keys_links_by_rank() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("merged-123.trace.json.gz");
    std::fs::write(&path, common::gzip(merged_trace(3).as_bytes())).unwrap();
    let json = inspect_json(&[&path]);
    let ranks = json["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 3);
    for (r, rank) in ranks.iter().enumerate() {
        assert_eq!(rank["rank"], r as u64);
        assert_eq!(rank["label"], format!("TP{r:02}"));
        assert_eq!(rank["rank_source"], "process_label");
        assert_eq!(rank["kernels"], r as u64 + 1);
        // Correlation 9 and External id 7 repeat in every rank: each rank links its own.
        assert_eq!(rank["links"]["kernels_with_launch"], r as u64 + 1);
        assert_eq!(rank["links"]["kernels_with_cpu_op"], r as u64 + 1);
        assert_eq!(rank["input_dims"]["with_dims"], 1);
        assert_eq!(rank["read"]["python_functions_skipped"], 1);
        assert_eq!(rank["read"]["unattributed_events"], 1);
        assert_eq!(rank["device"], "NVIDIA B200");
    }
    // 0.5 µs fractional start, 10.25 µs duration: exact to the nanosecond.
    assert_eq!(ranks[0]["gpu_span_ms"], 0.01025);
}

#[test]
fn inspect_table_answers_the_input_dims_question() {
    tracegate()
        .args(["inspect", "--format", "markdown"])
        .arg(fixture("mi250_minitoy.json.gz"))
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "| rank | cpu ops | with dims | empty dims | no Input Dims |",
        ));
}

#[test]
fn one_graph_launched_decode_iteration_gives_decode_figures() {
    let out = run_ok(
        tracegate()
            .args(["extract", "--format", "json"])
            .arg(fixture("sglang_qwen3_decode.json.gz")),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["steps"]["0"]["decode_kept"], 1);
    // SGLang wraps the forward in `step[DECODE bs=32]`, which holds the hipGraphLaunch.
    assert_eq!(json["steps"]["0"]["found"]["decode"]["annotation"], 1);
    // Independent: the span of the GPU activities whose launch starts inside the annotation.
    let trace = common::load_json(&fixture("sglang_qwen3_decode.json.gz"));
    let events = trace["traceEvents"].as_array().unwrap();
    let step = events
        .iter()
        .find(|e| e["name"] == "step[DECODE bs=32]")
        .unwrap();
    let (from, to) = (
        step["ts"].as_f64().unwrap(),
        step["ts"].as_f64().unwrap() + step["dur"].as_f64().unwrap(),
    );
    let launched: std::collections::HashSet<u64> = events
        .iter()
        .filter(|e| e["cat"] == "cuda_runtime" && e["tid"] == step["tid"])
        .filter(|e| (from..=to).contains(&e["ts"].as_f64().unwrap()))
        .filter_map(|e| e["args"]["correlation"].as_u64())
        .collect();
    let kernels: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| {
            matches!(
                e["cat"].as_str(),
                Some("kernel" | "gpu_memcpy" | "gpu_memset")
            )
        })
        .filter(|e| {
            e["args"]["correlation"]
                .as_u64()
                .is_some_and(|c| launched.contains(&c))
        })
        .collect();
    let start = kernels
        .iter()
        .map(|e| e["ts"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let end = kernels
        .iter()
        .map(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let wall_ms = (end - start) / 1000.0;
    let got = json["metrics"]["decode_step_ms"]["value"].as_f64().unwrap();
    assert!((got - wall_ms).abs() < 1e-3, "{got} vs {wall_ms}");
}
