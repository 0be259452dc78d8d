//! The command line's arguments: one struct per command, the shared analysis and GitHub flags,
//! and the output formats each command can write (clap refuses the others).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::pipeline::{AnalysisConfig, CaptureChoice};
use crate::report::{ExtractFormat, Format};

#[derive(Debug, Parser)]
#[command(
    name = "tracegate",
    version,
    about = "Guards LLM inference performance: reads PyTorch-profiler traces of every rank, extracts the figures that matter and gates them against a per-hardware baseline."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Stop with exit 2 when tracegate's resident memory passes SIZE while reading or analysing
    /// traces (512M, 4G...); also from TRACEGATE_MAX_MEMORY. A clear error beats the OS killing
    /// the job.
    #[arg(long, global = true, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// The longest single JSON string a trace may hold (default 16M); a longer one is exit 2,
    /// naming the event. Also from TRACEGATE_MAX_STRING. Names over 64 KiB are kept truncated.
    #[arg(long, global = true, value_name = "SIZE")]
    pub max_string: Option<String>,
    /// Threads to read and analyse with (default: one per core). The output is the same for any
    /// number; one file alone (SGLang's merged file) is parsed on all of them.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

impl Cli {
    /// Parses the process's arguments. A report whose format was left to its default
    /// (markdown, made for GitHub) and that goes to standard output becomes a table when
    /// standard output is a terminal: a person reads it there, not a markdown renderer.
    pub(crate) fn parse_args() -> Cli {
        use clap::{CommandFactory, FromArgMatches};
        use std::io::IsTerminal;
        let matches = Cli::command()
            .try_get_matches()
            .unwrap_or_else(|e| usage_exit(&e));
        let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| usage_exit(&e));
        if !format_given(&matches) && std::io::stdout().is_terminal() {
            cli.command.table_for_terminal();
        }
        cli
    }
}

/// Ends the process on what clap could not parse, through `output` like every other line (a
/// value holding `\n::error::` starts no workflow command): help and the version on stdout,
/// exit 0; a usage error on stderr, exit 2 (cannot judge: bad input).
fn usage_exit(e: &clap::Error) -> ! {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            crate::output::stdout(&text);
            std::process::exit(crate::exit::PASS)
        }
        _ => {
            crate::output::stderr(&text);
            std::process::exit(crate::exit::CANNOT_JUDGE)
        }
    }
}

/// Whether the innermost subcommand's `--format` was given on the command line.
fn format_given(matches: &clap::ArgMatches) -> bool {
    let mut m = matches;
    while let Some((_, sub)) = m.subcommand() {
        m = sub;
    }
    m.ids().any(|id| id.as_str() == "format")
        && m.value_source("format") == Some(clap::parser::ValueSource::CommandLine)
}

