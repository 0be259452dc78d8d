//! The model-level view: kernel time per op (op and shapes) and per Python scope, over the
//! kernels a command analyses (the steady decode steps, else the whole trace).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analysis::capture::gemm::{gemm_shape_of, GemmShape};
use crate::analysis::roofline::{bound, parse_dtype, Bound, DevicePeaks};
use crate::analysis::Scope;
use crate::reader::Run;
use crate::stats::median;

use super::scope::{innermost_instance, scope_of};
use super::{CaptureStatus, CodeSites, OpCall, Site};

/// One op and shape.
#[derive(Debug, Clone, Serialize)]
pub struct OpRow {
    /// The library op over the innermost op (`aiter::gemm_a16w16 › aten::mm`), or the op alone.
    pub op: String,
    /// Tensor inputs' dims, `32×4096, 24576×4096`.
    pub shapes: String,
    /// Distinct tensor dtypes, as the trace writes them.
    pub dtypes: Vec<String>,
    /// The scope of the first site of this op and shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Calls per step (decode) or per rank (whole trace).
    pub calls: f64,
    /// Kernel time per step or per rank, ms.
    pub ms: f64,
    /// Share of the kernel time in scope, %.
    pub pct: f64,
    /// Time of one call: the sum over its kernels of each kernel's median time, µs.
    pub us_per_call: f64,
    /// The GEMM it is, where its op and dims say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemm: Option<GemmFigures>,
    /// The kernel with most time at this op and shape.
    pub kernel: String,
}

/// A GEMM's throughput from its shape and time per call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GemmFigures {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: u64,
    pub dtype: String,
    pub flops_per_call: f64,
    pub bytes_per_call: f64,
    pub tflops: f64,
    /// Decimal TB/s.
    pub tbps: f64,
    /// Against the device's roofline, where it has a peak table (or `--peak` gives one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) bound: Option<Bound>,
}

/// One Python scope.
#[derive(Debug, Clone, Serialize)]
pub struct ScopeRow {
    pub scope: String,
    /// Distinct instances of its innermost module (`FusedMoE_0` … `FusedMoE_57`: 58 layers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<usize>,
    pub calls: f64,
    pub ms: f64,
    pub pct: f64,
    /// The op with most time in it.
    pub lead_op: Option<String>,
}

