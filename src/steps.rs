//! Steps: cuts each rank's GPU timeline into forward passes (decode or prefill) and picks the
//! steady decode steps, as defined in `docs/METRICS.md` ("Steps").
//!
//! Methods, in order of trust, each activity belonging to at most one step:
//! 1. `step[MODE ...]` CPU annotations, linked to activities through the correlation of their launch;
//! 2. graph launches outside step annotations, one decode step each;
//! 3. gap segmentation (≥ 5 ms idle) of what is left, kept only when a segment holds attention and a GEMM.
//!
//! The classification of kernel names is an input (`&[Class]` indexed by `NameId`), so this module
//! does not depend on how the taxonomy matches names.

use std::collections::HashMap;

use rayon::prelude::*;
use serde::Serialize;

use crate::reader::model::{AnnotationSide, GpuActivity, GpuKind, RankId, RankTrace, Run, Stage};
use crate::taxonomy::{Category, Class, Collective};

/// Idle time between the running maximum end and the next start that cuts a gap segment.
pub const GAP_NS: i64 = 5_000_000;

/// Decode steps dropped at the start of each rank unless told otherwise.
pub const DEFAULT_WARMUP_STEPS: usize = 2;

/// What a forward pass does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Decode,
    Prefill,
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
}

impl Step {
    /// Last end minus first start, ns.
    pub fn wall(&self) -> i64 {
        self.end - self.start
    }
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
}

/// What step detection saw, for reports and for saying why no step was found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Detection {
    /// GPU activities of the traces.
    pub activities: u64,
    /// CPU `step[...]` annotations.
    pub step_annotations: u64,
    /// Of which not forward passes (`IDLE`, `TARGET_VERIFY`, unknown modes): their kernels stay unassigned.
    pub non_step_annotations: u64,
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
}

