//! The command line: parses arguments and wires the pipeline stages together. No analysis here.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

use crate::exit;
use crate::report::Format;

#[derive(Debug, Parser)]
#[command(
    name = "tracegate",
    version,
    about = "Guards LLM inference performance: reads PyTorch-profiler traces of every rank, extracts the figures that matter and gates them against a per-hardware baseline."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Stop with exit 2 when tracegate's resident memory passes SIZE while reading traces
    /// (512M, 4G...); also from TRACEGATE_MAX_MEMORY. A clear error beats the OS killing the job.
    #[arg(long, global = true, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// Threads to read and analyse with (default: one per core). The output is the same for any
    /// number; one file alone (SGLang's merged file) is parsed on all of them.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
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
pub struct SweepArgs {
    /// Verdict files (`check --verdict-out`) or directories of them.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Configurations that must have a verdict (baseline file stems), comma-separated or
    /// repeated: one without a verdict fails the sweep instead of being left out.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub expect: Vec<String>,
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// The sweep's name, which identifies its sticky pull-request comment (one per name).
    #[arg(long, default_value = "sweep")]
    pub name: String,
    #[command(flatten)]
    pub github: GithubArgs,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    #[arg(long, default_value = "mi355x-dsr1-fp4-tp4")]
    pub scenario: String,
    /// The regression injected into the second run.
    #[arg(long, default_value = "allreduce=1.5")]
    pub inject: String,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Keep the generated runs in this directory instead of a temporary one.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Scenario: mi355x-dsr1-fp4-tp4, b200-dsr1-fp4-tp4-ep4, h200-dsr1-fp8-tp8, mi325x-dsr1-fp8-tp8.
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
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Multiplies the number of decode steps, to make multi-GB runs for benchmarks.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// python_function events per step (real traces are mostly these).
    #[arg(long, default_value_t = 50)]
    pub python_functions_per_step: u32,
    /// A regression to inject, KIND=FACTOR (allreduce, moe, attention, straggler, protocol,
    /// single-stream); repeatable.
    #[arg(long, value_name = "KIND=FACTOR")]
    pub inject: Vec<String>,
    /// per-rank: one file per rank; merged: one SGLang/InferenceX merged file of every rank
    /// (pids "[TPnn] pid", ids repeating across ranks).
    #[arg(long, value_enum, default_value = "per-rank")]
    pub layout: crate::synth::Layout,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Create a baseline from a run, with default tolerances.
    New(BaselineNewArgs),
    /// Rewrite a baseline's figures from a run, keeping tolerances, comments and key order.
    Update(BaselineUpdateArgs),
}

#[derive(Debug, Args)]
pub struct BaselineWriteArgs {
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
    /// new: overwrite an existing file; update: accept a run on other hardware.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct BaselineNewArgs {
    #[command(flatten)]
    pub write: BaselineWriteArgs,
    /// Hardware name (default: the device name the trace reports).
    #[arg(long)]
    pub hardware: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub precision: Option<String>,
    #[arg(long)]
    pub framework: Option<String>,
    #[arg(long)]
    pub image: Option<String>,
    #[arg(long)]
    pub tp: Option<u32>,
    #[arg(long)]
    pub ep: Option<u32>,
    #[arg(long)]
    pub concurrency: Option<u32>,
}

#[derive(Debug, Args)]
pub struct BaselineUpdateArgs {
    #[command(flatten)]
    pub write: BaselineWriteArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
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
    #[arg(long, value_name = "DIR")]
    pub baselines: Option<PathBuf>,
    /// What the trace does not say, to choose among --baselines: model=, precision=, framework=,
    /// image=, tp=, ep=, concurrency=. Repeatable.
    #[arg(long, value_name = "NAME=VALUE")]
    pub key: Vec<String>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Also write the full verdict as JSON to this file (for an artifact).
    #[arg(long, value_name = "FILE")]
    pub verdict_out: Option<PathBuf>,
    /// Fail (exit 1) on an improvement beyond tolerance too, so baselines cannot drift loose.
    #[arg(long)]
    pub fail_on_improvement: bool,
    /// Judge a run on other hardware or another rank count than the baseline's (normally exit 2).
    #[arg(long)]
    pub allow_other_hardware: bool,
    #[command(flatten)]
    pub github: GithubArgs,
}

