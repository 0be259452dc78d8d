//! A small table type rendered as GitHub markdown or as an aligned terminal table.

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

/// Escapes text for a markdown table cell: no cell can break the table or inject markup.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '!' | '~' | '(' | ')' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// `text` as an inline code span outside a table: a fence longer than any run of backticks in
/// it, padded when it starts or ends with a backtick or a space, newlines made spaces. Nothing
/// in a code span is markup, so no name can add a link, HTML or a mention.
pub fn code_span(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

impl Table {
    /// Headers with their alignment: text columns left, figures right.
    pub fn new(columns: &[(&str, Align)]) -> Self {
        Table {
            headers: columns.iter().map(|(h, _)| h.to_string()).collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// GitHub-flavoured markdown; cells are escaped.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        out.push_str(&line(
            &self
                .headers
                .iter()
                .map(|h| escape_markdown(h))
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
        for row in &self.rows {
            out.push_str(&line(
                &row.iter().map(|c| escape_markdown(c)).collect::<Vec<_>>(),
            ));
        }
        out
    }

    /// Aligned plain text for a terminal.
    pub fn to_terminal(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| r[i].chars().count())
                    .chain([self.headers[i].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let render = |cells: &[String]| {
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
        let mut out = render(&self.headers);
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        out.push_str(&render(&rule));
        for row in &self.rows {
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
        assert_eq!(code_span("a\nb"), "`a b`");
    }

    #[test]
    fn markdown_cells_cannot_break_the_table_or_inject_links() {
        let mut t = Table::new(&[("kernel", Align::Left), ("ms", Align::Right)]);
        t.row(vec!["evil|[x](http://e)<img>\nnext".into(), "1.00".into()]);
        let md = t.to_markdown();
        assert_eq!(md.lines().count(), 3);
        assert!(md.contains(r"evil\|\[x\]\(http://e\)\<img\> next"), "{md}");
        assert!(md.lines().nth(1).unwrap().contains("---:"));
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
