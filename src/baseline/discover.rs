//! Picking the baseline of a run from a directory of them: `check <RUN> --baselines DIR`.
//!
//! A baseline matches when its `hardware` is the device the trace reports, its `tp` (when set)
//! is the run's number of ranks, its `framework` is the one the trace tells (a run whose trace
//! does not tell matches a baseline of a named framework only with `--key framework=NAME`; a
//! baseline without `framework` matches only a run whose trace does not tell), and every
//! `--key name=value` equals its `[meta]` field or `extra` pair, and its `batch` (when set) is
//! within 10% of the one the run's step annotations say (when they say one). Exactly one must
//! match: none, or
//! several, cannot be judged.

use std::path::{Path, PathBuf};

use super::{Baseline, BaselineError, Meta};

/// What the run says about itself, for matching.
#[derive(Debug, Clone)]
pub(crate) struct RunIdentity {
    pub hardware: Option<String>,
    pub ranks: usize,
    /// The serving framework the trace tells ([`crate::identity::framework_of`]).
    pub framework: Option<String>,
    /// `--key name=value` pairs for what the trace does not say (model, precision, concurrency...).
    pub keys: Vec<(String, String)>,
    /// The decode batch the step annotations say, where they say one.
    pub batch: Option<f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("{}: cannot list baselines: {source}", dir.display())]
    Io {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Invalid(#[from] BaselineError),
    /// In a workflow, a file of the directory that leads out of the workspace (a symlink to a
    /// baseline elsewhere): the message of the confinement check.
    #[error("{0}")]
    Confined(String),
    #[error("--key {0:?}: expected name=value, the name a [meta] key (model, precision, framework, tp...) or an extra key (letters, digits, '_', '-', '.')")]
    BadKey(String),
    #[error("{}: no baseline matches the run ({run}); candidates:\n{candidates}", dir.display())]
    NoMatch {
        dir: PathBuf,
        run: String,
        candidates: String,
    },
    #[error("{}: {count} baselines match the run ({run}); add --key to choose:\n{candidates}", dir.display())]
    Ambiguous {
        dir: PathBuf,
        run: String,
        count: usize,
        candidates: String,
    },
}

/// Parses `name=value` keys: any `[meta]` key or `extra` key (a name of letters, digits, `_`,
/// `-` or `.`).
pub(crate) fn parse_keys(keys: &[String]) -> Result<Vec<(String, String)>, DiscoveryError> {
    let valid = |name: &str| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    keys.iter()
        .map(|k| match k.split_once('=') {
            Some((name, value)) if valid(name.trim()) => {
                Ok((name.trim().to_string(), value.trim().to_string()))
            }
            _ => Err(DiscoveryError::BadKey(k.clone())),
        })
        .collect()
}

/// A `[meta]` field or `extra` pair as text ("" when unset).
fn meta_field(m: &Meta, name: &str) -> String {
    m.get(name).unwrap_or_default()
}

fn describe(b: &Baseline) -> String {
    let m = &b.meta;
    let mut parts = vec![format!("hardware {:?}", m.hardware)];
    let names = [
        "tp",
        "ep",
        "model",
        "precision",
        "framework",
        "concurrency",
        "batch",
    ];
    for name in names
        .iter()
        .copied()
        .chain(m.extra.keys().map(String::as_str))
    {
        let v = meta_field(m, name);
        if !v.is_empty() {
            parts.push(format!("{name} {v:?}"));
        }
    }
    format!("  {}: {}", b.path.display(), parts.join(", "))
}

fn matches(b: &Baseline, run: &RunIdentity) -> bool {
    let hardware = run
        .hardware
        .as_deref()
        .is_some_and(|h| h == b.meta.hardware);
    let ranks = b.meta.tp.is_none_or(|tp| tp as usize == run.ranks);
    // The framework the trace tells must be the baseline's; where the trace does not tell, a
    // baseline of a named framework matches only through --key framework=NAME.
    let keyed = run.keys.iter().any(|(k, _)| k == "framework");
    // A baseline that names no framework matches only a run whose trace tells none either: it
    // could be of any, and a run whose framework is known is of one.
    let framework = match (b.meta.framework.as_deref(), run.framework.as_deref()) {
        (None, None) => true,
        (None, Some(_)) => false,
        (Some(b), Some(r)) => b.eq_ignore_ascii_case(r),
        (Some(_), None) => keyed,
    };
    let keys = run
        .keys
        .iter()
        .all(|(k, v)| meta_field(&b.meta, k).eq_ignore_ascii_case(v));
    // A baseline that records a batch matches a run of that batch (within 10%, as `check`
    // judges it) or a run that tells none.
    let batch = match (b.meta.batch, run.batch) {
        (Some(b), Some(r)) => (r - f64::from(b)).abs() <= 0.1 * f64::from(b),
        _ => true,
    };
    hardware && ranks && framework && keys && batch
}

/// Every `.toml` file of `dir`, each admitted by `admit` first (confinement), parsed; one invalid
/// or refused baseline is an error (fail closed).
fn load_all(
    dir: &Path,
    admit: &dyn Fn(&Path) -> Result<(), String>,
) -> Result<Vec<Baseline>, DiscoveryError> {
    let io = |source| DiscoveryError::Io {
        dir: dir.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            admit(f).map_err(DiscoveryError::Confined)?;
            Baseline::load(f).map_err(DiscoveryError::from)
        })
        .collect()
}

