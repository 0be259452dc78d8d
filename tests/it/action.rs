//! The action's gate step, `.github/check.sh`, run with bash as action.yml runs it: the inputs
//! reach it through the `env:` of action.yml's check step, read here from action.yml itself.
//! First with a stand-in `tracegate` that records its arguments (each input becomes the
//! arguments it should, one argument per line of `args`, nothing evaluated), then with the real
//! binary on a synthetic run, picking its baseline with `baselines` + `key` + `hardware`. Last,
//! with hostile values in every input, what the runner makes of the step: its outputs read from
//! `$GITHUB_OUTPUT` and the workflow commands in its log, each parsed as the runner parses them.
#![cfg(target_os = "linux")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

const ACTION: &str = include_str!("../../action.yml");

/// The check step's environment as action.yml writes it: variable name -> input name.
fn step_env() -> BTreeMap<String, String> {
    let step = ACTION
        .split("- name: Check the run against the baseline")
        .nth(1)
        .expect("action.yml has the check step");
    let re = regex::Regex::new(r"(?m)^\s+([A-Z_]+): \$\{\{ inputs\.([a-z-]+) \}\}\s*$").unwrap();
    re.captures_iter(step)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect()
}

struct Step {
    code: i32,
    stdout: String,
    stderr: String,
    github_output: String,
    temp: PathBuf,
}

/// Runs the check step with these inputs (the others empty, as action.yml leaves an input
/// without a value when its default is ""), `tracegate` found in `bin`.
fn run_step(dir: &Path, bin: &Path, inputs: &[(&str, &str)]) -> Step {
    run_step_in(dir, bin, inputs, None, "runner-temp")
}

/// [`run_step`], with `GITHUB_WORKSPACE` set to `workspace` when given (tracegate then confines
/// every path to it and the runner's temporary directory, as in a workflow) and the runner's
/// temporary directory `dir/temp`.
fn run_step_in(
    dir: &Path,
    bin: &Path,
    inputs: &[(&str, &str)],
    workspace: Option<&Path>,
    temp: &str,
) -> Step {
    let env = step_env();
    for (name, _) in inputs {
        assert!(
            env.values().any(|i| i == name),
            "action.yml's check step does not pass input {name}"
        );
    }
    let temp = dir.join(temp);
    std::fs::create_dir_all(&temp).unwrap();
    let github_output = dir.join("github-output");
    std::fs::write(&github_output, "").unwrap();
    let mut cmd = Command::new("bash");
    for name in common::GITHUB_ENV {
        cmd.env_remove(name);
    }
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/check.sh"))
        .current_dir(dir)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_OUTPUT", &github_output);
    if let Some(workspace) = workspace {
        cmd.env("GITHUB_WORKSPACE", workspace);
    }
    for (var, input) in &env {
        let value = inputs
            .iter()
            .find(|(name, _)| name == input)
            .map_or("", |(_, v)| v);
        cmd.env(var, value);
    }
    let out = cmd.output().unwrap();
    Step {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        github_output: std::fs::read_to_string(&github_output).unwrap(),
        temp,
    }
}

