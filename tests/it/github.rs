//! `check --github`: the job summary, step outputs and workflow commands, and the sticky
//! pull-request comment against a local mock of GitHub's REST API (never api.github.com).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::common::{
    assert_exit_saying, check_in_root, run_ok, synth_cmd, tracegate, Out, MI355X_RUN,
};
use serde_json::{json, Value};
use wiremock::matchers::{method, path, query_param, query_param_is_missing};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

pub(crate) const MARKER: &str =
    "<!-- tracegate:baseline=baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml -->";
/// Distinctive, so that any leak shows.
pub(crate) const TOKEN: &str = "ghs_TRACEGATEtestTOKEN0123456789abcdef";
pub(crate) const COMMENTS: &str = "/repos/acme/infer/issues/7/comments";

/// A passing and a regressed (allreduce 1.5x slower) synthetic run, made once per test binary.
fn runs() -> &'static (PathBuf, PathBuf) {
    static RUNS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    RUNS.get_or_init(|| {
        let root = crate::common::process_dir("github-runs");
        let _ = std::fs::remove_dir_all(&root);
        let make = |name: &str, inject: Option<&str>| {
            let dir = root.join(name);
            let mut cmd = synth_cmd();
            cmd.args(MI355X_RUN).arg("--out").arg(&dir);
            if let Some(spec) = inject {
                cmd.args(["--inject", spec]);
            }
            run_ok(&mut cmd);
            dir
        };
        (make("pass", None), make("fail", Some("allreduce=1.5")))
    })
}

/// `check --github` of a run against the mock server, commenting on acme/infer#7; the token
/// must show in neither output.
fn check_commenting(run: &Path, server: &MockServer, extra: &[&str]) -> Out {
    let out = crate::common::check_commenting(run, &server.uri(), TOKEN, extra);
    assert_no_token(&out);
    out
}

fn assert_no_token(out: &Out) {
    assert!(
        !out.stdout.contains(TOKEN),
        "token on stdout: {}",
        out.stdout
    );
    assert!(
        !out.stderr.contains(TOKEN),
        "token on stderr: {}",
        out.stderr
    );
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A comment object shaped like GitHub's (`GET /repos/{o}/{r}/issues/{n}/comments`).
pub(crate) fn comment(server: &MockServer, id: u64, body: &str) -> Value {
    json!({
        "id": id,
        "node_id": format!("IC_kwDO{id}"),
        "url": format!("{}/repos/acme/infer/issues/comments/{id}", server.uri()),
        "html_url": format!("https://github.com/acme/infer/pull/7#issuecomment-{id}"),
        "issue_url": format!("{}/repos/acme/infer/issues/7", server.uri()),
        "body": body,
        "user": {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"},
        "created_at": "2026-11-30T10:00:00Z",
        "updated_at": "2026-11-30T10:00:00Z",
        "author_association": "NONE"
    })
}

/// A mock pull request with no comment yet, that answers one POST of a comment with `created`.
async fn mount_no_comments_then_post(server: &MockServer, created: ResponseTemplate) {
    Mock::given(method("GET"))
        .and(path(COMMENTS))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMMENTS))
        .respond_with(created)
        .expect(1)
        .mount(server)
        .await;
}

/// `GET /user` as GitHub answers it for the default Actions token (an installation token):
/// 403. tracegate then takes its comments to be `github-actions[bot]`'s, as [`comment`] makes
/// them.
pub(crate) async fn mount_actions_token_user(server: &MockServer) {
    Mock::given(method("GET"))
        .and(path("/user"))
        .respond_with(ResponseTemplate::new(403).set_body_json(json!({
            "message": "Resource not accessible by integration",
            "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
            "status": "403"
        })))
        .mount(server)
        .await;
}

/// A PATCH of comment `id` that answers 200 with `body`, expected `times` times.
pub(crate) async fn mount_patch(server: &MockServer, id: u64, body: &Value, times: u64) {
    Mock::given(method("PATCH"))
        .and(path(format!("/repos/acme/infer/issues/comments/{id}")))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .expect(times)
        .mount(server)
        .await;
}

/// A POST, anywhere, that must never come.
pub(crate) async fn mount_no_post(server: &MockServer) {
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(201))
        .expect(0)
        .mount(server)
        .await;
}

