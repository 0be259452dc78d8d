//! `tracegate report` and `tracegate compare` end to end: synth scenarios against their truth,
//! real traces (no decode step, graph-launched decode, no `Input Dims`), overlap of comm on its own
//! stream computed independently from the full JSON, and snapshots of the markdown.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::{run_ok, shared_traces, synth_cmd, tracegate};
use serde_json::Value;

const SCENARIOS: [&str; 5] = [
    "mi355x-dsr1-fp4-tp4",
    "b200-dsr1-fp4-tp4-ep4",
    "h200-dsr1-fp8-tp8",
    "mi325x-dsr1-fp8-tp8",
    "mi355x-dsr1-fp4-tp4-mtp",
];

/// One generated run per scenario, shared by every test of this binary.
fn synth_run(scenario: &'static str) -> &'static Path {
    static RUNS: OnceLock<BTreeMap<&'static str, OnceLock<PathBuf>>> = OnceLock::new();
    let runs = RUNS.get_or_init(|| SCENARIOS.iter().map(|&s| (s, OnceLock::new())).collect());
    runs[scenario].get_or_init(|| {
        let dir = common::process_dir("report-synth").join(scenario);
        let _ = std::fs::remove_dir_all(&dir);
        run_ok(
            synth_cmd()
                .args(["--scenario", scenario, "--out"])
                .arg(&dir),
        );
        dir
    })
}

fn run_tracegate(args: &[&str], paths: &[&Path]) -> String {
    let out = run_ok(tracegate().args(args).args(paths));
    String::from_utf8(out.stdout).unwrap()
}

fn report_json(paths: &[&Path]) -> Value {
    let text = run_tracegate(&["report", "--format", "json"], paths);
    serde_json::from_str(&text).unwrap()
}

fn truth(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("truth.json")).unwrap()).unwrap()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-9)
}

/// The report's tables against the scenario's truth: categories and calls per step, per-call
/// means of the comm kernels, per-rank decode wall and comm share, and per-rank overlap.
fn assert_report_matches_truth(scenario: &'static str) {
    let dir = synth_run(scenario);
    let truth = truth(dir);
    let report = report_json(&[dir]);
    assert_eq!(report["schema_version"], 2);
    assert_eq!(report["run"]["scope"], "decode");

    let categories = report["breakdown"]["categories"].as_object().unwrap();
    let want = truth["breakdown"]["categories"].as_object().unwrap();
    assert_eq!(
        categories.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{scenario}: categories"
    );
    for (key, w) in want {
        let got = &categories[key];
        for field in ["calls_per_step", "ms_per_step"] {
            let (g, e) = (got[field].as_f64().unwrap(), w[field].as_f64().unwrap());
            assert!(close(g, e, 1e-6), "{scenario} {key} {field}: {g} vs {e}");
        }
    }

    let comm: BTreeMap<&str, &Value> = report["comm"]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["name"].as_str().unwrap(), k))
        .collect();
    let truth_comm: Vec<&Value> = truth["breakdown"]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["category"] == "comm")
        .collect();
    assert_eq!(comm.len(), truth_comm.len(), "{scenario}: comm kernels");
    for k in truth_comm {
        let name = k["name"].as_str().unwrap();
        let got = comm
            .get(name)
            .unwrap_or_else(|| panic!("{scenario}: {name} missing"));
        let calls = k["calls_per_step"].as_f64().unwrap();
        let mean_us = k["ms_per_step"].as_f64().unwrap() / calls * 1e3;
        assert!(close(got["calls"].as_f64().unwrap(), calls, 1e-9));
        assert!(
            close(got["mean_us"].as_f64().unwrap(), mean_us, 1e-6),
            "{scenario} {name}: mean {} vs {mean_us}",
            got["mean_us"]
        );
        assert!(got["note"].is_string(), "{scenario} {name}: no note");
    }

    let metric =
        |name: &str, rank: u32| truth["metrics"][name]["per_rank"][rank.to_string()].as_f64();
    for r in report["balance"]["ranks"].as_array().unwrap() {
        let rank = r["rank"].as_u64().unwrap() as u32;
        let wall = r["wall_ms"].as_f64().unwrap();
        assert!(
            close(wall, metric("decode_step_ms", rank).unwrap(), 1e-9),
            "{scenario} rank {rank} wall {wall}"
        );
        let comm_pct = r["comm_pct"].as_f64().unwrap();
        assert!(
            close(comm_pct, metric("comm_pct", rank).unwrap(), 1e-9),
            "{scenario} rank {rank} comm {comm_pct}"
        );
    }
    for r in report["overlap"]["ranks"].as_array().unwrap() {
        let rank = r["rank"].as_u64().unwrap() as u32;
        match (r["overlap_pct"].as_f64(), metric("overlap_pct", rank)) {
            (Some(g), Some(e)) => assert!(
                (g - e).abs() < 1e-9,
                "{scenario} rank {rank} overlap {g} vs {e}"
            ),
            (g, e) => assert_eq!(g, e, "{scenario} rank {rank} overlap"),
        }
    }
}

