//! Speculative decoding (EAGLE/MTP): one decode iteration is the target model's verify and the
//! draft model's forwards around it, grouped here into one decode step.
//!
//! SGLang's loop (`eagle_worker.py`, `eagle_worker_v2.py`: `forward_batch_generation`) runs, per
//! iteration, the draft decode steps, the target verify (`step[TARGET_VERIFY ...]`), then the
//! draft extend over the accepted tokens (`step[DRAFT_EXTEND ...]`, `DRAFT_EXTEND_V2`); then the
//! host samples and schedules the next. A draft forward replayed from a CUDA graph carries no
//! annotation (the draft graph runners replay outside `ModelRunner.forward`): it is a graph launch
//! or a segmented forward, a decode forward like an annotated one. So, in a trace that holds verify
//! steps, every other decode forward is a draft forward, and the draft forwards between two
//! verifies are split where the host's gap is: those before it end the earlier iteration (its
//! draft extend), those after it begin the later one (its draft steps). An annotation that names
//! its part (`DRAFT_EXTEND` after, `draft step[DECODE ...]` before) bounds the split. The window's
//! edges follow the loop's own split: the draft forwards that end an iteration in the middle of
//! the window are as many at its edges; those of an iteration the window cuts (before its first
//! verify, after its last) are other-label time.

use crate::reader::model::RankTrace;

use super::{kernel_time, SpecRole, SpecSplit, Step, StepKind, TraceSteps};

/// A draft forward: its span and the part its annotation names.
type Draft = (Step, Option<SpecRole>);

/// Groups the decode forwards of `out` (a trace holding verify steps) into speculative iterations.
pub(super) fn group(trace: &RankTrace, out: &mut TraceSteps) {
    let steps = std::mem::take(&mut out.steps);
    let roles = std::mem::take(&mut out.roles);
    let mut verifies: Vec<Step> = Vec::new();
    let mut drafts: Vec<Draft> = Vec::new();
    for (step, role) in steps.into_iter().zip(roles) {
        match (step.kind, role) {
            (_, Some(SpecRole::Verify)) => verifies.push(step),
            (StepKind::Decode, role) => drafts.push((step, role)),
            _ => {
                out.steps.push(step);
                out.roles.push(role);
            }
        }
    }
    if verifies.is_empty() {
        for (step, role) in drafts {
            out.steps.push(step);
            out.roles.push(role);
        }
        return;
    }
    verifies.sort_by_key(|s| (s.start, s.end));
    drafts.sort_by_key(|(s, _)| (s.start, s.end));

    // The drafts before each verify (window i: after verify i-1 starts, before verify i starts).
    let mut windows: Vec<Vec<Draft>> = (0..=verifies.len()).map(|_| Vec::new()).collect();
    let mut i = 0;
    for d in drafts {
        while i < verifies.len() && verifies[i].start <= d.0.start {
            i += 1;
        }
        windows[i].push(d);
    }
    // Where each window splits: the drafts before the split end the earlier iteration.
    let n = verifies.len();
    let mut splits: Vec<Option<usize>> = vec![None; n + 1];
    for k in 1..n {
        splits[k] = Some(split_at_gap(
            &windows[k],
            verifies[k - 1].end,
            verifies[k].start,
        ));
    }
    // The edges of the window: as many draft forwards end an iteration (and begin one) as in
    // the middle of it.
    let interior: Vec<(usize, usize)> = (1..n)
        .filter_map(|k| splits[k].map(|s| (s, windows[k].len() - s)))
        .collect();
    let first = &windows[0];
    splits[0] = Some(match mode(interior.iter().map(|p| p.1)) {
        Some(before) => bounded(first, first.len().saturating_sub(before)),
        None => bounded(first, 0),
    });
    let last = &windows[n];
    splits[n] = Some(match mode(interior.iter().map(|p| p.0)) {
        Some(after) => bounded(last, after),
        None => bounded(last, named_extends(last)),
    });

    let mut members: Vec<Vec<Step>> = (0..n).map(|_| Vec::new()).collect();
    for (k, (window, split)) in windows.into_iter().zip(splits).enumerate() {
        let split = split.unwrap_or(0);
        for (j, (step, _)) in window.into_iter().enumerate() {
            let owner = if j < split { k.checked_sub(1) } else { Some(k) };
            match owner.filter(|&o| o < n) {
                Some(o) => members[o].push(step),
                None => {
                    out.found.spec_orphans += 1;
                    out.other_label_ns += kernel_time(trace, &step.activities);
                    out.other_labels.push((step.start, step.end));
                }
            }
        }
    }
    for (verify, drafts) in verifies.into_iter().zip(members) {
        out.found.spec_iterations += 1;
        out.found.spec_drafts += drafts.len() as u64;
        out.steps.push(merge(trace, verify, drafts));
        out.roles.push(Some(SpecRole::Verify));
    }
}