/// GitHub Actions integration of `check` and `sweep`: job summary, annotations, step outputs and the sticky
/// pull-request comment. None of it changes the exit status.
#[derive(Debug, Args)]
pub struct GithubArgs {
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
    #[arg(long, value_name = "URL")]
    pub github_api: Option<String>,
    /// Timeout of each GitHub API request, in seconds; a timeout is a warning.
    #[arg(long, value_name = "SECS", default_value_t = 20.0)]
    pub github_timeout: f64,
}

impl GithubArgs {
    fn enabled(&self) -> bool {
        crate::github::enabled(self.github, self.no_github, &|name| {
            std::env::var(name).ok()
        })
    }

    fn options(
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

/// How a run is analysed; shared by the commands that compute metrics.
#[derive(Debug, Args)]
pub struct AnalysisArgs {
    /// Extra taxonomy rules (TOML, the format of the built-in rules.toml), tried first.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// MoE layers of the model (else counted from router launches).
    #[arg(long, value_name = "N")]
    pub moe_layers: Option<u32>,
    /// Decode steps dropped at the start of each rank as warm-up.
    #[arg(long, value_name = "N", default_value_t = crate::steps::DEFAULT_WARMUP_STEPS)]
    pub warmup_steps: usize,
    /// Count only NCCL-named kernels as communication, as Holistic Trace Analysis does.
    #[arg(long)]
    pub hta_comm: bool,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// Runs the parsed command and returns the exit status.
pub fn run(cli: Cli) -> Result<i32> {
    let max_memory = cli.max_memory.clone().or_else(|| {
        std::env::var("TRACEGATE_MAX_MEMORY")
            .ok()
            .filter(|v| !v.is_empty())
    });
    if let Some(text) = max_memory {
        let bytes =
            crate::reader::parse_size(&text).map_err(|e| anyhow::anyhow!("--max-memory: {e}"))?;
        crate::reader::set_memory_limit(Some(bytes));
    }
    if let Some(n) = cli.threads {
        crate::reader::set_threads(Some(n.into()));
        // Every later stage's parallel work too; it only fails if a pool already exists.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n.into())
            .build_global();
    }
    match cli.command {
        Command::Inspect(args) => inspect(args),
        Command::Extract(args) => extract(args),
        Command::Check(args) => check(args),
        Command::Baseline(BaselineCommand::New(args)) => baseline_new(args),
        Command::Baseline(BaselineCommand::Update(args)) => baseline_update(args),
        Command::Synth(args) => synth(args),
        Command::Demo(args) => demo(args),
        Command::Report(args) => report(args),
        Command::Compare(args) => compare(args),
        Command::Sweep(args) => sweep(args),
    }
}

fn write_output(text: &str, output: Option<&PathBuf>) -> Result<()> {
    match output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth a message.
            match stdout.write_all(text.as_bytes()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.context("cannot write to standard output"),
            }
        }
    }
}

/// Reads a run, showing a progress bar on a terminal (nothing when stderr is not one).
pub fn read_run(paths: &[PathBuf]) -> Result<crate::reader::Run> {
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "reading traces {bar:30} {pos}/{len} files {elapsed}",
        )
        .expect("valid template"),
    );
    let run = crate::reader::read_run_with_progress(paths, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    });
    bar.finish_and_clear();
    Ok(run?)
}

