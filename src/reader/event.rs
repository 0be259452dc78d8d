//! One trace event: parsed from a borrowed slice into only the fields the analysis uses, then
//! turned into the model type of its category.

use std::borrow::Cow;
use std::fmt;

use rustc_hash::FxHashMap;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::frame_log::FrameLog;
use super::model::{
    Annotation, AnnotationSide, CollectiveKey, CpuOp, GpuActivity, GpuKind, GraphNodeKey, Launch,
    LaunchDims, NameId, NameTable, PyFrame, ReadStats,
};
use super::numbers::{micros_to_ns, parse_dim3, parse_u64, track_id, unquote};

/// The raw bytes of a JSON string (escapes resolved, UTF-8 not yet checked), borrowed when it can
/// be: names are interned by their bytes and validated only the first time they are seen.
#[derive(Debug, Default, PartialEq)]
pub(super) struct RawStr<'a>(pub Cow<'a, [u8]>);

impl RawStr<'_> {
    pub(super) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RawStrVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for RawStrVisitor<'a> {
            type Value = RawStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Self::Value, E> {
                Ok(RawStr(Cow::Borrowed(v)))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Self::Value, E> {
                Ok(RawStr(Cow::Owned(v.to_vec())))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(RawStr(Cow::Borrowed(v.as_bytes())))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawStr(Cow::Owned(v.as_bytes().to_vec())))
            }
        }
        // Asking for bytes makes serde_json skip UTF-8 validation: names may hold bad UTF-8.
        d.deserialize_bytes(RawStrVisitor(std::marker::PhantomData))
    }
}

/// The raw JSON text of a value (a number, a string with its quotes, an array), borrowed from
/// the input: numbers are converted exactly from their text. Checked to be UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RawText<'a>(pub &'a str);

impl<'a> RawText<'a> {
    pub(super) fn get(&self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|v| RawText(v.get()))
    }
}

/// The arguments the analysis reads; every other key is skipped without being parsed.
#[derive(Debug, Default, PartialEq)]
pub(super) struct RawArgs<'a> {
    pub external_id: Option<RawText<'a>>,
    pub correlation: Option<RawText<'a>>,
    pub stream: Option<RawText<'a>>,
    pub device: Option<RawText<'a>>,
    pub grid: Option<RawText<'a>>,
    pub block: Option<RawText<'a>>,
    pub input_dims: Option<RawText<'a>>,
    pub input_type: Option<RawText<'a>>,
    /// A collective's sequence number in its process group (PyTorch ≥ 2.12, pytorch/kineto#1296).
    pub seq: Option<RawText<'a>>,
    /// The process group of a collective (pytorch/kineto#1300).
    pub process_group: Option<RawText<'a>>,
    /// The collective c10d's `record_param_comms` says a kernel runs (`allreduce`,
    /// `_allgather_base`), copied onto the kernel by Kineto.
    pub collective_name: Option<RawText<'a>>,
    /// A replayed kernel's node in its graph, or a captured launch's (PyTorch >= 2.12,
    /// pytorch/kineto#1276).
    pub graph_node: Option<RawText<'a>>,
}

#[derive(Debug, Default, PartialEq)]
pub(super) struct RawEvent<'a> {
    pub ph: Option<RawStr<'a>>,
    pub cat: Option<RawStr<'a>>,
    pub name: Option<RawStr<'a>>,
    pub pid: Option<RawText<'a>>,
    pub tid: Option<RawText<'a>>,
    pub ts: Option<RawText<'a>>,
    pub dur: Option<RawText<'a>>,
    pub args: Option<RawArgs<'a>>,
}

