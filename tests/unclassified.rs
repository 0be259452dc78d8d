//! Kernels never seen before must not silently move a figure: renamed builds keep every
//! category figure, a kernel no rule knows is a finding, and a baseline's own `[[rules]]`
//! classify it (and survive `baseline update`).

mod common;

use std::path::Path;

use common::tracegate;
use serde_json::Value;

const SCENARIOS: [&str; 4] = [
    "mi355x-dsr1-fp4-tp4",
    "b200-dsr1-fp4-tp4-ep4",
    "h200-dsr1-fp8-tp8",
    "mi325x-dsr1-fp8-tp8",
];

fn synth(dir: &Path, scenario: &str, seed: &str, inject: &[&str]) {
    let mut cmd = tracegate();
    cmd.args(["synth", "--scenario", scenario, "--seed", seed, "--out"])
        .arg(dir)
        .args(["--decode-steps", "8", "--ranks", "2"]);
    for i in inject {
        cmd.args(["--inject", i]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn json_of(args: &[&str], dir: &Path) -> Value {
    let out = tracegate()
        .arg(args[0])
        .arg(dir)
        .args(&args[1..])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
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
        assert_eq!(b["other_pct"].as_f64(), Some(0.0), "{scenario}");
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
