//! A baseline cannot bend the gate, and nothing passes that should not (issue 27, D1 D2 D3 D5 D19
//! D23 D28 D29): stalls gated by the time they cost, baselines that must name their rank count and
//! cannot turn a metric's direction or reclassify what they recorded, sweeps that believe a
//! verdict's figures over its label, baseline files written like a lockfile, and options that
//! would be ignored refused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::{
    self, baseline_with_line, check_paths, edited_baseline, tracegate, MI355X_BASELINE as BASELINE,
};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// A clean run of the scenario the shipped baseline is of.
fn run() -> PathBuf {
    common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"])
}

/// The 1-based number of the first line of the file at `path` that is `line`, as messages
/// name it.
fn line_number(path: &Path, line: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().position(|l| l == line).unwrap() + 1
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
    let (code, stdout, stderr) = check_paths(&[stalled.path()], &shipped(BASELINE), &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    // The verdict line, the count line, then the table of what moved, before Why.
    let head = &stdout[..stdout.find("#### Why").expect("a Why")];
    assert!(
        head.contains("**2 regressed**")
            && head.contains("| ❌ | decode\\_stall\\_ms\\_per\\_step |"),
        "{head}"
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
        .find(|l| l.contains("stalled at") && l.contains(" ms per decode step"))
        .unwrap_or_else(|| panic!("no stall sentence: {stdout}"));
    assert!(why.starts_with("9 of 100 decode steps of rank"), "{why}");
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
    let (code, stdout, stderr) = check_paths(&[&run()], &shipped(BASELINE), &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("| decode\\_stall\\_ms\\_per\\_step |") && l.ends_with("| ok |")),
        "{stdout}"
    );
}

/// The shipped baseline's largest kernel of a category, as its `[breakdown]` names it.
fn largest_kernel(category: &str) -> String {
    let text = std::fs::read_to_string(shipped(BASELINE)).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    let kernels = doc["breakdown"]["kernels"].as_array().unwrap();
    kernels
        .iter()
        .filter(|k| k["category"].as_str() == Some(category))
        .max_by(|a, b| {
            let ms = |k: &toml::Value| k["ms_per_step"].as_float().unwrap();
            ms(a).total_cmp(&ms(b))
        })
        .map(|k| k["name"].as_str().unwrap().to_string())
        .unwrap()
}

/// `check --format json` of one run against a baseline.
fn check_json(run: &Path, baseline: &Path, extra: &[&str]) -> serde_json::Value {
    let out = tracegate()
        .arg("check")
        .arg(run)
        .arg("--baseline")
        .arg(baseline)
        .args(extra)
        .args(["--format", "json"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    })
}

// D3: three lines of [[rules]] moving the largest MoE GEMM to dense_gemm would make a slower
// MoE look "improved"; the baseline's own rules are applied to its own breakdown, and a kernel
// they move is exit 2 naming the rule and the kernel.
#[test]
fn baseline_rules_that_move_a_recorded_kernel_cannot_judge() {
    let slower_moe = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "3",
        "--inject",
        "moe=1.08",
    ]);
    // Without the edit, the slower MoE is a regression.
    let (code, stdout, stderr) = check_paths(&[&slower_moe], &shipped(BASELINE), &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let kernel = largest_kernel("moe_gemm");
    let prefix = kernel.strip_prefix("void ").unwrap_or(&kernel);
    let dir = tempfile::tempdir().unwrap();
    let edited = dir.path().join("edited.toml");
    let text = std::fs::read_to_string(shipped(BASELINE)).unwrap();
    std::fs::write(
        &edited,
        format!("{text}\n[[rules]]\nprefix = {prefix:?}\ncategory = \"dense_gemm\"\n"),
    )
    .unwrap();
    for extra in [&[][..], &["--allow-other-hardware"][..]] {
        let (code, stdout, stderr) = check_paths(&[&slower_moe], &edited, extra);
        assert_eq!(code, Some(2), "{extra:?}: {stdout}{stderr}");
        assert!(stdout.contains("CANNOT JUDGE"), "{stdout}");
        let v = check_json(&slower_moe, &edited, extra);
        assert_eq!(v["status"], "cannot_judge", "{v}");
        let problem = v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p.as_str())
            .find(|p| p.contains("[[rules]]"))
            .unwrap_or_else(|| panic!("no problem names the rule: {}", v["problems"]));
        for needle in [
            "edited.toml",
            "[[rules]] rule 1 (prefix \"ck::kernel_moe_mxgemm_2lds<",
            "moves kernel \"void ck::kernel_moe_mxgemm_2lds<",
            "to dense_gemm",
            "records it as moe_gemm",
            "re-record the baseline",
        ] {
            assert!(problem.contains(needle), "{needle}: {problem}");
        }
    }
    // A rule that agrees with what the breakdown records is fine.
    std::fs::write(
        &edited,
        format!("{text}\n[[rules]]\nprefix = {prefix:?}\ncategory = \"moe_gemm\"\n"),
    )
    .unwrap();
    let (code, stdout, stderr) = check_paths(&[&slower_moe], &edited, &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
}

