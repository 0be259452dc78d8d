//! A CUDA/HIP-graph capture trace: the runtime launches recorded while a graph was captured, in
//! capture order, each with the host context a replayed kernel lacks (its `cpu_op`, the library
//! op above it, their `Input Dims` and `Input type`, the Python call stack).
//!
//! Streamed event by event like a run (never a DOM of the file); only the launches, the `cpu_op`
//! ranges and the `python_function` frames are kept, then joined by time containment on each
//! host thread.

// Public for `testing` (which re-exports `read_capture`), crate-private otherwise.
#![allow(unreachable_pub)]
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::scan::Scanner;
use super::{file, ReadError, ReadErrorKind};

mod nest;

/// What a captured launch put into the graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaptureKind {
    Kernel,
    Memcpy,
    Memset,
}

/// One `cpu_op` around a launch: its name and the shapes and dtypes it was called with.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureOp {
    pub name: String,
    /// Start on the host, nanoseconds: with the name, which call of the op this is.
    pub ts: i64,
    /// One list per input; an input that is not a tensor (or a tensor list) is empty.
    pub input_dims: Vec<Vec<u64>>,
    pub input_types: Vec<String>,
}

/// One runtime launch recorded during capture.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureLaunch {
    pub kind: CaptureKind,
    /// `args.kernel` for a kernel; the runtime call's name for a memcpy or memset.
    pub kernel: String,
    /// Start on the host, nanoseconds.
    pub ts: i64,
    pub tid: String,
    pub correlation: Option<u64>,
    /// `args["graph node id"]` (PyTorch >= 2.12).
    pub graph_node: Option<u64>,
    /// The innermost `cpu_op` containing the launch on its thread.
    pub op: Option<CaptureOp>,
    /// The innermost op above `op` that is not an ATen op: the library op that called it
    /// (`aiter::gemm_a16w16` above `aten::matmul` above `aten::mm`).
    pub library_op: Option<CaptureOp>,
    /// `python_function` frames containing the launch, outermost first.
    pub python: Vec<String>,
}

/// The launches of one capture trace, in capture order.
#[derive(Debug, Clone)]
pub struct Capture {
    pub file: PathBuf,
    pub launches: Vec<CaptureLaunch>,
}

#[derive(Deserialize)]
struct RawEvent {
    ph: Option<String>,
    cat: Option<String>,
    name: Option<String>,
    ts: Option<f64>,
    dur: Option<f64>,
    tid: Option<serde_json::Value>,
    #[serde(default)]
    args: RawArgs,
}

#[derive(Deserialize, Default)]
struct RawArgs {
    kernel: Option<String>,
    correlation: Option<u64>,
    #[serde(rename = "graph node id")]
    graph_node: Option<u64>,
    #[serde(rename = "Input Dims")]
    input_dims: Option<serde_json::Value>,
    #[serde(rename = "Input type")]
    input_types: Option<Vec<serde_json::Value>>,
}

/// A host-side range kept for the containment join.
pub(super) struct Range<T> {
    pub(super) ts: i64,
    pub(super) end: i64,
    pub(super) tid: String,
    pub(super) what: T,
}

#[derive(Default)]
struct Collected {
    launches: Vec<Range<CaptureLaunch>>,
    ops: Vec<Range<CaptureOp>>,
    frames: Vec<Range<String>>,
    /// `*StreamBeginCapture` / `*StreamEndCapture` starts, per thread.
    begin: Vec<(String, i64)>,
    end: Vec<(String, i64)>,
}

fn ns(us: f64) -> i64 {
    (us * 1000.0).round() as i64
}

