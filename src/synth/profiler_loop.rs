//! `synth --scenario training-loop`: a data-parallel training loop profiled with
//! `torch.profiler`, one `ProfilerStep#N` annotation per iteration and no serving step: the
//! forward launched from the main thread, the backward and DDP's bucketed allreduce (on a side
//! stream, overlapping the backward) from the autograd thread, the optimizer after the last
//! allreduce, then the data loader's idle gap. Its `truth.json` holds the figures of a loop run
//! (`iteration_ms`, `comm_pct`, `allreduce_us`) as `docs/METRICS.md` defines them, computed from
//! what was written.
//!
//! `--decode-steps N` is the number of iterations (ProfilerSteps) per rank; `--ranks` defaults
//! to 2; `host-gap=MS` lengthens the data loader's gap (every iteration MS slower) and
//! `allreduce=F` scales the allreduce calls. Times are integer nanoseconds, written as
//! microseconds with three decimals, so the truth is exact.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::rng::Rng;
use super::write::{encoded_path, json_str, Append, Out};
use super::{InjectionKind, Layout, SynthError, SynthOptions, SynthSummary};
use crate::metrics::MetricId;
use crate::stats::Statistic;

/// The scenario's name.
pub(crate) const SCENARIO: &str = "training-loop";

const DEVICE: &str = "NVIDIA H100 80GB HBM3";
const DEFAULT_RANKS: u32 = 2;
const LAYERS: usize = 6;
const MAIN_STREAM: u32 = 7;
const COMM_STREAM: u32 = 21;
const MAIN_TID: u32 = 1001;
const AUTOGRAD_TID: u32 = 1002;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;
/// Where the first iteration starts, ns since the trace's epoch.
const T0: u64 = 1_000 * MS;
/// Idle GPU time between two kernels of one stream.
const LAUNCH_GAP: u64 = 4 * US;
/// The data loader's idle gap after each iteration, before the next one's first kernel.
const DATA_GAP: u64 = 3 * MS;
/// How far the host launch runs ahead of its kernel.
const LEAD: u64 = 25 * US;
/// Jitter of each kernel's duration (uniform, ±).
const KERNEL_JITTER: f64 = 0.03;
/// Jitter of the data loader's gap (uniform, ±).
const GAP_JITTER: f64 = 0.1;

const NORM: &str = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)";
const NORM_BWD: &str = "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<c10::BFloat16, float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)";
const GEMM_A: &str = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT";
const GEMM_B: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
const ADD: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)";
const ADAM: &str = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, double, bool, float*, float*)";
const ALLREDUCE: &str =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

/// The forward of one layer: (kernel, µs).
const FORWARD: [(&str, u64); 5] = [
    (NORM, 40),
    (GEMM_A, 320),
    (ADD, 30),
    (GEMM_B, 260),
    (ADD, 25),
];
/// The backward of one layer, after which its gradients are allreduced.
const BACKWARD: [(&str, u64); 4] = [(GEMM_B, 520), (GEMM_A, 600), (NORM_BWD, 70), (ADD, 30)];
/// One layer's gradient allreduce, µs.
const ALLREDUCE_US: u64 = 900;
/// The optimizer's kernels, µs each.
const OPTIMIZER: [(&str, u64); 3] = [(ADAM, 150), (ADAM, 150), (ADAM, 150)];

/// One kernel as placed.
struct Kernel {
    name: &'static str,
    ts: u64,
    dur: u64,
    stream: u32,
    /// The host thread that launched it.
    tid: u32,
}

impl Kernel {
    fn end(&self) -> u64 {
        self.ts + self.dur
    }

    fn is_comm(&self) -> bool {
        self.name == ALLREDUCE
    }
}

/// What the options ask of the loop.
struct LoopPlan {
    ranks: u32,
    iterations: u32,
    seed: u64,
    host_gap_ns: u64,
    allreduce: f64,
}

