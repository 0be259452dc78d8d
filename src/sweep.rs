//! A sweep: the verdicts of many configurations (one `check --verdict-out` file per matrix job)
//! merged into one answer. A configuration without a verdict is a failure, not an omission.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::gate::{Status, Verdict};
use crate::identity::Identity;
use crate::metrics::MetricId;
use crate::units::Unit;

/// The metrics a sweep shows as columns, in order: the registry's headline metrics.
pub(crate) fn headline_metrics() -> impl Iterator<Item = MetricId> {
    MetricId::ALL.into_iter().filter(|id| id.def().headline)
}

/// The part of a `check` verdict (docs/JSON.md) a sweep reads.
#[derive(Debug, Clone, Deserialize)]
struct VerdictFile {
    schema_version: u32,
    status: Status,
    /// Must be `status`'s exit code: a file where they disagree was edited or corrupted.
    exit_code: i32,
    summary: String,
    baseline: BaselineRef,
    #[serde(default)]
    metrics: Vec<MetricRef>,
    explanation: Option<ExplanationRef>,
    /// `run.image` and `run.meta` (absent from verdicts older than them).
    #[serde(default)]
    run: Identity,
}

#[derive(Debug, Clone, Deserialize)]
struct BaselineRef {
    path: String,
    meta: MetaRef,
}

#[derive(Debug, Clone, Deserialize)]
struct MetaRef {
    hardware: String,
    #[serde(default)]
    image: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricRef {
    pub name: String,
    pub unit: Unit,
    pub gated: bool,
    pub baseline: Option<f64>,
    pub current: Option<f64>,
    pub change: Option<f64>,
    pub change_pct: Option<f64>,
    pub verdict: Verdict,
    /// The tolerance as the baseline states it (`3%`, `0.25ms`): a change is shown in its unit.
    #[serde(default)]
    pub tolerance: Option<String>,
    /// Why `check` holds an improvement to be none (the regression explains it).
    #[serde(default)]
    pub artefact: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct ExplanationRef {
    lead: String,
}

/// One configuration of the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct Configuration {
    /// The baseline's file stem (`dsr1-fp4-mi355x-sglang-tp4-conc64`), or the expected name.
    pub name: String,
    pub status: Status,
    pub hardware: Option<String>,
    pub summary: String,
    pub lead: Option<String>,
    pub metrics: Vec<MetricRef>,
    /// Where the verdict came from; `None` when it is missing.
    pub source: Option<PathBuf>,
    /// The image the baseline was recorded with.
    pub baseline_image: Option<String>,
    /// The run's image and pairs, from its verdict (the image else from `sweep --image`).
    pub run: Identity,
}

#[derive(Debug, Clone, Serialize)]
pub struct Sweep {
    pub schema_version: u32,
    pub status: Status,
    pub exit_code: i32,
    pub summary: String,
    /// Regressions first, then configurations that could not be judged, then passes, by name.
    pub configurations: Vec<Configuration>,
    /// `sweep --image` and `--meta`: the sweep's own identity.
    pub run: Identity,
}

/// Version of the sweep JSON schema.
pub(crate) const SWEEP_SCHEMA_VERSION: u32 = 1;

/// `check`'s precedence: a regression beyond doubt is news whatever else could not be judged, so
/// it outranks cannot-judge, which outranks a pass.
fn severity(s: Status) -> u8 {
    match s {
        Status::Pass => 0,
        Status::CannotJudge => 1,
        Status::Regression => 2,
    }
}

/// Most configurations named in a summary line; the table lists them all.
const NAMED_IN_SUMMARY: usize = 8;

/// `a, b, c` or `a, …, h and 3 more`.
fn some_names(names: &[&str]) -> String {
    if names.len() <= NAMED_IN_SUMMARY {
        return names.join(", ");
    }
    format!(
        "{} and {} more",
        names[..NAMED_IN_SUMMARY].join(", "),
        names.len() - NAMED_IN_SUMMARY
    )
}

fn config_name(baseline_path: &str) -> String {
    let file = Path::new(baseline_path)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned());
    let file = file.unwrap_or_else(|| baseline_path.to_string());
    file.strip_suffix(".toml").unwrap_or(&file).to_string()
}

