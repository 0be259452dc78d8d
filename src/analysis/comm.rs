//! Communication: every comm kernel with its calls, time, mean per call, what it is (the
//! taxonomy's note), calls per layer and its cold first call.

use std::collections::HashMap;

use serde::Serialize;

use super::{Context, Scope};
use crate::taxonomy::{Category, Collective};

/// A first call at least this many times the kernel's mean is called cold.
pub(crate) const COLD_FACTOR: f64 = 3.0;

#[derive(Debug, Clone, Serialize)]
pub struct CommSection {
    pub scope: Scope,
    /// Comm kernels, most time first.
    pub kernels: Vec<CommKernel>,
    /// All comm kernels together.
    pub calls: f64,
    pub ms: f64,
    /// Comm kernel time / all kernel time × 100 (of the per-unit means).
    pub pct_of_kernel_time: Option<f64>,
    /// Layers of the model, counted as the calls of the main attention kernel.
    pub layers: Option<Layers>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Layers {
    pub value: f64,
    /// The attention kernel with the most time; it runs once per layer.
    pub kernel: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommKernel {
    pub name: String,
    pub collective: Option<Collective>,
    /// What the kernel is: protocol and library, from the taxonomy.
    pub note: Option<String>,
    /// Calls per step (decode) or per rank (whole trace), mean over ranks.
    pub calls: f64,
    /// Time per step or per rank, ms.
    pub ms: f64,
    pub mean_us: f64,
    pub pct_of_kernel_time: Option<f64>,
    pub calls_per_layer: Option<f64>,
    /// The slowest over ranks of the kernel's first call (in the first decode step it appears
    /// in, warm-up included; or in the trace), µs.
    pub first_call_us: Option<f64>,
    pub first_call_rank: Option<u32>,
    /// The first call took at least [`COLD_FACTOR`] times the mean.
    pub cold_first_call: bool,
}

#[derive(Default)]
struct Acc {
    ms: f64,
    calls: f64,
}

pub(crate) fn comm_section(ctx: &Context<'_>) -> CommSection {
    // Per name: sum over ranks of per-unit time and calls; per name: note and collective.
    let mut per_name: HashMap<&str, Acc> = HashMap::new();
    let mut attention: HashMap<&str, Acc> = HashMap::new();
    let mut class_of_name: HashMap<&str, (Option<Collective>, Option<String>)> = HashMap::new();
    let mut first: HashMap<&str, (i64, u32)> = HashMap::new();
    let (mut kernel_ms, mut ranks_in_scope) = (0.0, 0usize);
    for rs in ctx.rank_steps {
        let (acts, units) = ctx.rank_activities(rs);
        if units == 0 {
            continue;
        }
        ranks_in_scope += 1;
        let u = units as f64;
        // Integer sums within the rank, one division per name: per-step means stay exact.
        let mut here: HashMap<(&str, bool), (i64, u64)> = HashMap::new();
        let mut kernel_ns = 0i64;
        for (t, i) in acts {
            let Some(a) = ctx.activity(t, i) else {
                continue;
            };
            kernel_ns += a.dur;
            let category = ctx.category(t, a);
            let name = ctx.name(t, a);
            let is_comm = match category {
                Category::Comm => {
                    class_of_name.entry(name).or_insert_with(|| {
                        let class = ctx.class_of(t, a);
                        (
                            class.and_then(|c| c.collective),
                            class.and_then(|c| c.note.clone()),
                        )
                    });
                    true
                }
                Category::Attention => false,
                _ => continue,
            };
            let e = here.entry((name, is_comm)).or_default();
            e.0 += a.dur;
            e.1 += 1;
        }
        kernel_ms += kernel_ns as f64 / 1e6 / u;
        for ((name, is_comm), (ns, calls)) in here {
            let acc = if is_comm {
                per_name.entry(name).or_default()
            } else {
                attention.entry(name).or_default()
            };
            acc.ms += ns as f64 / 1e6 / u;
            acc.calls += calls as f64 / u;
        }
        // The cold first call of each comm kernel in this rank.
        let mut first_here: HashMap<&str, (i64, i64)> = HashMap::new();
        let candidates: Vec<(usize, u32)> = match ctx.scope {
            Scope::Decode => rs
                .decode
                .iter()
                .chain(rs.dropped.iter().map(|d| &d.step))
                .flat_map(|s| s.activities.iter().map(move |&i| (s.trace, i)))
                .collect(),
            Scope::WholeTrace => ctx.rank_activities(rs).0,
        };
        for (t, i) in candidates {
            let Some(a) = ctx.activity(t, i) else {
                continue;
            };
            if ctx.category(t, a) != Category::Comm {
                continue;
            }
            let e = first_here.entry(ctx.name(t, a)).or_insert((a.ts, a.dur));
            if a.ts < e.0 {
                *e = (a.ts, a.dur);
            }
        }
        for (name, (_, dur)) in first_here {
            let e = first.entry(name).or_insert((dur, rs.rank.index));
            if dur > e.0 {
                *e = (dur, rs.rank.index);
            }
        }
    }
    let n = ranks_in_scope.max(1) as f64;
    let kernel_ms = kernel_ms / n;
    let pct = |ms: f64| (kernel_ms > 0.0).then(|| ms / kernel_ms * 100.0);
    let layers = attention
        .iter()
        .max_by(|a, b| a.1.ms.total_cmp(&b.1.ms).then_with(|| b.0.cmp(a.0)))
        .filter(|(_, acc)| acc.calls / n >= 1.0)
        .map(|(name, acc)| Layers {
            value: acc.calls / n,
            kernel: name.to_string(),
        });
    let mut kernels: Vec<CommKernel> = per_name
        .into_iter()
        .map(|(name, acc)| {
            let (ms, calls) = (acc.ms / n, acc.calls / n);
            let mean_us = if calls > 0.0 { ms * 1e3 / calls } else { 0.0 };
            let (collective, note) = class_of_name.get(name).cloned().unwrap_or((None, None));
            let first_call = first.get(name).copied();
            let first_call_us = first_call.map(|(dur, _)| dur as f64 / 1e3);
            CommKernel {
                name: name.to_string(),
                collective,
                note,
                calls,
                ms,
                mean_us,
                pct_of_kernel_time: pct(ms),
                calls_per_layer: layers
                    .as_ref()
                    .filter(|l| l.value > 0.0)
                    .map(|l| calls / l.value),
                first_call_us,
                first_call_rank: first_call.map(|(_, rank)| rank),
                cold_first_call: first_call_us
                    .is_some_and(|f| mean_us > 0.0 && f >= COLD_FACTOR * mean_us),
            }
        })
        .collect();
    kernels.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.name.cmp(&b.name)));
    // `fold` from +0.0: an empty `sum` of f64 is -0.0, which would print as "-0.00".
    let ms: f64 = kernels.iter().map(|k| k.ms).fold(0.0, |a, b| a + b);
    CommSection {
        scope: ctx.scope,
        calls: kernels.iter().map(|k| k.calls).fold(0.0, |a, b| a + b),
        ms,
        pct_of_kernel_time: if kernels.is_empty() { None } else { pct(ms) },
        kernels,
        layers,
    }
}