impl LoopPlan {
    fn new(opts: &SynthOptions) -> Result<Self, SynthError> {
        if opts.layout == Layout::Merged {
            return Err(SynthError::InvalidOption(format!(
                "scenario {SCENARIO} writes one file per rank (--layout per-rank)"
            )));
        }
        if opts.run_jitter != 0.0 {
            return Err(SynthError::InvalidOption(format!(
                "scenario {SCENARIO} takes no --run-jitter"
            )));
        }
        let (mut host_gap_ns, mut allreduce) = (0, 1.0);
        for i in &opts.injections {
            match i.kind {
                InjectionKind::HostGap => host_gap_ns = (i.factor * MS as f64).round() as u64,
                InjectionKind::Allreduce => allreduce = i.factor,
                _ => {
                    return Err(SynthError::InvalidOption(format!(
                        "scenario {SCENARIO} takes the injections host-gap=MS and allreduce=F, \
                         not {i}"
                    )))
                }
            }
        }
        let iterations = (f64::from(opts.decode_steps) * opts.scale).round();
        if !(1.0..=100_000.0).contains(&iterations) {
            return Err(SynthError::InvalidOption(format!(
                "scenario {SCENARIO} writes 1 to 100000 iterations (--decode-steps), got {iterations}"
            )));
        }
        Ok(LoopPlan {
            ranks: opts.ranks.unwrap_or(DEFAULT_RANKS),
            iterations: iterations as u32,
            seed: opts.seed,
            host_gap_ns,
            allreduce,
        })
    }
}

/// A kernel of `us` microseconds, jittered.
fn dur(rng: &mut Rng, us: u64) -> u64 {
    (us as f64 * US as f64 * rng.jitter(KERNEL_JITTER)).round() as u64
}

