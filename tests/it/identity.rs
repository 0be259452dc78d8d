//! The run's identity end to end: `--image` and `--meta` (or TRACEGATE_IMAGE and
//! TRACEGATE_META_*) in `check`'s verdict JSON and markdown header, `baseline new|update`
//! recording them (the old image kept as `previous_image`), and `sweep` showing old → new.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{mi355x_run, run, tracegate, Out};

const SHIPPED: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";
const OLD: &str = "lmsysorg/sglang:v0.5.3-rocm700";
const NEW: &str = "lmsysorg/sglang:v0.5.4-rocm700";

/// The shared clean and regressed (allreduce 1.5x slower) MI355X runs (`common::mi355x_run`).
fn runs() -> (PathBuf, PathBuf) {
    (mi355x_run(None), mi355x_run(Some("allreduce=1.5")))
}

/// The shipped baseline, recorded with the old image and sglang 0.5.3, in DIR.
fn old_baseline(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(SHIPPED))
        .unwrap()
        .replace(
            "framework = \"sglang\"\n",
            &format!(
                "framework = \"sglang\"\nimage = \"{OLD}\"\nextra = {{ sglang = \"0.5.3\" }}\n"
            ),
        );
    assert!(text.contains(OLD));
    let path = dir.join("dsr1-fp4-mi355x-sglang-tp4-conc64.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn check(run_dir: &Path, baseline: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = tracegate();
    cmd.arg("check")
        .arg(run_dir)
        .arg("--baseline")
        .arg(baseline)
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

/// The markdown up to the metric table: the verdict line and the identity line.
fn header(markdown: &str) -> String {
    markdown.split("\n|").next().unwrap().trim_end().to_string()
}

#[test]
fn check_writes_the_image_and_pairs_in_json_and_the_markdown_header() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = old_baseline(dir.path());
    let (_, fail) = &runs();
    let args = [
        "--image",
        NEW,
        "--meta",
        "sglang=0.5.4",
        "--meta",
        "commit=4f2a9c1",
    ];
    let verdict = dir.path().join("verdict.json");
    let md = check(
        fail,
        &baseline,
        &[&args[..], &["--verdict-out", verdict.to_str().unwrap()]].concat(),
        &[],
    );
    assert_eq!(md.code, Some(1), "{}", md.stderr);
    insta::assert_snapshot!("identity_check_header", header(&md.stdout));
    // The "Run and baseline" table holds both sides too.
    for row in [
        format!("| image | {OLD} | {NEW} |"),
        "| sglang | 0.5.3 | 0.5.4 |".to_string(),
        "| commit | — | 4f2a9c1 |".to_string(),
    ] {
        assert!(md.stdout.contains(&row), "no row {row:?} in\n{}", md.stdout);
    }

    let v: Value = crate::common::load_json(&verdict);
    assert_eq!(v["run"]["image"], NEW);
    assert_eq!(v["run"]["meta"]["sglang"], "0.5.4");
    assert_eq!(v["run"]["meta"]["commit"], "4f2a9c1");
    assert_eq!(v["baseline"]["meta"]["image"], OLD);
    assert_eq!(v["baseline"]["meta"]["extra"]["sglang"], "0.5.3");

    // The terminal table says the same without markdown.
    let table = check(
        fail,
        &baseline,
        &[&args[..], &["--format", "table"]].concat(),
        &[],
    );
    assert!(
        table.stdout.contains(&format!(
            "image {OLD} → {NEW} · commit — → 4f2a9c1 · sglang 0.5.3 → 0.5.4"
        )),
        "{}",
        table.stdout
    );
}

