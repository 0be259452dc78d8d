//! The units tracegate's figures are in, and the one way each is written. Every renderer
//! (markdown, terminal, TOML, the sweep table, the gate's sentences) prints a number through this
//! module; nothing outside it formats a float with `{:.N}` (`.ci/inline_floats.py` checks).
//! JSON carries the raw value and [`Unit::json`].
//!
//! The rules, in one place:
//!
//! - **Digits.** A figure in a unit has that unit's decimals ([`Unit::decimals`]) wherever it is
//!   printed: `20.127 ms` in `check`, `report` and `compare` alike, `15.2 µs`, `10.5%`, `1.050`,
//!   `124` calls.
//! - **Units.** People read `µs`; `us` is only the JSON and TOML unit key ([`Unit::json`]).
//!   A count (calls, steps, ranks) is a bare number ([`Unit::Count`]).
//! - **Signs and zero.** A figure never prints as `-0.0`. A signed change, relative change or
//!   share that rounds to zero at its printed decimals is written `±0`, with the unit (`±0 ms`,
//!   `±0 pp`, `±0%`), never `+0.0`, `-0.000` or `-0%`. Every other change carries its sign.
//! - **Percentage points.** The difference of two percentages, and an absolute tolerance on a
//!   percentage, is in percentage points with a space: `+2.1 pp`, `10 pp`.
//! - **Absent.** An absent figure is [`MISSING`].

use std::fmt;

/// What a renderer prints where a figure is absent.
pub(crate) const MISSING: &str = "—";

/// What a signed figure that rounds to zero is written as (see the module doc).
pub(crate) const SIGNED_ZERO: &str = "±0";

/// The unit of a metric (and of an absolute tolerance on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Ms,
    Us,
    /// Percent; differences of percentages are percentage points.
    Pct,
    /// A bare number (ratios).
    Ratio,
    /// A count: calls, steps, ranks. Whole counts print without decimals, averages (calls per
    /// step) with one.
    Count,
    /// Tokens per second (decode throughput), printed whole.
    TokPerS,
}

