//! The four fields of a `python_function` event, found by searching its bytes rather than parsing
//! it: such events can be ~90% of a trace, and a full parse of each made a trace of mostly them
//! (`bench/memory.sh`'s 200,000 per step) take 1.7x as long to read (a walk over its keys, 1.4x).
//! Kineto writes the top-level keys before `args`; whatever does not read plainly that way is
//! left to the full parse.

use std::sync::LazyLock;

use memchr::memmem::Finder;

use super::numbers::{micros_to_ns, track_id};

/// What the search found in one `python_function` event.
#[derive(Debug, PartialEq)]
pub(super) enum FrameFields<'a> {
    /// A complete frame shorter than `min_ns` (or not `ph: "X"`): nothing to keep.
    Short,
    /// A complete frame of at least `min_ns`.
    Frame {
        name: &'a [u8],
        tid: u64,
        ts: i64,
        dur: i64,
    },
    /// Not plainly written (a key missing or after `args`, an escape in the name, a number as a
    /// string): the full parse decides.
    Unsure,
}

static ARGS: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"args\":"));
static PH: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"ph\":"));
static NAME: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"name\":"));
static TID: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"tid\":"));
static TS: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"ts\":"));
static DUR: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"dur\":"));

/// The fields of `event` (one whole event object, as framed). A key's bytes cannot occur inside a
/// string (its quotes would be escaped there), so the first match before `"args":` is the key.
/// `dur` is looked at first: most frames are short, and a short one needs nothing else (a frame
/// is context, never a figure: one taken for short by a `dur` inside its `args` is only dropped).
pub(super) fn python_frame(event: &[u8], min_ns: i64) -> FrameFields<'_> {
    let Some((dur_at, dur)) = find_value(event, &DUR).and_then(|(at, v)| Some((at, micros(v)?)))
    else {
        return FrameFields::Unsure;
    };
    if dur < min_ns {
        return FrameFields::Short;
    }
    let args_at = ARGS.find(event).unwrap_or(event.len());
    // The first `dur` key of the event is the top-level one only if it comes before `args`.
    if dur_at > args_at {
        return FrameFields::Unsure;
    }
    let head = &event[..args_at];
    let value = |key: &Finder<'_>| find_value(head, key).map(|(_, v)| v);
    let Some(ts) = value(&TS).and_then(micros) else {
        return FrameFields::Unsure;
    };
    match value(&PH) {
        Some(ph) if ph.starts_with(b"\"X\"") => {}
        Some(ph) if ph.first() == Some(&b'"') => return FrameFields::Short,
        _ => return FrameFields::Unsure,
    }
    if ts < 0 {
        return FrameFields::Short;
    }
    let (Some(name), Some(tid)) = (value(&NAME).and_then(plain_string), value(&TID)) else {
        return FrameFields::Unsure;
    };
    let Some(tid) = token(tid) else {
        return FrameFields::Unsure;
    };
    FrameFields::Frame {
        name: &name[1..name.len() - 1],
        tid: track_id(tid),
        ts,
        dur,
    }
}

/// Where `key` first occurs in `text`, and the text after it from its first non-blank byte.
fn find_value<'a>(text: &'a [u8], key: &Finder<'_>) -> Option<(usize, &'a [u8])> {
    let found = key.find(text)?;
    let rest = &text[found + key.needle().len()..];
    let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    Some((found, &rest[start..]))
}

/// A bare number of µs at the start of `text`, as integer ns; a string is not a time here.
fn micros(text: &[u8]) -> Option<i64> {
    let end = text
        .iter()
        .position(|b| !(b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E')))
        .unwrap_or(text.len());
    (end > 0).then_some(())?;
    micros_to_ns(std::str::from_utf8(&text[..end]).ok()?)
}

/// A bare number or a plain string at the start of `text`, as raw JSON text.
fn token(text: &[u8]) -> Option<&str> {
    let raw = match text.first()? {
        b'"' => plain_string(text)?,
        _ => {
            let end = text
                .iter()
                .position(|b| !b.is_ascii_digit())
                .unwrap_or(text.len());
            &text[..end]
        }
    };
    std::str::from_utf8(raw).ok().filter(|r| !r.is_empty())
}

/// A string literal with no escape at the start of `text`, quotes included.
fn plain_string(text: &[u8]) -> Option<&[u8]> {
    let body = text.strip_prefix(b"\"")?;
    let end = memchr::memchr2(b'"', b'\\', body)?;
    (body[end] == b'"').then(|| &text[..end + 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(text: &str) -> FrameFields<'_> {
        python_frame(text.as_bytes(), 500)
    }

    #[test]
    fn kineto_s_layout_is_read_without_a_parse() {
        let e = r#"{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1751): _call_impl", "pid": 7, "tid": 7, "ts": 1694128201545123.456, "dur": 2.5, "args": {"Python parent id": 1, "Python id": 2, "Ev Idx": 3}}"#;
        assert_eq!(
            frame(e),
            FrameFields::Frame {
                name: b"torch/nn/modules/module.py(1751): _call_impl",
                tid: 7,
                ts: 1_694_128_201_545_123_456,
                dur: 2_500,
            }
        );
    }

    #[test]
    fn short_frames_and_other_phases_are_dropped() {
        let short = r#"{"ph":"X","cat":"python_function","name":"f","tid":1,"ts":10,"dur":0.499,"args":{}}"#;
        assert_eq!(frame(short), FrameFields::Short);
        let instant = r#"{"ph":"i","cat":"python_function","name":"f","tid":1,"ts":10,"dur":9}"#;
        assert_eq!(frame(instant), FrameFields::Short);
    }

    #[test]
    fn string_tids_are_hashed_as_the_full_parse_hashes_them() {
        let e = r#"{"ph":"X","cat":"python_function","name":"f","pid":"[TP00] 9","tid":"[TP00] 9","ts":1,"dur":1}"#;
        let FrameFields::Frame { tid, .. } = frame(e) else {
            panic!("{:?}", frame(e));
        };
        assert_eq!(tid, track_id("\"[TP00] 9\""));
    }

    #[test]
    fn anything_unusual_goes_to_the_full_parse() {
        for e in [
            // An escape in the name.
            r#"{"ph":"X","cat":"python_function","name":"a\"b","tid":1,"ts":1,"dur":1}"#,
            // A key only inside args.
            r#"{"ph":"X","cat":"python_function","name":"f","ts":1,"args":{"dur":1},"tid":1}"#,
            // A time written as a string.
            r#"{"ph":"X","cat":"python_function","name":"f","tid":1,"ts":"1","dur":1}"#,
            // No ph.
            r#"{"cat":"python_function","name":"f","tid":1,"ts":1,"dur":1}"#,
        ] {
            assert_eq!(frame(e), FrameFields::Unsure, "{e}");
        }
    }

    #[test]
    fn a_key_inside_the_name_is_not_taken_for_the_key() {
        let e =
            r#"{"ph":"X","cat":"python_function","name":"x \"dur\": 99 y","tid":1,"ts":1,"dur":1}"#;
        // The name has escapes: the full parse reads it, but the time is never the name's.
        assert_eq!(frame(e), FrameFields::Unsure);
        let e = r#"{"ph":"X","cat":"python_function","name":"dur: 99","tid":1,"ts":1,"dur":1}"#;
        assert!(matches!(frame(e), FrameFields::Frame { dur: 1_000, .. }));
    }
}
