//! The sticky pull-request comment: one per baseline, found again by a hidden marker on its first
//! line *and* its author, and updated in place.
//!
//! The marker is predictable, so anyone can post a comment that starts with it. Only a comment
//! the token's own user wrote is ever edited: a marked comment by anyone else is a spoof, left
//! untouched; tracegate posts its own comment beside it and warns.
//!
//! REST calls (through octocrab, on a current-thread tokio runtime built here so that the rest of
//! the CLI stays synchronous):
//! - `GET /repos/{owner}/{repo}/issues/{pr}/comments?per_page=100`, following `Link: rel="next"`;
//! - `GET /user` when a marked comment is found: the token's own login. The default Actions
//!   token cannot read it (HTTP 403); its comments are `github-actions[bot]`'s;
//! - `PATCH /repos/{owner}/{repo}/issues/comments/{id}` when our marked comment is found;
//! - `POST /repos/{owner}/{repo}/issues/{pr}/comments` otherwise.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use serde::Deserialize;

use super::context::{Context, Token};
use super::GithubError;
use crate::report::check::{fit, GITHUB_COMMENT_LIMIT};

/// Pages of 100 comments read at most while looking for the marker (10,000 comments).
const MAX_PAGES: usize = 100;
/// Room left under the limit for the "sections left out" note that `fit` appends.
const NOTE_ROOM: usize = 256;
/// The author of comments written with the default Actions token (`GITHUB_TOKEN`), which
/// cannot read `GET /user`.
pub(crate) const ACTIONS_BOT: &str = "github-actions[bot]";

/// The hidden first line that identifies the comment of one baseline
/// (`<!-- tracegate:baseline=baselines/x.toml -->`) or of one sweep
/// (`<!-- tracegate:sweep=nightly -->`). The name is escaped so that it cannot end the HTML
/// comment (`--`, `>`), nor break the line.
pub(crate) fn marker(kind: &str, name: &str) -> String {
    let path = name.trim_start_matches("./");
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '%' => out.push_str("%25"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            '!' => out.push_str("%21"),
            '\n' => out.push_str("%0A"),
            '\r' => out.push_str("%0D"),
            '-' if out.ends_with('-') => out.push_str("%2D"),
            c => out.push(c),
        }
    }
    if out.ends_with('-') {
        out.pop();
        out.push_str("%2D");
    }
    format!("<!-- tracegate:{kind}={out} -->")
}

/// Whether a comment body is the sticky comment of this marker (the marker is its first line).
pub(crate) fn is_sticky(body: &str, marker: &str) -> bool {
    body.trim_start().lines().next().map(str::trim_end) == Some(marker)
}

/// The comment: the marker, then the markdown parts (verdict, table, causes; later parts dropped
/// to fit), then a line linking the run that says where any left-out section is. At most
/// [`GITHUB_COMMENT_LIMIT`] characters.
pub(crate) fn body(marker: &str, parts: &[String], run_url: Option<&str>) -> String {
    // The job summary holds every part; the comment points there only when it left some out,
    // and otherwise links the run without promising tables it already holds.
    let pointer = |what: &str| match run_url {
        Some(url) => format!("\n_{what} [workflow run]({url})._\n"),
        None => format!("\n_{what} workflow run._\n"),
    };
    let footer_of = |cut: bool| {
        if cut {
            pointer("Sections left out here are in the job summary of the")
        } else {
            pointer("From the")
        }
    };
    let room = |footer: &str| {
        GITHUB_COMMENT_LIMIT
            .saturating_sub(marker.chars().count() + 1 + footer.chars().count() + NOTE_ROOM)
    };
    let whole: usize = parts.iter().map(|p| p.chars().count()).sum();
    let short = footer_of(false);
    let footer = footer_of(whole > room(&short));
    let markdown = fit(parts.to_vec(), room(&footer));
    format!("{marker}\n{markdown}{footer}")
}

/// What to write, and where.
pub(crate) struct CommentRequest<'a> {
    pub context: &'a Context,
    pub marker: String,
    pub body: String,
    /// Create the comment when none exists (else only update an existing one).
    pub create: bool,
    /// The time every request together may take (`--github-timeout`).
    pub timeout: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CommentOutcome {
    Created { id: u64, url: String },
    Updated { id: u64, url: String },
    Skipped(&'static str),
}

/// What [`sync`] did, and the spoofs it left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Synced {
    pub outcome: CommentOutcome,
    /// Comments that carry the marker but were written by someone else: (id, author, our login).
    pub spoofs: Vec<Spoof>,
}

/// A comment that carries tracegate's marker but that the token's user did not write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spoof {
    pub id: u64,
    pub author: String,
    pub ours: String,
}