fn requests_of<'a>(all: &'a [Request], verb: &str) -> Vec<&'a Request> {
    all.iter().filter(|r| r.method.as_str() == verb).collect()
}

#[test]
fn check_github_writes_summary_outputs_and_annotations() {
    let (_, fail) = runs();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    let output = dir.path().join("output.txt");
    let report = dir.path().join("report.md");
    let verdict = dir.path().join("verdict.json");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    let out = check_in_root(
        fail,
        &[
            "--github",
            "--comment",
            "off",
            "--output",
            report.to_str().unwrap(),
            "--verdict-out",
            verdict.to_str().unwrap(),
        ],
        &[
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
            ("GITHUB_OUTPUT", output.to_str().unwrap()),
        ],
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);

    // The verdict JSON, read independently, says which gated metrics regressed.
    let v: Value = crate::common::load_json(&verdict);
    let regressed: Vec<&str> = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["gated"] == true && m["verdict"] == "regressed")
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(regressed.contains(&"allreduce_us"), "{regressed:?}");

    // The job summary: appended after what was there, the full markdown of the check.
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.starts_with("# earlier step\n"));
    assert!(text.contains("tracegate on"), "{text}");
    assert!(text.contains("REGRESSION"));
    assert!(text.contains("| allreduce\\_us"), "{text}");
    assert!(text.contains("#### Why"));
    assert!(text.contains("<summary>Run and baseline</summary>"));

    // The step outputs.
    let outputs = std::fs::read_to_string(&output).unwrap();
    assert_eq!(
        outputs,
        format!(
            "verdict=regression\nregressions={}\nreport-path={}\n",
            regressed.len(),
            report.display()
        )
    );

    // Workflow commands: one ::error per gated regression, all before any other annotation.
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines.iter().all(|l| l.starts_with("::")), "{}", out.stdout);
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .take_while(|l| l.starts_with("::error "))
        .collect();
    assert_eq!(errors.len(), regressed.len(), "{}", out.stdout);
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("::error")).count(),
        regressed.len()
    );
    for name in &regressed {
        let line = errors
            .iter()
            .find(|l| l.starts_with(&format!("::error title={name}::")))
            .unwrap_or_else(|| panic!("no ::error for {name}: {}", out.stdout));
        assert!(line.contains(&format!("{name} regressed: baseline ")));
        assert!(line.contains(", current ") && line.contains(", change "));
        assert!(line.contains(", tolerance "));
    }
    let allreduce = errors
        .iter()
        .find(|l| l.starts_with("::error title=allreduce_us::"))
        .unwrap();
    // Percent signs in the message are escaped as workflow commands require.
    assert!(allreduce.contains("tolerance 10%25"), "{allreduce}");
    // allreduce=1.5 scales the transfer; the waiting inside each call does not grow, so the raw
    // mean call grows by a little less than 50%.
    assert!(allreduce.contains("change +4"), "{allreduce}");
}

#[test]
fn a_passing_run_sets_pass_outputs_and_no_error() {
    let (pass, _) = runs();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    let output = dir.path().join("output.txt");
    // GITHUB_ACTIONS=true turns GitHub mode on without --github.
    let out = check_in_root(
        pass,
        &["--comment", "off", "--format", "json"],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
            ("GITHUB_OUTPUT", output.to_str().unwrap()),
        ],
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!out.stdout.contains("::error"));
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "verdict=pass\nregressions=0\nreport-path=\n"
    );
    assert!(std::fs::read_to_string(&summary)
        .unwrap()
        .contains("**PASS**"));

    // --no-github wins over GITHUB_ACTIONS=true: nothing written, nothing printed but the report.
    let summary2 = dir.path().join("summary2.md");
    let out = check_in_root(
        pass,
        &["--no-github", "--format", "json"],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary2.to_str().unwrap()),
        ],
    );
    assert_eq!(out.code, Some(0));
    assert!(!summary2.exists());
    assert!(!out.stdout.lines().any(|l| l.starts_with("::")));
    serde_json::from_str::<Value>(&out.stdout).expect("stdout is only the JSON report");
}