/// Expands directories into the `.json` files they hold (not recursively), sorted.
fn verdict_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for p in paths {
        match std::fs::read_dir(p) {
            Ok(entries) if p.is_dir() => {
                let mut found: Vec<PathBuf> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|f| f.extension().is_some_and(|x| x == "json"))
                    .collect();
                found.sort();
                files.extend(found);
            }
            _ => files.push(p.clone()),
        }
    }
    files
}

/// A configuration that produced no usable verdict: the job crashed, or its artifact is broken.
fn failed(name: String, summary: String, source: Option<PathBuf>) -> Configuration {
    Configuration {
        name,
        status: Status::CannotJudge,
        hardware: None,
        summary,
        lead: None,
        metrics: Vec::new(),
        source,
        baseline_image: None,
        run: Identity::default(),
    }
}

/// Why a verdict file is not one, without its text: serde's message quotes the offending value
/// (an unknown `status` string, say), and a verdict file is written by whoever ran the job.
fn parse_problem(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Io => "it cannot be read",
        Category::Syntax => "malformed JSON",
        Category::Data => "a field is missing, or of the wrong type or value",
        Category::Eof => "the JSON ends early",
    };
    format!(
        "not a tracegate verdict: {what} (line {}, column {})",
        e.line(),
        e.column()
    )
}

/// The status a verdict's own metrics give, as the gate gives it: a regressed gated metric is a
/// regression; else a missing or noisy one, or none gated at all, cannot be judged.
fn status_of_metrics(metrics: &[MetricRef]) -> Status {
    let gated = || metrics.iter().filter(|m| m.gated);
    if gated().any(|m| m.verdict == Verdict::Regressed) {
        Status::Regression
    } else if gated().next().is_none()
        || gated().any(|m| matches!(m.verdict, Verdict::Missing | Verdict::Noisy))
    {
        Status::CannotJudge
    } else {
        Status::Pass
    }
}

/// A verdict's status checked against its metrics: a `pass` whose metrics say otherwise is what
/// they say, and the summary says why; a regression or cannot-judge label stands (a check with
/// `--fail-on-improvement`, or one that could not judge, says so beyond its metrics).
fn believed_status(label: Status, metrics: &[MetricRef], summary: String) -> (Status, String) {
    let content = status_of_metrics(metrics);
    if label != Status::Pass || content == Status::Pass {
        return (label, summary);
    }
    let names = |verdicts: &[Verdict]| {
        metrics
            .iter()
            .filter(|m| m.gated && verdicts.contains(&m.verdict))
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let why = match content {
        Status::Regression => format!(
            "its gated metrics regressed: {}",
            names(&[Verdict::Regressed])
        ),
        _ if metrics.iter().all(|m| !m.gated) => "it holds no gated metric".to_string(),
        _ => format!(
            "its gated metrics could not be judged: {}",
            names(&[Verdict::Missing, Verdict::Noisy])
        ),
    };
    (
        content,
        format!("the verdict is labelled pass, but {why}: not a verdict tracegate wrote"),
    )
}

fn read_verdict(path: &Path) -> Configuration {
    let fallback = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let env = |name: &str| std::env::var(name).ok();
    if let Err(e) = crate::confine::confine("sweep", path, &env) {
        return failed(fallback, e.to_string(), Some(path.into()));
    }
    let parsed = crate::files::read_text_capped(path, crate::files::TEXT_CAP)
        .map_err(|e| format!("cannot read the verdict: {e}"))
        .and_then(|text| serde_json::from_str::<VerdictFile>(&text).map_err(|e| parse_problem(&e)));
    match parsed {
        Ok(v) if v.exit_code != v.status.exit_code() => failed(
            fallback,
            format!(
                "the verdict says status {} but exit code {}: not a verdict tracegate wrote",
                status_word(v.status),
                v.exit_code
            ),
            Some(path.into()),
        ),
        Ok(v) if v.schema_version == crate::gate::check::CHECK_SCHEMA_VERSION => {
            let (status, summary) = believed_status(v.status, &v.metrics, v.summary);
            Configuration {
                name: config_name(&v.baseline.path),
                status,
                hardware: Some(v.baseline.meta.hardware),
                summary,
                lead: v.explanation.map(|e| e.lead),
                metrics: v.metrics,
                source: Some(path.to_path_buf()),
                baseline_image: v.baseline.meta.image,
                run: v.run,
            }
        }
        Ok(v) => failed(
            fallback,
            format!("verdict schema {} is not supported", v.schema_version),
            Some(path.into()),
        ),
        Err(why) => failed(fallback, why, Some(path.to_path_buf())),
    }
}

/// `pass`, `regression`, `cannot_judge`: a status as the JSON writes it.
fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Regression => "regression",
        Status::CannotJudge => "cannot_judge",
    }
}

