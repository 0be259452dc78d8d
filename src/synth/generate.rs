//! Builds the timeline of each rank (integer ns) and writes it as a Kineto trace, step by step.

use std::fmt::Write as _;

use rayon::prelude::*;
use std::path::{Path, PathBuf};

use super::rng::Rng;
use super::scenario::{Dep, Op, Scenario, Spec, Vendor};
use super::truth::{self, Activity, NameInfo, SpecParts, StepKind, StepSummary};
use super::write::{json_str, Append, Out, Us};
use super::{InjectionKind, SynthError, SynthOptions};

mod eager;

const MS: u64 = 1_000_000;
const US: u64 = 1_000;
/// Idle time between phases (prefill, set-up burst, decode).
const PHASE_GAP: u64 = 30 * MS;
pub(crate) const WARMUP: u32 = 2;
/// Sequences per decode batch of an eager loop.
pub(crate) const EAGER_BATCH: u32 = eager::BATCH;

/// A kernel placed on the timeline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placed {
    ts: u64,
    dur: u64,
    spec: usize,
    aux: bool,
    /// For a collective: how long this rank waited in it for the last rank to arrive.
    wait: u64,
}

/// Everything shared by the ranks of one run.
pub(crate) struct Plan {
    pub sc: Scenario,
    /// Effective specs: protocol rename applied, plus the prefill memcpy.
    specs: Vec<Spec>,
    name_json: Vec<String>,
    /// The args of an NVIDIA kernel launch after its correlation, a function of the spec alone:
    /// written once, since formatting its floats was a tenth of the generator's time.
    kernel_args_tail: Vec<String>,
    name_id: Vec<u32>,
    pub names: Vec<NameInfo>,
    /// Injection factor per spec (not the straggler's), between-run jitter included.
    inj: Vec<f64>,
    /// The run's between-run factors (`--run-jitter`), already in `inj`.
    pub run_jitter: Option<super::jitter::RunJitter>,
    pub ranks: u32,
    decode_ops: Vec<Op>,
    prefill_ops: Vec<Op>,
    prefill_big: Option<(usize, u64)>,
    pub n_decode: u32,
    seed: u64,
    pyfn: u32,
    pub straggler: Option<(u32, f64)>,
    /// Decode steps (counting warm-up) injected to stall, slow down or be relabelled, each with
    /// the factor on its wall.
    slowed: Vec<(u32, f64)>,
    /// Decode steps (counting warm-up) annotated with another label than `DECODE`.
    relabelled: Vec<(u32, super::Relabel)>,
    /// Added GPU-idle time after every decode forward (`host-gap=MS`), ns.
    host_gap_ns: u64,
    /// The batch the decode annotations say (`batch=N`; 64 otherwise).
    pub batch: u32,
    /// Speculative decoding: where the parts of an iteration start among `decode_ops`.
    mtp: Option<MtpOps>,
    single_stream: bool,
    pub stamp: String,
    pub(crate) ts0: u64,
    base_time_ns: u64,
    /// `--with-stack`: frames, ops and captures for the code view.
    pub(crate) stack: Option<super::stack::Stack>,
}

/// The parts of a speculative iteration among the decode ops: the draft forwards from 0, the
/// verify from `verify_at`, the draft extend from `extend_at`; and the fixed idle gaps before the
/// verify and before the extend, ns.
#[derive(Debug, Clone, Copy)]
struct MtpOps {
    verify_at: usize,
    extend_at: usize,
    draft_gap: u64,
    extend_gap: u64,
    /// `draft=F`: the factor on the draft model's kernels.
    draft_factor: f64,
}

impl MtpOps {
    /// The factor on op `i` of the iteration (a draft forward's, or 1 for the verify's).
    fn factor(&self, i: usize) -> f64 {
        if i < self.verify_at || i >= self.extend_at {
            self.draft_factor
        } else {
            1.0
        }
    }
}

/// The ops of a decode iteration with speculative decoding: the draft model's forwards (one MoE
/// layer and the head each), the target's forward (the verify), one more draft forward (the
/// extend).
fn spec_ops(sc: &Scenario, target: &[Op], draft_factor: f64) -> (Vec<Op>, Option<MtpOps>) {
    let Some(m) = sc.mtp else {
        return (target.to_vec(), None);
    };
    let draft: Vec<Op> = sc.moe_layer.iter().chain(&sc.epilogue).copied().collect();
    let mut ops = Vec::new();
    for _ in 0..m.draft_forwards {
        ops.extend_from_slice(&draft);
    }
    let verify_at = ops.len();
    ops.extend_from_slice(target);
    let extend_at = ops.len();
    ops.extend_from_slice(&draft);
    let parts = MtpOps {
        verify_at,
        extend_at,
        draft_gap: m.draft_gap_ns,
        extend_gap: m.extend_gap_ns,
        draft_factor,
    };
    (ops, Some(parts))
}

fn build_ops(sc: &Scenario) -> Vec<Op> {
    let mut ops = sc.prologue.clone();
    for _ in 0..sc.n_dense {
        ops.extend_from_slice(&sc.dense_layer);
    }
    for _ in 0..sc.n_moe {
        ops.extend_from_slice(&sc.moe_layer);
    }
    ops.extend_from_slice(&sc.epilogue);
    if let Some((from, to)) = sc.replace_last {
        if let Some(op) = ops.iter_mut().rev().find(|o| o.spec == from) {
            op.spec = to;
        }
    }
    ops
}

/// N of the `steady` decode steps, spread evenly (the middle of each N-th), counting warm-up.
fn spread(n: u32, steady: u32) -> impl Iterator<Item = u32> {
    let n = n.min(steady);
    (0..n).map(move |i| WARMUP + ((2 * i + 1) as u64 * steady as u64 / (2 * n as u64)) as u32)
}

/// `stall=N:F`, `slow=N:F` and `relabel=KIND:FRACTION:F`: the steps each slows, with its factor
/// (a step named twice takes the later factor).
fn slowed_steps(opts: &SynthOptions, steady: u32) -> Vec<(u32, f64)> {
    let mut out = Vec::new();
    for inj in &opts.injections {
        let n = match (inj.kind, inj.relabel) {
            (InjectionKind::Stall | InjectionKind::Slow, _) => inj.count.unwrap_or(1),
            (InjectionKind::Relabel, Some((_, fraction))) => relabelled_count(fraction, steady),
            _ => continue,
        };
        out.retain(|(s, _)| !spread(n, steady).any(|t| t == *s));
        out.extend(spread(n, steady).map(|s| (s, inj.factor)));
    }
    out
}

/// How many of `steady` steps a fraction relabels: at least one.
fn relabelled_count(fraction: f64, steady: u32) -> u32 {
    ((fraction * f64::from(steady)).round() as u32).clamp(1, steady.max(1))
}

/// `relabel=KIND:FRACTION[:F]`: the steps it relabels and their label.
fn relabelled_steps(opts: &SynthOptions, steady: u32) -> Vec<(u32, super::Relabel)> {
    opts.injections
        .iter()
        .filter_map(|i| i.relabel)
        .flat_map(|(label, fraction)| {
            spread(relabelled_count(fraction, steady), steady).map(move |s| (s, label))
        })
        .collect()
}

