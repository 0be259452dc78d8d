//! `tracegate check` against the shipped baselines: fresh runs pass, injected regressions fail
//! with the cause named, changes inside tolerance pass, and twenty seeds raise no false alarm.

use std::path::{Path, PathBuf};

use crate::common::{self, tracegate};
use serde_json::Value;

struct Scenario {
    name: &'static str,
    baseline: &'static str,
    allreduce_kernel: &'static str,
    moe_kernel: &'static str,
    protocol_new: &'static str,
    /// Attention is a small share of some steps: the factor that moves the step past 3%.
    attention_factor: f64,
    /// An allreduce slowdown inside every tolerance (H200 ranks wait on rank 0's allreduce, so
    /// rank skew moves fastest there).
    allreduce_inside: &'static str,
}

const SCENARIOS: [Scenario; 4] = [
    Scenario {
        name: "mi355x-dsr1-fp4-tp4",
        baseline: "dsr1-fp4-mi355x-sglang-tp4-conc64.toml",
        allreduce_kernel: "cross_device_reduce_2stage",
        moe_kernel: "moe_mxgemm",
        protocol_new: "cross_device_reduce_1stage",
        attention_factor: 2.0,
        allreduce_inside: "allreduce=1.02",
    },
    Scenario {
        name: "b200-dsr1-fp4-tp4-ep4",
        baseline: "dsr1-fp4-b200-sglang-tp4-ep4-conc64.toml",
        allreduce_kernel: "oneshot_lamport",
        moe_kernel: "bmm_E2m1",
        protocol_new: "twoshot_sync",
        attention_factor: 2.0,
        allreduce_inside: "allreduce=1.02",
    },
    Scenario {
        name: "h200-dsr1-fp8-tp8",
        baseline: "dsr1-fp8-h200-sglang-tp8-conc64.toml",
        allreduce_kernel: "twoshot_sync",
        moe_kernel: "fused_moe_kernel",
        protocol_new: "oneshot_lamport",
        attention_factor: 8.0,
        allreduce_inside: "allreduce=1.005",
    },
    Scenario {
        name: "mi325x-dsr1-fp8-tp8",
        baseline: "dsr1-fp8-mi325x-sglang-tp8-conc64.toml",
        allreduce_kernel: "cross_device_reduce_2stage",
        moe_kernel: "fmoe_bf16_blockscaleFp8",
        protocol_new: "cross_device_reduce_1stage",
        attention_factor: 2.0,
        allreduce_inside: "allreduce=1.02",
    },
];

fn baseline(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("baselines")
        .join(file)
}

/// The shared run of `scenario` with this seed and injection (`common::synth_run`).
fn synth(scenario: &str, seed: u64, inject: Option<&str>) -> PathBuf {
    let seed = seed.to_string();
    let mut args = vec![
        "--scenario",
        scenario,
        "--python-functions-per-step",
        "0",
        "--seed",
        &seed,
    ];
    if let Some(spec) = inject {
        args.extend(["--inject", spec]);
    }
    common::synth_run(&args)
}

struct Checked {
    code: i32,
    markdown: String,
    verdict: Value,
}

