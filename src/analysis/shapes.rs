//! GEMM shapes: M x N x K and precision of a GEMM kernel, from the `Input Dims` and `Input type`
//! of the CPU op that launched it.
//!
//! How dims map to M, N, K, by op name:
//! - `addmm` (`aten::addmm`, `aten::_addmm_activation`): `[[N], [M, K], [K, N], ...]`;
//! - `baddbmm`: `[[B, M, N], [B, M, K], [B, K, N], ...]`;
//! - `linear`: `[[..., M, K], [N, K], ...]` (leading dims of the input multiply into M);
//! - `bmm`, `matmul`, `mm` and everything else (custom ops such as `sglang::cutlass_scaled_fp4_mm`,
//!   `deep_gemm::fp8_gemm_nt`, `vllm::moe_forward`): the first two inputs with at least two dims,
//!   `a` and `b`. Two 3-D inputs with the same leading dim are a batched product `[B, M, K] x [B, K, N]`.
//!   Otherwise M is the product of `a`'s leading dims and K its last; if `b`'s first dim is K the
//!   product is `a x b` (N = `b`'s last), else if `b`'s last dim is K it is `a x bᵀ` (N = `b`'s
//!   first); else N is unknown (a fused MoE op whose second input is the router logits, say).
//!
//! This is best effort: a custom op may order its inputs differently, and a fused MoE kernel's
//! real per-expert M is not in the dims. FLOPs are 2·M·N·K·batch.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::analysis::Scope;
use crate::links::Links;
use crate::reader::model::{dims_have_numbers, parse_input_dims, RankTrace, Run};
use crate::steps::{category_of, RankSteps};
use crate::taxonomy::{Category, Class};

/// M x N x K of one GEMM (with a batch count for batched products). Unknown parts are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GemmShape {
    pub m: Option<i64>,
    pub n: Option<i64>,
    pub k: Option<i64>,
    /// Batch count of a batched product; 1 otherwise.
    pub batch: i64,
}

impl GemmShape {
    /// True when M, N and K are all known.
    pub fn is_complete(&self) -> bool {
        self.m.is_some() && self.n.is_some() && self.k.is_some()
    }

    /// 2·M·N·K·batch, when the shape is complete.
    pub fn flops(&self) -> Option<f64> {
        Some(2.0 * self.m? as f64 * self.n? as f64 * self.k? as f64 * self.batch as f64)
    }
}

fn product(dims: &[i64]) -> Option<i64> {
    dims.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d))
}

fn positive(v: i64) -> Option<i64> {
    (v > 0).then_some(v)
}

/// The shape of a GEMM op from its name and parsed `Input Dims`. `None` when the dims say nothing.
pub(crate) fn gemm_shape(op_name: &str, inputs: &[Vec<i64>]) -> Option<GemmShape> {
    let name = op_name.to_ascii_lowercase();
    let two_d = |v: &Vec<i64>| v.len() == 2;
    if name.contains("addmm") && !name.contains("baddbmm") {
        let (a, b) = (inputs.get(1)?, inputs.get(2)?);
        if two_d(a) && two_d(b) {
            return Some(GemmShape {
                m: positive(a[0]),
                k: positive(a[1]),
                n: positive(b[1]),
                batch: 1,
            });
        }
    }
    if name.contains("baddbmm") {
        let (a, b) = (inputs.get(1)?, inputs.get(2)?);
        if a.len() == 3 && b.len() == 3 {
            return Some(GemmShape {
                m: positive(a[1]),
                k: positive(a[2]),
                n: positive(b[2]),
                batch: a[0].max(1),
            });
        }
    }
    if name.ends_with("linear") {
        let (a, w) = (inputs.first()?, inputs.get(1)?);
        if a.len() >= 2 && two_d(w) {
            return Some(GemmShape {
                m: product(&a[..a.len() - 1]).and_then(positive),
                k: positive(a[a.len() - 1]),
                n: positive(w[0]),
                batch: 1,
            });
        }
    }
    let mut matrices = inputs.iter().filter(|d| d.len() >= 2);
    let a = matrices.next()?;
    let b = matrices.next();
    if let Some(b) = b {
        if a.len() == 3 && b.len() == 3 && a[0] == b[0] && a[2] == b[1] {
            return Some(GemmShape {
                m: positive(a[1]),
                k: positive(a[2]),
                n: positive(b[2]),
                batch: a[0].max(1),
            });
        }
    }
    let k = a[a.len() - 1];
    let m = product(&a[..a.len() - 1]).and_then(positive);
    let n = match b {
        Some(b) if b.len() == 2 && b[0] == k => positive(b[1]),
        Some(b) if b.len() == 2 && b[1] == k => positive(b[0]),
        _ => None,
    };
    Some(GemmShape {
        m,
        n,
        k: positive(k),
        batch: 1,
    })
}

