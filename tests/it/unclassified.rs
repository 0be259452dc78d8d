//! Kernels never seen before must not silently move a figure: renamed builds keep every
//! category figure, a kernel no rule knows is a finding, and a baseline's own `[[rules]]`
//! classify it (and survive `baseline update`).

use std::path::Path;

use crate::common::{self, run_ok, synth_cmd, tracegate};
use serde_json::Value;

const SCENARIOS: [&str; 4] = [
    "mi355x-dsr1-fp4-tp4",
    "b200-dsr1-fp4-tp4-ep4",
    "h200-dsr1-fp8-tp8",
    "mi325x-dsr1-fp8-tp8",
];

fn synth(dir: &Path, scenario: &str, seed: &str, inject: &[&str]) {
    let mut cmd = synth_cmd();
    cmd.args(["--scenario", scenario, "--seed", seed, "--out"])
        .arg(dir)
        .args(["--decode-steps", "8", "--ranks", "2"]);
    for i in inject {
        cmd.args(["--inject", i]);
    }
    run_ok(&mut cmd);
}

fn json_of(args: &[&str], dir: &Path) -> Value {
    let out = run_ok(
        tracegate()
            .arg(args[0])
            .arg(dir)
            .args(&args[1..])
            .args(["--format", "json"]),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn names(x: &Value) -> Vec<String> {
    x["breakdown"]["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_renamed_build_moves_no_category_figure() {
    let tmp = tempfile::tempdir().unwrap();
    for scenario in SCENARIOS {
        let (plain, renamed) = (tmp.path().join(scenario), tmp.path().join("renamed"));
        synth(&plain, scenario, "5", &[]);
        synth(&renamed, scenario, "5", &["rename"]);
        let (a, b) = (
            json_of(&["extract"], &plain),
            json_of(&["extract"], &renamed),
        );

        // The names did change: namespaces, template arguments, mangling.
        let (na, nb) = (names(&a), names(&b));
        let kept: Vec<&String> = nb.iter().filter(|n| na.contains(n)).collect();
        assert!(
            kept.iter().all(|n| n.starts_with("Memcpy")),
            "{scenario}: names not renamed: {kept:?}"
        );
        assert!(nb.iter().any(|n| n.contains("_v2::")), "{scenario}: {nb:?}");

        // Every category keeps its share (0.1 point) and time; no time falls into `other`.
        let (ca, cb) = (&a["breakdown"]["categories"], &b["breakdown"]["categories"]);
        assert_eq!(
            ca.as_object().unwrap().keys().collect::<Vec<_>>(),
            cb.as_object().unwrap().keys().collect::<Vec<_>>(),
            "{scenario}"
        );
        for (cat, share) in ca.as_object().unwrap() {
            let (pa, pb) = (
                share["pct"].as_f64().unwrap(),
                cb[cat]["pct"].as_f64().unwrap(),
            );
            assert!((pa - pb).abs() <= 0.1, "{scenario} {cat}: {pa} → {pb}");
        }
        assert_eq!(b["other_share_pct"].as_f64(), Some(0.0), "{scenario}");
        // And so does every gated figure.
        for (metric, m) in a["metrics"].as_object().unwrap() {
            let (va, vb) = (
                m["value"].as_f64().unwrap(),
                b["metrics"][metric]["value"].as_f64(),
            );
            assert!(
                vb.is_some_and(|vb| (va - vb).abs() <= 1e-9 + va.abs() * 1e-9),
                "{scenario} {metric}: {va} → {vb:?}"
            );
        }
        std::fs::remove_dir_all(&renamed).unwrap();
    }
}

#[test]
fn a_renamed_build_writes_some_names_mangled_and_tables_show_them_demangled() {
    let tmp = tempfile::tempdir().unwrap();
    synth(tmp.path(), "mi355x-dsr1-fp4-tp4", "5", &["rename"]);
    let x = json_of(&["extract"], tmp.path());
    let mangled: Vec<String> = names(&x)
        .into_iter()
        .filter(|n| n.starts_with("_Z"))
        .collect();
    assert!(mangled.len() >= 3, "{mangled:?}");
    let out = tracegate()
        .arg("report")
        .arg(tmp.path())
        .args(["--format", "table"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("aiter_v2::"), "demangled in the tables");
    for name in &mangled {
        assert!(!text.contains(name.as_str()), "{name} shown mangled");
    }
}

const MI355X_BASELINE: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The MI355X scenario at another seed than its baseline's, its first MoE GEMM renamed to a
/// name no rule knows.
fn unknown_moe_run() -> std::path::PathBuf {
    crate::common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "3",
        "--inject",
        "unknown-moe",
    ])
}

const UNKNOWN: &str = "zz_fork_ffn_blockwise_v9_kernel";

#[test]
fn a_moe_kernel_under_an_unknown_name_fails_the_check_and_is_named() {
    let run = unknown_moe_run();
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("report.md");
    let out = tracegate()
        .arg("check")
        .arg(&run)
        .arg("--baseline")
        .arg(repo(MI355X_BASELINE))
        .args(["--format", "markdown", "--output"])
        .arg(&report)
        .args(["--verdict-out"])
        .arg(tmp.path().join("verdict.json"))
        .args(["--github", "--comment", "off"])
        .output()
        .unwrap();
    common::assert_exit(&out, 1);
    let verdict: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("verdict.json")).unwrap())
            .unwrap();
    // other_pct regressed: the time of the renamed kernel left moe_gemm for `other`.
    let other = common::verdict_metric(&verdict, "other_pct");
    assert_eq!(other["verdict"], "regressed", "{other}");
    assert!(other["current"].as_f64().unwrap() > 5.0, "{other}");
    // The explanation leads with it and names the kernel.
    let e = &verdict["explanation"];
    let lead = e["lead"].as_str().unwrap();
    assert!(
        lead.contains("moved into kernels no rule classifies"),
        "{lead}"
    );
    assert!(lead.contains(UNKNOWN), "{lead}");
    assert_eq!(e["cause"]["kind"], "unclassified", "{e}");
    assert_eq!(e["unclassified"]["kernels"][0]["name"], UNKNOWN);
    assert_eq!(e["unclassified"]["kernels"][0]["new"], true);
    // The markdown says so at the top, and GitHub gets a warning naming the kernel.
    let md = std::fs::read_to_string(&report).unwrap();
    // The cause in the first line, said once: the Why names it as code, no warning repeats it.
    let first = md.lines().next().unwrap();
    assert!(first.contains(&UNKNOWN.replace('_', "\\_")), "{first}");
    assert!(md.contains(&format!("`{UNKNOWN}`")), "{md}");
    assert!(!md.contains("Unclassified kernels:"), "{md}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let warning = stdout
        .lines()
        .find(|l| l.starts_with("::warning title=unclassified kernels::"))
        .unwrap_or_else(|| panic!("no warning in {stdout}"));
    assert!(warning.contains(UNKNOWN), "{warning}");
}

#[test]
fn a_baseline_rule_classifies_the_kernel_and_baseline_update_keeps_it() {
    let run = unknown_moe_run();
    let tmp = tempfile::tempdir().unwrap();
    let baseline = tmp.path().join("mi355x.toml");
    let rule = format!(
        "\n# Our fork's MoE GEMM (internal build).\n[[rules]]\nprefix = \"{UNKNOWN}\"\ncategory = \"moe_gemm\"\nnote = \"fork MoE GEMM\"\n"
    );
    let text = std::fs::read_to_string(repo(MI355X_BASELINE)).unwrap() + &rule;
    std::fs::write(&baseline, &text).unwrap();

    let check = |baseline: &Path| {
        tracegate()
            .arg("check")
            .arg(&run)
            .arg("--baseline")
            .arg(baseline)
            .args(["--format", "json"])
            .output()
            .unwrap()
    };
    // With the rule, the kernel is a MoE GEMM again: nothing in `other`, the check passes.
    let out = check(&baseline);
    let verdict: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        verdict["explanation"]["lead"]
    );
    let other = common::verdict_metric(&verdict, "other_pct");
    assert_eq!(other["current"].as_f64(), Some(0.0));
    assert!(verdict["explanation"].get("unclassified").is_none());

    // baseline update rewrites the figures and keeps the rule, comment included.
    run_ok(
        tracegate()
            .args(["baseline", "update"])
            .arg(&run)
            .arg("--baseline")
            .arg(&baseline),
    );
    let updated = std::fs::read_to_string(&baseline).unwrap();
    assert_ne!(updated, text, "the figures were rewritten");
    assert!(updated.contains(&rule), "{updated}");
    // The renamed kernel sits in the new breakdown under its own name, as a MoE GEMM.
    assert!(updated.contains(&format!("name = \"{UNKNOWN}\"\ncategory = \"moe_gemm\"")));
    assert_eq!(check(&baseline).status.code(), Some(0));
}

