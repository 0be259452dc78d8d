//! Exact conversion of the raw number texts Kineto writes.
//!
//! Timestamps are microseconds with up to three decimals (`1694128201545123.456`); an `f64`
//! cannot hold that to the nanosecond, so the decimal text is converted with integer arithmetic.
//! Producers also write numbers as strings (`"stream": "0x0"`, `"bytes": "60"`) and ids past `i64`.

/// Strips the quotes of a JSON string literal, if any.
pub(super) fn unquote(raw: &str) -> &str {
    // Fast path: a bare number, the common case by far.
    if raw
        .as_bytes()
        .first()
        .is_some_and(|b| b.is_ascii_digit() || *b == b'-')
    {
        return raw;
    }
    let raw = raw.trim();
    raw.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(raw)
        .trim()
}

/// Converts a microsecond text to integer nanoseconds, rounding below the nanosecond.
/// `None` for anything that is not a finite number in range. One pass over the bytes: this runs
/// twice per event.
pub(super) fn micros_to_ns(raw: &str) -> Option<i64> {
    let text = unquote(raw);
    let bytes = text.as_bytes();
    let (negative, digits) = match bytes.first()? {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let mut at = 0;
    let mut whole: i64 = 0;
    while let Some(d) = digits.get(at).filter(|d| d.is_ascii_digit()) {
        whole = whole.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
        at += 1;
    }
    let int_len = at;
    let (mut nanos, mut frac_len, mut round_up) = (0i64, 0usize, false);
    if digits.get(at) == Some(&b'.') {
        at += 1;
        while let Some(d) = digits.get(at).filter(|d| d.is_ascii_digit()) {
            if frac_len < 3 {
                nanos = nanos * 10 + i64::from(d - b'0');
            } else if frac_len == 3 {
                // Round half up on the first dropped digit.
                round_up = *d >= b'5';
            }
            frac_len += 1;
            at += 1;
        }
    }
    match digits.get(at) {
        None => {}
        Some(b'e' | b'E') => return scientific_micros_to_ns(text),
        Some(_) => return None,
    }
    if int_len == 0 && frac_len == 0 {
        return None;
    }
    for _ in frac_len..3 {
        nanos *= 10;
    }
    let total = whole
        .checked_mul(1000)?
        .checked_add(nanos + i64::from(round_up))?;
    Some(if negative { -total } else { total })
}

fn scientific_micros_to_ns(text: &str) -> Option<i64> {
    let micros: f64 = text.parse().ok()?;
    let nanos = (micros * 1000.0).round();
    if !nanos.is_finite() || nanos.abs() >= i64::MAX as f64 {
        return None;
    }
    Some(nanos as i64)
}

/// Parses an id or small integer that may be written as a number, a decimal string or a hex
/// string (`"0x1f"`). Ids may exceed `i64`, so the result is `u64`. Negative ids are rejected.
pub(super) fn parse_u64(raw: &str) -> Option<u64> {
    let text = unquote(raw);
    if let Some(v) = plain_digits(text.as_bytes()) {
        return Some(v);
    }
    if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok();
    }
    if let Ok(v) = text.parse::<u64>() {
        return Some(v);
    }
    // Some exporters write integral ids as floats (`12.0`).
    let v: f64 = text.parse().ok()?;
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < u64::MAX as f64).then_some(v as u64)
}

