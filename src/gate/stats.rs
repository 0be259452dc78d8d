//! The statistics behind a verdict: is a change beyond tolerance supported by the per-step
//! samples, or could it be noise? A percentile bootstrap of the statistic the metric reports,
//! with a fixed seed so that the same run always gets the same verdict.

/// Resamples drawn for an interval. 2,000 gives stable 95% bounds for the sample sizes of a
/// profile (20 to a few thousand steps) in well under a millisecond per metric.
pub const RESAMPLES: usize = 2000;
/// Two-sided confidence level of the interval.
pub const CONFIDENCE: f64 = 0.95;

/// Which statistic of the samples a metric's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    Median,
    Mean,
}

impl Statistic {
    pub fn of(self, values: &[f64]) -> f64 {
        match self {
            Statistic::Mean => values.iter().sum::<f64>() / values.len() as f64,
            Statistic::Median => {
                let mut v = values.to_vec();
                v.sort_by(f64::total_cmp);
                let n = v.len();
                if n % 2 == 1 {
                    v[n / 2]
                } else {
                    (v[n / 2 - 1] + v[n / 2]) / 2.0
                }
            }
        }
    }
}

/// splitmix64: a tiny, well-mixed generator; seeded, so verdicts are reproducible.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        // Multiply-shift maps 64 random bits onto [0, n) without modulo bias worth measuring.
        ((self.next() as u128 * n as u128) >> 64) as usize
    }
}

/// The `CONFIDENCE` percentile-bootstrap interval of `statistic` over `samples`.
/// `None` with fewer than two samples: nothing to resample.
pub fn bootstrap_interval(samples: &[f64], statistic: Statistic, seed: u64) -> Option<(f64, f64)> {
    let n = samples.len();
    if n < 2 {
        return None;
    }
    let mut rng = SplitMix(seed ^ 0x7472_6163_6567_6174);
    let mut resample = vec![0.0; n];
    let mut stats: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            for slot in resample.iter_mut() {
                *slot = samples[rng.below(n)];
            }
            statistic.of(&resample)
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let at = |q: f64| stats[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    Some((at(tail), at(1.0 - tail)))
}

/// Median absolute deviation scaled to estimate σ for normal data (× 1.4826).
pub fn robust_spread(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let med = Statistic::Median.of(samples);
    let deviations: Vec<f64> = samples.iter().map(|v| (v - med).abs()).collect();
    Some(1.4826 * Statistic::Median.of(&deviations))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_match_hand_values() {
        assert_eq!(Statistic::Median.of(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(Statistic::Median.of(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(Statistic::Mean.of(&[1.0, 2.0, 6.0]), 3.0);
        assert_eq!(robust_spread(&[1.0, 2.0, 3.0, 4.0, 100.0]), Some(1.4826));
    }

    #[test]
    fn bootstrap_is_reproducible_and_brackets_the_statistic() {
        let samples: Vec<f64> = (0..50).map(|i| 20.0 + (i % 7) as f64 * 0.1).collect();
        let a = bootstrap_interval(&samples, Statistic::Median, 1).unwrap();
        assert_eq!(
            a,
            bootstrap_interval(&samples, Statistic::Median, 1).unwrap()
        );
        let m = Statistic::Median.of(&samples);
        assert!(a.0 <= m && m <= a.1, "{a:?} {m}");
        assert!(a.1 - a.0 < 0.5);
        assert_eq!(bootstrap_interval(&[1.0], Statistic::Mean, 1), None);
    }

    #[test]
    fn constant_samples_give_a_point_interval() {
        assert_eq!(
            bootstrap_interval(&[5.0; 10], Statistic::Mean, 3),
            Some((5.0, 5.0))
        );
    }
}