/// A `tracegate` that writes its arguments, NUL-separated, to ARGS, and each of them as it is
/// on a line of stderr (as clap quotes an argument in a usage error: raw), creates the file
/// after `--verdict-out` (`--verdict-out=FILE` or `--verdict-out FILE`), and exits 1.
fn stand_in(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("tracegate");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\0' \"$@\" > '{}'\nprintf '%s\\n' \"$@\" >&2\n\
             while [ $# -gt 0 ]; do\n  case \"$1\" in\n    \
             --verdict-out=*) echo '{{}}' > \"${{1#--verdict-out=}}\" ;;\n    \
             --verdict-out) echo '{{}}' > \"$2\" ;;\n  esac\n  shift\ndone\nexit 1\n",
            dir.join("ARGS").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn every_input_becomes_its_arguments_and_nothing_is_evaluated() {
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path());
    std::fs::create_dir_all(dir.path().join("runs")).unwrap();
    std::fs::write(dir.path().join("runs/rank-0.json"), "").unwrap();
    std::fs::write(dir.path().join("runs/rank-1.json"), "").unwrap();
    let step = run_step(
        dir.path(),
        &bin,
        &[
            ("traces", "runs/rank-*.json"),
            ("baselines", "baselines dir"),
            ("key", "precision=fp4\n\nconcurrency=64\r\n"),
            ("hardware", "AMD Instinct MI300X"),
            ("rules", "rules.toml"),
            ("fail-on-improvement", "true"),
            ("comment", "off"),
            ("image", "img:1"),
            ("meta", "sglang=0.5.4"),
            (
                "args",
                "--step-gap\n500us\n--meta\nnote=a b; $(touch pwned) `touch pwned`",
            ),
        ],
    );
    assert_eq!(
        step.code, 1,
        "the exit status is tracegate's: {}",
        step.stderr
    );
    let recorded = std::fs::read(dir.path().join("ARGS")).unwrap();
    let args: Vec<String> = String::from_utf8(recorded)
        .unwrap()
        .trim_end_matches('\0')
        .split('\0')
        .map(String::from)
        .collect();
    let out = step.temp.join("tracegate");
    let expected: Vec<String> = [
        "check",
        "--baselines=baselines dir",
        "--key=precision=fp4",
        "--key=concurrency=64",
        "--hardware=AMD Instinct MI300X",
        "--rules=rules.toml",
        "--fail-on-improvement",
        "--image=img:1",
        "--meta=sglang=0.5.4",
        "--github",
        "--comment=off",
        &format!("--output={}", out.join("verdict.md").display()),
        &format!("--verdict-out={}", out.join("verdict.json").display()),
        "--step-gap",
        "500us",
        "--meta",
        "note=a b; $(touch pwned) `touch pwned`",
        "--",
        "runs/rank-0.json",
        "runs/rank-1.json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(args, expected);
    assert!(!dir.path().join("pwned").exists(), "args were evaluated");
    assert_eq!(
        runner_outputs(&step.github_output),
        Ok(vec![(
            "verdict-path".to_string(),
            out.join("verdict.json").display().to_string()
        )]),
        "{}",
        step.github_output
    );
}

#[test]
fn the_step_refuses_bad_inputs_before_running_tracegate() {
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path());
    for (inputs, says) in [
        (vec![("traces", "t")], "give baseline"),
        (
            vec![("traces", "t"), ("baseline", "a.toml"), ("baselines", "d")],
            "not both",
        ),
        (
            vec![
                ("traces", "t"),
                ("baseline", "a.toml"),
                ("fail-on-improvement", "yes"),
            ],
            "true or false",
        ),
        (
            vec![("traces", "t"), ("baseline", "a.toml"), ("name", "../x")],
            "file name",
        ),
        (
            vec![("traces", " \n "), ("baseline", "a.toml")],
            "traces is empty",
        ),
    ] {
        let step = run_step(dir.path(), &bin, &inputs);
        assert_eq!(step.code, 2, "{inputs:?}: {}", step.stderr);
        assert!(step.stderr.contains(says), "{inputs:?}: {}", step.stderr);
        assert!(
            !dir.path().join("ARGS").exists(),
            "{inputs:?} ran tracegate"
        );
    }
}

