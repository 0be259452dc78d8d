//! Reading one trace file (plain or gzip JSON) into one rank trace per rank it holds.

use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use rayon::prelude::*;
use serde::Deserialize;

use super::error::ReadErrorKind;
use super::event::{looks_like_python_function, EventSink, RawEvent};
use super::model::{DeviceInfo, DistributedInfo, RankId, RankSource, RankTrace};
use super::rank::{label_tp_index, process_label, rank_from_file_name, stage_from_file_name};
use super::scan::{first_long_string, ScanError, Scanner};

#[derive(Debug, Default, Deserialize)]
struct RawDevice {
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "totalGlobalMem")]
    total_global_mem: Option<serde_json::Value>,
    #[serde(default, rename = "computeMajor")]
    compute_major: Option<i64>,
    #[serde(default, rename = "computeMinor")]
    compute_minor: Option<i64>,
    #[serde(default, rename = "numSms")]
    num_sms: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
struct RawDistributed {
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    rank: Option<serde_json::Value>,
    #[serde(default)]
    world_size: Option<serde_json::Value>,
}

fn json_u64(v: &Option<serde_json::Value>) -> Option<u64> {
    match v.as_ref()? {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => super::numbers::parse_u64(s),
        _ => None,
    }
}

/// Everything one file yields before ranks are resolved (or one chunk of it, see `parallel`).
#[derive(Default)]
pub(super) struct FileContents {
    saw_trace_events: bool,
    events: u64,
    malformed: u64,
    first_malformed: Option<u64>,
    devices: Vec<RawDevice>,
    distributed: Option<RawDistributed>,
    /// Sinks per process label (merged files); index 0 is the unlabelled sink.
    sinks: Vec<EventSink>,
    labels: Vec<String>,
    by_label: HashMap<String, usize>,
    /// The top-level value is an object (not a bare array of events).
    pub(super) top_is_object: bool,
    /// Top-level keys of [`PRODUCER_KEYS`] with their values, in file order.
    producer: Vec<(String, String)>,
    /// Log buckets skipped as lines because they are not JSON.
    unreadable_logs: Vec<String>,
}

impl FileContents {
    /// An empty collection, with the unlabelled sink in place.
    pub(super) fn new() -> Self {
        FileContents {
            sinks: vec![EventSink::default()],
            labels: vec![String::new()],
            ..Default::default()
        }
    }

    /// Appends what a later stretch of the same file yielded, as if its events had been read here
    /// one after another: counts add up, first-seen things (the first malformed event, process
    /// labels, names, launch dimensions) keep the order of the file.
    pub(super) fn absorb(&mut self, part: FileContents) {
        self.saw_trace_events |= part.saw_trace_events;
        self.top_is_object |= part.top_is_object;
        // What the file says before traceEvents comes with the first chunk.
        if self.devices.is_empty() {
            self.devices = part.devices;
        }
        if self.distributed.is_none() {
            self.distributed = part.distributed;
        }
        self.producer.extend(part.producer);
        self.unreadable_logs.extend(part.unreadable_logs);
        self.events += part.events;
        self.malformed += part.malformed;
        if self.first_malformed.is_none() {
            self.first_malformed = part.first_malformed;
        }
        for (i, sink) in part.sinks.into_iter().enumerate() {
            let at = if i == 0 {
                0
            } else {
                let label = &part.labels[i];
                match self.by_label.get(label) {
                    Some(&at) => at,
                    None => {
                        self.sinks.push(EventSink::default());
                        self.labels.push(label.clone());
                        self.by_label.insert(label.clone(), self.sinks.len() - 1);
                        self.sinks.len() - 1
                    }
                }
            };
            self.sinks[at].absorb(sink);
        }
    }
}

/// The decoded JSON stream of a file (gzip detected by content), and whether it is gzip.
pub(super) fn open(path: &Path) -> Result<(Box<dyn Read + Send>, bool), ReadErrorKind> {
    // A FIFO or a device given as a trace is refused, never waited on or read without end.
    let mut file = crate::files::open_regular(path).map_err(ReadErrorKind::Io)?;
    let mut magic = [0u8; 2];
    let got = read_up_to(&mut file, &mut magic).map_err(ReadErrorKind::Io)?;
    let head = std::io::Cursor::new(magic[..got].to_vec());
    let gzip = got == 2 && magic == [0x1f, 0x8b];
    // Reads of a buffer or more bypass the buffer (no copy); small ones (a parallel pass
    // looking for the end of an event a few bytes at a time) cost no system call each.
    let buffered = BufReader::with_capacity(1 << 16, head.chain(file));
    Ok(if gzip {
        (Box::new(MultiGzDecoder::new(buffered)), true)
    } else {
        (Box::new(buffered), false)
    })
}