/// The shape of a GEMM op from the raw text of its `Input Dims`.
pub(crate) fn gemm_shape_from_text(op_name: &str, raw_dims: &str) -> Option<GemmShape> {
    gemm_shape(op_name, &parse_input_dims(raw_dims))
}

/// A short precision word for one `Input type` entry (`c10::BFloat16` → `BF16`); `None` for
/// scalars and empty entries.
fn precision_word(t: &str) -> Option<&'static str> {
    let t = t.to_ascii_lowercase();
    Some(match t.as_str() {
        "" | "scalar" | "scalarlist" | "tensorlist" | "int" | "bool" | "string" | "none" => {
            return None
        }
        _ if t.contains("bfloat16") => "BF16",
        _ if t.contains("half") => "FP16",
        _ if t.contains("float8_e4m3") => "FP8-E4M3",
        _ if t.contains("float8_e5m2") => "FP8-E5M2",
        _ if t.contains("float4") => "FP4",
        _ if t == "float" => "FP32",
        _ if t == "double" => "FP64",
        _ if t.contains("unsigned char") || t.contains("uint8") => "U8 (packed)",
        _ if t.contains("signed char") || t.contains("int8") => "INT8",
        _ => return None,
    })
}

/// The precision of a GEMM from the raw text of its `Input type`: the distinct types of its
/// tensor inputs, in order, joined by `×` (`BF16`, `FP8-E4M3×BF16`).
pub(crate) fn precision_from_types(raw_types: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(raw_types).ok()?;
    let mut words: Vec<&'static str> = Vec::new();
    for t in value.as_array()? {
        if let Some(w) = t.as_str().and_then(precision_word) {
            if !words.contains(&w) {
                words.push(w);
            }
        }
    }
    (!words.is_empty()).then(|| words.join("×"))
}

/// The precision a kernel name announces through its type templates (`bmm_E2m1…` → `FP4-E2M1`),
/// for kernels without a linked op.
pub(crate) fn precision_from_kernel_name(kernel: &str) -> Option<String> {
    let lower = kernel.to_ascii_lowercase();
    if lower.contains("e4m3") && lower.contains("e2m1") {
        return Some("FP8-E4M3×FP4-E2M1".to_string());
    }
    let rules: [(&str, &str); 10] = [
        ("e2m1", "FP4-E2M1"),
        ("mxfp4", "MXFP4"),
        ("fp4", "FP4"),
        ("e4m3", "FP8-E4M3"),
        ("fp8", "FP8"),
        ("a8w8", "INT8/FP8 (a8w8)"),
        ("bfloat16", "BF16"),
        ("bf16", "BF16"),
        ("f16", "FP16"),
        ("half", "FP16"),
    ];
    rules
        .iter()
        .find(|(needle, _)| lower.contains(needle))
        .map(|(_, word)| word.to_string())
}

/// The precision shown for a GEMM row: the op's input types, unless the kernel name announces a
/// narrower format than they do. A fused FP4 MoE op takes BF16 activations and quantizes them
/// inside; the GEMM runs in what the kernel name says.
fn row_precision(op_precision: Option<String>, kernel: &str) -> Option<String> {
    let kernel_precision = precision_from_kernel_name(kernel);
    match (op_precision, kernel_precision) {
        (Some(op), Some(k)) if is_narrow(&k) && !op.contains(&k) => {
            Some(format!("{k} (op inputs {op})"))
        }
        (Some(op), _) => Some(op),
        (None, k) => k,
    }
}

fn is_narrow(precision: &str) -> bool {
    ["FP4", "FP8", "INT8"].iter().any(|p| precision.contains(p))
}

/// Where a row's shape came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeSource {
    /// The CPU op linked to the kernel itself (External id, correlation or enclosing op).
    LinkedOp,
    /// The op linked to the same kernel name elsewhere in the trace (the prefill/EXTEND phase);
    /// M is the step's batch size when the step annotation gives one.
    OtherPhaseOp,
    /// No op: only the precision, read from the kernel name's type templates.
    KernelName,
    /// Nothing known.
    Unknown,
}

