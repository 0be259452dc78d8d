//! A sweep of configurations: baseline discovery, verdict files, one merged answer.

use crate::common;

use std::path::{Path, PathBuf};

use crate::common::{synth_cmd, tracegate};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Synthesises a scenario and checks it with baseline discovery, writing its verdict file.
fn job(work: &Path, scenario: &str, inject: Option<&str>, verdicts: &Path) -> (i32, String) {
    let run = work.join(scenario);
    let mut cmd = synth_cmd();
    cmd.args([
        "--scenario",
        scenario,
        "--seed",
        "9",
        "--python-functions-per-step",
        "0",
        "--out",
    ]);
    cmd.arg(&run);
    if let Some(spec) = inject {
        cmd.args(["--inject", spec]);
    }
    common::run_ok(&mut cmd);
    let out = tracegate()
        .current_dir(root())
        .arg("check")
        .arg(&run)
        .args([
            "--baselines",
            "baselines",
            "--format",
            "json",
            "--verdict-out",
        ])
        .arg(verdicts.join(format!("{scenario}.json")))
        .output()
        .unwrap();
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    (
        out.status.code().unwrap(),
        verdict["baseline"]["path"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

/// A scratch directory with an empty `verdicts` directory in it.
fn work_with_verdicts() -> (tempfile::TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    let verdicts = work.path().join("verdicts");
    std::fs::create_dir(&verdicts).unwrap();
    (work, verdicts)
}

/// `sweep VERDICTS --expect EXPECT,...`.
fn sweep_expecting(verdicts: &Path, expect: &[String]) -> std::process::Output {
    tracegate()
        .arg("sweep")
        .arg(verdicts)
        .args(["--expect", &expect.join(",")])
        .output()
        .unwrap()
}

const ALL: [&str; 4] = [
    "dsr1-fp4-mi355x-sglang-tp4-conc64",
    "dsr1-fp4-b200-sglang-tp4-ep4-conc64",
    "dsr1-fp8-h200-sglang-tp8-conc64",
    "dsr1-fp8-mi325x-sglang-tp8-conc64",
];

/// The configurations README's sweep example expects (`--expect a,b,...`).
fn readme_expect() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("tracegate sweep ") && l.contains(" --expect "))
        .expect("README has a sweep example with --expect");
    let list = line
        .split_whitespace()
        .skip_while(|w| *w != "--expect")
        .nth(1)
        .expect("--expect takes a list");
    list.split(',').map(str::to_string).collect()
}

#[test]
fn the_readme_sweep_example_expects_baseline_stems() {
    // A sweep names each configuration after its baseline's file stem: an --expect name that is
    // no stem can never match, and the sweep would fail on it whatever the jobs did.
    let mut stems: Vec<String> = std::fs::read_dir(root().join("baselines"))
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let stem = path.file_stem()?.to_string_lossy().into_owned();
            (path.extension()? == "toml").then_some(stem)
        })
        .collect();
    stems.sort();
    let expect = readme_expect();
    assert!(!expect.is_empty());
    for name in &expect {
        assert!(stems.contains(name), "{name} is not among {stems:?}");
    }
}

#[test]
fn a_sweep_with_regressions_and_a_missing_verdict_is_a_regression() {
    let (work, verdicts) = work_with_verdicts();
    // Discovery picks each scenario's own baseline from hardware and rank count.
    for (scenario, inject, code, baseline) in [
        ("mi355x-dsr1-fp4-tp4", Some("allreduce=1.5"), 1, ALL[0]),
        ("b200-dsr1-fp4-tp4-ep4", None, 0, ALL[1]),
        ("mi325x-dsr1-fp8-tp8", Some("allreduce=1.5"), 1, ALL[3]),
    ] {
        let (status, path) = job(work.path(), scenario, inject, &verdicts);
        assert_eq!(status, code, "{scenario}");
        assert_eq!(path, format!("baselines/{baseline}.toml"), "{scenario}");
    }
    // A second passing configuration: the B200 verdict as another concurrency's.
    let mut b200 = common::load_json(&verdicts.join("b200-dsr1-fp4-tp4-ep4.json"));
    let extra = "dsr1-fp4-b200-sglang-tp4-ep4-conc128";
    b200["baseline"]["path"] = format!("baselines/{extra}.toml").into();
    std::fs::write(verdicts.join(format!("{extra}.json")), b200.to_string()).unwrap();
    // The H200 job "crashed": no verdict file. Listed as expected (README's example, which
    // names every baseline), it is missing.
    let mut expect = readme_expect();
    expect.push(extra.to_string());
    assert!(expect.contains(&ALL[2].to_string()));
    let out = sweep_expecting(&verdicts, &expect);
    // check's precedence: two regressions outrank the missing verdict.
    common::assert_exit(&out, 1);
    let markdown = String::from_utf8(out.stdout).unwrap();
    let first = markdown.lines().next().unwrap();
    assert!(
        first.starts_with("❌ **tracegate sweep**: REGRESSION: 5 configurations, 2 regressed, 1 could not be judged, 2 passed"),
        "{first}"
    );
    assert!(first.contains(ALL[2]), "the missing one is named: {first}");
    // Regressions sort first, then the missing one, then the passes.
    let rows: Vec<&str> = markdown
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(" | dsr1-"))
        .map(|l| &l[..l.find(" | ").unwrap()])
        .collect();
    assert_eq!(rows, ["| ❌", "| ❌", "| ⚠️", "| ✅", "| ✅"], "{markdown}");
    insta::assert_snapshot!("sweep_regression_and_missing", markdown);
    // The headline on stderr says the same.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("REGRESSION: 5 configurations"), "{stderr}");
    // With only the missing one and the passes, it cannot be judged.
    std::fs::remove_file(verdicts.join("mi355x-dsr1-fp4-tp4.json")).unwrap();
    std::fs::remove_file(verdicts.join("mi325x-dsr1-fp8-tp8.json")).unwrap();
    let out = sweep_expecting(&verdicts, &expect);
    common::assert_exit(&out, 2);
}

