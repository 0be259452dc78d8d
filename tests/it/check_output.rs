//! Snapshots of every `check` format for a passing and a failing run, bad baselines, and the
//! `baseline update` round trip.

use crate::common;

use std::path::Path;

use crate::common::tracegate;

const BASELINE: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";

/// `check RUN --baseline BASELINE --format FORMAT` from the crate root: exit code, stdout, stderr.
fn check_output(run: &Path, baseline: &str, format: &str) -> (i32, String, String) {
    let out = common::check_against(run, baseline, &["--format", format], &[]);
    (out.code.unwrap(), out.stdout, out.stderr)
}

#[test]
fn passing_and_failing_checks_in_every_format() {
    let pass = common::mi355x_run(None);
    let fail = common::mi355x_run(Some("allreduce=1.5"));
    for (run, name, code) in [(&pass, "pass", 0), (&fail, "fail", 1)] {
        for format in ["markdown", "table", "json"] {
            let (status, stdout, stderr) = check_output(run, BASELINE, format);
            assert_eq!(status, code, "{name} {format}: {stderr}");
            insta::assert_snapshot!(format!("check_{name}_{format}"), stdout);
        }
    }
}

#[test]
fn the_markdown_stays_under_the_comment_limit_for_a_huge_run() {
    // A baseline listing thousands of kernels that all vanished: the diff and tables are huge.
    let dir = tempfile::tempdir().unwrap();
    let run = common::mi355x_run(Some("protocol=2"));
    let mut text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE)).unwrap();
    for i in 0..5000 {
        text.push_str(&format!(
            "\n[[breakdown.kernels]]\nname = \"vanished_kernel_{i}_{}\"\ncategory = \"other\"\nms_per_step = 0.01\ncalls_per_step = 1.0\n",
            "x".repeat(60)
        ));
    }
    // The category they add up to, as a recorded breakdown has it (else the baseline contradicts
    // itself, which is exit 2: tests/it/integrity.rs).
    text.push_str("\n[breakdown.categories.other]\nms_per_step = 50.0\ncalls_per_step = 5000.0\n");
    let baseline = dir.path().join("huge.toml");
    std::fs::write(&baseline, text).unwrap();
    let (status, stdout, _) = check_output(&run, baseline.to_str().unwrap(), "markdown");
    assert_eq!(status, 1);
    assert!(
        stdout.chars().count() < 65_536,
        "{} characters",
        stdout.chars().count()
    );
    assert!(stdout.contains("REGRESSION"));
}

fn assert_bad_baseline(text: Option<&str>, needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let run = common::mi355x_run(None);
    let baseline = dir.path().join("bad.toml");
    if let Some(text) = text {
        std::fs::write(&baseline, text).unwrap();
    }
    let (status, stdout, stderr) = check_output(&run, baseline.to_str().unwrap(), "markdown");
    assert_eq!(status, 2, "{stderr}");
    assert!(stdout.is_empty(), "no verdict printed: {stdout}");
    assert!(stderr.contains("bad.toml"), "names the file: {stderr}");
    assert!(stderr.contains(needle), "says {needle:?}: {stderr}");
}

fn shipped_with(from: &str, to: &str) -> String {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE)).unwrap();
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

#[test]
fn missing_baseline_is_exit_2() {
    assert_bad_baseline(None, "cannot read baseline");
}

#[test]
fn invalid_toml_is_exit_2_with_its_line() {
    assert_bad_baseline(
        Some(&shipped_with(
            "[metrics.decode_step_ms]",
            "[metrics.decode_step_ms",
        )),
        "bad.toml:",
    );
}

#[test]
fn unknown_metric_is_exit_2() {
    assert_bad_baseline(
        Some(&shipped_with(
            "[metrics.comm_pct]",
            "[metrics.comm_percent]",
        )),
        "unknown metric",
    );
}

#[test]
fn tolerance_abc_is_exit_2() {
    assert_bad_baseline(
        Some(&shipped_with("tolerance = \"3%\"", "tolerance = \"abc\"")),
        "\"abc\"",
    );
}

