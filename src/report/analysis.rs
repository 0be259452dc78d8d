//! `tracegate report` output: the analysis of one run as markdown, a terminal table or JSON.
//! Nothing here computes a figure; see [`crate::analysis`].

pub(crate) use super::doc::Doc;
use super::markup::{Inline, Markup};
use super::table::{Align, Table};
use super::{display_kernel_name, fixed, Format};
use crate::analysis::overlap::Verdict;
use crate::analysis::shapes::{GemmShape, ShapeSource, ShapesSection};
use crate::analysis::{RunAnalysis, Scope, REPORT_SCHEMA_VERSION};
use crate::metrics::MetricId;
use crate::taxonomy::Category;
use crate::units::{Unit, MISSING};

/// Characters of a kernel name in a table of a few short figures beside it (kernels by time,
/// unclassified kernels): what fits GitHub's 900 px comment column with them, measured by the
/// real-browser check (`.ci/browser/check.mjs`): a name with no space to wrap at (`Cijk_…`) is
/// one unbreakable code span.
pub(crate) const KERNEL_TABLE_NAME_WIDTH: usize = 56;

/// Characters of a kernel name in a table with many columns (communication, GEMM shapes); the
/// full names follow in a folded list.
const WIDE_TABLE_NAME_WIDTH: usize = 36;

pub(crate) fn render(a: &RunAnalysis, format: Format) -> String {
    match format {
        Format::Json => {
            serde_json::to_string_pretty(&to_json(a)).expect("analysis serialises") + "\n"
        }
        Format::Markdown => render_text(a, &super::markup::Markdown),
        Format::Table => render_text(a, &super::markup::Terminal),
    }
}

/// The JSON document: the analysis with its schema version first.
pub(crate) fn to_json(a: &RunAnalysis) -> serde_json::Value {
    super::versioned_json(REPORT_SCHEMA_VERSION, a)
}

pub(crate) fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| MISSING.to_string(), |v| fixed(v, decimals))
}

pub(crate) fn opt_pct(v: Option<f64>) -> String {
    Unit::Pct.figure_or_missing(v)
}

fn ns_ms(ns: i64) -> String {
    Unit::Ms.number(ns as f64 / 1e6)
}

/// `64 x 1536 x 7168`, `16 x 64 x 128 x 512` with a batch, `?` for unknown parts.
pub(crate) fn shape_text(shape: &Option<GemmShape>) -> String {
    let Some(s) = shape else {
        return MISSING.to_string();
    };
    let part = |v: Option<i64>| v.map_or_else(|| "?".to_string(), |v| v.to_string());
    let mnk = format!("{} x {} x {}", part(s.m), part(s.n), part(s.k));
    if s.batch > 1 {
        format!("[{}] {mnk}", s.batch)
    } else {
        mnk
    }
}

fn source_text(source: ShapeSource, m_from_batch: bool) -> &'static str {
    match (source, m_from_batch) {
        (ShapeSource::LinkedOp, _) => "linked op",
        (ShapeSource::OtherPhaseOp, true) => "prefill op, M = batch",
        (ShapeSource::OtherPhaseOp, false) => "prefill op",
        (ShapeSource::KernelName, _) => "kernel name",
        (ShapeSource::Unknown, _) => MISSING,
    }
}

fn per_unit(scope: Scope) -> &'static str {
    match scope {
        Scope::Decode => "step",
        Scope::WholeTrace => "rank",
    }
}

fn verdict_text(verdict: Verdict, min_pct: Option<f64>) -> String {
    let pct = opt_pct(min_pct);
    match verdict {
        Verdict::NoComm => "no communication kernels: nothing to overlap".to_string(),
        Verdict::SingleStream => {
            "zero overlap: single stream per rank, every comm kernel is serialized with compute"
                .to_string()
        }
        Verdict::NearZero => format!(
            "near-zero overlap ({pct} of comm time on the lowest rank): several streams, but comm is not hidden behind compute"
        ),
        Verdict::Partial => format!("partial overlap: {pct} of comm time hidden by compute on the lowest rank"),
        Verdict::Mostly => format!("comm mostly overlapped: {pct} of comm time hidden by compute on the lowest rank"),
    }
}

