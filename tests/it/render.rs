//! Every renderer prints the same figure the same way: one extraction (and one check) in
//! markdown, terminal table and JSON, each metric's value read back from the text and compared
//! with the JSON value written with its unit's decimals.

use std::path::Path;

use serde_json::Value;
use tracegate::Unit;

use crate::common::{self, tracegate};

fn output(args: &[&str], run: &Path, format: &str) -> String {
    let out = tracegate()
        .args(args)
        .arg(run)
        .args(["--format", format])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The cells of the row whose first cell (or second, after a verdict mark) is `name`, from it on.
fn row(text: &str, name: &str, markdown: bool) -> Vec<String> {
    let shown = if markdown {
        name.replace('_', "\\_")
    } else {
        name.to_string()
    };
    text.lines()
        .map(|l| -> Vec<String> {
            if markdown {
                // A number and its unit are joined by a no-break space in markdown tables.
                l.trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().replace('\u{a0}', " "))
                    .collect()
            } else {
                l.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .collect()
            }
        })
        .find_map(|cells| {
            // Check tables put a verdict mark before the name.
            let at = cells.iter().take(2).position(|c| *c == shown)?;
            Some(cells[at..].to_vec())
        })
        .unwrap_or_else(|| panic!("no row {shown} in:\n{text}"))
}

#[test]
fn extract_prints_each_value_the_same_in_every_format() {
    let run = common::synth_run(&["--scenario", "b200-dsr1-fp4-tp4-ep4"]);
    let json: Value = serde_json::from_str(&output(&["extract"], &run, "json")).unwrap();
    let markdown = output(&["extract"], &run, "markdown");
    let table = output(&["extract"], &run, "table");
    let metrics = json["metrics"].as_object().unwrap();
    assert!(metrics.len() >= 10, "{json}");
    for (name, m) in metrics {
        let unit = Unit::parse(m["unit"].as_str().unwrap()).unwrap();
        let want = unit.number(m["value"].as_f64().unwrap());
        assert_eq!(row(&markdown, name, true)[1], want, "{name} markdown");
        assert_eq!(row(&table, name, false)[1], want, "{name} table");
        assert_eq!(row(&table, name, false)[5], unit.label(), "{name} unit");
    }
}

#[test]
fn check_prints_each_figure_the_same_in_every_format() {
    let run = common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"]);
    let args = [
        "check",
        "--baseline",
        "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml",
    ];
    let json: Value = serde_json::from_str(&output(&args, &run, "json")).unwrap();
    let markdown = output(&args, &run, "markdown");
    let table = output(&args, &run, "table");
    for m in json["metrics"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        let unit = Unit::parse(m["unit"].as_str().unwrap()).unwrap();
        let want = [
            unit.figure_or_missing(m["baseline"].as_f64()),
            unit.figure_or_missing(m["current"].as_f64()),
        ];
        let md = row(&markdown, name, true);
        let tb = row(&table, name, false);
        assert_eq!(&md[1..3], &want, "{name} markdown");
        assert_eq!(&tb[1..3], &want, "{name} table");
    }
}
