//! GitHub Actions integration of `check` and `sweep`: the job summary, workflow-command
//! annotations, step outputs, and one sticky pull-request comment per baseline or per sweep.
//!
//! This module only consumes a [`CheckResult`] or a [`Sweep`](crate::sweep::Sweep) and the markdown
//! `report` renders from it; it never computes a figure. Nothing here changes the verdict: every
//! failure becomes a warning, and the exit status stays the verdict's.

pub(crate) mod actions;
pub(crate) mod comment;
pub(crate) mod context;

use std::path::PathBuf;
use std::time::Duration;

use crate::gate::{CheckResult, Status};

pub(crate) use comment::{marker, CommentRequest};
pub(crate) use context::Context;

/// Errors of the GitHub integration. API errors carry the HTTP status; no message holds the token.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GithubError {
    #[error("GitHub API answered HTTP {status}: {message}")]
    Api { status: u16, message: String },
    #[error("GitHub API requests timed out after {} s (--github-timeout, the budget of all of them)", .0.as_secs_f64())]
    Timeout(Duration),
    #[error("GitHub API request failed: {0}")]
    Transport(String),
    #[error("{0}")]
    Context(String),
    #[error("{path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl GithubError {
    /// The HTTP status of an API error.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            GithubError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// What an API status most likely means for a comment, for the warning.
    pub(crate) fn hint(&self) -> Option<&'static str> {
        Some(match self.status()? {
            401 => "bad or expired token",
            403 => "the token may not write pull-request comments (a fork's read-only token?) or the rate limit is exhausted",
            404 => "repository or pull request not found, or the token cannot see it",
            422 => "GitHub refused the comment",
            429 => "rate limited",
            500..=599 => "GitHub server error",
            _ => return None,
        })
    }
}

/// When to write the sticky pull-request comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum CommentMode {
    /// Never comment.
    Off,
    /// Create or update the comment on every run, a passing one too.
    Always,
    /// Create the comment when the run does not pass; update an existing one on every run, so a
    /// fixed regression turns the comment green.
    #[default]
    OnRegression,
}

/// What `check --github` was asked to do.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub comment: CommentMode,
    pub pr: Option<u64>,
    pub repo: Option<String>,
    /// The name of the environment variable holding the token (never the token itself).
    pub token_env: String,
    pub api_url: Option<String>,
    pub timeout: Duration,
    /// The report file written by `--output`, announced as the `report-path` output.
    pub report_path: Option<PathBuf>,
    pub fail_on_improvement: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            comment: CommentMode::default(),
            pr: None,
            repo: None,
            token_env: "GITHUB_TOKEN".into(),
            api_url: None,
            timeout: Duration::from_secs(20),
            report_path: None,
            fail_on_improvement: false,
        }
    }
}

/// Whether GitHub mode is on: `--github`, or `GITHUB_ACTIONS=true` unless `--no-github`.
pub(crate) fn enabled(github: bool, no_github: bool, env: &dyn Fn(&str) -> Option<String>) -> bool {
    !no_github && (github || env("GITHUB_ACTIONS").is_some_and(|v| v == "true"))
}

/// What a gate step publishes in GitHub mode, the same for `check` and `sweep`: built from the
/// verdict by the caller, written here.
pub(crate) struct Publication {
    pub status: Status,
    /// Workflow-command lines, most important first.
    pub annotations: Vec<String>,
    /// The markdown, in parts that can be left out from the end to fit a limit.
    pub parts: Vec<String>,
    /// Step outputs (`$GITHUB_OUTPUT`).
    pub outputs: Vec<(String, String)>,
    /// The hidden first line of the sticky comment (see [`marker`]).
    pub marker: String,
}

impl Publication {
    /// The publication of one `check`: one comment per baseline.
    pub(crate) fn of_check(result: &CheckResult, options: &Options) -> Publication {
        Publication {
            status: result.status,
            annotations: actions::annotations(result, options.fail_on_improvement),
            parts: crate::report::comment::markdown_parts(result),
            outputs: actions::step_outputs(result, options.report_path.as_deref()),
            marker: marker("baseline", &result.baseline.path),
        }
    }