#[test]
fn two_matching_baselines_are_exit_2_with_the_candidates() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("baselines");
    std::fs::create_dir(&dir).unwrap();
    let text =
        std::fs::read_to_string(root().join("baselines").join(format!("{}.toml", ALL[0]))).unwrap();
    std::fs::write(dir.join("a-fp4.toml"), &text).unwrap();
    std::fs::write(
        dir.join("b-fp8.toml"),
        text.replace("precision = \"fp4\"", "precision = \"fp8\""),
    )
    .unwrap();
    let run = work.path().join("run");
    assert!(synth_cmd()
        .args([
            "--scenario",
            "mi355x-dsr1-fp4-tp4",
            "--python-functions-per-step",
            "0",
            "--out"
        ])
        .arg(&run)
        .output()
        .unwrap()
        .status
        .success());
    let out = tracegate()
        .arg("check")
        .arg(&run)
        .arg("--baselines")
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = common::stderr_of_exit(&out, 2);
    assert!(
        stderr.contains("2 baselines match")
            && stderr.contains("a-fp4.toml")
            && stderr.contains("b-fp8.toml"),
        "{stderr}"
    );
    let out = tracegate()
        .arg("check")
        .arg(&run)
        .arg("--baselines")
        .arg(&dir)
        .args(["--key", "precision=fp4"])
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
}

#[test]
fn a_64_configuration_sweep_fits_in_one_comment() {
    let (work, verdicts) = work_with_verdicts();
    let (status, _) = job(
        work.path(),
        "mi355x-dsr1-fp4-tp4",
        Some("protocol=2"),
        &verdicts,
    );
    assert_eq!(status, 1);
    let one = common::load_json(&verdicts.join("mi355x-dsr1-fp4-tp4.json"));
    let mut names: Vec<PathBuf> = Vec::new();
    for i in 0..64 {
        let mut v = one.clone();
        let name = format!(
            "dsr1-fp4-mi355x-sglang-tp4-conc{}-variant-with-a-long-name-{i:02}",
            4 * (i + 1)
        );
        v["baseline"]["path"] = serde_json::Value::String(format!("baselines/{name}.toml"));
        let path = verdicts.join(format!("{name}.json"));
        std::fs::write(&path, v.to_string()).unwrap();
        names.push(path);
    }
    std::fs::remove_file(verdicts.join("mi355x-dsr1-fp4-tp4.json")).unwrap();
    let out = tracegate().arg("sweep").arg(&verdicts).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let markdown = String::from_utf8(out.stdout).unwrap();
    assert!(
        markdown.chars().count() < 65_536,
        "{} characters",
        markdown.chars().count()
    );
    assert!(markdown.contains("64 configurations, 64 regressed"));
    assert_eq!(
        markdown
            .lines()
            .filter(|l| l.starts_with("| ❌ | dsr1"))
            .count(),
        64,
        "every configuration has its row"
    );
}

#[test]
fn an_unreadable_verdict_file_is_a_failed_configuration() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("broken.json"),
        "{\"schema_version\": 1, \"stat",
    )
    .unwrap();
    let out = tracegate()
        .arg("sweep")
        .arg(work.path())
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let sweep: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sweep["configurations"][0]["name"], "broken");
    assert_eq!(sweep["configurations"][0]["status"], "cannot_judge");
}

#[test]
fn a_sweep_shows_artefacts_and_skew_as_check_does_and_expects_job_names() {
    let (work, verdicts) = work_with_verdicts();
    // The straggler's utilisation rises because the others wait: check calls it no improvement.
    let (code, _) = job(
        work.path(),
        "h200-dsr1-fp8-tp8",
        Some("straggler=5:1.3"),
        &verdicts,
    );
    assert_eq!(code, 1);
    let (code, _) = job(work.path(), "mi355x-dsr1-fp4-tp4", None, &verdicts);
    assert_eq!(code, 0);
    // The job names of a matrix (the verdict files' stems, the action's `name`), not the
    // baselines' stems: both answer --expect.
    let expect = [
        "h200-dsr1-fp8-tp8".to_string(),
        "mi355x-dsr1-fp4-tp4".to_string(),
    ];
    let out = tracegate()
        .arg("sweep")
        .arg(&verdicts)
        .args(["--expect", &expect.join(",")])
        .args(["--image", "lmsysorg/sglang:v0.5.9"])
        .output()
        .unwrap();
    common::assert_exit(&out, 1);
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("2 configurations, 1 regressed, 0 could not be judged, 1 passed"),
        "{md}"
    );
    let h200 = md
        .lines()
        .find(|l| l.starts_with("| ❌ | dsr1-fp8-h200"))
        .unwrap_or_else(|| panic!("{md}"));
    // gpu_util_pct +2.7 pp is an artefact (ℹ️), never 🚀; rank_skew_ms in ms, as its tolerance.
    assert!(!md.contains("🚀"), "{md}");
    assert!(h200.contains("pp\u{a0}ℹ️"), "{h200}");
    assert!(h200.contains("\u{a0}ms\u{a0}❌"), "{h200}");
    insta::assert_snapshot!("sweep_straggler_and_image", md);
}
