//! Output of untrusted input (issue 27: D10, D11, D15, D16, D17, D20, D22, D26, D27): names from
//! a pull request's traces, image strings and file names reach neither the Actions runner's
//! command channel nor a terminal raw, cannot hijack or fake the sticky comment, and a failed
//! write never changes the exit status.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{
    assert_exit_saying, check_in_root, synth_once, tracegate, Out, GITHUB_ENV,
    MI355X_BASELINE as BASELINE, MI355X_RUN,
};

/// A kernel of the baseline's breakdown that the hostile run renames.
const VICTIM: &str = "_fused_qk_rope_cat_and_cache_mla_kernel";
/// The injected kernel name (as text, not JSON): a newline, a forged error annotation, a
/// `stop-commands` that would silence the real annotations after it, ESC and BEL.
const EVIL: &str = "evil\n::error title=PWNED::injected\n::stop-commands::tok\x1b[31m\x07";
/// [`EVIL`] as every output must show it.
const EVIL_SHOWN: &str = r"evil\n::error title=PWNED::injected\n::stop-commands::tok\x1b[31m\x07";

/// A regressed run (allreduce 1.5x slower) of the baseline's scenario in which every rank's
/// [`VICTIM`] kernel is renamed to [`EVIL`]: the name appears in the kernel diff and the
/// kernel table. Made once per test binary.
fn hostile_run() -> &'static Path {
    static RUN: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, dir) = RUN.get_or_init(|| {
        let guard = synth_once(&[MI355X_RUN, &["--inject", "allreduce=1.5"]].concat());
        let evil_json = serde_json::to_string(EVIL).unwrap();
        let mut renamed = 0;
        for entry in std::fs::read_dir(guard.path()).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.ends_with(".trace.json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let from = format!("\"name\":\"{VICTIM}\"");
            renamed += text.matches(&from).count();
            std::fs::write(&path, text.replace(&from, &format!("\"name\":{evil_json}"))).unwrap();
        }
        assert!(renamed > 0, "no {VICTIM} in the synth run");
        let dir = guard.path().to_path_buf();
        (guard, dir)
    });
    dir
}

/// One workflow command the runner would run: its name, its properties and its data.
#[derive(Debug, Clone, PartialEq)]
struct Command {
    name: String,
    properties: String,
    data: String,
}

/// Commands the runner knows (`ActionCommandManager`'s extensions); a line naming another is
/// printed, not run.
const REGISTERED: &[&str] = &[
    "add-mask",
    "add-matcher",
    "add-path",
    "debug",
    "echo",
    "endgroup",
    "error",
    "group",
    "notice",
    "remove-matcher",
    "save-state",
    "set-env",
    "set-output",
    "stop-commands",
    "warning",
];

/// A line parsed the way the runner parses it: `::name props::data` after leading white space
/// (`ActionCommand.TryParseV2`), else `##[name props]data` anywhere in the line (`TryParse`).
fn parse_line(line: &str) -> Option<Command> {
    let t = line.trim_start();
    if let Some(rest) = t.strip_prefix("::") {
        if let Some(end) = rest.find("::") {
            let info = &rest[..end];
            let (name, properties) = info.split_once(' ').unwrap_or((info, ""));
            return Some(Command {
                name: name.to_string(),
                properties: properties.to_string(),
                data: rest[end + 2..].to_string(),
            });
        }
    }
    let start = line.find("##[")?;
    let rb = start + line[start..].find(']')?;
    let info = &line[start + 3..rb];
    let (name, properties) = info.split_once(' ').unwrap_or((info, ""));
    Some(Command {
        name: name.to_string(),
        properties: properties.to_string(),
        data: line[rb + 1..].to_string(),
    })
}

/// The commands the runner runs for `output`, line by line (a line ends at `\n` or `\r`, as
/// .NET reads a process's output), honouring `::stop-commands::TOKEN` … `::TOKEN::` as the
/// runner does: while stopped, nothing runs, and only a command named by the token (any case)
/// resumes. Returns the commands run and whether commands were still stopped at the end.
fn runner_commands(output: &str) -> (Vec<Command>, bool) {
    let mut run = Vec::new();
    let mut stopped: Option<String> = None;
    for line in output.split(['\n', '\r']) {
        let Some(cmd) = parse_line(line) else {
            continue;
        };
        if let Some(token) = &stopped {
            if cmd.name.eq_ignore_ascii_case(token) {
                stopped = None;
            }
            continue;
        }
        if !REGISTERED.contains(&cmd.name.to_ascii_lowercase().as_str()) {
            continue;
        }
        if cmd.name == "stop-commands" {
            stopped = Some(cmd.data.clone());
        }
        run.push(cmd);
    }
    (run, stopped.is_some())
}

