//! For tests only, not part of the API: with the `testing` feature (which the integration tests
//! enable through the crate's dev-dependency on itself), the lower-level readers and helpers that
//! `tests/` drives directly; in unit tests, hand-built rank traces whose times are given in ns so
//! that expected figures are exact.

pub use crate::analysis::capture::gemm::{gemm_throughput, GemmThroughput};
pub use crate::analysis::capture::join::{attribute, replay_batch, Refusal, MIN_MATCH_RATE};
pub use crate::analysis::code::graph::replays;
pub use crate::baseline::tolerance::Tolerance;
pub use crate::metrics::{extract, ExtractOptions};
pub use crate::reader::{
    capture_batch, model::MAX_NAME, read_capture, read_file, read_file_parallel_only,
    read_file_with_threads, read_run,
};
pub use crate::stats::{bootstrap_interval, Statistic};
pub use crate::synth::generate_to_dir;
pub use crate::taxonomy::names::{distinct_labels, untruncated_short_name};
pub use crate::taxonomy::Taxonomy;

use std::path::PathBuf;

use crate::reader::model::{
    Annotation, AnnotationSide, DeviceInfo, GpuActivity, GpuKind, Launch, NameId, NameTable,
    RankId, RankSource, RankTrace, ReadStats, Run, Stage,
};
use crate::taxonomy::{Category, Class, Collective};

pub const MS: i64 = 1_000_000;
pub const US: i64 = 1_000;

/// Host thread of the launches and annotations.
pub const TID: u64 = 7;

/// Builds one rank trace and the classification of its names.
pub struct TraceBuilder {
    trace: RankTrace,
    classes: Vec<Class>,
    next_correlation: u64,
}

impl TraceBuilder {
    pub fn new(rank: u32) -> Self {
        TraceBuilder {
            trace: RankTrace {
                rank: RankId {
                    index: rank,
                    label: format!("TP{rank:02}"),
                    source: RankSource::FileName,
                },
                file: PathBuf::from(format!("test-TP-{rank}.trace.json.gz")),
                stage: None,
                device: Some(DeviceInfo {
                    name: "AMD Instinct MI355X".to_string(),
                    ..DeviceInfo::default()
                }),
                distributed: None,
                names: NameTable::default(),
                gpu: Vec::new(),
                cpu_ops: Vec::new(),
                launches: Vec::new(),
                annotations: Vec::new(),
                collective_keys: Vec::new(),
                collective_names: Vec::new(),
                launch_dims: Vec::new(),
                stats: ReadStats::default(),
                python_frames: Vec::new(),
                graph_nodes: Vec::new(),
                producer: Default::default(),
            },
            classes: Vec::new(),
            next_correlation: 1,
        }
    }

    pub fn stage(mut self, stage: Stage) -> Self {
        self.trace.stage = Some(stage);
        self
    }

    fn name(&mut self, name: &str, category: Category, collective: Option<Collective>) -> NameId {
        let id = self.trace.names.intern(name);
        if self.classes.len() <= id as usize {
            self.classes.resize(
                id as usize + 1,
                Class {
                    category: Category::Other,
                    collective: None,
                    note: None,
                    helper: false,
                },
            );
        }
        self.classes[id as usize] = Class {
            category,
            collective,
            note: None,
            helper: false,
        };
        id
    }

    fn push(
        &mut self,
        kind: GpuKind,
        name: NameId,
        ts: i64,
        dur: i64,
        stream: u64,
        correlation: Option<u64>,
    ) -> u32 {
        let mut activity = GpuActivity::new(kind, name, ts, dur, stream, 0);
        activity.set_correlation(correlation);
        self.trace.gpu.push(activity);
        (self.trace.gpu.len() - 1) as u32
    }

    /// A kernel without a launch. Kernels must be added in start order.
    pub fn kernel(
        &mut self,
        name: &str,
        category: Category,
        ts: i64,
        dur: i64,
        stream: u64,
    ) -> u32 {
        let collective = (category == Category::Comm).then_some(Collective::Allgather);
        let id = self.name(name, category, collective);
        self.push(GpuKind::Kernel, id, ts, dur, stream, None)
    }

