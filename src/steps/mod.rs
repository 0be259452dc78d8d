//! Steps: cuts each rank's GPU timeline into forward passes (decode or prefill) and picks the
//! steady decode steps, as defined in `docs/METRICS.md` ("Steps").
//!
//! Methods, in order of trust, each activity belonging to at most one step:
//! 1. `step[MODE ...]` CPU annotations, linked to activities through the correlation of their launch;
//! 2. graph launches outside step annotations, one decode step each;
//! 3. segmentation of what is left ([`segment`]): at host syncs where they separate forward passes,
//!    else at the largest jump in the run's own gaps, confirmed by the per-layer kernel period; a
//!    segment is a step when it holds attention and a GEMM, labelled from the evidence ([`label`]).
//!
//! The classification of kernel names is an input (`&[Class]` indexed by `NameId`), so this module
//! does not depend on how the taxonomy matches names.

mod annotations;
pub(crate) mod iterations;
pub(crate) mod label;
pub(crate) mod segment;
mod spec;

use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::links::Links;
use crate::reader::model::{AnnotationSide, GpuActivity, GpuKind, RankId, RankTrace, Run, Stage};
use crate::taxonomy::{Category, Class, Collective};

use annotations::{
    folded_name, is_diffusion_annotation, parse_execute_annotation, parse_profiler_step,
    parse_step_annotation, AnnotationIndex, Label, SpecRole, StepAnnotation,
};
pub(crate) use iterations::Iteration;
use iterations::{Mark, MarkKind};
pub(crate) use label::{Evidence, EvidenceCounts, StepLabel};
pub(crate) use segment::Segmentation;

/// Decode steps dropped at the start of each rank unless told otherwise.
pub const DEFAULT_WARMUP_STEPS: usize = 2;

/// What a forward pass does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Decode,
    Prefill,
    /// Prefill and decode tokens in one forward pass (vLLM's chunked prefill, SGLang's `MIXED`).
    Mixed,
}

/// What kind of run the figures are of: a serving loop's forward passes (decode, prefill and
/// mixed steps), or a ProfilerStep loop's iterations (a training or batch loop with at least 3
/// `ProfilerStep#N` and no serving step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    #[default]
    Serving,
    Loop,
}

impl RunKind {
    pub fn is_serving(&self) -> bool {
        *self == RunKind::Serving
    }

    /// How a report names it: "a serving run (decode steps)", "a ProfilerStep loop".
    pub fn describe(self) -> &'static str {
        match self {
            RunKind::Serving => "a serving run (forward passes: decode, prefill or mixed steps)",
            RunKind::Loop => "a ProfilerStep loop (training or batch iterations)",
        }
    }
}

/// How a step was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepSource {
    Annotation,
    GraphLaunch,
    Gap,
}

/// One forward pass on one rank: a set of GPU activities of one trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub kind: StepKind,
    pub source: StepSource,
    /// Index into [`Run::traces`] of the trace whose `gpu` the activities index.
    pub trace: usize,
    /// Indices into that trace's `gpu`, ascending.
    pub activities: Vec<u32>,
    /// First start of the activities, ns.
    pub start: i64,
    /// Last end of the activities, ns.
    pub end: i64,
    /// `bs=N` of a step annotation.
    pub batch_size: Option<u32>,
    /// A speculative-decoding iteration (the target's verify and the draft model's forwards
    /// around it, one decode step): its draft and verify parts.
    pub spec: Option<SpecSplit>,
}

impl Step {
    /// The forward's time, ns: last end minus first start; for a speculative iteration, the union
    /// of its forwards' spans (the draft and verify forwards' own time, the gaps between them left
    /// out).
    pub fn wall(&self) -> i64 {
        self.spec.map_or(self.end - self.start, |s| s.forward_ns)
    }
}

/// The parts of one speculative-decoding iteration (EAGLE/MTP): the draft model's forwards (its
/// decode steps before the verify, its extend after) and the target model's verify.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpecSplit {
    /// Draft-model forwards in the iteration.
    pub drafts: u32,
    /// Kernel time (sum of durations) of the draft forwards, ns.
    pub draft_kernel_ns: i64,
    /// Kernel time of the verify, ns.
    pub verify_kernel_ns: i64,
    /// The draft forwards' own time: the union of their spans, ns.
    pub draft_ns: i64,
    /// The verify's wall, ns.
    pub verify_ns: i64,
    /// The union of every forward's span, ns: [`Step::wall`] of the iteration.
    pub forward_ns: i64,
}

/// Why a decode step is not part of the steady state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    Warmup,
    Outlier,
}

/// A decode step left out of the steady state.
#[derive(Debug, Clone, PartialEq)]
pub struct DroppedStep {
    pub step: Step,
    pub reason: DropReason,
}

/// Steps found per method.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SourceCounts {
    pub annotation: u64,
    pub graph_launch: u64,
    pub gap: u64,
}

impl SourceCounts {
    fn add(&mut self, source: StepSource) {
        match source {
            StepSource::Annotation => self.annotation += 1,
            StepSource::GraphLaunch => self.graph_launch += 1,
            StepSource::Gap => self.gap += 1,
        }
    }

    fn merge(&mut self, other: &SourceCounts) {
        self.annotation += other.annotation;
        self.graph_launch += other.graph_launch;
        self.gap += other.gap;
    }