#[test]
fn baselines_key_and_hardware_pick_the_baseline_with_the_real_binary() {
    let dir = tempfile::tempdir().unwrap();
    // Two MI355X TP4 baselines that only `precision` tells apart.
    let baselines = dir.path().join("baselines");
    std::fs::create_dir(&baselines).unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml"),
    )
    .unwrap();
    std::fs::write(baselines.join("fp4.toml"), &shipped).unwrap();
    let fp8 = shipped.replace("precision = \"fp4\"", "precision = \"fp8\"");
    assert_ne!(fp8, shipped);
    std::fs::write(baselines.join("fp8.toml"), fp8).unwrap();
    let run = common::mi355x_run(None);
    let bin = assert_cmd::cargo::cargo_bin("tracegate");
    let bin = bin.parent().unwrap();
    let traces = run.display().to_string();
    let mut inputs = vec![
        ("traces", traces.as_str()),
        ("baselines", "baselines"),
        ("hardware", "AMD Instinct MI355X"),
        ("comment", "off"),
        ("name", "mi355x"),
    ];
    // Without the key, two baselines match: the step fails, exit 2, saying so.
    let ambiguous = run_step(dir.path(), bin, &inputs);
    assert_eq!(ambiguous.code, 2, "{}", ambiguous.stderr);
    assert!(
        ambiguous.stderr.contains("fp8.toml"),
        "{}",
        ambiguous.stderr
    );
    inputs.push(("key", "precision=fp4"));
    let step = run_step(dir.path(), bin, &inputs);
    assert_eq!(step.code, 0, "{}", step.stderr);
    let verdict_path = step.temp.join("tracegate/mi355x.json");
    let outputs = runner_outputs(&step.github_output).unwrap();
    assert!(
        outputs.contains(&(
            "verdict-path".to_string(),
            verdict_path.display().to_string()
        )),
        "{}",
        step.github_output
    );
    let verdict: serde_json::Value = common::load_json(&verdict_path);
    assert_eq!(verdict["status"], "pass");
    assert!(
        verdict["baseline"]["path"]
            .as_str()
            .unwrap()
            .ends_with("fp4.toml"),
        "{verdict}"
    );
    // The hardware input reached check: the report says it was asserted.
    let report = std::fs::read_to_string(step.temp.join("tracegate/mi355x.md")).unwrap();
    assert!(report.contains("asserted"), "{report}");
    // And the verdict is in the step's log.
    assert!(step.stderr.contains("✅ PASS · "), "{}", step.stderr);
}

#[test]
fn the_sweep_mode_merges_a_matrix_s_verdicts_and_fills_report_path() {
    let dir = tempfile::tempdir().unwrap();
    let verdicts = dir.path().join("verdicts");
    std::fs::create_dir(&verdicts).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("tracegate");
    // Two gate jobs' verdicts, each of its own baseline and named by its job (the action's
    // `name`), one a regression.
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml");
    for (job, inject) in [
        ("mi355x-clean", None),
        ("mi355x-slow", Some("allreduce=1.5")),
    ] {
        let baseline = dir.path().join(format!("{job}-baseline.toml"));
        std::fs::copy(&shipped, &baseline).unwrap();
        let run = common::mi355x_run(inject);
        let out = common::tracegate()
            .arg("check")
            .arg(&run)
            .arg("--baseline")
            .arg(&baseline)
            .args(["--format", "json", "--no-github", "--verdict-out"])
            .arg(verdicts.join(format!("{job}.json")))
            .output()
            .unwrap();
        assert!(out.status.code().is_some_and(|c| c <= 1));
    }
    let verdicts_input = verdicts.display().to_string();
    let inputs = [
        ("sweep", verdicts_input.as_str()),
        // The jobs' names, one of them without a verdict.
        ("expect", "mi355x-clean,mi355x-slow\nb200-crashed"),
        ("name", "profile-sweep"),
        ("comment", "off"),
    ];
    let step = run_step(dir.path(), bin.parent().unwrap(), &inputs);
    assert_eq!(step.code, 1, "{}", step.stderr);
    let outputs = runner_outputs(&step.github_output).unwrap();
    let report = step.temp.join("tracegate/profile-sweep.md");
    assert!(
        outputs.contains(&("report-path".to_string(), report.display().to_string())),
        "{}",
        step.github_output
    );
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(
        md.contains("3 configurations, 1 regressed, 1 could not be judged, 1 passed"),
        "{md}"
    );
    assert!(md.contains("b200-crashed"), "{md}");
    // A check input beside sweep is refused: the step does one thing.
    let mixed = run_step(
        dir.path(),
        bin.parent().unwrap(),
        &[("sweep", "verdicts"), ("traces", "x")],
    );
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
    assert!(
        mixed.stderr.contains("leave the check's inputs"),
        "{}",
        mixed.stderr
    );
}

