//! `tracegate synth`: a deterministic generator of SGLang/Kineto traces of DeepSeek-R1 inference,
//! modelled on the reference analyses (MI355X, B200, H200, MI325X), with injectable regressions
//! and a `truth.json` holding the exact metrics of `docs/METRICS.md` for what was written.
//!
//! Times are integer nanoseconds throughout and written as microseconds with three decimals. The
//! same options (seed included) give byte-identical files.

mod capture;
mod generate;
mod jitter;
mod profiler_loop;
mod rename;
mod rng;
mod scenario;
mod stack;
pub(crate) mod truth;
mod write;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::{json, Map, Value};

/// Options of one generated run.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthOptions {
    pub scenario: String,
    /// Number of ranks (default: the scenario's).
    pub ranks: Option<u32>,
    /// Steady decode steps after the 2 warm-up steps (default 24).
    pub decode_steps: u32,
    pub seed: u64,
    /// Multiplies the number of steady decode steps (for big benchmark runs).
    pub scale: f64,
    /// `python_function` events per step (default 50).
    pub python_functions_per_step: u32,
    pub injections: Vec<Injection>,
    /// One file per rank, or one SGLang-style merged file holding every rank.
    pub layout: Layout,
    /// gzip level of the written files, 0 to 9 (default 5), or `None` for plain `.json` files.
    /// Tests write level 1 (deflate is most of the generation time), or plain JSON for runs read
    /// once; the JSON is the same whatever the encoding.
    pub gzip_level: Option<u32>,
    /// Between-run variation, in percent (`--run-jitter`): the log-normal sd of one factor per
    /// kernel category and one GPU-clock factor for the whole run, drawn from the seed. 0 (the
    /// default) draws nothing, so the run is the one it always was.
    pub run_jitter: f64,
    /// How the run's factors move (`--run-jitter-mode`): one per category (the default), or one
    /// shared by every category of the run.
    pub run_jitter_mode: JitterMode,
    /// `--with-stack`: the host context a code view needs. Each graph scenario also writes the
    /// capture of its decode graph per rank in `capture_traces/` (the launches in the replay's
    /// order, each inside its `cpu_op`s with `Input Dims` and its `python_function` frames), eager
    /// launches get `nn.Module` and file frames and the same ops, and truth.json gains `sites`.
    /// Off (the default), the bytes are those written without it.
    pub with_stack: bool,
}

pub use jitter::JitterMode;

/// How a run's ranks are laid out in files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Layout {
    /// One `<stamp>-TP-<r>.trace.json.gz` per rank, as SGLang's profiler writes them.
    #[default]
    PerRank,
    /// One `merged-<stamp>.trace.json.gz` as SGLang's profile merger (and InferenceX) uploads:
    /// every rank's events, rank after rank, with pids rewritten to `"[TPnn] pid"` (so ids repeat
    /// across ranks), `traceEvents` first and every rank's `deviceProperties` last.
    Merged,
}