    pub fn total(&self) -> u64 {
        self.annotation + self.graph_launch + self.gap
    }

    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What step detection saw, for reports and for saying why no step was found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// GPU activities of the traces.
    pub activities: u64,
    /// CPU `step[...]` annotations.
    pub step_annotations: u64,
    /// Of which not forward passes (`IDLE`, unknown modes): their kernels are other-label time in
    /// the step mix, in no per-step figure.
    pub non_step_annotations: u64,
    /// Of which vLLM's `execute_context_C(…)_generation_G(…)` (or the detailed
    /// `execute_N_context_…`), read where the trace has no `step[...]` annotation.
    #[serde(skip_serializing_if = "is_zero")]
    pub execute_annotations: u64,
    /// Graph launches whose kernels are not a whole forward (no attention kernel or no GEMM),
    /// handed to gap segmentation.
    pub graph_launches_partial: u64,
    /// Graph launches (`cudaGraphLaunch` / `hipGraphLaunch`) outside step annotations.
    pub graph_launches: u64,
    /// Activities left to gap segmentation.
    pub gap_activities: u64,
    /// Segments the gap rule cut.
    pub gap_segments: u64,
    /// Segments without both an attention kernel and a GEMM, not steps.
    pub gap_segments_rejected: u64,
    /// Decode steps found, per method (before warm-up and outlier removal).
    pub decode: SourceCounts,
    /// Prefill steps found, per method.
    pub prefill: SourceCounts,
    /// Mixed (prefill and decode) steps found, per method.
    #[serde(skip_serializing_if = "SourceCounts::is_empty")]
    pub mixed: SourceCounts,
    /// Graph captures the trace records (`cudaStreamBeginCapture`, `hipStreamBeginCapture`).
    #[serde(skip_serializing_if = "is_zero")]
    pub graph_captures: u64,
    /// Speculative-decoding iterations (a target verify and its draft forwards), each one decode
    /// step (counted in `decode` too).
    #[serde(skip_serializing_if = "is_zero")]
    pub spec_iterations: u64,
    /// Draft-model forwards grouped into those iterations.
    #[serde(skip_serializing_if = "is_zero")]
    pub spec_drafts: u64,
    /// Draft forwards of no whole iteration (before the first verify of the profile window,
    /// after the last): other-label time.
    #[serde(skip_serializing_if = "is_zero")]
    pub spec_orphans: u64,
    /// How each trace's free activities were cut (traces that had any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub segmentation: Vec<Segmentation>,
    /// What decided the kind of each forward pass segmentation found.
    #[serde(skip_serializing_if = "EvidenceCounts::is_empty")]
    pub labelled_by: EvidenceCounts,
    /// CPU `ProfilerStep#N` annotations (PyTorch profiler's iterations).
    #[serde(skip_serializing_if = "is_zero")]
    pub profiler_steps: u64,
    /// Iterations of a ProfilerStep loop (a run without serving steps whose every rank holds
    /// at least [`LOOP_MIN_ITERATIONS`] of them): the steps the figures are of.
    #[serde(skip_serializing_if = "is_zero")]
    pub loop_iterations: u64,
    /// xDiT's `execute_diffusion_…` CPU annotations: a diffusion pipeline, whose traces get no
    /// step.
    #[serde(skip_serializing_if = "is_zero")]
    pub diffusion_calls: u64,
    /// The first diffusion annotation's name.
    #[serde(skip)]
    pub diffusion_name: Option<String>,
    /// The CPU annotation names seen, digits folded (`ProfilerStep#N`), with how many: the
    /// most frequent first, at most [`ANNOTATIONS_KEPT`], for saying what a trace holds when
    /// no step was found.
    #[serde(skip)]
    pub annotations_seen: Vec<(String, u64)>,
}

/// ProfilerStep iterations a rank needs for the run to be a loop: fewer give one or two
/// samples of `iteration_ms`, which is no loop.
pub(crate) const LOOP_MIN_ITERATIONS: u64 = 3;

/// Annotation names kept in [`Detection::annotations_seen`].
const ANNOTATIONS_KEPT: usize = 6;

/// Adds `more` to the counts of `names` and keeps the [`ANNOTATIONS_KEPT`] most frequent (ties
/// by name).
fn merge_names(names: &mut Vec<(String, u64)>, more: &[(String, u64)]) {
    for (name, n) in more {
        match names.iter_mut().find(|(m, _)| m == name) {
            Some((_, count)) => *count += n,
            None => names.push((name.clone(), *n)),
        }
    }
    names.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    names.truncate(ANNOTATIONS_KEPT);
}

impl Detection {
    pub fn merge(&mut self, other: &Detection) {
        self.activities += other.activities;
        self.step_annotations += other.step_annotations;
        self.non_step_annotations += other.non_step_annotations;
        self.execute_annotations += other.execute_annotations;
        self.graph_launches += other.graph_launches;
        self.graph_launches_partial += other.graph_launches_partial;
        self.gap_activities += other.gap_activities;
        self.gap_segments += other.gap_segments;
        self.gap_segments_rejected += other.gap_segments_rejected;
        self.decode.merge(&other.decode);
        self.prefill.merge(&other.prefill);
        self.mixed.merge(&other.mixed);
        self.graph_captures += other.graph_captures;
        self.spec_iterations += other.spec_iterations;
        self.spec_drafts += other.spec_drafts;
        self.spec_orphans += other.spec_orphans;
        self.segmentation.extend(other.segmentation.iter().cloned());
        self.labelled_by.merge(&other.labelled_by);
        self.profiler_steps += other.profiler_steps;
        self.loop_iterations += other.loop_iterations;
        self.diffusion_calls += other.diffusion_calls;
        if self.diffusion_name.is_none() {
            self.diffusion_name.clone_from(&other.diffusion_name);
        }
        merge_names(&mut self.annotations_seen, &other.annotations_seen);
    }

