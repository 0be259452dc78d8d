//! A streaming JSON framer: finds the extent of one JSON value at a time in a byte stream, so that
//! each trace event can be parsed from a borrowed slice without ever holding the whole file.
//!
//! It checks structure (brackets, strings) only; the values it frames are parsed by `serde_json`,
//! which reports any remaining syntax error.

use std::io::{self, Read};

const CHUNK: usize = 1 << 18;

/// What went wrong while framing.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// The underlying reader failed (including gzip corruption).
    Io(io::Error),
    /// The stream ended inside a value, at this offset of the uncompressed stream.
    UnexpectedEof { offset: u64 },
    /// A byte that cannot start or continue the expected structure.
    Unexpected {
        offset: u64,
        found: u8,
        expected: &'static str,
    },
    /// A string longer than the limit (`--max-string`), starting at this offset.
    StringTooLong { offset: u64, limit: u64 },
    /// The process holds more than `--max-memory` (checked as the buffer grows).
    MemoryLimit { held: u64, needed: u64, limit: u64 },
}

/// Where the first string longer than `limit` bytes opens in `bytes` (a framed JSON value), if
/// any: for values parsed straight from a buffer that already held them whole, which framing
/// did not measure. Linear in `bytes`.
pub(crate) fn first_long_string(bytes: &[u8], limit: u64) -> Option<usize> {
    let mut at = 0;
    while let Some(open) = memchr::memchr(b'"', &bytes[at..]) {
        let open = at + open;
        let mut rel = open + 1;
        loop {
            match memchr::memchr2(b'"', b'\\', &bytes[rel..]) {
                Some(i) if bytes[rel + i] == b'"' => {
                    rel += i + 1;
                    break;
                }
                Some(i) => rel += i + 2,
                None => rel = bytes.len(),
            }
            if rel >= bytes.len() {
                break;
            }
        }
        if (rel - open) as u64 > limit.saturating_add(2) {
            return Some(open);
        }
        if rel >= bytes.len() {
            return None;
        }
        at = rel;
    }
    None
}

pub(crate) struct Scanner<R> {
    src: R,
    buf: Vec<u8>,
    /// First unconsumed byte of `buf`.
    start: usize,
    /// End of valid data in `buf`.
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// The analysis's limits: the longest string framed or skipped, the memory checked as the
    /// buffer grows.
    limits: super::memory::ReadLimits,
}

impl Scanner<io::Empty> {
    /// A scanner over bytes already in memory, `buf[..len]` (one chunk of a file, starting at
    /// stream offset `base`): their end is the end of the data.
    pub(crate) fn over(
        buf: Vec<u8>,
        len: usize,
        base: u64,
        limits: super::memory::ReadLimits,
    ) -> Self {
        Scanner {
            src: io::empty(),
            end: len.min(buf.len()),
            buf,
            start: 0,
            base,
            eof: true,
            limits,
        }
    }

    /// Gives the bytes back, to be reused.
    pub(crate) fn into_buffer(self) -> Vec<u8> {
        self.buf
    }
}

impl<R: Read> Scanner<R> {
    /// A scanner with the default limits (no memory limit, the default longest string).
    pub(crate) fn new(src: R) -> Self {
        Self::with_limits(src, super::memory::ReadLimits::default())
    }

    /// A scanner that frames no string longer than `limits.max_string` and checks
    /// `limits.memory` as its buffer grows.
    pub(crate) fn with_limits(src: R, limits: super::memory::ReadLimits) -> Self {
        Scanner {
            src,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
            limits,
        }
    }

    /// The limits this scanner reads under.
    pub(crate) fn limits(&self) -> &super::memory::ReadLimits {
        &self.limits
    }

    /// Gives the underlying reader back (to drain it after an error).
    pub(crate) fn into_inner(self) -> R {
        self.src
    }

    /// The bytes buffered and not yet consumed (possibly ending inside a value).
    pub(crate) fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Marks `n` buffered bytes as consumed.
    pub(crate) fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// Makes at least `n` bytes available in [`Self::buffered`] unless the stream ends first.
    pub(crate) fn buffer_at_least(&mut self, n: usize) -> Result<(), ScanError> {
        while self.end - self.start < n {
            if !self.fill()? {
                break;
            }
        }
        Ok(())
    }

