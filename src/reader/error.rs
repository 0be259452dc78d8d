//! Reader errors: each names the file and says what is wrong in one line.

use std::io;
use std::path::PathBuf;

impl ReadError {
    /// A run missing some of its ranks, named by its first path.
    pub(crate) fn missing_ranks(paths: &[PathBuf], m: &super::MissingRanks) -> ReadError {
        ReadError {
            path: paths.first().cloned().unwrap_or_default(),
            kind: ReadErrorKind::MissingRanks {
                missing: m.listed.clone(),
                expected: m.expected,
                why: m.why.clone(),
            },
        }
    }
}

/// A file that cannot be read as a trace. Displayed as `<path>: <what is wrong>`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct ReadError {
    pub path: PathBuf,
    pub kind: ReadErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadErrorKind {
    #[error("cannot read: {0}")]
    Io(#[source] io::Error),
    #[error("corrupt or truncated gzip data: {0}")]
    Gzip(#[source] io::Error),
    #[error("the file is empty")]
    Empty,
    #[error("truncated JSON: the data ends at byte {offset} inside {context}")]
    TruncatedJson { offset: u64, context: &'static str },
    #[error("malformed JSON at byte {offset}: {message}")]
    Json { offset: u64, message: String },
    #[error("not a PyTorch-profiler trace: {0}")]
    NotATrace(String),
    #[error("no GPU activity: {0}")]
    NoGpuActivity(String),
    /// A CPU-only trace that names no rank (neither `distributedInfo` nor a rank in its file
    /// name): a serving frontend's, such as vLLM's `async_llm` trace. Skipped beside worker
    /// traces; alone, the run has no GPU activity.
    #[error(
        "no GPU activity: {events} events, {cpu_ops} CPU ops, no kernel, and no rank: a serving \
         frontend's CPU-only trace (vLLM writes `*.async_llm.*.pt.trace.json.gz` beside its \
         workers' traces), not a rank's"
    )]
    CpuOnlyFrontend { events: u64, cpu_ops: usize },
    #[error("{count} event(s) or name(s) the analysis cannot use, first {first}; a figure computed without them would be wrong")]
    UnusableEvents { count: u64, first: String },
    #[error("{}", memory_limit_text(*held, *needed, *limit))]
    MemoryLimit {
        /// Resident bytes when the limit was checked.
        held: u64,
        /// Bytes about to be taken on top of `held` (a buffer growing to frame a long string);
        /// 0 when `held` alone is over the limit.
        needed: u64,
        limit: u64,
    },
    #[error("no .json or .json.gz trace file in this directory")]
    NoTraceFiles,
    #[error("this file is given twice (once is enough)")]
    GivenTwice,
    #[error("{what} appears twice: also in {other}")]
    Duplicate { what: String, other: PathBuf },
    #[error("{what}: over the {cap} ranks tracegate accepts in one run")]
    TooManyRanks { what: String, cap: u64 },
    #[error(
        "a string of more than {limit} bytes (the --max-string limit) at byte {offset}, in {place}"
    )]
    StringTooLong {
        offset: u64,
        limit: u64,
        /// The event that holds it (`the event starting {"ph": "X", "name": "...`) or the part
        /// of the file.
        place: String,
    },
    #[error(
        "the run is incomplete: rank(s) {missing} of {expected} missing ({why}); a check of the \
         ranks present would judge them as the whole run (--partial-ranks records and judges a \
         partial set as such)"
    )]
    MissingRanks {
        missing: String,
        expected: u64,
        why: String,
    },
}

/// "stopped reading: tracegate holds 1.0 GiB, over the --max-memory limit of 512.0 MiB", or with
/// bytes about to be taken, "... holds 520.0 MiB and needs 512.0 MiB more to frame a long string
/// (1.0 GiB), over ...": the figures as they are, never what was held plus what was asked for as
/// if it were held.
fn memory_limit_text(held: u64, needed: u64, limit: u64) -> String {
    use crate::units::bytes;
    let holds = if needed == 0 {
        format!("holds {}", bytes(held))
    } else {
        format!(
            "holds {} and needs {} more to frame a long string ({})",
            bytes(held),
            bytes(needed),
            bytes(held.saturating_add(needed))
        )
    };
    format!(
        "stopped reading: tracegate {holds}, over the --max-memory limit of {}",
        bytes(limit)
    )
}