#[test]
fn negative_tolerance_is_exit_2() {
    assert_bad_baseline(
        Some(&shipped_with("tolerance = \"3%\"", "tolerance = \"-3%\"")),
        "negative",
    );
}

#[test]
fn a_bad_trace_is_exit_2_whatever_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("rank-0.json.gz");
    std::fs::write(&trace, &common::gzip(b"{\"traceEvents\": [")[..20]).unwrap();
    let (status, stdout, stderr) = check_output(&trace, BASELINE, "markdown");
    assert_eq!(status, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("rank-0.json.gz"), "{stderr}");
}

#[test]
fn baseline_update_round_trips_and_keeps_hand_edits() {
    let dir = tempfile::tempdir().unwrap();
    let run = common::mi355x_run(Some("moe=1.2"));
    let baseline = dir.path().join("edited.toml");
    let edited = shipped_with(
        "[metrics.comm_pct]",
        "# comm is gated loosely on this machine\n[metrics.comm_pct]",
    )
    .replacen("tolerance = \"1.5pp\"", "tolerance = \"2pp\"", 1);
    std::fs::write(&baseline, &edited).unwrap();
    let b = baseline.to_str().unwrap();
    // The slower MoE fails against the old figures...
    assert_eq!(check_output(&run, b, "markdown").0, 1);
    // ...a dry run prints the change and writes nothing (a run `check` calls a regression is
    // written only as an accepted one)...
    let dry = common::run_ok(tracegate().args(["baseline", "update"]).arg(&run).args([
        "--baseline",
        b,
        "--dry-run",
        "--accept-regression",
    ]));
    let diff = String::from_utf8(dry.stdout).unwrap();
    assert!(
        diff.contains("-value = ") && diff.contains("+value = "),
        "{diff}"
    );
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), edited);
    // ...the update writes it, keeping the comment and the edited tolerance...
    common::run_ok(tracegate().args(["baseline", "update"]).arg(&run).args([
        "--baseline",
        b,
        "--accept-regression",
    ]));
    let updated = std::fs::read_to_string(&baseline).unwrap();
    assert!(
        updated.contains("# comm is gated loosely on this machine\n[metrics.comm_pct]"),
        "{updated}"
    );
    assert!(updated.contains("tolerance = \"2pp\""));
    // ...and the same run now passes.
    assert_eq!(check_output(&run, b, "markdown").0, 0);
}

#[test]
fn baseline_update_refuses_other_hardware_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let run = common::mi355x_run(None);
    let baseline = dir.path().join("other.toml");
    std::fs::write(
        &baseline,
        shipped_with(
            "hardware = \"AMD Instinct MI355X\"",
            "hardware = \"NVIDIA B200\"",
        ),
    )
    .unwrap();
    let b = baseline.to_str().unwrap();
    let out = tracegate()
        .args(["baseline", "update"])
        .arg(&run)
        .args(["--baseline", b])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refusing"));
    common::run_ok(tracegate().args(["baseline", "update"]).arg(&run).args([
        "--baseline",
        b,
        "--force",
    ]));
}

