//! Exit statuses. Each means one thing; the README documents them.

/// The run passed the gate (or the command did its job).
pub const PASS: i32 = 0;
/// The gate found a regression.
pub const REGRESSION: i32 = 1;
/// tracegate could not judge: unreadable or truncated trace, no decode step, missing or invalid
/// baseline, bad command line. Never 0 when nothing could be judged.
pub const CANNOT_JUDGE: i32 = 2;
