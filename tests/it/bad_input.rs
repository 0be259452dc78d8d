//! Every kind of bad input ends in exit status 2 with one line naming the file and the problem.

use crate::common;

use std::path::Path;

use crate::common::{fixture, gzip, run_ok, synth_cmd, tracegate};
use predicates::prelude::*;

/// Runs `inspect` on `path` and asserts exit 2, a message naming the file, and `needle`.
fn assert_rejected(path: &Path, needle: &str) {
    let out = tracegate().arg("inspect").arg(path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(out.stdout.is_empty(), "no partial result on stdout");
    assert!(
        stderr.contains(&path.display().to_string()),
        "names the file: {stderr}"
    );
    assert!(stderr.contains(needle), "says {needle:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn truncated_gzip_is_exit_2_and_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(fixture("sglang_qwen3_decode.json.gz")).unwrap();
    for cut in [20, whole.len() / 3, whole.len() - 9] {
        let path = write(dir.path(), "rank-0.json.gz", &whole[..cut]);
        assert_rejected(&path, "gzip");
    }
}

#[test]
fn corrupted_gzip_is_exit_2_and_blames_the_gzip_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(fixture("sglang_qwen3_decode.json.gz")).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 16] {
        *b ^= 0x5a;
    }
    let path = write(dir.path(), "rank-0.json.gz", &bytes);
    assert_rejected(&path, "gzip");
}

#[test]
fn malformed_json_reports_the_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let text = br#"{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 2 "x": 1}]}"#;
    let path = write(dir.path(), "bad.json", text);
    assert_rejected(&path, "malformed JSON at byte 64");
}

#[test]
fn json_cut_inside_the_events_is_truncated_json() {
    let dir = tempfile::tempdir().unwrap();
    let whole = common::load_json(&fixture("mi250_minitoy.json.gz")).to_string();
    let cut = &whole.as_bytes()[..whole.len() / 2];
    let path = write(dir.path(), "cut.json", cut);
    assert_rejected(&path, "truncated JSON");
    let path = write(dir.path(), "cut.json.gz", &gzip(cut));
    assert_rejected(&path, "truncated JSON");
}

#[test]
fn json_that_is_not_a_trace_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    assert_rejected(
        &write(dir.path(), "a.json", br#"{"name": "not a trace"}"#),
        "no \"traceEvents\"",
    );
    assert_rejected(
        &write(dir.path(), "b.json", br#""just a string""#),
        "not a PyTorch-profiler trace",
    );
    assert_rejected(
        &write(dir.path(), "c.json", br#"{"traceEvents": {"a": 1}}"#),
        "traceEvents must be an array",
    );
}

#[test]
fn trace_without_gpu_activity_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let text = br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}"#;
    assert_rejected(&write(dir.path(), "cpu.json", text), "no GPU activity");
    assert_rejected(
        &write(dir.path(), "none.json", br#"{"traceEvents": []}"#),
        "no GPU activity",
    );
}

#[test]
fn empty_and_unreadable_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    assert_rejected(&write(dir.path(), "empty.json", b""), "empty");
    assert_rejected(&write(dir.path(), "blank.json.gz", &gzip(b"  \n")), "empty");
    assert_rejected(&dir.path().join("missing.json.gz"), "cannot read");
}

#[test]
fn directory_without_traces_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "notes.txt", b"hello");
    tracegate()
        .arg("inspect")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no .json or .json.gz trace file"));
}

#[test]
fn two_files_for_the_same_rank_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("mi250_minitoy.json.gz")).unwrap();
    write(dir.path(), "rank-0.json.gz", &bytes);
    write(dir.path(), "copy-rank-0.json.gz", &bytes);
    tracegate()
        .arg("inspect")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("rank 0 appears twice"));
}

#[test]
fn a_rank_missing_from_a_multi_rank_run_is_exit_2_when_gating() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        synth_cmd()
            .args([
                "--scenario",
                "mi355x-dsr1-fp4-tp4",
                "--decode-steps",
                "3",
                "--out",
            ])
            .arg(dir.path()),
    );
    let rank2 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("-TP-2."))
        .unwrap();
    std::fs::remove_file(rank2).unwrap();
    // Gating it is refused; inspecting it analyses the three ranks and says so.
    tracegate()
        .args(["baseline", "new"])
        .arg(dir.path())
        .arg("--baseline")
        .arg(dir.path().join("b.toml"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "rank(s) 2 of 4 missing (world_size in distributedInfo)",
        ));
    tracegate()
        .arg("inspect")
        .arg(dir.path())
        .assert()
        .code(0)
        .stdout(predicate::str::contains(
            "Partial run: 3 of 4 ranks (rank(s) 2 missing: world_size in distributedInfo)",
        ));
}

