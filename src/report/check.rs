//! `tracegate check` output: the verdict, the metric table, and why.
//!
//! The markdown is made for a pull-request comment: a one-line verdict first, the table, the
//! cause, and the long parts folded. It never exceeds GitHub's comment limit.

use super::table::{
    code_span, cut, escape_markdown, free_code, free_text, printable, Align, Table,
};
use crate::baseline::Tolerance;
use crate::gate::check::CalibrationNote;
use crate::gate::explain::{Cause, Delta, Unclassified};
use crate::gate::{CheckResult, MetricCheck, Status, Verdict};
use crate::metrics::{Direction, MetricId};
use crate::taxonomy::distinguishing_names;
use crate::units::{Unit, MISSING};

/// GitHub refuses comments longer than this many characters.
pub(crate) const GITHUB_COMMENT_LIMIT: usize = 65_536;
/// Headroom kept below the limit for a marker and a footer added by the caller.
pub(super) const BUDGET: usize = GITHUB_COMMENT_LIMIT - 2_048;

/// The verdict as JSON, with `explanation.lead` (the plain "why", kept for readers of older
/// verdicts).
pub(super) fn json(result: &CheckResult) -> String {
    let mut with_lead = result.clone();
    with_lead.explanation.lead = lead(result);
    serde_json::to_string_pretty(&with_lead).expect("check result serialises") + "\n"
}

pub(crate) fn mark(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Ok => "✅",
        Verdict::Regressed => "❌",
        Verdict::Improved => "🚀",
        Verdict::Noisy => "⚠️",
        Verdict::Missing => "❓",
        Verdict::New => "🆕",
    }
}

/// A metric's mark: an improvement the regression explains is none, and a report-only metric
/// that moved fails nothing, so it is never marked as a failure.
pub(super) fn metric_mark(m: &MetricCheck) -> &'static str {
    let report_only = !m.gated && matches!(m.verdict, Verdict::Regressed | Verdict::Noisy);
    if m.artefact.is_some() || report_only {
        "ℹ️"
    } else {
        mark(m.verdict)
    }
}

pub(super) fn verdict_word(m: &MetricCheck) -> String {
    if let Some(why) = &m.artefact {
        return format!("not an improvement: {why}");
    }
    let word = match m.verdict {
        Verdict::Ok => "ok",
        Verdict::Regressed => "regressed",
        Verdict::Improved => "improved",
        Verdict::Noisy => "too noisy to judge",
        Verdict::Missing => "missing",
        Verdict::New => "new",
    };
    if m.gated || m.verdict == Verdict::New {
        word.to_string()
    } else {
        format!("{word} (report only)")
    }
}

/// A metric value with its unit, or the missing mark.
pub(crate) fn value(v: Option<f64>, unit: Unit) -> String {
    unit.figure_or_missing(v)
}

/// The tolerance a metric was judged with, as its baseline states it.
pub(super) fn tolerance_of(m: &MetricCheck) -> Option<Tolerance> {
    m.tolerance.as_deref()?.parse().ok()
}

/// A metric's change as shown in the table, in the unit its tolerance uses: percentage points
/// for a percentage, the metric's unit for an absolute tolerance (`rank_skew_ms` +13.178 ms
/// against 0.25 ms), percent of the baseline for a relative one; never a signed zero.
pub(crate) fn change(m: &MetricCheck) -> String {
    let Some(c) = m.change else {
        return MISSING.into();
    };
    let absolute = matches!(tolerance_of(m), Some(Tolerance::Absolute { .. }));
    match m.change_pct {
        Some(p) if m.unit != Unit::Pct && !absolute => crate::units::percent_change(p),
        _ => (m.unit).change(c),
    }
}

/// A tolerance as people read it: `3%`, `0.25 ms`, `500 µs`, `10 pp`.
pub(super) fn tolerance_text(m: &MetricCheck) -> Option<String> {
    Some(match tolerance_of(m)? {
        Tolerance::Relative(p) => format!("{p}%"),
        Tolerance::Absolute { amount, unit } => match unit {
            Unit::Pct => format!("{amount} pp"),
            Unit::Ratio => amount.to_string(),
            u => format!("{amount} {}", u.symbol()),
        },
    })
}

fn metric_table(result: &CheckResult, with_marks: bool) -> Table {
    let mut columns = vec![
        ("metric", Align::Left),
        ("baseline", Align::Right),
        ("current", Align::Right),
    ];
    columns.extend([
        ("change", Align::Right),
        ("tolerance", Align::Right),
        ("verdict", Align::Left),
    ]);
    if with_marks {
        columns.insert(0, ("", Align::Left));
    }
    let mut t = Table::new(&columns);
    for m in &result.metrics {
        let mut row = vec![
            metric_name_cell(result, m),
            value(m.baseline, m.unit),
            value(m.current, m.unit),
            change(m),
            tolerance_cell(result, m),
            verdict_word(m),
        ];
        if with_marks {
            row.insert(0, metric_mark(m).to_string());
        }
        t.row(row);
    }
    t
}

/// The tolerance, and where it came from when it was calibrated: "3.1% (calibrated, 8 runs)".
fn tolerance_cell(result: &CheckResult, m: &MetricCheck) -> String {
    let tolerance = tolerance_text(m)
        .or_else(|| m.tolerance.clone())
        .unwrap_or_else(|| MISSING.into());
    let note = result.calibration.iter().find(|c| c.metric == m.name);
    match note.and_then(|c| c.calibrated_runs) {
        Some(n) => format!("{tolerance} (calibrated, {n} runs)"),
        None if note.is_some_and(|c| c.hand_set) => format!("{tolerance} (hand-set)"),
        None => tolerance,
    }
}

/// A figure of a metric's unit with its share of the baseline value: `0.120 ms (0.60%)`.
fn figure_with_share(m: &MetricCheck, v: f64) -> String {
    match (m.unit, m.baseline.filter(|b| *b != 0.0)) {
        (Unit::Pct, _) => format!("{} pp", m.unit.number(v)),
        (_, Some(b)) => format!(
            "{} ({}%)",
            m.unit.figure(v),
            crate::units::fixed(v / b.abs() * 100.0, 2)
        ),
        (_, None) => m.unit.figure(v),
    }
}

