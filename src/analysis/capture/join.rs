//! Pairs the kernels of one graph replay with the launches of its capture.
//!
//! In order of trust: by `graph node id` where both sides carry it (PyTorch >= 2.12); else by
//! kernel names aligned in capture order, greedily, so that a few kernels missing on either side
//! do not shift the rest; else, only when both sides hold exactly as many kernels, by position.
//! Memcpys and memsets match by kind, as their names differ between runtime call and activity.

use std::collections::HashMap;
use std::fmt;

use crate::reader::model::RankTrace;
use crate::reader::{Capture, CaptureKind, CaptureLaunch};

/// Below this share of replayed kernels matched, nothing is attributed.
pub const MIN_MATCH_RATE: f64 = 0.95;

/// How far ahead the name alignment looks for the kernel it missed.
const LOOKAHEAD: usize = 32;

/// One kernel of a graph replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayKernel {
    pub kind: CaptureKind,
    pub name: String,
    pub dur_ns: i64,
    pub graph_node: Option<u64>,
}

/// How the pairs were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinMethod {
    GraphNode,
    KernelNames,
    Position,
}

/// Per replayed kernel, the capture launch it is (index into the capture's launches).
#[derive(Debug, Clone, PartialEq)]
pub struct Join {
    pub method: JoinMethod,
    pub pairs: Vec<Option<usize>>,
}

impl Join {
    pub fn matched(&self) -> usize {
        self.pairs.iter().filter(|p| p.is_some()).count()
    }

    /// Matched replayed kernels over all replayed kernels (0 for an empty replay).
    pub fn match_rate(&self) -> f64 {
        if self.pairs.is_empty() {
            return 0.0;
        }
        self.matched() as f64 / self.pairs.len() as f64
    }
}

/// Why a replay gets no attribution from a capture.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The capture was recorded for another batch size than the replay ran.
    OtherBatch { capture: u64, replay: u64 },
    /// Too few replayed kernels found in the capture.
    LowMatch {
        method: JoinMethod,
        matched: usize,
        replayed: usize,
        captured: usize,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::OtherBatch { capture, replay } => write!(
                f,
                "the capture is of batch {capture} and the replay ran batch {replay}: a graph \
                 captured for another batch holds other shapes"
            ),
            Refusal::LowMatch {
                method,
                matched,
                replayed,
                captured,
            } => {
                write!(
                    f,
                    "only {matched} of {replayed} replayed kernels matched the {captured} captured \
                     launches by {}, under {}%",
                    method.describe(),
                    crate::units::trimmed(MIN_MATCH_RATE * 100.0, 0)
                )?;
                if *method == JoinMethod::KernelNames && replayed != captured {
                    write!(
                        f,
                        "; matching by position needs equal counts ({replayed} replayed, \
                         {captured} captured)"
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl JoinMethod {
    pub fn describe(self) -> &'static str {
        match self {
            JoinMethod::GraphNode => "graph node id",
            JoinMethod::KernelNames => "kernel name in capture order",
            JoinMethod::Position => "position",
        }
    }
}

/// A replay joined to its capture, at or above [`MIN_MATCH_RATE`].
#[derive(Debug, Clone)]
pub struct Attribution<'a> {
    pub capture: &'a Capture,
    pub replay: &'a [ReplayKernel],
    pub join: Join,
}

impl Attribution<'_> {
    /// Each matched replayed kernel with its capture launch.
    pub fn pairs(&self) -> impl Iterator<Item = (&ReplayKernel, &CaptureLaunch)> {
        self.join
            .pairs
            .iter()
            .zip(self.replay)
            .filter_map(|(p, k)| p.map(|i| (k, &self.capture.launches[i])))
    }
}

fn kernel_key(kind: CaptureKind, name: &str) -> (CaptureKind, &str) {
    match kind {
        CaptureKind::Kernel => (kind, name),
        _ => (kind, ""),
    }
}

/// Joins one replay to its capture (see the module text for the order of methods).
pub fn join(capture: &[CaptureLaunch], replay: &[ReplayKernel]) -> Join {
    let with_nodes = !replay.is_empty()
        && replay.iter().all(|k| k.graph_node.is_some())
        && capture.iter().all(|l| l.graph_node.is_some());
    if with_nodes {
        let by_node: HashMap<u64, usize> = capture
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Some((l.graph_node?, i)))
            .collect();
        return Join {
            method: JoinMethod::GraphNode,
            pairs: replay
                .iter()
                .map(|k| by_node.get(&k.graph_node?).copied())
                .collect(),
        };
    }
    let by_names = align(capture, replay);
    if by_names.match_rate() >= MIN_MATCH_RATE || capture.len() != replay.len() {
        return by_names;
    }
    Join {
        method: JoinMethod::Position,
        pairs: (0..replay.len()).map(Some).collect(),
    }
}

/// Greedy alignment by kernel name: equal names pair; at a difference, the nearer of the replayed
/// kernel found ahead in the capture or the captured launch found ahead in the replay is taken
/// and what lies between is left unmatched; found in neither, both are skipped.
fn align(capture: &[CaptureLaunch], replay: &[ReplayKernel]) -> Join {
    let ckey = |i: usize| kernel_key(capture[i].kind, &capture[i].kernel);
    let rkey = |j: usize| kernel_key(replay[j].kind, &replay[j].name);
    let mut pairs = vec![None; replay.len()];
    let (mut i, mut j) = (0, 0);
    while i < capture.len() && j < replay.len() {
        if ckey(i) == rkey(j) {
            pairs[j] = Some(i);
            i += 1;
            j += 1;
            continue;
        }
        let in_capture = (1..=LOOKAHEAD)
            .take_while(|d| i + d < capture.len())
            .find(|d| ckey(i + d) == rkey(j));
        let in_replay = (1..=LOOKAHEAD)
            .take_while(|d| j + d < replay.len())
            .find(|d| rkey(j + d) == ckey(i));
        match (in_capture, in_replay) {
            (Some(a), Some(b)) if b < a => j += b,
            (Some(a), _) => i += a,
            (None, Some(b)) => j += b,
            (None, None) => {
                i += 1;
                j += 1;
            }
        }
    }
    Join {
        method: JoinMethod::KernelNames,
        pairs,
    }
}

/// Joins a replay to a capture, or says why not: a capture of another batch (where both batches
/// are known) or a match rate under [`MIN_MATCH_RATE`].
pub fn attribute<'a>(
    capture: &'a Capture,
    capture_batch: Option<u64>,
    replay: &'a [ReplayKernel],
    replay_batch: Option<u64>,
) -> Result<Attribution<'a>, Refusal> {
    if let (Some(c), Some(r)) = (capture_batch, replay_batch) {
        if c != r {
            return Err(Refusal::OtherBatch {
                capture: c,
                replay: r,
            });
        }
    }
    let join = join(&capture.launches, replay);
    if join.match_rate() < MIN_MATCH_RATE {
        return Err(Refusal::LowMatch {
            method: join.method,
            matched: join.matched(),
            replayed: replay.len(),
            captured: capture.launches.len(),
        });
    }
    Ok(Attribution {
        capture,
        replay,
        join,
    })
}

/// The batch a replay ran, from `bs=N` in its annotations (SGLang's `step[DECODE bs=32]`), where
/// they all agree.
pub fn replay_batch(trace: &RankTrace) -> Option<u64> {
    let mut found = trace.annotations.iter().filter_map(|a| {
        let name = trace.name(a.name);
        let at = name.find("bs=")?;
        let digits: String = name[at + 3..]
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse::<u64>().ok()
    });
    let first = found.next()?;
    found.all(|b| b == first).then_some(first)
}
