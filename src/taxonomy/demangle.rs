//! Itanium C++ demangling of kernel names (`_ZN5aiter24add_rmsnorm_quant_kernel...` →
//! `void aiter::add_rmsnorm_quant_kernel<...>(...)`), so that rules match what the name says and
//! tables show what people can read. JSON keeps the raw name.
//!
//! The work is `cpp_demangle`'s. When it refuses a name (a newer mangling it does not know yet, a
//! name cut short by the profiler), the nested name at its head is still read (`aiter::
//! add_rmsnorm_quant_kernel`), since the namespace and the function are what rules look at.

use std::borrow::Cow;

/// Deepest nesting `cpp_demangle` may follow: kernel names are long but not deep, and a hostile
/// name must not exhaust the stack.
const RECURSION_LIMIT: u32 = 256;

/// The demangled form of an Itanium-mangled name (`_Z...`); `None` for a name that is not
/// mangled, or whose head cannot be read either.
pub(crate) fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    let parse = cpp_demangle::ParseOptions::default().recursion_limit(RECURSION_LIMIT);
    let print = cpp_demangle::DemangleOptions::new().recursion_limit(RECURSION_LIMIT);
    cpp_demangle::Symbol::new_with_options(name, &parse)
        .ok()
        .and_then(|symbol| symbol.demangle_with_options(&print).ok())
        .filter(|d| !d.is_empty())
        .or_else(|| nested_name_head(name))
}

/// The name as people read it: demangled when it is mangled, else as written.
pub(crate) fn readable(name: &str) -> Cow<'_, str> {
    match demangle(name) {
        Some(d) => Cow::Owned(d),
        None => Cow::Borrowed(name),
    }
}

/// `_ZN5aiter24add_rmsnorm_quant_kernelI...` → `aiter::add_rmsnorm_quant_kernel<…>`;
/// `_Z12my_kernel_v2Pfi` → `my_kernel_v2(…)`: the source names at the head of a mangled name,
/// read as `<length><identifier>` pairs.
fn nested_name_head(name: &str) -> Option<String> {
    let rest = name.strip_prefix("_Z")?;
    let (nested, mut rest) = match rest.strip_prefix('N') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    // CV and ref qualifiers of a member function come before the names.
    rest = rest.trim_start_matches(['r', 'V', 'K', 'R', 'O']);
    let mut parts: Vec<&str> = Vec::new();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            break;
        }
        let len: usize = rest[..digits].parse().ok()?;
        let ident = rest.get(digits..digits + len)?;
        parts.push(ident);
        rest = &rest[digits + len..];
        if !nested {
            break;
        }
    }
    if parts.is_empty() {
        return None;
    }
    let tail = match rest.as_bytes().first() {
        Some(b'I') => "<…>",
        Some(b'E') | None => "",
        Some(_) => "(…)",
    };
    Some(format!("{}{tail}", parts.join("::")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mangled_kernel_names_are_demangled() {
        assert_eq!(
            demangle("_ZN5aiter36mla_a8w8_qh16_qseqlen1_gqaratio16_psE").as_deref(),
            Some("aiter::mla_a8w8_qh16_qseqlen1_gqaratio16_ps")
        );
        assert_eq!(
            demangle("_ZN5aiter50fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256E").as_deref(),
            Some("aiter::fmoe_bf16_blockscaleFp8_g1u1_vs_silu_1tg_ps_32x256")
        );
        let d = demangle(
            "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64ELi8ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
        )
        .unwrap();
        assert!(d.contains("aiter::add_rmsnorm_quant_kernel<"), "{d}");
        let d = demangle("_ZN12deep_ep_fork9internode8dispatchILi8EEEvPvi").unwrap();
        assert!(
            d.starts_with("void deep_ep_fork::internode::dispatch<8>("),
            "{d}"
        );
    }

    #[test]
    fn plain_names_are_left_alone() {
        assert_eq!(demangle("nvjet_tst_64x32_64x16_2x1_2cta"), None);
        assert_eq!(demangle("void at::native::foo<int>(int)"), None);
        assert_eq!(readable("fused_moe_kernel"), "fused_moe_kernel");
    }

    #[test]
    fn a_name_the_demangler_refuses_still_shows_its_head() {
        // Cut short in its template arguments: not a valid symbol any more.
        let cut = "_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi64EL";
        assert_eq!(
            demangle(cut).as_deref(),
            Some("aiter::add_rmsnorm_quant_kernel<…>")
        );
        assert_eq!(nested_name_head("_Z3foo").as_deref(), Some("foo"));
        assert_eq!(demangle("_Z"), None);
        assert_eq!(demangle("_ZN999abc"), None);
    }
}
