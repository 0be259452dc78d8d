//! tracegate as a library: read a run, extract its figures and, given a baseline, gate them.
//!
//! `cargo run --example library -- RUN_DIR [BASELINE.toml | BASELINES_DIR]`

use std::path::PathBuf;

use tracegate::pipeline::{self, AnalysisConfig, BaselineChoice};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let run_dir = args
        .next()
        .ok_or("usage: library RUN_DIR [BASELINE.toml]")?;
    let paths = [run_dir];
    let config = AnalysisConfig::default();
    let run = pipeline::read_run(&paths, &config, &|_, _| {})?;
    let extraction = pipeline::extract(&run, &paths, &config, None)?;
    for def in tracegate::METRICS {
        if let Some(m) = extraction.metrics.get(&def.id) {
            println!("{:<22} {}", def.name(), def.unit.figure(m.value));
        }
    }
    if let Some(baseline) = args.next() {
        // A file, or a directory of baselines to pick from the way `check --baselines` does.
        let choice = if baseline.is_dir() {
            BaselineChoice::Discover {
                dir: &baseline,
                hardware: None,
                keys: &[],
            }
        } else {
            BaselineChoice::File(&baseline)
        };
        let baseline = pipeline::select_baseline(&run, choice, &|name| std::env::var(name).ok())?;
        let options = tracegate::CheckOptions::default();
        let result = pipeline::check(&run, &paths, &config, &baseline, &options)?;
        println!("{}", result.summary);
        std::process::exit(result.exit_code);
    }
    Ok(())
}
