//! Cuts the activities no annotation or whole-forward graph claimed into forward passes.
//!
//! The cut adapts to the run. Inside a forward pass consecutive kernels are microseconds apart;
//! between forward passes the GPU waits for the host (scheduling, sampling, the next launches), one
//! to three orders of magnitude longer. The gap threshold is the largest jump in the sorted gaps
//! above a floor, confirmed by the per-layer kernel period (no forward may hold less than half the
//! usual attention calls: a cut inside a forward leaves fragments). On the CPU side a serving loop
//! waits once per forward for the sampled tokens (`cudaStreamSynchronize`, `hipDeviceSynchronize`...):
//! where those host syncs separate forward passes, they decide, since a launch-bound eager loop can
//! idle the GPU as long inside a forward as between two.

use std::collections::HashMap;

use serde::Serialize;

use crate::reader::model::RankTrace;
use crate::taxonomy::Class;

use super::{is_attention, is_forward_pass};

/// No gap below this is a cut between forward passes (kernel launch latency is a few µs).
pub(crate) const GAP_FLOOR_NS: i64 = 50_000;

/// A break in the gap distribution: the gap above it is at least this many times the one below.
pub(crate) const MIN_JUMP: f64 = 4.0;

/// Gaps below 1 µs count as 1 µs when comparing sizes (back-to-back kernels have gaps of 0).
const GAP_UNIT_NS: i64 = 1_000;

/// Breaks tried, largest first, before giving up on a confirmed one.
const MAX_BREAKS_TRIED: usize = 8;

/// How the free activities of a trace were cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CutMethod {
    /// No cut: nothing to cut, or no gap stands out.
    #[default]
    None,
    /// `--step-gap`.
    Given,
    /// The largest jump in the run's own gaps.
    GapDistribution,
    /// Host syncs between forward passes.
    HostSync,
}

/// How one trace's free activities were cut, and what the evidence said.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Segmentation {
    pub method: CutMethod,
    /// The gap threshold chosen or tried (`None` when no gap stands out above the floor), ns.
    pub threshold_ns: Option<i64>,
    /// The break the threshold sits in: the largest gap below it and the smallest above, ns.
    pub break_ns: Option<(i64, i64)>,
    /// Forward passes the gap threshold cuts.
    pub forwards_by_gap: u64,
    /// Forward passes cut by the threshold that hold less than half the usual attention calls.
    pub fragments_by_gap: u64,
    /// Host sync calls (`*Synchronize`) in the trace.
    pub host_syncs: u64,
    /// Forward passes the host syncs separate.
    pub forwards_by_host: u64,
    /// The per-layer period: the usual attention calls per forward under the chosen cut.
    pub attention_per_forward: Option<u64>,
    /// The usual number of activities per forward under the chosen cut.
    pub activities_per_forward: Option<u64>,
}

impl Segmentation {
    /// One line on how the steps were cut.
    pub fn describe(&self) -> String {
        let gap = match (self.threshold_ns, self.break_ns) {
            (Some(t), Some((lo, hi))) => format!(
                "gap threshold {} (between gaps of {} and {}), giving {}",
                duration(t),
                duration(lo),
                duration(hi),
                self.gap_forwards()
            ),
            (Some(t), None) => format!(
                "gap threshold {}, giving {}",
                duration(t),
                self.gap_forwards()
            ),
            (None, _) => format!(
                "no gap threshold (no gap above {} stands {}x above the one below)",
                duration(GAP_FLOOR_NS),
                MIN_JUMP
            ),
        };
        let host = match self.host_syncs {
            0 => "no host sync".to_string(),
            n => format!(
                "{n} host sync{} {} {} forward{}",
                plural(n),
                if n == 1 { "separates" } else { "separate" },
                self.forwards_by_host,
                plural(self.forwards_by_host)
            ),
        };
        let period = match (self.attention_per_forward, self.activities_per_forward) {
            (Some(a), Some(k)) => {
                format!("; period: {a} attention calls and {k} activities per forward")
            }
            _ => String::new(),
        };
        match self.method {
            CutMethod::HostSync => format!("cut at host syncs ({host}); the {gap}{period}"),
            CutMethod::Given => format!("cut at the given {gap}{period}"),
            CutMethod::GapDistribution => format!("cut at the {gap}; {host}{period}"),
            CutMethod::None => format!("not cut: {gap}; {host}{period}"),
        }
    }