impl SynthOptions {
    pub fn new(scenario: impl Into<String>) -> Self {
        SynthOptions {
            scenario: scenario.into(),
            ..Self::default()
        }
    }
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            scenario: scenario::NAMES[0].to_string(),
            ranks: None,
            decode_steps: 24,
            seed: 0,
            scale: 1.0,
            python_functions_per_step: 50,
            injections: Vec::new(),
            layout: Layout::PerRank,
            gzip_level: Some(5),
            run_jitter: 0.0,
            run_jitter_mode: JitterMode::PerCategory,
            with_stack: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InjectionKind {
    /// Allreduce-class kernels' per-call time × factor.
    Allreduce,
    /// `moe_gemm` kernels × factor.
    Moe,
    /// `attention` kernels × factor.
    Attention,
    /// One rank's compute kernels × factor (the last rank unless `straggler=R:F` names one); the
    /// other ranks wait for it in every collective.
    Straggler,
    /// The main allreduce kernel replaced by another implementation, per call × factor.
    Protocol,
    /// The auxiliary stream's kernels serialised onto the main stream (B200).
    SingleStream,
    /// Every kernel renamed as a fork or a new library version would (namespace, template
    /// arguments, mangling); timings unchanged.
    Rename,
    /// The main MoE GEMM renamed to a name no rule knows; timings unchanged.
    UnknownMoe,
    /// The main MoE GEMM renamed as an image bump does (one more template argument, a new build
    /// of the same kernel); timings unchanged, combine with `moe=F` to slow it.
    RenameMoe,
    /// `stall=N:F`: N of the steady decode steps, spread evenly, stall to F× their wall (rank 0
    /// idles mid-step; every rank waits for it at the next collective).
    Stall,
    /// `host-gap=MS`: MS more GPU-idle time after every decode forward (a slower scheduler, an
    /// extra host sync): the forward is unchanged, the iteration longer.
    HostGap,
    /// `slow=N:F`: N of the steady decode steps, spread evenly, F× their wall with 1 < F ≤ 2
    /// (below the stall line, kept in the steady state).
    Slow,
    /// `relabel=KIND:FRACTION[:F]`: that fraction of the steady decode steps, spread evenly,
    /// annotated `step[MIXED ...]` (`mixed`) or `step[IDLE]` (`idle`) and F× their wall.
    Relabel,
    /// `batch=N`: the decode steps' annotations say `bs=N` (64 otherwise).
    Batch,
    /// `draft=F`: the draft model's kernels (speculative scenarios) × factor; the verify unchanged.
    Draft,
}

/// What `relabel=KIND:...` relabels decode steps as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Relabel {
    /// `step[MIXED bs=N]`: prefill and decode tokens in one forward.
    Mixed,
    /// `step[IDLE]`: a mode that is no forward of the loop.
    Idle,
}

impl Relabel {
    pub fn as_str(self) -> &'static str {
        match self {
            Relabel::Mixed => "mixed",
            Relabel::Idle => "idle",
        }
    }
}

impl InjectionKind {
    pub const ALL: [InjectionKind; 15] = [
        InjectionKind::Allreduce,
        InjectionKind::Moe,
        InjectionKind::Attention,
        InjectionKind::Straggler,
        InjectionKind::Protocol,
        InjectionKind::SingleStream,
        InjectionKind::Rename,
        InjectionKind::UnknownMoe,
        InjectionKind::RenameMoe,
        InjectionKind::Stall,
        InjectionKind::HostGap,
        InjectionKind::Slow,
        InjectionKind::Relabel,
        InjectionKind::Batch,
        InjectionKind::Draft,
    ];

    /// Kinds that take no factor (only `=1`, or none at all).
    pub fn takes_factor(self) -> bool {
        !matches!(
            self,
            InjectionKind::SingleStream
                | InjectionKind::Rename
                | InjectionKind::UnknownMoe
                | InjectionKind::RenameMoe
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            InjectionKind::Allreduce => "allreduce",
            InjectionKind::Moe => "moe",
            InjectionKind::Attention => "attention",
            InjectionKind::Straggler => "straggler",
            InjectionKind::Protocol => "protocol",
            InjectionKind::SingleStream => "single-stream",
            InjectionKind::Rename => "rename",
            InjectionKind::UnknownMoe => "unknown-moe",
            InjectionKind::RenameMoe => "rename-moe",
            InjectionKind::Stall => "stall",
            InjectionKind::HostGap => "host-gap",
            InjectionKind::Slow => "slow",
            InjectionKind::Relabel => "relabel",
            InjectionKind::Batch => "batch",
            InjectionKind::Draft => "draft",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Injection {
    pub kind: InjectionKind,
    pub factor: f64,
    /// The rank a straggler slows (`straggler=2:1.05`); `None`: the last rank.
    pub rank: Option<u32>,
    /// How many decode steps stall or slow down (`stall=5:3.0`, `slow=9:1.5`); `None` for other
    /// kinds.
    pub count: Option<u32>,
    /// `relabel=KIND:FRACTION[:F]`: the label and the fraction of steady decode steps.
    pub relabel: Option<(Relabel, f64)>,
}

impl fmt::Display for Injection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((label, fraction)) = self.relabel {
            return write!(
                f,
                "{}={}:{fraction}:{}",
                self.kind.as_str(),
                label.as_str(),
                self.factor
            );
        }
        match self.rank.or(self.count) {
            Some(r) => write!(f, "{}={r}:{}", self.kind.as_str(), self.factor),
            None => write!(f, "{}={}", self.kind.as_str(), self.factor),
        }
    }
}

impl FromStr for Injection {
    type Err = SynthError;

