//! Rendering: every human- and machine-readable output of tracegate. Nothing here computes a
//! figure; it formats what earlier stages computed.

pub mod analysis;
pub mod check;
pub mod compare;
pub mod extract;
pub mod inspect;
pub mod table;

/// Output formats shared by the subcommands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned text for a terminal.
    Table,
    /// GitHub-flavoured markdown.
    Markdown,
    /// JSON with a documented, versioned schema.
    Json,
    /// TOML (extract only).
    Toml,
}

/// A figure with a fixed number of decimals.
pub fn fixed(value: f64, decimals: usize) -> String {
    format!("{value:.decimals$}")
}

/// A percentage of `part` in `whole`, with one decimal; "-" when `whole` is zero.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// Longest kernel name shown in a table; the JSON keeps full names.
const NAME_WIDTH: usize = 96;

/// A kernel name made readable for a table: no `void ` prefix, no parameter list, and at most
/// [`NAME_WIDTH`] characters (the cut is marked with `…`).
pub fn display_kernel_name(name: &str) -> String {
    let mut shown = name.strip_prefix("void ").unwrap_or(name);
    // Only C++ signatures carry a parameter list; "Memcpy DtoH (Device -> Host)" keeps its words.
    if shown.ends_with(')') && (name.starts_with("void ") || shown.contains("::")) {
        // Drop the parameter list: the last balanced "(...)" group at the end.
        let mut depth = 0i32;
        for (i, c) in shown.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        if i > 0 {
                            shown = &shown[..i];
                        }
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    if shown.chars().count() <= NAME_WIDTH {
        return shown.to_string();
    }
    let head: String = shown.chars().take(NAME_WIDTH - 1).collect();
    format!("{head}…")
}

#[cfg(test)]
mod tests {
    use super::display_kernel_name;

    #[test]
    fn kernel_names_lose_void_and_parameters_and_stay_short() {
        assert_eq!(
            display_kernel_name("void at::native::vectorized_elementwise_kernel<4, F>(int, F, at::detail::Array<char*, 2>)"),
            "at::native::vectorized_elementwise_kernel<4, F>"
        );
        assert_eq!(
            display_kernel_name("nvjet_tst_64x32_64x16_2x1_2cta"),
            "nvjet_tst_64x32_64x16_2x1_2cta"
        );
        let long = "Cijk_".to_string() + &"A".repeat(200);
        assert_eq!(display_kernel_name(&long).chars().count(), 96);
        assert!(display_kernel_name(&long).ends_with('…'));
    }
}
