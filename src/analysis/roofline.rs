//! The roofline of a kernel (issue 41): how far a kernel's achieved FLOP/s and bytes/s are from
//! the hardware's limit.
//!
//! - [`PEAKS`]: dense peak FLOP/s per dtype and HBM bandwidth of the parts tracegate knows, from
//!   the vendors' datasheets (each figure and its document in `docs/PEAKS.md`; NVIDIA quotes its
//!   tensor-core figures with 2:4 sparsity, and the table holds half of them, the dense rate).
//! - [`match_device`]: the table of a trace's `deviceProperties.name`, or why there is none.
//! - [`parse_dtype`]: a dtype as traces write it (`c10::BFloat16`) and its size.
//! - [`parse_peak`]: the `--peak` override (`bf16=989T,hbm=4.8T`), applied by
//!   [`PeakOverride::apply`] over the matched table or as the table of an unknown device.
//! - [`bound`]: achieved TFLOP/s and TB/s, their share of the peaks, the arithmetic intensity
//!   against the ridge point, and which limit applies (memory or compute) with the share of it
//!   reached.
//!
//! Everything here computes; the report renders. Not yet reached from the command line: the
//! lead wires it into `check` (issue 41), hence the dead-code allowance. It is unconditional:
//! the `testing` feature is on for every target of `cargo clippy --all-targets` (the crate's
//! dev-dependency on itself), and nothing in `testing` reaches this module, so
//! `cfg_attr(not(feature = "testing"), ...)` would leave the lints on there.
#![allow(dead_code)]

use std::borrow::Cow;

use serde::Serialize;

/// One tera (10^12): TFLOP/s and TB/s are decimal.
const TERA: f64 = 1e12;
/// One peta (10^15).
const PETA: f64 = 1e15;
/// One giga (10^9).
const GIGA: f64 = 1e9;

/// A compute dtype, as the peak table knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Dtype {
    Fp64,
    Fp32,
    /// TensorFloat-32: FP32 storage, a tensor-core mode; never a trace's storage type.
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    Fp6,
    Fp4,
    Int8,
}

impl Dtype {
    /// Every dtype, in the table's order.
    pub(crate) const ALL: [Dtype; 9] = [
        Dtype::Fp64,
        Dtype::Fp32,
        Dtype::Tf32,
        Dtype::Bf16,
        Dtype::Fp16,
        Dtype::Fp8,
        Dtype::Fp6,
        Dtype::Fp4,
        Dtype::Int8,
    ];

    /// The dtype's key in `--peak` and in JSON: `fp64`, `bf16`, ...
    pub(crate) const fn key(self) -> &'static str {
        match self {
            Dtype::Fp64 => "fp64",
            Dtype::Fp32 => "fp32",
            Dtype::Tf32 => "tf32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
            Dtype::Fp6 => "fp6",
            Dtype::Fp4 => "fp4",
            Dtype::Int8 => "int8",
        }
    }

    /// Bits of one value.
    pub(crate) const fn bits(self) -> u32 {
        match self {
            Dtype::Fp64 => 64,
            Dtype::Fp32 | Dtype::Tf32 => 32,
            Dtype::Bf16 | Dtype::Fp16 => 16,
            Dtype::Fp8 | Dtype::Int8 => 8,
            Dtype::Fp6 => 6,
            Dtype::Fp4 => 4,
        }
    }

    fn from_key(key: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.key() == key)
    }
}

/// A dtype as a trace's `Input type` names it, with the size of one element *as the trace counts
/// elements* (`Input Dims`): a packed FP4 tensor (`c10::Float4_e2m1fn_x2`, or `uint8` as aiter
/// and others store FP4) holds two values per 1-byte element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct TraceDtype {
    pub dtype: Dtype,
    /// Bytes per element of the tensor as its dims count them.
    pub bytes_per_element: u32,
    /// Values per element: 2 for packed FP4, 1 otherwise.
    pub values_per_element: u32,
}

