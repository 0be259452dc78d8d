//! `synth --with-stack` read back: each graph scenario's captures are found in
//! `capture_traces/` beside the run and joined to its replays (by `graph node id` where the
//! scenario writes them, else by kernel name), and `report`'s code view gives every decode kernel
//! the op, shapes and scope truth.json's `sites` says; a check of a slower MoE names its site.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::common::{
    assert_exit, baseline_new, check_with, load_json, run_ok, synth_once, tracegate,
};

const BY_NODE: &str = "graph node id";
const BY_NAME: &str = "kernel name in capture order";

/// A run of `scenario` with stacks on `ranks` ranks, `steps` steady decode steps, read once.
fn stacked_on(scenario: &str, ranks: &str, steps: &str, extra: &[&str]) -> tempfile::TempDir {
    let mut args = vec![
        "--scenario",
        scenario,
        "--with-stack",
        "--ranks",
        ranks,
        "--decode-steps",
        steps,
        "--python-functions-per-step",
        "0",
        "--seed",
        "1",
    ];
    args.extend_from_slice(extra);
    synth_once(&args)
}

/// A small run of `scenario` with stacks: 2 ranks, 3 steady decode steps.
fn stacked(scenario: &str) -> tempfile::TempDir {
    stacked_on(scenario, "2", "3", &[])
}

