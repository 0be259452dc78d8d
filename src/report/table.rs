//! A small table type rendered as GitHub markdown or as an aligned terminal table, and the
//! escaping every writer uses: [`printable`] for any output, [`escape_markdown`] and
//! [`code_span`] for markdown.

use std::borrow::Cow;

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone)]
pub(crate) struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    /// Columns of names (kernels, ops): code spans in markdown.
    code: Vec<bool>,
    /// Columns whose cells the caller wrote as markdown already (lists of code spans).
    markdown: Vec<bool>,
    /// Characters a name of a code column is cut to ([`Table::name_width`]).
    name_width: usize,
    rows: Vec<Vec<String>>,
}

use crate::taxonomy::names::{distinct_cuts, NAME_WIDTH};
pub(crate) use crate::text::printable;
use crate::text::{needs_escape, push_escape};

/// Free text (an image, a `--meta` value, a label, a file name, a status) is cut to this many
/// characters in markdown; the JSON keeps the whole value.
pub(crate) const FREE_TEXT_CHARS: usize = 200;

/// `text` cut to [`FREE_TEXT_CHARS`] characters, the cut marked with `…`.
pub(crate) fn cut(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(FREE_TEXT_CHARS) {
        None => Cow::Borrowed(text),
        Some(_) => Cow::Owned(cut_to(text, FREE_TEXT_CHARS)),
    }
}

/// `text` cut to `max` characters (at least 2), the cut marked with `…`.
pub(crate) fn cut_to(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max.max(2) - 1).collect();
    format!("{head}…")
}

/// Where escaped text goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    /// Markdown inline text: markup characters backslash-escaped.
    Markdown,
    /// Inside an HTML block (`<summary>`), where markdown escapes do not apply: entities.
    Html,
}

/// A word joiner: invisible, so the text reads the same, but it breaks GitHub's mentions,
/// references and autolinks.
const JOINER: &str = "\u{2060}";

/// Whether `chars[i..]` starts with `pattern`, ASCII case ignored.
fn starts_with_at(chars: &[char], i: usize, pattern: &str) -> bool {
    let mut k = i;
    for p in pattern.chars() {
        match chars.get(k) {
            Some(c) if c.eq_ignore_ascii_case(&p) => k += 1,
            _ => return false,
        }
    }
    true
}

/// The one neutraliser of free text for GitHub: control characters escaped ([`printable`]), and
/// a word joiner inside every `@mention`, `#N`, `GH-N`, `owner/repo#N`, `www.` and `://`, so
/// that GitHub neither notifies anyone, links an issue nor makes a link; then markup escaped
/// for the target.
fn neutralise(text: &str, target: Target) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next_is_digit = chars.get(i + 1).is_some_and(char::is_ascii_digit);
        if needs_escape(c) {
            push_escape(&mut out, c);
        } else if starts_with_at(&chars, i, "www.") && (i == 0 || !chars[i - 1].is_alphanumeric()) {
            out.extend(&chars[i..i + 3]);
            out.push_str(JOINER);
            out.push('.');
            i += 4;
            continue;
        } else if c == '-' && next_is_digit && i >= 2 && starts_with_at(&chars, i - 2, "gh") {
            out.push_str(JOINER);
            out.push('-');
        } else {
            match (target, c) {
                (_, '@') => {
                    out.push('@');
                    out.push_str(JOINER);
                }
                (_, ':') if starts_with_at(&chars, i, "://") => {
                    out.push(':');
                    out.push_str(JOINER);
                }
                (Target::Markdown, '#') | (Target::Html, '#') => {
                    if target == Target::Markdown {
                        out.push('\\');
                    }
                    out.push('#');
                    if next_is_digit {
                        out.push_str(JOINER);
                    }
                }
                (
                    Target::Markdown,
                    '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '!' | '~' | '(' | ')'
                    | '&',
                ) => {
                    out.push('\\');
                    out.push(c);
                }
                (Target::Html, '&') => out.push_str("&amp;"),
                (Target::Html, '<') => out.push_str("&lt;"),
                (Target::Html, '>') => out.push_str("&gt;"),
                (Target::Html, '"') => out.push_str("&quot;"),
                (Target::Html, '\'') => out.push_str("&#39;"),
                _ => out.push(c),
            }
        }
        i += 1;
    }
    out
}