/// Generates, for a struct of optional fields, a `Deserialize` that matches the keys of a JSON
/// object as raw bytes: keys are never kept, so they skip the UTF-8 validation serde_json gives
/// every `str` (7% of the parse in a profile), and unknown ones are skipped unparsed. The rest
/// is what `#[derive(Deserialize)]` with `#[serde(default)]` fields does: a duplicate key is an
/// error, `null` is `None`, and an array fills the fields in order (through a derived twin).
macro_rules! byte_keyed {
    ($ty:ident, $seq:ident, $name:literal, $( $field:ident : $fty:ty = $key:literal ),+ $(,)?) => {
        #[derive(Deserialize)]
        struct $seq<'a> {
            $( #[serde(default, borrow)] $field: Option<$fty>, )+
        }

        impl<'de: 'a, 'a> Deserialize<'de> for $ty<'a> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V<'a>(std::marker::PhantomData<&'a ()>);
                impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
                    type Value = $ty<'a>;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str(concat!("struct ", $name))
                    }
                    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                        let s = $seq::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                        Ok($ty { $( $field: s.$field, )+ })
                    }
                    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                        $( let mut $field: Option<Option<$fty>> = None; )+
                        while let Some(key) = map.next_key::<RawStr<'de>>()? {
                            match key.bytes() {
                                $( $key => {
                                    if $field.is_some() {
                                        return Err(de::Error::duplicate_field(
                                            std::str::from_utf8($key).unwrap_or("?"),
                                        ));
                                    }
                                    $field = Some(map.next_value()?);
                                } )+
                                _ => {
                                    map.next_value::<de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok($ty { $( $field: $field.flatten(), )+ })
                    }
                }
                const FIELDS: &[&str] = &[ $( stringify!($field), )+ ];
                d.deserialize_struct($name, FIELDS, V(std::marker::PhantomData))
            }
        }
    };
}

byte_keyed!(RawArgs, SeqArgs, "RawArgs",
    external_id: RawText<'a> = b"External id",
    correlation: RawText<'a> = b"correlation",
    stream: RawText<'a> = b"stream",
    device: RawText<'a> = b"device",
    grid: RawText<'a> = b"grid",
    block: RawText<'a> = b"block",
    input_dims: RawText<'a> = b"Input Dims",
    input_type: RawText<'a> = b"Input type",
    seq: RawText<'a> = b"Seq",
    process_group: RawText<'a> = b"Process Group Name",
    collective_name: RawText<'a> = b"Collective name",
    graph_node: RawText<'a> = b"graph node id",
);

byte_keyed!(RawEvent, SeqEvent, "RawEvent",
    ph: RawStr<'a> = b"ph",
    cat: RawStr<'a> = b"cat",
    name: RawStr<'a> = b"name",
    pid: RawText<'a> = b"pid",
    tid: RawText<'a> = b"tid",
    ts: RawText<'a> = b"ts",
    dur: RawText<'a> = b"dur",
    args: RawArgs<'a> = b"args",
);

/// The events of one rank (or, before ranks are resolved, of one process label) being collected.
#[derive(Debug, Default)]
pub(super) struct EventSink {
    pub names: NameTable,
    /// Distinct launch dimensions; entry 0 stands for "not recorded".
    pub launch_dims: Vec<LaunchDims>,
    dims_index: FxHashMap<LaunchDims, u32>,
    pub gpu: Vec<GpuActivity>,
    pub cpu_ops: Vec<CpuOp>,
    pub launches: Vec<Launch>,
    pub annotations: Vec<Annotation>,
    pub collective_keys: Vec<CollectiveKey>,
    /// Kernel names with the collective c10d says they run, first seen.
    pub collective_names: FxHashMap<NameId, NameId>,
    /// `python_function` frames of at least [`MIN_FRAME_NS`], held compactly until
    /// [`EventSink::finish`] knows the launches.
    held_frames: FrameLog,
    /// The held frames that enclose a runtime launch, set by [`EventSink::finish`].
    pub python_frames: Vec<PyFrame>,
    pub graph_nodes: Vec<GraphNodeKey>,
    pub stats: ReadStats,
    /// The first kept event the analysis cannot use (a negative or out-of-range time), described
    /// for the error that refuses the file. Names that are not UTF-8 are [`NameTable::not_utf8`].
    pub first_unusable: Option<String>,
    /// How many kept events were unusable.
    pub unusable: u64,
}

