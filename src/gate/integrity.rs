//! What a pull request can edit must not bend the gate (issue 39): rules (`--rules`, a
//! baseline's `[[rules]]`) that move time of a kernel out of the category the baseline recorded
//! for it, a `[meta] moe_layers` that contradicts the baseline's own figures, and a
//! `--moe-layers` that overrides the recorded one. Each is a reason the run cannot be judged
//! (exit 2), naming what was edited and the figure it would move.

use std::collections::BTreeMap;

use super::explain::{same_function, similar_calls};
use crate::baseline::{shown_text, Baseline};
use crate::metrics::{Extraction, MetricId};
use crate::taxonomy::{demangle, distinguishing_names, short_name, untruncated_short_name, Rule};
use crate::units::Unit;

/// How far `moe_us_per_layer` × `moe_layers` may be from the baseline's recorded MoE GEMM time
/// per step before the two cannot be of one run, as a fraction.
pub(crate) const STRUCTURE_TOLERANCE: f64 = 0.02;

/// What the check was given beside the baseline that a pull request can edit.
#[derive(Debug, Clone, Default)]
pub(crate) struct Edits<'a> {
    /// The rules of the `--rules` file, in order; tried before the baseline's.
    pub file_rules: &'a [Rule],
    /// The baseline's own `[[rules]]`, in order.
    pub baseline_rules: &'a [Rule],
    /// `--moe-layers`, as given.
    pub moe_layers: Option<u32>,
    /// `--override`: a flag that overrides a recorded structural field is judged anyway (and
    /// said in the report).
    pub allow_override: bool,
    /// The options the run was analysed with, held to the baseline's `[analysis]`.
    pub analysis: Option<&'a crate::baseline::options::AnalysisOptions>,
}

/// Why the run cannot be judged, and what the report should say of the edits allowed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Findings {
    pub problems: Vec<String>,
    pub notes: Vec<String>,
}

/// `r.toml rule 1 (prefix "ck::kernel_moe")`: a user rule as a message names it.
fn describe(rule: &Rule) -> String {
    crate::baseline::describe_rule_from(rule, &rule.origin)
}

/// The first user rule that matches `name` (as written or demangled): user rules are tried before
/// the built-in table, so this one decides the kernel's class.
pub(crate) fn deciding<'r>(rules: &[&'r Rule], name: &str) -> Option<&'r Rule> {
    let demangled = demangle(name);
    rules
        .iter()
        .copied()
        .find(|r| r.matches(name) || demangled.as_deref().is_some_and(|d| r.matches(d)))
}

/// Everything the check must refuse or say of the edits.
pub(crate) fn findings(x: &Extraction, b: &Baseline, edits: &Edits<'_>) -> Findings {
    let mut f = Findings::default();
    rule_findings(x, b, edits, &mut f);
    f.problems.extend(contradicted_breakdown(b));
    f.problems.extend(contradicted_moe_layers(b));
    moe_layers_flag(b, edits, &mut f);
    f
}