fn render_text(a: &RunAnalysis, m: &'static dyn Markup) -> String {
    let mut d = Doc::with(m);
    let device = a
        .run
        .device
        .clone()
        .unwrap_or_else(|| "unknown device".into());
    let ranks = a.run.ranks_of.clone().unwrap_or_else(|| {
        let n = a.run.ranks.len();
        format!("{n} rank{}", if n == 1 { "" } else { "s" })
    });
    d.heading(
        2,
        &format!(
            "tracegate report: {} ({ranks}, {} trace file{})",
            d.m.inline(&Inline::Text(&device)),
            a.run.traces,
            if a.run.traces == 1 { "" } else { "s" },
        ),
    );
    if let Some(missing) = &a.run.missing_ranks {
        d.out.push_str(&d.m.paragraph(&[Inline::Prose(&format!(
            "Partial run: {missing}. Waits, rank skew and stragglers are measured among the \
             ranks present only."
        ))]));
    }
    phases(&mut d, a);
    metrics(&mut d, a);
    decode_chart(&mut d, a);
    breakdown(&mut d, a);
    comm(&mut d, a);
    overlap(&mut d, a);
    balance(&mut d, a);
    whole_trace(&mut d, a);
    prefill(&mut d, a);
    shapes(&mut d, a);
    super::code::code(&mut d, a);
    coverage(&mut d, a);
    unclassified(&mut d, a);
    d.out.trim_end().to_string() + "\n"
}

fn phases(d: &mut Doc, a: &RunAnalysis) {
    d.heading(3, "Steps found");
    let decode: usize = a.phases.iter().map(|p| p.decode_kept).sum();
    let prefill: usize = a.phases.iter().map(|p| p.prefill).sum();
    let graph: usize = a.phases.iter().map(|p| p.decode_graph_launched).sum();
    let mixed: usize = a.phases.iter().map(|p| p.mixed).sum();
    let mixed = match mixed {
        0 => String::new(),
        1 => "; 1 mixed step (prefill and decode tokens in one forward)".to_string(),
        n => format!("; {n} mixed steps (prefill and decode tokens in one forward)"),
    };
    if a.run.has_decode {
        d.para(&format!(
            "{decode} steady decode step{} over all ranks; {graph} decode step{} (warm-up and outliers included) replayed from a graph launch; {prefill} prefill step{}{mixed}.",
            if decode == 1 { "" } else { "s" },
            if graph == 1 { "" } else { "s" },
            if prefill == 1 { "" } else { "s" },
        ));
    } else {
        let line = format!(
            "No decode step found: {prefill} prefill step{} found{mixed}; the breakdown, communication, overlap and shape figures below cover the whole trace, per rank.",
            if prefill == 1 { "" } else { "s" }
        );
        d.para(&d.bold(&line));
    }
    let mut t = Table::new(&[
        ("Rank", Align::Left),
        ("Decode kept", Align::Right),
        ("Dropped (warm-up / outlier)", Align::Right),
        ("Graph-launched decode", Align::Right),
        ("Prefill", Align::Right),
        ("Unassigned (ms)", Align::Right),
    ]);
    for p in &a.phases {
        t.row(vec![
            p.label.clone(),
            p.decode_kept.to_string(),
            format!("{} / {}", p.dropped_warmup, p.dropped_outliers),
            p.decode_graph_launched.to_string(),
            p.prefill.to_string(),
            Unit::Ms.number(p.unassigned_ms),
        ]);
    }
    d.table(&t);
    how_found(d, a);
}

/// The registry's metrics, in `extract`'s own table: the same figures `check` gates.
fn metrics(d: &mut Doc, a: &RunAnalysis) {
    if a.metrics.is_empty() {
        return;
    }
    d.heading(3, "Metrics");
    d.para("The figures tracegate check gates, as tracegate extract computes them (per-step figures over the kept decode steps).");
    d.table(&super::extract::metrics_table(&a.metrics));
}

/// The decode steps over time (issue 29): a figure, so markdown only.
fn decode_chart(d: &mut Doc, a: &RunAnalysis) {
    let Some((rank, steps)) = &a.decode_steps else {
        return;
    };
    let series = crate::gate::DecodeSeries {
        steps: steps.clone(),
        baseline_ms: None,
        allowance_ms: None,
        rank: Some(*rank),
    };
    if let Some(chart) = super::chart::decode_steps(&series) {
        let figure = d.m.figure(&chart);
        d.out.push_str(&figure);
    }
}