/// A single GPU activity, CPU op or annotation longer than a day is not a profile: the number is
/// corrupt or in the wrong unit.
const MAX_EVENT_NS: i64 = 86_400 * 1_000_000_000;

/// What kind of event a `cat` names, for the categories the analysis keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kept {
    Gpu(GpuKind),
    CpuOp,
    Runtime,
    Annotation(AnnotationSide),
    Flow,
    Ignored,
}

pub(super) fn classify_cat(cat: &[u8]) -> Kept {
    match cat {
        b"kernel" | b"Kernel" => Kept::Gpu(GpuKind::Kernel),
        b"gpu_memcpy" | b"Memcpy" | b"memcpy" => Kept::Gpu(GpuKind::Memcpy),
        b"gpu_memset" | b"Memset" | b"memset" => Kept::Gpu(GpuKind::Memset),
        b"cpu_op" | b"Operator" | b"operator" => Kept::CpuOp,
        b"cuda_runtime" | b"cuda_driver" | b"Runtime" | b"runtime" | b"hip_runtime" => {
            Kept::Runtime
        }
        b"user_annotation" => Kept::Annotation(AnnotationSide::Cpu),
        b"gpu_user_annotation" => Kept::Annotation(AnnotationSide::Gpu),
        b"ac2g" | b"async_cpu_to_gpu" => Kept::Flow,
        _ => Kept::Ignored,
    }
}

fn raw(v: Option<RawText<'_>>) -> Option<&str> {
    v.map(|t| t.get()).filter(|t| *t != "null")
}

fn is_graph_launch(name: &[u8]) -> bool {
    matches!(
        name,
        b"cudaGraphLaunch" | b"hipGraphLaunch" | b"cudaGraphLaunch_v10000" | b"cuGraphLaunch"
    )
}

impl EventSink {
    fn intern_dims(&mut self, dims: LaunchDims) -> u32 {
        if dims.grid.is_none() && dims.block.is_none() {
            return 0;
        }
        if self.launch_dims.is_empty() {
            self.launch_dims.push(LaunchDims {
                grid: None,
                block: None,
            });
        }
        if let Some(&i) = self.dims_index.get(&dims) {
            return i;
        }
        let i = self.launch_dims.len() as u32;
        self.launch_dims.push(dims);
        self.dims_index.insert(dims, i);
        i
    }

    fn note_unusable(&mut self, name: &[u8], what: impl FnOnce() -> String) {
        self.unusable += 1;
        if self.first_unusable.is_none() {
            let name = String::from_utf8_lossy(&name[..name.len().min(80)]).into_owned();
            self.first_unusable = Some(format!("event `{name}`: {}", what()));
        }
    }

    fn count_category(&mut self, cat: &[u8]) {
        let cat = std::str::from_utf8(cat).unwrap_or("(not UTF-8)");
        if let Some(n) = self.stats.events_by_category.get_mut(cat) {
            *n += 1;
        } else {
            self.stats.events_by_category.insert(cat.to_owned(), 1);
        }
    }

