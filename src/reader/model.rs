//! The compact per-rank event model that the reader produces and every later stage consumes.
//!
//! Times are integer nanoseconds: Kineto writes microseconds with up to three decimals, and a
//! 1.7e15 µs epoch timestamp in an `f64` would lose a quarter of a microsecond. Names are interned
//! per rank because a DSR1 decode step repeats the same few hundred kernel names thousands of times.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};
use std::path::PathBuf;

use serde::Serialize;

/// Index into a [`NameTable`].
pub(crate) type NameId = u32;

/// Interned strings of one rank: kernel names, op names, raw `Input Dims` / `Input type` text.
///
/// Found by the hash of the raw bytes of the trace, so a name seen before costs one hash lookup
/// and no UTF-8 validation; only a new name is converted (bad UTF-8 replaced). Each name is kept
/// once: the index holds ids, compared against `names` (a run of a million distinct names).
#[derive(Debug, Default, Clone)]
pub struct NameTable {
    names: Vec<Box<str>>,
    /// The id of every name, by the hash of its text ([`name_hash`]).
    by_text: HashTable<NameId>,
    /// Raw names that were not valid UTF-8, by their bytes (their text is in `by_text`).
    by_bad_bytes: FxHashMap<Box<[u8]>, NameId>,
    /// Distinct raw names that were not valid UTF-8, and the first of them (replaced).
    not_utf8: u64,
    first_not_utf8: Option<NameId>,
    /// Every distinct raw name in the order it was first interned: its id, and its bytes where
    /// they are not the name's text (not UTF-8). Replaying it in another table
    /// ([`NameTable::absorb`]) gives that table the same state as interning the names there.
    raws: Vec<(NameId, Option<Box<[u8]>>)>,
}

/// The hash a name is found by: of its bytes, raw or text alike.
fn name_hash(bytes: &[u8]) -> u64 {
    FxBuildHasher.hash_one(bytes)
}

/// Two tables are equal when they hold the same names under the same ids and found the same
/// names that were not UTF-8 (how they are hashed inside does not matter).
impl PartialEq for NameTable {
    fn eq(&self, other: &Self) -> bool {
        self.names == other.names && self.not_utf8() == other.not_utf8()
    }
}

/// The longest name kept, in bytes: a longer one (a kernel name of megabytes in a hostile or
/// broken trace) is cut to a little less and ends with a marker saying how long it was.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))] // public through `testing`
pub const MAX_NAME: usize = 64 << 10;

/// `name` cut at a character boundary below [`MAX_NAME`], with `…[truncated from N bytes]`
/// appended; at most `MAX_NAME` bytes, so cutting again changes nothing.
pub(crate) fn truncated_name(name: &[u8]) -> Vec<u8> {
    let mut keep = MAX_NAME - 64;
    while keep > 0 && name.get(keep).is_some_and(|b| b & 0xC0 == 0x80) {
        keep -= 1;
    }
    let mut out = name[..keep.min(name.len())].to_vec();
    out.extend_from_slice(format!("…[truncated from {} bytes]", name.len()).as_bytes());
    out
}

impl NameTable {
    pub fn intern(&mut self, name: &str) -> NameId {
        self.intern_bytes(name.as_bytes())
    }

    pub fn intern_bytes(&mut self, raw: &[u8]) -> NameId {
        if raw.len() > MAX_NAME {
            return self.intern_bytes(&truncated_name(raw));
        }
        let hash = name_hash(raw);
        let names = &self.names;
        if let Some(&id) = self
            .by_text
            .find(hash, |&id| names[id as usize].as_bytes() == raw)
        {
            return id;
        }
        if !self.by_bad_bytes.is_empty() {
            if let Some(&id) = self.by_bad_bytes.get(raw) {
                return id;
            }
        }
        let id = match String::from_utf8_lossy(raw) {
            Cow::Borrowed(text) => {
                let id = self.add(hash, text);
                self.raws.push((id, None));
                id
            }
            // Names that are not UTF-8 are found by their bytes and share the id of their text.
            Cow::Owned(text) => {
                let text_hash = name_hash(text.as_bytes());
                let names = &self.names;
                let id = match self
                    .by_text
                    .find(text_hash, |&id| *names[id as usize] == *text)
                {
                    Some(&id) => id,
                    None => self.add(text_hash, &text),
                };
                self.not_utf8 += 1;
                self.first_not_utf8.get_or_insert(id);
                self.raws.push((id, Some(raw.into())));
                self.by_bad_bytes.insert(raw.into(), id);
                id
            }
        };
        id
    }

