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
        .map(|r| real(&cwd.join(r)))
        .collect();
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    // Lexically (`..` cannot climb out) and as the OS resolves it, through symlinks.
    let absolute = cwd.join(path);
    if inside(&lexical(&absolute)) && inside(&real(&absolute)) {
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

/// [`confine`] for a path tracegate writes: also refuses a symlink (dangling or not) in its place,
/// since writing through it would land wherever it points.
pub fn confine_output(
    flag: &'static str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), OutsideWorkspace> {
    confine(flag, path, env)?;
    let in_actions = env("GITHUB_WORKSPACE").is_some_and(|w| !w.is_empty());
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if in_actions && is_link && path != Path::new("/dev/null") {
        return Err(OutsideWorkspace {
            flag,
            path: path.to_path_buf(),
            roots: "a symlink is never written through".into(),
        });
    }
    Ok(())
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
    fn an_output_that_is_a_symlink_is_refused_even_dangling() {
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
    }
}