/// A one-kernel trace whose second kernel has `fields` spliced in (raw JSON text).
fn trace_with(fields: &str) -> Vec<u8> {
    format!(
        r#"{{"deviceProperties": [{{"id": 0, "name": "NVIDIA B200"}}], "traceEvents": [
  {{"ph": "X", "cat": "kernel", "name": "nvjet_a", "pid": 0, "tid": 7, "ts": 100, "dur": 10, "args": {{"stream": 7}}}},
  {{"ph": "X", "cat": "kernel", "name": "nvjet_b", "pid": 0, "tid": 7, {fields}, "args": {{"stream": 7}}}}
]}}"#
    )
    .into_bytes()
}

/// `trace_with(fields)` as `rank-0.json` in a fresh directory must be refused, saying `needle`.
fn assert_event_rejected(fields: &str, needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "rank-0.json", &trace_with(fields));
    assert_rejected(&path, needle);
}

#[test]
fn negative_durations_are_refused_not_skipped() {
    assert_event_rejected(
        r#""ts": 200, "dur": -5"#,
        "event `nvjet_b`: dur -5 µs is negative",
    );
}

#[test]
fn a_zero_duration_kernel_is_legal_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "rank-0.json",
        &trace_with(r#""ts": 200, "dur": 0"#),
    );
    assert_eq!(common::inspect_json(&[&path])["ranks"][0]["kernels"], 2);
}

#[test]
fn nan_is_malformed_json() {
    assert_event_rejected(r#""ts": 200, "dur": NaN"#, "malformed JSON at byte");
}

#[test]
fn huge_numbers_are_refused_with_the_field() {
    for (fields, needle) in [
        (
            r#""ts": 200, "dur": 1e308"#,
            "dur 1e308 are not both numbers in range",
        ),
        (
            r#""ts": 200, "dur": 18446744073709551616"#,
            "dur 18446744073709551616 are not both numbers in range",
        ),
        (r#""ts": 1e300, "dur": 7"#, "ts 1e300"),
        (r#""ts": 200, "dur": 1e11"#, "longer than a day"),
        (r#""ts": 200, "dur": "7 ms""#, "not both numbers"),
    ] {
        assert_event_rejected(fields, needle);
    }
}

#[test]
fn a_name_that_is_not_utf8_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = trace_with(r#""ts": 200, "dur": 7"#);
    let at = bytes.windows(7).position(|w| w == b"nvjet_b").unwrap();
    let mut bad = bytes[..at].to_vec();
    bad.extend_from_slice(b"nvjet\xff\xfe");
    bad.extend_from_slice(&bytes[at + 7..]);
    let path = write(dir.path(), "rank-0.json", &bad);
    assert_rejected(&path, "its name is not valid UTF-8");
}

#[test]
fn an_event_of_the_wrong_shape_is_refused_with_its_offset() {
    assert_event_rejected(
        r#""ts": 200, "dur": 7, "cat": {"nested": 1}"#,
        "an event of the wrong shape",
    );
}

/// Out-of-order events: the same figures as sorted. tests/it/properties.rs checks this on every
/// metric (`permuting_event_order_changes_no_metric`); here the reader's own view of one file.
#[test]
fn timestamps_out_of_order_read_the_same_as_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let sorted = trace_with(r#""ts": 200, "dur": 7"#);
    let text = String::from_utf8(sorted.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let swapped = [
        lines[0],
        &lines[2].replace("}}", "}},"),
        lines[1].trim_end_matches(','),
        lines[3],
    ]
    .join("\n");
    let a = write(dir.path(), "a-rank-0.json", &sorted);
    let b_dir = tempfile::tempdir().unwrap();
    let b = write(b_dir.path(), "a-rank-0.json", swapped.as_bytes());
    let inspect = |p: &Path| {
        let mut json = common::inspect_json(&[p]);
        json["ranks"][0]["file"] = serde_json::Value::Null;
        json
    };
    assert_eq!(inspect(&a), inspect(&b));
}

#[test]
fn a_memory_limit_is_a_clear_error_not_an_oom_kill() {
    let path = fixture("sglang_qwen3_decode.json.gz");
    for (args, env) in [(vec!["--max-memory", "1M"], None), (vec![], Some("1M"))] {
        let mut cmd = tracegate();
        cmd.arg("extract").arg(&path).args(&args);
        if let Some(v) = env {
            cmd.env("TRACEGATE_MAX_MEMORY", v);
        }
        let out = cmd.output().unwrap();
        let stderr = common::stderr_of_exit(&out, 2);
        assert!(out.stdout.is_empty());
        assert!(stderr.contains("sglang_qwen3_decode.json.gz"), "{stderr}");
        assert!(
            stderr.contains("over the --max-memory limit of 1.0 MiB"),
            "{stderr}"
        );
    }
    // A limit the run fits in changes nothing.
    let out = tracegate()
        .args(["extract", "--max-memory", "4G"])
        .arg(&path)
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    let out = tracegate()
        .args(["inspect", "--max-memory", "lots"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"lots\" is not a size"));
}

#[test]
fn a_gzip_level_other_than_0_to_9_or_none_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for level in ["10", "fast", ""] {
        let out = common::tracegate()
            .args([
                "synth",
                "--scenario",
                "mi355x-dsr1-fp4-tp4",
                "--gzip-level",
                level,
            ])
            .arg("--out")
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{level}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("give 0 to 9, or none"), "{level}: {stderr}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// A 2-rank synth run whose rank 1 trace stops at the start of its last decode step, as when a
/// profiler is stopped early on one rank.
#[test]
fn a_rank_cut_short_gives_different_step_counts_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(
        synth_cmd()
            .args(["--scenario", "mi355x-dsr1-fp4-tp4", "--ranks", "2"])
            .args(["--decode-steps", "6", "--out"])
            .arg(dir.path()),
    );
    let rank1 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("TP-1.trace.json.gz"))
        .unwrap();
    let mut trace = common::load_json(&rank1);
    let events = trace["traceEvents"].as_array_mut().unwrap();
    let last_step = events
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("step[DECODE"))
        })
        .filter_map(|e| e["ts"].as_f64())
        .fold(f64::MIN, f64::max);
    events.retain(|e| e["ts"].as_f64().is_none_or(|ts| ts < last_step));
    std::fs::write(&rank1, gzip(trace.to_string().as_bytes())).unwrap();

    let out = tracegate().arg("extract").arg(dir.path()).output().unwrap();
    let stderr = common::stderr_of_exit(&out, 2);
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("different numbers of decode steps (rank0 8, rank1 7)"),
        "{stderr}"
    );
}

