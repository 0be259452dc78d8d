//! The baseline file handled like a package manager's lockfile: `baseline new|update` write through
//! a symlink to its target, keep the file's mode and refuse a read-only one, hold an advisory lock
//! (`flock`) on the directory around read-modify-write so that two updates cannot lose one, fsync
//! the file and the directory around the rename, and remove the temporary files of writers that
//! died before their rename.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a baseline file cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum BaselineFileError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "{}: the file is read-only (mode {mode:04o}): refusing to replace it; make it writable \
         (chmod u+w) to update it",
        path.display()
    )]
    ReadOnly { path: PathBuf, mode: u32 },
    #[error("{}: a symlink to nothing ({}): refusing to write through it", path.display(), target.display())]
    DanglingSymlink { path: PathBuf, target: PathBuf },
    #[error("{}: not a regular file: refusing to replace it", path.display())]
    NotAFile { path: PathBuf },
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> BaselineFileError + '_ {
    move |error| BaselineFileError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// The file a baseline path stands for: a symlink's target (followed to the end), else the path.
pub(crate) fn target(path: &Path) -> Result<PathBuf, BaselineFileError> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(path.to_path_buf());
    }
    std::fs::canonicalize(path).map_err(|_| BaselineFileError::DanglingSymlink {
        path: path.to_path_buf(),
        target: std::fs::read_link(path).unwrap_or_default(),
    })
}

/// The directory a file is in (`.` for a bare name).
fn directory(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// An advisory lock on a baseline's directory, held until dropped: every `baseline new|update`
/// of a file in that directory waits for it, so a read-modify-write is never interleaved with
/// another. The lock is on the directory, not the file, because the file is replaced (renamed
/// over) by each write: a lock on the old file would not stop a writer that opened the new one.
pub(crate) struct Lock {
    /// Open for as long as the lock is held: closing it releases the lock.
    _dir: File,
}

/// Takes the lock for the baseline at `path` (its symlink target's directory), waiting for
/// another process that holds it.
pub(crate) fn lock(path: &Path) -> Result<Lock, BaselineFileError> {
    let target = target(path)?;
    let dir = directory(&target);
    let file = File::open(dir).map_err(io(dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        loop {
            // SAFETY: flock on a file descriptor this function owns; no memory is passed.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                break;
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(io(dir)(error));
            }
        }
    }
    Ok(Lock { _dir: file })
}

/// The temporary file a writer with this process id uses for `name`.
fn temporary_name(name: &str, pid: u32) -> String {
    format!(".{name}.tracegate-{pid}.tmp")
}

/// Removes the temporary files for `name` in `dir` left by processes that no longer run (a
/// writer killed between creating its temporary file and renaming it). Where there is no `/proc`
/// to tell, nothing is removed.
fn remove_stale_temporaries(dir: &Path, name: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let prefix = format!(".{name}.tracegate-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// fsyncs a directory, so that the names in it (a new temporary file, a rename) survive a crash.
fn sync_directory(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Writes a baseline: through a symlink to its target; the whole text to a temporary file beside
/// it (created anew, never through something already at that name), fsynced, with the old file's
/// mode; the directory fsynced, the temporary renamed over the file, the directory fsynced again.
/// A read-only file is refused. Call it holding [`lock`] for a read-modify-write.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), BaselineFileError> {
    let target = target(path)?;
    let old = match std::fs::metadata(&target) {
        Ok(m) if !m.is_file() => {
            return Err(BaselineFileError::NotAFile {
                path: path.to_path_buf(),
            })
        }
        Ok(m) => Some(m.permissions()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(path)(e)),
    };
    if let Some(p) = old.as_ref().filter(|p| p.readonly()) {
        return Err(BaselineFileError::ReadOnly {
            path: path.to_path_buf(),
            mode: mode_of(p),
        });
    }
    let dir = directory(&target);
    let name = target
        .file_name()
        .map_or_else(|| "baseline".into(), |n| n.to_string_lossy().into_owned());
    remove_stale_temporaries(dir, &name);
    let temp = dir.join(temporary_name(&name, std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        f.write_all(bytes)?;
        if let Some(p) = old {
            f.set_permissions(p)?;
        }
        f.sync_all()?;
        drop(f);
        sync_directory(dir)?;
        std::fs::rename(&temp, &target)?;
        sync_directory(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(io(path))
}

#[cfg(unix)]
fn mode_of(p: &std::fs::Permissions) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    p.mode() & 0o7777
}

#[cfg(not(unix))]
fn mode_of(_: &std::fs::Permissions) -> u32 {
    0o444
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_symlinked_baseline_is_written_through_to_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.toml");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink("real.toml", &link).unwrap();
        write(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // A symlink to nothing is refused, and nothing is created.
        let dangling = dir.path().join("dangling.toml");
        std::os::unix::fs::symlink("missing.toml", &dangling).unwrap();
        let e = write(&dangling, b"x").unwrap_err().to_string();
        assert!(e.contains("symlink to nothing"), "{e}");
        assert!(!dir.path().join("missing.toml").exists());
    }

    #[test]
    fn the_mode_is_kept_and_a_read_only_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.toml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write(&path, b"new").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let e = write(&path, b"newer").unwrap_err().to_string();
        assert!(e.contains("read-only (mode 0444)"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }

    #[test]
    fn stale_temporaries_of_dead_processes_are_removed_and_live_ones_kept() {
        if !Path::new("/proc/self").exists() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.toml");
        std::fs::write(&path, "old").unwrap();
        // A process id above the kernel's pid_max is no running process.
        let dead = dir.path().join(temporary_name("b.toml", 4_194_305));
        let live = dir.path().join(temporary_name("b.toml", 1));
        let other = dir.path().join(temporary_name("c.toml", 4_194_305));
        for f in [&dead, &live, &other] {
            std::fs::write(f, "half").unwrap();
        }
        write(&path, b"new").unwrap();
        assert!(!dead.exists());
        assert!(live.exists(), "pid 1 runs");
        assert!(
            other.exists(),
            "another file's temporary is not ours to remove"
        );
        let mine = dir
            .path()
            .join(temporary_name("b.toml", std::process::id()));
        assert!(!mine.exists());
    }

    #[test]
    fn the_lock_is_exclusive_between_processes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.toml");
        std::fs::write(&path, "x").unwrap();
        let held = lock(&path).unwrap();
        // Another open file description of the directory cannot take it while it is held.
        let other = File::open(dir.path()).unwrap();
        use std::os::unix::io::AsRawFd;
        let try_lock =
            |f: &File| unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_ne!(try_lock(&other), 0);
        drop(held);
        assert_eq!(try_lock(&other), 0);
    }
}
