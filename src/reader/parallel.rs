//! One file on several threads: one thread inflates the stream into a bounded ring of buffers
//! and cuts it into chunks at event boundaries; workers parse the chunks' events at once; the
//! calling thread merges their results in file order.
//!
//! Where a chunk ends is a guess made without parsing: the last `}` `,` `{` (whitespace
//! allowed) of the buffer, which in a trace is almost always the seam between two events of
//! `traceEvents`. Each worker checks the guess while it parses: its chunk starts where the
//! previous one ended, and it must end exactly after a comma at the top level of the array
//! (or at the array's `]`). By induction from the first chunk, which starts at the top of the
//! file, every boundary of an accepted chunk is a real event boundary, and the merged result is
//! what a single pass gives. A guess that fell inside a string (`"}, {"` in a name), a nested
//! object, bad data, a cut or corrupt stream: the pass gives up and the caller reads the file in
//! a single pass, which says exactly what is wrong and where.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::Mutex;

use super::error::ReadErrorKind;
use super::file::{self, FileContents, ListEnd, Stop};
use super::memory::ReadLimits;
use super::scan::Scanner;

/// Bytes of JSON per chunk: large enough that per-chunk work (a name table, a merge) is noise,
/// small enough that the buffers in flight stay a few MiB.
const CHUNK: usize = 1 << 21;

/// Buffers per worker in the ring: one being parsed, one waiting, one being merged.
const BUFFERS_PER_WORKER: usize = 3;

/// A stretch of the decoded stream: `buf[..len]`, starting at stream offset `base`. (Buffers
/// keep their length between uses, so that reusing one does not zero it again.)
struct Chunk {
    index: usize,
    base: u64,
    buf: Vec<u8>,
    len: usize,
}

/// What a worker made of a chunk.
enum Outcome {
    /// The chunk's events; the chunk ends right after a comma inside the array.
    Continues(FileContents),
    /// The chunk's events; the array closed at this index of the chunk (just after `]`).
    Closed(FileContents, usize),
    /// The chunk is not a run of whole events where it was assumed to be.
    Failed(ReadErrorKind),
}

enum Message {
    Parsed(Box<(Chunk, Outcome)>),
    /// The producer is done: how many chunks it sent, and whether the stream read cleanly.
    End(usize, std::io::Result<()>),
}

/// Reads one decoded JSON stream with `threads` parsing workers. `Ok(None)`: the parallel pass
/// cannot vouch for a result (see the module doc); read the file again in a single pass.
pub(super) fn read<R: Read + Send>(
    src: R,
    gzip: bool,
    threads: usize,
    limits: ReadLimits,
) -> Result<Option<(FileContents, u64)>, ReadErrorKind> {
    read_chunked(src, gzip, threads, CHUNK, limits)
}

/// [`read`] with chunks of about `chunk` bytes (tests use tiny ones, to put chunk boundaries
/// everywhere).
pub(super) fn read_chunked<R: Read + Send>(
    src: R,
    gzip: bool,
    threads: usize,
    chunk: usize,
    limits: ReadLimits,
) -> Result<Option<(FileContents, u64)>, ReadErrorKind> {
    let workers = threads.max(1);
    let chunk = chunk.max(1);
    let ring = workers * BUFFERS_PER_WORKER + 1;
    let stop = AtomicBool::new(false);
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(ring);
    for _ in 0..ring {
        free_tx
            .send(Vec::new())
            .expect("the ring has room for every buffer");
    }
    let (work_tx, work_rx) = sync_channel::<Chunk>(ring);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = channel::<Message>();
    std::thread::scope(|scope| {
        let producer_done = done_tx.clone();
        let stop_ref = &stop;
        scope.spawn(move || produce(src, chunk, free_rx, work_tx, producer_done, stop_ref));
        for _ in 0..workers {
            let done = done_tx.clone();
            let (work_rx, stop) = (&work_rx, &stop);
            scope.spawn(move || work(work_rx, done, gzip, limits, stop));
        }
        drop(done_tx);
        let result = merge(&done_rx, &free_tx, gzip, limits);
        // Whatever happened, let the other threads finish: they stop at their next step.
        stop.store(true, Ordering::Relaxed);
        drop(free_tx);
        drop(done_rx);
        result
    })
}

