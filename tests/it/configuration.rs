//! The configuration a baseline records is held (issue 39): the framework the trace tells, the
//! analysis options that change a figure (`--hta-comm`, `--step-gap`, `--warmup-steps`,
//! `--moe-layers`) and the built-in taxonomy its kernels were classified by. A difference is
//! exit 2 naming it; discovery matches a baseline without `framework` only to a run whose
//! framework is unknown.

use std::path::{Path, PathBuf};

use crate::common::{self, edited_baseline, tracegate, Out, MI355X_BASELINE};

fn run() -> PathBuf {
    common::mi355x_run(None)
}

fn check(baseline: &Path, args: &[&str]) -> Out {
    common::run(
        tracegate()
            .arg("check")
            .arg(run())
            .arg("--baseline")
            .arg(baseline)
            .args(["--format", "json"])
            .args(args),
    )
}

fn problems(out: &Out) -> String {
    let v: serde_json::Value =
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stderr));
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `baseline new` of the shared MI355X run with `args`, into `dir`.
fn made_with(dir: &Path, args: &[&str]) -> PathBuf {
    let path = dir.join("made.toml");
    let out = common::baseline_new(
        &run(),
        &path,
        &args
            .iter()
            .chain(&["--moe-layers", "58"])
            .copied()
            .collect::<Vec<_>>(),
    );
    common::assert_exit(&out, 0);
    path
}

#[test]
fn check_refuses_a_baseline_of_another_framework() {
    let dir = tempfile::tempdir().unwrap();
    let vllm = common::baseline_with_line(dir.path(), "framework = ", "framework = \"vllm\"");
    let out = check(&vllm, &[]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let p = problems(&out);
    assert!(
        p.contains("framework \"vllm\"") && p.contains("\"sglang\""),
        "{p}"
    );
    let out = check(&vllm, &["--allow-other-configuration"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

#[test]
fn discovery_does_not_match_a_baseline_without_framework_to_a_run_whose_framework_is_known() {
    let dir = tempfile::tempdir().unwrap();
    edited_baseline(dir.path(), |l| {
        if l.starts_with("framework = ") {
            String::new()
        } else {
            l.to_string()
        }
    });
    let out = common::run(
        tracegate()
            .arg("check")
            .arg(run())
            .arg("--baselines")
            .arg(dir.path()),
    );
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("no baseline matches"), "{}", out.stderr);
}

#[test]
fn a_baseline_made_with_hta_comm_refuses_a_run_checked_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = made_with(dir.path(), &["--hta-comm"]);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(text.contains("hta_comm = true"), "{text}");
    let out = check(&baseline, &[]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let p = problems(&out);
    assert!(
        p.contains("made with --hta-comm, the run analysed with no --hta-comm"),
        "{p}"
    );
    let out = check(&baseline, &["--hta-comm"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
}

/// The shipped baseline with one `[analysis]` line replaced.
fn shipped_with(dir: &Path, key: &str, line: &str) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(MI355X_BASELINE))
        .unwrap();
    assert!(
        text.contains("\n[analysis]\n"),
        "the shipped baseline records [analysis]"
    );
    common::baseline_with_line(dir, &format!("{key} = "), line)
}

#[test]
fn a_baseline_made_with_a_step_gap_refuses_a_run_checked_without_it_unless_override() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = shipped_with(dir.path(), "step_gap", "step_gap = \"500us\"");
    let out = check(&baseline, &[]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let p = problems(&out);
    assert!(p.contains("made with --step-gap 500us"), "{p}");
    let out = check(&baseline, &["--override"]);
    assert_ne!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stdout.contains("(--override)"), "{}", out.stdout);
}

#[test]
fn a_baseline_made_with_other_warmup_steps_refuses_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = shipped_with(dir.path(), "warmup_steps", "warmup_steps = 3");
    let out = check(&baseline, &[]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let p = problems(&out);
    assert!(
        p.contains("made with --warmup-steps 3, the run analysed with --warmup-steps 2"),
        "{p}"
    );
    let out = check(&baseline, &["--warmup-steps", "3"]);
    assert_ne!(out.code, Some(2), "{}", out.stderr);
}

#[test]
fn a_baseline_without_analysis_is_taken_as_made_with_the_defaults_and_says_so_when_it_matters() {
    let dir = tempfile::tempdir().unwrap();
    let mut in_analysis = false;
    let baseline = edited_baseline(dir.path(), |l| {
        if l.starts_with('[') {
            in_analysis = l == "[analysis]";
        }
        if in_analysis {
            String::new()
        } else {
            l.to_string()
        }
    });
    let out = check(&baseline, &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let out = check(&baseline, &["--hta-comm"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        problems(&out).contains("records no [analysis]"),
        "{}",
        problems(&out)
    );
}

#[test]
fn a_moe_layers_flag_equal_to_the_recorded_one_is_no_difference() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = shipped_with(dir.path(), "warmup_steps", "warmup_steps = 2");
    let out = check(&baseline, &["--moe-layers", "58"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let out = check(&baseline, &["--moe-layers", "40"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
}

#[test]
fn a_kernel_the_built_in_rules_now_classify_otherwise_is_a_taxonomy_change() {
    // The baseline records the FP4 quant kernel (and its category's time) under memcpy, as an
    // older rule table would have: today's rules say quant.
    let dir = tempfile::tempdir().unwrap();
    let mut after_quant = false;
    let baseline = edited_baseline(dir.path(), |l| {
        let line = match l {
            "[breakdown.categories.quant]" => "[breakdown.categories.memcpy]".to_string(),
            "category = \"quant\"" if after_quant => "category = \"memcpy\"".to_string(),
            l if l.starts_with("taxonomy = ") => "taxonomy = \"2026-01-01\"".to_string(),
            _ => l.to_string(),
        };
        after_quant = l == "name = \"_dynamic_mxfp4_quant_kernel\"";
        line
    });
    let out = check(&baseline, &[]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let p = problems(&out);
    assert!(
        p.contains("the taxonomy changed since this baseline (\"_dynamic_mxfp4_quant_kernel\": memcpy → quant; taxonomy 2026-01-01 → ")
            && p.contains("baseline update --baseline")
            && p.contains("--rebase"),
        "{p}"
    );
}

#[test]
fn update_of_a_learning_baseline_refuses_a_run_analysed_otherwise_unless_rebase() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = made_with(dir.path(), &[]);
    let update = |extra: &[&str]| {
        common::with_run_and_baseline(&["baseline", "update"], &run(), &baseline, extra)
    };
    common::assert_exit(&update(&["--history-size", "5"]), 0);
    let out = update(&["--hta-comm"]);
    common::assert_exit(&out, 2);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("made with no --hta-comm, the run analysed with --hta-comm"),
        "{e}"
    );
    common::assert_exit(&update(&["--hta-comm", "--rebase"]), 0);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(text.contains("hta_comm = true"), "{text}");
}
