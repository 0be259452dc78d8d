//! How text from outside (a trace, a baseline, a file name, the command line) is shown: control
//! characters escaped. The lowest layer of every writer (report, output, the kernel diff, kernel
//! names), so that it depends on nothing.

use std::borrow::Cow;

/// Whether `c` is shown as an escape by [`printable`]: control characters (C0, DEL, C1: line
/// breaks, ESC, BEL...), the Unicode line and paragraph separators, and the bidirectional
/// controls that reorder what a reader sees.
pub(crate) fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Pushes the escape of `c` (one [`needs_escape`] is true for): `\n`, `\r`, `\t`, `\x1b`,
/// `\u{202e}`.
pub(crate) fn push_escape(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// Text from a trace, a baseline, a file name or the command line as every output shows it:
/// each control character written as an escape (`\n`, `\r`, `\t`, `\x1b`, `\x07`, `\u{202e}`),
/// so that no name can start a line of its own (a forged `+` line in a diff, a workflow command),
/// move a terminal's cursor, ring its bell or reorder the text around it. The one escaping
/// function of names: the terminal table, markdown (`report::table::escape_markdown`, `code_span`), kernel
/// names (the taxonomy's `short_name`) and the kernel diff all use it. Borrows when there is
/// nothing to escape.
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            push_escape(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}
