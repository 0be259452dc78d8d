//! Ranks wait for each other (`docs/METRICS.md`, "Waiting in collectives").
//!
//! In tensor parallelism every rank blocks in a collective until the last rank arrives: the k-th
//! collective of a step starts on each rank when that rank gets there and ends on all of them at
//! about the same moment. A rank's collective kernel is therefore its *wait* for the last rank
//! plus the *transfer*, and the rank that spends longest in a collective is the one that arrived
//! first. This module matches the k-th collective of each decode step across ranks and splits
//! every call into wait and transfer:
//!
//! - steps are matched by their order among each rank's decode steps (kept or dropped); a step
//!   counts only when every rank kept it;
//! - collectives are the step's `comm` kernels other than point-to-point send/recv, in start
//!   order; matched by process group and sequence number where every call has them (PyTorch ≥
//!   2.12), else ranks must have launched the same sequence of kernel names; a step that does
//!   not match is left out and the warning says how many were;
//! - each rank's clock offset is the median, over the calls of the first matched steps, of its
//!   call ends minus the first rank's (ends are aligned by the collective): ranks of one host
//!   share the clock and get an offset of about nothing (the jitter of the ends), ranks on other
//!   hosts get theirs corrected before arrivals are compared;
//! - per call: wait = last arrival − arrival, clamped to `[0, duration]`; transfer = duration −
//!   wait; the rank(s) whose arrival is the last "arrived last".

use crate::reader::model::Run;
use crate::steps::{category_of, RankSteps, Step};
use crate::taxonomy::{Category, Class, Collective};

use crate::stats::median;

/// Matched steps used to estimate the clock offsets (enough for a median, bounded for huge runs).
const OFFSET_STEPS: usize = 32;

/// One rank's figures in one matched step, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RankWait {
    /// Kernel time of activities that are neither comm nor memcpy/memset.
    pub compute_ns: i64,
    /// Kernel time of `comm` activities.
    pub comm_ns: i64,
    /// Summed over the step's collectives.
    pub wait_ns: i64,
    pub transfer_ns: i64,
    pub collectives: u32,
    /// Collectives this rank arrived at last.
    pub last_arrivals: u32,
}

/// The collectives of a run matched across ranks.
#[derive(Debug, Clone, Default)]
pub struct Waits {
    /// Per matched step, one entry per rank in `rank_steps` order.
    pub steps: Vec<Vec<RankWait>>,
    /// Per rank (same order): estimated clock offset against the first rank, ns.
    pub clock_offsets_ns: Vec<i64>,
    /// Transfer time of every allreduce-class call of the matched steps, all ranks, ns.
    pub allreduce_transfer_ns: Vec<i64>,
    /// Steps every rank kept but whose collective sequences differ between ranks.
    pub mismatched_steps: usize,
    /// Why waits could not be measured at all, or what was left out.
    pub warnings: Vec<String>,
}

impl Waits {
    /// Rank `i`'s (in `rank_steps` order) values of `f` over the matched steps, ms.
    pub fn series(&self, i: usize, f: impl Fn(&RankWait) -> i64) -> Vec<f64> {
        self.steps.iter().map(|s| f(&s[i]) as f64 / 1e6).collect()
    }

    /// Per rank: median wait per step, ms.
    pub fn median_wait_ms(&self) -> Vec<f64> {
        let ranks = self.steps.first().map_or(0, Vec::len);
        (0..ranks)
            .map(|i| median(&mut self.series(i, |w| w.wait_ns)).unwrap_or(0.0))
            .collect()
    }

    /// `rank_skew_ms`: the ranks (indices) that wait most and least by their median wait (ties
    /// to the lower index), and per matched step the first's wait minus the second's, ms.
    pub fn skew(&self) -> Option<(usize, usize, Vec<f64>)> {
        let medians = self.median_wait_ms();
        if medians.is_empty() {
            return None;
        }
        let most = (0..medians.len()).fold(0, |a, i| if medians[i] > medians[a] { i } else { a });
        let least = (0..medians.len()).fold(0, |a, i| if medians[i] < medians[a] { i } else { a });
        let samples = self
            .steps
            .iter()
            .map(|s| (s[most].wait_ns - s[least].wait_ns) as f64 / 1e6)
            .collect();
        Some((most, least, samples))
    }
}

/// A collective call of one rank: name, start, duration, allreduce-class, and its process group
/// and sequence number where the trace has them.
#[derive(Debug, Clone, Copy)]
struct Call<'a> {
    name: &'a str,
    ts: i64,
    dur: i64,
    allreduce: bool,
    key: Option<(&'a str, u64)>,
}

