//! [`Doc`]: a report built section by section, shared by `report`, `compare` and their sections.

use super::markup::{markup, Inline, Markup};
use super::table::{Align, Table};

/// Rows shown before a long table folds into `<details>`.
const SHOWN_ROWS: usize = 15;

/// A report built section by section, written through one [`Markup`] (markdown or terminal).
pub(crate) struct Doc {
    pub m: &'static dyn Markup,
    pub out: String,
}

impl Doc {
    /// A document in markdown (`true`) or terminal text; see [`Doc::with`].
    pub(crate) fn new(markdown: bool) -> Self {
        Doc::with(markup(markdown))
    }

    pub(crate) fn with(m: &'static dyn Markup) -> Self {
        Doc {
            m,
            out: String::new(),
        }
    }

    pub(crate) fn heading(&mut self, level: usize, title: &str) {
        self.out
            .push_str(&self.m.heading(level, &[Inline::Prose(title)]));
    }

    /// A paragraph of text the caller has already escaped (see [`Doc::name`]).
    pub(crate) fn para(&mut self, text: &str) {
        self.out.push_str(&self.m.paragraph(&[Inline::Prose(text)]));
    }

    /// A kernel or op name for running text: shortened and, in markdown, escaped so that it
    /// cannot inject markup.
    pub(crate) fn name(&self, name: &str) -> String {
        self.m.inline(&Inline::Text(&super::short_name(name)))
    }

    pub(crate) fn table(&mut self, table: &Table) {
        self.out.push_str(&self.m.table(table));
    }

    /// A table whose rows beyond [`SHOWN_ROWS`] fold into `<details>` (markdown) or are cut with
    /// a count (terminal).
    /// `names`: the column of kernel or op names, shown as code in markdown, and the width its
    /// names are cut to ([`Table::name_width`]).
    pub(crate) fn long_table(
        &mut self,
        columns: &[(&str, Align)],
        names: Option<(usize, usize)>,
        rows: Vec<Vec<String>>,
        what: &str,
    ) {
        let mut head = Table::new(columns);
        let mut rest = Table::new(columns);
        let mut rows = rows;
        if let Some((i, width)) = names {
            // The shown rows and the folded ones are one list: labels cut over all of them, so
            // that a shown name and a folded one never read the same.
            let cells: Vec<&str> = rows.iter().map(|r| r[i].as_str()).collect();
            let labels = crate::taxonomy::names::distinct_cuts(&cells, width);
            let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
            for (row, label) in rows.iter_mut().zip(labels) {
                row[i] = label;
            }
            let width = width.max(widest);
            head = head.code_column(i).name_width(width);
            rest = rest.code_column(i).name_width(width);
        }
        let total = rows.len();
        for (i, row) in rows.into_iter().enumerate() {
            if i < SHOWN_ROWS {
                head.row(row);
            } else {
                rest.row(row);
            }
        }
        self.table(&head);
        if !rest.is_empty() {
            self.out
                .push_str(&self.m.more_rows(total - SHOWN_ROWS, what, &rest));
        }
    }

    /// A table folded away in markdown, shown whole on a terminal.
    pub(crate) fn folded_table(&mut self, summary: &str, table: &Table) {
        self.out.push_str(&self.m.folded_table(summary, table));
    }

    pub(crate) fn bold(&self, text: &str) -> String {
        self.m.inline(&Inline::Strong(text))
    }
}
