//! Where the comment goes: the API URL, the repository, the pull request and the token, from the
//! command line, then the Actions environment (`GITHUB_REPOSITORY`, `GITHUB_EVENT_PATH`,
//! `GITHUB_REF`, `GITHUB_API_URL`).

use std::fmt;

use super::{GithubError, Options};

pub(crate) const DEFAULT_API_URL: &str = "https://api.github.com";

/// A token. Its `Debug` and `Display` never show it; [`Token::redact`] removes it from text.
#[derive(Clone)]
pub(crate) struct Token(String);

impl Token {
    pub(crate) fn new(secret: String) -> Token {
        Token(secret)
    }

    /// The secret itself, for the HTTP client only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the token replaced by `***`.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.0, "***")
        }
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

/// The pull request to comment on and how to reach it.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    pub api_url: String,
    pub owner: String,
    pub repo: String,
    pub pr: u64,
    pub token: Token,
}

/// `owner/name`, each part of the characters GitHub allows.
pub(crate) fn parse_repo(text: &str) -> Result<(String, String), GithubError> {
    let ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    match text.split_once('/') {
        Some((owner, name)) if ok(owner) && ok(name) => Ok((owner.to_string(), name.to_string())),
        _ => Err(GithubError::Context(format!(
            "repository {text:?} is not OWNER/NAME"
        ))),
    }
}

/// The pull-request number of an Actions event payload: `pull_request.number` (pull_request,
/// pull_request_target), or `issue.number` of an issue that is a pull request (issue_comment).
pub(crate) fn pr_from_event(event: &serde_json::Value) -> Option<u64> {
    if let Some(n) = event
        .get("pull_request")
        .and_then(|p| p.get("number"))
        .and_then(serde_json::Value::as_u64)
    {
        return Some(n);
    }
    let issue = event.get("issue")?;
    issue.get("pull_request")?;
    issue.get("number")?.as_u64()
}

/// The pull-request number of `refs/pull/N/merge` or `refs/pull/N/head`.
pub(crate) fn pr_from_ref(git_ref: &str) -> Option<u64> {
    let rest = git_ref.strip_prefix("refs/pull/")?;
    let (number, tail) = rest.split_once('/')?;
    matches!(tail, "merge" | "head")
        .then(|| number.parse().ok())
        .flatten()
}

/// Refuses, before anything is judged, an event payload that no runner writes: a special file
/// (`/dev/zero`, a FIFO) or one over GitHub's 25 MB. [`Context::discover`] reads it for the
/// comment's pull request only, so it is checked only when a comment may be written and `--pr`
/// does not give the pull request. A path that does not exist or cannot be read stays a warning
/// at comment time, like a missing token.
pub(crate) fn check_event_file(
    options: &Options,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), GithubError> {
    if options.comment == super::CommentMode::Off || options.pr.is_some() {
        return Ok(());
    }
    let Some(path) = env("GITHUB_EVENT_PATH") else {
        return Ok(());
    };
    match crate::files::check_regular_capped(path.as_ref(), crate::files::EVENT_CAP) {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData
            ) =>
        {
            Err(GithubError::Context(format!(
                "GITHUB_EVENT_PATH {path}: {e}, refused (a runner writes the event payload as a \
                 JSON file of at most 25 MB)"
            )))
        }
        _ => Ok(()),
    }
}