    /// A new name, of this hash.
    fn add(&mut self, hash: u64, text: &str) -> NameId {
        let id = self.names.len() as NameId;
        self.names.push(text.into());
        let names = &self.names;
        self.by_text
            .insert_unique(hash, id, |&id| name_hash(names[id as usize].as_bytes()));
        id
    }

    /// Interns every raw name of `other` in the order `other` first saw them, so that this table
    /// ends as if it had read `other`'s events after its own; returns the new id of each of
    /// `other`'s ids.
    pub(crate) fn absorb(&mut self, other: &NameTable) -> Vec<NameId> {
        let mut ids = vec![0; other.names.len()];
        // Room for them all at once: a chunk of a million new names grows the table once.
        let names = &self.names;
        self.by_text.reserve(other.names.len(), |&id| {
            name_hash(names[id as usize].as_bytes())
        });
        self.names.reserve(other.names.len());
        self.raws.reserve(other.raws.len());
        for (id, bad) in &other.raws {
            let raw = match bad {
                Some(bytes) => bytes,
                None => other.names[*id as usize].as_bytes(),
            };
            ids[*id as usize] = self.intern_bytes(raw);
        }
        ids
    }

    /// How many distinct raw names were not valid UTF-8, and the first (with U+FFFD for the bad
    /// bytes).
    pub fn not_utf8(&self) -> (u64, Option<&str>) {
        (self.not_utf8, self.first_not_utf8.map(|id| self.get(id)))
    }

    pub fn get(&self, id: NameId) -> &str {
        &self.names[id as usize]
    }

    /// The id of `name` if it was interned.
    pub fn lookup(&self, name: &str) -> Option<NameId> {
        self.by_text
            .find(name_hash(name.as_bytes()), |&id| {
                *self.names[id as usize] == *name
            })
            .copied()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// What kind of GPU activity an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuKind {
    Kernel,
    Memcpy,
    Memset,
}

/// An id stored as `u64` with this value meaning "absent": half the size of `Option<u64>`, which
/// matters at millions of activities. A real id equal to it reads as absent.
const NO_ID: u64 = u64::MAX;

fn pack_id(id: Option<u64>) -> u64 {
    id.unwrap_or(NO_ID)
}

fn unpack_id(raw: u64) -> Option<u64> {
    (raw != NO_ID).then_some(raw)
}

/// Grid and block of a kernel launch, interned per rank in [`RankTrace::launch_dims`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchDims {
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
}

/// One kernel, memcpy or memset on the GPU timeline. Compact (48 bytes): a run of a few million
/// kernels must fit in a fraction of its JSON size (the peak memory of a read is mostly these).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuActivity {
    /// Start, nanoseconds since the trace's epoch.
    pub ts: i64,
    /// Duration in nanoseconds.
    pub dur: i64,
    correlation: u64,
    external_id: u64,
    pub name: NameId,
    pub device: u32,
    /// The stream, folded to 32 bits: see [`fold_stream`].
    stream: u32,
    /// The kind in the top two bits, the index into [`RankTrace::launch_dims`] below (0: not
    /// recorded).
    dims_kind: u32,
}