/// The inflating thread: fills buffers from the stream and sends them out cut at a guessed
/// event boundary, carrying the bytes after it over to the next buffer.
fn produce<R: Read>(
    mut src: R,
    chunk: usize,
    free: Receiver<Vec<u8>>,
    work: SyncSender<Chunk>,
    done: Sender<Message>,
    stop: &AtomicBool,
) {
    let mut carry: Vec<u8> = Vec::new();
    let (mut base, mut index) = (0u64, 0usize);
    let end = loop {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let Ok(mut buf) = free.recv() else { return };
        let mut len = carry.len();
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf[..len].copy_from_slice(&carry);
        let mut want = chunk.max(len + chunk / 2);
        let mut searched = 0usize;
        let (split, eof) = loop {
            if buf.len() < want {
                buf.resize(want, 0);
            }
            let eof = match fill(&mut src, &mut buf[..want], &mut len) {
                Ok(eof) => eof,
                Err(e) => {
                    let _ = done.send(Message::End(index, Err(e)));
                    return;
                }
            };
            if eof {
                break (len, true);
            }
            // The first chunk holds the top of the file up to the traceEvents array, so that
            // the keys before it (deviceProperties: lists of objects) are not split.
            let from = match index {
                0 => match head_end(&buf[..len]) {
                    Some(at) => at,
                    None if len < HEAD_MAX => {
                        want = len + chunk;
                        continue;
                    }
                    None => 0,
                },
                _ => 0,
            };
            match boundary(&buf[from.max(searched)..len]) {
                Some(at) => break (from.max(searched) + at, false),
                // No seam in the whole buffer (one huge event): read on, searching only what
                // comes next (the seam's `}` and comma may sit just before it). An event too
                // large to be a chunk leaves the file to the single pass, which frames it in
                // linear time under the string and memory limits.
                None if len >= EVENT_MAX => {
                    let _ = done.send(Message::End(
                        index,
                        Err(std::io::Error::other(
                            "an event too large for the parallel pass",
                        )),
                    ));
                    return;
                }
                None => {
                    searched = len.saturating_sub(SEAM_BACK);
                    want = len + chunk;
                }
            }
        };
        carry.clear();
        carry.extend_from_slice(&buf[split..len]);
        if split > 0 {
            let chunk = Chunk {
                index,
                base,
                buf,
                len: split,
            };
            if work.send(chunk).is_err() {
                return;
            }
            index += 1;
        }
        base += split as u64;
        if eof {
            break Ok(());
        }
    };
    let _ = done.send(Message::End(index, end));
}

