//! Bounded everywhere, and confinement has one rule (issue 27, D6 D7 D8 D9 D12 D13 D14 D25):
//! special files as rules or traces are refused at once, `--max-memory` holds after reading too,
//! rename pairing of huge names is linear in their length, and in a workflow every path (a
//! `--baselines` directory's files and `synth --out` included) is judged by where it leads, with
//! a workflow without a workspace refused instead of run unconfined. The large cases are scaled
//! so that the test is quick while a quadratic or unbounded implementation still fails it (by a
//! 60 s timeout far above the linear time, and far below the quadratic one).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{self, tracegate, Out};

const BASELINE: &str = "baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml";

/// The run hostile.rs checks against [`BASELINE`] (generated once for both).
fn run() -> PathBuf {
    common::synth_run(&["--scenario", "mi355x-dsr1-fp4-tp4", "--seed", "3"])
}

fn shipped() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(BASELINE)
}

fn run_cmd(
    args: &[&std::ffi::OsStr],
    dir: Option<&Path>,
    envs: &[(&str, &std::ffi::OsStr)],
) -> Out {
    let mut cmd = tracegate();
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    for (k, v) in envs {
        cmd.env(k, v);
    }
    common::run_lossy_within(cmd.args(args), 60)
}

/// The arguments of a command, of any `AsRef<OsStr>` (text, paths).
macro_rules! args {
    ($($a:expr),* $(,)?) => { &[$(std::ffi::OsStr::new($a)),*] as &[&std::ffi::OsStr] };
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    assert!(std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success());
}

/// D7, D9: `--rules` from `/dev/zero` or a FIFO, and a FIFO or a device as a trace, are exit 2
/// at once, naming the path and saying why (no writer ever opens the FIFO: a plain open would
/// wait forever, and `/dev/zero` read to its end would grow memory without bound). A rules file
/// over the 16 MiB cap is refused too.
#[cfg(unix)]
#[test]
fn special_files_as_rules_or_traces_are_refused_at_once() {
    let run = run();
    let baseline = shipped();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rules.toml");
    mkfifo(&fifo);
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(17 << 20)
        .unwrap();
    for (rules, why) in [
        (Path::new("/dev/zero"), "not a regular file"),
        (fifo.as_path(), "not a regular file"),
        (big.as_path(), "larger than 16 MiB"),
    ] {
        for cmd in ["check", "extract", "report"] {
            let mut args: Vec<&std::ffi::OsStr> = vec![cmd.as_ref(), run.as_os_str()];
            if cmd == "check" {
                args.extend([
                    "--baseline".as_ref(),
                    baseline.as_os_str(),
                    "--no-github".as_ref(),
                ]);
            }
            args.extend(["--rules".as_ref(), rules.as_os_str()]);
            let out = run_cmd(&args, None, &[]);
            assert_eq!(
                out.code,
                Some(2),
                "{cmd} --rules {}: {}",
                rules.display(),
                out.stderr
            );
            assert!(out.stderr.contains(why), "{}", out.stderr);
            assert!(
                out.stderr.contains(&rules.display().to_string()),
                "{}",
                out.stderr
            );
        }
    }
    // A FIFO or a device given as a trace, alone or beside real traces.
    let trace_fifo = dir.path().join("rank-9.json");
    mkfifo(&trace_fifo);
    for trace in [trace_fifo.as_path(), Path::new("/dev/zero")] {
        for args in [
            vec!["inspect".as_ref(), trace.as_os_str()],
            vec!["extract".as_ref(), run.as_os_str(), trace.as_os_str()],
            vec![
                "check".as_ref(),
                trace.as_os_str(),
                "--baseline".as_ref(),
                baseline.as_os_str(),
                "--no-github".as_ref(),
            ],
        ] {
            let out = run_cmd(&args, None, &[]);
            assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
            assert!(
                out.stderr.contains(&format!(
                    "{}: cannot read: not a regular file",
                    trace.display()
                )),
                "{}",
                out.stderr
            );
        }
    }
}