fn check(s: &Scenario, seed: u64, inject: Option<&str>) -> Checked {
    let run = synth(s.name, seed, inject);
    let dir = tempfile::tempdir().unwrap();
    let verdict_path = dir.path().join("verdict.json");
    let out = tracegate()
        .arg("check")
        .arg(run)
        .arg("--baseline")
        .arg(baseline(s.baseline))
        .arg("--verdict-out")
        .arg(&verdict_path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let verdict = serde_json::from_str(&std::fs::read_to_string(&verdict_path).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no verdict JSON: {stderr}"));
    Checked {
        code: out.status.code().unwrap(),
        markdown: String::from_utf8(out.stdout).unwrap(),
        verdict,
    }
}

fn verdict_of<'a>(c: &'a Checked, metric: &str) -> &'a str {
    c.verdict["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == metric)
        .unwrap()["verdict"]
        .as_str()
        .unwrap()
}

fn lead(c: &Checked) -> &str {
    c.verdict["explanation"]["lead"].as_str().unwrap()
}

fn escaped(name: &str) -> String {
    name.replace('_', "\\_")
}

#[test]
fn a_fresh_run_of_every_scenario_passes_its_baseline() {
    for s in &SCENARIOS {
        let c = check(s, 5, None);
        assert_eq!(c.code, 0, "{}: {}", s.name, c.markdown);
        assert!(c.markdown.starts_with("✅ **tracegate**"), "{}", c.markdown);
    }
}

/// One injection on every scenario: exit 1, the metric named regressed in the markdown, and
/// `cause` found in the explanation.
fn assert_caught(
    inject: impl Fn(&Scenario) -> String,
    metric: &str,
    cause: impl Fn(&Scenario, &Checked),
) {
    for s in &SCENARIOS {
        let spec = inject(s);
        let c = check(s, 11, Some(&spec));
        assert_eq!(c.code, 1, "{} {spec}: {}", s.name, c.markdown);
        assert_eq!(verdict_of(&c, metric), "regressed", "{} {spec}", s.name);
        assert!(
            c.markdown
                .contains(&format!("| ❌ | {} |", escaped(metric))),
            "{} {spec}: {}",
            s.name,
            c.markdown
        );
        cause(s, &c);
    }
}

#[test]
fn slower_allreduce_is_caught_and_the_allreduce_kernel_named() {
    assert_caught(
        |_| "allreduce=1.5".into(),
        "allreduce_us",
        |s, c| {
            assert!(
                lead(c).contains(s.allreduce_kernel),
                "{}: {}",
                s.name,
                lead(c)
            );
            assert!(
                lead(c).contains("Most of it is comm"),
                "{}: {}",
                s.name,
                lead(c)
            );
        },
    );
}

#[test]
fn slower_moe_is_caught_and_the_moe_kernel_named() {
    assert_caught(
        |_| "moe=1.3".into(),
        "moe_us_per_layer",
        |s, c| {
            assert!(lead(c).contains(s.moe_kernel), "{}: {}", s.name, lead(c));
        },
    );
}

#[test]
fn slower_attention_is_caught_and_attention_named() {
    assert_caught(
        |s| format!("attention={}", s.attention_factor),
        "decode_step_ms",
        |s, c| {
            assert!(
                lead(c).contains("Most of it is attention"),
                "{}: {}",
                s.name,
                lead(c)
            );
        },
    );
}

#[test]
fn a_straggler_is_caught_and_its_rank_named() {
    assert_caught(
        |_| "straggler=1.15".into(),
        "rank_skew_ms",
        |s, c| {
            let dir = synth(s.name, 11, Some("straggler=1.15"));
            let truth: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).unwrap())
                    .unwrap();
            let rank = truth["straggler_rank"]
                .as_u64()
                .expect("truth names the straggler");
            assert!(
                lead(c).contains(&format!("Rank {rank} straggles")),
                "{}: {}",
                s.name,
                lead(c)
            );
            assert_eq!(c.verdict["explanation"]["straggler"]["rank"], rank);
        },
    );
}

#[test]
fn a_protocol_change_is_caught_with_old_and_new_kernel_names() {
    assert_caught(
        |_| "protocol=2".into(),
        "allreduce_us",
        |s, c| {
            let e = &c.verdict["explanation"];
            let has = |list: &str, needle: &str| {
                e[list]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n.as_str().unwrap().contains(needle))
            };
            assert!(has("appeared", s.protocol_new), "{}: {e}", s.name);
            assert!(has("vanished", s.allreduce_kernel), "{}: {e}", s.name);
            assert!(
                c.markdown.contains("Kernels that appeared or vanished"),
                "{}",
                c.markdown
            );
            let diff = e["kernel_diff"].as_str().unwrap();
            assert!(
                diff.lines()
                    .any(|l| l.starts_with('+') && l.contains(s.protocol_new)),
                "{diff}"
            );
            assert!(
                diff.lines()
                    .any(|l| l.starts_with('-') && l.contains(s.allreduce_kernel)),
                "{diff}"
            );
        },
    );
}

#[test]
fn changes_inside_tolerance_pass() {
    for s in &SCENARIOS {
        for spec in [
            s.allreduce_inside,
            "moe=1.01",
            "attention=1.05",
            "straggler=1.003",
        ] {
            let c = check(s, 13, Some(spec));
            assert_eq!(c.code, 0, "{} {spec}: {}", s.name, c.markdown);
        }
    }
}

#[test]
fn twenty_seeds_raise_no_false_alarm() {
    for s in &SCENARIOS {
        for seed in 100..120 {
            let c = check(s, seed, None);
            assert_eq!(c.code, 0, "{} seed {seed}: {}", s.name, c.markdown);
        }
    }
}
