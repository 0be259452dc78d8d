//! Input a hostile or careless workflow could hand the gate: special files where a baseline or an
//! event payload belongs, and verdict files that contradict themselves. Each is answered at once
//! with exit 2 (or, for GitHub's side, a warning that leaves the verdict's status), never a hang.

use std::path::Path;
use std::time::Duration;

use crate::common::{
    self, baseline_with_line, check_paths, edited_baseline, tracegate, MI355X_BASELINE as BASELINE,
};

fn run() -> std::path::PathBuf {
    common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"])
}

#[cfg(unix)]
#[test]
fn a_special_file_as_baseline_is_refused_without_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for baseline in [Path::new("/dev/zero"), fifo.as_path(), dir.path()] {
        let out = tracegate()
            .arg("check")
            .arg(run())
            .arg("--baseline")
            .arg(baseline)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}: {stderr}",
            baseline.display()
        );
        assert!(stderr.contains("not a regular file"), "{stderr}");
        // Case 21: said once, not "not a regular file: not a regular file".
        assert_eq!(stderr.matches("not a regular file").count(), 1, "{stderr}");
    }
    // A FIFO among the baselines of a directory does not hang discovery either.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE),
        dir.path().join("real.toml"),
    )
    .unwrap();
    let out = tracegate()
        .arg("check")
        .arg(run())
        .arg("--baselines")
        .arg(dir.path())
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    common::assert_exit(&out, 2);
}

/// Case 10: an event payload no runner writes is refused before anything is judged (exit 2),
/// naming the variable and the file, never read. A real payload is covered by `github.rs`.
#[test]
fn an_endless_event_payload_is_refused_not_read() {
    let out = tracegate()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .arg(run())
        .args(["--baseline", BASELINE, "--github", "--repo", "o/r"])
        .env("GITHUB_EVENT_PATH", "/dev/zero")
        .env("GITHUB_TOKEN", "t")
        .env("GITHUB_API_URL", "http://127.0.0.1:9")
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = common::stderr_of_exit(&out, 2);
    assert!(
        stderr.contains("GITHUB_EVENT_PATH /dev/zero: not a regular file, refused"),
        "{stderr}"
    );
    // Over GitHub's 25 MB (a sparse file: nothing is written), and for a sweep as for a check.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("event.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(26 << 20)
        .unwrap();
    let out = tracegate()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["sweep", "--github", "--repo", "o/r"])
        .arg(dir.path())
        .env("GITHUB_EVENT_PATH", &big)
        .env("GITHUB_TOKEN", "t")
        .output()
        .unwrap();
    let stderr = common::stderr_of_exit(&out, 2);
    assert!(stderr.contains("larger than 25 MiB, refused"), "{stderr}");
}

#[test]
fn a_verdict_whose_status_and_exit_code_disagree_cannot_pass_a_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let verdict = dir.path().join("verdict.json");
    let out = tracegate()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .arg(run())
        .args(["--baseline", BASELINE, "--verdict-out"])
        .arg(&verdict)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&verdict).unwrap();
    assert!(text.contains("\"exit_code\": 0"));
    std::fs::write(
        &verdict,
        text.replace("\"exit_code\": 0", "\"exit_code\": 2"),
    )
    .unwrap();
    let out = tracegate()
        .args(["sweep", "--format", "json"])
        .arg(&verdict)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.contains("disagree") || stdout.contains("but exit code 2"),
        "{stdout}"
    );
}

/// The run's rank files copied into `dir`, each rank's `deviceProperties` names passed through
/// `name(rank)` (`None`: the field removed).
fn run_with_devices(
    dir: &Path,
    name: impl Fn(usize) -> Option<&'static str>,
) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(run())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".trace.json.gz"))
        .collect();
    files.sort();
    files
        .iter()
        .enumerate()
        .map(|(rank, f)| {
            let mut trace = common::load_json(f);
            for d in trace["deviceProperties"].as_array_mut().unwrap() {
                match name(rank) {
                    Some(n) => d["name"] = serde_json::json!(n),
                    None => {
                        d.as_object_mut().unwrap().remove("name");
                    }
                }
            }
            let path = dir.join(f.file_name().unwrap());
            std::fs::write(
                &path,
                common::gzip(serde_json::to_string(&trace).unwrap().as_bytes()),
            )
            .unwrap();
            path
        })
        .collect()
}

// Case 1: nothing gated is nothing judged.
#[test]
fn a_baseline_that_gates_nothing_cannot_pass() {
    let dir = tempfile::tempdir().unwrap();
    let ungated = edited_baseline(dir.path(), |l| {
        if l.starts_with("tolerance = ") {
            format!("{l}\ngate = false")
        } else if l.starts_with("gate = false") {
            // Report-only metrics say so already: one `gate` key each.
            String::new()
        } else {
            l.to_string()
        }
    });
    let (code, stdout, stderr) = check_paths(&[&run()], &ungated, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("gates no metric"), "{stdout}");
    assert!(!stdout.contains("PASS"), "{stdout}");
    // An empty [metrics] table: the same.
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE)).unwrap();
    let meta_only: String = text.split("\n[metrics").next().unwrap().to_string() + "\n[metrics]\n";
    let empty = dir.path().join("empty.toml");
    std::fs::write(&empty, meta_only).unwrap();
    let (code, stdout, stderr) = check_paths(&[&run()], &empty, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("gates no metric"), "{stdout}");
}