    /// Stream offset of the next unconsumed byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    /// Reads more data, keeping the unconsumed bytes. Returns false at end of stream.
    fn fill(&mut self) -> Result<bool, ScanError> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start as u64;
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() - self.end < CHUNK / 2 {
            // The buffer grows only while one value is framed: the memory limit is checked as
            // it does, not only between events. Growth doubles, so that framing a long value
            // costs linear time (amortised) and few checks.
            let grow = self.buf.len().max(CHUNK);
            if self.buf.len() >= CHUNK * 4 {
                self.limits.check_room(grow as u64).map_err(|e| match e {
                    super::error::ReadErrorKind::MemoryLimit {
                        held,
                        needed,
                        limit,
                    } => ScanError::MemoryLimit {
                        held,
                        needed,
                        limit,
                    },
                    _ => ScanError::MemoryLimit {
                        held: 0,
                        needed: 0,
                        limit: 0,
                    },
                })?;
            }
            self.buf.resize(self.buf.len().max(self.end) + grow, 0);
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ScanError::Io(e)),
            }
        }
    }

    /// The next non-whitespace byte, without consuming it; `None` at end of stream.
    pub(crate) fn peek(&mut self) -> Result<Option<u8>, ScanError> {
        loop {
            while self.start < self.end {
                let b = self.buf[self.start];
                if !b.is_ascii_whitespace() {
                    return Ok(Some(b));
                }
                self.start += 1;
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Consumes the next non-whitespace byte, which must be `want`.
    pub(crate) fn expect(&mut self, want: u8, expected: &'static str) -> Result<(), ScanError> {
        match self.peek()? {
            Some(b) if b == want => {
                self.start += 1;
                Ok(())
            }
            Some(found) => Err(ScanError::Unexpected {
                offset: self.offset(),
                found,
                expected,
            }),
            None => Err(ScanError::UnexpectedEof {
                offset: self.offset(),
            }),
        }
    }

    /// Frames an array written whole on one line, from the `[` at the cursor to the `]` that ends
    /// the line's content (before an optional `,`), without reading the strings in it: Kineto
    /// writes its log buckets (`"WARNING": ["…", "…"],`) that way with quotes inside the strings
    /// left unescaped (pytorch/kineto#1459), which no JSON framer can read. Returns the array's
    /// offset and bytes and consumes them; `None`, consuming nothing, when the value at the cursor
    /// is not such a line (another value, an array over several lines, a line the stream cuts,
    /// a line longer than `--max-string`).
    pub(crate) fn line_array(&mut self) -> Result<Option<(u64, &[u8])>, ScanError> {
        if self.peek()? != Some(b'[') {
            return Ok(None);
        }
        let limit = usize::try_from(self.limits.max_string).unwrap_or(usize::MAX);
        let newline = loop {
            if let Some(i) = memchr::memchr(b'\n', self.buffered()) {
                break i;
            }
            if self.end - self.start > limit || !self.fill()? {
                return Ok(None);
            }
        };
        let line = &self.buf[self.start..self.start + newline];
        let content = line.trim_ascii_end();
        let content = content
            .strip_suffix(b",")
            .unwrap_or(content)
            .trim_ascii_end();
        if content.len() < 2 || !content.ends_with(b"]") {
            return Ok(None);
        }
        let (offset, len) = (self.offset(), content.len());
        let value = &self.buf[self.start..self.start + len];
        self.start += len;
        Ok(Some((offset, value)))
    }

    /// Consumes one complete JSON value and returns its bytes, valid until the next call.
    /// Also returns the value's stream offset.
    pub(crate) fn next_value(&mut self) -> Result<(u64, &[u8]), ScanError> {
        let first = match self.peek()? {
            Some(b) => b,
            None => {
                return Err(ScanError::UnexpectedEof {
                    offset: self.offset(),
                })
            }
        };
        let len = match first {
            b'{' | b'[' => self.frame_nested()?,
            b'"' => self.frame_string()?,
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => self.frame_scalar()?,
            found => {
                return Err(ScanError::Unexpected {
                    offset: self.offset(),
                    found,
                    expected: "a JSON value",
                })
            }
        };
        let offset = self.offset();
        let value = &self.buf[self.start..self.start + len];
        self.start += len;
        Ok((offset, value))
    }

    /// Consumes one complete JSON value without holding it: the buffer never grows past a
    /// chunk, whatever the size of the value (an unknown top-level key of gigabytes). Strings
    /// in it are not limited, since nothing of them is kept. The value is checked for structure
    /// only (brackets balance, strings close), as [`Self::next_value`] frames it.
    pub(crate) fn skip_value(&mut self) -> Result<(), ScanError> {
        let first = match self.peek()? {
            Some(b) => b,
            None => {
                return Err(ScanError::UnexpectedEof {
                    offset: self.offset(),
                })
            }
        };
        match first {
            b'{' | b'[' | b'"' => {}
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                // Scalars: consumed byte by byte up to their end.
                loop {
                    while self.start < self.end {
                        match self.buf[self.start] {
                            b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' => return Ok(()),
                            _ => self.start += 1,
                        }
                    }
                    if !self.fill()? {
                        return Ok(());
                    }
                }
            }
            found => {
                return Err(ScanError::Unexpected {
                    offset: self.offset(),
                    found,
                    expected: "a JSON value",
                })
            }
        }
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        loop {
            if self.start >= self.end && !self.fill()? {
                return Err(ScanError::UnexpectedEof {
                    offset: self.offset(),
                });
            }
            while self.start < self.end {
                if in_string {
                    if escaped {
                        escaped = false;
                        self.start += 1;
                        continue;
                    }
                    let hay = &self.buf[self.start..self.end];
                    match memchr::memchr2(b'"', b'\\', hay) {
                        Some(i) if hay[i] == b'"' => {
                            self.start += i + 1;
                            in_string = false;
                            if depth == 0 {
                                return Ok(());
                            }
                        }
                        Some(i) => {
                            self.start += i + 1;
                            escaped = true;
                        }
                        None => self.start = self.end,
                    }
                    continue;
                }
                let b = self.buf[self.start];
                self.start += 1;
                match b {
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return Ok(());
                        }
                    }
                    b'"' => in_string = true,
                    _ => {}
                }
            }
        }
    }

    /// Makes sure `buf[start + rel]` is available; false at end of stream.
    fn ensure(&mut self, rel: usize) -> Result<bool, ScanError> {
        while self.start + rel >= self.end {
            if !self.fill()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn eof_error(&self, rel: usize) -> ScanError {
        ScanError::UnexpectedEof {
            offset: self.offset() + rel as u64,
        }
    }

    /// Length of the string starting at `start` (quote included at both ends).
    fn frame_string(&mut self) -> Result<usize, ScanError> {
        self.string_end(1)
    }

    /// Given `rel` just past an opening quote, returns `rel` just past the closing quote.
    fn string_end(&mut self, mut rel: usize) -> Result<usize, ScanError> {
        let opened = rel - 1;
        loop {
            if (rel - opened) as u64 > self.limits.max_string.saturating_add(1) {
                return Err(ScanError::StringTooLong {
                    offset: self.offset() + opened as u64,
                    limit: self.limits.max_string,
                });
            }
            if !self.ensure(rel)? {
                return Err(self.eof_error(rel));
            }
            let hay = &self.buf[self.start + rel..self.end];
            match memchr::memchr2(b'"', b'\\', hay) {
                Some(i) if hay[i] == b'"' => return Ok(rel + i + 1),
                // A backslash escapes the next byte, whatever it is.
                Some(i) => rel += i + 2,
                None => rel += hay.len(),
            }
        }
    }

    fn frame_scalar(&mut self) -> Result<usize, ScanError> {
        let mut rel = 0;
        loop {
            if !self.ensure(rel)? {
                return Ok(rel);
            }
            match self.buf[self.start + rel] {
                b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t' => return Ok(rel),
                _ => rel += 1,
            }
        }
    }

    fn frame_nested(&mut self) -> Result<usize, ScanError> {
        let mut depth = 0usize;
        let mut rel = 0;
        loop {
            if !self.ensure(rel)? {
                return Err(self.eof_error(rel));
            }
            match self.buf[self.start + rel] {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(rel + 1);
                    }
                }
                b'"' => {
                    rel = self.string_end(rel + 1)?;
                    continue;
                }
                _ => {}
            }
            rel += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out one byte at a time, to exercise every refill boundary.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() || out.is_empty() {
                return Ok(0);
            }
            out[0] = self.0[0];
            self.0 = &self.0[1..];
            Ok(1)
        }
    }

    fn values(text: &str) -> Vec<String> {
        let mut scan = Scanner::new(Trickle(text.as_bytes()));
        scan.expect(b'[', "[").unwrap();
        let mut out = Vec::new();
        loop {
            if scan.peek().unwrap() == Some(b']') {
                break;
            }
            let (_, v) = scan.next_value().unwrap();
            out.push(String::from_utf8(v.to_vec()).unwrap());
            if scan.peek().unwrap() == Some(b',') {
                scan.expect(b',', ",").unwrap();
            }
        }
        out
    }

    #[test]
    fn frames_nested_values_strings_with_escapes_and_scalars() {
        let text = r#"[ {"a": "x}\"]", "b": [1, {"c": 2}]}, "s\\", 12.5e3, true, null ]"#;
        assert_eq!(
            values(text),
            vec![
                r#"{"a": "x}\"]", "b": [1, {"c": 2}]}"#,
                r#""s\\""#,
                "12.5e3",
                "true",
                "null"
            ]
        );
    }

    #[test]
    fn truncation_inside_a_value_reports_its_offset() {
        let mut scan = Scanner::new(Trickle(br#"[{"a": "unterminated"#));
        scan.expect(b'[', "[").unwrap();
        match scan.next_value() {
            Err(ScanError::UnexpectedEof { offset }) => assert_eq!(offset, 20),
            other => panic!(
                "unexpected {other:?}",
                other = other.map(|(o, v)| (o, v.len()))
            ),
        }
    }

    #[test]
    fn garbage_is_reported_with_the_byte_found() {
        let mut scan = Scanner::new(&b"  @"[..]);
        match scan.next_value() {
            Err(ScanError::Unexpected {
                offset: 2,
                found: b'@',
                ..
            }) => {}
            other => panic!("unexpected {:?}", other.map(|(o, _)| o)),
        }
    }
}