    /// Adds one complete (`ph: "X"`) or other event. `pid_device` is the numeric device a GPU
    /// event's pid names, used when `args.device` is absent.
    pub(super) fn add(&mut self, ev: &RawEvent<'_>, pid_device: Option<u64>) {
        let ph = ev.ph.as_ref().map(RawStr::bytes).unwrap_or(b"");
        if ph == b"M" {
            self.count_category(b"__metadata");
            return;
        }
        let cat = ev.cat.as_ref().map(RawStr::bytes).unwrap_or(b"");
        self.count_category(cat);
        let kept = classify_cat(cat);
        if kept == Kept::Flow {
            self.stats.flow_events += 1;
            return;
        }
        if kept == Kept::Ignored || ph != b"X" {
            return;
        }
        let name = ev.name.as_ref().map(RawStr::bytes).unwrap_or(b"");
        let (ts_raw, dur_raw) = (raw(ev.ts), raw(ev.dur));
        let (Some(ts), Some(dur)) = (
            ts_raw.and_then(micros_to_ns),
            dur_raw.and_then(micros_to_ns),
        ) else {
            self.stats.incomplete_events += 1;
            self.note_unusable(name, || {
                format!(
                    "ts {} and dur {} are not both numbers in range",
                    ts_raw.unwrap_or("(absent)"),
                    dur_raw.unwrap_or("(absent)")
                )
            });
            return;
        };
        // A time written as a string is not Kineto's: a figure built on it could be anything.
        if let Some(t) = [ts_raw, dur_raw]
            .into_iter()
            .flatten()
            .find(|t| t.starts_with('"'))
        {
            self.stats.incomplete_events += 1;
            self.note_unusable(name, || format!("ts or dur {t} is a string, not a number"));
            return;
        }
        if ts < 0 {
            self.stats.incomplete_events += 1;
            self.note_unusable(name, || {
                format!("ts {} µs is negative", ts_raw.unwrap_or(""))
            });
            return;
        }
        if !(0..=MAX_EVENT_NS).contains(&dur) {
            self.stats.negative_durations += u64::from(dur < 0);
            self.stats.incomplete_events += u64::from(dur > MAX_EVENT_NS);
            self.note_unusable(name, || {
                format!(
                    "dur {} µs is negative or longer than a day",
                    dur_raw.unwrap_or("")
                )
            });
            return;
        }
        let empty = RawArgs::default();
        let args = ev.args.as_ref().unwrap_or(&empty);
        let tid = raw(ev.tid).map(track_id).unwrap_or(0);
        let correlation = raw(args.correlation).and_then(parse_u64);
        let external_id = raw(args.external_id).and_then(parse_u64);
        match kept {
            Kept::Gpu(kind) => {
                let stream = raw(args.stream).and_then(parse_u64).unwrap_or(tid);
                let device = raw(args.device)
                    .and_then(parse_u64)
                    .or(pid_device)
                    .unwrap_or(0);
                let name = self.names.intern_bytes(name);
                let mut activity = GpuActivity::new(
                    kind,
                    name,
                    ts,
                    dur,
                    stream,
                    u32::try_from(device).unwrap_or(u32::MAX),
                );
                activity.set_correlation(correlation);
                activity.set_external_id(external_id);
                let dims = LaunchDims {
                    grid: raw(args.grid).and_then(parse_dim3),
                    block: raw(args.block).and_then(parse_dim3),
                };
                activity.set_launch_dims(self.intern_dims(dims));
                if let (Some(seq), Some(group)) = (
                    raw(args.seq).and_then(parse_u64),
                    raw(args.process_group).map(unquote),
                ) {
                    self.collective_keys.push(CollectiveKey {
                        ts,
                        stream: activity.stream(),
                        group: self.names.intern(group),
                        seq,
                    });
                }
                if let Some(collective) = raw(args.collective_name).map(unquote) {
                    if kind == GpuKind::Kernel
                        && !self.collective_names.contains_key(&activity.name)
                    {
                        let collective = self.names.intern(collective);
                        self.collective_names.insert(activity.name, collective);
                    }
                }
                if let Some(node) = raw(args.graph_node).and_then(parse_u64) {
                    self.graph_nodes.push(GraphNodeKey {
                        ts,
                        stream: activity.stream(),
                        node,
                    });
                }
                self.gpu.push(activity);
            }
            Kept::CpuOp => {
                let name = self.names.intern_bytes(name);
                let input_dims = raw(args.input_dims).map(|d| self.names.intern(d));
                let input_types = raw(args.input_type).map(|t| self.names.intern(t));
                self.cpu_ops.push(CpuOp {
                    name,
                    ts,
                    dur,
                    tid,
                    external_id,
                    input_dims,
                    input_types,
                });
            }
            Kept::Runtime => {
                let Some(correlation) = correlation else {
                    // Runtime calls that launch nothing (cudaMalloc, sync) carry no correlation.
                    return;
                };
                let graph = is_graph_launch(name);
                let name = self.names.intern_bytes(name);
                self.launches.push(Launch {
                    name,
                    ts,
                    dur,
                    tid,
                    correlation,
                    external_id,
                    graph,
                });
            }
            Kept::Annotation(side) => {
                let track = match side {
                    AnnotationSide::Cpu => tid,
                    AnnotationSide::Gpu => raw(args.stream).and_then(parse_u64).unwrap_or(tid),
                };
                let name = self.names.intern_bytes(name);
                self.annotations.push(Annotation {
                    name,
                    ts,
                    dur,
                    side,
                    track,
                });
            }
            Kept::Flow | Kept::Ignored => {}
        }
    }

