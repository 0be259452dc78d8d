//! What PyTorch 2.12–2.14 (Kineto) and vLLM write, as they write it: crafted files of the
//! shapes the producers' sources print, read through the whole reader (serial and parallel).

use std::io::Write;
use std::path::PathBuf;

use super::model::GpuKind;
use super::{read_file_parallel_only, read_file_with_threads, RankTrace, ReadError};

/// A Kineto file as `output_json.cpp` prints it: metadata keys first, the events, then the log
/// buckets one per line (quotes inside their strings unescaped) and `traceName` last.
fn kineto_file(events: &[&str], buckets: &str) -> String {
    format!(
        r#"
  {{
    "schemaVersion": 1,
    "deviceProperties": [
      {{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150754820096}}
    ],
      "vllm_version": "0.16.1",
      "host_name": "node-a7",
      "PT_PROFILER_JOB_NAME": "decode-bench",
      "PT_PROFILER_VERSION": 3,
      "PT_PROFILER_ATTEMPT_INDEX": 0,
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1765000000000000000,
  "traceEvents": [{}
  {{
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": 900.000
  }}
  ],{buckets}
  "traceName": "/tmp/worker_dp0_pp0_tp1_dcp0_ep1_rank1.1765000000.pt.trace.json"
}}"#,
        events
            .iter()
            .map(|e| format!("\n  {e},"))
            .collect::<String>()
    )
}

const KERNEL: &str = r#"{
    "ph": "X", "cat": "kernel", "name": "nvjet_tst_64x8_64x16_4x1_v_bz_TNT", "pid": 0, "tid": 7,
    "ts": 100.000, "dur": 8.500,
    "args": {
      "External id": 12, "device": 0, "stream": 7, "correlation": 40, "grid": [132, 1, 1], "block": [384, 1, 1]
    }
  }"#;

/// Unescaped quotes inside the strings, as Kineto before pytorch/kineto#1459 wrote them.
const BAD_WARNING: &str = r#"
      "WARNING": ["CUPTI: "cuptiActivityEnableDomain" failed for "ncclKernel_AllReduce"", "Ignored "quoted" thing"],
      "ERROR": ["a valid error line"],"#;

fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    (dir, path)
}

const NAME: &str = "worker_dp0_pp0_tp1_dcp0_ep1_rank1.1765000000.pt.trace.json";

/// Reads `text` in one pass and in parallel chunks of 64 bytes: where the parallel pass gives a
/// result, both must agree.
fn read_both(text: &str) -> Result<Vec<RankTrace>, ReadError> {
    let (_dir, path) = write(NAME, text);
    let serial = read_file_with_threads(&path, 1);
    match (&serial, read_file_parallel_only(&path, 4, 64)) {
        (_, Ok(None)) => {}
        (Ok(a), Ok(Some(b))) => assert_eq!(a, &b, "serial and parallel reads differ"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("serial {a:?} but parallel {b:?}"),
    }
    serial
}

#[test]
fn a_warning_array_with_unescaped_quotes_is_skipped_and_said() {
    let traces = read_both(&kineto_file(&[KERNEL], BAD_WARNING)).unwrap();
    assert_eq!(traces.len(), 1);
    let t = &traces[0];
    assert_eq!(t.gpu.len(), 1);
    assert_eq!(t.stats.unreadable_log_buckets, vec!["WARNING".to_string()]);
    // vLLM's worker name gives the rank.
    assert_eq!(t.rank.index, 1);
}

#[test]
fn valid_log_buckets_on_one_line_or_many_say_nothing() {
    let one_line = "\n      \"WARNING\": [\"plain\", \"also \\\"escaped\\\"\"],";
    let many = "\n  \"WARNING\": [\n    \"a\",\n    \"b\"\n  ],";
    for buckets in [one_line, many] {
        let traces = read_both(&kineto_file(&[KERNEL], buckets)).unwrap();
        assert!(
            traces[0].stats.unreadable_log_buckets.is_empty(),
            "{buckets}"
        );
    }
}

#[test]
fn a_file_cut_at_any_byte_is_still_an_error() {
    let text = kineto_file(&[KERNEL], BAD_WARNING);
    let whole = text.trim_end().len();
    let events = text.find("\"traceEvents\"").unwrap();
    for cut in (events..whole).step_by(3).chain([whole - 1]) {
        let result = read_both(&text[..cut]);
        assert!(result.is_err(), "cut at byte {cut} of {whole} was read");
    }
}

#[test]
fn a_log_bucket_that_is_not_closed_on_its_line_is_an_error() {
    let broken = "\n      \"WARNING\": [\"a\" \"b\",\n      \"ERROR\": [],";
    let e = read_both(&kineto_file(&[KERNEL], broken)).unwrap_err();
    assert!(e.to_string().contains(NAME), "{e}");
}

#[test]
fn producer_keys_become_the_run_s_identity() {
    let traces = read_both(&kineto_file(&[KERNEL], "")).unwrap();
    let p = &traces[0].producer;
    assert_eq!(p.get("vllm").map(String::as_str), Some("0.16.1"));
    assert_eq!(p.get("host").map(String::as_str), Some("node-a7"));
    assert_eq!(p.get("job").map(String::as_str), Some("decode-bench"));
    assert_eq!(p.get("job_version").map(String::as_str), Some("3"));
    assert_eq!(p.get("job_attempt").map(String::as_str), Some("0"));
}

#[test]
fn ids_past_i64_link_kernels_to_their_launch() {
    // pytorch/kineto#1499: correlation and external ids may exceed i64.
    let big = 9_223_372_036_854_775_900u64;
    let kernel = KERNEL
        .replace("\"correlation\": 40", &format!("\"correlation\": {big}"))
        .replace(
            "\"External id\": 12",
            &format!("\"External id\": {}", big + 1),
        );
    let launch = format!(
        r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9,
    "ts": 95.000, "dur": 4.000, "args": {{"External id": {}, "correlation": {big}}}}}"#,
        big + 1
    );
    let traces = read_both(&kineto_file(&[&launch, &kernel], "")).unwrap();
    let t = &traces[0];
    assert_eq!(t.gpu[0].correlation(), Some(big));
    assert_eq!(t.gpu[0].external_id(), Some(big + 1));
    assert_eq!(t.launches[0].correlation, big);
}

