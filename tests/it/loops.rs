//! ProfilerStep loops and diffusion pipelines (issue 38, "Any iteration loop"): a run with at
//! least 3 `ProfilerStep#N` iterations and no serving step gets `iteration_ms` and the
//! per-iteration figures, and can be baselined and gated; fewer than 3 is not a loop; a serving
//! run and a loop are never judged against each other's baseline; xDiT's diffusion pipeline is
//! exit 2 on `extract`, `baseline new` and `check`, and `report` still analyses it.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{self, baseline_new, check_with, tracegate};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A synthetic ProfilerStep training loop (plain JSON), read once.
fn training_loop(seed: &str, iterations: &str, extra: &[&str]) -> tempfile::TempDir {
    let mut args = vec![
        "--scenario",
        "training-loop",
        "--seed",
        seed,
        "--decode-steps",
        iterations,
    ];
    args.extend(extra);
    common::synth_once(&args)
}

fn truth(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("truth.json")).unwrap()).unwrap()
}

fn extract(run: &Path) -> serde_json::Value {
    let out = common::extract_json_output(run);
    common::assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `check --format json`'s verdict of one metric.
fn verdict(out: &Output, metric: &str) -> String {
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}{}", text(&out.stdout), text(&out.stderr)));
    common::verdict_metric(&json, metric)["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_synthetic_loop_gives_iteration_ms_within_1_pct_of_its_truth_and_no_decode_metric() {
    let run = training_loop("3", "8", &[]);
    let x = extract(run.path());
    let t = truth(run.path());
    assert_eq!(x["run"]["kind"], "loop", "{}", x["run"]);
    for metric in ["iteration_ms", "comm_pct", "allreduce_us"] {
        let got = x["metrics"][metric]["value"].as_f64().unwrap();
        let want = t["metrics"][metric]["value"].as_f64().unwrap();
        eprintln!("{metric}: extracted {got}, truth {want}");
        assert!(
            (got / want - 1.0).abs() <= 0.01,
            "{metric}: extracted {got}, truth {want}"
        );
    }
    let (got, want) = (
        &x["metrics"]["iteration_ms"]["per_rank"],
        &t["metrics"]["iteration_ms"]["per_rank"],
    );
    for rank in ["0", "1"] {
        let (g, w) = (got[rank].as_f64().unwrap(), want[rank].as_f64().unwrap());
        assert!((g / w - 1.0).abs() <= 0.01, "rank {rank}: {g} against {w}");
    }
    for metric in [
        "decode_step_ms",
        "decode_iter_ms",
        "prefill_step_ms",
        "mixed_step_ms",
    ] {
        assert!(
            x["metrics"].get(metric).is_none(),
            "{metric}: {}",
            x["metrics"]
        );
    }
    // Every iteration's kernels are the loop's: none left unassigned, none dropped as warm-up.
    assert_eq!(x["steps"]["0"]["found"]["loop_iterations"], 8);
    assert_eq!(x["run"]["warmup_steps"], 0);
    assert!(x["metrics"]["unassigned_pct"]["value"].as_f64().unwrap() < 1e-9);
}

#[test]
fn a_loop_baseline_gates_iteration_ms_and_fails_iterations_10_pct_slower() {
    let work = tempfile::tempdir().unwrap();
    let baseline = work.path().join("loop.toml");
    let base_run = training_loop("1", "12", &[]);
    let out = baseline_new(base_run.path(), &baseline, &[]);
    common::assert_exit(&out, 0);
    let b = std::fs::read_to_string(&baseline).unwrap();
    assert!(b.contains("run_kind = \"loop\""), "{b}");
    assert!(b.contains("[metrics.iteration_ms]"), "{b}");
    assert!(!b.contains("decode_step_ms"), "{b}");

    // Another clean run of the loop passes.
    let clean = training_loop("2", "12", &[]);
    let out = check_with(clean.path(), &baseline, &["--format", "json"]);
    common::assert_exit(&out, 0);
    assert_eq!(verdict(&out, "iteration_ms"), "ok");

    // Every iteration 10% slower (a slower data loader: the GPU work is the same) fails on
    // iteration_ms.
    let iteration = truth(clean.path())["metrics"]["iteration_ms"]["value"]
        .as_f64()
        .unwrap();
    let gap = format!("host-gap={:.3}", iteration * 0.10);
    let slow = training_loop("2", "12", &["--inject", &gap]);
    let slower = truth(slow.path())["metrics"]["iteration_ms"]["value"]
        .as_f64()
        .unwrap();
    assert!(
        (slower / iteration - 1.1).abs() < 0.005,
        "{slower} / {iteration}"
    );
    let out = check_with(slow.path(), &baseline, &["--format", "json"]);
    common::assert_exit(&out, 1);
    assert_eq!(verdict(&out, "iteration_ms"), "regressed");
    let out = check_with(slow.path(), &baseline, &[]);
    common::assert_exit(&out, 1);
    let md = text(&out.stdout);
    assert!(
        md.contains("| ❌ | iteration\\_ms |")
            && md.contains("The iteration moved by")
            && md.contains("not slower kernels"),
        "{md}"
    );
}

#[test]
fn a_serving_run_and_a_loop_are_never_judged_against_each_others_baseline() {
    let work = tempfile::tempdir().unwrap();
    let loop_run = training_loop("1", "6", &["--ranks", "1"]);
    let serving = common::synth_once(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "4",
        "--ranks",
        "1",
        "--decode-steps",
        "8",
        "--python-functions-per-step",
        "0",
    ]);
    let loop_baseline = work.path().join("loop.toml");
    let serving_baseline = work.path().join("serving.toml");
    common::assert_exit(&baseline_new(loop_run.path(), &loop_baseline, &[]), 0);
    common::assert_exit(&baseline_new(serving.path(), &serving_baseline, &[]), 0);
    for (run, baseline, says) in [
        (serving.path(), &loop_baseline, "the run is a serving run"),
        (
            loop_run.path(),
            &serving_baseline,
            "the run is a ProfilerStep loop",
        ),
    ] {
        let out = check_with(
            run,
            baseline,
            &["--allow-other-hardware", "--format", "json"],
        );
        common::assert_exit(&out, 2);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let problems = json["problems"].to_string();
        assert!(
            problems.contains(says) && problems.contains("run_kind"),
            "{problems}"
        );
    }
}