// Case 2: a run whose hardware nobody knows is judged only when --hardware asserts it.
#[test]
fn unknown_hardware_is_judged_only_when_asserted() {
    let dir = tempfile::tempdir().unwrap();
    let files = run_with_devices(dir.path(), |_| None);
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE);
    let (code, stdout, stderr) = check_paths(&paths, &baseline, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("the run's hardware is unknown"), "{stdout}");
    let (code, stdout, stderr) =
        check_paths(&paths, &baseline, &["--hardware", "AMD Instinct MI355X"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout
            .replace('\\', "")
            .contains("on AMD Instinct MI355X (asserted by --hardware)"),
        "{stdout}"
    );
    // Asserting another device than the baseline's is another hardware.
    let (code, stdout, _) = check_paths(&paths, &baseline, &["--hardware", "NVIDIA B200"]);
    assert_eq!(code, Some(2), "{stdout}");

    // A baseline that names no hardware: the same.
    let anyhw = baseline_with_line(dir.path(), "hardware = ", "hardware = \"\"");
    let (code, stdout, stderr) = check_paths(&[&run()], &anyhw, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("names no hardware"), "{stdout}");
    let (code, stdout, stderr) =
        check_paths(&[&run()], &anyhw, &["--hardware", "AMD Instinct MI355X"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("asserted by --hardware"), "{stdout}");

    // The headline names the run's hardware, not the baseline's.
    let other = baseline_with_line(dir.path(), "hardware = ", "hardware = \"NVIDIA B200\"");
    let (_, stdout, _) = check_paths(&[&run()], &other, &["--allow-other-hardware"]);
    // The first line tells the story; the hardware is on the line after it.
    let headline = stdout.lines().take(3).collect::<Vec<_>>().join("\n");
    assert!(
        headline.contains("on AMD Instinct MI355X") && !headline.contains("B200"),
        "{headline}"
    );
}

// Case 3: intermittent stalls are a regression, and the explanation names the steps.
#[test]
fn five_stalled_decode_steps_fail_the_gate_with_the_steps_named() {
    let stalled = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "3",
        "--inject",
        "stall=5:3.0",
    ]);
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE);
    let (code, stdout, stderr) = check_paths(&[&stalled], &baseline, &[]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("| ❌ | decode\\_stall\\_pct |"), "{stdout}");
    // Five injected (steady steps 3, 8, 13, 17, 22) and the scenario's own stall (step 6).
    assert!(
        stdout.contains("6 of 24 decode steps stalled at")
            && stdout.contains("steps 3, 6, 8, 13, 17, 22"),
        "{stdout}"
    );
    // Without the injection the same seed passes.
    let (code, stdout, _) = check_paths(&[&run()], &baseline, &[]);
    assert_eq!(code, Some(0), "{stdout}");
}

// Case 4: a baseline every gated figure of which is orders of magnitude away.
#[test]
fn a_baseline_of_another_configuration_cannot_pass_as_improved() {
    let dir = tempfile::tempdir().unwrap();
    let far = edited_baseline(dir.path(), |l| match l.strip_prefix("value = ") {
        Some(v) => format!("value = {:e}", v.parse::<f64>().unwrap() * 1e12),
        None => l.to_string(),
    });
    let (code, stdout, stderr) = check_paths(&[&run()], &far, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stdout.contains("this baseline is not of this configuration"),
        "{stdout}"
    );
}

// Case 16: ranks on different hardware are not one configuration.
#[test]
fn ranks_on_different_hardware_are_refused_naming_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = run_with_devices(dir.path(), |rank| {
        Some(if rank == 1 {
            "NVIDIA B200"
        } else {
            "AMD Instinct MI355X"
        })
    });
    let paths: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE);
    let (code, stdout, stderr) = check_paths(&paths, &baseline, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    let name = |i: usize| files[i].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        stdout.contains("the ranks are on different hardware")
            && stdout.contains("NVIDIA B200 in ")
            && stdout.contains(&format!("{}\n", name(1)))
            && stdout.contains(&name(0)),
        "{stdout}"
    );
}