/// How each rank's steps were found; ranks found the same way (thresholds aside) share one line.
fn how_found(d: &mut Doc, a: &RunAnalysis) {
    let mut groups: Vec<Vec<&crate::analysis::RankPhases>> = Vec::new();
    for p in &a.phases {
        match groups.iter_mut().find(|g| g[0].found.same_way(&p.found)) {
            Some(g) => g.push(p),
            None => groups.push(vec![p]),
        }
    }
    for g in groups {
        let who = match g.len() {
            1 => g[0].label.clone(),
            n => format!(
                "{} and {} more rank{}",
                g[0].label,
                n - 1,
                if n == 2 { "" } else { "s" }
            ),
        };
        let mut line = format!("How steps were found ({who}): {}", g[0].found.how());
        let t: Vec<i64> = g.iter().flat_map(|p| p.found.thresholds()).collect();
        if let (Some(lo), Some(hi)) = (t.iter().min(), t.iter().max()) {
            if lo != hi {
                line.push_str(&format!(
                    "; gap thresholds of these ranks from {} to {}",
                    crate::steps::segment::duration(*lo),
                    crate::steps::segment::duration(*hi)
                ));
            }
        }
        d.para(&format!("{line}."));
    }
}

fn breakdown(d: &mut Doc, a: &RunAnalysis) {
    let b = &a.breakdown;
    let unit = per_unit(b.scope);
    d.heading(
        3,
        match b.scope {
            Scope::Decode => "Decode step breakdown",
            Scope::WholeTrace => "Kernel time by category (whole trace, per rank)",
        },
    );
    let mut cats: Vec<(Category, &crate::metrics::breakdown::CategoryShare)> = b
        .breakdown
        .categories
        .iter()
        .map(|(&c, s)| (c, s))
        .collect();
    cats.sort_by(|x, y| {
        y.1.ms_per_step
            .total_cmp(&x.1.ms_per_step)
            .then(x.0.cmp(&y.0))
    });
    let mut t = Table::new(&[
        ("Category", Align::Left),
        ("Calls", Align::Right),
        ("Time (ms)", Align::Right),
        ("%", Align::Right),
    ]);
    for (c, s) in &cats {
        t.row(vec![
            c.label().to_string(),
            crate::units::count(s.calls_per_step),
            Unit::Ms.number(s.ms_per_step),
            Unit::Pct.number(s.pct),
        ]);
    }
    t.row(vec![
        "Total".into(),
        crate::units::count(b.total_calls),
        Unit::Ms.number(b.total_ms),
        "100.0".into(),
    ]);
    d.para(&format!("Calls and time per {unit}, mean over ranks."));
    d.table(&t);
    if let Some(dec) = &a.decode {
        d.para(&format!(
            "Decode wall-clock: {} (p90 {}, slowest rank) | GPU utilization: {} (lowest rank) | comm: {} of kernel time (highest rank)",
            Unit::Ms.figure_or_missing(dec.wall_ms),
            Unit::Ms.figure_or_missing(dec.wall_p90_ms),
            opt_pct(dec.gpu_util_pct),
            opt_pct(dec.comm_pct),
        ));
    }
    let slices: Vec<(String, String)> = cats
        .iter()
        .map(|(c, s)| (c.label().to_string(), Unit::Ms.number(s.ms_per_step)))
        .collect();
    if let Some(chart) =
        super::chart::pie(&format!("Kernel time by category (ms per {unit})"), &slices)
    {
        d.out.push_str(&d.m.figure(&chart));
    }
    let mut kernels: Vec<&crate::metrics::breakdown::KernelShare> =
        b.breakdown.kernels.iter().collect();
    kernels.sort_by(|x, y| {
        y.ms_per_step
            .total_cmp(&x.ms_per_step)
            .then_with(|| x.name.cmp(&y.name))
    });
    let rows = kernels
        .iter()
        .map(|k| {
            vec![
                display_kernel_name(&k.name),
                k.category.label().to_string(),
                crate::units::count(k.calls_per_step),
                Unit::Ms.number(k.ms_per_step),
                Unit::Pct.number(k.pct),
            ]
        })
        .collect();
    d.para(&format!("Kernels by time ({} names):", kernels.len()));
    d.long_table(
        &[
            ("Kernel", Align::Left),
            ("Category", Align::Left),
            ("Calls", Align::Right),
            ("Time (ms)", Align::Right),
            ("%", Align::Right),
        ],
        Some((0, KERNEL_TABLE_NAME_WIDTH)),
        rows,
        "kernels",
    );
}

