//! The sections every comment of `check` shares, whatever it judged: its head (the first line,
//! the second, the identity and partial-run lines) and its folds (the categories, the kernel
//! diff, the kernels that moved, the run and baseline, the warnings).

use super::check::{
    capitalised, delta_table, details, fence_for, headline, identity_line, meta_table, moved, ms,
    partial_line,
};
use super::table::{code_span, escape_html, escape_markdown};
use crate::gate::explain::Delta;
use crate::gate::{CheckResult, Status};
use crate::taxonomy::names::cut_middle;

/// The first line, the count line, the identity and partial-run lines: the comment's head.
pub(super) fn head(result: &CheckResult, second: &str) -> String {
    let mut head = format!("{}\n\n{second}\n\n", headline(result, true));
    if let Some(line) = identity_line(result, true) {
        head.push_str(&line);
        head.push_str("\n\n");
    }
    if let Some(line) = partial_line(result) {
        head.push_str(&format!("> ⚠️ {}\n\n", escape_markdown(&line)));
    }
    head
}

/// The fold every comment ends with, one click for all that a reviewer rarely needs (categories
/// within noise, the kernel diff, the kernels that moved, the run and baseline), each folded
/// inside it; and the warnings, folded on their own.
pub(super) fn folds(result: &CheckResult, categories: Vec<Delta>) -> Vec<String> {
    let e = &result.explanation;
    let noise = e.noise_ms_per_step;
    let mut inner = String::new();
    let mut named = Vec::new();
    if !categories.is_empty() {
        let summary = if result.status == Status::Pass {
            "Categories".to_string()
        } else {
            format!("Categories within noise (under {} per step)", ms(noise))
        };
        inner.push_str(&details(
            &escape_html(&summary),
            &delta_table(&categories, false).to_markdown(),
        ));
        named.push("categories");
    }
    if !e.kernel_diff.is_empty() {
        let (diff, summary) = cut_diff(&e.kernel_diff);
        let fence = fence_for(&diff);
        inner.push_str(&details(&summary, &format!("{fence}diff\n{diff}{fence}\n")));
        named.push("kernels that appeared or vanished");
    }
    // Only kernels that moved as much as a category must to be shown: a row of ±0 is noise.
    let kernels: Vec<Delta> = e
        .kernels
        .iter()
        .filter(|d| moved(d, noise))
        .cloned()
        .collect();
    if !kernels.is_empty() {
        inner.push_str(&details(
            &escape_html(&format!(
                "Kernels whose time per step moved most (by {} or more)",
                ms(noise)
            )),
            &delta_table(&kernels, true).to_markdown(),
        ));
        named.push("kernels that moved");
    }
    if let Some((summary, body)) = code_behind(result) {
        inner.push_str(&details(&summary, &body));
        named.push("the code behind the kernel");
    }
    inner.push_str(&details(
        "Run and baseline",
        &meta_table(result).to_markdown(),
    ));
    named.push("run and baseline");
    let mut parts = vec![details(&capitalised(&named.join(", ")), &inner)];
    if !result.run.warnings.is_empty() {
        parts.push(warnings(result));
    }
    parts
}