#[test]
fn mi355x_report_matches_truth_and_says_zero_overlap_on_one_stream() {
    assert_report_matches_truth("mi355x-dsr1-fp4-tp4");
    let report = report_json(&[synth_run("mi355x-dsr1-fp4-tp4")]);
    assert_eq!(report["overlap"]["verdict"], "single_stream");
    assert_eq!(report["comm"]["layers"]["value"], 61.0);
    let prefill = &report["prefill"]["ranks"][0];
    assert!(prefill["largest_collective"]["ms"].as_f64().unwrap() > 30.0);
}

#[test]
fn b200_report_matches_truth_and_sees_two_streams() {
    assert_report_matches_truth("b200-dsr1-fp4-tp4-ep4");
    let report = report_json(&[synth_run("b200-dsr1-fp4-tp4-ep4")]);
    assert_eq!(report["overlap"]["verdict"], "near_zero");
    let streams: Vec<u64> = report["overlap"]["ranks"][0]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stream"].as_u64().unwrap())
        .collect();
    assert_eq!(streams, vec![39, 380]);
    // Decode GEMMs under graphs take their shape from the prefill op, M from bs=64.
    let rows = report["shapes"]["rows"].as_array().unwrap();
    let cutlass = rows
        .iter()
        .find(|r| {
            r["kernel"]
                .as_str()
                .unwrap()
                .contains("DeviceGemmFp4GemmSm100")
        })
        .unwrap();
    assert_eq!(cutlass["source"], "other_phase_op");
    assert_eq!(cutlass["shape"]["m"], 64);
    assert_eq!(cutlass["shape"]["k"], 7168);
    assert!(cutlass["tflops"].as_f64().unwrap() > 0.0);
}

#[test]
fn h200_report_matches_truth_and_flags_rank_zero_allreduce() {
    assert_report_matches_truth("h200-dsr1-fp8-tp8");
    let report = report_json(&[synth_run("h200-dsr1-fp8-tp8")]);
    let outliers = report["balance"]["allreduce_outliers"].as_array().unwrap();
    assert_eq!(outliers.len(), 1, "{outliers:?}");
    assert_eq!(outliers[0]["rank"], 0);
    assert!(outliers[0]["ratio"].as_f64().unwrap() > 8.0);
    let twoshot = &report["comm"]["kernels"][0];
    assert!(twoshot["name"].as_str().unwrap().contains("twoshot_sync"));
    assert_eq!(twoshot["cold_first_call"], true);
    assert!(twoshot["first_call_us"].as_f64().unwrap() > 20_000.0);
}

#[test]
fn mi325x_report_matches_truth() {
    assert_report_matches_truth("mi325x-dsr1-fp8-tp8");
}

/// Speculative decoding: the breakdown and walls are those of whole iterations (draft forwards,
/// verify, draft extend).
#[test]
fn mi355x_mtp_report_matches_truth() {
    assert_report_matches_truth("mi355x-dsr1-fp4-tp4-mtp");
}

