//! Streaming gzip JSON output: events are formatted one at a time into a reused buffer and written
//! through a gzip encoder, so a multi-GB trace never sits in memory.

use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};

use super::SynthError;

/// Integer nanoseconds shown as Kineto microseconds with exactly three decimals.
#[derive(Clone, Copy)]
pub(crate) struct Us(pub u64);

impl fmt::Display for Us {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// A JSON string literal (with quotes).
pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub(crate) struct Out {
    w: BufWriter<GzEncoder<File>>,
    path: PathBuf,
    first: bool,
    /// The event being built; call [`Out::emit`] to write it.
    pub ev: String,
    pub bytes: u64,
    pub events: u64,
}

impl Out {
    pub(crate) fn create(path: &Path) -> Result<Self, SynthError> {
        let f = File::create(path).map_err(|e| SynthError::io(path, e))?;
        // mtime 0 and no file name in the header: byte-identical output.
        let gz = GzBuilder::new().mtime(0).write(f, Compression::new(5));
        Ok(Out {
            w: BufWriter::with_capacity(1 << 20, gz),
            path: path.to_path_buf(),
            first: true,
            ev: String::with_capacity(4096),
            bytes: 0,
            events: 0,
        })
    }

    fn err(&self, e: std::io::Error) -> SynthError {
        SynthError::io(&self.path, e)
    }

    pub(crate) fn raw(&mut self, s: &str) -> Result<(), SynthError> {
        self.bytes += s.len() as u64;
        self.w
            .write_all(s.as_bytes())
            .map_err(|e| SynthError::io(&self.path, e))
    }

    /// Writes `self.ev` as the next element of `traceEvents` and clears it.
    pub(crate) fn emit(&mut self) -> Result<(), SynthError> {
        let sep: &[u8] = if self.first { b"\n  " } else { b",\n  " };
        self.first = false;
        let r = self
            .w
            .write_all(sep)
            .and_then(|_| self.w.write_all(self.ev.as_bytes()));
        if let Err(e) = r {
            return Err(self.err(e));
        }
        self.bytes += (sep.len() + self.ev.len()) as u64;
        self.events += 1;
        self.ev.clear();
        Ok(())
    }

    /// Flushes and closes; returns (uncompressed bytes, events).
    pub(crate) fn finish(self) -> Result<(u64, u64), SynthError> {
        let path = self.path.clone();
        let (bytes, events) = (self.bytes, self.events);
        let gz = self
            .w
            .into_inner()
            .map_err(|e| SynthError::io(&path, e.into_error()))?;
        let f = gz.finish().map_err(|e| SynthError::io(&path, e))?;
        f.sync_all().ok();
        Ok((bytes, events))
    }
}
