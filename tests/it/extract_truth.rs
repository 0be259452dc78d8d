//! `tracegate extract` recovers `truth.json` of every synth scenario, with and without each
//! injected regression: metrics within 0.5% (0.1 point for percentages), steps and breakdown.

use std::path::PathBuf;

use crate::common::{self, tracegate};
use serde_json::Value;
use tracegate::{MetricId, Unit};

/// The `synth` arguments of a scenario (seed 7 unless `extra` gives one) with this injection and
/// more options.
fn synth_args<'a>(scenario: &'a str, inject: Option<&'a str>, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--scenario", scenario];
    args.extend(extra);
    if !extra.contains(&"--seed") {
        args.extend(["--seed", "7"]);
    }
    if let Some(spec) = inject {
        args.extend(["--inject", spec]);
    }
    args
}

/// The shared run of [`synth_args`] (`common::synth_run`).
fn synth(scenario: &str, inject: Option<&str>, extra: &[&str]) -> PathBuf {
    common::synth_run(&synth_args(scenario, inject, extra))
}

/// Whether extract's value of a metric is close enough to the truth's: within 0.1 point for a
/// percentage, 0.5% otherwise (by the registry's unit: a new unit must be placed here).
fn close(id: MetricId, got: f64, want: f64) -> bool {
    let slack = match id.def().unit {
        Unit::Pct => 0.1,
        // Waits are measured after removing each rank's estimated clock offset, which on one host
        // is the jitter of the collectives' ends: a few tenths of a µs per call.
        Unit::Ms if id == MetricId::RankSkewMs => 0.005 * want.abs() + 0.002,
        Unit::Ms | Unit::Us | Unit::Ratio | Unit::Count | Unit::TokPerS => {
            0.005 * want.abs() + 1e-9
        }
    };
    (got - want).abs() <= slack
}

/// Whether a figure of the breakdown (ms or calls per step) is within 0.5% of the truth's.
fn close_share(got: f64, want: f64) -> bool {
    (got - want).abs() <= 0.005 * want.abs() + 1e-9
}

fn assert_recovers_truth(scenario: &str, inject: Option<&str>) {
    assert_recovers_truth_with(scenario, inject, &[]);
}