/// Reads into `buf[*len..]` until it is full; true at the end of the stream.
fn fill<R: Read>(src: &mut R, buf: &mut [u8], len: &mut usize) -> std::io::Result<bool> {
    while *len < buf.len() {
        match src.read(&mut buf[*len..]) {
            Ok(0) => return Ok(true),
            Ok(n) => *len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// The most bytes one chunk may hold: past it, with no seam between events found, the parallel
/// pass gives up for the single pass.
const EVENT_MAX: usize = 96 << 20;

/// How far back before the new bytes a seam search starts again: a `{` just read may follow a
/// comma and a `}` (and whitespace) read before.
const SEAM_BACK: usize = 4096;

/// How far the first chunk may grow looking for the traceEvents array; past it, the chunk is
/// cut anyway (and a file whose events start later is read in a single pass).
const HEAD_MAX: usize = 64 << 20;

/// Where the events may start in the first bytes of a file: after the `"traceEvents"` key, or
/// at once for a bare array.
fn head_end(buf: &[u8]) -> Option<usize> {
    if buf.trim_ascii_start().first() == Some(&b'[') {
        return Some(0);
    }
    memchr::memmem::find(buf, b"\"traceEvents\"").map(|at| at + 13)
}

/// The index of the last `{` in `buf` that follows a `}` and a comma (whitespace allowed):
/// where the next chunk is guessed to start.
pub(super) fn boundary(buf: &[u8]) -> Option<usize> {
    let mut end = buf.len();
    while let Some(at) = memchr::memrchr(b'{', &buf[..end]) {
        let before = buf[..at].trim_ascii_end();
        if let Some(before) = before.strip_suffix(b",") {
            if before.trim_ascii_end().ends_with(b"}") {
                return Some(at);
            }
        }
        end = at;
    }
    None
}

/// A parsing worker: takes chunks until there are none, sends back what it made of each.
fn work(
    work: &Mutex<Receiver<Chunk>>,
    done: Sender<Message>,
    gzip: bool,
    limits: ReadLimits,
    stop: &AtomicBool,
) {
    // Returns only once the producer is gone: after a stop it drains the queue unparsed, so
    // that the producer is never left blocked on a full queue.
    loop {
        let next = work.lock().map(|rx| rx.recv());
        let Ok(Ok(chunk)) = next else { return };
        if stop.load(Ordering::Relaxed) {
            continue;
        }
        let (chunk, outcome) = parse_chunk(chunk, gzip, limits);
        if done
            .send(Message::Parsed(Box::new((chunk, outcome))))
            .is_err()
        {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

/// Parses the events of one chunk: the first one from the top of the file, the others from
/// their first byte, assumed to open an event of `traceEvents`.
fn parse_chunk(chunk: Chunk, gzip: bool, limits: ReadLimits) -> (Chunk, Outcome) {
    let Chunk {
        index,
        base,
        buf,
        len,
    } = chunk;
    let mut scan = Scanner::over(buf, len, base, limits);
    let mut contents = FileContents::new();
    let outcome = (|| {
        if index == 0 && file::read_top(&mut scan, &mut contents, gzip, true)? != Stop::AtEvents {
            return Err(ReadErrorKind::NotATrace(
                "no events in the first chunk".into(),
            ));
        }
        file::read_event_list(&mut scan, &mut contents, gzip, true)
    })();
    let closed_at = (scan.offset() - base) as usize;
    let buf = scan.into_buffer();
    let outcome = match outcome {
        Ok(ListEnd::ChunkEnd) => Outcome::Continues(contents),
        Ok(ListEnd::Closed) => Outcome::Closed(contents, closed_at),
        Err(e) => Outcome::Failed(e),
    };
    let chunk = Chunk {
        index,
        base,
        buf,
        len,
    };
    (chunk, outcome)
}

/// Where the merge stands.
enum Phase {
    /// Inside `traceEvents`: the next chunk starts at an event boundary.
    Events,
    /// After `traceEvents`: the rest of the file, collected to be read in a single pass.
    Tail { base: u64, bytes: Vec<u8> },
}

/// Takes the workers' results in file order and merges them; hands each buffer back to the
/// ring once done with it.
fn merge(
    done: &Receiver<Message>,
    free: &SyncSender<Vec<u8>>,
    gzip: bool,
    limits: ReadLimits,
) -> Result<Option<(FileContents, u64)>, ReadErrorKind> {
    let mut contents = FileContents::new();
    let mut phase = Phase::Events;
    let mut waiting: BTreeMap<usize, (Chunk, Outcome)> = BTreeMap::new();
    let mut next = 0usize;
    let mut end: Option<(usize, std::io::Result<()>)> = None;
    loop {
        while let Some((chunk, outcome)) = waiting.remove(&next) {
            next += 1;
            let (buf, len) = (chunk.buf, chunk.len);
            match (&mut phase, outcome) {
                (Phase::Events, Outcome::Continues(part)) => contents.absorb(part),
                (Phase::Events, Outcome::Closed(part, at)) => {
                    contents.absorb(part);
                    phase = Phase::Tail {
                        base: chunk.base + at as u64,
                        bytes: buf[at..len].to_vec(),
                    };
                }
                (Phase::Events, Outcome::Failed(e @ ReadErrorKind::MemoryLimit { .. })) => {
                    return Err(e)
                }
                (Phase::Events, Outcome::Failed(_)) => return Ok(None),
                // What follows traceEvents is held to be read at the end: past a chunk's
                // worth of it (an unknown key of gigabytes), the single pass skips it instead.
                (Phase::Tail { bytes, .. }, _) if bytes.len() + len > EVENT_MAX => return Ok(None),
                (Phase::Tail { bytes, .. }, _) => bytes.extend_from_slice(&buf[..len]),
            }
            // The producer may be gone already (the stream ended); the buffer is then dropped.
            let _ = free.try_send(buf);
        }
        if let Some((chunks, _)) = &end {
            if next == *chunks {
                break;
            }
        }
        match done.recv() {
            Ok(Message::Parsed(parsed)) => {
                waiting.insert(parsed.0.index, *parsed);
            }
            Ok(Message::End(chunks, read)) => end = Some((chunks, read)),
            Err(_) => return Ok(None),
        }
    }
    let Some((_, Ok(()))) = end else {
        return Ok(None);
    };
    let Phase::Tail { base, bytes } = phase else {
        return Ok(None);
    };
    // The rest of the top-level object (keys after traceEvents, such as the deviceProperties of
    // SGLang's merged file), read the way a single pass reads it.
    let len = bytes.len();
    let mut scan = Scanner::over(bytes, len, base, limits);
    let tail = (|| {
        if contents.top_is_object
            && file::more_members(&mut scan, gzip)?
            && file::read_members(&mut scan, &mut contents, gzip, true)? == Stop::AtEvents
        {
            // A second traceEvents array: left to the single pass.
            return Err(ReadErrorKind::NotATrace("two traceEvents arrays".into()));
        }
        file::finish_document(&mut scan, &contents, gzip)
    })();
    match tail {
        Ok(()) => Ok(Some((contents, scan.offset()))),
        Err(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::model::RankTrace;
    use std::path::{Path, PathBuf};

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn single_pass(path: &Path) -> Result<Vec<RankTrace>, String> {
        crate::reader::read_file_with_threads(path, 1).map_err(|e| e.to_string())
    }

    /// Every chunk size and thread count gives the single pass's result: through the public
    /// reader always, and from the parallel pass itself whenever it does not give up. Returns
    /// how many chunk sizes the parallel pass itself read.
    fn same_for_every_split(path: &Path, chunks: impl Iterator<Item = usize>) -> usize {
        let want = single_pass(path);
        let mut parallel = 0;
        for chunk in chunks {
            for threads in [2 + chunk % 2] {
                match crate::reader::read_file_parallel_only(path, threads, chunk) {
                    Ok(Some(got)) => {
                        assert_eq!(Ok(&got), want.as_ref(), "chunk {chunk}, {threads} threads");
                        parallel += 1;
                    }
                    Ok(None) => {}
                    Err(e) => assert_eq!(Err(e.to_string()), want, "chunk {chunk}"),
                }
            }
        }
        assert_eq!(
            crate::reader::read_file_with_threads(path, 2).map_err(|e| e.to_string()),
            want
        );
        parallel
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    fn synth_rank(layout: crate::synth::Layout) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let opts = crate::synth::SynthOptions {
            scenario: "mi355x-dsr1-fp4-tp4".into(),
            ranks: Some(2),
            decode_steps: 2,
            python_functions_per_step: 3,
            layout,
            ..Default::default()
        };
        let summary = crate::synth::generate_to_dir(&opts, dir.path()).unwrap();
        let gz = std::fs::read(&summary.files[0]).unwrap();
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn boundaries_are_guessed_at_the_last_seam_between_events() {
        assert_eq!(boundary(br#"{"a": 1}, {"b": 2}"#), Some(10));
        assert_eq!(boundary(b"{\"a\": {}},\n  {\"b\""), Some(13));
        assert_eq!(boundary(br#"{"a": {"x": 1}, "b": {"#), None);
        assert_eq!(boundary(br#"[{"a": 1}]"#), None);
    }

    #[test]
    fn synth_files_read_the_same_split_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        for (name, layout) in [
            ("rank-0.json", crate::synth::Layout::PerRank),
            ("merged-1.json", crate::synth::Layout::Merged),
        ] {
            let text = synth_rank(layout);
            let path = write(dir.path(), name, &text);
            let sizes = [1, 97, 1000, 4096, 65_536, text.len()].into_iter();
            assert_eq!(same_for_every_split(&path, sizes), 6, "{name}");
            let gz = write(dir.path(), &format!("{name}.gz"), &gzip(&text));
            assert_eq!(
                same_for_every_split(&gz, [1000, 1001].into_iter()),
                2,
                "{name}.gz"
            );
        }
    }

    /// Seams inside strings, escapes before quotes, objects in lists inside events, short events
    /// beside python_function ones, keys after traceEvents: a boundary lands in each of them for
    /// some chunk size.
    #[test]
    fn seams_inside_strings_and_escapes_never_change_the_result() {
        let events = [
            r#"{"ph": "X", "cat": "kernel", "name": "k}, {\"ph\": \"X\"", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7}}"#,
            r#"{"ph": "X", "cat": "kernel", "name": "back\\", "pid": 0, "tid": 7, "ts": 3, "dur": 2}"#,
            r#"{"ph": "X", "cat": "kernel", "name": "q\"}, {\"", "pid": 0, "tid": 7, "ts": 5, "dur": 1}"#,
            r#"{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 0, "tid": 1, "ts": 1, "dur": 9, "args": {"l": [{"a": 1}, {"b": "}, {"}], "Input Dims": [[1, 2]]}}"#,
            r#"{"ph": "X", "cat": "kernel", "ts": 8, "dur": 1}"#,
            r#"{"ph": "X", "cat": "python_function", "name": "f", "pid": 0, "tid": 1, "ts": 1, "dur": 1}"#,
            r#"{"ph": "X", "name": "\"cat\": \"python_function\"", "cat": "kernel", "ts": 9, "dur": 1}"#,
            r#"{"ph": "X", "cat": "kernel", "name": "\u00e9\ud83d\ude00", "pid": 0, "tid": 7, "ts": 11, "dur": 1}"#,
        ];
        let body = events.join(", ");
        let all = [body.as_str(); 6].join(",\n  ");
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in [
            (
                "rank-0.json",
                format!(
                    r#"{{"deviceProperties": [{{"id": 0}}, {{"id": 1}}], "traceEvents": [{all}], "traceName": "x"}}"#
                ),
            ),
            (
                "rank-1.json",
                format!(
                    r#"{{"traceEvents": [{all}], "distributedInfo": {{"rank": 1}}, "deviceProperties": [{{"id": 0, "name": "a}}, {{"}}, {{"id": 1}}]}}"#
                ),
            ),
            ("rank-2.json", format!("[{all}]\n")),
        ] {
            let path = write(dir.path(), name, text.as_bytes());
            let read = same_for_every_split(&path, 1..text.len() + 2);
            assert!(
                read > text.len() / 2,
                "{name}: the parallel pass read {read}"
            );
        }
    }

    #[test]
    fn bad_input_gives_up_for_the_single_pass_to_say_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let text = synth_rank(crate::synth::Layout::Merged);
        for cut in [10, text.len() / 3, text.len() - 2] {
            let path = write(dir.path(), "cut.json", &text[..cut]);
            assert!(matches!(
                crate::reader::read_file_parallel_only(&path, 2, 4096),
                Ok(None)
            ));
            let single = single_pass(&path).unwrap_err();
            assert!(single.contains("truncated JSON"), "{single}");
            assert_eq!(
                crate::reader::read_file_with_threads(&path, 2)
                    .unwrap_err()
                    .to_string(),
                single
            );
        }
        let gz = gzip(&text);
        let path = write(dir.path(), "cut.json.gz", &gz[..gz.len() - 9]);
        let single = single_pass(&path).unwrap_err();
        assert_eq!(
            crate::reader::read_file_with_threads(&path, 3)
                .unwrap_err()
                .to_string(),
            single
        );
    }
}
