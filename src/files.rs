//! Reading the files tracegate is handed (traces, baselines, rules, verdicts, the GitHub event):
//! regular files only, refused from their metadata before a byte is read and opened so that a
//! FIFO swapped in meanwhile cannot block, and for the small text files no more than a cap, so
//! that `/dev/zero`, a FIFO or a runaway file is a clear error instead of unbounded memory or a
//! hang.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Baselines, rules and verdict files are kilobytes; 16 MiB is far above any real one.
pub(crate) const TEXT_CAP: u64 = 16 << 20;
/// GitHub's webhook payloads are at most 25 MB.
pub(crate) const EVENT_CAP: u64 = 25 << 20;

fn not_regular() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file")
}

/// Refuses, from its metadata alone (symlinks followed), what is not a regular file: a device
/// (`/dev/zero`), a FIFO, a socket, a directory (`InvalidInput`, "not a regular file").
pub(crate) fn check_regular(path: &Path) -> std::io::Result<std::fs::Metadata> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    Ok(meta)
}

/// Refuses, from its metadata alone, what is not a regular file of at most `cap` bytes: the
/// checks [`read_text_capped`] makes before it reads (`InvalidInput`: not a regular file;
/// `InvalidData`: too large).
pub(crate) fn check_regular_capped(path: &Path, cap: u64) -> std::io::Result<()> {
    if check_regular(path)?.len() > cap {
        return Err(too_large(cap));
    }
    Ok(())
}

/// `O_NONBLOCK` on Linux (every architecture Rust supports there but alpha/sparc/mips/parisc).
#[cfg(all(
    target_os = "linux",
    not(any(target_arch = "mips", target_arch = "mips64", target_arch = "sparc64"))
))]
const O_NONBLOCK: i32 = 0o4000;
#[cfg(all(target_os = "linux", any(target_arch = "mips", target_arch = "mips64")))]
const O_NONBLOCK: i32 = 0o200;
#[cfg(all(target_os = "linux", target_arch = "sparc64"))]
const O_NONBLOCK: i32 = 0x4000;

fn nonblocking(options: &mut std::fs::OpenOptions) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(O_NONBLOCK);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = options;
}

/// `/dev/null`, the one output that is not a regular file: written to, discarded.
fn is_dev_null(path: &Path) -> bool {
    path == Path::new("/dev/null")
}

/// An output path (`--output`, `--verdict-out`, `GITHUB_STEP_SUMMARY`, `GITHUB_OUTPUT`): a
/// regular file (or a directory, for a flag that takes one), one that does not exist yet, or
/// `/dev/null`. A FIFO, a socket or another
/// device is refused (`InvalidInput`, "not a regular file"): writing to it could block the job
/// or go anywhere.
pub(crate) fn check_output(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        // A directory is for the flags that take one (`synth --out`); a file flag given one
        // fails on opening it, saying so.
        Ok(meta) if !meta.is_file() && !meta.is_dir() && !is_dev_null(path) => Err(not_regular()),
        _ => Ok(()),
    }
}

/// Opens an output file to append to, created if missing: [`check_output`] first, and the open
/// never blocks (`O_NONBLOCK`): a FIFO put in its place between the check and the open is
/// refused by the check of what was opened, not waited on.
pub(crate) fn open_append(path: &Path) -> std::io::Result<File> {
    check_output(path)?;
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    nonblocking(&mut options);
    let file = options.open(path)?;
    if !file.metadata()?.is_file() && !is_dev_null(path) {
        return Err(not_regular());
    }
    Ok(file)
}

/// Opens a regular file for reading: the one way every input is opened. The metadata is checked
/// first, and the open itself never blocks (`O_NONBLOCK`, which means nothing to a regular file):
/// a FIFO put in the file's place between the check and the open is refused by the check of
/// what was opened, not waited on.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<File> {
    check_regular(path)?;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    nonblocking(&mut options);
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

/// For a path given on the command line, checked before any work starts: a device, a FIFO or a
/// socket is refused (`InvalidInput`, "not a regular file"); a regular file, a directory (where
/// the flag takes one, its entries are checked as they are read) and a path that does not exist
/// (the reader says so) pass.
pub(crate) fn check_not_special(path: &Path) -> std::io::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => Err(not_regular()),
        _ => Ok(()),
    }
}

fn too_large(cap: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("larger than {} MiB", cap >> 20),
    )
}

/// The text of a regular file of at most `cap` bytes.
pub(crate) fn read_text_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    check_regular_capped(path, cap)?;
    let mut text = String::new();
    // Read one byte past the cap: a file that grows while being read is still caught.
    open_regular(path)?
        .take(cap + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > cap {
        return Err(too_large(cap));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_and_oversized_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_text_capped(dir.path(), 10).is_err());
        assert!(read_text_capped(Path::new("/dev/zero"), 10).is_err());
        let big = dir.path().join("big");
        std::fs::write(&big, "x".repeat(11)).unwrap();
        let err = read_text_capped(&big, 10).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        std::fs::write(&big, "x".repeat(10)).unwrap();
        assert_eq!(read_text_capped(&big, 10).unwrap().len(), 10);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_at_once_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        // No writer ever opens it: a plain open would block this test forever.
        for err in [
            open_regular(&fifo).unwrap_err(),
            read_text_capped(&fifo, 10).unwrap_err(),
            check_not_special(&fifo).unwrap_err(),
            check_not_special(Path::new("/dev/zero")).unwrap_err(),
        ] {
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
            assert_eq!(err.to_string(), "not a regular file");
        }
        assert!(check_not_special(dir.path()).is_ok());
        assert!(check_not_special(&dir.path().join("missing")).is_ok());
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "x").unwrap();
        let mut text = String::new();
        open_regular(&plain)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "x");
    }
}