/// The fold on the kernel the Why names: its op stack, shapes and dtypes, Python stack, bound,
/// and what `check --repro` writes for it.
fn code_behind(result: &CheckResult) -> Option<(String, String)> {
    let e = &result.explanation;
    let site = e.site.as_ref().filter(|_| e.cause.kernel().is_some())?;
    let summary = escape_html(&format!(
        "The code behind {}",
        crate::report::short_name(&site.kernel)
    ));
    let mut body = String::new();
    let stack: Vec<String> = site.ops.iter().rev().map(|o| code_span(&o.name)).collect();
    if !stack.is_empty() {
        body.push_str(&format!("- Op: {}\n", stack.join(" › ")));
    }
    if let Some(op) = site.ops.first() {
        body.push_str(&format!(
            "- Input Dims {}, types {}\n",
            code_span(&format!("{:?}", op.input_dims)),
            code_span(&op.input_types.join(", "))
        ));
    }
    if let Some(b) = site.gemm.as_ref().and_then(|g| g.bound.as_ref()) {
        body.push_str(&format!("- {}\n", escape_markdown(&bound_words(b))));
    }
    let records = super::repro::records(result);
    match records.first().map(|r| &r.torch_equivalent) {
        Some(super::repro::TorchEquivalent::Call(call)) => body.push_str(&format!(
            "- `tracegate check --repro DIR` writes its record and a script timing {} at these \
             shapes.\n",
            code_span(call)
        )),
        Some(super::repro::TorchEquivalent::None(why)) => body.push_str(&format!(
            "- `tracegate check --repro DIR` writes its record; no script: {}.\n",
            escape_markdown(why)
        )),
        None => {}
    }
    if !site.python.is_empty() {
        // The innermost frames (the call itself), then the modules it sits in, innermost first.
        const INNERMOST: usize = 6;
        // A frame such as `<built-in method … of pybind11_builtins…>` runs past the comment's
        // 900 px column; cut, the whole stack is in the JSON.
        const FRAME_WIDTH: usize = 96;
        let line = |f: &String| {
            crate::report::table::cut_to(&crate::report::table::printable(f), FRAME_WIDTH)
        };
        let mut frames: Vec<String> = site.python.iter().rev().take(INNERMOST).map(line).collect();
        let modules: Vec<String> = site
            .python
            .iter()
            .rev()
            .skip(INNERMOST)
            .filter(|f| f.starts_with("nn.Module: "))
            .map(line)
            .collect();
        if !modules.is_empty() {
            frames.push("…".to_string());
            frames.extend(modules);
        }
        let text = frames.join("\n") + "\n";
        let fence = fence_for(&text);
        body.push_str(&format!(
            "\nPython stack, innermost first:\n\n{fence}text\n{text}{fence}\n"
        ));
    }
    Some((summary, body))
}

/// `memory-bound: 57.6% of HBM bandwidth (3.05 of 5.3 TB/s, AMD Instinct MI300X)`.
fn bound_words(b: &crate::analysis::roofline::Bound) -> String {
    use crate::analysis::roofline::Limit;
    match (b.limit, b.pct_of_limit) {
        (Some(Limit::Memory), Some(p)) => format!(
            "Memory-bound: {} of HBM bandwidth ({} of {} TB/s, {})",
            crate::units::Unit::Pct.figure(p),
            crate::units::fixed(b.achieved_tbps, 2),
            b.peak_tbps
                .map_or_else(|| "?".into(), |t| crate::units::trimmed(t, 2)),
            b.device
        ),
        (Some(Limit::Compute), Some(p)) => format!(
            "Compute-bound: {} of peak FLOP/s ({} of {} TFLOP/s, {})",
            crate::units::Unit::Pct.figure(p),
            crate::units::fixed(b.achieved_tflops, 1),
            b.peak_tflops
                .map_or_else(|| "?".into(), |t| crate::units::trimmed(t, 1)),
            b.device
        ),
        _ => format!(
            "No bound: {}",
            b.why_not.as_deref().unwrap_or("the peaks are unknown")
        ),
    }
}

/// The run's own folds, for a comment that compared nothing: the run and baseline, the warnings.
pub(super) fn run_folds(result: &CheckResult) -> Vec<String> {
    let mut parts = vec![details(
        "Run and baseline",
        &meta_table(result).to_markdown(),
    )];
    if !result.run.warnings.is_empty() {
        parts.push(warnings(result));
    }
    parts
}

fn warnings(result: &CheckResult) -> String {
    let list: String = result
        .run
        .warnings
        .iter()
        .map(|w| format!("- {}\n", escape_markdown(w)))
        .collect();
    details("Warnings", &list)
}

/// Lines of the kernel diff a comment shows; the JSON verdict has them all.
const DIFF_LINES: usize = 20;
/// Characters of one diff line: what fits the 900 px column in a code block at 14 px.
const DIFF_LINE_CHARS: usize = 96;

/// The kernel diff as the comment folds it: its first [`DIFF_LINES`] lines, each cut in the
/// middle to [`DIFF_LINE_CHARS`], and the fold's summary saying how many were left out.
fn cut_diff(diff: &str) -> (String, String) {
    let lines: Vec<&str> = diff.lines().collect();
    let mut out: String = lines
        .iter()
        .take(DIFF_LINES)
        .map(|l| format!("{}\n", cut_middle(l, DIFF_LINE_CHARS, None)))
        .collect();
    let rest = lines.len().saturating_sub(DIFF_LINES);
    let summary = if rest > 0 {
        out.push_str(&format!("# … {rest} more lines in the JSON verdict\n"));
        format!(
            "Kernels that appeared or vanished (the first {DIFF_LINES} of {} lines)",
            lines.len()
        )
    } else {
        "Kernels that appeared or vanished".to_string()
    };
    (out, summary)
}