#[test]
fn a_baseline_for_other_hardware_cannot_judge_the_run() {
    let run = common::mi355x_run(None);
    let other = "baselines/dsr1-fp4-b200-sglang-tp4-ep4-conc64.toml";
    let (status, stdout, _) = check_output(&run, other, "markdown");
    assert_eq!(status, 2, "{stdout}");
    assert!(
        stdout.contains("CANNOT JUDGE") && stdout.contains("NVIDIA B200"),
        "{stdout}"
    );
    // The rank count is checked too: an 8-rank baseline for a 4-rank run.
    let eight = "baselines/dsr1-fp8-mi325x-sglang-tp8-conc64.toml";
    let out = tracegate()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .arg(&run)
        .args(["--baseline", eight, "--format", "json"])
        .output()
        .unwrap();
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        verdict["problems"].as_array().unwrap().len(),
        2,
        "{verdict}"
    );
    // Judged anyway when asked to: the verdict is about the figures then.
    let out = tracegate()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .arg(&run)
        .args(["--baseline", other, "--allow-other-hardware"])
        .output()
        .unwrap();
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A metric written as an inline table is a valid baseline: `check` reads it, and `baseline
/// update` (dry run and for real) rewrites its figures in place, still inline.
#[test]
fn an_inline_table_metric_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let run = common::mi355x_run(Some("moe=1.2"));
    let baseline = dir.path().join("inline.toml");
    // The shipped table of decode_step_ms, whatever its figures, written as an inline table.
    let shipped =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE)).unwrap();
    let start = shipped.find("[metrics.decode_step_ms]\n").unwrap();
    let end = start + shipped[start..].find("\n\n").unwrap() + 1;
    let value = shipped[start..end]
        .lines()
        .find_map(|l| l.strip_prefix("value = "))
        .unwrap();
    let inline = shipped_with(
        &shipped[start..end],
        &format!("[metrics]\ndecode_step_ms = {{ value = {value}, tolerance = \"3%\" }}\n"),
    );
    std::fs::write(&baseline, &inline).unwrap();
    let b = baseline.to_str().unwrap();
    assert_eq!(check_output(&run, b, "markdown").0, 1);
    for dry_run in [true, false] {
        let mut cmd = tracegate();
        // The slower MoE is a regression: written only as an accepted one (issue 39).
        cmd.args(["baseline", "update", "--accept-regression"])
            .arg(&run)
            .args(["--baseline", b]);
        if dry_run {
            cmd.arg("--dry-run");
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "dry run {dry_run}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let updated = std::fs::read_to_string(&baseline).unwrap();
    let line = updated
        .lines()
        .find(|l| l.starts_with("decode_step_ms = {"))
        .unwrap_or_else(|| panic!("not inline any more: {updated}"));
    assert!(
        line.contains("tolerance = \"3%\"") && !line.contains("20.1206"),
        "{line}"
    );
    assert_eq!(check_output(&run, b, "markdown").0, 0);
}

/// `baseline new` records `decode_step_p90_ms` gated with its registry tolerance, and the gate
/// judges it like any other metric.
#[test]
fn the_decode_step_p90_is_recorded_and_gated() {
    let dir = tempfile::tempdir().unwrap();
    let run = common::mi355x_run(None);
    let baseline = dir.path().join("new.toml");
    common::run_ok(
        tracegate()
            .args(["baseline", "new"])
            .arg(&run)
            .arg("--baseline")
            .arg(&baseline),
    );
    let text = std::fs::read_to_string(&baseline).unwrap();
    let entry = text
        .split("[metrics.decode_step_p90_ms]")
        .nth(1)
        .expect("decode_step_p90_ms recorded");
    assert!(entry.contains("tolerance = \"5%\"") && !entry.starts_with("\ngate = false"));
    let (status, json, _) = check_output(&run, baseline.to_str().unwrap(), "json");
    assert_eq!(status, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let p90 = common::verdict_metric(&v, "decode_step_p90_ms");
    assert_eq!(
        (p90["gated"].as_bool(), p90["verdict"].as_str()),
        (Some(true), Some("ok"))
    );
    assert!(p90["samples"].as_u64().unwrap() > 10, "{p90}");
}

/// A `baseline update` killed in the middle of writing leaves the old baseline whole. A file-size
/// limit (`ulimit -f`) below the baseline's size kills the process with SIGXFSZ at its first write
/// past the limit: deterministic, where a timed kill is not. Without the limit, the same update
/// does change the file, so the write was really under way.
#[cfg(unix)]
#[test]
fn a_baseline_update_killed_while_writing_leaves_the_old_baseline_intact() {
    let dir = tempfile::tempdir().unwrap();
    let run = common::mi355x_run(Some("moe=1.2"));
    let baseline = dir.path().join("team.toml");
    let old = shipped_with("[metrics.comm_pct]", "# ours\n[metrics.comm_pct]");
    std::fs::write(&baseline, &old).unwrap();
    assert!(old.len() > 4096, "the limit below must cut the write");
    let update = |limit: &str| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -f {limit} && exec \"$0\" \"$@\""))
            .arg(assert_cmd::cargo::cargo_bin("tracegate"))
            // The slower MoE is a regression: written only as an accepted one (issue 39).
            .args(["baseline", "update", "--accept-regression", "--baseline"])
            .arg(&baseline)
            .arg(&run)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_WORKSPACE")
            .output()
            .unwrap()
    };
    // 2 blocks: 1,024 bytes in POSIX sh (512-byte blocks), 2,048 in bash.
    let killed = update("2");
    assert!(!killed.status.success(), "{killed:?}");
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), old);
    common::succeeded("update", update("unlimited"));
    let new = std::fs::read_to_string(&baseline).unwrap();
    assert_ne!(new, old);
    assert!(new.contains("# ours\n[metrics.comm_pct]"), "{new}");
}

