//! One writer for every report: the [`Markup`] trait renders the parts a report is made of
//! (headings, paragraphs of text, code spans and figures, tables, folded sections, code blocks and
//! charts), and [`Markdown`] and [`Terminal`] implement it. A report is written once, against
//! `&dyn Markup`, instead of branching on a `markdown: bool` (the model is hyperfine's
//! `src/export/markup.rs`).
//!
//! Escaping is the markup's job, by the kind of each part, with the rules of
//! [`super::table`]: [`Inline::Text`] (attacker-written: names, devices, labels) is
//! [`escape_markdown`]d, [`Inline::Code`] becomes a [`code_span`], table cells follow the
//! table's own rules. Only [`Inline::Prose`] — text this program wrote, which may hold its own
//! backtick code spans — and [`Inline::Figure`] (a number from [`crate::units`]) pass as written.

use super::table::{code_span, escape_markdown, printable, text_with_code, Table};

/// One piece of a paragraph or heading.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Inline<'a> {
    /// Text written by tracegate itself, as is (its `` `code` `` spans included).
    Prose(&'a str),
    /// Free text from a trace, a baseline or the command line: escaped in markdown.
    Text(&'a str),
    /// Free text whose names are marked as CommonMark code spans (a warning, the gate's
    /// explanation): [`text_with_code`] in markdown, printable on a terminal.
    TextWithCode(&'a str),
    /// A name shown as code: a code span in markdown, in backticks on a terminal.
    Code(&'a str),
    /// A figure written by [`crate::units`]: digits, sign and unit, shown as is.
    Figure(&'a str),
    /// Emphasised text written by tracegate (bold in markdown).
    Strong(&'a str),
}

/// What a report is written in: markdown for GitHub, or aligned text for a terminal.
pub(crate) trait Markup {
    /// One inline piece, escaped for this markup.
    fn inline(&self, part: &Inline<'_>) -> String;

    /// A heading of `level` (2 for a report's title, 3 for its sections).
    fn heading(&self, level: usize, title: &[Inline<'_>]) -> String;

    /// A table and the blank line after it.
    fn table(&self, table: &Table) -> String;

    /// A section folded away under `summary` (tracegate's own text, HTML-safe): `<details>` in
    /// markdown; on a terminal the summary as a paragraph, then the body.
    fn folded(&self, summary: &str, body: &str) -> String;

    /// A table folded away under `summary`: `<details>` in markdown, shown whole on a terminal.
    fn folded_table(&self, summary: &str, table: &Table) -> String;

    /// A note that rows were left out of a terminal table, or the folded rest in markdown.
    fn more_rows(&self, count: usize, what: &str, rest: &Table) -> String;

    /// A block of code in `lang` (`toml`): fenced in markdown, as is on a terminal.
    fn code_block(&self, lang: &str, body: &str) -> String;

    /// A chart (a fenced mermaid block): shown in markdown only, nothing on a terminal.
    fn figure(&self, block: &str) -> String;

    /// Pieces joined into one line, no break after it.
    fn line(&self, parts: &[Inline<'_>]) -> String {
        parts.iter().map(|p| self.inline(p)).collect()
    }

    /// A paragraph: the pieces, then a blank line.
    fn paragraph(&self, parts: &[Inline<'_>]) -> String {
        self.line(parts) + "\n\n"
    }
}

/// GitHub-flavoured markdown.
pub(crate) struct Markdown;

/// Aligned plain text for a terminal.
pub(crate) struct Terminal;

/// The markup for a report: markdown or terminal text.
pub(crate) fn markup(markdown: bool) -> &'static dyn Markup {
    if markdown {
        &Markdown
    } else {
        &Terminal
    }
}

/// A fence longer than any run of backticks in `text`, and at least three.
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

impl Markup for Markdown {
    fn inline(&self, part: &Inline<'_>) -> String {
        match *part {
            Inline::Prose(t) | Inline::Figure(t) => t.to_string(),
            Inline::Text(t) => escape_markdown(t),
            Inline::TextWithCode(t) => text_with_code(t),
            Inline::Code(t) => code_span(t),
            Inline::Strong(t) => format!("**{t}**"),
        }
    }

    fn heading(&self, level: usize, title: &[Inline<'_>]) -> String {
        format!("{} {}\n\n", "#".repeat(level.max(1)), self.line(title))
    }

    fn table(&self, table: &Table) -> String {
        table.to_markdown() + "\n"
    }

    fn folded(&self, summary: &str, body: &str) -> String {
        format!("<details><summary>{summary}</summary>\n\n{body}\n</details>\n\n")
    }

    fn folded_table(&self, summary: &str, table: &Table) -> String {
        self.folded(summary, &table.to_markdown())
    }

    fn more_rows(&self, count: usize, what: &str, rest: &Table) -> String {
        self.folded(&format!("{count} more {what}"), &rest.to_markdown())
    }

    fn code_block(&self, lang: &str, body: &str) -> String {
        let fence = fence_for(body);
        format!("{fence}{lang}\n{body}{fence}\n\n")
    }

    fn figure(&self, block: &str) -> String {
        block.to_string()
    }
}

impl Markup for Terminal {
    fn inline(&self, part: &Inline<'_>) -> String {
        match *part {
            Inline::Prose(t) | Inline::Figure(t) | Inline::Strong(t) => t.to_string(),
            Inline::Text(t) | Inline::TextWithCode(t) => printable(t).into_owned(),
            Inline::Code(t) => format!("`{}`", printable(t)),
        }
    }

    fn heading(&self, _level: usize, title: &[Inline<'_>]) -> String {
        let title = self.line(title);
        format!("{title}\n{}\n\n", "=".repeat(title.chars().count()))
    }

    fn table(&self, table: &Table) -> String {
        table.to_terminal() + "\n"
    }

    fn folded(&self, summary: &str, body: &str) -> String {
        format!("{summary}\n\n{body}")
    }

    fn folded_table(&self, summary: &str, table: &Table) -> String {
        self.folded(summary, &self.table(table))
    }

    fn more_rows(&self, count: usize, what: &str, _rest: &Table) -> String {
        format!("... {count} more {what} (see --format json)\n\n")
    }

    fn code_block(&self, _lang: &str, body: &str) -> String {
        format!("{body}\n")
    }

    fn figure(&self, _block: &str) -> String {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::super::table::Align;
    use super::*;

    const HOSTILE: &str = "evil](http://x) <img src=x> @team #12 `tick` *b*";

    #[test]
    fn attacker_text_is_inert_in_markdown_and_printable_on_a_terminal() {
        let md = Markdown.inline(&Inline::Text(HOSTILE));
        assert_eq!(md, escape_markdown(HOSTILE));
        assert!(md.contains("\\]\\(") && md.contains("\\<img") && !md.contains("@team"));
        assert_eq!(Markdown.inline(&Inline::Code(HOSTILE)), code_span(HOSTILE));
        assert_eq!(
            Terminal.inline(&Inline::Text("a\u{1b}[31mb")),
            printable("a\u{1b}[31mb")
        );
        assert_eq!(Terminal.inline(&Inline::Code("x")), "`x`");
        let warning = "rank `a<b>` dropped (see @x)";
        assert_eq!(
            Markdown.inline(&Inline::TextWithCode(warning)),
            text_with_code(warning)
        );
    }

    #[test]
    fn paragraphs_mix_prose_code_and_figures() {
        let parts = [
            Inline::Prose("Most of it is "),
            Inline::Code("ck::moe`x"),
            Inline::Prose(" ("),
            Inline::Figure("+0.420 ms"),
            Inline::Prose(")."),
        ];
        assert_eq!(
            Markdown.paragraph(&parts),
            "Most of it is ``ck::moe`x`` (+0.420 ms).\n\n"
        );
        assert_eq!(
            Terminal.paragraph(&parts),
            "Most of it is `ck::moe`x` (+0.420 ms).\n\n"
        );
    }

    #[test]
    fn headings_tables_and_folds_per_markup() {
        let title = [Inline::Prose("report: "), Inline::Text("MI*355X")];
        assert_eq!(Markdown.heading(3, &title), "### report: MI\\*355X\n\n");
        assert_eq!(
            Terminal.heading(3, &title),
            "report: MI*355X\n===============\n\n"
        );
        let mut t = Table::new(&[("kernel", Align::Left), ("ms", Align::Right)]);
        t.row(vec!["a|b".into(), "1.000".into()]);
        assert_eq!(Markdown.table(&t), t.to_markdown() + "\n");
        assert_eq!(Terminal.table(&t), t.to_terminal() + "\n");
        assert_eq!(
            Markdown.more_rows(2, "kernels", &t),
            format!(
                "<details><summary>2 more kernels</summary>\n\n{}\n</details>\n\n",
                t.to_markdown()
            )
        );
        assert_eq!(
            Terminal.more_rows(2, "kernels", &t),
            "... 2 more kernels (see --format json)\n\n"
        );
        assert_eq!(
            Markdown.code_block("toml", "a = \"```\"\n"),
            "````toml\na = \"```\"\n````\n\n"
        );
        assert_eq!(Terminal.figure("```mermaid\n```\n"), "");
        assert_eq!(markup(true).figure("x"), "x");
        assert_eq!(markup(false).figure("x"), "");
    }
}