#[test]
fn first_run_creates_the_comment_and_the_second_updates_it() {
    let (_, fail) = runs();
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    let other = comment(&server, 900, "LGTM");
    let sticky = comment(&server, 1001, &format!("{MARKER}\nold"));
    rt.block_on(async {
        mount_actions_token_user(&server).await;
        // Before the first run: one unrelated comment.
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([other])))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        // Afterwards: the comment the first run created is there too.
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([other, sticky])))
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(201).set_body_json(sticky.clone()))
            .expect(1)
            .mount(&server)
            .await;
        mount_patch(&server, 1001, &sticky, 1).await;
    });

    let first = check_commenting(fail, &server, &[]);
    assert_exit_saying(&first, 1, "created pull-request comment 1001");
    let second = check_commenting(fail, &server, &[]);
    assert_exit_saying(&second, 1, "updated pull-request comment 1001");
    assert!(!second.stdout.contains("::warning title=tracegate comment"));

    let all = rt.block_on(server.received_requests()).unwrap();
    let posts = requests_of(&all, "POST");
    let patches = requests_of(&all, "PATCH");
    assert_eq!((posts.len(), patches.len()), (1, 1), "{all:?}");
    for r in posts.iter().chain(&patches) {
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        let text = body["body"].as_str().unwrap();
        assert!(text.starts_with(&format!("{MARKER}\n")), "{text}");
        assert!(
            text.contains("REGRESSION") && text.contains("allreduce\\_us"),
            "{text}"
        );
        assert!(text.chars().count() <= 65_536);
        // The token travels only in the Authorization header.
        assert!(!text.contains(TOKEN));
        let auth = r.headers.get("authorization").unwrap().to_str().unwrap();
        assert!(auth.ends_with(TOKEN));
    }
    for r in &all {
        assert!(r.url.query().is_none_or(|q| !q.contains(TOKEN)));
    }
    drop(server); // verifies the expect(1)s
}

#[test]
fn the_comment_is_found_on_the_second_page() {
    let (_, fail) = runs();
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    let page1: Vec<Value> = (0..100)
        .map(|i| comment(&server, 100 + i, &format!("comment {i}")))
        .collect();
    // Another baseline's sticky comment must not be taken for this one.
    let mut page2 = vec![comment(
        &server,
        2001,
        "<!-- tracegate:baseline=baselines/dsr1-fp8-h200-sglang-tp8-conc64.toml -->\nother",
    )];
    page2.push(comment(&server, 2002, &format!("{MARKER}\nold")));
    let next = format!("{}{COMMENTS}?per_page=100&page=2", server.uri());
    rt.block_on(async {
        mount_actions_token_user(&server).await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .and(query_param("per_page", "100"))
            .and(query_param_is_missing("page"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header(
                        "link",
                        format!("<{next}>; rel=\"next\", <{next}>; rel=\"last\"").as_str(),
                    )
                    .set_body_json(json!(page1)),
            )
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .and(query_param("page", "2"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!(page2)))
            .expect(1)
            .mount(&server)
            .await;
        mount_patch(&server, 2002, &page2[1], 1).await;
        mount_no_post(&server).await;
    });
    let out = check_commenting(fail, &server, &[]);
    assert_exit_saying(&out, 1, "updated pull-request comment 2002");
    drop(server);
}

#[test]
fn api_errors_leave_the_verdict_and_print_a_warning() {
    let (pass, fail) = runs();
    let rt = runtime();
    // 403 from a fork's read-only token, on listing.
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(403).set_body_json(json!({
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
                "status": "403"
            })))
            .mount(&server),
    );
    let out = check_commenting(fail, &server, &[]);
    assert_eq!(out.code, Some(1), "the verdict's status: {}", out.stderr);
    let warning = out
        .stdout
        .lines()
        .find(|l| l.starts_with("::warning title=tracegate comment::"))
        .unwrap_or_else(|| panic!("no warning: {}", out.stdout));
    assert!(warning.ends_with("(HTTP 403)"), "{warning}");
    assert!(warning.contains("Resource not accessible by integration"));
    assert!(out.stderr.contains("warning") && out.stderr.contains("HTTP 403"));
    // `always` on a passing run: still 0 despite the error.
    let out = check_commenting(pass, &server, &["--comment", "always"]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(out.stdout.contains("(HTTP 403)"));

    // 500 on creating the comment.
    let server = rt.block_on(MockServer::start());
    rt.block_on(mount_no_comments_then_post(
        &server,
        ResponseTemplate::new(500).set_body_string("boom"),
    ));
    let out = check_commenting(fail, &server, &[]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("::warning title=tracegate comment::")
                && l.ends_with("(HTTP 500)")),
        "{}",
        out.stdout
    );
    drop(server);

    // 401 whose message echoes the token: redacted.
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(401).set_body_json(json!({
                "message": format!("Bad credentials: {TOKEN}"),
                "documentation_url": "https://docs.github.com/rest"
            })))
            .mount(&server),
    );
    let out = check_commenting(fail, &server, &[]);
    assert_eq!(out.code, Some(1));
    assert!(
        out.stdout.contains("Bad credentials: ***"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("(HTTP 401)"));
}

