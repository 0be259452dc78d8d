//! The configuration a run was analysed in against the baseline's (issue 39): the serving
//! framework the trace tells, the analysis options that change a figure (`[analysis]`:
//! `--warmup-steps`, `--hta-comm`, `--step-gap`) and the version of the built-in kernel rules.
//! A difference is a reason the run cannot be judged (exit 2), naming it.

use std::collections::BTreeMap;

use super::integrity::{Edits, Findings};
use crate::baseline::options::differences;
use crate::baseline::Baseline;
use crate::metrics::Extraction;

/// The framework the trace tells against the baseline's `framework`: another one is another
/// configuration (`--allow-other-configuration` judges it anyway). Where either does not say,
/// nothing is compared.
pub(crate) fn other_framework(x: &Extraction, b: &Baseline) -> Option<String> {
    let (run, base) = (x.run.framework.as_deref()?, b.meta.framework.as_deref()?);
    (!run.eq_ignore_ascii_case(base)).then(|| {
        format!(
            "the baseline is of framework {base:?} but the trace tells the run is of {run:?} \
             (framework): another configuration (--allow-other-configuration to judge anyway)"
        )
    })
}

/// The analysis options of the run against the baseline's, and the built-in taxonomy against
/// the categories the baseline recorded.
pub(crate) fn findings(x: &Extraction, b: &Baseline, edits: &Edits<'_>, f: &mut Findings) {
    let Some(run) = edits.analysis else {
        return;
    };
    let moved = differences(&b.analysis_options(), run);
    if moved.is_empty() {
        f.problems.extend(taxonomy_changed(x, b, edits));
        return;
    }
    let said: Vec<String> = moved
        .iter()
        .map(|(base, run)| format!("made with {base}, the run analysed with {run}"))
        .collect();
    let unrecorded = if b.analysis.is_none() {
        " (the baseline records no [analysis], so it is taken as made with the defaults)"
    } else {
        ""
    };
    let text = format!(
        "{}: the baseline's figures were {}{unrecorded}: its figures and the run's would be of \
         other analyses",
        b.path.display(),
        said.join("; ")
    );
    if edits.allow_override {
        f.notes.push(format!("{text} (--override)"));
    } else {
        f.problems.push(format!(
            "{text}; give the baseline's options, re-record it with these (tracegate baseline \
             update --baseline {} --rebase), or --override to judge anyway",
            b.path.display()
        ));
    }
}

/// Kernels of the run that the baseline records under another category than the current rules
/// give them, where no user rule decides them (those are judged in `integrity`): the built-in
/// rules changed since the baseline was recorded.
fn taxonomy_changed(x: &Extraction, b: &Baseline, edits: &Edits<'_>) -> Option<String> {
    let recorded: BTreeMap<&str, &str> = b
        .breakdown
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k.category.as_str()))
        .collect();
    let user: Vec<&crate::taxonomy::Rule> = edits
        .file_rules
        .iter()
        .chain(edits.baseline_rules)
        .collect();
    let moved: Vec<String> = x
        .breakdown
        .kernels
        .iter()
        .filter_map(|k| {
            let old = *recorded.get(k.name.as_str())?;
            let new = k.category.key();
            let by_user = super::integrity::deciding(&user, &k.name).is_some();
            (old != new && !by_user).then(|| {
                format!(
                    "{}: {old} → {new}",
                    crate::baseline::shown_text(&crate::taxonomy::short_name(&k.name))
                )
            })
        })
        .collect();
    let first = moved.first()?;
    let more = match moved.len() - 1 {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let versions = match b.analysis.as_ref().and_then(|a| a.taxonomy.as_deref()) {
        Some(v) if v == crate::taxonomy::version() => {
            format!("recorded under this taxonomy, {v}: its [breakdown] was edited since")
        }
        Some(v) => format!("taxonomy {v} → {}", crate::taxonomy::version()),
        None => format!(
            "the baseline records no taxonomy version; now {}",
            crate::taxonomy::version()
        ),
    };
    Some(format!(
        "{}: the taxonomy changed since this baseline ({first}{more}; {versions}); re-record \
         with `tracegate baseline update --baseline {} --rebase`",
        b.path.display(),
        b.path.display()
    ))
}
