//! In a workflow (`GITHUB_WORKSPACE` set), every path tracegate reads from or writes for a workflow
//! input stays in the workspace or the runner's temporary directory, in every command and with or
//! without `--github`; an output is never a symlink, even a dangling one.

use std::path::Path;

use crate::common::{self, tracegate};

fn in_workflow(ws: &Path, args: &[&str]) -> std::process::Output {
    tracegate()
        .current_dir(ws)
        .env("GITHUB_WORKSPACE", ws)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn every_command_refuses_paths_outside_the_workspace() {
    let run = common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--ranks", "2"]);
    let run = run.to_str().unwrap();
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let outside = root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let out_file = "../outside/x.md";
    // A copy, so that a confinement that failed could not touch the shipped baseline.
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let baseline = elsewhere.join("b.toml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml"),
        &baseline,
    )
    .unwrap();
    let before = std::fs::read(&baseline).unwrap();
    let baseline = baseline.to_str().unwrap();
    for args in [
        vec!["report", run, "--output", out_file],
        vec!["compare", run, run, "--output", out_file],
        vec!["extract", run, "--output", out_file],
        vec!["inspect", run, "--output", out_file],
        vec!["baseline", "new", run, "--baseline", "../outside/b.toml"],
        vec!["baseline", "update", run, "--baseline", baseline],
        vec!["check", run, "--baseline", baseline, "--no-github"],
        vec!["sweep", "verdicts", "--output", out_file],
    ] {
        let out = in_workflow(&ws, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("outside the workspace"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(std::fs::read(elsewhere.join("b.toml")).unwrap(), before);
}

#[cfg(unix)]
#[test]
fn a_dangling_symlink_is_never_written_through() {
    let run = common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--ranks", "2"]);
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let target = root.path().join("outside.json");
    std::os::unix::fs::symlink(&target, ws.join("verdict.json")).unwrap();
    std::os::unix::fs::symlink(&target, ws.join("report.md")).unwrap();
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml");
    for args in [
        vec![
            "check".into(),
            run.display().to_string(),
            "--baseline".into(),
            baseline.display().to_string(),
            "--verdict-out".into(),
            "verdict.json".into(),
            "--allow-other-hardware".into(),
        ],
        vec![
            "report".into(),
            run.display().to_string(),
            "--output".into(),
            "report.md".into(),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = in_workflow(&ws, &args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!target.exists(), "{args:?} wrote through the symlink");
    }
}