fn read_up_to(src: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

pub(super) fn scan_error(e: ScanError, gzip: bool, context: &'static str) -> ReadErrorKind {
    match e {
        ScanError::Io(source) if gzip => ReadErrorKind::Gzip(source),
        ScanError::Io(source) => ReadErrorKind::Io(source),
        ScanError::UnexpectedEof { offset } => ReadErrorKind::TruncatedJson { offset, context },
        ScanError::Unexpected {
            offset,
            found,
            expected,
        } => ReadErrorKind::Json {
            offset,
            message: format!("found {:?} where {expected} was expected", found as char),
        },
        ScanError::StringTooLong { offset, limit } => ReadErrorKind::StringTooLong {
            offset,
            limit,
            place: context.to_string(),
        },
        ScanError::MemoryLimit {
            held,
            needed,
            limit,
        } => ReadErrorKind::MemoryLimit {
            held,
            needed,
            limit,
        },
    }
}

/// How many of an event's first bytes name it in an error.
const PLACE_BYTES: usize = 80;

/// What names the event at the scanner's position in an error: its first bytes.
fn event_place(head: &[u8]) -> String {
    let text = String::from_utf8_lossy(&head[..head.len().min(PLACE_BYTES)]);
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("the event starting `{text}`")
}

pub(super) fn read_stream<R: Read>(
    src: R,
    gzip: bool,
    limits: super::memory::ReadLimits,
) -> Result<(FileContents, u64), ReadErrorKind> {
    let mut scan = Scanner::with_limits(src, limits);
    match read_scanned(&mut scan, gzip) {
        Err(e @ (ReadErrorKind::Json { .. } | ReadErrorKind::TruncatedJson { .. })) if gzip => {
            // Corrupt deflate data often decodes to garbage before the CRC check fails: the
            // gzip damage is the cause worth reporting, not the JSON error it produced.
            match std::io::copy(&mut scan.into_inner(), &mut std::io::sink()) {
                Err(gz) => Err(ReadErrorKind::Gzip(gz)),
                Ok(_) => Err(e),
            }
        }
        other => other,
    }
}

fn read_scanned<R: Read>(
    scan: &mut Scanner<R>,
    gzip: bool,
) -> Result<(FileContents, u64), ReadErrorKind> {
    let mut contents = FileContents::new();
    read_top(scan, &mut contents, gzip, false)?;
    finish_document(scan, &contents, gzip)?;
    Ok((contents, scan.offset()))
}

/// Where the top-level reading stopped.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Stop {
    /// At the end of the top-level value.
    End,
    /// Just inside the `traceEvents` array (asked for with `stop_at_events`).
    AtEvents,
}

/// Reads the top-level value: a `traceEvents` array alone or an object holding one. With
/// `stop_at_events`, stops just inside the array instead of reading it.
pub(super) fn read_top<R: Read>(
    scan: &mut Scanner<R>,
    contents: &mut FileContents,
    gzip: bool,
    stop_at_events: bool,
) -> Result<Stop, ReadErrorKind> {
    let top = |e| scan_error(e, gzip, "the top-level object");
    match scan.peek().map_err(top)? {
        None => Err(ReadErrorKind::Empty),
        Some(b'[') if stop_at_events => {
            contents.saw_trace_events = true;
            scan.expect(b'[', "'['").map_err(top)?;
            Ok(Stop::AtEvents)
        }
        Some(b'[') => read_events(scan, contents, gzip).map(|()| Stop::End),
        Some(b'{') => {
            contents.top_is_object = true;
            read_object(scan, contents, gzip, stop_at_events)
        }
        Some(b) => Err(ReadErrorKind::NotATrace(format!(
            "it starts with {:?}, not a JSON object or array",
            b as char
        ))),
    }
}

/// After the top-level value: nothing but whitespace, and a `traceEvents` array was seen.
pub(super) fn finish_document<R: Read>(
    scan: &mut Scanner<R>,
    contents: &FileContents,
    gzip: bool,
) -> Result<(), ReadErrorKind> {
    let top = |e| scan_error(e, gzip, "the top-level object");
    if let Some(b) = scan.peek().map_err(top)? {
        return Err(ReadErrorKind::Json {
            offset: scan.offset(),
            message: format!("unexpected {:?} after the end of the trace", b as char),
        });
    }
    if !contents.saw_trace_events {
        return Err(ReadErrorKind::NotATrace(
            "it has no \"traceEvents\" array".into(),
        ));
    }
    Ok(())
}

