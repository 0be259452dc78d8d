//! Picking the baseline of a run from a directory of them: `check <RUN> --baselines DIR`.
//!
//! A baseline matches when its `hardware` is the device the trace reports, its `tp` (when set)
//! is the run's number of ranks, and every `--key name=value` equals its `[meta]` field. Exactly
//! one must match: none, or several, cannot be judged.

use std::path::{Path, PathBuf};

use super::{Baseline, BaselineError, Meta};

/// What the run says about itself, for matching.
#[derive(Debug, Clone)]
pub struct RunIdentity {
    pub hardware: Option<String>,
    pub ranks: usize,
    /// `--key name=value` pairs for what the trace does not say (model, precision, concurrency...).
    pub keys: Vec<(String, String)>,
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
    #[error("--key {0:?}: expected name=value with name one of model, precision, framework, image, tp, ep, concurrency")]
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

/// Parses `name=value` keys, refusing names `[meta]` does not have.
pub fn parse_keys(keys: &[String]) -> Result<Vec<(String, String)>, DiscoveryError> {
    keys.iter()
        .map(|k| match k.split_once('=') {
            Some((name, value)) if meta_field(&Meta::default(), name.trim()).is_some() => {
                Ok((name.trim().to_string(), value.trim().to_string()))
            }
            _ => Err(DiscoveryError::BadKey(k.clone())),
        })
        .collect()
}

/// A `[meta]` field as text ("" when unset); `None` for a name that is not a field.
fn meta_field(m: &Meta, name: &str) -> Option<String> {
    let num = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    Some(match name {
        "model" => text(&m.model),
        "precision" => text(&m.precision),
        "framework" => text(&m.framework),
        "image" => text(&m.image),
        "tp" => num(m.tp),
        "ep" => num(m.ep),
        "concurrency" => num(m.concurrency),
        _ => return None,
    })
}

fn describe(b: &Baseline) -> String {
    let m = &b.meta;
    let mut parts = vec![format!("hardware {:?}", m.hardware)];
    for name in ["tp", "ep", "model", "precision", "framework", "concurrency"] {
        let v = meta_field(m, name).unwrap_or_default();
        if !v.is_empty() {
            parts.push(format!("{name} {v}"));
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
    let keys = run
        .keys
        .iter()
        .all(|(k, v)| meta_field(&b.meta, k).is_some_and(|f| f.eq_ignore_ascii_case(v)));
    hardware && ranks && keys
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
pub fn discover(dir: &Path, run: &RunIdentity) -> Result<Baseline, DiscoveryError> {
    discover_admitting(dir, run, &|_| Ok(()))
}

/// [`discover`] where each file of `dir` is confined first, by the same rule as every path from
/// a workflow input (`env` gives `GITHUB_WORKSPACE`, `RUNNER_TEMP` and `GITHUB_ACTIONS`): in a
/// workflow, a symlink in the directory that leads out of the workspace is refused, not followed.
pub fn discover_confined(
    dir: &Path,
    run: &RunIdentity,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Baseline, DiscoveryError> {
    discover_admitting(dir, run, &|file| {
        crate::github::confine("--baselines", file, env).map_err(|e| e.to_string())
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
    fn keys_must_name_meta_fields() {
        assert_eq!(
            parse_keys(&["precision=fp4".into()]).unwrap(),
            vec![("precision".into(), "fp4".into())]
        );
        assert!(parse_keys(&["colour=red".into()]).is_err());
        assert!(parse_keys(&["precision".into()]).is_err());
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
            keys: vec![],
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
            keys: vec![],
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
}