/// Streams are small numbers (CUDA's 7, 116; HIP's 0..); one that does not fit in 31 bits (a
/// hashed string tid standing for a stream) keeps 31 bits of a hash, with the top bit set, as
/// [`numbers::track_id`](super::numbers) marks hashed tracks. Equality of streams is what the
/// analysis uses; two such ids of one rank colliding is a one-in-a-billion event.
fn fold_stream(stream: u64) -> u32 {
    match u32::try_from(stream) {
        Ok(small) if small < 1 << 31 => small,
        _ => {
            let mixed = stream.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            ((mixed >> 33) as u32) | (1 << 31)
        }
    }
}

/// The largest launch-dimension index an activity holds; [`GpuActivity::set_launch_dims`]
/// records any past it as "not recorded" (a rank cannot hold 2^30 activities in memory).
pub(crate) const MAX_LAUNCH_DIMS: u32 = (1 << 30) - 1;

impl GpuKind {
    fn bits(self) -> u32 {
        match self {
            GpuKind::Kernel => 0,
            GpuKind::Memcpy => 1,
            GpuKind::Memset => 2,
        }
    }

    fn from_bits(bits: u32) -> Self {
        match bits {
            1 => GpuKind::Memcpy,
            2 => GpuKind::Memset,
            _ => GpuKind::Kernel,
        }
    }
}

impl GpuActivity {
    pub fn new(kind: GpuKind, name: NameId, ts: i64, dur: i64, stream: u64, device: u32) -> Self {
        GpuActivity {
            ts,
            dur,
            correlation: NO_ID,
            external_id: NO_ID,
            name,
            device,
            stream: fold_stream(stream),
            dims_kind: kind.bits() << 30,
        }
    }

    pub fn kind(&self) -> GpuKind {
        GpuKind::from_bits(self.dims_kind >> 30)
    }

    /// The stream the activity ran on (see `fold_stream` for ids past 31 bits).
    pub fn stream(&self) -> u64 {
        u64::from(self.stream)
    }

    /// Index into [`RankTrace::launch_dims`] (0: not recorded).
    pub fn launch_dims(&self) -> u32 {
        self.dims_kind & MAX_LAUNCH_DIMS
    }

    pub fn set_launch_dims(&mut self, index: u32) {
        let index = if index > MAX_LAUNCH_DIMS { 0 } else { index };
        self.dims_kind = (self.dims_kind & !MAX_LAUNCH_DIMS) | index;
    }

    pub fn end(&self) -> i64 {
        self.ts + self.dur
    }

    /// Links to the runtime launch ([`Launch::correlation`]) of the same rank.
    pub fn correlation(&self) -> Option<u64> {
        unpack_id(self.correlation)
    }

    /// Links to the CPU op ([`CpuOp::external_id`]) of the same rank.
    pub fn external_id(&self) -> Option<u64> {
        unpack_id(self.external_id)
    }

    pub fn set_correlation(&mut self, id: Option<u64>) {
        self.correlation = pack_id(id);
    }

    pub fn set_external_id(&mut self, id: Option<u64>) {
        self.external_id = pack_id(id);
    }
}

/// Who a collective kernel is across ranks, where the trace says (PyTorch ≥ 2.12: `Process Group
/// Name` and `Seq` on NCCL/RCCL kernels, pytorch/kineto#1296 and #1300): the same group and
/// sequence number on every rank is the same call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CollectiveKey {
    /// The kernel's start and stream, to find it again ([`RankTrace::collective_key`]).
    pub ts: i64,
    pub stream: u64,
    pub group: NameId,
    pub seq: u64,
}

/// One `cpu_op` event (an ATen or custom operator on the host).
#[derive(Debug, Clone, PartialEq)]
pub struct CpuOp {
    pub name: NameId,
    pub ts: i64,
    pub dur: i64,
    pub tid: u64,
    pub external_id: Option<u64>,
    /// Raw JSON text of `args["Input Dims"]`, interned; parse with [`parse_input_dims`].
    pub input_dims: Option<NameId>,
    /// Raw JSON text of `args["Input type"]`, interned.
    pub input_types: Option<NameId>,
}

