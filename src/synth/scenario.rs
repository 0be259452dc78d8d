//! The four modelled platforms: kernel names, categories, calls per layer, per-call durations,
//! streams, ranks and the published figures of DeepSeek-R1 serving runs the generator is
//! calibrated to (the targets are listed in `docs/SYNTH.md`).
//!
//! Categories and collective kinds are assigned here, per kernel, and the ground truth is computed
//! from them; they follow the taxonomy's intent but do not depend on it.
//!
//! Each platform is data, `scenarios/<name>.toml` (compiled in), read by [`from_toml`]: its
//! kernels (`[[spec]]`: name, category, mean µs per decode call, launching op, GEMM (K, N)), the
//! launch order of a step (`[ops]`: spec ids, with a dependency and an idle-gap weight where not
//! `seq 1`) and the calibration (per-rank walls, prefill, bursts, stalls). The vLLM loops are the
//! MI355X table with an eager serving loop ([`vllm`]).

/// Microseconds to integer nanoseconds (table values only).
fn us(v: f64) -> u64 {
    (v * 1000.0).round() as u64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vendor {
    Nvidia,
    Amd,
}

/// One kernel (or memcpy) the scenario launches.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    pub name: &'static str,
    pub cat: &'static str,
    /// Collective kind of a `comm` kernel (`allreduce`, `allgather`, `other`).
    pub collective: Option<&'static str>,
    /// Mean duration per call in a decode step.
    pub dur_ns: u64,
    /// Runs on the auxiliary stream (B200's MoE stream 380).
    pub aux: bool,
    /// The `cpu_op` that launches it in eager mode.
    pub op: &'static str,
    /// (K, N) of a GEMM-like op for `Input Dims` `[[M, K], [K, N]]`; (0, 0): `[[M, 7168]]`.
    pub kn: (u32, u32),
    /// A `gpu_memcpy` activity, not a kernel.
    pub memcpy: bool,
}

impl Spec {
    pub(crate) fn is_comm(&self) -> bool {
        self.cat == "comm"
    }
    pub(crate) fn is_allreduce(&self) -> bool {
        self.collective == Some("allreduce")
    }
    /// Compute in the sense of METRICS.md: neither comm nor memcpy.
    pub(crate) fn is_compute(&self) -> bool {
        !self.is_comm() && self.cat != "memcpy"
    }
}

/// How an op waits before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dep {
    /// After the previous op of its stream; an aux op that follows a main op also waits for the
    /// main stream (fork).
    Seq,
    /// A main op that also waits for the aux stream (join).
    Join,
    /// An aux op that starts while the last main op runs (after its start).
    Concurrent,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    pub spec: usize,
    pub dep: Dep,
    /// Weight of the idle gap before the op (calibrated to the target wall).
    pub w: f64,
}

/// Per-rank calibration: the decode wall the rank would have on its own (its compute, its launch
/// gaps and the collectives' transfer time, no waiting), and a factor on its compute kernels. The
/// step of the run is as long as the slowest rank's; the others wait for it in the collectives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RankTune {
    pub wall_ns: u64,
    pub compute: f64,
}

#[derive(Debug, Clone)]
pub(crate) struct PrefillTune {
    pub wall_ns: u64,
    pub compute_ns: u64,
    pub comm_ns: u64,
    /// One large call of this spec (MI355X's ~35 ms cross_device_reduce).
    pub big: Option<(usize, u64)>,
    pub toks: u32,
}

