//! Baselines from real traces (issue 30) and baselines whose identity cannot contradict the run
//! (issue 27: D4, D18, D24): `baseline new` then `check` of the same run passes for every shared
//! inference trace, a trace naming no device needs `--hardware`, discovery tells frameworks apart,
//! and the "no decode step" error is one short line with a next step.

use std::path::{Path, PathBuf};

use crate::common::{self, baseline_new, check_with, tracegate, with_run_and_baseline};

/// `../shared/traces`: the tests that read it are `#[ignore]`d with that reason (run with
/// `--include-ignored`, as .ci/run does), and fail rather than pass without it.
fn shared() -> PathBuf {
    common::shared_traces()
}

/// The hardware of the shared vLLM traces, which name no device (TraceLens's MI300X runs).
const MI300X: &str = "AMD Instinct MI300X";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every run of `tracelens/inference` (one directory each) and `h200-torch`; xDiT's FLUX.1
/// diffusion pipeline among them is no decode loop.
fn shared_runs(dir: &Path) -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(dir.join("tracelens/inference"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    runs.sort();
    runs.extend(["eager", "graph", "stall"].map(|r| dir.join(format!("h200-torch/{r}.json.gz"))));
    runs
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn every_shared_inference_trace_makes_a_baseline_its_own_run_passes() {
    let dir = shared();
    let work = tempfile::tempdir().unwrap();
    let runs = shared_runs(&dir);
    assert_eq!(runs.len(), 8, "{runs:?}");
    let mut asserted = 0;
    let mut diffusion = 0;
    for run in runs {
        let name = run.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("xdit_") {
            // xDiT's FLUX.1 pipeline is no decode loop: no baseline (issue 38; tests/it/loops.rs
            // checks extract and check too).
            let baseline = work.path().join(format!("{name}.toml"));
            let out = baseline_new(&run, &baseline, &[]);
            common::assert_exit(&out, 2);
            let e = text(&out.stderr);
            assert!(
                e.contains("a diffusion pipeline") && e.contains("not a decode loop"),
                "{name}: {e}"
            );
            assert!(!baseline.exists(), "{name}");
            diffusion += 1;
            continue;
        }
        let baseline = work.path().join(format!("{name}.toml"));
        let mut out = baseline_new(&run, &baseline, &[]);
        let mut hardware: &[&str] = &[];
        if out.status.code() == Some(2) && text(&out.stderr).contains("names no device") {
            // Refused, naming the flag, and nothing written.
            assert!(text(&out.stderr).contains("--hardware NAME"), "{name}");
            assert!(!baseline.exists(), "{name}");
            hardware = &["--hardware", MI300X];
            out = baseline_new(&run, &baseline, hardware);
            asserted += 1;
        }
        common::assert_exit(&out, 0);
        // One line on stderr says what was written; no diff without --diff.
        let stderr = text(&out.stderr);
        assert!(
            stderr
                .trim_end()
                .lines()
                .last()
                .unwrap()
                .starts_with(&format!("tracegate: wrote {} (", baseline.display()))
                && stderr.contains("gated metric"),
            "{name}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{name}: {}", text(&out.stdout));
        // The same run passes, without --hardware: the baseline says the hardware was asserted.
        let out = check_with(&run, &baseline, &[]);
        common::assert_exit(&out, 0);
        if !hardware.is_empty() {
            let toml = std::fs::read_to_string(&baseline).unwrap();
            assert!(toml.contains("hardware_asserted = true"), "{name}");
            assert!(
                text(&out.stdout).contains("the trace names no device"),
                "{name}: {}",
                text(&out.stdout)
            );
        }
    }
    // The two vLLM traces name no device.
    assert_eq!(asserted, 2);
    assert_eq!(diffusion, 1);
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn prefill_only_and_mixed_runs_gate_the_metrics_they_have() {
    let dir = shared();
    let work = tempfile::tempdir().unwrap();
    for (rel, metric, hardware) in [
        (
            "tracelens/inference/sglang_prefilldecode",
            "prefill_step_ms",
            None,
        ),
        (
            "tracelens/inference/vllm_prefilldecode_piecewise",
            "mixed_step_ms",
            Some(MI300X),
        ),
    ] {
        let run = dir.join(rel);
        let baseline = work.path().join("b.toml");
        let mut extra = vec!["--force"];
        if let Some(h) = hardware {
            extra.extend(["--hardware", h]);
        }
        common::assert_exit(&baseline_new(&run, &baseline, &extra), 0);
        let b = std::fs::read_to_string(&baseline).unwrap();
        assert!(b.contains(&format!("[metrics.{metric}]")), "{rel}: {b}");
        assert!(!b.contains("[metrics.decode_step_ms]"), "{rel}");
        let out = check_with(&run, &baseline, &["--format", "json"]);
        common::assert_exit(&out, 0);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let judged = json["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == metric)
            .unwrap_or_else(|| panic!("{rel}: {metric} not judged"));
        assert_eq!(judged["verdict"], "ok", "{rel}");
    }
    // `report` names the mixed step.
    let out = tracegate()
        .arg("report")
        .arg(dir.join("tracelens/inference/vllm_prefilldecode_piecewise"))
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    assert!(
        text(&out.stdout).contains("1 mixed step (prefill and decode tokens in one forward)"),
        "{}",
        text(&out.stdout)
    );
}

/// A trace file that records a CUDA-graph capture: the capture's runtime calls and one kernel.
fn graph_capture_trace(dir: &Path) -> PathBuf {
    let runtime = |name: &str, ts: u64, correlation: u64| {
        format!(
            r#"{{"ph":"X","cat":"cuda_runtime","name":"{name}","pid":1,"tid":1,"ts":{ts},"dur":2,"args":{{"correlation":{correlation}}}}}"#
        )
    };
    let events = [
        runtime("cudaStreamBeginCapture", 10, 1),
        runtime("cudaLaunchKernel", 20, 2),
        runtime("cudaStreamEndCapture", 30, 3),
        runtime("cudaGraphInstantiateWithFlags", 40, 4),
        r#"{"ph":"X","cat":"kernel","name":"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>","pid":0,"tid":7,"ts":100,"dur":5,"args":{"device":0,"stream":7,"correlation":5}}"#.to_string(),
    ];
    let text = format!(
        r#"{{"deviceProperties":[{{"id":0,"name":"NVIDIA H200"}}],"traceEvents":[{}]}}"#,
        events.join(",")
    );
    let path = dir.join("cuda_graph_capture-TP-0.json");
    std::fs::write(&path, text).unwrap();
    path
}

/// The stderr of `extract` on a run that must fail with exit 2.
fn extract_error(run: &Path) -> String {
    let out = tracegate().arg("extract").arg(run).output().unwrap();
    common::assert_exit(&out, 2);
    assert!(out.stdout.is_empty());
    text(&out.stderr)
}

#[test]
fn the_no_decode_step_error_is_one_short_line_with_a_next_step() {
    let work = tempfile::tempdir().unwrap();
    let e = extract_error(&graph_capture_trace(work.path()));
    assert_eq!(e.matches("no decode step").count(), 1, "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    assert!(e.chars().count() < 400, "{} chars: {e}", e.chars().count());
    assert!(
        e.contains("this trace records a CUDA-graph capture: profile the replay"),
        "{e}"
    );
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn the_no_decode_step_error_on_real_traces_is_one_short_line_with_a_next_step() {
    let dir = shared();
    // A real training trace of two ProfilerSteps: no serving step, and too few iterations for
    // a loop (the HTA training traces of 5 and 6 ProfilerSteps are loops since issue 38).
    let e = extract_error(&dir.join("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
    assert_eq!(e.matches("no decode step").count(), 1, "{e}");
    assert!(e.chars().count() < 400, "{} chars: {e}", e.chars().count());
    assert!(
        e.contains("2 ProfilerSteps (fewer than 3 is not a loop)")
            && e.contains("annotations: `ProfilerStep#N`")
            && e.contains("tracegate report"),
        "{e}"
    );
}

/// A small synthetic MI355X run (plain JSON), read once.
fn small_run(ranks: &str) -> tempfile::TempDir {
    common::synth_once(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "4",
        "--ranks",
        ranks,
        "--decode-steps",
        "8",
        "--python-functions-per-step",
        "0",
    ])
}

/// A two-rank [`small_run`], a scratch directory and the path of a baseline `b.toml` in it.
fn small_run_and_baseline_path() -> (tempfile::TempDir, tempfile::TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let baseline = work.path().join("b.toml");
    (small_run("2"), work, baseline)
}

/// Rewrites the device name in one rank's trace file.
fn rename_device(run: &Path, rank: u32, to: &str) -> PathBuf {
    let file = std::fs::read_dir(run)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.to_string_lossy()
                .ends_with(&format!("-TP-{rank}.trace.json"))
        })
        .unwrap_or_else(|| panic!("no rank {rank} in {}", run.display()));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"AMD Instinct MI355X\""));
    std::fs::write(
        &file,
        text.replace("\"AMD Instinct MI355X\"", &format!("{to:?}")),
    )
    .unwrap();
    file
}

#[test]
fn identity_that_contradicts_the_run_is_refused_unless_forced() {
    // D18: --hardware against the trace's device, --tp and --meta tp against the rank count.
    let (run, _work, baseline) = small_run_and_baseline_path();
    for (extra, says) in [
        (
            &["--hardware", "NVIDIA B200"][..],
            "--hardware \"NVIDIA B200\" contradicts the trace, which names \"AMD Instinct MI355X\"",
        ),
        (
            &["--tp", "8"][..],
            "--tp 8 contradicts the run, which has 2 ranks",
        ),
        (
            &["--meta", "tp=8"][..],
            "--meta tp=8 contradicts the run, which has 2 ranks",
        ),
    ] {
        let out = baseline_new(run.path(), &baseline, extra);
        common::assert_exit(&out, 2);
        let e = text(&out.stderr);
        assert!(e.contains(says) && e.contains("--force"), "{extra:?}: {e}");
        assert!(!baseline.exists(), "{extra:?}");
    }
    let out = baseline_new(
        run.path(),
        &baseline,
        &["--hardware", "NVIDIA B200", "--force"],
    );
    common::assert_exit(&out, 0);
    // update: --meta tp=8 would rewrite tp.
    common::assert_exit(&baseline_new(run.path(), &baseline, &["--force"]), 0);
    let before = std::fs::read_to_string(&baseline).unwrap();
    let out = with_run_and_baseline(
        &["baseline", "update"],
        run.path(),
        &baseline,
        &["--meta", "tp=8"],
    );
    common::assert_exit(&out, 2);
    assert!(text(&out.stderr).contains("--meta tp=8 contradicts the run"));
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), before);
}

#[test]
fn a_rank_without_a_device_beside_ranks_with_one_is_refused_naming_its_file() {
    // D4: never assumed to be on the other ranks' hardware, by check or by baseline new.
    let (run, work, baseline) = small_run_and_baseline_path();
    common::assert_exit(&baseline_new(run.path(), &baseline, &[]), 0);
    let file = rename_device(run.path(), 1, "");
    let out = check_with(run.path(), &baseline, &["--format", "json"]);
    common::assert_exit(&out, 2);
    let shown = file.display().to_string();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = json["problems"].to_string();
    assert!(
        problems.contains(&shown) && problems.contains("names no device"),
        "{problems}"
    );
    let out = baseline_new(run.path(), &work.path().join("c.toml"), &[]);
    common::assert_exit(&out, 2);
    let e = text(&out.stderr);
    assert!(e.contains(&shown) && e.contains("names no device"), "{e}");
}

#[test]
fn mixed_hardware_is_refused_by_baseline_new_as_by_check() {
    // D18: `check` refuses ranks on different hardware; so does `baseline new`.
    let run = small_run("2");
    rename_device(run.path(), 1, MI300X);
    let work = tempfile::tempdir().unwrap();
    let out = baseline_new(run.path(), &work.path().join("b.toml"), &[]);
    common::assert_exit(&out, 2);
    let e = text(&out.stderr);
    assert!(e.contains("the ranks are on different hardware"), "{e}");
}

#[test]
fn the_headline_names_the_traces_hardware_when_hardware_contradicts_it() {
    // D24: the asserted name never stands for a run whose trace says otherwise.
    let (run, _work, baseline) = small_run_and_baseline_path();
    common::assert_exit(&baseline_new(run.path(), &baseline, &[]), 0);
    let out = check_with(run.path(), &baseline, &["--hardware", "NVIDIA B200"]);
    common::assert_exit(&out, 2);
    // The verdict line, then the hardware's line.
    let headline = text(&out.stdout)
        .lines()
        .take(3)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        headline.contains("AMD Instinct MI355X")
            && !headline.contains("on NVIDIA B200")
            && !headline.contains("asserted by"),
        "{headline}"
    );
    assert!(headline.contains("hardware asserts"), "{headline}");
}

