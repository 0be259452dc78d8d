//! The README's "Gate your own run": the commands between its `<!-- guide:begin -->` and
//! `<!-- guide:end -->` markers, run as written with bash on the real H200 trace they name, in a
//! scratch directory with the built `tracegate` first on PATH. The doc and the test cannot
//! drift: a command that stops working, or a flag renamed, fails here.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

use crate::common;

const README: &str = include_str!("../../README.md");

/// The ```sh blocks between the guide's markers, in order, as one script.
fn guide_script() -> String {
    let mut script = String::new();
    let mut rest = README;
    let mut blocks = 0;
    while let Some(start) = rest.find("<!-- guide:begin -->") {
        let after = &rest[start..];
        let end = after
            .find("<!-- guide:end -->")
            .expect("guide:end after guide:begin");
        let region = &after[..end];
        let code = region
            .split_once("```sh\n")
            .and_then(|(_, c)| c.split_once("```"))
            .map(|(c, _)| c)
            .expect("a ```sh block between the markers");
        script.push_str(code);
        blocks += 1;
        rest = &after[end..];
    }
    assert!(blocks >= 2, "the README's guide has {blocks} marked blocks");
    script
}

#[test]
fn the_guide_names_the_real_trace_and_every_step() {
    let script = guide_script();
    for step in [
        "examples/traces/h200-toy-moe-graph.json.gz",
        "tracegate report",
        "tracegate baseline new",
        "tracegate check",
        "tracegate baseline update",
    ] {
        assert!(script.contains(step), "the guide's commands lack {step:?}");
    }
    let section = README
        .split_once("## Gate your own run")
        .expect("the README has \"Gate your own run\"")
        .1;
    for word in [
        "SGLANG_TORCH_PROFILER_DIR",
        "--profile",
        "/start_profile",
        "--profiler-config",
        "torch_profiler_record_shapes",
        "ignore_frontend",
        "--profile-num-steps",
        "--profile-by-stage",
        "synth --seed 1",
        "tracegate baseline calibrate",
        "docs/BASELINES.md#how-tolerances-are-chosen",
    ] {
        assert!(section.contains(word), "the guide does not say {word:?}");
    }
    // vLLM 0.16 removed the variable (vllm-project/vllm#33536): a recipe using it records nothing.
    assert!(
        !README.contains("VLLM_TORCH_PROFILER_DIR="),
        "the README still sets the removed VLLM_TORCH_PROFILER_DIR"
    );
}

/// The repository's root, where the README's commands run.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_guides_commands_run_on_the_real_trace_in_the_repository() {
    // The guide's paths are relative to the checkout; the scratch directory is elsewhere.
    let script = guide_script().replace(
        "examples/traces/",
        &format!("{}/examples/traces/", root().display()),
    );
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("tracegate");
    let mut cmd = Command::new("bash");
    for name in common::GITHUB_ENV {
        cmd.env_remove(name);
    }
    cmd.args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.parent().unwrap().display(),
                std::env::var("PATH").unwrap()
            ),
        );
    let out = common::succeeded("the guide's commands", cmd.output().unwrap());
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 2: the report found the run's 30 graph-replayed decode steps.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("NVIDIA H200"), "{stdout}");
    assert!(stdout.contains("Steps found"), "{stdout}");
    // 3: the baseline holds the trace's hardware and what the command line said.
    let baseline =
        std::fs::read_to_string(dir.path().join("baselines/toy-moe-h200-tp1.toml")).unwrap();
    let toml: toml::Value = toml::from_str(&baseline).unwrap();
    let meta = &toml["meta"];
    assert_eq!(meta["hardware"].as_str(), Some("NVIDIA H200"), "{baseline}");
    assert_eq!(meta["model"].as_str(), Some("toy-moe"), "{baseline}");
    assert_eq!(meta["tp"].as_integer(), Some(1), "{baseline}");
    // 6: the update recorded the new image.
    assert_eq!(
        meta["image"].as_str(),
        Some("lmsysorg/sglang:v0.5.5"),
        "{baseline}"
    );
    // 4: check passed (bash -e), wrote its report, and said its verdict on stderr.
    let report = std::fs::read_to_string(Path::new(dir.path()).join("check.md")).unwrap();
    assert!(
        report.starts_with("✅ **PASS** · ") && report.contains("tracegate on NVIDIA H200:"),
        "{report}"
    );
    assert!(stderr.contains("✅ PASS · "), "{stderr}");
}

#[test]
fn every_command_block_outside_the_guide_is_marked_as_a_template() {
    // The guide's blocks run (above); every other sh or yaml block says what it is, so that a
    // reader does not take a server recipe for a command that runs in a clone.
    let mut outside = README.to_string();
    while let Some(start) = outside.find("<!-- guide:begin -->") {
        let end = outside[start..].find("<!-- guide:end -->").unwrap() + start;
        outside.replace_range(start..end, "");
    }
    let lines: Vec<&str> = outside.lines().collect();
    let mut blocks = 0;
    for (i, line) in lines.iter().enumerate() {
        let fence = line.trim_start();
        if fence == "```sh" || fence == "```yaml" {
            blocks += 1;
            let first = lines[i + 1].trim_start();
            assert!(
                ["# template", "# synopsis", "# benchmarks", "# in a clone"]
                    .iter()
                    .any(|m| first.starts_with(m)),
                "a README block is not marked as a template: {first}"
            );
        }
    }
    assert!(blocks >= 6, "{blocks} blocks");
}

/// The `Examples:` lines of every command's `--help` that name the repository's real trace.
fn help_examples_with_the_trace() -> Vec<String> {
    let bin = assert_cmd::cargo::cargo_bin("tracegate");
    let mut found = Vec::new();
    let commands: &[&[&str]] = &[
        &["inspect"],
        &["extract"],
        &["check"],
        &["sweep"],
        &["report"],
        &["compare"],
        &["synth"],
        &["demo"],
        &["baseline", "new"],
        &["baseline", "update"],
        &["baseline", "calibrate"],
    ];
    for args in commands {
        let out = Command::new(&bin)
            .args(*args)
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        for line in help.lines().map(str::trim) {
            if line.starts_with("tracegate ") && line.contains("examples/traces/") {
                // The example without its comment.
                found.push(line.split("  #").next().unwrap().trim().to_string());
            }
        }
    }
    found
}

#[test]
fn every_help_example_that_names_a_trace_runs_in_a_clone() {
    let examples = help_examples_with_the_trace();
    assert!(
        !examples.is_empty(),
        "no --help example names the repository's trace"
    );
    let bin = assert_cmd::cargo::cargo_bin("tracegate");
    let dir = tempfile::tempdir().unwrap();
    for example in examples {
        // From the repository's root, as a clone runs it; anything it writes goes to scratch.
        let script = example.replacen("tracegate", &bin.display().to_string(), 1);
        let out = Command::new("bash")
            .args(["-c", &script])
            .current_dir(root())
            .env("TMPDIR", dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{example}` exited {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
