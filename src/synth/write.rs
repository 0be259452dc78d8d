//! Streaming JSON output: events are formatted one at a time into a reused buffer and written
//! through a gzip encoder (or straight to the file), so a multi-GB trace never sits in memory.

use std::fmt::{self, Write as _};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::{Compression, GzBuilder};

use super::SynthError;
use crate::reader::scan::Scanner;

/// Integer nanoseconds shown as Kineto microseconds with exactly three decimals.
#[derive(Clone, Copy)]
pub(crate) struct Us(pub u64);

impl fmt::Display for Us {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(String::new().us(self.0))
    }
}

/// Appends the pieces of an event to the text being built. `write!` spent a third of synth's
/// time in the formatting machinery; these write the same bytes directly.
pub(crate) trait Append {
    fn text(&mut self, s: &str) -> &mut Self;
    /// An integer in decimal, as `Display` writes it.
    fn int(&mut self, v: impl itoa::Integer) -> &mut Self;
    /// Integer nanoseconds as Kineto microseconds with exactly three decimals (what [`Us`]
    /// displays).
    fn us(&mut self, ns: u64) -> &mut Self;
}

impl Append for String {
    fn text(&mut self, s: &str) -> &mut Self {
        self.push_str(s);
        self
    }

    fn int(&mut self, v: impl itoa::Integer) -> &mut Self {
        self.push_str(itoa::Buffer::new().format(v));
        self
    }