#[test]
fn baseline_writes_print_the_diff_only_when_asked() {
    let (run, _work, baseline) = small_run_and_baseline_path();
    let out = baseline_new(run.path(), &baseline, &["--diff"]);
    common::assert_exit(&out, 0);
    assert!(text(&out.stdout).contains("+[metrics.decode_step_ms]"));
    let update = |extra: &[&str]| {
        with_run_and_baseline(&["baseline", "update"], run.path(), &baseline, extra)
    };
    let out = update(&[]);
    common::assert_exit(&out, 0);
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let written: toml::Value =
        toml::from_str(&std::fs::read_to_string(&baseline).unwrap()).unwrap();
    let gated = written["metrics"]
        .as_table()
        .unwrap()
        .values()
        .filter(|m| m.get("gate").and_then(toml::Value::as_bool) != Some(false))
        .count();
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!(
            "tracegate: wrote {} ({gated} gated metrics)",
            baseline.display()
        )
    );
    let out = update(&["--dry-run"]);
    common::assert_exit(&out, 0);
    assert!(!out.stdout.is_empty());
    assert!(text(&out.stderr).contains("nothing written (--dry-run)"));
}

#[test]
fn discovery_never_judges_a_vllm_run_against_an_sglang_baseline() {
    let run = common::synth_once(&[
        "--scenario",
        "vllm-eager",
        "--seed",
        "2",
        "--python-functions-per-step",
        "0",
    ]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines");
    let discover = |dir: &Path, keys: &[&str]| {
        let mut cmd = tracegate();
        cmd.arg("check")
            .arg(run.path())
            .arg("--baselines")
            .arg(dir)
            .args(["--format", "json"]);
        for k in keys {
            cmd.args(["--key", k]);
        }
        cmd.output().unwrap()
    };
    // baselines/ holds the SGLang MI355X TP4 baseline only: no match, the candidates listed.
    let out = discover(&root, &[]);
    common::assert_exit(&out, 2);
    let e = text(&out.stderr);
    assert!(
        e.contains("no baseline matches")
            && e.contains("dsr1-fp4-mi355x-sglang-tp4-conc64.toml")
            && e.contains("--key framework=NAME"),
        "{e}"
    );
    let out = discover(&root, &["framework=vllm"]);
    common::assert_exit(&out, 2);
    assert!(text(&out.stderr).contains("no baseline matches"));
    // baselines/vllm: the framework and the mode pick the eager baseline.
    let vllm = root.join("vllm");
    let out = discover(&vllm, &["framework=vllm"]);
    common::assert_exit(&out, 2);
    assert!(text(&out.stderr).contains("3 baselines match"));
    let out = discover(&vllm, &["framework=vllm", "mode=eager"]);
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
    assert!(
        json["baseline"]["path"]
            .as_str()
            .unwrap()
            .ends_with("dsr1-fp4-mi355x-vllm-eager-tp4-conc64.toml"),
        "{json}"
    );
}
