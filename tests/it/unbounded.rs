//! Inputs that used to hang or take time out of proportion to their size (issue 21, cases 5-9),
//! each scaled down so that the test is quick and a hang or a quadratic algorithm still shows
//! (by size, or by counting work): rank counts and world sizes far beyond the files given, huge
//! strings, many distinct kernel names, millions of pooled samples.

use std::path::{Path, PathBuf};

use crate::common::{run_lossy_within, tracegate};

/// A one-kernel trace, with `distributedInfo` when given, a kernel `name`, extra `args` members
/// and extra top-level members.
fn trace(
    dir: &Path,
    file: &str,
    distributed: Option<&str>,
    name: &str,
    args: &str,
    top: &str,
) -> PathBuf {
    let path = dir.join(file);
    let distributed = distributed
        .map(|d| format!("\"distributedInfo\": {d}, "))
        .unwrap_or_default();
    let text = format!(
        r#"{{{distributed}{top}"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {{"stream": 7{args}}}}}, {{"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 3, "dur": 1, "args": {{"stream": 7}}}}]}}"#
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// One-kernel traces `rank-0.json` and `rank-1.json` of a world of `world_size` ranks.
fn ranks_0_and_1_of(dir: &Path, world_size: &str) -> (PathBuf, PathBuf) {
    let rank = |r: u32| {
        let distributed = format!(r#"{{"rank": {r}, "world_size": {world_size}}}"#);
        trace(
            dir,
            &format!("rank-{r}.json"),
            Some(&distributed),
            "k",
            "",
            "",
        )
    };
    (rank(0), rank(1))
}

fn extract(paths: &[&Path], extra: &[&str]) -> (Option<i32>, String) {
    let out = run_lossy_within(tracegate().args(extra).arg("inspect").args(paths), 60);
    (out.code, out.stderr)
}

#[test]
fn a_world_size_of_billions_is_refused_at_once() {
    for world in ["4294967295", "18446744073709551615"] {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = ranks_0_and_1_of(dir.path(), world);
        let (code, stderr) = extract(&[&a, &b], &[]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("world_size is {world}")),
            "{stderr}"
        );
        assert!(stderr.contains("over the 65536 ranks"), "{stderr}");
    }
}

#[test]
fn rank_numbers_are_ids_not_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let a = trace(dir.path(), "x-TP-0.trace.json", None, "k", "", "");
    let b = trace(dir.path(), "x-TP-4000000000.trace.json", None, "k", "", "");
    let (code, stderr) = extract(&[&a, &b], &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("x-TP-4000000000.trace.json: rank 4000000000 (from the file name)"),
        "{stderr}"
    );
    // A world size at the cap is checked, and its missing ranks counted, not all listed: by
    // `inspect`, which analyses the two ranks, and by `check`, which refuses them.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = ranks_0_and_1_of(dir.path(), "65536");
    let out = run_lossy_within(tracegate().arg("inspect").args([&a, &b]), 60);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let said = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Partial run"))
        .unwrap_or_default()
        .to_string();
    assert!(
        said.contains("2 of 65536 ranks (rank(s) 2, 3, 4,"),
        "{said}"
    );
    assert!(said.contains("and 65518 more missing"), "{said}");
    assert!(said.len() < 400, "{said}");
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml");
    let out = run_lossy_within(
        tracegate()
            .arg("check")
            .args([&a, &b])
            .arg("--baseline")
            .arg(&baseline)
            .arg("--no-github"),
        60,
    );
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("and 65518 more of 65536 missing") && out.stderr.len() < 600,
        "{}",
        out.stderr
    );
}

#[test]
fn a_long_kernel_name_is_kept_truncated_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let name = "é".repeat(100_000); // 200,000 bytes, a cut inside a character must back off
    let path = trace(dir.path(), "rank-0.json", None, &name, "", "");
    for threads in [1, 3] {
        let traces = tracegate::testing::read_file_with_threads(&path, threads).unwrap();
        let names: Vec<&str> = traces[0]
            .gpu
            .iter()
            .map(|a| traces[0].names.get(a.name))
            .collect();
        let long = names.iter().find(|n| n.starts_with('é')).unwrap();
        assert!(long.len() <= tracegate::testing::MAX_NAME, "{}", long.len());
        assert!(
            long.ends_with("…[truncated from 200000 bytes]"),
            "{}",
            &long[long.len() - 40..]
        );
    }
}

#[test]
fn a_string_over_the_limit_is_an_error_naming_the_event() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(3 << 20);
    let path = trace(
        dir.path(),
        "rank-0.json",
        None,
        "kern_with_big_args",
        &format!(r#", "note": "{big}""#),
        "",
    );
    for threads in ["1", "3"] {
        let (code, stderr) = extract(&[&path], &["--threads", threads, "--max-string", "1M"]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains("a string of more than 1048576 bytes (the --max-string limit)"),
            "{stderr}"
        );
        assert!(stderr.contains("in the event starting `{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"kern_with_big_args\""), "{stderr}");
        assert!(stderr.len() < 400);
        // Under the default limit (16M) the same file reads.
        let (code, stderr) = extract(&[&path], &["--threads", threads]);
        assert_eq!(code, Some(0), "{stderr}");
    }
}

#[test]
fn unknown_top_level_keys_are_skipped_whatever_their_size() {
    let dir = tempfile::tempdir().unwrap();
    let big = "y".repeat(4 << 20);
    let top = format!(r#""junk": {{"a": ["{big}", {{"b": "\"{big}"}}]}}, "more": "{big}", "#);
    let path = trace(dir.path(), "rank-0.json", None, "k", "", &top);
    for threads in ["1", "3"] {
        // Not held, so not limited: the strings are four times the limit.
        let (code, stderr) = extract(&[&path], &["--threads", threads, "--max-string", "1M"]);
        assert_eq!(code, Some(0), "{stderr}");
    }
}

#[test]
fn a_million_pooled_samples_cost_what_thirty_two_thousand_do() {
    // 2,000,000 samples: the plain bootstrap drew 2,000 x 2,000,000 of them (a minute and more);
    // the m-out-of-n bootstrap draws 2,000 x 32,768 and keeps the width of n samples.
    let n = 2_000_000usize;
    let samples: Vec<f64> = (0..n)
        .map(|i| 10.0 + ((i * 7919) % 1000) as f64 / 1000.0)
        .collect();
    let stat = tracegate::testing::Statistic::Mean;
    let mean = stat.of(&samples);
    let sd = (samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    let (lo, hi) = tracegate::testing::bootstrap_interval(&samples, stat, 7).unwrap();
    let half = 1.96 * sd / (n as f64).sqrt();
    assert!(
        ((hi - lo) / 2.0 / half - 1.0).abs() < 0.15,
        "{lo} {hi} {half}"
    );
    assert!(lo < mean && mean < hi);
}
