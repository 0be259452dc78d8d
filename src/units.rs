//! The units tracegate's figures are in, and the one way each is written: every renderer
//! (markdown, terminal, TOML, the sweep table) prints a figure through [`Unit::number`] or
//! [`Unit::figure`], and an absent figure as [`MISSING`]. JSON carries the raw value and
//! [`Unit::json`].

use std::fmt;

/// What a renderer prints where a figure is absent.
pub const MISSING: &str = "—";

/// The unit of a metric (and of an absolute tolerance on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    Ms,
    Us,
    /// Percent; differences of percentages are percentage points.
    Pct,
    /// A bare number (ratios).
    Ratio,
}

impl Unit {
    /// The unit's name in JSON and in baselines: `ms`, `us`, `%`, `ratio`.
    pub const fn json(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Us => "us",
            Unit::Pct => "%",
            Unit::Ratio => "ratio",
        }
    }

    /// The unit as people read it after a number: `ms`, `µs`, `%`, nothing for a ratio.
    pub const fn symbol(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::Us => "µs",
            Unit::Pct => "%",
            Unit::Ratio => "",
        }
    }

    /// The unit in a table's unit column: as [`Unit::symbol`], and `ratio` for a ratio.
    pub const fn label(self) -> &'static str {
        match self {
            Unit::Ratio => "ratio",
            u => u.symbol(),
        }
    }

    /// Decimals a figure in this unit is printed with: µs-level resolution for ms, 0.1 µs, 0.1 pt.
    pub const fn decimals(self) -> usize {
        match self {
            Unit::Ms => 3,
            Unit::Us | Unit::Pct => 1,
            Unit::Ratio => 3,
        }
    }

    /// Reads a unit as JSON and baselines write it (`µs` and `pct` accepted too).
    pub fn parse(text: &str) -> Option<Unit> {
        match text {
            "ms" => Some(Unit::Ms),
            "us" | "µs" => Some(Unit::Us),
            "%" | "pct" => Some(Unit::Pct),
            "ratio" => Some(Unit::Ratio),
            _ => None,
        }
    }

    /// The number alone, with the unit's decimals: `20.110`, `15.2`, `10.5`, `1.050`.
    pub fn number(self, value: f64) -> String {
        fixed(value, self.decimals())
    }

    /// The number with its symbol: `20.110 ms`, `15.2 µs`, `10.5%`, `1.050`.
    pub fn figure(self, value: f64) -> String {
        match self {
            Unit::Pct => format!("{}%", self.number(value)),
            Unit::Ratio => self.number(value),
            _ => format!("{} {}", self.number(value), self.symbol()),
        }
    }

    /// [`Unit::figure`], or the missing-value mark (`MISSING`).
    pub fn figure_or_missing(self, value: Option<f64>) -> String {
        value.map_or_else(|| MISSING.to_string(), |v| self.figure(v))
    }

    /// [`Unit::number`], or the missing-value mark (`MISSING`).
    pub fn number_or_missing(self, value: Option<f64>) -> String {
        value.map_or_else(|| MISSING.to_string(), |v| self.number(v))
    }

    /// A change between two figures: `+0.420 ms`, `-1.2 pp`, `+0.050`.
    pub fn change(self, delta: f64) -> String {
        let n = fixed_signed(delta, self.decimals());
        match self {
            Unit::Pct => format!("{n} pp"),
            Unit::Ratio => n,
            _ => format!("{n} {}", self.symbol()),
        }
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

/// A figure with a fixed number of decimals (`-0.0` printed as `0.0`).
pub fn fixed(value: f64, decimals: usize) -> String {
    let v = if value == 0.0 { 0.0 } else { value };
    format!("{v:.decimals$}")
}

/// A count per step: an integer when it is whole (`124`), else one decimal (`116.5`).
pub fn count(value: f64) -> String {
    if (value - value.round()).abs() < 0.05 {
        fixed(value.round(), 0)
    } else {
        fixed(value, 1)
    }
}

/// A signed figure with a fixed number of decimals: `+1.5`, `-0.2`, `+0.0`.
pub fn fixed_signed(value: f64, decimals: usize) -> String {
    let v = if value == 0.0 { 0.0 } else { value };
    format!("{v:+.decimals$}")
}

/// A relative change in percent: `+4.6%`.
pub fn percent_change(pct: f64) -> String {
    format!("{}%", fixed_signed(pct, 1))
}

/// A size in bytes as people read it: `1 byte`, `512 bytes`, `1.5 KiB`, `520.0 MiB`, `4.00 GiB`
/// (powers of 1024), never `0.0 MiB` for a few bytes.
pub fn bytes(n: u64) -> String {
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
        assert_eq!(Unit::Ms.figure_or_missing(None), MISSING);
        assert_eq!(Unit::Pct.change(-1.25), "-1.2 pp");
        assert_eq!(Unit::Us.change(3.0), "+3.0 µs");
        assert_eq!(fixed(-0.0, 1), "0.0");
        assert_eq!(percent_change(4.56), "+4.6%");
    }

    #[test]
    fn units_round_trip_through_their_json_name() {
        for u in [Unit::Ms, Unit::Us, Unit::Pct, Unit::Ratio] {
            assert_eq!(Unit::parse(u.json()), Some(u));
        }
        assert_eq!(Unit::parse("µs"), Some(Unit::Us));
        assert_eq!(Unit::parse("furlongs"), None);
    }
}

// ---- Added by helper D (issue 29, check's output) until helper G's signed-zero-free change
// formatter lands; the coordinator may fold these into G's.

/// A signed figure with `decimals` decimals that never reads as a signed zero: `+1.5`, `-0.2`,
/// and `0.0` where the rounding is zero (never `-0.0` nor `+0.0`).
pub fn signed(value: f64, decimals: usize) -> String {
    let text = fixed_signed(value, decimals);
    let digits = &text[1..];
    if digits.chars().all(|c| c == '0' || c == '.') {
        digits.to_string()
    } else {
        text
    }
}

/// A change in a unit, as [`Unit::change`] without a signed zero: `+0.420 ms`, `-1.2 pp`,
/// `0.0 pp`.
pub fn unit_change(unit: Unit, delta: f64) -> String {
    let n = signed(delta, unit.decimals());
    match unit {
        Unit::Pct => format!("{n} pp"),
        Unit::Ratio => n,
        _ => format!("{n} {}", unit.symbol()),
    }
}

/// A relative change in percent without a signed zero: `+4.6%`, `-0.4%`, `0.0%`.
pub fn percent_delta(pct: f64) -> String {
    format!("{}%", signed(pct, 1))
}

#[cfg(test)]
mod signed_tests {
    use super::*;

    #[test]
    fn a_change_that_rounds_to_zero_has_no_sign() {
        assert_eq!(signed(-0.00004, 3), "0.000");
        assert_eq!(signed(0.00004, 1), "0.0");
        assert_eq!(signed(-0.04, 1), "0.0");
        assert_eq!(signed(-0.05001, 1), "-0.1");
        assert_eq!(signed(2.0, 0), "+2");
        assert_eq!(unit_change(Unit::Pct, -0.01), "0.0 pp");
        assert_eq!(unit_change(Unit::Ms, 13.178), "+13.178 ms");
        assert_eq!(unit_change(Unit::Us, -6.93), "-6.9 µs");
        assert_eq!(percent_delta(-0.001), "0.0%");
        assert_eq!(percent_delta(50.04), "+50.0%");
    }
}