/// D8: `--max-memory` holds after reading. The reader looks at the resident size every 32,768
/// events or 64 MiB; this run (one file of 30,000 kernels with 2,000-byte names, 60 MB) slips
/// between its looks, so only the check at the end of each later stage sees that the process
/// grew past 40 MiB: exit 2 naming the stage, where it used to pass.
#[test]
fn max_memory_is_checked_after_reading_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("names.json");
    let pad = "x".repeat(2000);
    let mut text = String::from("{\"traceEvents\": [\n");
    for i in 0..30_000 {
        if i > 0 {
            text.push_str(",\n");
        }
        text.push_str(&format!(
            r#"{{"ph": "X", "cat": "kernel", "name": "k{i}_{pad}", "pid": 0, "tid": 7, "ts": {}, "dur": 1, "args": {{"stream": 7}}}}"#,
            2 * i + 1
        ));
    }
    text.push_str("\n]}");
    assert!(text.len() < 64 << 20);
    std::fs::write(&path, text).unwrap();
    let unlimited = run_cmd(args!["--threads", "1", "report", &path], None, &[]);
    assert_eq!(unlimited.code, Some(0), "{}", unlimited.stderr);
    for cmd in ["report", "inspect"] {
        let out = run_cmd(
            args!["--threads", "1", "--max-memory", "40M", cmd, &path],
            None,
            &[],
        );
        assert_eq!(out.code, Some(2), "{cmd}: {}", out.stderr);
        assert!(
            out.stderr.contains("stopped after ")
                && out
                    .stderr
                    .contains("over the --max-memory limit of 40.0 MiB"),
            "{cmd}: {}",
            out.stderr
        );
        assert!(out.stderr.contains("names.json"), "{}", out.stderr);
    }
}

/// One name of the rename test: a `Cijk_` GEMM (dense_gemm) of `len` pseudo-random digits (no
/// rule's keyword) seeded by `seed`, the template argument list closed by `tail`.
fn long_name(seed: u64, len: usize, tail: &str) -> String {
    let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
    let digits: String = (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            char::from(b'0' + ((x >> 33) % 10) as u8)
        })
        .collect();
    format!("Cijk_Alik_Bljk_X<{digits}{tail}>")
}