fn read_object<R: Read>(
    scan: &mut Scanner<R>,
    contents: &mut FileContents,
    gzip: bool,
    stop_at_events: bool,
) -> Result<Stop, ReadErrorKind> {
    let top = |e| scan_error(e, gzip, "the top-level object");
    scan.expect(b'{', "'{'").map_err(top)?;
    if scan.peek().map_err(top)? == Some(b'}') {
        scan.expect(b'}', "'}'").map_err(top)?;
        return Ok(Stop::End);
    }
    read_members(scan, contents, gzip, stop_at_events)
}

/// Reads `"key": value` members of the top-level object up to its closing brace (or, with
/// `stop_at_events`, up to just inside the `traceEvents` array).
pub(super) fn read_members<R: Read>(
    scan: &mut Scanner<R>,
    contents: &mut FileContents,
    gzip: bool,
    stop_at_events: bool,
) -> Result<Stop, ReadErrorKind> {
    let top = |e| scan_error(e, gzip, "the top-level object");
    loop {
        let (offset, key_bytes) = scan.next_value().map_err(top)?;
        let key: String =
            serde_json::from_slice(key_bytes).map_err(|e| json_error(offset, key_bytes, &e))?;
        scan.expect(b':', "':'").map_err(top)?;
        match key.as_str() {
            "traceEvents" if stop_at_events => {
                contents.saw_trace_events = true;
                scan.expect(b'[', "'[' (traceEvents must be an array)")
                    .map_err(|e| scan_error(e, gzip, "the traceEvents array"))?;
                return Ok(Stop::AtEvents);
            }
            "traceEvents" => read_events(scan, contents, gzip)?,
            "deviceProperties" => {
                let (offset, bytes) = scan.next_value().map_err(top)?;
                // Not a list of devices is untidy, not fatal: the device name is descriptive.
                contents.devices =
                    serde_json::from_slice(bytes).or_else(|e| tolerate(offset, bytes, e))?;
            }
            "distributedInfo" => {
                let (offset, bytes) = scan.next_value().map_err(top)?;
                contents.distributed = serde_json::from_slice(bytes)
                    .map(Some)
                    .or_else(|e| tolerate(offset, bytes, e))?;
            }
            key if LOG_BUCKETS.contains(&key) => skip_log_bucket(scan, contents, key, gzip)?,
            key if PRODUCER_KEYS.iter().any(|(k, _)| *k == key) => {
                let (_, bytes) = scan.next_value().map_err(top)?;
                if let Some(value) = scalar_text(bytes) {
                    contents.producer.push((key.to_string(), value));
                }
            }
            // Unknown keys are skipped as they stream by, never held.
            _ => scan.skip_value().map_err(top)?,
        }
        if !more_members(scan, gzip)? {
            return Ok(Stop::End);
        }
    }
}

/// Kineto's log buckets, written after `traceEvents` as arrays of strings
/// (`"WARNING": ["…"],`), with the quotes inside them unescaped in older releases.
const LOG_BUCKETS: [&str; 5] = ["VERBOSE", "INFO", "WARNING", "STAGE", "ERROR"];

/// Top-level keys that say who made the trace, and the name each takes in the run's identity:
/// vLLM's version (vllm-project/vllm#33198), the host (pytorch/kineto#1323) and the profiler
/// job (pytorch/kineto#1207).
pub(super) const PRODUCER_KEYS: [(&str, &str); 5] = [
    ("vllm_version", "vllm"),
    ("host_name", "host"),
    ("PT_PROFILER_JOB_NAME", "job"),
    ("PT_PROFILER_VERSION", "job_version"),
    ("PT_PROFILER_ATTEMPT_INDEX", "job_attempt"),
];

