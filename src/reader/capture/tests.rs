use std::path::Path;

use super::{capture_batch, read_capture, CaptureKind};

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn x(cat: &str, name: &str, ts: f64, dur: f64, args: &str) -> String {
    format!(
        r#"{{"ph":"X","cat":"{cat}","name":"{name}","pid":1,"tid":5,"ts":{ts},"dur":{dur},"args":{{{args}}}}}"#
    )
}

/// A capture of one GEMM launched under aiter → matmul → mm, a memcpy, and a launch before the
/// capture began that is not part of the graph.
fn capture_text() -> String {
    let events = [
        x(
            "cuda_runtime",
            "hipLaunchKernel",
            1.0,
            1.0,
            r#""kernel":"before","correlation":1"#,
        ),
        x("cuda_runtime", "hipStreamBeginCapture", 5.0, 1.0, ""),
        x("python_function", "model.py(10): forward", 8.0, 60.0, ""),
        x("python_function", "linear.py(3): apply", 9.0, 40.0, ""),
        x(
            "cpu_op",
            "aiter::gemm_a16w16",
            10.0,
            30.0,
            r#""Input Dims":[[32,4096],[6144,4096],[]],"Input type":["c10::BFloat16","c10::BFloat16",""]"#,
        ),
        x(
            "cpu_op",
            "aten::matmul",
            11.0,
            20.0,
            r#""Input Dims":[[32,4096],[4096,6144]],"Input type":["c10::BFloat16","c10::BFloat16"]"#,
        ),
        x(
            "cpu_op",
            "aten::mm",
            12.0,
            10.0,
            r#""Input Dims":[[32,4096],[4096,6144]],"Input type":["c10::BFloat16","c10::BFloat16"]"#,
        ),
        x(
            "cuda_runtime",
            "hipLaunchKernel",
            13.0,
            2.0,
            r#""kernel":"Cijk_gemm","correlation":7,"graph node id":3"#,
        ),
        x(
            "cuda_runtime",
            "hipMemcpyAsync",
            60.0,
            1.0,
            r#""correlation":8"#,
        ),
        x("cuda_runtime", "hipStreamEndCapture", 70.0, 1.0, ""),
        x(
            "cuda_runtime",
            "hipLaunchKernel",
            80.0,
            1.0,
            r#""kernel":"after","correlation":9"#,
        ),
    ];
    format!(
        r#"{{"schemaVersion":1,"traceEvents":[{}]}}"#,
        events.join(",")
    )
}

#[test]
fn a_capture_launch_gets_its_op_the_library_op_above_and_its_python_frames() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bs_32_rank0.json", &capture_text());
    let capture = read_capture(&path).unwrap();
    let names: Vec<&str> = capture.launches.iter().map(|l| l.kernel.as_str()).collect();
    assert_eq!(names, ["Cijk_gemm", "hipMemcpyAsync"]);
    let gemm = &capture.launches[0];
    assert_eq!(gemm.kind, CaptureKind::Kernel);
    assert_eq!((gemm.correlation, gemm.graph_node), (Some(7), Some(3)));
    let op = gemm.op.as_ref().unwrap();
    assert_eq!(op.name, "aten::mm");
    assert_eq!(op.input_dims, [vec![32, 4096], vec![4096, 6144]]);
    assert_eq!(op.input_types, ["c10::BFloat16", "c10::BFloat16"]);
    let library = gemm.library_op.as_ref().unwrap();
    assert_eq!(library.name, "aiter::gemm_a16w16");
    assert_eq!(library.input_dims[1], [6144, 4096]);
    assert_eq!(
        gemm.python,
        ["model.py(10): forward", "linear.py(3): apply"]
    );
    let copy = &capture.launches[1];
    assert_eq!(copy.kind, CaptureKind::Memcpy);
    assert!(copy.op.is_none() && copy.library_op.is_none());
    assert_eq!(copy.python, ["model.py(10): forward"]);
}

#[test]
fn bad_json_in_a_capture_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = capture_text().replace(r#""name":"aten::mm""#, r#""name":aten::mm"#);
    let path = write(dir.path(), "broken.json", &text);
    let e = read_capture(&path).unwrap_err().to_string();
    assert!(e.starts_with(&path.display().to_string()), "{e}");
}

#[test]
fn a_trace_without_captured_launches_is_refused_as_no_capture() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{{"traceEvents":[{}]}}"#,
        x("cpu_op", "aten::mm", 1.0, 1.0, "")
    );
    let path = write(dir.path(), "run.json", &text);
    let e = read_capture(&path).unwrap_err().to_string();
    assert!(
        e.contains("run.json") && e.contains("not a graph capture trace"),
        "{e}"
    );
}

#[test]
fn the_batch_of_a_capture_comes_from_execution_details_before_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let named = write(dir.path(), "bs_16_rank0.json.gz", "");
    assert_eq!(capture_batch(&named), Some(16));
    write(
        dir.path(),
        "execution_details.json",
        r#"[{"file": "bs_16_rank0.json.gz", "batch_size": 64, "mode": "FULL"}]"#,
    );
    assert_eq!(capture_batch(&named), Some(64));
    let unnamed = write(dir.path(), "capture.json", "");
    assert_eq!(capture_batch(&unnamed), None);
    let not_a_batch = write(dir.path(), "abs_2_rank1_bs-8.json", "");
    assert_eq!(capture_batch(&not_a_batch), Some(8));
}

#[test]
fn a_launch_without_its_kernel_name_is_kept_under_the_runtime_call() {
    let dir = tempfile::tempdir().unwrap();
    let events = [
        x("cuda_runtime", "cudaStreamBeginCapture", 1.0, 1.0, ""),
        x(
            "cuda_driver",
            "cuLaunchKernel",
            2.0,
            1.0,
            r#""correlation":4"#,
        ),
        x("cuda_runtime", "cudaStreamGetCaptureInfo", 3.0, 1.0, ""),
        x("cuda_runtime", "cudaStreamEndCapture", 4.0, 1.0, ""),
    ];
    let text = format!(r#"{{"traceEvents":[{}]}}"#, events.join(","));
    let path = write(dir.path(), "old.json", &text);
    let capture = read_capture(&path).unwrap();
    let kept: Vec<_> = capture
        .launches
        .iter()
        .map(|l| (l.kind, l.kernel.as_str()))
        .collect();
    assert_eq!(kept, [(CaptureKind::Kernel, "cuLaunchKernel")]);
}