/// One GEMM kernel at one shape.
#[derive(Debug, Clone, Serialize)]
pub struct ShapeRow {
    pub kernel: String,
    pub category: Category,
    /// The CPU op the shape came from.
    pub op: Option<String>,
    pub shape: Option<GemmShape>,
    pub precision: Option<String>,
    pub source: ShapeSource,
    /// M was replaced by the decode step's batch size (`bs=N`).
    pub m_from_batch_size: bool,
    /// Calls per step (decode) or per rank (whole trace), pooled over ranks.
    pub calls: f64,
    pub mean_us: f64,
    /// 2·M·N·K·batch / mean time, TFLOP/s; `None` for an incomplete shape.
    pub tflops: Option<f64>,
    /// Share of all kernel time in scope, %.
    pub pct: f64,
    /// Grid of the first call.
    pub grid: Option<[u32; 3]>,
}

/// The GEMM shape table of a run.
#[derive(Debug, Clone, Serialize)]
pub struct ShapesSection {
    pub scope: Scope,
    /// At least one CPU op of the run carries `Input Dims` with numbers.
    pub recorded: bool,
    /// GEMM calls in scope, and how many got a shape.
    pub gemm_calls: u64,
    pub gemm_calls_with_shape: u64,
    /// Rows grouped by (kernel name, shape), most time first.
    pub rows: Vec<ShapeRow>,
}

/// What a linked op says about a kernel.
#[derive(Clone)]
struct OpInfo {
    op: String,
    shape: GemmShape,
    precision: Option<String>,
}

struct RowAcc {
    category: Category,
    op: Option<String>,
    precision: Option<String>,
    source: ShapeSource,
    m_from_batch_size: bool,
    calls: u64,
    ns: i64,
    grid: Option<[u32; 3]>,
}

fn is_gemm(category: Category) -> bool {
    matches!(category, Category::DenseGemm | Category::MoeGemm)
}

fn op_info(trace: &RankTrace, op_index: usize) -> Option<OpInfo> {
    let op = trace.cpu_ops.get(op_index)?;
    let name = trace.name(op.name);
    let dims = trace.name(op.input_dims?);
    let shape = gemm_shape_from_text(name, dims)?;
    Some(OpInfo {
        op: name.to_string(),
        shape,
        precision: op
            .input_types
            .and_then(|t| precision_from_types(trace.name(t))),
    })
}