// ---- The verdict a reviewer reads in ten seconds (issue 29): the first line names the
// configuration, the decode step's change and the cause, on the five runs the issue names.

const H200_BASELINE: &str = "baselines/dsr1-fp8-h200-sglang-tp8-conc64.toml";
const OLD_IMAGE: &str = "lmsysorg/sglang:v0.5.8-rocm700-mi35x";
const NEW_IMAGE: &str = "lmsysorg/sglang:v0.5.9-rocm700-mi35x";

/// `check --format markdown` of a synth run of `scenario` with `injections` against `baseline`
/// (or against a copy of it recorded with [`OLD_IMAGE`], the run given [`NEW_IMAGE`]), the
/// temporary directory's path written `<tmp>`: (exit status, markdown).
fn story(scenario: &str, injections: &[&str], baseline: &str, bump: bool) -> (i32, String) {
    let mut args = vec![
        "--scenario",
        scenario,
        "--seed",
        "3",
        "--python-functions-per-step",
        "0",
    ];
    for spec in injections {
        args.extend(["--inject", spec]);
    }
    let run = common::synth_run(&args);
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = tracegate();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .arg(&run);
    if bump {
        let path = tmp.path().join(Path::new(baseline).file_name().unwrap());
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(baseline))
            .unwrap()
            .replacen("[meta]\n", &format!("[meta]\nimage = \"{OLD_IMAGE}\"\n"), 1);
        std::fs::write(&path, text).unwrap();
        cmd.arg("--baseline")
            .arg(&path)
            .args(["--image", NEW_IMAGE]);
    } else {
        cmd.args(["--baseline", baseline]);
    }
    let out = cmd.args(["--format", "markdown"]).output().unwrap();
    let md = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&tmp.path().display().to_string(), "<tmp>");
    (out.status.code().unwrap(), md)
}

/// The first line's parts: the verdict, the configuration, the decode step's change with its
/// unit (`decode step +4.2% (20.127 → 20.979 ms)`), and `cause: ` followed by `cause`.
fn assert_first_line(md: &str, configuration: &str, cause: &str) {
    let first = md.lines().next().unwrap();
    let parts: Vec<&str> = first.split(" · ").collect();
    assert_eq!(parts[0], "❌ **REGRESSION**", "{first}");
    assert_eq!(parts[1], configuration.replace('_', "\\_"), "{first}");
    let decode = regex::Regex::new(
        r"^decode step ((\+|-)[0-9]+\.[0-9]|±0)% \\\([0-9]+\.[0-9]{3} → [0-9]+\.[0-9]{3} ms\\\)$",
    )
    .unwrap();
    assert!(
        parts.iter().any(|p| decode.is_match(p)),
        "no decode-step change in {first}"
    );
    let last = parts.last().unwrap();
    assert!(last.starts_with("cause: "), "{first}");
    assert!(last.contains(cause), "{cause:?} not in {first}");
}