/// What the calibration claims and what the history widened, one line each (empty when the
/// baseline has neither): the smallest regression each calibrated metric is caught at, since a
/// smaller one is not claimed, and the history's between-run spread.
pub(crate) fn calibration_lines(result: &CheckResult) -> Vec<String> {
    let find = |name: MetricId| result.metrics.iter().find(|m| m.name == name);
    let mdc: Vec<String> = result
        .calibration
        .iter()
        .filter_map(|c| {
            Some(format!(
                "{} {}",
                c.metric,
                figure_with_share(find(c.metric)?, c.mdc?)
            ))
        })
        .collect();
    let mut lines = Vec::new();
    if !mdc.is_empty() {
        lines.push(format!(
            "Calibrated: a regression is caught in 95% of runs from its minimum detectable change on; a smaller one is not claimed, and a pass says nothing of it: {}.",
            mdc.join(", ")
        ));
    }
    let history: Vec<String> = result
        .calibration
        .iter()
        .filter_map(|c| {
            let m = find(c.metric)?;
            Some(format!(
                "{} between-run spread {} from {} runs",
                c.metric,
                figure_with_share(m, c.history_spread?),
                c.history_runs?
            ))
        })
        .collect();
    if !history.is_empty() {
        lines.push(format!(
            "Intervals widened in quadrature by the baseline's history: {}.",
            history.join("; ")
        ));
    }
    lines
}

/// The run's image and `--meta` pairs beside the baseline's: "image `v0.5.3` → `v0.5.4` ·
/// sglang `0.5.3` → `0.5.4`" in markdown (values in code spans), the same without backticks
/// for a terminal; `None` when neither side has any. Pairs only the baseline has are shown
/// too, so a run that does not say is visible.
pub(crate) fn identity_line(result: &CheckResult, markdown: bool) -> Option<String> {
    let (base, run) = (&result.baseline.meta, &result.run.identity);
    // Free text from the command line or the baseline: cut in markdown (the JSON has it all),
    // escaped everywhere.
    let show = |v: &str| {
        if markdown {
            free_code(v)
        } else {
            printable(v).into_owned()
        }
    };
    let mut parts = Vec::new();
    if let Some(t) = crate::identity::transition(base.image.as_deref(), run.image.as_deref(), show)
    {
        parts.push(format!("image {t}"));
    }
    let keys: std::collections::BTreeSet<&String> =
        run.meta.keys().chain(base.extra.keys()).collect();
    for key in keys {
        let before = base.get(key);
        let after = run.meta.get(key).map(String::as_str);
        if let Some(t) = crate::identity::transition(before.as_deref(), after, show) {
            let key = if markdown {
                free_text(key)
            } else {
                printable(key).into_owned()
            };
            parts.push(format!("{key} {t}"));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" · "))
}

/// A code fence longer than any run of backticks in `text`, so no kernel name can close it.
pub(super) fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

pub(super) fn details(summary: &str, body: &str) -> String {
    format!("<details><summary>{summary}</summary>\n\n{body}\n</details>\n\n")
}

pub(super) fn meta_table(result: &CheckResult) -> Table {
    let m = &result.baseline.meta;
    let id = &result.run.identity;
    let mut t = Table::new(&[
        ("", Align::Left),
        ("baseline", Align::Left),
        ("run", Align::Left),
    ]);
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "—".into());
    let given = |key: &str| opt(&id.meta.get(key).cloned());
    let num = |v: Option<u32>| v.map_or_else(|| "—".into(), |v| v.to_string());
    t.row(vec![
        "hardware".into(),
        m.hardware.clone(),
        result.run.device.clone().unwrap_or_else(|| "—".into()),
    ]);
    // A partial run's ranks as the baseline records them: "0 of 4".
    let ranks = |partial: &Option<String>, whole: String| match partial {
        Some(p) => format!("{whole} (ranks {p})"),
        None => whole,
    };
    t.row(vec![
        "ranks (TP)".into(),
        ranks(&m.partial_ranks, num(m.tp)),
        ranks(
            &result.run.partial_ranks,
            result.run.ranks.len().to_string(),
        ),
    ]);
    t.row(vec!["model".into(), opt(&m.model), given("model")]);
    t.row(vec![
        "precision".into(),
        opt(&m.precision),
        given("precision"),
    ]);
    t.row(vec!["image".into(), opt(&m.image), opt(&id.image)]);
    if m.previous_image.is_some() {
        t.row(vec![
            "previous image".into(),
            opt(&m.previous_image),
            "—".into(),
        ]);
    }
    let keys: std::collections::BTreeSet<&String> = id.meta.keys().chain(m.extra.keys()).collect();
    for key in keys
        .into_iter()
        .filter(|k| !["model", "precision"].contains(&k.as_str()))
    {
        t.row(vec![key.clone(), opt(&m.get(key)), given(key)]);
    }
    t.row(vec![
        "steady decode steps".into(),
        "—".into(),
        result.run.decode_steps_kept.to_string(),
    ]);
    // A calibrated baseline's source lists its runs' paths: cut, so the table fits the column
    // (the baseline file has it all).
    let source = opt(&m.source);
    t.row(vec![
        "source".into(),
        super::table::cut_to(&source, SOURCE_CHARS),
        "—".into(),
    ]);
    t.row(vec!["date".into(), opt(&m.date), "—".into()]);
    t.row(vec![
        "file".into(),
        result.baseline.path.clone(),
        "—".into(),
    ]);
    t
}

/// Characters of a baseline's `source` the run-and-baseline table shows.
const SOURCE_CHARS: usize = 80;

/// Running text as facts hand it over: plain words, and names (kernels, metrics, categories)
/// that markdown shows as code. The one writer of check's sentences: [`Words::markdown`] and
/// [`Words::plain`] render the same pieces.
#[derive(Debug, Clone, Default)]
pub(crate) struct Words(Vec<Piece>);

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Name(String),
}

impl Words {
    fn text(mut self, t: impl Into<String>) -> Words {
        self.0.push(Piece::Text(t.into()));
        self
    }

    fn name(mut self, n: impl Into<String>) -> Words {
        self.0.push(Piece::Name(n.into()));
        self
    }