// D3: `direction = "higher"` on decode_step_ms would pass a slower run; the direction is the
// metric's, and a baseline giving another is exit 2 naming the file and the line.
#[test]
fn a_baseline_cannot_turn_a_metrics_direction() {
    let slower = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "3",
        "--inject",
        "attention=1.5",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut in_step = false;
    let edited = edited_baseline(dir.path(), |l| {
        if l.starts_with('[') {
            in_step = l == "[metrics.decode_step_ms]";
        }
        if in_step && l.starts_with("tolerance = ") {
            format!("{l}\ndirection = \"higher\"")
        } else {
            l.to_string()
        }
    });
    let line = line_number(&edited, "direction = \"higher\"");
    let (code, stdout, stderr) = check_paths(&[&slower], &edited, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("edited.toml:{line}:")) && stderr.contains("decode_step_ms"),
        "{stderr}"
    );
    assert!(stderr.contains("direction"), "{stderr}");
    // The metric's own direction, written out, is accepted.
    let lower = dir.path().join("lower.toml");
    std::fs::write(
        &lower,
        std::fs::read_to_string(&edited)
            .unwrap()
            .replace("direction = \"higher\"", "direction = \"lower\""),
    )
    .unwrap();
    let (code, stdout, stderr) = check_paths(&[&slower], &lower, &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
}

// D2: a baseline without `tp` would judge a run of any rank count: refused naming the file and
// the key; `baseline update` adds it from the run, and the gate judges again.
#[test]
fn a_baseline_without_tp_is_refused_and_update_adds_it() {
    let dir = tempfile::tempdir().unwrap();
    let no_tp = baseline_with_line(dir.path(), "tp = ", "");
    assert!(!std::fs::read_to_string(&no_tp).unwrap().contains("\ntp = "));
    let two_ranks = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "3",
        "--ranks",
        "2",
    ]);
    for (run, ranks) in [(run(), 4), (two_ranks, 2)] {
        let (code, stdout, stderr) = check_paths(&[&run], &no_tp, &[]);
        assert_eq!(code, Some(2), "{ranks} ranks: {stdout}{stderr}");
        let v = check_json(&run, &no_tp, &[]);
        let problems = v["problems"].to_string();
        assert!(
            problems.contains("edited.toml: the baseline has no `tp` in [meta]"),
            "{problems}"
        );
    }
    let out = tracegate()
        .args(["baseline", "update"])
        .arg(run())
        .arg("--baseline")
        .arg(&no_tp)
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    let text = std::fs::read_to_string(&no_tp).unwrap();
    assert!(text.contains("\ntp = 4\n"), "{text}");
    let (code, stdout, stderr) = check_paths(&[&run()], &no_tp, &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
}

/// `baseline update RUN --baseline PATH EXTRA...`, spawned.
fn spawn_update(path: &Path, extra: &[&str]) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("tracegate"))
        .args(["baseline", "update"])
        .arg(run())
        .arg("--baseline")
        .arg(path)
        .args(extra)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_WORKSPACE")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

