//! Paths taken from workflow inputs stay inside the job's own directories: a baseline or report
//! path such as `../../home/runner/.ssh/id_rsa` or `/etc/passwd` is refused, not read or written.

use std::path::{Component, Path, PathBuf};

/// A path that leaves the directories a workflow step may use.
#[derive(Debug, thiserror::Error)]
#[error(
    "{flag} {}: outside the workspace and the runner's temporary directory ({roots}); \
     in GitHub Actions, paths from workflow inputs must stay inside them",
    path.display()
)]
pub struct OutsideWorkspace {
    pub flag: &'static str,
    pub path: PathBuf,
    pub roots: String,
}

/// Checks `path` (given as `flag`) against `$GITHUB_WORKSPACE` and `$RUNNER_TEMP`. Outside
/// Actions (no `GITHUB_WORKSPACE`), everything is allowed: the user typed the path.
pub fn confine(
    flag: &'static str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), OutsideWorkspace> {
    let Some(workspace) = env("GITHUB_WORKSPACE").filter(|w| !w.is_empty()) else {
        return Ok(());
    };
    if path == Path::new("/dev/null") {
        return Ok(());
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let roots: Vec<PathBuf> = [Some(workspace), env("RUNNER_TEMP")]
        .into_iter()
        .flatten()
        .filter(|r| !r.is_empty())
        .map(|r| resolved(&cwd, Path::new(&r)))
        .collect();
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    // Lexically (`..` cannot climb out) and, when the path exists, through its symlinks.
    let lexical = resolved(&cwd, path);
    let real = std::fs::canonicalize(path).ok();
    if inside(&lexical) && real.as_deref().is_none_or(inside) {
        return Ok(());
    }
    Err(OutsideWorkspace {
        flag,
        path: path.to_path_buf(),
        roots: roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// `path` made absolute against `cwd` with `.` and `..` resolved lexically; an existing root is
/// also canonicalized so that a symlinked workspace compares equal.
fn resolved(cwd: &Path, path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in cwd.join(path).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    std::fs::canonicalize(&out).unwrap_or(out)
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
        }
    }

    #[test]
    fn outside_actions_nothing_is_refused() {
        assert!(confine("--baseline", Path::new("/etc/passwd"), &|_| None).is_ok());
    }
}
