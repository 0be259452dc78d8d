//! `--threads N` never changes a result: the same bytes out for 1, 2 and 3 threads, on synth runs
//! (one file per rank and SGLang's merged file) and on every real trace in `../shared/traces`.

use std::path::{Path, PathBuf};

use crate::common::{self, synth_cmd, tracegate};
use tracegate::testing::{read_file_parallel_only, read_file_with_threads};

fn synth(dir: &Path, layout: &str) -> PathBuf {
    let out = dir.join(layout);
    let status = synth_cmd()
        .args(["--scenario", "h200-dsr1-fp8-tp8", "--decode-steps", "6"])
        .args([
            "--python-functions-per-step",
            "20",
            "--seed",
            "5",
            "--layout",
            layout,
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    common::assert_exit(&status, 0);
    out
}

/// stdout of `tracegate <args> --threads N`, the same for every N.
fn same_for_any_threads(args: &[&str], path: &Path) -> String {
    let outputs: Vec<Vec<u8>> = ["1", "2", "3"]
        .iter()
        .map(|n| {
            let out = tracegate()
                .args(args)
                .arg(path)
                .args(["--threads", n])
                .output()
                .unwrap();
            common::assert_exit(&out, 0);
            out.stdout
        })
        .collect();
    assert_eq!(outputs[0], outputs[1], "{args:?} 1 vs 2 threads");
    assert_eq!(outputs[0], outputs[2], "{args:?} 1 vs 3 threads");
    String::from_utf8(outputs[0].clone()).unwrap()
}

#[test]
fn synth_runs_read_the_same_on_any_number_of_threads() {
    let dir = tempfile::tempdir().unwrap();
    let merged = synth(dir.path(), "merged");
    let files: Vec<_> = std::fs::read_dir(&merged)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".trace.json.gz"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("merged-"), "{files:?}");
    let per_rank = synth(dir.path(), "per-rank");
    let mut extracts = Vec::new();
    for run in [&merged, &per_rank] {
        same_for_any_threads(&["inspect", "--format", "json"], run);
        let text = same_for_any_threads(&["extract", "--format", "json"], run);
        extracts.push(serde_json::from_str::<serde_json::Value>(&text).unwrap());
    }
    // The merged file holds the same run: every figure agrees with the per-rank files'.
    assert_eq!(extracts[0]["metrics"], extracts[1]["metrics"]);
    assert_eq!(extracts[0]["breakdown"], extracts[1]["breakdown"]);
    assert_eq!(extracts[0]["run"]["traces"], 8);
}

#[test]
fn a_merged_file_is_read_by_the_parallel_pass_itself() {
    let dir = tempfile::tempdir().unwrap();
    let merged = synth(dir.path(), "merged");
    let file = std::fs::read_dir(&merged)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".trace.json.gz"))
        .unwrap();
    let single = read_file_with_threads(&file, 1).unwrap();
    assert_eq!(single.len(), 8);
    for (threads, chunk) in [(2, 1 << 20), (3, 1 << 16), (2, 4096)] {
        let parallel = read_file_parallel_only(&file, threads, chunk).unwrap();
        assert_eq!(
            parallel.as_ref(),
            Some(&single),
            "{threads} threads, {chunk} B"
        );
    }
}

fn trace_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            trace_files(&path, out);
        } else if path.to_string_lossy().ends_with(".json")
            || path.to_string_lossy().ends_with(".json.gz")
        {
            out.push(path);
        }
    }
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn real_traces_read_the_same_on_any_number_of_threads() {
    let shared = common::shared_traces();
    let mut files = Vec::new();
    trace_files(&shared, &mut files);
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    let mut by_parallel_pass = 0;
    for file in &files {
        let single = read_file_with_threads(file, 1).map_err(|e| e.to_string());
        for threads in [2, 3] {
            let got = read_file_with_threads(file, threads).map_err(|e| e.to_string());
            assert_eq!(got, single, "{} with {threads} threads", file.display());
        }
        // Small chunks, so that even a small trace is cut in many places.
        if let Ok(Some(got)) = read_file_parallel_only(file, 2, 64 << 10) {
            assert_eq!(Ok(got), single, "{}", file.display());
            by_parallel_pass += 1;
        }
    }
    // Every trace that reads at all is read by the parallel pass, not by its fallback.
    let readable = files
        .iter()
        .filter(|f| read_file_with_threads(f, 1).is_ok())
        .count();
    assert_eq!(by_parallel_pass, readable, "of {} files", files.len());
}

/// The limits travel inside each analysis's configuration, not in the process: two analyses of
/// the same synth run, side by side on two threads of one process, one under a `--max-memory`
/// it cannot fit in (and a thread count of 1), the other under none (3 threads). Each gets its
/// own verdict: the first a memory error naming the run, the second the run's figures, the same
/// as alone.
#[test]
fn two_analyses_in_one_process_keep_their_own_limits() {
    use tracegate::pipeline::{self, AnalysisConfig, ReadLimits};
    let run = common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"]);
    let paths = vec![run];
    let config = |memory: Option<u64>, threads: usize| AnalysisConfig {
        limits: ReadLimits {
            memory,
            threads: Some(threads),
            ..Default::default()
        },
        ..Default::default()
    };
    let analyse = |config: &AnalysisConfig| -> Result<String, String> {
        let run = pipeline::read_run(&paths, config, &|_, _| {}).map_err(|e| e.to_string())?;
        let x = pipeline::extract(&run, &paths, config, None).map_err(|e| e.to_string())?;
        Ok(format!("{:?}", x.metrics))
    };
    let alone = analyse(&config(None, 2)).unwrap();
    for _ in 0..3 {
        let start = std::sync::Barrier::new(2);
        let (tight, free) = std::thread::scope(|s| {
            let tight = s.spawn(|| {
                start.wait();
                analyse(&config(Some(1 << 20), 1))
            });
            let free = s.spawn(|| {
                start.wait();
                analyse(&config(None, 3))
            });
            (tight.join().unwrap(), free.join().unwrap())
        });
        let error = tight.unwrap_err();
        assert!(error.contains("1.0 MiB"), "{error}");
        assert!(error.contains(&*paths[0].to_string_lossy()), "{error}");
        assert_eq!(free.unwrap(), alone);
    }
}

/// A string limit is the analysis's own too: a run read under a limit below its kernel names'
/// length is refused, the same run read beside it with the default is not.
#[test]
fn two_reads_in_one_process_keep_their_own_string_limit() {
    use tracegate::pipeline::{self, AnalysisConfig, ReadLimits};
    let run = common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"]);
    let paths = vec![run];
    let config = |max_string: u64| AnalysisConfig {
        limits: ReadLimits {
            max_string,
            ..Default::default()
        },
        ..Default::default()
    };
    let (short, long) = std::thread::scope(|s| {
        let short = s.spawn(|| pipeline::read_run(&paths, &config(8), &|_, _| {}).map(|_| ()));
        let long = s.spawn(|| {
            pipeline::read_run(
                &paths,
                &config(ReadLimits::default().max_string),
                &|_, _| {},
            )
            .map(|r| r.traces.len())
        });
        (short.join().unwrap(), long.join().unwrap())
    });
    let error = short.unwrap_err().to_string();
    assert!(
        error.contains("8 bytes") || error.contains("longer"),
        "{error}"
    );
    assert_eq!(long.unwrap(), 4);
}
