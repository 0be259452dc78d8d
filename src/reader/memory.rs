//! A guard on resident memory: a clear error naming the file and the limit beats being killed by
//! the OS half-way through a multi-gigabyte run.

use super::error::ReadErrorKind;

/// What one analysis may use while it reads and works: resident memory (`--max-memory`), the
/// longest JSON string (`--max-string`) and threads (`--threads`). Carried by value inside the
/// analysis configuration down to the reader, never stored process-wide: two analyses in one
/// process can run side by side with different limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The most resident memory the process may hold, in bytes; `None`: no limit.
    pub memory: Option<u64>,
    /// The longest single JSON string the reader frames, in bytes; longer is an error naming the
    /// event. Kernel names are shorter still in the model (see `event::MAX_NAME`).
    pub max_string: u64,
    /// Threads for reading and for every later stage's parallel work; `None`: one per core. The
    /// result is the same for any number.
    pub threads: Option<usize>,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            memory: None,
            max_string: DEFAULT_STRING_LIMIT,
            threads: None,
        }
    }
}

/// How many events pass between two looks at the resident size (a read of /proc/self/status).
pub(crate) const CHECK_EVERY: u64 = 1 << 15;

/// The default of `--max-string`: 16 MiB, far above any string a profiler writes (stacks and
/// `Input Dims` of real traces stay under 1 MiB).
pub(crate) const DEFAULT_STRING_LIMIT: u64 = 16 << 20;

/// Bytes of input between two looks at the resident size, whatever the number of events: what
/// the reader keeps cannot grow faster than what it reads.
pub(crate) const CHECK_EVERY_BYTES: u64 = 64 << 20;

/// Parses `512M`, `4G`, `1.5G`, `800k` or a plain byte count (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let scale: u64 = match unit
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => return Err(format!("{text:?} is not a size (examples: 512M, 4G, 1.5G)")),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size (examples: 512M, 4G, 1.5G)"))?;
    let bytes = value * scale as f64;
    if bytes.is_nan() {
        return Err(format!("{text:?} is not a size (examples: 512M, 4G, 1.5G)"));
    }
    if bytes >= u64::MAX as f64 {
        return Err(format!(
            "{text:?} is too large: a size is at most {} bytes (16 EiB)",
            u64::MAX
        ));
    }
    if bytes < 1.0 {
        return Err(format!("{text:?} is not a size above zero"));
    }
    Ok(bytes as u64)
}

impl ReadLimits {
    /// The number of threads: [`Self::threads`], or one per core.
    pub fn thread_count(&self) -> usize {
        match self.threads {
            Some(n) if n > 0 => n,
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    /// Runs `work` on a rayon pool of [`Self::thread_count`] threads built for it alone, so that
    /// every parallel stage inside it uses this analysis's threads and no other's (no global
    /// pool is ever configured). Where no pool can be built, `work` runs on the caller's.
    pub fn install<T: Send>(&self, work: impl FnOnce() -> T + Send) -> T {
        match rayon::ThreadPoolBuilder::new()
            .num_threads(self.thread_count())
            .build()
        {
            Ok(pool) => pool.install(work),
            Err(_) => work(),
        }
    }

    /// Errors when the process holds more than the limit.
    pub(crate) fn check(&self) -> Result<(), ReadErrorKind> {
        self.check_room(0)
    }

    /// Errors when the process, holding `extra` bytes more, would hold more than the limit:
    /// checked before a buffer grows, so that the growth itself never passes the limit.
    pub(crate) fn check_room(&self, extra: u64) -> Result<(), ReadErrorKind> {
        let Some(limit) = self.memory.filter(|&l| l > 0) else {
            return Ok(());
        };
        match resident_bytes() {
            Some(held) if held.saturating_add(extra) > limit => Err(ReadErrorKind::MemoryLimit {
                held,
                needed: extra,
                limit,
            }),
            _ => Ok(()),
        }
    }

    /// Errors when the process has held more than the memory limit at any time so far: its
    /// peak resident size (`VmHWM`), not the present one, so that a stage that grew past the
    /// limit and freed what it held is caught all the same. Called at the end of every stage
    /// after reading (the reader checks as it reads), so that a run over the limit is an error
    /// whichever stage grew.
    pub fn check_stage(&self, stage: &'static str) -> Result<(), OverMemory> {
        let Some(limit) = self.memory.filter(|&l| l > 0) else {
            return Ok(());
        };
        match status_bytes("VmHWM:") {
            Some(held) if held > limit => Err(OverMemory { stage, held, limit }),
            _ => Ok(()),
        }
    }
}

/// The limit was passed at some point of a stage after reading (classifying, finding steps,
/// computing figures, analysing, gating): the process's peak resident size is over it.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "stopped after {stage}: tracegate held {} MiB at its peak, over the --max-memory limit of {} MiB",
    crate::units::fixed(*held as f64 / 1048576.0, 1),
    crate::units::fixed(*limit as f64 / 1048576.0, 1)
)]
pub struct OverMemory {
    pub stage: &'static str,
    pub held: u64,
    pub limit: u64,
}