    /// Markdown: text escaped, names as code spans.
    pub(crate) fn markdown(&self) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Text(t) => escape_markdown(t),
                Piece::Name(n) => code_span(n),
            })
            .collect()
    }

    /// Markdown without code spans, for a line that is also read as plain text (the headline):
    /// every piece escaped.
    fn markdown_flat(&self) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Text(t) | Piece::Name(t) => escape_markdown(t),
            })
            .collect()
    }

    /// Plain text for a terminal or the JSON: control characters escaped.
    pub(crate) fn plain(&self) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Text(t) | Piece::Name(t) => printable(t).into_owned(),
            })
            .collect()
    }
}

/// A kernel's readable name, cut to its function for the headline
/// (`aiter::cross_device_reduce_2stage`, without its template arguments), and a name with no
/// template (hipBLASLt's `Cijk_…`, ~700 characters) cut in the middle as the tables cut it: the
/// headline is one line of a log (the JSON keeps the name whole).
fn kernel_head(name: &str) -> String {
    use crate::taxonomy::names::{cut_middle, NAME_WIDTH};
    let short = super::display_kernel_name(name);
    let function = match short.find('<') {
        Some(at) if at > 0 => &short[..at],
        _ => &short,
    };
    cut_middle(function, NAME_WIDTH, None)
}

pub(super) fn ms(v: f64) -> String {
    Unit::Ms.figure(v)
}

fn ms_change(v: f64) -> String {
    (Unit::Ms).change(v)
}

/// The configuration a check judged: the baseline's file stem, as the sweep names it.
pub(crate) fn configuration(result: &CheckResult) -> String {
    let path = std::path::Path::new(&result.baseline.path);
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| result.baseline.path.clone())
}

/// The image bump, when the run names another image than the baseline's.
fn image_bump(result: &CheckResult) -> Option<(String, String)> {
    let old = result.baseline.meta.image.as_deref()?;
    let new = result.run.identity.image.as_deref()?;
    (old != new).then(|| crate::taxonomy::names::image_labels(old, new))
}

/// The decode step's change as the headline says it: `decode step +4.2% (20.127 → 20.979 ms)`;
/// the decode iteration's (`decode iteration +9.8% (...)`, what a token costs) when it regressed
/// and the forward did not: time between forwards; a ProfilerStep loop's iteration
/// (`iteration +10.0% (...)`).
fn decode_step_words(result: &CheckResult) -> Option<String> {
    let find = |id: MetricId| result.metrics.iter().find(|m| m.name == id);
    let regressed = |id: MetricId| find(id).is_some_and(|m| m.verdict == Verdict::Regressed);
    let (m, what) = if regressed(MetricId::DecodeIterMs) && !regressed(MetricId::DecodeStepMs) {
        (find(MetricId::DecodeIterMs)?, "decode iteration")
    } else if let Some(m) = find(MetricId::DecodeStepMs) {
        (m, "decode step")
    } else {
        // A ProfilerStep loop's headline figure.
        (find(MetricId::IterationMs)?, "iteration")
    };
    let (base, cur) = (m.baseline?, m.current?);
    let change = match m.change_pct {
        Some(p) => crate::units::percent_change(p),
        None => (m.unit).change(cur - base),
    };
    Some(format!(
        "{what} {change} ({} → {} {})",
        m.unit.number(base),
        m.unit.number(cur),
        m.unit.symbol()
    ))
}

/// A pass's last part: "no change beyond noise", or the gated metrics that improved beyond their
/// tolerance (artefacts never count): "improved: decode_step_ms −87.7%, gpu_util_pct +2.1 pp
/// (re-baseline)", the first three and how many more.
fn pass_words(result: &CheckResult) -> String {
    let improved: Vec<String> = result
        .metrics
        .iter()
        .filter(|m| m.gated && m.verdict == Verdict::Improved && m.artefact.is_none())
        .map(|m| format!("{} {}", m.name.name(), change(m)))
        .collect();
    let mut words = match improved.len() {
        0 => "no change beyond noise".to_string(),
        n @ 1..=3 => format!("improved: {} (re-baseline)", improved[..n].join(", ")),
        n => format!(
            "improved: {} and {} more (re-baseline)",
            improved[..3].join(", "),
            n - 3
        ),
    };
    // A pass says nothing of a change smaller than the baseline can detect: said, not hidden.
    let unseen: Vec<String> = result
        .metrics
        .iter()
        .filter_map(|m| {
            let mdc = undetectable(result, m)?;
            Some(format!(
                "{} {} (catches ≥ {})",
                m.name.name(),
                change(m),
                detectable_text(m, mdc)
            ))
        })
        .collect();
    if let Some(first) = unseen.first() {
        let more = match unseen.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        words.push_str(&format!(
            "; below what this baseline can detect: {first}{more}"
        ));
    }
    words
}

/// "X ms per step moved into kernels no rule classifies, led by K (new)": the headline's and
/// Why's words for [`Cause::Unclassified`], with the kernel's label and its `new` mark.
fn moved_into_other(w: Words, moved_ms_per_step: f64, led_by: Option<(String, &str)>) -> Words {
    let w = w.text(format!(
        "{} per step moved into kernels no rule classifies",
        ms(moved_ms_per_step)
    ));
    match led_by {
        Some((label, new)) => w.text(", led by ").name(label).text(new),
        None => w,
    }
}

/// "7 of 24 decode steps (of rank 0) stalled at 3.0× the median": the headline's and Why's words
/// for [`Cause::Stalls`]; Why names the rank.
fn stalled_steps(stalled: usize, steps: usize, rank: Option<u32>, factor: f64) -> String {
    let of_rank = rank.map(|r| format!(" of rank {r}")).unwrap_or_default();
    format!(
        "{stalled} of {steps} decode steps{of_rank} stalled at {}× the median",
        crate::units::fixed(factor, 1)
    )
}

/// "the GPU waits 2.000 ms more between decode forwards (0.342 → 2.341 ms): host time, not a
/// kernel": the headline's and Why's words for [`Cause::HostGap`].
fn host_gap_words(baseline_ms: f64, current_ms: f64) -> String {
    let more = current_ms - baseline_ms;
    format!(
        "the GPU waits {} {} between decode forwards ({} → {}): host time, not a kernel",
        Unit::Ms.figure(more.abs()),
        if more >= 0.0 { "more" } else { "less" },
        Unit::Ms.number(baseline_ms),
        Unit::Ms.figure(current_ms)
    )
}

