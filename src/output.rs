//! Writing to standard output and standard error: what may reach a terminal or the GitHub Actions
//! runner's command channel, and what a failed write does (nothing: the exit status stays the
//! verdict's).
//!
//! The runner reads every line a step prints, on stdout and on stderr, and runs it as a workflow
//! command when, after its leading white space, it starts with `::` (or holds `##[` anywhere,
//! the older syntax). So in `--github` mode every line tracegate prints is either one of its own
//! commands (the `github` module's `actions::command`) or text that cannot start one:
//! - a report on stdout is wrapped in `::stop-commands::TOKEN` … `::TOKEN::`, with a token from
//!   the OS's random source that no trace can guess ([`wrap_for_runner`]);
//! - every line on stderr is [`runner_safe`]: control characters escaped, and a `::` at the start
//!   of a line or a `##[` anywhere broken by an invisible word joiner.

use std::io::Write;

use crate::text::printable;

/// A word joiner: invisible, not white space, so the runner does not trim it away.
const JOINER: char = '\u{2060}';

/// `text` made unable to start a workflow command, line by line: control characters other than
/// the line feed and tab escaped ([`printable`]), `::` at the start of a line (after white space)
/// and `##[` anywhere broken by a word joiner. Reads the same to a person.
pub(crate) fn runner_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let line: String = line
            .split('\t')
            .map(|part| printable(part).into_owned())
            .collect::<Vec<_>>()
            .join("\t");
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        out.push_str(indent);
        if body.starts_with("::") {
            out.push(JOINER);
        }
        out.push_str(&body.replace("##[", &format!("##{JOINER}[")));
    }
    out
}

/// A token of 32 hexadecimal digits from the OS's random source (`/dev/urandom`); where that
/// cannot be read, from the standard library's randomly seeded hasher keys.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .is_ok();
    if !read {
        use std::hash::{BuildHasher, Hasher};
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            h.write_u32(std::process::id());
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `text` between `::stop-commands::TOKEN` and `::TOKEN::`: the runner runs no command in it.
/// The token is fresh and not in `text`.
pub(crate) fn wrap_for_runner(text: &str) -> String {
    let mut token = random_token();
    while text.contains(&token) {
        token = random_token();
    }
    let newline = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("::stop-commands::{token}\n{text}{newline}::{token}::\n")
}

/// Writes `text` to stdout and flushes it. A closed pipe (`| head`) is not an error.
pub(crate) fn try_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Writes `text` to stdout; a failure is a line on stderr, never an error nor a panic: the
/// exit status stays the verdict's.
pub(crate) fn stdout(text: &str) {
    if let Err(e) = try_stdout(text) {
        note(&format!("warning: cannot write to standard output: {e}"));
    }
}

/// `text` on stderr as it is (no `tracegate:` prefix: a headline, a table), [`runner_safe`]. A
/// failed write is ignored, as in [`note`].
pub(crate) fn stderr(text: &str) {
    let mut text = runner_safe(text.trim_end_matches('\n'));
    text.push('\n');
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// `tracegate: MESSAGE` on stderr, [`runner_safe`]. A failed write is ignored: nothing is
/// left to tell, and the exit status must not change.
pub(crate) fn note(message: &str) {
    let line = format!(
        "tracegate: {}\n",
        runner_safe(message.trim_end_matches('\n'))
    );
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(line.as_bytes()).and_then(|()| err.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_line_of_free_text_can_start_a_workflow_command() {
        let evil =
            "ok\n  ::error title=x::y\n\u{3000}::warning::z\nsee ##[error]w\n\r::x::\x1b[31m";
        let safe = runner_safe(evil);
        for line in safe.split(['\n', '\r']) {
            assert!(!line.trim_start().starts_with("::"), "{line:?}");
            assert!(!line.contains("##["), "{line:?}");
        }
        assert_eq!(safe.lines().count(), 5, "{safe}");
        assert!(safe.contains("\\r::x::\\x1b[31m"), "{safe}");
        // Reads the same once the joiners are removed.
        assert_eq!(
            safe.replace(JOINER, "").lines().nth(1),
            Some("  ::error title=x::y")
        );
        assert_eq!(runner_safe("plain\ttext\n"), "plain\ttext\n");
    }

    #[test]
    fn tokens_are_fresh_and_wrapped_text_ends_with_its_token() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        let wrapped = wrap_for_runner("report");
        let lines: Vec<&str> = wrapped.lines().collect();
        let token = lines[0].strip_prefix("::stop-commands::").unwrap();
        assert_eq!(lines, [lines[0], "report", &format!("::{token}::")]);
    }
}