    /// The publication of a `check` that could not judge at all (an unreadable trace, no
    /// baseline that matches, a partial run): the same sticky comment (`marker`) says so, so
    /// that an earlier ✅ never stands under a red check. `name` is what was checked.
    pub(crate) fn of_error(
        error: &str,
        name: &str,
        marker: String,
        options: &Options,
    ) -> Publication {
        let first = error.lines().next().unwrap_or("");
        Publication {
            status: Status::CannotJudge,
            annotations: vec![actions::command(
                "error",
                Some("tracegate cannot judge"),
                first,
            )],
            parts: vec![crate::report::check::error_markdown(name, error)],
            outputs: vec![
                (
                    "verdict".into(),
                    actions::verdict_word(Status::CannotJudge).into(),
                ),
                ("regressions".into(), "0".into()),
                (
                    "report-path".into(),
                    options
                        .report_path
                        .as_deref()
                        .map_or_else(String::new, |p| p.display().to_string()),
                ),
            ],
            marker,
        }
    }

    /// The publication of a `sweep`: one comment for the whole sweep, named by `name`.
    pub(crate) fn of_sweep(
        sweep: &crate::sweep::Sweep,
        name: &str,
        options: &Options,
    ) -> Publication {
        Publication {
            status: sweep.status,
            annotations: actions::sweep_annotations(sweep),
            parts: crate::report::sweep::markdown_parts(sweep),
            outputs: actions::sweep_outputs(sweep, options.report_path.as_deref()),
            marker: marker("sweep", name),
        }
    }
}

/// Everything `--github` does after the verdict: step summary, annotations and outputs, then
/// the sticky comment. Prints workflow commands on stdout and plain notes on stderr; never fails
/// and never changes the verdict.
pub(crate) fn publish(publication: &Publication, options: &Options) {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut stdout = String::new();
    let mut warnings: Vec<String> = Vec::new();

    for line in &publication.annotations {
        stdout.push_str(line);
        stdout.push('\n');
    }
    if let Some(path) = env("GITHUB_STEP_SUMMARY") {
        if let Err(e) = actions::append_step_summary(path.as_ref(), &publication.parts) {
            warnings.push(e.to_string());
        }
    }
    if let Some(path) = env("GITHUB_OUTPUT") {
        if let Err(e) = actions::append_outputs(path.as_ref(), &publication.outputs) {
            warnings.push(e.to_string());
        }
    }
    print_stdout(&stdout);
    for w in &warnings {
        warn("tracegate", w);
    }

    comment_step(publication, options, &env);
}

/// Discovers the pull request and writes or updates the sticky comment, as the mode asks.
fn comment_step(
    publication: &Publication,
    options: &Options,
    env: &dyn Fn(&str) -> Option<String>,
) {
    if options.comment == CommentMode::Off {
        return;
    }
    let context = match Context::discover(options, env) {
        Ok(c) => c,
        Err(e) => {
            crate::output::note(&format!("no pull-request comment: {e}"));
            return;
        }
    };
    let run_url = match (
        env("GITHUB_SERVER_URL"),
        env("GITHUB_REPOSITORY"),
        env("GITHUB_RUN_ID"),
    ) {
        (Some(server), Some(repo), Some(run)) => {
            Some(format!("{server}/{repo}/actions/runs/{run}"))
        }
        _ => None,
    };
    let request = CommentRequest {
        context: &context,
        marker: publication.marker.clone(),
        body: comment::body(&publication.marker, &publication.parts, run_url.as_deref()),
        create: options.comment == CommentMode::Always || publication.status != Status::Pass,
        timeout: options.timeout,
    };
    match comment::sync(&request) {
        Ok(synced) => {
            for spoof in &synced.spoofs {
                warn("tracegate comment", &spoof.to_string());
            }
            crate::output::note(&synced.outcome.to_string());
        }
        Err(e) => {
            let text = context.token.redact(&match e.hint() {
                Some(hint) => format!("{e} ({hint})"),
                None => e.to_string(),
            });
            let status = e
                .status()
                .map_or_else(String::new, |s| format!(" (HTTP {s})"));
            let message = format!("could not write the pull-request comment: {text}{status}");
            warn("tracegate comment", &message);
        }
    }
}

/// A warning both as a workflow command (stdout) and as a plain line (stderr).
fn warn(title: &str, message: &str) {
    print_stdout(&(actions::command("warning", Some(title), message) + "\n"));
    crate::output::note(&format!("warning: {message}"));
}

/// Our own workflow commands on stdout; a failed write is not worth failing the gate over (nor
/// a warning that would go to the same stdout).
fn print_stdout(text: &str) {
    let _ = crate::output::try_stdout(text);
}
