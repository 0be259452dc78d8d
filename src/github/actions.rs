//! The Actions runner's side channels: workflow commands on stdout, `$GITHUB_STEP_SUMMARY` and
//! `$GITHUB_OUTPUT`.

use std::io::Write;
use std::path::Path;

use super::GithubError;
use crate::gate::{CheckResult, MetricCheck, Status, Verdict};
use crate::report::check::{change, value};
use crate::sweep::Sweep;

/// GitHub refuses a step summary larger than this many bytes.
pub(crate) const STEP_SUMMARY_LIMIT: usize = 1024 * 1024;

/// Escapes a workflow-command message: `%`, carriage return and line feed.
pub(crate) fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow-command property value (such as `title`): the message escapes plus `:`
/// and `,`, which would otherwise end the property.
pub(crate) fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// One workflow command line, e.g. `::error title=allreduce_us::...`.
pub(crate) fn command(kind: &str, title: Option<&str>, message: &str) -> String {
    match title {
        Some(t) => format!(
            "::{kind} title={}::{}",
            escape_property(t),
            escape_data(message)
        ),
        None => format!("::{kind}::{}", escape_data(message)),
    }
}

fn figures(m: &MetricCheck) -> String {
    format!(
        "baseline {}, current {}, change {}, tolerance {}",
        value(m.baseline, m.unit),
        value(m.current, m.unit),
        change(m),
        m.tolerance.as_deref().unwrap_or(crate::units::MISSING)
    )
}

/// The annotations for a check, most important first: gated regressions (GitHub shows only ten
/// error annotations per step), then metrics that could not be judged, report-only regressions,
/// and improvements worth re-baselining.
pub(crate) fn annotations(result: &CheckResult, fail_on_improvement: bool) -> Vec<String> {
    let mut errors = Vec::new();
    let mut failed_improvements = Vec::new();
    let mut warnings = Vec::new();
    let mut notices = Vec::new();
    for m in &result.metrics {
        let name = m.name.name();
        match (m.verdict, m.gated) {
            (Verdict::Regressed, true) => errors.push(command(
                "error",
                Some(name),
                &format!("{name} regressed: {}", figures(m)),
            )),
            (Verdict::Improved, true) if fail_on_improvement => failed_improvements.push(command(
                "error",
                Some(name),
                &format!(
                    "{name} improved beyond tolerance (--fail-on-improvement): {}; re-baseline",
                    figures(m)
                ),
            )),
            (Verdict::Noisy, true) => warnings.push(command(
                "warning",
                Some(name),
                &format!("{name} is too noisy to judge: {}", figures(m)),
            )),
            (Verdict::Missing, true) => warnings.push(command(
                "warning",
                Some(name),
                &format!(
                    "{name} is in the baseline but missing from the run: {}",
                    figures(m)
                ),
            )),
            (Verdict::Regressed, false) => warnings.push(command(
                "warning",
                Some(name),
                &format!("{name} regressed (report only, not gated): {}", figures(m)),
            )),
            // An artefact of the regression is no improvement; while the run regressed,
            // nothing is offered for re-baselining.
            (Verdict::Improved, _) if m.artefact.is_some() => {}
            (Verdict::Improved, _) if result.status == Status::Regression => notices.push(command(
                "notice",
                Some(name),
                &format!(
                    "{name} improved beyond tolerance: {}; the run regressed, so not a time to re-baseline",
                    figures(m)
                ),
            )),
            (Verdict::Improved, _) => notices.push(command(
                "notice",
                Some(name),
                &format!(
                    "{name} improved beyond tolerance, worth re-baselining: {}",
                    figures(m)
                ),
            )),
            _ => {}
        }
    }
    // Time in kernels no rule knows: the figures by category miss it.
    if let Some(u) = result
        .explanation
        .unclassified
        .as_ref()
        .filter(|u| u.over_limit || u.rose)
    {
        warnings.push(command(
            "warning",
            Some("unclassified kernels"),
            &crate::report::check::unclassified_line(u),
        ));
    }
    errors.extend(failed_improvements);
    errors.extend(warnings);
    errors.extend(notices);
    errors
}

/// The `verdict` output: `pass`, `regression` or `cannot_judge`.
pub(crate) fn verdict_word(status: Status) -> &'static str {
    match status {
        Status::Pass => "pass",
        Status::Regression => "regression",
        Status::CannotJudge => "cannot_judge",
    }
}

/// The step outputs: `verdict`, `regressions` (the number of gated metrics that regressed) and
/// `report-path` (the `--output` file, empty without one).
pub(crate) fn step_outputs(
    result: &CheckResult,
    report_path: Option<&Path>,
) -> Vec<(String, String)> {
    let regressions = result
        .metrics
        .iter()
        .filter(|m| m.gated && m.verdict == Verdict::Regressed)
        .count();
    vec![
        ("verdict".into(), verdict_word(result.status).into()),
        ("regressions".into(), regressions.to_string()),
        (
            "report-path".into(),
            report_path.map_or_else(String::new, |p| p.display().to_string()),
        ),
    ]
}