/// "9 of 100 decode iterations (of rank 0) between 1.5x and 2x the median": the words for
/// [`Cause::SlowSteps`]; Why names the rank.
fn slow_words(slow: usize, iterations: usize, rank: Option<u32>) -> String {
    let of_rank = rank.map(|r| format!(" of rank {r}")).unwrap_or_default();
    format!("{slow} of {iterations} decode iterations{of_rank} between 1.5× and 2× the median")
}

/// The calibration note of a metric with a minimum detectable change.
pub(super) fn calibration_of(result: &CheckResult, id: MetricId) -> Option<&CalibrationNote> {
    result
        .calibration
        .iter()
        .find(|c| c.metric == id && c.mdc.is_some())
}

/// The detectable change of a metric that passed although it moved its bad way by more than half
/// its tolerance and less than what the baseline can detect: a pass that says nothing of it.
pub(super) fn undetectable(result: &CheckResult, m: &MetricCheck) -> Option<f64> {
    if !m.gated || m.verdict != Verdict::Ok {
        return None;
    }
    let mdc = calibration_of(result, m.name)?.mdc?;
    let worse = worse_change(m)?;
    (worse > m.allowance? / 2.0 && worse < mdc).then_some(mdc)
}

/// A metric's change in its bad direction (positive: worse), in its unit.
pub(super) fn worse_change(m: &MetricCheck) -> Option<f64> {
    Some(match m.direction {
        Direction::Lower => m.change?,
        Direction::Higher => -m.change?,
    })
}

/// A metric's detectable change as the table shows it: relative for a metric judged relative to
/// its value, in its unit for one judged in an amount (a share of a near-zero skew means
/// nothing).
pub(super) fn detectable_text(m: &MetricCheck, mdc: f64) -> String {
    let relative = matches!(tolerance_of(m), Some(Tolerance::Relative(_)));
    match m.baseline.filter(|b| relative && *b != 0.0) {
        Some(b) => format!("{}%", crate::units::fixed(mdc / b.abs() * 100.0, 1)),
        None if m.unit == Unit::Pct => format!("{} pp", Unit::Pct.number(mdc)),
        None => m.unit.figure(mdc),
    }
}

/// A late rank whose extra compute explains under a quarter of the others' extra waiting: its
/// GPU idles before the collectives (launch-bound, host-bound), so no kernel is its cause.
fn idle_not_busy(compute_excess_ms: f64, wait_change_ms: f64) -> bool {
    wait_change_ms > 0.0 && compute_excess_ms < wait_change_ms / 4.0
}

/// A sentence's words with its first letter upper-case.
pub(super) fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The cause in a few words with the code behind its kernel, for the headline.
pub(crate) fn cause_with_site(e: &crate::gate::explain::Explanation) -> Words {
    let w = cause_words(&e.cause);
    match &e.site {
        Some(site) if e.cause.kernel().is_some() => site_words(w, site, (", in ", ", from (")),
        _ => w,
    }
}

/// `, in `nn.Module: FusedMoE` (`fused_experts`, 64×7168×2048 ×58 layers)`.
/// `lead`: the words before the scope, and before the parenthesis where there is no scope.
fn site_words(w: Words, site: &crate::analysis::code::lead::LeadSite, lead: (&str, &str)) -> Words {
    let mut inner: Vec<Words> = Vec::new();
    if let Some(op) = &site.op {
        inner.push(Words::default().name(op.clone()));
    }
    let calls = match site.layers {
        Some(n) => format!("×{n} layers"),
        None => format!("×{} per step", crate::units::count(site.calls_per_step)),
    };
    let shape = site
        .shape
        .as_deref()
        .map(|s| crate::report::table::cut_to(s, 60));
    inner.push(Words::default().text(match shape {
        Some(s) => format!("{s} {calls}"),
        None => calls,
    }));
    let mut w = match &site.scope {
        Some(scope) => w.text(lead.0).name(scope.clone()).text(" ("),
        None => w.text(lead.1),
    };
    for (i, part) in inner.into_iter().enumerate() {
        if i > 0 {
            w = w.text(", ");
        }
        w.0.extend(part.0);
    }
    w.text(")")
}

/// The cause in a few words, for the headline.
pub(crate) fn cause_words(cause: &Cause) -> Words {
    let w = Words::default();
    match cause {
        Cause::Unclassified {
            moved_ms_per_step,
            kernel,
            new,
            ..
        } => moved_into_other(
            w,
            *moved_ms_per_step,
            kernel
                .as_deref()
                .map(|k| (kernel_head(k), if *new { " (new)" } else { "" })),
        ),
        Cause::Stalls {
            stalled,
            steps,
            factor,
            ..
        } => w.text(stalled_steps(*stalled, *steps, None, *factor)),
        Cause::HostGap {
            baseline_ms,
            current_ms,
            ..
        } => w.text(host_gap_words(*baseline_ms, *current_ms)),
        Cause::SlowSteps {
            slow, iterations, ..
        } => w.text(slow_words(*slow, *iterations, None)),
        Cause::Straggler {
            rank,
            compute_excess_ms,
            wait_change_ms,
            ..
        } if idle_not_busy(*compute_excess_ms, *wait_change_ms) => w.text(format!(
            "rank {rank} reaches the collectives {} late per step (its GPU idle)",
            ms(*wait_change_ms)
        )),
        Cause::Straggler {
            rank,
            compute_excess_ms,
            ..
        } => w.text(format!(
            "rank {rank} is the straggler ({} compute per step)",
            ms_change(*compute_excess_ms)
        )),
        Cause::SlowerCollective {
            collective,
            kernel,
            change_us,
            change_pct,
            ..
        } => {
            let w = w.text(format!("{collective} "));
            let w = match kernel {
                Some(k) => w.name(kernel_head(k)).text(" "),
                None => w,
            };
            w.text(format!(
                "{} per call",
                change_pct.map_or_else(
                    || (Unit::Us).change(*change_us),
                    crate::units::percent_change
                )
            ))
        }
        Cause::Renamed {
            category,
            category_delta_ms_per_step,
            new,
            baseline_ms_per_step,
            delta_ms_per_step,
            ..
        } => {
            let pct = if *baseline_ms_per_step > 0.0 {
                crate::units::percent_change(delta_ms_per_step / baseline_ms_per_step * 100.0)
            } else {
                ms_change(*delta_ms_per_step)
            };
            w.name(category.clone())
                .text(format!(
                    " {} per step, led by renamed ",
                    ms_change(*category_delta_ms_per_step)
                ))
                .name(kernel_head(new))
                .text(format!(" {pct}"))
        }
        Cause::Category {
            category,
            delta_ms_per_step,
            kernel,
            ..
        } => {
            let w = w
                .name(category.clone())
                .text(format!(" {} per step", ms_change(*delta_ms_per_step)));
            match kernel {
                Some(k) => w.text(", led by ").name(kernel_head(k)),
                None => w,
            }
        }
        Cause::OutsideKernels { .. } => {
            w.text("not kernel time (concurrency or idle time between kernels)")
        }
        Cause::None => w.text("none found in the decode kernels"),
    }
}

