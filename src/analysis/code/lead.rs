//! The code behind the kernel a check's Why names: the site with most of its time in the steady
//! decode steps, its scope, op, shapes, and calls per step.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::reader::Run;
use crate::steps::RankSteps;

use super::scope::{innermost_instance, scope_of};
use super::view::{figures, gemm_of, op_label, shapes_text, GemmFigures};
use super::{CodeSites, OpCall, NO_SITE};
use crate::analysis::roofline::DevicePeaks;
use crate::stats::median;

/// Where the named kernel was launched from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeadSite {
    pub kernel: String,
    /// The Python scope (`nn.Module: FusedMoE`), where its stack has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The op stack label (`aiter::gemm_a16w16 › aten::mm`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// `M×N×K` of a GEMM, else the tensor inputs' dims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// Distinct instances of the scope's module (`FusedMoE_0` … `_57`: 58 layers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<usize>,
    /// Calls of the kernel per decode step from this call (same ops and shapes) at every layer.
    pub calls_per_step: f64,
    /// The median time of one of those calls, µs.
    pub us_per_call: f64,
    /// FLOPs, bytes, throughput and bound of a GEMM site.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemm: Option<GemmFigures>,
    /// The ops, innermost first, with their dims and dtypes (for a repro).
    pub ops: Vec<OpCall>,
    /// Python frames, outermost first.
    pub python: Vec<String>,
}

/// The site of `kernel` with most time in the kept decode steps; `None` when none of its calls
/// has a site.
pub(crate) fn lead_site(
    run: &Run,
    sites: &CodeSites,
    rank_steps: &[RankSteps],
    kernel: &str,
    depth: usize,
    peaks: Option<&DevicePeaks>,
) -> Option<LeadSite> {
    // Per site, the durations of the kernel's calls from it (their sum and count follow).
    let mut durations: HashMap<u32, Vec<i64>> = HashMap::new();
    let mut steps = 0usize;
    for rs in rank_steps {
        steps += rs.decode.len();
        for step in &rs.decode {
            let trace = &run.traces[step.trace];
            for &i in &step.activities {
                let a = &trace.gpu[i as usize];
                let id = sites.of[step.trace][i as usize];
                if id == NO_SITE || trace.name(a.name) != kernel {
                    continue;
                }
                durations.entry(id).or_default().push(a.dur);
            }
        }
    }
    // The call (same ops, same shapes) with most time over all its layers leads; its layer
    // with most time names the scope.
    let call_of = |s: u32| {
        let site = &sites.sites[s as usize];
        (site.op.as_ref(), site.library_op.as_ref())
    };
    let ns = |d: &[i64]| d.iter().sum::<i64>();
    let mut per_call: HashMap<_, i64> = HashMap::new();
    for (&s, d) in &durations {
        *per_call.entry(call_of(s)).or_default() += ns(d);
    }
    let lead_call = per_call
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))?
        .0;
    let in_lead = |s: &u32| call_of(*s) == lead_call;
    let (&id, _) = durations
        .iter()
        .filter(|(s, _)| in_lead(s))
        .max_by_key(|(id, d)| (ns(d), std::cmp::Reverse(**id)))?;
    let site = &sites.sites[id as usize];
    // Layers: the module instances the lead call was launched from.
    let layers: BTreeSet<(String, u64)> = durations
        .keys()
        .filter(|s| in_lead(s))
        .filter_map(|&s| innermost_instance(&sites.sites[s as usize].python))
        .collect();
    let mut samples: Vec<f64> = durations
        .iter()
        .filter(|(s, _)| in_lead(s))
        .flat_map(|(_, d)| d.iter().map(|&ns| ns as f64))
        .collect();
    let calls = samples.len();
    let us_per_call = median(&mut samples).unwrap_or_default() / 1e3;
    let gemm = gemm_of(site).map(|g| figures(&g, us_per_call, peaks));
    let shape = match gemm_of(site) {
        Some(g) => Some(format!("{}×{}×{}", g.m, g.n, g.k)),
        None => op_label(site)
            .map(|(_, op)| shapes_text(op))
            .filter(|s| !s.is_empty()),
    };
    Some(LeadSite {
        kernel: kernel.to_string(),
        scope: scope_of(&site.python, depth),
        op: op_label(site).map(|(label, _)| label),
        shape,
        layers: (layers.len() > 1).then_some(layers.len()),
        calls_per_step: calls as f64 / steps.max(1) as f64,
        us_per_call,
        gemm,
        ops: site
            .op
            .iter()
            .chain(site.library_op.iter())
            .cloned()
            .collect(),
        python: site.python.clone(),
    })
}