impl Plan {
    pub(crate) fn new(sc: Scenario, opts: &SynthOptions) -> Self {
        let ranks = opts.ranks.unwrap_or(sc.ranks).max(1);
        let mut specs = sc.specs.clone();
        let memcpy = specs.len();
        specs.push(Spec {
            name: "Memcpy HtoD (Pinned -> Device)",
            cat: "memcpy",
            collective: None,
            dur_ns: 6 * US,
            aux: false,
            op: "aten::copy_",
            kn: (0, 0),
            memcpy: true,
        });
        let factor = |k: InjectionKind| -> f64 {
            opts.injections
                .iter()
                .filter(|i| i.kind == k)
                .map(|i| i.factor)
                .product()
        };
        let protocol_on = opts
            .injections
            .iter()
            .any(|i| i.kind == InjectionKind::Protocol);
        let protocol_name = specs[sc.protocol.0].name;
        let mut inj = vec![1.0; specs.len()];
        for (i, s) in specs.iter_mut().enumerate() {
            if s.is_allreduce() {
                inj[i] *= factor(InjectionKind::Allreduce);
            }
            if s.cat == "moe_gemm" {
                inj[i] *= factor(InjectionKind::Moe);
            }
            if s.cat == "attention" {
                inj[i] *= factor(InjectionKind::Attention);
            }
            if protocol_on && s.name == protocol_name {
                inj[i] *= factor(InjectionKind::Protocol);
                s.name = sc.protocol.1;
            }
        }
        let run_jitter =
            super::jitter::RunJitter::draw_mode(opts.seed, opts.run_jitter, opts.run_jitter_mode);
        if let Some(j) = &run_jitter {
            for (i, s) in specs.iter().enumerate() {
                inj[i] *= j.factor(s);
            }
        }
        let written = super::rename::written_names(&specs, &opts.injections);
        let mut names: Vec<NameInfo> = Vec::new();
        let mut name_id = Vec::with_capacity(specs.len());
        for (s, written) in specs.iter().zip(&written) {
            let id = match names.iter().position(|n| n.name == *written) {
                Some(p) => p,
                None => {
                    names.push(NameInfo {
                        name: written.clone(),
                        category: s.cat,
                        allreduce: s.is_allreduce(),
                        collective: s.collective,
                    });
                    names.len() - 1
                }
            };
            name_id.push(id as u32);
        }
        let name_json = written.iter().map(|n| json_str(n)).collect();
        let kernel_args_tail = (0..specs.len()).map(nvidia_kernel_args_tail).collect();
        let stack = opts
            .with_stack
            .then(|| super::stack::Stack::new(&sc, &name_id));

        let target_ops = build_ops(&sc);
        let (decode_ops, mtp) = spec_ops(&sc, &target_ops, factor(InjectionKind::Draft));
        let mut prefill_ops = vec![
            Op {
                spec: memcpy,
                dep: Dep::Seq,
                w: 1.0,
            },
            Op {
                spec: memcpy,
                dep: Dep::Seq,
                w: 1.0,
            },
        ];
        prefill_ops.extend(target_ops.iter().map(|o| Op {
            spec: o.spec,
            dep: Dep::Seq,
            w: 1.0,
        }));
        let prefill_big = sc.prefill.big.and_then(|(spec, ns)| {
            let pos: Vec<usize> = (0..prefill_ops.len())
                .filter(|&i| prefill_ops[i].spec == spec)
                .collect();
            pos.get(pos.len() / 2).map(|&p| (p, ns))
        });
        let steady = (f64::from(opts.decode_steps) * opts.scale).round().max(0.0) as u32;
        let straggler_f = factor(InjectionKind::Straggler);
        let straggler = opts
            .injections
            .iter()
            .find(|i| i.kind == InjectionKind::Straggler)
            .map(|i| (i.rank.unwrap_or(ranks - 1), straggler_f));
        let mut r = Rng::derive(opts.seed, u32::MAX, 99);
        let stamp = format!(
            "{}.{:07}",
            1_767_000_000 + opts.seed % 1_000_000,
            r.next_u64() % 10_000_000
        );
        Plan {
            specs,
            name_json,
            kernel_args_tail,
            name_id,
            names,
            inj,
            run_jitter,
            ranks,
            decode_ops,
            prefill_ops,
            prefill_big,
            n_decode: WARMUP + steady,
            slowed: slowed_steps(opts, steady),
            relabelled: relabelled_steps(opts, steady),
            host_gap_ns: (factor(InjectionKind::HostGap) * MS as f64).round() as u64
                * u64::from(
                    opts.injections
                        .iter()
                        .any(|i| i.kind == InjectionKind::HostGap),
                ),
            batch: opts
                .injections
                .iter()
                .rfind(|i| i.kind == InjectionKind::Batch)
                .map_or(64, |i| i.factor as u32),
            mtp,
            seed: opts.seed,
            pyfn: opts.python_functions_per_step,
            straggler,
            single_stream: opts
                .injections
                .iter()
                .any(|i| i.kind == InjectionKind::SingleStream),
            stamp,
            ts0: 1_365_000_000 * MS + (opts.seed % 100_000) * 1_000 * MS,
            base_time_ns: 1_767_000_000_000_000_000 + (opts.seed % 1_000_000) * 1_000 * MS,
            stack,
            sc,
        }
    }

    /// The effective specs (protocol rename applied, the prefill memcpy last).
    pub(crate) fn specs(&self) -> &[Spec] {
        &self.specs
    }

    /// Ops of one decode iteration.
    pub(crate) fn decode_ops_len(&self) -> usize {
        self.decode_ops.len()
    }

    /// The spec of decode op `i`.
    pub(crate) fn decode_spec(&self, i: usize) -> usize {
        self.decode_ops[i].spec
    }

    /// With speculative decoding, where the verify and the draft extend start among the decode
    /// ops.
    pub(crate) fn mtp_parts(&self) -> Option<(usize, usize)> {
        self.mtp.map(|m| (m.verify_at, m.extend_at))
    }

    /// The name a spec's kernels are written under, as JSON.
    pub(crate) fn kernel_json(&self, spec: usize) -> &str {
        &self.name_json[spec]
    }

    /// The name a spec's kernels are written under.
    pub(crate) fn kernel_name(&self, spec: usize) -> &str {
        &self.names[self.name_id[spec] as usize].name
    }

    /// The `graph node id` of decode op `i` where the run writes them.
    fn graph_node(&self, i: usize) -> Option<u64> {
        self.stack.as_ref().filter(|s| s.node_ids).map(|_| i as u64)
    }

    /// The name SGLang gives rank `rank`'s gzip file (`write::encoded_path` drops the `.gz` of
    /// a plain one).
    pub(crate) fn file_name(&self, rank: u32) -> String {
        if self.sc.vllm_stock.is_some() {
            // vllm-project/vllm#33198: `{prefix}_dp{d}_pp{p}_tp{t}_dcp{c}_ep{e}_rank{r}.{ns}`.
            let ns = self.stamp.replace('.', "");
            return format!(
                "node-a_{pid}_dp0_pp0_tp{rank}_dcp0_ep{rank}_rank{rank}.{ns}.pt.trace.json.gz",
                pid = 4100 + rank
            );
        }
        if self.sc.eager.is_some() {
            return format!("rank-{rank}.json.gz");
        }
        format!("{}-TP-{}.trace.json.gz", self.stamp, rank)
    }

    fn tune(&self, rank: u32) -> super::scenario::RankTune {
        self.sc.tune[rank as usize % self.sc.tune.len()]
    }

    /// Mean per-call duration on this rank without injections (what calibration sees); for a
    /// collective, its transfer time, the same on every rank.
    fn nominal(&self, spec: usize, rank: u32) -> f64 {
        let s = &self.specs[spec];
        let f = if s.is_compute() {
            self.tune(rank).compute
        } else {
            1.0
        };
        s.dur_ns as f64 * f
    }

    /// Injection factor of a spec on a rank (straggler included).
    fn injection(&self, spec: usize, rank: u32) -> f64 {
        let mut f = self.inj[spec];
        if let Some((r, sf)) = self.straggler {
            if r == rank && self.specs[spec].is_compute() {
                f *= sf;
            }
        }
        f
    }

    fn two_streams(&self) -> bool {
        self.sc.aux_stream.is_some() && !self.single_stream
    }
}

