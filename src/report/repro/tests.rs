use std::path::Path;
use std::process::Command;

use super::*;
use crate::analysis::roofline::{bound, PEAKS};

fn kernel(op: &str, dims: &[&[u64]], types: &[&str]) -> ReproKernel {
    let mut k = ReproKernel {
        kernel: "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm<256, 128>>(ck::Args)"
            .to_string(),
        ops: vec!["aten::mm".to_string(), op.to_string()],
        op: op.to_string(),
        python_scope: Some("sglang/srt/layers/linear.py(123): forward".to_string()),
        input_dims: dims.iter().map(|d| d.to_vec()).collect(),
        input_types: types.iter().map(|t| t.to_string()).collect(),
        input_strides: None,
        baseline_ns: Some(52_000.0),
        run_ns: 61_500.0,
        calls_per_step: 64.0,
        flops_per_call: None,
        bytes_per_call: None,
        pct_of_peak: None,
        bound: None,
        torch_equivalent: TorchEquivalent::None(String::new()),
    };
    k.torch_equivalent = torch_equivalent(&k);
    k
}

const BF16: &str = "c10::BFloat16";

fn decode_gemm() -> ReproKernel {
    let mut k = kernel(
        "aiter::gemm_a16w16",
        &[&[32, 4096], &[24576, 4096]],
        &[BF16, BF16],
    );
    let (m, n, kk) = (32.0, 24576.0, 4096.0);
    let flops = 2.0 * m * n * kk;
    let bytes = (m * kk + n * kk + m * n) * 2.0;
    let b = bound(flops, bytes, k.run_ns / 1e9, Dtype::Bf16, &PEAKS[3]);
    k.flops_per_call = Some(flops);
    k.bytes_per_call = Some(bytes);
    k.pct_of_peak = b.pct_of_limit;
    k.bound = Some(b);
    k
}

fn call_of(k: &ReproKernel) -> Option<String> {
    match torch_equivalent(k) {
        TorchEquivalent::Call(c) => Some(c),
        TorchEquivalent::None(_) => None,
    }
}

#[test]
fn each_mapped_op_gets_its_pytorch_call() {
    let cases: [(&str, &[&[u64]], &str); 10] = [
        ("aten::mm", &[&[32, 64], &[64, 128]], "torch.mm(a, b)"),
        (
            "aten::matmul",
            &[&[4, 32, 64], &[64, 128]],
            "torch.matmul(a, b)",
        ),
        (
            "aiter::gemm_a16w16",
            &[&[32, 64], &[128, 64]],
            "torch.mm(a, b.t())",
        ),
        (
            "aten::addmm",
            &[&[128], &[32, 64], &[64, 128]],
            "torch.addmm(bias, a, b)",
        ),
        (
            "aten::linear",
            &[&[2, 16, 64], &[128, 64]],
            "torch.nn.functional.linear(x, w)",
        ),
        (
            "aten::linear",
            &[&[2, 16, 64], &[128, 64], &[128]],
            "torch.nn.functional.linear(x, w, bias)",
        ),
        (
            "aten::bmm",
            &[&[8, 32, 64], &[8, 64, 16]],
            "torch.bmm(a, b)",
        ),
        (
            "aten::baddbmm",
            &[&[8, 32, 16], &[8, 32, 64], &[8, 64, 16]],
            "torch.baddbmm(c, a, b)",
        ),
        (
            "aten::scaled_dot_product_attention",
            &[&[1, 8, 128, 64], &[1, 8, 256, 64], &[1, 8, 256, 64]],
            "torch.nn.functional.scaled_dot_product_attention(q, k, v)",
        ),
        (
            "aten::_scaled_dot_product_flash_attention",
            &[&[1, 32, 128, 64], &[1, 8, 256, 64], &[1, 8, 256, 64]],
            "torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)",
        ),
    ];
    for (op, dims, call) in cases {
        let types = vec![BF16; dims.len()];
        let k = kernel(op, dims, &types);
        assert_eq!(call_of(&k).as_deref(), Some(call), "{op} {dims:?}");
        let script = torch_script(&k).unwrap_or_else(|| panic!("{op}: no script"));
        assert!(
            script.contains(&format!("    return lambda: {call}\n")),
            "{script}"
        );
        assert!(script.contains("import torch\n"));
        assert!(script.contains("torch.cuda.Event(enable_timing=True)"));
        assert!(script.contains("time.perf_counter()"));
        assert!(script.contains("--scale") && script.contains("--iters"));
        for (i, _) in dims.iter().enumerate() {
            assert!(
                script.contains(&format!("make(dims[{i}], torch.bfloat16, device)")),
                "{op}: input {i}\n{script}"
            );
        }
    }
}