// D19: two updates at once both land: each reads the baseline under the lock the other held
// while it wrote, so neither overwrites the other's change.
#[test]
fn two_concurrent_baseline_updates_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.toml");
    for round in 0..3 {
        std::fs::copy(shipped(BASELINE), &path).unwrap();
        let first = format!("first=r{round}");
        let second = format!("second=r{round}");
        let a = spawn_update(&path, &["--meta", &first]);
        let b = spawn_update(&path, &["--meta", &second]);
        for child in [a, b] {
            common::succeeded("update", child.wait_with_output().unwrap());
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains(&format!("first = \"r{round}\""))
                && text.contains(&format!("second = \"r{round}\"")),
            "round {round}: an update was lost:\n{}",
            text.lines().take(20).collect::<Vec<_>>().join("\n")
        );
        let temporaries: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(temporaries.is_empty(), "{temporaries:?}");
    }
}

// D19: an update writes through a symlink to its target (the link stays a link), keeps the
// file's mode, refuses a read-only file, and removes a dead writer's temporary file.
#[cfg(unix)]
#[test]
fn baseline_update_writes_through_symlinks_keeps_the_mode_and_refuses_read_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.toml");
    std::fs::copy(shipped(BASELINE), &real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink("real.toml", &link).unwrap();
    // A writer killed before its rename left this (no process has an id above pid_max).
    let stale = dir.path().join(".real.toml.tracegate-4194305.tmp");
    std::fs::write(&stale, "half a baseline").unwrap();
    common::succeeded(
        "update",
        spawn_update(&link, &["--meta", "linked=yes"])
            .wait_with_output()
            .unwrap(),
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("linked = \"yes\""));
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert!(!stale.exists(), "the dead writer's temporary file is left");

    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = std::fs::read_to_string(&real).unwrap();
    let out = spawn_update(&real, &["--meta", "readonly=no"])
        .wait_with_output()
        .unwrap();
    let stderr = common::stderr_of_exit(&out, 2);
    assert!(
        stderr.contains("real.toml") && stderr.contains("read-only (mode 0444)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&real).unwrap(), before);
}

/// `extract ARGS`, with the global options before it: exit code and stderr.
fn extract(global: &[&str], args: &[&str]) -> (Option<i32>, String) {
    let mut cmd = tracegate();
    cmd.args(global).arg("extract").arg(run()).args(args);
    let out = common::run_lossy_within(&mut cmd, 120);
    (out.code, out.stderr)
}

// D23: a warm-up that would drop nothing (at or above the decode steps found) and zero MoE
// layers are refused, not silently ignored.
#[test]
fn options_that_would_be_ignored_are_refused() {
    // The run has 26 decode steps per rank (2 warm-up, 24 steady).
    for n in ["26", "1000"] {
        let (code, stderr) = extract(&[], &["--warmup-steps", n]);
        assert_eq!(code, Some(2), "{n}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "--warmup-steps {n} is not below the 26 decode steps"
            )),
            "{stderr}"
        );
    }
    let (code, stderr) = extract(&[], &["--warmup-steps", "25"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = extract(&[], &["--moe-layers", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--moe-layers"), "{stderr}");
    // A baseline's moe_layers = 0 is refused naming its line.
    let dir = tempfile::tempdir().unwrap();
    let zero = baseline_with_line(dir.path(), "moe_layers = ", "moe_layers = 0");
    let line = line_number(&zero, "moe_layers = 0");
    let (code, stdout, stderr) = check_paths(&[&run()], &zero, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("edited.toml:{line}: [meta] moe_layers = 0")),
        "{stderr}"
    );
}

// D28: sizes in messages are the real figures, in a unit that shows them.
#[test]
fn size_messages_say_what_the_sizes_are() {
    // The stderr of `extract --max-memory SIZE`, which must be refused (exit 2).
    let refused = |size: &str| {
        let (code, stderr) = extract(&["--max-memory", size], &[]);
        assert_eq!(code, Some(2), "{size}: {stderr}");
        stderr
    };
    let stderr = refused("1");
    assert!(
        stderr.contains("over the --max-memory limit of 1 byte") && !stderr.contains("0.0 MiB"),
        "{stderr}"
    );
    let stderr = refused("1500");
    assert!(stderr.contains("limit of 1.5 KiB"), "{stderr}");
    let stderr = refused("20000000000G");
    assert!(
        stderr.contains("too large") && !stderr.contains("above zero"),
        "{stderr}"
    );
    let stderr = refused("0");
    assert!(stderr.contains("not a size above zero"), "{stderr}");
}

// D28: with a long string to frame (--max-string 4G), the memory message gives what is held and
// what framing the string needs, not their sum as if it were held.
#[test]
fn the_memory_message_separates_what_is_held_from_what_a_long_string_needs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("long-TP-0.trace.json");
    let name = "a".repeat(96 << 20);
    std::fs::write(
        &trace,
        format!(
            "{{\"traceEvents\": [{{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"{name}\", \
             \"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 2, \"args\": {{}}}}]}}"
        ),
    )
    .unwrap();
    drop(name);
    let out = tracegate()
        .args([
            "--max-string",
            "4G",
            "--max-memory",
            "64M",
            "--threads",
            "1",
        ])
        .arg("extract")
        .arg(&trace)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = common::stderr_of_exit(&out, 2);
    assert!(
        stderr.contains("needs") && stderr.contains("more to frame a long string"),
        "{stderr}"
    );
    // "holds N MiB": below the limit, or it would have stopped before asking for more.
    let held: f64 = stderr
        .split("tracegate holds ")
        .nth(1)
        .and_then(|s| s.split(" MiB").next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(held <= 64.0, "{stderr}");
}

// D28: a rank number too large for u32 is reported as written, not as 4294967295.
#[test]
fn a_huge_rank_number_is_reported_as_written() {
    let rank0 = std::fs::read_dir(run())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-TP-0.trace.json.gz"))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("x-TP-99999999999.trace.json.gz");
    let mut trace = common::load_json(&rank0);
    trace.as_object_mut().unwrap().remove("distributedInfo");
    std::fs::write(
        &huge,
        common::gzip(serde_json::to_string(&trace).unwrap().as_bytes()),
    )
    .unwrap();
    let out = tracegate()
        .arg("extract")
        .arg(&rank0)
        .arg(&huge)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = common::stderr_of_exit(&out, 2);
    assert!(
        stderr.contains("rank 99999999999 (from the file name)") && !stderr.contains("4294967295"),
        "{stderr}"
    );
}

/// A passing verdict of the clean run, written by `check --verdict-out` into `dir`.
fn passing_verdict(dir: &Path) -> PathBuf {
    let verdict = dir.join("mi355x.json");
    let out = tracegate()
        .arg("check")
        .arg(run())
        .arg("--baseline")
        .arg(shipped(BASELINE))
        .arg("--verdict-out")
        .arg(&verdict)
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    verdict
}

/// `sweep --format json PATHS` with these environment variables: exit code and the JSON.
fn sweep(paths: &[&Path], env: &[(&str, &Path)]) -> (Option<i32>, serde_json::Value, String) {
    let mut cmd = tracegate();
    cmd.args(["sweep", "--format", "json"]).args(paths);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.timeout(Duration::from_secs(60)).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), v, stderr)
}

// D5: a verdict labelled pass whose gated metrics regressed is a regression; one whose gated
// metrics are gone cannot pass either.
#[test]
fn sweep_believes_a_verdicts_metrics_over_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let verdict = passing_verdict(dir.path());
    let (code, v, stderr) = sweep(&[&verdict], &[]);
    assert_eq!(code, Some(0), "{v}{stderr}");
    let mut forged: serde_json::Value = common::load_json(&verdict);
    let metrics = forged["metrics"].as_array_mut().unwrap();
    let step = metrics
        .iter_mut()
        .find(|m| m["name"] == "decode_step_ms")
        .unwrap();
    step["verdict"] = "regressed".into();
    assert_eq!(forged["status"], "pass");
    std::fs::write(&verdict, forged.to_string()).unwrap();
    let (code, v, stderr) = sweep(&[&verdict], &[]);
    assert_eq!(code, Some(1), "{v}{stderr}");
    let c = &v["configurations"][0];
    assert_eq!(c["status"], "regression", "{c}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("labelled pass") && summary.contains("decode_step_ms"),
        "{summary}"
    );
    // No gated metric at all: nothing was judged.
    forged["metrics"] = serde_json::json!([]);
    std::fs::write(&verdict, forged.to_string()).unwrap();
    let (code, v, stderr) = sweep(&[&verdict], &[]);
    assert_eq!(code, Some(2), "{v}{stderr}");
}

