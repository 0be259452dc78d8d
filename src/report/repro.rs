//! `check --repro DIR` (issue 41): for each regressed kernel, a record of what the trace says
//! about it (op stack, shapes, dtypes, times, roofline) and, where its op has a PyTorch
//! equivalent, a Python script that times that call at the recorded shapes.
//!
//! [`ReproKernel`] is the record (its JSON, with `"schema": 1` first, is the `.json` file,
//! documented in `docs/JSON.md`, "Repro record"); [`torch_equivalent`] says which PyTorch call
//! stands for its op, or why none does; `script_named` writes the script; [`repro_files`] names
//! and writes every file of the directory (the caller writes them to disk).

use serde::Serialize;

use crate::analysis::roofline::{parse_dtype, Bound, Dtype};
use crate::report::table::code_span;
use crate::taxonomy::names::{short_name, untruncated_short_name};

/// Version of the repro record's schema (its `"schema"` key).
pub(crate) const REPRO_SCHEMA: u32 = 1;

/// Longest file name [`repro_files`] gives.
const MAX_FILE_NAME: usize = 80;
/// Longest kernel slug in a file name.
const MAX_SLUG: usize = 60;

/// The PyTorch call a repro script times for a kernel's op, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum TorchEquivalent {
    /// The call, as the script writes it: `torch.mm(a, b.t())`.
    Call(String),
    /// Why there is no script: "`aiter::fmoe_fp4` has no PyTorch op: ...".
    None(String),
}

/// What the trace says about one regressed kernel: the repro record. Its JSON (with
/// `"schema": 1` first) is the `NN-<kernel>.json` file of `check --repro`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ReproKernel {
    /// The kernel's full name, as the trace writes it.
    pub kernel: String,
    /// The op stack that launched it, innermost first: `["aten::mm", "aiter::gemm_a16w16"]`.
    pub ops: Vec<String>,
    /// The op of `ops` whose inputs `input_dims`, `input_types` and `input_strides` are.
    pub op: String,
    /// The Python scope (`python_function` frames) of the call, if recorded.
    pub python_scope: Option<String>,
    /// `Input Dims` of `op`, one list per input (empty for a scalar).
    pub input_dims: Vec<Vec<u64>>,
    /// `Input type` of `op`, one per input (`c10::BFloat16`, `Scalar`, ``).
    pub input_types: Vec<String>,
    /// `Input Strides` of `op`, if recorded.
    pub input_strides: Option<Vec<Vec<u64>>>,
    /// The kernel's time per call in the baseline, ns, if the baseline has it.
    pub baseline_ns: Option<f64>,
    /// The kernel's time per call in the run, ns.
    pub run_ns: f64,
    /// Calls per step in the run.
    pub calls_per_step: f64,
    /// FLOPs of one call, if the op's shapes give them.
    pub flops_per_call: Option<f64>,
    /// Bytes one call moves, if the op's shapes give them.
    pub bytes_per_call: Option<f64>,
    /// The share of the part's limit the run's call reached, %, if known.
    pub pct_of_peak: Option<f64>,
    /// The run's call against the roofline, if the part has a peak table.
    pub bound: Option<Bound>,
    /// The PyTorch call the script times, or why there is none ([`torch_equivalent`]).
    pub torch_equivalent: TorchEquivalent,
}

/// The record's JSON: the schema first, then the record's fields.
#[derive(Serialize)]
struct Record<'a> {
    schema: u32,
    #[serde(flatten)]
    kernel: &'a ReproKernel,
}