/// What no check output may show: a `us` unit, a signed zero, a share beyond ±100%. Returns
/// how many shares of change it read.
fn assert_clean_figures(md: &str) -> usize {
    let us = regex::Regex::new(r"[0-9] ?us\b").unwrap();
    assert!(!us.is_match(md), "a `us` unit: {:?}", us.find(md));
    let signed_zero = regex::Regex::new(r"[-+]0(\.0+)?([^0-9.]|$)").unwrap();
    for line in md.lines() {
        assert!(!signed_zero.is_match(line), "a signed zero in {line}");
    }
    // A share of change follows the change in its cell of a category or kernel row:
    // `| +0.393 \(+53%\) |`.
    let share = regex::Regex::new(r"\| (±0|[-+][0-9.]+) \\\(([-+]?[0-9]+|±0)%\\\) \|").unwrap();
    let mut shares = 0;
    for line in md.lines() {
        for c in share.captures_iter(line) {
            shares += 1;
            let v: i64 = if &c[2] == "±0" {
                0
            } else {
                c[2].parse().unwrap()
            };
            assert!(v.abs() <= 100, "a share beyond ±100%: {line}");
        }
    }
    shares
}

/// No metric reads as an improvement, nor offers a re-baseline.
fn assert_no_improvement(md: &str) {
    assert!(!md.contains("🚀"), "{md}");
    assert!(!md.contains("| improved"), "{md}");
    assert!(!md.contains("re-baseline"), "{md}");
}

/// Every line of the README's example comment (the fenced block that holds `first`) is a line of
/// the current output: `...` stands for lines left out, and a line ending in ` ...` for the rest
/// of one. The marker and the footer come from `--github` and are not in `md`.
fn assert_readme_example_is_current(readme: &str, first: &str, md: &str) {
    let block = readme
        .split("````markdown\n")
        .find(|b| b.contains(first))
        .and_then(|b| b.split("\n````\n").next())
        .expect("the README's example comment");
    let shown = block.lines().filter(|l| {
        !(l.is_empty()
            || l.trim() == "..."
            || l.starts_with("<!-- tracegate:")
            || l.starts_with("_From the"))
    });
    for line in shown {
        let now = match line.strip_suffix(" ...") {
            Some(head) => md.lines().any(|l| l.starts_with(head)),
            None => md.lines().any(|l| l == line),
        };
        assert!(
            now,
            "the README's example shows a line the output no longer has: {line}"
        );
    }
}

#[test]
fn an_allreduce_regression_names_the_collective_kernel_in_the_first_line() {
    let (code, md) = story("mi355x-dsr1-fp4-tp4", &["allreduce=1.5"], BASELINE, false);
    assert_eq!(code, 1, "{md}");
    assert_first_line(
        &md,
        "dsr1-fp4-mi355x-sglang-tp4-conc64",
        "cause: allreduce aiter::cross\\_device\\_reduce\\_2stage +",
    );
    assert!(md.lines().next().unwrap().ends_with("% per call"), "{md}");
    let _ = assert_clean_figures(&md);
    // The README shows this comment's first lines: they are the current output.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let first = md.lines().next().unwrap();
    let shown: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("❌ **REGRESSION** · dsr1-fp4-mi355x-sglang-tp4-conc64"))
        .collect();
    assert_eq!(shown.len(), 2, "the README's two examples");
    assert!(
        shown.iter().all(|l| *l == first),
        "README: {shown:#?}\nnow: {first}"
    );
    assert_readme_example_is_current(&readme, first, &md);
    insta::assert_snapshot!("story_allreduce", md);
}

