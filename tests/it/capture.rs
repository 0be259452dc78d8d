//! Graph replays joined to their capture (issue 41), checked against TraceLens's own GEMM table
//! for the same replay (`../shared/captures`, kept apart from the runs in `../shared/traces`).

use std::path::Path;

use tracegate::testing::{
    attribute, capture_batch, gemm_throughput, read_capture, read_file, replay_batch, replays,
    MIN_MATCH_RATE,
};

use crate::common::shared_traces;

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