/// The step outputs the runner reads from `$GITHUB_OUTPUT`, as its file command does
/// (actions/runner, `SetOutputFileCommand` on Linux): lines split at `\n`, empty lines skipped;
/// `NAME=VALUE` when the first `=` comes before any `<<`, else `NAME<<DELIMITER` and the lines up
/// to the first line equal to DELIMITER (the value without that last line break). A file the
/// runner refuses (no name, no delimiter, a delimiter never closed) is an error.
fn runner_outputs(file: &str) -> Result<Vec<(String, String)>, String> {
    // The text after the last line break is no line of its own.
    let mut lines = file.strip_suffix('\n').unwrap_or(file).split('\n');
    let mut out = Vec::new();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        let equals = line.find('=');
        let heredoc = line.find("<<");
        match (equals, heredoc) {
            (Some(e), h) if h.is_none_or(|h| e < h) => {
                let (name, value) = (&line[..e], &line[e + 1..]);
                if name.is_empty() {
                    return Err(format!("no name: {line:?}"));
                }
                out.push((name.to_string(), value.to_string()));
            }
            (_, Some(h)) => {
                let (name, delimiter) = (&line[..h], &line[h + 2..]);
                if name.is_empty() || delimiter.is_empty() {
                    return Err(format!("no name or no delimiter: {line:?}"));
                }
                let mut value: Vec<&str> = Vec::new();
                loop {
                    match lines.next() {
                        Some(l) if l == delimiter => break,
                        Some(l) => value.push(l),
                        None => return Err(format!("{delimiter:?} never closes {name}")),
                    }
                }
                out.push((name.to_string(), value.join("\n")));
            }
            _ => return Err(format!("neither NAME=VALUE nor NAME<<DELIMITER: {line:?}")),
        }
    }
    Ok(out)
}

/// A workflow command the runner would run: its name, its properties and its message.
#[derive(Debug)]
struct WorkflowCommand {
    /// Written `##[NAME]` (the older syntax), not `::NAME::`.
    old_syntax: bool,
    name: String,
    properties: String,
    message: String,
}

/// The workflow commands the runner finds in a step's log (stdout or stderr), as it reads it:
/// line by line, a line ending at `\n`, `\r` or `\r\n` (.NET's `ReadLine`); a line whose text,
/// after leading white space, is `::NAME PROPERTIES::MESSAGE`, or that holds `##[NAME
/// PROPERTIES]MESSAGE` anywhere (the older syntax); after `::stop-commands::TOKEN`, no command
/// until the line `::TOKEN::`.
fn workflow_commands(log: &str) -> Vec<WorkflowCommand> {
    let mut found = Vec::new();
    let mut stopped: Option<String> = None;
    for line in log.split(['\n', '\r']) {
        if let Some(token) = &stopped {
            if line.trim() == format!("::{token}::") {
                stopped = None;
            }
            continue;
        }
        let body = line.trim_start();
        let (old_syntax, info, message) = if let Some(rest) = body.strip_prefix("::") {
            match rest.find("::") {
                Some(end) => (false, &rest[..end], &rest[end + 2..]),
                None => continue,
            }
        } else if let Some(start) = line.find("##[") {
            let rest = &line[start + 3..];
            match rest.find(']') {
                Some(end) => (true, &rest[..end], &rest[end + 1..]),
                None => continue,
            }
        } else {
            continue;
        };
        let (name, properties) = info.split_once(' ').unwrap_or((info, ""));
        if name == "stop-commands" {
            stopped = Some(message.to_string());
        }
        found.push(WorkflowCommand {
            old_syntax,
            name: name.to_string(),
            properties: properties.to_string(),
            message: message.to_string(),
        });
    }
    found
}