/// D6: ten kernels of 30,000-character names renamed (one more template argument), against a
/// baseline that lists the ten old names. Every old name has the same function as every new
/// one, so all 100 pairs are compared: a character diff of two unrelated 30,000-character names
/// is quadratic (more than 150 s for the 100 pairs); the bounded similarity answers in well
/// under a second, and pairs each kernel with its own rename.
#[test]
fn renames_of_huge_names_are_paired_in_linear_time() {
    const NAMES: u64 = 10;
    const LEN: usize = 30_000;
    let run = common::synth_once(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--ranks",
        "1",
        "--decode-steps",
        "12",
        "--python-functions-per-step",
        "0",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("b.toml");
    let out = run_cmd(
        args!["baseline", "new", run.path(), "--baseline", &baseline],
        None,
        &[],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    // The baseline lists the old names, once per step each, and their time in dense_gemm's
    // (else its breakdown contradicts itself, which is exit 2: tests/it/integrity.rs).
    let written = std::fs::read_to_string(&baseline).unwrap();
    let mut in_dense = false;
    let mut toml: String = written
        .lines()
        .map(|l| {
            let line = match l.strip_prefix("ms_per_step = ") {
                Some(v) if in_dense => {
                    let ms: f64 = v.parse().unwrap();
                    format!("ms_per_step = {}", ms + 0.05 * NAMES as f64)
                }
                _ => l.to_string(),
            };
            if l.starts_with('[') {
                in_dense = l == "[breakdown.categories.dense_gemm]";
            }
            line + "\n"
        })
        .collect();
    assert!(written.contains("[breakdown.categories.dense_gemm]"));
    for i in 0..NAMES {
        toml.push_str(&format!(
            "\n[[breakdown.kernels]]\nname = \"{}\"\ncategory = \"dense_gemm\"\nms_per_step = 0.05\ncalls_per_step = 1.0\n",
            long_name(i, LEN, "")
        ));
    }
    std::fs::write(&baseline, toml).unwrap();
    // The run has the new names instead: a copy of a once-per-step GEMM under each.
    let trace = std::fs::read_dir(run.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".trace.json"))
        .unwrap();
    let once = "\"name\":\"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x256_";
    let text = std::fs::read_to_string(&trace).unwrap();
    let mut renamed = String::with_capacity(text.len() + (16 << 20));
    let mut copied = 0;
    for line in text.split_inclusive('\n') {
        if line.contains(once) && line.contains("\"cat\":\"kernel\"") {
            let start = line.find(once).unwrap() + "\"name\":\"".len();
            let end = start + line[start..].find('"').unwrap();
            for i in 0..NAMES {
                let copy = format!(
                    "{}{}{}",
                    &line[..start],
                    long_name(i, LEN, ", 2"),
                    &line[end..]
                );
                let copy = copy.trim_end();
                renamed.push_str(copy);
                renamed.push_str(if copy.ends_with(',') { "\n" } else { ",\n" });
            }
            copied += 1;
        }
        renamed.push_str(line);
    }
    assert!(copied >= 12, "{copied}");
    let renamed_dir = dir.path().join("run");
    std::fs::create_dir_all(&renamed_dir).unwrap();
    std::fs::write(renamed_dir.join(trace.file_name().unwrap()), renamed).unwrap();
    drop(text);

    let verdict = dir.path().join("verdict.json");
    let started = std::time::Instant::now();
    let out = run_cmd(
        args![
            "check",
            &renamed_dir,
            "--baseline",
            &baseline,
            "--no-github",
            "--output",
            "/dev/null",
            "--verdict-out",
            &verdict
        ],
        None,
        &[],
    );
    let took = started.elapsed();
    assert!(matches!(out.code, Some(0 | 1)), "{}", out.stderr);
    let v: Value = serde_json::from_slice(&std::fs::read(&verdict).unwrap()).unwrap();
    let pairs = v["explanation"]["renamed"].as_array().unwrap();
    assert_eq!(pairs.len(), NAMES as usize, "{took:?}");
    for pair in pairs {
        let (old, new) = (pair["old"].as_str().unwrap(), pair["new"].as_str().unwrap());
        // Each old name with its own rename: the same digits, one argument more.
        assert_eq!(format!("{}, 2>", &old[..old.len() - 1]), new);
        assert!(pair["similarity"].as_f64().unwrap() > 0.999, "{pair}");
    }
    assert!(v["explanation"]["appeared"].as_array().unwrap().is_empty());
    assert!(v["explanation"]["vanished"].as_array().unwrap().is_empty());
}

/// A workspace `ws` inside a scratch root, with a copy of the shipped baseline outside it.
struct Workspace {
    root: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("ws/baselines")).unwrap();
        std::fs::create_dir_all(root.path().join("ws/kept")).unwrap();
        std::fs::create_dir_all(root.path().join("outside")).unwrap();
        std::fs::copy(shipped(), root.path().join("outside/b.toml")).unwrap();
        std::fs::copy(shipped(), root.path().join("ws/kept/b.toml")).unwrap();
        Workspace { root }
    }

    fn ws(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    fn outside(&self) -> PathBuf {
        self.root.path().join("outside")
    }

    /// `tracegate ARGS` in the workspace, as a workflow step runs it.
    fn run(&self, args: &[&std::ffi::OsStr]) -> Out {
        let ws = self.ws();
        run_cmd(
            args,
            Some(&ws),
            &[
                ("GITHUB_ACTIONS", "true".as_ref()),
                ("GITHUB_WORKSPACE", ws.as_os_str()),
            ],
        )
    }
}

