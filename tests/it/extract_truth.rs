//! `tracegate extract` recovers `truth.json` of every synth scenario, with and without each
//! injected regression: metrics within 0.5% (0.1 point for percentages), steps and breakdown.

use std::path::PathBuf;

use crate::common::{self, tracegate};
use serde_json::Value;

/// The shared run of a scenario at seed 7 with this injection (`common::synth_run`).
fn synth(scenario: &str, inject: Option<&str>) -> PathBuf {
    let mut args = vec!["--scenario", scenario, "--seed", "7"];
    if let Some(spec) = inject {
        args.extend(["--inject", spec]);
    }
    common::synth_run(&args)
}

fn close(name: &str, got: f64, want: f64) -> bool {
    if name.ends_with("_pct") {
        (got - want).abs() <= 0.1
    } else {
        (got - want).abs() <= 0.005 * want.abs() + 1e-9
    }
}

fn assert_recovers_truth(scenario: &str, inject: Option<&str>) {
    let dir = synth(scenario, inject);
    let out = tracegate()
        .arg("extract")
        .arg(&dir)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "extract: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let x: Value = serde_json::from_slice(&out.stdout).unwrap();
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap()).unwrap();
    let mut problems = Vec::new();
    for (name, t) in truth["metrics"].as_object().unwrap() {
        for key in ["value", "p50", "p90", "p99"] {
            let Some(want) = t[key].as_f64() else {
                continue;
            };
            match x["metrics"][name][key].as_f64() {
                Some(got) if close(name, got, want) => {}
                got => problems.push(format!("{name}.{key}: extract {got:?}, truth {want}")),
            }
        }
        for (rank, want) in t["per_rank"].as_object().into_iter().flatten() {
            let got = x["metrics"][name]["per_rank"][rank].as_f64();
            if !got.is_some_and(|g| close(name, g, want.as_f64().unwrap())) {
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
            if !got.is_some_and(|g| close(key, g, want)) {
                problems.push(format!(
                    "breakdown {category}.{key}: extract {got:?}, truth {want}"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{scenario} {inject:?}:\n{}",
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