/// An RCCL set-up burst between prefill and decode (MI325X).
#[derive(Debug, Clone)]
pub(crate) struct Burst {
    pub spec: usize,
    pub count: u32,
    pub dur_ns: u64,
    pub gap_min_ns: u64,
    pub gap_max_ns: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Scenario {
    pub name: &'static str,
    pub device: &'static str,
    pub vendor: Vendor,
    pub ranks: u32,
    pub main_stream: u32,
    pub aux_stream: Option<u32>,
    /// SGLang `step[...]` annotations present.
    pub annotations: bool,
    pub specs: Vec<Spec>,
    pub prologue: Vec<Op>,
    pub dense_layer: Vec<Op>,
    pub moe_layer: Vec<Op>,
    pub epilogue: Vec<Op>,
    pub n_dense: u32,
    pub n_moe: u32,
    /// The last call of `.0` in a step is replaced by `.1` (121 fused allreduces + a bulk one).
    pub replace_last: Option<(usize, usize)>,
    pub tune: Vec<RankTune>,
    /// Launch-bound ranks: on ranks other than 0, the GPU idles before calls of this spec, with this
    /// gap weight (H200: ranks 1-7 arrive late at every twoshot allreduce, so rank 0 waits in it).
    pub paced: Option<(usize, f64)>,
    pub prefill: PrefillTune,
    /// First call of this spec in the first decode step takes this long (cold start); bool: rank 0 only.
    pub cold_first: Option<(usize, u64, bool)>,
    pub burst: Option<Burst>,
    /// Decode step index (counting warm-up) that stalls for this long mid-step (an outlier).
    pub stall: Option<(u32, u64)>,
    /// The main allreduce spec and the name of the other implementation (`protocol=F`).
    pub protocol: (usize, &'static str),
    /// Decode runs in an eager serving loop instead of graph launches.
    pub eager: Option<EagerLoop>,
    /// Speculative decoding: every decode iteration is draft forwards, a verify and a draft extend.
    pub mtp: Option<Mtp>,
    /// The vLLM release whose stock profiler wrote the run (`vllm-stock`): vLLM's worker file
    /// names, its `execute_context_…_generation_…` step annotations, `vllm_version` at the top
    /// level, and the frontend's CPU-only `async_llm` trace beside the workers'. `None`: SGLang.
    pub vllm_stock: Option<&'static str>,
}

/// Speculative decoding as SGLang runs EAGLE/MTP (`eagle_worker_v2.py`): per decode iteration the
/// draft model's decode steps (one CUDA graph replayed outside any step annotation), the target's
/// verify (`step[TARGET_VERIFY bs=N]` around its graph launch) and the draft model's extend over
/// the accepted tokens (`step[DRAFT_EXTEND_V2 bs=N]`, launched eagerly: no draft-extend graph for
/// the AITER attention backend). The draft model (DeepSeek's MTP module) is one MoE decoder layer
/// and the shared head: the scenario's `moe_layer` and `epilogue` ops.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mtp {
    /// Draft-model forwards the draft graph replays before each verify.
    pub draft_forwards: u32,
    /// GPU-idle time between the draft graph and the verify (the host builds the draft tree), ns.
    pub draft_gap_ns: u64,
    /// GPU-idle time between the verify and the draft extend (sampling, accept), ns.
    pub extend_gap_ns: u64,
}

/// An eager serving loop: per-rank `rank-<r>.json.gz`, no annotations, no whole-forward graphs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EagerLoop {
    /// A prefill forward before every this many decode steps (after the first prefill).
    pub prefill_every: u32,
    /// Idle GPU time between two forward passes, drawn per step (log-uniform), ns.
    pub gap_min_ns: u64,
    pub gap_max_ns: u64,
    /// vLLM piecewise CUDA graphs: attention eager, the layers between replayed as graphs.
    pub piecewise: bool,
}

pub(crate) const NAMES: &[&str] = &[
    "mi355x-dsr1-fp4-tp4",
    "b200-dsr1-fp4-tp4-ep4",
    "h200-dsr1-fp8-tp8",
    "mi325x-dsr1-fp8-tp8",
    "mi355x-dsr1-fp4-tp4-mtp",
    "vllm-eager",
    "vllm-piecewise",
    "vllm-stock",
];