/// How far past `--max-memory` the watchdog lets resident memory go before it ends the process:
/// the reader's and the stages' own checks, which say more, come first at the limit itself.
fn watchdog_margin(limit: u64) -> u64 {
    (limit / 20).min(4 << 20)
}

/// Watches resident memory from a thread of its own, every millisecond, for the rest of the
/// process: past `limit` (and a margin of 5%, at most 4 MiB) it calls `over` with the bytes
/// held, once. The reader looks at the resident size only every so many events and the later
/// stages at their ends; between those looks an allocation that grows with the input (a stage's
/// per-kernel tables, a comment's text) could take the process far past the limit.
pub(crate) fn watch(limit: u64, over: impl FnOnce(u64) + Send + 'static) {
    let threshold = limit.saturating_add(watchdog_margin(limit));
    let watcher = move || loop {
        std::thread::sleep(std::time::Duration::from_millis(1));
        match resident_bytes() {
            Some(held) if held > threshold => return over(held),
            Some(_) => {}
            None => return,
        }
    };
    // Where no thread can be started, the reader's and the stages' checks still hold.
    let _ = std::thread::Builder::new()
        .name("tracegate-memory".into())
        .spawn(watcher);
}

/// The resident set size, from `VmRSS` (Linux); `None` elsewhere, where the guard is off.
fn resident_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// A size field of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_powers_of_1024() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("4GiB"), Ok(4 << 30));
        assert_eq!(parse_size("1.5g"), Ok(3 << 29));
        assert_eq!(parse_size("800k"), Ok(800 << 10));
        assert_eq!(parse_size("1000000"), Ok(1_000_000));
        for bad in ["", "abc", "-1G", "0", "4X", "1e30T", "NaNG"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        // An overflowing size is too large, not "not above zero"; zero and below are.
        for big in ["20000000000G", "16E", "99999999999999999999", "inf"] {
            let e = parse_size(big).unwrap_err();
            assert!(
                e.contains("too large") || e.contains("is not a size ("),
                "{big}: {e}"
            );
        }
        assert!(parse_size("20000000000G")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_size("99999999999999999999")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_size("0.5").unwrap_err().contains("above zero"));
        assert!(parse_size("-1G").unwrap_err().contains("above zero"));
    }

    #[test]
    fn each_analysis_runs_on_a_pool_of_its_own_threads() {
        let limits = |n| ReadLimits {
            threads: Some(n),
            ..Default::default()
        };
        let (one, three) = std::thread::scope(|s| {
            let one = s.spawn(|| limits(1).install(rayon::current_num_threads));
            let three = s.spawn(|| limits(3).install(rayon::current_num_threads));
            (one.join().unwrap(), three.join().unwrap())
        });
        assert_eq!((one, three), (1, 3));
        // No limit: one thread per core; the global pool is never configured.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            ReadLimits::default().install(rayon::current_num_threads),
            cores
        );
    }

    #[test]
    fn a_memory_limit_is_the_analysis_own() {
        let tight = ReadLimits {
            memory: Some(1 << 20),
            ..Default::default()
        };
        if cfg!(target_os = "linux") {
            assert!(tight.check().is_err());
            assert!(tight.check_stage("testing").is_err());
        }
        // Beside it, in the same process, no limit holds.
        assert!(ReadLimits::default().check().is_ok());
        assert!(ReadLimits::default().check_stage("testing").is_ok());
    }

    #[test]
    fn this_process_has_a_resident_size_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(resident_bytes().unwrap() > 1 << 20);
            // The peak is at least the present size.
            assert!(status_bytes("VmHWM:").unwrap() >= resident_bytes().unwrap() / 2);
        }
    }
}
