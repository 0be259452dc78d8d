//! Fuzzing on stable Rust with proptest: the trace reader, the baseline parser and the tolerance
//! parser never panic, hang or accept a cut trace as whole, whatever the input. The seeds are a
//! small real trace (MIT), a `synth` rank file and a shipped baseline.
//!
//! CI runs a bounded number of cases (seconds), and the `long_run_*` targets for one second each,
//! so that the long-run harness itself is exercised. A long run, each target for a time budget
//! with fresh random seeds, printing the cases run:
//! `TRACEGATE_FUZZ_SECONDS=600 cargo test --release --test it fuzz::long_run -- --nocapture --test-threads 1`.

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestCaseError, TestRng, TestRunner};
use tracegate::testing::Tolerance;
use tracegate::Baseline;

/// A small real trace (MIT, see tests/it/fixtures/README.md), uncompressed.
fn seed_trace() -> &'static [u8] {
    static TRACE: OnceLock<Vec<u8>> = OnceLock::new();
    TRACE.get_or_init(|| {
        let gz = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/mi250_minitoy.json.gz"),
        )
        .unwrap();
        std::io::read_to_string(flate2::read::MultiGzDecoder::new(&gz[..]))
            .unwrap()
            .into_bytes()
    })
}

/// Rank 0 of a small `synth` run, uncompressed: the SGLang shape (string pids, step annotations,
/// graph launches) that the minitoy trace lacks.
fn seed_synth() -> &'static [u8] {
    static TRACE: OnceLock<Vec<u8>> = OnceLock::new();
    TRACE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let opts = tracegate::SynthOptions {
            scenario: "mi355x-dsr1-fp4-tp4".into(),
            ranks: Some(1),
            decode_steps: 2,
            python_functions_per_step: 2,
            ..Default::default()
        };
        let summary = tracegate::testing::generate_to_dir(&opts, dir.path()).unwrap();
        let gz = std::fs::read(&summary.files[0]).unwrap();
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
    tracegate::testing::read_file(&path)
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

fn arbitrary_bytes(bytes: &[u8]) -> Result<(), TestCaseError> {
    let _ = read_bytes(bytes, false);
    let _ = read_bytes(bytes, true);
    Ok(())
}

/// Each seed's address and its gzip.
type PackedSeeds = std::sync::Mutex<Vec<(usize, &'static [u8])>>;

/// The gzip of a seed, made once.
fn packed(seed: &'static [u8]) -> &'static [u8] {
    static PACKED: OnceLock<PackedSeeds> = OnceLock::new();
    let mut all = PACKED.get_or_init(Default::default).lock().unwrap();
    let key = seed.as_ptr() as usize;
    if let Some((_, p)) = all.iter().find(|(k, _)| *k == key) {
        return p;
    }
    let p: &'static [u8] = Vec::leak(gzip(seed));
    all.push((key, p));
    p
}

fn cut_trace(seed: &'static [u8], cut: usize) -> Result<(), TestCaseError> {
    let cut = cut % seed.len();
    // Trailing whitespace aside, any cut loses part of the trace.
    if seed[cut..].iter().any(|b| !b.is_ascii_whitespace()) {
        let message = read_bytes(&seed[..cut], false).unwrap_err();
        prop_assert!(message.contains("rank-0.json"), "{}", message);
        let packed = packed(seed);
        let gz_cut = cut % packed.len();
        prop_assert!(read_bytes(&packed[..gz_cut], true).is_err());
    }
    Ok(())
}

fn mutated_trace(seed: &[u8], flips: &[(usize, u8)]) -> Result<(), TestCaseError> {
    let mut trace = seed.to_vec();
    let n = trace.len();
    for &(at, byte) in flips {
        trace[at % n] = byte;
    }
    if let Err(message) = read_bytes(&trace, false) {
        prop_assert!(message.contains("rank-0.json"), "{}", message);
    }
    Ok(())
}

/// A trace whose event names are `names` (JSON-escaped: quotes, backslashes and `}, {` seams
/// end up inside strings), each name on a kernel and on a python_function event.
fn trace_named(names: &[String]) -> Vec<u8> {
    let mut events = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let name = serde_json::to_string(name).unwrap();
        events.push(format!(
            r#"{{"ph": "X", "cat": "kernel", "name": {name}, "pid": "[TP0{r}] 1", "tid": 7, "ts": {i}, "dur": 1, "args": {{"stream": 7, "l": [{{"a": {name}}}, {{}}]}}}}"#,
            r = i % 3
        ));
        events.push(format!(
            r#"{{"ph": "X", "cat": "python_function", "name": {name}, "pid": "[TP0{r}] 1", "ts": {i}, "dur": 1}}"#,
            r = i % 2
        ));
    }
    format!(
        r#"{{"traceEvents": [{}], "deviceProperties": [{{"id": 0, "name": "}}, {{"}}, {{"id": 1}}]}}"#,
        events.join(", ")
    )
    .into_bytes()
}

/// The chunk framer (`--threads` above 1) gives the single pass's result for any chunk size,
/// wherever its guessed boundaries land, or gives up and leaves the file to the single pass.
fn framer_agrees(trace: &[u8], chunk: usize) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("merged-1.json");
    std::fs::write(&path, trace).unwrap();
    let single = tracegate::testing::read_file_with_threads(&path, 1).map_err(|e| e.to_string());
    for threads in [2, 3] {
        if let Some(got) = tracegate::testing::read_file_parallel_only(&path, threads, chunk)
            .map_err(|e| e.to_string())
            .transpose()
        {
            prop_assert_eq!(&got, &single, "chunk {}", chunk);
        }
        let got =
            tracegate::testing::read_file_with_threads(&path, threads).map_err(|e| e.to_string());
        prop_assert_eq!(&got, &single);
    }
    Ok(())
}

