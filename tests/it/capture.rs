//! Graph replays joined to their capture (issue 41), checked against TraceLens's own GEMM table
//! for the same replay (`../shared/captures`, kept apart from the runs in `../shared/traces`).

use std::path::Path;

use tracegate::testing::{
    attribute, capture_batch, gemm_throughput, read_capture, read_file, replay_batch, replays,
    MIN_MATCH_RATE,
};

use crate::common::{run_ok, shared_traces, tracegate};

/// The rows of a CSV file written by pandas: fields quoted where they hold commas or quotes.
fn csv_rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut rows = Vec::new();
    let (mut row, mut field, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            ('\r', false) => {}
            (c, _) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// `report --format json` of a run, with these extra arguments.
fn report_json(run: &Path, args: &[&str]) -> serde_json::Value {
    let out = run_ok(
        tracegate()
            .arg("report")
            .arg(run)
            .args(["--format", "json"])
            .args(args),
    );
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

fn sglang_decode_dir() -> std::path::PathBuf {
    shared_traces().join("../captures/tracelens/inference/sglang_decode")
}

fn gemm_csv() -> Vec<Vec<String>> {
    csv_rows(&sglang_decode_dir().join("perf_csvs/GEMM.csv"))
}

#[test]
#[ignore = "needs ../shared/captures: cargo test -- --include-ignored"]
fn report_joins_the_sglang_replay_to_its_capture_and_gives_every_tracelens_gemm_its_shape_and_throughput(
) {
    let replay =
        shared_traces().join("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let capture = sglang_decode_dir().join("capture_traces");
    let report = report_json(&replay, &["--capture", capture.to_str().unwrap()]);
    let code = &report["code"];
    let graph = &code["graph"][0];
    assert_eq!(graph["status"], "joined", "{graph}");
    assert!(graph["match_pct"].as_f64().unwrap() >= 95.0, "{graph}");
    let ops = code["ops"].as_array().unwrap();
    let rows = gemm_csv();
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let (op, m, n, k, tflops, tbps) = (
        col("name"),
        col("param: M"),
        col("param: N"),
        col("param: K"),
        col("TFLOPS/s_median"),
        col("TB/s_median"),
    );
    let num = |row: &[String], c: usize| row[c].parse::<f64>().unwrap();
    for row in &rows[1..] {
        let shape = (num(row, m) as u64, num(row, n) as u64, num(row, k) as u64);
        // The row of this shape whose op stack holds TraceLens's op.
        let found = ops
            .iter()
            .find(|o| {
                let g = &o["gemm"];
                o["op"].as_str().unwrap().contains(row[op].as_str())
                    && (g["m"].as_u64(), g["n"].as_u64(), g["k"].as_u64())
                        == (Some(shape.0), Some(shape.1), Some(shape.2))
            })
            .unwrap_or_else(|| panic!("{} {shape:?} not among the ops", row[op]));
        let err = |ours: &serde_json::Value, theirs: f64| {
            (ours.as_f64().unwrap() - theirs).abs() / theirs
        };
        let (ef, eb) = (
            err(&found["gemm"]["tflops"], num(row, tflops)),
            err(&found["gemm"]["tbps"], num(row, tbps)),
        );
        eprintln!(
            "{} {shape:?}: TFLOP/s off by {:.3}%, TB/s by {:.3}%",
            row[op],
            ef * 100.0,
            eb * 100.0
        );
        assert!(ef <= 0.02 && eb <= 0.02, "{} {shape:?}: {found}", row[op]);
    }
    // Every replayed GEMM of the aiter op is also the aten::mm under it.
    assert!(ops
        .iter()
        .any(|o| o["op"] == "aiter::gemm_a16w16 › aten::mm"));
    // The scopes: the model's modules.
    let scopes: Vec<&str> = code["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scope"].as_str().unwrap())
        .collect();
    assert!(scopes.contains(&"nn.Module: RadixAttention"), "{scopes:?}");
}

#[test]
#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]
fn the_h200_graph_run_takes_its_shapes_from_the_capture_in_its_own_trace_by_position() {
    let report = report_json(&shared_traces().join("h200-torch/graph.json.gz"), &[]);
    let graph = &report["code"]["graph"][0];
    assert_eq!(graph["status"], "joined", "{graph}");
    assert_eq!(graph["in_trace"], true);
    assert_eq!(graph["method"], "position");
    assert_eq!(graph["kernels_matched"], graph["kernels_replayed"]);
    // 30 replays of 308 kernels and 18 memcpys and memsets each, as many as the capture holds.
    assert_eq!(graph["kernels_replayed"], 30 * (308 + 18));
    // The routed experts are padded bmms of the model's hidden size (1024).
    let ops = report["code"]["ops"].as_array().unwrap();
    assert!(
        ops.iter()
            .any(|o| o["op"] == "aten::bmm" && o["gemm"]["k"] == 1024),
        "{ops:#?}"
    );
    // With no capture allowed, nothing is attributed, and the report says why.
    let off = report_json(
        &shared_traces().join("h200-torch/graph.json.gz"),
        &["--no-capture"],
    );
    let graph = &off["code"]["graph"][0];
    assert_eq!(graph["status"], "not_joined");
    assert!(graph["reason"]
        .as_str()
        .unwrap()
        .contains("no capture trace"));
}

#[test]
#[ignore = "needs ../shared/captures: cargo test -- --include-ignored"]
fn the_sglang_capture_attributes_nothing_to_the_vllm_replay_and_says_why() {
    let replay =
        shared_traces().join("tracelens/inference/vllm_decode_full/graph_execution.json.gz");
    let capture = sglang_decode_dir().join("capture_traces");
    let report = report_json(&replay, &["--capture", capture.to_str().unwrap()]);
    let graph = &report["code"]["graph"][0];
    assert_eq!(graph["status"], "not_joined", "{graph}");
    let reason = graph["reason"].as_str().unwrap();
    assert!(
        reason.contains("bs_32_rank0") && reason.contains("under 95%"),
        "{reason}"
    );
    // No replayed kernel got a site: the only ops are the eager ones outside the graph.
    let replayed_ops = report["code"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["op"].as_str().unwrap().contains("attention"))
        .count();
    assert_eq!(replayed_ops, 0);
}

#[test]
#[ignore = "needs ../shared/captures: cargo test -- --include-ignored"]
fn sglang_decode_capture_gives_the_replay_tracelens_gemm_shapes_and_throughput() {
    let traces = shared_traces();
    let dir = traces.join("../captures/tracelens/inference/sglang_decode");
    let capture_path = dir.join("capture_traces/bs_32_rank0.json.gz");
    let replay_path =
        traces.join("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");

    let capture = read_capture(&capture_path).unwrap_or_else(|e| panic!("{e}"));
    let replay = read_file(&replay_path).unwrap_or_else(|e| panic!("{e}"));
    let replay = &replay[0];
    let graphs = replays(replay);
    assert_eq!(graphs.len(), 1, "the replay holds one graph launch");
    let (cb, rb) = (capture_batch(&capture_path), replay_batch(replay));
    assert_eq!((cb, rb), (Some(32), Some(32)));
    let attribution =
        attribute(&capture, cb, &graphs[0], rb).unwrap_or_else(|refusal| panic!("{refusal}"));
    let rate = attribution.join.match_rate();
    eprintln!(
        "matched {} of {} replayed kernels ({:.2}%) to {} captured launches by {:?}",
        attribution.join.matched(),
        graphs[0].len(),
        rate * 100.0,
        capture.launches.len(),
        attribution.join.method
    );
    assert!(rate >= MIN_MATCH_RATE);

    let gemms = gemm_throughput(&attribution);
    let rows = csv_rows(&dir.join("perf_csvs/GEMM.csv"));
    let col = |name: &str| {
        rows[0]
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("GEMM.csv has no column {name}"))
    };
    let (op, m, n, k) = (
        col("name"),
        col("param: M"),
        col("param: N"),
        col("param: K"),
    );
    let (tflops, tbps) = (col("TFLOPS/s_median"), col("TB/s_median"));
    let num = |row: &[String], c: usize| -> f64 {
        row[c]
            .parse()
            .unwrap_or_else(|e| panic!("GEMM.csv {:?}: {e}", row[c]))
    };
    let mut worst = (0.0f64, 0.0f64);
    assert!(rows.len() > 1, "GEMM.csv has no rows");
    for row in &rows[1..] {
        let shape = (
            &row[op],
            num(row, m) as u64,
            num(row, n) as u64,
            num(row, k) as u64,
        );
        let found = gemms
            .iter()
            .find(|g| (&g.shape.op, g.shape.m, g.shape.n, g.shape.k) == shape)
            .unwrap_or_else(|| panic!("{shape:?} of GEMM.csv not found in {gemms:#?}"));
        let err = |ours: f64, theirs: f64| (ours - theirs).abs() / theirs;
        let (ef, eb) = (
            err(found.tflops, num(row, tflops)),
            err(found.tbps, num(row, tbps)),
        );
        eprintln!(
            "{shape:?}: {:.3} TFLOP/s (off by {:.3}%), {:.4} TB/s (off by {:.3}%), {} calls",
            found.tflops,
            ef * 100.0,
            found.tbps,
            eb * 100.0,
            found.calls
        );
        worst = (worst.0.max(ef), worst.1.max(eb));
        // The library op's shape is found on the aten::mm under it too.
        if row[op] == "aiter::gemm_a16w16" {
            assert!(
                gemms.iter().any(|g| g.shape.op == "aten::mm"
                    && (g.shape.m, g.shape.n, g.shape.k) == (shape.1, shape.2, shape.3)),
                "{shape:?} has no aten::mm"
            );
        }
    }
    eprintln!(
        "worst error: TFLOP/s {:.3}%, TB/s {:.3}%",
        worst.0 * 100.0,
        worst.1 * 100.0
    );
    assert!(worst.0 <= 0.02 && worst.1 <= 0.02, "worst {worst:?}");
}

/// Reads a `.json.gz` trace as a JSON value (the shared files are small).
fn read_gz_json(path: &Path) -> serde_json::Value {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The trace with the kernels named in `slower` lasting `factor` times as long, every later GPU
/// event on the device pushed back by the time they added (so the step, the idle gaps and the
/// annotations move as a slower kernel moves them). Host events stay where they were.
fn with_slower_kernels(
    trace: &serde_json::Value,
    slower: &[String],
    factor: f64,
) -> serde_json::Value {
    let gpu = |e: &serde_json::Value| {
        matches!(
            e["cat"].as_str(),
            Some("kernel" | "gpu_memcpy" | "gpu_memset" | "gpu_user_annotation")
        )
    };
    let events = trace["traceEvents"].as_array().unwrap();
    // (start, time added) of each slowed kernel.
    let mut added: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| e["cat"] == "kernel" && slower.iter().any(|k| e["name"] == k.as_str()))
        .map(|e| {
            (
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap() * (factor - 1.0),
            )
        })
        .collect();
    assert!(!added.is_empty(), "no kernel named {slower:?}");
    added.sort_by(|a, b| a.0.total_cmp(&b.0));
    let shift = |t: f64| {
        added
            .iter()
            .take_while(|(s, _)| *s < t)
            .map(|(_, d)| d)
            .sum::<f64>()
    };
    let mut out = trace.clone();
    for e in out["traceEvents"].as_array_mut().unwrap() {
        if !gpu(e) || e["ph"] != "X" {
            continue;
        }
        let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        let (start, end) = (ts + shift(ts), ts + dur + shift(ts + dur));
        e["ts"] = serde_json::json!(start);
        e["dur"] = serde_json::json!(end - start);
    }
    out
}

fn write_gz_json(path: &Path, value: &serde_json::Value) {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(value.to_string().as_bytes()).unwrap();
    gz.finish().unwrap();
}

/// True when `python3` can import torch, to run a repro script and not only compile it.
fn torch_importable() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import torch"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
#[ignore = "needs ../shared/captures: cargo test -- --include-ignored"]
fn check_repro_of_slower_aiter_gemms_writes_a_torch_mm_script_at_the_traced_shape() {
    let replay =
        shared_traces().join("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    let dir = tempfile::tempdir().unwrap();
    // Both runs beside the capture, where `check` finds it by itself.
    std::fs::create_dir(dir.path().join("capture_traces")).unwrap();
    std::fs::copy(
        sglang_decode_dir().join("capture_traces/bs_32_rank0.json.gz"),
        dir.path().join("capture_traces/bs_32_rank0.json.gz"),
    )
    .unwrap();
    let base = dir.path().join("base.json.gz");
    std::fs::copy(&replay, &base).unwrap();
    // The kernels aiter's gemm_a16w16 launched, as the join attributes them.
    let report = report_json(&base, &[]);
    let aiter: Vec<String> = report["code"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["op"].as_str().unwrap().starts_with("aiter::gemm_a16w16"))
        .map(|o| o["kernel"].as_str().unwrap().to_string())
        .collect();
    assert!(!aiter.is_empty(), "{:#}", report["code"]);
    let slow = dir.path().join("slow.json.gz");
    write_gz_json(
        &slow,
        &with_slower_kernels(&read_gz_json(&replay), &aiter, 1.3),
    );

    let baseline = dir.path().join("base.toml");
    run_ok(
        tracegate()
            .args(["baseline", "new"])
            .arg(&base)
            .arg("--baseline")
            .arg(&baseline)
            .args(["--model", "Qwen3-8B", "--precision", "bf16"]),
    );
    let repro = dir.path().join("repro");
    let out = crate::common::check_with_repro(&slow, &baseline, &repro);
    crate::common::assert_exit(&out, 1);
    let headline = String::from_utf8_lossy(&out.stdout);
    // The first line names the op and the shape (markdown escapes the underscores).
    let first = headline
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap()
        .replace('\\', "");
    assert!(
        first.contains("aiter::gemm_a16w16 › aten::mm, 32×24576×4096"),
        "{first}"
    );
    // hipBLASLt's kernel name (hundreds of characters) is cut in the middle, so the site shows.
    assert!(
        first.chars().count() < 400,
        "{} chars: {first}",
        first.chars().count()
    );

    let files: Vec<String> = std::fs::read_dir(&repro)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let record = files
        .iter()
        .find(|f| f.ends_with(".json"))
        .unwrap_or_else(|| panic!("{files:?}"));
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repro.join(record)).unwrap()).unwrap();
    assert_eq!(record["schema"], 1);
    assert!(
        record["ops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o == "aiter::gemm_a16w16"),
        "{record}"
    );
    assert!(record["baseline_ns"].as_f64().unwrap() > 0.0, "{record}");
    let ratio = record["run_ns"].as_f64().unwrap() / record["baseline_ns"].as_f64().unwrap();
    assert!(
        (ratio - 1.3).abs() < 0.02,
        "run/baseline per call {ratio}: {record}"
    );
    let script = files
        .iter()
        .find(|f| f.ends_with(".py"))
        .unwrap_or_else(|| panic!("{files:?}"));
    let script = repro.join(script);
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(text.contains("torch.mm("), "{text}");
    // M×N×K 32×24576×4096 in bf16: the gate-and-up projection of Qwen3-8B at batch 32.
    for needle in ["32", "24576", "4096", "bfloat16"] {
        assert!(text.contains(needle), "{needle} not in the script");
    }
    let compiled = std::process::Command::new("python3")
        .args(["-m", "py_compile"])
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    if torch_importable() {
        let ran = std::process::Command::new("python3")
            .arg(&script)
            .args(["--scale", "64", "--iters", "2"])
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
    } else {
        eprintln!("torch is not importable here: the script was compiled, not run");
    }
}