/// Every scenario's report is pinned, in markdown; mi355x in the terminal table and JSON too.
#[test]
fn report_snapshots_of_every_scenario() {
    for (scenario, name) in [
        ("mi355x-dsr1-fp4-tp4", "report_mi355x_markdown"),
        ("b200-dsr1-fp4-tp4-ep4", "report_b200_markdown"),
        ("h200-dsr1-fp8-tp8", "report_h200_markdown"),
        ("mi325x-dsr1-fp8-tp8", "report_mi325x_markdown"),
        ("mi355x-dsr1-fp4-tp4-mtp", "report_mi355x_mtp_markdown"),
    ] {
        let text = run_tracegate(&["report", "--format", "markdown"], &[synth_run(scenario)]);
        insta::assert_snapshot!(name, text);
    }
    for format in ["table", "json"] {
        let text = run_tracegate(
            &["report", "--format", format],
            &[synth_run("mi355x-dsr1-fp4-tp4")],
        );
        insta::assert_snapshot!(format!("report_mi355x_{format}"), text);
    }
}

#[test]
fn compare_b200_h200_reproduces_the_head_to_head() {
    let (b200, h200) = (
        synth_run("b200-dsr1-fp4-tp4-ep4"),
        synth_run("h200-dsr1-fp8-tp8"),
    );
    let label = |name: &str, p: &Path| format!("{name}={}", p.display());
    let args = |format: &str| {
        vec![
            "compare".to_string(),
            "--label".into(),
            label("b200", b200),
            "--label".into(),
            label("h200", h200),
            "--format".into(),
            format.to_string(),
        ]
    };
    let out = run_ok(tracegate().args(args("json")));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The registry's metrics under "metrics", the analysis' own figures under "figures".
    let metric = |key: &str| {
        json["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .chain(json["figures"].as_array().unwrap())
            .find(|m| m["key"] == key)
            .unwrap()
            .clone()
    };
    let decode = metric("decode_step_ms");
    let ratio = decode["ratios"][1].as_f64().unwrap();
    assert!(
        (10.0..13.0).contains(&ratio),
        "decode ratio {ratio} (reference 11.5x)"
    );
    let comm = metric("comm_pct");
    let (b, h) = (
        comm["values"][0].as_f64().unwrap(),
        comm["values"][1].as_f64().unwrap(),
    );
    assert!(
        (22.0..26.0).contains(&b),
        "b200 comm {b}% (reference 23.8%)"
    );
    assert!(
        (80.0..86.0).contains(&h),
        "h200 comm {h}% (reference 82.7%)"
    );
    let comm_ms = metric("comm_ms");
    let (b, h) = (
        comm_ms["values"][0].as_f64().unwrap(),
        comm_ms["values"][1].as_f64().unwrap(),
    );
    assert!(
        (4.3..5.3).contains(&b) && (200.0..225.0).contains(&h),
        "comm ms {b} vs {h} (reference 4.8 vs 213.9)"
    );
    let moe = json["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["category"] == "moe_gemm")
        .unwrap();
    assert_eq!(moe["only_here"][1][0], "fused_moe_kernel");

    let out = run_ok(tracegate().args(args("markdown")));
    let text = String::from_utf8(out.stdout).unwrap();
    insta::assert_snapshot!("compare_b200_h200_markdown", text);
}

/// The report of a real trace (JSON).
fn real_report(relative: &str) -> (PathBuf, Value) {
    let path = shared_traces().join(relative);
    let json = report_json(&[&path]);
    (path, json)
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn b200_eager_trace_lists_multimem_allreduce_and_nvjet_bmm_shapes() {
    let (path, report) = real_report("tracelens/b200/eager_trace.json.gz");
    assert_eq!(report["run"]["has_decode"], false);
    assert_eq!(report["run"]["scope"], "whole_trace");
    // Independently: calls and mean duration of the multimem allreduce in the full JSON.
    let trace = common::load_json(&path);
    let durs: Vec<f64> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "kernel")
        .filter(|e| {
            e["name"]
                .as_str()
                .unwrap_or("")
                .contains("multimem_all_reduce_kernel")
        })
        .map(|e| e["dur"].as_f64().unwrap())
        .collect();
    let mean = durs.iter().sum::<f64>() / durs.len() as f64;
    let multimem = report["comm"]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| {
            k["name"]
                .as_str()
                .unwrap()
                .contains("multimem_all_reduce_kernel")
        })
        .expect("multimem_all_reduce_kernel listed");
    assert_eq!(multimem["calls"].as_f64().unwrap(), durs.len() as f64);
    assert_eq!(durs.len(), 73);
    assert!(
        (multimem["mean_us"].as_f64().unwrap() - mean).abs() < 1e-6,
        "{multimem}"
    );

    let rows = report["shapes"]["rows"].as_array().unwrap();
    let linked: Vec<&Value> = rows
        .iter()
        .filter(|r| {
            let k = r["kernel"].as_str().unwrap();
            (k.starts_with("nvjet") || k.starts_with("bmm")) && r["source"] == "linked_op"
        })
        .collect();
    assert!(linked.len() >= 6, "{rows:?}");
    for r in linked {
        let s = &r["shape"];
        assert!(
            s["m"].as_i64().unwrap() > 0 && s["k"].as_i64().unwrap() > 0,
            "{r}"
        );
        if r["kernel"].as_str().unwrap().starts_with("nvjet") {
            assert!(s["n"].as_i64().unwrap() > 0, "{r}");
            assert!(r["tflops"].as_f64().unwrap() > 0.0);
        } else {
            // The fused MoE op's inputs are activations [888, 3072] and router logits
            // [888, 128]: the expert weights, and so N, are not in the trace.
            assert_eq!(r["op"], "vllm::moe_forward", "{r}");
            assert!(s["n"].is_null(), "{r}");
            assert!(r["tflops"].is_null(), "{r}");
        }
    }
    let text = run_tracegate(&["report", "--format", "markdown"], &[&path]);
    assert!(text.contains("No decode step found"), "{text}");
    assert!(text.contains("888 x 640 x 2880"), "{text}");
    assert!(text.contains("888 x ? x 3072"), "{text}");
    assert!(
        text.contains("(vllm::moe\\_forward) do not hold it")
            && text.contains("N is not in the trace"),
        "{text}"
    );
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn sglang_decode_trace_finds_one_graph_launched_decode_step() {
    let (_, report) =
        real_report("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    assert_eq!(report["run"]["has_decode"], true);
    let phases = report["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1);
    assert_eq!(phases[0]["decode_kept"], 1);
    assert_eq!(phases[0]["decode_graph_launched"], 1);
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn trace_without_input_dims_says_shapes_are_unavailable() {
    let (path, report) = real_report("hta/df_index_resolver/df_index_resolver.json.gz");
    assert_eq!(report["shapes"]["recorded"], false);
    assert_eq!(report["coverage"]["with_dims"], 0);
    let text = run_tracegate(&["report", "--format", "markdown"], &[&path]);
    assert!(text.contains("Shapes unavailable"), "{text}");
    assert!(!text.contains("| M x N x K"), "{text}");
}

/// A Kineto time in µs (JSON number text, up to three decimals) as exact integer ns.
fn exact_ns(raw: &str) -> i64 {
    let raw = raw.trim();
    let (neg, raw) = raw.strip_prefix('-').map_or((false, raw), |r| (true, r));
    let (int, frac) = raw.split_once('.').unwrap_or((raw, ""));
    let mut frac: String = frac.chars().take(3).collect();
    while frac.len() < 3 {
        frac.push('0');
    }
    let ns = int.parse::<i64>().unwrap() * 1000 + frac.parse::<i64>().unwrap();
    if neg {
        -ns
    } else {
        ns
    }
}

#[derive(serde::Deserialize)]
struct RawTrace<'a> {
    #[serde(borrow, rename = "traceEvents")]
    events: Vec<RawEvent<'a>>,
    #[serde(default, rename = "distributedInfo")]
    distributed: Option<Value>,
}

#[derive(serde::Deserialize)]
struct RawEvent<'a> {
    #[serde(default)]
    ph: Option<String>,
    #[serde(default)]
    cat: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(borrow, default)]
    ts: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow, default)]
    dur: Option<&'a serde_json::value::RawValue>,
}