#[test]
fn not_found_validation_and_rate_limit_errors_leave_the_verdict() {
    let (_, fail) = runs();
    let rt = runtime();
    let rate_limited = || {
        ResponseTemplate::new(429)
            .insert_header("x-ratelimit-remaining", "0")
            .insert_header("retry-after", "60")
            .set_body_json(json!({"message": "API rate limit exceeded for installation ID 1."}))
    };
    let cases: [(u16, ResponseTemplate, bool); 3] = [
        // 404: the pull request is not in this repository (or the token cannot see it).
        (
            404,
            ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"})),
            false,
        ),
        // 422 on creating the comment: GitHub refuses the body.
        (
            422,
            ResponseTemplate::new(422).set_body_json(json!({
                "message": "Validation Failed",
                "errors": [{"resource": "IssueComment", "code": "custom", "field": "body",
                            "message": "body is too long (maximum is 65536 characters)"}]
            })),
            true,
        ),
        (429, rate_limited(), false),
    ];
    for (status, response, on_post) in cases {
        let server = rt.block_on(MockServer::start());
        if on_post {
            rt.block_on(mount_no_comments_then_post(&server, response));
        } else {
            rt.block_on(
                Mock::given(method("GET"))
                    .respond_with(response)
                    .mount(&server),
            );
        }
        let out = check_commenting(fail, &server, &[]);
        assert_no_token(&out);
        assert_eq!(out.code, Some(1), "HTTP {status}: {}", out.stderr);
        let suffix = format!("(HTTP {status})");
        assert!(
            out.stdout
                .lines()
                .any(|l| l.starts_with("::warning title=tracegate comment::")
                    && l.ends_with(&suffix)),
            "HTTP {status}: {}",
            out.stdout
        );
        drop(server);
    }
}

#[test]
fn a_timeout_is_a_warning() {
    let (_, fail) = runs();
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("GET"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!([]))
                    .set_delay(std::time::Duration::from_secs(5)),
            )
            .mount(&server),
    );
    let out = check_commenting(fail, &server, &["--github-timeout", "0.5"]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stdout.contains("::warning title=tracegate comment::"));
    assert!(out.stderr.contains("timed out"), "{}", out.stderr);
}

/// Issue 39: `--github-timeout` is the budget of every request together, not of each: an API
/// that answers each page of comments within the timeout but always has a next page holds the
/// job no longer than the budget (before, 100 pages of it).
#[test]
fn the_github_timeout_bounds_all_requests_together() {
    let (_, fail) = runs();
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    let next = format!(
        "<{}/repos/acme/infer/issues/7/comments?per_page=100&page=2>; rel=\"next\"",
        server.uri()
    );
    rt.block_on(
        Mock::given(method("GET"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!([]))
                    .insert_header("link", next.as_str())
                    .set_delay(std::time::Duration::from_millis(300)),
            )
            .mount(&server),
    );
    let out = check_commenting(fail, &server, &["--github-timeout", "1"]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("timed out"), "{}", out.stderr);
    // About three pages fit in the budget; never the hundred a per-request timeout allowed.
    let requests = rt.block_on(server.received_requests()).unwrap().len();
    assert!(requests <= 6, "{requests} requests");
}