// D5: the same file twice, or two verdicts for one configuration, is exit 2 naming both.
#[test]
fn sweep_refuses_one_verdict_counted_twice_and_two_verdicts_of_one_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let verdict = passing_verdict(dir.path());
    let dotted = dir.path().join(".").join("mi355x.json");
    let (code, v, stderr) = sweep(&[&verdict, &dotted], &[]);
    assert_eq!(code, Some(2), "{v}{stderr}");
    assert_eq!(v["configurations"].as_array().unwrap().len(), 1, "{v}");
    let summary = v["configurations"][0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("given twice")
            && summary.contains(&verdict.display().to_string())
            && summary.contains(&dotted.display().to_string()),
        "{summary}"
    );
    // A directory and a file in it are the same file too.
    let (code, _, _) = sweep(&[dir.path(), &verdict], &[]);
    assert_eq!(code, Some(2));
    // Another file with a verdict for the same configuration.
    let copy = dir.path().join("copy.json");
    std::fs::copy(&verdict, &copy).unwrap();
    let (code, v, stderr) = sweep(&[&verdict, &copy], &[]);
    assert_eq!(code, Some(2), "{v}{stderr}");
    let summary = v["configurations"][0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("two verdicts for this configuration")
            && summary.contains("mi355x.json")
            && summary.contains("copy.json"),
        "{summary}"
    );
}