/// The one baseline of `dir` that matches `run`, every file of the directory read as it is.
#[cfg(test)]
pub(crate) fn discover(dir: &Path, run: &RunIdentity) -> Result<Baseline, DiscoveryError> {
    discover_admitting(dir, run, &|_| Ok(()))
}

/// [`discover`] where each file of `dir` is confined first, by the same rule as every path from
/// a workflow input (`env` gives `GITHUB_WORKSPACE`, `RUNNER_TEMP` and `GITHUB_ACTIONS`): in a
/// workflow, a symlink in the directory that leads out of the workspace is refused, not followed.
pub(crate) fn discover_confined(
    dir: &Path,
    run: &RunIdentity,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Baseline, DiscoveryError> {
    discover_admitting(dir, run, &|file| {
        crate::confine::confine("--baselines", file, env).map_err(|e| e.to_string())
    })
}

fn discover_admitting(
    dir: &Path,
    run: &RunIdentity,
    admit: &dyn Fn(&Path) -> Result<(), String>,
) -> Result<Baseline, DiscoveryError> {
    let all = load_all(dir, admit)?;
    let mut said = vec![
        format!("hardware {:?}", run.hardware.clone().unwrap_or_default()),
        format!("{} ranks", run.ranks),
        match &run.framework {
            Some(f) => format!("framework {f} (from the trace)"),
            None => "framework unknown (the trace does not tell: --key framework=NAME)".into(),
        },
    ];
    said.extend(run.keys.iter().map(|(k, v)| format!("{k} {v}")));
    let run_text = said.join(", ");
    let (found, others): (Vec<Baseline>, Vec<Baseline>) =
        all.into_iter().partition(|b| matches(b, run));
    let list = |bs: &[Baseline]| bs.iter().map(describe).collect::<Vec<_>>().join("\n");
    match found.len() {
        1 => Ok(found.into_iter().next().expect("one match")),
        0 => Err(DiscoveryError::NoMatch {
            dir: dir.to_path_buf(),
            run: run_text,
            candidates: list(&others),
        }),
        count => Err(DiscoveryError::Ambiguous {
            dir: dir.to_path_buf(),
            run: run_text,
            count,
            candidates: list(&found),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_name_value_pairs_of_any_meta_or_extra_key() {
        assert_eq!(
            parse_keys(&["precision=fp4".into(), "mode=eager".into()]).unwrap(),
            vec![
                ("precision".into(), "fp4".into()),
                ("mode".into(), "eager".into())
            ]
        );
        assert!(parse_keys(&["precision".into()]).is_err());
        assert!(parse_keys(&["a b=1".into()]).is_err());
        assert!(parse_keys(&["=1".into()]).is_err());
    }

    fn mi355x_tp4(framework: Option<&str>, keys: &[(&str, &str)]) -> RunIdentity {
        RunIdentity {
            hardware: Some("AMD Instinct MI355X".into()),
            ranks: 4,
            framework: framework.map(str::to_string),
            keys: keys
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            batch: None,
        }
    }

    #[test]
    fn the_framework_tells_sglang_and_vllm_baselines_apart() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines");
        // A vLLM run never matches the SGLang baseline of its hardware and ranks.
        let e = discover(&root, &mi355x_tp4(Some("vllm"), &[]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no baseline matches")
                && e.contains("framework vllm")
                && e.contains("dsr1-fp4-mi355x-sglang-tp4-conc64.toml"),
            "{e}"
        );
        // Nor does a run whose trace does not tell its framework.
        let e = discover(&root, &mi355x_tp4(None, &[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--key framework=NAME"), "{e}");
        let b = discover(&root, &mi355x_tp4(Some("sglang"), &[])).unwrap();
        assert!(b.path.ends_with("dsr1-fp4-mi355x-sglang-tp4-conc64.toml"));
        let b = discover(&root, &mi355x_tp4(None, &[("framework", "sglang")])).unwrap();
        assert!(b.path.ends_with("dsr1-fp4-mi355x-sglang-tp4-conc64.toml"));
    }

    #[test]
    fn the_vllm_baselines_are_told_apart_by_their_mode() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines/vllm");
        let e = discover(&dir, &mi355x_tp4(Some("vllm"), &[]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 baselines match"), "{e}");
        for mode in ["eager", "piecewise", "stock"] {
            let b = discover(&dir, &mi355x_tp4(Some("vllm"), &[("mode", mode)])).unwrap();
            assert!(
                b.path
                    .ends_with(format!("dsr1-fp4-mi355x-vllm-{mode}-tp4-conc64.toml")),
                "{mode}: {}",
                b.path.display()
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_in_the_directory_is_judged_by_its_target() {
        let root = tempfile::tempdir().unwrap();
        let (ws, dir) = (root.path().join("ws"), root.path().join("ws/baselines"));
        std::fs::create_dir_all(&dir).unwrap();
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("baselines/dsr1-fp8-h200-sglang-tp8-conc64.toml");
        std::fs::copy(&shipped, root.path().join("outside.toml")).unwrap();
        std::fs::copy(&shipped, ws.join("kept.toml")).unwrap();
        let w = ws.display().to_string();
        let env = move |name: &str| (name == "GITHUB_WORKSPACE").then(|| w.clone());
        let run = RunIdentity {
            hardware: Some("NVIDIA H200".into()),
            ranks: 8,
            framework: Some("sglang".into()),
            keys: vec![],
            batch: None,
        };
        // A link inside the workspace to a baseline inside it is read.
        std::os::unix::fs::symlink("../kept.toml", dir.join("in.toml")).unwrap();
        let found = discover_confined(&dir, &run, &env).unwrap();
        assert!(found.path.ends_with("in.toml"));
        // A link to a baseline outside is refused, saying why, in a workflow only.
        std::fs::remove_file(dir.join("in.toml")).unwrap();
        std::os::unix::fs::symlink(root.path().join("outside.toml"), dir.join("out.toml")).unwrap();
        let e = discover_confined(&dir, &run, &env).unwrap_err().to_string();
        assert!(e.contains("--baselines ") && e.contains("out.toml"), "{e}");
        assert!(
            e.contains("a symlink to ") && e.contains("outside.toml"),
            "{e}"
        );
        assert!(discover_confined(&dir, &run, &|_| None).is_ok());
        assert!(discover(&dir, &run).is_ok());
    }

    #[test]
    fn the_shipped_baselines_are_told_apart_by_hardware_and_ranks() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines");
        let run = RunIdentity {
            hardware: Some("NVIDIA H200".into()),
            ranks: 8,
            framework: Some("sglang".into()),
            keys: vec![],
            batch: None,
        };
        let b = discover(&dir, &run).unwrap();
        assert!(b.path.ends_with("dsr1-fp8-h200-sglang-tp8-conc64.toml"));
        let wrong_ranks = RunIdentity { ranks: 4, ..run };
        let e = discover(&dir, &wrong_ranks).unwrap_err().to_string();
        assert!(
            e.contains("no baseline matches") && e.contains("dsr1-fp8-h200-sglang-tp8-conc64.toml"),
            "{e}"
        );
    }

    #[test]
    fn a_baseline_of_another_batch_does_not_match() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines");
        let at = |batch: Option<f64>| RunIdentity {
            hardware: Some("AMD Instinct MI355X".into()),
            ranks: 4,
            framework: Some("sglang".into()),
            keys: vec![],
            batch,
        };
        // The shipped MI355X baseline records batch 64: a run of 64 (or one that tells none)
        // matches, a run of 32 finds no baseline.
        assert!(discover(&dir, &at(Some(64.0))).is_ok());
        assert!(discover(&dir, &at(None)).is_ok());
        let err = discover(&dir, &at(Some(32.0))).unwrap_err().to_string();
        assert!(err.contains("batch \"64\""), "{err}");
    }
}