/// A JSON string or number as text (`"0.16.0"` → `0.16.0`); `None` for anything else.
fn scalar_text(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<serde_json::Value>(bytes).ok()? {
        serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Skips a log bucket: as JSON where it is JSON; else, where the array is whole on its line (as
/// Kineto writes it), the line, counted so that the analysis says so. A bucket that is neither is
/// a JSON error like any other, and a file cut inside one is still a cut file.
fn skip_log_bucket<R: Read>(
    scan: &mut Scanner<R>,
    contents: &mut FileContents,
    key: &str,
    gzip: bool,
) -> Result<(), ReadErrorKind> {
    let top = |e| scan_error(e, gzip, "the top-level object");
    match scan.line_array().map_err(top)? {
        Some((_, bytes)) => {
            if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err() {
                contents.unreadable_logs.push(key.to_string());
            }
            Ok(())
        }
        None => scan.skip_value().map_err(top),
    }
}

/// After a member of the top-level object: true after a comma (another member follows), false
/// after the closing brace.
pub(super) fn more_members<R: Read>(
    scan: &mut Scanner<R>,
    gzip: bool,
) -> Result<bool, ReadErrorKind> {
    let top = |e| scan_error(e, gzip, "the top-level object");
    match scan.peek().map_err(top)? {
        Some(b',') => scan.expect(b',', "','").map_err(top).map(|()| true),
        Some(b'}') => scan.expect(b'}', "'}'").map_err(top).map(|()| false),
        Some(found) => Err(ReadErrorKind::Json {
            offset: scan.offset(),
            message: format!("found {:?} where ',' or '}}' was expected", found as char),
        }),
        None => Err(ReadErrorKind::TruncatedJson {
            offset: scan.offset(),
            context: "the top-level object",
        }),
    }
}

/// A value of the wrong shape but valid JSON gives the default; invalid JSON is an error.
fn tolerate<T: Default>(
    offset: u64,
    bytes: &[u8],
    e: serde_json::Error,
) -> Result<T, ReadErrorKind> {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Ok(_) => Ok(T::default()),
        Err(_) => Err(json_error(offset, bytes, &e)),
    }
}

/// Turns a serde error inside a framed value into an error at a byte offset of the stream.
fn json_error(offset: u64, bytes: &[u8], e: &serde_json::Error) -> ReadErrorKind {
    let mut line_start = 0usize;
    for _ in 1..e.line() {
        match memchr::memchr(b'\n', &bytes[line_start..]) {
            Some(i) => line_start += i + 1,
            None => break,
        }
    }
    let at = offset + (line_start + e.column().saturating_sub(1)) as u64;
    // serde's own position is relative to the event; the offset above replaces it.
    let text = e.to_string();
    let message = text
        .rsplit_once(" at line ")
        .map_or(text.as_str(), |(m, _)| m)
        .to_owned();
    ReadErrorKind::Json {
        offset: at,
        message,
    }
}

fn read_events<R: Read>(
    scan: &mut Scanner<R>,
    contents: &mut FileContents,
    gzip: bool,
) -> Result<(), ReadErrorKind> {
    let ctx = |e| scan_error(e, gzip, "the traceEvents array");
    contents.saw_trace_events = true;
    scan.expect(b'[', "'[' (traceEvents must be an array)")
        .map_err(ctx)?;
    read_event_list(scan, contents, gzip, false).map(|_| ())
}

/// How a run of events ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ListEnd {
    /// At the `]` closing the array (consumed).
    Closed,
    /// At the end of the data, right after a comma: the end of a chunk, not of the array.
    ChunkEnd,
}

/// Reads events from inside the `traceEvents` array up to its closing bracket. With `chunk`,
/// the data may also end right after a comma ([`ListEnd::ChunkEnd`]); otherwise that is
/// truncated JSON.
pub(super) fn read_event_list<R: Read>(
    scan: &mut Scanner<R>,
    contents: &mut FileContents,
    gzip: bool,
    chunk: bool,
) -> Result<ListEnd, ReadErrorKind> {
    let ctx = |e| scan_error(e, gzip, "the traceEvents array");
    let mut last: Option<LastPid> = None;
    let mut after_comma = false;
    let mut checked_at = scan.offset();
    loop {
        match scan.peek().map_err(ctx)? {
            Some(b']') => {
                scan.expect(b']', "']'").map_err(ctx)?;
                return Ok(ListEnd::Closed);
            }
            Some(_) => {}
            None if chunk && after_comma => return Ok(ListEnd::ChunkEnd),
            None => {
                return Err(ReadErrorKind::TruncatedJson {
                    offset: scan.offset(),
                    context: "the traceEvents array",
                })
            }
        }
        contents.events += 1;
        // At the first event too, so that a limit below what the process already holds shows;
        // then every CHECK_EVERY events or CHECK_EVERY_BYTES of input, whichever comes first.
        if contents.events % super::memory::CHECK_EVERY == 1
            || scan.offset() >= checked_at + super::memory::CHECK_EVERY_BYTES
        {
            checked_at = scan.offset();
            scan.limits().check()?;
        }
        read_one_event(scan, contents, gzip, &mut last)?;
        match scan.peek().map_err(ctx)? {
            Some(b',') => {
                scan.expect(b',', "','").map_err(ctx)?;
                after_comma = true;
            }
            Some(b']') => {}
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

/// The raw text of the `pid` of an event, found without a full parse.
fn pid_text(bytes: &[u8]) -> Option<&[u8]> {
    static PID: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"pid\""));
    let at = PID.find(bytes)? + 5;
    let rest = &bytes[at..];
    let colon = memchr::memchr(b':', rest)?;
    let value = &rest[colon + 1..];
    let value = &value[value.iter().position(|b| !b.is_ascii_whitespace())?..];
    let end = if value.first() == Some(&b'"') {
        1 + memchr::memchr(b'"', &value[1..])? + 1
    } else {
        value
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b' '))
            .unwrap_or(value.len())
    };
    Some(&value[..end])
}