fn comm(d: &mut Doc, a: &RunAnalysis) {
    let c = &a.comm;
    let unit = per_unit(c.scope);
    d.heading(3, "Communication");
    if c.kernels.is_empty() {
        d.para("No communication kernels.");
        return;
    }
    // Calls per layer are the calls over the layer count said below the table; the collective
    // is in "What it is" when the kernel is known, in its own words otherwise.
    let mut t = Table::new(&[
        ("Comm kernel", Align::Left),
        ("Calls", Align::Right),
        ("Total (ms)", Align::Right),
        ("Mean (µs)", Align::Right),
        ("First call (µs)", Align::Right),
        ("What it is", Align::Left),
    ])
    .code_column(0)
    .name_width(WIDE_TABLE_NAME_WIDTH);
    for k in &c.kernels {
        t.row(vec![
            display_kernel_name(&k.name),
            crate::units::count(k.calls),
            Unit::Ms.number(k.ms),
            Unit::Us.number(k.mean_us),
            match (k.first_call_us, k.cold_first_call) {
                (Some(f), true) => format!(
                    "{} (cold, rank {})",
                    fixed(f, 1),
                    k.first_call_rank.unwrap_or(0)
                ),
                (Some(f), false) => fixed(f, 1),
                (None, _) => MISSING.into(),
            },
            k.note.clone().unwrap_or_else(|| {
                k.collective
                    .map_or_else(|| MISSING.into(), |c| c.label().to_string())
            }),
        ]);
    }
    t.row(vec![
        "Total comms".into(),
        crate::units::count(c.calls),
        Unit::Ms.number(c.ms),
        MISSING.into(),
        "".into(),
        format!("{} of kernel time", opt_pct(c.pct_of_kernel_time)),
    ]);
    d.para(&format!("Calls and time per {unit}, mean over ranks."));
    d.table(&t);
    full_names(
        d,
        "Full comm kernel names",
        c.kernels.iter().map(|k| k.name.as_str()),
    );
    if let Some(l) = &c.layers {
        d.para(&format!(
            "Layers: {} per {unit} (calls of the main attention kernel {}).",
            fixed(l.value, 1),
            d.name(&l.kernel)
        ));
    }
    for k in c.kernels.iter().filter(|k| k.cold_first_call) {
        d.para(&format!(
            "Cold first call: {} took {} µs on rank {} the first time, {}× its mean of {} µs.",
            d.name(&k.name),
            Unit::Us.number_or_missing(k.first_call_us),
            k.first_call_rank.unwrap_or(0),
            fixed(k.first_call_us.unwrap_or(0.0) / k.mean_us, 1),
            Unit::Us.number(k.mean_us),
        ));
    }
}

/// The full readable names of a table whose name column is cut to [`WIDE_TABLE_NAME_WIDTH`], in
/// the table's order, folded: one per line in a code block, which scrolls rather than widens
/// the comment. Nothing when no name was cut.
fn full_names<'a>(d: &mut Doc, summary: &str, names: impl Iterator<Item = &'a str>) {
    let mut seen: Vec<String> = Vec::new();
    for n in names {
        let full = display_kernel_name(n);
        if !seen.contains(&full) {
            seen.push(full);
        }
    }
    if seen
        .iter()
        .all(|n| n.chars().count() <= WIDE_TABLE_NAME_WIDTH)
    {
        return;
    }
    let body: String = seen.iter().map(|n| format!("{n}\n")).collect();
    let block = d.m.code_block("text", &body);
    d.out.push_str(&d.m.folded(summary, &block));
}

fn overlap(d: &mut Doc, a: &RunAnalysis) {
    let o = &a.overlap;
    d.heading(3, "Compute-communication overlap");
    let verdict = verdict_text(o.verdict, o.min_overlap_pct);
    d.para(&format!("Verdict: {}.", d.bold(&verdict)));
    let unit = per_unit(o.scope);
    let mut t = Table::new(&[
        ("Rank", Align::Left),
        ("Streams", Align::Right),
        ("Comm streams", Align::Left),
        ("∪comm (ms)", Align::Right),
        ("Overlapped (ms)", Align::Right),
        ("Overlap", Align::Right),
    ]);
    for r in &o.ranks {
        t.row(vec![
            r.label.clone(),
            r.streams.len().to_string(),
            r.comm_streams
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            Unit::Ms.number(r.comm_union_ms),
            Unit::Ms.number(r.overlap_ms),
            opt_pct(r.overlap_pct),
        ]);
    }
    d.para(&format!(
        "Comm time overlapped by compute on any stream (|∪comm ∩ ∪compute| / |∪comm|), per {unit}{}:",
        if o.scope == Scope::Decode { "; overlap is the median over steps" } else { "" }
    ));
    d.table(&t);
    let mut s = Table::new(&[
        ("Rank", Align::Left),
        ("Stream", Align::Right),
        (
            if o.scope == Scope::Decode {
                "Kernels per step"
            } else {
                "Kernels"
            },
            Align::Right,
        ),
        ("Time (ms)", Align::Right),
        (
            if o.scope == Scope::Decode {
                "Comm calls per step"
            } else {
                "Comm calls"
            },
            Align::Right,
        ),
        ("Runs", Align::Left),
        ("Overlapping other streams", Align::Right),
    ]);
    for r in &o.ranks {
        for st in &r.streams {
            s.row(vec![
                r.label.clone(),
                st.stream.to_string(),
                st.kernels_per_step
                    .map_or_else(|| st.kernels.to_string(), |k| fixed(k, 1)),
                Unit::Ms.number(st.ms),
                st.comm_calls_per_step
                    .map_or_else(|| st.comm_calls.to_string(), |k| fixed(k, 1)),
                st.top_categories
                    .iter()
                    .map(|c| c.label())
                    .collect::<Vec<_>>()
                    .join(", "),
                format!("{} of {}", st.overlapping_other_streams, st.kernels),
            ]);
        }
    }
    d.folded_table("Streams and what runs on each", &s);
}