    /// `KIND=FACTOR`: `allreduce=1.5`, `moe=1.2`, `attention=2`, `straggler=1.3` (the last rank)
    /// or `straggler=2:1.3` (rank 2), `protocol=1.4`, `single-stream=1` (or just `single-stream`),
    /// `rename`, `unknown-moe`, `rename-moe`, `stall=N:F` (N decode steps at F× their wall),
    /// `host-gap=MS`, `slow=N:F` (1 < F ≤ 2), `relabel=mixed|idle:FRACTION[:F]`, `batch=N`,
    /// `draft=F`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| SynthError::InvalidInjection {
            spec: s.to_string(),
            reason,
        };
        let (k, v) = match s.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (s.trim(), None),
        };
        let kind = match k.to_ascii_lowercase().replace('_', "-").as_str() {
            "allreduce" => InjectionKind::Allreduce,
            "moe" => InjectionKind::Moe,
            "attention" => InjectionKind::Attention,
            "straggler" => InjectionKind::Straggler,
            "protocol" => InjectionKind::Protocol,
            "single-stream" => InjectionKind::SingleStream,
            "rename" => InjectionKind::Rename,
            "unknown-moe" => InjectionKind::UnknownMoe,
            "rename-moe" => InjectionKind::RenameMoe,
            "stall" => InjectionKind::Stall,
            "host-gap" => InjectionKind::HostGap,
            "slow" => InjectionKind::Slow,
            "relabel" => InjectionKind::Relabel,
            "batch" => InjectionKind::Batch,
            "draft" => InjectionKind::Draft,
            _ => {
                let valid: Vec<&str> = InjectionKind::ALL.iter().map(|k| k.as_str()).collect();
                return Err(bad(format!(
                    "unknown kind `{k}`; expected one of {}",
                    valid.join(", ")
                )));
            }
        };
        if kind == InjectionKind::Relabel {
            return parse_relabel(v, bad);
        }
        let (mut rank, mut count) = (None, None);
        let counted = matches!(kind, InjectionKind::Stall | InjectionKind::Slow);
        let v = match v.and_then(|v| v.split_once(':')) {
            Some((r, f)) if kind == InjectionKind::Straggler => {
                let r = r.trim();
                rank = Some(
                    r.parse::<u32>()
                        .map_err(|_| bad(format!("rank `{r}` is not a rank number")))?,
                );
                Some(f.trim())
            }
            Some((n, f)) if counted => {
                let n = n.trim();
                count = Some(
                    n.parse::<u32>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| bad(format!("`{n}` is not a number of steps > 0")))?,
                );
                Some(f.trim())
            }
            Some(_) => {
                return Err(bad(
                    "only straggler takes a rank (straggler=R:F), stall and slow a step count \
                 (stall=N:F, slow=N:F)"
                        .into(),
                ))
            }
            None if counted => {
                return Err(bad(format!(
                    "expected {k}=N:F, e.g. stall=5:3.0 or slow=9:1.5"
                )))
            }
            None => v,
        };
        let factor = match v {
            None if !kind.takes_factor() => 1.0,
            None => return Err(bad("expected KIND=FACTOR, e.g. allreduce=1.5".into())),
            Some(v) => v
                .parse::<f64>()
                .map_err(|_| bad(format!("factor `{v}` is not a number")))?,
        };
        if !factor.is_finite() || factor <= 0.0 {
            return Err(bad(format!(
                "factor must be a finite number > 0, got {factor}"
            )));
        }
        if !kind.takes_factor() && factor != 1.0 {
            return Err(bad(format!(
                "{} takes no factor other than 1",
                kind.as_str()
            )));
        }
        if kind == InjectionKind::Stall && factor <= 2.0 {
            return Err(bad(format!(
                "a stall factor must be above 2 (a slower step is not dropped as an outlier), got {factor}"
            )));
        }
        if kind == InjectionKind::Slow && !(factor > 1.0 && factor <= 2.0) {
            return Err(bad(format!(
                "a slow factor must be above 1 and at most 2 (above 2 is a stall), got {factor}"
            )));
        }
        if kind == InjectionKind::Batch && (factor.fract() != 0.0 || factor > 1e6) {
            return Err(bad(format!(
                "a batch is a whole number of sequences, got {factor}"
            )));
        }
        Ok(Injection {
            kind,
            factor,
            rank,
            count,
            relabel: None,
        })
    }
}

