//! The reader: trace files in, a [`Run`] of per-rank event lists out.
//!
//! Files are streamed (never held whole in memory) and read in parallel, one file per task.
//! Only this module sees JSON.

mod capture;
mod error;
mod event;
mod fast;
mod file;
mod frame;
mod frame_log;
mod memory;
pub(crate) mod model;
mod numbers;
mod parallel;
#[cfg(test)]
mod producers_2026;
mod rank;
pub(crate) mod scan;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

// `read_capture` and what it returns are public through `testing`.
#[allow(unreachable_pub)]
pub use capture::{capture_batch, capture_rank, read_capture};
#[allow(unreachable_pub)]
pub use capture::{Capture, CaptureKind, CaptureLaunch, CaptureOp};
pub use error::ReadError;
pub(crate) use error::ReadErrorKind;
pub use memory::{parse_size, ReadLimits};
pub(crate) use memory::{watch as watch_memory, OverMemory};
pub use model::*;

/// File names a directory walk skips: the files `tracegate synth` and `check` write beside traces.
const NOT_TRACES: [&str; 1] = ["truth.json"];

fn is_trace_name(name: &str) -> bool {
    (name.ends_with(".json") || name.ends_with(".json.gz"))
        && !NOT_TRACES.contains(&name)
        && !name.ends_with(".verdict.json")
}

/// Expands directories (not recursively) into the trace files they hold, sorted by name.
/// Files named explicitly are kept whatever their name.
pub(crate) fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ReadError> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let err = |kind| ReadError {
            path: path.clone(),
            kind,
        };
        let mut found: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| err(ReadErrorKind::Io(e)))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_file()
                    && p.file_name()
                        .is_some_and(|n| is_trace_name(&n.to_string_lossy()))
            })
            .collect();
        if found.is_empty() {
            return Err(err(ReadErrorKind::NoTraceFiles));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// The capture traces of a `capture_traces/` directory, sorted by name (its
/// `execution_details.json` index is not one).
pub(crate) fn capture_files(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let err = |kind| ReadError {
        path: dir.to_path_buf(),
        kind,
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| err(ReadErrorKind::Io(e)))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    is_trace_name(&n) && n != "execution_details.json"
                })
        })
        .collect();
    found.sort();
    Ok(found)
}

/// Reads one file, with one thread per core and no limit but the default longest string; a
/// merged file gives one trace per rank.
#[cfg(any(test, feature = "testing"))]
pub fn read_file(path: &Path) -> Result<Vec<RankTrace>, ReadError> {
    let limits = ReadLimits::default();
    read_one(path, limits.thread_count(), limits)
}

/// Reads one file with `threads` threads (one: a single pass; more: inflate on one thread,
/// parse chunks of events on the others). The result does not depend on `threads`.
#[cfg(any(test, feature = "testing"))]
pub fn read_file_with_threads(path: &Path, threads: usize) -> Result<Vec<RankTrace>, ReadError> {
    read_one(path, threads, ReadLimits::default())
}

/// The parallel pass alone, with chunks of about `chunk` bytes and no single-pass fallback:
/// `Ok(None)` where it gave up. For tests that must know the parallel pass made the result.
#[cfg(any(test, feature = "testing"))]
pub fn read_file_parallel_only(
    path: &Path,
    threads: usize,
    chunk: usize,
) -> Result<Option<Vec<RankTrace>>, ReadError> {
    read_one_parallel_only(path, threads, chunk)
}

/// Reads every file of a run in parallel, with the default [`ReadLimits`]. The first error, in
/// argument order, wins, so the message does not depend on thread timing. Two traces of the
/// same rank and stage are an error.
#[cfg(any(test, feature = "testing"))]
pub fn read_run(paths: &[PathBuf]) -> Result<Run, ReadError> {
    read_run_with(paths, &ReadLimits::default(), &|_, _| {})
}

