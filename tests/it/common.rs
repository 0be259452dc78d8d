//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use assert_cmd::Command;

/// The binary, with the GitHub Actions environment removed so that a test run inside Actions
/// neither writes annotations or a job summary nor comments (GITHUB_ACTIONS=true turns
/// `check --github` on); tests that want it set it themselves.
pub fn tracegate() -> Command {
    let mut cmd = Command::cargo_bin("tracegate").expect("binary built");
    for name in GITHUB_ENV {
        cmd.env_remove(name);
    }
    cmd
}

/// This test process's own directory `PREFIX-PID` in the target's scratch space (nextest runs
/// tests in processes side by side). The first call for a prefix removes the ones of processes
/// that have ended: every run of the suite would otherwise leave gigabytes of synth runs behind.
pub fn process_dir(prefix: &str) -> PathBuf {
    static SWEPT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let mut swept = SWEPT.lock().unwrap();
    // Whether a process still runs is read from /proc: where there is none, nothing is removed.
    if !swept.iter().any(|p| p == prefix) && Path::new("/proc/self").exists() {
        swept.push(prefix.to_string());
        for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let pid = name.to_str().and_then(|n| {
                n.strip_prefix(prefix)?
                    .strip_prefix('-')?
                    .parse::<u32>()
                    .ok()
            });
            if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    root.join(format!("{prefix}-{}", std::process::id()))
}

/// The gzip level the tests' synth runs are written at: the traces are those of the default
/// level, and deflate is most of the time synth takes.
const SYNTH_GZIP_LEVEL: &str = "1";

/// How a finished command ended and what it wrote.
pub struct Out {
    /// The exit status; `None` when a signal (a timeout's kill) ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// A finished command's output; its stdout and stderr must be UTF-8.
    pub fn of(out: std::process::Output) -> Out {
        Out {
            code: out.status.code(),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }

    /// As [`Out::of`], invalid UTF-8 replaced (the output of hostile input).
    pub fn lossy(out: std::process::Output) -> Out {
        Out {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs `cmd` to its end (stdout and stderr UTF-8), whatever its status.
pub fn run(cmd: &mut Command) -> Out {
    Out::of(cmd.output().expect("the command runs"))
}

/// Runs `cmd`, which must succeed: a failure panics with its status and stderr.
pub fn run_ok(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().expect("the command runs");
    succeeded(&*cmd, out)
}

/// As [`run_ok`], for a command that is not the binary (a script, a shell with limits).
pub fn run_std_ok(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().expect("the command runs");
    succeeded(&*cmd, out)
}

/// The output of `what`, which must have succeeded: a failure panics with its status and stderr.
pub fn succeeded(what: impl std::fmt::Debug, out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{what:?}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `tracegate synth`, writing gzip level [`SYNTH_GZIP_LEVEL`].
pub fn synth_cmd() -> Command {
    let mut cmd = tracegate();
    cmd.args(["synth", "--gzip-level", SYNTH_GZIP_LEVEL]);
    cmd
}

pub const GITHUB_ENV: &[&str] = &[
    "GITHUB_ACTIONS",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_OUTPUT",
    "GITHUB_EVENT_PATH",
    "GITHUB_REPOSITORY",
    "GITHUB_REF",
    "GITHUB_TOKEN",
    "GITHUB_API_URL",
    "GITHUB_SERVER_URL",
    "GITHUB_RUN_ID",
    "GITHUB_WORKSPACE",
    "RUNNER_TEMP",
    "TRACEGATE_MAX_MEMORY",
];

/// A run written by `tracegate synth ARGS --out DIR`, generated once per test process for each
/// distinct `args` and shared by every test that asks for it. Tests must not change it: copy it
/// first. Runs of different arguments are generated in parallel.
pub fn synth_run(args: &[&str]) -> PathBuf {
    type Slot = Arc<OnceLock<PathBuf>>;
    static RUNS: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    let key = args.join(" ");
    let slot = RUNS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap()
        .entry(key.clone())
        .or_default()
        .clone();
    slot.get_or_init(|| {
        let name: String = key
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let dir = process_dir("synth").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        write_synth(SYNTH_GZIP_LEVEL, args, &dir);
        dir
    })
    .clone()
}

/// `tracegate synth --gzip-level LEVEL ARGS --out DIR`, which must succeed.
fn write_synth(level: &str, args: &[&str], dir: &Path) {
    run_ok(
        tracegate()
            .args(["synth", "--gzip-level", level])
            .args(args)
            .arg("--out")
            .arg(dir),
    );
}

/// A run written by `tracegate synth ARGS` for one test to read once, as plain JSON (three times
/// quicker to write than gzip level 1, and quicker to read), removed when the guard drops. The
/// JSON is that of `synth_run` with the same arguments.
pub fn synth_once(args: &[&str]) -> tempfile::TempDir {
    let root = process_dir("synth-once");
    std::fs::create_dir_all(&root).unwrap();
    let dir = tempfile::tempdir_in(root).unwrap();
    write_synth("none", args, dir.path());
    dir
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/fixtures")
        .join(name)
}

/// `../shared/traces` beside the checkout, or `TRACEGATE_SHARED_TRACES`. Only the tests marked
/// `#[ignore = "needs ../shared/traces: cargo test -- --include-ignored"]` call it, so it panics
/// when neither exists: a test asked to run on the real traces never passes without them.
pub fn shared_traces() -> PathBuf {
    let dir = std::env::var_os("TRACEGATE_SHARED_TRACES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces"));
    assert!(
        dir.is_dir(),
        "real traces not found at {} (set TRACEGATE_SHARED_TRACES); without them, run the \
         suite without --include-ignored and these tests are listed as ignored",
        dir.display()
    );
    dir
}

/// The whole JSON of a (possibly gzipped) trace, parsed the slow, independent way.
pub fn load_json(path: &Path) -> serde_json::Value {
    let raw = std::fs::read(path).unwrap();
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::MultiGzDecoder::new(&raw[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(raw).unwrap()
    };
    serde_json::from_str(&text).unwrap()
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// Counts computed from the full DOM, independently of tracegate's reader.
#[derive(Debug, PartialEq)]
pub struct IndependentCounts {
    pub kernels: u64,
    pub memcpys: u64,
    pub cpu_ops: u64,
    pub cpu_ops_with_dims: u64,
    pub launches_with_correlation: u64,
    pub graph_launches: u64,
    pub streams: Vec<u64>,
}

pub fn independent_counts(trace: &serde_json::Value) -> IndependentCounts {
    let mut c = IndependentCounts {
        kernels: 0,
        memcpys: 0,
        cpu_ops: 0,
        cpu_ops_with_dims: 0,
        launches_with_correlation: 0,
        graph_launches: 0,
        streams: Vec::new(),
    };
    for e in trace["traceEvents"].as_array().unwrap() {
        if e["ph"] != "X" {
            continue;
        }
        let cat = e["cat"].as_str().unwrap_or("");
        match cat {
            "kernel" => c.kernels += 1,
            "gpu_memcpy" => c.memcpys += 1,
            "cpu_op" => {
                c.cpu_ops += 1;
                let dims = e["args"]["Input Dims"].to_string();
                if e["args"].get("Input Dims").is_some()
                    && dims.chars().any(|ch| ch.is_ascii_digit())
                {
                    c.cpu_ops_with_dims += 1;
                }
            }
            "cuda_runtime" | "cuda_driver" if e["args"].get("correlation").is_some() => {
                c.launches_with_correlation += 1;
                let name = e["name"].as_str().unwrap_or("");
                if name == "cudaGraphLaunch" || name == "hipGraphLaunch" {
                    c.graph_launches += 1;
                }
            }
            _ => {}
        }
        if matches!(cat, "kernel" | "gpu_memcpy" | "gpu_memset") {
            let s = e["args"]["stream"]
                .as_u64()
                .or_else(|| e["tid"].as_u64())
                .unwrap();
            if !c.streams.contains(&s) {
                c.streams.push(s);
            }
        }
    }
    c.streams.sort();
    c
}

/// The same counts from `tracegate inspect --format json` for one rank.
pub fn inspected_counts(rank: &serde_json::Value) -> IndependentCounts {
    let mut streams: Vec<u64> = rank["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stream"].as_u64().unwrap())
        .collect();
    streams.sort();
    IndependentCounts {
        kernels: rank["kernels"].as_u64().unwrap(),
        memcpys: rank["memcpys"].as_u64().unwrap(),
        cpu_ops: rank["cpu_ops"].as_u64().unwrap(),
        cpu_ops_with_dims: rank["input_dims"]["with_dims"].as_u64().unwrap(),
        launches_with_correlation: rank["runtime_launches"].as_u64().unwrap(),
        graph_launches: rank["graph_launches"]["launches"].as_u64().unwrap(),
        streams,
    }
}

/// The entry of the metric `name` in a verdict's JSON, which must have one.
pub fn verdict_metric<'a>(verdict: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    verdict["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} in the verdict"))
}

/// `tracegate extract PATH --format json`, run to its end whatever its status.
pub fn extract_json_output(path: &Path) -> std::process::Output {
    tracegate()
        .arg("extract")
        .arg(path)
        .args(["--format", "json"])
        .output()
        .unwrap()
}

/// Asserts a command's exit status, showing its stderr when it differs.
pub fn assert_exit(out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Asserts that `out` exited with `code` and said `says` on stderr, showing its stderr if not.
#[track_caller]
pub fn assert_exit_saying(out: &Out, code: i32, says: &str) {
    assert_eq!(out.code, Some(code), "{}", out.stderr);
    assert!(out.stderr.contains(says), "{}", out.stderr);
}

/// The stderr (invalid UTF-8 replaced) of a command that must have exited with `code`.
#[track_caller]
pub fn stderr_of_exit(out: &std::process::Output, code: i32) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    stderr
}

pub fn inspect_json(paths: &[&Path]) -> serde_json::Value {
    let out = run_ok(
        tracegate()
            .arg("inspect")
            .args(paths)
            .args(["--format", "json"]),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The shipped MI355X baseline (relative to the crate root) that most `check` tests judge by.
pub const MI355X_BASELINE: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";

/// `synth` arguments of a run of [`MI355X_BASELINE`]'s scenario: seed 3, no Python functions.
pub const MI355X_RUN: &[&str] = &[
    "--scenario",
    "mi355x-dsr1-fp4-tp4",
    "--seed",
    "3",
    "--python-functions-per-step",
    "0",
];

/// The shared [`MI355X_RUN`] with this injection ([`synth_run`]).
pub fn mi355x_run(inject: Option<&str>) -> PathBuf {
    let mut args = MI355X_RUN.to_vec();
    if let Some(spec) = inject {
        args.extend(["--inject", spec]);
    }
    synth_run(&args)
}

/// The shared MI355X run whose MoE GEMM kernel is renamed and 10% slower ([`synth_run`]).
pub fn renamed_moe_run() -> PathBuf {
    synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--python-functions-per-step",
        "0",
        "--inject",
        "rename-moe",
        "--inject",
        "moe=1.1",
    ])
}

/// `tracegate check RUN_DIR --baseline MI355X_BASELINE` (its absolute path), to add to.
pub fn check_mi355x(run_dir: &Path) -> Command {
    let mut cmd = tracegate();
    cmd.arg("check")
        .arg(run_dir)
        .arg("--baseline")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(MI355X_BASELINE));
    cmd
}

/// `tracegate check RUN_DIR --baseline MI355X_BASELINE ARGS...`: [`check_against`].
pub fn check_in_root(run_dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Out {
    check_against(run_dir, MI355X_BASELINE, args, envs)
}

/// `tracegate check RUN_DIR --baseline BASELINE ARGS...` from the crate root (the baseline's
/// path in the output relative and stable), with `envs` set.
pub fn check_against(run_dir: &Path, baseline: &str, args: &[&str], envs: &[(&str, &str)]) -> Out {
    let mut cmd = tracegate();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("check")
        .arg(run_dir)
        .args(["--baseline", baseline])
        .args(args);
    // A workflow always has a workspace (without one, confinement refuses to run).
    if envs.iter().any(|(k, _)| *k == "GITHUB_ACTIONS") {
        cmd.env("GITHUB_WORKSPACE", env!("CARGO_MANIFEST_DIR"));
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

/// `check --github` of a run against the mock GitHub API at `api`, commenting on acme/infer#7
/// with `token`.
pub fn check_commenting(run: &Path, api: &str, token: &str, extra: &[&str]) -> Out {
    let mut args = vec![
        "--github",
        "--pr",
        "7",
        "--github-api",
        api,
        "--output",
        "/dev/null",
    ];
    args.extend_from_slice(extra);
    check_in_root(
        run,
        &args,
        &[("GITHUB_REPOSITORY", "acme/infer"), ("GITHUB_TOKEN", token)],
    )
}

/// Runs `cmd`, killed after `seconds`, to its end whatever its status, invalid UTF-8 in its
/// output replaced (the output of hostile input).
pub fn run_lossy_within(cmd: &mut Command, seconds: u64) -> Out {
    let limit = std::time::Duration::from_secs(seconds);
    Out::lossy(cmd.timeout(limit).output().expect("the command runs"))
}

/// `check PATHS --baseline BASELINE EXTRA...`, killed after two minutes: exit code, stdout and
/// stderr (invalid UTF-8 replaced).
pub fn check_paths(
    paths: &[&Path],
    baseline: &Path,
    extra: &[&str],
) -> (Option<i32>, String, String) {
    let mut cmd = tracegate();
    cmd.arg("check")
        .args(paths)
        .arg("--baseline")
        .arg(baseline)
        .args(extra);
    let out = run_lossy_within(&mut cmd, 120);
    (out.code, out.stdout, out.stderr)
}

/// [`MI355X_BASELINE`] with each line passed through `edit`, written to `dir/edited.toml`.
pub fn edited_baseline(dir: &Path, mut edit: impl FnMut(&str) -> String) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(MI355X_BASELINE))
        .unwrap();
    let edited: String = text.lines().map(|l| edit(l) + "\n").collect();
    let path = dir.join("edited.toml");
    std::fs::write(&path, edited).unwrap();
    path
}

/// [`edited_baseline`] with every line that starts with `prefix` replaced by `line`.
pub fn baseline_with_line(dir: &Path, prefix: &str, line: &str) -> PathBuf {
    edited_baseline(dir, |l| {
        if l.starts_with(prefix) {
            line.to_string()
        } else {
            l.to_string()
        }
    })
}

/// `tracegate COMMAND... RUN --baseline BASELINE EXTRA...`.
pub fn with_run_and_baseline(
    command: &[&str],
    run: &Path,
    baseline: &Path,
    extra: &[&str],
) -> std::process::Output {
    tracegate()
        .args(command)
        .arg(run)
        .arg("--baseline")
        .arg(baseline)
        .args(extra)
        .output()
        .unwrap()
}

/// `tracegate baseline new RUN --baseline BASELINE EXTRA...`.
pub fn baseline_new(run: &Path, baseline: &Path, extra: &[&str]) -> std::process::Output {
    with_run_and_baseline(&["baseline", "new"], run, baseline, extra)
}

/// `tracegate check RUN --baseline BASELINE EXTRA...`.
pub fn check_with(run: &Path, baseline: &Path, extra: &[&str]) -> std::process::Output {
    with_run_and_baseline(&["check"], run, baseline, extra)
}

/// `tracegate check RUN --baseline BASELINE --repro DIR`, its output whatever the exit.
pub fn check_with_repro(run: &Path, baseline: &Path, repro: &Path) -> std::process::Output {
    tracegate()
        .arg("check")
        .arg(run)
        .arg("--baseline")
        .arg(baseline)
        .arg("--repro")
        .arg(repro)
        .output()
        .unwrap()
}
