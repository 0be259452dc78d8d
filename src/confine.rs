//! Paths taken from workflow inputs stay inside the job's own directories: a baseline or report
//! path such as `../../home/runner/.ssh/id_rsa` or `/etc/passwd` is refused, not read or written.
//!
//! One rule, for every path confined (inputs, outputs, the baselines a directory holds, `synth
//! --out`): in a workflow, the path and where it leads, symlinks followed (dangling ones too),
//! are inside `$GITHUB_WORKSPACE` or `$RUNNER_TEMP`. A symlink is judged by its target: one that
//! points inside is fine, one that points out is refused saying so. A workflow is recognised by
//! `GITHUB_WORKSPACE` being set or by `GITHUB_ACTIONS=true`; one whose `GITHUB_WORKSPACE` is unset
//! or empty cannot be confined and is refused (fail closed), never run unconfined.

use std::path::{Component, Path, PathBuf};

/// A device, a FIFO or a socket named for input is refused before any work (the command line's
/// first check of every input path, with the confinement below).
pub(crate) use crate::files::{check_not_special, check_output};

/// Why a path is refused in a workflow.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfineError {
    /// The path itself leaves the directories a workflow step may use.
    #[error(
        "{flag} {}: outside the workspace and the runner's temporary directory ({roots}); \
         in GitHub Actions, paths from workflow inputs must stay inside them",
        path.display()
    )]
    Outside {
        flag: &'static str,
        path: PathBuf,
        roots: String,
    },
    /// The path is inside, but it is (or passes through) a symlink that leads out.
    #[error(
        "{flag} {}: a symlink to {}, outside the workspace and the runner's temporary directory \
         ({roots}); a symlink is judged by where it points",
        path.display(),
        target.display()
    )]
    Symlink {
        flag: &'static str,
        path: PathBuf,
        target: PathBuf,
        roots: String,
    },
    /// In a workflow without a workspace to confine to.
    #[error(
        "{flag} {}: GITHUB_WORKSPACE is {why}, so paths from workflow inputs cannot be confined \
         to it; refusing to run unconfined (set GITHUB_WORKSPACE, or unset GITHUB_ACTIONS outside \
         a workflow)",
        path.display()
    )]
    NoWorkspace {
        flag: &'static str,
        path: PathBuf,
        why: &'static str,
    },
}