/// "Why": the cause in one sentence, then at most one supporting sentence, then the code behind
/// the kernel it names.
pub(crate) fn why_words(result: &CheckResult) -> Words {
    let e = &result.explanation;
    let w = why_cause_words(result);
    match &e.site {
        Some(site) if e.cause.kernel().is_some() => {
            let mut w = site_words(w, site, (" The kernel runs in ", " The kernel runs from ("));
            if let Some(Piece::Text(t)) = w.0.last_mut() {
                t.push('.');
            }
            w
        }
        _ => w,
    }
}

fn why_cause_words(result: &CheckResult) -> Words {
    let e = &result.explanation;
    let w = Words::default();
    let name = |n: &str| super::short_name(n);
    match &e.cause {
        Cause::Unclassified {
            moved_ms_per_step,
            other_share_pct,
            baseline_other_share_pct,
            kernel,
            new,
        } => {
            let w = moved_into_other(
                w,
                *moved_ms_per_step,
                kernel.as_deref().map(|k| {
                    (name(k), if *new { " (new in this run)" } else { "" })
                }),
            );
            let baseline = baseline_other_share_pct
                .map(|b| format!(", baseline {}", Unit::Pct.figure(b)))
                .unwrap_or_default();
            w.text(format!(
                ": {} of kernel time is now in ",
                Unit::Pct.figure(*other_share_pct)
            ))
            .name("other")
            .text(format!("{baseline}. "))
            .text(format!(
                "The figures by category ({}, {}, {}) miss that time: add a rule for it (tracegate report prints one).",
                MetricId::CommPct.name(),
                MetricId::MoeUsPerLayer.name(),
                MetricId::OverlapPct.name()
            ))
        }
        Cause::Stalls {
            rank,
            stalled,
            steps,
            factor,
            ms_per_step,
            baseline_ms_per_step,
        } => {
            let positions: Vec<String> = e
                .stalls
                .as_ref()
                .map(|s| s.positions.iter().map(|p| p.to_string()).collect())
                .unwrap_or_default();
            let list = if positions.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} {})",
                    if positions.len() == 1 { "step" } else { "steps" },
                    positions.join(", ")
                )
            };
            let baseline = baseline_ms_per_step
                .map(|b| format!(" (baseline {})", ms(b)))
                .unwrap_or_default();
            w.text(format!(
                "{}{list}. They cost {} per decode step{baseline}.",
                stalled_steps(*stalled, *steps, Some(*rank), *factor),
                ms(*ms_per_step)
            ))
        }
        Cause::Straggler {
            rank,
            compute_excess_ms,
            last_arrival_pct,
            wait_change_ms,
            waits_in,
            ..
        } if idle_not_busy(*compute_excess_ms, *wait_change_ms) => w.text(format!(
            "Rank {rank} reaches the collectives {} per step after the others, and its GPU is idle, \
             not busier: its compute per decode step is within {} of the other ranks' median. The \
             time is on its host (kernel launches, scheduling, Python before its kernels), not in \
             a kernel. It arrived last at {} of the collectives, and the other ranks wait for it \
             in {waits_in}: {} per step.",
            ms(*wait_change_ms),
            ms(compute_excess_ms.abs()),
            Unit::Pct.figure(*last_arrival_pct),
            ms_change(*wait_change_ms)
        )),
        Cause::Straggler {
            rank,
            compute_excess_ms,
            category,
            kernel,
            last_arrival_pct,
            wait_change_ms,
            waits_in,
        } => {
            let w = w.text(format!(
                "Rank {rank} is the straggler: its compute per decode step is {} over the other ranks' median",
                ms_change(*compute_excess_ms)
            ));
            let w = match (category, kernel) {
                (Some(c), Some(k)) => w
                    .text(", most of it in ")
                    .name(c.clone())
                    .text(", led by ")
                    .name(name(k)),
                (Some(c), None) => w.text(", most of it in ").name(c.clone()),
                _ => w,
            };
            w.text(format!(
                ". It arrived last at {} of the collectives, and the other ranks wait for it in {waits_in}: {} per step.",
                Unit::Pct.figure(*last_arrival_pct),
                ms_change(*wait_change_ms)
            ))
        }
        Cause::SlowerCollective {
            collective,
            kernel,
            change_us,
            change_pct,
            comm_delta_ms_per_step,
        } => {
            let pct = change_pct
                .map(|p| format!(" ({})", crate::units::percent_change(p)))
                .unwrap_or_default();
            let w = w.text(format!(
                "The {collective} itself is slower: {} per call net of waiting{pct}",
                (Unit::Us).change(*change_us)
            ));
            let w = match kernel {
                Some(k) => w.text(", led by ").name(name(k)),
                None => w,
            };
            w.text(format!(
                ". Communication takes {} per decode step more.",
                ms(*comm_delta_ms_per_step)
            ))
        }
        Cause::Renamed {
            category,
            category_delta_ms_per_step,
            old,
            new,
            delta_ms_per_step,
            ..
        } => {
            let (old, new) = distinguishing_names(old, new);
            w.name(category.clone())
                .text(format!(
                    " moved by {} per step, led by ",
                    ms_change(*category_delta_ms_per_step)
                ))
                .name(new)
                .text(" (renamed from ")
                .name(old)
                .text(format!(", {} per step).", ms_change(*delta_ms_per_step)))
        }
        Cause::Category {
            category,
            delta_ms_per_step,
            kernel,
            kernel_delta_ms_per_step,
            ..
        } => {
            let w = w.name(category.clone()).text(format!(
                " moved by {} per step",
                ms_change(*delta_ms_per_step)
            ));
            match (kernel, kernel_delta_ms_per_step) {
                (Some(k), Some(d)) => w
                    .text(", led by ")
                    .name(name(k))
                    .text(format!(" ({} per step).", ms_change(*d))),
                _ => w.text("."),
            }
        }
        Cause::HostGap {
            baseline_ms,
            current_ms,
            iteration_change_ms,
        } => {
            let mut line = host_gap_words(*baseline_ms, *current_ms);
            if let Some(d) = iteration_change_ms {
                line.push_str(&format!(
                    ". Each decode iteration (a forward plus the wait before the next, what a \
                     token costs) moved by {} while the forwards' kernels did not explain it.",
                    ms_change(*d)
                ));
            } else {
                line.push('.');
            }
            w.text(capitalised(&line))
        }
        Cause::SlowSteps {
            rank,
            slow,
            iterations,
            ms_per_iter,
            baseline_ms_per_iter,
        } => {
            let was = baseline_ms_per_iter
                .map(|b| format!(" (baseline {})", Unit::Ms.figure(b)))
                .unwrap_or_default();
            w.text(capitalised(&format!(
                "{}, below the stall line that drops a step from the figures: slow iterations cost {} per iteration{was}, while the median did not move.",
                slow_words(*slow, *iterations, Some(*rank)),
                Unit::Ms.figure(*ms_per_iter)
            )))
        }
        Cause::OutsideKernels {
            decode_step_change_ms,
            kernel_time_change_ms,
        } => w.text(format!(
            "The {} moved by {} while kernel time moved by only {} per step: the step changed through concurrency or idle time, not slower kernels.",
            if result.metrics.iter().any(|m| m.name == MetricId::IterationMs) {
                "iteration"
            } else {
                "decode step"
            },
            ms_change(*decode_step_change_ms),
            ms_change(*kernel_time_change_ms)
        )),
        Cause::None => w.text("No category's kernel time moved beyond noise."),
    }
}