fn balance(d: &mut Doc, a: &RunAnalysis) {
    let Some(b) = &a.balance else {
        return;
    };
    d.heading(3, "Per-rank balance (decode)");
    let mut t = Table::new(&[
        ("Rank", Align::Left),
        ("Wall (ms)", Align::Right),
        ("Kernel (ms)", Align::Right),
        ("Comm (ms)", Align::Right),
        ("Comm %", Align::Right),
        ("GPU util", Align::Right),
        ("Allreduce mean (µs)", Align::Right),
        ("Main allreduce mean (µs)", Align::Right),
    ]);
    for r in &b.ranks {
        t.row(vec![
            r.label.clone(),
            Unit::Ms.number_or_missing(r.wall_ms),
            Unit::Ms.number_or_missing(r.kernel_ms),
            Unit::Ms.number_or_missing(r.comm_ms),
            opt_pct(r.comm_pct),
            opt_pct(r.gpu_util_pct),
            Unit::Us.number_or_missing(r.allreduce_mean_us),
            Unit::Us.number_or_missing(r.main_allreduce_mean_us),
        ]);
    }
    let main = b
        .main_allreduce_kernel
        .as_deref()
        .map_or_else(|| MISSING.to_string(), |k| d.name(k));
    d.para(&format!(
        "Medians over each rank's steady decode steps; allreduce means over all allreduce-class calls, and over the calls of the main allreduce kernel ({main})."
    ));
    d.table(&t);
    let label_of = |rank: Option<u32>| {
        rank.and_then(|r| a.run.ranks.iter().find(|l| l.rank == r))
            .map_or_else(|| MISSING.to_string(), |l| l.label.clone())
    };
    let mut line = format!(
        "Max wall skew: {} ms",
        Unit::Ms.number_or_missing(b.wall_skew_ms)
    );
    if let Some(skew) = b.comm_skew_ms {
        line.push_str(&format!(
            " | max comm skew: {} ms ({} vs {})",
            Unit::Ms.number(skew),
            label_of(b.comm_max_rank),
            label_of(b.comm_min_rank)
        ));
    }
    if let Some(r) = b.allreduce_rank_ratio {
        line.push_str(&format!(
            " | allreduce rank ratio: {}",
            Unit::Ratio.number(r)
        ));
    }
    d.para(&line);
    waiting(d, a, b);
    if b.allreduce_outliers.is_empty() {
        if b.ranks.len() > 1 {
            d.para("No rank's allreduce stands out.");
        }
    } else {
        for o in &b.allreduce_outliers {
            d.para(&d.bold(&format!(
                "{} stands out: main allreduce mean {} µs per call vs {} µs on the other ranks ({}×).",
                o.label,
                Unit::Us.number(o.mean_us),
                Unit::Us.number(o.others_median_us),
                fixed(o.ratio, 1)
            )));
        }
    }
}

