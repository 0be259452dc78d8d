//! Renamed builds: the `rename` injection rewrites every kernel name the way a fork or a new
//! library version does (the namespace gets a suffix, a template argument is added, the name is
//! written mangled), and the `unknown-moe` injection renames the main MoE GEMM to a name no rule
//! knows, and the `rename-moe` injection gives the main MoE GEMM one more template argument (the
//! same kernel from a new build, as an image bump brings). Timings do not change: only the names do.
//!
//! Which rewrite a name gets depends on the name alone (a hash), so every run is the same.

use super::scenario::Spec;
use super::{Injection, InjectionKind};

/// The names written for the specs: renamed under `rename`, the main (first) MoE GEMM under a
/// name no rule knows with `unknown-moe`; memcpy activities keep theirs.
pub(crate) fn written_names(specs: &[Spec], injections: &[Injection]) -> Vec<String> {
    let on = |k: InjectionKind| injections.iter().any(|i| i.kind == k);
    let unknown_moe = on(InjectionKind::UnknownMoe)
        .then(|| specs.iter().find(|s| s.cat == "moe_gemm").map(|s| s.name))
        .flatten();
    let main_moe = specs.iter().find(|s| s.cat == "moe_gemm").map(|s| s.name);
    let rebuilt_moe = on(InjectionKind::RenameMoe).then_some(main_moe).flatten();
    let rename = on(InjectionKind::Rename);
    specs
        .iter()
        .map(|s| {
            if s.memcpy {
                s.name.to_string()
            } else if unknown_moe == Some(s.name) {
                UNKNOWN_MOE_NAME.to_string()
            } else if rename {
                renamed(s.name)
            } else if rebuilt_moe == Some(s.name) {
                rebuilt(s.name)
            } else {
                s.name.to_string()
            }
        })
        .collect()
}

/// The name the MoE GEMM takes under `unknown-moe`: no word of it says what it is.
pub(crate) const UNKNOWN_MOE_NAME: &str = "zz_fork_ffn_blockwise_v9_kernel";

/// The name of the same kernel from a new build: one more template argument (the mangled form
/// gets its first name suffixed instead).
pub(crate) fn rebuilt(name: &str) -> String {
    if name.starts_with("_Z") {
        renamed_mangled(name)
    } else {
        add_template_argument(name)
    }
}

/// Namespaces of the platform (PyTorch, the C++ library, CUTLASS/CuTe) that a fork of a kernel
/// library does not rename.
const PLATFORM_NAMESPACES: &[&str] = &["at", "c10", "std", "cutlass", "cute"];

/// The renamed form of a kernel name.
pub(crate) fn renamed(name: &str) -> String {
    if name.starts_with("_Z") {
        return renamed_mangled(name);
    }
    let parts = Parts::of(name);
    match (parts.namespace(), fnv(name) % 4) {
        (Some(ns), 0) => rename_namespace(name, ns),
        (Some(ns), 1) => add_template_argument(&rename_namespace(name, ns)),
        (Some(ns), _) => {
            let moved = rename_namespace(name, ns);
            mangled(&Parts::of(&moved)).unwrap_or_else(|| add_template_argument(&moved))
        }
        (None, _) if parts.template.is_some() => add_template_argument(name),
        (None, _) => format!("{}{}_v2{}", parts.ret, parts.qualified, parts.rest),
    }
}

/// 64-bit FNV-1a: stable across runs and platforms.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A C++ kernel name in pieces: `void ` + `ns::fn` + `<...>` + `(...)`.
struct Parts<'a> {
    ret: &'a str,
    qualified: &'a str,
    template: Option<&'a str>,
    rest: &'a str,
}

impl<'a> Parts<'a> {
    fn of(name: &'a str) -> Parts<'a> {
        let (ret, body) = match name.strip_prefix("void ") {
            Some(b) => ("void ", b),
            None => ("", name),
        };
        let cut = body.find(['<', '(']).unwrap_or(body.len());
        let (qualified, after) = body.split_at(cut);
        let (template, rest) = if after.starts_with('<') {
            match matching(after, '<', '>') {
                Some(end) => (Some(&after[..=end]), &after[end + 1..]),
                None => (None, after),
            }
        } else {
            (None, after)
        };
        Parts {
            ret,
            qualified,
            template,
            rest,
        }
    }

    /// The first namespace, when the library may rename it.
    fn namespace(&self) -> Option<&'a str> {
        let (ns, _) = self.qualified.split_once("::")?;
        (!ns.is_empty() && !PLATFORM_NAMESPACES.contains(&ns) && !ns.contains(' ')).then_some(ns)
    }
}