/// `$GITHUB_OUTPUT` lines: `name=value`, or the heredoc form for a value with a line break.
pub(crate) fn format_outputs(outputs: &[(String, String)]) -> String {
    let mut out = String::new();
    for (name, value) in outputs {
        if value.contains(['\n', '\r']) {
            let mut delimiter = String::from("TRACEGATE_EOF");
            while value.contains(&delimiter) {
                delimiter.push('_');
            }
            out.push_str(&format!("{name}<<{delimiter}\n{value}\n{delimiter}\n"));
        } else {
            out.push_str(&format!("{name}={value}\n"));
        }
    }
    out
}

fn append(path: &Path, text: &str) -> Result<(), GithubError> {
    crate::files::open_append(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|source| GithubError::Write {
            path: path.to_path_buf(),
            source,
        })
}

pub(crate) fn append_outputs(path: &Path, outputs: &[(String, String)]) -> Result<(), GithubError> {
    append(path, &format_outputs(outputs))
}

/// The job-summary markdown: every part that fits in `budget` bytes, in order, saying what was
/// left out.
pub(crate) fn summary_markdown(parts: &[String], budget: usize) -> String {
    const NOTE: &str = "_Sections left out to fit GitHub's job-summary limit; the JSON verdict (`--verdict-out`) has everything._\n\n";
    let mut out = String::new();
    let mut omitted = false;
    for part in parts {
        if out.len() + part.len() + NOTE.len() <= budget {
            out.push_str(part);
        } else {
            omitted = true;
        }
    }
    if omitted {
        out.push_str(NOTE);
    }
    out
}

/// Appends the full markdown to the job summary, within what is left of its 1 MiB.
pub(crate) fn append_step_summary(path: &Path, parts: &[String]) -> Result<(), GithubError> {
    let used = std::fs::metadata(path).map_or(0, |m| m.len() as usize);
    let budget = STEP_SUMMARY_LIMIT.saturating_sub(used);
    append(path, &summary_markdown(parts, budget))
}

/// The annotations of a sweep: an error for each configuration that regressed or could not be
/// judged (a missing verdict among them), naming it and saying why.
pub(crate) fn sweep_annotations(sweep: &Sweep) -> Vec<String> {
    sweep
        .configurations
        .iter()
        .filter(|c| c.status != Status::Pass)
        .map(|c| {
            let why = c.lead.as_deref().unwrap_or(&c.summary);
            command("error", Some(&c.name), &format!("{}: {why}", c.name))
        })
        .collect()
}