impl fmt::Display for Spoof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pull-request comment {} carries tracegate's marker but was written by {}, not {}; \
             left untouched (tracegate edits only its own comment)",
            self.id, self.author, self.ours
        )
    }
}

impl fmt::Display for CommentOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommentOutcome::Created { id, url } => {
                write!(f, "created pull-request comment {id} {url}")
            }
            CommentOutcome::Updated { id, url } => {
                write!(f, "updated pull-request comment {id} {url}")
            }
            CommentOutcome::Skipped(why) => write!(f, "no pull-request comment: {why}"),
        }
    }
}

/// The fields of a GitHub issue comment that the sticky comment needs.
#[derive(Debug, Deserialize)]
struct IssueComment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    user: Option<User>,
}

/// A comment's author, and `GET /user`'s answer.
#[derive(Debug, Deserialize)]
struct User {
    login: String,
}

impl IssueComment {
    fn author(&self) -> &str {
        self.user.as_ref().map_or("", |u| u.login.as_str())
    }
}

/// Creates or updates the sticky comment. Blocks; builds its own current-thread runtime.
pub(crate) fn sync(request: &CommentRequest<'_>) -> Result<Synced, GithubError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| GithubError::Transport(format!("cannot start the async runtime: {e}")))?;
    // `--github-timeout` is the whole budget of every request (the pages of comments, the
    // login, the write), not of each: a slow API holds the job no longer than it.
    runtime.block_on(async {
        tokio::time::timeout(request.timeout, sync_async(request))
            .await
            .unwrap_or(Err(GithubError::Timeout(request.timeout)))
    })
}

async fn sync_async(request: &CommentRequest<'_>) -> Result<Synced, GithubError> {
    let ctx = request.context;
    let token = &ctx.token;
    let crab = octocrab::Octocrab::builder()
        .base_uri(ctx.api_url.as_str())
        .map_err(|e| {
            GithubError::Context(token.redact(&format!("API URL {:?}: {e}", ctx.api_url)))
        })?
        .personal_token(ctx.token.expose().to_string())
        .set_connect_timeout(Some(request.timeout))
        .set_read_timeout(Some(request.timeout))
        .set_write_timeout(Some(request.timeout))
        .build()
        .map_err(|e| from_octocrab(e, token))?;

    let list_route = format!(
        "/repos/{}/{}/issues/{}/comments",
        ctx.owner, ctx.repo, ctx.pr
    );
    let marked = find_marked(&crab, &list_route, request).await?;
    // Whose comments are ours: asked only when there is a marked comment to tell apart.
    let ours = if marked.is_empty() {
        String::new()
    } else {
        own_login(&crab, request).await?
    };
    let (mine, others): (Vec<_>, Vec<_>) = marked
        .into_iter()
        .partition(|(_, author)| author.eq_ignore_ascii_case(&ours));
    let spoofs: Vec<Spoof> = others
        .into_iter()
        .map(|(id, author)| Spoof {
            id,
            author,
            ours: ours.clone(),
        })
        .collect();
    let payload = serde_json::json!({ "body": request.body });
    let outcome = match mine.first() {
        Some(&(id, _)) => {
            let route = format!("/repos/{}/{}/issues/comments/{id}", ctx.owner, ctx.repo);
            let c: IssueComment = timed(request, crab.patch(route, Some(&payload))).await?;
            CommentOutcome::Updated {
                id: c.id,
                url: c.html_url.unwrap_or_default(),
            }
        }
        // A spoof must not stand alone: the real verdict is posted beside it.
        None if request.create || !spoofs.is_empty() => {
            let c: IssueComment = timed(request, crab.post(list_route, Some(&payload))).await?;
            CommentOutcome::Created {
                id: c.id,
                url: c.html_url.unwrap_or_default(),
            }
        }
        None => CommentOutcome::Skipped("the run passed and there is no earlier comment to update"),
    };
    Ok(Synced { outcome, spoofs })
}

/// The login of the token's user: `GET /user`, or [`ACTIONS_BOT`] when GitHub refuses it
/// (HTTP 403), as it does for the default Actions token.
async fn own_login(
    crab: &octocrab::Octocrab,
    request: &CommentRequest<'_>,
) -> Result<String, GithubError> {
    match timed(request, crab.get::<User, _, ()>("/user", None)).await {
        Ok(user) => Ok(user.login),
        Err(e) if e.status() == Some(403) => Ok(ACTIONS_BOT.to_string()),
        Err(e) => Err(e),
    }
}