/// What every hostile input below carries, at the start of the command it tries to inject.
const MARK: &str = "PWN";

/// Hostile values for every input of the step: line breaks (LF and a lone CR, which the runner
/// also reads as one), workflow commands in both syntaxes (`::add-mask::`, `::stop-commands::`,
/// `::set-output`, `##[...]`), an options-looking value (`--rules x.toml` inside traces,
/// `--rules=...` as the hardware), and `verdict=pass` after a line break. `extra` replaces or
/// adds inputs.
fn hostile_inputs<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut inputs = vec![
        (
            "traces",
            "runs/rank-*.json --rules evil.toml\n::add-mask::PWN ##[add-mask]PWN",
        ),
        ("baseline", "base\nverdict=pass\n::add-mask::PWN.toml"),
        (
            "key",
            "precision=fp4\n::add-mask::PWN\n::set-output name=verdict::pass\n##[set-output name=verdict;]pass",
        ),
        ("hardware", "--rules=evil.toml\r::add-mask::PWN"),
        ("rules", "rules.toml\n::error title=PWN::x"),
        ("fail-on-improvement", "true"),
        (
            "args",
            "--bogus\r::stop-commands::PWN\n--x##[add-mask]PWN\n::add-mask::PWN",
        ),
        ("name", "gate"),
        ("comment", "off\r::add-mask::PWN"),
        ("image", "img:1\n::add-mask::PWN"),
        ("meta", "sglang=1\n::add-mask::PWN=1\n##[add-mask]PWN=2"),
        ("github-token", "PWN\n::add-mask::PWN"),
    ];
    for (name, value) in extra {
        match inputs.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => inputs.push((name, value)),
        }
    }
    inputs
}

/// What the runner makes of `step`: no output but tracegate's own and `verdict-path` (the
/// latter only where `verdict_path` says, with that value), each once, in a file the runner
/// accepts; no workflow command in its log that an input started: no `add-mask`,
/// `set-output`, `set-env`, `add-path`, `save-state` or `echo`, no command of the older
/// syntax, a `stop-commands` only with a random token (32 hexadecimal digits), and no command
/// whose properties or message start with what an input injected.
fn assert_nothing_injected(what: &str, step: &Step, verdict_path: Option<&Path>) {
    let outputs = runner_outputs(&step.github_output)
        .unwrap_or_else(|e| panic!("{what}: the runner refuses $GITHUB_OUTPUT: {e}"));
    let mut names: Vec<&str> = outputs.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "{what}: an output twice: {outputs:?}");
    for (name, value) in &outputs {
        match name.as_str() {
            "verdict-path" => {
                assert_eq!(Some(Path::new(value)), verdict_path, "{what}: {outputs:?}")
            }
            "verdict" | "regressions" | "report-path" => {
                assert!(!value.contains(MARK), "{what}: {outputs:?}")
            }
            _ => panic!("{what}: an injected output {name:?}: {outputs:?}"),
        }
    }
    assert_eq!(
        outputs.iter().any(|(n, _)| n == "verdict-path"),
        verdict_path.is_some(),
        "{what}: {outputs:?}"
    );
    for (stream, log) in [("stdout", &step.stdout), ("stderr", &step.stderr)] {
        for c in workflow_commands(log) {
            let injected = c.old_syntax
                || matches!(
                    c.name.as_str(),
                    "add-mask" | "set-output" | "set-env" | "add-path" | "save-state" | "echo"
                )
                || c.name.contains(MARK)
                || c.properties.contains(MARK)
                || c.message.starts_with(MARK)
                || (c.name == "stop-commands"
                    && !(c.message.len() == 32
                        && c.message.chars().all(|h| h.is_ascii_hexdigit())));
            assert!(
                !injected,
                "{what}: an injected command on {stream}: {c:?}\n{log}"
            );
        }
    }
}

/// The workspace of a hostile run: two trace files that the traces input's glob matches.
fn hostile_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("runs")).unwrap();
    std::fs::write(dir.path().join("runs/rank-0.json"), "").unwrap();
    std::fs::write(dir.path().join("runs/rank-1.json"), "").unwrap();
    dir
}