/// A trace cut at any byte is the same error, at the same byte, on any number of threads.
fn cut_reads_the_same_on_any_threads(
    seed: &[u8],
    cut: usize,
    chunk: usize,
) -> Result<(), TestCaseError> {
    let cut = cut % seed.len();
    framer_agrees(&seed[..cut], chunk)
}

fn seam_names() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(
        "([a-z{}\\[\\],: \"\\\\]|\\}, \\{|\\\\\"\\}, \\{\"){0,8}",
        1..12,
    )
}

fn arbitrary_baseline(text: &str) -> Result<(), TestCaseError> {
    let _ = Baseline::parse(text, Path::new("fuzz.toml"));
    Ok(())
}

fn mutated_baseline(edits: &[(usize, String)]) -> Result<(), TestCaseError> {
    let mut text: Vec<char> = seed_baseline().chars().collect();
    for (at, insert) in edits {
        let at = at % text.len();
        text.splice(at..at + 1, insert.chars());
    }
    let text: String = text.into_iter().collect();
    if let Err(e) = Baseline::parse(&text, Path::new("fuzz.toml")) {
        prop_assert!(e.to_string().starts_with("fuzz.toml"), "{}", e);
    }
    Ok(())
}

fn tolerance_round_trip(text: &str) -> Result<(), TestCaseError> {
    if let Ok(t) = text.parse::<Tolerance>() {
        prop_assert_eq!(t.to_string().parse::<Tolerance>().unwrap(), t);
    }
    Ok(())
}

fn flips() -> impl Strategy<Value = Vec<(usize, u8)>> {
    proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)
}

fn edits() -> impl Strategy<Value = Vec<(usize, String)>> {
    proptest::collection::vec((any::<usize>(), "[\\PC]{0,3}"), 1..6)
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn the_reader_survives_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        arbitrary_bytes(&bytes)?;
    }

    #[test]
    fn a_trace_cut_at_any_byte_is_an_error_never_a_partial_result(cut in 0usize..1_000_000) {
        cut_trace(seed_trace(), cut)?;
        cut_trace(seed_synth(), cut)?;
    }

    #[test]
    fn the_reader_survives_mutated_traces(flips in flips()) {
        mutated_trace(seed_trace(), &flips)?;
        mutated_trace(seed_synth(), &flips)?;
    }

    #[test]
    fn the_chunk_framer_reads_seams_inside_strings_and_escapes_the_same(names in seam_names(), chunk in 1usize..600) {
        framer_agrees(&trace_named(&names), chunk)?;
    }

    #[test]
    fn a_cut_trace_is_the_same_error_on_any_number_of_threads(cut in 0usize..1_000_000, chunk in 1usize..20_000) {
        cut_reads_the_same_on_any_threads(seed_synth(), cut, chunk)?;
    }

    #[test]
    fn the_baseline_parser_survives_arbitrary_text(text in "\\PC{0,400}") {
        arbitrary_baseline(&text)?;
    }

    #[test]
    fn the_baseline_parser_survives_mutated_baselines(edits in edits()) {
        mutated_baseline(&edits)?;
    }

    #[test]
    fn tolerances_parse_or_refuse_and_round_trip(text in "\\PC{0,12}") {
        tolerance_round_trip(&text)?;
    }
}

