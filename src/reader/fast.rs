//! A fast path for the events Kineto writes: one object of plain keys, read in a single pass
//! without serde's per-value dispatch.
//!
//! It gives up (and the event goes to serde, which says exactly what is wrong) at anything it
//! does not read exactly as serde does: an escape in a key or in a kept string, a duplicate kept
//! key, a kept value of an unexpected type, an event written as an array, a value nested deeper
//! than [`MAX_DEPTH`], invalid JSON, or the end of the buffer. Whatever it accepts, serde
//! accepts too, with the same fields and the same end (a test compares the two on every event
//! of real and mutated traces), so the result never depends on which path read an event.

use std::borrow::Cow;

use super::event::{RawArgs, RawEvent, RawStr, RawText};

/// Containers nested deeper than this in a skipped value are left to serde.
const MAX_DEPTH: u32 = 64;

/// The fast path cannot vouch for this event: read it with serde.
#[derive(Debug)]
pub(super) struct GiveUp;

type Fast<T> = Result<T, GiveUp>;

/// Parses the event at the start of `buf` (after optional whitespace) into `ev`, which must be
/// empty: returns the number of bytes up to and including its closing brace. Filled in place,
/// since an event is a few hundred bytes to move.
pub(super) fn parse_event<'a>(buf: &'a [u8], ev: &mut RawEvent<'a>) -> Fast<usize> {
    let mut c = Cursor { b: buf, i: 0 };
    c.ws();
    c.eat(b'{')?;
    let mut seen = 0u16;
    c.object(|c, key| match key {
        b"ph" => c.set_string(&mut ev.ph, &mut seen, 0),
        b"cat" => c.set_string(&mut ev.cat, &mut seen, 1),
        b"name" => c.set_string(&mut ev.name, &mut seen, 2),
        b"pid" => c.set_raw(&mut ev.pid, &mut seen, 3),
        b"tid" => c.set_raw(&mut ev.tid, &mut seen, 4),
        b"ts" => c.set_raw(&mut ev.ts, &mut seen, 5),
        b"dur" => c.set_raw(&mut ev.dur, &mut seen, 6),
        b"args" => {
            once(&mut seen, 7)?;
            c.args(&mut ev.args)
        }
        _ => c.skip_value(),
    })?;
    Ok(c.i)
}