#[test]
fn the_environment_gives_the_same_identity_and_the_command_line_wins() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = old_baseline(dir.path());
    let (pass, _) = &runs();
    let env = [
        ("TRACEGATE_IMAGE", NEW),
        ("TRACEGATE_META_SGLANG", "0.5.4"),
        ("TRACEGATE_META_GPU_DRIVER", "6.4.1"),
    ];
    let out = check(pass, &baseline, &["--format", "json"], &env);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["run"]["image"], NEW);
    assert_eq!(v["run"]["meta"]["sglang"], "0.5.4");
    assert_eq!(v["run"]["meta"]["gpu_driver"], "6.4.1");

    let out = check(
        pass,
        &baseline,
        &[
            "--format",
            "json",
            "--image",
            "mine:1",
            "--meta",
            "sglang=dev",
        ],
        &env,
    );
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["run"]["image"], "mine:1");
    assert_eq!(v["run"]["meta"]["sglang"], "dev");

    // Nothing given: null and {}, and no identity line (the baseline's image still shows).
    let out = check(pass, &baseline, &["--format", "json"], &[]);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["run"]["image"], Value::Null);
    assert_eq!(v["run"]["meta"], serde_json::json!({}));
    let out = check(pass, &baseline, &[], &[]);
    assert!(
        header(&out.stdout).contains(&format!("image `{OLD}` → — · sglang `0.5.3` → —")),
        "{}",
        header(&out.stdout)
    );
}

#[test]
fn bad_pairs_are_exit_2_naming_the_option_or_variable() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = old_baseline(dir.path());
    let (pass, _) = &runs();
    for (args, env, needle) in [
        (
            &["--meta", "sglang"][..],
            &[][..],
            "--meta \"sglang\": expected KEY=VALUE",
        ),
        (&["--meta", "image=x"][..], &[][..], "--image"),
        (
            &[][..],
            &[("TRACEGATE_META_A B", "1")][..],
            "TRACEGATE_META_A B",
        ),
    ] {
        let out = check(pass, &baseline, args, env);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "");
    }
}

#[test]
fn baseline_update_records_the_new_image_and_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = old_baseline(dir.path());
    let (pass, _) = &runs();
    let out = run(tracegate()
        .args(["baseline", "update"])
        .arg(pass)
        .arg("--baseline")
        .arg(&baseline)
        .args([
            "--image",
            NEW,
            "--meta",
            "sglang=0.5.4",
            "--meta",
            "driver=6.4.1",
        ]));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(text.contains(&format!("image = \"{NEW}\"")), "{text}");
    assert!(
        text.contains(&format!("previous_image = \"{OLD}\"")),
        "{text}"
    );
    assert!(
        text.contains("extra = { sglang = \"0.5.4\", driver = \"6.4.1\" }"),
        "{text}"
    );
    // The baseline still loads, and a check now shows the new image on both sides.
    let out = check(pass, &baseline, &["--image", NEW, "--format", "json"], &[]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["baseline"]["meta"]["image"], NEW);
    assert_eq!(v["baseline"]["meta"]["previous_image"], OLD);
    // A pair a baseline cannot hold is refused and the file left alone.
    let before = std::fs::read_to_string(&baseline).unwrap();
    let out = run(tracegate()
        .args(["baseline", "update"])
        .arg(pass)
        .arg("--baseline")
        .arg(&baseline)
        .args(["--meta", "tp=four"]));
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("whole number"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(&baseline).unwrap(), before);
}

#[test]
fn baseline_new_records_the_image_and_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let (pass, _) = &runs();
    let baseline = dir.path().join("new.toml");
    let out = run(tracegate()
        .args(["baseline", "new"])
        .arg(pass)
        .arg("--baseline")
        .arg(&baseline)
        .env("TRACEGATE_IMAGE", OLD)
        .args(["--meta", "sglang=0.5.3", "--meta", "precision=fp4"]));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = std::fs::read_to_string(&baseline).unwrap();
    assert!(text.contains(&format!("image = \"{OLD}\"")), "{text}");
    assert!(!text.contains("previous_image"), "{text}");
    assert!(text.contains("precision = \"fp4\""), "{text}");
    assert!(text.contains("extra = { sglang = \"0.5.3\" }"), "{text}");
}