    fn gap_forwards(&self) -> String {
        format!(
            "{} forward{} ({} fragment{})",
            self.forwards_by_gap,
            plural(self.forwards_by_gap),
            self.fragments_by_gap,
            plural(self.fragments_by_gap)
        )
    }

    /// The same way of cutting, whatever the exact threshold: for grouping ranks in reports.
    pub fn same_way(&self, other: &Segmentation) -> bool {
        (
            self.method,
            self.forwards_by_gap,
            self.fragments_by_gap,
            self.forwards_by_host,
        ) == (
            other.method,
            other.forwards_by_gap,
            other.fragments_by_gap,
            other.forwards_by_host,
        )
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `80 µs`, `1.25 ms`.
pub(crate) fn duration(ns: i64) -> String {
    crate::units::duration_ns(ns as f64)
}

/// Parses `--step-gap`: a positive duration with a unit (`ns`, `us` or `µs`, `ms`, `s`), in ns.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("'{text}': give a unit (ns, us, ms or s), e.g. 500us"))?;
    let (number, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => {
            return Err(format!(
                "'{text}': unknown unit '{other}' (ns, us, ms or s)"
            ))
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}': not a number"))?;
    let ns = value * scale;
    if !(1.0..=3.6e12).contains(&ns) {
        return Err(format!("'{text}': must lie between 1 ns and one hour"));
    }
    Ok(ns.round() as i64)
}

/// The pool cut into segments (each ascending by start), and how.
pub(crate) struct Cut {
    pub segments: Vec<Vec<u32>>,
    pub report: Segmentation,
}

/// Cuts `pool` (indices into `trace.gpu`) into segments. `given` is `--step-gap`; `known` holds
/// the first launch time of each step already found (annotations, graph launches): a loop that
/// syncs once per forward puts each in its own host interval, and so do the syncs count them.
pub(crate) fn cut_pool(
    trace: &RankTrace,
    mut pool: Vec<u32>,
    classes: &[Class],
    given: Option<i64>,
    known: &[i64],
) -> Cut {
    pool.sort_by_key(|&i| (trace.gpu[i as usize].ts, i));
    let mut report = Segmentation::default();
    if pool.is_empty() {
        return Cut {
            segments: Vec::new(),
            report,
        };
    }
    let gaps = gaps_of(trace, &pool);
    let by_gap = match given {
        Some(t) => Some((t, None, cut_at(&pool, &gaps, t))),
        None => best_break(trace, &pool, &gaps, classes),
    };
    let syncs = sync_ends(trace);
    report.host_syncs = syncs.len() as u64;
    let by_host = cut_by_host(trace, &pool, &syncs);
    report.forwards_by_host = host_forwards(trace, &by_host, classes, &syncs, known);
    let gap_segments = match by_gap {
        Some((t, brk, segments)) => {
            report.threshold_ns = Some(t);
            report.break_ns = brk;
            let (n, fragments) = period_check(trace, &segments, classes);
            report.forwards_by_gap = n;
            report.fragments_by_gap = fragments;
            Some(segments)
        }
        None => None,
    };
    let (method, segments) = if given.is_some() {
        (CutMethod::Given, gap_segments.unwrap_or_default())
    } else if report.forwards_by_host >= 2 {
        (CutMethod::HostSync, by_host)
    } else if let Some(segments) = gap_segments {
        (CutMethod::GapDistribution, segments)
    } else {
        (CutMethod::None, vec![pool])
    };
    report.method = method;
    let (attention, activities) = usual_forward(trace, &segments, classes);
    report.attention_per_forward = attention;
    report.activities_per_forward = activities;
    Cut { segments, report }
}

/// `gaps[k]`: idle time between the running maximum end of `pool[..=k]` and the start of `pool[k+1]`.
fn gaps_of(trace: &RankTrace, pool: &[u32]) -> Vec<i64> {
    let mut max_end = i64::MIN;
    let mut gaps = Vec::with_capacity(pool.len().saturating_sub(1));
    for &i in pool {
        let a = &trace.gpu[i as usize];
        if max_end != i64::MIN {
            gaps.push(a.ts.saturating_sub(max_end));
        }
        max_end = max_end.max(a.end());
    }
    gaps
}

/// Segments of `pool` cut wherever the gap before an activity is at least `threshold`.
fn cut_at(pool: &[u32], gaps: &[i64], threshold: i64) -> Vec<Vec<u32>> {
    let mut segments = Vec::new();
    let mut current = vec![pool[0]];
    for (k, &i) in pool.iter().enumerate().skip(1) {
        if gaps[k - 1] >= threshold {
            segments.push(std::mem::take(&mut current));
        }
        current.push(i);
    }
    segments.push(current);
    segments
}

/// A break in the sorted gaps: the gap below, the gap above, their ratio.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Break {
    pub below: i64,
    pub above: i64,
    pub ratio: f64,
}

impl Break {
    /// The geometric middle of the break, at least the floor.
    pub(crate) fn threshold(&self) -> i64 {
        let middle = ((self.below.max(GAP_UNIT_NS) as f64) * self.above as f64).sqrt();
        (middle.ceil() as i64).clamp(GAP_FLOOR_NS, self.above)
    }
}

/// Breaks of at least [`MIN_JUMP`] whose upper gap is at least the floor, largest ratio first
/// (ties: the lower threshold first).
pub(crate) fn breaks(gaps: &[i64]) -> Vec<Break> {
    let mut sorted: Vec<i64> = gaps.iter().map(|&g| g.max(0)).collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut found: Vec<Break> = sorted
        .windows(2)
        .filter(|w| w[1] >= GAP_FLOOR_NS)
        .map(|w| Break {
            below: w[0],
            above: w[1],
            ratio: w[1] as f64 / w[0].max(GAP_UNIT_NS) as f64,
        })
        .filter(|b| b.ratio >= MIN_JUMP)
        .collect();
    found.sort_by(|a, b| b.ratio.total_cmp(&a.ratio).then(a.above.cmp(&b.above)));
    found
}

/// A gap threshold, the break it sits in, and the segments it cuts.
type GapCut = (i64, Option<(i64, i64)>, Vec<Vec<u32>>);

/// The largest break whose cut leaves no fragment of a forward; else the largest break.
fn best_break(trace: &RankTrace, pool: &[u32], gaps: &[i64], classes: &[Class]) -> Option<GapCut> {
    let candidates = breaks(gaps);
    let mut first = None;
    for b in candidates.iter().take(MAX_BREAKS_TRIED) {
        let t = b.threshold();
        let segments = cut_at(pool, gaps, t);
        let (n, fragments) = period_check(trace, &segments, classes);
        if n > 0 && fragments == 0 {
            return Some((t, Some((b.below, b.above)), segments));
        }
        first.get_or_insert((t, Some((b.below, b.above)), segments));
    }
    first
}

/// Non-helper attention calls of a segment.
fn attention_calls(trace: &RankTrace, segment: &[u32], classes: &[Class]) -> u64 {
    segment
        .iter()
        .filter(|&&i| is_attention(&trace.gpu[i as usize], classes))
        .count() as u64
}

/// The most common value (ties: the larger).
fn mode(values: &mut [u64]) -> Option<u64> {
    values.sort_unstable();
    let mut best: Option<(usize, u64)> = None;
    for run in values.chunk_by(|a, b| a == b) {
        if best.is_none_or(|(n, _)| run.len() >= n) {
            best = Some((run.len(), run[0]));
        }
    }
    best.map(|(_, v)| v)
}

/// Forward segments and, of those, fragments: fewer than half the usual attention calls. Every
/// forward runs every layer, so its attention calls are the per-layer period times the layers.
fn period_check(trace: &RankTrace, segments: &[Vec<u32>], classes: &[Class]) -> (u64, u64) {
    let mut counts: Vec<u64> = segments
        .iter()
        .filter(|s| is_forward_pass(trace, s, classes))
        .map(|s| attention_calls(trace, s, classes))
        .collect();
    let n = counts.len() as u64;
    let fragments = match mode(&mut counts.clone()) {
        Some(usual) => counts.iter_mut().filter(|c| **c * 2 < usual).count() as u64,
        None => 0,
    };
    (n, fragments)
}

/// The usual attention calls and activities per forward segment.
fn usual_forward(
    trace: &RankTrace,
    segments: &[Vec<u32>],
    classes: &[Class],
) -> (Option<u64>, Option<u64>) {
    let fwd: Vec<&Vec<u32>> = segments
        .iter()
        .filter(|s| is_forward_pass(trace, s, classes))
        .collect();
    let mut attention: Vec<u64> = fwd
        .iter()
        .map(|s| attention_calls(trace, s, classes))
        .collect();
    let mut sizes: Vec<u64> = fwd.iter().map(|s| s.len() as u64).collect();
    (mode(&mut attention), mode(&mut sizes))
}

/// Host intervals (between two syncs) that hold a forward: a forward segment of the pool or a step
/// already found. Zero without syncs.
fn host_forwards(
    trace: &RankTrace,
    segments: &[Vec<u32>],
    classes: &[Class],
    syncs: &[i64],
    known: &[i64],
) -> u64 {
    if syncs.is_empty() {
        return 0;
    }
    let launch_ts = launch_times(trace);
    let mut intervals: Vec<usize> = segments
        .iter()
        .filter(|s| is_forward_pass(trace, s, classes))
        .filter_map(|s| {
            s.iter().find_map(|&i| {
                let c = trace.gpu[i as usize].correlation()?;
                launch_ts
                    .get(&c)
                    .map(|&ts| syncs.partition_point(|&e| e <= ts))
            })
        })
        .chain(known.iter().map(|&ts| syncs.partition_point(|&e| e <= ts)))
        .collect();
    intervals.sort_unstable();
    intervals.dedup();
    intervals.len() as u64
}

/// Launch time per correlation (the first launch of a correlation).
fn launch_times(trace: &RankTrace) -> HashMap<u64, i64> {
    trace
        .launches
        .iter()
        .rev()
        .map(|l| (l.correlation, l.ts))
        .collect()
}

/// Ends of the host sync calls, sorted.
fn sync_ends(trace: &RankTrace) -> Vec<i64> {
    let mut ends: Vec<i64> = trace
        .launches
        .iter()
        .filter(|l| trace.name(l.name).contains("Synchronize"))
        .map(|l| l.ts.saturating_add(l.dur.max(0)))
        .collect();
    ends.sort_unstable();
    ends
}

/// Segments of the pool (in start order) by the host sync that precedes each activity's launch.
/// An activity without a launch stays with the activity before it.
fn cut_by_host(trace: &RankTrace, pool: &[u32], syncs: &[i64]) -> Vec<Vec<u32>> {
    if syncs.is_empty() {
        return vec![pool.to_vec()];
    }
    let launch_ts = launch_times(trace);
    let mut by_interval: std::collections::BTreeMap<usize, Vec<u32>> = Default::default();
    let mut last = 0usize;
    for &i in pool {
        let launched = trace.gpu[i as usize]
            .correlation()
            .and_then(|c| launch_ts.get(&c));
        if let Some(&ts) = launched {
            last = syncs.partition_point(|&s| s <= ts);
        }
        by_interval.entry(last).or_default().push(i);
    }
    by_interval.into_values().collect()
}
