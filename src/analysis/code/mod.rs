//! Code sites (issue 41): for each kernel, the op that launched it (the innermost `cpu_op`, and
//! the library op above it such as `aiter::gemm_a16w16`), its `Input Dims` and dtypes, and the
//! Python frames around the launch.
//!
//! Two sources, per rank: an eager launch has them in the trace itself (kernel → correlation →
//! runtime launch → enclosing `cpu_op` and `python_function` frames, [`eager`]); a graph-replayed
//! kernel has none, and gets them from the graph's capture trace ([`graph`]), or from a capture
//! the trace holds itself. [`scope`] names the Python scope a site belongs to; [`view`] sums time
//! per op and shape and per scope over the kernels a command analyses.

pub(crate) mod eager;
pub(crate) mod graph;
pub(crate) mod lead;
pub(crate) mod scope;
pub(crate) mod view;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::reader::{Capture, CaptureOp};

/// An op call as the trace recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct OpCall {
    pub name: String,
    /// One shape per input; an input that is not a tensor is empty.
    pub input_dims: Vec<Vec<u64>>,
    /// `Input type` per input (`c10::BFloat16`, `Scalar`, `""`).
    pub input_types: Vec<String>,
}

impl From<&CaptureOp> for OpCall {
    fn from(op: &CaptureOp) -> Self {
        OpCall {
            name: op.name.clone(),
            input_dims: op.input_dims.clone(),
            input_types: op.input_types.clone(),
        }
    }
}

/// What launched one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize)]
pub(crate) struct Site {
    /// The innermost `cpu_op` around the launch.
    pub op: Option<OpCall>,
    /// The innermost op above `op` that is not an ATen op (the library op that called it).
    pub library_op: Option<OpCall>,
    /// `python_function` frames around the launch, outermost first.
    pub python: Vec<String>,
}

/// A site was found for no kernel of this activity.
pub(crate) const NO_SITE: u32 = u32::MAX;

/// A graph capture the run is joined to, as the pipeline read it.
#[derive(Debug, Clone)]
pub(crate) struct CaptureInput {
    pub capture: Capture,
    /// The batch it was captured for (`execution_details.json`, else `bs_N` in its name).
    pub batch: Option<u64>,
    /// The rank it was captured on (`rank_N`/`rankN` in its name).
    pub rank: Option<u32>,
    /// The trace holds its own capture (between `*StreamBeginCapture` and `EndCapture`).
    pub in_trace: bool,
}

/// How the sites of one rank's graph replays were found, or why not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CaptureStatus {
    /// Joined: replays at or above the match rate, their kernels matched.
    Joined {
        file: PathBuf,
        in_trace: bool,
        /// `graph node id`, `kernel name in capture order` or `position`.
        method: String,
        replays_joined: usize,
        replays: usize,
        kernels_matched: usize,
        kernels_replayed: usize,
        /// Matched over replayed kernels of the joined replays, %.
        match_pct: f64,
    },
    /// No attribution, and why.
    NotJoined { reason: String },
}

/// The code sites of a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct CodeSites {
    /// Distinct sites.
    pub sites: Vec<Site>,
    /// Per trace of the run, per GPU activity, the index of its site ([`NO_SITE`]: none).
    pub of: Vec<Vec<u32>>,
    /// Per rank with graph replays: how their sites were found.
    pub graph: Vec<(u32, CaptureStatus)>,
}

/// Interns sites while they are found.
#[derive(Default)]
pub(crate) struct SiteTable {
    pub(crate) sites: Vec<Site>,
    index: HashMap<Site, u32>,
}

impl SiteTable {
    pub(crate) fn intern(&mut self, site: Site) -> u32 {
        if let Some(&id) = self.index.get(&site) {
            return id;
        }
        let id = self.sites.len() as u32;
        self.index.insert(site.clone(), id);
        self.sites.push(site);
        id
    }
}

/// The sites of every kernel of the run: eager links first, then, for kernels of graph replays,
/// the captures given (each rank's own, for its replay's batch).
/// `wanted(trace, activity)`: the eager activities to look at.
pub(crate) fn code_sites(
    run: &crate::reader::Run,
    captures: &[CaptureInput],
    wanted: &dyn Fn(usize, usize) -> bool,
) -> CodeSites {
    let mut table = SiteTable::default();
    let mut of = Vec::with_capacity(run.traces.len());
    for (t, trace) in run.traces.iter().enumerate() {
        let (sites, _linked) = eager::sites(trace, &mut table, &|i| wanted(t, i));
        of.push(sites);
    }
    let mut graph = Vec::new();
    for (t, trace) in run.traces.iter().enumerate() {
        if let Some(status) = graph::attribute(trace, captures, &mut table, &mut of[t]) {
            graph.push((trace.rank.index, status));
        }
    }
    CodeSites {
        sites: table.sites,
        of,
        graph,
    }
}