#[test]
fn a_sweep_shows_each_configuration_old_to_new() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = old_baseline(dir.path());
    let (pass, fail) = &runs();
    let verdicts = dir.path().join("verdicts");
    std::fs::create_dir(&verdicts).unwrap();
    // Two configurations (the second a renamed copy of one verdict): one named its image, the
    // other did not and gets the sweep's --image.
    for (name, run_dir, args) in [
        ("a", fail, &["--image", NEW, "--meta", "commit=4f2a9c1"][..]),
        ("b", pass, &["--meta", "commit=4f2a9c1"][..]),
    ] {
        let path = verdicts.join(format!("{name}.json"));
        let out = check(
            run_dir,
            &baseline,
            &[args, &["--verdict-out", path.to_str().unwrap()]].concat(),
            &[],
        );
        assert!(matches!(out.code, Some(0 | 1)), "{}", out.stderr);
        let mut v: Value = crate::common::load_json(&path);
        v["baseline"]["path"] = Value::String(format!("baselines/config-{name}.toml"));
        std::fs::write(&path, v.to_string()).unwrap();
    }
    let out = run(tracegate().arg("sweep").arg(&verdicts).args([
        "--image",
        "sweep-image:0",
        "--meta",
        "pull_request=7",
    ]));
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let head = header(&out.stdout);
    assert!(
        head.ends_with(&format!(
            "image `{OLD}` → `{NEW}` (1 configuration) · image `{OLD}` → `sweep-image:0` (1 configuration) · commit `4f2a9c1` · pull\\_request `7`"
        )),
        "{head}"
    );
    let rows: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("config-"))
        .collect();
    // One repository: the table shows the part of the tags that differs (the common `-rocm700`
    // dropped); the line above names them in full.
    assert!(
        rows[0].starts_with("| ❌ | config-a | v0.5.3 → v0.5.4 |"),
        "{rows:?}"
    );
    assert!(rows[1].starts_with("| ✅ | config-b | "), "{rows:?}");
    assert!(rows[1].contains(" → sweep-image:0 |"), "{rows:?}");

    let out = run(tracegate()
        .arg("sweep")
        .arg(&verdicts)
        .args(["--format", "json"]));
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["configurations"][0]["baseline_image"], OLD);
    assert_eq!(v["configurations"][0]["run"]["image"], NEW);
    assert_eq!(v["configurations"][0]["run"]["meta"]["commit"], "4f2a9c1");
    assert_eq!(v["configurations"][1]["run"]["image"], Value::Null);
}

#[test]
fn a_64_configuration_image_bump_fits_in_one_comment() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = old_baseline(dir.path());
    let (_, fail) = &runs();
    let one = dir.path().join("one.json");
    let out = check(
        fail,
        &baseline,
        &[
            "--image",
            NEW,
            "--meta",
            "commit=4f2a9c1",
            "--verdict-out",
            one.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let v: Value = crate::common::load_json(&one);
    let verdicts = dir.path().join("verdicts");
    std::fs::create_dir(&verdicts).unwrap();
    for i in 0..64 {
        let mut v = v.clone();
        let name = format!(
            "dsr1-fp4-mi355x-sglang-tp4-conc{}-variant-with-a-long-name-{i:02}",
            4 * (i + 1)
        );
        v["baseline"]["path"] = Value::String(format!("baselines/{name}.toml"));
        std::fs::write(verdicts.join(format!("{name}.json")), v.to_string()).unwrap();
    }
    let out = run(tracegate().arg("sweep").arg(&verdicts));
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let chars = out.stdout.chars().count();
    assert!(chars < 65_536, "{chars} characters");
    // One bump shared by every configuration is said once, above the table (its full names);
    // an image column would only widen the table past the comment column.
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("| ❌ | dsr1"))
            .count(),
        64,
        "every configuration has its row"
    );
    assert!(
        !out.stdout.contains(" | v0.5.3 → v0.5.4 | "),
        "no image column"
    );
    assert!(out
        .stdout
        .contains(&format!("image `{OLD}` → `{NEW}` · commit `4f2a9c1`")));
}