/// One `python_function` frame kept by the reader (see [`RankTrace::python_frames`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PyFrame {
    pub name: NameId,
    pub ts: i64,
    pub dur: i64,
    pub tid: u64,
}

/// The `graph node id` of a replayed kernel (PyTorch >= 2.12), found by its start and stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphNodeKey {
    pub ts: i64,
    pub stream: u64,
    pub node: u64,
}

/// One runtime or driver call (`cuda_runtime`, `cuda_driver`; HIP calls keep these categories).
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub name: NameId,
    pub ts: i64,
    pub dur: i64,
    pub tid: u64,
    pub correlation: u64,
    pub external_id: Option<u64>,
    /// `cudaGraphLaunch` / `hipGraphLaunch`: one launch, many kernels.
    pub graph: bool,
}

/// Where an annotation was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationSide {
    /// `user_annotation`, on a host thread.
    Cpu,
    /// `gpu_user_annotation`, on a GPU stream.
    Gpu,
}

/// A `user_annotation` or `gpu_user_annotation` range, such as SGLang's `step[DECODE bs=64]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    pub name: NameId,
    pub ts: i64,
    pub dur: i64,
    pub side: AnnotationSide,
    /// Host thread id for CPU annotations, stream for GPU annotations.
    pub track: u64,
}

/// The stage a per-stage SGLang file holds (`-DECODE`, `-EXTEND`, newer `-decode` / `-prefill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Decode,
    Extend,
}

/// The subset of `deviceProperties` the analysis uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeviceInfo {
    pub id: Option<u64>,
    pub name: String,
    pub total_global_mem: Option<u64>,
    pub compute_major: Option<i64>,
    pub compute_minor: Option<i64>,
    pub num_sms: Option<u64>,
}

/// The subset of `distributedInfo` the analysis uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DistributedInfo {
    pub backend: Option<String>,
    pub rank: Option<u64>,
    pub world_size: Option<u64>,
}

/// How the rank of a trace was decided, in order of trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankSource {
    /// A process label such as `[TP03]` in a merged file.
    ProcessLabel,
    /// `distributedInfo.rank`.
    DistributedInfo,
    /// The file name (`-TP-3`, `rank-3`, `worker3`).
    FileName,
    /// Nothing said: the only rank of a single file.
    Default,
}

impl RankSource {
    /// Where the rank number came from, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            RankSource::ProcessLabel => "process label",
            RankSource::DistributedInfo => "distributedInfo.rank",
            RankSource::FileName => "file name",
            RankSource::Default => "default",
        }
    }
}

/// Which rank a [`RankTrace`] belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankId {
    /// Numeric rank: the TP index of a label, `distributedInfo.rank`, or the file-name number.
    pub index: u32,
    /// Human label, e.g. `TP03` or `TP00-DP01-PP00-EP03`.
    pub label: String,
    pub source: RankSource,
}

/// Counts of what the reader saw, skipped or could not use; reported, never fatal.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReadStats {
    /// Events seen, by `cat` (metadata events count under `__metadata`).
    pub events_by_category: BTreeMap<String, u64>,
    /// `python_function` events seen (read for `name`, `tid`, `ts` and `dur` only).
    pub python_functions_skipped: u64,
    /// `python_function` frames kept: those of at least 500 ns that enclose a runtime launch on
    /// their thread, the frames a kernel's Python call site is read from.
    pub python_frames_kept: u64,
    /// Events of a kept category that lacked a field needed to use them (`ts`, `dur`, `correlation`).
    pub incomplete_events: u64,
    /// GPU activities with a negative duration, dropped.
    pub negative_durations: u64,
    /// Flow events (`ac2g`, `async_cpu_to_gpu`).
    pub flow_events: u64,
    /// Events that are valid JSON but not an event object of the expected shape; skipped.
    pub malformed_events: u64,
    /// Events of a merged file that carry no rank label (such as pid `"Spans"`); counted, not
    /// attributed to any rank.
    pub unattributed_events: u64,
    /// Uncompressed bytes of JSON read: the file's size, split evenly between the ranks of a merged file.
    pub json_bytes: u64,
    /// Top-level log buckets (`WARNING`, `ERROR`) skipped as lines because they are not JSON
    /// (quotes left unescaped, pytorch/kineto#1459).
    pub unreadable_log_buckets: Vec<String>,
}

