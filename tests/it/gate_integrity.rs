//! A baseline cannot bend the gate, and nothing passes that should not (issue 27, D1 D2 D3 D5 D19
//! D23 D28 D29): stalls gated by the time they cost, baselines that must name their rank count and
//! cannot turn a metric's direction or reclassify what they recorded, sweeps that believe a
//! verdict's figures over its label, baseline files written like a lockfile, and options that
//! would be ignored refused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{self, tracegate};

const BASELINE: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// A clean run of the scenario the shipped baseline is of.
fn run() -> PathBuf {
    common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"])
}

/// `check PATHS --baseline BASELINE EXTRA...`: exit code, stdout, stderr.
fn check(paths: &[&Path], baseline: &Path, extra: &[&str]) -> (Option<i32>, String, String) {
    let out = tracegate()
        .arg("check")
        .args(paths)
        .arg("--baseline")
        .arg(baseline)
        .args(extra)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The shipped baseline with each line passed through `edit`, written to `dir`.
fn edited_baseline(dir: &Path, edit: impl FnMut(&str) -> String) -> PathBuf {
    let text = std::fs::read_to_string(shipped(BASELINE)).unwrap();
    let edited: Vec<String> = text.lines().map(edit).collect();
    let path = dir.join("edited.toml");
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
    path
}

// D1: 9 stalls of 100 steps at 20x are under decode_stall_pct's 10 points, but they cost
// about 34 ms per step on a 20 ms step: the time they cost fails the gate, and the explanation
// says how much.
#[test]
fn stalls_fail_the_gate_by_the_time_they_cost() {
    let stalled = common::synth_once(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--decode-steps",
        "100",
        "--inject",
        "stall=9:20",
    ]);
    let (code, stdout, stderr) = check(&[stalled.path()], &shipped(BASELINE), &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let headline = stdout.lines().next().unwrap_or_default();
    assert!(
        headline.contains("regressed: decode\\_stall\\_ms\\_per\\_step"),
        "{headline}"
    );
    // The count alone would not have caught it.
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("| decode\\_stall\\_pct |") && l.ends_with("| ok |")),
        "{stdout}"
    );
    // The explanation names the steps and what they cost, in total and per step, beside the
    // baseline's figure.
    let why = stdout
        .lines()
        .find(|l| l.contains("decode steps stalled at"))
        .unwrap_or_else(|| panic!("no stall sentence: {stdout}"));
    assert!(why.starts_with("9 of 100 decode steps stalled at"), "{why}");
    let per_step: f64 = why
        .split(" ms per decode step")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no figure per step: {why}"));
    // Each stall adds about 19 median steps (20.1 ms): 9 × 19 × 20.1 / 100 ≈ 34 ms per step.
    assert!((30.0..40.0).contains(&per_step), "{why}");
    assert!(why.contains("(baseline 1.0"), "{why}");
    // The JSON carries the same figures.
    let out = tracegate()
        .arg("check")
        .arg(stalled.path())
        .arg("--baseline")
        .arg(shipped(BASELINE))
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let note = &v["explanation"]["stalls"];
    assert_eq!(
        note["positions"].as_array().map(Vec::len),
        Some(9),
        "{note}"
    );
    let json_per_step = note["ms_per_step"].as_f64().unwrap();
    assert!((json_per_step - per_step).abs() < 0.001, "{note}");
    assert!(
        (note["lost_ms"].as_f64().unwrap() - json_per_step * 100.0).abs() < 0.01,
        "{note}"
    );
}

// D1: the scenario's own stall (one 25 ms hiccup) stays within the tolerance.
#[test]
fn a_clean_run_with_its_usual_stall_passes_the_stall_cost() {
    let (code, stdout, stderr) = check(&[&run()], &shipped(BASELINE), &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("| decode\\_stall\\_ms\\_per\\_step |") && l.ends_with("| ok |")),
        "{stdout}"
    );
}