/// A kernel name crafted to inject markup into a pull-request comment reaches the markdown
/// escaped: no link, no HTML, no extra table column.
#[test]
fn a_crafted_kernel_name_cannot_inject_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let crafted =
        r#"evil|col [click](https://x.example) <img src=x onerror=alert(1)> `code` **b**"#;
    let text = String::from_utf8(trace_with(r#""ts": 200, "dur": 7"#))
        .unwrap()
        .replace("nvjet_b", &crafted.replace('"', "\\\""));
    let path = write(dir.path(), "rank-0.json", text.as_bytes());
    let out = tracegate()
        .args(["report", "--format", "markdown"])
        .arg(&path)
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    let full = String::from_utf8(out.stdout).unwrap();
    // The name is unknown, so the report ends with a rule to paste, holding the raw name in a
    // fenced code block: nothing is markup there, provided no run of backticks in it can close
    // the fence. Outside fenced blocks, everything is escaped.
    let md = outside_fenced_blocks(&full);
    assert!(full.contains("prefix = \"evil|col"), "{full}");
    // In tables the name is a code span (nothing in it is markup), its `|` escaped for the table;
    // at 78 characters it is cut in the middle to the kernel table's 56, and the cut name is
    // still one code span.
    assert!(
        md.contains("``evil\\|col [click](https://x.e…rror=alert(1)> `code` **b**``"),
        "{md}"
    );
    // As GitHub renders it: no link, no image, no extra column, the name as code.
    crate::gfm::assert_renders_as_github_should("crafted name", &full);
    let html = crate::gfm::gfm_html(&full);
    assert!(!html.contains("<img"), "{html}");
    assert!(
        html.contains("<code>evil|col [click](https://x.e…rror=alert(1)&gt; `code` **b**</code>"),
        "{html}"
    );
}

/// The markdown without its fenced code blocks; panics when a block is not closed by its own
/// fence (a name inside could then close it and reach the markdown).
fn outside_fenced_blocks(md: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<String> = None;
    for line in md.lines() {
        match &fence {
            Some(f) if line == f.as_str() => fence = None,
            Some(f) => assert!(
                !line.contains(f.as_str()),
                "a name closes the fence: {line}"
            ),
            None if line.starts_with("```") => {
                fence = Some(line.chars().take_while(|&c| c == '`').collect());
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    assert!(fence.is_none(), "an unclosed code block");
    out
}

/// Issue 39: clap's usage errors go through the output layer like every other line: exit 2, the
/// option named, and a value holding `\n::error::` starts no workflow command on stderr.
#[test]
fn a_usage_error_is_exit_2_and_starts_no_workflow_command() {
    let out = common::run(tracegate().args([
        "check",
        "traces/",
        "--baseline",
        "b.toml",
        "--format",
        "md\n::error title=owned::pwned",
    ]));
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--format"), "{}", out.stderr);
    assert!(out.stderr.contains("error title=owned"), "{}", out.stderr);
    for line in out.stderr.lines() {
        assert!(!line.trim_start().starts_with("::"), "{line:?}");
    }
    let out = common::run(tracegate().arg("--version"));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.starts_with("tracegate "), "{}", out.stdout);
}