/// One verdict per configuration, each file once: a file given twice (by two paths, or a
/// directory and a file in it) or two verdicts for one configuration would count one job twice or
/// let either answer stand. Both become one failed configuration naming both files. Linear in the
/// verdicts: each is looked up by its file and its name.
fn one_per_configuration(configurations: Vec<Configuration>) -> Vec<Configuration> {
    use std::collections::HashMap;
    let identity = |c: &Configuration| {
        c.source
            .as_ref()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
    };
    let shown = |c: &Configuration| {
        c.source
            .as_ref()
            .map_or_else(String::new, |p| p.display().to_string())
    };
    let mut out: Vec<Configuration> = Vec::with_capacity(configurations.len());
    let mut by_file: HashMap<PathBuf, usize> = HashMap::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for c in configurations {
        let file = identity(&c);
        let same_file = file.as_ref().and_then(|f| by_file.get(f)).copied();
        let same_name = c
            .source
            .is_some()
            .then(|| by_name.get(&c.name).copied())
            .flatten();
        let Some(i) = same_file.or(same_name) else {
            if let Some(f) = file {
                by_file.insert(f, out.len());
            }
            if c.source.is_some() {
                by_name.entry(c.name.clone()).or_insert(out.len());
            }
            out.push(c);
            continue;
        };
        let summary = if same_file.is_some() {
            format!(
                "the same verdict file is given twice: {} and {} (give each once)",
                shown(&out[i]),
                shown(&c)
            )
        } else {
            format!(
                "two verdicts for this configuration: {} and {} (one verdict per configuration)",
                shown(&out[i]),
                shown(&c)
            )
        };
        let first = out[i].source.clone();
        out[i] = failed(out[i].name.clone(), summary, first);
    }
    out
}

/// The names a configuration answers `--expect` by: its baseline's stem and its verdict file's
/// stem (the action's `name`, a matrix job's configuration).
fn answers_to(c: &Configuration) -> impl Iterator<Item = String> + '_ {
    let stem = c
        .source
        .as_ref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    std::iter::once(c.name.clone()).chain(stem)
}