/// The pid text of the previous event and where it went: events of one process come in runs, so
/// most pids are resolved by one comparison.
struct LastPid {
    text: Vec<u8>,
    sink: usize,
    device: Option<u64>,
}

/// The sink an event goes to (one per process label of a merged file, else the unlabelled one)
/// and the device number its pid names.
fn sink_for(
    contents: &mut FileContents,
    pid: Option<&str>,
    last: &mut Option<LastPid>,
) -> (usize, Option<u64>) {
    let Some(pid) = pid else { return (0, None) };
    if let Some(last) = last {
        if last.text.as_slice() == pid.as_bytes() {
            return (last.sink, last.device);
        }
    }
    let (sink, device) = match process_label(pid) {
        Some((label, number)) => {
            let idx = match contents.by_label.get(label) {
                Some(&i) => i,
                None => {
                    contents.sinks.push(EventSink::default());
                    contents.labels.push(label.to_owned());
                    contents
                        .by_label
                        .insert(label.to_owned(), contents.sinks.len() - 1);
                    contents.sinks.len() - 1
                }
            };
            (idx, number)
        }
        None => (0, super::numbers::parse_u64(pid)),
    };
    *last = Some(LastPid {
        text: pid.as_bytes().to_vec(),
        sink,
        device,
    });
    (sink, device)
}

