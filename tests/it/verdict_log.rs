//! A verdict in every log: `check` and `sweep` print their headline on stderr whatever
//! `--output` and `--format` say, so a CI step that fails says why in its log.

use std::path::Path;

use crate::common::{self, tracegate};

const BASELINE: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";
const OTHER_HARDWARE: &str = "baselines/dsr1-fp8-h200-sglang-tp8-conc64.toml";

/// The markdown's first line as plain text, undone independently of tracegate's code: the
/// headlines here hold no markup beyond bold and backslash escapes.
fn plain(markdown: &str) -> String {
    let line = markdown.lines().next().unwrap().replace("**", "");
    regex::Regex::new(r"\\(.)")
        .unwrap()
        .replace_all(&line, "$1")
        .into_owned()
}

/// `check RUN --baseline BASELINE EXTRA...` from the crate root: exit code, stdout, stderr.
fn check(run: &Path, baseline: &str, extra: &[&str]) -> (i32, String, String) {
    let out = common::check_against(run, baseline, extra, &[]);
    (out.code.unwrap(), out.stdout, out.stderr)
}

#[test]
fn check_with_output_prints_the_headline_on_stderr_for_every_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let pass = common::mi355x_run(None);
    let fail = common::mi355x_run(Some("allreduce=1.5"));
    for (run, baseline, code, word) in [
        (&pass, BASELINE, 0, "PASS"),
        (&fail, BASELINE, 1, "REGRESSION"),
        (&pass, OTHER_HARDWARE, 2, "CANNOT JUDGE"),
    ] {
        let md = dir.path().join(format!("{code}.md"));
        let (status, stdout, stderr) = check(run, baseline, &["--output", md.to_str().unwrap()]);
        assert_eq!(status, code, "{stderr}");
        assert!(stdout.is_empty(), "the report went to the file: {stdout}");
        let report = std::fs::read_to_string(&md).unwrap();
        let headline = plain(&report);
        assert!(headline.contains(word), "{headline}");
        // The story, not a list of metrics: the configuration and, for a regression, its cause.
        assert!(headline.contains(" · "), "{headline}");
        if code == 1 {
            assert!(headline.contains(" · cause: allreduce "), "{headline}");
        }
        assert!(
            stderr.lines().any(|l| l == headline),
            "exit {code}: the headline {headline:?} on stderr: {stderr}"
        );
        // The same line whatever the format, to a file or to stdout.
        for format in ["json", "table", "markdown"] {
            let (status, _, stderr) = check(run, baseline, &["--format", format]);
            assert_eq!(status, code, "{format}: {stderr}");
            assert!(
                stderr.lines().any(|l| l == headline),
                "{format}: {headline:?} on stderr: {stderr}"
            );
        }
    }
}

#[test]
fn sweep_with_output_prints_the_headline_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let verdicts = dir.path().join("verdicts");
    std::fs::create_dir(&verdicts).unwrap();
    // Two configurations (a sweep refuses two verdicts of one): the second judged against a copy
    // of the baseline under another name.
    let other = dir.path().join("mi355x-other.toml");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE), &other).unwrap();
    for (name, run, baseline) in [
        ("clean", common::mi355x_run(None), BASELINE),
        (
            "slow",
            common::mi355x_run(Some("allreduce=1.5")),
            other.to_str().unwrap(),
        ),
    ] {
        let verdict = verdicts.join(format!("{name}.json"));
        let (status, _, stderr) = check(
            &run,
            baseline,
            &[
                "--format",
                "json",
                "--verdict-out",
                verdict.to_str().unwrap(),
            ],
        );
        assert!(status <= 1, "{stderr}");
    }
    let md = dir.path().join("sweep.md");
    let out = tracegate()
        .env_remove("GITHUB_ACTIONS")
        .arg("sweep")
        .arg(&verdicts)
        .args(["--format", "json", "--output"])
        .arg(&md)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    // --format json wrote JSON to the file: the headline is the markdown's, printed anyway.
    let json: serde_json::Value = common::load_json(&md);
    assert_eq!(json["status"], "regression");
    let line = stderr
        .lines()
        .find(|l| l.contains("tracegate sweep"))
        .unwrap_or_else(|| panic!("no headline on stderr: {stderr}"));
    assert!(line.starts_with("❌ tracegate sweep: "), "{line}");
    assert!(!line.contains("**"), "plain text: {line}");
}