/// The GEMM shapes of the activities in scope: decode steps when `scope` is decode, else every
/// activity. Shapes come from the kernel's own op, else from the op of the same kernel name
/// elsewhere in the rank's traces, else only the precision from the kernel name.
pub(crate) fn shape_section(
    run: &Run,
    classes: &[Vec<Class>],
    rank_steps: &[RankSteps],
    scope: Scope,
) -> ShapesSection {
    let recorded = run.traces.iter().any(|t| {
        t.cpu_ops
            .iter()
            .any(|op| op.input_dims.is_some_and(|d| dims_have_numbers(t.name(d))))
    });
    let mut rows: BTreeMap<(String, Option<GemmShape>), RowAcc> = BTreeMap::new();
    let (mut gemm_calls, mut with_shape, mut units, mut scope_ns) = (0u64, 0u64, 0usize, 0i64);
    for rs in rank_steps {
        // Per kernel name of this rank: the op of any linked call (a complete shape preferred).
        let mut by_name: HashMap<&str, OpInfo> = HashMap::new();
        let links: HashMap<usize, Links<'_>> = rs
            .traces
            .iter()
            .filter_map(|&t| run.traces.get(t).map(|tr| (t, Links::new(tr))))
            .collect();
        let mut own: HashMap<(usize, u32), OpInfo> = HashMap::new();
        for (&t, link) in &links {
            let trace = &run.traces[t];
            let cls = classes.get(t).map_or(&[][..], |c| c.as_slice());
            for (i, a) in trace.gpu.iter().enumerate() {
                if !is_gemm(category_of(a, cls)) {
                    continue;
                }
                let Some(info) = link.cpu_op_of(a).and_then(|op| op_info(trace, op)) else {
                    continue;
                };
                let name = trace.name(a.name);
                let better = by_name
                    .get(name)
                    .is_none_or(|old| !old.shape.is_complete() && info.shape.is_complete());
                if better {
                    by_name.insert(name, info.clone());
                }
                own.insert((t, i as u32), info);
            }
        }
        // The activities in scope, with the batch size of their step.
        let mut acts: Vec<(usize, u32, Option<u32>)> = Vec::new();
        match scope {
            Scope::Decode => {
                units += rs.decode.len();
                for s in &rs.decode {
                    acts.extend(s.activities.iter().map(|&i| (s.trace, i, s.batch_size)));
                }
            }
            Scope::WholeTrace => {
                for &t in &rs.traces {
                    let n = run.traces.get(t).map_or(0, |tr| tr.gpu.len());
                    acts.extend((0..n as u32).map(|i| (t, i, None)));
                }
                units += usize::from(!acts.is_empty());
            }
        }
        for (t, i, batch) in acts {
            let Some(a) = run.traces.get(t).and_then(|tr| tr.gpu.get(i as usize)) else {
                continue;
            };
            scope_ns += a.dur;
            let cls = classes.get(t).map_or(&[][..], |c| c.as_slice());
            let category = category_of(a, cls);
            if !is_gemm(category) {
                continue;
            }
            gemm_calls += 1;
            let name = run.traces[t].name(a.name);
            let (info, source, m_from_batch) = match own.get(&(t, i)) {
                Some(info) => (Some(info.clone()), ShapeSource::LinkedOp, false),
                None => match by_name.get(name) {
                    Some(info) => {
                        let mut info = info.clone();
                        let replaced = batch.is_some();
                        match batch {
                            Some(bs) => info.shape.m = Some(i64::from(bs)),
                            // M of a prefill op counts prompt tokens, not the decode batch:
                            // unknown rather than wrong (it would inflate TFLOP/s).
                            None if matches!(scope, Scope::Decode) => info.shape.m = None,
                            None => {}
                        }
                        (Some(info), ShapeSource::OtherPhaseOp, replaced)
                    }
                    None => (None, ShapeSource::Unknown, false),
                },
            };
            if info.is_some() {
                with_shape += 1;
            }
            // Without an op, the kernel name may still say the precision.
            let source = match source {
                ShapeSource::Unknown if precision_from_kernel_name(name).is_some() => {
                    ShapeSource::KernelName
                }
                s => s,
            };
            let row = rows
                .entry((name.to_string(), info.as_ref().map(|i| i.shape)))
                .or_insert_with(|| RowAcc {
                    category,
                    op: info.as_ref().map(|i| i.op.clone()),
                    // Once per row, not per call: the name is lowercased and searched.
                    precision: row_precision(info.as_ref().and_then(|i| i.precision.clone()), name),
                    source,
                    m_from_batch_size: m_from_batch,
                    calls: 0,
                    ns: 0,
                    grid: run.traces[t].launch_dims_of(a).and_then(|d| d.grid),
                });
            row.calls += 1;
            row.ns += a.dur;
            if source < row.source {
                row.source = source;
                row.m_from_batch_size = m_from_batch;
            }
        }
    }
    let per_unit = units.max(1) as f64;
    let mut rows: Vec<ShapeRow> = rows
        .into_iter()
        .map(|((kernel, shape), acc)| {
            let mean_ns = acc.ns as f64 / acc.calls.max(1) as f64;
            ShapeRow {
                kernel,
                category: acc.category,
                op: acc.op,
                shape,
                precision: acc.precision,
                source: acc.source,
                m_from_batch_size: acc.m_from_batch_size,
                calls: acc.calls as f64 / per_unit,
                mean_us: mean_ns / 1e3,
                tflops: shape
                    .and_then(|s| s.flops())
                    .filter(|_| mean_ns > 0.0)
                    .map(|f| f / mean_ns / 1e3),
                pct: if scope_ns > 0 {
                    acc.ns as f64 / scope_ns as f64 * 100.0
                } else {
                    0.0
                },
                grid: acc.grid,
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.pct
            .total_cmp(&a.pct)
            .then_with(|| a.kernel.cmp(&b.kernel))
            .then_with(|| a.shape.cmp(&b.shape))
    });
    ShapesSection {
        scope,
        recorded,
        gemm_calls,
        gemm_calls_with_shape: with_shape,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(m: i64, n: i64, k: i64, batch: i64) -> GemmShape {
        GemmShape {
            m: Some(m),
            n: Some(n),
            k: Some(k),
            batch,
        }
    }

    #[test]
    fn mm_linear_addmm_and_bmm_read_their_own_layouts() {
        let mm = gemm_shape_from_text("aten::mm", "[[64, 7168], [7168, 1536]]").unwrap();
        assert_eq!(mm, shape(64, 1536, 7168, 1));
        let linear = gemm_shape_from_text("aten::linear", "[[2, 32, 7168], [1536, 7168], [1536]]");
        assert_eq!(linear.unwrap(), shape(64, 1536, 7168, 1));
        let addmm =
            gemm_shape_from_text("aten::addmm", "[[640], [888, 2880], [2880, 640], [], []]");
        assert_eq!(addmm.unwrap(), shape(888, 640, 2880, 1));
        let bmm = gemm_shape_from_text("aten::bmm", "[[16, 64, 512], [16, 512, 128]]").unwrap();
        assert_eq!(bmm, shape(64, 128, 512, 16));
        assert_eq!(bmm.flops(), Some(2.0 * 64.0 * 128.0 * 512.0 * 16.0));
        let baddbmm = gemm_shape_from_text(
            "aten::baddbmm",
            "[[4, 8, 16], [4, 8, 32], [4, 32, 16], [], []]",
        );
        assert_eq!(baddbmm.unwrap(), shape(8, 16, 32, 4));
    }

    #[test]
    fn custom_ops_are_best_effort_and_leave_unknown_parts_empty() {
        let fp4 = gemm_shape_from_text(
            "sglang::cutlass_scaled_fp4_mm",
            "[[64, 7168], [7168, 2112]]",
        );
        assert_eq!(fp4.unwrap(), shape(64, 2112, 7168, 1));
        let nt = gemm_shape_from_text("deep_gemm::fp8_gemm_nt", "[[64, 7168], [2112, 7168]]");
        assert_eq!(nt.unwrap(), shape(64, 2112, 7168, 1));
        let moe =
            gemm_shape_from_text("vllm::moe_forward", "[[888, 3072], [888, 128], []]").unwrap();
        assert_eq!((moe.m, moe.n, moe.k), (Some(888), None, Some(3072)));
        assert!(!moe.is_complete());
        assert_eq!(moe.flops(), None);
        assert_eq!(gemm_shape_from_text("aten::mm", "[[], []]"), None);
        assert_eq!(gemm_shape_from_text("aten::mm", "garbage"), None);
    }

    #[test]
    fn precision_comes_from_tensor_types_and_skips_scalars() {
        assert_eq!(
            precision_from_types(r#"["c10::BFloat16", "c10::BFloat16", "Scalar", ""]"#).as_deref(),
            Some("BF16")
        );
        assert_eq!(
            precision_from_types(r#"["c10::Float8_e4m3fn", "c10::BFloat16"]"#).as_deref(),
            Some("FP8-E4M3×BF16")
        );
        assert_eq!(precision_from_types("[]"), None);
        assert_eq!(
            precision_from_kernel_name("bmm_E2m1_E2m1E2m1_Fp32_t128").as_deref(),
            Some("FP4-E2M1")
        );
        assert_eq!(precision_from_kernel_name("Cijk_Ailk_Bljk"), None);
        assert_eq!(
            precision_from_kernel_name("bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2").as_deref(),
            Some("FP8-E4M3×FP4-E2M1")
        );
    }

    #[test]
    fn a_narrow_kernel_precision_outranks_the_op_input_types() {
        let bf16 = || Some("BF16".to_string());
        assert_eq!(
            row_precision(bf16(), "bmm_Bfloat16_MxE2m1MxE4m3_Fp32").as_deref(),
            Some("FP8-E4M3×FP4-E2M1 (op inputs BF16)")
        );
        assert_eq!(
            row_precision(bf16(), "nvjet_tst_64x64_TNT").as_deref(),
            Some("BF16")
        );
        assert_eq!(
            row_precision(bf16(), "bmm_Bfloat16_Bfloat16").as_deref(),
            Some("BF16")
        );
        let fp8 = Some("FP8-E4M3×BF16".to_string());
        assert_eq!(
            row_precision(fp8, "gemm_e4m3_bf16").as_deref(),
            Some("FP8-E4M3×BF16")
        );
        assert_eq!(
            row_precision(None, "bmm_E2m1_E2m1E2m1").as_deref(),
            Some("FP4-E2M1")
        );
    }
}