#[test]
fn a_passing_run_creates_no_comment_unless_always() {
    let (pass, _) = runs();
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(mount_no_comments_then_post(
        &server,
        ResponseTemplate::new(201).set_body_json(json!({"id": 5, "body": MARKER, "html_url": "h"})),
    ));
    // on-regression (the default): a pass with no earlier comment posts nothing.
    let out = check_commenting(pass, &server, &[]);
    assert_exit_saying(&out, 0, "no pull-request comment");
    // off: not even a request.
    let before = rt.block_on(server.received_requests()).unwrap().len();
    let out = check_commenting(pass, &server, &["--comment", "off"]);
    assert_eq!(out.code, Some(0));
    assert_eq!(
        rt.block_on(server.received_requests()).unwrap().len(),
        before
    );
    // always: a passing run gets its comment too.
    let out = check_commenting(pass, &server, &["--comment", "always"]);
    assert_exit_saying(&out, 0, "created pull-request comment 5");
    drop(server);
}

#[test]
fn the_pull_request_comes_from_the_event_file() {
    let (_, fail) = runs();
    let dir = tempfile::tempdir().unwrap();
    let event = dir.path().join("event.json");
    std::fs::write(
        &event,
        r#"{"action": "synchronize", "number": 7, "pull_request": {"number": 7}}"#,
    )
    .unwrap();
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    rt.block_on(async {
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([])))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(COMMENTS))
            .respond_with(
                ResponseTemplate::new(201)
                    .set_body_json(json!({"id": 6, "body": MARKER, "html_url": "h"})),
            )
            .expect(1)
            .mount(&server)
            .await;
    });
    let api = server.uri();
    let out = check_in_root(
        fail,
        &["--output", "/dev/null", "--token-env", "MY_TOKEN"],
        &[
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_REPOSITORY", "acme/infer"),
            ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
            ("GITHUB_API_URL", api.as_str()),
            ("MY_TOKEN", TOKEN),
        ],
    );
    assert_no_token(&out);
    assert_exit_saying(&out, 1, "created pull-request comment 6");
    drop(server);
}

#[test]
fn sweep_github_writes_one_comment_summary_outputs_and_annotations() {
    let (pass, fail) = runs();
    let dir = tempfile::tempdir().unwrap();
    let verdicts = dir.path().join("verdicts");
    std::fs::create_dir(&verdicts).unwrap();
    for (run, name) in [(pass, "cfg-pass"), (fail, "cfg-fail")] {
        let file = verdicts.join(format!("{name}.json"));
        let out = check_in_root(
            run,
            &["--no-github", "--output", "/dev/null", "--verdict-out"]
                .into_iter()
                .chain([file.to_str().unwrap()])
                .collect::<Vec<_>>(),
            &[],
        );
        assert!(matches!(out.code, Some(0 | 1)), "{}", out.stderr);
        // Each configuration of a sweep has its own baseline; name this one.
        let mut v: Value = crate::common::load_json(&file);
        v["baseline"]["path"] = Value::String(format!("baselines/{name}.toml"));
        std::fs::write(&file, v.to_string()).unwrap();
    }
    let summary = dir.path().join("summary.md");
    let output = dir.path().join("output.txt");

    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    const SWEEP_MARKER: &str = "<!-- tracegate:sweep=nightly -->";
    let sticky = comment(&server, 2001, &format!("{SWEEP_MARKER}\nold"));
    rt.block_on(mount_no_comments_then_post(
        &server,
        ResponseTemplate::new(201).set_body_json(sticky),
    ));
    let api = server.uri();
    let out = tracegate()
        .arg("sweep")
        .arg(&verdicts)
        .args([
            "--expect",
            "cfg-pass,cfg-fail,cfg-crashed",
            "--name",
            "nightly",
        ])
        .args(["--github", "--pr", "7", "--github-api", api.as_str()])
        .args(["--output", "/dev/null"])
        .env("GITHUB_REPOSITORY", "acme/infer")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &output)
        .output()
        .unwrap();
    let out = Out::of(out);
    assert_no_token(&out);
    // check's precedence: the regression outranks the missing verdict.
    assert_exit_saying(&out, 1, "created pull-request comment 2001");

    // One ::error per configuration that did not pass, naming it; none for the passing one.
    let errors: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error"))
        .collect();
    assert_eq!(errors.len(), 2, "{}", out.stdout);
    assert!(errors
        .iter()
        .any(|l| l.starts_with("::error title=cfg-fail::")));
    assert!(errors
        .iter()
        .any(|l| l.starts_with("::error title=cfg-crashed::")));

    let outputs = std::fs::read_to_string(&output).unwrap();
    assert_eq!(
        outputs,
        "verdict=regression\nregressions=1\nfailures=2\nreport-path=/dev/null\n"
    );
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.contains("**tracegate sweep**"), "{text}");
    assert!(
        text.contains("cfg\\-fail") || text.contains("cfg-fail"),
        "{text}"
    );

    let all = rt.block_on(server.received_requests()).unwrap();
    let posts = requests_of(&all, "POST");
    assert_eq!(posts.len(), 1);
    let body: Value = serde_json::from_slice(&posts[0].body).unwrap();
    let text = body["body"].as_str().unwrap();
    assert!(text.starts_with(&format!("{SWEEP_MARKER}\n")), "{text}");
    assert!(text.contains("**tracegate sweep**") && text.contains("cfg-crashed"));
    drop(server); // verifies the expect(1)
}