/// The plain "why" the JSON keeps as `explanation.lead`, for readers of the verdict that
/// predate [`Cause`] (the sweep shows it): [`why_words`] as plain text.
pub(crate) fn lead(result: &CheckResult) -> String {
    why_words(result).plain()
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Pass => "PASS",
        Status::Regression => "REGRESSION",
        Status::CannotJudge => "CANNOT JUDGE",
    }
}

/// The headline's parts after the verdict: the configuration, the image bump, the decode
/// step, the cause (or why the run cannot be judged, or that nothing moved beyond noise).
fn headline_parts(result: &CheckResult) -> Vec<Words> {
    let mut parts = vec![Words::default().text(configuration(result))];
    if let Some((old, new)) = image_bump(result) {
        parts.push(Words::default().text(format!("image {} → {}", cut(&old), cut(&new))));
    }
    // A run of another configuration has no change against this baseline to state.
    if let Some(d) = decode_step_words(result).filter(|_| result.problems.is_empty()) {
        parts.push(Words::default().text(d));
    }
    match result.status {
        Status::Pass => parts.push(Words::default().text(pass_words(result))),
        Status::Regression => parts.push(
            Words::default()
                .text("cause: ")
                .text(cause_with_site(&result.explanation).plain()),
        ),
        Status::CannotJudge => {
            let why = match result.problems.first() {
                Some(p) => p.clone(),
                None => result
                    .summary
                    .split_once("; ")
                    .map_or_else(|| result.summary.clone(), |(_, rest)| rest.to_string()),
            };
            parts.push(Words::default().text(why));
        }
    }
    parts
}

/// The most of an error's text a comment shows: an error lists at most a few candidates and
/// paths, and a hostile one must not fill the comment.
const ERROR_CHARS: usize = 4_000;

/// The markdown of a `check` that could not judge at all (a trace it cannot read, no baseline
/// that matches): the headline says so with the error's first line, the whole error follows as
/// code. `name` is what the check was of (the baseline's file name, or the directory searched).
pub(crate) fn error_markdown(name: &str, error: &str) -> String {
    let first = error.lines().next().unwrap_or("");
    let headline = format!(
        "⚠️ **{}** · {} · {}\n\nNo figure was judged, so no earlier verdict of this check stands.",
        status_word(Status::CannotJudge),
        free_text(name),
        free_text(first)
    );
    if error.lines().nth(1).is_none() {
        return format!("{headline}\n\n");
    }
    let text: String = error.chars().take(ERROR_CHARS).collect();
    let more = if error.chars().count() > ERROR_CHARS {
        "\n…"
    } else {
        ""
    };
    // Control characters escaped line by line: the line breaks are the error's own.
    let lines: Vec<String> = text.lines().map(|l| printable(l).into_owned()).collect();
    let text = format!("{}{more}", lines.join("\n"));
    let fence = fence_for(&text);
    format!("{headline} The error:\n\n{fence}text\n{text}\n{fence}\n\n")
}

/// The first line: `❌ REGRESSION · <configuration> · decode step +4.2% (20.127 → 20.979 ms) ·
/// cause: …`. In markdown every part is escaped text (no code spans), so the line reads the
/// same once its escapes are undone for standard error.
pub(super) fn headline(result: &CheckResult, markdown: bool) -> String {
    let icon = match result.status {
        Status::Pass => "✅",
        Status::Regression => "❌",
        Status::CannotJudge => "⚠️",
    };
    let word = status_word(result.status);
    let parts = headline_parts(result);
    if markdown {
        let rest: Vec<String> = parts.iter().map(Words::markdown_flat).collect();
        format!("{icon} **{word}** · {}", rest.join(" · "))
    } else {
        let rest: Vec<String> = parts.iter().map(Words::plain).collect();
        format!("{icon} {word} · {}", rest.join(" · "))
    }
}