/// The view of a run.
#[derive(Debug, Clone, Serialize)]
pub struct ModelView {
    pub scope: Scope,
    /// Scope frames per row (`--scope-depth`).
    pub depth: usize,
    /// Kernel time in scope with an op or a Python frame, %.
    pub attributed_pct: f64,
    /// Kernel time in scope with a Python frame, %.
    pub scoped_pct: f64,
    pub ops: Vec<OpRow>,
    pub scopes: Vec<ScopeRow>,
    /// The peaks the GEMMs are judged against, or why there are none: in JSON the peaks'
    /// object, or `{"none": "<why>"}`.
    #[serde(serialize_with = "peaks_json")]
    pub(crate) peaks: Result<DevicePeaks, String>,
    /// Ranks that replay graphs: how their kernels got sites, or why not.
    pub graph: Vec<GraphSites>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphSites {
    pub rank: u32,
    #[serde(flatten)]
    pub status: CaptureStatus,
}

/// The op stack and shapes of a site, for an op row.
/// The library op shows only above an ATen op (`aiter::gemm_a16w16 › aten::mm`); an op that is
/// a library's own (`sgl_kernel::silu_and_mul`) stands alone.
pub(crate) fn op_label(site: &Site) -> Option<(String, &OpCall)> {
    let op = site.op.as_ref().or(site.library_op.as_ref())?;
    let label = match (&site.library_op, &site.op) {
        (Some(lib), Some(op)) if op.name.starts_with("aten::") => {
            format!("{} › {}", lib.name, op.name)
        }
        _ => op.name.clone(),
    };
    Some((label, op))
}

/// `32×4096, 24576×4096`: the dims of each tensor input.
pub(crate) fn shapes_text(op: &OpCall) -> String {
    op.input_dims
        .iter()
        .filter(|d| !d.is_empty())
        .map(|d| d.iter().map(u64::to_string).collect::<Vec<_>>().join("×"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The GEMM a site is: its innermost op's shape, else its library op's.
pub(crate) fn gemm_of(site: &Site) -> Option<GemmShape> {
    [&site.op, &site.library_op]
        .into_iter()
        .flatten()
        .find_map(|op| gemm_shape_of(&op.name, &op.input_dims, &op.input_types))
}

#[derive(Default)]
struct Acc {
    ns: i64,
    /// Durations per kernel name (a call launches each of its kernels once).
    by_kernel: BTreeMap<String, Vec<f64>>,
    site: Option<usize>,
}

impl Acc {
    fn add(&mut self, kernel: &str, ns: i64, site: usize) {
        self.ns += ns;
        self.by_kernel
            .entry(kernel.to_string())
            .or_default()
            .push(ns as f64);
        self.site.get_or_insert(site);
    }

    fn calls(&self) -> usize {
        self.by_kernel.values().map(Vec::len).max().unwrap_or(0)
    }

    fn per_call_ns(&self) -> f64 {
        let mut by_kernel = self.by_kernel.clone();
        by_kernel.values_mut().filter_map(|v| median(v)).sum()
    }

    fn lead_kernel(&self) -> String {
        self.by_kernel
            .iter()
            .max_by(|a, b| {
                let sum = |v: &Vec<f64>| v.iter().sum::<f64>();
                sum(a.1).total_cmp(&sum(b.1))
            })
            .map(|(k, _)| k.clone())
            .unwrap_or_default()
    }
}

/// The activities in scope: per trace, the indices of its GPU activities, and the number of
/// steps (decode) or ranks (whole trace) the sums are divided by.
pub(crate) struct InScope {
    pub(crate) activities: Vec<(usize, Vec<u32>)>,
    pub(crate) per: f64,
    pub(crate) scope: Scope,
}

fn peaks_json<S: serde::Serializer>(
    peaks: &Result<DevicePeaks, String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    match peaks {
        Ok(p) => p.serialize(s),
        Err(why) => {
            let mut map = s.serialize_map(Some(1))?;
            map.serialize_entry("none", why)?;
            map.end()
        }
    }
}

/// A scope's time, its time per op, and its distinct instances.
type ScopeAcc = (Acc, BTreeMap<String, i64>, std::collections::BTreeSet<u64>);

/// The model view of the activities in scope.
pub(crate) fn model_view(
    run: &Run,
    sites: &CodeSites,
    in_scope: &InScope,
    depth: usize,
    peaks: Result<DevicePeaks, String>,
) -> ModelView {
    let mut ops: HashMap<(String, String, Vec<String>), Acc> = HashMap::new();
    let mut scopes: HashMap<String, ScopeAcc> = HashMap::new();
    let (mut total, mut attributed, mut scoped) = (0i64, 0i64, 0i64);
    for (t, indices) in &in_scope.activities {
        let trace = &run.traces[*t];
        for &i in indices {
            let a = &trace.gpu[i as usize];
            total += a.dur;
            let Some(id) = sites.of.get(*t).and_then(|o| o.get(i as usize)).copied() else {
                continue;
            };
            if id == super::NO_SITE {
                continue;
            }
            attributed += a.dur;
            let site = &sites.sites[id as usize];
            let kernel = trace.name(a.name);
            if let Some((label, op)) = op_label(site) {
                let key = (label, shapes_text(op), dtypes(op));
                ops.entry(key).or_default().add(kernel, a.dur, id as usize);
            }
            if let Some(scope) = scope_of(&site.python, depth) {
                scoped += a.dur;
                let entry = scopes.entry(scope).or_default();
                entry.0.add(kernel, a.dur, id as usize);
                if let Some((label, _)) = op_label(site) {
                    *entry.1.entry(label).or_default() += a.dur;
                }
                if let Some((_, n)) = innermost_instance(&site.python) {
                    entry.2.insert(n);
                }
            }
        }
    }
    let pct = |ns: i64| {
        if total > 0 {
            100.0 * ns as f64 / total as f64
        } else {
            0.0
        }
    };
    let per = in_scope.per.max(1.0);
    let mut op_rows: Vec<OpRow> = ops
        .into_iter()
        .map(|((op, shapes, dtypes), acc)| {
            let site = &sites.sites[acc.site.unwrap_or_default()];
            let us_per_call = acc.per_call_ns() / 1e3;
            OpRow {
                gemm: gemm_of(site).map(|g| figures(&g, us_per_call, peaks.as_ref().ok())),
                scope: scope_of(&site.python, depth),
                calls: acc.calls() as f64 / per,
                ms: acc.ns as f64 / 1e6 / per,
                pct: pct(acc.ns),
                kernel: acc.lead_kernel(),
                us_per_call,
                op,
                shapes,
                dtypes,
            }
        })
        .collect();
    op_rows.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.op.cmp(&b.op)));
    let mut scope_rows: Vec<ScopeRow> = scopes
        .into_iter()
        .map(|(scope, (acc, by_op, instances))| ScopeRow {
            lead_op: by_op
                .into_iter()
                .max_by_key(|(_, ns)| *ns)
                .map(|(op, _)| op),
            instances: (!instances.is_empty()).then_some(instances.len()),
            calls: acc.calls() as f64 / per,
            ms: acc.ns as f64 / 1e6 / per,
            pct: pct(acc.ns),
            scope,
        })
        .collect();
    scope_rows.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.scope.cmp(&b.scope)));
    ModelView {
        scope: in_scope.scope,
        depth,
        attributed_pct: pct(attributed),
        scoped_pct: pct(scoped),
        ops: op_rows,
        scopes: scope_rows,
        peaks,
        graph: sites
            .graph
            .iter()
            .map(|(rank, status)| GraphSites {
                rank: *rank,
                status: status.clone(),
            })
            .collect(),
    }
}

fn dtypes(op: &OpCall) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (dims, t) in op.input_dims.iter().zip(&op.input_types) {
        if !dims.is_empty() && !t.is_empty() && !out.contains(t) {
            out.push(t.clone());
        }
    }
    out
}

/// FLOPs, bytes and throughput of one call of a GEMM taking `us_per_call`, and its bound on
/// the device where `peaks` are known.
pub(crate) fn figures(g: &GemmShape, us_per_call: f64, peaks: Option<&DevicePeaks>) -> GemmFigures {
    let seconds = us_per_call / 1e6;
    let bound = peaks
        .zip(parse_dtype(&g.dtype))
        .map(|(peaks, dtype)| bound(g.flops(), g.bytes(), seconds, dtype.dtype, peaks));
    let rate = |x: f64| {
        if seconds > 0.0 {
            x / seconds / 1e12
        } else {
            0.0
        }
    };
    GemmFigures {
        m: g.m,
        n: g.n,
        k: g.k,
        batch: g.batch,
        dtype: g.dtype.clone(),
        flops_per_call: g.flops(),
        bytes_per_call: g.bytes(),
        tflops: rate(g.flops()),
        tbps: rate(g.bytes()),
        bound,
    }
}