fn tid_text(v: &Option<serde_json::Value>) -> String {
    match v {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

fn dims(v: Option<serde_json::Value>) -> Vec<Vec<u64>> {
    let Some(serde_json::Value::Array(inputs)) = v else {
        return Vec::new();
    };
    inputs
        .into_iter()
        .map(|input| match input {
            serde_json::Value::Array(d) => d.iter().filter_map(|x| x.as_u64()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// A launch without `args.kernel` (an older profiler) is still a kernel, named by its runtime
/// call: names cannot align then, but positions can.
fn launch_kind(name: &str, kernel: bool) -> Option<CaptureKind> {
    if kernel || name.contains("LaunchKernel") || name.contains("LaunchCooperativeKernel") {
        Some(CaptureKind::Kernel)
    } else if name.contains("Memcpy") {
        Some(CaptureKind::Memcpy)
    } else if name.contains("Memset") {
        Some(CaptureKind::Memset)
    } else {
        None
    }
}

impl Collected {
    fn add(&mut self, e: RawEvent) {
        if e.ph.as_deref() != Some("X") {
            return;
        }
        let (Some(cat), Some(name), Some(ts)) = (e.cat, e.name, e.ts) else {
            return;
        };
        let ts = ns(ts);
        let end = ts + ns(e.dur.unwrap_or(0.0)).max(0);
        let tid = tid_text(&e.tid);
        match cat.as_str() {
            "cuda_runtime" | "hip_runtime" | "cuda_driver" => {
                if name.ends_with("StreamBeginCapture") {
                    self.begin.push((tid, ts));
                } else if name.ends_with("StreamEndCapture") {
                    self.end.push((tid, ts));
                } else if let Some(kind) = launch_kind(&name, e.args.kernel.is_some()) {
                    let launch = CaptureLaunch {
                        kind,
                        kernel: e.args.kernel.unwrap_or(name),
                        ts,
                        tid: tid.clone(),
                        correlation: e.args.correlation,
                        graph_node: e.args.graph_node,
                        op: None,
                        library_op: None,
                        python: Vec::new(),
                    };
                    self.launches.push(Range {
                        ts,
                        end,
                        tid,
                        what: launch,
                    });
                }
            }
            "cpu_op" => {
                let input_types = e
                    .args
                    .input_types
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| t.as_str().unwrap_or_default().to_string())
                    .collect();
                let op = CaptureOp {
                    name,
                    ts,
                    input_dims: dims(e.args.input_dims),
                    input_types,
                };
                self.ops.push(Range {
                    ts,
                    end,
                    tid,
                    what: op,
                });
            }
            "python_function" => self.frames.push(Range {
                ts,
                end,
                tid,
                what: name,
            }),
            _ => {}
        }
    }

    /// The launches inside the capture window of their thread (all of them where the trace
    /// recorded no begin and end of capture), with their ops and frames.
    fn finish(self, path: &Path) -> Capture {
        let op_stacks = nest::enclosing(&self.ops, &self.launches);
        let frame_stacks = nest::enclosing(&self.frames, &self.launches);
        // In the window of its thread: after the last begin at or before it, and not after the
        // first end following that begin.
        let window = |l: &Range<CaptureLaunch>| {
            if self.begin.is_empty() {
                return true;
            }
            let Some(begin) = self
                .begin
                .iter()
                .filter(|(t, ts)| *t == l.tid && *ts <= l.ts)
                .map(|(_, ts)| *ts)
                .max()
            else {
                return false;
            };
            let end = self
                .end
                .iter()
                .filter(|(t, ts)| *t == l.tid && *ts >= begin)
                .map(|(_, ts)| *ts)
                .min();
            end.is_none_or(|end| l.ts <= end)
        };
        let mut launches: Vec<CaptureLaunch> = Vec::new();
        for (i, l) in self.launches.iter().enumerate() {
            if !window(l) {
                continue;
            }
            let mut launch = l.what.clone();
            let ops = &op_stacks[i];
            launch.op = ops.last().map(|&j| self.ops[j].what.clone());
            launch.library_op = ops
                .split_last()
                .and_then(|(_, above)| {
                    above
                        .iter()
                        .rev()
                        .find(|&&j| !self.ops[j].what.name.starts_with("aten::"))
                })
                .map(|&j| self.ops[j].what.clone());
            launch.python = frame_stacks[i]
                .iter()
                .map(|&j| self.frames[j].what.clone())
                .collect();
            launches.push(launch);
        }
        launches.sort_by_key(|l| l.ts);
        Capture {
            file: path.to_path_buf(),
            launches,
        }
    }
}

/// Reads a capture trace. A file without a launch is refused: it is no capture.
pub fn read_capture(path: &Path) -> Result<Capture, ReadError> {
    let err = |kind| ReadError {
        path: path.to_path_buf(),
        kind,
    };
    let (src, gzip) = file::open(path).map_err(err)?;
    let mut scan = Scanner::new(src);
    let mut collected = Collected::default();
    read_top(&mut scan, gzip, &mut collected).map_err(err)?;
    let capture = collected.finish(path);
    if capture.launches.is_empty() {
        return Err(err(ReadErrorKind::NotATrace(
            "no kernel, memcpy or memset launch was captured in it (not a graph capture trace)"
                .into(),
        )));
    }
    Ok(capture)
}

fn read_top<R: std::io::Read>(
    scan: &mut Scanner<R>,
    gzip: bool,
    out: &mut Collected,
) -> Result<(), ReadErrorKind> {
    let top = |e| file::scan_error(e, gzip, "the top-level object");
    if scan.peek().map_err(top)? == Some(b'[') {
        return read_events(scan, gzip, out);
    }
    scan.expect(b'{', "'{'").map_err(top)?;
    if scan.peek().map_err(top)? == Some(b'}') {
        return Err(ReadErrorKind::NotATrace(
            "it has no \"traceEvents\" array".into(),
        ));
    }
    let mut saw_events = false;
    loop {
        let (offset, key_bytes) = scan.next_value().map_err(top)?;
        let key: String = serde_json::from_slice(key_bytes).map_err(|e| json(offset, &e))?;
        scan.expect(b':', "':'").map_err(top)?;
        if key == "traceEvents" {
            read_events(scan, gzip, out)?;
            saw_events = true;
        } else {
            scan.skip_value().map_err(top)?;
        }
        if !file::more_members(scan, gzip)? {
            break;
        }
    }
    if !saw_events {
        return Err(ReadErrorKind::NotATrace(
            "it has no \"traceEvents\" array".into(),
        ));
    }
    Ok(())
}

fn json(offset: u64, e: &serde_json::Error) -> ReadErrorKind {
    ReadErrorKind::Json {
        offset,
        message: e.to_string(),
    }
}

fn read_events<R: std::io::Read>(
    scan: &mut Scanner<R>,
    gzip: bool,
    out: &mut Collected,
) -> Result<(), ReadErrorKind> {
    let ctx = |e| file::scan_error(e, gzip, "the traceEvents array");
    scan.expect(b'[', "'[' (traceEvents must be an array)")
        .map_err(ctx)?;
    if scan.peek().map_err(ctx)? == Some(b']') {
        return scan.expect(b']', "']'").map_err(ctx);
    }
    loop {
        let (offset, bytes) = scan.next_value().map_err(ctx)?;
        // An event of another shape (a string where a number is expected) is skipped; bytes
        // that are not JSON are an error.
        match serde_json::from_slice::<RawEvent>(bytes) {
            Ok(event) => out.add(event),
            Err(e) if e.is_data() => {}
            Err(e) => return Err(json(offset, &e)),
        }
        match scan.peek().map_err(ctx)? {
            Some(b',') => scan.expect(b',', "','").map_err(ctx)?,
            Some(b']') => return scan.expect(b']', "']'").map_err(ctx),
            Some(found) => {
                return Err(ReadErrorKind::Json {
                    offset: scan.offset(),
                    message: format!(
                        "found {:?} where ',' or ']' was expected in traceEvents",
                        found as char
                    ),
                })
            }
            None => {
                return Err(ReadErrorKind::TruncatedJson {
                    offset: scan.offset(),
                    context: "the traceEvents array",
                })
            }
        }
    }
}

/// The batch a capture was recorded for: `batch_size` of its entry in the
/// `execution_details.json` beside it (TraceLens's and vLLM's index), else `bs_N` in its name.
pub fn capture_batch(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let details = path.with_file_name("execution_details.json");
    if let Ok(text) = std::fs::read_to_string(details) {
        if let Ok(entries) = serde_json::from_str::<Vec<BTreeMap<String, serde_json::Value>>>(&text)
        {
            let batch = entries
                .iter()
                .find(|e| e.get("file").and_then(|f| f.as_str()) == Some(name.as_str()))
                .and_then(|e| e.get("batch_size")?.as_u64());
            if batch.is_some() {
                return batch;
            }
        }
    }
    batch_in_name(&name)
}

/// The rank a capture was recorded on, from its name: SGLang's `bs_32_rank3`, vLLM's
/// `graph_capture_rank_3`.
pub fn capture_rank(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let at = name.rfind("rank")?;
    let digits: String = name[at + 4..]
        .trim_start_matches(['_', '-'])
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// `N` of `bs_N` (or `bs-N`, `bsN`) in a file name, where `bs` starts a word (not `abs_2`).
fn batch_in_name(name: &str) -> Option<u64> {
    name.match_indices("bs").find_map(|(at, _)| {
        let word_start = name[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        let rest = name[at + 2..].trim_start_matches(['_', '-']);
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        word_start.then(|| digits.parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests;
