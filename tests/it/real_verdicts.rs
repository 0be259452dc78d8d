//! The reviewer's verdict (issue 29) on real H200 runs recorded for this project
//! (`../shared/traces/h200-torch`): the first line's cause, the decode chart's points, and a
//! baseline of a real run passing that run.

use std::path::{Path, PathBuf};

use crate::common::{assert_exit, shared_traces, tracegate};

fn h200(run: &str) -> PathBuf {
    shared_traces()
        .join("h200-torch")
        .join(format!("{run}.json.gz"))
}

/// A baseline of `run` written by `baseline new` into `dir`.
fn baseline_of(run: &Path, dir: &Path) -> PathBuf {
    let file = dir.join("h200-graph.toml");
    let out = tracegate()
        .args(["baseline", "new"])
        .arg(run)
        .arg("--baseline")
        .arg(&file)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    file
}

fn check_markdown(run: &Path, baseline: &Path, code: i32) -> String {
    let out = tracegate()
        .arg("check")
        .arg(run)
        .arg("--baseline")
        .arg(baseline)
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    assert_exit(&out, code);
    String::from_utf8(out.stdout).unwrap()
}

/// The values of the decode chart's run line (the first `line [...]` of the first mermaid block).
fn run_points(markdown: &str) -> usize {
    let block = markdown.split("```mermaid\n").nth(1).expect("a chart");
    let line = block
        .lines()
        .find_map(|l| l.trim().strip_prefix("line ["))
        .expect("a run line");
    line.split(", ").count()
}

/// Decode steps found (kept and dropped) in a one-rank run, as `extract` counts them.
fn decode_steps_found(run: &Path) -> usize {
    let x = crate::real_traces::extract_json(run);
    let s = &x["steps"]["0"];
    (s["decode_kept"].as_u64().unwrap() + s["decode_dropped"].as_u64().unwrap()) as usize
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn host_stalls_against_the_graph_run_say_the_time_is_not_in_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = baseline_of(&h200("graph"), dir.path());
    // Its own run passes its baseline.
    let own = check_markdown(&h200("graph"), &baseline, 0);
    assert!(own.starts_with("✅ **PASS**"), "{own}");
    // The eager loop with host sleeps: GPU idle between kernels, not slower kernels.
    let md = check_markdown(&h200("stall"), &baseline, 1);
    let first = md.lines().next().unwrap();
    assert!(
        first.starts_with("❌ **REGRESSION** · h200-graph · decode step +"),
        "{first}"
    );
    assert!(
        first.contains(" ms\\)"),
        "the change with its unit: {first}"
    );
    assert!(
        first.contains("cause: not kernel time") && first.contains("idle time between kernels"),
        "{first}"
    );
    // Every decode step found is drawn, warm-up included.
    assert_eq!(run_points(&md), decode_steps_found(&h200("stall")), "{md}");
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn the_report_of_a_real_eager_run_draws_every_decode_step() {
    let out = tracegate()
        .arg("report")
        .arg(h200("eager"))
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let md = String::from_utf8(out.stdout).unwrap();
    let found = decode_steps_found(&h200("eager"));
    assert_eq!(found, 30, "the run holds 30 decode steps (facts.toml)");
    assert_eq!(run_points(&md), found, "{md}");
}
