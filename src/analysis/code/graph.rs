//! Sites of graph-replayed kernels, from the capture of their graph: each replay (the kernels of
//! one `cudaGraphLaunch`/`hipGraphLaunch`) is joined to the capture of its rank and batch
//! ([`crate::analysis::capture::join`]); a replay under the match rate gets nothing.

use std::collections::HashMap;

use crate::analysis::capture::join::{attribute as join_replay, replay_batch, Join, ReplayKernel};
use crate::reader::model::{GpuKind, RankTrace};
use crate::reader::{CaptureKind, CaptureLaunch};

use super::{CaptureInput, CaptureStatus, OpCall, Site, SiteTable};

/// The GPU activities of each graph replay of a rank, in start order, one list per graph launch.
pub(crate) fn replay_indices(trace: &RankTrace) -> Vec<Vec<usize>> {
    let mut graph_launches: Vec<_> = trace.launches.iter().filter(|l| l.graph).collect();
    graph_launches.sort_by_key(|l| l.ts);
    let index: HashMap<u64, usize> = graph_launches
        .iter()
        .enumerate()
        .map(|(i, l)| (l.correlation, i))
        .collect();
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); graph_launches.len()];
    for (at, a) in trace.gpu.iter().enumerate() {
        if let Some(&i) = a.correlation().and_then(|c| index.get(&c)) {
            out[i].push(at);
        }
    }
    // `gpu` is in start order, so each list is too.
    out.retain(|r| !r.is_empty());
    out
}

/// A replay's join: the capture it joined and how, or none.
type JoinedReplay = Option<(usize, Join)>;

/// The kernels of each graph replay of a rank, as the join takes them.
#[cfg(any(test, feature = "testing"))]
pub fn replays(trace: &RankTrace) -> Vec<Vec<ReplayKernel>> {
    replay_indices(trace)
        .iter()
        .map(|r| replay_kernels(trace, r))
        .collect()
}

/// One replay as the join takes it.
pub(crate) fn replay_kernels(trace: &RankTrace, indices: &[usize]) -> Vec<ReplayKernel> {
    indices
        .iter()
        .map(|&i| {
            let a = &trace.gpu[i];
            ReplayKernel {
                kind: match a.kind() {
                    GpuKind::Kernel => CaptureKind::Kernel,
                    GpuKind::Memcpy => CaptureKind::Memcpy,
                    GpuKind::Memset => CaptureKind::Memset,
                },
                name: trace.name(a.name).to_string(),
                dur_ns: a.dur,
                graph_node: trace.graph_node_of(a),
            }
        })
        .collect()
}

fn site_of(launch: &CaptureLaunch) -> Site {
    Site {
        op: launch.op.as_ref().map(OpCall::from),
        library_op: launch.library_op.as_ref().map(OpCall::from),
        python: launch.python.clone(),
    }
}

/// The captures that may hold this trace's graphs: its own (in the trace), or those of its rank
/// (a capture whose name gives no rank may be any rank's).
fn candidates<'a>(trace: &RankTrace, captures: &'a [CaptureInput]) -> Vec<&'a CaptureInput> {
    let own: Vec<_> = captures
        .iter()
        .filter(|c| c.in_trace && c.capture.file == trace.file)
        .collect();
    if !own.is_empty() {
        return own;
    }
    captures
        .iter()
        .filter(|c| !c.in_trace && c.rank.is_none_or(|r| r == trace.rank.index))
        .collect()
}

/// Totals over the replays of a rank.
#[derive(Default)]
struct Tally {
    joined: usize,
    matched: usize,
    replayed: usize,
    method: Option<String>,
    file: Option<(std::path::PathBuf, bool)>,
    refusal: Option<String>,
}

/// Sets the sites of the trace's replayed kernels in `of`; `None` when the trace replays no graph.
pub(crate) fn attribute(
    trace: &RankTrace,
    captures: &[CaptureInput],
    table: &mut SiteTable,
    of: &mut [u32],
) -> Option<CaptureStatus> {
    let replays = replay_indices(trace);
    if replays.is_empty() {
        return None;
    }
    let found = candidates(trace, captures);
    if found.is_empty() {
        let reason = if captures.is_empty() {
            "no capture trace: pass --capture DIR (SGLang's --enable-profile-cuda-graph and \
             vLLM's capture_torch_profiler write capture_traces/)"
                .to_string()
        } else {
            format!(
                "no capture of rank {} among the captures given",
                trace.rank.index
            )
        };
        return Some(CaptureStatus::NotJoined { reason });
    }
    let batch = replay_batch(trace);
    let mut tally = Tally::default();
    // Steady decode replays the same graph: one join per distinct kernel sequence.
    let mut joined: HashMap<Vec<(CaptureKind, String)>, JoinedReplay> = HashMap::new();
    for replay in &replays {
        let kernels = replay_kernels(trace, replay);
        let key: Vec<_> = kernels.iter().map(|k| (k.kind, k.name.clone())).collect();
        let result = joined
            .entry(key)
            .or_insert_with(|| join_any(&found, &kernels, batch, &mut tally.refusal))
            .clone();
        tally.replayed += kernels.len();
        let Some((c, join)) = result else { continue };
        let capture = &found[c].capture;
        tally.joined += 1;
        tally.matched += join.matched();
        tally.method = Some(join.method.describe().to_string());
        tally.file = Some((capture.file.clone(), found[c].in_trace));
        for (&at, pair) in replay.iter().zip(&join.pairs) {
            if let Some(i) = pair {
                of[at] = table.intern(site_of(&capture.launches[*i]));
            }
        }
    }
    Some(status(tally, replays.len()))
}

/// The first capture that joins this replay: of the replay's batch where both are known; where
/// either is not, only an exact match of every kernel in order.
fn join_any(
    found: &[&CaptureInput],
    kernels: &[ReplayKernel],
    batch: Option<u64>,
    refusal: &mut Option<String>,
) -> Option<(usize, Join)> {
    for (c, input) in found.iter().enumerate() {
        match join_replay(&input.capture, input.batch, kernels, batch) {
            Ok(a) => {
                let exact = a.join.matched() == kernels.len()
                    && kernels.len() == input.capture.launches.len();
                if (batch.is_some() && input.batch.is_some()) || exact {
                    return Some((c, a.join));
                }
                *refusal = Some(format!(
                    "{}: the batch of the capture or of the replay is unknown, and {} of {} \
                     replayed kernels ({} captured) is no exact match",
                    input.capture.file.display(),
                    a.join.matched(),
                    kernels.len(),
                    input.capture.launches.len()
                ));
            }
            Err(why) => *refusal = Some(format!("{}: {why}", input.capture.file.display())),
        }
    }
    None
}

fn status(tally: Tally, replays: usize) -> CaptureStatus {
    match (tally.file, tally.method) {
        (Some((file, in_trace)), Some(method)) => CaptureStatus::Joined {
            file,
            in_trace,
            method,
            replays_joined: tally.joined,
            replays,
            kernels_matched: tally.matched,
            kernels_replayed: tally.replayed,
            match_pct: if tally.replayed == 0 {
                0.0
            } else {
                100.0 * tally.matched as f64 / tally.replayed as f64
            },
        },
        _ => CaptureStatus::NotJoined {
            reason: tally
                .refusal
                .unwrap_or_else(|| "no capture joined any replay".to_string()),
        },
    }
}