    /// How the steps were found, in one line: per method the decode and prefill steps it gave, then
    /// how segmentation cut (when any activity was left to it).
    pub fn how(&self) -> String {
        let (d, p) = (&self.decode, &self.prefill);
        let annotations = if self.execute_annotations > 0 {
            "vLLM's execute_context_…_generation_… annotations"
        } else {
            "step annotations"
        };
        let methods = [
            (annotations, d.annotation, p.annotation),
            ("graph launches", d.graph_launch, p.graph_launch),
            ("segmentation", d.gap, p.gap),
        ];
        let mut parts: Vec<String> = methods
            .iter()
            .filter(|(_, d, p)| d + p > 0)
            .map(|(what, d, p)| format!("{d} decode and {p} prefill from {what}"))
            .collect();
        let m = &self.mixed;
        if !m.is_empty() {
            parts.push(format!(
                "{} mixed (prefill and decode) from {}",
                m.total(),
                [
                    (annotations, m.annotation),
                    ("graph launches", m.graph_launch),
                    ("segmentation", m.gap)
                ]
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(what, _)| *what)
                .collect::<Vec<_>>()
                .join(" and ")
            ));
        }
        if self.loop_iterations > 0 {
            parts.push(format!(
                "{} ProfilerStep iterations (a loop, no serving step)",
                self.loop_iterations
            ));
        }
        if parts.is_empty() {
            parts.push("no step".to_string());
        }
        if self.spec_iterations > 0 {
            parts.push(format!(
                "the decode steps are {} speculative iterations ({} target verifies with {} \
                 draft forwards{})",
                self.spec_iterations,
                self.spec_iterations,
                self.spec_drafts,
                match self.spec_orphans {
                    0 => String::new(),
                    n => format!("; {n} outside any whole iteration"),
                }
            ));
        }
        let mut line = parts.join(", ");
        match self.describe_segmentation() {
            Some(seg) => line.push_str(&format!("; segmentation {seg}")),
            None => line.push_str("; nothing left to segmentation"),
        }
        line
    }

    /// Found the same way as `other`: the same counts per method and kind, and every trace cut
    /// the same way (the exact thresholds may differ).
    pub fn same_way(&self, other: &Detection) -> bool {
        self.decode == other.decode
            && self.prefill == other.prefill
            && self.mixed == other.mixed
            && self.labelled_by == other.labelled_by
            && self.segmentation.len() == other.segmentation.len()
            && self
                .segmentation
                .iter()
                .zip(&other.segmentation)
                .all(|(a, b)| a.same_way(b))
    }

    /// The gap thresholds of the traces, ns.
    pub fn thresholds(&self) -> impl Iterator<Item = i64> + '_ {
        self.segmentation.iter().filter_map(|s| s.threshold_ns)
    }

    /// How the free activities were cut, in one line: the first trace's way, and how many traces
    /// were cut the same way. `None` when no trace had free activities.
    pub fn describe_segmentation(&self) -> Option<String> {
        let first = self.segmentation.first()?;
        let same = self
            .segmentation
            .iter()
            .filter(|s| s.method == first.method)
            .count();
        let n = self.segmentation.len();
        let mut line = first.describe();
        if n > 1 {
            line.push_str(&format!(" (first of {n} traces; {same} cut the same way)"));
        }
        let e = &self.labelled_by;
        let kinds: Vec<String> = [
            ("GEMM M", e.gemm_m),
            ("attention kernels", e.attention_kernels),
            ("eager among graph-launched decodes", e.eager_among_graphs),
            ("wall", e.wall),
            ("stage-split file", e.stage_file),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{what} {n}"))
        .collect();
        if !kinds.is_empty() {
            line.push_str(&format!("; kinds from {}", kinds.join(", ")));
        }
        if e.undecided > 0 {
            line.push_str(&format!(
                "; {} forward{} undecided (no evidence tells prefill from decode)",
                e.undecided,
                if e.undecided == 1 { "" } else { "s" }
            ));
        }
        Some(line)
    }
}

/// The steps of one rank, all its traces combined.
#[derive(Debug, Clone)]
pub struct RankSteps {
    pub rank: RankId,
    /// Indices into [`Run::traces`] of this rank's traces.
    pub traces: Vec<usize>,
    /// Steady decode steps, in start order.
    pub decode: Vec<Step>,
    /// All prefill steps, in start order.
    pub prefill: Vec<Step>,
    /// All mixed (prefill and decode) steps, in start order.
    pub mixed: Vec<Step>,
    /// Decode steps left out of the steady state, in start order.
    pub dropped: Vec<DroppedStep>,
    pub dropped_warmup: usize,
    pub dropped_outliers: usize,
    /// Kernel time (sum of durations) of the activities in no step, ns.
    pub unassigned_ns: i64,
    /// Kernel time per kind of step (every decode step, warm-up and outliers included), ns.
    pub mix: StepMix,
    /// Decode iterations: from a decode forward after warm-up to the next one, in start order;
    /// in a ProfilerStep loop, from one iteration's first GPU activity to the next one's.
    pub iterations: Vec<Iteration>,
    /// The iterations of a ProfilerStep loop (empty unless the run is one, see
    /// [`Detection::loop_iterations`]), in start order: each is the GPU activities launched,
    /// from any host thread, inside one `ProfilerStep#N` annotation. Their `kind` is `Decode`
    /// and means nothing: a loop has no decode, prefill or mixed step.
    pub loop_steps: Vec<Step>,
    pub found: Detection,
    /// Forward passes found by segmentation, each with its kind (or undecided) and the evidence
    /// that decided it, in start order.
    pub labels: Vec<StepLabel>,
}

impl RankSteps {
    /// The steps the per-step figures are of: a loop's iterations, else the kept decode steps.
    pub fn main_steps(&self) -> &[Step] {
        if self.loop_steps.is_empty() {
            &self.decode
        } else {
            &self.loop_steps
        }
    }
}

/// Kernel time (sum of durations, ns) by what holds it: decode, prefill and mixed steps, steps of
/// another label (`step[IDLE]`, modes no rule knows, draft forwards of no whole speculative
/// iteration) and no step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StepMix {
    pub decode: i64,
    pub prefill: i64,
    pub mixed: i64,
    pub other_label: i64,
    pub unassigned: i64,
    /// Iterations of a ProfilerStep loop.
    #[serde(skip_serializing_if = "is_zero_ns")]
    pub loop_iterations: i64,
}

fn is_zero_ns(n: &i64) -> bool {
    *n == 0
}

impl StepMix {
    pub fn total(&self) -> i64 {
        self.decode
            + self.prefill
            + self.mixed
            + self.other_label
            + self.unassigned
            + self.loop_iterations
    }

    pub fn add(&mut self, other: &StepMix) {
        self.decode += other.decode;
        self.prefill += other.prefill;
        self.mixed += other.mixed;
        self.other_label += other.other_label;
        self.unassigned += other.unassigned;
        self.loop_iterations += other.loop_iterations;
    }
}

/// How steps are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StepOptions {
    /// Decode steps dropped at the start of each rank.
    pub warmup: usize,
    /// `--step-gap`: the gap threshold, instead of the one the run's gaps and host syncs give, ns.
    pub step_gap: Option<i64>,
}

impl Default for StepOptions {
    fn default() -> Self {
        StepOptions {
            warmup: DEFAULT_WARMUP_STEPS,
            step_gap: None,
        }
    }
}

/// The category of one activity: memcpy and memset are `memcpy` whatever their name; a name the
/// classification does not cover is `other`.
pub(crate) fn category_of(activity: &GpuActivity, classes: &[Class]) -> Category {
    match activity.kind() {
        GpuKind::Memcpy | GpuKind::Memset => Category::Memcpy,
        GpuKind::Kernel => classes
            .get(activity.name as usize)
            .map_or(Category::Other, |c| c.category),
    }
}

/// True for a `comm` kernel whose collective is `allreduce`.
pub(crate) fn is_allreduce(activity: &GpuActivity, classes: &[Class]) -> bool {
    activity.kind() == GpuKind::Kernel
        && classes.get(activity.name as usize).is_some_and(|c| {
            c.category == Category::Comm && c.collective == Some(Collective::Allreduce)
        })
}