/// The TOML of each platform, by scenario name.
const TABLES: &[(&str, &str)] = &[
    (
        "mi355x-dsr1-fp4-tp4",
        include_str!("scenarios/mi355x-dsr1-fp4-tp4.toml"),
    ),
    (
        "b200-dsr1-fp4-tp4-ep4",
        include_str!("scenarios/b200-dsr1-fp4-tp4-ep4.toml"),
    ),
    (
        "h200-dsr1-fp8-tp8",
        include_str!("scenarios/h200-dsr1-fp8-tp8.toml"),
    ),
    (
        "mi325x-dsr1-fp8-tp8",
        include_str!("scenarios/mi325x-dsr1-fp8-tp8.toml"),
    ),
    (
        "mi355x-dsr1-fp4-tp4-mtp",
        include_str!("scenarios/mi355x-dsr1-fp4-tp4-mtp.toml"),
    ),
];

/// The scenario called `name`: `None` if there is none, an error naming the table if its
/// compiled-in table is malformed (a bug in tracegate that `every_table_parses` catches before a
/// release, reported rather than a panic should one slip through).
pub(crate) fn by_name(name: &str) -> Option<Result<Scenario, String>> {
    match name {
        "vllm-eager" => by_name("mi355x-dsr1-fp4-tp4").map(|sc| sc.map(|sc| vllm(sc, false))),
        "vllm-piecewise" => by_name("mi355x-dsr1-fp4-tp4").map(|sc| sc.map(|sc| vllm(sc, true))),
        "vllm-stock" => by_name("mi355x-dsr1-fp4-tp4").map(|sc| sc.map(vllm_stock)),
        _ => {
            let i = TABLES.iter().position(|(table, _)| *table == name)?;
            Some(parsed()[i].clone())
        }
    }
}

/// The compiled-in tables, each parsed once per process (their strings are leaked once).
fn parsed() -> &'static [Result<Scenario, String>] {
    static PARSED: std::sync::OnceLock<Vec<Result<Scenario, String>>> = std::sync::OnceLock::new();
    PARSED.get_or_init(|| {
        TABLES
            .iter()
            .map(|(name, text)| table(name, text))
            .collect()
    })
}

/// The table `scenarios/<name>.toml`, which must describe the scenario `name`.
fn table(name: &str, text: &str) -> Result<Scenario, String> {
    let sc = from_toml(text).map_err(|e| format!("scenarios/{name}.toml: {e}"))?;
    if sc.name != name {
        return Err(format!(
            "scenarios/{name}.toml describes the scenario `{}`",
            sc.name
        ));
    }
    Ok(sc)
}

/// Milliseconds to integer nanoseconds (table values only).
fn ms(v: f64) -> u64 {
    (v * 1e6).round() as u64
}

/// A table's strings live as long as the process (parsed once).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