/// D14: with GITHUB_ACTIONS=true and no GITHUB_WORKSPACE, or with an empty one, confinement
/// refuses to run (exit 2, saying why) instead of letting every path through.
#[test]
fn a_workflow_without_a_workspace_is_refused_not_unconfined() {
    let run = run();
    let w = Workspace::new();
    let outside = w.outside();
    let baseline = outside.join("b.toml");
    for envs in [
        vec![("GITHUB_ACTIONS", "true")],
        vec![("GITHUB_ACTIONS", "true"), ("GITHUB_WORKSPACE", "")],
        vec![("GITHUB_WORKSPACE", "")],
    ] {
        let envs: Vec<(&str, &std::ffi::OsStr)> =
            envs.iter().map(|(k, v)| (*k, v.as_ref())).collect();
        for args in [
            args!["check", &run, "--baseline", &baseline, "--no-github"],
            args!["baseline", "update", &run, "--baseline", &baseline],
            args!["extract", &run, "--output", &outside.join("x.json")],
            args![
                "synth",
                "--scenario",
                "mi355x-dsr1-fp4-tp4",
                "--ranks",
                "1",
                "--out",
                &outside.join("synth")
            ],
        ] {
            let out = run_cmd(args, Some(&w.ws()), &envs);
            assert_eq!(out.code, Some(2), "{envs:?} {args:?}: {}", out.stderr);
            assert!(
                out.stderr.contains("GITHUB_WORKSPACE is unset")
                    || out.stderr.contains("GITHUB_WORKSPACE is empty"),
                "{}",
                out.stderr
            );
        }
    }
    // Nothing was written outside: the baseline is the shipped one, no file appeared.
    assert_eq!(
        std::fs::read(outside.join("b.toml")).unwrap(),
        std::fs::read(shipped()).unwrap()
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
}

/// D25, D12: a symlink is judged by its target. A baseline linked from inside the workspace to a
/// file inside it is read (given as --baseline or found by --baselines); one linked to a file
/// outside is refused, and the error names the symlink as the reason.
#[cfg(unix)]
#[test]
fn a_symlinked_baseline_is_judged_by_its_target() {
    use std::os::unix::fs::symlink;
    let run = run();
    let w = Workspace::new();
    let ws = w.ws();
    // `check RUN --baseline(s) VALUE --no-github` in the workspace.
    let check = |flag: &str, value: &str| w.run(args!["check", &run, flag, value, "--no-github"]);
    symlink("kept/b.toml", ws.join("in.toml")).unwrap();
    symlink(w.outside().join("b.toml"), ws.join("out.toml")).unwrap();
    let out = check("--baseline", "in.toml");
    assert!(matches!(out.code, Some(0 | 1)), "{}", out.stderr);
    assert_refused_as_a_link_out(&check("--baseline", "out.toml"), "--baseline out.toml: ");

    // Discovery: the only baseline of the directory is a link out of the workspace.
    symlink(w.outside().join("b.toml"), ws.join("baselines/link.toml")).unwrap();
    assert_refused_as_a_link_out(&check("--baselines", "baselines"), "link.toml: ");
    // The same link pointing inside is found and judged.
    std::fs::remove_file(ws.join("baselines/link.toml")).unwrap();
    symlink("../kept/b.toml", ws.join("baselines/link.toml")).unwrap();
    let out = check("--baselines", "baselines");
    assert!(matches!(out.code, Some(0 | 1)), "{}", out.stderr);
}

/// Asserts that `out` is exit 2 naming `what` as "a symlink to" the outside copy of the baseline.
fn assert_refused_as_a_link_out(out: &Out, what: &str) {
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains(&format!("{what}a symlink to "))
            && out.stderr.contains("outside/b.toml"),
        "{}",
        out.stderr
    );
}

/// D13: `synth --out` is confined like every other output: outside the workspace, or through a
/// symlink that leads out, it is refused before anything is written.
#[cfg(unix)]
#[test]
fn synth_out_is_confined() {
    let w = Workspace::new();
    let ws = w.ws();
    std::os::unix::fs::symlink(w.outside(), ws.join("link")).unwrap();
    for out_dir in [
        w.outside().join("synth"),
        PathBuf::from("../outside/synth"),
        PathBuf::from("link/synth"),
    ] {
        let out = w.run(args![
            "synth",
            "--scenario",
            "mi355x-dsr1-fp4-tp4",
            "--ranks",
            "1",
            "--out",
            &out_dir
        ]);
        assert_eq!(out.code, Some(2), "{}: {}", out_dir.display(), out.stderr);
        assert!(out.stderr.contains("--out "), "{}", out.stderr);
        assert!(
            out.stderr.contains("outside the workspace"),
            "{}",
            out.stderr
        );
    }
    assert!(!w.outside().join("synth").exists());
}