#[test]
fn the_runner_parser_honours_stop_commands_like_the_runner() {
    let text = "a\n  ::error title=x::one\n::stop-commands::T\n::error::hidden\nx ##[warning]hidden\n::t::\nsee ##[warning]two\r::bogus::no\n";
    let (run, stopped) = runner_commands(text);
    let names: Vec<&str> = run.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["error", "stop-commands", "warning"]);
    assert_eq!(run[0].properties, "title=x");
    assert_eq!(run[2].data, "two");
    assert!(!stopped);
    assert!(runner_commands("::stop-commands::T\n").1);
}

/// D10: with the injected name, `check --github` prints no line, on stdout or stderr, that the
/// runner would run as a command other than tracegate's own, and every real annotation runs.
#[test]
fn a_kernel_name_cannot_send_a_workflow_command() {
    let dir = tempfile::tempdir().unwrap();
    let verdict = dir.path().join("verdict.json");
    let summary = dir.path().join("summary.md");
    let out = check_in_root(
        hostile_run(),
        &[
            "--github",
            "--comment",
            "off",
            "--verdict-out",
            verdict.to_str().unwrap(),
        ],
        &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())],
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    // The name reached the kernel diff, escaped.
    assert!(
        out.stdout.contains(&format!("+{EVIL_SHOWN}\n")),
        "{}",
        out.stdout
    );
    let v: Value = crate::common::load_json(&verdict);
    assert!(v["explanation"]["appeared"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == EVIL));

    let (run, stopped) = runner_commands(&out.stdout);
    assert!(!stopped, "commands left stopped: {}", out.stdout);
    let mut errors = Vec::new();
    for c in &run {
        assert!(
            !format!("{c:?}").contains("PWNED") && !c.data.contains("injected"),
            "forged command run: {c:?}"
        );
        match c.name.as_str() {
            "stop-commands" => {
                assert_eq!(c.data.len(), 32, "{c:?}");
                assert!(c.data.chars().all(|ch| ch.is_ascii_hexdigit()), "{c:?}");
            }
            "error" => errors.push(c.properties.trim_start_matches("title=").to_string()),
            "warning" | "notice" => {}
            other => panic!("unexpected command {other}: {c:?}"),
        }
    }
    // Every gated regression's annotation runs: nothing silenced them.
    let mut regressed: Vec<String> = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["gated"] == true && m["verdict"] == "regressed")
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    regressed.sort();
    errors.sort();
    assert!(!regressed.is_empty());
    assert_eq!(errors, regressed, "{}", out.stdout);
    // stderr runs nothing at all.
    let (run, _) = runner_commands(&out.stderr);
    assert!(run.is_empty(), "{run:?}\n{}", out.stderr);
    // The job summary holds the name escaped too.
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.contains(EVIL_SHOWN), "{text}");
    assert!(!text.contains(EVIL));
}

/// D22, D27: in every format, the name is one escaped line: no forged `+`/`-` line of the diff,
/// no line of its own, no ESC or BEL reaching the terminal.
#[test]
fn control_characters_in_names_are_escaped_in_every_format() {
    for format in ["table", "markdown", "json"] {
        let out = check_in_root(hostile_run(), &["--format", format], &[]);
        assert_eq!(out.code, Some(1), "{format}: {}", out.stderr);
        assert!(
            !out.stdout.contains(['\x1b', '\x07', '\r']),
            "{format}: raw control characters"
        );
        for line in out.stdout.lines() {
            assert!(
                !line.starts_with("::") && !line.contains("::error title=PWNED::injected\n"),
                "{format}: forged line {line:?}"
            );
        }
        if format == "json" {
            continue;
        }
        // The diff has the name as one `+` line, and no line that starts with its pieces.
        assert!(
            out.stdout.contains(&format!("\n+{EVIL_SHOWN}\n")),
            "{format}: {}",
            out.stdout
        );
        assert!(out.stdout.contains(&format!("\n-{VICTIM}\n")), "{format}");
        assert!(
            !out.stdout.lines().any(|l| l.starts_with("::stop-commands")),
            "{format}"
        );
    }
}

fn dev_full() -> Stdio {
    Stdio::from(
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full"),
    )
}

fn plain_command() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("tracegate"));
    for name in GITHUB_ENV {
        cmd.env_remove(name);
    }
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// D17: an error whose message cannot be written to stderr is still exit 2, not a panic (101).
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_stderr_is_not_a_panic() {
    let status = plain_command()
        .args(["check", "nonexist", "--baseline", "x"])
        .stdout(Stdio::null())
        .stderr(dev_full())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
}