/// The run's hardware as the second line says it: the run's, not the baseline's (a run on
/// other hardware must not look like one on the baseline's).
pub(super) fn hardware_words(result: &CheckResult) -> String {
    let run = &result.run;
    match (
        &run.device,
        run.hardware_asserted,
        run.hardware_from_baseline,
    ) {
        (Some(d), true, _) => format!("{} (asserted by --hardware)", cut(d)),
        (Some(d), _, true) => format!(
            "{} (the baseline's, asserted: the trace names no device)",
            cut(d)
        ),
        (Some(d), false, false) => cut(d).into_owned(),
        (None, _, _) => "unknown hardware".to_string(),
    }
}

/// The second line: the hardware and the metric list (`regressed: …; improved: …`).
fn detail_line(result: &CheckResult) -> String {
    let list = result
        .summary
        .split_once("; ")
        .map_or_else(|| result.summary.clone(), |(_, rest)| rest.to_string());
    let list = if result.problems.is_empty() {
        list
    } else {
        // The problem is the headline's; the list of metrics follows the table.
        String::new()
    };
    if list.is_empty() || result.status == Status::Pass {
        let gated = result.metrics.iter().filter(|m| m.gated).count();
        if result.status == Status::Pass {
            return format!(
                "tracegate on {}: {gated} gated metrics within tolerance.",
                hardware_words(result)
            );
        }
        return format!("tracegate on {}.", hardware_words(result));
    }
    format!("tracegate on {}: {list}.", hardware_words(result))
}

/// A category or kernel moved beyond noise.
pub(super) fn moved(d: &Delta, noise: f64) -> bool {
    d.delta_ms_per_step.abs() >= noise
}

/// Characters of a kernel name in the table of kernels that moved, beside its four columns of
/// figures: what fits GitHub's 900 px comment column.
const KERNEL_DELTA_NAME_WIDTH: usize = 54;

/// The header of the change column: the share of the net change goes in the same cell, in
/// brackets, when the change is material (`+0.393 (+53%)`).
const DELTA_WITH_SHARE: &str = "Δ ms (share of change)";

pub(super) fn delta_table(deltas: &[Delta], kernels: bool) -> Table {
    let shares = deltas.iter().any(|d| d.share_of_change_pct.is_some());
    let mut columns = vec![(if kernels { "kernel" } else { "category" }, Align::Left)];
    if kernels {
        columns.push(("category", Align::Left));
    }
    // Baseline and current in one cell (`a → b`), calls too when they changed, and the share
    // beside the change: the table stays within GitHub's comment column.
    columns.extend([
        ("ms per step", Align::Right),
        (if shares { DELTA_WITH_SHARE } else { "Δ ms" }, Align::Right),
        ("calls per step", Align::Right),
    ]);
    let mut t = Table::new(&columns);
    if kernels {
        t = t.code_column(0).name_width(KERNEL_DELTA_NAME_WIDTH);
    }
    for d in deltas {
        let mut row = vec![if kernels {
            super::display_kernel_name(&d.name)
        } else {
            d.name.clone()
        }];
        if kernels {
            row.push(d.category.clone().unwrap_or_default());
        }
        let (calls_before, calls_now) = (
            crate::units::count(d.baseline_calls_per_step),
            crate::units::count(d.current_calls_per_step),
        );
        let delta = crate::units::fixed_signed(d.delta_ms_per_step, Unit::Ms.decimals());
        row.extend([
            format!(
                "{} → {}",
                Unit::Ms.number(d.baseline_ms_per_step),
                Unit::Ms.number(d.current_ms_per_step)
            ),
            // No share beside a change that rounds to nothing.
            match d.share_of_change_pct {
                Some(share) if delta != crate::units::SIGNED_ZERO => {
                    format!("{delta} ({})", crate::units::signed_share(share))
                }
                _ => delta,
            },
            if calls_before == calls_now {
                calls_now
            } else {
                format!("{calls_before} → {calls_now}")
            },
        ]);
        t.row(row);
    }
    t
}

/// One line on the time in kernels no rule classifies, naming the top ones with their share
/// (plain text: the `::warning` annotation and, escaped, the markdown).
pub(crate) fn unclassified_line(u: &Unclassified) -> String {
    unclassified_words(u).plain()
}

pub(super) fn unclassified_words(u: &Unclassified) -> Words {
    let baseline = u
        .baseline_other_share_pct
        .map(|p| format!(" (baseline {})", Unit::Pct.figure(p)))
        .unwrap_or_default();
    let mut w = Words::default().text(format!(
        "{} of kernel time is in kernels no rule classifies{baseline}: ",
        Unit::Pct.figure(u.other_share_pct)
    ));
    // Distinct labels: two kernels in the list never read the same.
    let names: Vec<&str> = u.kernels.iter().map(|k| k.name.as_str()).collect();
    let labels =
        crate::taxonomy::names::distinct_labels(&names, crate::taxonomy::names::NAME_WIDTH);
    for (i, (k, label)) in u.kernels.iter().zip(labels).enumerate() {
        if i > 0 {
            w = w.text(", ");
        }
        w = w.name(label).text(format!(" {}", Unit::Pct.figure(k.pct)));
    }
    w.text(". Category figures miss that time; add rules (tracegate report prints them).")
}

/// For a partial run (`--partial-ranks`): which ranks were judged, and the figures that depend on
/// the ranks left out.
pub(super) fn partial_line(result: &CheckResult) -> Option<String> {
    let p = result.run.partial_ranks.as_ref()?;
    let dependent = WAIT_DEPENDENT.map(|id| id.name()).join(", ");
    Some(format!(
        "Partial run: ranks {p} (--partial-ranks). {dependent} (marked {PARTIAL_MARK} in the \
         table) and the waits in collectives are measured among these ranks only; a straggler \
         among the others is not seen."
    ))
}

/// The figures that depend on the ranks a partial run leaves out: waits and skew between ranks.
const WAIT_DEPENDENT: [MetricId; 4] = [
    MetricId::RankSkewMs,
    MetricId::AllreduceRankRatio,
    MetricId::AllreduceUs,
    MetricId::AllreduceTransferUs,
];

/// Beside a metric's name in the table of a partial run, for the figures of [`WAIT_DEPENDENT`].
const PARTIAL_MARK: &str = "†";