impl Unit {
    /// The unit's name in JSON and in baselines: `ms`, `us`, `%`, `ratio`, `count`.
    pub const fn json(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Us => "us",
            Unit::Pct => "%",
            Unit::Ratio => "ratio",
            Unit::Count => "count",
            Unit::TokPerS => "tok/s",
        }
    }

    /// The unit as people read it after a number: `ms`, `µs`, `%`, nothing for a ratio or count.
    pub const fn symbol(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Us => "µs",
            Unit::Pct => "%",
            Unit::TokPerS => "tok/s",
            Unit::Ratio | Unit::Count => "",
        }
    }

    /// The unit in a table's unit column: as [`Unit::symbol`], `ratio` for a ratio and `count`
    /// for a count.
    pub const fn label(self) -> &'static str {
        match self {
            Unit::Ratio => "ratio",
            Unit::Count => "count",
            u => u.symbol(),
        }
    }

    /// Decimals a figure in this unit is printed with: µs-level resolution for ms, 0.1 µs, 0.1 pt,
    /// three for a ratio, none for a whole count (one for an average count, see [`Unit::number`]).
    pub const fn decimals(self) -> usize {
        match self {
            Unit::Ms => 3,
            Unit::Us | Unit::Pct => 1,
            Unit::Ratio => 3,
            Unit::Count | Unit::TokPerS => 0,
        }
    }

    /// Reads a unit as JSON and baselines write it (`µs` and `pct` accepted too).
    pub fn parse(text: &str) -> Option<Unit> {
        match text {
            "ms" => Some(Unit::Ms),
            "us" | "µs" => Some(Unit::Us),
            "%" | "pct" => Some(Unit::Pct),
            "ratio" => Some(Unit::Ratio),
            "count" => Some(Unit::Count),
            "tok/s" => Some(Unit::TokPerS),
            _ => None,
        }
    }

    /// The number alone, with the unit's decimals: `20.110`, `15.2`, `10.5`, `1.050`, `124`
    /// (a count that is not whole, such as calls per step, gets one decimal: `116.5`).
    pub fn number(self, value: f64) -> String {
        match self {
            Unit::Count => count(value),
            _ => fixed(value, self.decimals()),
        }
    }

    /// The number with its symbol: `20.110 ms`, `15.2 µs`, `10.5%`, `1.050`, `124`.
    pub fn figure(self, value: f64) -> String {
        with_symbol(self, self.number(value))
    }

    /// [`Unit::figure`], or the missing-value mark (`MISSING`).
    pub fn figure_or_missing(self, value: Option<f64>) -> String {
        value.map_or_else(|| MISSING.to_string(), |v| self.figure(v))
    }

    /// [`Unit::number`], or the missing-value mark (`MISSING`).
    pub fn number_or_missing(self, value: Option<f64>) -> String {
        value.map_or_else(|| MISSING.to_string(), |v| self.number(v))
    }

    /// A change between two figures, signed, in percentage points for a percentage:
    /// `+0.420 ms`, `-1.2 pp`, `+0.050`, `+3` calls; `±0 ms` when it rounds to zero.
    pub fn change(self, delta: f64) -> String {
        let decimals = match self {
            Unit::Count if (delta - delta.round()).abs() >= 0.05 => 1,
            u => u.decimals(),
        };
        let n = fixed_signed(delta, decimals);
        match self {
            Unit::Pct => format!("{n} pp"),
            Unit::Ratio | Unit::Count => n,
            _ => format!("{n} {}", self.symbol()),
        }
    }

    /// [`Unit::change`], or the missing-value mark.
    pub fn change_or_missing(self, delta: Option<f64>) -> String {
        delta.map_or_else(|| MISSING.to_string(), |d| self.change(d))
    }

    /// An amount as a person writes it, with no trailing zeros, in points for a percentage: an
    /// absolute tolerance (`10 pp`, `0.25 ms`, `20 µs`, `0.2`), a floor or a limit. At most the
    /// unit's decimals plus two, so `0.1 + 0.2` reads `0.3 ms`.
    pub fn amount(self, value: f64) -> String {
        let n = trimmed(value, self.decimals() + 2);
        match self {
            Unit::Pct => format!("{n} pp"),
            Unit::Ratio | Unit::Count => n,
            _ => format!("{n} {}", self.symbol()),
        }
    }

    /// The share `part / whole` in percent, one decimal (`42.5%`); the missing mark when `whole`
    /// is zero or either is not finite.
    pub fn share(part: f64, whole: f64) -> String {
        match part / whole {
            r if whole != 0.0 && r.is_finite() => format!("{}%", fixed(r * 100.0, 1)),
            _ => MISSING.to_string(),
        }
    }
}

fn with_symbol(unit: Unit, n: String) -> String {
    match unit {
        Unit::Pct => format!("{n}%"),
        Unit::Ratio | Unit::Count => n,
        _ => format!("{n} {}", unit.symbol()),
    }
}

impl serde::Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.json())
    }
}

impl<'de> serde::Deserialize<'de> for Unit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Unit::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("unknown unit {text:?}")))
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.json())
    }
}

/// A figure with a fixed number of decimals; never a negative zero (`-0.0004` at three decimals
/// is `0.000`, not `-0.000`).
pub(crate) fn fixed(value: f64, decimals: usize) -> String {
    let text = format!("{value:.decimals$}");
    match text.strip_prefix('-') {
        Some(rest) if rounds_to_zero(rest) => rest.to_string(),
        _ => text,
    }
}

/// Whether a printed number (no sign) is zero at its printed digits.
fn rounds_to_zero(text: &str) -> bool {
    text.chars().all(|c| c == '0' || c == '.')
}

/// A count: an integer when it is whole (`124`), else one decimal (`116.5`, calls per step).
pub(crate) fn count(value: f64) -> String {
    if (value - value.round()).abs() < 0.05 {
        fixed(value.round(), 0)
    } else {
        fixed(value, 1)
    }
}