impl TraceDtype {
    const fn plain(dtype: Dtype) -> TraceDtype {
        TraceDtype {
            dtype,
            bytes_per_element: dtype.bits() / 8,
            values_per_element: 1,
        }
    }

    const fn packed_fp4() -> TraceDtype {
        TraceDtype {
            dtype: Dtype::Fp4,
            bytes_per_element: 1,
            values_per_element: 2,
        }
    }
}

/// A dtype as traces write it: `c10::BFloat16`, `BFloat16`, `bfloat16`, `torch.bfloat16`,
/// `c10::Half`, `float`, `double`, `c10::Float8_e4m3fn(uz)`, `c10::Float8_e5m2(fnuz)`,
/// `c10::Float4_e2m1fn_x2`, `fp4`, `uint8`/`unsigned char` (packed FP4), `signed char`/`int8`.
/// `None` for anything else: scalars, integers other than 8-bit, FP8 scales (`Float8_e8m0fnu`).
pub(crate) fn parse_dtype(text: &str) -> Option<TraceDtype> {
    let lower = text.trim().to_ascii_lowercase();
    let name = lower
        .strip_prefix("c10::")
        .or_else(|| lower.strip_prefix("torch."))
        .unwrap_or(&lower);
    Some(match name {
        "double" | "float64" | "fp64" => TraceDtype::plain(Dtype::Fp64),
        "float" | "float32" | "fp32" => TraceDtype::plain(Dtype::Fp32),
        "bfloat16" | "bf16" => TraceDtype::plain(Dtype::Bf16),
        "half" | "float16" | "fp16" => TraceDtype::plain(Dtype::Fp16),
        "float8_e4m3fn" | "float8_e4m3fnuz" | "float8_e5m2" | "float8_e5m2fnuz" | "fp8" => {
            TraceDtype::plain(Dtype::Fp8)
        }
        "float4_e2m1fn_x2" | "fp4" | "uint8" | "unsigned char" | "byte" => TraceDtype::packed_fp4(),
        "signed char" | "int8" | "char" => TraceDtype::plain(Dtype::Int8),
        _ => return None,
    })
}

/// Dense peak FLOP/s per dtype (`None` where the part has no such rate).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub(crate) struct PeakFlops {
    pub fp64: Option<f64>,
    pub fp32: Option<f64>,
    pub tf32: Option<f64>,
    pub bf16: Option<f64>,
    pub fp16: Option<f64>,
    pub fp8: Option<f64>,
    pub fp6: Option<f64>,
    pub fp4: Option<f64>,
    pub int8: Option<f64>,
}

impl PeakFlops {
    /// The peak of one dtype, FLOP/s (OP/s for INT8).
    pub(crate) fn get(&self, dtype: Dtype) -> Option<f64> {
        *self.slot(dtype)
    }

    fn slot(&self, dtype: Dtype) -> &Option<f64> {
        match dtype {
            Dtype::Fp64 => &self.fp64,
            Dtype::Fp32 => &self.fp32,
            Dtype::Tf32 => &self.tf32,
            Dtype::Bf16 => &self.bf16,
            Dtype::Fp16 => &self.fp16,
            Dtype::Fp8 => &self.fp8,
            Dtype::Fp6 => &self.fp6,
            Dtype::Fp4 => &self.fp4,
            Dtype::Int8 => &self.int8,
        }
    }

    fn set(&mut self, dtype: Dtype, value: f64) {
        let slot = match dtype {
            Dtype::Fp64 => &mut self.fp64,
            Dtype::Fp32 => &mut self.fp32,
            Dtype::Tf32 => &mut self.tf32,
            Dtype::Bf16 => &mut self.bf16,
            Dtype::Fp16 => &mut self.fp16,
            Dtype::Fp8 => &mut self.fp8,
            Dtype::Fp6 => &mut self.fp6,
            Dtype::Fp4 => &mut self.fp4,
            Dtype::Int8 => &mut self.int8,
        };
        *slot = Some(value);
    }
}