/// The directories a path may stay in: `None` outside a workflow (no `GITHUB_WORKSPACE` and no
/// `GITHUB_ACTIONS=true`), where everything is allowed: the user typed the path.
fn roots_of(
    flag: &'static str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Vec<PathBuf>>, ConfineError> {
    let in_actions = env("GITHUB_ACTIONS").is_some_and(|v| v == "true");
    let workspace = match env("GITHUB_WORKSPACE") {
        Some(w) if !w.is_empty() => w,
        Some(_) => {
            return Err(ConfineError::NoWorkspace {
                flag,
                path: path.to_path_buf(),
                why: "empty",
            })
        }
        None if in_actions => {
            return Err(ConfineError::NoWorkspace {
                flag,
                path: path.to_path_buf(),
                why: "unset while GITHUB_ACTIONS=true",
            })
        }
        None => return Ok(None),
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    Ok(Some(
        [Some(workspace), env("RUNNER_TEMP")]
            .into_iter()
            .flatten()
            .filter(|r| !r.is_empty())
            .map(|r| real(&cwd.join(r)))
            .collect(),
    ))
}

fn shown(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `path` (given as `flag`) against `$GITHUB_WORKSPACE` and `$RUNNER_TEMP`, by its own
/// place and by where it leads. Outside a workflow, everything is allowed; in one without a
/// workspace, nothing is. This is the one check of a path from a workflow input: every command
/// and every reader of such paths (discovery, sweep's verdicts) calls it.
pub(crate) fn confine(
    flag: &'static str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ConfineError> {
    let Some(roots) = roots_of(flag, path, env)? else {
        return Ok(());
    };
    if path == Path::new("/dev/null") {
        return Ok(());
    }
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let cwd = std::env::current_dir().unwrap_or_default();
    // Lexically (`..` cannot climb out), then as the OS resolves it, through symlinks.
    let absolute = cwd.join(path);
    if !inside(&lexical(&absolute)) {
        return Err(ConfineError::Outside {
            flag,
            path: path.to_path_buf(),
            roots: shown(&roots),
        });
    }
    let target = resolved(&absolute);
    if !inside(&target) {
        return Err(ConfineError::Symlink {
            flag,
            path: path.to_path_buf(),
            target,
            roots: shown(&roots),
        });
    }
    Ok(())
}

/// [`confine`] for a path tracegate writes. The same rule: a symlink (dangling or not) is
/// judged by where a write through it would land.
pub(crate) fn confine_output(
    flag: &'static str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ConfineError> {
    confine(flag, path, env)
}

/// Symlinks followed at most, as the kernel does (`ELOOP` beyond).
const MAX_LINKS: usize = 40;

/// Where `path` leads: a symlink in its last part is followed even when it dangles (a write
/// through it would create its target), then [`real`] resolves the directories above. A loop
/// of links resolves to where the walk stopped, which the caller judges like any path.
fn resolved(path: &Path) -> PathBuf {
    let mut at = lexical(path);
    for _ in 0..MAX_LINKS {
        // The directories first: a link's relative target is relative to where it really is.
        let dir_real = match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => real(parent).join(name),
            _ => return real(&at),
        };
        match std::fs::read_link(&dir_real) {
            Ok(target) => {
                at = lexical(&dir_real.parent().unwrap_or(Path::new("/")).join(target));
            }
            Err(_) => return real(&dir_real),
        }
    }
    real(&at)
}

/// `.` and `..` resolved without looking at the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Where the OS would put `path`: its longest existing ancestor canonicalized (symlinks
/// followed), the rest appended. A file not yet written under a symlinked directory resolves
/// to where it would be written.
fn real(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(found) = std::fs::canonicalize(existing) {
            return lexical(&rest.iter().rev().fold(found, |p, name| p.join(name)));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return lexical(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(workspace: &Path, temp: &Path) -> impl Fn(&str) -> Option<String> {
        let (w, t) = (workspace.display().to_string(), temp.display().to_string());
        move |name| match name {
            "GITHUB_WORKSPACE" => Some(w.clone()),
            "RUNNER_TEMP" => Some(t.clone()),
            _ => None,
        }
    }

    #[test]
    fn paths_inside_pass_and_escapes_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let (ws, temp) = (root.path().join("ws"), root.path().join("temp"));
        std::fs::create_dir_all(ws.join("baselines")).unwrap();
        std::fs::create_dir_all(&temp).unwrap();
        let env = env_of(&ws, &temp);
        for ok in [
            ws.join("baselines/x.toml"),
            ws.join("baselines/../report.md"),
            temp.join("tracegate/verdict.json"),
            PathBuf::from("/dev/null"),
        ] {
            assert!(confine("--output", &ok, &env).is_ok(), "{}", ok.display());
        }
        for bad in [
            ws.join("../outside.toml"),
            ws.join("baselines/../../../etc/passwd"),
            PathBuf::from("/etc/passwd"),
        ] {
            let err = confine("--baseline", &bad, &env).unwrap_err();
            assert!(err.to_string().starts_with("--baseline "), "{err}");
        }
        // A symlink inside the workspace that points out of it.
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", ws.join("link")).unwrap();
            assert!(confine("--baseline", &ws.join("link/passwd"), &env).is_err());
            // A file not written yet, under that symlink, would land outside too.
            assert!(confine("--output", &ws.join("link/new/report.md"), &env).is_err());
            // A symlink that stays inside is fine.
            std::os::unix::fs::symlink(ws.join("baselines"), ws.join("b")).unwrap();
            assert!(confine("--output", &ws.join("b/new.md"), &env).is_ok());
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_output_that_is_a_symlink_out_is_refused_even_dangling() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let env = env_of(&ws, &ws);
        let outside = root.path().join("outside.md");
        std::os::unix::fs::symlink(&outside, ws.join("report.md")).unwrap();
        assert!(!outside.exists());
        assert!(confine_output("--output", &ws.join("report.md"), &env).is_err());
        assert!(confine_output("--output", &ws.join("plain.md"), &env).is_ok());
        assert!(confine_output("--output", &ws.join("report.md"), &|_| None).is_ok());
    }

    #[test]
    fn outside_actions_nothing_is_refused() {
        assert!(confine("--baseline", Path::new("/etc/passwd"), &|_| None).is_ok());
        let not_actions = |name: &str| (name == "GITHUB_ACTIONS").then(|| "false".to_string());
        assert!(confine("--baseline", Path::new("/etc/passwd"), &not_actions).is_ok());
    }

    #[test]
    fn a_workflow_without_a_workspace_is_refused_not_run_unconfined() {
        let actions_unset = |name: &str| (name == "GITHUB_ACTIONS").then(|| "true".to_string());
        let empty = |name: &str| (name == "GITHUB_WORKSPACE").then(String::new);
        let actions_empty = |name: &str| match name {
            "GITHUB_ACTIONS" => Some("true".to_string()),
            "GITHUB_WORKSPACE" | "RUNNER_TEMP" => Some(String::new()),
            _ => None,
        };
        for (env, why) in [
            (&actions_unset as &dyn Fn(&str) -> Option<String>, "unset"),
            (&empty, "empty"),
            (&actions_empty, "empty"),
        ] {
            for path in ["/etc/passwd", "baselines/x.toml"] {
                let err = confine("--baseline", Path::new(path), env).unwrap_err();
                assert!(matches!(err, ConfineError::NoWorkspace { .. }), "{err}");
                let text = err.to_string();
                assert!(
                    text.starts_with(&format!("--baseline {path}: GITHUB_WORKSPACE is {why}")),
                    "{text}"
                );
                assert!(confine_output("--output", Path::new(path), env).is_err());
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_judged_by_its_target_and_named_as_the_reason() {
        use std::os::unix::fs::symlink;
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(ws.join("baselines")).unwrap();
        std::fs::write(ws.join("baselines/real.toml"), "").unwrap();
        std::fs::write(root.path().join("outside.toml"), "").unwrap();
        let env = env_of(&ws, &ws);
        // Inside, pointing inside: fine, as an input and as an output, relative or absolute,
        // dangling or not, through a chain of links.
        symlink("baselines/real.toml", ws.join("rel.toml")).unwrap();
        symlink(ws.join("baselines/real.toml"), ws.join("abs.toml")).unwrap();
        symlink("baselines/not-yet.toml", ws.join("dangling-in.toml")).unwrap();
        symlink("rel.toml", ws.join("chain.toml")).unwrap();
        for ok in ["rel.toml", "abs.toml", "dangling-in.toml", "chain.toml"] {
            assert!(confine("--baseline", &ws.join(ok), &env).is_ok(), "{ok}");
            assert!(
                confine_output("--baseline", &ws.join(ok), &env).is_ok(),
                "{ok}"
            );
        }
        // Inside, pointing out (relative with `..`, absolute, dangling, or one link on): refused,
        // and the reason is the symlink, with its target, not "outside" alone.
        symlink("../outside.toml", ws.join("rel-out.toml")).unwrap();
        symlink(root.path().join("outside.toml"), ws.join("abs-out.toml")).unwrap();
        symlink(root.path().join("new.toml"), ws.join("dangling-out.toml")).unwrap();
        symlink("rel-out.toml", ws.join("chain-out.toml")).unwrap();
        for bad in [
            "rel-out.toml",
            "abs-out.toml",
            "dangling-out.toml",
            "chain-out.toml",
        ] {
            let err = confine("--baseline", &ws.join(bad), &env).unwrap_err();
            assert!(matches!(err, ConfineError::Symlink { .. }), "{bad}: {err}");
            let text = err.to_string();
            assert!(text.contains(": a symlink to "), "{text}");
            assert!(text.contains("outside the workspace"), "{text}");
            assert!(confine_output("--baseline", &ws.join(bad), &env).is_err());
        }
        // A loop of links is not followed forever, and is not inside anything real.
        symlink("loop-b", ws.join("loop-a")).unwrap();
        symlink("loop-a", ws.join("loop-b")).unwrap();
        let _ = confine("--baseline", &ws.join("loop-a"), &env);
        // A path outside is refused for being outside, not as a symlink.
        let err = confine("--baseline", &root.path().join("outside.toml"), &env).unwrap_err();
        assert!(matches!(err, ConfineError::Outside { .. }), "{err}");
    }
}