    /// A whole forward pass replayed by the graph launch `correlation`: an attention kernel then a
    /// GEMM, back to back on stream 0, together `dur` long (a graph launch needs both to be a step).
    pub fn forward(&mut self, correlation: u64, ts: i64, dur: i64) -> Vec<u32> {
        let attention = self.kernel("mla_decode", Category::Attention, ts, dur / 2, 0);
        let gemm = self.kernel(
            "nvjet_gemm",
            Category::DenseGemm,
            ts + dur / 2,
            dur - dur / 2,
            0,
        );
        for i in [attention, gemm] {
            self.link(i, correlation);
        }
        vec![attention, gemm]
    }

    /// An allreduce-class comm kernel without a launch.
    pub fn allreduce(&mut self, name: &str, ts: i64, dur: i64, stream: u64) -> u32 {
        let id = self.name(name, Category::Comm, Some(Collective::Allreduce));
        self.push(GpuKind::Kernel, id, ts, dur, stream, None)
    }

    /// Gives activity `index` (a collective) its process group and sequence number, as PyTorch
    /// ≥ 2.12 writes them.
    pub fn collective_key(&mut self, index: u32, group: &str, seq: u64) {
        let a = &self.trace.gpu[index as usize];
        let key = crate::reader::model::CollectiveKey {
            ts: a.ts,
            stream: a.stream(),
            group: self.trace.names.intern(group),
            seq,
        };
        self.trace.collective_keys.push(key);
    }

    /// A memcpy whose name claims to be a GEMM: its category must still be memcpy.
    pub fn memcpy(&mut self, name: &str, ts: i64, dur: i64, stream: u64) -> u32 {
        let id = self.name(name, Category::DenseGemm, None);
        self.push(GpuKind::Memcpy, id, ts, dur, stream, None)
    }

    /// A kernel launch on host thread `tid`; returns its correlation.
    pub fn launch_on(&mut self, ts: i64, tid: u64) -> u64 {
        let correlation = self.launch(ts, false);
        if let Some(l) = self.trace.launches.last_mut() {
            l.tid = tid;
        }
        correlation
    }

    /// A runtime launch on host thread `TID`; returns its correlation.
    pub fn launch(&mut self, ts: i64, graph: bool) -> u64 {
        let correlation = self.next_correlation;
        self.next_correlation += 1;
        let name = self.trace.names.intern(if graph {
            "hipGraphLaunch"
        } else {
            "hipLaunchKernel"
        });
        self.trace.launches.push(Launch {
            name,
            ts,
            dur: 5 * US,
            tid: TID,
            correlation,
            external_id: None,
            graph,
        });
        correlation
    }

    /// Sets the correlation of activity `index` (linking it to a launch).
    pub fn link(&mut self, index: u32, correlation: u64) {
        self.trace.gpu[index as usize].set_correlation(Some(correlation));
    }

    /// A CPU annotation on `tid`.
    pub fn annotation(&mut self, name: &str, ts: i64, dur: i64, tid: u64) {
        let name = self.trace.names.intern(name);
        self.trace.annotations.push(Annotation {
            name,
            ts,
            dur,
            side: AnnotationSide::Cpu,
            track: tid,
        });
    }

    pub fn build(mut self) -> (RankTrace, Vec<Class>) {
        assert!(
            self.trace.gpu.windows(2).all(|w| w[0].ts <= w[1].ts),
            "test kernels must be added in start order"
        );
        self.trace.launches.sort_by_key(|l| l.ts);
        self.trace.annotations.sort_by_key(|a| a.ts);
        self.trace.collective_keys.sort_by_key(|k| k.ts);
        let n = self.trace.names.len();
        self.classes.resize(
            n,
            Class {
                category: Category::Other,
                collective: None,
                note: None,
                helper: false,
            },
        );
        (self.trace, self.classes)
    }
}

/// A run of the built traces, with their classifications.
pub fn run_of(traces: Vec<(RankTrace, Vec<Class>)>) -> (Run, Vec<Vec<Class>>) {
    let (traces, classes) = traces.into_iter().unzip();
    (
        Run {
            traces,
            missing: None,
            dp_group: None,
            skipped: Vec::new(),
        },
        classes,
    )
}

/// A seeded xorshift64 for randomised tests: `below(m)` is in `0..m`.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
}