fn union(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.retain(|&(s, e)| e > s);
    v.sort();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn length(v: &[(i64, i64)]) -> i64 {
    v.iter().map(|(s, e)| e - s).sum()
}

fn intersection(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let mut total = 0;
    for &(s, e) in a {
        for &(t, f) in b {
            total += (e.min(f) - s.max(t)).max(0);
        }
    }
    total
}

/// Per-rank whole-trace figures from the full JSON: (rank, busy, |∪comm|, overlap, comm kernel
/// time), comm being NCCL kernels and compute every other kernel.
fn independent_overlap(path: &Path) -> (u64, [i64; 4]) {
    let bytes = std::fs::read(path).unwrap();
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        use std::io::Read;
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(bytes).unwrap()
    };
    let trace: RawTrace<'_> = serde_json::from_str(&text).unwrap();
    let rank = trace
        .distributed
        .as_ref()
        .and_then(|d| d["rank"].as_u64())
        .unwrap_or(0);
    let (mut all, mut comm, mut compute, mut comm_ns) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for e in &trace.events {
        if e.ph.as_deref() != Some("X") {
            continue;
        }
        let cat = e.cat.as_deref().unwrap_or("");
        if !matches!(cat, "kernel" | "gpu_memcpy" | "gpu_memset") {
            continue;
        }
        let (Some(ts), Some(dur)) = (e.ts, e.dur) else {
            continue;
        };
        let (ts, dur) = (exact_ns(ts.get()), exact_ns(dur.get()));
        if dur < 0 {
            continue;
        }
        let iv = (ts, ts + dur);
        all.push(iv);
        if cat != "kernel" {
            continue;
        }
        if e.name
            .as_deref()
            .unwrap_or("")
            .to_ascii_lowercase()
            .contains("nccl")
        {
            comm.push(iv);
            comm_ns += dur;
        } else {
            compute.push(iv);
        }
    }
    let (all, comm, compute) = (union(all), union(comm), union(compute));
    (
        rank,
        [
            length(&all),
            length(&comm),
            intersection(&comm, &compute),
            comm_ns,
        ],
    )
}

