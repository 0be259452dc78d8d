//! `synth --with-stack`: the host context real servers leave around their launches, so that the
//! code view (`report`'s `code`, a check's site) can be tested against a known answer.
//!
//! Each kernel gets one site, a function of its written name alone (the first spec of that name
//! decides), so that every call of a kernel has the same op, shapes and scope wherever it runs:
//! - its ops, outermost first: the spec's launching op with `Input Dims` from the batch and the
//!   spec's GEMM (K, N), under `aiter::gemm_a16w16` for an AMD `aten::mm` (`aten::linear` on
//!   NVIDIA); a MoE GEMM takes `[[M, K], [E, N, K], [M, 8], [M, 8]]` as the fused-MoE ops do;
//! - its frames: `nn.Module: DeepseekV2ForCausalLM_0 › DeepseekV2Model_0 ›
//!   DeepseekV2DecoderLayer_L (in a layer) › [DeepseekV2MoE_L ›] Class_L` and a file frame, the
//!   class from the spec's category.
//!
//! [`super::capture`] writes a graph scenario's captures and truth.json's `sites` from these.

use super::scenario::{Scenario, Spec, Vendor};
use super::write::json_str;

/// Experts of DeepSeek-R1's MoE layers.
const EXPERTS: u64 = 256;
/// Experts each token is routed to.
const TOP_K: u64 = 8;
/// DeepSeek-R1's hidden size.
const HIDDEN: u64 = 7168;

/// The scenarios whose captured launches and replayed kernels carry `graph node id`; the other
/// graph scenarios are joined by kernel name.
const WITH_NODE_IDS: &[&str] = &[
    "mi355x-dsr1-fp4-tp4",
    "h200-dsr1-fp8-tp8",
    "mi355x-dsr1-fp4-tp4-mtp",
];

/// One op call of a site.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SiteOp {
    pub name: &'static str,
    pub dims: Vec<Vec<u64>>,
    pub types: Vec<&'static str>,
}

impl SiteOp {
    /// `"Input Dims":[[64, 7168], ...],"Input type":["c10::BFloat16", ...]`.
    pub(crate) fn args(&self) -> String {
        let dims: Vec<String> = self
            .dims
            .iter()
            .map(|d| {
                let inner: Vec<String> = d.iter().map(u64::to_string).collect();
                format!("[{}]", inner.join(", "))
            })
            .collect();
        let types: Vec<String> = self.types.iter().map(|t| json_str(t)).collect();
        format!(
            r#""Input Dims":[{}],"Input type":[{}]"#,
            dims.join(", "),
            types.join(", ")
        )
    }
}

/// What `--with-stack` adds to a run, decided once per run.
#[derive(Debug, Clone)]
pub(crate) struct Stack {
    /// Per spec, the spec whose site it takes: the first of its written name.
    canonical: Vec<usize>,
    /// Per decode op, the decoder layer it runs in (`None`: before or after the layers).
    layer_of: Vec<Option<u32>>,
    /// Captured launches and replayed kernels carry `graph node id`.
    pub node_ids: bool,
    weight: &'static str,
    vendor: Vendor,
    vllm: bool,
}

/// The decoder layer of each op of a forward as [`super::generate`] builds it.
fn target_layers(sc: &Scenario) -> Vec<Option<u32>> {
    let mut out = vec![None; sc.prologue.len()];
    for l in 0..sc.n_dense + sc.n_moe {
        let n = if l < sc.n_dense {
            sc.dense_layer.len()
        } else {
            sc.moe_layer.len()
        };
        out.extend(std::iter::repeat_n(Some(l), n));
    }
    out.extend(std::iter::repeat_n(None, sc.epilogue.len()));
    out
}

/// The decoder layer of each decode op: with speculative decoding, the draft model's forwards
/// (its one MoE layer is DeepSeek's MTP layer, after the target's) around the target's.
pub(crate) fn decode_layers(sc: &Scenario) -> Vec<Option<u32>> {
    let target = target_layers(sc);
    let Some(m) = sc.mtp else {
        return target;
    };
    let mtp_layer = sc.n_dense + sc.n_moe;
    let mut draft = vec![Some(mtp_layer); sc.moe_layer.len()];
    draft.extend(std::iter::repeat_n(None, sc.epilogue.len()));
    let mut out = Vec::new();
    for _ in 0..m.draft_forwards {
        out.extend_from_slice(&draft);
    }
    out.extend(target);
    out.extend(draft);
    out
}

impl Stack {
    pub(crate) fn new(sc: &Scenario, name_id: &[u32]) -> Self {
        let canonical = name_id
            .iter()
            .map(|id| name_id.iter().position(|x| x == id).unwrap_or_default())
            .collect();
        let weight = if sc.name.contains("fp4") {
            "c10::Float4_e2m1fn_x2"
        } else if sc.name.contains("fp8") {
            "c10::Float8_e4m3fn"
        } else {
            "c10::BFloat16"
        };
        Stack {
            canonical,
            layer_of: decode_layers(sc),
            node_ids: WITH_NODE_IDS.contains(&sc.name),
            weight,
            vendor: sc.vendor,
            vllm: sc.vllm_stock.is_some() || sc.eager.is_some(),
        }
    }

    /// The decoder layer of decode op `i`.
    pub(crate) fn layer(&self, i: usize) -> Option<u32> {
        self.layer_of.get(i).copied().flatten()
    }