/// Finds the steps of every rank of a run and its steady decode state.
///
/// `classes[i]` classifies the names of `run.traces[i]`; a missing entry classifies every name `other`.
#[cfg(test)]
pub(crate) fn find_steps(run: &Run, classes: &[Vec<Class>], warmup: usize) -> Vec<RankSteps> {
    let opts = StepOptions {
        warmup,
        step_gap: None,
    };
    find_steps_with(run, classes, &opts)
}

/// [`find_steps`] with every option.
pub(crate) fn find_steps_with(
    run: &Run,
    classes: &[Vec<Class>],
    opts: &StepOptions,
) -> Vec<RankSteps> {
    let warmup = opts.warmup;
    let per_trace: Vec<TraceSteps> = run
        .traces
        .par_iter()
        .enumerate()
        .map(|(i, trace)| {
            let cls = classes.get(i).map_or(&[][..], |c| c.as_slice());
            trace_steps(trace, i, cls, opts.step_gap)
        })
        .collect();

    // Group traces by rank index, keeping the order of first appearance (the run is sorted by rank).
    let mut order: Vec<u32> = Vec::new();
    let mut groups: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, trace) in run.traces.iter().enumerate() {
        groups
            .entry(trace.rank.index)
            .or_insert_with(|| {
                order.push(trace.rank.index);
                Vec::new()
            })
            .push(i);
    }
    order.sort_unstable();

    let mut per_trace: Vec<Option<TraceSteps>> = per_trace.into_iter().map(Some).collect();
    let mut ranks = order
        .iter()
        .map(|rank| {
            let traces = groups.remove(rank).unwrap_or_default();
            let mut decode = Vec::new();
            let mut prefill = Vec::new();
            let mut mixed = Vec::new();
            let mut found = Detection::default();
            let mut unassigned_ns = 0;
            let mut labels = Vec::new();
            let mut mix = StepMix::default();
            let mut marks = Vec::new();
            let mut loop_steps = Vec::new();
            for &t in &traces {
                if let Some(ts) = per_trace[t].take() {
                    found.merge(&ts.found);
                    loop_steps.extend(ts.profiler);
                    labels.extend(ts.labels);
                    unassigned_ns += ts.unassigned_ns;
                    mix.unassigned += ts.unassigned_ns;
                    mix.other_label += ts.other_label_ns;
                    marks.extend(ts.other_labels.iter().map(|&(start, end)| Mark {
                        trace: t,
                        start,
                        end,
                        kind: MarkKind::Other,
                    }));
                    for step in ts.steps {
                        let ns = kernel_time(&run.traces[t], &step.activities);
                        match step.kind {
                            StepKind::Decode => mix.decode += ns,
                            StepKind::Prefill => mix.prefill += ns,
                            StepKind::Mixed => mix.mixed += ns,
                        }
                        match step.kind {
                            StepKind::Decode => decode.push(step),
                            StepKind::Prefill => prefill.push(step),
                            StepKind::Mixed => mixed.push(step),
                        }
                    }
                }
            }
            let by_start =
                |a: &Step, b: &Step| (a.start, a.trace, a.end).cmp(&(b.start, b.trace, b.end));
            decode.sort_by(by_start);
            prefill.sort_by(by_start);
            mixed.sort_by(by_start);
            labels.sort_by_key(|l: &StepLabel| (l.start, l.trace, l.end));
            let (kept, dropped) = steady_state(decode, warmup);
            let dropped_warmup = dropped
                .iter()
                .filter(|d| d.reason == DropReason::Warmup)
                .count();
            marks.extend(
                prefill
                    .iter()
                    .chain(&mixed)
                    .map(|s| Mark::of(s, MarkKind::Other)),
            );
            marks.extend(
                kept.iter()
                    .map(|s| Mark::of(s, MarkKind::Decode { kept: true })),
            );
            marks.extend(dropped.iter().map(|d| {
                let kind = match d.reason {
                    DropReason::Warmup => MarkKind::WarmupDecode,
                    DropReason::Outlier => MarkKind::Decode { kept: false },
                };
                Mark::of(&d.step, kind)
            }));
            let rank_traces: Vec<&RankTrace> = traces.iter().map(|&t| &run.traces[t]).collect();
            let iterations = iterations::iterations(&rank_traces, &traces, &mut marks);
            loop_steps.sort_by(by_start);
            RankSteps {
                rank: run.traces[traces[0]].rank.clone(),
                dropped_outliers: dropped.len() - dropped_warmup,
                dropped_warmup,
                traces,
                decode: kept,
                prefill,
                mixed,
                dropped,
                unassigned_ns,
                mix,
                iterations,
                loop_steps,
                found,
                labels,
            }
        })
        .collect::<Vec<RankSteps>>();
    let is_loop = is_profiler_loop(&ranks);
    for r in &mut ranks {
        if is_loop {
            into_loop(r, run);
        } else {
            r.loop_steps.clear();
        }
    }
    ranks
}

/// A run is a ProfilerStep loop when no rank has a serving step that annotations or graph
/// launches found (segmentation's guesses give way to the profiler's own iterations), no trace
/// is a diffusion pipeline's, and every rank holds at least [`LOOP_MIN_ITERATIONS`]
/// ProfilerStep iterations with GPU work.
fn is_profiler_loop(ranks: &[RankSteps]) -> bool {
    let sure = |c: &SourceCounts| c.annotation + c.graph_launch > 0;
    !ranks.is_empty()
        && ranks.iter().all(|r| {
            let f = &r.found;
            f.diffusion_calls == 0
                && f.step_annotations == 0
                && !sure(&f.decode)
                && !sure(&f.prefill)
                && !sure(&f.mixed)
                && r.loop_steps.len() as u64 >= LOOP_MIN_ITERATIONS
        })
}

