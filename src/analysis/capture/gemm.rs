//! GEMM shapes from the captured ops, with their orientation, and their throughput from the
//! replayed kernel times.
//!
//! Orientation: `aten::mm` takes A [M,K] and B [K,N] (`aten::addmm` the same after its bias);
//! `aten::linear` and aiter's `gemm_a16w16` take the weight as B [N,K].
//!
//! Counted as TraceLens counts them (checked against its GEMM table for the SGLang decode
//! replay): FLOPs = 2·M·N·K; bytes = (M·K + K·N + M·N) × the size of A's dtype (A and B read
//! once, the output written once; no bias). TraceLens writes those bytes in MiB ("Data Moved
//! (MB)") but its TB/s is decimal (bytes / s / 10^12), as here.

use std::collections::BTreeMap;

use crate::reader::{CaptureLaunch, CaptureOp};
use crate::stats::median;

use super::join::Attribution;

/// A GEMM as an op called it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GemmShape {
    pub op: String,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    /// Products in a batched GEMM (`aten::bmm`); 1 otherwise.
    pub batch: u64,
    /// A's dtype as the trace writes it (`c10::BFloat16`).
    pub dtype: String,
    pub dtype_bytes: u64,
}

impl GemmShape {
    pub fn flops(&self) -> f64 {
        2.0 * self.batch as f64 * self.m as f64 * self.n as f64 * self.k as f64
    }

    pub fn bytes(&self) -> f64 {
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        self.batch as f64 * (m * k + k * n + m * n) * self.dtype_bytes as f64
    }
}

/// A GEMM shape's throughput over the replayed kernels attributed to its op.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmThroughput {
    pub shape: GemmShape,
    /// Op calls (in the capture) whose kernels ran in the replay.
    pub calls: usize,
    /// Median over calls of the summed time of each call's kernels, nanoseconds.
    pub median_ns: f64,
    pub tflops: f64,
    /// Decimal terabytes per second.
    pub tbps: f64,
}

/// Where A and B are among an op's inputs, and whether B is [N,K].
fn layout(op: &str) -> Option<(usize, usize, bool)> {
    match op {
        "aten::mm" | "aten::matmul" | "aten::bmm" => Some((0, 1, false)),
        "aten::addmm" => Some((1, 2, false)),
        "aten::linear" => Some((0, 1, true)),
        _ if op.ends_with("gemm_a16w16") => Some((0, 1, true)),
        _ => None,
    }
}

/// Bytes per element of a dtype as PyTorch's profiler names it.
fn dtype_bytes(dtype: &str) -> Option<u64> {
    let d = dtype.to_ascii_lowercase();
    if d.contains("float8") || d.contains("fp8") || d == "signed char" || d == "unsigned char" {
        Some(1)
    } else if d.contains("bfloat16") || d.contains("half") || d == "short int" {
        Some(2)
    } else if d == "float" || d == "int" {
        Some(4)
    } else if d == "double" || d == "long int" {
        Some(8)
    } else {
        None
    }
}

/// The GEMM an op call is, if it is one with 2-D operands whose inner dimensions agree.
pub fn gemm_shape(op: &CaptureOp) -> Option<GemmShape> {
    gemm_shape_of(&op.name, &op.input_dims, &op.input_types)
}

/// [`gemm_shape`] of an op given by its name, `Input Dims` and `Input type`.
pub fn gemm_shape_of(name: &str, dims: &[Vec<u64>], types: &[String]) -> Option<GemmShape> {
    let (a, b, b_is_nk) = layout(name)?;
    let (da, db) = (dims.get(a)?, dims.get(b)?);
    // A batched product: [B, M, K] × [B, K, N].
    if let ([ba, m, k], [bb, b0, b1]) = (da.as_slice(), db.as_slice()) {
        if ba == bb && b0 == k && !b_is_nk {
            return shape(name, types.get(a)?, [*m, *b1, *k], *ba);
        }
    }
    // A of more than two dims (a linear layer's [batch, tokens, K]): its leading dims are M.
    let (&k, lead) = da.split_last()?;
    if lead.is_empty() {
        return None;
    }
    let m = lead.iter().product::<u64>();
    let [b0, b1] = db.as_slice() else {
        return None;
    };
    let (kb, n) = if b_is_nk { (*b1, *b0) } else { (*b0, *b1) };
    if kb != k {
        return None;
    }
    shape(name, types.get(a)?, [m, n, k], 1)
}

fn shape(name: &str, dtype: &str, [m, n, k]: [u64; 3], batch: u64) -> Option<GemmShape> {
    Some(GemmShape {
        op: name.to_string(),
        m,
        n,
        k,
        batch,
        dtype_bytes: dtype_bytes(dtype)?,
        dtype: dtype.to_string(),
    })
}

/// Each GEMM shape of each op (the innermost op and the library op above it both count), with
/// the median time of its calls' replayed kernels; ordered by op, then shape.
pub fn gemm_throughput(attribution: &Attribution<'_>) -> Vec<GemmThroughput> {
    // Per call (op name and start in the capture), its shape and the time of its kernels.
    let mut calls: BTreeMap<(String, i64), (GemmShape, i64)> = BTreeMap::new();
    for (kernel, launch) in attribution.pairs() {
        for op in ops_of(launch) {
            let Some(shape) = gemm_shape(op) else {
                continue;
            };
            calls
                .entry((op.name.clone(), op.ts))
                .or_insert((shape, 0))
                .1 += kernel.dur_ns;
        }
    }
    let mut by_shape: BTreeMap<GemmShape, Vec<f64>> = BTreeMap::new();
    for (shape, ns) in calls.into_values() {
        by_shape.entry(shape).or_default().push(ns as f64);
    }
    by_shape
        .into_iter()
        .filter_map(|(shape, mut times)| {
            let median_ns = median(&mut times)?;
            let seconds = median_ns / 1e9;
            (seconds > 0.0).then(|| GemmThroughput {
                calls: times.len(),
                tflops: shape.flops() / seconds / 1e12,
                tbps: shape.bytes() / seconds / 1e12,
                median_ns,
                shape,
            })
        })
        .collect()
}

fn ops_of(launch: &CaptureLaunch) -> impl Iterator<Item = &CaptureOp> {
    launch.op.iter().chain(launch.library_op.iter())
}