/// Escapes text for markdown (a table cell, a sentence): no text can break the table, inject
/// markup, mention a user, reference an issue or make a link. Not cut: see [`free_text`].
pub(crate) fn escape_markdown(text: &str) -> String {
    neutralise(text, Target::Markdown)
}

/// A free-text value (image, meta, label, file name, status) for markdown: [`cut`] and
/// [`escape_markdown`].
pub(crate) fn free_text(text: &str) -> String {
    escape_markdown(&cut(text))
}

/// A free-text value as a code span: [`cut`] and [`code_span`].
pub(crate) fn free_code(text: &str) -> String {
    code_span(&cut(text))
}

/// A free-text value placed inside HTML (`<summary>`, `<details>`), where markdown escapes do
/// not apply: [`cut`], HTML entities for `&`, `<`, `>`, `"`, `'`, and mentions, references and
/// links broken as in [`escape_markdown`].
pub(crate) fn escape_html(text: &str) -> String {
    neutralise(&cut(text), Target::Html)
}

/// `text` as an inline code span outside a table: a fence longer than any run of backticks in
/// it, padded when it starts or ends with a backtick or a space, control characters escaped
/// ([`printable`]). Nothing in a code span is markup, so no name can add a link, HTML or a
/// mention.
pub(crate) fn code_span(text: &str) -> String {
    let text = printable(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// [`code_span`] for a table cell: GFM splits cells at `|` even inside a code span unless it is
/// escaped, and takes `\|` there as a plain `|`.
pub(crate) fn table_code_span(text: &str) -> String {
    code_span(text).replace('|', "\\|")
}

/// Running text that marks names as CommonMark code spans (a run of backticks to the next run of
/// the same length, as `explain` writes its lead) as markdown: the spans become [`code_span`]s,
/// everything else is escaped. A backtick run without its closing run is text.
pub(crate) fn text_with_code(text: &str) -> String {
    let mut out = String::new();
    let mut plain = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let run = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let after = &rest[start + run..];
        let close = find_run(after, run);
        plain.push_str(&rest[..start]);
        match close {
            Some(end) => {
                out.push_str(&escape_markdown(&plain));
                plain.clear();
                let inner = &after[..end];
                let inner = match inner.strip_prefix(' ').and_then(|i| i.strip_suffix(' ')) {
                    Some(i) if !i.trim().is_empty() => i,
                    _ => inner,
                };
                out.push_str(&code_span(inner));
                rest = &after[end + run..];
            }
            None => {
                plain.push_str(&rest[start..start + run]);
                rest = after;
            }
        }
    }
    plain.push_str(rest);
    out.push_str(&escape_markdown(&plain));
    out
}

/// The byte offset in `text` of the first run of exactly `len` backticks.
fn find_run(text: &str, len: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let n = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            if n == len {
                return Some(i);
            }
            i += n;
        } else {
            i += 1;
        }
    }
    None
}

/// Units a figure in a table cell is written with: the space before one is made non-breaking.
const UNITS: [&str; 15] = [
    "ms", "µs", "us", "ns", "s", "pp", "%", "tok/s", "GB", "MB", "KB", "GiB", "MiB", "TB/s",
    "TFLOP/s",
];