/// Merges verdict files; every name in `expect` without a verdict becomes a failure.
pub(crate) fn merge(paths: &[PathBuf], expect: &[String]) -> Sweep {
    let configurations: Vec<Configuration> = verdict_files(paths)
        .iter()
        .map(|p| read_verdict(p))
        .collect();
    let mut configurations = one_per_configuration(configurations);
    let given: std::collections::HashSet<String> =
        configurations.iter().flat_map(answers_to).collect();
    for name in expect {
        if !given.contains(name) {
            configurations.push(failed(
                name.clone(),
                "no verdict: the job did not run, crashed or lost its artifact".into(),
                None,
            ));
        }
    }
    configurations.sort_by(|a, b| {
        severity(b.status)
            .cmp(&severity(a.status))
            .then_with(|| a.name.cmp(&b.name))
    });
    let status = configurations
        .iter()
        .map(|c| c.status)
        .max_by_key(|s| severity(*s))
        .unwrap_or(Status::CannotJudge);
    let count = |s: Status| configurations.iter().filter(|c| c.status == s).count();
    let named = |s: Status| {
        let names: Vec<&str> = configurations
            .iter()
            .filter(|c| c.status == s)
            .map(|c| c.name.as_str())
            .collect();
        some_names(&names)
    };
    let summary = if configurations.is_empty() {
        "CANNOT JUDGE: no verdict was given".to_string()
    } else {
        let mut line = format!(
            "{}: {} configurations, {} regressed, {} could not be judged, {} passed",
            match status {
                Status::Pass => "PASS",
                Status::Regression => "REGRESSION",
                Status::CannotJudge => "CANNOT JUDGE",
            },
            configurations.len(),
            count(Status::Regression),
            count(Status::CannotJudge),
            count(Status::Pass)
        );
        // As `check` lists the noisy and missing metrics beside a regression, the sweep names
        // the configurations that regressed and, beside them, those that could not be judged.
        if count(Status::Regression) > 0 {
            line.push_str(&format!("; regressed: {}", named(Status::Regression)));
        }
        if count(Status::CannotJudge) > 0 {
            line.push_str(&format!(
                "; could not judge: {}",
                named(Status::CannotJudge)
            ));
        }
        line
    };
    Sweep {
        schema_version: SWEEP_SCHEMA_VERSION,
        status,
        exit_code: status.exit_code(),
        summary,
        configurations,
        run: Identity::default(),
    }
}

impl Sweep {
    /// The sweep's own `--image` and `--meta`: the image stands for the run image of every
    /// configuration whose verdict names none.
    pub fn with_run(mut self, run: Identity) -> Sweep {
        if let Some(image) = &run.image {
            for c in self
                .configurations
                .iter_mut()
                .filter(|c| c.source.is_some())
            {
                c.run.image.get_or_insert_with(|| image.clone());
            }
        }
        self.run = run;
        self
    }

    /// Each distinct (baseline image, run image) of the configurations with a verdict, with how
    /// many configurations have it, most first; pairs where neither is known are left out.
    /// Empty when no run names its image: baselines that record one say nothing of the runs.
    pub fn image_bumps(&self) -> Vec<(Option<&str>, Option<&str>, usize)> {
        if self.configurations.iter().all(|c| c.run.image.is_none()) {
            return Vec::new();
        }
        let mut counts: BTreeMap<(Option<&str>, Option<&str>), usize> = BTreeMap::new();
        for c in &self.configurations {
            let pair = (c.baseline_image.as_deref(), c.run.image.as_deref());
            if pair != (None, None) {
                *counts.entry(pair).or_default() += 1;
            }
        }
        let mut bumps: Vec<_> = counts.into_iter().map(|((b, a), n)| (b, a, n)).collect();
        bumps.sort_by_key(|b| std::cmp::Reverse(b.2));
        bumps
    }