fn assert_overlap_matches(files: &[PathBuf], report_paths: &[&Path]) {
    let report = report_json(report_paths);
    let ranks: BTreeMap<u64, &Value> = report["whole_trace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["rank"].as_u64().unwrap(), r))
        .collect();
    assert_eq!(ranks.len(), files.len());
    for f in files {
        let (rank, [busy, comm_union, overlap, comm_ns]) = independent_overlap(f);
        let got = ranks[&rank];
        let field = |k: &str| got[k].as_i64().unwrap();
        for (name, want, have) in [
            ("busy_ns", busy, field("busy_ns")),
            ("comm_union_ns", comm_union, field("comm_union_ns")),
            ("overlap_ns", overlap, field("overlap_ns")),
            ("comm_kernel_ns", comm_ns, field("comm_kernel_ns")),
        ] {
            assert!(
                (want - have).abs() < 1000,
                "{}: rank {rank} {name} {have} vs {want}",
                f.display()
            );
        }
        assert!(comm_union > 0, "{}: no comm", f.display());
        let pct = overlap as f64 / comm_union as f64 * 100.0;
        let have = got["overlap_pct"].as_f64().unwrap();
        assert!(
            (pct - have).abs() < 0.01,
            "rank {rank}: overlap {have}% vs {pct}%"
        );
        eprintln!(
            "{}: rank {rank} overlap {pct:.3}% of {:.3} ms comm",
            f.display(),
            comm_union as f64 / 1e6
        );
    }
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn comm_on_its_own_stream_overlap_matches_an_independent_count() {
    let traces = shared_traces();
    let dlrm = traces.join("param/dlrm_kineto");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dlrm)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 8);
    assert_overlap_matches(&files, &[&dlrm]);

    let control = traces.join("hta/trace_diff/control/control.json.gz");
    assert_overlap_matches(std::slice::from_ref(&control), &[&control]);
}
