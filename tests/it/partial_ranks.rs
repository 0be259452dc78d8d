//! A run that holds only some of its ranks (one file of a TP4 run): the commands that gate refuse
//! it (exit 2, naming the missing ranks) unless `--partial-ranks`, which records the partial set
//! in the baseline and judges only a run of the same ranks; the commands that analyse say "1 of 4
//! ranks" and go on.

use std::path::{Path, PathBuf};

use crate::common::{self, assert_exit, tracegate};

const BASELINE: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";

/// A copy of rank 0's file of a 4-rank synth run, alone in `dir`, in the given layout.
fn rank_zero_of_four(dir: &Path, layout: &str) -> PathBuf {
    let full = common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "3",
        "--layout",
        layout,
    ]);
    let one = dir.join(format!("one-{layout}"));
    std::fs::create_dir_all(&one).unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(&full)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".trace.json"))
        .collect();
    if layout == "merged" {
        // SGLang's merged file: every rank's events in one file; keep rank 0's only.
        assert_eq!(files.len(), 1, "{files:?}");
        let mut doc = common::load_json(&files[0]);
        let events = doc["traceEvents"].as_array_mut().unwrap();
        let rank0: Vec<serde_json::Value> = events
            .iter()
            .filter(|e| {
                let pid = e["pid"].to_string();
                !(pid.contains("TP01") || pid.contains("TP02") || pid.contains("TP03"))
            })
            .cloned()
            .collect();
        assert!(
            rank0.len() < events.len(),
            "the merged file names its ranks"
        );
        *events = rank0;
        let text = serde_json::to_string(&doc).unwrap();
        std::fs::write(one.join("merged.trace.json"), text).unwrap();
    } else {
        let rank0 = files
            .iter()
            .find(|p| p.to_string_lossy().contains("-TP-0."))
            .unwrap();
        std::fs::copy(rank0, one.join(rank0.file_name().unwrap())).unwrap();
    }
    one
}