/// A non-empty run of decimal digits (an optional `+` first, as `str::parse` allows) that fits a
/// `u64`; `None` for anything else.
fn plain_digits(bytes: &[u8]) -> Option<u64> {
    let digits = bytes.strip_prefix(b"+").unwrap_or(bytes);
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |v, &d| {
        d.is_ascii_digit().then_some(())?;
        v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// Parses a `[x, y, z]` launch dimension (grid or block); parts after the third are ignored.
pub(super) fn parse_dim3(raw: &str) -> Option<[u32; 3]> {
    let text = raw.trim().strip_prefix('[')?.strip_suffix(']')?;
    let mut out = [1u32; 3];
    let mut count = 0;
    for (slot, part) in out.iter_mut().zip(text.as_bytes().split(|&b| b == b',')) {
        *slot = u32::try_from(plain_digits(part.trim_ascii())?).ok()?;
        count += 1;
    }
    (count > 0).then_some(out)
}

/// A stable 64-bit id for a thread or process written as a string (`"Spans"`, `"[TP00] 251"`).
/// Numeric texts keep their value so that tids stay readable.
pub(super) fn track_id(raw: &str) -> u64 {
    if let Some(v) = parse_u64(raw) {
        return v;
    }
    // FNV-1a: stable across runs and platforms, unlike std's RandomState.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in unquote(raw).bytes() {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash | (1 << 63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractional_epoch_microseconds_convert_exactly() {
        assert_eq!(
            micros_to_ns("1694128201545123.456"),
            Some(1_694_128_201_545_123_456)
        );
        assert_eq!(
            micros_to_ns("1694128201545123"),
            Some(1_694_128_201_545_123_000)
        );
        assert_eq!(micros_to_ns("12.3"), Some(12_300));
        assert_eq!(micros_to_ns("0.0004"), Some(0));
        assert_eq!(micros_to_ns("0.0005"), Some(1));
        assert_eq!(micros_to_ns("\"15\""), Some(15_000));
        assert_eq!(micros_to_ns("-2.5"), Some(-2_500));
        assert_eq!(micros_to_ns("1.5e3"), Some(1_500_000));
        assert_eq!(micros_to_ns("5."), Some(5_000));
        assert_eq!(micros_to_ns(".5"), Some(500));
        assert_eq!(micros_to_ns("+7"), Some(7_000));
        assert_eq!(micros_to_ns("1.99999"), Some(2_000));
        assert_eq!(micros_to_ns("1.0004999"), Some(1_000));
        assert_eq!(
            micros_to_ns("9223372036854775"),
            Some(9_223_372_036_854_775_000)
        );
    }

    #[test]
    fn non_numbers_and_overflow_are_rejected() {
        for bad in [
            "",
            "abc",
            "1.2.3",
            "NaN",
            "\"\"",
            "99999999999999999999",
            "1e300",
            "null",
            "-",
            "-+5",
            ".",
            "1e",
            "e5",
            "1x",
            "1.5x",
            "9223372036854776",
            "1E400",
        ] {
            assert_eq!(micros_to_ns(bad), None, "{bad}");
        }
    }

    #[test]
    fn ids_accept_strings_hex_and_u64() {
        assert_eq!(parse_u64("7"), Some(7));
        assert_eq!(parse_u64("\"0x1f\""), Some(31));
        assert_eq!(parse_u64("\"60\""), Some(60));
        assert_eq!(parse_u64("18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64("12.0"), Some(12));
        assert_eq!(parse_u64("-1"), None);
        assert_eq!(parse_u64("\"Spans\""), None);
        assert_eq!(parse_u64("+9"), Some(9));
        assert_eq!(parse_u64("18446744073709551616"), None);
        assert_eq!(parse_u64("1e2"), Some(100));
    }

    #[test]
    fn dims_and_tracks() {
        assert_eq!(parse_dim3("[32, 120, 1]"), Some([32, 120, 1]));
        assert_eq!(parse_dim3("[64]"), Some([64, 1, 1]));
        assert_eq!(parse_dim3("[a]"), None);
        assert_eq!(parse_dim3("[]"), None);
        assert_eq!(parse_dim3("[1,2,3,x]"), Some([1, 2, 3]));
        assert_eq!(parse_dim3("[ 4 ,\t+5 ]"), Some([4, 5, 1]));
        assert_eq!(parse_dim3("[4294967296]"), None);
        assert_eq!(parse_dim3("[-1]"), None);
        assert_eq!(track_id("251"), 251);
        assert_eq!(track_id("\"Spans\""), track_id("\"Spans\""));
        assert_ne!(track_id("\"Spans\""), track_id("\"Traces\""));
    }
}