impl ReadStats {
    /// Adds the counts the reader makes while reading events (the others are set afterwards).
    pub(crate) fn absorb(&mut self, other: ReadStats) {
        for (cat, n) in other.events_by_category {
            *self.events_by_category.entry(cat).or_default() += n;
        }
        self.python_functions_skipped += other.python_functions_skipped;
        self.python_frames_kept += other.python_frames_kept;
        self.incomplete_events += other.incomplete_events;
        self.negative_durations += other.negative_durations;
        self.flow_events += other.flow_events;
        self.malformed_events += other.malformed_events;
        self.unattributed_events += other.unattributed_events;
        self.json_bytes += other.json_bytes;
        self.unreadable_log_buckets
            .extend(other.unreadable_log_buckets);
    }
}

/// All events of one rank from one file (or one rank's share of a merged file).
#[derive(Debug, Clone, PartialEq)]
pub struct RankTrace {
    pub rank: RankId,
    pub file: PathBuf,
    pub stage: Option<Stage>,
    pub device: Option<DeviceInfo>,
    pub distributed: Option<DistributedInfo>,
    pub names: NameTable,
    /// GPU activities, sorted by start time.
    pub gpu: Vec<GpuActivity>,
    /// CPU ops, sorted by start time.
    pub cpu_ops: Vec<CpuOp>,
    /// Runtime and driver calls that carry a correlation id, sorted by start time.
    pub launches: Vec<Launch>,
    /// Annotations, sorted by start time.
    pub annotations: Vec<Annotation>,
    /// Distinct grid/block pairs; entry 0 is "not recorded".
    pub launch_dims: Vec<LaunchDims>,
    pub stats: ReadStats,
    /// Collective kernels that carry a process group and a sequence number, sorted by start.
    pub collective_keys: Vec<CollectiveKey>,
    /// (kernel name, collective name) of kernels that carry c10d's `Collective name`, sorted by
    /// kernel name: the trace's own word that the kernel is that collective.
    pub collective_names: Vec<(NameId, NameId)>,
    /// `python_function` frames that enclose a runtime launch, sorted by start.
    pub python_frames: Vec<PyFrame>,
    /// Replayed kernels' `graph node id`, sorted by start.
    pub graph_nodes: Vec<GraphNodeKey>,
    /// Who made the trace, from its top-level keys (`vllm_version`, `host_name`,
    /// `PT_PROFILER_*`), by the name each takes in the run's identity (`vllm`, `host`, `job`...).
    pub producer: BTreeMap<String, String>,
}

impl RankTrace {
    pub fn name(&self, id: NameId) -> &str {
        self.names.get(id)
    }

    /// The process group (by name) and sequence number of a collective kernel, where the trace
    /// recorded them.
    pub fn collective_key(&self, activity: &GpuActivity) -> Option<(&str, u64)> {
        let keys = &self.collective_keys;
        let from = keys.partition_point(|k| k.ts < activity.ts);
        keys[from..]
            .iter()
            .take_while(|k| k.ts == activity.ts)
            .find(|k| k.stream == activity.stream())
            .map(|k| (self.name(k.group), k.seq))
    }

    /// The `graph node id` of a replayed kernel, where the trace recorded it.
    pub fn graph_node_of(&self, activity: &GpuActivity) -> Option<u64> {
        let keys = &self.graph_nodes;
        let from = keys.partition_point(|k| k.ts < activity.ts);
        keys[from..]
            .iter()
            .take_while(|k| k.ts == activity.ts)
            .find(|k| k.stream == activity.stream())
            .map(|k| k.node)
    }