impl Context {
    /// Resolves the comment's target from the options, then the environment (`env` returns a
    /// variable's non-empty value).
    pub(crate) fn discover(
        options: &Options,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Context, GithubError> {
        let repo_text = options
            .repo
            .clone()
            .or_else(|| env("GITHUB_REPOSITORY"))
            .ok_or_else(|| {
                GithubError::Context("no repository (--repo or GITHUB_REPOSITORY)".into())
            })?;
        let (owner, repo) = parse_repo(&repo_text)?;
        let pr = match options.pr {
            Some(n) => Some(n),
            None => {
                let from_event = match env("GITHUB_EVENT_PATH") {
                    Some(path) => {
                        let text =
                            crate::files::read_text_capped(path.as_ref(), crate::files::EVENT_CAP)
                                .map_err(|e| {
                                    GithubError::Context(format!(
                                        "{path}: cannot read the event: {e}"
                                    ))
                                })?;
                        let event: serde_json::Value =
                            serde_json::from_str(&text).map_err(|e| {
                                GithubError::Context(format!("{path}: not an event payload: {e}"))
                            })?;
                        pr_from_event(&event)
                    }
                    None => None,
                };
                from_event.or_else(|| env("GITHUB_REF").and_then(|r| pr_from_ref(&r)))
            }
        };
        let pr = pr.ok_or_else(|| {
            GithubError::Context(
                "not a pull request (no --pr, and the event is not a pull request)".into(),
            )
        })?;
        let token = env(&options.token_env)
            .ok_or_else(|| GithubError::Context(format!("no token in ${}", options.token_env)))?;
        let api_url = options
            .api_url
            .clone()
            .or_else(|| env("GITHUB_API_URL"))
            .unwrap_or_else(|| DEFAULT_API_URL.to_string());
        Ok(Context {
            api_url: api_url.trim_end_matches('/').to_string(),
            owner,
            repo,
            pr,
            token: Token::new(token),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        move |k: &str| map.get(k).cloned()
    }

    #[test]
    fn tokens_never_show_in_debug_and_are_redacted() {
        let t = Token::new("ghs_secret123".into());
        let c = Context {
            api_url: DEFAULT_API_URL.into(),
            owner: "o".into(),
            repo: "r".into(),
            pr: 1,
            token: t.clone(),
        };
        assert!(!format!("{c:?}").contains("ghs_secret123"));
        assert_eq!(t.redact("Bearer ghs_secret123 x"), "Bearer *** x");
    }

    #[test]
    fn pull_request_numbers_from_events_and_refs() {
        let pr: serde_json::Value = serde_json::json!({"number": 7, "pull_request": {"number": 7}});
        assert_eq!(pr_from_event(&pr), Some(7));
        let comment = serde_json::json!({"issue": {"number": 9, "pull_request": {"url": "u"}}});
        assert_eq!(pr_from_event(&comment), Some(9));
        let issue = serde_json::json!({"issue": {"number": 9}});
        assert_eq!(pr_from_event(&issue), None);
        assert_eq!(
            pr_from_event(&serde_json::json!({"ref": "refs/heads/main"})),
            None
        );
        assert_eq!(pr_from_ref("refs/pull/12/merge"), Some(12));
        assert_eq!(pr_from_ref("refs/heads/main"), None);
    }

    #[test]
    fn discovery_reads_the_event_file_and_the_flags_win() {
        let dir = tempfile::tempdir().unwrap();
        let event = dir.path().join("event.json");
        std::fs::write(&event, r#"{"pull_request": {"number": 42}}"#).unwrap();
        let env = env_of(&[
            ("GITHUB_REPOSITORY", "acme/infer".into()),
            ("GITHUB_EVENT_PATH", event.display().to_string()),
            ("GITHUB_TOKEN", "t0k".into()),
            ("GITHUB_API_URL", "http://127.0.0.1:9/".into()),
        ]);
        let c = Context::discover(&Options::default(), &env).unwrap();
        assert_eq!(
            (c.owner.as_str(), c.repo.as_str(), c.pr),
            ("acme", "infer", 42)
        );
        assert_eq!(c.api_url, "http://127.0.0.1:9");
        let options = Options {
            pr: Some(5),
            repo: Some("x/y".into()),
            token_env: "OTHER".into(),
            ..Options::default()
        };
        let err = Context::discover(&options, &env).unwrap_err();
        assert!(err.to_string().contains("$OTHER"), "{err}");
        let env2 = env_of(&[("OTHER", "t".into())]);
        let c = Context::discover(&options, &env2).unwrap();
        assert_eq!((c.owner.as_str(), c.pr), ("x", 5));
    }

    #[test]
    fn repositories_must_be_owner_slash_name() {
        assert!(parse_repo("a/b").is_ok());
        for bad in ["a", "a/b/c", "/b", "a/", "a/b?x", "a/..", "a b/c"] {
            assert!(parse_repo(bad).is_err(), "{bad}");
        }
    }
}