/// Makes a rank's steps those of its ProfilerStep loop: its iterations are the steps, the
/// iterations between them its [`Iteration`]s (no warm-up: a profiler schedule has its own), and
/// what segmentation found is dropped.
fn into_loop(r: &mut RankSteps, run: &Run) {
    let steps = std::mem::take(&mut r.loop_steps);
    let all: i64 = r
        .traces
        .iter()
        .map(|&t| run.traces[t].gpu.iter().map(|a| a.dur).sum::<i64>())
        .sum();
    let in_loop: i64 = steps
        .iter()
        .map(|s| kernel_time(&run.traces[s.trace], &s.activities))
        .sum();
    r.decode.clear();
    r.prefill.clear();
    r.mixed.clear();
    r.dropped.clear();
    r.labels.clear();
    r.dropped_warmup = 0;
    r.dropped_outliers = 0;
    r.unassigned_ns = all - in_loop;
    r.mix = StepMix {
        loop_iterations: in_loop,
        unassigned: all - in_loop,
        ..StepMix::default()
    };
    r.found.decode = SourceCounts::default();
    r.found.prefill = SourceCounts::default();
    r.found.mixed = SourceCounts::default();
    r.found.labelled_by = EvidenceCounts::default();
    r.found.loop_iterations = steps.len() as u64;
    r.iterations = steps
        .windows(2)
        .filter(|w| w[0].trace == w[1].trace)
        .map(|w| {
            let (a, b) = (&w[0], &w[1]);
            Iteration {
                trace: a.trace,
                start: a.start,
                end: a.end,
                next: b.start,
                gap_busy_ns: iterations::busy_between(&run.traces[a.trace], a.end, b.start),
                kept: true,
            }
        })
        .collect();
    r.loop_steps = steps;
}

/// Splits decode steps (in start order) into the steady state and the dropped ones: the first
/// `warmup` steps, then the steps whose wall is below 0.5× or above 2× the median wall of the rest.
pub(crate) fn steady_state(decode: Vec<Step>, warmup: usize) -> (Vec<Step>, Vec<DroppedStep>) {
    // A trace of one or two forward passes (a TraceLens split, a single profiled iteration) has
    // no warm-up to drop: dropping it would leave nothing to measure.
    let warmup = if decode.len() > warmup { warmup } else { 0 };
    let mut dropped = Vec::new();
    let mut rest = Vec::with_capacity(decode.len().saturating_sub(warmup));
    for (i, step) in decode.into_iter().enumerate() {
        if i < warmup {
            dropped.push(DroppedStep {
                step,
                reason: DropReason::Warmup,
            });
        } else {
            rest.push(step);
        }
    }
    if rest.is_empty() {
        return (rest, dropped);
    }
    // Twice the median, an exact integer: 2·m for odd n, the sum of the two middle values for even n.
    let mut walls: Vec<i64> = rest.iter().map(Step::wall).collect();
    walls.sort_unstable();
    let n = walls.len();
    let twice_median = if n % 2 == 1 {
        2 * i128::from(walls[n / 2])
    } else {
        i128::from(walls[n / 2 - 1]) + i128::from(walls[n / 2])
    };
    let mut kept = Vec::with_capacity(rest.len());
    for step in rest {
        let wall = i128::from(step.wall());
        // wall < 0.5·m  ⇔  4·wall < 2m;   wall > 2·m  ⇔  wall > 2m.
        if 4 * wall < twice_median || wall > twice_median {
            dropped.push(DroppedStep {
                step,
                reason: DropReason::Outlier,
            });
        } else {
            kept.push(step);
        }
    }
    (kept, dropped)
}

/// The decode steps of one rank that stalled: the slow outliers among its steps after warm-up
/// (above 2x their median wall), which the steady state leaves out of every per-step figure.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Stalls {
    /// Decode steps after warm-up, kept or dropped as outliers.
    pub steps: usize,
    /// Positions of the stalled steps among those, 1-based, in start order.
    pub positions: Vec<usize>,
    /// Each stalled step's wall over the median wall of the steps, in the same order.
    pub factors: Vec<f64>,
    /// The median wall of the steps, ns.
    pub median_ns: f64,
    /// Each stalled step's wall, ns, in the same order.
    pub walls_ns: Vec<i64>,
}

impl Stalls {
    /// Stalled steps / steps after warm-up, %; `None` without a step.
    pub(crate) fn pct(&self) -> Option<f64> {
        (self.steps > 0).then(|| self.positions.len() as f64 / self.steps as f64 * 100.0)
    }

    /// One sample per step after warm-up, in start order: 100 for a stalled step, 0 otherwise.
    pub(crate) fn samples(&self) -> Vec<f64> {
        let mut v = vec![0.0; self.steps];
        for &p in &self.positions {
            v[p - 1] = 100.0;
        }
        v
    }

    /// The time the stalls cost, ms: each stalled step's wall minus the median wall, summed.
    pub(crate) fn lost_ms(&self) -> f64 {
        // Folded from +0.0: `Sum` of no f64 is -0.0, which a report would print as "-0.000".
        self.walls_ns
            .iter()
            .fold(0.0, |sum, &w| sum + (w as f64 - self.median_ns) / 1e6)
    }

    /// [`Stalls::lost_ms`] per decode step after warm-up, ms; `None` without a step.
    pub(crate) fn lost_ms_per_step(&self) -> Option<f64> {
        (self.steps > 0).then(|| self.lost_ms() / self.steps as f64)
    }

    /// One sample per step after warm-up, in start order: the time a stalled step cost (its wall
    /// minus the median wall, ms), 0 for the others; their mean is [`Stalls::lost_ms_per_step`].
    pub(crate) fn lost_samples(&self) -> Vec<f64> {
        let mut v = vec![0.0; self.steps];
        for (&p, &w) in self.positions.iter().zip(&self.walls_ns) {
            v[p - 1] = (w as f64 - self.median_ns) / 1e6;
        }
        v
    }
}

/// One decode step as a chart draws it: its wall and what the steady-state selection did with it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecodePoint {
    pub wall_ms: f64,
    pub kind: PointKind,
}

/// What the steady-state selection did with a decode step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointKind {
    /// Dropped at the start of the rank, before the steady state.
    Warmup,
    /// Kept: the steps the decode metrics are computed from.
    Kept,
    /// Left out as an outlier, slower than the median: a stall.
    Stall,
    /// Left out as an outlier, faster than the median.
    Fast,
}

/// Every decode step of one rank in start order, warm-up and outliers included, each with what
/// the selection did with it; an outlier is a stall when slower than the median of the steps
/// after warm-up (as [`stalls`] counts them).
pub(crate) fn decode_points(rs: &RankSteps) -> Vec<DecodePoint> {
    let mut steps: Vec<(&Step, Option<DropReason>)> = rs.decode.iter().map(|s| (s, None)).collect();
    steps.extend(rs.dropped.iter().map(|d| (&d.step, Some(d.reason))));
    steps.sort_by_key(|(s, _)| (s.start, s.trace, s.end));
    let median_ns = stalls(rs).median_ns;
    steps
        .into_iter()
        .map(|(s, reason)| DecodePoint {
            wall_ms: s.wall() as f64 / 1e6,
            kind: match reason {
                None => PointKind::Kept,
                Some(DropReason::Warmup) => PointKind::Warmup,
                Some(DropReason::Outlier) if s.wall() as f64 > median_ns => PointKind::Stall,
                Some(DropReason::Outlier) => PointKind::Fast,
            },
        })
        .collect()
}