#[cfg(test)]
thread_local! {
    /// Bytes handed to a parser by [`read_one_event`], to count the work a long event costs.
    static PARSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many bytes at the head of an event are enough to spot a `python_function` event.
const EVENT_HEAD: usize = 96;

/// Frames the whole event at the scanner's position (its offset and bytes); a string over
/// `--max-string` is named by the event it is in.
fn frame_event<R: Read>(scan: &mut Scanner<R>, gzip: bool) -> Result<(u64, &[u8]), ReadErrorKind> {
    // The head is copied first (80 bytes on the stack): the framed bytes borrow the scanner.
    let mut head = [0u8; PLACE_BYTES];
    let n = scan.buffered().len().min(PLACE_BYTES);
    head[..n].copy_from_slice(&scan.buffered()[..n]);
    match scan.next_value() {
        Ok(framed) => Ok(framed),
        Err(ScanError::StringTooLong { offset, limit }) => Err(ReadErrorKind::StringTooLong {
            offset,
            limit,
            place: event_place(&head[..n]),
        }),
        Err(e) => Err(scan_error(e, gzip, "the traceEvents array")),
    }
}

/// Reads the event at the scanner's position. Most events are parsed by serde straight from the
/// buffer, in one pass; `python_function` events are only framed and counted.
fn read_one_event<R: Read>(
    scan: &mut Scanner<R>,
    contents: &mut FileContents,
    gzip: bool,
    last: &mut Option<LastPid>,
) -> Result<(), ReadErrorKind> {
    let ctx = |e| scan_error(e, gzip, "the traceEvents array");
    scan.buffer_at_least(EVENT_HEAD).map_err(ctx)?;
    let head = scan.buffered();
    if head.first() == Some(&b'{')
        && looks_like_python_function(&head[..head.len().min(EVENT_HEAD)])
    {
        let (_, bytes) = frame_event(scan, gzip)?;
        // Borrowed, not copied: this runs for most events of a trace recorded with stacks.
        let pid = pid_text(bytes).map(String::from_utf8_lossy);
        let (idx, _) = sink_for(contents, pid.as_deref(), last);
        if !contents.sinks[idx].add_python_frame(bytes) {
            // A frame the fast path cannot vouch for is counted, not kept: stacks are context.
            let mut event = RawEvent::default();
            if super::fast::parse_event(bytes, &mut event).is_ok() {
                contents.sinks[idx].add_parsed_python_frame(&event);
            }
        }
        return Ok(());
    }
    // Kineto's plain events take the fast path; anything it cannot vouch for goes to serde.
    let mut event = RawEvent::default();
    let fast = super::fast::parse_event(scan.buffered(), &mut event);
    // What the fast path read: the event, or at most the buffer when it gave up.
    #[cfg(test)]
    PARSED.with(|p| p.set(p.get() + *fast.as_ref().unwrap_or(&scan.buffered().len()) as u64));
    let parsed = match fast {
        Ok(used) => Some(Ok(used)),
        Err(super::fast::GiveUp) => {
            let mut events =
                serde_json::Deserializer::from_slice(scan.buffered()).into_iter::<RawEvent>();
            let first = events.next();
            #[cfg(test)]
            PARSED.with(|p| p.set(p.get() + events.byte_offset() as u64));
            match first {
                Some(Ok(ev)) => {
                    event = ev;
                    Some(Ok(events.byte_offset()))
                }
                Some(Err(e)) => Some(Err(e)),
                None => None,
            }
        }
    };
    match parsed {
        Some(Ok(used)) => {
            // Framing measures strings; an event parsed straight from the buffer is measured
            // here, when it is long enough to hold one over the limit.
            let limit = scan.limits().max_string;
            if used as u64 > limit {
                if let Some(at) = first_long_string(&scan.buffered()[..used], limit) {
                    return Err(ReadErrorKind::StringTooLong {
                        offset: scan.offset() + at as u64,
                        limit,
                        place: event_place(scan.buffered()),
                    });
                }
            }
            let (idx, device) = sink_for(contents, event.pid.map(|p| p.get()), last);
            contents.sinks[idx].add(&event, device);
            scan.consume(used);
            Ok(())
        }
        // The buffer ends inside the event (serde reports some cuts at the buffer's end as
        // syntax errors: a number ending in "1." reads as invalid, not as cut short), or the
        // event is bad: frame the whole value, reading on as far as it goes, and parse it
        // again. Framing is linear in the event's size, and bounded by `--max-string` for its
        // strings and `--max-memory` for the rest; parsing again from the start of the buffer
        // on every refill would be quadratic. What still fails is valid JSON of an unexpected
        // shape (untidy data, counted) or invalid JSON (fatal, with its offset).
        Some(Err(_)) => {
            let (offset, bytes) = frame_event(scan, gzip)?;
            #[cfg(test)]
            PARSED.with(|p| p.set(p.get() + bytes.len() as u64));
            match serde_json::from_slice::<RawEvent>(bytes) {
                Ok(event) => {
                    let (idx, device) = sink_for(contents, event.pid.map(|p| p.get()), last);
                    contents.sinks[idx].add(&event, device);
                }
                Err(e) => {
                    serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
                        .map_err(|_| json_error(offset, bytes, &e))?;
                    contents.malformed += 1;
                    contents.first_malformed.get_or_insert(offset);
                }
            }
            Ok(())
        }
        None => Err(ReadErrorKind::TruncatedJson {
            offset: scan.offset(),
            context: "the traceEvents array",
        }),
    }
}

fn device_info(devices: &[RawDevice], device: Option<u64>) -> Option<DeviceInfo> {
    let pick = devices
        .iter()
        .find(|d| device.is_some() && json_u64(&d.id) == device)
        .or(devices.first())?;
    Some(DeviceInfo {
        id: json_u64(&pick.id),
        name: pick.name.clone().unwrap_or_default(),
        total_global_mem: json_u64(&pick.total_global_mem),
        compute_major: pick.compute_major,
        compute_minor: pick.compute_minor,
        num_sms: json_u64(&pick.num_sms),
    })
}

/// The device most of a rank's GPU activities ran on.
fn main_device(sink: &EventSink) -> Option<u64> {
    // Counted by runs: a rank's activities are nearly all on one device, and this pass is serial.
    let mut counts: rustc_hash::FxHashMap<u64, usize> = Default::default();
    for run in sink.gpu.chunk_by(|a, b| a.device == b.device) {
        *counts.entry(u64::from(run[0].device)).or_default() += run.len();
    }
    counts
        .into_iter()
        .max_by_key(|&(dev, n)| (n, std::cmp::Reverse(dev)))
        .map(|(d, _)| d)
}

/// Events tracegate keeps but cannot use (a negative or corrupt time, a name that is not UTF-8,
/// an event of the wrong shape) make every figure of the file doubtful: refused, not skipped.
fn refuse_unusable(contents: &FileContents) -> Result<(), ReadErrorKind> {
    let sinks = &contents.sinks;
    let count: u64 = sinks
        .iter()
        .map(|s| s.unusable + s.names.not_utf8().0)
        .sum::<u64>()
        + contents.malformed;
    let bad_name = || {
        sinks.iter().find_map(|s| s.names.not_utf8().1).map(|name| {
            let name: String = name.chars().take(80).collect();
            format!("event `{name}`: its name is not valid UTF-8")
        })
    };
    let first = sinks
        .iter()
        .find_map(|s| s.first_unusable.clone())
        .or_else(bad_name)
        .or_else(|| {
            contents
                .first_malformed
                .map(|at| format!("at byte {at}: an event of the wrong shape"))
        });
    match first {
        Some(first) => Err(ReadErrorKind::UnusableEvents { count, first }),
        None => Ok(()),
    }
}

pub(super) fn assemble(
    path: &Path,
    mut contents: FileContents,
    json_bytes: u64,
) -> Result<Vec<RankTrace>, ReadErrorKind> {
    if contents.events == 0 {
        return Err(ReadErrorKind::NoGpuActivity(
            "its traceEvents array is empty".into(),
        ));
    }
    let gpu_total: usize = contents.sinks.iter().map(|s| s.gpu.len()).sum();
    if gpu_total == 0 {
        let cpu: usize = contents.sinks.iter().map(|s| s.cpu_ops.len()).sum();
        let named = path
            .file_name()
            .is_some_and(|n| rank_from_file_name(&n.to_string_lossy()).is_some());
        if contents.distributed.is_none() && !named && contents.sinks.len() <= 1 {
            return Err(ReadErrorKind::CpuOnlyFrontend {
                events: contents.events,
                cpu_ops: cpu,
            });
        }
        return Err(ReadErrorKind::NoGpuActivity(format!(
            "{} events, {} CPU ops, but no kernel, memcpy or memset event",
            contents.events, cpu
        )));
    }
    refuse_unusable(&contents)?;
    let producer: std::collections::BTreeMap<String, String> = contents
        .producer
        .drain(..)
        .filter_map(|(key, value)| {
            let name = PRODUCER_KEYS.iter().find(|(k, _)| *k == key)?.1;
            Some((name.to_string(), value))
        })
        .collect();
    let logs = std::mem::take(&mut contents.unreadable_logs);
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stage = stage_from_file_name(&file_name);
    let distributed = contents.distributed.take().map(|d| DistributedInfo {
        backend: d.backend,
        rank: json_u64(&d.rank),
        world_size: json_u64(&d.world_size),
    });
    let merged = contents.sinks.len() > 1;
    let mut sinks = std::mem::take(&mut contents.sinks);
    let labels = std::mem::take(&mut contents.labels);
    let unlabelled = sinks.remove(0);
    let mut traces = Vec::new();
    if merged {
        // In SGLang's merged file every pid is labelled; events without a label (string pids such
        // as "Spans") belong to no rank and are counted, not guessed.
        let mut order: Vec<usize> = (0..sinks.len()).collect();
        order.sort_by(|&a, &b| labels[a + 1].cmp(&labels[b + 1]));
        let unattributed = unlabelled.stats.events_by_category.values().sum::<u64>()
            + unlabelled.stats.python_functions_skipped;
        let ranks: Vec<(RankId, EventSink)> = order
            .into_iter()
            .enumerate()
            .map(|(position, i)| {
                let label = labels[i + 1].clone();
                let index = label_tp_index(&label).unwrap_or(position as u32);
                let mut sink = std::mem::take(&mut sinks[i]);
                sink.stats.unattributed_events = unattributed;
                let rank = RankId {
                    index,
                    label,
                    source: RankSource::ProcessLabel,
                };
                (rank, sink)
            })
            .collect();
        // Each rank's lists are sorted on its own: on all cores, as the file was parsed.
        traces.par_extend(ranks.into_par_iter().map(|(rank, sink)| {
            let dist = distributed.clone().map(|d| DistributedInfo {
                rank: Some(u64::from(rank.index)),
                ..d
            });
            finish_trace(path, sink, rank, stage, dist, &contents.devices, 0)
        }));
    } else {
        let (index, source) = match distributed.as_ref().and_then(|d| d.rank) {
            // A rank beyond u32 is kept as u32::MAX, for the rank cap to refuse, not wrapped.
            Some(r) => (
                u32::try_from(r).unwrap_or(u32::MAX),
                RankSource::DistributedInfo,
            ),
            None => match rank_from_file_name(&file_name) {
                Some(r) => (r, RankSource::FileName),
                None => (0, RankSource::Default),
            },
        };
        let rank = RankId {
            index,
            label: format!("rank{index}"),
            source,
        };
        traces.push(finish_trace(
            path,
            unlabelled,
            rank,
            stage,
            distributed,
            &contents.devices,
            contents.malformed,
        ));
    }
    let share = json_bytes / traces.len() as u64;
    for t in &mut traces {
        t.stats.json_bytes = share;
    }
    if merged {
        traces[0].stats.malformed_events = contents.malformed;
    }
    for t in &mut traces {
        t.producer = producer.clone();
    }
    traces[0].stats.unreadable_log_buckets = logs;
    Ok(traces)
}

fn finish_trace(
    path: &Path,
    mut sink: EventSink,
    rank: RankId,
    stage: Option<super::model::Stage>,
    distributed: Option<DistributedInfo>,
    devices: &[RawDevice],
    malformed: u64,
) -> RankTrace {
    sink.finish();
    sink.stats.malformed_events = malformed;
    RankTrace {
        device: device_info(devices, main_device(&sink)),
        rank,
        file: path.to_path_buf(),
        stage,
        distributed,
        names: sink.names,
        gpu: sink.gpu,
        cpu_ops: sink.cpu_ops,
        launches: sink.launches,
        annotations: sink.annotations,
        collective_keys: sink.collective_keys,
        collective_names: {
            let mut names: Vec<(u32, u32)> = sink.collective_names.into_iter().collect();
            names.sort_unstable();
            names
        },
        launch_dims: sink.launch_dims,
        stats: sink.stats,
        python_frames: sink.python_frames,
        graph_nodes: sink.graph_nodes,
        producer: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte at a time, so the buffer ends at every possible place.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() || out.is_empty() {
                return Ok(0);
            }
            out[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    #[test]
    fn events_cut_at_any_byte_by_the_buffer_are_read_whole() {
        // Decimal numbers are the trap: serde reads "12." at the end of a buffer as an invalid
        // number, not as a cut, so the reader must re-parse the framed event.
        let event = r#"{"ph": "X", "cat": "kernel", "name": "k\u00e9", "pid": 0, "tid": 7, "ts": 1767000000123.456, "dur": 12.5e0, "args": {"stream": 7, "correlation": 3, "grid": [1, 2, 3]}}"#;
        let text = format!(r#"{{"traceEvents": [{}]}}"#, vec![event; 40].join(", "));
        let (contents, bytes) =
            read_stream(Trickle(text.as_bytes()), false, Default::default()).unwrap();
        assert_eq!(bytes, text.len() as u64);
        assert_eq!(contents.malformed, 0);
        let gpu = &contents.sinks[0].gpu;
        assert_eq!(gpu.len(), 40);
        assert!(gpu
            .iter()
            .all(|a| a.ts == 1_767_000_000_123_456 && a.dur == 12_500));
        assert_eq!(contents.sinks[0].names.get(gpu[0].name), "ké");
    }

    #[test]
    fn a_long_event_is_parsed_once_not_on_every_refill() {
        // A 24 MiB name spans 96 refills of the 256 KiB buffer: parsing the buffer again from
        // the event's start at each would hand serde about 1.2 GB; framing first, about 48 MiB.
        let limits = crate::reader::ReadLimits {
            max_string: 64 << 20,
            ..Default::default()
        };
        let name = "n".repeat(24 << 20);
        let text = format!(
            r#"{{"traceEvents": [{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": 1, "dur": 1}}]}}"#
        );
        PARSED.with(|p| p.set(0));
        let (contents, _) =
            read_stream(std::io::Cursor::new(text.as_bytes()), false, limits).unwrap();
        assert_eq!(contents.sinks[0].gpu.len(), 1);
        let parsed = PARSED.with(|p| p.get());
        assert!(
            parsed <= 3 * text.len() as u64,
            "{parsed} bytes parsed for {}",
            text.len()
        );
    }

    #[test]
    fn pid_text_is_found_without_a_parse() {
        assert_eq!(pid_text(br#"{"ph": "X", "cat": "python_function", "name": "a", "pid": "[TP01] 9", "tid": 1}"#), Some(&br#""[TP01] 9""#[..]));
        assert_eq!(pid_text(br#"{"pid": 251, "tid": 1}"#), Some(&b"251"[..]));
        assert_eq!(pid_text(br#"{"tid": 1}"#), None);
    }
}
