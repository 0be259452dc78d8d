//! Help for extending the table: for a kernel name no rule knows, a ready-to-paste `[[rule]]`
//! with a suggested category where a word of the name hints at one.
//!
//! Hints are weaker evidence than rules (a rule decides, a hint only proposes): they look at the
//! words of the function name (demangled, without template or argument lists), and the user
//! confirms by pasting the rule into a `--rules` file or the baseline's `[[rules]]`.

use serde::Serialize;

use super::{readable, Category, Collective};

/// A proposed rule for one unclassified kernel name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    /// The category a word of the name hints at; `None` when nothing does.
    pub category: Option<Category>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collective: Option<Collective>,
    /// The word that gave the hint (`dispatch`, `gemm`...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// The `[[rule]]` table, TOML, ready to paste.
    pub rule: String,
}

/// Words that hint at a category, tried in order on the lowercased function name; the first
/// found decides. Communication first (a fused allreduce+norm is communication, as in the table).
const HINTS: &[(&str, Category, Option<Collective>)] = &[
    ("alltoall", Category::Comm, Some(Collective::AllToAll)),
    ("all_to_all", Category::Comm, Some(Collective::AllToAll)),
    ("a2a", Category::Comm, Some(Collective::AllToAll)),
    ("dispatch", Category::Comm, Some(Collective::AllToAll)),
    ("combine", Category::Comm, Some(Collective::AllToAll)),
    ("allreduce", Category::Comm, Some(Collective::Allreduce)),
    ("all_reduce", Category::Comm, Some(Collective::Allreduce)),
    ("allgather", Category::Comm, Some(Collective::Allgather)),
    ("all_gather", Category::Comm, Some(Collective::Allgather)),
    (
        "reducescatter",
        Category::Comm,
        Some(Collective::ReduceScatter),
    ),
    (
        "reduce_scatter",
        Category::Comm,
        Some(Collective::ReduceScatter),
    ),
    ("broadcast", Category::Comm, Some(Collective::Broadcast)),
    ("sendrecv", Category::Comm, Some(Collective::SendRecv)),
    ("p2p", Category::Comm, Some(Collective::SendRecv)),
    ("nccl", Category::Comm, Some(Collective::Other)),
    ("rccl", Category::Comm, Some(Collective::Other)),
    ("nvshmem", Category::Comm, Some(Collective::Other)),
    ("barrier", Category::Comm, Some(Collective::Other)),
    ("signal", Category::Comm, Some(Collective::Other)),
    ("attn", Category::Attention, None),
    ("attention", Category::Attention, None),
    ("sdpa", Category::Attention, None),
    ("fmha", Category::Attention, None),
    ("mha", Category::Attention, None),
    ("mla", Category::Attention, None),
    ("flash", Category::Attention, None),
    ("paged", Category::Attention, None),
    ("kvcache", Category::Attention, None),
    ("kv_cache", Category::Attention, None),
    ("expert", Category::MoeGemm, None),
    ("moe", Category::MoeGemm, None),
    ("grouped", Category::MoeGemm, None),
    ("topk", Category::MoeRouting, None),
    ("routing", Category::MoeRouting, None),
    ("router", Category::MoeRouting, None),
    ("gemm", Category::DenseGemm, None),
    ("gemv", Category::DenseGemm, None),
    ("matmul", Category::DenseGemm, None),
    ("mma", Category::DenseGemm, None),
    ("norm", Category::Norm, None),
    ("quant", Category::Quant, None),
    ("cast", Category::Quant, None),
    ("fp8", Category::Quant, None),
    ("fp4", Category::Quant, None),
    ("silu", Category::Elementwise, None),
    ("gelu", Category::Elementwise, None),
    ("softmax", Category::Elementwise, None),
    ("elementwise", Category::Elementwise, None),
    ("copy", Category::Elementwise, None),
    ("fill", Category::Elementwise, None),
    ("permute", Category::Elementwise, None),
    ("scatter", Category::Elementwise, None),
    ("gather", Category::Elementwise, None),
    ("embedding", Category::Elementwise, None),
];

/// Longest pattern a suggested rule carries.
const PATTERN_WIDTH: usize = 160;