/// The limits of one part: dense peak FLOP/s per dtype and HBM bandwidth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct DevicePeaks {
    /// The part: `NVIDIA H100 SXM`, `AMD Instinct MI300X`, or the trace's device name for a
    /// table given whole by `--peak`.
    pub device: Cow<'static, str>,
    pub flops: PeakFlops,
    /// HBM bandwidth, bytes/s (decimal).
    pub hbm_bytes_per_s: Option<f64>,
    /// Where the figures come from: the datasheet (`docs/PEAKS.md`), `--peak`, or both.
    pub source: Cow<'static, str>,
}

/// A datasheet figure in TFLOP/s (or TB/s), as FLOP/s (bytes/s).
const fn t(tera: f64) -> Option<f64> {
    Some(tera * TERA)
}

/// Half of a datasheet figure quoted with 2:4 sparsity, in TFLOP/s, as dense FLOP/s.
const fn sparse_t(tera: f64) -> Option<f64> {
    Some(tera * TERA / 2.0)
}

/// The parts tracegate knows, with their datasheet figures (sources in `docs/PEAKS.md`, held to
/// this table by a test). NVIDIA's tensor-core figures are quoted with sparsity: `sparse_t`
/// halves them. AMD quotes dense figures (and sparse apart).
pub(crate) static PEAKS: [DevicePeaks; 6] = [
    // NVIDIA H100 Tensor Core GPU datasheet, H100 SXM column.
    DevicePeaks {
        device: Cow::Borrowed("NVIDIA H100 SXM"),
        flops: PeakFlops {
            fp64: t(67.0), // FP64 Tensor Core
            fp32: t(67.0),
            tf32: sparse_t(989.0),
            bf16: sparse_t(1979.0),
            fp16: sparse_t(1979.0),
            fp8: sparse_t(3958.0),
            fp6: None,
            fp4: None,
            int8: sparse_t(3958.0),
        },
        hbm_bytes_per_s: t(3.35),
        source: Cow::Borrowed("NVIDIA H100 Tensor Core GPU datasheet (H100 SXM)"),
    },
    // NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column.
    DevicePeaks {
        device: Cow::Borrowed("NVIDIA H200 SXM"),
        flops: PeakFlops {
            fp64: t(67.0),
            fp32: t(67.0),
            tf32: sparse_t(989.0),
            bf16: sparse_t(1979.0),
            fp16: sparse_t(1979.0),
            fp8: sparse_t(3958.0),
            fp6: None,
            fp4: None,
            int8: sparse_t(3958.0),
        },
        hbm_bytes_per_s: t(4.8),
        source: Cow::Borrowed("NVIDIA H200 Tensor Core GPU datasheet (H200 SXM)"),
    },
    // NVIDIA HGX B200 specifications, the table's per-GPU column.
    DevicePeaks {
        device: Cow::Borrowed("NVIDIA B200"),
        flops: PeakFlops {
            fp64: t(37.0),
            fp32: t(75.0),
            tf32: sparse_t(2200.0),
            bf16: sparse_t(4500.0),
            fp16: sparse_t(4500.0),
            fp8: sparse_t(9000.0),
            fp6: sparse_t(9000.0),
            fp4: sparse_t(18000.0),
            int8: sparse_t(9000.0),
        },
        hbm_bytes_per_s: t(7.7),
        source: Cow::Borrowed("NVIDIA HGX B200 specifications (per GPU)"),
    },
    // AMD Instinct MI300X accelerator datasheet.
    DevicePeaks {
        device: Cow::Borrowed("AMD Instinct MI300X"),
        flops: PeakFlops {
            fp64: t(163.4), // FP64 matrix
            fp32: t(163.4), // FP32 matrix
            tf32: t(653.7),
            bf16: t(1307.4),
            fp16: t(1307.4),
            fp8: t(2614.9),
            fp6: None,
            fp4: None,
            int8: t(2614.9),
        },
        hbm_bytes_per_s: t(5.3),
        source: Cow::Borrowed("AMD Instinct MI300X accelerator datasheet"),
    },
    // AMD Instinct MI325X accelerator datasheet.
    DevicePeaks {
        device: Cow::Borrowed("AMD Instinct MI325X"),
        flops: PeakFlops {
            fp64: t(163.4),
            fp32: t(163.4),
            tf32: t(653.7),
            bf16: t(1307.4),
            fp16: t(1307.4),
            fp8: t(2614.9),
            fp6: None,
            fp4: None,
            int8: t(2614.9),
        },
        hbm_bytes_per_s: t(6.0),
        source: Cow::Borrowed("AMD Instinct MI325X accelerator datasheet"),
    },
    // AMD Instinct MI355X GPU datasheet. CDNA 4 has no TF32 matrix rate.
    DevicePeaks {
        device: Cow::Borrowed("AMD Instinct MI355X"),
        flops: PeakFlops {
            fp64: t(78.6),
            fp32: t(157.3),
            tf32: None,
            bf16: t(2516.6),
            fp16: t(2516.6),
            fp8: t(5033.2),
            fp6: t(10066.3),
            fp4: t(10066.3),
            int8: t(5033.2),
        },
        hbm_bytes_per_s: t(8.0),
        source: Cow::Borrowed("AMD Instinct MI355X GPU datasheet"),
    },
];