/// [`read_run`] under `limits`, calling `on_file(files_done, files_total)` as each file
/// finishes (from any thread).
pub(crate) fn read_run_with(
    paths: &[PathBuf],
    limits: &ReadLimits,
    on_file: &(dyn Fn(usize, usize) + Sync),
) -> Result<Run, ReadError> {
    let files = expand_paths(paths)?;
    let done = AtomicUsize::new(0);
    // Files are read side by side; when there are fewer files than threads, each file is read
    // with its share of the threads.
    let per_file = (limits.thread_count() / files.len().max(1)).max(1);
    let limits = *limits;
    let results: Vec<Result<Vec<RankTrace>, ReadError>> = limits.install(|| {
        files
            .par_iter()
            .map(|f| {
                let result = read_one(f, per_file, limits);
                on_file(done.fetch_add(1, Ordering::Relaxed) + 1, files.len());
                result
            })
            .collect()
    });
    let mut traces = Vec::new();
    let mut skipped = Vec::new();
    let mut frontend_error = None;
    for result in results {
        match result {
            Ok(read) => traces.extend(read),
            // A frontend's CPU-only trace beside the workers' is no rank: said, not read.
            Err(e) if matches!(e.kind, ReadErrorKind::CpuOnlyFrontend { .. }) => {
                skipped.push(e.path.clone());
                frontend_error.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    if traces.is_empty() {
        if let Some(e) = frontend_error {
            return Err(e);
        }
    }
    traces.sort_by(|a, b| (a.rank.index, a.stage, &a.file).cmp(&(b.rank.index, b.stage, &b.file)));
    for pair in traces.windows(2) {
        if pair[0].file == pair[1].file && pair[0].rank.index == pair[1].rank.index {
            return Err(ReadError {
                path: pair[1].file.clone(),
                kind: ReadErrorKind::GivenTwice,
            });
        }
        if pair[0].rank.index == pair[1].rank.index && pair[0].stage == pair[1].stage {
            let stage = pair[1]
                .stage
                .map(|s| format!(" ({s:?} stage)"))
                .unwrap_or_default();
            return Err(ReadError {
                path: pair[1].file.clone(),
                kind: ReadErrorKind::Duplicate {
                    what: format!("rank {}{stage}", pair[1].rank.index),
                    other: pair[0].file.clone(),
                },
            });
        }
    }
    let mut missing = missing_ranks(&traces)?;
    let dp_group = missing
        .as_ref()
        .and_then(|m| one_dp_group(&traces, m.expected));
    if dp_group.is_some() {
        missing = None;
    }
    Ok(Run {
        traces,
        missing,
        dp_group,
        skipped,
    })
}

/// The most ranks a run may have (from `distributedInfo.world_size` or the rank numbers found).
/// Ranks are ids: nothing is allocated per rank id, but a run said to hold more ranks than this
/// is refused before its missing ranks are even listed.
pub(crate) const MAX_RANKS: u64 = 65_536;

/// How many missing ranks the error lists before it counts the rest.
const MISSING_LISTED: usize = 16;

/// The ranks the run is missing: a rank file left out of the artifact would otherwise gate the
/// remaining ranks as if they were the whole run, so the commands that gate refuse a partial run
/// (`pipeline::require_whole`) and the others say how many ranks they saw. One rank alone is
/// whole only where nothing says otherwise (no `world_size` above 1, rank 0). World sizes and
/// rank numbers are checked against [`MAX_RANKS`] first, so the work done here is bounded by the
/// files given and that cap.
fn missing_ranks(traces: &[RankTrace]) -> Result<Option<MissingRanks>, ReadError> {
    let mut ranks: Vec<u32> = traces.iter().map(|t| t.rank.index).collect();
    ranks.sort_unstable();
    ranks.dedup();
    if ranks.is_empty() {
        return Ok(None);
    }
    let too_many = |path: &Path, what: String| ReadError {
        path: path.to_path_buf(),
        kind: ReadErrorKind::TooManyRanks {
            what,
            cap: MAX_RANKS,
        },
    };
    if let Some(t) = traces
        .iter()
        .filter(|t| t.distributed.as_ref().and_then(|d| d.world_size) > Some(MAX_RANKS))
        .max_by_key(|t| t.distributed.as_ref().and_then(|d| d.world_size))
    {
        let w = t
            .distributed
            .as_ref()
            .and_then(|d| d.world_size)
            .unwrap_or(0);
        return Err(too_many(
            &t.file,
            format!("distributedInfo.world_size is {w}"),
        ));
    }
    if let Some(t) = traces
        .iter()
        .filter(|t| u64::from(t.rank.index) >= MAX_RANKS)
        .max_by_key(|t| t.rank.index)
    {
        // A number too large for a rank is kept as u32::MAX: the message gives it as written
        // where the file name wrote it, never as 4294967295.
        let written = (t.rank.index == u32::MAX && t.rank.source == RankSource::FileName)
            .then(|| {
                t.file
                    .file_name()
                    .and_then(|n| rank::rank_digits_from_file_name(&n.to_string_lossy()))
            })
            .flatten();
        let number = match written {
            Some(digits) => digits,
            None if t.rank.index == u32::MAX => format!("above {}", u32::MAX - 1),
            None => t.rank.index.to_string(),
        };
        return Err(too_many(
            &t.file,
            format!(
                "rank {number} (from the {}) in a run of {} ranks",
                t.rank.source.describe(),
                ranks.len()
            ),
        ));
    }
    let world = traces
        .iter()
        .filter_map(|t| t.distributed.as_ref()?.world_size)
        .max();
    let (expected, why) = match world {
        Some(w) if w >= ranks.len() as u64 => (w, "world_size in distributedInfo".to_string()),
        _ => (
            u64::from(*ranks.last().unwrap_or(&0)) + 1,
            "rank numbers found".to_string(),
        ),
    };
    // Both bounds are at most MAX_RANKS here.
    let missing: Vec<u64> = (0..expected)
        .filter(|r| ranks.binary_search(&(*r as u32)).is_err())
        .collect();
    if missing.is_empty() {
        return Ok(None);
    }
    let mut listed: Vec<String> = missing
        .iter()
        .take(MISSING_LISTED)
        .map(|r| r.to_string())
        .collect();
    if missing.len() > MISSING_LISTED {
        listed.push(format!("and {} more", missing.len() - MISSING_LISTED));
    }
    Ok(Some(MissingRanks {
        expected,
        present: ranks.len(),
        listed: listed.join(", "),
        why,
    }))
}

/// Whether the traces are one whole data-parallel group of a `world`-rank run: every rank names
/// its DP and TP index (vLLM's file names, SGLang's labels), all the same DP index, and TP
/// indices 0 to n−1 with n dividing `world`. Such a run is judged as that group, as a DP replica
/// serves on its own; a group with a TP rank missing is still a partial run.
fn one_dp_group(traces: &[RankTrace], world: u64) -> Option<String> {
    let mut positions = traces
        .iter()
        .map(|t| {
            let name = t.file.file_name()?.to_string_lossy().into_owned();
            rank::dp_tp_position(&name, &t.rank.label)
        })
        .collect::<Option<Vec<(u32, u32)>>>()?;
    positions.sort_unstable();
    positions.dedup();
    let dp = positions.first()?.0;
    let n = positions.len() as u64;
    let whole = positions
        .iter()
        .enumerate()
        .all(|(i, &(d, t))| d == dp && u64::from(t) == i as u64);
    (whole && n < world && world % n == 0).then(|| {
        format!(
            "DP group {dp} of {}: TP {n} of world_size {world}",
            world / n
        )
    })
}

/// Reads one file with `threads` threads: one alone reads it in a single pass; more inflate on
/// one thread and parse chunks of events on the others (`parallel`). The result is the same
/// for any number: whatever the parallel pass cannot vouch for (bad input, a chunk boundary
/// guessed inside a string) is read again in a single pass, so errors read the same too.
fn read_one(path: &Path, threads: usize, limits: ReadLimits) -> Result<Vec<RankTrace>, ReadError> {
    let err = |kind| ReadError {
        path: path.to_path_buf(),
        kind,
    };
    let (src, gzip) = file::open(path).map_err(err)?;
    let read = if threads > 1 {
        match parallel::read(src, gzip, threads, limits) {
            Ok(Some(read)) => Ok(read),
            Err(e @ ReadErrorKind::MemoryLimit { .. }) => Err(e),
            Ok(None) | Err(_) => {
                let (src, gzip) = file::open(path).map_err(err)?;
                file::read_stream(src, gzip, limits)
            }
        }
    } else {
        file::read_stream(src, gzip, limits)
    };
    let (contents, json_bytes) = read.map_err(err)?;
    file::assemble(path, contents, json_bytes).map_err(err)
}

/// The parallel pass alone, without the single-pass fallback: `None` where it gave up. For tests
/// that must know the parallel pass, not the fallback, produced a result.
#[cfg(any(test, feature = "testing"))]
fn read_one_parallel_only(
    path: &Path,
    threads: usize,
    chunk: usize,
) -> Result<Option<Vec<RankTrace>>, ReadError> {
    let err = |kind| ReadError {
        path: path.to_path_buf(),
        kind,
    };
    let (src, gzip) = file::open(path).map_err(err)?;
    match parallel::read_chunked(src, gzip, threads, chunk, ReadLimits::default()).map_err(err)? {
        Some((contents, json_bytes)) => file::assemble(path, contents, json_bytes)
            .map(Some)
            .map_err(err),
        None => Ok(None),
    }
}