/// Whether splitting `window` before its `s`-th draft keeps every named part on its side.
fn allowed(window: &[Draft], s: usize) -> bool {
    window[..s].iter().all(|d| d.1 != Some(SpecRole::Draft))
        && window[s..]
            .iter()
            .all(|d| d.1 != Some(SpecRole::DraftExtend))
}

/// The split of a window between two verifies at its largest gap (among the splits that keep
/// named parts on their side, if any does).
fn split_at_gap(window: &[Draft], prev_end: i64, next_start: i64) -> usize {
    let gap = |s: usize| -> i64 {
        let left = if s == 0 {
            prev_end
        } else {
            window[s - 1].0.end
        };
        let right = window.get(s).map_or(next_start, |d| d.0.start);
        right - left
    };
    let candidates: Vec<usize> = (0..=window.len()).collect();
    let allowed_ones: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&s| allowed(window, s))
        .collect();
    let pool = if allowed_ones.is_empty() {
        &candidates
    } else {
        &allowed_ones
    };
    // Ties: the earlier split (an extend is rarely longer apart than the next draft).
    pool.iter()
        .copied()
        .max_by_key(|&s| (gap(s), std::cmp::Reverse(s)))
        .unwrap_or(0)
}

/// The most common value (ties: the smaller); `None` without any.
fn mode(values: impl Iterator<Item = usize>) -> Option<usize> {
    let mut v: Vec<usize> = values.collect();
    v.sort_unstable();
    let mut best: Option<(usize, usize)> = None;
    for run in v.chunk_by(|a, b| a == b) {
        if best.is_none_or(|(n, _)| run.len() > n) {
            best = Some((run.len(), run[0]));
        }
    }
    best.map(|(_, value)| value)
}

/// The named draft extends that open a window.
fn named_extends(window: &[Draft]) -> usize {
    window
        .iter()
        .take_while(|d| d.1 == Some(SpecRole::DraftExtend))
        .count()
}

/// The split `s` clamped to the window and moved to keep named parts on their side.
fn bounded(window: &[Draft], s: usize) -> usize {
    let mut s = s.min(window.len());
    if let Some(last_extend) = window
        .iter()
        .rposition(|d| d.1 == Some(SpecRole::DraftExtend))
    {
        s = s.max(last_extend + 1);
    }
    if let Some(first_draft) = window.iter().position(|d| d.1 == Some(SpecRole::Draft)) {
        s = s.min(first_draft);
    }
    s
}

/// Length of the union of the spans.
fn union_len(mut spans: Vec<(i64, i64)>) -> i64 {
    spans.sort_unstable();
    let (mut total, mut reach) = (0, i64::MIN);
    for (s, e) in spans {
        let s = s.max(reach);
        if e > s {
            total += e - s;
            reach = e;
        }
    }
    total
}

/// One decode step of the verify and its draft forwards.
fn merge(trace: &RankTrace, verify: Step, drafts: Vec<Step>) -> Step {
    let draft_spans: Vec<(i64, i64)> = drafts.iter().map(|d| (d.start, d.end)).collect();
    let mut all_spans = draft_spans.clone();
    all_spans.push((verify.start, verify.end));
    let split = SpecSplit {
        drafts: drafts.len() as u32,
        draft_kernel_ns: drafts
            .iter()
            .map(|d| kernel_time(trace, &d.activities))
            .sum(),
        verify_kernel_ns: kernel_time(trace, &verify.activities),
        draft_ns: union_len(draft_spans),
        verify_ns: verify.end - verify.start,
        forward_ns: union_len(all_spans),
    };
    let mut activities = verify.activities;
    let (mut start, mut end) = (verify.start, verify.end);
    for d in drafts {
        start = start.min(d.start);
        end = end.max(d.end);
        activities.extend(d.activities);
    }
    activities.sort_unstable();
    activities.dedup();
    Step {
        kind: StepKind::Decode,
        activities,
        start,
        end,
        spec: Some(split),
        ..verify
    }
}