#[test]
fn a_bad_rule_in_a_baseline_is_exit_2_naming_the_file_and_the_rule() {
    let run = unknown_moe_run();
    let tmp = tempfile::tempdir().unwrap();
    let baseline = tmp.path().join("bad.toml");
    let text = std::fs::read_to_string(repo(MI355X_BASELINE)).unwrap()
        + "\n[[rules]]\nprefix = \"zz\"\ncategory = \"moe_gemms\"\n";
    std::fs::write(&baseline, text).unwrap();
    let out = tracegate()
        .arg("check")
        .arg(&run)
        .arg("--baseline")
        .arg(&baseline)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml") && stderr.contains("rule 1: unknown category `moe_gemms`"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// Every synth scenario keeps `other` at most 5% of kernel time (it has none at all).
#[test]
fn every_synth_scenario_has_at_most_5_pct_in_other() {
    for scenario in SCENARIOS {
        let dir = crate::common::synth_run(&["--scenario", scenario, "--seed", "7"]);
        let x = json_of(&["extract"], &dir);
        let other = x["metrics"]["other_pct"]["value"].as_f64().unwrap();
        assert!(other <= 5.0, "{scenario}: other_pct {other}");
        assert!(x["other_share_pct"].as_f64().unwrap() <= 5.0, "{scenario}");
    }
}
