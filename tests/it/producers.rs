//! What producers of 2026 write beside the rank traces (issue 38): vLLM's frontend trace, a
//! CPU-only `async_llm` file with no rank, is left out with a line saying so; a CPU-only file that
//! names a rank is a worker that recorded no GPU work, and is refused.

use std::path::{Path, PathBuf};

use crate::common::{self, assert_exit, tracegate};

/// A CPU-only trace as vLLM's frontend writes it: host ops and an annotation, no GPU event.
/// `distributed` adds a `distributedInfo`.
fn cpu_only_trace(dir: &Path, name: &str, distributed: bool) -> PathBuf {
    let info = if distributed {
        r#", "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 4}"#
    } else {
        ""
    };
    let text = format!(
        r#"{{"schemaVersion": 1, "traceEvents": [
  {{"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "pid": 11, "tid": 11, "ts": 100, "dur": 5, "args": {{}}}},
  {{"ph": "X", "cat": "user_annotation", "name": "AsyncLLM.generate", "pid": 11, "tid": 11, "ts": 90, "dur": 50, "args": {{}}}}
]{info}}}"#
    );
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A vLLM-style run's worker traces copied into a fresh directory.
fn workers_in(dir: &Path) -> PathBuf {
    let run = common::synth_run(&["--scenario", "vllm-eager", "--seed", "5"]);
    let out = dir.join("run");
    std::fs::create_dir_all(&out).unwrap();
    for e in std::fs::read_dir(&run).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().contains(".json") && !p.ends_with("truth.json") {
            std::fs::copy(&p, out.join(p.file_name().unwrap())).unwrap();
        }
    }
    out
}

#[test]
fn vllms_frontend_trace_beside_the_workers_is_skipped_and_said() {
    let tmp = tempfile::tempdir().unwrap();
    let run = workers_in(tmp.path());
    let before = common::extract_json_output(&run);
    assert_exit(&before, 0);
    cpu_only_trace(
        &run,
        "host_4242.async_llm.1767000000000000000.pt.trace.json",
        false,
    );
    let out = common::extract_json_output(&run);
    assert_exit(&out, 0);
    let x: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let y: serde_json::Value = serde_json::from_slice(&before.stdout).unwrap();
    assert_eq!(
        x["metrics"], y["metrics"],
        "the figures are the workers' alone"
    );
    assert!(
        x["warnings"].as_array().unwrap().iter().any(|w| {
            let w = w.as_str().unwrap();
            w.contains("async_llm") && w.contains("skipped: a CPU-only trace that names no rank")
        }),
        "{}",
        x["warnings"]
    );
    let inspect = tracegate().arg("inspect").arg(&run).output().unwrap();
    assert_exit(&inspect, 0);
    assert!(String::from_utf8_lossy(&inspect.stdout).contains("Skipped"));
}

#[test]
fn a_frontend_trace_alone_and_a_cpu_only_rank_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let alone = cpu_only_trace(tmp.path(), "host_1.async_llm.1.pt.trace.json", false);
    let out = tracegate().arg("extract").arg(&alone).output().unwrap();
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a serving frontend's CPU-only trace"),
        "{stderr}"
    );
    // A CPU-only file that says it is rank 0 is a worker that recorded no GPU work.
    let run = workers_in(tmp.path());
    cpu_only_trace(&run, "extra.pt.trace.json", true);
    let out = tracegate().arg("extract").arg(&run).output().unwrap();
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("extra.pt.trace.json: no GPU activity: 2 events, 1 CPU ops"),
        "{stderr}"
    );
}

/// Stock vLLM v0.16+ as it writes a profile directory (synth `vllm-stock`): worker files named
/// by their parallel ranks, the default `execute_context_…` step annotation, `vllm_version` at
/// the top level, and the frontend's trace beside the workers'.
#[test]
fn a_stock_vllm_directory_baselines_and_gates_with_its_version_on_the_image_line() {
    let clean = common::synth_run(&["--scenario", "vllm-stock", "--seed", "3"]);
    let names: Vec<String> = std::fs::read_dir(&clean)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.contains("_dp0_pp0_tp3_dcp0_ep3_rank3."))
            && names.iter().any(|n| n.contains(".async_llm.")),
        "{names:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let baseline = tmp.path().join("vllm.toml");
    let new = common::baseline_new(&clean, &baseline, &[]);
    assert_exit(&new, 0);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(text.contains("vllm = \"0.16.1\""), "{text}");

    let check = |run: &Path| common::check_with(run, &baseline, &["--format", "markdown"]);
    let out = check(&clean);
    assert_exit(&out, 0);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("vllm `0.16.1`"), "{md}");
    assert!(
        md.contains("async\\_llm") && md.contains("names no rank"),
        "the frontend file is said to be skipped: {md}"
    );

    let slow = common::synth_run(&[
        "--scenario",
        "vllm-stock",
        "--seed",
        "3",
        "--inject",
        "host-gap=2",
    ]);
    let out = check(&slow);
    assert_exit(&out, 1);
    assert!(String::from_utf8_lossy(&out.stdout).contains("decode\\_host\\_gap\\_ms"));

    let report = tracegate().arg("report").arg(&clean).output().unwrap();
    assert_exit(&report, 0);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("from vLLM's execute_context_…_generation_… annotations"),
        "{text}"
    );
}