#[test]
fn the_script_builds_the_recorded_shapes_and_dtypes() {
    let k = kernel(
        "aten::mm",
        &[&[32, 64], &[64, 128]],
        &["c10::Half", "c10::Half"],
    );
    let script = torch_script(&k).unwrap();
    assert!(script.contains("    a = make(dims[0], torch.float16, device)\n"));
    assert!(script.contains("    b = make(dims[1], torch.float16, device)\n"));
    // The shapes come from the record, embedded as a JSON string.
    assert!(
        script.contains(r#"\"input_dims\":[[32,64],[64,128]]"#),
        "{script}"
    );
    let k = kernel("aten::mm", &[&[32, 64], &[64, 128]], &["float", "float"]);
    assert!(torch_script(&k)
        .unwrap()
        .contains("make(dims[0], torch.float32, device)"));
}

#[test]
fn ops_without_a_mapping_say_why() {
    let k = kernel(
        "aiter::fmoe_fp4",
        &[&[32, 4096], &[8, 4096, 2048]],
        &[BF16, "unsigned char"],
    );
    assert_eq!(torch_script(&k), None);
    assert_eq!(
        torch_equivalent(&k),
        TorchEquivalent::None(
            "`aiter::fmoe_fp4` has no PyTorch op: its kernel is not reachable from torch"
                .to_string()
        )
    );
    // Shapes that are not the op's.
    let k = kernel("aten::mm", &[&[32, 64], &[65, 128]], &[BF16, BF16]);
    assert_eq!(torch_script(&k), None);
    let TorchEquivalent::None(why) = torch_equivalent(&k) else {
        panic!("mm of mismatched shapes mapped")
    };
    assert_eq!(
        why,
        "`aten::mm`'s inputs [[32, 64], [65, 128]] are not the [M,K] x [K,N] it takes"
    );
    // A dtype the plain call has no kernel for.
    let k = kernel(
        "aten::mm",
        &[&[32, 64], &[64, 128]],
        &["c10::Float8_e4m3fn", "c10::Float8_e4m3fn"],
    );
    assert_eq!(torch_script(&k), None);
    let TorchEquivalent::None(why) = torch_equivalent(&k) else {
        panic!("fp8 mm mapped")
    };
    assert!(
        why.starts_with("`aten::mm`: input 0 is `c10::Float8_e4m3fn` (fp8)"),
        "{why}"
    );
    let k = kernel("aten::mm", &[&[32, 64], &[64, 128]], &[BF16]);
    let TorchEquivalent::None(why) = torch_equivalent(&k) else {
        panic!("mm without input 1's type mapped")
    };
    assert_eq!(why, "`aten::mm`: input 1 has no recorded type");
}

#[test]
fn the_record_is_versioned_json_with_every_field() {
    let k = decode_gemm();
    let json: serde_json::Value = serde_json::from_str(&record_json(&k)).unwrap();
    let text = record_json(&k);
    assert!(text.starts_with("{\n  \"schema\": 1,"), "{text}");
    assert_eq!(json["schema"], 1);
    assert_eq!(json["op"], "aiter::gemm_a16w16");
    assert_eq!(json["ops"][0], "aten::mm");
    assert_eq!(json["input_dims"][1][0], 24576);
    assert_eq!(json["input_types"][0], BF16);
    assert_eq!(json["input_strides"], serde_json::Value::Null);
    assert_eq!(json["baseline_ns"], 52_000.0);
    assert_eq!(json["run_ns"], 61_500.0);
    assert_eq!(json["calls_per_step"], 64.0);
    assert_eq!(json["bound"]["limit"], "memory");
    assert_eq!(json["bound"]["device"], "AMD Instinct MI300X");
    assert!(json["pct_of_peak"].as_f64().unwrap() > 50.0);
    assert_eq!(json["torch_equivalent"]["call"], "torch.mm(a, b.t())");
    // Every field the docs describe, and no other.
    let doc = include_str!("../../../docs/JSON.md");
    let section = doc
        .split("## Repro record")
        .nth(1)
        .expect("docs/JSON.md has a Repro record section");
    for key in json.as_object().unwrap().keys() {
        assert!(
            section.contains(&format!("\"{key}\"")),
            "docs/JSON.md's Repro record lacks {key}"
        );
    }
}

#[test]
fn files_are_numbered_safe_and_listed() {
    let mut long = decode_gemm();
    long.kernel = format!("void {}<float>(int)", "a_very_long_kernel_name_".repeat(10));
    let mut odd = kernel("aiter::fmoe_fp4", &[&[32, 4096]], &[BF16]);
    odd.kernel = "../../etc/passwd\u{0}\n`|".to_string();
    let files = repro_files(&[decode_gemm(), odd, long]);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        &names[..3],
        [
            "01-kernel-gemm-xdl-cshuffle-v3.json",
            "01-kernel-gemm-xdl-cshuffle-v3.py",
            "02-etc-passwd-x00-n.json",
        ]
        .as_slice(),
        "{names:?}"
    );
    assert_eq!(names.len(), 6, "{names:?}");
    assert_eq!(names[5], "README.md");
    for name in &names {
        assert!(name.len() <= 80, "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'),
            "{name}"
        );
        assert!(!name.starts_with('.'), "{name}");
    }
    assert!(names[3].starts_with("03-a-very-long-kernel-name-a-very"));
    let readme = &files[5].1;
    assert!(readme.contains("`01-kernel-gemm-xdl-cshuffle-v3.py` times `torch.mm(a, b.t())`"));
    assert!(readme.contains("no script: `aiter::fmoe_fp4` has no PyTorch op"));
    assert!(readme.contains("python3 01-kernel-gemm-xdl-cshuffle-v3.py --scale 64 --iters 3"));
    assert!(!readme.contains('\u{0}'));
    // The script's usage line names its own file.
    assert!(files[1]
        .1
        .contains("Usage: python3 01-kernel-gemm-xdl-cshuffle-v3.py"));
    assert_eq!(repro_files(&[]).len(), 1);
}