/// `text` with every space between a number and its unit non-breaking, so a narrow column never
/// wraps `20.974` from `ms` (the browser check fails on that).
pub(crate) fn join_figures(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous = None;
    for (i, c) in text.char_indices() {
        let rest = &text[i + c.len_utf8()..];
        let before_unit = UNITS.iter().any(|u| {
            rest.strip_prefix(u)
                .is_some_and(|after| !after.starts_with(|n: char| n.is_alphanumeric()))
        });
        if c == ' ' && previous.is_some_and(|p: char| p.is_ascii_digit()) && before_unit {
            out.push('\u{a0}');
        } else {
            out.push(c);
        }
        previous = Some(c);
    }
    out
}

impl Table {
    /// Headers with their alignment: text columns left, figures right.
    pub(crate) fn new(columns: &[(&str, Align)]) -> Self {
        Table {
            headers: columns.iter().map(|(h, _)| h.to_string()).collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            code: vec![false; columns.len()],
            markdown: vec![false; columns.len()],
            name_width: NAME_WIDTH,
            rows: Vec::new(),
        }
    }

    /// Column `i` holds names (kernels, ops): markdown shows them as code spans, not escaped
    /// text, and every output cuts them in the middle to [`NAME_WIDTH`] characters with no two
    /// different names alike ([`distinct_cuts`]): callers put the whole readable name
    /// ([`super::display_kernel_name`]) in the cell.
    pub(crate) fn code_column(mut self, i: usize) -> Self {
        self.code[i] = true;
        self
    }

    /// Names of the code columns cut to `width` characters instead of [`NAME_WIDTH`]: what fits
    /// the table beside its other columns in GitHub's comment column (900 px). Different names
    /// still read apart ([`distinct_cuts`] widens the cut where they would not).
    pub(crate) fn name_width(mut self, width: usize) -> Self {
        self.name_width = width;
        self
    }