/// Rules that move a recorded kernel, or an appeared kernel away from the vanished one it
/// renames; rules for new work are named.
fn rule_findings(x: &Extraction, b: &Baseline, edits: &Edits<'_>, f: &mut Findings) {
    let all: Vec<&Rule> = edits
        .file_rules
        .iter()
        .chain(edits.baseline_rules)
        .collect();
    if all.is_empty() {
        return;
    }
    let recorded: BTreeMap<&str, &crate::baseline::KernelEntry> = b
        .breakdown
        .kernels
        .iter()
        .map(|k| (k.name.as_str(), k))
        .collect();
    let in_run: std::collections::HashSet<&str> = x
        .breakdown
        .kernels
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    // A recorded kernel a `--rules` rule moves (the baseline's own rules are judged when the
    // baseline is read against its breakdown: `Baseline::rules_moving_recorded_kernels`, with
    // the `--rules` file's rules shadowing them here).
    let file_rules: Vec<&Rule> = edits.file_rules.iter().collect();
    for k in &b.breakdown.kernels {
        let Some(rule) = deciding(&all, &k.name) else {
            continue;
        };
        if !file_rules.iter().any(|r| std::ptr::eq(*r, rule)) || rule.category.key() == k.category {
            continue;
        }
        f.problems.push(format!(
            "{} moves kernel {} into {}, but the baseline records it under {} ({} per step): \
             judging the run under this rule would move that time out of the figures the \
             baseline recorded it in; re-record the baseline with the rule (tracegate baseline \
             update --baseline {} --rules ...) or drop it",
            describe(rule),
            shown_text(&short_name(&k.name)),
            rule.category.key(),
            k.category,
            Unit::Ms.figure(k.ms_per_step),
            b.path.display(),
        ));
    }
    // Kernels of the run the baseline does not record, classified by a user rule.
    let vanished: Vec<&crate::baseline::KernelEntry> = b
        .breakdown
        .kernels
        .iter()
        .filter(|k| !in_run.contains(k.name.as_str()))
        .collect();
    for k in x
        .breakdown
        .kernels
        .iter()
        .filter(|k| !recorded.contains_key(k.name.as_str()))
    {
        let Some(rule) = deciding(&all, &k.name) else {
            continue;
        };
        let short = untruncated_short_name(&k.name);
        let renames = vanished.iter().find(|v| {
            similar_calls(v.calls_per_step, k.calls_per_step)
                && same_function(&untruncated_short_name(&v.name), &short)
        });
        match renames {
            Some(v) if v.category != rule.category.key() => {
                let (old, new) = distinguishing_names(&v.name, &k.name);
                f.problems.push(format!(
                    "{} sends kernel {}, which appeared, into {}, but it renames kernel {}, which \
                 vanished and which the baseline records under {} ({} per step): the rule would \
                 move that time out of the figures the baseline recorded it in",
                    describe(rule),
                    shown_text(&new),
                    rule.category.key(),
                    shown_text(&old),
                    v.category,
                    Unit::Ms.figure(v.ms_per_step),
                ))
            }
            Some(_) => {}
            None => f.notes.push(format!(
                "{} classifies kernel {}, which appeared and renames no vanished kernel, as {} \
                 ({} per step): new work, counted in that category",
                describe(rule),
                shown_text(&short_name(&k.name)),
                rule.category.key(),
                Unit::Ms.figure(k.ms_per_step),
            )),
        }
    }
}

/// Below this, a category's time per step and its kernels' sum are taken as equal whatever
/// their ratio (figures are written to 6 decimals), ms.
const BREAKDOWN_FLOOR_MS: f64 = 0.001;

/// A `[breakdown]` whose kernels do not add up to its categories (by more than
/// [`STRUCTURE_TOLERANCE`]): a kernel's recorded category, or a figure, was edited after the
/// figures were recorded (moving the MoE GEMM to `dense_gemm` in `[[breakdown.kernels]]` would
/// make a rule that moves it agree with the "recorded" category). Only where kernels are listed.
fn contradicted_breakdown(b: &Baseline) -> Option<String> {
    if b.breakdown.kernels.is_empty() {
        return None;
    }
    let mut sums: BTreeMap<&str, f64> = b
        .breakdown
        .categories
        .keys()
        .map(|c| (c.as_str(), 0.0))
        .collect();
    for k in &b.breakdown.kernels {
        *sums.entry(k.category.as_str()).or_default() += k.ms_per_step;
    }
    let (category, sum, recorded) = sums.into_iter().find_map(|(category, sum)| {
        let recorded = b
            .breakdown
            .categories
            .get(category)
            .map_or(0.0, |c| c.ms_per_step);
        let apart = (sum - recorded).abs();
        (apart > BREAKDOWN_FLOOR_MS && apart > STRUCTURE_TOLERANCE * recorded)
            .then_some((category, sum, recorded))
    })?;
    Some(format!(
        "{}: the baseline's [breakdown] contradicts itself: the kernels it records under \
         {category} add up to {} per step, but [breakdown.categories.{category}] records {}: a \
         kernel's category or a figure was edited after the figures were recorded; re-record \
         the baseline (tracegate baseline update)",
        b.path.display(),
        Unit::Ms.figure(sum),
        Unit::Ms.figure(recorded),
    ))
}

