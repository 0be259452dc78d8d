//! What the reader found in each rank of a run: counts, links and coverage, before any analysis.
//! Answers "did the trace record what we need?" (streams, launches, graph replays, `Input Dims`).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::links::Links;
use crate::reader::{dims_have_numbers, GpuKind, RankTrace, ReadStats, Run};

/// Version of the `inspect --format json` schema; bumped on any incompatible change.
pub(crate) const INSPECT_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct RunInspection {
    pub schema_version: u32,
    pub ranks: Vec<RankInspection>,
    /// "1 of 4 ranks (rank(s) 1, 2, 3 missing: world_size in distributedInfo)" where the run
    /// holds only some of its ranks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_ranks: Option<String>,
    /// CPU-only files that name no rank (a serving frontend's trace), left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct RankInspection {
    pub rank: u32,
    pub label: String,
    pub rank_source: crate::reader::RankSource,
    pub file: String,
    pub stage: Option<crate::reader::Stage>,
    pub device: Option<String>,
    pub world_size: Option<u64>,
    /// First start to last end of GPU activity, ms.
    pub gpu_span_ms: f64,
    pub kernels: u64,
    pub memcpys: u64,
    pub memsets: u64,
    pub cpu_ops: u64,
    pub runtime_launches: u64,
    pub annotations: u64,
    pub streams: Vec<StreamInspection>,
    pub links: LinkInspection,
    pub graph_launches: GraphInspection,
    pub input_dims: InputDimsInspection,
    pub read: ReadStats,
}

#[derive(Debug, Serialize)]
pub struct StreamInspection {
    pub stream: u64,
    pub activities: u64,
    /// Sum of activity durations on the stream, ms.
    pub kernel_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct LinkInspection {
    /// Kernels whose correlation matches a runtime launch of the same rank.
    pub kernels_with_launch: u64,
    /// Kernels linked to a CPU op: by External id, or through their launch (its External id, or
    /// the innermost CPU op enclosing it on its thread).
    pub kernels_with_cpu_op: u64,
    pub kernels_with_external_id: u64,
    pub kernels: u64,
}

#[derive(Debug, Serialize)]
pub struct GraphInspection {
    pub launches: u64,
    /// Kernels whose correlation is that of a graph launch.
    pub kernels: u64,
    pub max_kernels_per_launch: u64,
}

#[derive(Debug, Serialize)]
pub struct InputDimsInspection {
    pub cpu_ops: u64,
    /// CPU ops with an `Input Dims` holding at least one number.
    pub with_dims: u64,
    /// CPU ops whose `Input Dims` holds no number (tensor-creation ops, scalar-only ops).
    pub empty_dims: u64,
    /// CPU ops without an `Input Dims` argument at all.
    pub without_key: u64,
    /// The ops with the most empty-dims events, most first (at most 10).
    pub top_empty_ops: Vec<OpCount>,
}

#[derive(Debug, Serialize)]
pub struct OpCount {
    pub name: String,
    pub count: u64,
}

pub(crate) fn inspect(run: &Run) -> RunInspection {
    RunInspection {
        schema_version: INSPECT_SCHEMA_VERSION,
        ranks: run.traces.iter().map(inspect_rank).collect(),
        missing_ranks: run.missing.as_ref().map(|m| m.to_string()),
        skipped: run
            .skipped
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
    }
}

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

fn inspect_rank(t: &RankTrace) -> RankInspection {
    let count = |kind| t.gpu.iter().filter(|a| a.kind() == kind).count() as u64;
    let span = match (t.gpu.first(), t.gpu.iter().map(|a| a.end()).max()) {
        (Some(first), Some(end)) => end - first.ts,
        _ => 0,
    };
    RankInspection {
        rank: t.rank.index,
        label: t.rank.label.clone(),
        rank_source: t.rank.source,
        file: t.file.display().to_string(),
        stage: t.stage,
        device: t.device.as_ref().map(|d| d.name.clone()),
        world_size: t.distributed.as_ref().and_then(|d| d.world_size),
        gpu_span_ms: ms(span),
        kernels: count(GpuKind::Kernel),
        memcpys: count(GpuKind::Memcpy),
        memsets: count(GpuKind::Memset),
        cpu_ops: t.cpu_ops.len() as u64,
        runtime_launches: t.launches.len() as u64,
        annotations: t.annotations.len() as u64,
        streams: streams(t),
        links: links(t),
        graph_launches: graphs(t),
        input_dims: input_dims(t),
        read: t.stats.clone(),
    }
}

fn streams(t: &RankTrace) -> Vec<StreamInspection> {
    let mut by_stream: BTreeMap<u64, (u64, i64)> = BTreeMap::new();
    for a in &t.gpu {
        let e = by_stream.entry(a.stream()).or_default();
        e.0 += 1;
        e.1 += a.dur;
    }
    by_stream
        .into_iter()
        .map(|(stream, (activities, dur))| StreamInspection {
            stream,
            activities,
            kernel_ms: ms(dur),
        })
        .collect()
}

fn links(t: &RankTrace) -> LinkInspection {
    let linker = Links::new(t);
    let mut out = LinkInspection {
        kernels_with_launch: 0,
        kernels_with_cpu_op: 0,
        kernels_with_external_id: 0,
        kernels: 0,
    };
    for k in t.gpu.iter().filter(|a| a.kind() == GpuKind::Kernel) {
        out.kernels += 1;
        out.kernels_with_launch += linker.launch_of(k).is_some() as u64;
        out.kernels_with_external_id += k.external_id().is_some() as u64;
        out.kernels_with_cpu_op += linker.cpu_op_of(k).is_some() as u64;
    }
    out
}

fn graphs(t: &RankTrace) -> GraphInspection {
    let graph_corr: HashSet<u64> = t
        .launches
        .iter()
        .filter(|l| l.graph)
        .map(|l| l.correlation)
        .collect();
    let mut per_launch: HashMap<u64, u64> = HashMap::new();
    for a in &t.gpu {
        if let Some(c) = a.correlation().filter(|c| graph_corr.contains(c)) {
            *per_launch.entry(c).or_default() += 1;
        }
    }
    GraphInspection {
        launches: graph_corr.len() as u64,
        kernels: per_launch.values().sum(),
        max_kernels_per_launch: per_launch.values().copied().max().unwrap_or(0),
    }
}

fn input_dims(t: &RankTrace) -> InputDimsInspection {
    let mut out = InputDimsInspection {
        cpu_ops: 0,
        with_dims: 0,
        empty_dims: 0,
        without_key: 0,
        top_empty_ops: Vec::new(),
    };
    let mut empty_by_op: HashMap<u32, u64> = HashMap::new();
    for op in &t.cpu_ops {
        out.cpu_ops += 1;
        match op.input_dims {
            None => out.without_key += 1,
            Some(d) if dims_have_numbers(t.name(d)) => out.with_dims += 1,
            Some(_) => {
                out.empty_dims += 1;
                *empty_by_op.entry(op.name).or_default() += 1;
            }
        }
    }
    let mut top: Vec<OpCount> = empty_by_op
        .into_iter()
        .map(|(name, count)| OpCount {
            name: t.name(name).to_owned(),
            count,
        })
        .collect();
    top.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    top.truncate(10);
    out.top_empty_ops = top;
    out
}