/// D26: a regression whose report cannot be written to stdout is still exit 1, and says why
/// on stderr; with stderr full too, still 1.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_does_not_change_the_verdict() {
    let out = plain_command()
        .arg("check")
        .arg(hostile_run())
        .args(["--baseline", BASELINE])
        .stdout(dev_full())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot write to standard output"),
        "{stderr}"
    );
    for github in [false, true] {
        let mut cmd = plain_command();
        cmd.arg("check")
            .arg(hostile_run())
            .args(["--baseline", BASELINE]);
        if github {
            cmd.args(["--github", "--comment", "off"]);
        }
        let status = cmd.stdout(dev_full()).stderr(dev_full()).status().unwrap();
        assert_eq!(status.code(), Some(1), "--github {github}");
    }
}

/// `check --github` of the hostile (regressed) run, commenting on acme/infer#7 through the
/// mock API.
fn check_commenting(server: &wiremock::MockServer, extra: &[&str]) -> Out {
    crate::common::check_commenting(hostile_run(), &server.uri(), crate::github::TOKEN, extra)
}

/// A comment shaped like GitHub's, by `login`.
fn comment_by(server: &wiremock::MockServer, id: u64, body: &str, login: &str) -> Value {
    let mut c = crate::github::comment(server, id, body);
    c["user"] = serde_json::json!({"login": login, "id": id, "type": "User"});
    c
}

/// D16: a comment that starts with tracegate's marker, written by someone else, is never
/// edited: with the default Actions token (GET /user is 403, so ours are github-actions[bot]'s),
/// tracegate posts a new comment and warns.
#[test]
fn a_spoofed_marker_comment_is_left_alone_and_a_new_one_is_posted() {
    use crate::github::{mount_actions_token_user, runtime, COMMENTS, MARKER};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    let spoof = comment_by(&server, 666, &format!("{MARKER}\n✅ PASS"), "mallory");
    let created = crate::github::comment(&server, 3000, &format!("{MARKER}\nnew"));
    rt.block_on(async {
        mount_actions_token_user(&server).await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!([spoof])))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(201).set_body_json(created))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("PATCH"))
            .respond_with(ResponseTemplate::new(200).set_body_json(spoof.clone()))
            .expect(0)
            .mount(&server)
            .await;
    });
    let out = check_commenting(&server, &[]);
    assert_exit_saying(&out, 1, "created pull-request comment 3000");
    let warning = out
        .stdout
        .lines()
        .find(|l| l.starts_with("::warning title=tracegate comment::") && l.contains("666"))
        .unwrap_or_else(|| panic!("no warning about the spoof: {}", out.stdout));
    assert!(
        warning.contains("mallory") && warning.contains("github-actions[bot]"),
        "{warning}"
    );
    let all = rt.block_on(server.received_requests()).unwrap();
    assert!(!all.iter().any(|r| r.method.as_str() == "PATCH"), "{all:?}");
    let post = all.iter().find(|r| r.method.as_str() == "POST").unwrap();
    let body: Value = serde_json::from_slice(&post.body).unwrap();
    let text = body["body"].as_str().unwrap();
    assert!(text.starts_with(&format!("{MARKER}\n")) && text.contains("REGRESSION"));
    // The injected name is in the comment escaped, never raw.
    assert!(text.contains(EVIL_SHOWN) && !text.contains(EVIL), "{text}");
    drop(server); // verifies expect(1) and expect(0)
}

/// D16 with a token whose user GET /user names: its own marked comment is updated, the spoof
/// before it is left alone, with a warning.
#[test]
fn only_the_token_users_own_marked_comment_is_updated() {
    use crate::github::{mount_no_post, mount_patch, runtime, COMMENTS, MARKER};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    let spoof = comment_by(&server, 666, &format!("{MARKER}\n✅ PASS"), "mallory");
    let ours = comment_by(&server, 777, &format!("{MARKER}\nold"), "perf-bot");
    rt.block_on(async {
        Mock::given(method("GET"))
            .and(path("/user"))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(
                    serde_json::json!({"login": "perf-bot", "id": 777, "type": "User"}),
                ),
            )
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(
                ResponseTemplate::new(200).set_body_json(serde_json::json!([spoof, ours])),
            )
            .mount(&server)
            .await;
        mount_patch(&server, 777, &ours, 1).await;
        mount_patch(&server, 666, &spoof, 0).await;
        mount_no_post(&server).await;
    });
    let out = check_commenting(&server, &[]);
    assert_exit_saying(&out, 1, "updated pull-request comment 777");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("::warning title=tracegate comment::")
                && l.contains("666")
                && l.contains("mallory")),
        "{}",
        out.stdout
    );
    drop(server);
}