#[test]
fn fewer_than_3_profiler_steps_are_not_a_loop_and_the_error_names_the_annotations_seen() {
    let run = training_loop("1", "2", &[]);
    let out = tracegate().arg("extract").arg(run.path()).output().unwrap();
    common::assert_exit(&out, 2);
    let e = text(&out.stderr);
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.chars().count() < 400, "{} chars: {e}", e.chars().count());
    assert!(
        e.contains("no decode step")
            && e.contains("2 ProfilerSteps per rank (fewer than 3 is not a loop)")
            && e.contains("annotations: `ProfilerStep#N`"),
        "{e}"
    );
}

/// The shared xDiT FLUX.1 trace: one `execute_diffusion_1_256x256` call.
fn flux(dir: &Path) -> PathBuf {
    dir.join("tracelens/inference/xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz")
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn the_xdit_flux_trace_is_a_diffusion_pipeline_not_a_decode_loop() {
    let dir = common::shared_traces();
    let run = flux(&dir);
    let work = tempfile::tempdir().unwrap();
    let baseline = work.path().join("flux.toml");
    let says = |out: &Output, what: &str| {
        common::assert_exit(out, 2);
        let e = text(&out.stderr);
        assert!(
            e.contains("a diffusion pipeline")
                && e.contains("not a decode loop")
                && e.contains("execute_diffusion_1_256x256")
                && e.contains(&run.display().to_string()),
            "{what}: {e}"
        );
    };
    let out = tracegate().arg("extract").arg(&run).output().unwrap();
    says(&out, "extract");
    assert!(out.stdout.is_empty());
    says(&baseline_new(&run, &baseline, &[]), "baseline new");
    assert!(!baseline.exists());
    // A baseline of any run: the check refuses the diffusion run before judging a metric.
    let other = dir.join("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    common::assert_exit(&baseline_new(&other, &baseline, &[]), 0);
    says(&check_with(&run, &baseline, &[]), "check");
    // `report` analyses it, with no decode or prefill step.
    let out = tracegate()
        .arg("report")
        .arg(&run)
        .args(["--format", "json"])
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["run"]["has_decode"], false, "{}", report["run"]);
    for phase in report["phases"].as_array().unwrap() {
        let found = &phase["found"];
        for kind in ["decode", "prefill"] {
            for method in ["annotation", "graph_launch", "gap"] {
                assert_eq!(found[kind][method], 0, "{kind} {method}: {found}");
            }
        }
        assert_eq!(found["diffusion_calls"], 1, "{found}");
    }
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn df_index_resolver_one_rank_of_two_baselines_and_gates_iteration_ms_with_partial_ranks() {
    let dir = common::shared_traces();
    let run = dir.join("hta/df_index_resolver/df_index_resolver.json.gz");
    let x = extract(&run);
    assert_eq!(x["run"]["kind"], "loop");
    assert_eq!(x["run"]["partial_ranks"], "1 of 2");
    let iteration = x["metrics"]["iteration_ms"]["value"].as_f64().unwrap();
    eprintln!(
        "df_index_resolver: iteration_ms {iteration} (p90 {}), gpu_util_pct {}, comm_pct {}, \
         overlap_pct {}, allreduce_us {}",
        x["metrics"]["iteration_ms"]["p90"],
        x["metrics"]["gpu_util_pct"]["value"],
        x["metrics"]["comm_pct"]["value"],
        x["metrics"]["overlap_pct"]["value"],
        x["metrics"]["allreduce_us"]["value"]
    );
    // Five ProfilerSteps of about 345 ms on the host (ProfilerStep#2 to #6): four iterations.
    assert_eq!(x["steps"]["1"]["found"]["loop_iterations"], 5);
    assert!((300.0..400.0).contains(&iteration), "{iteration}");
    for metric in ["comm_pct", "overlap_pct", "allreduce_us", "gpu_util_pct"] {
        assert!(
            x["metrics"].get(metric).is_some(),
            "{metric}: {}",
            x["metrics"]
        );
    }
    let work = tempfile::tempdir().unwrap();
    let baseline = work.path().join("ddp.toml");
    // One rank of two: refused unless --partial-ranks.
    let out = baseline_new(&run, &baseline, &[]);
    common::assert_exit(&out, 2);
    assert!(!baseline.exists());
    common::assert_exit(&baseline_new(&run, &baseline, &["--partial-ranks"]), 0);
    let b = std::fs::read_to_string(&baseline).unwrap();
    assert!(
        b.contains("[metrics.iteration_ms]")
            && b.contains("run_kind = \"loop\"")
            && b.contains("partial_ranks = \"1 of 2\""),
        "{b}"
    );
    let out = check_with(&run, &baseline, &["--partial-ranks", "--format", "json"]);
    common::assert_exit(&out, 0);
    assert_eq!(verdict(&out, "iteration_ms"), "ok");
}