#[test]
fn a_moe_regression_shows_only_what_moved_before_why() {
    let (code, md) = story("mi355x-dsr1-fp4-tp4", &["moe=1.1"], BASELINE, false);
    assert_eq!(code, 1, "{md}");
    assert_first_line(
        &md,
        "dsr1-fp4-mi355x-sglang-tp4-conc64",
        "cause: moe\\_gemm +",
    );
    // The table before Why holds only the metrics that moved; the rest are folded.
    let before_why = &md[..md.find("#### Why").expect("a Why")];
    assert!(
        before_why.contains("moe\\_us\\_per\\_layer"),
        "{before_why}"
    );
    assert!(!before_why.contains("overlap\\_pct"), "{before_why}");
    assert!(md.contains("<details><summary>All "), "{md}");
    insta::assert_snapshot!("story_moe", md);
}

#[test]
fn a_straggler_is_named_once_and_its_utilisation_is_no_improvement() {
    let (code, md) = story(
        "h200-dsr1-fp8-tp8",
        &["straggler=5:1.3"],
        H200_BASELINE,
        false,
    );
    assert_eq!(code, 1, "{md}");
    assert_first_line(
        &md,
        "dsr1-fp8-h200-sglang-tp8-conc64",
        "cause: rank 5 is the straggler \\(+",
    );
    assert!(
        md.lines()
            .next()
            .unwrap()
            .ends_with(" ms compute per step\\)"),
        "{md}"
    );
    // The comm and MoE shares of the change, and the kernels' that led them.
    assert!(assert_clean_figures(&md) >= 4, "{md}");
    assert_no_improvement(&md);
    // Said once: the Why names the rank, nothing else repeats it.
    assert_eq!(md.matches("is the straggler").count(), 2, "{md}");
    assert!(
        md.contains("`gpu_util_pct` is not an improvement: the other ranks wait for rank 5"),
        "{md}"
    );
    // The skew is shown in the unit of its absolute tolerance.
    let skew = md
        .lines()
        .find(|l| l.starts_with("| ") && l.contains("rank\\_skew\\_ms"))
        .unwrap();
    assert!(
        // (a number and its unit joined by a no-break space: a table never wraps them apart)
        skew.contains("| +13.") && skew.contains("\u{a0}ms | 0.25\u{a0}ms |"),
        "{skew}"
    );
    insta::assert_snapshot!("story_straggler", md);
}

#[test]
fn an_image_bump_with_a_renamed_slower_moe_kernel_names_both_in_the_first_line() {
    let (code, md) = story(
        "mi355x-dsr1-fp4-tp4",
        &["rename-moe", "moe=1.1"],
        BASELINE,
        true,
    );
    assert_eq!(code, 1, "{md}");
    assert_first_line(
        &md,
        "dsr1-fp4-mi355x-sglang-tp4-conc64",
        "cause: moe\\_gemm +",
    );
    let first = md.lines().next().unwrap();
    assert!(first.contains(" · image v0.5.8 → v0.5.9 · "), "{first}");
    assert!(
        first.contains("led by renamed ck::kernel\\_moe\\_mxgemm\\_2lds +"),
        "{first}"
    );
    // moe_gemm's share, and its two kernels'.
    assert!(assert_clean_figures(&md) >= 3, "{md}");
    insta::assert_snapshot!("story_image_bump", md);
}

#[test]
fn an_unknown_moe_kernel_is_the_cause_and_the_moe_figure_is_no_improvement() {
    let (code, md) = story("mi355x-dsr1-fp4-tp4", &["unknown-moe"], BASELINE, false);
    assert_eq!(code, 1, "{md}");
    assert_first_line(
        &md,
        "dsr1-fp4-mi355x-sglang-tp4-conc64",
        "moved into kernels no rule classifies, led by zz\\_fork\\_ffn\\_blockwise\\_v9\\_kernel \\(new\\)",
    );
    let _ = assert_clean_figures(&md);
    assert_no_improvement(&md);
    // The table's row says so, and its note under the table says why.
    let moe = md
        .lines()
        .find(|l| l.contains("moe\\_us\\_per\\_layer"))
        .unwrap();
    assert!(moe.contains("| not an improvement ¹ |"), "{moe}");
    assert!(
        md.contains("¹ `moe_us_per_layer` is not an improvement: its time moved into kernels no rule classifies"),
        "{md}"
    );
    // +3.9 ms into `other` and −3.9 ms out of moe_gemm net to nothing: no share is shown.
    assert!(!md.contains("share of change"), "{md}");
    insta::assert_snapshot!("story_unknown_moe", md);
}