    /// Grid and block of an activity, where the trace recorded them.
    pub fn launch_dims_of(&self, activity: &GpuActivity) -> Option<&LaunchDims> {
        (activity.launch_dims() != 0)
            .then(|| self.launch_dims.get(activity.launch_dims() as usize))
            .flatten()
    }
}

/// A profile run: every rank trace of every file given, sorted by rank then stage.
#[derive(Debug, Clone, Default)]
pub struct Run {
    pub traces: Vec<RankTrace>,
    /// The ranks the run says it has but the files given do not hold; `None` when whole.
    pub missing: Option<MissingRanks>,
    /// The data-parallel group the files hold when they hold one whole group of a larger
    /// world (`DP group 1 of 2: TP 2 of world_size 4`): judged as that group, not as a run
    /// missing the other groups' ranks.
    pub dp_group: Option<String>,
    /// Files left out: CPU-only traces that name no rank (a serving frontend's, vLLM's
    /// `async_llm` trace), read beside the workers' traces.
    pub skipped: Vec<PathBuf>,
}

/// Ranks a run is missing: from `distributedInfo.world_size`, or from the rank numbers found
/// (ranks below the highest one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingRanks {
    /// The ranks the run should have.
    pub expected: u64,
    /// The ranks the files hold.
    pub present: usize,
    /// The missing ranks, listed ("1, 2, 3", the first 16 and "and N more").
    pub listed: String,
    /// What says so ("world_size in distributedInfo", "rank numbers found").
    pub why: String,
}

impl MissingRanks {
    /// "1 of 4 ranks".
    pub fn share(&self) -> String {
        format!("{} of {} ranks", self.present, self.expected)
    }
}

impl std::fmt::Display for MissingRanks {
    /// "1 of 4 ranks (rank(s) 1, 2, 3 missing: world_size in distributedInfo)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (rank(s) {} missing: {})",
            self.share(),
            self.listed,
            self.why
        )
    }
}

impl Run {
    /// Distinct rank indices, ascending.
    pub fn rank_indices(&self) -> Vec<u32> {
        let mut ranks: Vec<u32> = self.traces.iter().map(|t| t.rank.index).collect();
        ranks.dedup();
        ranks
    }
}