/// The collectives of a step in start order, and its compute and comm kernel time.
fn step_calls<'a>(run: &'a Run, classes: &[Vec<Class>], step: &Step) -> (Vec<Call<'a>>, i64, i64) {
    let Some(trace) = run.traces.get(step.trace) else {
        return (Vec::new(), 0, 0);
    };
    let cls = classes.get(step.trace).map_or(&[][..], |c| c.as_slice());
    let (mut calls, mut compute, mut comm) = (Vec::new(), 0, 0);
    for &i in &step.activities {
        let Some(a) = trace.gpu.get(i as usize) else {
            continue;
        };
        match category_of(a, cls) {
            Category::Comm => {
                comm += a.dur;
                let collective = cls.get(a.name as usize).and_then(|c| c.collective);
                if collective != Some(Collective::SendRecv) {
                    calls.push(Call {
                        name: trace.name(a.name),
                        ts: a.ts,
                        dur: a.dur,
                        allreduce: collective == Some(Collective::Allreduce),
                        key: trace.collective_key(a),
                    });
                }
            }
            Category::Memcpy => {}
            _ => compute += a.dur,
        }
    }
    calls.sort_by_key(|c| c.ts);
    (calls, compute, comm)
}

/// Whether every rank made the same calls, putting them in the first rank's order: by process
/// group and sequence number where every call of every rank has them (the same call whatever
/// its kernel's name and its place among the others), else by kernel name in start order.
fn same_calls(per_rank: &mut [(Vec<Call<'_>>, i64, i64)]) -> bool {
    let Some(((first, _, _), rest)) = per_rank.split_first_mut() else {
        return true;
    };
    if rest.iter().any(|(calls, _, _)| calls.len() != first.len()) {
        return false;
    }
    let keyed = std::iter::once(&*first)
        .chain(rest.iter().map(|(calls, _, _)| calls))
        .all(|calls| calls.iter().all(|c| c.key.is_some()));
    if !keyed {
        return rest.iter().all(|(calls, _, _)| {
            calls
                .iter()
                .zip(first.iter())
                .all(|(a, b)| a.name == b.name)
        });
    }
    for (calls, _, _) in rest {
        let mut by_key: std::collections::HashMap<_, Call<'_>> =
            calls.iter().map(|c| (c.key, *c)).collect();
        let aligned: Option<Vec<Call<'_>>> = first.iter().map(|f| by_key.remove(&f.key)).collect();
        match aligned {
            Some(aligned) if by_key.is_empty() => *calls = aligned,
            _ => return false,
        }
    }
    true
}

/// Each rank's decode steps (kept and dropped) in start order, with whether it was kept.
fn ordered_steps(rs: &RankSteps) -> Vec<(&Step, bool)> {
    let mut v: Vec<(&Step, bool)> = rs
        .decode
        .iter()
        .map(|s| (s, true))
        .chain(rs.dropped.iter().map(|d| (&d.step, false)))
        .collect();
    v.sort_by_key(|(s, _)| s.start);
    v
}

/// Matches the collectives of the decode steps across ranks and splits each call into wait and
/// transfer. `None` when there is no decode step kept on every rank with the same collectives.
pub(crate) fn match_collectives(
    run: &Run,
    classes: &[Vec<Class>],
    rank_steps: &[RankSteps],
) -> Option<Waits> {
    let ordered: Vec<Vec<(&Step, bool)>> = rank_steps.iter().map(ordered_steps).collect();
    let counts: Vec<usize> = ordered.iter().map(Vec::len).collect();
    let mut waits = Waits::default();
    if counts.iter().any(|&n| n != counts[0]) {
        // Extraction refuses such a run; a report still says why there is no wait figure.
        waits.warnings.push(
            "ranks found different numbers of decode steps: collectives were not matched".into(),
        );
        return Some(waits);
    }
    let n_ranks = rank_steps.len();
    // The calls of step j on every rank, when every rank kept it and launched the same sequence
    // of collectives (Err(()) when the sequences differ). Steps are read twice at most (the first
    // for the clock offsets), so that a huge run is never held in memory.
    type Calls<'a> = Vec<(Vec<Call<'a>>, i64, i64)>;
    let calls_of = |j: usize| -> Option<Result<Calls<'_>, ()>> {
        if !ordered.iter().all(|o| o[j].1) {
            return None;
        }
        let mut per_rank: Calls<'_> = ordered
            .iter()
            .map(|o| step_calls(run, classes, o[j].0))
            .collect();
        Some(if same_calls(&mut per_rank) {
            Ok(per_rank)
        } else {
            Err(())
        })
    };
    let n_steps = counts.first().copied().unwrap_or(0);

    // Clock offsets: the ends of one collective are aligned, so each rank's median end
    // difference against the first rank is its clock offset.
    let mut diffs: Vec<Vec<f64>> = vec![Vec::new(); n_ranks];
    let mut used = 0;
    for j in 0..n_steps {
        if used == OFFSET_STEPS {
            break;
        }
        let Some(Ok(per_rank)) = calls_of(j) else {
            continue;
        };
        used += 1;
        for (r, d) in diffs.iter_mut().enumerate() {
            d.extend(
                per_rank[r]
                    .0
                    .iter()
                    .zip(&per_rank[0].0)
                    .map(|(a, b)| ((a.ts + a.dur) - (b.ts + b.dur)) as f64),
            );
        }
    }
    waits.clock_offsets_ns = diffs
        .iter_mut()
        .map(|d| median(d).unwrap_or(0.0).round() as i64)
        .collect();

    let mut arrival = vec![0i64; n_ranks];
    for j in 0..n_steps {
        let per_rank = match calls_of(j) {
            None => continue,
            Some(Err(())) => {
                waits.mismatched_steps += 1;
                continue;
            }
            Some(Ok(p)) if p[0].0.is_empty() => continue,
            Some(Ok(p)) => p,
        };
        let mut row: Vec<RankWait> = per_rank
            .iter()
            .map(|(calls, compute, comm)| RankWait {
                compute_ns: *compute,
                comm_ns: *comm,
                collectives: calls.len() as u32,
                ..RankWait::default()
            })
            .collect();
        for k in 0..per_rank[0].0.len() {
            for r in 0..n_ranks {
                arrival[r] = per_rank[r].0[k].ts - waits.clock_offsets_ns[r];
            }
            let last = arrival.iter().copied().max().unwrap_or(0);
            for r in 0..n_ranks {
                let call = per_rank[r].0[k];
                let wait = (last - arrival[r]).clamp(0, call.dur.max(0));
                row[r].wait_ns += wait;
                row[r].transfer_ns += call.dur - wait;
                row[r].last_arrivals += u32::from(arrival[r] == last);
                if call.allreduce {
                    waits.allreduce_transfer_ns.push(call.dur - wait);
                }
            }
        }
        waits.steps.push(row);
    }
    if waits.mismatched_steps > 0 {
        waits.warnings.push(format!(
            "{} of {} decode steps kept on every rank: the ranks launched different collective \
             sequences; wait and transfer are measured on the other steps",
            waits.mismatched_steps,
            waits.mismatched_steps + waits.steps.len()
        ));
    }
    Some(waits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::find_steps;
    use crate::taxonomy::Category;
    use crate::testing::{run_of, TraceBuilder, MS, US};

    /// Three ranks, six graph-launched steps of compute then two allreduces that end together
    /// (last arrival + 10 µs). Rank 2's compute is 30 µs longer before each allreduce: it arrives
    /// last and the others wait 30 µs in each call. Rank 1's clock is `shift` ahead. In step
    /// `odd_step`, rank 0 launches a third allreduce.
    fn run(shift: i64, odd_step: Option<i64>) -> Waits {
        let traces = (0..3)
            .map(|rank| {
                let mut b = TraceBuilder::new(rank);
                let clock = if rank == 1 { shift } else { 0 };
                let slow = if rank == 2 { 30 * US } else { 0 };
                for step in 0..6 {
                    let t0 = step * 10 * MS + clock;
                    let c = b.launch(t0 - 50 * US, true);
                    let mut t = t0;
                    for _ in 0..2 {
                        let i = b.kernel("mla_decode", Category::Attention, t, 100 * US + slow, 0);
                        b.link(i, c);
                        let i = b.kernel(
                            "nvjet",
                            Category::DenseGemm,
                            t + 100 * US + slow,
                            50 * US,
                            0,
                        );
                        b.link(i, c);
                        let arrive = t + 150 * US + slow;
                        let end = t + 150 * US + 30 * US + 10 * US;
                        let i = b.allreduce("cross_device_reduce", arrive, end - arrive, 0);
                        b.link(i, c);
                        t = end;
                    }
                    if odd_step == Some(step) && rank == 0 {
                        let i = b.allreduce("cross_device_reduce", t, 10 * US, 0);
                        b.link(i, c);
                    }
                }
                b.build()
            })
            .collect();
        let (run, classes) = run_of(traces);
        let steps = find_steps(&run, &classes, 2);
        match_collectives(&run, &classes, &steps).unwrap()
    }

    #[test]
    fn the_rank_that_arrives_last_makes_the_others_wait_and_transfer_is_what_is_left() {
        let w = run(0, None);
        assert_eq!(w.steps.len(), 4);
        assert_eq!(w.clock_offsets_ns, vec![0, 0, 0]);
        for row in &w.steps {
            assert_eq!(
                (row[0].wait_ns, row[1].wait_ns, row[2].wait_ns),
                (60 * US, 60 * US, 0)
            );
            assert!(row.iter().all(|r| r.transfer_ns == 20 * US));
            assert_eq!(
                (
                    row[0].last_arrivals,
                    row[2].last_arrivals,
                    row[2].collectives
                ),
                (0, 2, 2)
            );
            assert_eq!((row[0].compute_ns, row[2].compute_ns), (300 * US, 360 * US));
        }
        let (most, least, samples) = w.skew().unwrap();
        assert_eq!((most, least), (0, 2));
        assert_eq!(samples, vec![0.06; 4]);
        assert!(w.allreduce_transfer_ns.iter().all(|&t| t == 10 * US));
        assert!(w.warnings.is_empty());
    }

    #[test]
    fn a_rank_on_another_host_has_its_clock_offset_estimated_and_removed() {
        let w = run(7 * MS + 123, None);
        assert_eq!(w.clock_offsets_ns, vec![0, 7 * MS + 123, 0]);
        assert_eq!(w.steps, run(0, None).steps);
    }

    /// Two ranks, four steps of one compute kernel then two allreduces that end together; rank 1
    /// arrives 20 µs later, writes its calls under another kernel name (another algorithm) and
    /// starts its second call first, on another stream. With `keys`, every call carries its
    /// process group and sequence number.
    fn reordered_run(keys: bool) -> Waits {
        let traces = (0..2)
            .map(|rank| {
                let mut b = TraceBuilder::new(rank);
                for step in 0..4u64 {
                    let t0 = step as i64 * 10 * MS;
                    let c = b.launch(t0 - 50 * US, true);
                    let late = if rank == 1 { 20 * US } else { 0 };
                    b.forward(c, t0, 100 * US + late);
                    let (end, arrive, seq) = (t0 + 200 * US, t0 + 100 * US + late, 2 * step);
                    let (name, calls) = if rank == 1 {
                        let name = "ncclDevKernel_AllReduce_Sum_bf16_TREE_LL";
                        (name, [(seq + 2, arrive, 3), (seq + 1, arrive + 5 * US, 0)])
                    } else {
                        let name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL";
                        (name, [(seq + 1, arrive, 0), (seq + 2, arrive + 5 * US, 3)])
                    };
                    for (seq, at, stream) in calls {
                        let i = b.allreduce(name, at, end - at, stream);
                        b.link(i, c);
                        if keys {
                            b.collective_key(i, "0", seq);
                        }
                    }
                }
                b.build()
            })
            .collect();
        let (run, classes) = run_of(traces);
        let steps = find_steps(&run, &classes, 1);
        match_collectives(&run, &classes, &steps).unwrap()
    }

    #[test]
    fn collectives_with_a_group_and_sequence_number_match_by_them() {
        let w = reordered_run(true);
        assert_eq!((w.steps.len(), w.mismatched_steps), (3, 0));
        // Call 1: rank 0 at +100 µs, rank 1 at +125 µs; call 2: +105 and +120 µs.
        for row in &w.steps {
            assert_eq!((row[0].wait_ns, row[1].wait_ns), (40 * US, 0));
            assert_eq!((row[0].last_arrivals, row[1].last_arrivals), (0, 2));
        }
        // Without them, names in start order are all there is, and they differ.
        let w = reordered_run(false);
        assert_eq!((w.steps.len(), w.mismatched_steps), (0, 3));
    }

    #[test]
    fn a_step_whose_collective_sequences_differ_is_left_out_and_said() {
        let w = run(0, Some(3));
        assert_eq!((w.steps.len(), w.mismatched_steps), (3, 1));
        assert_eq!(
            w.warnings,
            vec![
                "1 of 4 decode steps kept on every rank: the ranks launched different collective \
                 sequences; wait and transfer are measured on the other steps"
                    .to_string()
            ]
        );
    }
}