    /// Markdown shows column `i` as written: its cells are markdown the caller escaped (several
    /// names as [`table_code_span`]s). Only for a table rendered as markdown.
    pub(crate) fn markdown_column(mut self, i: usize) -> Self {
        self.markdown[i] = true;
        self
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The rows as shown: the cells of each code column cut to distinct labels.
    fn shown_rows(&self) -> Vec<Vec<String>> {
        let mut rows = self.rows.clone();
        for (i, _) in self.code.iter().enumerate().filter(|(_, c)| **c) {
            let cells: Vec<&str> = self.rows.iter().map(|r| r[i].as_str()).collect();
            for (row, label) in rows.iter_mut().zip(distinct_cuts(&cells, self.name_width)) {
                row[i] = label;
            }
        }
        rows
    }

    /// GitHub-flavoured markdown; cells are escaped.
    pub(crate) fn to_markdown(&self) -> String {
        let mut out = String::new();
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        out.push_str(&line(
            &self
                .headers
                .iter()
                .map(|h| escape_markdown(&cut(h)))
                .collect::<Vec<_>>(),
        ));
        let rule: Vec<String> = self
            .align
            .iter()
            .map(|a| match a {
                Align::Left => "---".to_string(),
                Align::Right => "---:".to_string(),
            })
            .collect();
        out.push_str(&line(&rule));
        for row in &self.shown_rows() {
            out.push_str(&line(
                &row.iter()
                    .enumerate()
                    .map(|(i, c)| {
                        if self.code[i] && !c.is_empty() && c != crate::units::MISSING {
                            table_code_span(c)
                        } else if self.markdown[i] {
                            c.clone()
                        } else {
                            join_figures(&escape_markdown(&cut(c)))
                        }
                    })
                    .collect::<Vec<_>>(),
            ));
        }
        out
    }

    /// Aligned plain text for a terminal; cells are [`printable`].
    pub(crate) fn to_terminal(&self) -> String {
        let rows = self.shown_rows();
        let shown: Vec<Vec<Cow<'_, str>>> = rows
            .iter()
            .map(|r| r.iter().map(|c| printable(c)).collect())
            .collect();
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                shown
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([printable(&self.headers[i]).chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let render = |cells: &[Cow<'_, str>]| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| match self.align[i] {
                    Align::Left => format!("{:<w$}", c, w = widths[i]),
                    Align::Right => format!("{:>w$}", c, w = widths[i]),
                })
                .collect();
            parts.join("  ").trim_end().to_string() + "\n"
        };
        let headers: Vec<Cow<'_, str>> = self.headers.iter().map(|h| printable(h)).collect();
        let mut out = render(&headers);
        let rule: Vec<Cow<'_, str>> = widths.iter().map(|w| "-".repeat(*w).into()).collect();
        out.push_str(&render(&rule));
        for row in &shown {
            out.push_str(&render(row));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_outgrow_backticks_and_keep_edges() {
        assert_eq!(code_span("v0.5.4"), "`v0.5.4`");
        assert_eq!(code_span("a``b"), "```a``b```");
        assert_eq!(code_span("`x"), "`` `x ``");
        assert_eq!(code_span("a\nb"), "`a\\nb`");
    }

    #[test]
    fn code_spans_in_text_become_real_code_and_the_rest_is_escaped() {
        assert_eq!(
            text_with_code("led by `a<b>_c` (+1 ms)."),
            "led by `a<b>_c` \\(+1 ms\\)."
        );
        assert_eq!(text_with_code("x ``a`b`` y"), "x ``a`b`` y");
        assert_eq!(text_with_code("odd ` tick"), "odd \\` tick");
        assert_eq!(table_code_span("a|b"), "`a\\|b`");
    }

    #[test]
    fn markdown_cells_cannot_break_the_table_or_inject_links() {
        let mut t = Table::new(&[("kernel", Align::Left), ("ms", Align::Right)]);
        t.row(vec!["evil|[x](http://e)<img>\nnext".into(), "1.00".into()]);
        let md = t.to_markdown();
        assert_eq!(md.lines().count(), 3);
        assert!(
            md.contains("evil\\|\\[x\\]\\(http:\u{2060}//e\\)\\<img\\>\\nnext"),
            "{md}"
        );
        assert!(md.lines().nth(1).unwrap().contains("---:"));
    }

    #[test]
    fn names_cannot_mention_a_user_or_link_a_url() {
        let e = escape_markdown("kernel@octocat https://evil.example/x");
        assert!(!e.contains("@o") && !e.contains("://"), "{e}");
        assert_eq!(
            e.replace('\u{2060}', ""),
            "kernel@octocat https://evil.example/x"
        );
    }

    #[test]
    fn control_characters_are_shown_escaped_in_every_output() {
        let name = "evil\n::error::x\r\t\x1b[31m\x07\u{7f}\u{85}\u{202e}\u{2028}end";
        let shown = r"evil\n::error::x\r\t\x1b[31m\x07\x7f\x85\u{202e}\u{2028}end";
        assert_eq!(printable(name), shown);
        assert!(matches!(printable("plain µs → name"), Cow::Borrowed(_)));
        assert_eq!(code_span(name), format!("`{shown}`"));
        assert!(!escape_markdown(name).chars().any(needs_escape));
        let mut t = Table::new(&[("kernel", Align::Left)]);
        t.row(vec![name.into()]);
        let text = t.to_terminal();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert_eq!(text.lines().nth(2), Some(shown));
        assert_eq!(crate::taxonomy::short_name(name), shown);
    }

    #[test]
    fn free_text_references_autolinks_and_html_are_inert() {
        let text =
            "see #12, GH-3, acme/infer#14, www.evil.example, https://x.example @octocat &sol;";
        for out in [escape_markdown(text), escape_html(text)] {
            // Markdown keeps `&` as the escaped `\&`, which GFM shows as a plain `&`.
            let unescaped = out.replace("\\&", "");
            for live in ["#1", "GH-3", "www.", "://", "@o", "&sol;"] {
                assert!(!unescaped.contains(live), "{live} in {out}");
            }
            assert_eq!(
                out.replace(JOINER, "").replace('\\', ""),
                if out.contains("&amp;") {
                    text.replace('&', "&amp;")
                } else {
                    text.to_string()
                }
            );
        }
        let html = escape_html("mi355x<a href=https:&sol;&sol;evil.example.com>click</a>\"'");
        assert!(!html.contains(['<', '>', '"', '\'']), "{html}");
        assert!(
            html.starts_with("mi355x&lt;a href=https:&amp;sol;"),
            "{html}"
        );
        // Cut to FREE_TEXT_CHARS characters, the cut marked.
        let long = "x".repeat(70_000);
        assert_eq!(free_text(&long).chars().count(), FREE_TEXT_CHARS);
        assert!(free_code(&long).chars().count() <= FREE_TEXT_CHARS + 2);
        assert_eq!(escape_html(&long).chars().count(), FREE_TEXT_CHARS);
        assert_eq!(free_text("short"), "short");
        // Words that merely contain the letters stay as they are.
        assert_eq!(escape_markdown("ghx-1 awww.b"), "ghx-1 awww.b");
    }

    #[test]
    fn code_columns_cut_names_in_the_middle_and_keep_them_apart() {
        let a = "ck::kernel_moe_mxgemm_2lds<ck::GridwiseMoeGemmMX_BPreshuffle<ck::tensor_layout::gemm::RowMajor, ck::tensor_layout::gemm::ColumnMajor, ck::f4x2_pk_t, ck::e8m0_bexp_t, ck::bhalf_t, float, 32, 256, 128, 16, 16, true, 1>, true, 2, (ck::TailNumber)2>";
        let b = a.replace("32, 256, 128, 16, 16, true", "32, 128, 256, 16, 16, false");
        let mut t = Table::new(&[("kernel", Align::Left), ("ms", Align::Right)]).code_column(0);
        t.row(vec![a.to_string(), "1".into()]);
        t.row(vec![b.clone(), "2".into()]);
        t.row(vec![crate::units::MISSING.into(), "3".into()]);
        let md = t.to_markdown();
        let cells: Vec<&str> = md
            .lines()
            .skip(2)
            .map(|l| l.split(" | ").next().unwrap())
            .collect();
        assert_ne!(cells[0], cells[1], "{md}");
        assert_eq!(cells[2], format!("| {}", crate::units::MISSING));
        for c in &cells[..2] {
            assert!(c.chars().count() <= NAME_WIDTH + 4, "{c}");
            assert!(c.starts_with("| `ck::kernel_moe_mxgemm_2lds<"), "{c}");
        }
        let text = t.to_terminal();
        let lines: Vec<&str> = text.lines().skip(2).collect();
        assert_ne!(
            lines[0].split("  ").next(),
            lines[1].split("  ").next(),
            "{text}"
        );
        assert!(lines[0].chars().count() < 110, "{text}");
    }

    #[test]
    fn figures_keep_their_units_and_nothing_else_is_joined() {
        assert_eq!(
            join_figures("20.974 ms → 21 µs, +3.6 pp (calibrated, 6 runs) 3127 tok/s"),
            "20.974\u{a0}ms → 21\u{a0}µs, +3.6\u{a0}pp (calibrated, 6 runs) 3127\u{a0}tok/s"
        );
        // A word that starts like a unit is not one; shapes are left alone.
        assert_eq!(
            join_figures("8 messages, 64 x 7168"),
            "8 messages, 64 x 7168"
        );
        let mut t = Table::new(&[("v", Align::Right)]);
        t.row(vec!["1.5 ms".into()]);
        assert!(t.to_markdown().contains("1.5\u{a0}ms"));
    }

    #[test]
    fn terminal_columns_align() {
        let mut t = Table::new(&[("a", Align::Left), ("b", Align::Right)]);
        t.row(vec!["long name".into(), "1".into()]);
        t.row(vec!["x".into(), "22".into()]);
        let text = t.to_terminal();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "long name   1");
        assert_eq!(lines[3], "x          22");
    }
}