/// Collectives split into waiting for the last rank and transfer, per rank.
fn waiting(d: &mut Doc, a: &RunAnalysis, b: &crate::analysis::balance::BalanceSection) {
    let label_of = |rank: Option<u32>| {
        rank.and_then(|r| a.run.ranks.iter().find(|l| l.rank == r))
            .map_or_else(|| "-".to_string(), |l| l.label.clone())
    };
    if b.matched_steps == 0 {
        if b.mismatched_steps > 0 {
            d.para(&format!(
                "Waiting in collectives: not measured, the ranks launched different collective sequences in all {} decode steps kept on every rank.",
                b.mismatched_steps
            ));
        }
        return;
    }
    let mut t = Table::new(&[
        ("Rank", Align::Left),
        ("Compute (ms)", Align::Right),
        ("Comm (ms)", Align::Right),
        ("Wait (ms)", Align::Right),
        ("Transfer (ms)", Align::Right),
        ("Arrived last", Align::Right),
        ("Clock offset (µs)", Align::Right),
    ]);
    for r in &b.ranks {
        t.row(vec![
            r.label.clone(),
            Unit::Ms.number_or_missing(r.compute_ms),
            Unit::Ms.number_or_missing(r.comm_ms),
            Unit::Ms.number_or_missing(r.wait_ms),
            Unit::Ms.number_or_missing(r.transfer_ms),
            opt_pct(r.last_arrival_pct),
            opt(r.clock_offset_us, 1),
        ]);
    }
    let mut intro = format!(
        "Waiting in collectives: every rank blocks in a collective until the last one arrives, so its comm time is wait + transfer; the rank that waits longest arrived first. Medians per step over the {} decode steps kept on every rank",
        b.matched_steps
    );
    if b.mismatched_steps > 0 {
        intro.push_str(&format!(
            " ({} more left out: the ranks launched different collective sequences)",
            b.mismatched_steps
        ));
    }
    intro.push('.');
    d.para(&intro);
    d.table(&t);
    // Per-rank compute / wait / transfer bars, side by side (issue 29): a figure, so markdown only.
    let bars: Vec<(String, f64, f64, f64)> = b
        .ranks
        .iter()
        .filter_map(|r| Some((r.label.clone(), r.compute_ms?, r.wait_ms?, r.transfer_ms?)))
        .collect();
    if let Some(chart) = super::chart::rank_bars(&bars) {
        let figure = d.m.figure(&chart);
        d.out.push_str(&figure);
    }

    if let Some(skew) = b.rank_skew_ms {
        let last = b
            .ranks
            .iter()
            .find(|r| Some(r.rank) == b.last_arrival_rank)
            .and_then(|r| r.last_arrival_pct);
        d.para(&format!(
            "Rank skew: {} ms per step lost waiting ({} waits most, {} least); {} arrives last at {} of the collectives.",
            Unit::Ms.number(skew),
            label_of(b.waits_most_rank),
            label_of(b.waits_least_rank),
            label_of(b.last_arrival_rank),
            opt_pct(last)
        ));
    }
}

fn whole_trace(d: &mut Doc, a: &RunAnalysis) {
    let mut t = Table::new(&[
        ("Rank", Align::Left),
        ("Activities", Align::Right),
        ("Streams", Align::Right),
        ("Span (ms)", Align::Right),
        ("Busy (ms)", Align::Right),
        ("Kernel (ms)", Align::Right),
        ("∪comm (ms)", Align::Right),
        ("Overlap", Align::Right),
    ]);
    for r in &a.whole_trace {
        t.row(vec![
            r.label.clone(),
            r.activities.to_string(),
            r.streams.to_string(),
            ns_ms(r.span_ns),
            ns_ms(r.busy_ns),
            ns_ms(r.kernel_ns),
            ns_ms(r.comm_union_ns),
            opt_pct(r.overlap_pct),
        ]);
    }
    // Idle is span − busy, the overlapped time is the overlap of ∪comm, and the comm kernels'
    // summed time (∪comm unless comm kernels overlap one another): all in the JSON, so that the
    // table fits GitHub's comment column.
    if a.run.has_decode {
        d.heading(3, "Whole trace per rank");
        d.folded_table("All GPU activity of each rank, every phase", &t);
    } else {
        d.heading(3, "Whole trace per rank");
        d.table(&t);
    }
}

fn prefill(d: &mut Doc, a: &RunAnalysis) {
    let Some(p) = &a.prefill else {
        return;
    };
    d.heading(3, "Prefill phase");
    d.para("Each rank's prefill steps together (how many: the Prefill column of Steps found).");
    let mut t = Table::new(&[
        ("Rank", Align::Left),
        ("Wall (ms)", Align::Right),
        ("GPU util", Align::Right),
        ("Comm (ms)", Align::Right),
        ("Comm %", Align::Right),
        ("Largest collective (ms)", Align::Right),
        ("Idle (ms)", Align::Right),
        ("Gaps ≥ 1 ms", Align::Right),
        ("Largest gap (ms)", Align::Right),
    ]);
    // The largest collective's kernel is named below the table, once per kernel: it is the same
    // on most ranks, and a name column would push the figures off the comment.
    let mut largest: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in &p.ranks {
        t.row(vec![
            r.label.clone(),
            Unit::Ms.number(r.wall_ms),
            opt_pct(r.gpu_util_pct),
            Unit::Ms.number(r.comm_ms),
            opt_pct(r.comm_pct),
            r.largest_collective
                .as_ref()
                .map_or_else(|| MISSING.into(), |c| Unit::Ms.number(c.ms)),
            Unit::Ms.number(r.idle_ms),
            r.gaps_over_1ms.to_string(),
            Unit::Ms.number(r.largest_gap_ms),
        ]);
        if let Some(c) = &r.largest_collective {
            match largest.iter_mut().find(|(n, _)| *n == c.name) {
                Some((_, ranks)) => ranks.push(&r.label),
                None => largest.push((&c.name, vec![&r.label])),
            }
        }
    }
    d.table(&t);
    let every = largest.len() == 1 && largest[0].1.len() == p.ranks.len();
    let named: Vec<String> = largest
        .iter()
        .map(|(name, ranks)| {
            if every {
                format!("{} on every rank", d.name(name))
            } else {
                let ranks: Vec<String> =
                    ranks.iter().map(|r| d.m.inline(&Inline::Text(r))).collect();
                format!("{} on {}", d.name(name), ranks.join(", "))
            }
        })
        .collect();
    if !named.is_empty() {
        d.para(&format!("Largest collective: {}.", named.join("; ")));
    }
}

