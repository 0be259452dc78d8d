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

/// The frames of one thread, encoded in arrival order.
#[derive(Debug, Default)]
struct ThreadLog {
    last_ts: i64,
    bytes: Vec<u8>,
}

#[derive(Debug, Default)]
pub(super) struct FrameLog {
    threads: FxHashMap<u64, ThreadLog>,
    len: usize,
}

impl FrameLog {
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn push(&mut self, frame: &PyFrame) {
        let log = self.threads.entry(frame.tid).or_default();
        let delta = frame.ts.wrapping_sub(log.last_ts);
        log.last_ts = frame.ts;
        write_varint(&mut log.bytes, zigzag(delta));
        write_varint(&mut log.bytes, zigzag(frame.dur));
        write_varint(&mut log.bytes, u64::from(frame.name));
        self.len += 1;
    }

    /// Every frame, thread by thread in thread id order, in arrival order within a thread.
    pub(super) fn frames(&self) -> impl Iterator<Item = PyFrame> + '_ {
        let mut threads: Vec<_> = self.threads.iter().collect();
        threads.sort_unstable_by_key(|(&tid, _)| tid);
        threads.into_iter().flat_map(|(&tid, log)| {
            let mut at = 0;
            let mut ts = 0i64;
            std::iter::from_fn(move || {
                if at >= log.bytes.len() {
                    return None;
                }
                ts = ts.wrapping_add(unzigzag(read_varint(&log.bytes, &mut at)));
                let dur = unzigzag(read_varint(&log.bytes, &mut at));
                // Written from a u32 by `push`, so it fits.
                let name = read_varint(&log.bytes, &mut at) as NameId;
                Some(PyFrame { name, ts, dur, tid })
            })
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