#[test]
fn sync_pseudo_streams_are_not_streams() {
    // pytorch/kineto#1356: stream syncs on `tid = stream + 1000000`, named "stream 7 (sync)".
    let name = r#"{"name": "thread_name", "ph": "M", "ts": 0.000, "pid": 0, "tid": 1000007,
    "args": {"name": "stream 7 (sync)"}}"#;
    let sync = r#"{"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 1000007,
    "ts": 110.000, "dur": 3.000, "args": {"cuda_sync_kind": "stream_synchronize", "stream": 7, "device": 0}}"#;
    let traces = read_both(&kineto_file(&[name, KERNEL, sync], "")).unwrap();
    let t = &traces[0];
    assert_eq!(t.gpu.len(), 1);
    assert!(t.gpu.iter().all(|a| a.stream() == 7));
}

#[test]
fn rocm_streams_keep_their_identity_across_the_tid_remap() {
    // pytorch/kineto#1424/#1425: `tid` is the logical stream and `hsa_queue` an arg; before,
    // `tid` was not the stream. The stream is `args.stream` where written, else `tid`, never
    // the HSA queue.
    let before = r#"{"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk", "pid": 2, "tid": 0,
    "ts": 100.000, "dur": 5.000, "args": {"device": 2, "stream": 3, "correlation": 1, "kind": "Dispatch Kernel"}}"#;
    let after = r#"{"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk", "pid": 2, "tid": 3,
    "ts": 200.000, "dur": 5.000, "args": {"device": 2, "stream": 3, "hsa_queue": 139872401, "correlation": 2, "kind": "Dispatch Kernel"}}"#;
    let no_stream_arg = r#"{"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk", "pid": 2, "tid": 3,
    "ts": 300.000, "dur": 5.000, "args": {"device": 2, "hsa_queue": 139872401, "correlation": 3}}"#;
    let traces = read_both(&kineto_file(&[before, after, no_stream_arg], "")).unwrap();
    let t = &traces[0];
    assert_eq!(t.gpu.len(), 3);
    assert!(t.gpu.iter().all(|a| a.kind() == GpuKind::Kernel));
    assert_eq!(
        t.gpu.iter().map(|a| a.stream()).collect::<Vec<_>>(),
        vec![3, 3, 3]
    );
}

#[test]
fn collectives_carry_their_process_group_and_sequence_number() {
    // pytorch/kineto#1296/#1300: NCCL kernels under `record_param_comms` carry both.
    let nccl = r#"{
    "ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 116,
    "ts": 120.000, "dur": 11.000,
    "args": {
      "External id": 30, "device": 0, "stream": 116, "correlation": 41, "Collective name": "allreduce", "In msg nelems": 7168, "Out msg nelems": 7168, "Group size": 8, "dtype": "BFloat16", "Process Group Name": "0", "Process Group Description": "default_pg", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "Seq": 4711
    }
  }"#;
    let traces = read_both(&kineto_file(&[KERNEL, nccl], "")).unwrap();
    let t = &traces[0];
    assert_eq!(t.gpu.len(), 2);
    assert_eq!(t.collective_key(&t.gpu[0]), None);
    assert_eq!(t.collective_key(&t.gpu[1]), Some(("0", 4711)));
}

#[test]
fn a_kernel_is_a_collective_when_c10d_says_so_not_when_its_name_does() {
    use crate::taxonomy::{Category, Collective, Taxonomy};
    // Inductor fused an op called all_reduce into a pointwise kernel: no collective. A custom
    // kernel whose name says nothing, launched under `record_param_comms`: the collective c10d
    // names on it (as Kineto copies it from the CPU op, tracelens/b200's `_allgather_base`).
    let fused = r#"{"ph": "X", "cat": "kernel", "name": "triton_poi_fused_all_reduce_copy_5", "pid": 0, "tid": 7,
    "ts": 140.000, "dur": 2.000, "args": {"device": 0, "stream": 7, "correlation": 50}}"#;
    let custom = r#"{"ph": "X", "cat": "kernel", "name": "my_lib::fused_exchange_kernel<8>", "pid": 0, "tid": 7,
    "ts": 150.000, "dur": 9.000, "args": {"device": 0, "stream": 7, "correlation": 51, "Collective name": "_allgather_base", "dtype": "BFloat16", "Group size": 8}}"#;
    let traces = read_both(&kineto_file(&[KERNEL, fused, custom], "")).unwrap();
    let t = &traces[0];
    let classes = Taxonomy::builtin().classify_trace(t);
    let class = |i: usize| classes.of(&t.gpu[i]).clone();
    assert_eq!(class(1).category, Category::Elementwise);
    assert_eq!(class(2).category, Category::Comm);
    assert_eq!(class(2).collective, Some(Collective::Allgather));
    assert_eq!(class(0).category, Category::DenseGemm);
}