/// Marks a kept key seen; a second one is serde's to refuse.
fn once(seen: &mut u16, bit: u8) -> Fast<()> {
    if *seen & (1 << bit) != 0 {
        return Err(GiveUp);
    }
    *seen |= 1 << bit;
    Ok(())
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Fast<u8> {
        self.b.get(self.i).copied().ok_or(GiveUp)
    }

    fn eat(&mut self, byte: u8) -> Fast<()> {
        if self.b.get(self.i) != Some(&byte) {
            return Err(GiveUp);
        }
        self.i += 1;
        Ok(())
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The members of an object whose `{` was just read: `member` reads each value, given its
    /// key. Ends after the `}`.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Fast<()>) -> Fast<()> {
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(());
        }
        loop {
            let key = self.plain_string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                b'}' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(GiveUp),
            }
        }
    }

    /// `args`: an object of kept raw values, or null.
    fn args(&mut self, slot: &mut Option<RawArgs<'a>>) -> Fast<()> {
        if self.null()? {
            return Ok(());
        }
        self.eat(b'{')?;
        let args = slot.insert(RawArgs::default());
        let mut seen = 0u16;
        self.object(|c, key| {
            let (slot, bit) = match key {
                b"External id" => (&mut args.external_id, 0),
                b"correlation" => (&mut args.correlation, 1),
                b"stream" => (&mut args.stream, 2),
                b"device" => (&mut args.device, 3),
                b"grid" => (&mut args.grid, 4),
                b"block" => (&mut args.block, 5),
                b"Input Dims" => (&mut args.input_dims, 6),
                b"Input type" => (&mut args.input_type, 7),
                b"Seq" => (&mut args.seq, 8),
                b"Process Group Name" => (&mut args.process_group, 9),
                b"Collective name" => (&mut args.collective_name, 10),
                b"graph node id" => (&mut args.graph_node, 11),
                _ => return c.skip_value(),
            };
            c.set_raw(slot, &mut seen, bit)
        })
    }

    /// Reads a kept raw value into `slot` (null is `None`).
    fn set_raw(&mut self, slot: &mut Option<RawText<'a>>, seen: &mut u16, bit: u8) -> Fast<()> {
        once(seen, bit)?;
        if self.null()? {
            *slot = None;
            return Ok(());
        }
        let start = self.i;
        self.skip_value()?;
        let text = std::str::from_utf8(&self.b[start..self.i]).map_err(|_| GiveUp)?;
        *slot = Some(RawText(text));
        Ok(())
    }

    /// Reads a kept string (`ph`, `cat`, `name`) into `slot` (null is `None`).
    fn set_string(&mut self, slot: &mut Option<RawStr<'a>>, seen: &mut u16, bit: u8) -> Fast<()> {
        once(seen, bit)?;
        *slot = if self.null()? {
            None
        } else {
            Some(RawStr(Cow::Borrowed(self.plain_string()?)))
        };
        Ok(())
    }

    /// Consumes `null` if it is next.
    fn null(&mut self) -> Fast<bool> {
        if self.peek()? != b'n' {
            return Ok(false);
        }
        self.literal(b"null")?;
        Ok(true)
    }

    fn literal(&mut self, word: &[u8]) -> Fast<()> {
        if !self.b[self.i..].starts_with(word) {
            return Err(GiveUp);
        }
        self.i += word.len();
        Ok(())
    }

    /// A string without escapes, as serde reads one into bytes: no check of its bytes.
    fn plain_string(&mut self) -> Fast<&'a [u8]> {
        self.eat(b'"')?;
        let rest = &self.b[self.i..];
        // Keys are short: a plain loop finds their end before memchr would have set up.
        let head = &rest[..rest.len().min(16)];
        let end = match head.iter().position(|&c| c == b'"' || c == b'\\') {
            Some(end) => end,
            None => head.len() + memchr::memchr2(b'"', b'\\', &rest[head.len()..]).ok_or(GiveUp)?,
        };
        if rest[end] != b'"' {
            return Err(GiveUp);
        }
        self.i += end + 1;
        Ok(&rest[..end])
    }

    /// A skipped string, checked as serde checks one it ignores: valid escapes, no control
    /// characters (its UTF-8 is not checked).
    fn skip_string(&mut self) -> Fast<()> {
        self.eat(b'"')?;
        loop {
            let rest = &self.b[self.i..];
            let at = rest
                .iter()
                .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                .ok_or(GiveUp)?;
            self.i += at + 1;
            match rest[at] {
                b'"' => return Ok(()),
                b'\\' => match self.peek()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                    b'u' => {
                        let hex = self.b.get(self.i + 1..self.i + 5).ok_or(GiveUp)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return Err(GiveUp);
                        }
                        self.i += 5;
                    }
                    _ => return Err(GiveUp),
                },
                _ => return Err(GiveUp),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    /// A number in JSON's grammar (no leading zeros, digits after `.` and `e`).
    fn skip_number(&mut self) -> Fast<()> {
        if self.peek()? == b'-' {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => {
                self.i += 1;
                if self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                    return Err(GiveUp);
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return Err(GiveUp),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(GiveUp);
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(GiveUp);
            }
        }
        Ok(())
    }

    /// Skips one value of any kind, checking its syntax; nesting is followed with a stack of
    /// bits (1: object), not recursion.
    fn skip_value(&mut self) -> Fast<()> {
        let (mut stack, mut depth) = (0u64, 0u32);
        loop {
            self.ws();
            match self.peek()? {
                b'"' => self.skip_string()?,
                b'-' | b'0'..=b'9' => self.skip_number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                open @ (b'{' | b'[') => {
                    if depth == MAX_DEPTH {
                        return Err(GiveUp);
                    }
                    self.i += 1;
                    self.ws();
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek()? == close {
                        self.i += 1;
                    } else {
                        stack = (stack << 1) | u64::from(open == b'{');
                        depth += 1;
                        if open == b'{' {
                            self.member_key()?;
                        }
                        continue;
                    }
                }
                _ => return Err(GiveUp),
            }
            // After a value: close what ends here, up to the next comma.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                self.ws();
                let in_object = stack & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.i += 1;
                        if in_object {
                            self.ws();
                            self.member_key()?;
                        }
                        break;
                    }
                    b'}' if in_object => {}
                    b']' if !in_object => {}
                    _ => return Err(GiveUp),
                }
                self.i += 1;
                stack >>= 1;
                depth -= 1;
            }
        }
    }

    /// The key of a member of a skipped object, and its colon.
    fn member_key(&mut self) -> Fast<()> {
        self.skip_string()?;
        self.ws();
        self.eat(b':')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fast(buf: &[u8]) -> Fast<(RawEvent<'_>, usize)> {
        let mut ev = RawEvent::default();
        let used = parse_event(buf, &mut ev)?;
        Ok((ev, used))
    }

    /// What serde makes of the event at the start of `buf`, and where it ends.
    fn by_serde(buf: &[u8]) -> Option<(RawEvent<'_>, usize)> {
        let mut events = serde_json::Deserializer::from_slice(buf).into_iter::<RawEvent>();
        match events.next() {
            Some(Ok(ev)) => Some((ev, events.byte_offset())),
            _ => None,
        }
    }

    /// The fast path gives serde's event or gives up; returns whether it read the event.
    fn agrees(buf: &[u8]) -> bool {
        match fast(buf) {
            Ok(fast) => {
                assert_eq!(
                    Some(&fast),
                    by_serde(buf).as_ref(),
                    "on {:?}",
                    String::from_utf8_lossy(buf)
                );
                true
            }
            Err(GiveUp) => false,
        }
    }

    const KINETO: &[&str] = &[
        r#"{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)","pid":"[TP00] 0","tid":116,"ts":1365001002185.833,"dur":11066.489,"args":{"External id":3,"queued":0,"device":0,"context":1,"stream":116,"correlation":19,"registers per thread":48,"shared memory":16384,"blocks per SM":0.287879,"warps per SM":1.151515,"grid":[38,1,1],"block":[128,1,1],"est. achieved occupancy %":13}}"#,
        r#"{"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":"[TP00] 200008","tid":200008,"ts":1365001001991.000,"dur":7.000,"args":{"External id":1,"Record function id":0,"Concrete Inputs":[""],"Input type":["c10::BFloat16"],"Input Strides":[[7168, 1]],"Input Dims":[[16384, 7168]],"Ev Idx":1}}"#,
        r#"{ "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7,
            "ts": 1694128201545123.456, "dur": 4.5e0, "args": { "cbid": 211, "correlation": 12, "External id": 9 } }"#,
        r#"{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}}"#,
        r#"{"ph": "f", "cat": "ac2g", "id": 1, "ts": 3, "bp": "e"}"#,
        r#"{}"#,
        r#"  {"args": null, "ph": null, "pid": null, "x": [], "y": {}, "z": [[], {}, [{"a": [true, false, null]}]]}"#,
        r#"{"name": "k", "x": "esc \" \\ \/ \b \f \n \r \t \u00e9 end", "args": {"Input Dims": [[1, 2], []], "grid": "[1,2,3]"}}"#,
        r#"{"ts": -0, "dur": 0.5, "tid": -12.5E+3, "pid": 1e-2, "args": {"stream": "0x0", "device": "1"}}"#,
        r#"{"name": "ü∑ kernel — unicode", "cat": "kernel"}, {"next": 1}"#,
        // Read as bytes, a kept string may hold control characters, in serde too.
        "{\"name\": \"tab\there\"}",
    ];

    const BROKEN: &[&str] = &[
        r#"{"ph": "X", "ph": "B"}"#,
        r#"{"args": {"stream": 1, "stream": 2}}"#,
        r#"{"ph": 5}"#,
        r#"{"name": ["k"]}"#,
        r#"{"args": 7}"#,
        r#"{"args": ["a"]}"#,
        r#"["X", "kernel", "k"]"#,
        r#"{"c\u0061t": "kernel"}"#,
        r#"{"name": "a\"b"}"#,
        r#"{"ts": 01}"#,
        r#"{"ts": 1.}"#,
        r#"{"ts": .5}"#,
        r#"{"ts": 1e}"#,
        r#"{"ts": +1}"#,
        r#"{"ts": 1,}"#,
        r#"{"x": [1,]}"#,
        r#"{"x": {"a": 1,}}"#,
        r#"{"x": {"a" 1}}"#,
        r#"{"x": {1: 1}}"#,
        r#"{"x": "bad \q escape"}"#,
        r#"{"x": "bad \u12G4 escape"}"#,
        r#"{"x": nul}"#,
        r#"{"x": tru}"#,
        r#"{"x": NaN}"#,
        r#"{"ts": 1 "dur": 2}"#,
        r#"{"ts": 1"#,
        r#"{"ts": "#,
        "{\"x\": \"tab\there\"}",
    ];

    #[test]
    fn kineto_events_are_read_as_serde_reads_them() {
        for ev in KINETO {
            assert!(agrees(ev.as_bytes()), "gave up on {ev}");
        }
    }

    #[test]
    fn what_serde_refuses_or_reads_differently_is_left_to_serde() {
        for ev in BROKEN {
            assert!(!agrees(ev.as_bytes()), "read {ev}");
        }
    }

    #[test]
    fn every_cut_and_every_byte_change_agrees_with_serde() {
        let mut bytes_tried = 0;
        for ev in KINETO.iter().chain(BROKEN) {
            let ev = ev.as_bytes();
            for cut in 0..ev.len() {
                agrees(&ev[..cut]);
            }
            for at in 0..ev.len() {
                for b in [
                    b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', b'0', b'-', b'.', b'e', b'n',
                    b' ', 0x01, 0xff,
                ] {
                    let mut changed = ev.to_vec();
                    changed[at] = b;
                    agrees(&changed);
                    bytes_tried += 1;
                }
            }
        }
        assert!(bytes_tried > 10_000);
    }

    #[test]
    fn kept_values_that_are_not_utf8_are_left_to_serde() {
        let mut bytes = br#"{"pid": "a"#.to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(br#""}"#);
        assert!(!agrees(&bytes));
        // In a name (read as bytes) or a skipped value, serde does not check UTF-8 either.
        let mut bytes = br#"{"name": "a"#.to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(br#"", "x": "b"#);
        bytes.push(0xfe);
        bytes.extend_from_slice(br#""}"#);
        assert!(agrees(&bytes));
    }

    /// The events of a real trace (the fixtures of `tests/it`), each followed by the rest of the
    /// array as the reader's buffer holds it.
    fn real_events(file: &str) -> (Vec<u8>, Vec<std::ops::Range<usize>>) {
        use std::io::Read;
        let path = format!("{}/tests/it/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
        let mut json = Vec::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).unwrap())
            .read_to_end(&mut json)
            .unwrap();
        let key = memchr::memmem::find(&json, b"\"traceEvents\"").unwrap();
        let mut at = key + memchr::memchr(b'[', &json[key..]).unwrap() + 1;
        let mut events = Vec::new();
        loop {
            while matches!(json.get(at), Some(b' ' | b'\n' | b'\r' | b'\t' | b',')) {
                at += 1;
            }
            if json.get(at) != Some(&b'{') {
                break;
            }
            let mut it = serde_json::Deserializer::from_slice(&json[at..])
                .into_iter::<serde::de::IgnoredAny>();
            assert!(matches!(it.next(), Some(Ok(_))), "{file} at {at}");
            events.push(at..at + it.byte_offset());
            at += it.byte_offset();
        }
        (json, events)
    }

    #[test]
    fn every_event_of_real_traces_is_read_as_serde_reads_it_and_changed_bytes_too() {
        let mut rng = crate::testing::XorShift(0x2545_f491_4f6c_dd1d);
        let mut next = |m: usize| rng.below(m as u64) as usize;
        for file in [
            "sglang_qwen3_decode.json.gz",
            "vllm_gptoss_decode_graph.json.gz",
            "mi250_minitoy.json.gz",
        ] {
            let (json, events) = real_events(file);
            let fast = events.iter().filter(|e| agrees(&json[e.start..])).count();
            // Kineto's events are what the fast path is for: it must not leave them to serde.
            assert_eq!(
                fast,
                events.len(),
                "{file}: {fast} of {} read fast",
                events.len()
            );
            for e in &events {
                for _ in 0..8 {
                    let mut changed = json[e.clone()].to_vec();
                    let at = next(changed.len());
                    changed[at] = b"\"\\{}[],:0-.en \x01\xff"[next(16)];
                    agrees(&changed);
                }
            }
        }
    }

    #[test]
    fn deep_nesting_is_read_to_its_cap_then_left_to_serde() {
        let nest = |n: usize| format!(r#"{{"x": {}{}}}"#, "[".repeat(n), "]".repeat(n));
        assert!(agrees(nest(MAX_DEPTH as usize).as_bytes()));
        assert!(!agrees(nest(MAX_DEPTH as usize + 1).as_bytes()));
    }
}
