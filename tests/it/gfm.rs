//! Every markdown snapshot, and the check comment of a renamed, slower kernel, rendered as GitHub
//! renders it (comrak: CommonMark with the GFM table, autolink, and strikethrough
//! extensions) and checked on the HTML: kernel names are code, no escaping shows through as a
//! stray backslash or backtick, tables keep their columns, `<details>` are balanced, and no name
//! turns into a link or a mention.

use std::path::Path;

use crate::common::{check_mi355x, renamed_moe_run};

pub(crate) fn gfm_html(markdown: &str) -> String {
    let mut options = comrak::Options::default();
    options.extension.table = true;
    options.extension.autolink = true;
    options.extension.strikethrough = true;
    // GitHub keeps `<details>`; comrak would otherwise drop raw HTML.
    options.render.r#unsafe = true;
    comrak::markdown_to_html(markdown, &options)
}

/// The HTML with every `<open>...</close>` element's content removed.
fn without(html: &str, open: &str, close: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(i) = rest.find(open) {
        out.push_str(&rest[..i]);
        match rest[i..].find(close) {
            Some(j) => rest = &rest[i + j + close.len()..],
            None => {
                rest = "";
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The text of the HTML outside code, tags dropped.
pub(crate) fn prose(html: &str) -> String {
    let html = without(&without(html, "<pre", "</pre>"), "<code>", "</code>");
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Cells of each row (`<tr>`) of each table, as HTML.
fn tables(html: &str) -> Vec<Vec<Vec<String>>> {
    html.split("<table>")
        .skip(1)
        .map(|t| {
            let t = &t[..t.find("</table>").unwrap()];
            t.split("<tr>")
                .skip(1)
                .map(|row| {
                    let row = &row[..row.find("</tr>").unwrap()];
                    row.split("<t")
                        .skip(1)
                        .filter(|c| c.starts_with('h') || c.starts_with('d'))
                        .map(|c| {
                            let body = &c[c.find('>').unwrap() + 1..];
                            body[..body.find("</t").unwrap()].to_string()
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// Cells of a markdown table line, split at pipes no backslash escapes.
fn source_cells(line: &str) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for c in line.trim().chars() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            '|' if !escaped => n += 1,
            _ => {}
        }
        escaped = false;
    }
    n - 1
}

pub(crate) fn assert_renders_as_github_should(name: &str, markdown: &str) {
    // Source: every line of a table has the header's cell count (a renderer drops extra cells).
    let mut header: Option<usize> = None;
    for line in markdown.lines() {
        if line.starts_with('|') {
            let n = source_cells(line);
            let h = *header.get_or_insert(n);
            assert_eq!(
                n, h,
                "{name}: a row with {n} cells under a header of {h}: {line}"
            );
        } else {
            header = None;
        }
    }
    let html = gfm_html(markdown);
    let text = prose(&html);
    assert!(!text.contains('\\'), "{name}: stray backslash in {text}");
    assert!(!text.contains('`'), "{name}: stray backtick in {text}");
    assert!(!html.contains("<a href"), "{name}: a live link in {html}");
    let mention = text
        .char_indices()
        .any(|(i, c)| c == '@' && text[i + 1..].starts_with(|n: char| n.is_alphanumeric()));
    assert!(!mention, "{name}: a mention in {text}");
    assert_eq!(
        html.matches("<details").count(),
        html.matches("</details>").count(),
        "{name}: unbalanced <details>"
    );
    for table in tables(&html) {
        let columns = table[0].len();
        let names = table[0]
            .iter()
            .position(|h| h.to_lowercase().contains("kernel") || h == "Op")
            .filter(|&i| {
                // Columns of counts ("Kernels", "kernel ms") hold no names.
                let h = table[0][i].to_lowercase();
                !h.contains("kernels") && !h.contains("ms") && !h.contains('%')
            });
        for row in &table {
            assert_eq!(row.len(), columns, "{name}: {row:?} under {:?}", table[0]);
        }
        if let Some(i) = names {
            for row in &table[1..] {
                assert!(
                    row[i].starts_with("<code>") || row[i] == "—",
                    "{name}: kernel name not in <code>: {}",
                    row[i]
                );
            }
        }
    }
}

#[test]
fn every_markdown_snapshot_renders_on_github_with_names_as_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        if !(file.contains("markdown") || file.contains("sweep") || file.contains("identity"))
            || !file.ends_with(".snap")
        {
            continue;
        }
        let snap = std::fs::read_to_string(&path).unwrap();
        // An insta snapshot: a `---` header, then the content.
        let body = snap.splitn(3, "---\n").nth(2).unwrap();
        assert_renders_as_github_should(&file, body);
        seen += 1;
    }
    assert!(seen >= 8, "only {seen} markdown snapshots found");
}

#[test]
fn the_check_comment_of_a_renamed_kernel_shows_its_names_as_code() {
    let run = renamed_moe_run();
    let out = check_mi355x(&run).output().unwrap();
    let markdown = String::from_utf8(out.stdout).unwrap();
    assert_renders_as_github_should("check comment", &markdown);
    let html = gfm_html(&markdown);
    assert!(
        html.contains("led by <code>ck::kernel_moe_mxgemm_2lds"),
        "{html}"
    );
    assert!(html.contains("(renamed from <code>"), "{html}");
    // Unchanged calls per step print once, as an integer.
    assert!(
        html.contains("<td align=\"right\">58</td>"),
        "counts print as integers: {html}"
    );
}

/// A fence line (up to three spaces, then three or more backticks or tildes): its character,
/// length and info string.
fn fence(line: &str) -> Option<(char, usize, &str)> {
    let body = line.trim_start_matches(' ');
    let marker = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = body.chars().take_while(|c| *c == marker).count();
    (len >= 3 && line.len() - body.len() <= 3).then(|| (marker, len, body[len..].trim()))
}

/// Fences in the project's own markdown (README, docs) that open a block inside a fenced block
/// of the same length: the inner block's closing fence closes the outer one, and the rest of
/// the page renders as code (the README's example comment did). As `path:line`.
fn nested_fences(path: &str, text: &str) -> Vec<String> {
    let mut open: Option<(char, usize)> = None;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match (open, fence(line)) {
            (None, Some((marker, len, _))) => open = Some((marker, len)),
            (Some((m, n)), Some((marker, len, info))) if marker == m && len >= n => {
                if info.is_empty() {
                    open = None;
                } else {
                    found.push(format!("{path}:{}", i + 1));
                }
            }
            _ => {}
        }
    }
    found
}

#[test]
fn no_fenced_block_in_the_docs_closes_the_one_around_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut found = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        found.extend(nested_fences(&page.display().to_string(), &text));
    }
    assert!(
        found.is_empty(),
        "nested fences of the same length: {found:?}"
    );
    // The rule itself: a ```mermaid block inside a ```markdown block is found, inside a
    // ````markdown block it is not.
    let inner = "```mermaid\nx\n```\n";
    assert_eq!(
        nested_fences("t", &format!("```markdown\n{inner}```\n")),
        ["t:2"]
    );
    assert!(nested_fences("t", &format!("````markdown\n{inner}````\n")).is_empty());
}