/// The index of the bracket closing the one `text` starts with.
fn matching(text: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// Every `ns::` of the name becomes `ns_v2::` (a fork or a new major version).
fn rename_namespace(name: &str, ns: &str) -> String {
    let from = format!("{ns}::");
    let to = format!("{ns}_v2::");
    let mut out = String::with_capacity(name.len() + 8);
    let mut rest = name;
    while let Some(i) = rest.find(&from) {
        let boundary = i == 0 || !rest[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..i]);
        out.push_str(if boundary { &to } else { &from });
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

/// One more template argument on the kernel's own template list (`<a, b>` → `<a, b, 1>`).
fn add_template_argument(name: &str) -> String {
    let p = Parts::of(name);
    match p.template {
        Some(t) => format!(
            "{}{}{}, 1>{}",
            p.ret,
            p.qualified,
            &t[..t.len() - 1],
            p.rest
        ),
        None => format!("{}{}<1>{}", p.ret, p.qualified, p.rest),
    }
}

/// The Itanium mangling of `void ns::fn<args>()` for template arguments that are plain
/// identifiers, integers or booleans (the argument list is left out, as for a kernel taking
/// none); `None` for anything else.
fn mangled(p: &Parts<'_>) -> Option<String> {
    if p.ret != "void " {
        return None;
    }
    let mut out = String::from("_ZN");
    for part in p.qualified.split("::") {
        if part.is_empty() || !part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        out.push_str(&format!("{}{part}", part.len()));
    }
    match p.template {
        Some(t) => {
            out.push('I');
            for arg in t[1..t.len() - 1].split(',').map(str::trim) {
                out.push_str(&mangled_argument(arg)?);
            }
            out.push_str("EEvv");
        }
        None => out.push_str("Ev"),
    }
    Some(out)
}

fn mangled_argument(arg: &str) -> Option<String> {
    let builtin = match arg {
        "true" => "Lb1E",
        "false" => "Lb0E",
        "void" => "v",
        "bool" => "b",
        "char" => "c",
        "short" => "s",
        "int" => "i",
        "unsigned int" | "unsigned" => "j",
        "long" => "l",
        "unsigned long" => "m",
        "float" => "f",
        "double" => "d",
        _ => "",
    };
    if !builtin.is_empty() {
        return Some(builtin.into());
    }
    if let Ok(n) = arg.parse::<i64>() {
        return Some(if n < 0 {
            format!("Lin{}E", -n)
        } else {
            format!("Li{n}E")
        });
    }
    // A class: `T` or `ns::T`.
    let ident = |s: &str| {
        !s.is_empty()
            && !s.starts_with(|c: char| c.is_ascii_digit())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let parts: Vec<&str> = arg.split("::").collect();
    if !parts.iter().all(|p| ident(p)) {
        return None;
    }
    let names: String = parts.iter().map(|p| format!("{}{p}", p.len())).collect();
    Some(if parts.len() > 1 {
        format!("N{names}E")
    } else {
        names
    })
}

/// The mangled name with its first source name renamed (`_ZN5aiter...` → `_ZN8aiter_v2...`).
fn renamed_mangled(name: &str) -> String {
    let nested = name.starts_with("_ZN");
    let head = if nested { 3 } else { 2 };
    let rest = &name[head..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let len: Option<usize> = rest[..digits].parse().ok();
    match len.and_then(|l| rest.get(digits..digits + l).map(|id| (l, id))) {
        Some((l, ident)) => format!(
            "{}{}{ident}_v2{}",
            &name[..head],
            l + 3,
            &rest[digits + l..]
        ),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taxonomy::{demangle, Taxonomy};

    #[test]
    fn each_rewrite_changes_the_name_as_a_fork_would() {
        assert_eq!(
            renamed_mangled("_ZN5aiter36mla_a8w8_qh16_qseqlen1_gqaratio16_psE"),
            "_ZN8aiter_v236mla_a8w8_qh16_qseqlen1_gqaratio16_psE"
        );
        assert_eq!(
            demangle("_ZN8aiter_v236mla_a8w8_qh16_qseqlen1_gqaratio16_psE").as_deref(),
            Some("aiter_v2::mla_a8w8_qh16_qseqlen1_gqaratio16_ps")
        );
        assert_eq!(
            rename_namespace("void ck::kernel<ck::Gridwise<ck::x>, ack::y>(int)", "ck"),
            "void ck_v2::kernel<ck_v2::Gridwise<ck_v2::x>, ack::y>(int)"
        );
        assert_eq!(
            add_template_argument("void a::b<int, 4>(float*)"),
            "void a::b<int, 4, 1>(float*)"
        );
        let p = Parts::of(
            "void aiter_v2::cross_device_reduce_2stage<__hip_bfloat16, 4>(aiter::RankData*)",
        );
        let m = mangled(&p).unwrap();
        assert_eq!(
            demangle(&m).as_deref(),
            Some("void aiter_v2::cross_device_reduce_2stage<__hip_bfloat16, 4>()")
        );
        let p = Parts::of("void a::topk<c10::BFloat16, float, 8, true>(int)");
        assert_eq!(
            demangle(&mangled(&p).unwrap()).as_deref(),
            Some("void a::topk<c10::BFloat16, float, 8, true>()")
        );
        assert_eq!(mangled(&Parts::of("void a::k<x<1>>(int)")), None);
        assert_eq!(
            renamed("nvjet_tst_64x32_64x16_2x1_2cta_v_bz_TNT"),
            "nvjet_tst_64x32_64x16_2x1_2cta_v_bz_TNT_v2"
        );
        assert_eq!(
            renamed("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllGather_RING_LL_v2(ncclDevKernelArgsStorage<4096ul>)"
        );
        assert_eq!(renamed("x"), renamed("x"), "deterministic");
    }

    #[test]
    fn the_unknown_moe_name_is_unknown() {
        assert_eq!(
            Taxonomy::builtin().classify(UNKNOWN_MOE_NAME).category,
            crate::taxonomy::Category::Other
        );
    }
}