/// A signed figure with a fixed number of decimals: `+1.5`, `-0.2`, and `±0` for anything that
/// rounds to zero (never `+0.0` or `-0.0`).
pub(crate) fn fixed_signed(value: f64, decimals: usize) -> String {
    let text = fixed(value, decimals);
    if rounds_to_zero(&text) {
        SIGNED_ZERO.to_string()
    } else if text.starts_with('-') {
        text
    } else {
        format!("+{text}")
    }
}

/// A relative change in percent, one decimal: `+4.6%`, `-12.0%`, `±0%`.
pub(crate) fn percent_change(pct: f64) -> String {
    format!("{}%", fixed_signed(pct, 1))
}

/// A signed share in whole percent, such as a category's share of a change: `+62%`, `-5%`,
/// `<1%` for a share too small to round to one (a `±0%` beside a change reads as a mistake), and
/// `±0%` only for none at all.
pub(crate) fn signed_share(pct: f64) -> String {
    if pct != 0.0 && pct.abs() < 0.5 {
        return "<1%".to_string();
    }
    format!("{}%", fixed_signed(pct, 0))
}

/// A factor: `1.50×`, two decimals (`x` in plain ASCII contexts is not used).
pub(crate) fn times(factor: f64) -> String {
    format!("{}×", fixed(factor, 2))
}

/// A statistic with no unit (a z-score, a coefficient), two decimals: `2.33`.
pub(crate) fn stat(value: f64) -> String {
    fixed(value, 2)
}

/// A number with `digits` significant digits (at most nine decimals), no trailing zeros beyond
/// them: `0.0123`, `1.50`, `123`; `0` for zero or a value that is not finite.
pub(crate) fn significant(value: f64, digits: u32) -> String {
    if value == 0.0 || !value.is_finite() {
        return "0".into();
    }
    let decimals = (digits as i32 - 1 - value.abs().log10().floor() as i32).clamp(0, 9) as usize;
    fixed(value, decimals)
}