/// The stalls of one rank (fast outliers are not stalls: they are left out, not counted).
pub(crate) fn stalls(rs: &RankSteps) -> Stalls {
    let mut steps: Vec<(&Step, bool)> = rs.decode.iter().map(|s| (s, false)).collect();
    steps.extend(
        rs.dropped
            .iter()
            .filter(|d| d.reason == DropReason::Outlier)
            .map(|d| (&d.step, true)),
    );
    steps.sort_by_key(|(s, _)| (s.start, s.trace, s.end));
    let mut walls: Vec<i64> = steps.iter().map(|(s, _)| s.wall()).collect();
    walls.sort_unstable();
    let n = walls.len();
    if n == 0 {
        return Stalls::default();
    }
    let median = if n % 2 == 1 {
        walls[n / 2] as f64
    } else {
        (walls[n / 2 - 1] as f64 + walls[n / 2] as f64) / 2.0
    };
    let mut out = Stalls {
        steps: n,
        median_ns: median,
        ..Stalls::default()
    };
    for (i, (s, outlier)) in steps.iter().enumerate() {
        if *outlier && s.wall() as f64 > median {
            out.positions.push(i + 1);
            out.factors.push(s.wall() as f64 / median);
            out.walls_ns.push(s.wall());
        }
    }
    out
}

/// Steps of one trace, before steady-state selection.
#[derive(Debug, Default)]
struct TraceSteps {
    steps: Vec<Step>,
    found: Detection,
    unassigned_ns: i64,
    /// Kernel time of steps of another label (`IDLE`, unknown modes, draft forwards of no whole
    /// speculative iteration).
    other_label_ns: i64,
    /// Where those steps lie (first start, last end of their activities), ns.
    other_labels: Vec<(i64, i64)>,
    labels: Vec<StepLabel>,
    /// The part each of `steps` plays in a speculative iteration (same order).
    roles: Vec<Option<SpecRole>>,
    /// The trace's ProfilerStep iterations, in start order: the steps of a loop, if the run is one.
    profiler: Vec<Step>,
}

/// Who claims the activities of one launch.
#[derive(Clone, Copy)]
enum Owner {
    Annotation(usize),
    Graph(usize),
    Free,
}

fn forced_kind(stage: Option<Stage>, kind: StepKind) -> StepKind {
    match stage {
        Some(Stage::Decode) => StepKind::Decode,
        Some(Stage::Extend) => StepKind::Prefill,
        None => kind,
    }
}

fn make_step(
    trace: &RankTrace,
    trace_index: usize,
    kind: StepKind,
    source: StepSource,
    activities: Vec<u32>,
    batch_size: Option<u32>,
) -> Option<Step> {
    make_step_in(
        trace,
        trace.stage,
        trace_index,
        kind,
        source,
        activities,
        batch_size,
    )
}

/// [`make_step`] with the stage that forces its kind (`None` in a trace of speculative
/// iterations: SGLang files verify steps, and the draft forwards around them, under either stage,
/// sgl-project/sglang#34942, so the annotation tells, not the file).
fn make_step_in(
    trace: &RankTrace,
    stage: Option<Stage>,
    trace_index: usize,
    kind: StepKind,
    source: StepSource,
    activities: Vec<u32>,
    batch_size: Option<u32>,
) -> Option<Step> {
    let mut start = i64::MAX;
    let mut end = i64::MIN;
    for &i in &activities {
        let a = &trace.gpu[i as usize];
        start = start.min(a.ts);
        end = end.max(a.end());
    }
    if activities.is_empty() {
        return None;
    }
    Some(Step {
        kind: forced_kind(stage, kind),
        source,
        trace: trace_index,
        activities,
        start,
        end,
        batch_size,
        spec: None,
    })
}

fn trace_steps(
    trace: &RankTrace,
    trace_index: usize,
    classes: &[Class],
    step_gap: Option<i64>,
) -> TraceSteps {
    let mut found = Detection {
        activities: trace.gpu.len() as u64,
        graph_captures: trace
            .launches
            .iter()
            .filter(|l| trace.name(l.name).contains("BeginCapture"))
            .count() as u64,
        ..Detection::default()
    };
    seen_annotations(trace, &mut found);
    if found.diffusion_calls > 0 {
        // A diffusion pipeline's stages are no forwards of a decode loop: no step, whatever
        // segmentation would make of them.
        return TraceSteps {
            unassigned_ns: trace.gpu.iter().map(|a| a.dur).sum(),
            found,
            ..TraceSteps::default()
        };
    }
    let (annotations, execute) = step_annotations(trace);
    found.step_annotations = annotations.len() as u64;
    if execute {
        found.execute_annotations = found.step_annotations;
    }
    found.non_step_annotations =
        annotations.iter().filter(|(_, a)| a.kind.is_none()).count() as u64;
    let claims = claim(trace, &annotations);
    found.graph_launches = claims.graph.len() as u64;
    // A trace of speculative iterations: every decode forward but the verify is the draft model's.
    let speculative = annotations
        .iter()
        .any(|(_, a)| a.spec == Some(SpecRole::Verify));
    let stage = if speculative { None } else { trace.stage };

    let mut out = TraceSteps {
        found,
        profiler: profiler_steps(trace, trace_index),
        ..TraceSteps::default()
    };
    let mut pool = claims.free;
    for ((_, ann), acts) in annotations.iter().zip(claims.annotation) {
        match ann.kind {
            Some(kind) => out.push_as(
                make_step_in(
                    trace,
                    stage,
                    trace_index,
                    kind,
                    StepSource::Annotation,
                    acts,
                    ann.batch_size,
                ),
                ann.spec,
            ),
            None if acts.is_empty() => {}
            None => {
                out.other_label_ns += kernel_time(trace, &acts);
                out.other_labels.push(span(trace, &acts));
            }
        }
    }
    for acts in claims.graph {
        // A graph without attention and GEMM is a piece of a forward (vLLM piecewise graphs replay
        // the layers between eager attention calls) or no forward at all (a training graph): its
        // kernels join the eager ones in segmentation.
        if !is_forward_pass(trace, &acts, classes) {
            out.found.graph_launches_partial += 1;
            pool.extend(acts);
            continue;
        }
        out.push(make_step_in(
            trace,
            stage,
            trace_index,
            StepKind::Decode,
            StepSource::GraphLaunch,
            acts,
            None,
        ));
    }
    segment_steps(trace, trace_index, classes, pool, step_gap, &mut out);
    if speculative {
        spec::group(trace, &mut out);
    }
    for step in &out.steps {
        match step.kind {
            StepKind::Decode => out.found.decode.add(step.source),
            StepKind::Prefill => out.found.prefill.add(step.source),
            StepKind::Mixed => out.found.mixed.add(step.source),
        }
    }
    out
}