/// A verdict file of the hostile run whose `baseline.path` is `path`, in a directory of its own.
fn verdict_dir_with_baseline_path(path: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let verdict = dir.path().join("verdict.json");
    let out = check_in_root(
        hostile_run(),
        &[
            "--format",
            "json",
            "--verdict-out",
            verdict.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let mut v: Value = crate::common::load_json(&verdict);
    v["baseline"]["path"] = Value::String(path.to_string());
    std::fs::write(&verdict, serde_json::to_string(&v).unwrap()).unwrap();
    dir
}

/// D11: a configuration name inside `<summary>` is HTML-escaped: a legal file name cannot
/// become a live link in the sweep comment.
#[test]
fn a_configuration_name_cannot_inject_html_into_the_sweep_comment() {
    let dir = verdict_dir_with_baseline_path(
        "baselines/mi355x<a href=https:&sol;&sol;evil.example.com>click to approve @octocat #1.toml",
    );
    let out = tracegate()
        .arg("sweep")
        .arg(dir.path())
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let markdown = String::from_utf8(out.stdout).unwrap();
    let summary = markdown
        .lines()
        .find(|l| l.contains("<summary>") && l.contains("mi355x"))
        .unwrap_or_else(|| panic!("{markdown}"));
    assert!(
        summary.contains("mi355x&lt;a href=https:&amp;sol;&amp;sol;evil.example.com&gt;"),
        "{summary}"
    );
    let html = crate::gfm::gfm_html(&markdown);
    assert!(!html.contains("<a "), "{html}");
    let prose = crate::gfm::prose(&html);
    assert!(
        !prose.contains("@octocat") && !prose.contains("#1"),
        "{prose}"
    );
}

/// D15: `--image` and `--meta` values neither link, mention nor reference anything in the
/// markdown GitHub renders.
#[test]
fn image_and_meta_cannot_link_mention_or_reference() {
    let hostile = "v1 see #12 GH-3 acme/infer#14 www.evil.example @octocat https://evil.example/x";
    let out = check_in_root(
        hostile_run(),
        &[
            "--format",
            "markdown",
            "--image",
            hostile,
            "--meta",
            &format!("note={hostile}"),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let html = crate::gfm::gfm_html(&out.stdout);
    assert!(!html.contains("<a "), "{html}");
    let prose = crate::gfm::prose(&html);
    // The values are shown (in the run-and-baseline table, as text).
    assert!(prose.contains("acme/infer"), "{prose}");
    for live in ["#12", "GH-3", "#14", "www.", "@octocat", "://"] {
        assert!(!prose.contains(live), "{live} live in: {prose}");
    }
}

/// D15: `compare` escapes its labels (the heading too) and shows kernel names as code spans, as
/// `check` does.
#[test]
fn compare_escapes_labels_and_shows_kernels_as_code() {
    // No `=` in it: `--label` takes NAME=PATH.
    let label = "x</details><img src/onerror>@octocat https://evil.example #3";
    let out = tracegate()
        .arg("compare")
        .arg(hostile_run())
        .arg(hostile_run())
        .arg("--label")
        .arg(format!("{label}={}", hostile_run().display()))
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    crate::common::assert_exit(&out, 0);
    let markdown = String::from_utf8(out.stdout).unwrap();
    let heading = markdown.lines().next().unwrap();
    assert!(heading.starts_with("## tracegate compare: "), "{heading}");
    let html = crate::gfm::gfm_html(&markdown);
    assert!(!html.contains("<img") && !html.contains("<a "), "{html}");
    assert_eq!(
        html.matches("<details>").count(),
        html.matches("</details>").count()
    );
    let prose = crate::gfm::prose(&html);
    for live in ["@octocat", "://", "#3"] {
        assert!(!prose.contains(live), "{live} live in: {prose}");
    }
    // The injected kernel is code, not text: cut in the middle to the library table's width,
    // its escapes shown, one code span.
    assert!(
        html.contains(
            r"<code>evil\n::error title=P…injected\n::stop-commands::tok\x1b[31m\x07</code>"
        ),
        "{html}"
    );
    assert!(!prose.contains("evil\\n"), "{prose}");
}

/// D20: an image of 70,000 characters is cut in the markdown, the verdict headline stays first,
/// and the JSON keeps the whole image.
#[test]
fn a_huge_image_is_cut_and_cannot_push_the_headline_out() {
    let image = "i".repeat(70_000);
    let dir = tempfile::tempdir().unwrap();
    let verdict = dir.path().join("verdict.json");
    let out = check_in_root(
        hostile_run(),
        &[
            "--format",
            "markdown",
            "--image",
            &image,
            "--verdict-out",
            verdict.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stdout.starts_with("❌ **REGRESSION** · "),
        "{}",
        &out.stdout[..out.stdout.len().min(500)]
    );
    let longest = out
        .stdout
        .split(|c| c != 'i')
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!((150..=200).contains(&longest), "a run of {longest} i's");
    assert!(out.stdout.contains("…"));
    assert!(out.stdout.chars().count() < 65_536);
    let v: Value = crate::common::load_json(&verdict);
    assert_eq!(v["run"]["image"].as_str(), Some(image.as_str()));
}