/// Issue 39: a FIFO as `GITHUB_STEP_SUMMARY` or `GITHUB_OUTPUT` (no reader ever opens it) never
/// holds the job: each is a warning naming it, and the verdict's exit status stands; a FIFO as
/// `--output` or `--verdict-out` is exit 2 at once, naming the flag, before any trace is read.
#[cfg(unix)]
#[test]
fn a_fifo_as_step_summary_or_output_path_never_blocks() {
    let run = run();
    let baseline = shipped();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("summary.md");
    mkfifo(&fifo);
    let args = args![
        "check",
        &run,
        "--baseline",
        &baseline,
        "--github",
        "--comment",
        "off"
    ];
    let envs: &[(&str, &std::ffi::OsStr)] = &[
        ("GITHUB_STEP_SUMMARY", fifo.as_os_str()),
        ("GITHUB_OUTPUT", fifo.as_os_str()),
    ];
    let out = run_cmd(args, Some(Path::new(env!("CARGO_MANIFEST_DIR"))), envs);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("summary.md") && out.stderr.contains("not a regular file"),
        "{}",
        out.stderr
    );
    for flag in ["--output", "--verdict-out"] {
        let args = args![
            "check",
            &run,
            "--baseline",
            &baseline,
            "--no-github",
            flag,
            &fifo
        ];
        let out = run_cmd(args, None, &[]);
        assert_eq!(out.code, Some(2), "{flag}: {}", out.stderr);
        assert!(
            out.stderr.contains(flag) && out.stderr.contains("not a regular file"),
            "{}",
            out.stderr
        );
    }
}

/// Issue 39: `[history]` is capped on read as on write: a history edited past its `max_runs`
/// (here 1,200 runs, over the 1,000 any bound allows, the oldest far off) is read as its last
/// `max_runs` runs, so `check` learns its between-run spread from those alone (and costs what
/// they cost: `bench/history.sh`).
#[test]
fn a_history_past_its_bound_is_read_as_its_last_max_runs_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = std::fs::read_to_string(shipped()).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let step = table["metrics"]["decode_step_ms"]["value"]
        .as_float()
        .unwrap();
    text.push_str("\n[history]\nmax_runs = 5\n");
    for i in 0..1200 {
        let v = if i < 1195 {
            10.0 * step
        } else {
            step * (1.0 + 0.001 * f64::from(i - 1195))
        };
        text.push_str(&format!(
            "\n[[history.runs]]\ndate = \"2026-12-07\"\nvalues = {{ decode_step_ms = {v} }}\n"
        ));
    }
    let baseline = dir.path().join("long-history.toml");
    std::fs::write(&baseline, text).unwrap();
    let out = run_cmd(
        args![
            "check",
            &run(),
            "--baseline",
            &baseline,
            "--format",
            "json",
            "--no-github"
        ],
        None,
        &[],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let note = v["calibration"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["metric"] == "decode_step_ms")
        .expect("a history note on decode_step_ms");
    assert_eq!(note["history_runs"], 5, "{note}");
}

#[test]
fn a_sweep_of_five_thousand_verdicts_is_merged_in_linear_time() {
    // Before: each verdict was paired with those merged so far (a path resolved per pair) and the
    // comment's length recounted per part: 5,000 verdicts took 85 s. Now one pass each.
    let dir = tempfile::tempdir().unwrap();
    let verdicts = dir.path().join("verdicts");
    std::fs::create_dir(&verdicts).unwrap();
    for i in 0..5_000 {
        let verdict = serde_json::json!({
            "schema_version": 2,
            "status": "pass",
            "exit_code": 0,
            "summary": "PASS",
            "baseline": {"path": format!("baselines/config-{i:05}.toml"), "meta": {"hardware": "NVIDIA H200"}},
            "metrics": [{
                "name": "decode_step_ms", "unit": "ms", "gated": true, "baseline": 20.0,
                "current": 20.1, "change": 0.1, "change_pct": 0.5, "verdict": "ok"
            }],
        });
        std::fs::write(
            verdicts.join(format!("config-{i:05}.json")),
            verdict.to_string(),
        )
        .unwrap();
    }
    let out = common::run_lossy_within(
        common::tracegate()
            .arg("sweep")
            .arg(&verdicts)
            .args(["--format", "json"]),
        20,
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let sweep: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(sweep["configurations"].as_array().unwrap().len(), 5_000);
}