/// Counts the trace's CPU annotations by folded name, its ProfilerStep and diffusion annotations.
fn seen_annotations(trace: &RankTrace, found: &mut Detection) {
    let mut by_name: HashMap<crate::reader::model::NameId, u64> = HashMap::new();
    for a in &trace.annotations {
        if a.side == AnnotationSide::Cpu {
            *by_name.entry(a.name).or_default() += 1;
        }
    }
    let mut folded: Vec<(String, u64)> = Vec::new();
    let mut names: Vec<_> = by_name.into_iter().collect();
    names.sort_unstable();
    for (id, n) in names {
        let name = trace.name(id);
        if is_diffusion_annotation(name) {
            found.diffusion_calls += n;
            if found.diffusion_name.is_none() {
                found.diffusion_name = Some(name.to_string());
            }
        }
        if parse_profiler_step(name).is_some() {
            found.profiler_steps += n;
        }
        folded.push((folded_name(name), n));
    }
    merge_names(&mut found.annotations_seen, &folded);
}

/// The trace's `ProfilerStep#N` iterations, each the GPU activities whose launch, from any host
/// thread (the backward pass and DDP's allreduce launch from the autograd thread), starts inside
/// the annotation's `[ts, ts+dur]`; in start order, those without an activity left out.
fn profiler_steps(trace: &RankTrace, trace_index: usize) -> Vec<Step> {
    let mut spans: Vec<(i64, i64)> = trace
        .annotations
        .iter()
        .filter(|a| a.side == AnnotationSide::Cpu)
        .filter(|a| parse_profiler_step(trace.name(a.name)).is_some())
        .map(|a| (a.ts, a.ts.saturating_add(a.dur.max(0))))
        .collect();
    if spans.is_empty() {
        return Vec::new();
    }
    spans.sort_unstable();
    // The latest-starting span that contains t (spans of one profiler do not overlap).
    let span_of = |t: i64| -> Option<usize> {
        let k = spans.partition_point(|&(s, _)| s <= t);
        let i = k.checked_sub(1)?;
        (spans[i].1 >= t).then_some(i)
    };
    let mut by_correlation: HashMap<u64, Option<usize>> =
        HashMap::with_capacity(trace.launches.len());
    for l in &trace.launches {
        by_correlation
            .entry(l.correlation)
            .or_insert_with(|| span_of(l.ts));
    }
    let mut acts: Vec<Vec<u32>> = vec![Vec::new(); spans.len()];
    for (i, a) in trace.gpu.iter().enumerate() {
        if let Some(&Some(span)) = a.correlation().and_then(|c| by_correlation.get(&c)) {
            acts[span].push(i as u32);
        }
    }
    acts.into_iter()
        .filter_map(|a| {
            make_step(
                trace,
                trace_index,
                StepKind::Decode,
                StepSource::Annotation,
                a,
                None,
            )
        })
        .collect()
}

impl TraceSteps {
    fn push(&mut self, step: Option<Step>) {
        self.push_as(step, None);
    }

    fn push_as(&mut self, step: Option<Step>, role: Option<SpecRole>) {
        if let Some(step) = step {
            self.steps.push(step);
            self.roles.push(role);
        }
    }
}

/// A parser of annotation names: what the name says, `None` for another name.
type ParseAnnotation = fn(&str) -> Option<Label>;

/// The `step[...]` annotations of a trace's host threads, with their thread; in a trace without
/// any, the `execute_N_context_C(...)_generation_G(...)` annotations of TraceLens-instrumented
/// serving loops (vLLM's among them), whose request counts tell the kind of the forward.
fn step_annotations(trace: &RankTrace) -> (Vec<(u64, StepAnnotation)>, bool) {
    let of = |parse: ParseAnnotation| -> Vec<_> {
        trace
            .annotations
            .iter()
            .filter(|a| a.side == AnnotationSide::Cpu)
            .filter_map(|a| {
                let label = parse(trace.name(a.name))?;
                Some((
                    a.track,
                    StepAnnotation {
                        ts: a.ts,
                        end: a.ts.saturating_add(a.dur.max(0)),
                        kind: label.kind,
                        batch_size: label.batch_size,
                        spec: label.spec,
                    },
                ))
            })
            .collect()
    };
    let steps = of(parse_step_annotation);
    if steps.is_empty() {
        let execute = of(parse_execute_annotation);
        let any = !execute.is_empty();
        (execute, any)
    } else {
        (steps, false)
    }
}

/// The batch the run's decode step annotations say (`bs=N`, vLLM's generation requests): the
/// median over every annotated decode step of every trace, without finding steps (for picking a
/// baseline before the analysis). `None` where no decode annotation carries one.
pub(crate) fn annotated_decode_batch(run: &Run) -> Option<f64> {
    let mut batches: Vec<f64> = run
        .traces
        .iter()
        .flat_map(|t| step_annotations(t).0.into_iter())
        .filter(|(_, a)| a.kind == Some(StepKind::Decode))
        .filter_map(|(_, a)| a.batch_size.map(f64::from))
        .collect();
    crate::stats::median(&mut batches)
}

/// The activities of a trace by who claims them.
struct Claims {
    /// Per annotation.
    annotation: Vec<Vec<u32>>,
    /// Per graph launch outside annotations.
    graph: Vec<Vec<u32>>,
    /// Claimed by nobody.
    free: Vec<u32>,
}