/// Writes the script of the decode GEMM into a temporary directory.
fn written_script(dir: &Path) -> std::path::PathBuf {
    let files = repro_files(&[decode_gemm()]);
    let (name, script) = files
        .iter()
        .find(|(n, _)| n.ends_with(".py"))
        .expect("the decode GEMM has a script");
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    path
}

fn python_available() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_gemm_script_compiles_and_runs_where_torch_is() {
    if !python_available() {
        eprintln!("skipped: no python3 to compile the repro script with");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = written_script(dir.path());
    let out = Command::new("python3")
        .args(["-m", "py_compile"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "py_compile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let has_torch = Command::new("python3")
        .args(["-c", "import torch"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_torch {
        eprintln!("skipped running the repro script: python3 has no torch");
        return;
    }
    let out = Command::new("python3")
        .arg(&path)
        .args(["--scale", "64", "--iters", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("measured:"), "{stdout}");
    assert!(stdout.contains("baseline 52.0 µs, run 61.5 µs"), "{stdout}");
}

/// A stand-in for torch, enough for the scripts to run: every op returns a tensor-like object.
const FAKE_TORCH: &str = r#"
import contextlib
bfloat16, float16, float32, float64 = "bfloat16", "float16", "float32", "float64"
SHAPES = []
class T:
    def __init__(self, shape):
        self.shape = list(shape)
    def t(self):
        return T(self.shape[::-1])
def randn(shape, dtype=None, device=None):
    assert dtype in (bfloat16, float16, float32, float64), dtype
    assert device == "cpu", device
    SHAPES.append(list(shape))
    return T(shape)
def _op(*args, **kwargs):
    return T([1])
mm = matmul = addmm = bmm = baddbmm = _op
def no_grad():
    return contextlib.nullcontext()
class cuda:
    @staticmethod
    def is_available():
        return False
class nn:
    class functional:
        linear = staticmethod(_op)
        scaled_dot_product_attention = staticmethod(_op)
"#;

#[test]
fn every_script_runs_on_a_stand_in_torch() {
    if !python_available() {
        eprintln!("skipped: no python3 to run the repro scripts with");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("torch.py"), FAKE_TORCH).unwrap();
    let kernels = [
        decode_gemm(),
        kernel("aten::addmm", &[&[128], &[32, 64], &[64, 128]], &[BF16; 3]),
        kernel(
            "aten::_scaled_dot_product_efficient_attention",
            &[&[1, 8, 128, 64], &[1, 8, 256, 64], &[1, 8, 256, 64]],
            &["c10::Half"; 3],
        ),
    ];
    let files = repro_files(&kernels);
    let mut ran = 0;
    for (name, text) in &files {
        std::fs::write(dir.path().join(name), text).unwrap();
        if !name.ends_with(".py") {
            continue;
        }
        let out = Command::new("python3")
            .arg(name)
            .args(["--scale", "64", "--iters", "3"])
            .current_dir(dir.path())
            .env("PYTHONPATH", dir.path())
            .env("PYTHONIOENCODING", "utf-8")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("measured:") && stdout.contains("on cpu"),
            "{stdout}"
        );
        assert!(stdout.contains("baseline 52.0 µs, run 61.5 µs"), "{stdout}");
        assert!(stdout.contains("note: --scale 64"), "{stdout}");
        ran += 1;
    }
    assert_eq!(ran, 3);
    // Scaled: the decode GEMM's [32,4096] x [24576,4096] by 64, at least 1 each.
    let out = Command::new("python3")
        .arg(&files[1].0)
        .args(["--scale", "64", "--iters", "1", "--warmup", "0"])
        .current_dir(dir.path())
        .env("PYTHONPATH", dir.path())
        .env("PYTHONIOENCODING", "utf-8")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("inputs [[1, 64], [384, 64]]"), "{stdout}");
    // Bad arguments are refused.
    let out = Command::new("python3")
        .arg(&files[1].0)
        .args(["--iters", "0"])
        .current_dir(dir.path())
        .env("PYTHONPATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