/// The records of a check: one for the kernel its Why names (none when the Why names no
/// kernel). Where the trace or its capture gave that kernel a site, the record holds its op,
/// shapes and scope; otherwise it holds the times and says why there is no script.
pub(crate) fn records(result: &crate::gate::CheckResult) -> Vec<ReproKernel> {
    let e = &result.explanation;
    let Some(kernel) = e.cause.kernel() else {
        return Vec::new();
    };
    let delta = |name: &str| e.kernels.iter().find(|d| d.name == name);
    // The baseline's time per call of the kernel (of the name it had there, if renamed).
    let baseline_ns = |name: &str| {
        delta(name).and_then(|d| ns_per_call(d.baseline_ms_per_step, d.baseline_calls_per_step))
    };
    let site = e.site.as_ref().filter(|s| s.kernel == kernel);
    let Some((site, op)) = site.and_then(|s| Some((s, s.ops.first()?))) else {
        return vec![without_op(kernel, baseline_ns(kernel), delta(kernel))];
    };
    let bound = site.gemm.as_ref().and_then(|g| g.bound.clone());
    // The run's time per call as the baseline's is taken (all the kernel's calls in a step), so
    // the two compare; the site's own time (its op's calls only) where the Why has no delta.
    let run = delta(&site.kernel);
    let run_ns = run
        .and_then(|d| ns_per_call(d.current_ms_per_step, d.current_calls_per_step))
        .unwrap_or(site.us_per_call * 1e3);
    let mut record = ReproKernel {
        kernel: site.kernel.clone(),
        ops: site.ops.iter().map(|o| o.name.clone()).collect(),
        op: op.name.clone(),
        python_scope: site.scope.clone(),
        input_dims: op.input_dims.clone(),
        input_types: op.input_types.clone(),
        input_strides: None,
        baseline_ns: baseline_ns(&site.kernel),
        run_ns,
        // The kernel's calls, as `run_ns` counts them.
        calls_per_step: run.map_or(site.calls_per_step, |d| d.current_calls_per_step),
        flops_per_call: site.gemm.as_ref().map(|g| g.flops_per_call),
        bytes_per_call: site.gemm.as_ref().map(|g| g.bytes_per_call),
        pct_of_peak: bound.as_ref().and_then(|b| b.pct_of_limit),
        bound,
        torch_equivalent: TorchEquivalent::None(String::new()),
    };
    record.torch_equivalent = torch_equivalent(&record);
    vec![record]
}

/// Time per call, ns, from ms and calls per step; `None` without calls.
fn ns_per_call(ms_per_step: f64, calls_per_step: f64) -> Option<f64> {
    (calls_per_step > 0.0).then(|| ms_per_step / calls_per_step * 1e6)
}

/// The record of a kernel the trace gave no op: its times only.
fn without_op(
    kernel: &str,
    baseline_ns: Option<f64>,
    delta: Option<&crate::gate::explain::Delta>,
) -> ReproKernel {
    let calls = delta.map_or(0.0, |d| d.current_calls_per_step);
    let run_ns = delta
        .and_then(|d| ns_per_call(d.current_ms_per_step, calls))
        .unwrap_or(0.0);
    ReproKernel {
        kernel: kernel.to_string(),
        ops: Vec::new(),
        op: String::new(),
        python_scope: None,
        input_dims: Vec::new(),
        input_types: Vec::new(),
        input_strides: None,
        baseline_ns,
        run_ns,
        calls_per_step: calls,
        flops_per_call: None,
        bytes_per_call: None,
        pct_of_peak: None,
        bound: None,
        torch_equivalent: TorchEquivalent::None(NO_OP.to_string()),
    }
}

/// Why a kernel without a site has no script.
const NO_OP: &str = "the trace gives this kernel no op: a graph-replayed kernel needs its \
capture trace (--capture), an eager one a trace recorded with record_shapes=True";

/// The record as the `.json` file holds it.
pub(crate) fn record_json(kernel: &ReproKernel) -> String {
    let record = Record {
        schema: REPRO_SCHEMA,
        kernel,
    };
    let mut text = serde_json::to_string_pretty(&record).expect("repro records serialise");
    text.push('\n');
    text
}

/// One tensor the script builds: its Python name and the input it stands for.
struct Tensor {
    name: &'static str,
    input: usize,
}

/// The PyTorch call of an op with these inputs: the tensors it takes and the call.
struct Mapping {
    tensors: Vec<Tensor>,
    call: String,
}