/// Index into [`PEAKS`] by part.
const H100_SXM: usize = 0;
const H200_SXM: usize = 1;
const B200: usize = 2;
const MI300X: usize = 3;
const MI325X: usize = 4;
const MI355X: usize = 5;

/// The peak table of a trace's `deviceProperties.name`, matched by words, case-insensitive:
/// `NVIDIA H100 80GB HBM3` (the SXM part), `NVIDIA H200`, `NVIDIA B200`, `AMD Instinct MI300X`
/// (and its virtual function `MI300X VF`), `MI325X`, `MI355X`. `Err` says why there is none: a
/// variant with other limits (`H100 PCIe`, `H100 NVL`, `H200 NVL`), or a part without a table;
/// either way the user can pass `--peak`.
pub(crate) fn match_device(name: &str) -> Result<&'static DevicePeaks, String> {
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    let shown = crate::text::printable(name);
    let variant = ["pcie", "nvl"].into_iter().find(|w| has(w));
    let index = if has("h100") || has("h200") {
        if let Some(variant) = variant {
            return Err(format!(
                "no peak table for {shown}: the table's {} figures are for the SXM part, not \
                 the {} one (its clocks and power differ): pass --peak",
                if has("h100") { "H100" } else { "H200" },
                variant.to_ascii_uppercase()
            ));
        }
        if has("h100") {
            H100_SXM
        } else {
            H200_SXM
        }
    } else if has("b200") {
        B200
    } else if has("mi300x") {
        MI300X
    } else if has("mi325x") {
        MI325X
    } else if has("mi355x") {
        MI355X
    } else {
        return Err(format!("no peak table for {shown}: pass --peak"));
    };
    Ok(&PEAKS[index])
}

/// `--peak`: peak figures that replace or extend the matched table, or make one for a device
/// without a table.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct PeakOverride {
    pub flops: PeakFlops,
    /// HBM bandwidth, bytes/s.
    pub hbm_bytes_per_s: Option<f64>,
}