// D29: verdict paths are confined like every other input, and a verdict's own status string is
// never echoed.
#[test]
fn sweep_confines_verdict_paths_and_never_echoes_a_raw_status() {
    let root = tempfile::tempdir().unwrap();
    let (ws, outside) = (root.path().join("ws"), root.path().join("outside"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let verdict = passing_verdict(&outside);
    let env = [("GITHUB_WORKSPACE", ws.as_path())];
    let (code, v, stderr) = sweep(&[&verdict], &env);
    assert_eq!(code, Some(2), "{v}{stderr}");
    let summary = v["configurations"][0]["summary"]
        .as_str()
        .unwrap_or_default();
    assert!(summary.contains("outside the workspace"), "{v}{stderr}");
    // Through a symlink in the workspace, or a directory outside it: the same.
    std::os::unix::fs::symlink(&verdict, ws.join("link.json")).unwrap();
    let (code, _, _) = sweep(&[&ws.join("link.json")], &env);
    assert_eq!(code, Some(2));
    let (code, _, _) = sweep(&[&outside], &env);
    assert_eq!(code, Some(2));
    // Inside, it is read.
    std::fs::remove_file(ws.join("link.json")).unwrap();
    std::fs::copy(&verdict, ws.join("in.json")).unwrap();
    let (code, v, stderr) = sweep(&[&ws.join("in.json")], &env);
    assert_eq!(code, Some(0), "{v}{stderr}");

    let text = std::fs::read_to_string(&verdict).unwrap();
    let hostile = text.replacen(
        "\"status\": \"pass\"",
        "\"status\": \"pass <img src=x onerror=alert(1)> @octocat\"",
        1,
    );
    assert_ne!(hostile, text);
    std::fs::write(&verdict, hostile).unwrap();
    for format in ["json", "markdown"] {
        let out = tracegate()
            .args(["sweep", "--format", format])
            .arg(&verdict)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(2), "{stdout}");
        assert!(stdout.contains("not a tracegate verdict"), "{stdout}");
        assert!(
            !stdout.contains("img") && !stdout.contains("octocat"),
            "{format}: {stdout}"
        );
    }
}