/// Places ops on the main/aux streams; `gaps[i]` is the idle time before op i.
fn schedule(
    ops: &[Op],
    specs: &[Spec],
    durs: &[u64],
    gaps: &[u64],
    two: bool,
    start: u64,
    out: &mut Vec<Placed>,
) {
    let (mut main_free, mut aux_free, mut last_main_start) = (start, start, start);
    let mut prev_aux = false;
    for (i, op) in ops.iter().enumerate() {
        let aux = two && specs[op.spec].aux;
        let base = if aux {
            match op.dep {
                Dep::Concurrent => last_main_start.max(aux_free),
                _ if prev_aux => aux_free,
                _ => aux_free.max(main_free),
            }
        } else if two && op.dep == Dep::Join {
            main_free.max(aux_free)
        } else {
            main_free
        };
        let ts = base + gaps[i];
        let dur = durs[i];
        if aux {
            aux_free = ts + dur;
        } else {
            main_free = ts + dur;
            last_main_start = ts;
        }
        prev_aux = aux;
        out.push(Placed {
            ts,
            dur,
            spec: op.spec,
            aux,
            wait: 0,
        });
    }
}

/// Where one rank's streams stand while a step is placed.
#[derive(Debug, Clone, Copy)]
struct Streams {
    main_free: u64,
    aux_free: u64,
    last_main_start: u64,
    prev_aux: bool,
}

impl Streams {
    fn new(start: u64) -> Self {
        Streams {
            main_free: start,
            aux_free: start,
            last_main_start: start,
            prev_aux: false,
        }
    }

    /// When the op could start on this rank (before its idle gap), as `schedule` decides.
    fn base(&self, op: &Op, aux: bool, two: bool) -> u64 {
        if aux {
            match op.dep {
                Dep::Concurrent => self.last_main_start.max(self.aux_free),
                _ if self.prev_aux => self.aux_free,
                _ => self.aux_free.max(self.main_free),
            }
        } else if two && op.dep == Dep::Join {
            self.main_free.max(self.aux_free)
        } else {
            self.main_free
        }
    }

    fn commit(&mut self, ts: u64, end: u64, aux: bool) {
        if aux {
            self.aux_free = end;
        } else {
            self.main_free = end;
            self.last_main_start = ts;
        }
        self.prev_aux = aux;
    }
}

/// One rank's share of a synchronous step: its start, the idle gap before each op and each op's
/// duration; for a collective, `durs[i]` is how much later than the common end its call ends
/// (the small end jitter).
struct Lane {
    start: u64,
    gaps: Vec<u64>,
    durs: Vec<u64>,
}

/// Places one step on every rank at once. A collective (`transfer[i]` is `Some`) starts on each
/// rank when that rank gets there and ends on every rank at the same moment: the last arrival plus
/// the transfer time (plus the rank's end jitter). Each call's duration is therefore its wait for
/// the last rank plus the transfer. Everything else is placed as `schedule` places it.
fn schedule_sync(
    ops: &[Op],
    specs: &[Spec],
    lanes: &[Lane],
    transfer: &[Option<u64>],
    two: bool,
    out: &mut [Vec<Placed>],
) {
    let mut streams: Vec<Streams> = lanes.iter().map(|l| Streams::new(l.start)).collect();
    let mut arrival = vec![0u64; lanes.len()];
    for (i, op) in ops.iter().enumerate() {
        let aux = two && specs[op.spec].aux;
        for (r, lane) in lanes.iter().enumerate() {
            arrival[r] = streams[r].base(op, aux, two) + lane.gaps[i];
        }
        let last = arrival.iter().copied().max().unwrap_or(0);
        for (r, lane) in lanes.iter().enumerate() {
            let ts = arrival[r];
            let (dur, wait) = match transfer[i] {
                Some(t) => (last - ts + t + lane.durs[i], last - ts),
                None => (lane.durs[i], 0),
            };
            streams[r].commit(ts, ts + dur, aux);
            out[r].push(Placed {
                ts,
                dur,
                spec: op.spec,
                aux,
                wait,
            });
        }
    }
}

/// The length of the union of `[start, end)` spans.
fn union_len(spans: &[(u64, u64)]) -> u64 {
    let mut v = spans.to_vec();
    v.sort_unstable();
    let (mut total, mut reach) = (0, 0);
    for (s, e) in v {
        let s = s.max(reach);
        if e > s {
            total += e - s;
            reach = e;
        }
    }
    total
}

fn wall_of(p: &[Placed]) -> u64 {
    let s = p.iter().map(|k| k.ts).min().unwrap_or(0);
    let e = p.iter().map(|k| k.ts + k.dur).max().unwrap_or(0);
    e - s
}