/// The function name a rule should match: demangled, without return type, template arguments
/// and argument list (`void ns::fused_thing<8>(float*)` → `ns::fused_thing`).
pub(crate) fn rule_stem(name: &str) -> String {
    let readable = readable(name);
    let shown = readable.strip_prefix("void ").unwrap_or(&readable);
    let cut = shown.find(['<', '(']).unwrap_or(shown.len());
    let stem = shown[..cut].trim();
    let stem = if stem.is_empty() { shown } else { stem };
    stem.chars().take(PATTERN_WIDTH).collect()
}

/// A rule for `name`, with the category its words hint at.
pub(crate) fn suggest(name: &str) -> Suggestion {
    let stem = rule_stem(name);
    let lower = stem.to_ascii_lowercase();
    let hint = HINTS.iter().find(|(word, ..)| lower.contains(word));
    let (category, collective, evidence) = match hint {
        Some(&(word, category, collective)) => {
            // A MoE name without a GEMM word routes tokens rather than multiplying them.
            let category = if category == Category::MoeGemm
                && !["gemm", "mm", "matmul", "expert", "grouped"]
                    .iter()
                    .any(|w| lower.contains(w))
            {
                Category::MoeRouting
            } else {
                category
            };
            (Some(category), collective, Some(word.to_string()))
        }
        None => (None, None, None),
    };
    // C++ names match on the function name wherever it sits; plain names (Triton, cuBLAS) start
    // with what they are.
    let key = if stem.contains("::") {
        "contains"
    } else {
        "prefix"
    };
    let quoted = toml::Value::String(stem.clone()).to_string();
    let mut rule = format!("[[rule]]\n{key} = {quoted}\n");
    match category {
        Some(c) => {
            rule.push_str(&format!("category = \"{}\"\n", c.key()));
            if let Some(k) = collective {
                rule.push_str(&format!("collective = \"{}\"\n", k.key()));
            }
            let why = evidence.as_deref().unwrap_or_default();
            rule.push_str(&format!(
                "note = {}\n",
                toml::Value::String(format!("suggested from `{why}` in the name: check it"))
            ));
        }
        None => {
            let keys: Vec<&str> = Category::ALL.iter().map(|c| c.key()).collect();
            rule.push_str(&format!(
                "category = \"other\"  # no hint in the name: pick one of {}\n",
                keys.join(", ")
            ));
        }
    }
    Suggestion {
        category,
        collective,
        evidence,
        rule,
    }
}

#[cfg(test)]
mod tests {
    use super::super::Taxonomy;
    use super::*;

    #[test]
    fn hints_come_from_the_words_of_the_function_name() {
        let s = suggest("void acme::ep::shuffle_dispatch_v9<8>(int*, float*)");
        assert_eq!(s.category, Some(Category::Comm));
        assert_eq!(s.collective, Some(Collective::AllToAll));
        assert_eq!(s.evidence.as_deref(), Some("dispatch"));
        // Template arguments and parameters give no hint: only the function name counts.
        let s = suggest("void acme::mystery_kernel<flash_attn_t>(gemm_args)");
        assert_eq!(s.category, None);
        assert!(s.rule.contains("pick one of"), "{}", s.rule);
        assert_eq!(
            suggest("acme_moe_align_tokens").category,
            Some(Category::MoeRouting)
        );
        assert_eq!(
            suggest("acme_moe_gemm_v7").category,
            Some(Category::MoeGemm)
        );
        // Mangled names are read demangled.
        let s = suggest("_ZN4acme18fused_rmsnorm_zzzzILi8EEEvPfi");
        assert_eq!(s.category, Some(Category::Norm));
        assert!(
            s.rule.contains("contains = \"acme::fused_rmsnorm_zzzz\""),
            "{}",
            s.rule
        );
    }

    #[test]
    fn a_suggested_rule_parses_and_classifies_its_kernel() {
        for name in [
            "void acme::ep::shuffle_dispatch_v9<8>(int*, float*)",
            "_ZN4acme18fused_rmsnorm_zzzzILi8EEEvPfi",
            "acme_zzz_kernel_v3_\"quoted\"_and\\slash",
            "void acme::mystery_kernel<flash_attn_t>(gemm_args)",
        ] {
            let s = suggest(name);
            let rules = Taxonomy::from_toml_str(&s.rule, "suggestion")
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", s.rule));
            let class = Taxonomy::builtin().with_rules(rules).classify(name);
            assert_eq!(
                class.category,
                s.category.unwrap_or(Category::Other),
                "{name}"
            );
        }
    }
}
