//! `synth --with-stack`: a graph scenario's decode graph written as its capture per rank
//! (`capture_traces/`): the launches in the replay's order between a `*StreamBeginCapture` and
//! a `*StreamEndCapture`, each inside the frames and ops of its site ([`super::stack`]); where
//! the scenario carries graph node ids, the captured launches and the replayed kernels both
//! carry the op's index in the decode iteration. Also truth.json's `sites` and `capture_join`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::generate::Plan;
use super::scenario::Vendor;
use super::stack::site_text;
use super::write::{encoded_path, json_str, Append, Out};
use super::SynthError;

/// The directory SGLang and vLLM write captures into (where `report` looks for them).
const CAPTURE_DIR: &str = "capture_traces";

/// The graphs a decode iteration replays, as ranges of decode ops: the whole iteration, or with
/// speculative decoding the draft graph and the verify's (the draft extend is eager). `None`
/// where decode is not replayed as whole-forward graphs (eager loops, piecewise graphs).
pub(crate) fn decode_graphs(plan: &Plan) -> Option<Vec<std::ops::Range<usize>>> {
    if plan.sc.eager.is_some() {
        return None;
    }
    let n = plan.decode_ops_len();
    Some(match plan.mtp_parts() {
        Some((verify_at, extend_at)) => vec![0..verify_at, verify_at..extend_at],
        None => std::iter::once(0..n).collect(),
    })
}

/// The batch the decode ops run with (the M of their GEMMs).
fn decode_rows(plan: &Plan) -> u64 {
    if plan.sc.eager.is_some() {
        u64::from(super::generate::EAGER_BATCH)
    } else {
        u64::from(plan.batch)
    }
}

/// The name of rank `rank`'s capture: SGLang's `bs_{bs}_rank{r}.json.gz`, vLLM's
/// `graph_capture_rank_{r}.{ns}.pt.trace.json.gz`.
fn capture_name(plan: &Plan, rank: u32) -> String {
    if plan.sc.vllm_stock.is_some() {
        let ns = plan.stamp.replace('.', "");
        format!("graph_capture_rank_{rank}.{ns}.pt.trace.json.gz")
    } else {
        format!("bs_{}_rank{rank}.json.gz", plan.batch)
    }
}

