//! `check --repro DIR` (issue 41) on a synthetic run, and the Python scopes of the shared eager
//! traces. The real graph-replay repro (aiter GEMMs made slower) is in `capture.rs`.

use std::path::{Path, PathBuf};

use crate::common::{self, run_ok, shared_traces, tracegate};

/// A baseline of `run` written by `baseline new` into `dir`.
fn baseline_of(run: &Path, dir: &Path) -> PathBuf {
    let file = dir.join("base.toml");
    run_ok(
        tracegate()
            .args(["baseline", "new"])
            .arg(run)
            .arg("--baseline")
            .arg(&file),
    );
    file
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_synthetic_moe_regression_writes_a_record_and_no_script() {
    let scenario = ["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "5"];
    let base = common::synth_run(&scenario);
    let slow = common::synth_run(&[&scenario[..], &["--inject", "moe=1.3"]].concat());
    let dir = tempfile::tempdir().unwrap();
    let baseline = baseline_of(&base, dir.path());
    let repro = dir.path().join("repro");
    let out = crate::common::check_with_repro(&slow, &baseline, &repro);
    common::assert_exit(&out, 1);
    let files = files_in(&repro);
    let records: Vec<&String> = files.iter().filter(|f| f.ends_with(".json")).collect();
    assert_eq!(records.len(), 1, "{files:?}");
    assert!(!files.iter().any(|f| f.ends_with(".py")), "{files:?}");
    assert!(files.contains(&"README.md".to_string()), "{files:?}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repro.join(records[0])).unwrap()).unwrap();
    // The MoE kernel the Why names, 1.3× slower per call, and why no script times it.
    let kernel = record["kernel"].as_str().unwrap();
    assert!(kernel.to_lowercase().contains("moe"), "{record}");
    let ratio = record["run_ns"].as_f64().unwrap() / record["baseline_ns"].as_f64().unwrap();
    assert!((ratio - 1.3).abs() < 0.05, "{ratio}: {record}");
    let why = record["torch_equivalent"]["none"].as_str().unwrap();
    assert!(!why.is_empty(), "{record}");
    let readme = std::fs::read_to_string(repro.join("README.md")).unwrap();
    assert!(readme.contains(records[0].as_str()), "{readme}");
}

#[test]
fn a_passing_check_writes_a_readme_that_says_nothing_regressed() {
    let scenario = ["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "5"];
    let base = common::synth_run(&scenario);
    let dir = tempfile::tempdir().unwrap();
    let baseline = baseline_of(&base, dir.path());
    let repro = dir.path().join("repro");
    run_ok(
        tracegate()
            .arg("check")
            .arg(&base)
            .arg("--baseline")
            .arg(&baseline)
            .arg("--repro")
            .arg(&repro),
    );
    assert_eq!(files_in(&repro), ["README.md"]);
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn report_lists_time_per_python_scope_for_the_shared_eager_traces() {
    let traces = shared_traces().join("tracelens");
    for (file, scope) in [
        (
            "h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            "nn.Module: Qwen2Attention",
        ),
        (
            "mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            "nn.Module: Qwen2Attention",
        ),
        ("b200/eager_trace.json.gz", "nn.Module: FusedMoE"),
    ] {
        let out = run_ok(
            tracegate()
                .arg("report")
                .arg(traces.join(file))
                .args(["--format", "json"]),
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let code = &report["code"];
        let scopes = code["scopes"].as_array().unwrap();
        let row = scopes
            .iter()
            .find(|s| s["scope"] == scope)
            .unwrap_or_else(|| panic!("{file}: no {scope} in {scopes:#?}"));
        assert!(row["ms"].as_f64().unwrap() > 0.0, "{file}: {row}");
        // Most kernel time is placed in a scope (the rest: kernels with no launch recorded).
        let scoped = code["scoped_pct"].as_f64().unwrap();
        assert!(scoped > 60.0, "{file}: {scoped}% scoped");
        // The markdown report has the section, with the scope in it.
        let md = run_ok(tracegate().arg("report").arg(traces.join(file)));
        let md = String::from_utf8_lossy(&md.stdout).replace('\\', "");
        assert!(
            md.contains("### Code: time per Python scope and per op"),
            "{file}"
        );
        assert!(md.contains(&format!("`{scope}`")), "{file}");
    }
}
