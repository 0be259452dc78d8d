//! The extra tier: every real trace in `../shared/traces` (skipped, saying so, when absent).

use std::path::{Path, PathBuf};

use crate::common::{
    independent_counts, inspect_json, inspected_counts, load_json, shared_traces, tracegate,
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
fn inspect_reads_every_real_trace() {
    let Some(dir) = shared_traces("inspect_reads_every_real_trace") else {
        return;
    };
    let files = all_trace_files(&dir);
    assert!(
        files.len() >= 20,
        "expected the 23 shared traces, found {}",
        files.len()
    );
    for file in files {
        let out = tracegate().arg("inspect").arg(&file).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn dlrm_set_is_one_run_of_eight_ranks() {
    let Some(dir) = shared_traces("dlrm_set_is_one_run_of_eight_ranks") else {
        return;
    };
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
fn real_trace_counts_agree_with_an_independent_parse() {
    let Some(dir) = shared_traces("real_trace_counts_agree_with_an_independent_parse") else {
        return;
    };
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
fn python_function_events_are_counted_not_kept() {
    let Some(dir) = shared_traces("python_function_events_are_counted_not_kept") else {
        return;
    };
    let path = dir.join("tracelens/inference/xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz");
    let json = inspect_json(&[&path]);
    let expected = load_json(&path)["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "python_function")
        .count() as u64;
    assert!(expected > 200_000);
    assert_eq!(
        json["ranks"][0]["read"]["python_functions_skipped"],
        expected
    );
}

fn extract_status(path: &Path) -> (Option<i32>, String, String) {
    let out = tracegate()
        .arg("extract")
        .arg(path)
        .args(["--format", "json"])
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn extract_gives_figures_for_decode_traces_and_exit_2_for_the_rest() {
    let Some(dir) =
        shared_traces("extract_gives_figures_for_decode_traces_and_exit_2_for_the_rest")
    else {
        return;
    };
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
    // Training steps, a prefill-only split, eager single forwards, DLRM: no decode step.
    for rel in [
        "hta/trace_diff/test/test.json.gz",
        "hta/df_index_resolver/df_index_resolver.json.gz",
        "tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz",
        "tracelens/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
        "tracelens/b200/eager_trace.json.gz",
        "param/dlrm_kineto",
    ] {
        let (code, stdout, stderr) = extract_status(&dir.join(rel));
        assert_eq!(code, Some(2), "{rel}: {stdout}");
        assert!(stderr.contains("no decode step"), "{rel}: {stderr}");
        assert!(stdout.is_empty(), "{rel}: no table of zeros");
    }
}