/// `relabel=KIND:FRACTION[:F]`.
fn parse_relabel(
    v: Option<&str>,
    bad: impl Fn(String) -> SynthError,
) -> Result<Injection, SynthError> {
    let usage =
        || bad("expected relabel=mixed|idle:FRACTION[:FACTOR], e.g. relabel=mixed:0.5:1.5".into());
    let mut parts = v.ok_or_else(usage)?.split(':').map(str::trim);
    let label = match parts.next().map(str::to_ascii_lowercase).as_deref() {
        Some("mixed") => Relabel::Mixed,
        Some("idle") => Relabel::Idle,
        _ => return Err(usage()),
    };
    let number = |p: Option<&str>, what: &str| -> Result<Option<f64>, SynthError> {
        p.map(|t| {
            t.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(format!("{what} `{t}` is not a number")))
        })
        .transpose()
    };
    let fraction = number(parts.next(), "fraction")?.ok_or_else(usage)?;
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(bad(format!(
            "the fraction of decode steps must be above 0 and at most 1, got {fraction}"
        )));
    }
    let factor = number(parts.next(), "factor")?.unwrap_or(1.0);
    if !(1.0..=2.0).contains(&factor) || parts.next().is_some() {
        return Err(bad(format!(
            "a relabelled step's factor must be from 1 to 2, got {factor}"
        )));
    }
    Ok(Injection {
        kind: InjectionKind::Relabel,
        factor,
        rank: None,
        count: None,
        relabel: Some((label, fraction)),
    })
}

/// Names of the built-in scenarios.
pub fn scenario_names() -> &'static [&'static str] {
    scenario::NAMES
}

/// Every kernel name a scenario can write: as specified, under the protocol switch, renamed and
/// rebuilt (for tests of the taxonomy).
#[cfg(test)]
pub(crate) fn scenario_kernel_names(name: &str) -> Option<Vec<String>> {
    let sc = scenario::by_name(name)?.ok()?;
    let mut names: Vec<String> = sc.specs.iter().map(|s| s.name.to_string()).collect();
    names.push(sc.protocol.1.to_string());
    let variants: Vec<String> = names
        .iter()
        .flat_map(|n| [rename::renamed(n), rename::rebuilt(n)])
        .collect();
    names.extend(variants);
    names.push(rename::UNKNOWN_MOE_NAME.to_string());
    Some(names)
}

