//! The action's gate step, `.github/check.sh`, run with bash as action.yml runs it: the inputs
//! reach it through the `env:` of action.yml's check step, read here from action.yml itself.
//! First with a stand-in `tracegate` that records its arguments (each input becomes the
//! arguments it should, one argument per line of `args`, nothing evaluated), then with the real
//! binary on a synthetic run, picking its baseline with `baselines` + `key` + `hardware`.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const ACTION: &str = include_str!("../../action.yml");

/// The check step's environment as action.yml writes it: variable name -> input name.
fn step_env() -> BTreeMap<String, String> {
    let step = ACTION
        .split("- name: Check the run against the baseline")
        .nth(1)
        .expect("action.yml has the check step");
    let re = regex::Regex::new(r"(?m)^\s+([A-Z_]+): \$\{\{ inputs\.([a-z-]+) \}\}\s*$").unwrap();
    re.captures_iter(step)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect()
}

struct Step {
    code: i32,
    stderr: String,
    github_output: String,
    temp: PathBuf,
}

/// Runs the check step with these inputs (the others empty, as action.yml leaves an input
/// without a value when its default is ""), `tracegate` found in `bin`.
fn run_step(dir: &Path, bin: &Path, inputs: &[(&str, &str)]) -> Step {
    let env = step_env();
    for (name, _) in inputs {
        assert!(
            env.values().any(|i| i == name),
            "action.yml's check step does not pass input {name}"
        );
    }
    let temp = dir.join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let github_output = dir.join("github-output");
    std::fs::write(&github_output, "").unwrap();
    let mut cmd = Command::new("bash");
    for name in common::GITHUB_ENV {
        cmd.env_remove(name);
    }
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/check.sh"))
        .current_dir(dir)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_OUTPUT", &github_output);
    for (var, input) in &env {
        let value = inputs
            .iter()
            .find(|(name, _)| name == input)
            .map_or("", |(_, v)| v);
        cmd.env(var, value);
    }
    let out = cmd.output().unwrap();
    Step {
        code: out.status.code().unwrap(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        github_output: std::fs::read_to_string(&github_output).unwrap(),
        temp,
    }
}

/// A `tracegate` that writes its arguments, NUL-separated, to ARGS, creates the file after
/// `--verdict-out`, and exits 1.
fn stand_in(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("tracegate");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\0' \"$@\" > '{}'\nwhile [ $# -gt 0 ]; do\n  \
             if [ \"$1\" = --verdict-out ]; then echo '{{}}' > \"$2\"; fi\n  shift\ndone\nexit 1\n",
            dir.join("ARGS").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn every_input_becomes_its_arguments_and_nothing_is_evaluated() {
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path());
    std::fs::create_dir_all(dir.path().join("runs")).unwrap();
    std::fs::write(dir.path().join("runs/rank-0.json"), "").unwrap();
    std::fs::write(dir.path().join("runs/rank-1.json"), "").unwrap();
    let step = run_step(
        dir.path(),
        &bin,
        &[
            ("traces", "runs/rank-*.json"),
            ("baselines", "baselines dir"),
            ("key", "precision=fp4\n\nconcurrency=64\r\n"),
            ("hardware", "AMD Instinct MI300X"),
            ("rules", "rules.toml"),
            ("fail-on-improvement", "true"),
            ("comment", "off"),
            ("image", "img:1"),
            ("meta", "sglang=0.5.4"),
            (
                "args",
                "--step-gap\n500us\n--meta\nnote=a b; $(touch pwned) `touch pwned`",
            ),
        ],
    );
    assert_eq!(
        step.code, 1,
        "the exit status is tracegate's: {}",
        step.stderr
    );
    let recorded = std::fs::read(dir.path().join("ARGS")).unwrap();
    let args: Vec<String> = String::from_utf8(recorded)
        .unwrap()
        .trim_end_matches('\0')
        .split('\0')
        .map(String::from)
        .collect();
    let out = step.temp.join("tracegate");
    let expected: Vec<String> = [
        "check",
        "runs/rank-0.json",
        "runs/rank-1.json",
        "--baselines",
        "baselines dir",
        "--key",
        "precision=fp4",
        "--key",
        "concurrency=64",
        "--hardware",
        "AMD Instinct MI300X",
        "--rules",
        "rules.toml",
        "--fail-on-improvement",
        "--image",
        "img:1",
        "--meta",
        "sglang=0.5.4",
        "--github",
        "--comment",
        "off",
        "--output",
        &out.join("verdict.md").display().to_string(),
        "--verdict-out",
        &out.join("verdict.json").display().to_string(),
        "--step-gap",
        "500us",
        "--meta",
        "note=a b; $(touch pwned) `touch pwned`",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(args, expected);
    assert!(!dir.path().join("pwned").exists(), "args were evaluated");
    assert_eq!(
        step.github_output.trim(),
        format!("verdict-path={}", out.join("verdict.json").display())
    );
}

#[test]
fn the_step_refuses_bad_inputs_before_running_tracegate() {
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path());
    for (inputs, says) in [
        (vec![("traces", "t")], "give baseline"),
        (
            vec![("traces", "t"), ("baseline", "a.toml"), ("baselines", "d")],
            "not both",
        ),
        (
            vec![
                ("traces", "t"),
                ("baseline", "a.toml"),
                ("fail-on-improvement", "yes"),
            ],
            "true or false",
        ),
        (
            vec![("traces", "t"), ("baseline", "a.toml"), ("name", "../x")],
            "file name",
        ),
    ] {
        let step = run_step(dir.path(), &bin, &inputs);
        assert_eq!(step.code, 2, "{inputs:?}: {}", step.stderr);
        assert!(step.stderr.contains(says), "{inputs:?}: {}", step.stderr);
        assert!(
            !dir.path().join("ARGS").exists(),
            "{inputs:?} ran tracegate"
        );
    }
}

#[test]
fn baselines_key_and_hardware_pick_the_baseline_with_the_real_binary() {
    let dir = tempfile::tempdir().unwrap();
    // Two MI355X TP4 baselines that only `precision` tells apart.
    let baselines = dir.path().join("baselines");
    std::fs::create_dir(&baselines).unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml"),
    )
    .unwrap();
    std::fs::write(baselines.join("fp4.toml"), &shipped).unwrap();
    let fp8 = shipped.replace("precision = \"fp4\"", "precision = \"fp8\"");
    assert_ne!(fp8, shipped);
    std::fs::write(baselines.join("fp8.toml"), fp8).unwrap();
    let run = common::mi355x_run(None);
    let bin = assert_cmd::cargo::cargo_bin("tracegate");
    let bin = bin.parent().unwrap();
    let traces = run.display().to_string();
    let mut inputs = vec![
        ("traces", traces.as_str()),
        ("baselines", "baselines"),
        ("hardware", "AMD Instinct MI355X"),
        ("comment", "off"),
        ("name", "mi355x"),
    ];
    // Without the key, two baselines match: the step fails, exit 2, saying so.
    let ambiguous = run_step(dir.path(), bin, &inputs);
    assert_eq!(ambiguous.code, 2, "{}", ambiguous.stderr);
    assert!(
        ambiguous.stderr.contains("fp8.toml"),
        "{}",
        ambiguous.stderr
    );
    inputs.push(("key", "precision=fp4"));
    let step = run_step(dir.path(), bin, &inputs);
    assert_eq!(step.code, 0, "{}", step.stderr);
    let verdict_path = step.temp.join("tracegate/mi355x.json");
    assert!(
        step.github_output
            .lines()
            .any(|l| l == format!("verdict-path={}", verdict_path.display())),
        "{}",
        step.github_output
    );
    let verdict: serde_json::Value = common::load_json(&verdict_path);
    assert_eq!(verdict["status"], "pass");
    assert!(
        verdict["baseline"]["path"]
            .as_str()
            .unwrap()
            .ends_with("fp4.toml"),
        "{verdict}"
    );
    // The hardware input reached check: the report says it was asserted.
    let report = std::fs::read_to_string(step.temp.join("tracegate/mi355x.md")).unwrap();
    assert!(report.contains("asserted"), "{report}");
    // And the verdict is in the step's log.
    assert!(step.stderr.contains("✅ PASS · "), "{}", step.stderr);
}