#[test]
fn paths_from_workflow_inputs_cannot_leave_the_workspace() {
    let (_, fail) = runs();
    let root = env!("CARGO_MANIFEST_DIR");
    let temp = tempfile::tempdir().unwrap();
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("GITHUB_WORKSPACE", root),
        ("RUNNER_TEMP", temp.path().to_str().unwrap()),
    ];
    let inside = temp.path().join("tracegate/report.md");
    std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
    let out = check_in_root(
        fail,
        &["--comment", "off", "--output", inside.to_str().unwrap()],
        &env,
    );
    assert_eq!(
        out.code,
        Some(1),
        "inside RUNNER_TEMP is fine: {}",
        out.stderr
    );
    assert!(inside.exists());

    let escape = format!("../tracegate-escape-{}.md", std::process::id());
    let out = check_in_root(fail, &["--comment", "off", "--output", &escape], &env);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("--output {escape}: outside the workspace")),
        "{}",
        out.stderr
    );
    assert!(!std::path::Path::new(root).join(&escape).exists());

    let mut cmd = tracegate();
    cmd.current_dir(root)
        .args([
            "check",
            fail.to_str().unwrap(),
            "--baseline",
            "baselines/../../../etc/passwd",
        ])
        .args(["--comment", "off"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = crate::common::run(&mut cmd);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr
            .contains("--baseline baselines/../../../etc/passwd: outside"),
        "{}",
        out.stderr
    );
    // Not in Actions: the same path is the user's own choice (here: not a baseline).
    let out = Out::of(
        tracegate()
            .current_dir(root)
            .args([
                "check",
                fail.to_str().unwrap(),
                "--baseline",
                "baselines/../../../etc/passwd",
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(out.code, Some(2));
    assert!(
        !out.stderr.contains("outside the workspace"),
        "{}",
        out.stderr
    );
}

/// After a ✅ comment, a run that cannot be judged at all (its trace cut short) must not leave
/// the pull request green under a red check: it updates the same comment to say so, writes an
/// `::error` and the cannot-judge outputs (issue 40, "a stale green comment").
#[test]
fn a_run_that_cannot_be_read_turns_the_earlier_green_comment_into_cannot_judge() {
    let (pass, _) = runs();
    let tmp = tempfile::tempdir().unwrap();
    // The passing run with one rank's file cut in the middle.
    let cut = tmp.path().join("cut");
    std::fs::create_dir_all(&cut).unwrap();
    for e in std::fs::read_dir(pass).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if !name.contains(".trace.json") {
            continue;
        }
        let bytes = std::fs::read(&p).unwrap();
        let keep = if name.contains("-TP-2.") {
            bytes.len() / 2
        } else {
            bytes.len()
        };
        std::fs::write(cut.join(&name), &bytes[..keep]).unwrap();
    }
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    let green = comment(
        &server,
        1001,
        &format!("{MARKER}\n✅ **PASS** · earlier run"),
    );
    rt.block_on(async {
        mount_actions_token_user(&server).await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([green])))
            .mount(&server)
            .await;
        mount_no_post(&server).await;
        mount_patch(&server, 1001, &green, 1).await;
    });
    let summary = tmp.path().join("summary.md");
    let outputs = tmp.path().join("outputs.txt");
    let out = crate::common::check_in_root(
        &cut,
        &[
            "--github",
            "--pr",
            "7",
            "--github-api",
            &server.uri(),
            "--output",
            "/dev/null",
        ],
        &[
            ("GITHUB_REPOSITORY", "acme/infer"),
            ("GITHUB_TOKEN", TOKEN),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
            ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
        ],
    );
    assert_no_token(&out);
    assert_exit_saying(&out, 2, "updated pull-request comment 1001");
    assert!(
        out.stdout
            .contains("::error title=tracegate cannot judge::"),
        "{}",
        out.stdout
    );
    let all = rt.block_on(server.received_requests()).unwrap();
    let patches = requests_of(&all, "PATCH");
    assert_eq!(patches.len(), 1, "{all:?}");
    let body: Value = serde_json::from_slice(&patches[0].body).unwrap();
    let text = body["body"].as_str().unwrap();
    assert!(text.starts_with(&format!("{MARKER}\n")), "{text}");
    assert!(
        text.contains("⚠️ **CANNOT JUDGE**")
            && text.contains("dsr1-fp4-mi355x-sglang-tp4-conc64")
            && text.contains("-TP-2.")
            && !text.contains("PASS"),
        "{text}"
    );
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(summary.contains("CANNOT JUDGE"), "{summary}");
    let outputs = std::fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("verdict=cannot_judge"), "{outputs}");
    drop(server);
}

