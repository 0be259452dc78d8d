//! `tracegate check` against the shipped baselines: fresh runs pass, injected regressions fail
//! with the cause named, changes inside tolerance pass, and twenty seeds raise no false alarm.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::common::{self, tracegate};
use serde_json::Value;

struct Scenario {
    name: &'static str,
    baseline: &'static str,
    allreduce_kernel: &'static str,
    /// The allreduce kernel whose time grows most when every transfer is slower (H200: the two
    /// 13.6 ms ring allreduces outweigh 121 twoshot calls).
    allreduce_leader: &'static str,
    moe_kernel: &'static str,
    protocol_new: &'static str,
    /// Attention is a small share of some steps: the factor that moves the step past 3%.
    attention_factor: f64,
    /// An allreduce slowdown inside every tolerance (H200 ranks wait on rank 0's allreduce, so
    /// rank skew moves fastest there).
    allreduce_inside: &'static str,
}

const SCENARIOS: [Scenario; 6] = [
    Scenario {
        name: "mi355x-dsr1-fp4-tp4",
        baseline: "dsr1-fp4-mi355x-sglang-tp4-conc64.toml",
        allreduce_kernel: "cross_device_reduce_2stage",
        allreduce_leader: "cross_device_reduce_2stage",
        moe_kernel: "moe_mxgemm",
        protocol_new: "cross_device_reduce_1stage",
        attention_factor: 2.0,
        allreduce_inside: "allreduce=1.02",
    },
    Scenario {
        name: "b200-dsr1-fp4-tp4-ep4",
        baseline: "dsr1-fp4-b200-sglang-tp4-ep4-conc64.toml",
        allreduce_kernel: "oneshot_lamport",
        allreduce_leader: "trtllm_allreduce_fusion",
        moe_kernel: "bmm_E2m1",
        protocol_new: "twoshot_sync",
        attention_factor: 2.0,
        allreduce_inside: "allreduce=1.02",
    },
    Scenario {
        name: "h200-dsr1-fp8-tp8",
        baseline: "dsr1-fp8-h200-sglang-tp8-conc64.toml",
        allreduce_kernel: "twoshot_sync",
        allreduce_leader: "AllReduce_Sum",
        moe_kernel: "fused_moe_kernel",
        protocol_new: "oneshot_lamport",
        attention_factor: 8.0,
        allreduce_inside: "allreduce=1.005",
    },
    Scenario {
        name: "mi325x-dsr1-fp8-tp8",
        baseline: "dsr1-fp8-mi325x-sglang-tp8-conc64.toml",
        allreduce_kernel: "cross_device_reduce_2stage",
        allreduce_leader: "cross_device_reduce_2stage",
        moe_kernel: "fmoe_bf16_blockscaleFp8",
        protocol_new: "cross_device_reduce_1stage",
        attention_factor: 2.0,
        allreduce_inside: "allreduce=1.02",
    },
    // Eager serving loops on the MI355X model: steps found from the gaps, kinds from GEMM M
    // (eager) or the walls (piecewise).
    Scenario {
        name: "vllm-eager",
        baseline: "vllm/dsr1-fp4-mi355x-vllm-eager-tp4-conc64.toml",
        allreduce_kernel: "cross_device_reduce_2stage",
        allreduce_leader: "cross_device_reduce_2stage",
        moe_kernel: "moe_mxgemm",
        protocol_new: "cross_device_reduce_1stage",
        attention_factor: 2.0,
        allreduce_inside: "allreduce=1.02",
    },
    Scenario {
        name: "vllm-piecewise",
        baseline: "vllm/dsr1-fp4-mi355x-vllm-piecewise-tp4-conc64.toml",
        allreduce_kernel: "cross_device_reduce_2stage",
        allreduce_leader: "cross_device_reduce_2stage",
        moe_kernel: "moe_mxgemm",
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

/// One `#[test]` per scenario for a check over `SCENARIOS`, in a module named after it
/// (`check::twenty_seeds_raise_no_false_alarm_and_name_no_rank::h200`), so that the slow ones run
/// side by side instead of one after another.
macro_rules! on_each_scenario {
    ($check:ident) => {
        on_each_scenario!($check:
            mi355x 0, b200 1, h200 2, mi325x 3, vllm_eager 4, vllm_piecewise 5);
    };
    // The test named `$name` checks `SCENARIOS[$index]`.
    ($check:ident: $($name:ident $index:literal),*) => {
        mod $check {
            $(
                #[test]
                fn $name() {
                    super::$check(&super::SCENARIOS[$index]);
                }
            )*
        }
    };
}

/// A run of `scenario` with this seed and injection, read once (`common::synth_once`): no two
/// checks here read the same run.
fn synth(scenario: &str, seed: u64, inject: Option<&str>) -> tempfile::TempDir {
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
    common::synth_once(&args)
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
        .arg(run.path())
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
    common::verdict_metric(&c.verdict, metric)["verdict"]
        .as_str()
        .unwrap()
}

fn lead(c: &Checked) -> &str {
    c.verdict["explanation"]["lead"].as_str().unwrap()
}

fn escaped(name: &str) -> String {
    name.replace('_', "\\_")
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
        // A picture of the decode steps against the baseline's band (GitHub renders mermaid).
        assert!(
            c.markdown.contains("```mermaid\n") && c.markdown.contains("\nxychart-beta\n"),
            "{} {spec}: no chart",
            s.name
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
                lead(c).contains(s.allreduce_leader),
                "{}: {}",
                s.name,
                lead(c)
            );
            // The cause: the collective itself, or the comm category it leads.
            let cause = &c.verdict["explanation"]["cause"];
            assert!(
                cause["kind"] == "slower_collective"
                    || (cause["kind"] == "category" && cause["category"] == "comm"),
                "{}: {cause}",
                s.name
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

/// A MoE GEMM under a name no rule knows (a fork's build): its time leaves `moe_gemm` for
/// `other`, and `other_pct` regressing fails the check on every scenario, eager loops included.
#[test]
fn an_unknown_moe_kernel_is_caught_as_unclassified_time() {
    assert_caught(
        |_| "unknown-moe".into(),
        "other_pct",
        |s, c| {
            assert!(
                lead(c).contains("moved into kernels no rule classifies"),
                "{}: {}",
                s.name,
                lead(c)
            );
        },
    );
}

#[test]
fn slower_attention_is_caught_and_attention_named() {
    assert_caught(
        |s| format!("attention={}", s.attention_factor),
        "decode_step_ms",
        |s, c| {
            let cause = &c.verdict["explanation"]["cause"];
            assert_eq!(cause["kind"], "category", "{}: {cause}", s.name);
            assert_eq!(cause["category"], "attention", "{}: {cause}", s.name);
            assert!(
                lead(c).starts_with("attention moved by +"),
                "{}: {}",
                s.name,
                lead(c)
            );
        },
    );
}

/// The baseline an 8-rank run of `s` is checked against: the shipped one for the 8-rank
/// scenarios; for the 4-rank ones, `baseline new` from a clean 8-rank run at seed 1 (as
/// `baselines/make.sh` makes the shipped ones), made once per test process.
fn eight_rank_baseline(s: &Scenario) -> PathBuf {
    if s.name.contains("tp8") {
        return baseline(s.baseline);
    }
    static MADE: OnceLock<Mutex<HashMap<&'static str, PathBuf>>> = OnceLock::new();
    let mut made = MADE.get_or_init(Mutex::default).lock().unwrap();
    made.entry(s.name)
        .or_insert_with(|| {
            let run = synth_ranks(s.name, 1, 8, None);
            let path = common::process_dir("baselines-8-ranks").join(format!("{}.toml", s.name));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let out = tracegate()
                .args(["baseline", "new"])
                .arg(run.path())
                .arg("--baseline")
                .arg(&path)
                .args(["--force", "--tp", "8", "--moe-layers", "58"])
                .output()
                .unwrap();
            common::assert_exit(&out, 0);
            path
        })
        .clone()
}

/// A run of `scenario` on `ranks` ranks, read once (`common::synth_once`).
fn synth_ranks(scenario: &str, seed: u64, ranks: u32, inject: Option<&str>) -> tempfile::TempDir {
    let (seed, ranks) = (seed.to_string(), ranks.to_string());
    let mut args = vec![
        "--scenario",
        scenario,
        "--python-functions-per-step",
        "0",
        "--seed",
        &seed,
        "--ranks",
        &ranks,
    ];
    if let Some(spec) = inject {
        args.extend(["--inject", spec]);
    }
    common::synth_once(&args)
}

/// An 8-rank run of `s` at seed 11 with `inject`, checked against its clean baseline; and its truth.
fn check_eight_ranks(s: &Scenario, inject: &str) -> (Checked, Value) {
    let run = synth_ranks(s.name, 11, 8, Some(inject));
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(run.path().join("truth.json")).unwrap())
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let verdict_path = dir.path().join("verdict.json");
    let out = tracegate()
        .arg("check")
        .arg(run.path())
        .arg("--baseline")
        .arg(eight_rank_baseline(s))
        .arg("--verdict-out")
        .arg(&verdict_path)
        .output()
        .unwrap();
    let verdict = serde_json::from_str(&std::fs::read_to_string(&verdict_path).unwrap())
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let c = Checked {
        code: out.status.code().unwrap(),
        markdown: String::from_utf8(out.stdout).unwrap(),
        verdict,
    };
    (c, truth)
}

on_each_scenario!(a_straggler_is_caught_and_its_rank_and_category_named_first);
/// A straggler makes the others wait in every allreduce: on 8-rank runs of every scenario, one
/// rank's compute 1.03x and 1.15x slower is a regression (exit 1, even where the decode step
/// alone is too noisy to judge), `rank_skew_ms` regressed, and the explanation's first sentence
/// names that rank (from the truth) and the compute category it slowed in most (the largest
/// compute category, since every compute kernel of the rank slows alike), not the allreduce.
fn a_straggler_is_caught_and_its_rank_and_category_named_first(s: &Scenario) {
    for spec in ["straggler=1.03", "straggler=1.15", "straggler=2:1.15"] {
        let (c, truth) = check_eight_ranks(s, spec);
        let what = format!("{} {spec}", s.name);
        assert_eq!(c.code, 1, "{what}: {}", c.markdown);
        assert_eq!(verdict_of(&c, "rank_skew_ms"), "regressed", "{what}");
        let rank = truth["straggler_rank"]
            .as_u64()
            .expect("truth names the straggler");
        let category = truth["breakdown"]["categories"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(c, _)| *c != "comm" && *c != "memcpy")
            .max_by(|a, b| {
                a.1["ms_per_step"]
                    .as_f64()
                    .unwrap_or(0.0)
                    .total_cmp(&b.1["ms_per_step"].as_f64().unwrap_or(0.0))
            })
            .map(|(c, _)| c.clone())
            .unwrap();
        let first = format!("Rank {rank} is the straggler: its compute per decode step is +");
        assert!(lead(&c).starts_with(&first), "{what}: {}", lead(&c));
        let (sentence, support) = lead(&c).split_once(". ").unwrap();
        assert!(
            sentence.contains(&format!("most of it in {category}, led by")),
            "{what}: {category}: {}",
            lead(&c)
        );
        assert!(support.contains("the other ranks wait for it in allreduce: +"));
        assert_eq!(c.verdict["explanation"]["cause"]["kind"], "straggler");
        assert!(c
            .markdown
            .contains(&format!("Rank {rank} is the straggler")));
        assert_eq!(c.verdict["explanation"]["straggler"]["rank"], rank);
    }
}

on_each_scenario!(a_slower_transfer_is_caught_and_the_collective_named_not_a_rank);
/// The other way to be slower: every allreduce's transfer 1.2x, no straggler. On 8-rank runs of
/// every scenario: exit 1, `allreduce_transfer_us` regressed, the explanation names the
/// allreduce kernel and no rank.
fn a_slower_transfer_is_caught_and_the_collective_named_not_a_rank(s: &Scenario) {
    let (c, _) = check_eight_ranks(s, "allreduce=1.2");
    assert_eq!(c.code, 1, "{}: {}", s.name, c.markdown);
    assert_eq!(
        verdict_of(&c, "allreduce_transfer_us"),
        "regressed",
        "{}",
        s.name
    );
    assert!(
        lead(&c).contains("The allreduce itself is slower")
            && lead(&c).contains(s.allreduce_leader),
        "{}: {}",
        s.name,
        lead(&c)
    );
    assert!(!lead(&c).contains("Rank "), "{}: {}", s.name, lead(&c));
    assert!(c.verdict["explanation"]["straggler"].is_null());
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

on_each_scenario!(changes_inside_tolerance_pass);
fn changes_inside_tolerance_pass(s: &Scenario) {
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

on_each_scenario!(twenty_seeds_raise_no_false_alarm_and_name_no_rank);
/// Twenty clean seeds of every scenario against the shipped baselines: a pass (with its ✅
/// headline and no chart) and no rank named as a straggler.
fn twenty_seeds_raise_no_false_alarm_and_name_no_rank(s: &Scenario) {
    for seed in 100..120 {
        let c = check(s, seed, None);
        assert_eq!(c.code, 0, "{} seed {seed}: {}", s.name, c.markdown);
        assert!(c.markdown.starts_with("✅ **PASS** · "), "{}", c.markdown);
        assert!(!c.markdown.contains("```mermaid"), "a pass draws no chart");
        assert!(
            c.verdict["explanation"]["straggler"].is_null() && !lead(&c).contains("Rank "),
            "{} seed {seed}: {}",
            s.name,
            lead(&c)
        );
    }
}
