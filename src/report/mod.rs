//! Rendering: every human- and machine-readable output of tracegate. Nothing here computes a
//! figure; it formats what earlier stages computed.

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
