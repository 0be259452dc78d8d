//! No edit bends the gate (issue 39): every file a pull request can edit (a `--rules` file, a
//! baseline's `[[rules]]` and `[meta]`) and every flag of `check` is attacker input. An edit that
//! would move the time the baseline recorded out of its figures, or contradict them, is exit 2
//! naming what was edited; a gated metric whose "improvement" the report calls an artefact never
//! passes.

use std::path::{Path, PathBuf};

use crate::common::{self, edited_baseline, tracegate, Out, MI355X_BASELINE, MI355X_RUN};

/// The MI355X run with its MoE GEMM 8% slower: exit 1 against the shipped baseline.
fn slower_moe() -> PathBuf {
    common::mi355x_run(Some("moe=1.08"))
}

/// The first MoE GEMM kernel the shipped baseline's `[breakdown]` records.
fn recorded_moe_kernel() -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(MI355X_BASELINE))
        .unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("name = \"void ck::kernel_moe_mxgemm"))
        .expect("the baseline records a MoE GEMM kernel");
    let name: String = toml::from_str::<toml::Table>(line).unwrap()["name"]
        .as_str()
        .unwrap()
        .to_string();
    name
}

fn check(run: &Path, baseline: &Path, args: &[&str]) -> Out {
    common::run(
        tracegate()
            .arg("check")
            .arg(run)
            .arg("--baseline")
            .arg(baseline)
            .args(["--format", "json"])
            .args(args),
    )
}

/// `check RUN --baseline BASELINE --rules FILE`, FILE (in `dir`) holding one rule: `matcher`
/// (`prefix = "…"`) sending its kernels to `category`.
fn check_with_rule(dir: &Path, run: &Path, baseline: &Path, matcher: &str, category: &str) -> Out {
    let rules = dir.join("rules.toml");
    std::fs::write(
        &rules,
        format!("[[rule]]\n{matcher}\ncategory = {category:?}\n"),
    )
    .unwrap();
    check(run, baseline, &["--rules", rules.to_str().unwrap()])
}

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(MI355X_BASELINE)
}

fn verdict(out: &Out) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stderr))
}

#[test]
fn the_unedited_check_of_a_slower_moe_is_a_regression() {
    let out = check(&slower_moe(), &shipped(), &[]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
}

#[test]
fn a_rules_file_moving_a_recorded_moe_kernel_to_dense_gemm_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = recorded_moe_kernel();
    let prefix = kernel.strip_prefix("void ").unwrap();
    let matcher = format!("prefix = {prefix:?}");
    let out = check_with_rule(
        dir.path(),
        &slower_moe(),
        &shipped(),
        &matcher,
        "dense_gemm",
    );
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let v = verdict(&out);
    let problem = v["problems"][0].as_str().unwrap();
    assert!(problem.contains("rules.toml rule 1 (prefix"), "{problem}");
    assert!(problem.contains("ck::kernel_moe_mxgemm_2lds"), "{problem}");
    assert!(
        problem.contains(
            "into dense_gemm, but the baseline records it under moe_gemm (3.946 ms per step)"
        ),
        "{problem}"
    );
    // A rules file that agrees with the baseline changes nothing.
    let out = check_with_rule(dir.path(), &slower_moe(), &shipped(), &matcher, "moe_gemm");
    assert_eq!(out.code, Some(1), "{}", out.stderr);
}