impl PeakOverride {
    /// The table to judge against: the matched one with these figures over it, or, for a device
    /// without one (`matched` is the reason), a table of these figures alone.
    pub(crate) fn apply(
        &self,
        device_name: &str,
        matched: Result<&'static DevicePeaks, String>,
    ) -> DevicePeaks {
        let mut peaks = match matched {
            Ok(table) => DevicePeaks {
                source: Cow::Owned(format!("{} and --peak", table.source)),
                ..table.clone()
            },
            Err(_) => DevicePeaks {
                device: Cow::Owned(crate::text::printable(device_name).into_owned()),
                flops: PeakFlops::default(),
                hbm_bytes_per_s: None,
                source: Cow::Borrowed("--peak"),
            },
        };
        for dtype in Dtype::ALL {
            if let Some(value) = self.flops.get(dtype) {
                peaks.flops.set(dtype, value);
            }
        }
        if let Some(hbm) = self.hbm_bytes_per_s {
            peaks.hbm_bytes_per_s = Some(hbm);
        }
        peaks
    }
}

/// Parses `--peak`: comma-separated `KEY=VALUE`, KEY a dtype (`fp64`, `fp32`, `tf32`, `bf16`,
/// `fp16`, `fp8`, `fp6`, `fp4`, `int8`; FLOP/s) or `hbm` (bytes/s), VALUE a positive number with an
/// optional decimal prefix `G` (10^9), `T` (10^12) or `P` (10^15), per second:
/// `bf16=989T,fp8=1979T,hbm=4.8T`.
pub(crate) fn parse_peak(text: &str) -> Result<PeakOverride, String> {
    let known = || {
        let mut keys: Vec<&str> = Dtype::ALL.iter().map(|d| d.key()).collect();
        keys.push("hbm");
        keys.join(", ")
    };
    let mut out = PeakOverride::default();
    let mut seen: Vec<String> = Vec::new();
    if text.trim().is_empty() {
        return Err(
            "--peak is empty: give KEY=VALUE pairs such as bf16=989T,hbm=3.35T".to_string(),
        );
    }
    for item in text.split(',') {
        let item = item.trim();
        let shown = crate::text::printable(item);
        let Some((key, value)) = item.split_once('=') else {
            return Err(format!(
                "--peak: `{shown}` is not KEY=VALUE (such as bf16=989T or hbm=3.35T)"
            ));
        };
        let key = key.trim().to_ascii_lowercase();
        if seen.contains(&key) {
            return Err(format!("--peak: {key} is given twice"));
        }
        let number = parse_rate(value.trim()).map_err(|why| format!("--peak: {key}: {why}"))?;
        if key == "hbm" {
            out.hbm_bytes_per_s = Some(number);
        } else if let Some(dtype) = Dtype::from_key(&key) {
            out.flops.set(dtype, number);
        } else {
            let key = crate::text::printable(&key);
            return Err(format!("--peak: unknown key `{key}` (known: {})", known()));
        }
        seen.push(key);
    }
    Ok(out)
}

/// A rate with an optional decimal prefix: `989T`, `4.8T`, `1.2P`, `900G`, `3.35e12`.
fn parse_rate(value: &str) -> Result<f64, String> {
    let shown = crate::text::printable(value);
    let (digits, scale) = match value.chars().last() {
        Some('G' | 'g') => (&value[..value.len() - 1], GIGA),
        Some('T' | 't') => (&value[..value.len() - 1], TERA),
        Some('P' | 'p') => (&value[..value.len() - 1], PETA),
        _ => (value, 1.0),
    };
    let number: f64 = digits.trim().parse().map_err(|_| {
        format!("`{shown}` is not a number with an optional G, T or P (such as 989T)")
    })?;
    if !number.is_finite() || number <= 0.0 {
        return Err(format!("`{shown}` is not a positive rate"));
    }
    Ok(number * scale)
}

/// Which limit bounds a kernel: below the ridge point, bandwidth; above it, compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Limit {
    Memory,
    Compute,
}

