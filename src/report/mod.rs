//! Rendering: every human- and machine-readable output of tracegate. Nothing here computes a
//! figure; it formats what earlier stages computed.

pub(crate) mod analysis;
mod cannot_judge;
pub(crate) mod chart;
pub(crate) mod check;
mod code;
pub(crate) mod comment;
pub(crate) mod compare;
mod doc;
pub(crate) mod extract;
pub(crate) mod inspect;
pub(crate) mod markup;
pub(crate) mod repro;
mod sections;
pub(crate) mod sweep;
pub(crate) mod table;

/// Output formats every report can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned text for a terminal.
    Table,
    /// GitHub-flavoured markdown.
    Markdown,
    /// JSON with a documented, versioned schema.
    Json,
}

/// `extract`'s formats: those of every report, and TOML (the figures in a baseline's own syntax).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExtractFormat {
    Table,
    Markdown,
    Json,
    Toml,
}

/// A document as JSON with its schema version as the first key, so readers can check it first.
pub(crate) fn versioned_json(
    schema_version: u32,
    document: &impl serde::Serialize,
) -> serde_json::Value {
    let mut value = serde_json::json!({ "schema_version": schema_version });
    if let (Some(out), serde_json::Value::Object(fields)) = (
        value.as_object_mut(),
        serde_json::to_value(document).expect("report documents serialise"),
    ) {
        out.extend(fields);
    }
    value
}

pub(crate) use crate::units::fixed;
use crate::units::{Unit, MISSING};

/// A change of a metric as every table shows it: percentage points for a percentage, percent of
/// the baseline otherwise, the change in the unit where the baseline is 0.
pub(crate) fn change_text(unit: Unit, change: Option<f64>, change_pct: Option<f64>) -> String {
    match (change, change_pct) {
        (Some(c), _) if unit == Unit::Pct => unit.change(c),
        (Some(_), Some(p)) => crate::units::percent_change(p),
        (Some(c), None) => unit.change(c),
        _ => MISSING.into(),
    }
}

/// A percentage of `part` in `whole`, with one decimal; the missing mark when `whole` is zero.
pub(crate) fn percent(part: u64, whole: u64) -> String {
    Unit::share(part as f64, whole as f64)
}

pub(crate) use crate::taxonomy::names;

/// A kernel name made readable for a table cell, whole: a [`table::Table::code_column`] cuts
/// it, keeping different names apart. Running text and lists use [`short_name`] or
/// [`names::distinct_labels`].
pub(crate) fn display_kernel_name(name: &str) -> String {
    crate::taxonomy::untruncated_short_name(name)
}

/// A kernel name for running text: readable and cut in the middle (see
/// [`crate::taxonomy::short_name`]).
pub(crate) fn short_name(name: &str) -> String {
    crate::taxonomy::short_name(name)
}

#[cfg(test)]
mod tests {
    use super::{display_kernel_name, short_name};

    #[test]
    fn kernel_names_lose_void_and_parameters_and_running_text_cuts_them() {
        assert_eq!(
            display_kernel_name("void at::native::vectorized_elementwise_kernel<4, F>(int, F, at::detail::Array<char*, 2>)"),
            "at::native::vectorized_elementwise_kernel<4, F>"
        );
        assert_eq!(
            display_kernel_name("nvjet_tst_64x32_64x16_2x1_2cta"),
            "nvjet_tst_64x32_64x16_2x1_2cta"
        );
        let long = "Cijk_".to_string() + &"A".repeat(200) + "_MT64";
        assert_eq!(display_kernel_name(&long), long, "tables cut it");
        assert_eq!(short_name(&long).chars().count(), 96);
        assert!(short_name(&long).ends_with("_MT64"));
    }
}