/// The id and author of every comment carrying the marker, in order, reading every page.
async fn find_marked(
    crab: &octocrab::Octocrab,
    route: &str,
    request: &CommentRequest<'_>,
) -> Result<Vec<(u64, String)>, GithubError> {
    let mut found = Vec::new();
    let mut page: octocrab::Page<IssueComment> =
        timed(request, crab.get(route, Some(&[("per_page", "100")]))).await?;
    for _ in 0..MAX_PAGES {
        found.extend(
            page.items
                .iter()
                .filter(|c| {
                    c.body
                        .as_deref()
                        .is_some_and(|b| is_sticky(b, &request.marker))
                })
                .map(|c| (c.id, c.author().to_string())),
        );
        match timed(request, crab.get_page::<IssueComment>(&page.next)).await? {
            Some(next) => page = next,
            None => break,
        }
    }
    Ok(found)
}

/// Runs one request under the timeout, turning octocrab's error into ours.
async fn timed<T>(
    request: &CommentRequest<'_>,
    call: impl Future<Output = octocrab::Result<T>>,
) -> Result<T, GithubError> {
    match tokio::time::timeout(request.timeout, call).await {
        Err(_) => Err(GithubError::Timeout(request.timeout)),
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => match from_octocrab(e, &request.context.token) {
            GithubError::Transport(m) if looks_like_timeout(&m) => {
                Err(GithubError::Timeout(request.timeout))
            }
            other => Err(other),
        },
    }
}

fn looks_like_timeout(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("timed out") || m.contains("timeout")
}

/// Our error from octocrab's: the status and GitHub's message for an API error, the chain of
/// causes otherwise; the token redacted either way.
fn from_octocrab(e: octocrab::Error, token: &Token) -> GithubError {
    if let octocrab::Error::GitHub { source, .. } = &e {
        let mut message = source.message.clone();
        let exhausted = source
            .headers
            .as_ref()
            .and_then(|h| h.get("x-ratelimit-remaining"))
            .is_some_and(|v| v.as_bytes() == b"0");
        if exhausted {
            message.push_str(" (rate limit exhausted)");
        }
        return GithubError::Api {
            status: source.status_code.as_u16(),
            message: token.redact(&message),
        };
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let line = c.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        cause = c.source();
    }
    // Only the first line: some errors append a backtrace.
    let first = text.lines().next().unwrap_or_default();
    GithubError::Transport(token.redact(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footer_points_to_the_job_summary_only_when_sections_were_left_out() {
        let url = Some("https://github.example/o/r/actions/runs/1");
        let whole = body("<!-- m -->", &["a".repeat(100)], url);
        assert!(!whole.contains("job summary"), "{whole}");
        assert!(
            whole.ends_with(
                "_From the [workflow run](https://github.example/o/r/actions/runs/1)._\n"
            ),
            "{whole}"
        );
        let big = vec!["b".repeat(40_000), "c".repeat(40_000)];
        let cut = body("<!-- m -->", &big, None);
        assert!(cut.chars().count() <= GITHUB_COMMENT_LIMIT);
        assert!(
            cut.contains("left out to fit"),
            "{}",
            &cut[cut.len() - 300..]
        );
        assert!(
            cut.ends_with("_Sections left out here are in the job summary of the workflow run._\n")
        );
    }

    #[test]
    fn markers_cannot_close_the_html_comment() {
        assert_eq!(
            marker("baseline", "./baselines/dsr1-fp4.toml"),
            "<!-- tracegate:baseline=baselines/dsr1-fp4.toml -->"
        );
        for evil in ["a-->b", "a--!>b", "x->", "a---b-", "a\n-->", "<!--x"] {
            let m = marker("baseline", evil);
            let inner = &m["<!-- ".len()..m.len() - " -->".len()];
            assert!(!inner.contains("--"), "{evil}: {m}");
            assert!(!inner.contains('>') && !inner.contains('<'), "{evil}: {m}");
            assert!(
                !inner.ends_with('-') && !inner.contains('\n'),
                "{evil}: {m}"
            );
        }
        assert_ne!(marker("baseline", "a--b"), marker("baseline", "a-%2Db"));
    }

    #[test]
    fn the_sticky_comment_is_found_by_its_first_line() {
        let m = marker("baseline", "baselines/x.toml");
        assert!(is_sticky(&format!("{m}\nbody"), &m));
        assert!(is_sticky(&format!("\n{m}\r\nbody"), &m));
        assert!(!is_sticky(&format!("quoted: {m}\nbody"), &m));
        assert!(!is_sticky(&marker("baseline", "baselines/y.toml"), &m));
        // A sweep named like a baseline still has a comment of its own.
        assert!(!is_sticky(&marker("sweep", "baselines/x.toml"), &m));
    }
}