fn shapes(d: &mut Doc, a: &RunAnalysis) {
    let s = &a.shapes;
    d.heading(3, "GEMM shapes");
    if !s.recorded {
        d.para(&d.bold(
            "Shapes unavailable: no CPU op in this trace carries Input Dims (record with record_shapes=True).",
        ));
        if s.gemm_calls > 0 {
            d.para(&format!(
                "{} GEMM calls in scope have no shape.",
                s.gemm_calls
            ));
        }
        return;
    }
    if s.rows.is_empty() {
        d.para("No GEMM kernels in scope.");
        return;
    }
    let unit = per_unit(s.scope);
    d.para(&format!(
        "{} of {} GEMM calls have a shape. M x N x K from the Input Dims of the linked CPU op (per rank; decode kernels replayed from a graph take the op of the same kernel in prefill, M from the step's batch size); TFLOP/s = 2·M·N·K / mean time. Calls per {unit}, pooled over ranks.",
        s.gemm_calls_with_shape, s.gemm_calls
    ));
    let rows = s
        .rows
        .iter()
        .map(|r| {
            vec![
                display_kernel_name(&r.kernel),
                shape_text(&r.shape),
                r.precision.clone().unwrap_or_else(|| MISSING.into()),
                crate::units::count(r.calls),
                Unit::Us.number(r.mean_us),
                opt(r.tflops, 1),
                Unit::Pct.number(r.pct),
            ]
        })
        .collect();
    d.long_table(
        &[
            ("Kernel", Align::Left),
            ("M x N x K", Align::Right),
            ("Precision", Align::Left),
            ("Calls", Align::Right),
            ("Mean (µs)", Align::Right),
            ("TFLOP/s", Align::Right),
            ("% of time", Align::Right),
        ],
        Some((0, WIDE_TABLE_NAME_WIDTH)),
        rows,
        "shapes",
    );
    shape_details(d, s);
    partial_shapes_note(d, s);
}

/// What the narrow shape table leaves out, folded: per kernel (in the table's order) the CPU op
/// its shape came from, how (`Shape from`), the launch grid and the full readable name; one
/// line each in a code block, which scrolls rather than widens the comment.
fn shape_details(d: &mut Doc, s: &ShapesSection) {
    let mut body = String::new();
    for r in &s.rows {
        body.push_str(&format!(
            "{} | {} | grid {} | {}\n",
            // Names from the trace, control characters escaped: one line each.
            super::table::printable(r.op.as_deref().unwrap_or(MISSING)),
            source_text(r.source, r.m_from_batch_size),
            r.grid.map_or_else(
                || MISSING.into(),
                |g| format!("[{},{},{}]", g[0], g[1], g[2]),
            ),
            display_kernel_name(&r.kernel),
        ));
    }
    let block = d.m.code_block("text", &body);
    d.out.push_str(&d.m.folded(
        "Op, shape source, grid and full name of each kernel",
        &block,
    ));
}