/// The long-run budget per target, from `TRACEGATE_FUZZ_SECONDS` (default 1 s: CI).
fn budget() -> Duration {
    let seconds = std::env::var("TRACEGATE_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    Duration::from_secs(seconds)
}

/// Cases per round of a long run.
const ROUND: u32 = 16;

/// Runs `test` on values of `strategy` with fresh random seeds until the budget is spent;
/// panics with the failing input on a finding. Returns the number of cases run.
fn run_for<S: Strategy>(
    target: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> u64
where
    S::Value: std::fmt::Debug,
{
    let start = Instant::now();
    let mut cases = 0u64;
    let mut round = 0u64;
    while start.elapsed() < budget() {
        // RandomState is seeded from the OS: a fresh seed per round.
        let seed: [u8; 32] = std::array::from_fn(|i| {
            std::hash::BuildHasher::hash_one(
                &std::collections::hash_map::RandomState::new(),
                (round, i),
            ) as u8
        });
        // Small rounds, so that the budget is kept: a round of the chunk framer's cases reads a
        // synth trace at several thread counts each.
        let config = ProptestConfig {
            cases: ROUND,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
        if let Err(e) = runner.run(&strategy, &test) {
            panic!("{target}: finding after {cases} cases (round seed {seed:?}): {e}");
        }
        cases += ROUND as u64;
        round += 1;
    }
    println!(
        "{target}: {cases} cases in {:.0} s, no finding",
        start.elapsed().as_secs_f64()
    );
    cases
}

#[test]
fn long_run_the_trace_reader() {
    let strategy = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..4096).prop_map(Input::Bytes),
        (0usize..10_000_000).prop_map(Input::Cut),
        flips().prop_map(Input::Flips),
    ];
    run_for("reader", strategy, |input| match input {
        Input::Bytes(bytes) => arbitrary_bytes(&bytes),
        Input::Cut(cut) => {
            cut_trace(seed_trace(), cut)?;
            cut_trace(seed_synth(), cut)
        }
        Input::Flips(flips) => {
            mutated_trace(seed_trace(), &flips)?;
            mutated_trace(seed_synth(), &flips)
        }
    });
}

#[test]
fn long_run_the_chunk_framer() {
    let strategy = prop_oneof![
        (seam_names(), 1usize..600).prop_map(|(n, c)| (Err(n), c)),
        (0usize..10_000_000, 1usize..20_000).prop_map(|(cut, c)| (Ok(cut), c)),
    ];
    run_for("framer", strategy, |(input, chunk)| match input {
        Err(names) => framer_agrees(&trace_named(&names), chunk),
        Ok(cut) => cut_reads_the_same_on_any_threads(seed_synth(), cut, chunk),
    });
}

#[derive(Debug, Clone)]
enum Input {
    Bytes(Vec<u8>),
    Cut(usize),
    Flips(Vec<(usize, u8)>),
}

#[test]
fn long_run_the_baseline_parser() {
    let strategy = prop_oneof!["\\PC{0,400}".prop_map(Err), edits().prop_map(Ok),];
    run_for("baseline", strategy, |input| match input {
        Err(text) => arbitrary_baseline(&text),
        Ok(edits) => mutated_baseline(&edits),
    });
}

#[test]
fn long_run_the_tolerance_parser() {
    let strategy = prop_oneof!["\\PC{0,12}", "[0-9.+\\-e]{0,6}(%|ms|us|pp|s)?"];
    run_for("tolerance", strategy, |text| tolerance_round_trip(&text));
}