#[derive(Debug, Clone)]
pub struct SynthSummary {
    pub scenario: String,
    pub ranks: u32,
    /// Decode steps per rank, warm-up included.
    pub decode_steps_per_rank: u32,
    /// One trace per rank, in rank order (one merged file for [`Layout::Merged`]).
    pub files: Vec<PathBuf>,
    /// A serving frontend's CPU-only trace beside the ranks' (`vllm-stock`), which no rank holds.
    pub frontend: Option<PathBuf>,
    pub truth_path: PathBuf,
    pub bytes_uncompressed: u64,
    pub bytes_compressed: u64,
    pub events: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    #[error("unknown scenario `{name}`; valid scenarios: {valid}")]
    UnknownScenario { name: String, valid: String },
    /// A compiled-in scenario table that does not parse: a bug in tracegate (the unit tests parse
    /// every table), reported as an error rather than a panic.
    #[error("a built-in scenario table is malformed (a bug in tracegate, please report it): src/synth/{0}")]
    BuiltInScenario(String),
    #[error("invalid injection `{spec}`: {reason}")]
    InvalidInjection { spec: String, reason: String },
    #[error("invalid option: {0}")]
    InvalidOption(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl SynthError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        SynthError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Generates one trace per rank and `truth.json` into `out` (created if missing).
pub fn generate_to_dir(opts: &SynthOptions, out: &Path) -> Result<SynthSummary, SynthError> {
    if opts.scenario == profiler_loop::SCENARIO {
        return profiler_loop::generate(opts, out);
    }
    let sc = scenario::by_name(&opts.scenario)
        .ok_or_else(|| SynthError::UnknownScenario {
            name: opts.scenario.clone(),
            valid: format!(
                "{}, {} (a ProfilerStep training loop)",
                scenario_names().join(", "),
                profiler_loop::SCENARIO
            ),
        })?
        .map_err(SynthError::BuiltInScenario)?;
    if !opts.scale.is_finite() || opts.scale <= 0.0 {
        return Err(SynthError::InvalidOption(format!(
            "--scale must be > 0, got {}",
            opts.scale
        )));
    }
    if !opts.run_jitter.is_finite() || !(0.0..=50.0).contains(&opts.run_jitter) {
        return Err(SynthError::InvalidOption(format!(
            "--run-jitter must be a percentage from 0 to 50, got {}",
            opts.run_jitter
        )));
    }
    if opts.ranks == Some(0) || opts.ranks.is_some_and(|r| r > 1024) {
        return Err(SynthError::InvalidOption(
            "--ranks must be between 1 and 1024".into(),
        ));
    }
    let steady = f64::from(opts.decode_steps) * opts.scale;
    if steady > 10_000_000.0 {
        return Err(SynthError::InvalidOption(format!(
            "too many decode steps ({steady})"
        )));
    }
    std::fs::create_dir_all(out).map_err(|e| SynthError::io(out, e))?;
    let plan = generate::Plan::new(sc, opts);
    if let Some((rank, _)) = plan.straggler.filter(|(r, _)| *r >= plan.ranks) {
        return Err(SynthError::InvalidOption(format!(
            "straggler rank {rank} is not a rank of this {}-rank run",
            plan.ranks
        )));
    }
    let labelled = opts
        .injections
        .iter()
        .any(|i| matches!(i.kind, InjectionKind::Relabel | InjectionKind::Batch));
    if labelled && !plan.sc.annotations {
        return Err(SynthError::InvalidOption(format!(
            "relabel and batch change the step annotations, and scenario {} writes none",
            plan.sc.name
        )));
    }
    let relabelled = opts
        .injections
        .iter()
        .any(|i| i.kind == InjectionKind::Relabel);
    let draft = opts
        .injections
        .iter()
        .any(|i| i.kind == InjectionKind::Draft);
    if draft && plan.sc.mtp.is_none() {
        return Err(SynthError::InvalidOption(format!(
            "draft slows the draft model of speculative decoding, and scenario {} has none",
            plan.sc.name
        )));
    }
    if relabelled && plan.sc.mtp.is_some() {
        return Err(SynthError::InvalidOption(format!(
            "relabel rewrites plain decode steps, and scenario {} writes speculative iterations",
            plan.sc.name
        )));
    }
    if opts.layout == Layout::Merged && plan.sc.vllm_stock.is_some() {
        return Err(SynthError::InvalidOption(format!(
            "--layout merged is SGLang's merger; scenario {} writes one file per vLLM worker",
            plan.sc.name
        )));
    }
    // A merged file is made from the rank files, written first beside it and removed after.
    let rank_dir = match opts.layout {
        Layout::PerRank => out.to_path_buf(),
        Layout::Merged => out.join(".tracegate-synth-ranks"),
    };
    std::fs::create_dir_all(&rank_dir).map_err(|e| SynthError::io(&rank_dir, e))?;
    let mut results = generate::write_all(&plan, &rank_dir, opts.gzip_level)?;

    let mut rank_steps = Vec::with_capacity(results.len());
    let mut files = Vec::with_capacity(results.len());
    let (mut bytes_uncompressed, mut bytes_compressed, mut events) = (0, 0, 0);
    let orders: Vec<Vec<usize>> = results
        .iter_mut()
        .map(|o| std::mem::take(&mut o.decode_order))
        .collect();
    for (r, o) in results.into_iter().enumerate() {
        bytes_uncompressed += o.bytes;
        events += o.events;
        bytes_compressed += std::fs::metadata(&o.path)
            .map_err(|e| SynthError::io(&o.path, e))?
            .len();
        files.push(o.path);
        rank_steps.push(truth::RankSteps {
            rank: r as u32,
            steps: o.steps,
            unassigned_ns: o.unassigned_ns,
            batch: plan.sc.annotations.then_some(plan.batch),
        });
    }
    if opts.layout == Layout::Merged {
        let first = plan.file_name(0);
        // Eager-loop runs name their rank files `rank-<r>.json.gz`, without a stamp.
        let stamp = first.strip_suffix("-TP-0.trace.json.gz").unwrap_or("eager");
        let name = format!("merged-{stamp}.trace.json.gz");
        let path = write::encoded_path(out, &name, opts.gzip_level);
        (bytes_uncompressed, events) = write::merge_rank_files(&files, &path, opts.gzip_level)?;
        std::fs::remove_dir_all(&rank_dir).map_err(|e| SynthError::io(&rank_dir, e))?;
        bytes_compressed = std::fs::metadata(&path)
            .map_err(|e| SynthError::io(&path, e))?
            .len();
        files = vec![path];
    }
    let captures = capture::write_captures(&plan, out, opts.gzip_level, &orders)?;
    let frontend = match plan.sc.vllm_stock {
        Some(version) => Some(write::vllm_frontend(
            out,
            &plan.stamp,
            version,
            plan.ts0,
            opts.gzip_level,
        )?),
        None => None,
    };
    let mut t = Map::new();
    t.insert("scenario".into(), json!(plan.sc.name));
    t.insert("device".into(), json!(plan.sc.device));
    t.insert("seed".into(), json!(opts.seed));
    t.insert("ranks".into(), json!(plan.ranks));
    t.insert("decode_steps_per_rank".into(), json!(plan.n_decode));
    t.insert("warmup_steps".into(), json!(generate::WARMUP));
    t.insert("moe_layers".into(), json!(plan.sc.n_moe));
    t.insert("step_annotations".into(), json!(plan.sc.annotations));
    let inj: Vec<Value> = opts
        .injections
        .iter()
        .map(|i| match (i.count, i.relabel) {
            (_, Some((label, fraction))) => json!({
                "kind": i.kind.as_str(), "factor": i.factor, "label": label.as_str(),
                "fraction": fraction
            }),
            (Some(n), _) => json!({"kind": i.kind.as_str(), "factor": i.factor, "steps": n}),
            (None, _) => json!({"kind": i.kind.as_str(), "factor": i.factor}),
        })
        .collect();
    t.insert("injections".into(), Value::Array(inj));
    t.insert(
        "straggler_rank".into(),
        json!(plan.straggler.map(|(r, _)| r)),
    );
    let file_names: Vec<String> = files
        .iter()
        .map(|p| {
            p.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    t.insert("files".into(), json!(file_names));
    if let Some(f) = frontend.as_ref().and_then(|f| f.file_name()) {
        t.insert("frontend_file".into(), json!(f.to_string_lossy()));
    }
    // Only a jittered run says so: a run without jitter keeps its truth byte for byte.
    if let Some(j) = &plan.run_jitter {
        t.insert("run_jitter".into(), j.to_json());
    }
    t.extend(truth::compute(
        &plan.names,
        &rank_steps,
        generate::WARMUP as usize,
    ));
    // Only a run with stacks says so: a run without keeps its truth byte for byte.
    if plan.stack.is_some() {
        t.insert("sites".into(), capture::truth_sites(&plan));
        let names: Vec<String> = captures
            .iter()
            .filter_map(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            .collect();
        t.insert("capture_files".into(), json!(names));
        t.insert("capture_join".into(), json!(capture::capture_join(&plan)));
    }
    let truth_path = out.join("truth.json");
    let text = serde_json::to_string_pretty(&Value::Object(t)).unwrap_or_default();
    std::fs::write(&truth_path, text + "\n").map_err(|e| SynthError::io(&truth_path, e))?;

    Ok(SynthSummary {
        scenario: plan.sc.name.to_string(),
        ranks: plan.ranks,
        decode_steps_per_rank: plan.n_decode,
        files,
        frontend,
        truth_path,
        bytes_uncompressed,
        bytes_compressed,
        events,
    })
}