fn inspect(args: InspectArgs) -> Result<i32> {
    let run = read_run(&args.paths)?;
    let inspection = crate::inspect::inspect(&run);
    write_output(
        &crate::report::inspect::render(&inspection, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}

impl AnalysisArgs {
    pub fn taxonomy(&self) -> Result<crate::taxonomy::Taxonomy> {
        let base = if self.hta_comm {
            crate::taxonomy::Taxonomy::hta_compatible()
        } else {
            crate::taxonomy::Taxonomy::builtin()
        };
        Ok(match &self.rules {
            Some(path) => base.with_rules_file(path)?,
            None => base,
        })
    }

    pub fn options(&self) -> crate::metrics::ExtractOptions {
        crate::metrics::ExtractOptions {
            warmup_steps: self.warmup_steps,
            moe_layers: self.moe_layers,
        }
    }
}

/// Reads and analyses a run: the reader, the taxonomy, steps and metrics.
pub fn analyse(paths: &[PathBuf], analysis: &AnalysisArgs) -> Result<crate::metrics::Extraction> {
    analyse_with(paths, analysis, None)
}

/// [`analyse`], with the baseline's extra rules and MoE layer count where it has them.
pub fn analyse_with(
    paths: &[PathBuf],
    analysis: &AnalysisArgs,
    baseline: Option<&crate::baseline::Baseline>,
) -> Result<crate::metrics::Extraction> {
    let run = read_run(paths)?;
    analyse_read_run(&run, paths, analysis, baseline)
}

/// [`analyse_with`] on a run already read.
pub fn analyse_read_run(
    run: &crate::reader::Run,
    paths: &[PathBuf],
    analysis: &AnalysisArgs,
    baseline: Option<&crate::baseline::Baseline>,
) -> Result<crate::metrics::Extraction> {
    let mut taxonomy = analysis.taxonomy()?;
    let mut options = analysis.options();
    if let Some(b) = baseline {
        if let Some(table) = &b.rules {
            let origin = format!("{} [rules]", b.path.display());
            taxonomy =
                taxonomy.with_rules(crate::taxonomy::Taxonomy::rules_from_table(table, &origin)?);
        }
        options.moe_layers = options.moe_layers.or(b.meta.moe_layers);
    }
    let classes = taxonomy.classify_run(run);
    let described = describe_paths(paths);
    crate::metrics::extract(run, &classes, &options).with_context(|| described)
}

/// The paths of a run, for the head of an error message.
fn describe_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .take(3)
        .map(|p| p.display().to_string())
        .collect();
    let more = paths.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

fn extract(args: ExtractArgs) -> Result<i32> {
    let extraction = analyse(&args.paths, &args.analysis)?;
    write_output(
        &crate::report::extract::render(&extraction, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}

/// In GitHub mode, the paths a workflow input may carry must stay in the job's directories.
fn confine_inputs(paths: &[(&'static str, Option<&PathBuf>)]) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    for (flag, path) in paths {
        if let Some(path) = path {
            crate::github::confine(flag, path, &env)?;
        }
    }
    Ok(())
}

fn check(args: CheckArgs) -> Result<i32> {
    if args.github.enabled() {
        confine_inputs(&[
            ("--baseline", args.baseline.as_ref()),
            ("--baselines", args.baselines.as_ref()),
            ("--output", args.output.as_ref()),
            ("--verdict-out", args.verdict_out.as_ref()),
        ])?;
    }
    let run = read_run(&args.paths)?;
    let baseline = match (&args.baseline, &args.baselines) {
        (Some(file), _) => {
            crate::baseline::Baseline::load(file, &crate::baseline::known_metrics())?
        }
        (None, Some(dir)) => {
            let identity = crate::baseline::discover::RunIdentity {
                hardware: run
                    .traces
                    .iter()
                    .find_map(|t| t.device.as_ref().map(|d| d.name.clone())),
                ranks: run.rank_indices().len(),
                keys: crate::baseline::discover::parse_keys(&args.key)?,
            };
            crate::baseline::discover::discover(dir, &identity)?
        }
        (None, None) => anyhow::bail!("check needs --baseline FILE or --baselines DIR"),
    };
    let extraction = analyse_read_run(&run, &args.paths, &args.analysis, Some(&baseline))?;
    let options = crate::gate::CheckOptions {
        fail_on_improvement: args.fail_on_improvement,
        allow_other_hardware: args.allow_other_hardware,
    };
    let result = crate::gate::check(&extraction, &baseline, &options);
    if let Some(path) = &args.verdict_out {
        write_output(
            &crate::report::check::render(&result, Format::Json),
            Some(path),
        )?;
    }
    write_output(
        &crate::report::check::render(&result, args.format),
        args.output.as_ref(),
    )?;
    if args.github.enabled() {
        // Never changes the exit status: failures here are warnings.
        let options = args
            .github
            .options(args.output.as_ref(), args.fail_on_improvement);
        let publication = crate::github::Publication::of_check(&result, &options);
        crate::github::publish(&publication, &options);
    }
    Ok(result.exit_code)
}

fn stamp_for(
    args: &BaselineWriteArgs,
    x: &crate::metrics::Extraction,
) -> crate::baseline::write::Stamp {
    crate::baseline::write::Stamp {
        source: args
            .source
            .clone()
            .unwrap_or_else(|| describe_paths(&args.paths)),
        date: crate::baseline::write::today(),
        device: x.run.device.clone(),
        ranks: x.run.ranks.len(),
    }
}

/// Prints the diff, and writes the new text unless this is a dry run.
fn finish_baseline_write(args: &BaselineWriteArgs, old: &str, new: &str) -> Result<i32> {
    let shown = args.baseline.display().to_string();
    let diff = crate::baseline::write::diff(&shown, old, new);
    write_output(
        if diff.is_empty() {
            "no change\n"
        } else {
            &diff
        },
        None,
    )?;
    if !args.dry_run {
        std::fs::write(&args.baseline, new)
            .with_context(|| format!("{shown}: cannot write baseline"))?;
        // Read back what was written: a baseline the gate cannot load must not be left behind.
        crate::baseline::Baseline::load(&args.baseline, &crate::baseline::known_metrics())?;
    }
    Ok(exit::PASS)
}

fn baseline_new(args: BaselineNewArgs) -> Result<i32> {
    let w = &args.write;
    if w.baseline.exists() && !w.force && !w.dry_run {
        anyhow::bail!(
            "{}: already exists (use `baseline update`, or --force to overwrite)",
            w.baseline.display()
        );
    }
    let x = analyse(&w.paths, &w.analysis)?;
    let meta = crate::baseline::Meta {
        hardware: args
            .hardware
            .clone()
            .or_else(|| x.run.device.clone())
            .unwrap_or_default(),
        model: args.model.clone(),
        precision: args.precision.clone(),
        framework: args.framework.clone(),
        image: args.image.clone(),
        tp: args.tp.or(Some(x.run.ranks.len() as u32)),
        ep: args.ep,
        concurrency: args.concurrency,
        moe_layers: w.analysis.moe_layers,
        ..Default::default()
    };
    let text = crate::baseline::write::new_baseline(&x, &meta, &stamp_for(w, &x));
    finish_baseline_write(w, "", &text)
}

fn baseline_update(args: BaselineUpdateArgs) -> Result<i32> {
    let w = &args.write;
    let baseline = crate::baseline::Baseline::load(&w.baseline, &crate::baseline::known_metrics())?;
    let x = analyse_with(&w.paths, &w.analysis, Some(&baseline))?;
    let device = x.run.device.clone().unwrap_or_default();
    if !w.force && !baseline.meta.hardware.is_empty() && device != baseline.meta.hardware {
        anyhow::bail!(
            "{}: the baseline is for {:?} but the run is on {:?}; refusing to overwrite (use --force)",
            w.baseline.display(),
            baseline.meta.hardware,
            device
        );
    }
    let old = std::fs::read_to_string(&w.baseline)
        .with_context(|| format!("{}: cannot read", w.baseline.display()))?;
    let new = crate::baseline::write::update_baseline(&old, &x, &stamp_for(w, &x))
        .map_err(|e| anyhow::anyhow!("{}: {e}", w.baseline.display()))?;
    finish_baseline_write(w, &old, &new)
}

fn synth(args: SynthArgs) -> Result<i32> {
    let injections = args
        .inject
        .iter()
        .map(|spec| spec.parse::<crate::synth::Injection>())
        .collect::<Result<Vec<_>, _>>()?;
    let options = crate::synth::SynthOptions {
        scenario: args.scenario,
        ranks: args.ranks,
        decode_steps: args.decode_steps,
        seed: args.seed,
        scale: args.scale,
        python_functions_per_step: args.python_functions_per_step,
        injections,
        layout: args.layout,
    };
    let summary = crate::synth::generate_to_dir(&options, &args.out)?;
    eprintln!(
        "wrote {} trace files and {} ({:.1} MB of JSON, {:.1} MB gzip)",
        summary.files.len(),
        summary.truth_path.display(),
        summary.bytes_uncompressed as f64 / 1e6,
        summary.bytes_compressed as f64 / 1e6
    );
    Ok(exit::PASS)
}

/// Generates one demo run and checks it against the scenario's built-in baseline.
fn demo_check(
    args: &DemoArgs,
    dir: &std::path::Path,
    inject: Option<&str>,
) -> Result<crate::gate::CheckResult> {
    let (file, text) = crate::baseline::shipped::for_scenario(&args.scenario).ok_or_else(|| {
        anyhow::anyhow!(
            "no built-in baseline for scenario {:?}; valid: {}",
            args.scenario,
            crate::synth::scenario_names().join(", ")
        )
    })?;
    let injections = inject
        .map(str::parse::<crate::synth::Injection>)
        .transpose()?
        .into_iter()
        .collect();
    let options = crate::synth::SynthOptions {
        scenario: args.scenario.clone(),
        seed: 42,
        injections,
        ..Default::default()
    };
    crate::synth::generate_to_dir(&options, dir)?;
    let baseline = crate::baseline::Baseline::parse(
        text,
        std::path::Path::new(file),
        &crate::baseline::known_metrics(),
    )?;
    let analysis = AnalysisArgs {
        rules: None,
        moe_layers: None,
        warmup_steps: crate::steps::DEFAULT_WARMUP_STEPS,
        hta_comm: false,
    };
    let extraction = analyse_with(&[dir.to_path_buf()], &analysis, Some(&baseline))?;
    Ok(crate::gate::check(
        &extraction,
        &baseline,
        &crate::gate::CheckOptions::default(),
    ))
}

fn demo(args: DemoArgs) -> Result<i32> {
    let temp = tempfile_dir()?;
    let root = args.keep.clone().unwrap_or_else(|| temp.clone());
    eprintln!(
        "demo: synthetic {} runs in {}",
        args.scenario,
        root.display()
    );
    let clean = demo_check(&args, &root.join("clean"), None)?;
    println!("1. A clean run against its baseline: {}\n", clean.summary);
    let regressed = demo_check(&args, &root.join("regressed"), Some(&args.inject))?;
    println!("2. The same run with `--inject {}`:\n", args.inject);
    write_output(&crate::report::check::render(&regressed, args.format), None)?;
    let _ = std::fs::remove_dir_all(&temp);
    let expected = (crate::gate::Status::Pass, crate::gate::Status::Regression);
    if (clean.status, regressed.status) == expected {
        Ok(exit::PASS)
    } else {
        anyhow::bail!(
            "demo: expected pass then regression, got {:?} then {:?}",
            clean.status,
            regressed.status
        )
    }
}

/// A fresh directory under the system temporary directory.
fn tempfile_dir() -> Result<PathBuf> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("tracegate-demo-{}-{stamp}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    Ok(dir)
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Trace files (.json, .json.gz) or directories of them; one run.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Runs: each a trace file or a directory of one run's traces. The first is the reference.
    pub runs: Vec<PathBuf>,
    /// Name a run: NAME=PATH renames the run given as PATH, or adds PATH as a run named NAME.
    #[arg(long, value_name = "NAME=PATH")]
    pub label: Vec<String>,
    #[command(flatten)]
    pub analysis: AnalysisArgs,
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: Format,
    /// Write the comparison to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// Reads and analyses one run for `report` and `compare`: the gated figures where decode steps
/// exist, the whole trace otherwise.
pub fn analyse_report(
    paths: &[PathBuf],
    analysis: &AnalysisArgs,
) -> Result<crate::analysis::RunAnalysis> {
    let taxonomy = analysis.taxonomy()?;
    let run = read_run(paths)?;
    let classes = taxonomy.classify_run(&run);
    // No decode step is not an error here: the analysis covers the whole trace instead.
    let extraction = crate::metrics::extract(&run, &classes, &analysis.options()).ok();
    let options = crate::analysis::AnalysisOptions {
        warmup_steps: analysis.warmup_steps,
    };
    Ok(crate::analysis::analyse_run(
        &run,
        &classes,
        extraction.as_ref(),
        &options,
    ))
}

fn report(args: ReportArgs) -> Result<i32> {
    let analysis = analyse_report(&args.paths, &args.analysis)?;
    write_output(
        &crate::report::analysis::render(&analysis, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}

/// The runs of `compare`, in order, with their names.
fn compare_runs(args: &CompareArgs) -> Result<Vec<(String, PathBuf)>> {
    let file_name = |p: &PathBuf| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let mut runs: Vec<(String, PathBuf)> = args
        .runs
        .iter()
        .map(|p| {
            // Two runs with the same file name are told apart by their parent directory.
            let same = args
                .runs
                .iter()
                .filter(|q| file_name(q) == file_name(p))
                .count();
            let name = match p.parent().and_then(|d| d.file_name()) {
                Some(dir) if same > 1 => format!("{}/{}", dir.to_string_lossy(), file_name(p)),
                _ => file_name(p),
            };
            (name, p.clone())
        })
        .collect();
    for spec in &args.label {
        let Some((name, path)) = spec.split_once('=') else {
            anyhow::bail!("--label {spec:?}: expected NAME=PATH");
        };
        let path = PathBuf::from(path);
        match runs.iter_mut().find(|(_, p)| *p == path) {
            Some(run) => run.0 = name.to_string(),
            None => runs.push((name.to_string(), path)),
        }
    }
    if runs.len() < 2 {
        anyhow::bail!("compare needs at least two runs (paths or --label NAME=PATH)");
    }
    Ok(runs)
}

fn compare(args: CompareArgs) -> Result<i32> {
    let runs = compare_runs(&args)?;
    let mut analyses = Vec::with_capacity(runs.len());
    for (name, path) in &runs {
        let analysis = analyse_report(std::slice::from_ref(path), &args.analysis)
            .with_context(|| format!("run {name}"))?;
        analyses.push((name.clone(), analysis));
    }
    let refs: Vec<(String, &crate::analysis::RunAnalysis)> =
        analyses.iter().map(|(n, a)| (n.clone(), a)).collect();
    let comparison = crate::analysis::compare::compare(&refs);
    write_output(
        &crate::report::compare::render(&comparison, args.format),
        args.output.as_ref(),
    )?;
    Ok(exit::PASS)
}

fn sweep(args: SweepArgs) -> Result<i32> {
    if args.github.enabled() {
        confine_inputs(&[("--output", args.output.as_ref())])?;
    }
    let expect: Vec<String> = args
        .expect
        .iter()
        .map(|e| e.trim().to_string())
        .filter(|e| !e.is_empty())
        .collect();
    let merged = crate::sweep::merge(&args.paths, &expect);
    write_output(
        &crate::report::sweep::render(&merged, args.format),
        args.output.as_ref(),
    )?;
    if args.github.enabled() {
        // As for check: failures here are warnings, the exit status stays the sweep's.
        let options = args.github.options(args.output.as_ref(), false);
        let publication = crate::github::Publication::of_sweep(&merged, &args.name, &options);
        crate::github::publish(&publication, &options);
    }
    Ok(merged.exit_code)
}
