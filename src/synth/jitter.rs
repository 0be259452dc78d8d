//! Between-run variation (`synth --run-jitter PCT`): what differs between two launches of the
//! same server on the same image (GPU clocks and thermals, which GPUs the job landed on, the
//! collective algorithm chosen, memory layout), as one log-normal factor per kernel category and
//! one GPU-clock factor for the whole run, all drawn from the seed; or
//! (`--run-jitter-mode shared`) one factor that every category of the run shares, so that the
//! categories move together (what a calibration that modelled them as independent has not seen).

use serde_json::{json, Map, Value};

use super::rng::Rng;
use super::scenario::Spec;

/// The kernel categories a factor is drawn for, in drawing order (fixed, so that a seed always
/// draws the same factor for a category whatever the scenario holds).
pub(crate) const CATEGORIES: [&str; 10] = [
    "comm",
    "moe_gemm",
    "dense_gemm",
    "attention",
    "moe_routing",
    "norm",
    "quant",
    "elementwise",
    "memcpy",
    "other",
];

/// The factors of one run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunJitter {
    /// The sd of each factor's logarithm, in percent (`--run-jitter`).
    pub pct: f64,
    /// The whole run's GPU clock: multiplies every compute kernel (not comm, not memcpy).
    pub clock: f64,
    /// One factor per kernel category, in [`CATEGORIES`] order.
    pub categories: Vec<(&'static str, f64)>,
}

/// How a run's factors move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum JitterMode {
    /// One factor per kernel category and one GPU-clock factor, independent.
    #[default]
    PerCategory,
    /// One factor for every category of the run (no separate clock factor).
    Shared,
}

/// A standard normal draw (Box-Muller, the cosine half).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = 1.0 - rng.unit(); // (0, 1]: the logarithm stays finite
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

impl RunJitter {
    /// The factors of a run of `seed` at `pct` percent; `None` at 0, where nothing is drawn.
    #[cfg(test)]
    pub(crate) fn draw(seed: u64, pct: f64) -> Option<RunJitter> {
        Self::draw_mode(seed, pct, JitterMode::PerCategory)
    }

    /// As [`RunJitter::draw`], in `mode`: shared draws one factor (the stream's first) and gives
    /// it to every category, with a clock of 1.
    pub(crate) fn draw_mode(seed: u64, pct: f64, mode: JitterMode) -> Option<RunJitter> {
        if pct <= 0.0 {
            return None;
        }
        // Its own stream: no other draw of the run moves.
        let mut rng = Rng::derive(seed, u32::MAX, 0x4a17_7e12);
        let sigma = pct / 100.0;
        let mut factor = || (sigma * normal(&mut rng)).exp();
        if mode == JitterMode::Shared {
            let f = factor();
            return Some(RunJitter {
                pct,
                clock: 1.0,
                categories: CATEGORIES.iter().map(|&c| (c, f)).collect(),
            });
        }
        let clock = factor();
        let categories = CATEGORIES.iter().map(|&c| (c, factor())).collect();
        Some(RunJitter {
            pct,
            clock,
            categories,
        })
    }

    /// The factor on every call of a kernel: its category's, times the clock's for compute.
    pub(crate) fn factor(&self, spec: &Spec) -> f64 {
        let category = self
            .categories
            .iter()
            .find(|(c, _)| *c == spec.cat)
            .map_or(1.0, |(_, f)| *f);
        if spec.is_compute() {
            category * self.clock
        } else {
            category
        }
    }

    /// `truth.json`'s `run_jitter`: `{pct, clock, categories: {name: factor}}`.
    pub(crate) fn to_json(&self) -> Value {
        let categories: Map<String, Value> = self
            .categories
            .iter()
            .map(|(c, f)| (c.to_string(), json!(f)))
            .collect();
        json!({"pct": self.pct, "clock": self.clock, "categories": categories})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_jitter_moves_every_category_together() {
        let j = RunJitter::draw_mode(7, 3.0, JitterMode::Shared).unwrap();
        assert_eq!(j.clock, 1.0);
        let f = j.categories[0].1;
        assert_ne!(f, 1.0);
        assert!(j.categories.iter().all(|(_, g)| *g == f));
        // The per-category draw is the one it always was.
        assert_eq!(
            RunJitter::draw_mode(7, 3.0, JitterMode::PerCategory),
            RunJitter::draw(7, 3.0)
        );
    }

    #[test]
    fn no_jitter_draws_nothing() {
        assert_eq!(RunJitter::draw(7, 0.0), None);
    }

    #[test]
    fn factors_follow_the_seed_and_spread_as_asked() {
        assert_eq!(RunJitter::draw(7, 3.0), RunJitter::draw(7, 3.0));
        assert_ne!(RunJitter::draw(7, 3.0), RunJitter::draw(8, 3.0));
        // The sd of the log factors over many seeds is the asked percentage.
        let logs: Vec<f64> = (0..2000)
            .flat_map(|seed| {
                let j = RunJitter::draw(seed, 3.0).unwrap();
                std::iter::once(j.clock).chain(j.categories.into_iter().map(|(_, f)| f))
            })
            .map(f64::ln)
            .collect();
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        assert!(mean.abs() < 0.001, "{mean}");
        assert!((sd - 0.03).abs() < 0.001, "{sd}");
    }
}
