//! Sites of eager launches: kernel → correlation → runtime launch → the `cpu_op` around it (by
//! External id, else by time on the launching thread), the library op above that, and the
//! `python_function` frames the reader kept around the launch.

use rustc_hash::FxHashMap as HashMap;

use crate::links::Links;
use crate::reader::model::{parse_input_dims, RankTrace};

use super::{OpCall, Site, SiteTable, NO_SITE};

/// The site of each GPU activity of `trace` ([`NO_SITE`] where nothing was found), and how many
/// activities have one. Graph-replayed kernels find no op here (their launch is the graph's).
/// Only the activities `wanted` says are looked at (a check needs the lead kernel's alone).
pub(crate) fn sites(
    trace: &RankTrace,
    table: &mut SiteTable,
    wanted: &dyn Fn(usize) -> bool,
) -> (Vec<u32>, usize) {
    let links = Links::new(trace);
    let mut linked = 0;
    // The op decides the library op above it and the innermost frame the frames outside it:
    // one site per pair, built once (a run launches the same few hundred sites many times).
    let mut by_key: HashMap<(Option<usize>, Option<usize>), u32> = HashMap::default();
    let of = trace
        .gpu
        .iter()
        .enumerate()
        .map(|(at, a)| {
            if !wanted(at) {
                return NO_SITE;
            }
            let Some(launch) = links.launch_of(a).filter(|l| !l.graph) else {
                return NO_SITE;
            };
            let op = links.cpu_op_of(a);
            let frames = links.frames_around(launch);
            if op.is_none() && frames.is_empty() {
                return NO_SITE;
            }
            linked += 1;
            *by_key
                .entry((op, frames.first().copied()))
                .or_insert_with(|| table.intern(site(trace, &links, op, &frames)))
        })
        .collect();
    (of, linked)
}

fn site(trace: &RankTrace, links: &Links<'_>, op: Option<usize>, frames: &[usize]) -> Site {
    let library_op = op.and_then(|op| {
        links
            .ops_around(op)
            .into_iter()
            .find(|&i| !trace.name(trace.cpu_ops[i].name).starts_with("aten::"))
    });
    Site {
        op: op.map(|i| op_call(trace, i)),
        library_op: library_op.map(|i| op_call(trace, i)),
        python: frames
            .iter()
            .rev()
            .map(|&i| trace.name(trace.python_frames[i].name).to_string())
            .collect(),
    }
}

/// An op of the trace as an [`OpCall`].
fn op_call(trace: &RankTrace, index: usize) -> OpCall {
    let op = &trace.cpu_ops[index];
    let input_dims = op
        .input_dims
        .map(|d| {
            parse_input_dims(trace.name(d))
                .into_iter()
                .map(|dims| {
                    dims.into_iter()
                        .filter_map(|d| u64::try_from(d).ok())
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default();
    let input_types = op
        .input_types
        .and_then(|t| serde_json::from_str::<Vec<serde_json::Value>>(trace.name(t)).ok())
        .map(|types| {
            types
                .iter()
                .map(|t| t.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    OpCall {
        name: trace.name(op.name).to_string(),
        input_dims,
        input_types,
    }
}