/// The MoE layer count the baseline's own figures imply: its MoE GEMM time per step over its
/// `moe_us_per_layer`.
fn implied_moe_layers(b: &Baseline) -> Option<f64> {
    let per_layer_us = b.metrics.get(&MetricId::MoeUsPerLayer)?.value;
    let moe_ms = b.breakdown.categories.get("moe_gemm")?.ms_per_step;
    (per_layer_us > 0.0 && moe_ms > 0.0).then(|| moe_ms * 1e3 / per_layer_us)
}

/// A `[meta] moe_layers` that its own `moe_us_per_layer` and `[breakdown]` contradict (by more
/// than [`STRUCTURE_TOLERANCE`]): edited after the figures were recorded.
fn contradicted_moe_layers(b: &Baseline) -> Option<String> {
    let layers = b.meta.moe_layers?;
    let implied = implied_moe_layers(b)?;
    let per_layer_us = b.metrics.get(&MetricId::MoeUsPerLayer)?.value;
    let moe_ms = b.breakdown.categories.get("moe_gemm")?.ms_per_step;
    let claimed_ms = per_layer_us * f64::from(layers) / 1e3;
    ((claimed_ms - moe_ms).abs() > STRUCTURE_TOLERANCE * moe_ms).then(|| {
        let per_layer = MetricId::MoeUsPerLayer.name();
        format!(
            "{}: [meta] moe_layers = {layers} contradicts the baseline's own figures: \
             {per_layer} {} × {layers} layers is {} of MoE GEMM per step, but \
             [breakdown.categories.moe_gemm] records {} ({} layers): moe_layers was edited after \
             the figures were recorded; re-record the baseline (tracegate baseline update)",
            b.path.display(),
            Unit::Us.figure(per_layer_us),
            Unit::Ms.figure(claimed_ms),
            Unit::Ms.figure(moe_ms),
            Unit::Count.number(implied),
        )
    })
}