#[test]
fn hostile_inputs_inject_no_output_and_no_workflow_command() {
    let real = assert_cmd::cargo::cargo_bin("tracegate");
    let real = real.parent().unwrap().to_path_buf();
    // (what, the inputs that differ from `hostile_inputs`, whether the step gets to run
    // tracegate and write verdict-path with the stand-in)
    let cases = [
        ("every input hostile", vec![], true),
        (
            "comment and args that clap accepts",
            vec![("comment", "off"), ("args", "--meta\nnote=::add-mask::PWN")],
            true,
        ),
        (
            "verdict=pass in the name input",
            vec![("name", "n\nverdict=pass\n::add-mask::PWN")],
            false,
        ),
        (
            "verdict=pass in the baseline file's name",
            vec![("name", "")],
            false,
        ),
        (
            "a directory of baselines",
            vec![
                ("baseline", ""),
                ("baselines", "dir\nverdict=pass\n::add-mask::PWN"),
            ],
            true,
        ),
        (
            "fail-on-improvement",
            vec![(
                "fail-on-improvement",
                "yes\n::add-mask::PWN\r::stop-commands::PWN",
            )],
            false,
        ),
    ];
    for (what, extra, runs) in cases {
        let inputs = hostile_inputs(&extra);
        let dir = hostile_workspace();
        let bin = stand_in(dir.path());
        let step = run_step_in(dir.path(), &bin, &inputs, Some(dir.path()), "runner-temp");
        let name = inputs.iter().find(|(n, _)| *n == "name").unwrap().1;
        let verdict = step.temp.join(format!("tracegate/{name}.json"));
        assert_eq!(
            step.code,
            if runs { 1 } else { 2 },
            "{what}: {}",
            step.stderr
        );
        assert_nothing_injected(
            &format!("{what}, stand-in"),
            &step,
            runs.then_some(verdict.as_path()),
        );
        // The real binary: clap's usage errors, the reader's and the baseline's, all through.
        let dir = hostile_workspace();
        let step = run_step_in(dir.path(), &real, &inputs, Some(dir.path()), "runner-temp");
        assert_eq!(step.code, 2, "{what}, real tracegate: {}", step.stderr);
        assert_nothing_injected(&format!("{what}, real tracegate"), &step, None);
    }
}

