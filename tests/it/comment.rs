//! The pull-request comment as a reviewer reads it (issue 40): a check that cannot judge judges
//! nothing on the page, a metric too noisy to judge shows its interval and what would decide it,
//! a calibrated baseline says what it can see. Each is a markdown snapshot, which the browser
//! check (`.ci/browser/check.mjs`) renders as GitHub does.

use crate::common::{self, check_against, tracegate, MI355X_BASELINE};
use std::path::{Path, PathBuf};

/// The marks of a judged metric: none may appear in a comment that judged nothing.
const VERDICT_MARKS: [&str; 3] = ["✅", "❌", "🚀"];

fn assert_judges_nothing(md: &str) {
    for mark in VERDICT_MARKS {
        assert!(
            !md.contains(mark),
            "{mark} in a comment that judged nothing:\n{md}"
        );
    }
    assert!(!md.contains("#### Why"), "{md}");
    assert!(!md.contains("All 2"), "no metric table: {md}");
}

#[test]
fn a_baseline_of_other_hardware_shows_what_differs_and_the_next_step_not_verdicts() {
    let run = common::mi355x_run(None);
    let out = check_against(
        &run,
        "baselines/dsr1-fp4-b200-sglang-tp4-ep4-conc64.toml",
        &["--format", "markdown"],
        &[],
    );
    assert_eq!(out.code, Some(2), "{}", out.stdout);
    let md = out.stdout;
    assert!(md.starts_with("⚠️ **CANNOT JUDGE**"), "{md}");
    assert_judges_nothing(&md);
    // What differs, marked; what does not, unmarked.
    let row = |what: &str| {
        md.lines()
            .find(|l| l.starts_with("| ") && l.contains(&format!("| {what} |")))
            .unwrap_or_else(|| panic!("no {what} row: {md}"))
            .to_string()
    };
    assert!(row("hardware").starts_with("| ≠ |"), "{md}");
    assert!(row("ranks").starts_with("|  |"), "{md}");
    assert!(
        md.contains("**Next step:** judge this run against a baseline of its own configuration")
    );
    insta::assert_snapshot!("comment_cannot_judge_other_hardware", md);
}

#[test]
fn a_run_of_another_batch_cannot_be_judged_and_says_both_batches() {
    let run = common::mi355x_run(Some("batch=32"));
    let out = check_against(&run, MI355X_BASELINE, &["--format", "markdown"], &[]);
    assert_eq!(out.code, Some(2), "{}", out.stdout);
    let md = out.stdout;
    assert_judges_nothing(&md);
    let batch = md
        .lines()
        .find(|l| l.contains("| batch |"))
        .unwrap_or_else(|| panic!("no batch row: {md}"));
    assert!(
        batch.starts_with("| ≠ |") && batch.contains("| 64 | 32 |"),
        "{batch}"
    );
    insta::assert_snapshot!("comment_cannot_judge_batch", md);
}