fn claim(trace: &RankTrace, annotations: &[(u64, StepAnnotation)]) -> Claims {
    let index = AnnotationIndex::new(annotations);
    // A correlation links to its first launch; a later launch with the same id links nothing.
    let mut by_correlation: HashMap<u64, usize> = HashMap::with_capacity(trace.launches.len());
    for (i, l) in trace.launches.iter().enumerate() {
        by_correlation.entry(l.correlation).or_insert(i);
    }
    // Who owns each launch: the annotation it starts in, else its own graph launch, else nobody.
    let mut graph_slots = 0usize;
    let owners: Vec<Owner> = trace
        .launches
        .iter()
        .enumerate()
        .map(|(i, l)| match index.containing(annotations, l.tid, l.ts) {
            Some(a) => Owner::Annotation(a),
            None if l.graph && by_correlation.get(&l.correlation) == Some(&i) => {
                graph_slots += 1;
                Owner::Graph(graph_slots - 1)
            }
            None => Owner::Free,
        })
        .collect();
    let mut claims = Claims {
        annotation: vec![Vec::new(); annotations.len()],
        graph: vec![Vec::new(); graph_slots],
        free: Vec::new(),
    };
    for (i, act) in trace.gpu.iter().enumerate() {
        let owner = act
            .correlation()
            .and_then(|c| by_correlation.get(&c))
            .map_or(Owner::Free, |&l| owners[l]);
        match owner {
            Owner::Annotation(a) => claims.annotation[a].push(i as u32),
            Owner::Graph(g) => claims.graph[g].push(i as u32),
            Owner::Free => claims.free.push(i as u32),
        }
    }
    claims
}

/// Method 3: cuts the free activities into segments; a segment holding attention and a GEMM is a
/// forward pass, labelled from the stage-split file name or the evidence; undecided and other
/// segments are unassigned.
fn segment_steps(
    trace: &RankTrace,
    trace_index: usize,
    classes: &[Class],
    pool: Vec<u32>,
    step_gap: Option<i64>,
    out: &mut TraceSteps,
) {
    out.found.gap_activities = pool.len() as u64;
    if pool.is_empty() {
        return;
    }
    let known = first_launches(trace, &out.steps);
    let cut = segment::cut_pool(trace, pool, classes, step_gap, &known);
    out.found.gap_segments = cut.segments.len() as u64;
    out.found.segmentation.push(cut.report);
    let (forwards, rest): (Vec<Vec<u32>>, Vec<Vec<u32>>) = cut
        .segments
        .into_iter()
        .partition(|s| is_forward_pass(trace, s, classes));
    out.found.gap_segments_rejected = rest.len() as u64;
    out.unassigned_ns += rest.iter().map(|s| kernel_time(trace, s)).sum::<i64>();
    if forwards.is_empty() {
        return;
    }
    let links = Links::new(trace);
    let graph_launched = graph_launched(trace);
    let facts: Vec<label::Facts> = forwards
        .iter()
        .map(|s| {
            let mut f = label::facts(trace, &links, s, classes);
            f.graph = s.iter().any(|&i| {
                trace.gpu[i as usize]
                    .correlation()
                    .is_some_and(|c| graph_launched.contains(&c))
            });
            f
        })
        .collect();
    let kinds: Vec<(Option<StepKind>, Evidence)> = match trace.stage {
        Some(_) => vec![(Some(StepKind::Prefill), Evidence::StageFile); forwards.len()],
        None => {
            let known: Vec<(StepKind, label::Facts)> = out
                .steps
                .iter()
                .map(|s| {
                    let mut f = label::facts(trace, &links, &s.activities, classes);
                    f.graph = s.source == StepSource::GraphLaunch;
                    (s.kind, f)
                })
                .collect();
            label::label(&facts, &known)
        }
    };
    for ((mut acts, f), (kind, evidence)) in forwards.into_iter().zip(facts).zip(kinds) {
        acts.sort_unstable();
        out.found.labelled_by.add(evidence);
        let step = kind
            .and_then(|k| make_step(trace, trace_index, k, StepSource::Gap, acts.clone(), None));
        if step.is_none() {
            out.unassigned_ns += kernel_time(trace, &acts);
        }
        let (start, end) = span(trace, &acts);
        out.labels.push(StepLabel {
            trace: trace_index,
            start,
            end,
            kind: step.as_ref().map(|s| s.kind),
            evidence,
            gemm_m: f.gemm_m,
        });
        out.push(step);
    }
}

/// Correlations of graph launches.
fn graph_launched(trace: &RankTrace) -> std::collections::HashSet<u64> {
    trace
        .launches
        .iter()
        .filter(|l| l.graph)
        .map(|l| l.correlation)
        .collect()
}

/// The earliest launch time of each step's activities (steps with no linked launch give none).
fn first_launches(trace: &RankTrace, steps: &[Step]) -> Vec<i64> {
    let mut by_correlation: HashMap<u64, i64> = HashMap::new();
    for l in trace.launches.iter().rev() {
        by_correlation.insert(l.correlation, l.ts);
    }
    steps
        .iter()
        .filter_map(|s| {
            s.activities
                .iter()
                .filter_map(|&i| by_correlation.get(&trace.gpu[i as usize].correlation()?))
                .min()
                .copied()
        })
        .collect()
}

fn span(trace: &RankTrace, activities: &[u32]) -> (i64, i64) {
    activities.iter().fold((i64::MAX, i64::MIN), |(s, e), &i| {
        let a = &trace.gpu[i as usize];
        (s.min(a.ts), e.max(a.end()))
    })
}

/// Rotary embedding, KV-cache writes: attention's helpers, not attention itself.
fn is_helper(activity: &GpuActivity, classes: &[Class]) -> bool {
    activity.kind() == GpuKind::Kernel
        && classes
            .get(activity.name as usize)
            .is_some_and(|c| c.helper)
}

/// An attention kernel that is not a helper.
fn is_attention(activity: &GpuActivity, classes: &[Class]) -> bool {
    category_of(activity, classes) == Category::Attention && !is_helper(activity, classes)
}

/// A forward pass holds at least one attention kernel (not a helper) and one GEMM.
fn is_forward_pass(trace: &RankTrace, activities: &[u32], classes: &[Class]) -> bool {
    let mut attention = false;
    let mut gemm = false;
    for &i in activities {
        let activity = &trace.gpu[i as usize];
        match category_of(activity, classes) {
            Category::Attention if !is_helper(activity, classes) => attention = true,
            Category::DenseGemm | Category::MoeGemm => gemm = true,
            _ => {}
        }
        if attention && gemm {
            return true;
        }
    }
    false
}

fn kernel_time(trace: &RankTrace, activities: &[u32]) -> i64 {
    activities.iter().map(|&i| trace.gpu[i as usize].dur).sum()
}

#[cfg(test)]
mod tests;