/// The shipped baseline with `[[rules]]` appended.
fn baseline_with_rules(dir: &Path, rules: &str) -> PathBuf {
    let path = edited_baseline(dir, str::to_string);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(rules);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_baseline_rule_sending_a_renamed_moe_kernel_to_dense_gemm_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    let run = common::renamed_moe_run();
    // The image bump alone: the rename is paired and the slower MoE regresses.
    assert_eq!(check(&run, &shipped(), &[]).code, Some(1));
    let baseline = baseline_with_rules(
        dir.path(),
        "\n[[rules]]\ncontains = \"(ck::TailNumber)2, 1>\"\ncategory = \"dense_gemm\"\n",
    );
    let out = check(&run, &baseline, &[]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let v = verdict(&out);
    let problem = v["problems"][0].as_str().unwrap();
    assert!(
        problem.contains("[[rules]] rule 1 (contains \"(ck::TailNumber)2, 1>\") sends kernel"),
        "{problem}"
    );
    assert!(
        problem.contains("which appeared, into dense_gemm, but it renames kernel"),
        "{problem}"
    );
    assert!(
        problem.contains("which the baseline records under moe_gemm"),
        "{problem}"
    );
    // The same rule keeping the kernel in its category is allowed: the regression stands.
    let baseline = baseline_with_rules(
        dir.path(),
        "\n[[rules]]\ncontains = \"(ck::TailNumber)2, 1>\"\ncategory = \"moe_gemm\"\n",
    );
    assert_eq!(check(&run, &baseline, &[]).code, Some(1));
}

#[test]
fn a_rule_for_new_work_is_allowed_and_named_and_an_artefact_improvement_never_passes() {
    let dir = tempfile::tempdir().unwrap();
    // The MoE GEMM under a name no rule knows and unlike the vanished one: no rename pairs it.
    let run = common::synth_run(
        &[
            MI355X_RUN,
            &["--inject", "unknown-moe", "--inject", "moe=1.08"],
        ]
        .concat(),
    );
    let matcher = "prefix = \"zz_fork_ffn\"";
    let out = check_with_rule(dir.path(), &run, &shipped(), matcher, "moe_gemm");
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let v = verdict(&out);
    let warnings = v["run"]["warnings"].to_string();
    assert!(
        warnings.contains("rules.toml rule 1 (prefix \\\"zz_fork_ffn\\\") classifies kernel")
            && warnings.contains("renames no vanished kernel, as moe_gemm"),
        "{warnings}"
    );
    // Sent elsewhere, the MoE figure "improves" only because its time left for a kernel that
    // appeared: the report calls it an artefact, and the check cannot pass.
    let out = check_with_rule(dir.path(), &run, &shipped(), matcher, "dense_gemm");
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let v = verdict(&out);
    let moe = common::verdict_metric(&v, "moe_us_per_layer");
    assert_eq!(moe["verdict"], "improved");
    assert!(moe["artefact"].as_str().unwrap().contains("appeared"));
    assert!(
        v["summary"]
            .as_str()
            .unwrap()
            .contains("improved only as an artefact of the run: moe_us_per_layer"),
        "{}",
        v["summary"]
    );
}

#[test]
fn a_baseline_whose_moe_layers_contradict_its_breakdown_cannot_judge() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = edited_baseline(dir.path(), |l| {
        if l == "moe_layers = 58" {
            "moe_layers = 70".to_string()
        } else {
            l.to_string()
        }
    });
    let out = check(&slower_moe(), &baseline, &[]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let v = verdict(&out);
    let problem = v["problems"][0].as_str().unwrap();
    assert!(
        problem.contains(
            "[meta] moe_layers = 70 contradicts the baseline's own figures: moe_us_per_layer \
             127.9 µs × 70 layers is 8.951 ms of MoE GEMM per step, but \
             [breakdown.categories.moe_gemm] records 7.412 ms (58 layers)"
        ),
        "{problem}"
    );
}

#[test]
fn a_moe_layers_flag_overriding_the_recorded_count_cannot_judge_without_override() {
    let run = slower_moe();
    let out = check(&run, &shipped(), &["--moe-layers", "70"]);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let problem = verdict(&out)["problems"][0].as_str().unwrap().to_string();
    assert!(
        problem.contains("--moe-layers 70 overrides the baseline's [meta] moe_layers = 58")
            && problem.contains("--override"),
        "{problem}"
    );
    // With --override it is judged, and the report says so.
    let out = check(&run, &shipped(), &["--moe-layers", "70", "--override"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let warnings = verdict(&out)["run"]["warnings"].to_string();
    assert!(
        warnings.contains(
            "--moe-layers 70 overrides the baseline's [meta] moe_layers = 58 (--override)"
        ),
        "{warnings}"
    );
    // The recorded value, as baselines/make.sh and the README pass it, is no difference.
    let out = check(&run, &shipped(), &["--moe-layers", "58"]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
}

#[test]
fn a_breakdown_edited_to_agree_with_a_moving_rule_cannot_judge() {
    // The MoE GEMM's recorded category edited to dense_gemm, so that a rule moving it "agrees".
    let dir = tempfile::tempdir().unwrap();
    let kernel = recorded_moe_kernel();
    let mut next_is_it = false;
    let baseline = edited_baseline(dir.path(), |l| {
        let edited = if next_is_it && l == "category = \"moe_gemm\"" {
            "category = \"dense_gemm\"".to_string()
        } else {
            l.to_string()
        };
        next_is_it = l == format!("name = {kernel:?}");
        edited
    });
    let prefix = kernel.strip_prefix("void ").unwrap();
    let matcher = format!("prefix = {prefix:?}");
    let out = check_with_rule(dir.path(), &slower_moe(), &baseline, &matcher, "dense_gemm");
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    let problems = verdict(&out)["problems"].to_string();
    assert!(
        problems.contains("the baseline's [breakdown] contradicts itself: the kernels it records under dense_gemm add up to"),
        "{problems}"
    );
}