mod file {
    //! The layout of `scenarios/*.toml`.
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Table {
        pub name: String,
        pub device: String,
        pub vendor: String,
        pub ranks: u32,
        pub main_stream: u32,
        pub aux_stream: Option<u32>,
        pub annotations: bool,
        pub n_dense: u32,
        pub n_moe: u32,
        pub replace_last: Option<ReplaceLast>,
        pub paced: Option<Paced>,
        pub cold_first: Option<ColdFirst>,
        pub stall: Option<Stall>,
        pub protocol: Protocol,
        pub tune: Vec<Tune>,
        pub prefill: Prefill,
        pub burst: Option<Burst>,
        pub mtp: Option<Mtp>,
        pub ops: Ops,
        pub spec: Vec<Spec>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Mtp {
        pub draft_forwards: u32,
        pub draft_gap_us: f64,
        pub extend_gap_us: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct ReplaceLast {
        pub spec: String,
        pub by: String,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Paced {
        pub spec: String,
        pub w: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct ColdFirst {
        pub spec: String,
        pub us: f64,
        pub rank0_only: bool,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Stall {
        pub step: u32,
        pub ms: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Protocol {
        pub spec: String,
        pub other: String,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Tune {
        pub wall_ms: f64,
        pub compute: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Prefill {
        pub wall_ms: f64,
        pub compute_ms: f64,
        pub comm_ms: f64,
        pub toks: u32,
        pub big: Option<Big>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Big {
        pub spec: String,
        pub ms: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Burst {
        pub spec: String,
        pub count: u32,
        pub us: f64,
        pub gap_min_ms: f64,
        pub gap_max_ms: f64,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Ops {
        pub prologue: Vec<String>,
        pub dense_layer: Vec<String>,
        pub moe_layer: Vec<String>,
        pub epilogue: Vec<String>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Spec {
        pub id: String,
        pub name: String,
        pub cat: String,
        pub collective: Option<String>,
        pub us: f64,
        pub op: String,
        #[serde(default)]
        pub kn: (u32, u32),
        #[serde(default)]
        pub aux: bool,
        #[serde(default)]
        pub memcpy: bool,
    }
}

/// One scenario from its table.
pub(crate) fn from_toml(text: &str) -> Result<Scenario, String> {
    let t: file::Table = toml::from_str(text).map_err(|e| e.to_string())?;
    let ids: Vec<&str> = t.spec.iter().map(|s| s.id.as_str()).collect();
    let spec = |id: &str| -> Result<usize, String> {
        ids.iter()
            .position(|i| *i == id)
            .ok_or_else(|| format!("no [[spec]] with id `{id}`"))
    };
    // An op: `ID` (after the previous op of its stream, gap weight 1) or `ID DEP WEIGHT`.
    let ops = |list: &[String]| -> Result<Vec<Op>, String> {
        list.iter()
            .map(|text| {
                let words: Vec<&str> = text.split_whitespace().collect();
                match words[..] {
                    [id] => Ok(Op {
                        spec: spec(id)?,
                        dep: Dep::Seq,
                        w: 1.0,
                    }),
                    [id, dep, w] => Ok(Op {
                        spec: spec(id)?,
                        dep: match dep {
                            "seq" => Dep::Seq,
                            "join" => Dep::Join,
                            "concurrent" => Dep::Concurrent,
                            _ => return Err(format!("op `{text}`: unknown dependency `{dep}`")),
                        },
                        w: w.parse().map_err(|_| format!("op `{text}`: bad weight"))?,
                    }),
                    _ => Err(format!("op `{text}`: expected `ID` or `ID DEP WEIGHT`")),
                }
            })
            .collect()
    };
    let vendor = match t.vendor.as_str() {
        "amd" => Vendor::Amd,
        "nvidia" => Vendor::Nvidia,
        v => return Err(format!("unknown vendor `{v}`")),
    };
    Ok(Scenario {
        vendor,
        ranks: t.ranks,
        main_stream: t.main_stream,
        aux_stream: t.aux_stream,
        annotations: t.annotations,
        prologue: ops(&t.ops.prologue)?,
        dense_layer: ops(&t.ops.dense_layer)?,
        moe_layer: ops(&t.ops.moe_layer)?,
        epilogue: ops(&t.ops.epilogue)?,
        n_dense: t.n_dense,
        n_moe: t.n_moe,
        replace_last: match &t.replace_last {
            Some(r) => Some((spec(&r.spec)?, spec(&r.by)?)),
            None => None,
        },
        tune: t
            .tune
            .iter()
            .map(|r| RankTune {
                wall_ns: ms(r.wall_ms),
                compute: r.compute,
            })
            .collect(),
        paced: match &t.paced {
            Some(p) => Some((spec(&p.spec)?, p.w)),
            None => None,
        },
        prefill: PrefillTune {
            wall_ns: ms(t.prefill.wall_ms),
            compute_ns: ms(t.prefill.compute_ms),
            comm_ns: ms(t.prefill.comm_ms),
            big: match &t.prefill.big {
                Some(b) => Some((spec(&b.spec)?, ms(b.ms))),
                None => None,
            },
            toks: t.prefill.toks,
        },
        cold_first: match &t.cold_first {
            Some(c) => Some((spec(&c.spec)?, us(c.us), c.rank0_only)),
            None => None,
        },
        burst: match &t.burst {
            Some(b) => Some(Burst {
                spec: spec(&b.spec)?,
                count: b.count,
                dur_ns: us(b.us),
                gap_min_ns: ms(b.gap_min_ms),
                gap_max_ns: ms(b.gap_max_ms),
            }),
            None => None,
        },
        stall: t.stall.as_ref().map(|s| (s.step, ms(s.ms))),
        protocol: (spec(&t.protocol.spec)?, leak(t.protocol.other.clone())),
        eager: None,
        vllm_stock: None,
        mtp: t.mtp.as_ref().map(|m| Mtp {
            draft_forwards: m.draft_forwards,
            draft_gap_ns: us(m.draft_gap_us),
            extend_gap_ns: us(m.extend_gap_us),
        }),
        name: leak(t.name),
        device: leak(t.device),
        specs: t
            .spec
            .into_iter()
            .map(|s| Spec {
                name: leak(s.name),
                cat: leak(s.cat),
                collective: s.collective.map(leak),
                dur_ns: us(s.us),
                aux: s.aux,
                op: leak(s.op),
                kn: s.kn,
                memcpy: s.memcpy,
            })
            .collect(),
    })
}

/// An eager serving loop on the MI355X model (vLLM `--enforce-eager`, or its piecewise graphs):
/// the decode layer tables of `mi355x-dsr1-fp4-tp4`, no annotations, no stall, a prefill every 8
/// decode steps at 96% GPU utilisation (an eager prefill is GPU-bound), 0.1 to 4 ms between
/// forward passes.
fn vllm(mut sc: Scenario, piecewise: bool) -> Scenario {
    sc.name = if piecewise {
        "vllm-piecewise"
    } else {
        "vllm-eager"
    };
    sc.annotations = false;
    sc.stall = None;
    sc.prefill.wall_ns = ms(110.0);
    sc.eager = Some(EagerLoop {
        prefill_every: 8,
        gap_min_ns: us(100.0),
        gap_max_ns: ms(4.0),
        piecewise,
    });
    sc
}

/// Stock vLLM (v0.16 and later) serving the MI355X model with full CUDA graphs for decode:
/// `--profiler-config '{"profiler": "torch", ...}'` with the default step annotation
/// (vllm-project/vllm#22496), worker files named by their parallel ranks
/// (vllm-project/vllm#33198) and the frontend's trace beside them (no `ignore_frontend`).
fn vllm_stock(mut sc: Scenario) -> Scenario {
    sc.name = "vllm-stock";
    sc.vllm_stock = Some("0.16.1");
    sc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_parses_and_every_name_has_a_scenario() {
        for (i, result) in parsed().iter().enumerate() {
            if let Err(e) = result {
                panic!("{e}");
            }
            assert_eq!(result.as_ref().unwrap().name, TABLES[i].0);
        }
        for name in NAMES {
            let sc = by_name(name)
                .unwrap_or_else(|| panic!("{name}: no scenario"))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(sc.name, *name);
            assert_eq!(
                sc.tune.len(),
                sc.ranks as usize,
                "{name}: one tune per rank"
            );
        }
        assert!(by_name("nope").is_none());
    }

    #[test]
    fn a_table_under_another_scenario_s_name_is_an_error() {
        let (_, text) = TABLES[1];
        let e = table(TABLES[0].0, text).unwrap_err();
        assert_eq!(
            e,
            "scenarios/mi355x-dsr1-fp4-tp4.toml describes the scenario `b200-dsr1-fp4-tp4-ep4`"
        );
        let e = table("x", "name = ").unwrap_err();
        assert!(e.starts_with("scenarios/x.toml: "), "{e}");
    }

    #[test]
    fn a_bad_table_is_an_error_naming_what_is_wrong() {
        let (_, text) = TABLES[0];
        let e = from_toml(&text.replacen("\"norm_arq\"", "\"nope\"", 1)).unwrap_err();
        assert!(e.contains("no [[spec]] with id `nope`"), "{e}");
        let e = from_toml(&text.replacen("vendor = \"amd\"", "vendor = \"intel\"", 1)).unwrap_err();
        assert!(e.contains("unknown vendor `intel`"), "{e}");
        let e = from_toml(&text.replacen("[ops]", "[ops]\nextra = []", 1)).unwrap_err();
        assert!(e.contains("extra"), "{e}");
    }
}
