//! Reading the small text files tracegate is handed (baselines, verdicts, the GitHub event):
//! regular files only, and no more than a cap, so that `/dev/zero`, a FIFO or a runaway file is a
//! clear error instead of unbounded memory or a hang.

use std::io::Read;
use std::path::Path;

/// Baselines, rules and verdict files are kilobytes; 16 MiB is far above any real one.
pub const TEXT_CAP: u64 = 16 << 20;
/// GitHub's webhook payloads are at most 25 MB.
pub const EVENT_CAP: u64 = 25 << 20;

/// Refuses, from its metadata alone, what is not a regular file of at most `cap` bytes: the
/// checks [`read_text_capped`] makes before it reads (`InvalidInput`: not a regular file;
/// `InvalidData`: too large).
pub fn check_regular_capped(path: &Path, cap: u64) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > cap {
        return Err(too_large(cap));
    }
    Ok(())
}

fn too_large(cap: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("larger than {} MiB", cap >> 20),
    )
}

/// The text of a regular file of at most `cap` bytes.
pub fn read_text_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    check_regular_capped(path, cap)?;
    let mut text = String::new();
    // Read one byte past the cap: a file that grows while being read is still caught.
    std::fs::File::open(path)?
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
}
