//! The extra tier: every real trace in `../shared/traces`. Each test is `#[ignore]`d with the
//! reason, so a clone without the traces lists them as ignored, not passed; `.ci/run` runs them
//! with `-- --include-ignored` and fails when the traces are absent (docs/ARCHITECTURE.md, Tests).

use std::path::{Path, PathBuf};

use crate::common::{
    extract_json_output, independent_counts, inspect_json, inspected_counts, load_json, run_ok,
    shared_traces, tracegate,
};

fn all_trace_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(".json")
                || p.to_string_lossy().ends_with(".json.gz")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn inspect_reads_every_real_trace() {
    let dir = shared_traces();
    let files = all_trace_files(&dir);
    assert!(
        files.len() >= 20,
        "expected the 23 shared traces, found {}",
        files.len()
    );
    for file in files {
        run_ok(tracegate().arg("inspect").arg(&file));
    }
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn dlrm_set_is_one_run_of_eight_ranks() {
    let dir = shared_traces();
    let json = inspect_json(&[&dir.join("param/dlrm_kineto")]);
    let ranks = json["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8);
    for (r, rank) in ranks.iter().enumerate() {
        assert_eq!(rank["rank"], r as u64);
        assert_eq!(rank["rank_source"], "distributed_info");
        assert_eq!(rank["world_size"], 8);
    }
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn real_trace_counts_agree_with_an_independent_parse() {
    let dir = shared_traces();
    for rel in [
        "tracelens/b200/eager_trace.json.gz",
        "hta/trace_diff/control/control.json.gz",
        "param/dlrm_kineto/worker3_step_12.1694128201557.pt.trace.json",
        "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    ] {
        let path = dir.join(rel);
        let json = inspect_json(&[&path]);
        assert_eq!(
            inspected_counts(&json["ranks"][0]),
            independent_counts(&load_json(&path)),
            "{rel}"
        );
    }
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn python_function_events_are_counted_and_only_frames_around_a_launch_kept() {
    let dir = shared_traces();
    let path = dir.join("tracelens/inference/xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz");
    let json = inspect_json(&[&path]);
    let trace = load_json(&path);
    let events = trace["traceEvents"].as_array().unwrap();
    let ns = |e: &serde_json::Value, key: &str| (e[key].as_f64().unwrap() * 1000.0).round() as i64;
    let python: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["cat"] == "python_function")
        .collect();
    assert!(python.len() > 200_000);
    // The frames the reader keeps, counted here from the JSON: at least 500 ns, and a runtime
    // launch on their thread starting inside them.
    let mut launches: std::collections::HashMap<String, Vec<i64>> = Default::default();
    for e in events
        .iter()
        .filter(|e| matches!(e["cat"].as_str(), Some("cuda_runtime" | "cuda_driver")))
    {
        launches
            .entry(e["tid"].to_string())
            .or_default()
            .push(ns(e, "ts"));
    }
    for starts in launches.values_mut() {
        starts.sort_unstable();
    }
    let kept = python
        .iter()
        .filter(|f| f["ph"] == "X" && ns(f, "dur") >= 500)
        .filter(|f| {
            let (ts, end) = (ns(f, "ts"), ns(f, "ts") + ns(f, "dur"));
            launches.get(&f["tid"].to_string()).is_some_and(|starts| {
                let i = starts.partition_point(|&t| t < ts);
                starts.get(i).is_some_and(|&t| t <= end)
            })
        })
        .count() as u64;
    let read = &json["ranks"][0]["read"];
    assert_eq!(read["python_functions_skipped"], python.len() as u64);
    assert_eq!(read["python_frames_kept"], kept);
    assert!(
        kept > 0 && kept < python.len() as u64 / 2,
        "{kept} of {}",
        python.len()
    );
}

fn extract_status(path: &Path) -> (Option<i32>, String, String) {
    let out = extract_json_output(path);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn extract_gives_figures_for_decode_traces_and_exit_2_for_the_rest() {
    let dir = shared_traces();
    for rel in [
        "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
        "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
    ] {
        let (code, stdout, stderr) = extract_status(&dir.join(rel));
        assert_eq!(code, Some(0), "{rel}: {stderr}");
        let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert!(
            json["metrics"]["decode_step_ms"]["value"].as_f64().unwrap() > 1.0,
            "{rel}"
        );
    }
    // A prefill-only split and a mixed (chunked prefill) forward: runs with their own metrics.
    // The B200 vLLM trace holds one forward under vLLM's default annotation,
    // `execute_context_1(888_788544)_generation_0(0)`: a prefill step (issue 38).
    for (rel, metric) in [
        (
            "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
            "prefill_step_ms",
        ),
        ("tracelens/b200/eager_trace.json.gz", "prefill_step_ms"),
        (
            "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
            "mixed_step_ms",
        ),
    ] {
        let (code, stdout, stderr) = extract_status(&dir.join(rel));
        assert_eq!(code, Some(0), "{rel}: {stderr}");
        let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert!(
            json["metrics"][metric]["value"].as_f64().unwrap() > 1.0,
            "{rel}"
        );
        assert!(json["metrics"].get("decode_step_ms").is_none(), "{rel}");
    }
    // Training loops of 5 and 6 ProfilerSteps (one rank of a larger group each): iteration
    // figures, no decode metric (issue 38).
    for rel in [
        "hta/trace_diff/test/test.json.gz",
        "hta/trace_diff/control/control.json.gz",
        "hta/df_index_resolver/df_index_resolver.json.gz",
    ] {
        let (code, stdout, stderr) = extract_status(&dir.join(rel));
        assert_eq!(code, Some(0), "{rel}: {stderr}");
        let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(json["run"]["kind"], "loop", "{rel}");
        assert!(
            json["metrics"]["iteration_ms"]["value"].as_f64().unwrap() > 10.0,
            "{rel}"
        );
        assert!(json["metrics"].get("decode_step_ms").is_none(), "{rel}");
    }
    // DLRM, one ProfilerStep per rank: no step of any kind, and not a loop.
    {
        let rel = "param/dlrm_kineto";
        let (code, stdout, stderr) = extract_status(&dir.join(rel));
        assert_eq!(code, Some(2), "{rel}: {stdout}");
        // Said once, in one short line, with what it saw and what to try.
        assert_eq!(
            stderr.matches("no decode step").count(),
            1,
            "{rel}: {stderr}"
        );
        assert!(stderr.chars().count() < 400, "{rel}: {stderr}");
        assert!(
            stderr.contains("1 ProfilerStep per rank (fewer than 3 is not a loop)")
                && stderr.contains("annotations: `nccl:all_to_all`")
                && stderr.contains("tracegate report"),
            "{rel}: {stderr}"
        );
        assert!(stdout.is_empty(), "{rel}: no table of zeros");
    }
    // xDiT's FLUX.1 pipeline: a diffusion pipeline, not a decode loop.
    let (code, stdout, stderr) = extract_status(
        &dir.join("tracelens/inference/xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz"),
    );
    assert_eq!(code, Some(2), "{stdout}");
    assert!(stderr.contains("a diffusion pipeline"), "{stderr}");
}

/// Every run in `../shared/traces`: one file, or a directory holding one multi-rank run.
const RUNS: &[&str] = &[
    "h200-torch/eager.json.gz",
    "h200-torch/graph.json.gz",
    "h200-torch/stall.json.gz",
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/df_index_resolver/df_index_resolver.json.gz",
    "hta/trace_diff/control/control.json.gz",
    "hta/trace_diff/test/test.json.gz",
    "param/dlrm_kineto",
    "tracelens/b200/eager_trace.json.gz",
    "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
    "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
    "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    "tracelens/inference/xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz",
    "tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
];

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn the_coverage_tests_name_every_shared_trace() {
    let dir = shared_traces();
    for file in all_trace_files(&dir) {
        let rel = file
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            RUNS.iter()
                .any(|run| rel == *run || rel.starts_with(&format!("{run}/"))),
            "{rel} has no `other` coverage test: add it to RUNS and other_at_most_5_pct!"
        );
    }
}

/// `extract --format json` of a run, or the failure's stderr.
pub(crate) fn extract_json(path: &Path) -> serde_json::Value {
    let (code, stdout, stderr) = extract_status(path);
    assert_eq!(code, Some(0), "{}: {stderr}", path.display());
    serde_json::from_str(&stdout).unwrap()
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn h200_runs_give_30_decode_and_1_prefill_with_the_cuda_event_wall() {
    let dir = shared_traces();
    let dir = dir.join("h200-torch");
    let facts: toml::Value =
        toml::from_str(&std::fs::read_to_string(dir.join("facts.toml")).unwrap()).unwrap();
    // (run, reference key, tolerance, how the steps must have been cut)
    for (run, key, tol, method) in [
        ("eager", "decode_wall_ms_median", 0.10, "host_sync"),
        ("graph", "graph_span_ms_median", 0.02, "host_sync"),
        ("stall", "decode_wall_ms_median", 0.10, "host_sync"),
    ] {
        let x = extract_json(&dir.join(format!("{run}.json.gz")));
        let s = &x["steps"]["0"];
        let found = s["decode_kept"].as_u64().unwrap() + s["decode_dropped"].as_u64().unwrap();
        assert_eq!((found, s["prefill"].as_u64().unwrap()), (30, 1), "{run}");
        assert_eq!(s["found"]["segmentation"][0]["method"], method, "{run}");
        let got = x["metrics"]["decode_step_ms"]["value"].as_f64().unwrap();
        let want = facts["runs"][run][key].as_float().unwrap();
        assert!(
            (got / want - 1.0).abs() <= tol,
            "{run}: decode_step_ms {got:.4} against {key} {want:.4} (tolerance {tol})"
        );
        // What stalls cost, from the CUDA-event walls alone: a step after the 2 of warm-up is
        // stalled above twice the median, and costs its wall minus the median. The stall run's
        // 3 ms host sleeps leave the GPU idle between steps, not the steps slower (its walls
        // reach 1.43x the median): no cost, in any of the three runs.
        let walls: Vec<f64> = facts["runs"][run]["decode_wall_ms_cuda_events"]
            .as_array()
            .unwrap()
            .iter()
            .skip(2)
            .map(|w| w.as_float().unwrap())
            .collect();
        let mut sorted = walls.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = (sorted[(n - 1) / 2] + sorted[n / 2]) / 2.0;
        let lost: f64 = walls
            .iter()
            .filter(|&&w| w > 2.0 * median)
            .map(|w| w - median)
            .sum::<f64>()
            / walls.len() as f64;
        let got = x["metrics"]["decode_stall_ms_per_step"]["value"]
            .as_f64()
            .unwrap();
        assert!(
            (got - lost).abs() <= 0.05 * median && got.is_sign_positive(),
            "{run}: decode_stall_ms_per_step {got} against {lost:.4} from the CUDA events"
        );
    }
}

/// `report`'s share of kernel time in `other` (decode steps, or the whole trace without one)
/// is at most 5%; the kernels in `other` are named when it is not.
fn other_at_most_5_pct(rel: &str) {
    let dir = shared_traces();
    let out = run_ok(
        tracegate()
            .arg("report")
            .arg(dir.join(rel))
            .args(["--format", "json"]),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let u = &json["unclassified"];
    let other = u["other_share_pct"]
        .as_f64()
        .expect("unclassified.other_share_pct");
    // The section's share is the breakdown's: both say the same.
    let from_breakdown = json["breakdown"]["categories"]["other"]["pct"]
        .as_f64()
        .unwrap_or(0.0);
    assert!((other - from_breakdown).abs() < 1e-9, "{rel}");
    let listed: Vec<String> = u["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| format!("{:.2}% {}", k["pct"].as_f64().unwrap(), k["name"]))
        .collect();
    eprintln!(
        "{rel}: other {other:.2}% of kernel time ({} scope)",
        u["scope"]
    );
    assert!(
        other <= 5.0,
        "{rel}: {other:.2}% of kernel time in `other`:\n{}",
        listed.join("\n")
    );
}

macro_rules! other_at_most_5_pct {
    ($($test:ident => $rel:expr,)*) => {$(
        #[test]
        #[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
        fn $test() {
            other_at_most_5_pct($rel);
        }
    )*};
}

other_at_most_5_pct! {
    other_h200_torch_eager => RUNS[0],
    other_h200_torch_graph => RUNS[1],
    other_h200_torch_stall => RUNS[2],
    other_hta_mi250_minitoy => RUNS[3],
    other_hta_df_index_resolver => RUNS[4],
    other_hta_trace_diff_control => RUNS[5],
    other_hta_trace_diff_test => RUNS[6],
    other_param_dlrm_eight_ranks => RUNS[7],
    other_tracelens_b200_eager => RUNS[8],
    other_tracelens_h100_qwen => RUNS[9],
    other_tracelens_sglang_decode => RUNS[10],
    other_tracelens_sglang_prefilldecode => RUNS[11],
    other_tracelens_vllm_decode_full => RUNS[12],
    other_tracelens_vllm_piecewise => RUNS[13],
    other_tracelens_xdit_flux => RUNS[14],
    other_tracelens_mi300_qwen => RUNS[15],
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn cudnn_attention_gives_the_graph_run_its_decode_steps() {
    // PyTorch 2.11 runs F.scaled_dot_product_attention as cuDNN's fused attention; classified
    // as attention, each graph replay is a decode step (30 in the run, 2 dropped as warm-up).
    let dir = shared_traces();
    let (code, stdout, stderr) = extract_status(&dir.join("h200-torch/graph.json.gz"));
    assert_eq!(code, Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let steps = &json["steps"]["0"];
    assert_eq!(
        steps["decode_kept"].as_u64().unwrap() + steps["decode_dropped"].as_u64().unwrap(),
        30,
        "{steps}"
    );
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn launch_bound_eager_gaps_inside_a_forward_outgrow_those_between_so_host_syncs_decide() {
    let dir = shared_traces();
    let x = extract_json(&dir.join("h200-torch/eager.json.gz"));
    let seg = &x["steps"]["0"]["found"]["segmentation"][0];
    // The gap threshold alone would cut forwards at cuDNN's per-step plan builds (40 ms gaps
    // inside a forward) and leave fragments; the host syncs separate the 31 forwards.
    assert!(seg["fragments_by_gap"].as_u64().unwrap() > 0, "{seg}");
    assert_eq!(seg["forwards_by_host"], 31);
    assert_eq!(seg["attention_per_forward"], 6, "6 layers, one SDPA each");
    assert_eq!(x["steps"]["0"]["found"]["labelled_by"]["gemm_m"], 31);
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn report_says_how_steps_were_found_on_every_real_trace_with_forward_passes() {
    let dir = shared_traces();
    let mut paths = all_trace_files(&dir);
    paths.retain(|p| !p.to_string_lossy().contains("dlrm_kineto"));
    paths.push(dir.join("param/dlrm_kineto"));
    let mut with_forwards = 0;
    for path in paths {
        let out = run_ok(
            tracegate()
                .arg("report")
                .arg(&path)
                .args(["--format", "json"]),
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let phases = report["phases"].as_array().unwrap();
        let forwards: u64 = phases
            .iter()
            .map(|p| {
                let f = &p["found"];
                let n = |k: &str| {
                    ["annotation", "graph_launch", "gap"]
                        .iter()
                        .map(|m| f[k][m].as_u64().unwrap())
                        .sum::<u64>()
                };
                n("decode")
                    + n("prefill")
                    + f["labelled_by"]["undecided"].as_u64().unwrap_or(0)
                    + f["loop_iterations"].as_u64().unwrap_or(0)
            })
            .sum();
        let md = tracegate()
            .arg("report")
            .arg(&path)
            .args(["--format", "markdown"])
            .output()
            .unwrap();
        let md = String::from_utf8_lossy(&md.stdout);
        let line = md
            .lines()
            .find(|l| l.starts_with("How steps were found"))
            .unwrap_or_else(|| panic!("{}: no how-found line", path.display()));
        if forwards > 0 {
            with_forwards += 1;
            assert!(
                [
                    "from step annotations",
                    "from vLLM's execute_context_…_generation_… annotations",
                    "from graph launches",
                    "from segmentation",
                    "undecided",
                    "ProfilerStep iterations (a loop"
                ]
                .iter()
                .any(|m| line.contains(m)),
                "{}: {line}",
                path.display()
            );
        }
    }
    assert!(
        with_forwards >= 10,
        "{with_forwards} traces with forward passes"
    );
}