// Case 15: `baseline update` keeps the team's set of metrics and refuses another configuration.
#[test]
fn baseline_update_keeps_the_set_of_metrics_and_refuses_another_rank_count() {
    let dir = tempfile::tempdir().unwrap();
    // The team removed rank_skew_ms from the shipped baseline.
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE)).unwrap();
    let start = text.find("[metrics.rank_skew_ms]").unwrap();
    let end = start + text[start..].find("\n\n").unwrap() + 2;
    let removed = format!("{}{}", &text[..start], &text[end..]);
    let path = dir.path().join("team.toml");
    std::fs::write(&path, &removed).unwrap();
    let update = |extra: &[&str], paths: &[&Path]| {
        tracegate()
            .args(["baseline", "update"])
            .args(paths)
            .arg("--baseline")
            .arg(&path)
            .args(extra)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap()
    };
    let out = update(&[], &[&run()]);
    let stderr = common::stderr_of_exit(&out, 0);
    assert!(
        stderr.contains("rank_skew_ms") && stderr.contains("--add-new"),
        "{stderr}"
    );
    assert!(!std::fs::read_to_string(&path)
        .unwrap()
        .contains("[metrics.rank_skew_ms]"));
    let out = update(&["--add-new"], &[&run()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("[metrics.rank_skew_ms]"));

    // One file of the 4-rank run is a partial run: refused, --force or not.
    let one_rank: Vec<_> = std::fs::read_dir(run())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-TP-0.trace.json.gz"))
        .collect();
    let before = std::fs::read_to_string(&path).unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let out = update(extra, &[&one_rank[0]]);
        let stderr = common::stderr_of_exit(&out, 2);
        assert!(stderr.contains("rank(s) 1, 2, 3 of 4 missing"), "{stderr}");
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    // A whole run of one rank: another rank count, refused unless --force.
    let single = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "3",
        "--ranks",
        "1",
    ]);
    let out = update(&[], &[&single]);
    let stderr = common::stderr_of_exit(&out, 2);
    assert!(
        stderr.contains("4 ranks (tp) but the run has 1") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    // A metric of the baseline the run does not produce: kept, with a warning.
    let out = update(&["--force"], &[&single]);
    let stderr = common::stderr_of_exit(&out, 0);
    assert!(
        stderr.contains("does not produce") && stderr.contains("allreduce_rank_ratio"),
        "{stderr}"
    );
}

// Case 18: what the README says the reader refuses, it refuses.
#[test]
fn negative_or_string_times_and_a_non_finite_spread_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE);
    for (ts, says) in [("-1400000000000", "is negative"), ("\"5\"", "is a string")] {
        let trace = dir.path().join("rank-0.json");
        std::fs::write(
            &trace,
            format!(
                r#"{{"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "bad_kernel", "ts": {ts}, "dur": 1}},
                {{"ph": "X", "cat": "kernel", "name": "good", "ts": 10, "dur": 1}}]}}"#
            ),
        )
        .unwrap();
        let (code, stdout, stderr) = check_paths(&[&trace], &baseline, &[]);
        assert_eq!(code, Some(2), "{stdout}{stderr}");
        assert!(
            stderr.contains("rank-0.json")
                && stderr.contains("bad_kernel")
                && stderr.contains(says),
            "{stderr}"
        );
    }
    let nan = baseline_with_line(dir.path(), "spread = ", "spread = nan");
    let (code, stdout, stderr) = check_paths(&[&run()], &nan, &[]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("edited.toml") && stderr.contains("spread NaN is not a finite number"),
        "{stderr}"
    );
}

/// Case 21: messages that say what happened. The same file twice is "given twice", not a rank
/// that "appears twice: also in" itself; a rank number beyond u32 is refused as too large, not
/// read as rank 0.
#[test]
fn a_file_given_twice_and_a_huge_rank_number_are_named_for_what_they_are() {
    let files: Vec<_> = std::fs::read_dir(run())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-TP-0.trace.json.gz"))
        .collect();
    let rank0 = &files[0];
    let (code, _, stderr) = tracegate_extract(&[rank0, rank0]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("given twice"), "{stderr}");
    assert!(!stderr.contains("also in"), "{stderr}");

    let tmp = tempfile::tempdir().unwrap();
    let huge = tmp.path().join("x-TP-99999999999.trace.json.gz");
    std::fs::copy(rank0, &huge).unwrap();
    // The copy's distributedInfo says rank 0: strip it so that the file name decides.
    let mut trace = common::load_json(&huge);
    trace.as_object_mut().unwrap().remove("distributedInfo");
    std::fs::write(
        &huge,
        common::gzip(serde_json::to_string(&trace).unwrap().as_bytes()),
    )
    .unwrap();
    let (code, _, stderr) = tracegate_extract(&[rank0, &huge]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("rank 99999999999 (from the file name)") && !stderr.contains("4294967295"),
        "{stderr}"
    );
    assert!(!stderr.contains("rank 0 appears twice"), "{stderr}");
}

fn tracegate_extract(paths: &[&Path]) -> (Option<i32>, String, String) {
    let out = common::run_lossy_within(tracegate().arg("extract").args(paths), 120);
    (out.code, out.stdout, out.stderr)
}