    /// Appends the events of `other`, read from a later stretch of the same file, as if this
    /// sink had read them itself: names and launch dimensions are interned again in the order
    /// `other` first saw them, lists keep file order, counts add up, the first unusable event
    /// stays the first.
    pub(super) fn absorb(&mut self, other: EventSink) {
        let names = self.names.absorb(&other.names);
        let name = |id: u32| names[id as usize];
        for mut f in other.held_frames.frames() {
            f.name = name(f.name);
            self.held_frames.push(&f);
        }
        self.graph_nodes.extend(other.graph_nodes);
        let mut dims = vec![0u32; other.launch_dims.len().max(1)];
        for (i, d) in other.launch_dims.iter().enumerate().skip(1) {
            dims[i] = self.intern_dims(*d);
        }
        self.gpu.reserve(other.gpu.len());
        for mut a in other.gpu {
            a.name = name(a.name);
            a.set_launch_dims(dims[a.launch_dims() as usize]);
            self.gpu.push(a);
        }
        self.cpu_ops.extend(other.cpu_ops.into_iter().map(|mut op| {
            op.name = name(op.name);
            op.input_dims = op.input_dims.map(name);
            op.input_types = op.input_types.map(name);
            op
        }));
        self.launches
            .extend(other.launches.into_iter().map(|mut l| {
                l.name = name(l.name);
                l
            }));
        self.annotations
            .extend(other.annotations.into_iter().map(|mut a| {
                a.name = name(a.name);
                a
            }));
        self.collective_keys
            .extend(other.collective_keys.into_iter().map(|mut k| {
                k.group = name(k.group);
                k
            }));
        for (kernel, collective) in other.collective_names {
            self.collective_names
                .entry(name(kernel))
                .or_insert(name(collective));
        }
        self.stats.absorb(other.stats);
        if self.first_unusable.is_none() {
            self.first_unusable = other.first_unusable;
        }
        self.unusable += other.unusable;
    }

    /// Sorts every list by start time (stable, so equal starts keep file order).
    pub(super) fn finish(&mut self) {
        sort_by_start(&mut self.gpu, |a| a.ts);
        sort_by_start(&mut self.cpu_ops, |a| a.ts);
        sort_by_start(&mut self.launches, |a| a.ts);
        sort_by_start(&mut self.annotations, |a| a.ts);
        sort_by_start(&mut self.collective_keys, |k| k.ts);
        sort_by_start(&mut self.graph_nodes, |k| k.ts);
        self.prune_python_frames();
    }

