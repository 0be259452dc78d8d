//! Speculative decoding (SGLang EAGLE/MTP, issue 38): the `mi355x-dsr1-fp4-tp4-mtp` scenario's
//! decode iterations (draft forwards, `TARGET_VERIFY`, `DRAFT_EXTEND_V2`) are gated whole, equal
//! to `truth.json`; a clean run passes its baseline and a slower draft model or host fails it.

use crate::common::{self, tracegate};
use serde_json::Value;

const MTP: &str = "mi355x-dsr1-fp4-tp4-mtp";

/// `synth` arguments of an MTP run at `seed` with `inject`.
fn args<'a>(seed: &'a str, inject: Option<&'a str>) -> Vec<&'a str> {
    let mut a = vec![
        "--scenario",
        MTP,
        "--seed",
        seed,
        "--python-functions-per-step",
        "0",
    ];
    if let Some(spec) = inject {
        a.extend(["--inject", spec]);
    }
    a
}

#[test]
fn the_mtp_scenario_gates_whole_iterations_equal_to_truth_within_1pct() {
    for inject in [None, Some("draft=1.5"), Some("host-gap=2")] {
        let run = common::synth_once(&args("7", inject));
        let out = common::extract_json_output(run.path());
        common::assert_exit(&out, 0);
        let x: Value = serde_json::from_slice(&out.stdout).unwrap();
        let truth = common::load_json(&run.path().join("truth.json"));
        for name in [
            "decode_step_ms",
            "decode_iter_ms",
            "decode_host_gap_ms",
            "spec_draft_pct",
            "spec_draft_ms",
            "spec_verify_ms",
        ] {
            let want = truth["metrics"][name]["value"]
                .as_f64()
                .unwrap_or_else(|| panic!("{inject:?}: truth has no {name}"));
            let got = x["metrics"][name]["value"]
                .as_f64()
                .unwrap_or_else(|| panic!("{inject:?}: extract has no {name}"));
            assert!(
                (got - want).abs() <= 0.01 * want.abs(),
                "{inject:?} {name}: extract {got}, truth {want}"
            );
        }
        for (rank, t) in truth["steps"].as_object().unwrap() {
            assert_eq!(
                x["steps"][rank]["decode_kept"], t["decode_kept"],
                "{inject:?} rank {rank}"
            );
        }
        // The forward is the draft and verify forwards' own time; the iteration adds the gaps
        // inside it (120 + 60 µs) and the host's gap after the draft extend.
        let m = |k: &str| x["metrics"][k]["value"].as_f64().unwrap();
        assert!(m("decode_step_ms") < m("spec_draft_ms") + m("spec_verify_ms") + 0.01);
        assert!(m("decode_iter_ms") > m("decode_step_ms") + 0.18 + m("decode_host_gap_ms") - 0.05);
    }
}

#[test]
fn a_clean_mtp_run_passes_its_baseline_and_a_slower_draft_or_host_fails_it() {
    let clean = common::synth_run(&args("1", None));
    let dir = common::process_dir("speculative");
    std::fs::create_dir_all(&dir).unwrap();
    let baseline = dir.join("mtp.toml");
    let out = tracegate()
        .args(["baseline", "new"])
        .arg(&clean)
        .arg("--baseline")
        .arg(&baseline)
        .args(["--force", "--moe-layers", "58"])
        .output()
        .unwrap();
    common::assert_exit(&out, 0);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(text.contains("spec_draft_pct"), "{text}");

    let check = |inject: Option<&str>| -> (std::process::Output, Value) {
        let run = common::synth_once(&args("2", inject));
        let out = tracegate()
            .arg("check")
            .arg(run.path())
            .arg("--baseline")
            .arg(&baseline)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let verdict = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out, verdict)
    };
    let (out, _) = check(None);
    common::assert_exit(&out, 0);
    let verdict_of = |v: &Value, name: &str| common::verdict_metric(v, name)["verdict"].clone();
    let (out, v) = check(Some("draft=1.6"));
    common::assert_exit(&out, 1);
    assert_eq!(verdict_of(&v, "spec_draft_pct"), "regressed", "{v}");
    let (out, v) = check(Some("host-gap=2"));
    common::assert_exit(&out, 1);
    assert_eq!(verdict_of(&v, "decode_host_gap_ms"), "regressed", "{v}");
    assert_ne!(verdict_of(&v, "decode_step_ms"), "regressed", "{v}");
}