impl Command {
    /// Markdown to standard output becomes a table (check, sweep, report, compare).
    fn table_for_terminal(&mut self) {
        let (format, output) = match self {
            Command::Check(a) => (&mut a.format, &a.output),
            Command::Sweep(a) => (&mut a.format, &a.output),
            Command::Report(a) => (&mut a.format, &a.output),
            Command::Compare(a) => (&mut a.format, &a.output),
            _ => return,
        };
        if output.is_none() && *format == Format::Markdown {
            *format = Format::Table;
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// What the reader finds in each rank: devices, streams, launches, graph replays, Input Dims.
    Inspect(InspectArgs),
    /// The gated figures of a run: decode step time, utilization, comm share, allreduce, MoE...
    Extract(ExtractArgs),
    /// Gate a run against a baseline: exit 0 pass, 1 regression, 2 could not judge.
    Check(CheckArgs),
    /// Write a run's figures into a baseline file.
    #[command(subcommand)]
    Baseline(BaselineCommand),
    /// Generate a deterministic synthetic multi-rank run (SGLang-style traces plus truth.json).
    Synth(SynthArgs),
    /// The main job end to end on built-in data: a clean synthetic run passes its baseline and
    /// the same run with an injected regression fails it, with the cause named.
    Demo(DemoArgs),
    /// The full analysis of a run: breakdown, communication, overlap, balance, prefill, GEMM shapes.
    Report(ReportArgs),
    /// Two or more runs side by side, with the ratio to the first.
    Compare(CompareArgs),
    /// Merge the verdicts of a sweep (check --verdict-out files) into one answer.
    Sweep(SweepArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate inspect traces/                     # every rank of the run in traces/
  tracegate inspect rank-0.json.gz --format json")]
pub(crate) struct InspectArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The output's format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate extract traces/
  tracegate extract traces/ --format json --output figures.json
  tracegate extract traces/ --step-gap 500us    # when the steps found look wrong (see report)")]
pub(crate) struct ExtractArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// The output's format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ExtractFormat,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate check traces/ --baseline baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml
  tracegate check traces/ --baselines baselines/ --key precision=fp4 --verdict-out verdict.json
  tracegate check traces/ --baseline b.toml --hardware \"AMD Instinct MI300X\"  # trace names no device
  tracegate check traces/ --baseline b.toml --output report.md   # the headline still on stderr
Exit status: 0 pass, 1 regression, 2 could not judge.")]
pub(crate) struct CheckArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The baseline TOML file of this hardware configuration.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "baselines",
        conflicts_with = "baselines"
    )]
    pub baseline: Option<PathBuf>,
    /// A directory of baselines: the one whose [meta] matches the run is used (hardware from the
    /// trace, tp from the ranks, the rest from --key); none or several is exit 2.
    // These comments are clap's help text, where brackets, URLs and <KEY> are plain text.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, value_name = "DIR")]
    pub baselines: Option<PathBuf>,
    /// What the trace does not say, to choose among --baselines: model=, precision=, framework=,
    /// image=, tp=, ep=, concurrency=. Repeatable.
    #[arg(long, value_name = "NAME=VALUE")]
    pub key: Vec<String>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// The report's format (default: markdown; table when standard output is a terminal).
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Also write the full verdict as JSON to this file (for an artifact).
    #[arg(long, value_name = "FILE")]
    pub verdict_out: Option<PathBuf>,
    /// Write a repro of the kernel the verdict names into this directory: its record as JSON (op
    /// stack, shapes, dtypes, time per call in baseline and run, share of the part's peak) and,
    /// where its op maps to a PyTorch op, a script that times that op at the same shapes.
    #[arg(long, value_name = "DIR")]
    pub repro: Option<PathBuf>,
    /// Fail (exit 1) on an improvement beyond tolerance too, so baselines cannot drift loose.
    #[arg(long)]
    pub fail_on_improvement: bool,
    /// Judge a run on other hardware or with another rank count (tp) than the baseline's, which
    /// is otherwise exit 2.
    #[arg(long, visible_alias = "allow-other-configuration")]
    pub allow_other_hardware: bool,
    /// Judge a run whose decode batch (sequences per step) differs from the baseline's by more
    /// than 10%, which is otherwise exit 2: its time per token is of another load.
    #[arg(long)]
    pub allow_other_batch: bool,
    /// Judge a run whose flags override a structural field the baseline records
    /// (`--moe-layers` other than its `moe_layers`), which is otherwise exit 2; the report says so.
    #[arg(long = "override")]
    pub allow_override: bool,
    /// The run's hardware, asserted where the trace names no device or the baseline names no
    /// hardware (otherwise exit 2); the report says it was asserted.
    #[arg(long, value_name = "NAME")]
    pub hardware: Option<String>,
    #[command(flatten)]
    pub identity: IdentityArgs,
    #[command(flatten)]
    pub github: GithubArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate sweep verdicts/ --expect dsr1-fp4-mi355x-sglang-tp4-conc64,dsr1-fp8-h200-sglang-tp8-conc64 --name profile-sweep
  tracegate sweep verdicts/*.json --github --comment always
Exit status: the worst of the configurations' (a configuration in --expect without a verdict fails).")]
pub(crate) struct SweepArgs {
    /// Verdict files (`check --verdict-out`) or directories of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Configurations that must have a verdict, comma-separated or repeated: a baseline's file
    /// stem, or a verdict file's stem (the action's `name`, a matrix job's configuration). One
    /// without a verdict fails the sweep instead of being left out.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub expect: Vec<String>,
    /// The report's format (default: markdown; table when standard output is a terminal).
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// The sweep's name, which identifies its sticky pull-request comment (one per name).
    #[arg(long, default_value = "sweep")]
    pub name: String,
    #[command(flatten)]
    pub identity: IdentityArgs,
    #[command(flatten)]
    pub github: GithubArgs,
}

#[derive(Debug, Subcommand)]
#[command(after_help = "Examples:
  tracegate baseline new traces/ --baseline baselines/my-config.toml --model Qwen3-8B --precision bf16
  tracegate baseline update traces/ --baseline baselines/my-config.toml --image lmsysorg/sglang:v0.5.5")]
pub(crate) enum BaselineCommand {
    /// Create a baseline from a run, with default tolerances.
    New(BaselineNewArgs),
    /// Rewrite a baseline's figures from a run, keeping tolerances, comments and key order.
    Update(BaselineUpdateArgs),
    /// Write a baseline whose tolerances are measured from 3 or more clean runs (10+ recommended):
    /// values are the runs' medians, tolerances hold the false-alarm budget, and [calibration]
    /// says the smallest regression each metric catches.
    Calibrate(BaselineCalibrateArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate baseline calibrate run1/ run2/ run3/ run4/ run5/ --baseline baselines/my-config.toml
  tracegate baseline calibrate --from-history baselines/my-config.toml")]
pub(crate) struct BaselineCalibrateArgs {
    /// Clean runs of one configuration: each a directory of one run's traces, or one run's trace
    /// files joined with commas.
    #[arg(required_unless_present = "from_history")]
    pub runs: Vec<PathBuf>,
    /// The baseline TOML file to write (with --from-history: default that file).
    #[arg(long, value_name = "FILE", required_unless_present = "from_history")]
    pub baseline: Option<PathBuf>,
    /// Re-derive the tolerances of this baseline from its [history] alone (values kept).
    #[arg(long, value_name = "FILE", conflicts_with = "runs")]
    pub from_history: Option<PathBuf>,
    /// The chance that a clean run fails the whole check, split evenly over the gated metrics.
    #[arg(long, value_name = "PCT", default_value = "1%")]
    pub false_alarm: String,
    /// Say how many runs would bring each metric's minimum detectable change down to PCT% of
    /// its value (a column of the table on stderr).
    #[arg(long, value_name = "PCT")]
    pub target_mdc: Option<f64>,
    /// The smallest tolerance to write: METRIC=TOL for one metric, TOL for every metric of its
    /// unit (default: a quarter of the metric's starting tolerance). Repeatable.
    #[arg(long, value_name = "[METRIC=]TOL")]
    pub min_tolerance: Vec<String>,
    /// The largest: a metric that needs more is written `gate = false`, too noisy to gate
    /// (default: 5x the metric's starting tolerance). Repeatable.
    #[arg(long, value_name = "[METRIC=]TOL")]
    pub max_tolerance: Vec<String>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Where the figures came from, stamped into `[meta] source` (default: the runs).
    #[arg(long)]
    pub source: Option<String>,
    /// Print the baseline as a unified diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Overwrite an existing baseline.
    #[arg(long)]
    pub force: bool,
    /// Hardware name (default: the device name the traces report).
    #[arg(long)]
    pub hardware: Option<String>,
    /// The model served, written to `[meta] model` (DeepSeek-R1...).
    #[arg(long)]
    pub model: Option<String>,
    /// The model's precision, written to `[meta] precision` (fp8, fp4...).
    #[arg(long)]
    pub precision: Option<String>,
    /// The runs' framework (default: what the traces say: SGLang's files and annotations).
    #[arg(long)]
    pub framework: Option<String>,
    /// The expert-parallel size, written to `[meta] ep`.
    #[arg(long)]
    pub ep: Option<u32>,
    /// The serving concurrency, written to `[meta] concurrency`.
    #[arg(long)]
    pub concurrency: Option<u32>,
    #[command(flatten)]
    pub identity: IdentityArgs,
}

#[derive(Debug, Args)]
pub(crate) struct BaselineWriteArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The baseline TOML file to write.
    #[arg(long, value_name = "FILE")]
    pub baseline: PathBuf,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// Where the figures came from, stamped into `[meta] source` (default: the paths).
    #[arg(long)]
    pub source: Option<String>,
    /// Print the change as a unified diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also print the change as a unified diff (otherwise one line on stderr says what was written).
    #[arg(long)]
    pub diff: bool,
    /// new: overwrite an existing file; update: accept a run on other hardware or of another
    /// rank count (tp).
    #[arg(long)]
    pub force: bool,
    // The run's image is written as `image` (update: the old one kept as `previous_image`);
    // `--meta` pairs set their [meta] key or go into `extra`.
    #[command(flatten)]
    pub identity: IdentityArgs,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate baseline new traces/ --baseline baselines/dsr1-fp4-mi355x-sglang-tp4-conc64.toml \\
      --model DeepSeek-R1-0528 --precision fp4 --framework sglang --concurrency 64
  tracegate baseline new traces/ --baseline b.toml --hardware \"AMD Instinct MI300X\"  # no device in the trace
  tracegate baseline new traces/ --baseline b.toml --dry-run    # print it, write nothing")]
pub(crate) struct BaselineNewArgs {
    #[command(flatten)]
    pub write: BaselineWriteArgs,
    /// Hardware name (default: the device name the trace reports).
    #[arg(long)]
    pub hardware: Option<String>,
    /// The model served (DeepSeek-R1-0528), written to [meta] and matched by check --key model=.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long)]
    pub model: Option<String>,
    /// The weights' precision (fp4, fp8, bf16), written to [meta]; check --key precision=.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long)]
    pub precision: Option<String>,
    /// The serving framework (sglang, vllm), written to [meta]; check --key framework=.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long)]
    pub framework: Option<String>,
    /// Tensor-parallel size (default: the run's rank count); check refuses a run with another.
    #[arg(long)]
    pub tp: Option<u32>,
    /// Expert-parallel size, written to [meta]; check --key ep=.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long)]
    pub ep: Option<u32>,
    /// Requests in flight during the profile (64), written to [meta]; check --key concurrency=.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long)]
    pub concurrency: Option<u32>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate baseline update traces/ --baseline baselines/my-config.toml
  tracegate baseline update traces/ --baseline b.toml --image lmsysorg/sglang:v0.5.5  # after a merged bump
  tracegate baseline update traces/ --baseline b.toml --add-new --dry-run")]
pub(crate) struct BaselineUpdateArgs {
    #[command(flatten)]
    pub write: BaselineWriteArgs,
    /// Also add the metrics the run has and the baseline does not (gated as `baseline new` would
    /// write them); without it, the baseline keeps its own set of metrics.
    #[arg(long)]
    pub add_new: bool,
    /// A baseline with [history] keeps its values and only appends the run to [history]; a
    /// calibrated one also takes the run's image and re-derives its values from the history
    /// since the last image (tolerances kept); --rebase rewrites the values from the run.
    #[arg(long)]
    pub rebase: bool,
    /// Record a run that `check` calls a regression as the new level (marked
    /// `accepted_regression` in [history]) instead of refusing it (exit 2).
    #[arg(long)]
    pub accept_regression: bool,
    /// Keep the last N runs in [history] (default: the file's bound, else 20).
    #[arg(long, value_name = "N")]
    pub history_size: Option<usize>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate report traces/
  tracegate report traces/ --format markdown --output report.md
  tracegate report examples/traces/h200-toy-moe-graph.json.gz --format json   # a real trace in the repository")]
pub(crate) struct ReportArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// The report's format (default: markdown; table when standard output is a terminal).
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate compare runs/b200 runs/h200
  tracegate compare runs/old runs/new --label before=runs/old --label after=runs/new")]
pub(crate) struct CompareArgs {
    /// Runs: each a trace file or a directory of one run's traces. The first is the reference.
    pub runs: Vec<PathBuf>,
    /// Name a run: NAME=PATH renames the run given as PATH, or adds PATH as a run named NAME.
    #[arg(long, value_name = "NAME=PATH")]
    pub label: Vec<String>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    /// The comparison's format (default: markdown; table when standard output is a terminal).
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Write the comparison to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Scenarios: mi355x-dsr1-fp4-tp4, b200-dsr1-fp4-tp4-ep4, h200-dsr1-fp8-tp8,
  mi325x-dsr1-fp8-tp8 (SGLang-style, step annotations), mi355x-dsr1-fp4-tp4-mtp (SGLang with MTP
  speculative decoding: draft forwards, TARGET_VERIFY and DRAFT_EXTEND_V2 steps), vllm-eager,
  vllm-piecewise (eager serving loops without annotations or whole-forward graphs), vllm-stock
  (stock vLLM v0.16+: worker file names, execute_context_… annotations, vllm_version, and the
  frontend's async_llm trace beside the workers').
Injections (--inject): allreduce=F, moe=F, attention=F, protocol=F, straggler=F or straggler=R:F,
  single-stream, stall=N:F, slow=N:F (1 < F <= 2), host-gap=MS, relabel=mixed|idle:FRACTION[:F],
  batch=N, rename, unknown-moe, rename-moe, draft=F (the draft model's kernels, speculative
  scenarios only).
Examples:
  tracegate synth --scenario mi355x-dsr1-fp4-tp4 --out runs/clean
  tracegate synth --scenario mi355x-dsr1-fp4-tp4 --out runs/slow --inject allreduce=1.5
  tracegate synth --scenario vllm-eager --out runs/stalls --inject stall=5:3.0 --seed 7
  tracegate synth --scenario h200-dsr1-fp8-tp8 --out runs/code --with-stack"
)]
pub(crate) struct SynthArgs {
    /// Scenario: mi355x-dsr1-fp4-tp4, b200-dsr1-fp4-tp4-ep4, h200-dsr1-fp8-tp8, mi325x-dsr1-fp8-tp8,
    /// mi355x-dsr1-fp4-tp4-mtp, vllm-eager, vllm-piecewise, vllm-stock; or training-loop, a
    /// ProfilerStep training loop (no serving step: --decode-steps is its iterations, host-gap and
    /// allreduce its injections).
    #[arg(long)]
    pub scenario: String,
    /// Directory to write the traces and truth.json into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Number of ranks (default: the scenario's).
    #[arg(long)]
    pub ranks: Option<u32>,
    /// Steady decode steps after the warm-up steps.
    #[arg(long, default_value_t = 24)]
    pub decode_steps: u32,
    /// Seed of the run's jitter: the same seed writes the same bytes (the shipped baselines are
    /// from seed 1).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Multiplies the number of decode steps, to make multi-GB runs for benchmarks.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// python_function events per step (real traces are mostly these).
    #[arg(long, default_value_t = 50)]
    pub python_functions_per_step: u32,
    /// A regression to inject, KIND=FACTOR (allreduce, moe, attention, straggler, protocol,
    /// single-stream; straggler=R:F picks the rank; stall=N:F stalls N decode steps to F× their
    /// wall; slow=N:F makes N decode steps F× slower below the stall line; host-gap=MS adds MS of
    /// GPU idle after every decode forward; relabel=mixed|idle:FRACTION[:F] relabels that fraction
    /// of decode steps; batch=N writes bs=N), or a renamed build (rename: every kernel renamed as a fork would; unknown-moe: the
    /// main MoE GEMM under a name no rule knows; rename-moe: the main MoE GEMM with one more
    /// template argument, as a new build); repeatable.
    #[arg(long, value_name = "KIND=FACTOR")]
    pub inject: Vec<String>,
    /// per-rank: one file per rank; merged: one SGLang/InferenceX merged file of every rank
    /// (pids "[TPnn] pid", ids repeating across ranks).
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, value_enum, default_value = "per-rank")]
    pub layout: crate::pipeline::Layout,
    /// gzip level of the trace files, 0 (store) to 9, or `none` for plain `.json` files (about 15x
    /// larger, quicker to write and to read); the JSON is the same whatever the encoding, only
    /// the files' size and the time to write them change (tests use 1, or none for a run read once).
    #[arg(long, default_value = "5", value_name = "0-9|none", value_parser = parse_gzip_level)]
    pub gzip_level: GzipLevel,
    /// Between-run variation in percent: one log-normal factor per kernel category and one
    /// GPU-clock factor for the whole run, drawn from the seed (sd PCT%); 0 keeps every run as it
    /// was. truth.json records the factors.
    #[arg(long, default_value_t = 0.0, value_name = "PCT")]
    pub run_jitter: f64,
    /// per-category: each kernel category's factor drawn on its own (and a GPU-clock factor);
    /// shared: one factor for every category of the run (they move together, sd PCT%).
    #[arg(long, value_enum, default_value = "per-category")]
    pub run_jitter_mode: crate::pipeline::JitterMode,
    /// Also write what a code view needs: for a scenario whose decode replays a whole-forward
    /// CUDA/HIP graph, the graph's capture per rank in DIR/capture_traces/ (SGLang's
    /// bs_N_rankR.json.gz, vLLM's graph_capture_rank_R.*.pt.trace.json.gz; vllm-piecewise's
    /// pieces get none, and the report says so); for eager launches, nn.Module and file frames
    /// and their ops' Input Dims; truth.json then lists each decode kernel's op, shapes and scope
    /// (`sites`). Without it the files are byte for byte those of earlier releases.
    #[arg(long)]
    pub with_stack: bool,
}

/// `--gzip-level`: 0 to 9, or `None` for `none` (plain JSON).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GzipLevel(pub Option<u32>);

fn parse_gzip_level(text: &str) -> Result<GzipLevel, String> {
    if text == "none" {
        return Ok(GzipLevel(None));
    }
    match text.parse::<u32>() {
        Ok(level) if level <= 9 => Ok(GzipLevel(Some(level))),
        _ => Err(format!(
            "`{text}` is not a gzip level: give 0 to 9, or none"
        )),
    }
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  tracegate demo
  tracegate demo --scenario b200-dsr1-fp4-tp4-ep4 --inject moe=1.3
  tracegate demo --inject stall=5:3.0 --keep runs/demo   # keep the generated runs")]
pub(crate) struct DemoArgs {
    /// The synthetic scenario (one with a shipped baseline: see synth --help).
    #[arg(long, default_value = "mi355x-dsr1-fp4-tp4")]
    pub scenario: String,
    /// The regression injected into the second run (KIND=FACTOR, see synth --help).
    #[arg(long, default_value = "allreduce=1.5")]
    pub inject: String,
    /// The second run's report format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Keep the generated runs in this directory instead of a temporary one.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

/// How a run is analysed; shared by the commands that compute metrics.
#[derive(Debug, Args)]
pub(crate) struct AnalysisArgs {
    /// Extra taxonomy rules (TOML, the format of the built-in rules.toml), tried first.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// MoE layers of the model (else counted from router launches); at least 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub moe_layers: Option<u32>,
    /// Decode steps dropped at the start of each rank as warm-up [default: 2]; a count not below
    /// the decode steps a rank found is refused.
    #[arg(long, value_name = "N")]
    pub warmup_steps: Option<usize>,
    /// Count only NCCL-named kernels as communication, as Holistic Trace Analysis does.
    #[arg(long)]
    pub hta_comm: bool,
    /// Idle GPU time that separates two forward passes (e.g. 500us, 2ms), instead of the
    /// threshold chosen from the run's own gaps and host syncs.
    #[arg(long, value_name = "DURATION", value_parser = crate::pipeline::parse_duration)]
    pub step_gap: Option<i64>,
    /// Gate a run that holds only some of its ranks (one rank of a TP4 run, say): `baseline`
    /// records which ranks of how many, and `check` judges only a run of the same ranks. Without
    /// it, `check` and `baseline` refuse a partial run (exit 2).
    #[arg(long)]
    pub partial_ranks: bool,
    /// Graph captures (SGLang's --enable-profile-cuda-graph, vLLM's capture_torch_profiler) that
    /// give replayed kernels their op, shapes and Python scope [default: a capture_traces/
    /// directory beside the traces or under the run's directory].
    #[arg(long, value_name = "DIR", conflicts_with = "no_capture")]
    pub capture: Option<PathBuf>,
    /// Join no capture, not even one found beside the traces.
    #[arg(long)]
    pub no_capture: bool,
    /// Python scope frames shown per row of the model view (1: the innermost nn.Module, or the
    /// innermost frame of the model's own code).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub scope_depth: u16,
    /// Peak figures for the roofline, over the device's datasheet table or for a device without
    /// one: comma-separated KEY=VALUE, KEY a dtype (fp64, fp32, tf32, bf16, fp16, fp8, fp6, fp4,
    /// int8; FLOP/s) or hbm (bytes/s), VALUE with G, T or P: bf16=989T,hbm=4.8T.
    #[arg(long, value_name = "SPEC", value_parser = crate::pipeline::parse_peak_text)]
    pub peak: Option<String>,
}

impl AnalysisArgs {
    /// The library's configuration for these flags, under the command's limits.
    pub(crate) fn config(&self, limits: crate::pipeline::ReadLimits) -> AnalysisConfig {
        AnalysisConfig {
            rules: self.rules.clone(),
            moe_layers: self.moe_layers,
            warmup_steps: self
                .warmup_steps
                .unwrap_or(crate::pipeline::DEFAULT_WARMUP_STEPS),
            hta_comm: self.hta_comm,
            step_gap: self.step_gap,
            warmup_asked: self.warmup_steps.is_some(),
            partial_ranks: self.partial_ranks,
            capture: match (&self.capture, self.no_capture) {
                (_, true) => CaptureChoice::Off,
                (Some(dir), _) => CaptureChoice::Dir(dir.clone()),
                (None, false) => CaptureChoice::Auto,
            },
            scope_depth: usize::from(self.scope_depth),
            peak: self.peak.clone(),
            limits,
        }
    }
}

/// GitHub Actions integration of `check` and `sweep`: job summary, annotations, step outputs and the sticky
/// pull-request comment. None of it changes the exit status.
#[derive(Debug, Args)]
pub(crate) struct GithubArgs {
    /// Act as a GitHub Actions step (the default when GITHUB_ACTIONS=true): append the report to
    /// $GITHUB_STEP_SUMMARY, print ::error/::warning/::notice annotations, set step outputs
    /// (verdict, regressions, report-path) and write the sticky pull-request comment.
    #[arg(long, conflicts_with = "no_github")]
    pub github: bool,
    /// Do not act as a GitHub Actions step even when GITHUB_ACTIONS=true.
    #[arg(long)]
    pub no_github: bool,
    /// The sticky pull-request comment in GitHub mode: off, always, or on-regression (created
    /// when the run does not pass; an existing comment is updated on every run, so a fix turns
    /// it green).
    #[arg(long, value_enum, default_value = "on-regression")]
    pub comment: crate::github::CommentMode,
    /// Pull request to comment on (default: from $GITHUB_EVENT_PATH, else $GITHUB_REF).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// Repository OWNER/NAME (default: $GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// Environment variable holding the API token.
    #[arg(long, value_name = "NAME", default_value = "GITHUB_TOKEN")]
    pub token_env: String,
    /// GitHub REST API URL (default: $GITHUB_API_URL, else https://api.github.com).
    #[allow(rustdoc::bare_urls)]
    #[arg(long, value_name = "URL")]
    pub github_api: Option<String>,
    /// The time all GitHub API requests together may take, in seconds (listing the comments,
    /// the login, the write); past it, a warning.
    #[arg(long, value_name = "SECS", default_value_t = 20.0)]
    pub github_timeout: f64,
}

/// `--image` and `--meta`: the run's identity, for `check`, `sweep` and `baseline new|update`.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct IdentityArgs {
    /// The image the run used (lmsysorg/sglang:v0.5.4-rocm700), shown beside the baseline's;
    /// default: $TRACEGATE_IMAGE.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// More of the run's identity: sglang=0.5.4, commit=..., driver=...; repeatable. Also from
    /// TRACEGATE_META_<KEY>=VALUE (the key lowercased); the command line wins.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub meta: Vec<String>,
}

impl IdentityArgs {
    /// The identity from the command line and this process's environment.
    pub(crate) fn resolve(&self) -> anyhow::Result<crate::pipeline::Identity> {
        crate::pipeline::resolve_identity(self.image.as_deref(), &self.meta, std::env::vars())
            .map_err(anyhow::Error::msg)
    }
}

impl GithubArgs {
    pub(crate) fn enabled(&self) -> bool {
        crate::github::enabled(self.github, self.no_github, &|name| {
            std::env::var(name).ok()
        })
    }

    pub(crate) fn options(
        &self,
        report_path: Option<&PathBuf>,
        fail_on_improvement: bool,
    ) -> crate::github::Options {
        crate::github::Options {
            comment: self.comment,
            pr: self.pr,
            repo: self.repo.clone(),
            token_env: self.token_env.clone(),
            api_url: self.github_api.clone(),
            timeout: std::time::Duration::from_secs_f64(self.github_timeout.clamp(0.001, 3600.0)),
            report_path: report_path.cloned(),
            fail_on_improvement,
        }
    }
}

#[cfg(test)]
mod help_tests {
    use clap::CommandFactory;

    /// Every subcommand, by its path (`baseline new`).
    fn commands() -> Vec<(String, clap::Command)> {
        let mut out = Vec::new();
        let mut stack = vec![(String::new(), super::Cli::command())];
        while let Some((path, cmd)) = stack.pop() {
            for sub in cmd.get_subcommands() {
                let name = format!("{path} {}", sub.get_name()).trim().to_string();
                stack.push((name.clone(), sub.clone()));
                out.push((name, sub.clone()));
            }
        }
        out
    }

    #[test]
    fn every_subcommand_has_an_example_and_every_option_a_description() {
        for (name, mut cmd) in commands() {
            if cmd.get_name() == "help" {
                continue;
            }
            let help = cmd.render_long_help().to_string();
            assert!(
                help.contains(&format!("tracegate {name}")) || help.contains("Examples:"),
                "{name}: no example in --help"
            );
            for arg in cmd.get_arguments() {
                assert!(
                    arg.get_help().is_some() || arg.get_long_help().is_some(),
                    "{name}: --{} has no description",
                    arg.get_id()
                );
            }
        }
    }

    #[test]
    fn a_default_markdown_to_stdout_becomes_a_table_on_a_terminal_only() {
        use clap::FromArgMatches;
        let parse = |args: &[&str]| {
            let m = super::Cli::command().try_get_matches_from(args).unwrap();
            let mut cli = super::Cli::from_arg_matches(&m).unwrap();
            if !super::format_given(&m) {
                cli.command.table_for_terminal();
            }
            match cli.command {
                super::Command::Check(a) => a.format,
                super::Command::Report(a) => a.format,
                _ => unreachable!(),
            }
        };
        use crate::report::Format;
        let check = ["tracegate", "check", "t", "--baseline", "b.toml"];
        assert_eq!(parse(&check), Format::Table);
        assert_eq!(
            parse(&[&check[..], &["--format", "markdown"]].concat()),
            Format::Markdown
        );
        assert_eq!(
            parse(&[&check[..], &["--output", "f.md"]].concat()),
            Format::Markdown
        );
        assert_eq!(parse(&["tracegate", "report", "t"]), Format::Table);
    }

    #[test]
    fn synth_help_lists_every_scenario_and_injection() {
        let mut cmd = super::Cli::command();
        let synth = cmd.find_subcommand_mut("synth").unwrap();
        let help = synth.render_long_help().to_string();
        for scenario in crate::pipeline::scenario_names() {
            assert!(help.contains(scenario), "synth --help lacks {scenario}");
        }
        for kind in crate::pipeline::InjectionKind::ALL {
            assert!(
                help.contains(kind.as_str()),
                "synth --help lacks {}",
                kind.as_str()
            );
        }
        let check = cmd.find_subcommand_mut("check").unwrap();
        let help = check.render_long_help().to_string();
        assert!(help.contains("--allow-other-configuration"), "{help}");
        assert!(help.contains("rank count"), "{help}");
    }
}