    /// A `python_function` event: counted, and kept as a frame when it is one (`ph: "X"`) of at
    /// least [`MIN_FRAME_NS`]. Read by a search for its four fields; `false` where the search is
    /// unsure, for the caller's full parse to decide ([`EventSink::add_parsed_python_frame`]).
    pub(super) fn add_python_frame(&mut self, event: &[u8]) -> bool {
        use super::frame::{python_frame, FrameFields};
        self.stats.python_functions_skipped += 1;
        match python_frame(event, MIN_FRAME_NS) {
            FrameFields::Short => true,
            FrameFields::Frame { name, tid, ts, dur } => {
                self.push_frame(name, tid, ts, dur);
                true
            }
            FrameFields::Unsure => false,
        }
    }

    /// A `python_function` event the search was unsure of, parsed in full (already counted).
    pub(super) fn add_parsed_python_frame(&mut self, ev: &RawEvent<'_>) {
        if ev.ph.as_ref().map(RawStr::bytes) != Some(b"X") {
            return;
        }
        let (Some(ts), Some(dur)) = (
            raw(ev.ts).and_then(micros_to_ns),
            raw(ev.dur).and_then(micros_to_ns),
        ) else {
            return;
        };
        if dur < MIN_FRAME_NS || ts < 0 {
            return;
        }
        let name = ev.name.as_ref().map(RawStr::bytes).unwrap_or(b"");
        let tid = raw(ev.tid).map(track_id).unwrap_or(0);
        self.push_frame(name, tid, ts, dur);
    }

    fn push_frame(&mut self, name: &[u8], tid: u64, ts: i64, dur: i64) {
        self.held_frames.push(&PyFrame {
            name: self.names.intern_bytes(name),
            ts,
            dur,
            tid,
        });
    }

    /// Keeps the frames that enclose a runtime launch on their thread: the only ones a kernel's
    /// call site can be read from (a trace's other frames, often most of its events, go).
    fn prune_python_frames(&mut self) {
        let held = std::mem::take(&mut self.held_frames);
        if held.is_empty() {
            return;
        }
        let mut starts: FxHashMap<u64, Vec<i64>> = FxHashMap::default();
        for l in &self.launches {
            starts.entry(l.tid).or_default().push(l.ts);
        }
        // Launches are sorted by start, so each thread's list is too.
        let encloses_launch = |f: &PyFrame| {
            starts.get(&f.tid).is_some_and(|ts| {
                let i = ts.partition_point(|&t| t < f.ts);
                ts.get(i).is_some_and(|&t| t <= f.ts.saturating_add(f.dur))
            })
        };
        self.python_frames
            .extend(held.frames().filter(|f| encloses_launch(f)));
        // The log gives thread by thread; the stable sort keeps each thread's order.
        sort_by_start(&mut self.python_frames, |f| f.ts);
        self.python_frames.shrink_to_fit();
        self.stats.python_frames_kept = self.python_frames.len() as u64;
    }
}

/// `python_function` frames shorter than this are not kept: a frame that encloses a launch
/// lasts at least the launch call (microseconds), so this drops only leaf helpers.
pub(super) const MIN_FRAME_NS: i64 = 500;

/// A stable sort that first looks whether the list is in order already, as a stream's events
/// often are: then it costs one pass and no scratch buffer (half the list, for a stable sort).
fn sort_by_start<T>(list: &mut [T], start: impl Fn(&T) -> i64) {
    if !list.is_sorted_by_key(&start) {
        list.sort_by_key(start);
    }
}

/// True when an event's text starts like a `python_function` event, which can be ~90% of a
/// trace: such events are counted and skipped without a full parse. Kineto writes `cat` among
/// the first keys, so looking at the head of the event is enough.
pub(super) fn looks_like_python_function(event: &[u8]) -> bool {
    use std::sync::LazyLock;
    // Built once: constructing a searcher per event was a visible share of the parse.
    static PYTHON: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\"python_function\""));
    static CAT: LazyLock<memchr::memmem::Finder<'static>> =
        LazyLock::new(|| memchr::memmem::Finder::new(b"\"cat\""));
    let head = &event[..event.len().min(96)];
    match PYTHON.find(head) {
        Some(at) => CAT.find(head).is_some() && is_cat_value(&head[..at]),
        None => false,
    }
}