/// A number with at most `decimals` decimals and no trailing zeros: `10`, `0.25`, `1.5`.
pub(crate) fn trimmed(value: f64, decimals: usize) -> String {
    let text = fixed(value, decimals);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A duration setting or gap given in nanoseconds, in the unit that shows it: `1.25 ms` from
/// 1 ms up, else whole µs (`80 µs`). (A metric's figure is [`Unit::figure`].)
pub(crate) fn duration_ns(ns: f64) -> String {
    if ns.abs() >= 1e6 {
        format!("{} ms", fixed(ns / 1e6, 2))
    } else {
        format!("{} µs", fixed(ns / 1e3, 0))
    }
}

/// A size in bytes as people read it: `1 byte`, `512 bytes`, `1.5 KiB`, `520.0 MiB`, `4.00 GiB`
/// (powers of 1024), never `0.0 MiB` for a few bytes.
pub(crate) fn bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let v = n as f64;
    if n == 1 {
        "1 byte".to_string()
    } else if v < KIB {
        format!("{n} bytes")
    } else if v < KIB * KIB {
        format!("{} KiB", fixed(v / KIB, 1))
    } else if v < KIB * KIB * KIB {
        format!("{} MiB", fixed(v / (KIB * KIB), 1))
    } else {
        format!("{} GiB", fixed(v / (KIB * KIB * KIB), 2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_written_in_the_unit_that_shows_them() {
        assert_eq!(bytes(1), "1 byte");
        assert_eq!(bytes(1000), "1000 bytes");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(520 << 20), "520.0 MiB");
        assert_eq!(bytes(4 << 30), "4.00 GiB");
    }

    #[test]
    fn each_unit_has_one_written_form() {
        assert_eq!(Unit::Ms.figure(20.1104), "20.110 ms");
        assert_eq!(Unit::Us.figure(15.24), "15.2 µs");
        assert_eq!(Unit::Pct.figure(10.55), "10.6%");
        assert_eq!(Unit::Ratio.figure(1.05), "1.050");
        assert_eq!(Unit::Count.figure(124.0), "124");
        assert_eq!(Unit::Count.figure(116.5), "116.5");
        assert_eq!(Unit::Ms.figure_or_missing(None), MISSING);
        assert_eq!(Unit::Pct.change(-1.25), "-1.2 pp");
        assert_eq!(Unit::Us.change(3.0), "+3.0 µs");
        assert_eq!(Unit::Count.change(3.0), "+3");
        assert_eq!(Unit::Count.change(-0.5), "-0.5");
        assert_eq!(percent_change(4.56), "+4.6%");
        assert_eq!(signed_share(62.4), "+62%");
        assert_eq!(times(1.5), "1.50×");
        assert_eq!(Unit::share(1.0, 8.0), "12.5%");
        assert_eq!(Unit::share(1.0, 0.0), MISSING);
        assert_eq!(Unit::share(f64::NAN, 3.0), MISSING);
    }

    #[test]
    fn no_figure_is_a_signed_zero() {
        // Unsigned figures: a negative value that rounds to zero loses its sign.
        assert_eq!(fixed(-0.0, 1), "0.0");
        assert_eq!(fixed(-0.0004, 3), "0.000");
        assert_eq!(Unit::Ms.figure(-0.0004), "0.000 ms");
        assert_eq!(fixed(-0.05, 1), "-0.1");
        // Signed changes: anything that rounds to zero is ±0, with the unit.
        assert_eq!(Unit::Ms.change(0.0), "±0 ms");
        assert_eq!(Unit::Ms.change(-0.0004), "±0 ms");
        assert_eq!(Unit::Pct.change(0.04), "±0 pp");
        assert_eq!(Unit::Ratio.change(-0.0), "±0");
        assert_eq!(percent_change(-0.04), "±0%");
        assert_eq!(percent_change(0.0), "±0%");
        assert_eq!(signed_share(-0.4), "<1%");
        assert_eq!(signed_share(0.0), "±0%");
        assert_eq!(fixed_signed(-0.2, 1), "-0.2");
        assert_eq!(fixed_signed(0.2, 1), "+0.2");
        for text in [
            Unit::Ms.change(-1e-9),
            percent_change(-1e-9),
            signed_share(0.49),
        ] {
            assert!(!text.contains("-0") && !text.contains("+0"), "{text}");
        }
    }

    #[test]
    fn amounts_and_statistics_read_as_written() {
        assert_eq!(Unit::Pct.amount(10.0), "10 pp");
        assert_eq!(Unit::Ms.amount(0.25), "0.25 ms");
        assert_eq!(Unit::Ms.amount(0.1 + 0.2), "0.3 ms");
        assert_eq!(Unit::Us.amount(20.0), "20 µs");
        assert_eq!(Unit::Ratio.amount(0.2), "0.2");
        assert_eq!(significant(0.012345, 3), "0.0123");
        assert_eq!(significant(1.5, 3), "1.50");
        assert_eq!(significant(1234.0, 3), "1234");
        assert_eq!(significant(0.0, 3), "0");
        assert_eq!(stat(2.326), "2.33");
        assert_eq!(trimmed(1.50, 2), "1.5");
        assert_eq!(trimmed(10.0, 2), "10");
        assert_eq!(duration_ns(2_500_000.0), "2.50 ms");
        assert_eq!(duration_ns(80_000.0), "80 µs");
    }

    #[test]
    fn no_human_text_says_us() {
        for u in [Unit::Ms, Unit::Us, Unit::Pct, Unit::Ratio, Unit::Count] {
            for text in [
                u.figure(1.5),
                u.change(1.5),
                u.amount(1.5),
                u.label().to_string(),
            ] {
                assert!(!text.ends_with("us"), "{u:?}: {text}");
            }
        }
    }

    #[test]
    fn units_round_trip_through_their_json_name() {
        for u in [Unit::Ms, Unit::Us, Unit::Pct, Unit::Ratio, Unit::Count] {
            assert_eq!(Unit::parse(u.json()), Some(u));
        }
        assert_eq!(Unit::parse("µs"), Some(Unit::Us));
        assert_eq!(Unit::parse("furlongs"), None);
    }
}
