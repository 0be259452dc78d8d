//! Properties of the whole pipeline (reader → taxonomy → steps → metrics) on a synthetic run:
//! how a trace is laid out must not change a figure; how time is measured must change it exactly.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::Value;
use tracegate::testing::{extract, generate_to_dir, read_run, ExtractOptions, Taxonomy};
use tracegate::SynthOptions;

/// One small 2-rank run, generated once, as parsed JSON documents per rank file.
fn base() -> &'static (tempfile::TempDir, Vec<(String, Value)>) {
    static BASE: OnceLock<(tempfile::TempDir, Vec<(String, Value)>)> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let opts = SynthOptions {
            scenario: "b200-dsr1-fp4-tp4-ep4".into(),
            ranks: Some(2),
            decode_steps: 6,
            python_functions_per_step: 0,
            seed: 3,
            ..SynthOptions::default()
        };
        let summary = generate_to_dir(&opts, dir.path()).unwrap();
        let docs = summary
            .files
            .iter()
            .map(|f| {
                let text = std::io::read_to_string(flate2::read::MultiGzDecoder::new(
                    std::fs::File::open(f).unwrap(),
                ))
                .unwrap();
                (
                    f.file_name().unwrap().to_string_lossy().into_owned(),
                    serde_json::from_str(&text).unwrap(),
                )
            })
            .collect();
        (dir, docs)
    })
}

/// Every metric value and per-rank value, for comparison.
fn figures(paths: &[PathBuf]) -> BTreeMap<String, f64> {
    let run = read_run(paths).unwrap();
    let classes = Taxonomy::builtin().classify_run(&run);
    let x = extract(&run, &classes, &ExtractOptions::default()).unwrap();
    let mut out = BTreeMap::new();
    for (name, m) in &x.metrics {
        out.insert(name.to_string(), m.value);
        for (rank, v) in &m.per_rank {
            out.insert(format!("{name}[{rank}]"), *v);
        }
    }
    out
}

fn write_docs(dir: &Path, docs: &[(String, Value)]) -> Vec<PathBuf> {
    docs.iter()
        .map(|(name, doc)| {
            let path = dir.join(name.trim_end_matches(".gz"));
            std::fs::write(&path, doc.to_string()).unwrap();
            path
        })
        .collect()
}

fn original() -> &'static BTreeMap<String, f64> {
    static FIGURES: OnceLock<BTreeMap<String, f64>> = OnceLock::new();
    FIGURES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        figures(&write_docs(dir.path(), &base().1))
    })
}

fn assert_same(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>, scale: f64) {
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (k, va) in a {
        // Times scale; percentages and the rank ratio do not (its per-rank entries are times).
        let time = k.contains("_ms") || k.contains("_us") || k.starts_with("allreduce_rank_ratio[");
        // Tokens per second go the other way: the same batch in k times the time.
        let rate = k.starts_with("decode_tokens_per_s");
        let want = if time {
            va * scale
        } else if rate {
            va / scale
        } else {
            *va
        };
        let got = b[k];
        assert!(
            (got - want).abs() <= 1e-6 * want.abs().max(1.0),
            "{k}: {got} vs {want}"
        );
    }
}

/// Applies `f` to every event of every rank document.
fn map_events(docs: &[(String, Value)], mut f: impl FnMut(&mut Value)) -> Vec<(String, Value)> {
    let mut docs = docs.to_vec();
    for (_, doc) in &mut docs {
        for ev in doc["traceEvents"].as_array_mut().unwrap() {
            f(ev);
        }
    }
    docs
}

/// A timestamp in µs as exact decimal text → integer ns, and back.
fn ns(v: &Value) -> i128 {
    let text = v.to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let frac3: String = frac.chars().chain("000".chars()).take(3).collect();
    int.parse::<i128>().unwrap() * 1000 + frac3.parse::<i128>().unwrap()
}

fn micros(ns: i128) -> Value {
    serde_json::from_str(&format!("{}.{:03}", ns / 1000, ns % 1000)).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn permuting_event_order_changes_no_metric(seed in any::<u64>()) {
        let mut docs = base().1.clone();
        let mut state = seed | 1;
        for (_, doc) in &mut docs {
            let events = doc["traceEvents"].as_array_mut().unwrap();
            for i in (1..events.len()).rev() {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17;
                events.swap(i, (state % (i as u64 + 1)) as usize);
            }
        }
        let dir = tempfile::tempdir().unwrap();
        assert_same(original(), &figures(&write_docs(dir.path(), &docs)), 1.0);
    }

    #[test]
    fn shifting_every_timestamp_changes_no_metric(shift_us in -1_000_000_000i64..1_000_000_000i64) {
        let docs = map_events(&base().1, |ev| {
            if ev.get("ts").is_some_and(Value::is_number) {
                ev["ts"] = micros(ns(&ev["ts"]) + i128::from(shift_us) * 1000);
            }
        });
        let dir = tempfile::tempdir().unwrap();
        assert_same(original(), &figures(&write_docs(dir.path(), &docs)), 1.0);
    }

    #[test]
    fn scaling_every_time_by_k_scales_time_metrics_by_k(k in 2i128..5) {
        let docs = map_events(&base().1, |ev| {
            for key in ["ts", "dur"] {
                if ev.get(key).is_some_and(Value::is_number) {
                    ev[key] = micros(ns(&ev[key]) * k);
                }
            }
        });
        let dir = tempfile::tempdir().unwrap();
        assert_same(original(), &figures(&write_docs(dir.path(), &docs)), k as f64);
    }
}

#[test]
fn merging_the_ranks_into_one_sglang_file_changes_no_metric() {
    // SGLang's merge: every pid becomes "[TPrr] pid"; ids repeat across ranks; the top-level keys
    // are the first file's.
    let docs = &base().1;
    let mut merged = docs[0].1.clone();
    let mut events = Vec::new();
    for (rank, (_, doc)) in docs.iter().enumerate() {
        for ev in doc["traceEvents"].as_array().unwrap() {
            let mut ev = ev.clone();
            if let Some(pid) = ev.get("pid").cloned() {
                let pid = pid
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| pid.to_string());
                ev["pid"] = Value::String(format!("[TP{rank:02}] {pid}"));
            }
            events.push(ev);
        }
    }
    merged["traceEvents"] = Value::Array(events);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("merged-1.trace.json");
    std::fs::write(&path, merged.to_string()).unwrap();
    assert_same(original(), &figures(&[path]), 1.0);
}

#[test]
fn an_extra_metadata_event_changes_no_metric() {
    let mut docs = base().1.clone();
    for (_, doc) in &mut docs {
        let meta = serde_json::json!({"ph": "M", "name": "process_labels", "pid": 999999, "args": {"labels": "idle"}});
        doc["traceEvents"].as_array_mut().unwrap().push(meta);
    }
    let dir = tempfile::tempdir().unwrap();
    assert_same(original(), &figures(&write_docs(dir.path(), &docs)), 1.0);
}