/// Says why a row reads `?`: the trace lacks that dimension, tracegate does not guess it.
fn partial_shapes_note(d: &mut Doc, s: &ShapesSection) {
    let lacking = |missing: fn(&GemmShape) -> bool| {
        let mut ops: Vec<String> = s
            .rows
            .iter()
            .filter(|r| r.shape.as_ref().is_some_and(missing))
            .map(|r| d.name(r.op.as_deref().unwrap_or(MISSING)))
            .collect();
        ops.sort_unstable();
        ops.dedup();
        ops.join(", ")
    };
    let no_m = lacking(|shape| shape.m.is_none());
    let no_n = lacking(|shape| shape.m.is_some() && (shape.n.is_none() || shape.k.is_none()));
    if !no_m.is_empty() {
        d.para(&format!(
            "`?` for M ({no_m}): graph-replayed decode kernels take N and K from the prefill op of the same kernel, whose M counts prompt tokens; the decode batch needs `bs=N` in the step annotation. tracegate does not guess it, and TFLOP/s needs all three."
        ));
    }
    if !no_n.is_empty() {
        d.para(&format!(
            "`?` for N or K: the Input Dims of the linked op ({no_n}) do not hold it. Fused MoE ops take the activations and the router logits, not the expert weights, so N is not in the trace; tracegate does not guess it."
        ));
    }
}

fn coverage(d: &mut Doc, a: &RunAnalysis) {
    let c = &a.coverage;
    d.heading(3, "Input Dims coverage");
    d.para(&format!(
        "{} CPU ops: {} with tensor dims, {} with empty dims (only scalar inputs, such as aten::empty), {} without Input Dims.",
        c.cpu_ops, c.with_dims, c.empty_dims, c.without_dims
    ));
    if c.by_op.is_empty() {
        return;
    }
    let rows = c
        .by_op
        .iter()
        .map(|o| {
            vec![
                o.op.clone(),
                o.with_dims.to_string(),
                o.empty_dims.to_string(),
                o.without_dims.to_string(),
            ]
        })
        .collect();
    d.long_table(
        &[
            ("Op", Align::Left),
            ("With dims", Align::Right),
            ("Empty dims", Align::Right),
            ("No dims", Align::Right),
        ],
        Some((0, crate::taxonomy::names::NAME_WIDTH)),
        rows,
        "ops",
    );
}

/// The last section: what is in `other`, and the rules that would classify it.
fn unclassified(d: &mut Doc, a: &RunAnalysis) {
    let u = &a.unclassified;
    let unit = per_unit(u.scope);
    d.heading(3, "Unclassified kernels");
    if u.kernels.is_empty() {
        d.para(&format!(
            "Every kernel matched a rule: {}% of kernel time is in `other`.",
            Unit::Pct.number(u.other_share_pct)
        ));
        return;
    }
    let share = format!(
        "{}% of kernel time is in `other`",
        Unit::Pct.number(u.other_share_pct)
    );
    if u.over_limit {
        d.para(&format!(
            "{}, above the {}% that leaves the figures trustworthy: that time counts in no category ({}, {} and {} miss it). Classify it with the rules below.",
            d.bold(&share),
            fixed(crate::analysis::unclassified::OTHER_LIMIT_PCT, 0),
            MetricId::CommPct.name(),
            MetricId::MoeUsPerLayer.name(),
            MetricId::OverlapPct.name()
        ));
    } else {
        d.para(&format!("{share}."));
    }
    let rows = u
        .kernels
        .iter()
        .map(|k| {
            let suggested = match (&k.rule, &k.suggestion) {
                (Some(note), _) => format!("rule: {note}"),
                (None, Some(s)) => match (s.category, &s.evidence) {
                    (Some(c), Some(word)) => format!("{} (`{word}` in the name)", c.key()),
                    _ => "no hint".into(),
                },
                (None, None) => "no hint".into(),
            };
            vec![
                display_kernel_name(&k.name),
                crate::units::count(k.calls_per_step),
                Unit::Ms.number(k.ms_per_step),
                Unit::Pct.number(k.pct),
                d.m.inline(&Inline::Text(&suggested)),
            ]
        })
        .collect();
    d.para(&format!(
        "Kernels in `other`, by time per {unit}{}:",
        if u.more > 0 {
            format!(" ({} more not listed)", u.more)
        } else {
            String::new()
        }
    ));
    d.long_table(
        &[
            ("Kernel", Align::Left),
            ("Calls", Align::Right),
            ("Time (ms)", Align::Right),
            ("%", Align::Right),
            ("Suggested category", Align::Left),
        ],
        Some((0, KERNEL_TABLE_NAME_WIDTH)),
        rows,
        "kernels",
    );
    let snippets: Vec<&str> = u
        .kernels
        .iter()
        .filter_map(|k| k.suggestion.as_ref().map(|s| s.rule.as_str()))
        .collect();
    if snippets.is_empty() {
        return;
    }
    d.para("Rules to paste into a `--rules` file, or into the baseline as `[[rules]]` tables (write `[[rules]]` for `[[rule]]` there), tried before the built-in table; check each category:");
    let body = snippets.join("\n");
    d.out.push_str(&d.m.code_block("toml", &body));
}