    fn us(&mut self, ns: u64) -> &mut Self {
        let frac = ns % 1000;
        self.int(ns / 1000);
        self.push('.');
        for digit in [frac / 100, frac / 10 % 10, frac % 10] {
            self.push(char::from(b'0' + digit as u8));
        }
        self
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

/// The file a trace is written to: through gzip, or plain. One per file, so the size of the
/// gzip state does not matter.
#[allow(clippy::large_enum_variant)]
enum Sink {
    Gzip(GzEncoder<File>),
    Plain(File),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Gzip(gz) => gz.write(buf),
            Sink::Plain(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Gzip(gz) => gz.flush(),
            Sink::Plain(f) => f.flush(),
        }
    }
}

/// The path a trace named `name` (`….json.gz`) is written to: `name` under gzip, without its
/// `.gz` when plain. The JSON is the same either way, its `traceName` included.
pub(crate) fn encoded_path(dir: &Path, name: &str, gzip_level: Option<u32>) -> PathBuf {
    match gzip_level {
        Some(_) => dir.join(name),
        None => dir.join(name.strip_suffix(".gz").unwrap_or(name)),
    }
}

pub(crate) struct Out {
    w: BufWriter<Sink>,
    path: PathBuf,
    first: bool,
    /// The event being built; call [`Out::emit`] to write it.
    pub ev: String,
    pub bytes: u64,
    pub events: u64,
}

impl Out {
    /// A gzip file at `gzip_level` (0 to 9), or a plain one for `None`.
    pub(crate) fn create(path: &Path, gzip_level: Option<u32>) -> Result<Self, SynthError> {
        let f = File::create(path).map_err(|e| SynthError::io(path, e))?;
        let sink = match gzip_level {
            // mtime 0 and no file name in the header: byte-identical output.
            Some(level) => Sink::Gzip(
                GzBuilder::new()
                    .mtime(0)
                    .write(f, Compression::new(level.min(9))),
            ),
            None => Sink::Plain(f),
        };
        Ok(Out {
            w: BufWriter::with_capacity(1 << 20, sink),
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
        let sink = self
            .w
            .into_inner()
            .map_err(|e| SynthError::io(&path, e.into_error()))?;
        if let Sink::Gzip(gz) = sink {
            gz.finish().map_err(|e| SynthError::io(&path, e))?;
        }
        Ok((bytes, events))
    }
}

/// The position of the top-level `"pid":` value in one event of this generator's output, and
/// the length of its number; `None` when the event has no numeric pid.
fn numeric_pid(event: &[u8]) -> Option<(usize, usize)> {
    let at = memchr::memmem::find(event, b"\"pid\":")? + 6;
    let len = event[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    (len > 0).then_some((at, len))
}

/// Frames the next value of a rank file, as bytes.
fn next_value<'a, R: std::io::Read>(
    scan: &'a mut Scanner<R>,
    path: &Path,
) -> Result<&'a [u8], SynthError> {
    scan.next_value()
        .map(|(_, v)| v)
        .map_err(|e| SynthError::io(path, std::io::Error::other(format!("{e:?}"))))
}

fn expect<R: std::io::Read>(scan: &mut Scanner<R>, b: u8, path: &Path) -> Result<(), SynthError> {
    scan.expect(b, "a byte of the generator's own output")
        .map_err(|e| SynthError::io(path, std::io::Error::other(format!("{e:?}"))))
}

fn peek<R: std::io::Read>(scan: &mut Scanner<R>, path: &Path) -> Result<Option<u8>, SynthError> {
    scan.peek()
        .map_err(|e| SynthError::io(path, std::io::Error::other(format!("{e:?}"))))
}

/// Writes the rank files `parts` (rank order) as one merged file, the way SGLang's profile
/// merger does: one JSON line, `traceEvents` first with every rank's events in rank order and
/// each pid rewritten to `"[TPnn] pid"`, then the other top-level keys of rank 0, then the
/// `deviceProperties` of every rank. Streams: one event at a time. Returns (JSON bytes, events).
pub(crate) fn merge_rank_files(
    parts: &[PathBuf],
    path: &Path,
    gzip_level: Option<u32>,
) -> Result<(u64, u64), SynthError> {
    let mut out = Out::create(path, gzip_level)?;
    out.raw("{\"traceEvents\": [")?;
    let mut others: Vec<(String, Vec<u8>)> = Vec::new();
    let mut devices: Vec<Box<serde_json::value::RawValue>> = Vec::new();
    let mut first = true;
    for (rank, part) in parts.iter().enumerate() {
        let file = File::open(part).map_err(|e| SynthError::io(part, e))?;
        let file = std::io::BufReader::with_capacity(1 << 16, file);
        let mut scan = Scanner::new(match gzip_level {
            Some(_) => Box::new(flate2::read::MultiGzDecoder::new(file)) as Box<dyn std::io::Read>,
            None => Box::new(file),
        });
        let label = format!("[TP{rank:02}] ");
        expect(&mut scan, b'{', part)?;
        loop {
            let key: String = serde_json::from_slice(next_value(&mut scan, part)?)
                .map_err(|e| SynthError::io(part, e.into()))?;
            expect(&mut scan, b':', part)?;
            if key == "traceEvents" {
                expect(&mut scan, b'[', part)?;
                while peek(&mut scan, part)? != Some(b']') {
                    let event = next_value(&mut scan, part)?;
                    out.ev.clear();
                    match numeric_pid(event) {
                        Some((at, len)) => {
                            let text = |r: std::ops::Range<usize>| {
                                std::str::from_utf8(&event[r]).unwrap_or_default()
                            };
                            out.ev.push_str(text(0..at));
                            out.ev.push('"');
                            out.ev.push_str(&label);
                            out.ev.push_str(text(at..at + len));
                            out.ev.push('"');
                            out.ev.push_str(text(at + len..event.len()));
                        }
                        None => out
                            .ev
                            .push_str(std::str::from_utf8(event).unwrap_or_default()),
                    }
                    let sep = if first { "" } else { ", " };
                    first = false;
                    let ev = std::mem::take(&mut out.ev);
                    out.raw(sep)?;
                    out.raw(&ev)?;
                    out.ev = ev;
                    out.events += 1;
                    if peek(&mut scan, part)? == Some(b',') {
                        expect(&mut scan, b',', part)?;
                    }
                }
                expect(&mut scan, b']', part)?;
            } else {
                let value = next_value(&mut scan, part)?;
                if key == "deviceProperties" {
                    let list: Vec<Box<serde_json::value::RawValue>> = serde_json::from_slice(value)
                        .map_err(|e| SynthError::io(part, e.into()))?;
                    devices.extend(list);
                } else if rank == 0 {
                    others.push((key, value.to_vec()));
                }
            }
            if peek(&mut scan, part)? == Some(b',') {
                expect(&mut scan, b',', part)?;
                continue;
            }
            expect(&mut scan, b'}', part)?;
            break;
        }
    }
    out.raw("]")?;
    for (key, value) in others {
        out.raw(&format!(", {}: ", json_str(&key)))?;
        out.raw(std::str::from_utf8(&value).unwrap_or("null"))?;
    }
    let devices: Vec<&str> = devices.iter().map(|d| d.get()).collect();
    out.raw(&format!(
        ", \"deviceProperties\": [{}]}}",
        devices.join(", ")
    ))?;
    out.ev.clear();
    out.finish()
}

/// vLLM's frontend trace (`{host}_{pid}.async_llm.{ns}.pt.trace.json.gz`), written beside the
/// workers' unless `ignore_frontend=true`: the API server's CPU ops and annotations, no GPU
/// activity, no `distributedInfo`, no rank in its name. Returns its path.
pub(crate) fn vllm_frontend(
    dir: &Path,
    stamp: &str,
    version: &str,
    ts0_ns: u64,
    gzip_level: Option<u32>,
) -> Result<PathBuf, SynthError> {
    let ns = stamp.replace('.', "");
    let name = format!("node-a_4000.async_llm.{ns}.pt.trace.json.gz");
    let path = encoded_path(dir, &name, gzip_level);
    let mut out = Out::create(&path, gzip_level)?;
    out.raw(&format!(
        "{{\n  \"schemaVersion\": 1,\n  \"vllm_version\": {},\n  \"deviceProperties\": [],\n  \"traceEvents\": [",
        json_str(version)
    ))?;
    for i in 0..40u64 {
        let t = ts0_ns + i * 25_000_000;
        let events = [
            ("user_annotation", "AsyncLLM.generate", t, 20_000_000),
            ("cpu_op", "aten::empty", t + 1_000, 4_000),
            ("cpu_op", "aten::copy_", t + 9_000, 30_000),
        ];
        for (cat, op, ts, dur) in events {
            out.ev
                .text(r#"{"ph": "X", "cat": ""#)
                .text(cat)
                .text(r#"", "name": ""#)
                .text(op)
                .text(r#"", "pid": 4000, "tid": 4000, "ts": "#)
                .us(ts)
                .text(r#", "dur": "#)
                .us(dur)
                .text("}");
            out.emit()?;
        }
    }
    out.raw(&format!(
        "\n  ],\n  \"traceName\": \"/tmp/vllm_profile/{name}\"\n}}\n"
    ))?;
    out.finish()?;
    Ok(path)
}