/// True when `before`, the bytes of an event from its opening brace up to a `"python_function"`
/// string, leave that string as the value of the event's own `"cat"` key: outside any string,
/// at the event's top level, after `"cat"` and a colon. The answer depends on the event's own
/// bytes only (a short event followed by a `python_function` one is not taken for it), so that
/// it is the same wherever a chunk of the file ends.
fn is_cat_value(before: &[u8]) -> bool {
    if before.first() != Some(&b'{') {
        return false;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < before.len() {
        match before[i] {
            b'"' => {
                i += 1;
                while i < before.len() && before[i] != b'"' {
                    i += if before[i] == b'\\' { 2 } else { 1 };
                }
                if i >= before.len() {
                    return false;
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let key = before.trim_ascii_end();
    depth == 1
        && key
            .strip_suffix(b":")
            .is_some_and(|k| k.trim_ascii_end().ends_with(b"\"cat\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink_of(events: &[&str]) -> EventSink {
        let mut sink = EventSink::default();
        for text in events {
            let ev: RawEvent = serde_json::from_str(text).unwrap();
            sink.add(&ev, Some(3));
        }
        sink.finish();
        sink
    }

    #[test]
    fn kernel_fields_are_read_exactly() {
        let sink = sink_of(&[
            r#"{"ph": "X", "cat": "kernel", "name": "nvjet_tst_64x32", "pid": 3, "tid": 7,
            "ts": 1694128201545123.456, "dur": 8.4, "args": {"stream": 7, "correlation": 12,
            "External id": 40, "grid": [136, 1, 1], "block": [384, 1, 1], "queued": 0}}"#,
        ]);
        let k = &sink.gpu[0];
        assert_eq!(sink.names.get(k.name), "nvjet_tst_64x32");
        assert_eq!(
            (k.ts, k.dur, k.stream(), k.device),
            (1_694_128_201_545_123_456, 8_400, 7, 3)
        );
        assert_eq!((k.correlation(), k.external_id()), (Some(12), Some(40)));
        assert_eq!(
            sink.launch_dims[k.launch_dims() as usize].grid,
            Some([136, 1, 1])
        );
        assert_eq!(
            sink.launch_dims[k.launch_dims() as usize].block,
            Some([384, 1, 1])
        );
    }

    #[test]
    fn string_or_negative_times_are_unusable_and_say_so() {
        for (event, says) in [
            (
                r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": "5", "dur": 1}"#,
                "is a string",
            ),
            (
                r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": -1400000000000, "dur": 1}"#,
                "is negative",
            ),
        ] {
            let sink = sink_of(&[event]);
            assert!(sink.gpu.is_empty());
            assert_eq!(sink.stats.incomplete_events, 1);
            let unusable = sink.first_unusable.unwrap_or_default();
            assert!(unusable.contains(says), "{unusable}");
        }
    }

    #[test]
    fn string_ids_and_missing_fields_are_tolerated_and_counted() {
        let sink = sink_of(&[
            r#"{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "ts": 5, "dur": 1.5,
                "args": {"stream": "0x0", "device": "1"}}"#,
            r#"{"ph": "X", "cat": "kernel", "name": "no_dur", "ts": 5}"#,
            r#"{"ph": "X", "cat": "kernel", "name": "negative", "ts": 5, "dur": -1}"#,
            r#"{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}}"#,
            r#"{"ph": "f", "cat": "ac2g", "id": 1, "ts": 3}"#,
        ]);
        assert_eq!(sink.gpu.len(), 1);
        assert_eq!(
            (sink.gpu[0].stream(), sink.gpu[0].device, sink.gpu[0].kind()),
            (0, 1, GpuKind::Memcpy)
        );
        assert_eq!(sink.stats.incomplete_events, 1);
        assert_eq!(sink.stats.negative_durations, 1);
        assert_eq!(sink.stats.flow_events, 1);
        assert_eq!(sink.stats.events_by_category["__metadata"], 1);
        assert_eq!(sink.stats.events_by_category["kernel"], 2);
    }

    #[test]
    fn graph_launches_and_annotations_are_recognised() {
        let sink = sink_of(&[
            r#"{"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "ts": 1, "dur": 2, "tid": 9,
                "args": {"correlation": 77}}"#,
            r#"{"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "ts": 1, "dur": 2, "args": {}}"#,
            r#"{"ph": "X", "cat": "user_annotation", "name": "step[DECODE bs=64]", "ts": 0, "dur": 9, "tid": 9}"#,
        ]);
        assert_eq!(sink.launches.len(), 1);
        assert!(sink.launches[0].graph);
        assert_eq!(sink.annotations[0].side, AnnotationSide::Cpu);
        assert_eq!(sink.annotations[0].track, 9);
    }

    #[test]
    fn bad_utf8_names_are_replaced_not_fatal() {
        let mut bytes = br#"{"ph": "X", "cat": "kernel", "name": "k"#.to_vec();
        bytes.extend_from_slice(&[0xff, 0xfe]);
        bytes.extend_from_slice(br#"", "ts": 1, "dur": 1}"#);
        let ev: RawEvent = serde_json::from_slice(&bytes).unwrap();
        let mut sink = EventSink::default();
        sink.add(&ev, None);
        assert_eq!(sink.names.get(sink.gpu[0].name), "k\u{fffd}\u{fffd}");
    }

    #[test]
    fn keys_are_matched_as_bytes_as_the_derived_parser_did() {
        let ev: RawEvent = serde_json::from_str(
            r#"{"c\u0061t": "kernel", "ph": null, "x": [1, {"y": 2}], "args": {"stream": 7}}"#,
        )
        .unwrap();
        assert_eq!(ev.cat.unwrap().bytes(), b"kernel");
        assert!(ev.ph.is_none());
        assert_eq!(ev.args.unwrap().stream.unwrap().get(), "7");
        assert!(serde_json::from_str::<RawEvent>(r#"{"ph": "X", "ph": "B"}"#).is_err());
        assert!(serde_json::from_str::<RawEvent>(r#"{"ph": 5}"#).is_err());
        let ev: RawEvent = serde_json::from_str(r#"["X", "kernel", "k"]"#).unwrap();
        assert_eq!(ev.name.unwrap().bytes(), b"k");
        // A key that is not UTF-8 is never kept: skipped like any unknown key.
        let mut bytes = br#"{"ph": "X", ""#.to_vec();
        bytes.extend_from_slice(&[0xff, b'"']);
        bytes.extend_from_slice(br#": 1, "dur": 2}"#);
        let ev: RawEvent = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(ev.dur.unwrap().get(), "2");
    }

    #[test]
    fn python_function_heads_are_spotted() {
        assert!(looks_like_python_function(
            br#"{"ph": "X", "cat": "python_function", "name": "x"}"#
        ));
        assert!(!looks_like_python_function(
            br#"{"ph": "X", "cat": "kernel", "name": "x"}"#
        ));
        // Only the event's own cat counts: not a name, not the next event's cat.
        assert!(!looks_like_python_function(
            br#"{"ph": "X", "name": "\"cat\": \"python_function\"", "cat": "kernel"}"#
        ));
        assert!(!looks_like_python_function(
            br#"{"ph": "X", "cat": "kernel", "ts": 1}, {"ph": "X", "cat": "python_function"}"#
        ));
        assert!(!looks_like_python_function(
            br#"{"ph": "X", "args": {"cat": "python_function"}}"#
        ));
    }
}
