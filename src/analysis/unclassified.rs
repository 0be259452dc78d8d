//! Kernels in `other`: their share of kernel time, each by time, and for those no rule matched a
//! ready-to-paste `[[rule]]` with the category a word of the name hints at
//! ([`crate::taxonomy::suggest`]). A kernel that falls into `other` moves time out of the
//! figures the gate watches, so the report says which and how to fix it.

use std::collections::HashMap;

use serde::Serialize;

use super::{Context, Scope};
use crate::metrics::breakdown::Breakdown;
use crate::taxonomy::{demangle, suggest, Category, Class, Suggestion};

pub(crate) use crate::taxonomy::OTHER_LIMIT_PCT;
/// Kernels listed, most time first; the rest are counted.
pub(crate) const LISTED: usize = 20;

#[derive(Debug, Clone, Serialize)]
pub struct UnclassifiedSection {
    pub scope: Scope,
    /// Kernel time in category `other` / all kernel time × 100 (the breakdown's share).
    pub other_share_pct: f64,
    /// Above [`OTHER_LIMIT_PCT`].
    pub over_limit: bool,
    /// Kernels of category `other`, most time first, at most [`LISTED`].
    pub kernels: Vec<UnclassifiedKernel>,
    /// `other` kernels left out of the list.
    pub more: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnclassifiedKernel {
    /// The name as the trace writes it.
    pub name: String,
    /// The demangled name, for an Itanium-mangled one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demangled: Option<String>,
    pub ms_per_step: f64,
    pub calls_per_step: f64,
    pub pct: f64,
    /// The rule that put it in `other` on purpose (its note), if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// A rule to paste, for a kernel no rule matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<Suggestion>,
}

/// The section from the run's breakdown (decode steps, or whole trace) and the classes that
/// made it.
pub(crate) fn unclassified_section(
    ctx: &Context<'_>,
    breakdown: &Breakdown,
) -> UnclassifiedSection {
    let other: Vec<_> = breakdown
        .kernels
        .iter()
        .filter(|k| k.category == Category::Other)
        .collect();
    // The class behind each listed name: the first trace that has it.
    let mut classes: HashMap<&str, &Class> = HashMap::new();
    let wanted: std::collections::HashSet<&str> =
        other.iter().take(LISTED).map(|k| k.name.as_str()).collect();
    for (t, trace) in ctx.run.traces.iter().enumerate() {
        let by_id = ctx.classes_of(t);
        for (id, class) in by_id.iter().enumerate() {
            let name = trace.name(id as crate::reader::model::NameId);
            if wanted.contains(name) {
                classes.entry(name).or_insert(class);
            }
        }
    }
    let other_share_pct = breakdown.other_share_pct();
    let kernels = other
        .iter()
        .take(LISTED)
        .map(|k| {
            let rule = classes.get(k.name.as_str()).and_then(|c| c.note.clone());
            UnclassifiedKernel {
                name: k.name.clone(),
                demangled: demangle(&k.name),
                ms_per_step: k.ms_per_step,
                calls_per_step: k.calls_per_step,
                pct: k.pct,
                suggestion: rule.is_none().then(|| suggest(&k.name)),
                rule,
            }
        })
        .collect();
    UnclassifiedSection {
        scope: ctx.scope,
        other_share_pct,
        over_limit: other_share_pct > OTHER_LIMIT_PCT,
        kernels,
        more: other.len().saturating_sub(LISTED),
    }
}