#[test]
fn stalled_steps_are_the_cause_in_the_first_line() {
    let (code, md) = story("mi355x-dsr1-fp4-tp4", &["stall=6:3.0"], BASELINE, false);
    assert_eq!(code, 1, "{md}");
    assert_first_line(
        &md,
        "dsr1-fp4-mi355x-sglang-tp4-conc64",
        " of 24 decode steps stalled at 3.0× the median",
    );
    let _ = assert_clean_figures(&md);
    // One rank for one story: the rank whose stalls "Why" counts is the rank the chart draws.
    let why = regex::Regex::new(r"decode steps of rank ([0-9]+) stalled").unwrap();
    let chart = regex::Regex::new(r"every decode step found on rank ([0-9]+),").unwrap();
    let (why, chart) = (
        &why.captures(&md).expect("Why names the rank")[1],
        &chart.captures(&md).expect("the chart names its rank")[1],
    );
    assert_eq!(why, chart, "{md}");
    insta::assert_snapshot!("story_stalls", md);
}

#[test]
fn a_pass_says_no_change_beyond_noise_in_one_line_with_its_tables_folded() {
    let (code, md) = story("mi355x-dsr1-fp4-tp4", &[], BASELINE, false);
    assert_eq!(code, 0, "{md}");
    let first = md.lines().next().unwrap();
    assert!(
        first.starts_with("✅ **PASS** · dsr1-fp4-mi355x-sglang-tp4-conc64 · decode step "),
        "{first}"
    );
    assert!(first.ends_with(" · no change beyond noise"), "{first}");
    assert!(!md.contains("#### Why"), "{md}");
    assert!(!md.contains("share of change"), "{md}");
    // Every table is folded.
    let mut folded = false;
    for line in md.lines() {
        if line.starts_with("<details>") {
            folded = true;
        } else if line.starts_with("</details>") {
            folded = false;
        } else if line.starts_with('|') {
            assert!(folded, "an unfolded table row: {line}");
        }
    }
    let _ = assert_clean_figures(&md);
}

/// The cause is the failing metric's: a MoE regression (+8% per layer) in a run whose
/// between-run jitter made the dense GEMMs faster by more is explained by the MoE kernels, never
/// by the category that improved (issue 40; before, "cause: dense_gemm -0.866 ms").
#[test]
fn a_moe_regression_names_moe_as_its_cause_when_another_category_improved_more() {
    let run = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--run-jitter",
        "8",
        "--seed",
        "33",
        "--inject",
        "moe=1.08",
    ]);
    let (status, stdout, stderr) = check_output(&run, BASELINE, "markdown");
    assert_eq!(status, 1, "{stderr}");
    let first = stdout.lines().next().unwrap_or("");
    assert!(
        first.contains("cause: moe\\_gemm +") && !first.contains("dense\\_gemm"),
        "{first}"
    );
}

/// A pass that improved says so in its first line, with what to do (issue 40: an 87.7% faster
/// run read "PASS · no change beyond noise").
#[test]
fn a_pass_that_improved_says_improved_and_re_baseline() {
    let run = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "4",
        "--inject",
        "allreduce=0.6",
    ]);
    let (status, stdout, stderr) = check_output(&run, BASELINE, "markdown");
    assert_eq!(status, 0, "{stderr}");
    let first = stdout.lines().next().unwrap_or("");
    assert!(
        first.starts_with("✅ **PASS**")
            && first.contains("improved: decode\\_step\\_ms -3.4%")
            && first.ends_with("\\(re-baseline\\)")
            && !first.contains("no change beyond noise"),
        "{first}"
    );
}