/// The gap unit that makes the nominal schedule last `target` ns (bisection; wall is monotone).
fn solve_unit(
    ops: &[Op],
    specs: &[Spec],
    durs: &[u64],
    weights: &[f64],
    two: bool,
    target: u64,
) -> f64 {
    let mut buf = Vec::with_capacity(ops.len());
    let mut wall = |unit: f64| {
        let gaps: Vec<u64> = weights
            .iter()
            .enumerate()
            .map(|(i, w)| if i == 0 { 0 } else { (unit * w).round() as u64 })
            .collect();
        buf.clear();
        schedule(ops, specs, durs, &gaps, two, 0, &mut buf);
        wall_of(&buf)
    };
    if wall(0.0) >= target {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, target as f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if wall(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

pub(crate) struct RankOut {
    pub path: PathBuf,
    pub bytes: u64,
    pub events: u64,
    pub steps: Vec<StepSummary>,
    /// Kernel time in no step (the set-up burst), ns.
    pub unassigned_ns: u64,
    /// `--with-stack`: the decode ops in the order their kernels started in the first steady
    /// decode step (the replay's order, which a capture follows).
    pub decode_order: Vec<usize>,
}

/// Per-rank writer state: ids and counters for the host side.
struct Host {
    pid: u32,
    corr: u64,
    ext: u64,
    ev_idx: u64,
    py_id: u64,
}

const PY_NAMES: &[&str] = &[
    "sglang/srt/managers/scheduler.py(1043): event_loop_normal",
    "sglang/srt/managers/scheduler.py(1752): run_batch",
    "sglang/srt/managers/tp_worker.py(236): forward_batch_generation",
    "torch/utils/_contextlib.py(117): decorate_context",
    "sglang/srt/model_executor/model_runner.py(1780): forward",
    "sglang/srt/model_executor/model_runner.py(1702): _forward_raw",
    "torch/nn/modules/module.py(1762): _wrapped_call_impl",
    "torch/nn/modules/module.py(1773): _call_impl",
    "sglang/srt/models/deepseek_v2.py(2035): forward",
    "sglang/srt/layers/logits_processor.py(312): forward",
    "sglang/srt/layers/sampler.py(82): forward",
    "<built-in method item of Tensor object at 0x7f3a2c1b5e40>",
    "sglang/srt/model_executor/forward_batch_info.py(402): init_new",
    "threading.py(323): wait",
];

struct Gen<'a> {
    plan: &'a Plan,
    rank: u32,
    rng: Rng,
    out: Out,
    path: PathBuf,
    steps: Vec<StepSummary>,
    /// The first prefill's kernels, replayed by an eager loop's later prefills.
    first_prefill: Vec<Placed>,
    host: Host,
    stream: u32,
    aux_stream: u32,
    /// Kernel time written outside any step (the set-up burst), ns.
    unassigned_ns: u64,
    /// See [`RankOut::decode_order`].
    decode_order: Vec<usize>,
}

impl Gen<'_> {
    fn amd(&self) -> bool {
        self.plan.sc.vendor == Vendor::Amd
    }

    /// One complete (`ph: X`) event.
    fn x(&mut self, cat: &str, name: &str, at: Span, args: &str) -> Result<(), SynthError> {
        self.out
            .ev
            .text(r#"{"ph":"X","cat":""#)
            .text(cat)
            .text(r#"","name":"#)
            .text(name)
            .text(",");
        placed_at(&mut self.out.ev, at.pid, at.tid, at.ts)
            .text(r#","dur":"#)
            .us(at.dur)
            .text(r#","args":"#)
            .text(args)
            .text("}");
        self.out.emit()
    }

    fn next_ev_idx(&mut self) -> u64 {
        self.host.ev_idx += 1;
        self.host.ev_idx
    }

    fn kernel(&mut self, k: &Placed, corr: u64, ext: Option<u64>) -> Result<(), SynthError> {
        self.kernel_node(k, corr, ext, None)
    }

    /// A kernel; a replayed one may carry its `graph node id` (`--with-stack`).
    fn kernel_node(
        &mut self,
        k: &Placed,
        corr: u64,
        ext: Option<u64>,
        node: Option<u64>,
    ) -> Result<(), SynthError> {
        let spec = &self.plan.specs[k.spec];
        let stream = if k.aux { self.aux_stream } else { self.stream };
        let dev = self.rank;
        // On the device's stream.
        let at = Span {
            pid: dev,
            tid: stream,
            ts: k.ts,
            dur: k.dur,
        };
        let mut args = String::with_capacity(256);
        args.push('{');
        if let Some(e) = ext {
            args.text(r#""External id":"#).int(e).text(",");
        }
        let (grid, block) = launch_dims(k.spec);
        if spec.memcpy {
            let bytes = 64 * 8 * (1 + k.spec as u64 % 4);
            if self.amd() {
                let _ = write!(
                    args,
                    r#""device":{dev},"stream":{stream},"correlation":{corr},"kind":"Copy Host to Device","bytes":{bytes}}}"#
                );
            } else {
                let _ = write!(
                    args,
                    r#""device":{dev},"context":1,"stream":{stream},"correlation":{corr},"bytes":{bytes},"memory bandwidth (GB/s)":{:.3}}}"#,
                    bytes as f64 / k.dur.max(1) as f64
                );
            }
            let name = json_str(spec.name);
            return self.x("gpu_memcpy", &name, at, &args);
        }
        if self.amd() {
            args.text(r#""device":"#)
                .int(dev)
                .text(r#","stream":"#)
                .int(stream)
                .text(r#","correlation":"#)
                .int(corr)
                .text(r#","kind":"Dispatch Task","grid":["#)
                .int(grid * block)
                .text(r#",1,1],"block":["#)
                .int(block)
                .text(",1,1]}");
        } else {
            args.text(r#""queued":0,"device":"#)
                .int(dev)
                .text(r#","context":1,"stream":"#)
                .int(stream)
                .text(r#","correlation":"#)
                .int(corr)
                .text(",")
                .text(&self.plan.kernel_args_tail[k.spec]);
        }
        if let Some(node) = node {
            args.pop();
            args.text(r#","graph node id":"#).int(node).text("}");
        }
        let name = self.plan.name_json[k.spec].clone();
        self.x("kernel", &name, at, &args)
    }

    fn flow(
        &mut self,
        corr: u64,
        launch_ts: u64,
        kernel_ts: u64,
        stream: u32,
    ) -> Result<(), SynthError> {
        let pid = self.host.pid;
        self.out.ev.text(r#"{"ph":"s","id":"#).int(corr).text(",");
        placed_at(&mut self.out.ev, pid, pid, launch_ts).text(r#","cat":"ac2g","name":"ac2g"}"#);
        self.out.emit()?;
        self.out.ev.text(r#"{"ph":"f","id":"#).int(corr).text(",");
        placed_at(&mut self.out.ev, self.rank, stream, kernel_ts)
            .text(r#","cat":"ac2g","name":"ac2g","bp":"e"}"#);
        self.out.emit()
    }

    /// `n` python_function events in `[a, b)`: a nested stack, then leaves inside the innermost frame.
    fn python(&mut self, a: u64, b: u64, extend: bool) -> Result<(), SynthError> {
        let n = self.plan.pyfn as u64;
        if n == 0 || b <= a + 2 * US {
            return Ok(());
        }
        let depth = n.min(8);
        let (mut lo, mut hi) = (a, b);
        let mut parent = 0u64;
        let pid = self.host.pid;
        for j in 0..depth {
            self.host.py_id += 1;
            let id = self.host.py_id;
            let name = if j == 5 {
                if extend {
                    "sglang/srt/model_executor/model_runner.py(1690): forward_extend"
                } else {
                    "sglang/srt/model_executor/cuda_graph_runner.py(812): replay"
                }
            } else {
                PY_NAMES[j as usize % PY_NAMES.len()]
            };
            let ev = self.next_ev_idx();
            let args = python_args(parent, id, ev);
            self.x(
                "python_function",
                &json_str(name),
                Span::host(pid, lo, hi - lo),
                &args,
            )?;
            parent = id;
            let step = ((hi - lo) / 50).min(200);
            lo += step;
            hi -= step;
        }
        let leaves = n - depth;
        if leaves > 0 && hi > lo {
            let slot = (hi - lo) / leaves;
            for i in 0..leaves {
                self.host.py_id += 1;
                let id = self.host.py_id;
                let name = PY_NAMES
                    [8 + (i as usize + self.rng.range(0, 5) as usize) % (PY_NAMES.len() - 8)];
                let ev = self.next_ev_idx();
                let args = python_args(parent, id, ev);
                self.x(
                    "python_function",
                    &json_str(name),
                    Span::host(pid, lo + i * slot, slot * 8 / 10),
                    &args,
                )?;
            }
        }
        Ok(())
    }

    fn annotation(
        &mut self,
        name: &str,
        ts: u64,
        dur: u64,
        gpu: Option<(u64, u64)>,
    ) -> Result<(), SynthError> {
        if !self.plan.sc.annotations {
            return Ok(());
        }
        self.host.ext += 1;
        let ext = self.host.ext;
        let ev = self.next_ev_idx();
        let pid = self.host.pid;
        let args = format!(r#"{{"External id":{ext},"Record function id":0,"Ev Idx":{ev}}}"#);
        self.x(
            "user_annotation",
            &json_str(name),
            Span::host(pid, ts, dur),
            &args,
        )?;
        if let Some((gts, gdur)) = gpu {
            let args = format!(r#"{{"External id":{ext}}}"#);
            let (dev, s) = (self.rank, self.stream);
            self.x(
                "gpu_user_annotation",
                &json_str(name),
                Span {
                    pid: dev,
                    tid: s,
                    ts: gts,
                    dur: gdur,
                },
                &args,
            )?;
        }
        Ok(())
    }

    /// Eager launches: one cpu_op + one runtime event per activity, ids linked.
    fn eager(&mut self, placed: &[Placed], m: u32, flows: usize) -> Result<(u64, u64), SynthError> {
        self.eager_at(placed, m, flows, None)
    }

    /// [`Gen::eager`] of decode ops from `at` on (`None`: not decode ops), which, with
    /// `--with-stack`, get the frames and ops of their site around each launch.
    fn eager_at(
        &mut self,
        placed: &[Placed],
        m: u32,
        flows: usize,
        at: Option<usize>,
    ) -> Result<(u64, u64), SynthError> {
        let mut prev = None::<u64>;
        let (mut first_cpu, mut last_rt) = (u64::MAX, 0);
        let pid = self.host.pid;
        for (i, k) in placed.iter().enumerate() {
            let w = prev.map_or(10 * US, |p| (k.ts - p).min(10 * US)).max(10);
            prev = Some(k.ts);
            let cpu_ts = k.ts - w + w / 10;
            let cpu_dur = w * 7 / 10;
            let rt_ts = k.ts - w + w / 5;
            let rt_dur = w / 2;
            first_cpu = first_cpu.min(cpu_ts);
            last_rt = last_rt.max(rt_ts + rt_dur);
            self.host.ext += 1;
            self.host.corr += 1;
            let (ext, corr) = (self.host.ext, self.host.corr);
            let spec = &self.plan.specs[k.spec];
            let site_ops = match &self.plan.stack {
                Some(stack) => {
                    let layer = at.and_then(|a| stack.layer(a + i));
                    let frames = stack.frames(&self.plan.specs, k.spec, layer);
                    let ops = stack.ops(&self.plan.specs, k.spec, u64::from(m));
                    self.site_frames(k.ts, w, &frames, &ops)?;
                    ops.last().map(|op| op.args())
                }
                None => None,
            };
            let ev = self.next_ev_idx();
            let mut args = String::with_capacity(256);
            args.text(r#"{"External id":"#)
                .int(ext)
                .text(r#","Record function id":0,"#);
            if let Some(site) = site_ops {
                args.text(&site);
            } else if spec.kn != (0, 0) {
                args.text(r#""Concrete Inputs":"#);
                let (kk, n) = spec.kn;
                args.text(r#"["", ""],"Input type":["c10::BFloat16", "c10::BFloat16"],"#)
                    .text(r#""Input Strides":[["#)
                    .int(kk)
                    .text(", 1], [1, ")
                    .int(kk)
                    .text(r#"]],"Input Dims":[["#)
                    .int(m)
                    .text(", ")
                    .int(kk)
                    .text("], [")
                    .int(kk)
                    .text(", ")
                    .int(n)
                    .text("]]");
            } else {
                args.text(r#""Concrete Inputs":"#);
                args.text(r#"[""],"Input type":["c10::BFloat16"],"Input Strides":[[7168, 1]],"#)
                    .text(r#""Input Dims":[["#)
                    .int(m)
                    .text(", 7168]]");
            }
            args.text(r#","Ev Idx":"#).int(ev).text("}");
            self.x(
                "cpu_op",
                &json_str(spec.op),
                Span::host(pid, cpu_ts, cpu_dur),
                &args,
            )?;
            let (rt_name, id_key, id) = match (self.amd(), spec.memcpy) {
                (true, true) => ("hipMemcpyAsync", "cid", 81),
                (true, false) => ("hipLaunchKernel", "cid", 111),
                (false, true) => ("cudaMemcpyAsync", "cbid", 41),
                (false, false) => ("cudaLaunchKernel", "cbid", 211),
            };
            let mut args = String::with_capacity(64);
            args.text(r#"{"External id":"#)
                .int(ext)
                .text(r#",""#)
                .text(id_key)
                .text(r#"":"#)
                .int(id)
                .text(r#","correlation":"#)
                .int(corr)
                .text("}");
            self.x(
                "cuda_runtime",
                &json_str(rt_name),
                Span::host(pid, rt_ts, rt_dur),
                &args,
            )?;
            self.kernel(k, corr, Some(ext))?;
            if i < flows {
                let s = if k.aux { self.aux_stream } else { self.stream };
                self.flow(corr, rt_ts, k.ts, s)?;
            }
        }
        Ok((first_cpu, last_rt))
    }

    /// `--with-stack`: a launch's site around its cpu_op (which starts `w - w/10` before the
    /// kernel at `kts`): its frames, outermost first, each enclosing the runtime launch and longer
    /// than the reader's shortest kept frame where `w` allows, and the ops above its innermost op.
    fn site_frames(
        &mut self,
        kts: u64,
        w: u64,
        frames: &[String],
        ops: &[super::stack::SiteOp],
    ) -> Result<(), SynthError> {
        let pid = self.host.pid;
        let mut parent = 0u64;
        for (j, name) in frames.iter().enumerate() {
            let j = j as u64;
            let ts = kts - w + j * (w / 200);
            let end = kts - w / 10 - j * (w / 200);
            self.host.py_id += 1;
            let id = self.host.py_id;
            let ev = self.next_ev_idx();
            let args = python_args(parent, id, ev);
            self.x(
                "python_function",
                &json_str(name),
                Span::host(pid, ts, end - ts),
                &args,
            )?;
            parent = id;
        }
        let (cpu_ts, cpu_end) = (kts - w + w / 10, kts - w + w / 10 + w * 7 / 10);
        for (j, op) in ops.iter().rev().skip(1).enumerate() {
            let j = j as u64 + 1;
            let ts = cpu_ts - j * (w / 100);
            let end = cpu_end + j * (w / 100);
            let ev = self.next_ev_idx();
            let args = format!(r#"{{"Record function id":0,{},"Ev Idx":{ev}}}"#, op.args());
            self.x(
                "cpu_op",
                &json_str(op.name),
                Span::host(pid, ts, end - ts),
                &args,
            )?;
        }
        Ok(())
    }

    fn summary(&self, kind: StepKind, placed: &[Placed]) -> StepSummary {
        let acts: Vec<Activity> = placed
            .iter()
            .map(|k| Activity {
                start: k.ts,
                end: k.ts + k.dur,
                name: self.plan.name_id[k.spec],
                wait: k.wait,
            })
            .collect();
        truth::summarize(kind, &acts, &self.plan.names)
    }

    fn dur(&mut self, spec: usize, nominal: f64) -> u64 {
        let a = if self.plan.specs[spec].is_comm() {
            0.04
        } else {
            0.03
        };
        let d = nominal * self.plan.injection(spec, self.rank) * self.rng.jitter(a);
        (d.round() as u64).max(500)
    }

    fn header(&mut self) -> Result<(), SynthError> {
        let p = self.plan;
        let ndev = p.ranks.max(8);
        let dev_props: Vec<String> = (0..ndev)
            .map(|id| match p.sc.device {
                "NVIDIA B200" => format!(
                    r#"{{"id": {id}, "name": "NVIDIA B200", "totalGlobalMem": 191503138816, "computeMajor": 10, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 148, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}}"#
                ),
                "NVIDIA H200" => format!(
                    r#"{{"id": {id}, "name": "NVIDIA H200", "totalGlobalMem": 150109880320, "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132, "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}}"#
                ),
                "AMD Instinct MI355X" => format!(
                    r#"{{"id": {id}, "name": "AMD Instinct MI355X", "totalGlobalMem": 309220868096, "computeMajor": 9, "computeMinor": 5, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 131072, "warpSize": 64, "sharedMemPerBlock": 163840, "numSms": 256, "maxSharedMemoryPerMultiProcessor": 163840}}"#
                ),
                _ => format!(
                    r#"{{"id": {id}, "name": "{}", "totalGlobalMem": 274877906944, "computeMajor": 9, "computeMinor": 4, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 131072, "warpSize": 64, "sharedMemPerBlock": 65536, "numSms": 304, "maxSharedMemoryPerMultiProcessor": 65536}}"#,
                    p.sc.device
                ),
            })
            .collect();
        let ranks_list: Vec<String> = (0..p.ranks).map(|r| r.to_string()).collect();
        let versions = if self.amd() {
            r#""roctracer_version": 4.1, "hip_runtime_version": 70253211, "hip_driver_version": 70253211"#
        } else {
            r#""cupti_version": 28, "cuda_runtime_version": 12090, "cuda_driver_version": 13000"#
        };
        let mut r = Rng::derive(p.seed, self.rank, 7);
        let trace_id = format!("{:016X}{:016X}", r.next_u64(), r.next_u64());
        let vllm =
            p.sc.vllm_stock
                .map(|v| format!("\n  \"vllm_version\": \"{v}\","))
                .unwrap_or_default();
        let head = format!(
            "{{\n  \"schemaVersion\": 1,{vllm}\n  \"deviceProperties\": [\n    {}\n  ],\n  {versions},\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}, \"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": {}, \"ranks\": [{}]}}]}},\n  \"record_shapes\": 1,\n  \"with_stack\": 1,\n  \"trace_id\": \"{trace_id}\",\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [",
            dev_props.join(",\n    "),
            self.rank,
            p.ranks,
            p.ranks,
            ranks_list.join(", "),
            p.base_time_ns
        );
        self.out.raw(&head)?;
        // Metadata.
        let ts = Us(p.ts0);
        let (hp, dev) = (self.host.pid, self.rank);
        let meta = [
            format!(
                r#"{{"name":"process_name","ph":"M","ts":{ts},"pid":{hp},"tid":0,"args":{{"name":"python3"}}}}"#
            ),
            format!(
                r#"{{"name":"process_labels","ph":"M","ts":{ts},"pid":{hp},"tid":0,"args":{{"labels":"CPU"}}}}"#
            ),
            format!(
                r#"{{"name":"process_sort_index","ph":"M","ts":{ts},"pid":{hp},"tid":0,"args":{{"sort_index":{hp}}}}}"#
            ),
            format!(
                r#"{{"name":"thread_name","ph":"M","ts":{ts},"pid":{hp},"tid":{hp},"args":{{"name":"thread {hp} (python3)"}}}}"#
            ),
            format!(
                r#"{{"name":"thread_sort_index","ph":"M","ts":{ts},"pid":{hp},"tid":{hp},"args":{{"sort_index":{hp}}}}}"#
            ),
            format!(
                r#"{{"name":"process_name","ph":"M","ts":{ts},"pid":{dev},"tid":0,"args":{{"name":"python3"}}}}"#
            ),
            format!(
                r#"{{"name":"process_labels","ph":"M","ts":{ts},"pid":{dev},"tid":0,"args":{{"labels":"GPU {dev}"}}}}"#
            ),
            format!(
                r#"{{"name":"process_sort_index","ph":"M","ts":{ts},"pid":{dev},"tid":0,"args":{{"sort_index":{}}}}}"#,
                5_000_000 + dev
            ),
        ];
        for m in meta {
            self.out.ev.push_str(&m);
            self.out.emit()?;
        }
        let mut streams = vec![self.stream];
        if p.two_streams() {
            streams.push(self.aux_stream);
        }
        for s in streams {
            self.out.ev = format!(
                r#"{{"name":"thread_name","ph":"M","ts":{ts},"pid":{dev},"tid":{s},"args":{{"name":"stream {s} "}}}}"#
            );
            self.out.emit()?;
            self.out.ev = format!(
                r#"{{"name":"thread_sort_index","ph":"M","ts":{ts},"pid":{dev},"tid":{s},"args":{{"sort_index":{s}}}}}"#
            );
            self.out.emit()?;
        }
        Ok(())
    }

    /// Header, prefill and set-up burst; returns when this rank could start decoding.
    fn prelude(&mut self) -> Result<u64, SynthError> {
        let p = self.plan;
        let rank = self.rank;
        self.header()?;

        // ---- Prefill (eager, one stream).
        let pre = &p.prefill_ops;
        let pt = &p.sc.prefill;
        let mut nom: Vec<f64> = pre.iter().map(|o| p.nominal(o.spec, rank)).collect();
        // Scale to the published prefill figures (rank 0's sums define the scales).
        let (mut comp0, mut comm0) = (0.0, 0.0);
        for (i, o) in pre.iter().enumerate() {
            if p.prefill_big.is_some_and(|(b, _)| b == i) {
                continue;
            }
            let s = &p.specs[o.spec];
            let n0 = p.nominal(o.spec, 0);
            if s.is_comm() {
                comm0 += n0;
            } else if s.is_compute() {
                comp0 += n0;
            }
        }
        let big_ns = p.prefill_big.map_or(0, |(_, ns)| ns);
        let comm_scale = (pt.comm_ns.saturating_sub(big_ns)) as f64 / comm0.max(1.0);
        let comp_scale = pt.compute_ns as f64 / comp0.max(1.0);
        for (i, o) in pre.iter().enumerate() {
            let s = &p.specs[o.spec];
            if p.prefill_big.is_some_and(|(b, _)| b == i) {
                nom[i] = big_ns as f64;
            } else if s.is_comm() {
                nom[i] *= comm_scale;
            } else if s.is_compute() {
                nom[i] *= comp_scale;
            }
        }
        let nom_ns: Vec<u64> = nom.iter().map(|&d| d.round() as u64).collect();
        let weights = vec![1.0; pre.len()];
        let unit = solve_unit(pre, &p.specs, &nom_ns, &weights, false, pt.wall_ns);
        let durs: Vec<u64> = pre
            .iter()
            .enumerate()
            .map(|(i, o)| self.dur(o.spec, nom[i]))
            .collect();
        let gaps: Vec<u64> = (0..pre.len())
            .map(|i| {
                if i == 0 {
                    0
                } else {
                    (unit * self.rng.jitter(0.3)).round() as u64
                }
            })
            .collect();
        let start = p.ts0 + 2 * MS + u64::from(rank) * 1_337;
        let mut placed = Vec::with_capacity(pre.len());
        schedule(pre, &p.specs, &durs, &gaps, false, start, &mut placed);
        let (cpu0, cpu1) = self.eager(&placed, pt.toks, 16)?;
        let name = match self.plan.sc.vllm_stock {
            // vLLM's default annotation: requests in prefill (with their tokens) and in decode.
            Some(_) => format!(
                "execute_context_64({}_{})_generation_0(0)",
                pt.toks,
                pt.toks * 2
            ),
            None => format!("step[EXTEND bs=64 toks={}]", pt.toks),
        };
        let wall = wall_of(&placed);
        self.annotation(
            &name,
            cpu0 - 20 * US,
            cpu1 - cpu0 + 40 * US,
            Some((start, wall)),
        )?;
        self.python(cpu0 - 120 * US, cpu1 + 60 * US, true)?;
        let summary = self.summary(StepKind::Prefill, &placed);
        self.steps.push(summary);
        let mut t = placed.iter().map(|k| k.ts + k.dur).max().unwrap_or(start) + PHASE_GAP;

        // ---- RCCL set-up burst (eager, not a step).
        if let Some(b) = &p.sc.burst {
            let mut burst = Vec::with_capacity(b.count as usize);
            for _ in 0..b.count {
                let dur = (b.dur_ns as f64 * self.rng.jitter(0.05)).round() as u64;
                burst.push(Placed {
                    ts: t,
                    dur,
                    spec: b.spec,
                    aux: false,
                    wait: 0,
                });
                t += dur + self.rng.range(b.gap_min_ns, b.gap_max_ns);
            }
            self.eager(&burst, 64, 2)?;
            self.unassigned_ns += burst.iter().map(|k| k.dur).sum::<u64>();
            t = burst.last().map_or(t, |k| k.ts + k.dur) + PHASE_GAP;
        }
        if p.sc.eager.is_some() {
            self.first_prefill = placed;
        }
        Ok(t)
    }

    /// The runtime's graph launch (`cudaGraphLaunch`/`hipGraphLaunch`) with this correlation.
    fn graph_launch(&mut self, corr: u64, ts: u64, dur: u64) -> Result<(), SynthError> {
        let (rt_name, id_key, id) = if self.amd() {
            ("hipGraphLaunch", "cid", 215)
        } else {
            ("cudaGraphLaunch", "cbid", 311)
        };
        let mut args = String::with_capacity(48);
        args.text(r#"{""#)
            .text(id_key)
            .text(r#"":"#)
            .int(id)
            .text(r#","correlation":"#)
            .int(corr)
            .text("}");
        let pid = self.host.pid;
        self.x(
            "cuda_runtime",
            rt_name_json(rt_name),
            Span::host(pid, ts, dur),
            &args,
        )
    }

    /// The annotation of decode step `step` (counting warm-up) and the kind truth files it as.
    fn decode_label(&self, step: u32) -> (String, StepKind) {
        let batch = self.plan.batch;
        if self.plan.sc.vllm_stock.is_some() {
            // vLLM's default annotation (vllm-project/vllm#22496): requests in prefill and in
            // decode, each with its `_`-separated token counts.
            let ctx = 2_000 + u64::from(step);
            return match self.plan.relabelled.iter().find(|(s, _)| *s == step) {
                Some((_, super::Relabel::Mixed)) => (
                    format!(
                        "execute_context_1(512_{ctx})_generation_{}({}_{ctx})",
                        batch - 1,
                        batch - 1
                    ),
                    StepKind::Mixed,
                ),
                Some((_, super::Relabel::Idle)) => (
                    "execute_context_0(0)_generation_0(0)".to_string(),
                    StepKind::OtherLabel,
                ),
                None => (
                    format!("execute_context_0(0)_generation_{batch}({batch}_{ctx})"),
                    StepKind::Decode,
                ),
            };
        }
        match self.plan.relabelled.iter().find(|(s, _)| *s == step) {
            Some((_, super::Relabel::Mixed)) => {
                (format!("step[MIXED bs={batch}]"), StepKind::Mixed)
            }
            Some((_, super::Relabel::Idle)) => ("step[IDLE]".to_string(), StepKind::OtherLabel),
            None => (format!("step[DECODE bs={batch}]"), StepKind::Decode),
        }
    }

    /// One decode step of this rank, placed by [`DecodeSim::step`], starting at `t`.
    fn decode_step(&mut self, step: u32, placed: &[Placed], t: u64) -> Result<(), SynthError> {
        if self.plan.stack.is_some() && step == WARMUP.min(self.plan.n_decode - 1) {
            let mut order: Vec<usize> = (0..placed.len()).collect();
            order.sort_by_key(|&i| (placed[i].ts, i));
            self.decode_order = order;
        }
        if let Some(m) = self.plan.mtp {
            return self.spec_step(placed, m);
        }
        self.host.corr += 1;
        let corr = self.host.corr;
        let launch_ts = t - 40 * US;
        let launch_dur = 25 * US + self.rng.range(0, 3000);
        self.graph_launch(corr, launch_ts, launch_dur)?;
        let wall = wall_of(placed);
        let (label, kind) = self.decode_label(step);
        self.annotation(
            &label,
            launch_ts - 30 * US,
            launch_dur + 40 * US,
            Some((t, wall)),
        )?;
        self.python(launch_ts - 150 * US, launch_ts + launch_dur + 5 * US, false)?;
        for (i, k) in placed.iter().enumerate() {
            self.kernel_node(k, corr, None, self.plan.graph_node(i))?;
        }
        self.flow(corr, launch_ts, t, self.stream)?;
        let summary = self.summary(kind, placed);
        self.steps.push(summary);
        Ok(())
    }

    /// One speculative iteration of this rank, as SGLang's EAGLE loop (`eagle_worker_v2.py`)
    /// runs it with CUDA graphs: the draft graph (replayed outside `ModelRunner.forward`, so no
    /// step annotation), the verify (`step[TARGET_VERIFY bs=N]` around its graph launch), the draft
    /// extend (`step[DRAFT_EXTEND_V2 bs=N]`, launched eagerly). Truth files it as one decode step
    /// whose wall is the union of the three forwards' spans.
    fn spec_step(&mut self, placed: &[Placed], m: MtpOps) -> Result<(), SynthError> {
        let (draft, rest) = placed.split_at(m.verify_at);
        let (verify, extend) = rest.split_at(m.extend_at - m.verify_at);
        let batch = self.plan.batch;
        for (part, label, at) in [
            (draft, None, 0),
            (
                verify,
                Some(format!("step[TARGET_VERIFY bs={batch}]")),
                m.verify_at,
            ),
        ] {
            let t = part.iter().map(|k| k.ts).min().unwrap_or(0);
            self.host.corr += 1;
            let corr = self.host.corr;
            let launch_ts = t - 40 * US;
            let launch_dur = 25 * US + self.rng.range(0, 3000);
            self.graph_launch(corr, launch_ts, launch_dur)?;
            if let Some(label) = label {
                self.annotation(
                    &label,
                    launch_ts - 30 * US,
                    launch_dur + 40 * US,
                    Some((t, wall_of(part))),
                )?;
                self.python(launch_ts - 150 * US, launch_ts + launch_dur + 5 * US, false)?;
            }
            for (i, k) in part.iter().enumerate() {
                self.kernel_node(k, corr, None, self.plan.graph_node(at + i))?;
            }
            self.flow(corr, launch_ts, t, self.stream)?;
        }
        let t = extend.iter().map(|k| k.ts).min().unwrap_or(0);
        let (cpu0, cpu1) = self.eager_at(extend, batch, 0, Some(m.extend_at))?;
        self.annotation(
            &format!("step[DRAFT_EXTEND_V2 bs={batch}]"),
            cpu0 - 20 * US,
            cpu1 - cpu0 + 40 * US,
            Some((t, wall_of(extend))),
        )?;
        let span = |p: &[Placed]| {
            let s = p.iter().map(|k| k.ts).min().unwrap_or(0);
            (s, s + wall_of(p))
        };
        let kernel = |p: &[Placed]| p.iter().map(|k| k.dur).sum::<u64>();
        let (d, v, e) = (span(draft), span(verify), span(extend));
        let mut summary = self.summary(StepKind::Decode, placed);
        summary.wall = union_len(&[d, v, e]);
        summary.spec = Some(SpecParts {
            draft_kernel: kernel(draft) + kernel(extend),
            verify_kernel: kernel(verify),
            draft: union_len(&[d, e]),
            verify: v.1 - v.0,
        });
        self.steps.push(summary);
        Ok(())
    }

    fn finish(mut self) -> Result<RankOut, SynthError> {
        let tail = format!(
            "\n  ],\n  \"traceName\": \"/tmp/{}/{}\"\n}}\n",
            if self.plan.sc.vllm_stock.is_some() {
                "vllm_profile"
            } else {
                "sglang_profile"
            },
            self.plan.file_name(self.rank)
        );
        self.out.raw(&tail)?;
        let (bytes, events) = self.out.finish()?;
        Ok(RankOut {
            path: self.path,
            bytes,
            events,
            steps: self.steps,
            unassigned_ns: self.unassigned_ns,
            decode_order: self.decode_order,
        })
    }
}

/// Idle time between decode steps: the same on every rank (each runs the same scheduler loop and
/// leaves the step at the same collective), plus up to `LAUNCH_SKEW` for when its CPU launches.
const LAUNCH_SKEW: u64 = 20 * US;
/// Launch gaps inside a replayed graph vary by ±20%; a long gap (weight w) by ±20%/w: a
/// launch-bound rank's idle time before a collective is steady, not noise.
const GAP_JITTER: f64 = 0.2;
/// A collective ends on each rank up to this fraction of its transfer time after the common end.
const END_JITTER: f64 = 0.01;

/// The decode steps of every rank, placed together one step at a time, since the collectives
/// synchronise the ranks.
struct DecodeSim<'a> {
    plan: &'a Plan,
    /// Per rank: nominal duration of each op, gap weights, calibrated gap unit.
    nom: Vec<Vec<f64>>,
    weights: Vec<Vec<f64>>,
    unit: Vec<f64>,
    rngs: Vec<Rng>,
    /// Draws shared by all ranks: transfer times, the idle time between steps.
    shared: Rng,
    /// When the next step starts (before each rank's launch skew).
    next: u64,
}

impl<'a> DecodeSim<'a> {
    fn new(plan: &'a Plan, start: u64) -> Self {
        let ops = &plan.decode_ops;
        let (mut nom, mut weights, mut unit) = (Vec::new(), Vec::new(), Vec::new());
        for rank in 0..plan.ranks {
            let n: Vec<f64> = ops.iter().map(|o| plan.nominal(o.spec, rank)).collect();
            let n_ns: Vec<u64> = n.iter().map(|&d| d.round() as u64).collect();
            let w: Vec<f64> = ops
                .iter()
                .map(|o| match plan.sc.paced {
                    Some((spec, w)) if rank != 0 && o.spec == spec => w,
                    _ => o.w,
                })
                .collect();
            // Calibrated alone, on the scenario's own stream layout (single-stream lengthens the step).
            unit.push(solve_unit(
                ops,
                &plan.specs,
                &n_ns,
                &w,
                plan.sc.aux_stream.is_some(),
                plan.tune(rank).wall_ns,
            ));
            nom.push(n);
            weights.push(w);
        }
        DecodeSim {
            plan,
            nom,
            weights,
            unit,
            rngs: (0..plan.ranks)
                .map(|r| Rng::derive(plan.seed, r, 2))
                .collect(),
            shared: Rng::derive(plan.seed, u32::MAX, 3),
            next: start,
        }
    }

    /// Places decode step `step` (counting warm-up) on every rank: the kernels of each rank and
    /// when its step starts.
    fn step(&mut self, step: u32) -> (Vec<Vec<Placed>>, Vec<u64>) {
        let p = self.plan;
        let ops = &p.decode_ops;
        let shared = &mut self.shared;
        let mut transfer: Vec<Option<u64>> = ops
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let s = &p.specs[o.spec];
                let f = p.mtp.map_or(1.0, |m| m.factor(i));
                s.is_comm().then(|| {
                    ((s.dur_ns as f64 * p.inj[o.spec] * f * shared.jitter(0.04)).round() as u64)
                        .max(500)
                })
            })
            .collect();
        // A cold first call: a long transfer on every rank, or (rank 0 only) ranks 1.. arriving
        // late, still busy setting up, so that rank 0 waits.
        let cold =
            p.sc.cold_first
                .filter(|_| step == 0)
                .and_then(|(spec, ns, only0)| {
                    ops.iter()
                        .position(|o| o.spec == spec)
                        .map(|i| (i, spec, ns, only0))
                });
        if let Some((i, spec, ns, false)) = cold {
            transfer[i] = Some((ns as f64 * p.inj[spec] * shared.jitter(0.02)).round() as u64);
        }
        let mut lanes = Vec::with_capacity(p.ranks as usize);
        for rank in 0..p.ranks {
            let r = rank as usize;
            let rng = &mut self.rngs[r];
            let start = self.next + rng.range(0, LAUNCH_SKEW);
            let durs = ops
                .iter()
                .enumerate()
                .map(|(i, o)| match transfer[i] {
                    Some(t) => (t as f64 * END_JITTER * rng.unit()).round() as u64,
                    None => {
                        let f = p.mtp.map_or(1.0, |m| m.factor(i));
                        let d = self.nom[r][i] * p.injection(o.spec, rank) * f * rng.jitter(0.03);
                        (d.round() as u64).max(500)
                    }
                })
                .collect();
            let mut gaps: Vec<u64> = self.weights[r]
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    if i == 0 {
                        0
                    } else {
                        (self.unit[r] * w * rng.jitter(GAP_JITTER / w.max(1.0))).round() as u64
                    }
                })
                .collect();
            // A speculative iteration: the host's time between its draft, verify and extend.
            if let Some(m) = p.mtp {
                gaps[m.verify_at] += m.draft_gap;
                gaps[m.extend_at] += m.extend_gap;
            }
            if let Some((i, _, ns, true)) = cold {
                if rank != 0 {
                    gaps[i] += ns;
                }
            }
            // A stall on one rank holds every rank up at its next collective.
            if let Some((s, ns)) = p.sc.stall {
                if s == step && rank == 0 {
                    let mid = gaps.len() / 2;
                    gaps[mid] += ns;
                }
            }
            // An injected stall or slow step: the step's wall (the slowest rank's) grows to F× on
            // rank 0.
            if let Some(&(_, f)) = p
                .slowed
                .iter()
                .find(|(s, _)| *s == step)
                .filter(|_| rank == 0)
            {
                let wall = (0..p.ranks).map(|r| p.tune(r).wall_ns).max().unwrap_or(0);
                let mid = gaps.len() / 2;
                gaps[mid] += ((f - 1.0) * wall as f64).round() as u64;
            }
            lanes.push(Lane { start, gaps, durs });
        }
        let mut out = vec![Vec::with_capacity(ops.len()); p.ranks as usize];
        schedule_sync(ops, &p.specs, &lanes, &transfer, p.two_streams(), &mut out);
        let end = out
            .iter()
            .flat_map(|v| v.iter().map(|k| k.ts + k.dur))
            .max()
            .unwrap_or(self.next);
        self.next = end + 250 * US + self.shared.range(0, 150 * US) + p.host_gap_ns;
        (out, lanes.iter().map(|l| l.start).collect())
    }
}

/// Grid and block of a spec's launches.
fn launch_dims(spec: usize) -> (u64, u64) {
    let grid = 1 + (spec as u64 * 37) % 304;
    let block = if spec % 3 == 0 { 256 } else { 128 };
    (grid, block)
}

/// See [`Plan::kernel_args_tail`].
fn nvidia_kernel_args_tail(spec: usize) -> String {
    let (grid, block) = launch_dims(spec);
    format!(
        r#""registers per thread":{},"shared memory":{},"blocks per SM":{:.6},"warps per SM":{:.6},"grid":[{grid},1,1],"block":[{block},1,1],"est. achieved occupancy %":{}}}"#,
        32 + (spec % 7) * 16,
        (spec % 5) * 16384,
        grid as f64 / 132.0,
        grid as f64 * (block / 32) as f64 / 132.0,
        (spec * 13) % 100
    )
}

fn rt_name_json(n: &str) -> &'static str {
    match n {
        "hipGraphLaunch" => "\"hipGraphLaunch\"",
        _ => "\"cudaGraphLaunch\"",
    }
}

/// `"pid":P,"tid":T,"ts":X`: where and when an event happened.
/// Where and when a complete event lies: its process and thread (for a kernel, the device and
/// the stream), its start and its duration (ns).
#[derive(Debug, Clone, Copy)]
struct Span {
    pid: u32,
    tid: u32,
    ts: u64,
    dur: u64,
}

impl Span {
    /// On the host process's main thread (the thread id is the process id).
    fn host(pid: u32, ts: u64, dur: u64) -> Span {
        Span {
            pid,
            tid: pid,
            ts,
            dur,
        }
    }
}

fn placed_at(ev: &mut String, pid: u32, tid: u32, ts: u64) -> &mut String {
    ev.text(r#""pid":"#)
        .int(pid)
        .text(r#","tid":"#)
        .int(tid)
        .text(r#","ts":"#)
        .us(ts)
}

/// The args of a `python_function` event.
fn python_args(parent: u64, id: u64, ev: u64) -> String {
    let mut args = String::with_capacity(64);
    args.text(r#"{"Python parent id":"#)
        .int(parent)
        .text(r#","Python id":"#)
        .int(id)
        .text(r#","Ev Idx":"#)
        .int(ev)
        .text("}");
    args
}

/// Writes every rank's trace: header, prefill and burst per rank in parallel, then the decode
/// steps one at a time (placed on all ranks together, written by each rank in parallel).
pub(crate) fn write_all(
    plan: &Plan,
    dir: &Path,
    gzip_level: Option<u32>,
) -> Result<Vec<RankOut>, SynthError> {
    let mut gens = (0..plan.ranks)
        .map(|rank| {
            let path = super::write::encoded_path(dir, &plan.file_name(rank), gzip_level);
            Ok(Gen {
                plan,
                rank,
                rng: Rng::derive(plan.seed, rank, 1),
                out: Out::create(&path, gzip_level)?,
                path,
                steps: Vec::new(),
                first_prefill: Vec::new(),
                host: Host {
                    pid: 200_000 + (plan.seed % 50_000) as u32 * 8 + rank,
                    corr: 16,
                    ext: 0,
                    ev_idx: 0,
                    py_id: 1_000_000,
                },
                stream: plan.sc.main_stream,
                aux_stream: plan.sc.aux_stream.unwrap_or(plan.sc.main_stream),
                unassigned_ns: 0,
                decode_order: Vec::new(),
            })
        })
        .collect::<Result<Vec<Gen<'_>>, SynthError>>()?;
    let ready: Vec<u64> = gens
        .par_iter_mut()
        .map(Gen::prelude)
        .collect::<Result<_, _>>()?;
    let mut sim = DecodeSim::new(plan, ready.iter().copied().max().unwrap_or(plan.ts0));
    if let Some(e) = plan.sc.eager {
        eager::decode_all(&mut gens, &mut sim, e)?;
        return gens.into_par_iter().map(Gen::finish).collect();
    }
    for step in 0..plan.n_decode {
        let (placed, starts) = sim.step(step);
        gens.par_iter_mut()
            .zip(placed.par_iter())
            .try_for_each(|(g, p)| {
                let t = starts[g.rank as usize];
                g.decode_step(step, p, t)
            })?;
    }
    gens.into_par_iter().map(Gen::finish).collect()
}
