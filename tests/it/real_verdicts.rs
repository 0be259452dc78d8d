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

/// A copy of the one-rank `run` in `dir` with `idle_ms` of GPU idle inserted after every decode
/// forward: every event that starts at or after a forward's end moves later by `idle_ms` for
/// each such end before it. The forwards are the ones `extract` finds in the unmodified run.
fn with_idle_after_decode_forwards(run: &Path, idle_ms: f64, dir: &Path) -> PathBuf {
    use tracegate::testing::{extract, read_run, ExtractOptions, Taxonomy};
    let r = read_run(&[run.to_path_buf()]).unwrap();
    let classes = Taxonomy::builtin().classify_run(&r);
    let x = extract(&r, &classes, &ExtractOptions::default()).unwrap();
    let mut ends_us: Vec<f64> = x
        .rank_steps
        .iter()
        .flat_map(|rs| {
            let kept = rs.decode.iter().map(|s| s.end);
            kept.chain(rs.dropped.iter().map(|d| d.step.end))
        })
        .map(|ns| ns as f64 / 1e3)
        .collect();
    ends_us.sort_by(f64::total_cmp);
    assert!(
        ends_us.len() >= 3,
        "{}: too few decode forwards",
        run.display()
    );
    let text = std::io::read_to_string(flate2::read::MultiGzDecoder::new(
        std::fs::File::open(run).unwrap(),
    ))
    .unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    for ev in doc["traceEvents"].as_array_mut().unwrap() {
        let Some(ts) = ev["ts"].as_f64() else {
            continue;
        };
        // Half a nanosecond of slack: the reader rounds µs to whole ns.
        let before = ends_us.partition_point(|&e| e <= ts + 0.0005);
        if before > 0 {
            ev["ts"] = serde_json::json!(ts + idle_ms * 1e3 * before as f64);
        }
    }
    let out = dir.join(run.file_name().unwrap());
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&out).unwrap(),
        flate2::Compression::fast(),
    );
    serde_json::to_writer(&mut gz, &doc).unwrap();
    gz.finish().unwrap();
    out
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn ten_ms_of_host_time_between_real_decode_forwards_fails_the_gate_and_names_the_gap() {
    for name in ["graph", "eager", "stall"] {
        let dir = tempfile::tempdir().unwrap();
        let run = h200(name);
        // The iteration and the decode-phase utilisation are reported.
        let x = crate::real_traces::extract_json(&run);
        let iter = x["metrics"]["decode_iter_ms"]["value"].as_f64().unwrap();
        let util = x["metrics"]["decode_phase_util_pct"]["value"]
            .as_f64()
            .unwrap();
        let step = x["metrics"]["decode_step_ms"]["value"].as_f64().unwrap();
        assert!(
            iter > step,
            "{name}: iteration {iter} ms, forward {step} ms"
        );
        assert!(util > 0.0 && util <= 100.0, "{name}: {util}");
        let baseline = baseline_of(&run, dir.path());
        let own = check_markdown(&run, &baseline, 0);
        assert!(own.starts_with("✅ **PASS**"), "{name}: {own}");
        let slower = with_idle_after_decode_forwards(&run, 10.0, dir.path());
        let y = crate::real_traces::extract_json(&slower);
        let forward = y["metrics"]["decode_step_ms"]["value"].as_f64().unwrap();
        assert!(
            (forward - step).abs() < 0.01 * step,
            "{name}: the forwards are unchanged ({step} → {forward} ms)"
        );
        let md = check_markdown(&slower, &baseline, 1);
        let first = md.lines().next().unwrap();
        assert!(
            first.contains("cause: the GPU waits") && first.contains("between decode forwards"),
            "{name}: {first}"
        );
    }
}