/// With `--baselines DIR` the comment is the job's (keyed by the keys asked for), not the
/// baseline's a run happens to find: a passing run updates it, and a later run that cannot be
/// judged (no baseline found, a trace it cannot read) replaces that same comment.
#[test]
fn with_baselines_the_jobs_comment_goes_from_pass_to_cannot_judge() {
    let (pass, _) = runs();
    let rt = runtime();
    let server = rt.block_on(MockServer::start());
    let job_marker = "<!-- tracegate:baselines=baselines framework=sglang -->";
    let earlier = comment(&server, 3003, &format!("{job_marker}\nearlier"));
    rt.block_on(async {
        mount_actions_token_user(&server).await;
        Mock::given(method("GET"))
            .and(path(COMMENTS))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!([earlier])))
            .mount(&server)
            .await;
        mount_no_post(&server).await;
        mount_patch(&server, 3003, &earlier, 2).await;
    });
    let check = |run: &Path, keys: &[&str]| {
        let mut cmd = tracegate();
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .arg("check")
            .arg(run)
            .args(["--baselines", "baselines"])
            .args(keys)
            .args(["--github", "--pr", "7", "--github-api", &server.uri()])
            .args(["--output", "/dev/null"])
            .env("GITHUB_REPOSITORY", "acme/infer")
            .env("GITHUB_TOKEN", TOKEN)
            .env_remove("TRACEGATE_NAME");
        let out = crate::common::run(&mut cmd);
        assert_no_token(&out);
        out
    };
    let keys = ["--key", "framework=sglang"];
    assert_exit_saying(&check(pass, &keys), 0, "updated pull-request comment 3003");
    // The same job, now with a run on 2 ranks: no baseline of the directory matches.
    let two = crate::common::synth_run(&[
        "--scenario",
        "mi355x-dsr1-fp4-tp4",
        "--seed",
        "3",
        "--ranks",
        "2",
    ]);
    assert_exit_saying(&check(&two, &keys), 2, "updated pull-request comment 3003");
    let all = rt.block_on(server.received_requests()).unwrap();
    let patches = requests_of(&all, "PATCH");
    assert_eq!(patches.len(), 2, "{all:?}");
    let texts: Vec<String> = patches
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            body["body"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(texts
        .iter()
        .all(|t| t.starts_with(&format!("{job_marker}\n"))));
    assert!(texts[0].contains("PASS"), "{}", texts[0]);
    assert!(
        texts[1].contains("⚠️ **CANNOT JUDGE**") && texts[1].contains("no baseline matches"),
        "{}",
        texts[1]
    );
    drop(server);
}