fn run_cmd(args: &[&str], paths: &[&Path]) -> std::process::Output {
    let mut cmd = tracegate();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(&args[..1])
        .args(paths)
        .args(&args[1..]);
    cmd.output().unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn one_rank_of_four_is_refused_by_check_and_baseline_in_both_layouts() {
    let tmp = tempfile::tempdir().unwrap();
    for layout in ["per-rank", "merged"] {
        let one = rank_zero_of_four(tmp.path(), layout);
        let check = run_cmd(&["check", "--baseline", BASELINE, "--no-github"], &[&one]);
        assert_exit(&check, 2);
        assert!(
            stderr(&check).contains("rank(s) 1, 2, 3 of 4 missing"),
            "{layout}: {}",
            stderr(&check)
        );
        let target = tmp.path().join(format!("{layout}.toml"));
        let new = tracegate()
            .args(["baseline", "new"])
            .arg(&one)
            .arg("--baseline")
            .arg(&target)
            .output()
            .unwrap();
        assert_exit(&new, 2);
        assert!(stderr(&new).contains("of 4 missing"), "{}", stderr(&new));
        assert!(!target.exists(), "nothing written for a refused run");
    }
}

#[test]
fn with_partial_ranks_the_same_ranks_are_recorded_and_judged_and_no_others() {
    let tmp = tempfile::tempdir().unwrap();
    let one = rank_zero_of_four(tmp.path(), "per-rank");
    let target = tmp.path().join("partial.toml");
    let new = tracegate()
        .args(["baseline", "new"])
        .arg(&one)
        .arg("--baseline")
        .arg(&target)
        .arg("--partial-ranks")
        .output()
        .unwrap();
    assert_exit(&new, 0);
    let text = std::fs::read_to_string(&target).unwrap();
    // The group is of 4 ranks, of which the figures hold rank 0.
    assert!(text.contains("tp = 4"), "{text}");
    assert!(text.contains("partial_ranks = \"0 of 4\""), "{text}");
    let check = |run: &Path, partial: bool| {
        let mut cmd = tracegate();
        cmd.arg("check")
            .arg(run)
            .arg("--baseline")
            .arg(&target)
            .args(["--no-github", "--format", "markdown"]);
        if partial {
            cmd.arg("--partial-ranks");
        }
        cmd.output().unwrap()
    };
    let same = check(&one, true);
    assert_exit(&same, 0);
    let md = stdout(&same);
    assert!(
        md.contains("Partial run: ranks 0 of 4")
            && md.contains("| rank\\_skew\\_ms † |")
            && md.contains("| allreduce\\_us † |")
            && md.contains("| moe\\_us\\_per\\_layer |")
            && md.contains("4 \\(ranks 0 of 4\\)"),
        "{md}"
    );
    // The whole run is another set of ranks: not judged against the partial figures.
    let whole = common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"]);
    let out = check(&whole, true);
    assert_exit(&out, 2);
    assert!(
        stdout(&out)
            .contains("the run holds every rank but the baseline's figures are of ranks 0 of 4"),
        "{}",
        stdout(&out)
    );
    // And a partial run is never judged against a whole baseline, flag or not.
    let out = run_cmd(
        &[
            "check",
            "--baseline",
            BASELINE,
            "--no-github",
            "--partial-ranks",
        ],
        &[&one],
    );
    assert_exit(&out, 2);
    assert!(
        stdout(&out)
            .contains("the run holds ranks 0 of 4 but the baseline's figures are of every rank"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn inspect_report_and_extract_analyse_a_partial_run_and_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let one = rank_zero_of_four(tmp.path(), "per-rank");
    let inspect = run_cmd(&["inspect"], &[&one]);
    assert_exit(&inspect, 0);
    assert!(
        stdout(&inspect).contains("Partial run: 1 of 4 ranks (rank(s) 1, 2, 3 missing"),
        "{}",
        stdout(&inspect)
    );
    let report = run_cmd(&["report"], &[&one]);
    assert_exit(&report, 0);
    assert!(
        stdout(&report).contains("(1 of 4 ranks, 1 trace file)"),
        "{}",
        stdout(&report)
    );
    let out = common::extract_json_output(&one);
    assert_exit(&out, 0);
    let x: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(x["run"]["partial_ranks"], "0 of 4");
    assert!(
        x["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("1 of 4 ranks")),
        "{x}"
    );
    // compare beside the whole run: the partial one's ranks column says so.
    let whole = common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"]);
    let compare = tracegate()
        .arg("compare")
        .arg(&one)
        .arg(&whole)
        .output()
        .unwrap();
    assert_exit(&compare, 0);
    let text = stdout(&compare);
    assert!(
        text.contains("| 1 of 4 ranks |") && text.contains("| 4 |"),
        "{text}"
    );
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn the_real_sglang_decode_trace_said_to_be_one_of_four_is_refused_when_gating() {
    let src = common::shared_traces()
        .join("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let mut doc = common::load_json(&src);
    doc["distributedInfo"]["world_size"] = serde_json::json!(4);
    doc["distributedInfo"]["rank"] = serde_json::json!(0);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("sglang_decode.json");
    std::fs::write(&path, serde_json::to_string(&doc).unwrap()).unwrap();
    let target = tmp.path().join("b.toml");
    let new = tracegate()
        .args(["baseline", "new"])
        .arg(&path)
        .arg("--baseline")
        .arg(&target)
        .output()
        .unwrap();
    assert_exit(&new, 2);
    assert!(
        stderr(&new).contains("rank(s) 1, 2, 3 of 4 missing (world_size in distributedInfo)"),
        "{}",
        stderr(&new)
    );
    let inspect = run_cmd(&["inspect"], &[&path]);
    assert_exit(&inspect, 0);
    assert!(stdout(&inspect).contains("1 of 4 ranks"));
}

/// The worker files of ranks `ranks` of a stock vLLM TP4 run, renamed as vLLM names the workers of
/// a DP2 × TP2 deployment (`_dp{r / 2}_pp0_tp{r % 2}_…_rank{r}`), in `dir`.
fn vllm_workers_as_dp2_tp2(dir: &Path, ranks: &[u32]) -> PathBuf {
    let full = common::synth_run(&["--scenario", "vllm-stock", "--seed", "3"]);
    let out = dir.join(format!("dp-{ranks:?}").replace([' ', ',', '[', ']'], ""));
    std::fs::create_dir_all(&out).unwrap();
    for e in std::fs::read_dir(&full).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(r) = ranks.iter().find(|r| name.contains(&format!("_rank{r}."))) else {
            continue;
        };
        let (dp, tp) = (r / 2, r % 2);
        let renamed = name.replace(
            &format!("_dp0_pp0_tp{r}_dcp0_ep{r}_rank{r}."),
            &format!("_dp{dp}_pp0_tp{tp}_dcp0_ep{r}_rank{r}."),
        );
        std::fs::copy(&p, out.join(renamed)).unwrap();
    }
    out
}

#[test]
fn one_whole_data_parallel_group_is_judged_as_that_group_and_one_rank_of_it_is_partial() {
    let tmp = tempfile::tempdir().unwrap();
    let group = vllm_workers_as_dp2_tp2(tmp.path(), &[2, 3]);
    let out = common::extract_json_output(&group);
    assert_exit(&out, 0);
    let x: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        x["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains(
                "judged as one data-parallel replica, DP group 1 of 2: TP 2 of world_size 4"
            )),
        "{}",
        x["warnings"]
    );
    let baseline = tmp.path().join("dp.toml");
    let new = common::baseline_new(&group, &baseline, &[]);
    assert_exit(&new, 0);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(
        text.contains("tp = 2") && !text.contains("partial_ranks"),
        "{text}"
    );
    let check = run_cmd(
        &["check", "--baseline", baseline.to_str().unwrap()],
        &[&group],
    );
    assert_exit(&check, 0);

    // One TP rank of the group is still a part of it.
    let half = vllm_workers_as_dp2_tp2(tmp.path(), &[3]);
    let check = run_cmd(
        &["check", "--baseline", baseline.to_str().unwrap()],
        &[&half],
    );
    assert_exit(&check, 2);
    assert!(stderr(&check).contains("missing"), "{}", stderr(&check));
}