/// Parses the raw text of an `Input Dims` argument into one shape per input.
///
/// A scalar, non-tensor or tensor-list input is an empty shape; malformed text gives no inputs.
pub(crate) fn parse_input_dims(raw: &str) -> Vec<Vec<i64>> {
    let value: serde_json::Value = match serde_json::from_str(raw) {
        Ok(v) => v,
        Err(_) => return Vec::new(),
    };
    let serde_json::Value::Array(inputs) = value else {
        return Vec::new();
    };
    inputs
        .iter()
        .map(|input| match input {
            serde_json::Value::Array(dims) => dims.iter().filter_map(|d| d.as_i64()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// True when an `Input Dims` text holds at least one number (a tensor input with a shape).
pub(crate) fn dims_have_numbers(raw: &str) -> bool {
    raw.bytes().any(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_utf8_are_counted_once_each() {
        let mut names = NameTable::default();
        names.intern("nvjet_ok");
        assert_eq!(names.not_utf8(), (0, None));
        let bad = b"k\xff";
        let id = names.intern_bytes(bad);
        assert_eq!(names.intern_bytes(bad), id);
        names.intern_bytes(b"j\xfe");
        assert_eq!(names.not_utf8(), (2, Some("k\u{fffd}")));
    }

    #[test]
    fn activities_stay_compact_and_ids_round_trip() {
        assert!(std::mem::size_of::<GpuActivity>() <= 48);
        let mut a = GpuActivity::new(GpuKind::Kernel, 0, 1, 2, 7, 0);
        assert_eq!((a.correlation(), a.external_id()), (None, None));
        a.set_correlation(Some(9));
        a.set_external_id(Some(0));
        assert_eq!((a.correlation(), a.external_id()), (Some(9), Some(0)));
        for kind in [GpuKind::Kernel, GpuKind::Memcpy, GpuKind::Memset] {
            let mut a = GpuActivity::new(kind, 0, 1, 2, 7, 0);
            for dims in [0, 1, 12345, MAX_LAUNCH_DIMS] {
                a.set_launch_dims(dims);
                assert_eq!((a.kind(), a.launch_dims()), (kind, dims));
            }
            a.set_launch_dims(MAX_LAUNCH_DIMS + 1);
            assert_eq!((a.kind(), a.launch_dims()), (kind, 0));
        }
    }

    #[test]
    fn streams_keep_their_number_and_large_ids_stay_apart() {
        let stream = |s: u64| GpuActivity::new(GpuKind::Kernel, 0, 1, 2, s, 0).stream();
        for s in [0, 7, 116, (1 << 31) - 1] {
            assert_eq!(stream(s), s);
        }
        // Hashed string tids (top bit set) and ids past 31 bits: distinct and never a small id.
        let large: Vec<u64> = [1 << 31, u64::from(u32::MAX), 1 << 40, u64::MAX]
            .into_iter()
            .chain((0..1000).map(|k| (1 << 63) | (k * 0x1234_5678_9abc)))
            .map(stream)
            .collect();
        assert!(large.iter().all(|&s| s >= 1 << 31));
        let distinct: std::collections::BTreeSet<_> = large.iter().collect();
        assert_eq!(distinct.len(), large.len());
    }

    #[test]
    fn interning_returns_the_same_id_for_the_same_name() {
        let mut names = NameTable::default();
        let a = names.intern("ncclDevKernel_AllGather_RING_LL");
        let b = names.intern("nvjet_tst_64x32");
        assert_eq!(names.intern("ncclDevKernel_AllGather_RING_LL"), a);
        assert_ne!(a, b);
        assert_eq!(names.get(b), "nvjet_tst_64x32");
        assert_eq!(names.len(), 2);
        // Two byte sequences that read the same once bad UTF-8 is replaced are one name.
        let a = names.intern_bytes(b"k\xff");
        assert_eq!(names.intern_bytes(b"k\xfe"), a);
        assert_eq!(names.get(a), "k\u{fffd}");
    }

    #[test]
    fn a_name_and_a_bad_name_of_the_same_text_are_one_name_in_either_order() {
        let mut names = NameTable::default();
        let a = names.intern("k\u{fffd}");
        assert_eq!(names.intern_bytes(b"k\xff"), a);
        assert_eq!(names.lookup("k\u{fffd}"), Some(a));
        let b = names.intern_bytes(b"j\xfe");
        assert_eq!(names.intern("j\u{fffd}"), b);
        assert_eq!(names.intern_bytes(b"j\xff"), b);
        assert_eq!(names.lookup("j\u{fffd}"), Some(b));
        assert_eq!(names.lookup("nothing"), None);
        assert_eq!(names.len(), 2);
        assert_eq!(names.not_utf8(), (3, Some("k\u{fffd}")));
        // Absorbing replays the same names under the same ids.
        let mut other = NameTable::default();
        assert_eq!(other.absorb(&names), vec![0, 1]);
        assert_eq!(other, names);
    }

    #[test]
    fn input_dims_parse_per_input_and_keep_empty_inputs() {
        let dims = parse_input_dims("[[64, 7168], [1536, 7168], [], []]");
        assert_eq!(dims, vec![vec![64, 7168], vec![1536, 7168], vec![], vec![]]);
        assert!(dims_have_numbers("[[64, 7168], []]"));
        assert!(!dims_have_numbers("[[], [], []]"));
        assert!(parse_input_dims("not json").is_empty());
    }
}