    /// The pairs every configuration with a verdict shares (a commit, a pull request), then the
    /// sweep's own `--meta`, which wins.
    pub fn common_meta(&self) -> BTreeMap<String, String> {
        let mut with_verdict = self.configurations.iter().filter(|c| c.source.is_some());
        let mut common = with_verdict
            .next()
            .map(|c| c.run.meta.clone())
            .unwrap_or_default();
        for c in with_verdict {
            common.retain(|k, v| c.run.meta.get(k) == Some(v));
        }
        common.extend(self.run.meta.clone());
        common
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_names_come_from_baseline_file_stems() {
        assert_eq!(
            config_name("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml"),
            "dsr1-fp4-mi355x-sglang-tp4-conc64"
        );
        assert_eq!(config_name("x"), "x");
    }

    fn configuration(name: &str, before: Option<&str>, after: Option<&str>) -> Configuration {
        Configuration {
            source: Some(PathBuf::from(format!("{name}.json"))),
            baseline_image: before.map(str::to_string),
            run: Identity {
                image: after.map(str::to_string),
                meta: [("commit".to_string(), "abc".to_string())].into(),
            },
            ..failed(name.into(), String::new(), None)
        }
    }

    #[test]
    fn image_bumps_are_counted_and_the_sweep_image_fills_the_gaps() {
        let mut sweep = merge(&[], &[]);
        sweep.configurations = vec![configuration("x", Some("cuda:1"), None)];
        assert_eq!(sweep.image_bumps(), [], "no run names its image");
        sweep.configurations = vec![
            configuration("a", Some("rocm:1"), Some("rocm:2")),
            configuration("b", Some("rocm:1"), Some("rocm:2")),
            configuration("c", Some("cuda:1"), None),
            configuration("d", None, None),
        ];
        sweep.configurations[3]
            .run
            .meta
            .insert("commit".into(), "def".into());
        let run = Identity {
            image: Some("cuda:2".into()),
            meta: [("pr".to_string(), "7".to_string())].into(),
        };
        let sweep = sweep.with_run(run);
        assert_eq!(
            sweep.image_bumps(),
            [
                (Some("rocm:1"), Some("rocm:2"), 2),
                (None, Some("cuda:2"), 1),
                (Some("cuda:1"), Some("cuda:2"), 1),
            ]
        );
        // "d" has another commit: only the sweep's own pair is common.
        let common: Vec<_> = sweep.common_meta().into_iter().collect();
        assert_eq!(common, [("pr".to_string(), "7".to_string())]);
    }

    #[test]
    fn nothing_to_merge_cannot_judge_and_a_missing_expected_verdict_fails() {
        assert_eq!(merge(&[], &[]).status, Status::CannotJudge);
        let s = merge(&[], &["dsr1-fp8-h200".to_string()]);
        assert_eq!(s.exit_code, 2);
        assert_eq!(s.configurations[0].name, "dsr1-fp8-h200");
    }

    #[test]
    fn a_regression_outranks_a_missing_verdict_and_sorts_first() {
        let dir = tempfile::tempdir().unwrap();
        let verdict = |name: &str, status: &str, exit: i32, verdict: &str| {
            let v = serde_json::json!({
                "schema_version": crate::gate::check::CHECK_SCHEMA_VERSION,
                "status": status,
                "exit_code": exit,
                "summary": status,
                "baseline": {"path": format!("baselines/{name}.toml"), "meta": {"hardware": "x"}},
                "metrics": [{"name": "decode_step_ms", "unit": "ms", "gated": true,
                    "baseline": 1.0, "current": 1.0, "change": 0.0, "change_pct": 0.0,
                    "verdict": verdict}],
            });
            std::fs::write(dir.path().join(format!("{name}.json")), v.to_string()).unwrap();
        };
        verdict("a-pass", "pass", 0, "ok");
        verdict("z-regressed", "regression", 1, "regressed");
        verdict("y-regressed", "regression", 1, "regressed");
        let s = merge(&[dir.path().to_path_buf()], &["b-missing".to_string()]);
        assert_eq!((s.status, s.exit_code), (Status::Regression, 1));
        let order: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(order, ["y-regressed", "z-regressed", "b-missing", "a-pass"]);
        assert_eq!(
            s.summary,
            "REGRESSION: 4 configurations, 2 regressed, 1 could not be judged, 1 passed; \
             regressed: y-regressed, z-regressed; could not judge: b-missing"
        );
    }

    #[test]
    fn a_summary_names_a_few_configurations_and_counts_the_rest() {
        let names: Vec<String> = (0..11).map(|i| format!("c{i:02}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(some_names(&names[..2]), "c00, c01");
        assert_eq!(
            some_names(&names),
            "c00, c01, c02, c03, c04, c05, c06, c07 and 3 more"
        );
    }
}