/// `report --format json` of a run.
fn report_json(run: &Path) -> Value {
    let out = run_ok(
        tracegate()
            .arg("report")
            .arg(run)
            .args(["--format", "json"]),
    );
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

type Site = (String, String, String);

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// The (op, shapes, scope) of each row of the code view.
fn op_rows(code: &Value) -> BTreeSet<Site> {
    code["ops"]
        .as_array()
        .expect("code.ops")
        .iter()
        .map(|o| (text(&o["op"]), text(&o["shapes"]), text(&o["scope"])))
        .collect()
}

/// The kernels of truth.json's `sites`, with their (op, shapes, scope).
fn truth_sites(truth: &Value) -> Vec<(String, Site)> {
    truth["sites"]
        .as_array()
        .expect("truth.json sites")
        .iter()
        .map(|s| {
            let site = (text(&s["op"]), text(&s["shapes"]), text(&s["scope"]));
            (text(&s["kernel"]), site)
        })
        .collect()
}

/// The run's graph replays are joined as truth.json says (every kernel matched), and the code
/// view's rows are exactly the sites truth.json gives the decode kernels, each row's lead kernel
/// at its own site.
fn sites_match_truth(scenario: &str) {
    let dir = stacked(scenario);
    let truth = load_json(&dir.path().join("truth.json"));
    let report = report_json(dir.path());
    let code = &report["code"];
    let graph = code["graph"].as_array().expect("code.graph");
    match truth["capture_join"].as_str() {
        Some(method) => {
            assert_eq!(graph.len(), 2, "{scenario}: {graph:?}");
            for g in graph {
                assert_eq!(g["status"], "joined", "{scenario}: {g}");
                assert_eq!(g["method"], method, "{scenario}: {g}");
                assert_eq!(g["match_pct"].as_f64(), Some(100.0), "{scenario}: {g}");
                let file = text(&g["file"]);
                assert!(file.contains("capture_traces"), "{scenario}: {g}");
            }
        }
        // A piecewise run's graphs have no capture; an eager run has none.
        None => assert!(
            graph.iter().all(|g| g["status"] == "not_joined"),
            "{graph:?}"
        ),
    }
    let sites = truth_sites(&truth);
    assert!(!sites.is_empty(), "{scenario}");
    let want: BTreeSet<Site> = sites.iter().map(|(_, s)| s.clone()).collect();
    assert_eq!(op_rows(code), want, "{scenario}");
    for row in code["ops"].as_array().unwrap() {
        let kernel = text(&row["kernel"]);
        let (_, site) = sites
            .iter()
            .find(|(k, _)| *k == kernel)
            .unwrap_or_else(|| panic!("{scenario}: {kernel} has no site in truth.json"));
        let got = (text(&row["op"]), text(&row["shapes"]), text(&row["scope"]));
        assert_eq!(&got, site, "{scenario}: {kernel}");
    }
}

#[test]
fn mi355x_sites_match_truth() {
    sites_match_truth("mi355x-dsr1-fp4-tp4");
}

#[test]
fn b200_sites_match_truth() {
    sites_match_truth("b200-dsr1-fp4-tp4-ep4");
}

#[test]
fn h200_sites_match_truth() {
    sites_match_truth("h200-dsr1-fp8-tp8");
}

#[test]
fn mi325x_sites_match_truth() {
    sites_match_truth("mi325x-dsr1-fp8-tp8");
}

#[test]
fn speculative_sites_match_truth_over_both_graphs_and_the_eager_extend() {
    sites_match_truth("mi355x-dsr1-fp4-tp4-mtp");
}

#[test]
fn vllm_stock_sites_match_truth() {
    sites_match_truth("vllm-stock");
}

#[test]
fn eager_sites_match_truth() {
    sites_match_truth("vllm-eager");
}

#[test]
fn piecewise_eager_attention_sites_match_truth() {
    sites_match_truth("vllm-piecewise");
}

#[test]
fn the_scenarios_with_graph_node_ids_join_by_them_and_the_others_by_kernel_name() {
    for (scenario, method) in [
        ("mi355x-dsr1-fp4-tp4", BY_NODE),
        ("h200-dsr1-fp8-tp8", BY_NODE),
        ("mi355x-dsr1-fp4-tp4-mtp", BY_NODE),
        ("b200-dsr1-fp4-tp4-ep4", BY_NAME),
        ("mi325x-dsr1-fp8-tp8", BY_NAME),
        ("vllm-stock", BY_NAME),
    ] {
        let dir = stacked_on(scenario, "1", "3", &[]);
        let truth = load_json(&dir.path().join("truth.json"));
        assert_eq!(truth["capture_join"], method, "{scenario}");
        let report = report_json(dir.path());
        let graph = &report["code"]["graph"][0];
        assert_eq!(graph["method"], method, "{scenario}: {graph}");
        // The ids are on both sides, or on neither.
        let file = text(&truth["files"][0]);
        let trace = std::fs::read_to_string(dir.path().join(&file)).unwrap();
        let capture = text(&truth["capture_files"][0]);
        let captured =
            std::fs::read_to_string(dir.path().join("capture_traces").join(&capture)).unwrap();
        let ids = method == BY_NODE;
        assert_eq!(trace.contains("\"graph node id\""), ids, "{scenario}");
        assert_eq!(captured.contains("\"graph node id\""), ids, "{scenario}");
    }
}

#[test]
fn a_slower_moe_fails_the_check_and_its_first_line_names_the_moe_scope_and_shape() {
    let base = stacked_on("mi355x-dsr1-fp4-tp4", "4", "6", &[]);
    let baseline = base.path().join("baseline.toml");
    assert_exit(&baseline_new(base.path(), &baseline, &[]), 0);
    let slow = stacked_on("mi355x-dsr1-fp4-tp4", "4", "6", &["--inject", "moe=1.1"]);
    let out = check_with(slow.path(), &baseline, &[]);
    assert_exit(&out, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().unwrap_or_default();
    let truth = load_json(&slow.path().join("truth.json"));
    let moe: Vec<Site> = truth_sites(&truth)
        .into_iter()
        .filter(|(_, s)| s.2 == "nn.Module: FusedMoE")
        .map(|(_, s)| s)
        .collect();
    assert!(!moe.is_empty());
    assert!(first.contains("nn.Module: FusedMoE"), "{first}");
    assert!(
        moe.iter()
            .any(|(_, shapes, _)| first.contains(shapes.as_str())),
        "{first}: none of {moe:?}"
    );
}