#[test]
fn traces_are_paths_after_a_double_dash_and_every_value_stays_one_argument() {
    let dir = hostile_workspace();
    let bin = stand_in(dir.path());
    let step = run_step_in(
        dir.path(),
        &bin,
        &hostile_inputs(&[]),
        Some(dir.path()),
        "runner-temp",
    );
    assert_eq!(step.code, 1, "{}", step.stderr);
    let recorded = std::fs::read(dir.path().join("ARGS")).unwrap();
    let args: Vec<String> = String::from_utf8(recorded)
        .unwrap()
        .trim_end_matches('\0')
        .split('\0')
        .map(String::from)
        .collect();
    let out = step.temp.join("tracegate");
    let expected: Vec<String> = [
        "check",
        "--baseline=base\nverdict=pass\n::add-mask::PWN.toml",
        "--key=precision=fp4",
        "--key=::add-mask::PWN",
        "--key=::set-output name=verdict::pass",
        "--key=##[set-output name=verdict;]pass",
        "--hardware=--rules=evil.toml\r::add-mask::PWN",
        "--rules=rules.toml\n::error title=PWN::x",
        "--fail-on-improvement",
        "--image=img:1\n::add-mask::PWN",
        "--meta=sglang=1",
        "--meta=::add-mask::PWN=1",
        "--meta=##[add-mask]PWN=2",
        "--github",
        "--comment=off\r::add-mask::PWN",
        &format!("--output={}", out.join("gate.md").display()),
        &format!("--verdict-out={}", out.join("gate.json").display()),
        "--bogus\r::stop-commands::PWN",
        "--x##[add-mask]PWN",
        "::add-mask::PWN",
        "--",
        "runs/rank-0.json",
        "runs/rank-1.json",
        "--rules",
        "evil.toml",
        "::add-mask::PWN",
        "##[add-mask]PWN",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(args, expected);
    // The stand-in printed each argument raw on stderr, as clap quotes one in a usage error: the
    // step passed them on escaped as tracegate escapes outside text (src/output.rs).
    let joiner = '\u{2060}';
    for line in [
        "--hardware=--rules=evil.toml\\r::add-mask::PWN".to_string(),
        format!("{joiner}::error title=PWN::x"),
        // Not at the start of a line: no command, left as it is.
        "--key=::add-mask::PWN".to_string(),
        format!("{joiner}::add-mask::PWN.toml"),
        format!("--key=##{joiner}[set-output name=verdict;]pass"),
        "--bogus\\r::stop-commands::PWN".to_string(),
        format!("{joiner}::add-mask::PWN"),
    ] {
        assert!(
            step.stderr.lines().any(|l| l == line),
            "{line:?} not in\n{}",
            step.stderr
        );
    }
    // verdict-path in the heredoc form, its delimiter random.
    let delimiter = |out: &str| {
        out.lines()
            .next()
            .and_then(|l| l.strip_prefix("verdict-path<<ghadelimiter_"))
            .map(String::from)
    };
    let first = delimiter(&step.github_output).expect("verdict-path<<ghadelimiter_...");
    assert_eq!(first.len(), 32, "{}", step.github_output);
    let again = run_step_in(
        dir.path(),
        &bin,
        &hostile_inputs(&[]),
        Some(dir.path()),
        "runner-temp",
    );
    assert_ne!(delimiter(&again.github_output), Some(first));
}

#[test]
fn a_glob_in_traces_expands_only_inside_the_workspace() {
    let dir = hostile_workspace();
    let bin = stand_in(dir.path());
    for traces in ["../*", "runs/../../*", "/etc/*", "/*/*/*"] {
        let step = run_step_in(
            dir.path(),
            &bin,
            &[("traces", traces), ("baseline", "b.toml")],
            Some(dir.path()),
            "runner-temp",
        );
        assert_eq!(step.code, 2, "{traces}: {}", step.stderr);
        assert!(
            step.stderr.contains("the glob"),
            "{traces}: {}",
            step.stderr
        );
        assert!(!dir.path().join("ARGS").exists(), "{traces} ran tracegate");
    }
    let absolute = format!("{}/runs/*.json", dir.path().display());
    let step = run_step_in(
        dir.path(),
        &bin,
        &[("traces", &absolute), ("baseline", "b.toml")],
        Some(dir.path()),
        "runner-temp",
    );
    assert_eq!(step.code, 1, "{}", step.stderr);
    let recorded = std::fs::read_to_string(dir.path().join("ARGS")).unwrap();
    assert!(
        recorded.ends_with(&format!(
            "--\0{0}/runs/rank-0.json\0{0}/runs/rank-1.json\0",
            dir.path().display()
        )),
        "{recorded:?}"
    );
}

#[test]
fn a_line_break_in_the_verdict_path_stays_inside_its_output() {
    // The runner's temporary directory is the runner's, but nothing in the step may let a path
    // add an output: the heredoc form carries any value.
    let dir = hostile_workspace();
    let bin = stand_in(dir.path());
    let temp = "rt\nverdict=pass\nverdict-path<<EOF";
    let step = run_step_in(
        dir.path(),
        &bin,
        &[("traces", "runs/rank-0.json"), ("baseline", "b.toml")],
        Some(dir.path()),
        temp,
    );
    assert_eq!(step.code, 1, "{}", step.stderr);
    let verdict = dir.path().join(temp).join("tracegate/b.json");
    assert!(verdict.exists());
    assert_nothing_injected("a line break in RUNNER_TEMP", &step, Some(&verdict));
}