fn tensors(names: &[(&'static str, usize)]) -> Vec<Tensor> {
    names
        .iter()
        .map(|&(name, input)| Tensor { name, input })
        .collect()
}

/// The PyTorch call for `kernel.op` at its recorded shapes and dtypes, or why there is none.
fn mapping(kernel: &ReproKernel) -> Result<Mapping, String> {
    let op = kernel.op.as_str();
    let shown = code_span(op);
    let dims = &kernel.input_dims;
    let dim = |i: usize| dims.get(i).map(Vec::as_slice).unwrap_or(&[]);
    let misfit = |takes: &str| {
        Err(format!(
            "{shown}'s inputs {} are not the {takes} it takes",
            dims_text(dims)
        ))
    };
    let is_sdpa =
        op == "aten::scaled_dot_product_attention" || op.starts_with("aten::_scaled_dot_product_");
    let mapping = match op {
        "aten::mm" => match (dim(0), dim(1)) {
            ([_, k], [kb, _]) if k == kb => Mapping {
                tensors: tensors(&[("a", 0), ("b", 1)]),
                call: "torch.mm(a, b)".to_string(),
            },
            _ => return misfit("[M,K] x [K,N]"),
        },
        "aten::matmul" => match (dim(0), dim(1)) {
            (a, b) if a.len() >= 2 && b.len() >= 2 && a[a.len() - 1] == b[b.len() - 2] => Mapping {
                tensors: tensors(&[("a", 0), ("b", 1)]),
                call: "torch.matmul(a, b)".to_string(),
            },
            _ => return misfit("[..., M, K] x [..., K, N]"),
        },
        _ if op.ends_with("gemm_a16w16") => match (dim(0), dim(1)) {
            ([_, k], [_, kb]) if k == kb => Mapping {
                tensors: tensors(&[("a", 0), ("b", 1)]),
                call: "torch.mm(a, b.t())".to_string(),
            },
            _ => return misfit("[M,K] x [N,K]"),
        },
        "aten::addmm" => match (dim(0), dim(1), dim(2)) {
            (bias, [_, k], [kb, _]) if k == kb && !bias.is_empty() => Mapping {
                tensors: tensors(&[("bias", 0), ("a", 1), ("b", 2)]),
                call: "torch.addmm(bias, a, b)".to_string(),
            },
            _ => return misfit("bias, [M,K] x [K,N]"),
        },
        "aten::linear" => match (dim(0), dim(1)) {
            (x, [_, k]) if !x.is_empty() && x[x.len() - 1] == *k => {
                if dim(2).is_empty() {
                    Mapping {
                        tensors: tensors(&[("x", 0), ("w", 1)]),
                        call: "torch.nn.functional.linear(x, w)".to_string(),
                    }
                } else {
                    Mapping {
                        tensors: tensors(&[("x", 0), ("w", 1), ("bias", 2)]),
                        call: "torch.nn.functional.linear(x, w, bias)".to_string(),
                    }
                }
            }
            _ => return misfit("[..., K] x weight [N,K]"),
        },
        "aten::bmm" => match (dim(0), dim(1)) {
            ([b, _, k], [bb, kb, _]) if b == bb && k == kb => Mapping {
                tensors: tensors(&[("a", 0), ("b", 1)]),
                call: "torch.bmm(a, b)".to_string(),
            },
            _ => return misfit("[B,M,K] x [B,K,N]"),
        },
        "aten::baddbmm" => match (dim(0), dim(1), dim(2)) {
            (c, [b, _, k], [bb, kb, _]) if b == bb && k == kb && !c.is_empty() => Mapping {
                tensors: tensors(&[("c", 0), ("a", 1), ("b", 2)]),
                call: "torch.baddbmm(c, a, b)".to_string(),
            },
            _ => return misfit("[B,M,N], [B,M,K] x [B,K,N]"),
        },
        _ if is_sdpa => match (dim(0), dim(1), dim(2)) {
            ([b, h, _, e], [bk, hk, s, ek], [bv, hv, sv, _])
                if b == bk && b == bv && e == ek && s == sv && hk == hv && *hk > 0 =>
            {
                let gqa = if h != hk { ", enable_gqa=True" } else { "" };
                Mapping {
                    tensors: tensors(&[("q", 0), ("k", 1), ("v", 2)]),
                    call: format!("torch.nn.functional.scaled_dot_product_attention(q, k, v{gqa})"),
                }
            }
            _ => return misfit("query, key, value [B,H,L,E] (key and value of one length)"),
        },
        _ => {
            return Err(format!(
                "{shown} has no PyTorch op: its kernel is not reachable from torch"
            ))
        }
    };
    for t in &mapping.tensors {
        let ty = kernel.input_types.get(t.input).map_or("", String::as_str);
        torch_dtype(ty).map_err(|why| format!("{shown}: input {} {why}", t.input))?;
    }
    Ok(mapping)
}

/// The torch dtype of a trace's `Input type`, for the dtypes a plain PyTorch call takes.
fn torch_dtype(trace_type: &str) -> Result<&'static str, String> {
    let shown = code_span(trace_type);
    let Some(parsed) = parse_dtype(trace_type) else {
        return Err(if trace_type.is_empty() {
            "has no recorded type".to_string()
        } else {
            format!("is {shown}, no floating-point tensor type")
        });
    };
    match parsed.dtype {
        Dtype::Bf16 => Ok("torch.bfloat16"),
        Dtype::Fp16 => Ok("torch.float16"),
        Dtype::Fp32 => Ok("torch.float32"),
        Dtype::Fp64 => Ok("torch.float64"),
        narrow => Err(format!(
            "is {shown} ({}): the plain PyTorch op has no kernel for it (a scaled op such as \
             `torch._scaled_mm` is another call)",
            narrow.key()
        )),
    }
}

/// `[[32, 4096], [24576, 4096]]`.
fn dims_text(dims: &[Vec<u64>]) -> String {
    serde_json::to_string(dims)
        .expect("dims serialise")
        .replace(',', ", ")
}

/// The PyTorch call that stands for the kernel's op at its recorded shapes, or why none does:
/// what the record's `torch_equivalent` holds.
pub(crate) fn torch_equivalent(kernel: &ReproKernel) -> TorchEquivalent {
    match mapping(kernel) {
        Ok(m) => TorchEquivalent::Call(m.call),
        Err(why) => TorchEquivalent::None(why),
    }
}

/// The Python script, with `@NAME@`, `@CALL@`, `@RECORD@` and `@BUILD@` to fill in. It prints
/// with `%` formats: every float tracegate itself writes goes through `units`.
const SCRIPT: &str = r#"#!/usr/bin/env python3
"""Times a regressed kernel's op as tracegate's `check --repro` recorded it (issue 41).

RECORD below (also the .json file beside this script) holds the op, its input shapes and dtypes
and the kernel's time per call in the baseline and in the run. This script builds random inputs
of those shapes and dtypes (contiguous, whatever strides the trace recorded) and times

    @CALL@

PyTorch may pick another kernel than the traced run did (another library, another tile size):
the figures compare best on the traced device, at --scale 1.

Usage: python3 @NAME@ [--iters N] [--warmup N] [--scale F]
  --scale F divides every dimension by F (at least 1), small enough for a CPU.
Needs only PyTorch and the Python standard library.
"""
import argparse
import json
import statistics
import time

import torch

RECORD = json.loads(@RECORD@)


def make(shape, dtype, device):
    return torch.randn(shape, dtype=dtype, device=device)


def build(dims, device):
@BUILD@


def scaled(dims, scale):
    return [[max(1, int(d / scale)) for d in shape] for shape in dims]


def us(ns):
    return "-" if ns is None else "%.1f µs" % (ns / 1000.0)


def main():
    parser = argparse.ArgumentParser(description="Times " + RECORD["op"] + " at the shapes of a trace.")
    parser.add_argument("--iters", type=int, default=100, help="timed calls (default 100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls first (default 10)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="divide every dimension by F, at least 1 (default 1: the trace's shapes)")
    args = parser.parse_args()
    if args.iters < 1 or args.warmup < 0 or not args.scale > 0:
        parser.error("--iters must be at least 1, --warmup at least 0 and --scale above 0")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dims = scaled(RECORD["input_dims"], args.scale)
    call = build(dims, device)
    times = []
    with torch.no_grad():
        for _ in range(args.warmup):
            call()
        if device == "cuda":
            torch.cuda.synchronize()
            for _ in range(args.iters):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1e6)
        else:
            for _ in range(args.iters):
                t0 = time.perf_counter()
                call()
                times.append((time.perf_counter() - t0) * 1e9)
    where = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print("kernel:   %s" % RECORD["kernel"])
    print("op:       %s, timed as the PyTorch call above" % RECORD["op"])
    print("measured: %s per call (median of %d) on %s, inputs %s"
          % (us(statistics.median(times)), args.iters, where, dims))
    print("recorded: baseline %s, run %s per call (the trace's device, its shapes)"
          % (us(RECORD["baseline_ns"]), us(RECORD["run_ns"])))
    if args.scale != 1:
        print("note: --scale %g runs smaller shapes than the trace's: the times do not compare" % args.scale)


if __name__ == "__main__":
    main()
"#;

/// The Python script that times the kernel's op through its PyTorch equivalent, or `None` when
/// the op has none ([`torch_equivalent`] says why). `file_name` is what the usage line calls it.
fn script_named(kernel: &ReproKernel, file_name: &str) -> Option<String> {
    let mapping = mapping(kernel).ok()?;
    let mut build = String::new();
    for t in &mapping.tensors {
        let ty = kernel.input_types.get(t.input).map_or("", String::as_str);
        let dtype = torch_dtype(ty).ok()?;
        build.push_str(&format!(
            "    {} = make(dims[{}], {dtype}, device)\n",
            t.name, t.input
        ));
    }
    build.push_str(&format!("    return lambda: {}", mapping.call));
    // The record as a JSON string inside a Python string literal: JSON's string escapes are
    // Python's, so no outside text reaches the code.
    let compact = serde_json::to_string(&Record {
        schema: REPRO_SCHEMA,
        kernel,
    })
    .expect("repro records serialise");
    let record = serde_json::to_string(&compact).expect("strings serialise");
    Some(
        SCRIPT
            .replace("@NAME@", file_name)
            .replace("@CALL@", &mapping.call)
            .replace("@BUILD@", &build)
            .replace("@RECORD@", &record),
    )
}

/// The Python script that times the kernel's op through its PyTorch equivalent (`aten::mm`,
/// `aten::matmul`, aiter's `gemm_a16w16` with B as [N,K], `aten::addmm`, `aten::linear`,
/// `aten::bmm`, `aten::baddbmm`, scaled dot-product attention), or `None` when the op has none
/// or its inputs are not a dtype the plain call takes ([`torch_equivalent`] says why).
#[cfg(test)]
pub(crate) fn torch_script(kernel: &ReproKernel) -> Option<String> {
    script_named(kernel, "repro.py")
}

/// A file-name-safe slug of a kernel name: the readable name's function (before any template
/// arguments, after the last `::`), lowercase ASCII letters and digits joined by `-`, at most
/// [`MAX_SLUG`] characters; `kernel` when nothing is left.
fn slug(kernel: &str) -> String {
    let readable = untruncated_short_name(kernel);
    let head = readable.split(['<', '(']).next().unwrap_or("");
    let function = head.rsplit("::").next().unwrap_or("");
    let mut out = String::new();
    for c in function.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= MAX_SLUG {
            break;
        }
    }
    let out = out.trim_matches('-');
    if out.is_empty() {
        "kernel".to_string()
    } else {
        out.to_string()
    }
}

/// Every file of `check --repro DIR`, name and contents: `NN-<kernel>.json` (the record) for each
/// kernel, `NN-<kernel>.py` where its op has a script, and `README.md` listing them and how to
/// run them. Names are plain (ASCII letters, digits, `-`, `.`; no path separator), at most 80
/// characters.
pub(crate) fn repro_files(kernels: &[ReproKernel]) -> Vec<(String, String)> {
    let width = kernels.len().to_string().len().max(2);
    let mut files = Vec::new();
    let mut lines = Vec::new();
    for (i, kernel) in kernels.iter().enumerate() {
        let stem = format!("{:0width$}-{}", i + 1, slug(&kernel.kernel));
        let stem: String = stem.chars().take(MAX_FILE_NAME - ".json".len()).collect();
        let json = format!("{stem}.json");
        let py = format!("{stem}.py");
        files.push((json.clone(), record_json(kernel)));
        let mut line = format!(
            "- {}: {} ({})",
            code_span(&json),
            code_span(&short_name(&kernel.kernel)),
            code_span(&kernel.op)
        );
        match (script_named(kernel, &py), mapping(kernel)) {
            (Some(script), Ok(m)) => {
                line.push_str(&format!(
                    "; {} times {}.",
                    code_span(&py),
                    code_span(&m.call)
                ));
                files.push((py, script));
            }
            (_, Err(why)) => {
                line.push_str(&format!("; no script: {}.", crate::text::printable(&why)));
            }
            (None, Ok(_)) => line.push_str("; no script."),
        }
        lines.push(line);
    }
    let first = files
        .iter()
        .find(|(name, _)| name.ends_with(".py"))
        .map_or("NN-kernel.py", |(name, _)| name.as_str());
    let readme = format!(
        "# Repro of the regressed kernels (`tracegate check --repro`)\n\
         \n\
         One record per regressed kernel (`NN-<kernel>.json`: the op stack, shapes, dtypes, \
         times per call in the baseline and the run, and the roofline; schema in tracegate's \
         `docs/JSON.md`, \"Repro record\") and, where the op has a PyTorch equivalent, a script \
         that times that call at the recorded shapes (`NN-<kernel>.py`).\n\
         \n\
         {}\n\
         \n\
         ## Running a script\n\
         \n\
         Each script needs only PyTorch and the Python standard library. On the GPU (CUDA or \
         ROCm), at the trace's shapes, timed with CUDA events:\n\
         \n\
         ```sh\n\
         python3 {first} --iters 100\n\
         ```\n\
         \n\
         Without a GPU, or for a quick check, divide every dimension by F (`--scale`; at \
         least 1 each), timed with `time.perf_counter`:\n\
         \n\
         ```sh\n\
         python3 {first} --scale 64 --iters 3\n\
         ```\n\
         \n\
         Each prints the median time per call it measured beside the baseline's and the run's \
         from the trace. PyTorch may pick another kernel than the traced run did: the figures \
         compare best on the traced device, at `--scale 1`.\n",
        if lines.is_empty() {
            "No kernel regressed.".to_string()
        } else {
            lines.join("\n")
        }
    );
    files.push(("README.md".to_string(), readme));
    files
}

#[cfg(test)]
mod tests;
