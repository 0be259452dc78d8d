use super::*;

fn tera(x: Option<f64>) -> f64 {
    x.expect("figure present") / TERA
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn the_table_holds_dense_datasheet_figures() {
    // NVIDIA's sparse tensor-core figures, halved.
    let h100 = &PEAKS[H100_SXM];
    assert!(close(tera(h100.flops.bf16), 989.5));
    assert!(close(tera(h100.flops.fp8), 1979.0));
    assert!(close(tera(h100.flops.tf32), 494.5));
    assert!(close(tera(h100.flops.fp64), 67.0));
    assert!(close(tera(h100.hbm_bytes_per_s), 3.35));
    assert_eq!(h100.flops.fp4, None);
    let h200 = &PEAKS[H200_SXM];
    assert!(close(tera(h200.flops.bf16), 989.5));
    assert!(close(tera(h200.hbm_bytes_per_s), 4.8));
    let b200 = &PEAKS[B200];
    assert!(close(tera(b200.flops.bf16), 2250.0));
    assert!(close(tera(b200.flops.fp8), 4500.0));
    assert!(close(tera(b200.flops.fp4), 9000.0));
    assert!(close(tera(b200.flops.tf32), 1100.0));
    assert!(close(tera(b200.hbm_bytes_per_s), 7.7));
    // AMD quotes dense figures.
    let mi300x = &PEAKS[MI300X];
    assert!(close(tera(mi300x.flops.bf16), 1307.4));
    assert!(close(tera(mi300x.flops.fp8), 2614.9));
    assert!(close(tera(mi300x.hbm_bytes_per_s), 5.3));
    assert!(close(tera(PEAKS[MI325X].hbm_bytes_per_s), 6.0));
    let mi355x = &PEAKS[MI355X];
    assert!(close(tera(mi355x.flops.bf16), 2516.6));
    assert!(close(tera(mi355x.flops.fp4), 10066.3));
    assert_eq!(mi355x.flops.tf32, None);
    // Every part has bandwidth and the 16-bit rates; FP16 and BF16 agree; no narrower type is
    // slower than a wider one.
    for part in &PEAKS {
        assert!(part.hbm_bytes_per_s.is_some(), "{}", part.device);
        assert_eq!(part.flops.bf16, part.flops.fp16, "{}", part.device);
        let order = [Dtype::Fp32, Dtype::Bf16, Dtype::Fp8, Dtype::Fp6, Dtype::Fp4];
        let rates: Vec<f64> = order.iter().filter_map(|d| part.flops.get(*d)).collect();
        assert!(rates.windows(2).all(|w| w[0] <= w[1]), "{}", part.device);
    }
}

#[test]
fn docs_peaks_lists_every_part_with_its_figures() {
    let doc = include_str!("../../../docs/PEAKS.md");
    for part in &PEAKS {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", part.device)))
            .unwrap_or_else(|| panic!("docs/PEAKS.md has no row for {}", part.device));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        // | part | fp64 | fp32 | tf32 | bf16 | fp16 | fp8 | fp6 | fp4 | int8 | hbm | source |
        let figures = [
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
        for (i, dtype) in figures.iter().enumerate() {
            let cell = cells[2 + i];
            match part.flops.get(*dtype) {
                Some(v) => {
                    let doc_value: f64 = cell.parse().unwrap_or_else(|_| {
                        panic!("{} {}: `{cell}` is not a number", part.device, dtype.key())
                    });
                    assert!(
                        close(doc_value, v / TERA),
                        "{} {}",
                        part.device,
                        dtype.key()
                    );
                }
                None => assert_eq!(cell, "—", "{} {}", part.device, dtype.key()),
            }
        }
        let hbm: f64 = cells[11].parse().expect("hbm is a number");
        assert!(close(hbm, tera(part.hbm_bytes_per_s)), "{}", part.device);
    }
}

#[test]
fn devices_match_by_word_and_variants_with_other_limits_do_not() {
    let part = |name: &str| match_device(name).map(|p| p.device.as_ref());
    assert_eq!(part("NVIDIA H100 80GB HBM3"), Ok("NVIDIA H100 SXM"));
    assert_eq!(part("nvidia h100 80gb hbm3"), Ok("NVIDIA H100 SXM"));
    assert_eq!(part("NVIDIA H200"), Ok("NVIDIA H200 SXM"));
    assert_eq!(part("NVIDIA B200"), Ok("NVIDIA B200"));
    assert_eq!(part("AMD Instinct MI300X"), Ok("AMD Instinct MI300X"));
    assert_eq!(part("AMD Instinct MI300X VF"), Ok("AMD Instinct MI300X"));
    assert_eq!(part("AMD Instinct MI325X"), Ok("AMD Instinct MI325X"));
    assert_eq!(part("AMD Instinct MI355X"), Ok("AMD Instinct MI355X"));

    let pcie = match_device("NVIDIA H100 PCIe").unwrap_err();
    assert!(
        pcie.contains("no peak table for NVIDIA H100 PCIe"),
        "{pcie}"
    );
    assert!(pcie.contains("SXM") && pcie.contains("--peak"), "{pcie}");
    assert!(match_device("NVIDIA H100 NVL").is_err());
    assert!(match_device("NVIDIA H200 NVL").is_err());
    // Words, not substrings: an H20 is no H200, a GB200 superchip no B200, an MI300A no MI300X.
    for other in [
        "NVIDIA H20",
        "NVIDIA GB200",
        "AMD Instinct MI300A",
        "AMD Instinct MI308X",
        "",
    ] {
        let why = match_device(other).unwrap_err();
        assert_eq!(why, format!("no peak table for {other}: pass --peak"));
    }
    // Outside text is shown escaped.
    assert!(!match_device("GPU\nX").unwrap_err().contains('\n'));
}

#[test]
fn dtypes_parse_as_traces_write_them() {
    let d = |t: &str| parse_dtype(t).map(|d| (d.dtype, d.bytes_per_element, d.values_per_element));
    for bf16 in [
        "c10::BFloat16",
        "BFloat16",
        "bfloat16",
        "torch.bfloat16",
        " BF16 ",
    ] {
        assert_eq!(d(bf16), Some((Dtype::Bf16, 2, 1)), "{bf16}");
    }
    for fp16 in ["c10::Half", "Half", "float16", "torch.float16"] {
        assert_eq!(d(fp16), Some((Dtype::Fp16, 2, 1)), "{fp16}");
    }
    assert_eq!(d("float"), Some((Dtype::Fp32, 4, 1)));
    assert_eq!(d("double"), Some((Dtype::Fp64, 8, 1)));
    for fp8 in [
        "c10::Float8_e4m3fn",
        "c10::Float8_e4m3fnuz",
        "c10::Float8_e5m2",
        "c10::Float8_e5m2fnuz",
        "torch.float8_e4m3fn",
    ] {
        assert_eq!(d(fp8), Some((Dtype::Fp8, 1, 1)), "{fp8}");
    }
    for fp4 in ["c10::Float4_e2m1fn_x2", "fp4", "uint8", "unsigned char"] {
        assert_eq!(d(fp4), Some((Dtype::Fp4, 1, 2)), "{fp4}");
    }
    assert_eq!(d("signed char"), Some((Dtype::Int8, 1, 1)));
    for none in [
        "",
        "Scalar",
        "int",
        "long int",
        "c10::Float8_e8m0fnu",
        "bool",
        "TensorList",
    ] {
        assert_eq!(d(none), None, "{none}");
    }
}

#[test]
fn peak_overrides_parse_with_decimal_prefixes() {
    let o = parse_peak("bf16=989T,fp8=1979T,hbm=4.8T").unwrap();
    assert!(close(o.flops.bf16.unwrap(), 989e12));
    assert!(close(o.flops.fp8.unwrap(), 1979e12));
    assert!(close(o.hbm_bytes_per_s.unwrap(), 4.8e12));
    assert_eq!(o.flops.fp16, None);
    let o = parse_peak(" FP4 = 1.2P , hbm=900G,int8=3e14").unwrap();
    assert!(close(o.flops.fp4.unwrap(), 1.2e15));
    assert!(close(o.hbm_bytes_per_s.unwrap(), 9e11));
    assert!(close(o.flops.int8.unwrap(), 3e14));
}

#[test]
fn bad_peak_overrides_say_what_is_wrong() {
    let err = |t: &str| parse_peak(t).unwrap_err();
    assert!(err("").contains("empty"));
    assert!(err("bf16").contains("not KEY=VALUE"));
    assert!(err("bf17=1T").contains("unknown key `bf17` (known: fp64, fp32, tf32"));
    assert!(err("bf16=fast").contains("bf16: `fast` is not a number"));
    assert!(err("bf16=-1T").contains("not a positive rate"));
    assert!(err("bf16=0").contains("not a positive rate"));
    assert!(err("hbm=1T,hbm=2T").contains("hbm is given twice"));
    assert!(err("bf16=1X").contains("not a number"));
    assert!(err("bf16=1T,").contains("not KEY=VALUE"));
}

#[test]
fn overrides_replace_and_extend_a_table_or_make_one() {
    let o = parse_peak("bf16=1000T,fp4=5P").unwrap();
    let h100 = o.apply(
        "NVIDIA H100 80GB HBM3",
        match_device("NVIDIA H100 80GB HBM3"),
    );
    assert!(close(h100.flops.bf16.unwrap(), 1e15));
    assert!(close(h100.flops.fp4.unwrap(), 5e15));
    assert_eq!(h100.flops.fp8, PEAKS[H100_SXM].flops.fp8);
    assert_eq!(h100.hbm_bytes_per_s, PEAKS[H100_SXM].hbm_bytes_per_s);
    assert!(h100.source.ends_with("and --peak"));

    let o = parse_peak("bf16=500T,hbm=2T").unwrap();
    let unknown = o.apply("Radeon X", match_device("Radeon X"));
    assert_eq!(unknown.device, "Radeon X");
    assert_eq!(unknown.source, "--peak");
    assert!(close(unknown.flops.bf16.unwrap(), 5e14));
    assert_eq!(unknown.flops.fp8, None);
    let b = bound(1e9, 1e9, 1e-3, Dtype::Bf16, &unknown);
    assert_eq!(b.limit, Some(Limit::Memory));
}

#[test]
fn a_decode_gemm_on_mi300x_is_memory_bound() {
    // 32 x 24576 x 4096 BF16: A [32,4096], B [24576,4096], C [32,24576], two bytes each.
    let (m, n, k) = (32.0, 24576.0, 4096.0);
    let flops = 2.0 * m * n * k;
    let bytes = (m * k + n * k + m * n) * 2.0;
    let seconds = 60e-6;
    let b = bound(flops, bytes, seconds, Dtype::Bf16, &PEAKS[MI300X]);
    assert_eq!(b.limit, Some(Limit::Memory));
    assert_eq!(b.why_not, None);
    let intensity = b.intensity.unwrap();
    assert!((31.0..32.0).contains(&intensity), "{intensity}");
    assert!(close(b.ridge.unwrap(), 1307.4 / 5.3));
    assert!(close(b.achieved_tbps, bytes / seconds / 1e12));
    assert!(close(b.achieved_tflops, flops / seconds / 1e12));
    // 203.2 MB in 60 µs: 3.39 TB/s, 64% of 5.3 TB/s.
    let pct = b.pct_of_limit.unwrap();
    assert!((63.0..65.0).contains(&pct), "{pct}");
    assert_eq!(b.pct_of_limit, b.pct_of_peak_bandwidth);
    assert!(b.pct_of_peak_flops.unwrap() < 10.0);
    let json = serde_json::to_value(&b).unwrap();
    assert_eq!(json["limit"], "memory");
    assert_eq!(json["dtype"], "bf16");
}

#[test]
fn a_large_square_gemm_is_compute_bound() {
    let s = 8192.0;
    let flops = 2.0 * s * s * s;
    let bytes = 3.0 * s * s * 2.0;
    // 1100 TFLOP/s would be 84% of MI300X's 1307.4.
    let seconds = flops / 1100e12;
    let b = bound(flops, bytes, seconds, Dtype::Bf16, &PEAKS[MI300X]);
    assert_eq!(b.limit, Some(Limit::Compute));
    assert!(close(b.achieved_tflops, 1100.0));
    assert!(close(b.pct_of_limit.unwrap(), 100.0 * 1100.0 / 1307.4));
    assert!(b.intensity.unwrap() > b.ridge.unwrap());
    // On H100 too.
    let h = bound(flops, bytes, seconds, Dtype::Bf16, &PEAKS[H100_SXM]);
    assert_eq!(h.limit, Some(Limit::Compute));
}

#[test]
fn bound_says_why_it_cannot_classify() {
    let h100 = &PEAKS[H100_SXM];
    let b = bound(1e9, 1e6, 1e-3, Dtype::Fp4, h100);
    assert_eq!(b.limit, None);
    assert_eq!(b.pct_of_peak_flops, None);
    assert!(b.pct_of_peak_bandwidth.is_some());
    assert_eq!(
        b.why_not.as_deref(),
        Some("no fp4 peak for NVIDIA H100 SXM: pass --peak fp4=...")
    );
    let b = bound(1e9, 1e6, 0.0, Dtype::Bf16, h100);
    assert_eq!(b.why_not.as_deref(), Some("no time per call"));
    assert_eq!(b.achieved_tflops, 0.0);
    let b = bound(1e9, 0.0, 1e-3, Dtype::Bf16, h100);
    assert_eq!(b.limit, None);
    assert!(b.why_not.unwrap().contains("no bytes"));
}