/// Writes each rank's capture of its decode graphs into `out/capture_traces/`, each graph's
/// launches in the order of `orders[rank]` (decode op indices in the replay's order; op order
/// where empty); nothing for a scenario whose decode is no whole-forward graph.
pub(crate) fn write_captures(
    plan: &Plan,
    out: &Path,
    gzip_level: Option<u32>,
    orders: &[Vec<usize>],
) -> Result<Vec<PathBuf>, SynthError> {
    let (Some(stack), Some(graphs)) = (plan.stack.as_ref(), decode_graphs(plan)) else {
        return Ok(Vec::new());
    };
    let dir = out.join(CAPTURE_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| SynthError::io(&dir, e))?;
    let m = decode_rows(plan);
    let amd = plan.sc.vendor == Vendor::Amd;
    let (begin, end, launch) = if amd {
        (
            "hipStreamBeginCapture",
            "hipStreamEndCapture",
            "hipLaunchKernel",
        )
    } else {
        (
            "cudaStreamBeginCapture",
            "cudaStreamEndCapture",
            "cudaLaunchKernel",
        )
    };
    let runner = if plan.sc.vllm_stock.is_some() {
        "vllm/v1/worker/gpu_model_runner.py(2436): _dummy_run"
    } else {
        "sglang/srt/model_executor/cuda_graph_runner.py(640): capture_one_batch_size"
    };
    let mut paths = Vec::new();
    for rank in 0..plan.ranks {
        let name = capture_name(plan, rank);
        let path = encoded_path(&dir, &name, gzip_level);
        let mut w = Out::create(&path, gzip_level)?;
        w.raw("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [],\n  \"traceEvents\": [")?;
        let pid = 300_000 + rank;
        let mut ev = Events {
            out: &mut w,
            pid,
            t: 1_000_000_000,
        };
        let mut corr = 1u64;
        for graph in &graphs {
            ev.x("cuda_runtime", begin, ev.t, 2_000, "{}")?;
            ev.t += 10_000;
            let order: Vec<usize> = match orders.get(rank as usize) {
                Some(o) if !o.is_empty() => {
                    o.iter().copied().filter(|i| graph.contains(i)).collect()
                }
                _ => graph.clone().collect(),
            };
            for i in order {
                let spec = plan.decode_spec(i);
                let mut frames = vec![runner.to_string()];
                frames.extend(stack.frames(plan.specs(), spec, stack.layer(i)));
                let ops = stack.ops(plan.specs(), spec, m);
                let s = ev.t;
                let depth = (frames.len() + ops.len()) as u64;
                for (j, f) in frames.iter().enumerate() {
                    let j = j as u64;
                    ev.x(
                        "python_function",
                        &json_str(f),
                        s + j * 100,
                        19_000 - 2 * j * 100,
                        "{}",
                    )?;
                }
                for (j, op) in ops.iter().enumerate() {
                    let j = frames.len() as u64 + j as u64;
                    ev.x(
                        "cpu_op",
                        &json_str(op.name),
                        s + j * 100,
                        19_000 - 2 * j * 100,
                        &format!("{{{}}}", op.args()),
                    )?;
                }
                let mut args = String::from(r#"{"kernel":"#);
                args.text(plan.kernel_json(spec))
                    .text(r#","correlation":"#)
                    .int(corr);
                if stack.node_ids {
                    args.text(r#","graph node id":"#).int(i as u64);
                }
                args.push('}');
                ev.x("cuda_runtime", launch, s + depth * 100 + 500, 2_000, &args)?;
                corr += 1;
                ev.t += 20_000;
            }
            ev.x("cuda_runtime", end, ev.t, 2_000, "{}")?;
            ev.t += 100_000;
        }
        w.raw(&format!(
            "\n  ],\n  \"traceName\": \"capture_traces/{name}\"\n}}\n"
        ))?;
        w.finish()?;
        paths.push(path);
    }
    Ok(paths)
}

/// Events of one capture, on one host thread.
struct Events<'a> {
    out: &'a mut Out,
    pid: u32,
    /// The next slot's start, ns.
    t: u64,
}

impl Events<'_> {
    fn x(
        &mut self,
        cat: &str,
        name: &str,
        ts: u64,
        dur: u64,
        args: &str,
    ) -> Result<(), SynthError> {
        let quoted;
        let name = if name.starts_with('"') {
            name
        } else {
            quoted = json_str(name);
            &quoted
        };
        self.out
            .ev
            .text(r#"{"ph":"X","cat":""#)
            .text(cat)
            .text(r#"","name":"#)
            .text(name)
            .text(r#","pid":"#)
            .int(self.pid)
            .text(r#","tid":"#)
            .int(self.pid)
            .text(r#","ts":"#)
            .us(ts)
            .text(r#","dur":"#)
            .us(dur)
            .text(r#","args":"#)
            .text(args)
            .text("}");
        self.out.emit()
    }
}

/// truth.json's `sites`: each distinct kernel of the decode steps that gets a site (every one,
/// but the kernels a piecewise run replays, which have no capture), its op, shapes and scope as
/// tracegate prints them, and `M×N×K` for a GEMM.
pub(crate) fn truth_sites(plan: &Plan) -> Value {
    let Some(stack) = plan.stack.as_ref() else {
        return Value::Null;
    };
    let piecewise = plan.sc.eager.is_some_and(|e| e.piecewise);
    let m = decode_rows(plan);
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for i in 0..plan.decode_ops_len() {
        let spec = plan.decode_spec(i);
        if piecewise && plan.specs()[spec].cat != "attention" {
            continue;
        }
        let kernel = plan.kernel_name(spec);
        if !seen.insert(kernel.to_string()) {
            continue;
        }
        let (op, shapes, gemm) = site_text(&stack.ops(plan.specs(), spec, m));
        let mut site = json!({
            "kernel": kernel,
            "op": op,
            "shapes": shapes,
            "scope": stack.scope(plan.specs(), spec),
        });
        if let Some(g) = gemm {
            site["gemm"] = json!(g);
        }
        out.push(site);
    }
    Value::Array(out)
}

/// How tracegate joins the run's replays to the captures written (`capture_join` in truth.json),
/// or `None` where no capture is written.
pub(crate) fn capture_join(plan: &Plan) -> Option<&'static str> {
    let stack = plan.stack.as_ref()?;
    decode_graphs(plan)?;
    Some(if stack.node_ids {
        "graph node id"
    } else {
        "kernel name in capture order"
    })
}