/// As [`assert_recovers_truth`], with more `synth` options (`--ranks`, `--seed`).
/// Each run is read by this test alone (`common::synth_once`).
fn assert_recovers_truth_with(scenario: &str, inject: Option<&str>, extra: &[&str]) {
    let run = common::synth_once(&synth_args(scenario, inject, extra));
    let dir = run.path();
    let out = common::extract_json_output(dir);
    assert!(
        out.status.success(),
        "extract: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let x: Value = serde_json::from_slice(&out.stdout).unwrap();
    let truth: Value = common::load_json(&dir.join("truth.json"));
    let mut problems = Vec::new();
    for (name, t) in truth["metrics"].as_object().unwrap() {
        let Some(id) = MetricId::from_name(name) else {
            problems.push(format!(
                "{name}: in the truth but no metric of the registry"
            ));
            continue;
        };
        let unit = id.def().unit.json();
        if t["unit"] != unit {
            problems.push(format!(
                "{name}: unit {} in the truth, {unit} in the registry",
                t["unit"]
            ));
        }
        for key in ["value", "p50", "p90", "p99"] {
            let Some(want) = t[key].as_f64() else {
                continue;
            };
            match x["metrics"][name][key].as_f64() {
                Some(got) if close(id, got, want) => {}
                got => problems.push(format!("{name}.{key}: extract {got:?}, truth {want}")),
            }
        }
        for (rank, want) in t["per_rank"].as_object().into_iter().flatten() {
            let got = x["metrics"][name]["per_rank"][rank].as_f64();
            if !got.is_some_and(|g| close(id, g, want.as_f64().unwrap())) {
                problems.push(format!("{name} rank {rank}: extract {got:?}, truth {want}"));
            }
        }
    }
    for name in x["metrics"].as_object().unwrap().keys() {
        if truth["metrics"].get(name).is_none() {
            problems.push(format!("{name}: extracted but absent from the truth"));
        }
    }
    for (rank, t) in truth["steps"].as_object().unwrap() {
        for key in ["decode_kept", "decode_dropped", "prefill"] {
            if x["steps"][rank][key] != t[key] {
                problems.push(format!(
                    "rank {rank} {key}: extract {}, truth {}",
                    x["steps"][rank][key], t[key]
                ));
            }
        }
    }
    for (category, t) in truth["breakdown"]["categories"].as_object().unwrap() {
        for key in ["ms_per_step", "calls_per_step"] {
            let want = t[key].as_f64().unwrap();
            let got = x["breakdown"]["categories"][category][key].as_f64();
            if !got.is_some_and(|g| close_share(g, want)) {
                problems.push(format!(
                    "breakdown {category}.{key}: extract {got:?}, truth {want}"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{scenario} {inject:?} {extra:?}:\n{}",
        problems.join("\n")
    );
}

macro_rules! truth_tests {
    ($($name:ident: $scenario:literal, $inject:expr;)*) => {
        $(
            #[test]
            fn $name() {
                assert_recovers_truth($scenario, $inject);
            }
        )*
    };
}

truth_tests! {
    mi355x_plain: "mi355x-dsr1-fp4-tp4", None;
    mi355x_allreduce: "mi355x-dsr1-fp4-tp4", Some("allreduce=1.6");
    mi355x_moe: "mi355x-dsr1-fp4-tp4", Some("moe=1.3");
    mi355x_attention: "mi355x-dsr1-fp4-tp4", Some("attention=1.5");
    mi355x_straggler: "mi355x-dsr1-fp4-tp4", Some("straggler=1.2");
    mi355x_protocol: "mi355x-dsr1-fp4-tp4", Some("protocol=2");
    mi355x_single_stream: "mi355x-dsr1-fp4-tp4", Some("single-stream=1");
    b200_plain: "b200-dsr1-fp4-tp4-ep4", None;
    b200_allreduce: "b200-dsr1-fp4-tp4-ep4", Some("allreduce=1.6");
    b200_moe: "b200-dsr1-fp4-tp4-ep4", Some("moe=1.3");
    b200_attention: "b200-dsr1-fp4-tp4-ep4", Some("attention=1.5");
    b200_straggler: "b200-dsr1-fp4-tp4-ep4", Some("straggler=1.2");
    b200_protocol: "b200-dsr1-fp4-tp4-ep4", Some("protocol=2");
    b200_single_stream: "b200-dsr1-fp4-tp4-ep4", Some("single-stream=1");
    h200_plain: "h200-dsr1-fp8-tp8", None;
    h200_allreduce: "h200-dsr1-fp8-tp8", Some("allreduce=1.6");
    h200_moe: "h200-dsr1-fp8-tp8", Some("moe=1.3");
    h200_attention: "h200-dsr1-fp8-tp8", Some("attention=1.5");
    h200_straggler: "h200-dsr1-fp8-tp8", Some("straggler=1.2");
    h200_protocol: "h200-dsr1-fp8-tp8", Some("protocol=2");
    h200_single_stream: "h200-dsr1-fp8-tp8", Some("single-stream=1");
    mi325x_plain: "mi325x-dsr1-fp8-tp8", None;
    mi325x_allreduce: "mi325x-dsr1-fp8-tp8", Some("allreduce=1.6");
    mi325x_moe: "mi325x-dsr1-fp8-tp8", Some("moe=1.3");
    mi325x_attention: "mi325x-dsr1-fp8-tp8", Some("attention=1.5");
    mi325x_straggler: "mi325x-dsr1-fp8-tp8", Some("straggler=1.2");
    mi325x_protocol: "mi325x-dsr1-fp8-tp8", Some("protocol=2");
    mi325x_single_stream: "mi325x-dsr1-fp8-tp8", Some("single-stream=1");
}

// Eager serving loops: no annotation, no whole-forward graph, forward passes 0.1 to 4 ms apart,
// a prefill every 8 decode steps; the steps come from the gaps and the kinds from GEMM M (eager)
// or the walls (piecewise graphs, whose decode GEMMs have no op).
truth_tests! {
    vllm_eager_plain: "vllm-eager", None;
    vllm_eager_allreduce: "vllm-eager", Some("allreduce=1.6");
    vllm_eager_moe: "vllm-eager", Some("moe=1.3");
    vllm_eager_attention: "vllm-eager", Some("attention=1.5");
    vllm_eager_straggler: "vllm-eager", Some("straggler=1.2");
    vllm_eager_protocol: "vllm-eager", Some("protocol=2");
    vllm_piecewise_plain: "vllm-piecewise", None;
    vllm_piecewise_allreduce: "vllm-piecewise", Some("allreduce=1.6");
}

// Time between forwards (issue 37): the iteration, the host gap, slow iterations below the
// stall line, and the batch and step mix the annotations say, on every scenario.
truth_tests! {
    mi355x_host_gap: "mi355x-dsr1-fp4-tp4", Some("host-gap=2");
    mi355x_slow: "mi355x-dsr1-fp4-tp4", Some("slow=5:1.8");
    mi355x_relabel_mixed: "mi355x-dsr1-fp4-tp4", Some("relabel=mixed:0.5:1.5");
    mi355x_relabel_idle: "mi355x-dsr1-fp4-tp4", Some("relabel=idle:0.5:1.5");
    mi355x_batch: "mi355x-dsr1-fp4-tp4", Some("batch=32");
    b200_host_gap: "b200-dsr1-fp4-tp4-ep4", Some("host-gap=2");
    h200_host_gap: "h200-dsr1-fp8-tp8", Some("host-gap=8");
    mi325x_host_gap: "mi325x-dsr1-fp8-tp8", Some("host-gap=2");
    vllm_eager_host_gap: "vllm-eager", Some("host-gap=10");
    vllm_piecewise_host_gap: "vllm-piecewise", Some("host-gap=3");
}

// Speculative decoding (SGLang MTP, issue 38): each decode iteration is the draft forwards, the
// target verify and the draft extend, gated whole.
truth_tests! {
    mi355x_mtp_plain: "mi355x-dsr1-fp4-tp4-mtp", None;
    mi355x_mtp_draft: "mi355x-dsr1-fp4-tp4-mtp", Some("draft=1.5");
    mi355x_mtp_moe: "mi355x-dsr1-fp4-tp4-mtp", Some("moe=1.3");
    mi355x_mtp_host_gap: "mi355x-dsr1-fp4-tp4-mtp", Some("host-gap=2");
}

// Stock vLLM v0.16+ (issue 38): the default execute_context_… annotation gives the steps, the
// frontend's trace beside the workers is skipped.
truth_tests! {
    vllm_stock_plain: "vllm-stock", None;
    vllm_stock_relabel: "vllm-stock", Some("relabel=mixed:0.25");
    vllm_stock_batch: "vllm-stock", Some("batch=32");
    vllm_stock_moe: "vllm-stock", Some("moe=1.2");
}

#[test]
fn vllm_eager_on_2_4_and_8_ranks_and_several_seeds() {
    for ranks in ["2", "4", "8"] {
        for seed in ["1", "2", "3"] {
            assert_recovers_truth_with("vllm-eager", None, &["--ranks", ranks, "--seed", seed]);
        }
    }
}

#[test]
fn vllm_piecewise_gives_one_step_per_forward_on_several_seeds() {
    for (ranks, seed) in [("2", "11"), ("8", "12")] {
        assert_recovers_truth_with("vllm-piecewise", None, &["--ranks", ranks, "--seed", seed]);
    }
}

/// `report --format json`'s per-rank split of the decode step (compute, wait, transfer, medians
/// per step over the steps every rank kept) against `truth.json`'s `balance`, within 2%.
fn assert_balance_matches_truth(scenario: &str, inject: Option<&str>) -> Value {
    let dir = synth(scenario, inject, &[]);
    let out = tracegate()
        .arg("report")
        .arg(&dir)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let truth: Value = common::load_json(&dir.join("truth.json"));
    let b = &report["balance"];
    assert_eq!(
        b["matched_steps"], truth["balance"]["matched_steps"],
        "{scenario}"
    );
    let mut problems = Vec::new();
    for r in b["ranks"].as_array().unwrap() {
        let rank = r["rank"].to_string();
        let t = &truth["balance"]["ranks"][&rank];
        for key in [
            "compute_ms",
            "comm_ms",
            "wait_ms",
            "transfer_ms",
            "last_arrival_pct",
        ] {
            let (got, want) = (r[key].as_f64(), t[key].as_f64().unwrap());
            // A rank that arrives last nearly always waits ~0: 2% of nothing is nothing, so
            // allow a µs there.
            if !got.is_some_and(|g| (g - want).abs() <= 0.02 * want.abs() + 1e-3) {
                problems.push(format!("rank {rank} {key}: report {got:?}, truth {want}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{scenario} {inject:?}:\n{}",
        problems.join("\n")
    );
    report
}

#[test]
fn per_rank_compute_wait_and_transfer_match_the_truth_on_every_scenario() {
    for scenario in [
        "mi355x-dsr1-fp4-tp4",
        "b200-dsr1-fp4-tp4-ep4",
        "h200-dsr1-fp8-tp8",
        "mi325x-dsr1-fp8-tp8",
    ] {
        assert_balance_matches_truth(scenario, None);
        assert_balance_matches_truth(scenario, Some("straggler=1.2"));
    }
}

/// H200's rank-0 asymmetry read the way the model makes it: rank 0 arrives first and waits in
/// every twoshot call; ranks 1-7, launch-bound, are the late arrivals.
#[test]
fn h200_reports_rank_0_as_the_rank_that_waits_and_ranks_1_to_7_as_late_arrivals() {
    let report = assert_balance_matches_truth("h200-dsr1-fp8-tp8", None);
    let b = &report["balance"];
    assert_eq!(b["waits_most_rank"], 0);
    let ranks = b["ranks"].as_array().unwrap();
    let last = |r: usize| ranks[r]["last_arrival_pct"].as_f64().unwrap();
    let wait = |r: usize| ranks[r]["wait_ms"].as_f64().unwrap();
    assert!(last(0) < 2.0, "rank 0 arrives last at {}%", last(0));
    for r in 1..8 {
        assert!(last(r) > 5.0, "rank {r} arrives last at {}%", last(r));
        assert!(
            wait(0) > 50.0 * wait(r),
            "rank 0 waits {}, rank {r} {}",
            wait(0),
            wait(r)
        );
    }
    assert_ne!(b["last_arrival_rank"], 0);
}
