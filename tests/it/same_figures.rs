//! One definition per metric (issue 28): `report` and `compare` print, for every registry metric,
//! the value `extract` prints for the same run, in markdown and in JSON, on two scenarios. A metric
//! the run does not produce is absent from all three.

use std::path::Path;

use serde_json::Value;
use tracegate::{MetricId, Unit};

use crate::common::{assert_exit, synth_run, tracegate};

const SCENARIOS: [&str; 2] = ["h200-dsr1-fp8-tp8", "mi355x-dsr1-fp4-tp4"];

fn output(args: &[&str], runs: &[&Path]) -> String {
    let out = tracegate().args(args).args(runs).output().unwrap();
    assert_exit(&out, 0);
    String::from_utf8(out.stdout).unwrap()
}

/// The cells of the first markdown table row whose first cell names `metric` (escapes and code
/// spans removed); `None` when no row does.
fn row_of(markdown: &str, metric: &str) -> Option<Vec<String>> {
    markdown.lines().find_map(|line| {
        let cells: Vec<String> = line
            .trim()
            .strip_prefix('|')?
            .strip_suffix('|')?
            .split('|')
            .map(|c| c.trim().replace(['\\', '`'], ""))
            .collect();
        (cells.first().map(String::as_str) == Some(metric)).then_some(cells)
    })
}

/// A value cell without its unit: `282.362 ms` → `282.362`, `12.3%` → `12.3`.
fn number(cell: &str, unit: Unit) -> String {
    cell.strip_suffix(unit.symbol())
        .unwrap_or(cell)
        .trim()
        .to_string()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn report_and_compare_print_every_registry_metric_as_extract_does() {
    let runs: Vec<_> = SCENARIOS
        .iter()
        .map(|s| synth_run(&["--scenario", s]))
        .collect();
    let paths: Vec<&Path> = runs.iter().map(|p| p.as_path()).collect();
    let compare_md = output(&["compare", "--format", "markdown"], &paths);
    let compare_json = json(&output(&["compare", "--format", "json"], &paths));
    let mut compared = 0;
    for (i, run) in paths.iter().enumerate() {
        let extract_md = output(&["extract", "--format", "markdown"], &[run]);
        let extract_json = json(&output(&["extract", "--format", "json"], &[run]));
        let report_md = output(&["report", "--format", "markdown"], &[run]);
        let report_json = json(&output(&["report", "--format", "json"], &[run]));
        for id in MetricId::ALL {
            let (def, name) = (id.def(), id.name());
            let extracted = extract_json["metrics"][name]["value"].as_f64();
            assert_eq!(
                report_json["metrics"][name]["value"].as_f64(),
                extracted,
                "report JSON, {name}, {}",
                SCENARIOS[i]
            );
            let row = compare_json["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["key"] == name)
                .unwrap_or_else(|| panic!("compare JSON has no row {name}"));
            assert_eq!(row["values"][i].as_f64(), extracted, "compare JSON, {name}");
            let Some(extract_row) = row_of(&extract_md, name) else {
                assert!(extracted.is_none(), "extract prints no {name}");
                assert!(row_of(&report_md, name).is_none(), "report prints {name}");
                let cell = row_of(&compare_md, name).map(|r| r[i + 1].clone());
                assert!(
                    matches!(cell.as_deref(), None | Some("—")),
                    "{name}: {cell:?}"
                );
                continue;
            };
            let printed = &extract_row[1];
            let report_row = row_of(&report_md, name).expect("report prints the metric");
            assert_eq!(&report_row[1], printed, "report markdown, {name}");
            let compare_row = row_of(&compare_md, name).expect("compare prints the metric");
            assert_eq!(
                &number(&compare_row[i + 1], def.unit),
                printed,
                "compare markdown, {name}, {}",
                SCENARIOS[i]
            );
            compared += 1;
        }
    }
    // Both scenarios produce most of the registry: the test cannot pass on empty tables.
    assert!(compared >= 2 * 12, "only {compared} figures compared");
}

#[test]
fn compare_names_the_main_allreduce_kernel_apart_from_the_registry_allreduce() {
    let run = synth_run(&["--scenario", SCENARIOS[0]]);
    let c = json(&output(
        &["compare", "--format", "json"],
        &[run.as_path(), run.as_path()],
    ));
    let keys = |field: &str| -> Vec<String> {
        c[field]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["key"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        c["schema_version"], 2,
        "the rows changed meaning: compare's schema is 2"
    );
    let (registry, own) = (keys("metrics"), keys("figures"));
    assert!(registry.iter().any(|k| k == "allreduce_us"));
    assert!(own.iter().any(|k| k == "main_allreduce_kernel_us"));
    // No figure of the analysis' own carries a registry metric's name.
    for k in &own {
        assert!(
            MetricId::ALL.iter().all(|id| id.name() != k),
            "{k} is a registry name"
        );
    }
}