/// The step outputs of a sweep: `verdict`, `regressions` (configurations that regressed),
/// `failures` (configurations that did not pass, unjudged ones included) and `report-path`.
pub(crate) fn sweep_outputs(sweep: &Sweep, report_path: Option<&Path>) -> Vec<(String, String)> {
    let count = |s: Status| {
        sweep
            .configurations
            .iter()
            .filter(|c| c.status == s)
            .count()
    };
    let failures = sweep.configurations.len() - count(Status::Pass);
    vec![
        ("verdict".into(), verdict_word(sweep.status).into()),
        ("regressions".into(), count(Status::Regression).to_string()),
        ("failures".into(), failures.to_string()),
        (
            "report-path".into(),
            report_path.map_or_else(String::new, |p| p.display().to_string()),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::check::{BaselineInfo, RunSummary};
    use crate::gate::explain::Explanation;
    use crate::metrics::MetricId;
    use crate::report::comment::markdown_parts;

    fn metric(name: MetricId, gated: bool, verdict: Verdict) -> MetricCheck {
        MetricCheck {
            name,
            unit: crate::units::Unit::Us,
            direction: crate::baseline::Direction::Lower,
            gated,
            baseline: Some(10.0),
            current: Some(15.0),
            change: Some(5.0),
            change_pct: Some(50.0),
            tolerance: Some("10%".into()),
            allowance: Some(1.0),
            interval: None,
            samples: 0,
            verdict,
            artefact: None,
        }
    }

    fn result(metrics: Vec<MetricCheck>) -> CheckResult {
        CheckResult {
            schema_version: 1,
            status: Status::Regression,
            exit_code: 1,
            summary: "REGRESSION".into(),
            problems: Vec::new(),
            baseline: BaselineInfo {
                path: "baselines/x.toml".into(),
                meta: Default::default(),
            },
            run: RunSummary {
                device: None,
                ranks: vec![0],
                partial_ranks: None,
                decode_steps_kept: 1,
                batch: None,
                framework: None,
                hardware_asserted: false,
                hardware_from_baseline: false,
                warnings: vec![],
                identity: Default::default(),
            },
            decode_series: Default::default(),
            calibration: Vec::new(),
            metrics,
            explanation: Explanation {
                decode_step_change_ms: None,
                kernel_time_change_ms: 0.0,
                cause: crate::gate::explain::Cause::None,
                lead: String::new(),
                noise_ms_per_step: 0.001,
                categories: vec![],
                kernels: vec![],
                appeared: vec![],
                vanished: vec![],
                renamed: vec![],
                kernel_diff: String::new(),
                site: None,
                straggler: None,
                unclassified: None,
                slower_transfer: None,
                stalls: None,
            },
        }
    }

    #[test]
    fn gated_regressions_come_first_then_warnings_then_notices() {
        let r = result(vec![
            metric(MetricId::DecodeStallPct, true, Verdict::Noisy),
            metric(MetricId::GpuUtilPct, true, Verdict::Improved),
            metric(MetricId::OverlapPct, false, Verdict::Regressed),
            metric(MetricId::OtherPct, true, Verdict::Ok),
            metric(MetricId::CommPct, true, Verdict::Regressed),
            metric(MetricId::AllreduceUs, true, Verdict::Missing),
            metric(MetricId::DecodeStepMs, true, Verdict::Regressed),
        ]);
        let lines = annotations(&r, false);
        let heads: Vec<&str> = lines
            .iter()
            .map(|l| l.split("::").nth(1).unwrap())
            .collect();
        assert_eq!(
            heads,
            [
                "error title=comm_pct",
                "error title=decode_step_ms",
                "warning title=decode_stall_pct",
                "warning title=overlap_pct",
                "warning title=allreduce_us",
                "notice title=gpu_util_pct",
            ]
        );
        assert_eq!(
            lines[1],
            "::error title=decode_step_ms::decode_step_ms regressed: baseline 10.0 µs, current 15.0 µs, change +50.0%25, tolerance 10%25"
        );
        // With --fail-on-improvement an improvement fails the gate: an error, after regressions.
        let lines = annotations(&r, true);
        assert!(lines[2]
            .starts_with("::error title=gpu_util_pct::gpu_util_pct improved beyond tolerance"));
        assert_eq!(lines.iter().filter(|l| l.starts_with("::error")).count(), 3);
    }

    #[test]
    fn no_re_baseline_is_offered_while_the_run_regressed_nor_for_an_artefact() {
        let mut artefact = metric(MetricId::MoeUsPerLayer, true, Verdict::Improved);
        artefact.artefact = Some("its time moved into kernels no rule classifies".into());
        let mut r = result(vec![
            metric(MetricId::DecodeStepMs, true, Verdict::Regressed),
            metric(MetricId::GpuUtilPct, true, Verdict::Improved),
            artefact,
        ]);
        let lines = annotations(&r, false);
        assert!(
            !lines.iter().any(|l| l.contains("moe_us_per_layer")),
            "{lines:?}"
        );
        let notice = lines.iter().find(|l| l.starts_with("::notice")).unwrap();
        assert!(!notice.contains("worth re-baselining"), "{notice}");
        // A passing run's real improvement is still worth re-baselining.
        r.status = Status::Pass;
        let lines = annotations(&r, false);
        assert!(
            lines.iter().any(|l| l.contains("worth re-baselining")),
            "{lines:?}"
        );
    }

    #[test]
    fn the_summary_fits_its_budget_and_says_what_it_left_out() {
        let r = result(vec![metric(
            MetricId::DecodeStepMs,
            true,
            Verdict::Regressed,
        )]);
        let parts = markdown_parts(&r);
        let full = summary_markdown(&parts, STEP_SUMMARY_LIMIT);
        assert!(!full.contains("left out"));
        let head = parts[0].len();
        let cut = summary_markdown(&parts, head + 200);
        assert!(cut.len() <= head + 200, "{cut}");
        assert!(cut.contains("left out to fit GitHub's job-summary limit"));
    }

    #[test]
    fn outputs_count_gated_regressions_only() {
        let r = result(vec![
            metric(MetricId::DecodeStepMs, true, Verdict::Regressed),
            metric(MetricId::OverlapPct, false, Verdict::Regressed),
        ]);
        let out = step_outputs(&r, Some(Path::new("r.md")));
        assert_eq!(
            format_outputs(&out),
            "verdict=regression\nregressions=1\nreport-path=r.md\n"
        );
    }

    #[test]
    fn messages_escape_percent_and_line_breaks() {
        assert_eq!(escape_data("50% a\r\nb"), "50%25 a%0D%0Ab");
        assert_eq!(escape_data("a:b,c"), "a:b,c");
    }

    #[test]
    fn properties_also_escape_colon_and_comma() {
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        assert_eq!(
            command("error", Some("x::y"), "line1\nline2 :: 100%"),
            "::error title=x%3A%3Ay::line1%0Aline2 :: 100%25"
        );
        assert_eq!(command("notice", None, "hi"), "::notice::hi");
    }

    #[test]
    fn outputs_use_a_delimiter_for_multiline_values() {
        let text = format_outputs(&[
            ("verdict".into(), "pass".into()),
            ("report-path".into(), "a\nTRACEGATE_EOF".into()),
        ]);
        assert_eq!(
            text,
            "verdict=pass\nreport-path<<TRACEGATE_EOF_\na\nTRACEGATE_EOF\nTRACEGATE_EOF_\n"
        );
    }
}