#[test]
fn a_metric_too_noisy_to_judge_shows_its_interval_its_limit_and_the_steps_that_would_decide() {
    // MoE 5.1% slower against a 5% tolerance: the interval of the change straddles the limit.
    let run = common::mi355x_run(Some("moe=1.051"));
    let json = check_against(&run, MI355X_BASELINE, &["--format", "json"], &[]);
    assert_eq!(json.code, Some(2), "{}", json.stdout);
    let verdict: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let moe = common::verdict_metric(&verdict, "moe_us_per_layer");
    assert_eq!(moe["verdict"], "noisy", "{moe}");
    let out = check_against(&run, MI355X_BASELINE, &["--format", "markdown"], &[]);
    let md = out.stdout;
    assert!(md.starts_with("⚠️ **CANNOT JUDGE**"), "{md}");
    assert_judges_nothing(&md);
    assert!(
        md.contains("Too noisy to judge: moe\\_us\\_per\\_layer"),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| moe\\_us\\_per\\_layer |"))
        .unwrap_or_else(|| panic!("no row: {md}"));
    // change, interval of the change (two figures), the limit, the steps, how many more.
    let cells: Vec<&str> = row.split(" | ").collect();
    assert!(cells[2].contains(" to "), "{row}");
    assert!(cells[3].starts_with('+'), "{row}");
    assert!(cells[5].trim_end_matches(" |").starts_with('+'), "{row}");
    insta::assert_snapshot!("comment_too_noisy", md);
}

/// A calibrated baseline of the shipped MI355X scenario with run-to-run jitter, from 5 runs
/// copied into `dir` as `r1` to `r5` (its `source` names them so, the same on every machine).
fn calibrated_baseline(dir: &Path) -> PathBuf {
    let runs: Vec<PathBuf> = (1..=5)
        .map(|seed| {
            let name = format!("r{seed}");
            let seed = seed.to_string();
            let run = common::synth_run(&[
                "--scenario",
                "mi355x-dsr1-fp4-tp4",
                "--seed",
                &seed,
                "--run-jitter",
                "2",
                "--python-functions-per-step",
                "0",
            ]);
            let copy = dir.join(&name);
            std::fs::create_dir(&copy).unwrap();
            for f in std::fs::read_dir(&run).unwrap() {
                let f = f.unwrap().path();
                std::fs::copy(&f, copy.join(f.file_name().unwrap())).unwrap();
            }
            PathBuf::from(name)
        })
        .collect();
    let baseline = dir.join("dsr1-fp4-mi355x-sglang-tp4-conc64.toml");
    let out = tracegate()
        .current_dir(dir)
        .args(["baseline", "calibrate"])
        .args(&runs)
        .arg("--baseline")
        .arg(&baseline)
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    baseline
}

#[test]
fn a_calibrated_baseline_says_what_it_catches_and_a_change_below_it_is_not_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = calibrated_baseline(dir.path());
    let run = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "13",
        "--run-jitter",
        "2",
        "--python-functions-per-step",
        "0",
        "--inject",
        "moe=1.1",
    ]);
    let out = tracegate()
        .arg("check")
        .arg(&run)
        .arg("--baseline")
        .arg(&baseline)
        .args(["--format", "markdown", "--no-github"])
        .output()
        .unwrap();
    let md = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&dir.path().display().to_string(), "<tmp>");
    assert!(md.contains("| catches ≥ |"), "{md}");
    assert!(md.contains("Tolerances calibrated from "), "{md}");
    // A 10% slower MoE moves the decode step by less than a 5-run calibration can detect: the
    // pass says so, and its row does too; it is not "no change".
    let first = md.lines().next().unwrap();
    assert!(first.starts_with("✅ **PASS**"), "{first}");
    assert!(
        first.contains("below what this baseline can detect: decode\\_step\\_ms +"),
        "{first}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| ✅ | decode\\_step\\_ms |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains("below what this baseline can detect"), "{row}");
    assert!(
        md.contains("This baseline catches a decode-step regression of "),
        "{md}"
    );
    // The calibration note is said once, not in every tolerance cell.
    assert!(!md.contains("(calibrated, "), "{md}");
    insta::assert_snapshot!("comment_calibrated", md);
}

/// The repository's real H200 trace (a CUDA-graph decode of a small MoE decoder).
const REAL_TRACE: &str = "examples/traces/h200-toy-moe-graph.json.gz";

#[test]
fn a_real_trace_s_regression_comment_reads_as_the_synthetic_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let baseline = dir.path().join("toy-moe-h200-tp1.toml");
    let out = tracegate()
        .current_dir(root)
        .arg("baseline")
        .arg("new")
        .arg(REAL_TRACE)
        .arg("--baseline")
        .arg(&baseline)
        .args(["--model", "toy-moe", "--precision", "bf16"])
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    // A baseline recorded when the decode step was 10% faster: the run is a regression.
    let text = std::fs::read_to_string(&baseline).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let step = table["metrics"]["decode_step_ms"]["value"]
        .as_float()
        .unwrap();
    let faster = text.replacen(
        &format!("value = {step}"),
        &format!("value = {}", (step / 1.1 * 1000.0).round() / 1000.0),
        1,
    );
    assert_ne!(faster, text);
    std::fs::write(&baseline, faster).unwrap();
    let out = tracegate()
        .current_dir(root)
        .arg("check")
        .arg(REAL_TRACE)
        .arg("--baseline")
        .arg(&baseline)
        .args(["--format", "markdown", "--no-github"])
        .output()
        .unwrap();
    // The baseline's date is the day the test runs.
    let date = regex::Regex::new(r"\b20[0-9]{2}-[0-9]{2}-[0-9]{2}\b").unwrap();
    let md = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&dir.path().display().to_string(), "<tmp>");
    let md = date.replace_all(&md, "<date>").into_owned();
    assert_eq!(out.status.code(), Some(1), "{md}");
    assert!(
        md.starts_with("❌ **REGRESSION** · toy-moe-h200-tp1 · decode step +10."),
        "{md}"
    );
    assert!(md.contains("tracegate on NVIDIA H200: **"), "{md}");
    insta::assert_snapshot!("comment_real_trace", md);
}