/// A kernel against its part's roofline. Rates are decimal (TFLOP/s = 10^12 FLOP/s, TB/s =
/// 10^12 bytes/s); a field the table cannot give (no peak for the dtype, no bandwidth) is `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Bound {
    /// The part the peaks are of.
    pub device: String,
    pub dtype: Dtype,
    pub achieved_tflops: f64,
    pub achieved_tbps: f64,
    /// Dense peak of the dtype, TFLOP/s.
    pub peak_tflops: Option<f64>,
    /// HBM bandwidth, TB/s.
    pub peak_tbps: Option<f64>,
    /// Achieved FLOP/s, % of the dtype's peak.
    pub pct_of_peak_flops: Option<f64>,
    /// Achieved bytes/s, % of HBM bandwidth.
    pub pct_of_peak_bandwidth: Option<f64>,
    /// FLOP per byte moved.
    pub intensity: Option<f64>,
    /// Peak FLOP/s over bandwidth, FLOP per byte: below it a kernel is memory-bound.
    pub ridge: Option<f64>,
    /// The limit that applies, when both peaks and the intensity are known.
    pub limit: Option<Limit>,
    /// The share of that limit reached, %: of HBM bandwidth when memory-bound, of the peak
    /// FLOP/s when compute-bound.
    pub pct_of_limit: Option<f64>,
    /// Why `limit` is absent, when it is.
    pub why_not: Option<String>,
}

/// A kernel of `flops` and `bytes` per call taking `seconds` per call, against `peaks` for
/// `dtype`: achieved rates, shares of the peaks, intensity against the ridge point and the
/// limit that applies (memory-bound when the intensity is below the ridge).
pub(crate) fn bound(
    flops: f64,
    bytes: f64,
    seconds: f64,
    dtype: Dtype,
    peaks: &DevicePeaks,
) -> Bound {
    let rate = |amount: f64| {
        (seconds > 0.0 && amount.is_finite() && amount >= 0.0).then(|| amount / seconds)
    };
    let (flops_per_s, bytes_per_s) = (rate(flops), rate(bytes));
    let peak_flops = peaks.flops.get(dtype).filter(|p| *p > 0.0);
    let peak_bw = peaks.hbm_bytes_per_s.filter(|p| *p > 0.0);
    let pct = |achieved: Option<f64>, peak: Option<f64>| Some(100.0 * achieved? / peak?);
    let pct_of_peak_flops = pct(flops_per_s, peak_flops);
    let pct_of_peak_bandwidth = pct(bytes_per_s, peak_bw);
    let intensity = (bytes > 0.0 && flops.is_finite() && flops >= 0.0).then(|| flops / bytes);
    let ridge = peak_flops.zip(peak_bw).map(|(f, b)| f / b);
    let why_not = if seconds <= 0.0 || !seconds.is_finite() {
        Some("no time per call".to_string())
    } else if intensity.is_none() {
        Some("no bytes moved, no intensity".to_string())
    } else if peak_flops.is_none() {
        Some(format!(
            "no {} peak for {}: pass --peak {}=...",
            dtype.key(),
            peaks.device,
            dtype.key()
        ))
    } else if peak_bw.is_none() {
        Some(format!(
            "no HBM bandwidth for {}: pass --peak hbm=...",
            peaks.device
        ))
    } else {
        None
    };
    let limit = match (why_not.is_none(), intensity, ridge) {
        (true, Some(i), Some(r)) if i < r => Some(Limit::Memory),
        (true, Some(_), Some(_)) => Some(Limit::Compute),
        _ => None,
    };
    let pct_of_limit = match limit {
        Some(Limit::Memory) => pct_of_peak_bandwidth,
        Some(Limit::Compute) => pct_of_peak_flops,
        None => None,
    };
    Bound {
        device: peaks.device.to_string(),
        dtype,
        achieved_tflops: flops_per_s.unwrap_or(0.0) / TERA,
        achieved_tbps: bytes_per_s.unwrap_or(0.0) / TERA,
        peak_tflops: peak_flops.map(|p| p / TERA),
        peak_tbps: peak_bw.map(|p| p / TERA),
        pct_of_peak_flops,
        pct_of_peak_bandwidth,
        intensity,
        ridge,
        limit,
        pct_of_limit,
        why_not,
    }
}

#[cfg(test)]
mod tests;
