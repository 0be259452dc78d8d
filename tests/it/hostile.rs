//! Input a hostile or careless workflow could hand the gate: special files where a baseline or an
//! event payload belongs, and verdict files that contradict themselves. Each is answered at once
//! with exit 2 (or, for GitHub's side, a warning that leaves the verdict's status), never a hang.

use std::path::Path;
use std::time::Duration;

use crate::common::{self, tracegate};

const BASELINE: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";

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
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_endless_event_payload_is_a_warning_not_a_hang() {
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
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("/dev/zero") && stderr.contains("not a regular file"),
        "{stderr}"
    );
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