/// `--moe-layers` against the layer count the baseline recorded (`[meta] moe_layers`, else the
/// one its figures imply): another value is a problem unless `--override`, and then a note.
fn moe_layers_flag(b: &Baseline, edits: &Edits<'_>, f: &mut Findings) {
    let Some(given) = edits.moe_layers else {
        return;
    };
    let per_layer = MetricId::MoeUsPerLayer.name();
    let said = match (b.meta.moe_layers, implied_moe_layers(b)) {
        (Some(l), _) if l == given => return,
        (Some(l), _) => format!("[meta] moe_layers = {l}"),
        (None, Some(implied))
            if (f64::from(given) - implied).abs() <= STRUCTURE_TOLERANCE * implied =>
        {
            return
        }
        (None, Some(implied)) => format!(
            "{} layers, which its {per_layer} and [breakdown] imply",
            Unit::Count.number(implied)
        ),
        (None, None) => return,
    };
    if edits.allow_override {
        f.notes.push(format!(
            "--moe-layers {given} overrides the baseline's {said} (--override): \
             {per_layer} is figured per {given} layers"
        ));
    } else {
        f.problems.push(format!(
            "--moe-layers {given} overrides the baseline's {said}: {per_layer} would be \
             figured per another layer count than the baseline's (--override to judge anyway)"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn baseline(moe_layers: Option<u32>) -> Baseline {
        let layers = moe_layers.map_or(String::new(), |l| format!("moe_layers = {l}\n"));
        let text = format!(
            "[meta]\nhardware = \"AMD Instinct MI355X\"\ntp = 4\n{layers}\n\
             [metrics.moe_us_per_layer]\nvalue = 127.877\ntolerance = \"5%\"\n\n\
             [breakdown.categories.moe_gemm]\nms_per_step = 7.41175\ncalls_per_step = 116.0\n"
        );
        Baseline::parse(&text, std::path::Path::new("baselines/x.toml")).unwrap()
    }

    fn flag(b: &Baseline, given: u32, allow_override: bool) -> Findings {
        let edits = Edits {
            moe_layers: Some(given),
            allow_override,
            ..Edits::default()
        };
        let mut f = Findings::default();
        moe_layers_flag(b, &edits, &mut f);
        f
    }

    #[test]
    fn moe_layers_must_agree_with_the_baselines_own_figures_within_two_percent() {
        assert_eq!(contradicted_moe_layers(&baseline(Some(58))), None);
        // 59 layers is 1.7% more MoE time than recorded: within; 60 is 3.5%: not.
        assert_eq!(contradicted_moe_layers(&baseline(Some(59))), None);
        let e = contradicted_moe_layers(&baseline(Some(70))).unwrap();
        assert!(
            e.starts_with("baselines/x.toml: [meta] moe_layers = 70 contradicts"),
            "{e}"
        );
        assert!(
            e.contains("127.9 µs × 70 layers is 8.951 ms")
                && e.contains("records 7.412 ms (58 layers)"),
            "{e}"
        );
        assert!(contradicted_moe_layers(&baseline(Some(60))).is_some());
        // Without the count there is nothing to contradict.
        assert_eq!(contradicted_moe_layers(&baseline(None)), None);
    }

    #[test]
    fn kernels_must_add_up_to_their_categories() {
        let kernels = |moe: &str, moe_ms: f64| {
            format!(
                "[[breakdown.kernels]]\nname = \"big_moe\"\ncategory = \"{moe}\"\n\
                 ms_per_step = {moe_ms}\ncalls_per_step = 58.0\n\n[[breakdown.kernels]]\n\
                 name = \"small_moe\"\ncategory = \"moe_gemm\"\nms_per_step = 3.41175\n\
                 calls_per_step = 58.0\n"
            )
        };
        let with = |text: String| {
            let head = "[meta]\nhardware = \"X\"\n\n[breakdown.categories.moe_gemm]\n\
                        ms_per_step = 7.41175\ncalls_per_step = 116.0\n\n";
            Baseline::parse(&format!("{head}{text}"), std::path::Path::new("b.toml")).unwrap()
        };
        assert_eq!(
            contradicted_breakdown(&with(kernels("moe_gemm", 4.0))),
            None
        );
        // Without kernels there is nothing to add up.
        assert_eq!(contradicted_breakdown(&with(String::new())), None);
        // The big kernel's category edited: moe_gemm's kernels add up to less, and dense_gemm
        // has kernels but no time.
        let e = contradicted_breakdown(&with(kernels("dense_gemm", 4.0))).unwrap();
        assert!(
            e.contains("under dense_gemm add up to 4.000 ms per step")
                || e.contains("under moe_gemm add up to 3.412 ms per step"),
            "{e}"
        );
        // A figure edited.
        assert!(contradicted_breakdown(&with(kernels("moe_gemm", 5.0))).is_some());
    }

    #[test]
    fn a_moe_layers_flag_is_held_to_the_recorded_or_implied_count() {
        let recorded = baseline(Some(58));
        let same = flag(&recorded, 58, false);
        assert!(same.problems.is_empty() && same.notes.is_empty());
        let other = flag(&recorded, 70, false);
        assert_eq!(other.problems.len(), 1, "{:?}", other.problems);
        assert!(other.problems[0].contains("--override to judge anyway"));
        let overridden = flag(&recorded, 70, true);
        assert!(overridden.problems.is_empty());
        assert!(overridden.notes[0].contains("(--override)"));
        // A baseline without the count: the count its figures imply (58) stands for it.
        let implied = baseline(None);
        assert!(flag(&implied, 58, false).problems.is_empty());
        let e = &flag(&implied, 70, false).problems[0];
        assert!(e.contains("58 layers, which its"), "{e}");
    }
}