/// `ops` one after another on the main stream from `*main`, launched from thread `tid`.
fn in_turn(
    ks: &mut Vec<Kernel>,
    main: &mut u64,
    rng: &mut Rng,
    ops: &[(&'static str, u64)],
    tid: u32,
) {
    for &(name, us) in ops {
        let d = dur(rng, us);
        ks.push(Kernel {
            name,
            ts: *main,
            dur: d,
            stream: MAIN_STREAM,
            tid,
        });
        *main += d + LAUNCH_GAP;
    }
}

/// Every iteration of one rank, placed: per iteration its kernels (on both streams).
fn place(plan: &LoopPlan, rank: u32) -> Vec<Vec<Kernel>> {
    let mut rng = Rng::derive(plan.seed, rank, 0x100F);
    let mut t = T0 + u64::from(rank) * 17 * US;
    let mut out = Vec::with_capacity(plan.iterations as usize);
    for _ in 0..plan.iterations {
        let mut ks = Vec::new();
        let mut main = t;
        for _ in 0..LAYERS {
            in_turn(&mut ks, &mut main, &mut rng, &FORWARD, MAIN_TID);
        }
        let mut comm = 0;
        for _ in 0..LAYERS {
            in_turn(&mut ks, &mut main, &mut rng, &BACKWARD, AUTOGRAD_TID);
            // The layer's gradients, allreduced on the side stream while the backward goes on.
            let d = (dur(&mut rng, ALLREDUCE_US) as f64 * plan.allreduce).round() as u64;
            let ts = main.max(comm);
            ks.push(Kernel {
                name: ALLREDUCE,
                ts,
                dur: d,
                stream: COMM_STREAM,
                tid: AUTOGRAD_TID,
            });
            comm = ts + d + LAUNCH_GAP;
        }
        // The optimizer waits for the last allreduce.
        main = main.max(comm);
        in_turn(&mut ks, &mut main, &mut rng, &OPTIMIZER, MAIN_TID);
        let end = ks.iter().map(Kernel::end).max().unwrap_or(main);
        let gap = (DATA_GAP as f64 * rng.jitter(GAP_JITTER)).round() as u64;
        t = end + gap + plan.host_gap_ns;
        out.push(ks);
    }
    out
}

/// Writes one rank's trace; returns (uncompressed bytes, events).
fn write_rank(
    plan: &LoopPlan,
    rank: u32,
    iterations: &[Vec<Kernel>],
    path: &Path,
    gzip_level: Option<u32>,
) -> Result<(u64, u64), SynthError> {
    let mut out = Out::create(path, gzip_level)?;
    let ranks: Vec<String> = (0..plan.ranks).map(|r| r.to_string()).collect();
    let head = format!(
        "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {{\"id\": {rank}, \"name\": \"{DEVICE}\", \"totalGlobalMem\": 85029158912, \"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}}\n  ],\n  \"cupti_version\": 24, \"cuda_runtime_version\": 12040, \"cuda_driver_version\": 12040,\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {rank}, \"world_size\": {}, \"pg_count\": 1, \"pg_config\": [{{\"pg_name\": \"0\", \"pg_desc\": \"default_pg\", \"backend_config\": \"cuda:nccl\", \"pg_size\": {}, \"ranks\": [{}]}}]}},\n  \"displayTimeUnit\": \"ms\",\n  \"traceEvents\": [",
        plan.ranks,
        plan.ranks,
        ranks.join(", ")
    );
    out.raw(&head)?;
    let host = 4000 + rank;
    let mut corr: u64 = 0;
    for (k, ks) in iterations.iter().enumerate() {
        let first = ks.iter().map(|k| k.ts).min().unwrap_or(0) - LEAD;
        let last = ks.iter().map(|k| k.ts).max().unwrap_or(0) - LEAD + 5 * US;
        out.ev
            .text(r#"{"ph":"X","cat":"user_annotation","name":"ProfilerStep#"#)
            .int(k + 1)
            .text(r#"","pid":"#)
            .int(host)
            .text(r#","tid":"#)
            .int(MAIN_TID)
            .text(r#","ts":"#)
            .us(first - 50 * US)
            .text(r#","dur":"#)
            .us(last - first + 70 * US)
            .text(r#","args":{}}"#);
        out.emit()?;
        for kernel in ks {
            corr += 1;
            out.ev
                .text(r#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":"#)
                .int(host)
                .text(r#","tid":"#)
                .int(kernel.tid)
                .text(r#","ts":"#)
                .us(kernel.ts - LEAD)
                .text(r#","dur":"#)
                .us(5 * US)
                .text(r#","args":{"correlation":"#)
                .int(corr)
                .text("}}");
            out.emit()?;
            out.ev
                .text(r#"{"ph":"X","cat":"kernel","name":"#)
                .text(&json_str(kernel.name))
                .text(r#","pid":"#)
                .int(rank)
                .text(r#","tid":"#)
                .int(kernel.stream)
                .text(r#","ts":"#)
                .us(kernel.ts)
                .text(r#","dur":"#)
                .us(kernel.dur)
                .text(r#","args":{"device":"#)
                .int(rank)
                .text(r#","stream":"#)
                .int(kernel.stream)
                .text(r#","correlation":"#)
                .int(corr)
                .text("}}");
            out.emit()?;
        }
    }
    out.raw("\n  ]\n}\n")?;
    out.finish()
}

/// A metric's truth: the per-rank values, the run's `across` them, `p90` the max of the per-rank
/// p90 where asked.
fn truth_metric(
    id: MetricId,
    per_rank: &[Vec<f64>],
    statistic: Statistic,
    max: bool,
    p90: bool,
) -> Value {
    let def = id.def();
    let values: Vec<f64> = per_rank.iter().map(|s| statistic.of(s)).collect();
    let value = values
        .iter()
        .copied()
        .reduce(if max { f64::max } else { f64::min })
        .unwrap_or(f64::NAN);
    let mut m = Map::new();
    m.insert("value".into(), json!(value));
    if p90 {
        let q = per_rank
            .iter()
            .map(|s| Statistic::P90.of(s))
            .fold(f64::NEG_INFINITY, f64::max);
        m.insert("p90".into(), json!(q));
    }
    m.insert("unit".into(), json!(def.unit));
    m.insert("direction".into(), json!(def.direction));
    let by_rank: BTreeMap<String, f64> = values
        .iter()
        .enumerate()
        .map(|(r, v)| (r.to_string(), *v))
        .collect();
    m.insert("per_rank".into(), json!(by_rank));
    Value::Object(m)
}

/// The run's figures as `docs/METRICS.md` defines them for a loop, from the placed kernels.
fn truth(ranks: &[Vec<Vec<Kernel>>]) -> Value {
    let mut iter_ms = Vec::new();
    let mut comm_pct = Vec::new();
    let mut calls = Vec::new();
    for iterations in ranks {
        let starts: Vec<u64> = iterations
            .iter()
            .map(|ks| ks.iter().map(|k| k.ts).min().unwrap_or(0))
            .collect();
        iter_ms.push(
            starts
                .windows(2)
                .map(|w| (w[1] - w[0]) as f64 / MS as f64)
                .collect::<Vec<f64>>(),
        );
        comm_pct.push(
            iterations
                .iter()
                .map(|ks| {
                    let all: u64 = ks.iter().map(|k| k.dur).sum();
                    let comm: u64 = ks.iter().filter(|k| k.is_comm()).map(|k| k.dur).sum();
                    comm as f64 / all as f64 * 100.0
                })
                .collect::<Vec<f64>>(),
        );
        calls.extend(
            iterations
                .iter()
                .flatten()
                .filter(|k| k.is_comm())
                .map(|k| k.dur as f64 / US as f64),
        );
    }
    let mut metrics = Map::new();
    if iter_ms.iter().all(|s| !s.is_empty()) {
        metrics.insert(
            MetricId::IterationMs.name().into(),
            truth_metric(
                MetricId::IterationMs,
                &iter_ms,
                Statistic::Median,
                true,
                true,
            ),
        );
    }
    metrics.insert(
        MetricId::CommPct.name().into(),
        truth_metric(MetricId::CommPct, &comm_pct, Statistic::Median, true, false),
    );
    let mean = calls.iter().sum::<f64>() / calls.len().max(1) as f64;
    metrics.insert(
        MetricId::AllreduceUs.name().into(),
        json!({"value": mean, "unit": MetricId::AllreduceUs.def().unit,
               "direction": MetricId::AllreduceUs.def().direction}),
    );
    Value::Object(metrics)
}

/// Generates the loop's traces (one per rank) and `truth.json` into `out`.
pub(crate) fn generate(opts: &SynthOptions, out: &Path) -> Result<SynthSummary, SynthError> {
    let plan = LoopPlan::new(opts)?;
    if plan.ranks == 0 || plan.ranks > 1024 {
        return Err(SynthError::InvalidOption(
            "--ranks must be between 1 and 1024".into(),
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| SynthError::io(out, e))?;
    let placed: Vec<Vec<Vec<Kernel>>> = (0..plan.ranks).map(|r| place(&plan, r)).collect();
    let mut files = Vec::new();
    let (mut bytes_uncompressed, mut bytes_compressed, mut events) = (0, 0, 0);
    for (rank, iterations) in placed.iter().enumerate() {
        let name = format!("training-loop-rank{rank}.pt.trace.json.gz");
        let path = encoded_path(out, &name, opts.gzip_level);
        let (bytes, n) = write_rank(&plan, rank as u32, iterations, &path, opts.gzip_level)?;
        bytes_uncompressed += bytes;
        events += n;
        bytes_compressed += std::fs::metadata(&path)
            .map_err(|e| SynthError::io(&path, e))?
            .len();
        files.push(path);
    }
    let file_names: Vec<String> = files
        .iter()
        .filter_map(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
        .collect();
    let t = json!({
        "scenario": SCENARIO,
        "device": DEVICE,
        "seed": opts.seed,
        "ranks": plan.ranks,
        "iterations_per_rank": plan.iterations,
        "run_kind": "loop",
        "injections": opts.injections.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "files": file_names,
        "metrics": truth(&placed),
    });
    let truth_path = out.join("truth.json");
    let text = serde_json::to_string_pretty(&t).unwrap_or_default();
    std::fs::write(&truth_path, text + "\n").map_err(|e| SynthError::io(&truth_path, e))?;
    Ok(SynthSummary {
        scenario: SCENARIO.to_string(),
        ranks: plan.ranks,
        decode_steps_per_rank: plan.iterations,
        files,
        frontend: None,
        truth_path,
        bytes_uncompressed,
        bytes_compressed,
        events,
    })
}
