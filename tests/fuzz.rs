//! Fuzzing on stable Rust with proptest: the trace reader, the baseline parser and the tolerance
//! parser never panic, hang or accept a cut trace as whole, whatever the input.
//!
//! CI runs a bounded number of cases; for a long run:
//! `PROPTEST_CASES=200000 cargo test --release --test fuzz -- --nocapture`.

use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use tracegate::baseline::{known_metrics, Baseline, Tolerance};

/// A small real trace (MIT, see tests/fixtures/README.md), uncompressed.
fn seed_trace() -> &'static [u8] {
    static TRACE: OnceLock<Vec<u8>> = OnceLock::new();
    TRACE.get_or_init(|| {
        let gz = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mi250_minitoy.json.gz"),
        )
        .unwrap();
        std::io::read_to_string(flate2::read::MultiGzDecoder::new(&gz[..]))
            .unwrap()
            .into_bytes()
    })
}

fn seed_baseline() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml"),
        )
        .unwrap()
    })
}

fn read_bytes(bytes: &[u8], gzip: bool) -> Result<usize, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(if gzip {
        "rank-0.json.gz"
    } else {
        "rank-0.json"
    });
    std::fs::write(&path, bytes).unwrap();
    tracegate::reader::read_file(&path)
        .map(|ranks| ranks.len())
        .map_err(|e| e.to_string())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn the_reader_survives_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = read_bytes(&bytes, false);
        let _ = read_bytes(&bytes, true);
    }

    #[test]
    fn a_trace_cut_at_any_byte_is_an_error_never_a_partial_result(cut in 0usize..100_000) {
        let trace = seed_trace();
        let cut = cut % trace.len();
        // Trailing whitespace aside, any cut loses part of the trace.
        if trace[cut..].iter().any(|b| !b.is_ascii_whitespace()) {
            let message = read_bytes(&trace[..cut], false).unwrap_err();
            prop_assert!(message.contains("rank-0.json"), "{}", message);
            let packed = gzip(trace);
            let gz_cut = cut % packed.len();
            prop_assert!(read_bytes(&packed[..gz_cut], true).is_err());
        }
    }

    #[test]
    fn the_reader_survives_mutated_traces(
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)
    ) {
        let mut trace = seed_trace().to_vec();
        let n = trace.len();
        for (at, byte) in flips {
            trace[at % n] = byte;
        }
        let _ = read_bytes(&trace, false);
    }

    #[test]
    fn the_baseline_parser_survives_arbitrary_text(text in "\\PC{0,400}") {
        let _ = Baseline::parse(&text, Path::new("fuzz.toml"), &known_metrics());
    }

    #[test]
    fn the_baseline_parser_survives_mutated_baselines(
        edits in proptest::collection::vec((any::<usize>(), "[\\PC]{0,3}"), 1..6)
    ) {
        let mut text: Vec<char> = seed_baseline().chars().collect();
        for (at, insert) in edits {
            let at = at % text.len();
            text.splice(at..at + 1, insert.chars());
        }
        let text: String = text.into_iter().collect();
        if let Err(e) = Baseline::parse(&text, Path::new("fuzz.toml"), &known_metrics()) {
            prop_assert!(e.to_string().starts_with("fuzz.toml"), "{}", e);
        }
    }

    #[test]
    fn tolerances_parse_or_refuse_and_round_trip(text in "\\PC{0,12}") {
        if let Ok(t) = text.parse::<Tolerance>() {
            prop_assert_eq!(t.to_string().parse::<Tolerance>().unwrap(), t);
        }
    }
}
