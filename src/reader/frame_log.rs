//! The `python_function` frames held while a rank is read, until its launches are known.
//!
//! Kineto writes every `python_function` event before the first runtime launch, so a frame
//! cannot be judged (does it enclose a launch?) when it is read: it must be held. A trace with
//! Python tracing on holds hundreds of thousands, so they are held as bytes, not structs: per
//! thread, each frame's start as the difference from the previous one's (zigzag), its duration
//! and its name id, each a LEB128 varint. A thread's frames arrive in start order in every
//! producer's file we have, so a frame takes 5 to 7 bytes instead of the 32 of a [`PyFrame`];
//! out-of-order starts still round-trip (a negative difference), they only take more bytes.

use rustc_hash::FxHashMap;

use super::model::{NameId, PyFrame};

/// Threads with a log of their own. A trace has a few Python threads; a hostile one can give
/// every event a new id, and a log per thread would then cost a map entry and an allocation per
/// frame (190 bytes a frame, measured): frames of threads past this many share one log that also
/// records each one's thread.
const MAX_THREADS: usize = 1024;

/// Frames encoded in arrival order: those of one thread, or (`others`) of many, each with its id.
#[derive(Debug, Default)]
struct ThreadLog {
    last_ts: i64,
    bytes: Vec<u8>,
}

#[derive(Debug, Default)]
pub(super) struct FrameLog {
    threads: FxHashMap<u64, ThreadLog>,
    others: ThreadLog,
    len: usize,
}

impl FrameLog {
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn push(&mut self, frame: &PyFrame) {
        self.len += 1;
        if self.threads.len() < MAX_THREADS {
            self.threads
                .entry(frame.tid)
                .or_default()
                .push(frame, false);
        } else {
            self.push_past_max_threads(frame);
        }
    }

    #[cold]
    #[inline(never)]
    fn push_past_max_threads(&mut self, frame: &PyFrame) {
        match self.threads.get_mut(&frame.tid) {
            Some(log) => log.push(frame, false),
            None => self.others.push(frame, true),
        }
    }

    /// Every frame: thread by thread in thread id order, in arrival order within a thread, then
    /// those of the threads past [`MAX_THREADS`] in arrival order.
    pub(super) fn frames(&self) -> impl Iterator<Item = PyFrame> + '_ {
        let mut threads: Vec<_> = self.threads.iter().collect();
        threads.sort_unstable_by_key(|(&tid, _)| tid);
        threads
            .into_iter()
            .flat_map(|(&tid, log)| log.frames(Some(tid)))
            .chain(self.others.frames(None))
    }
}

impl ThreadLog {
    fn push(&mut self, frame: &PyFrame, with_tid: bool) {
        if with_tid {
            write_varint(&mut self.bytes, frame.tid);
        }
        let delta = frame.ts.wrapping_sub(self.last_ts);
        self.last_ts = frame.ts;
        write_varint(&mut self.bytes, zigzag(delta));
        write_varint(&mut self.bytes, zigzag(frame.dur));
        write_varint(&mut self.bytes, u64::from(frame.name));
    }

    /// The frames back, of thread `tid`, or each with its own where `tid` is `None`.
    fn frames(&self, tid: Option<u64>) -> impl Iterator<Item = PyFrame> + '_ {
        let mut at = 0;
        let mut ts = 0i64;
        std::iter::from_fn(move || {
            if at >= self.bytes.len() {
                return None;
            }
            let tid = tid.unwrap_or_else(|| read_varint(&self.bytes, &mut at));
            ts = ts.wrapping_add(unzigzag(read_varint(&self.bytes, &mut at)));
            let dur = unzigzag(read_varint(&self.bytes, &mut at));
            // Written from a u32 by `push`, so it fits.
            let name = read_varint(&self.bytes, &mut at) as NameId;
            Some(PyFrame { name, ts, dur, tid })
        })
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint written by [`write_varint`] (the log is only ever read back by itself).
fn read_varint(bytes: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = bytes[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tid: u64, ts: i64, dur: i64, name: NameId) -> PyFrame {
        PyFrame { name, ts, dur, tid }
    }

    #[test]
    fn frames_round_trip_per_thread_in_arrival_order() {
        let input = [
            frame(7, 1_700_000_000_000_000_000, 4_000, 3),
            frame(9, 1_700_000_000_000_000_500, 600, 0),
            frame(7, 1_700_000_000_000_001_000, 86_400_000_000_000, u32::MAX),
            // Out of order on its thread, and at the extremes of the types.
            frame(7, 5, 500, 1),
            frame(u64::MAX, i64::MAX, i64::MAX, 2),
            frame(u64::MAX, 0, 0, 2),
        ];
        let mut log = FrameLog::default();
        for f in &input {
            log.push(f);
        }
        assert!(!log.is_empty());
        let got: Vec<PyFrame> = log.frames().collect();
        let mut want = input.to_vec();
        want.sort_by_key(|f| f.tid); // stable: arrival order kept within a thread
        assert_eq!(got, want);
    }

    #[test]
    fn a_new_thread_id_per_frame_costs_bytes_not_a_log_each() {
        let mut log = FrameLog::default();
        let input: Vec<PyFrame> = (0..5_000u64)
            .map(|i| {
                let ts = 1_700_000_000_000_000_000 + i as i64;
                frame(1_000_000 + i * 7, ts, 900, 2)
            })
            .collect();
        for f in &input {
            log.push(f);
        }
        assert_eq!(log.threads.len(), MAX_THREADS);
        let back: Vec<PyFrame> = log.frames().collect();
        assert_eq!(back, input, "tid order, then arrival order");
        // Past MAX_THREADS a frame is its thread id (3 bytes here) and 1 + 2 + 1.
        let others = input.len() - MAX_THREADS;
        assert_eq!(log.others.bytes.len(), 3 + 9 + 2 + 1 + (others - 1) * 7);
        // A thread that has a log keeps it.
        log.push(&frame(1_000_000, 5, 600, 1));
        assert_eq!(log.frames().nth(1).unwrap(), frame(1_000_000, 5, 600, 1));
    }

    #[test]
    fn a_frame_in_start_order_takes_a_few_bytes() {
        let mut log = FrameLog::default();
        for i in 0..1_000i64 {
            log.push(&frame(1, 1_700_000_000_000_000_000 + i * 3_750, 2_000, 40));
        }
        let bytes: usize = log.threads.values().map(|t| t.bytes.len()).sum();
        // The first frame's start takes 9 bytes; every other frame 2 + 2 + 1.
        assert_eq!(bytes, 9 + 2 + 1 + 999 * 5);
    }
}
