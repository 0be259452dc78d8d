//! The decode chart of `check --format markdown` (issue 29): every decode step found, warm-up
//! and stalls included, in the step numbers the stall sentence uses.

use crate::common;

/// The values of the mermaid chart's first `line [...]` (the run's), after its init line.
fn run_line(markdown: &str) -> Vec<f64> {
    let block = markdown
        .split("```mermaid\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no mermaid block: {markdown}"));
    assert!(block.starts_with("%%{init:"), "no init line: {block}");
    let line = block
        .lines()
        .find_map(|l| l.trim().strip_prefix("line ["))
        .unwrap_or_else(|| panic!("no line series: {block}"));
    line.trim_end_matches(']')
        .split(", ")
        .map(|v| v.parse().unwrap())
        .collect()
}

#[test]
fn the_stall_chart_has_a_point_per_decode_step_found() {
    let run = common::synth_once(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--inject",
        "stall=6:3.0",
    ]);
    let truth = common::load_json(&run.path().join("truth.json"));
    let found = truth["decode_steps_per_rank"].as_u64().unwrap() as usize;
    let out = common::check_mi355x(run.path())
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    common::assert_exit(&out, 1);
    let md = String::from_utf8_lossy(&out.stdout);
    let points = run_line(&md);
    assert_eq!(points.len(), found, "{md}");
    // The stalls stand out at the chart's top edge (the axis fits the kept steps and the band,
    // so the regression is not flattened onto the band), their real figures in the caption.
    let axis = regex::Regex::new(r#"y-axis "ms" ([0-9.]+) --> ([0-9.]+)"#).unwrap();
    let top: f64 = axis.captures(&md).expect("a y-axis")[2].parse().unwrap();
    let stalled = points.iter().filter(|&&p| p == top).count();
    assert!(
        stalled >= 6,
        "{stalled} stalls drawn at the top edge: {points:?}"
    );
    assert!(
        md.contains("Off the chart, drawn at its top edge: steps "),
        "{md}"
    );
    // The caption names the stalled steps with the numbers the stall sentence gives them.
    let sentence = md
        .lines()
        .find(|l| l.contains("stalled at") && l.contains("(steps "))
        .unwrap_or_else(|| panic!("no stall sentence: {md}"));
    let steps = sentence
        .split("(steps ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("no step list: {sentence}"))
        .replace('\\', "");
    assert!(
        md.contains(&format!("stalled (steps {steps})")),
        "caption does not name steps {steps}: {md}"
    );
}