    /// The ops around a launch of `spec` with `m` rows, outermost first.
    pub(crate) fn ops(&self, specs: &[Spec], spec: usize, m: u64) -> Vec<SiteOp> {
        let s = &specs[self.canonical[spec]];
        const BF16: &str = "c10::BFloat16";
        let (k, n) = (u64::from(s.kn.0), u64::from(s.kn.1));
        if s.cat == "moe_gemm" {
            let k = if k == 0 { HIDDEN } else { k };
            let n = if n == 0 { HIDDEN } else { n };
            return vec![SiteOp {
                name: s.op,
                dims: vec![
                    vec![m, k],
                    vec![EXPERTS, n, k],
                    vec![m, TOP_K],
                    vec![m, TOP_K],
                ],
                types: vec![BF16, self.weight, "float", "int"],
            }];
        }
        if (k, n) == (0, 0) {
            return vec![SiteOp {
                name: s.op,
                dims: vec![vec![m, HIDDEN]],
                types: vec![BF16],
            }];
        }
        let op = SiteOp {
            name: s.op,
            dims: vec![vec![m, k], vec![k, n]],
            types: vec![BF16, BF16],
        };
        if s.op != "aten::mm" {
            return vec![op];
        }
        let outer = match self.vendor {
            Vendor::Amd => "aiter::gemm_a16w16",
            Vendor::Nvidia => "aten::linear",
        };
        vec![
            SiteOp {
                name: outer,
                dims: vec![vec![m, k], vec![n, k]],
                types: vec![BF16, BF16],
            },
            op,
        ]
    }

    /// The module class of a spec's site, and the module between it and its decoder layer.
    fn class(&self, specs: &[Spec], spec: usize) -> (&'static str, Option<&'static str>) {
        let s = &specs[self.canonical[spec]];
        match s.cat {
            "attention" => ("DeepseekV2AttentionMLA", None),
            "moe_gemm" => ("FusedMoE", Some("DeepseekV2MoE")),
            "moe_routing" => ("TopK", Some("DeepseekV2MoE")),
            "norm" => ("RMSNorm", None),
            "quant" => ("DeepseekV2MLP", None),
            "comm" if s.is_allreduce() => ("RowParallelLinear", None),
            "comm" => ("VocabParallelEmbedding", None),
            "dense_gemm" if s.kn.1 >= 30_000 => ("ParallelLMHead", None),
            "dense_gemm" => ("ReplicatedLinear", None),
            _ => ("DeepseekV2DecoderLayer", None),
        }
    }

    /// `nn.Module: FusedMoE`: the scope tracegate gives the site at depth 1.
    pub(crate) fn scope(&self, specs: &[Spec], spec: usize) -> String {
        format!("nn.Module: {}", self.class(specs, spec).0)
    }

    /// The `python_function` frames around a launch of `spec` in `layer`, outermost first.
    pub(crate) fn frames(&self, specs: &[Spec], spec: usize, layer: Option<u32>) -> Vec<String> {
        let (class, parent) = self.class(specs, spec);
        let at = layer.unwrap_or(0);
        let mut out = vec![
            "nn.Module: DeepseekV2ForCausalLM_0".to_string(),
            "nn.Module: DeepseekV2Model_0".to_string(),
        ];
        if let Some(l) = layer {
            out.push(format!("nn.Module: DeepseekV2DecoderLayer_{l}"));
        }
        if let Some(p) = parent {
            out.push(format!("nn.Module: {p}_{at}"));
        }
        if class != "DeepseekV2DecoderLayer" || layer.is_none() {
            out.push(format!("nn.Module: {class}_{at}"));
        }
        let root = if self.vllm {
            "vllm/model_executor"
        } else {
            "sglang/srt"
        };
        let file = match class {
            "FusedMoE" => "layers/moe/fused_moe_triton/layer.py(812): forward",
            "TopK" => "layers/moe/topk.py(245): forward",
            "RMSNorm" => "layers/layernorm.py(96): forward",
            "RowParallelLinear" => "layers/linear.py(1322): forward",
            "ReplicatedLinear" => "layers/linear.py(293): forward",
            "ParallelLMHead" => "layers/logits_processor.py(312): forward",
            "VocabParallelEmbedding" => "layers/vocab_parallel_embedding.py(488): forward",
            "DeepseekV2AttentionMLA" => "models/deepseek_v2.py(1301): forward",
            "DeepseekV2MLP" => "models/deepseek_v2.py(232): forward",
            _ => "models/deepseek_v2.py(2035): forward",
        };
        out.push(format!("{root}/{file}"));
        out
    }
}

/// The label, shapes and GEMM of a site as tracegate prints them: the library op over an ATen
/// op (`aiter::gemm_a16w16 › aten::mm`), else the innermost op; the innermost op's tensor dims
/// (`64×7168, 7168×1536`); `M×N×K` where the innermost op is an `aten::mm`.
pub(crate) fn site_text(ops: &[SiteOp]) -> (String, String, Option<String>) {
    let Some(inner) = ops.last() else {
        return (String::new(), String::new(), None);
    };
    let library = ops[..ops.len() - 1]
        .iter()
        .rev()
        .find(|o| !o.name.starts_with("aten::"));
    let label = match library {
        Some(lib) if inner.name.starts_with("aten::") => format!("{} › {}", lib.name, inner.name),
        _ => inner.name.to_string(),
    };
    let shapes = inner
        .dims
        .iter()
        .filter(|d| !d.is_empty())
        .map(|d| d.iter().map(u64::to_string).collect::<Vec<_>>().join("×"))
        .collect::<Vec<_>>()
        .join(", ");
    let gemm = match (inner.name, inner.dims.as_slice()) {
        ("aten::mm", [a, b]) if a.len() == 2 && b.len() == 2 => {
            Some(format!("{}×{}×{}", a[0], b[1], a[1]))
        }
        _ => None,
    };
    (label, shapes, gemm)
}
