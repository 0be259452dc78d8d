//! An image bump renames kernels: a kernel that vanished and a similar one that appeared in the
//! same category with the same calls per step are paired as renamed, and the lead names the
//! renamed kernel that got slower instead of listing it as appeared and vanished.

use crate::common::{check_mi355x, renamed_moe_run};
use serde_json::Value;

#[test]
fn a_renamed_and_slower_moe_kernel_leads_as_renamed_not_as_appeared_and_vanished() {
    let run = renamed_moe_run();
    let dir = tempfile::tempdir().unwrap();
    let verdict_path = dir.path().join("verdict.json");
    let out = check_mi355x(&run)
        .arg("--verdict-out")
        .arg(&verdict_path)
        .output()
        .unwrap();
    let markdown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{markdown}");
    let v: Value = serde_json::from_slice(&std::fs::read(&verdict_path).unwrap()).unwrap();
    let e = &v["explanation"];
    let lead = e["lead"].as_str().unwrap();

    let renamed = e["renamed"].as_array().unwrap();
    assert_eq!(renamed.len(), 1, "{e}");
    let r = &renamed[0];
    assert_eq!(r["category"], "moe_gemm");
    let (old, new) = (r["old"].as_str().unwrap(), r["new"].as_str().unwrap());
    assert!(old.contains("kernel_moe_mxgemm") && new.contains("kernel_moe_mxgemm") && old != new);
    // 10% of the kernel's ~3.9 ms per step.
    let delta = r["delta_ms_per_step"].as_f64().unwrap();
    assert!((0.3..0.5).contains(&delta), "{r}");
    assert_eq!(r["baseline_calls_per_step"], r["current_calls_per_step"]);
    assert!(e["appeared"].as_array().unwrap().is_empty(), "{e}");
    assert!(e["vanished"].as_array().unwrap().is_empty(), "{e}");

    assert!(lead.starts_with("moe_gemm moved by +"), "{lead}");
    assert!(lead.contains("(renamed from "), "{lead}");
    assert_eq!(e["cause"]["kind"], "renamed", "{e}");
    assert_eq!(
        (e["cause"]["old"].as_str(), e["cause"]["new"].as_str()),
        (Some(old), Some(new))
    );
    assert!(lead.contains(&format!("{delta:+.3} ms per step")), "{lead}");
    assert!(
        !lead.contains("appeared") && !lead.contains("vanished"),
        "{lead}"
    );
    // The kernel table shows the pair as one row under its new name.
    let row = e["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == new)
        .expect("the renamed kernel has a row");
    assert_eq!(row["renamed_from"], old);
    assert!(markdown.contains("renamed from"), "{markdown}");
}