/// A metric's name in the table: marked where a partial run sees only some of the ranks it
/// depends on.
pub(super) fn metric_name_cell(result: &CheckResult, m: &MetricCheck) -> String {
    if result.run.partial_ranks.is_some() && WAIT_DEPENDENT.contains(&m.name) {
        format!("{} {PARTIAL_MARK}", m.name.name())
    } else {
        m.name.name().to_string()
    }
}

/// Joins parts while they fit the comment budget, saying what was left out.
pub(crate) fn fit(parts: Vec<String>, budget: usize) -> String {
    let mut out = String::new();
    // Counted as it grows: a sweep of thousands of parts stays linear.
    let mut chars = 0;
    let mut omitted = 0;
    for part in parts {
        let n = part.chars().count();
        if chars + n <= budget {
            out.push_str(&part);
            chars += n;
        } else {
            omitted += 1;
        }
    }
    if omitted > 0 {
        out.push_str(&format!("_{omitted} section(s) left out to fit GitHub's comment limit; the JSON verdict has everything._\n"));
    }
    out
}

pub(super) fn terminal(result: &CheckResult) -> String {
    let e = &result.explanation;
    let mut out = format!(
        "{}\n{}\n\n",
        headline(result, false),
        printable(&detail_line(result))
    );
    if let Some(line) = identity_line(result, false) {
        out.push_str(&line);
        out.push_str("\n\n");
    }
    if let Some(line) = partial_line(result) {
        out.push_str(&printable(&line));
        out.push_str("\n\n");
    }
    out.push_str(&metric_table(result, false).to_terminal());
    out.push('\n');
    for line in calibration_lines(result) {
        out.push_str(&line);
        out.push_str("\n\n");
    }
    if result.status != Status::Pass {
        out.push_str(&why_words(result).plain());
        out.push_str("\n\n");
    }
    if !e.categories.is_empty() {
        out.push_str(&delta_table(&e.categories, false).to_terminal());
        out.push('\n');
    }
    if !e.kernels.is_empty() {
        out.push_str(&delta_table(&e.kernels, true).to_terminal());
        out.push('\n');
    }
    if !e.kernel_diff.is_empty() {
        out.push_str(&e.kernel_diff);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(unit: Unit, tolerance: &str, baseline: f64, current: f64) -> MetricCheck {
        MetricCheck {
            name: MetricId::DecodeStepMs,
            unit,
            direction: crate::baseline::Direction::Lower,
            gated: true,
            baseline: Some(baseline),
            current: Some(current),
            change: Some(current - baseline),
            change_pct: Some((current - baseline) / baseline * 100.0),
            tolerance: Some(tolerance.into()),
            allowance: None,
            interval: None,
            samples: 0,
            verdict: Verdict::Ok,
            artefact: None,
        }
    }

    #[test]
    fn the_headline_names_a_kernel_by_its_function_and_cuts_an_untemplated_one_in_the_middle() {
        assert_eq!(
            kernel_head(
                "void aiter::cross_device_reduce_2stage<__hip_bfloat16, 8>(RankData*, int)"
            ),
            "aiter::cross_device_reduce_2stage"
        );
        let tensile = format!(
            "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_{}_WG32_4_1",
            "SN_LDSB1_AFC1_AFEM1_".repeat(30)
        );
        let head = kernel_head(&tensile);
        assert_eq!(head.chars().count(), crate::taxonomy::names::NAME_WIDTH);
        assert!(
            head.starts_with("Cijk_Alik_Bljk_") && head.ends_with("_WG32_4_1"),
            "{head}"
        );
        assert!(head.contains('…'));
    }

    #[test]
    fn a_change_is_shown_in_the_unit_its_tolerance_uses_without_a_signed_zero() {
        // rank_skew_ms against an absolute tolerance: milliseconds, not percent.
        let skew = metric(Unit::Ms, "0.25ms", 168.649, 181.827);
        assert_eq!(change(&skew), "+13.178 ms");
        assert_eq!(tolerance_text(&skew).unwrap(), "0.25 ms");
        let step = metric(Unit::Ms, "3%", 20.127, 20.979);
        assert_eq!(change(&step), "+4.2%");
        let util = metric(Unit::Pct, "10pp", 4.2, 4.19999);
        assert_eq!(change(&util), "±0 pp");
        assert_eq!(tolerance_text(&util).unwrap(), "10 pp");
        let us = metric(Unit::Us, "500us", 15.0, 15.0001);
        assert_eq!(change(&us), "±0 µs");
        assert_eq!(tolerance_text(&us).unwrap(), "500 µs");
        assert_eq!(change(&metric(Unit::Us, "5%", 127.9, 127.89)), "±0%");
    }

    fn straggler(compute_excess_ms: f64, wait_change_ms: f64) -> Cause {
        Cause::Straggler {
            rank: 5,
            compute_excess_ms,
            category: Some("moe_gemm".into()),
            kernel: Some("fused_moe_kernel".into()),
            last_arrival_pct: 97.0,
            wait_change_ms,
            waits_in: "allreduce".into(),
        }
    }

    #[test]
    fn a_late_rank_whose_gpu_idles_is_no_kernel_s_fault() {
        // +0.019 ms of compute cannot explain 1.2 ms of waiting: its GPU waits, on its host.
        let late = cause_words(&straggler(0.019, 1.2)).plain();
        assert_eq!(
            late,
            "rank 5 reaches the collectives 1.200 ms late per step (its GPU idle)"
        );
        assert!(!late.contains("moe"), "{late}");
        // A rank that computes longer is the straggler, and its kernel is named in Why.
        let busy = cause_words(&straggler(13.4, 13.2)).plain();
        assert!(
            busy.starts_with("rank 5 is the straggler (+13.400 ms"),
            "{busy}"
        );
    }

    #[test]
    fn fences_outgrow_backticks_in_names() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("a````b"), "`````");
    }

    #[test]
    fn fitting_drops_late_parts_and_says_so() {
        let parts = vec!["a".repeat(10), "b".repeat(10), "c".repeat(3)];
        let out = fit(parts, 15);
        assert!(out.starts_with(&"a".repeat(10)));
        assert!(out.contains("ccc") && !out.contains("bbb"));
        assert!(out.contains("1 section(s) left out"));
    }
}
