//! The graph captures a run's replays are joined to (issue 41): the `--capture` directory, or a
//! `capture_traces/` directory beside or under the run; and a capture a trace holds itself.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::analysis::capture::join::replay_batch;
use crate::analysis::code::graph::replay_indices;
use crate::analysis::code::CaptureInput;
use crate::reader::{capture_batch, capture_rank, read_capture, Run};

use super::PipelineError;

/// The directory SGLang and vLLM write captures into.
pub const CAPTURE_DIR: &str = "capture_traces";

/// Where graph captures are taken from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CaptureChoice {
    /// A `capture_traces/` directory beside the run's files or under its directories.
    #[default]
    Auto,
    /// This directory (`--capture DIR`).
    Dir(PathBuf),
    /// None (`--no-capture`).
    Off,
}

/// The capture directories for a run given as `paths`: the caller confines them like the
/// traces (an automatic one is an input of the pull request as much as a trace is).
pub fn capture_dirs(paths: &[PathBuf], choice: &CaptureChoice) -> Vec<PathBuf> {
    match choice {
        CaptureChoice::Off => Vec::new(),
        CaptureChoice::Dir(dir) => vec![dir.clone()],
        CaptureChoice::Auto => {
            let mut dirs: Vec<PathBuf> = paths
                .iter()
                .filter_map(|p| {
                    let base = if p.is_dir() { p.as_path() } else { p.parent()? };
                    let dir = base.join(CAPTURE_DIR);
                    dir.is_dir().then_some(dir)
                })
                .collect();
            dirs.sort();
            dirs.dedup();
            dirs
        }
    }
}

/// The captures the run's replays may be joined to: of the directories, those of a rank and
/// batch the run replays (read in parallel); and each single-rank trace that holds a capture
/// of its own and no capture file of its rank.
/// Nothing with [`CaptureChoice::Off`].
pub(crate) fn read_captures(
    run: &Run,
    paths: &[PathBuf],
    choice: &CaptureChoice,
) -> Result<Vec<CaptureInput>, PipelineError> {
    let wanted = replayed(run);
    if wanted.is_empty() || *choice == CaptureChoice::Off {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for dir in &capture_dirs(paths, choice) {
        files.extend(crate::reader::capture_files(dir)?);
    }
    let chosen: Vec<(PathBuf, Option<u64>, Option<u32>)> = files
        .into_iter()
        .map(|f| {
            let (batch, rank) = (capture_batch(&f), capture_rank(&f));
            (f, batch, rank)
        })
        .filter(|(_, batch, rank)| {
            wanted.iter().any(|(r, b, _)| {
                rank.is_none_or(|x| x == *r) && (batch.is_none() || b.is_none() || batch == b)
            })
        })
        .collect();
    let mut captures = chosen
        .into_par_iter()
        .map(|(path, batch, rank)| {
            Ok(CaptureInput {
                capture: read_capture(&path)?,
                batch,
                rank,
                in_trace: false,
            })
        })
        .collect::<Result<Vec<_>, PipelineError>>()?;
    // A rank with no capture file and a capture in its own trace (PyTorch records one where the
    // graph is captured while the profiler runs).
    for (rank, batch, file) in wanted {
        let has_file = captures.iter().any(|c| c.rank.is_none_or(|r| r == rank));
        if has_file || !holds_capture(run, &file) {
            continue;
        }
        if let Ok(capture) = read_capture(&file) {
            captures.push(CaptureInput {
                capture,
                batch,
                rank: Some(rank),
                in_trace: true,
            });
        }
    }
    Ok(captures)
}

/// Ranks that replay graphs: rank, the replay's batch, and the trace file.
fn replayed(run: &Run) -> Vec<(u32, Option<u64>, PathBuf)> {
    run.traces
        .iter()
        .filter(|t| !replay_indices(t).is_empty())
        .map(|t| (t.rank.index, replay_batch(t), t.file.clone()))
        .collect()
}

/// True when `file` holds one rank of the run and records a stream capture.
fn holds_capture(run: &Run, file: &Path) -> bool {
    let mut of_file = run.traces.iter().filter(|t| t.file == file);
    let Some(trace) = of_file.next() else {
        return false;
    };
    of_file.next().is_none()
        && trace
            .launches
            .iter()
            .any(|l| trace.name(l.name).ends_with("StreamBeginCapture"))
}