impl Detection {
    pub fn merge(&mut self, other: &Detection) {
        self.activities += other.activities;
        self.step_annotations += other.step_annotations;
        self.non_step_annotations += other.non_step_annotations;
        self.graph_launches += other.graph_launches;
        self.graph_launches_partial += other.graph_launches_partial;
        self.gap_activities += other.gap_activities;
        self.gap_segments += other.gap_segments;
        self.gap_segments_rejected += other.gap_segments_rejected;
        self.decode.merge(&other.decode);
        self.prefill.merge(&other.prefill);
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
    /// Decode steps left out of the steady state, in start order.
    pub dropped: Vec<DroppedStep>,
    pub dropped_warmup: usize,
    pub dropped_outliers: usize,
    /// Kernel time (sum of durations) of the activities in no step, ns.
    pub unassigned_ns: i64,
    pub found: Detection,
}

/// The category of one activity: memcpy and memset are `memcpy` whatever their name; a name the
/// classification does not cover is `other`.
pub fn category_of(activity: &GpuActivity, classes: &[Class]) -> Category {
    match activity.kind {
        GpuKind::Memcpy | GpuKind::Memset => Category::Memcpy,
        GpuKind::Kernel => classes
            .get(activity.name as usize)
            .map_or(Category::Other, |c| c.category),
    }
}

/// True for a `comm` kernel whose collective is `allreduce`.
pub fn is_allreduce(activity: &GpuActivity, classes: &[Class]) -> bool {
    activity.kind == GpuKind::Kernel
        && classes.get(activity.name as usize).is_some_and(|c| {
            c.category == Category::Comm && c.collective == Some(Collective::Allreduce)
        })
}

/// Finds the steps of every rank of a run and its steady decode state.
///
/// `classes[i]` classifies the names of `run.traces[i]`; a missing entry classifies every name `other`.
pub fn find_steps(run: &Run, classes: &[Vec<Class>], warmup: usize) -> Vec<RankSteps> {
    let per_trace: Vec<TraceSteps> = run
        .traces
        .par_iter()
        .enumerate()
        .map(|(i, trace)| {
            let cls = classes.get(i).map_or(&[][..], |c| c.as_slice());
            trace_steps(trace, i, cls)
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
    order
        .iter()
        .map(|rank| {
            let traces = groups.remove(rank).unwrap_or_default();
            let mut decode = Vec::new();
            let mut prefill = Vec::new();
            let mut found = Detection::default();
            let mut unassigned_ns = 0;
            for &t in &traces {
                if let Some(ts) = per_trace[t].take() {
                    found.merge(&ts.found);
                    unassigned_ns += ts.unassigned_ns;
                    for step in ts.steps {
                        match step.kind {
                            StepKind::Decode => decode.push(step),
                            StepKind::Prefill => prefill.push(step),
                        }
                    }
                }
            }
            let by_start =
                |a: &Step, b: &Step| (a.start, a.trace, a.end).cmp(&(b.start, b.trace, b.end));
            decode.sort_by(by_start);
            prefill.sort_by(by_start);
            let (kept, dropped) = steady_state(decode, warmup);
            let dropped_warmup = dropped
                .iter()
                .filter(|d| d.reason == DropReason::Warmup)
                .count();
            RankSteps {
                rank: run.traces[traces[0]].rank.clone(),
                dropped_outliers: dropped.len() - dropped_warmup,
                dropped_warmup,
                traces,
                decode: kept,
                prefill,
                dropped,
                unassigned_ns,
                found,
            }
        })
        .collect()
}

/// Splits decode steps (in start order) into the steady state and the dropped ones: the first
/// `warmup` steps, then the steps whose wall is below 0.5× or above 2× the median wall of the rest.
pub fn steady_state(decode: Vec<Step>, warmup: usize) -> (Vec<Step>, Vec<DroppedStep>) {
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

/// Steps of one trace, before steady-state selection.
#[derive(Debug, Default)]
struct TraceSteps {
    steps: Vec<Step>,
    found: Detection,
    unassigned_ns: i64,
}

/// A parsed CPU `step[...]` annotation.
struct StepAnnotation {
    ts: i64,
    end: i64,
    kind: Option<StepKind>,
    batch_size: Option<u32>,
}

/// Parses `step[DECODE bs=64]`, `step[EXTEND bs=15 toks=15360]`: the mode and the batch size.
/// `None` when the name is not a step annotation; `Some((None, _))` for a mode that is not a step.
fn parse_step_annotation(name: &str) -> Option<(Option<StepKind>, Option<u32>)> {
    let body = name.strip_prefix("step[")?;
    let body = body.strip_suffix(']').unwrap_or(body);
    let mut words = body.split_whitespace();
    let kind = match words.next() {
        Some("DECODE") => Some(StepKind::Decode),
        Some("EXTEND") | Some("MIXED") | Some("DRAFT_EXTEND") => Some(StepKind::Prefill),
        _ => None,
    };
    let batch_size = words
        .filter_map(|w| w.strip_prefix("bs="))
        .find_map(|v| v.parse::<u32>().ok());
    Some((kind, batch_size))
}

/// Step annotations of one host thread, sorted by start, with the running maximum end so that a
/// lookup can stop as soon as no earlier annotation can still contain the time.
struct ThreadAnnotations {
    /// (start, index into the annotation list), sorted by start.
    starts: Vec<(i64, usize)>,
    /// Running maximum of the ends over `starts[..=i]`.
    max_end: Vec<i64>,
}

struct AnnotationIndex {
    threads: HashMap<u64, ThreadAnnotations>,
}

impl AnnotationIndex {
    fn new(annotations: &[(u64, StepAnnotation)]) -> Self {
        let mut by_thread: HashMap<u64, Vec<(i64, usize)>> = HashMap::new();
        for (i, (tid, a)) in annotations.iter().enumerate() {
            by_thread.entry(*tid).or_default().push((a.ts, i));
        }
        let threads = by_thread
            .into_iter()
            .map(|(tid, mut starts)| {
                starts.sort_unstable();
                let mut max_end = Vec::with_capacity(starts.len());
                let mut running = i64::MIN;
                for &(_, i) in &starts {
                    running = running.max(annotations[i].1.end);
                    max_end.push(running);
                }
                (tid, ThreadAnnotations { starts, max_end })
            })
            .collect();
        AnnotationIndex { threads }
    }

    /// The latest-starting annotation of thread `tid` whose `[ts, ts+dur]` contains `t`.
    fn containing(&self, annotations: &[(u64, StepAnnotation)], tid: u64, t: i64) -> Option<usize> {
        let thread = self.threads.get(&tid)?;
        let mut k = thread.starts.partition_point(|&(s, _)| s <= t);
        while k > 0 {
            k -= 1;
            if thread.max_end[k] < t {
                return None;
            }
            let i = thread.starts[k].1;
            if annotations[i].1.end >= t {
                return Some(i);
            }
        }
        None
    }
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
        kind: forced_kind(trace.stage, kind),
        source,
        trace: trace_index,
        activities,
        start,
        end,
        batch_size,
    })
}

fn trace_steps(trace: &RankTrace, trace_index: usize, classes: &[Class]) -> TraceSteps {
    let mut found = Detection {
        activities: trace.gpu.len() as u64,
        ..Detection::default()
    };

    // 1. Step annotations (CPU side), indexed per host thread.
    let annotations: Vec<(u64, StepAnnotation)> = trace
        .annotations
        .iter()
        .filter(|a| a.side == AnnotationSide::Cpu)
        .filter_map(|a| {
            let (kind, batch_size) = parse_step_annotation(trace.name(a.name))?;
            Some((
                a.track,
                StepAnnotation {
                    ts: a.ts,
                    end: a.ts.saturating_add(a.dur.max(0)),
                    kind,
                    batch_size,
                },
            ))
        })
        .collect();
    found.step_annotations = annotations.len() as u64;
    found.non_step_annotations =
        annotations.iter().filter(|(_, a)| a.kind.is_none()).count() as u64;
    let index = AnnotationIndex::new(&annotations);

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
        .map(|(i, l)| match index.containing(&annotations, l.tid, l.ts) {
            Some(a) => Owner::Annotation(a),
            None if l.graph && by_correlation.get(&l.correlation) == Some(&i) => {
                graph_slots += 1;
                Owner::Graph(graph_slots - 1)
            }
            None => Owner::Free,
        })
        .collect();
    found.graph_launches = graph_slots as u64;

    let mut annotation_acts: Vec<Vec<u32>> = vec![Vec::new(); annotations.len()];
    let mut graph_acts: Vec<Vec<u32>> = vec![Vec::new(); graph_slots];
    let mut pool: Vec<u32> = Vec::new();
    let mut unassigned_ns: i64 = 0;
    for (i, act) in trace.gpu.iter().enumerate() {
        let owner = act
            .correlation()
            .and_then(|c| by_correlation.get(&c))
            .map_or(Owner::Free, |&l| owners[l]);
        match owner {
            Owner::Annotation(a) => annotation_acts[a].push(i as u32),
            Owner::Graph(g) => graph_acts[g].push(i as u32),
            Owner::Free => pool.push(i as u32),
        }
    }

    let mut steps = Vec::new();
    for ((_, ann), acts) in annotations.iter().zip(annotation_acts) {
        match ann.kind {
            Some(kind) => {
                if let Some(step) = make_step(
                    trace,
                    trace_index,
                    kind,
                    StepSource::Annotation,
                    acts,
                    ann.batch_size,
                ) {
                    steps.push(step);
                }
            }
            None => unassigned_ns += kernel_time(trace, &acts),
        }
    }
    for acts in graph_acts {
        // A graph without attention and GEMM is a piece of a forward (vLLM piecewise graphs replay
        // the layers between eager attention calls) or no forward at all (a training graph): its
        // kernels join the eager ones in gap segmentation.
        if !is_forward_pass(trace, &acts, classes) {
            found.graph_launches_partial += 1;
            pool.extend(acts);
            continue;
        }
        if let Some(step) = make_step(
            trace,
            trace_index,
            StepKind::Decode,
            StepSource::GraphLaunch,
            acts,
            None,
        ) {
            steps.push(step);
        }
    }

    // 3. Gap segmentation of what is left.
    found.gap_activities = pool.len() as u64;
    if pool
        .windows(2)
        .any(|w| trace.gpu[w[0] as usize].ts > trace.gpu[w[1] as usize].ts)
    {
        pool.sort_by_key(|&i| (trace.gpu[i as usize].ts, i));
    }
    let mut segments: Vec<Vec<u32>> = Vec::new();
    let mut current: Vec<u32> = Vec::new();
    let mut max_end = i64::MIN;
    for &i in &pool {
        let a = &trace.gpu[i as usize];
        if !current.is_empty() && a.ts.saturating_sub(max_end) >= GAP_NS {
            segments.push(std::mem::take(&mut current));
            max_end = i64::MIN;
        }
        max_end = max_end.max(a.end());
        current.push(i);
    }
    if !current.is_empty() {
        segments.push(current);
    }
    found.gap_segments = segments.len() as u64;
    for mut acts in segments {
        if is_forward_pass(trace, &acts, classes) {
            acts.sort_unstable();
            if let Some(step) = make_step(
                trace,
                trace_index,
                StepKind::Prefill,
                StepSource::Gap,
                acts,
                None,
            ) {
                steps.push(step);
            }
        } else {
            found.gap_segments_rejected += 1;
            unassigned_ns += kernel_time(trace, &acts);
        }
    }

    for step in &steps {
        match step.kind {
            StepKind::Decode => found.decode.add(step.source),
            StepKind::Prefill => found.prefill.add(step.source),
        }
    }
    TraceSteps {
        steps,
        found,
        unassigned_ns,
    }
}

/// Rotary embedding, KV-cache writes: attention's helpers, not attention itself.
fn is_helper(activity: &GpuActivity, classes: &[Class]) -> bool {
    activity.kind == GpuKind::Kernel
        && classes
            .get(activity.name as usize)
            .is_some_and(|c| c.helper)
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
mod tests {
    use super::*;
    use crate::testing::{run_of, TraceBuilder, MS, TID, US};

    const ATTN: Category = Category::Attention;
    const GEMM: Category = Category::DenseGemm;

    /// One forward (attention + GEMM) per graph launch, `wall` long, launches 100 ms apart.
    fn graph_steps(b: &mut TraceBuilder, walls_ms: &[i64]) {
        for (k, &w) in walls_ms.iter().enumerate() {
            let t = k as i64 * 100 * MS;
            let c = b.launch(t, true);
            b.forward(c, t + MS, w * MS);
        }
    }

    #[test]
    fn annotations_claim_the_activities_launched_inside_them_on_the_same_thread() {
        let mut b = TraceBuilder::new(0);
        b.annotation("step[DECODE bs=64]", 0, 100 * US, TID);
        b.annotation("step[EXTEND bs=15 toks=15360]", 200 * US, 100 * US, TID);
        b.annotation("step[IDLE]", 400 * US, 100 * US, TID);
        let c1 = b.launch(10 * US, false);
        let c2 = b.launch(100 * US, false); // on the closing edge: inside
        let c3 = b.launch(250 * US, false);
        let c4 = b.launch(450 * US, false);
        let a = b.kernel("mla_decode", ATTN, 20 * US, 30 * US, 0);
        let g = b.kernel("nvjet_tst", GEMM, 120 * US, 10 * US, 0);
        let p = b.kernel("fmha_prefill", ATTN, 260 * US, 40 * US, 0);
        let idle = b.kernel("nvjet_tst", GEMM, 460 * US, 7 * US, 0);
        b.link(a, c1);
        b.link(g, c2);
        b.link(p, c3);
        b.link(idle, c4);
        let (trace, classes) = b.build();
        let (run, classes) = run_of(vec![(trace, classes)]);

        let ranks = find_steps(&run, &classes, 0);
        assert_eq!(ranks.len(), 1);
        let r = &ranks[0];
        assert_eq!(r.decode.len(), 1);
        let d = &r.decode[0];
        assert_eq!(
            (d.kind, d.source, d.batch_size),
            (StepKind::Decode, StepSource::Annotation, Some(64))
        );
        assert_eq!(d.activities, vec![a, g]);
        assert_eq!((d.start, d.end, d.wall()), (20 * US, 130 * US, 110 * US));
        assert_eq!(r.prefill.len(), 1);
        assert_eq!(r.prefill[0].activities, vec![p]);
        assert_eq!(r.prefill[0].batch_size, Some(15));
        // The IDLE kernel is not a step and not left to the gap rule.
        assert_eq!(r.unassigned_ns, 7 * US);
        assert_eq!(r.found.step_annotations, 3);
        assert_eq!(r.found.non_step_annotations, 1);
        assert_eq!(r.found.gap_activities, 0);
    }

    #[test]
    fn a_launch_on_another_thread_is_not_claimed_by_the_annotation() {
        let mut b = TraceBuilder::new(0);
        b.annotation("step[DECODE bs=8]", 0, 100 * US, TID);
        let c = b.launch(10 * US, false);
        let other = b.launch(20 * US, false);
        let a = b.kernel("mla_decode", ATTN, 20 * US, 30 * US, 0);
        let x = b.kernel("nvjet_tst", GEMM, 60 * US, 10 * US, 0);
        b.link(a, c);
        b.link(x, other);
        let (mut trace, classes) = b.build();
        let l = trace
            .launches
            .iter_mut()
            .find(|l| l.correlation == other)
            .unwrap();
        l.tid = TID + 1;
        let (run, classes) = run_of(vec![(trace, classes)]);
        let r = &find_steps(&run, &classes, 0)[0];
        assert_eq!(r.decode[0].activities, vec![a]);
        assert_eq!(r.found.gap_activities, 1);
        // The lone GEMM is a gap segment without attention: unassigned.
        assert_eq!(r.unassigned_ns, 10 * US);
    }

    #[test]
    fn graph_launch_kernels_sharing_one_correlation_make_one_decode_step() {
        let mut b = TraceBuilder::new(0);
        let c1 = b.launch(0, true);
        let c2 = b.launch(50 * US, true);
        let mut first = Vec::new();
        for k in 0..5 {
            let (name, category) = if k == 0 {
                ("mla_decode", ATTN)
            } else {
                ("fused_moe_kernel", Category::MoeGemm)
            };
            let i = b.kernel(name, category, 10 * US + k * 5 * US, 3 * US, 0);
            b.link(i, c1);
            first.push(i);
        }
        // Walls 23, 20 and 20 µs: no outlier.
        let second = b.forward(c2, 60 * US, 20 * US);
        // A graph launch inside a step annotation belongs to the annotation.
        b.annotation("step[DECODE bs=4]", 100 * US, 10 * US, TID);
        let c3 = b.launch(105 * US, true);
        let k = b.kernel("mla_decode", ATTN, 120 * US, 20 * US, 0);
        b.link(k, c3);
        let (trace, classes) = b.build();
        let (run, classes) = run_of(vec![(trace, classes)]);
        let r = &find_steps(&run, &classes, 0)[0];
        assert_eq!(r.decode.len(), 3);
        assert_eq!(r.decode[0].source, StepSource::GraphLaunch);
        assert_eq!(r.decode[0].activities, first);
        assert_eq!((r.decode[0].start, r.decode[0].end), (10 * US, 33 * US));
        assert_eq!(r.decode[1].activities, second);
        assert_eq!(r.decode[2].source, StepSource::Annotation);
        assert_eq!(r.found.graph_launches, 2);
        assert_eq!(
            r.found.decode,
            SourceCounts {
                annotation: 1,
                graph_launch: 2,
                gap: 0
            }
        );
    }

    #[test]
    fn a_correlation_shared_by_two_graph_launches_makes_one_step() {
        // A runtime and a driver event with the same id: the first links, the second is ignored.
        let mut b = TraceBuilder::new(0);
        let c = b.launch(0, true);
        b.forward(c, 10 * US, 20 * US);
        let (mut trace, classes) = b.build();
        let mut twin = trace.launches[0].clone();
        twin.ts += US;
        trace.launches.push(twin);
        let (run, classes) = run_of(vec![(trace, classes)]);
        let r = &find_steps(&run, &classes, 0)[0];
        assert_eq!(r.decode.len(), 1);
        assert_eq!(r.found.graph_launches, 1);
    }

    #[test]
    fn gaps_of_five_ms_cut_steps_and_a_comm_only_burst_is_not_a_step() {
        let mut b = TraceBuilder::new(0);
        // Segment 1: [0, 2 ms) attention + GEMM; a long kernel on stream 1 runs to 4 ms.
        b.kernel("mla", ATTN, 0, MS, 0);
        b.kernel("nvjet", GEMM, MS, MS, 0);
        b.kernel("elementwise", Category::Elementwise, MS, 3 * MS, 1);
        // 4.999999 ms after the running max end (4 ms): no cut, same segment.
        b.kernel("nvjet", GEMM, 9 * MS - 1, MS, 0);
        // Exactly 5 ms after 10 ms - 1: cut. Segment 2: comm only (an RCCL set-up burst).
        b.kernel(
            "rcclGenericKernel",
            Category::Comm,
            15 * MS - 1,
            536 * MS,
            0,
        );
        // Segment 3 after a gap: attention + moe GEMM.
        let s3 = b.kernel("mla", ATTN, 600 * MS, MS, 0);
        b.kernel("fused_moe", Category::MoeGemm, 601 * MS, 2 * MS, 0);
        let (trace, classes) = b.build();
        let (run, classes) = run_of(vec![(trace, classes)]);
        let r = &find_steps(&run, &classes, 0)[0];
        assert!(r.decode.is_empty());
        assert_eq!(r.prefill.len(), 2);
        assert_eq!(r.prefill[0].activities, vec![0, 1, 2, 3]);
        assert_eq!((r.prefill[0].start, r.prefill[0].end), (0, 10 * MS - 1));
        assert_eq!(r.prefill[0].source, StepSource::Gap);
        assert_eq!(r.prefill[1].activities, vec![s3, s3 + 1]);
        assert_eq!(r.unassigned_ns, 536 * MS);
        assert_eq!(
            (r.found.gap_segments, r.found.gap_segments_rejected),
            (3, 1)
        );
    }

    #[test]
    fn warmup_then_outliers_outside_half_and_twice_the_median_are_dropped() {
        let mut b = TraceBuilder::new(0);
        // After 2 warm-up steps: 10,10,10,5,20,4,21,10 → median 10; 5 and 20 stay, 4 and 21 go.
        graph_steps(&mut b, &[50, 40, 10, 10, 10, 5, 20, 4, 21, 10]);
        let (trace, classes) = b.build();
        let (run, classes) = run_of(vec![(trace, classes)]);
        let r = &find_steps(&run, &classes, 2)[0];
        assert_eq!(
            (r.decode.len(), r.dropped_warmup, r.dropped_outliers),
            (6, 2, 2)
        );
        let kept: Vec<i64> = r.decode.iter().map(|s| s.wall() / MS).collect();
        assert_eq!(kept, vec![10, 10, 10, 5, 20, 10]);
        let dropped: Vec<(i64, DropReason)> = r
            .dropped
            .iter()
            .map(|d| (d.step.wall() / MS, d.reason))
            .collect();
        assert_eq!(
            dropped,
            vec![
                (50, DropReason::Warmup),
                (40, DropReason::Warmup),
                (4, DropReason::Outlier),
                (21, DropReason::Outlier)
            ]
        );
        // No more steps than warm-up steps: none is warm-up (that would leave nothing); the
        // outlier rule still applies.
        let r = &find_steps(&run, &classes, 20)[0];
        assert_eq!(
            (r.decode.len(), r.dropped_warmup, r.dropped_outliers),
            (6, 0, 4)
        );
    }

    #[test]
    fn odd_median_half_bounds_are_exact() {
        // Median 3 ns (odd count): 1 < 1.5 dropped, 2 kept, 6 kept, 7 dropped.
        let mut b = TraceBuilder::new(0);
        for (k, w) in [1i64, 2, 3, 3, 3, 6, 7].iter().enumerate() {
            let t = k as i64 * 100 * MS;
            let c = b.launch(t, true);
            b.forward(c, t + MS, *w);
        }
        let (trace, classes) = b.build();
        let (run, classes) = run_of(vec![(trace, classes)]);
        let r = &find_steps(&run, &classes, 0)[0];
        let kept: Vec<i64> = r.decode.iter().map(Step::wall).collect();
        assert_eq!(kept, vec![2, 3, 3, 3, 6]);
        assert_eq!(r.dropped_outliers, 2);
    }

    #[test]
    fn stage_split_files_force_the_label_and_combine_into_one_rank() {
        // -DECODE file: a gap segment becomes a decode step.
        let mut d = TraceBuilder::new(3).stage(Stage::Decode);
        d.kernel("mla", ATTN, 0, MS, 0);
        d.kernel("nvjet", GEMM, MS, MS, 0);
        // -EXTEND file of the same rank: a graph launch becomes a prefill step.
        let mut e = TraceBuilder::new(3).stage(Stage::Extend);
        let c = e.launch(50 * MS, true);
        let i = e.kernel("fmha", ATTN, 51 * MS, 3 * MS, 0);
        e.link(i, c);
        let g = e.kernel("nvjet", GEMM, 54 * MS, MS, 0);
        e.link(g, c);
        let (run, classes) = run_of(vec![d.build(), e.build()]);
        let ranks = find_steps(&run, &classes, 0);
        assert_eq!(ranks.len(), 1);
        let r = &ranks[0];
        assert_eq!(r.rank.index, 3);
        assert_eq!(r.traces, vec![0, 1]);
        assert_eq!(r.decode.len(), 1);
        assert_eq!(
            (r.decode[0].source, r.decode[0].trace),
            (StepSource::Gap, 0)
        );
        assert_eq!(r.prefill.len(), 1);
        assert_eq!(
            (r.prefill[0].source, r.prefill[0].trace),
            (StepSource::GraphLaunch, 1)
        );
        assert_eq!(r.found.decode.gap, 1);
        assert_eq!(r.found.prefill.graph_launch, 1);
    }

    #[test]
    fn odd_input_does_not_panic() {
        // Empty trace, a zero-duration single-kernel step, a kernel linked to no launch.
        let empty = TraceBuilder::new(0);
        let mut one = TraceBuilder::new(1);
        let c = one.launch(0, true);
        one.forward(c, 10, 0);
        one.kernel("k", GEMM, 20, 0, 0);
        let (mut run, classes) = run_of(vec![empty.build(), one.build()]);
        run.traces[1].gpu[2].set_correlation(Some(999));
        let ranks = find_steps(&run, &classes, 0);
        assert_eq!(ranks.len(), 2);
        assert!(ranks[0].decode.is_empty() && ranks[0].prefill.is_empty());
        assert_eq!(ranks[1].decode.len(), 1);
        assert_eq!(ranks[1].decode[0].wall(), 0);
        // Names beyond the classification are `other`: the graph launch holds no GEMM, no step.
        let mut unclassified = classes.clone();
        unclassified[1].clear();
        let ranks = find_steps(&run, &unclassified[..1], 0);
        assert!(ranks[1].decode.is_empty());
    }

    #[test]
    fn annotation_names_parse_mode_and_batch_size() {
        assert_eq!(
            parse_step_annotation("step[DECODE bs=64]"),
            Some((Some(StepKind::Decode), Some(64)))
        );
        assert_eq!(
            parse_step_annotation("step[EXTEND bs=15 toks=15360]"),
            Some((Some(StepKind::Prefill), Some(15)))
        );
        assert_eq!(
            parse_step_annotation("step[MIXED bs=3]"),
            Some((Some(StepKind::Prefill), Some(3)))
        );
        assert_eq!(
            parse_step_annotation("step[DRAFT_EXTEND]"),
            Some((Some(StepKind::Prefill), None))
        );
        assert_eq!(
            parse_step_annotation("step[TARGET_VERIFY bs=2]"),
            Some((None, Some(2)))
        );
        assert_eq!(parse_step_annotation("step[IDLE]"), Some((None, None)));
        assert_eq!(parse_step_annotation("forward"), None);
    }
}
