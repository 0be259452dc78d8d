//! The statistics every stage shares: order statistics (median and percentiles as numpy computes
//! them, the mean), and the statistics behind a verdict: is a change beyond tolerance supported by
//! the per-step samples, or could it be noise? A percentile bootstrap of the statistic a metric
//! reports, with a fixed seed so that the same run always gets the same verdict.

/// Median: the middle value, or the mean of the two middle values. `None` for no values.
/// Sorts `values` in place (NaN-free input assumed; NaN sorts last).
pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// Percentile `q` (0 to 100) of sorted values, numpy's default linear method: `h = (n-1)·q/100`,
/// `v[⌊h⌋] + (h-⌊h⌋)·(v[⌊h⌋+1] - v[⌊h⌋])`, computed as numpy does (`q/100` first, and its
/// two-sided lerp) so the last bits agree with a numpy-written `truth.json`.
pub(crate) fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * (q / 100.0);
    let lo = h.floor();
    let i = (lo as usize).min(n - 1);
    if i + 1 >= n {
        return Some(sorted[n - 1]);
    }
    let t = h - lo;
    let (a, b) = (sorted[i], sorted[i + 1]);
    let diff = b - a;
    Some(if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    })
}

/// Percentile of unsorted values (sorts in place).
pub(crate) fn percentile(values: &mut [f64], q: f64) -> Option<f64> {
    values.sort_unstable_by(f64::total_cmp);
    percentile_sorted(values, q)
}

/// Arithmetic mean. `None` for no values.
pub(crate) fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| mean_of(values.iter().copied(), values.len()))
}

/// The mean of `n` values given in order, summed as `Iterator::sum` does (the bootstrap's
/// `resampled_means` sums its draws the same way, for the same bits).
fn mean_of(values: impl Iterator<Item = f64>, n: usize) -> f64 {
    values.sum::<f64>() / n as f64
}

/// Resamples drawn for an interval. 2,000 gives stable 95% bounds for the sample sizes of a
/// profile (20 to a few thousand steps) in well under a millisecond per metric.
pub(crate) const RESAMPLES: usize = 2000;
/// Two-sided confidence level of the interval.
pub(crate) const CONFIDENCE: f64 = 0.95;

/// Which statistic of the samples a metric's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    Median,
    Mean,
    /// The 90th percentile (numpy's linear method).
    P90,
}

impl Statistic {
    pub fn of(self, values: &[f64]) -> f64 {
        match self {
            Statistic::Mean => mean_of(values.iter().copied(), values.len()),
            Statistic::Median => median(&mut values.to_vec()).unwrap_or(f64::NAN),
            Statistic::P90 => percentile(&mut values.to_vec(), 90.0).unwrap_or(f64::NAN),
        }
    }
}

/// splitmix64: a tiny, well-mixed generator; seeded, so verdicts are reproducible.
#[derive(Clone)]
struct SplitMix(u64);

const SPLITMIX_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(SPLITMIX_GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        // Multiply-shift maps 64 random bits onto [0, n) without modulo bias worth measuring.
        ((self.next() as u128 * n as u128) >> 64) as usize
    }

    /// The generator as it will be after `draws` more calls: its state only counts, so any
    /// stretch of the sequence can be drawn without drawing what comes before it.
    fn after(&self, draws: usize) -> SplitMix {
        SplitMix(
            self.0
                .wrapping_add(SPLITMIX_GAMMA.wrapping_mul(draws as u64)),
        )
    }
}

/// Draws per resample at most. Up to this many samples the bootstrap resamples them all (the
/// plain percentile bootstrap); above it (a long profile pools millions of collective calls) it
/// draws this many and scales the spread of the resampled statistic by `sqrt(m / n)`, the
/// m-out-of-n bootstrap, so that an interval costs the same whatever the number of samples.
pub(crate) const MAX_DRAWS: usize = 32_768;

/// The `CONFIDENCE` percentile-bootstrap interval of `statistic` over `samples`.
/// `None` with fewer than two samples: nothing to resample. Its cost is bounded by
/// [`RESAMPLES`] × [`MAX_DRAWS`] draws, plus one pass over the samples.
///
/// Above [`MAX_DRAWS`] samples the resamples are drawn from a fixed-seed pool of `MAX_DRAWS`
/// samples drawn once from all of them: the pool (256 KiB) stays in cache where millions of
/// samples do not, and it estimates the spread of the samples within a few percent, so the
/// m-out-of-n interval keeps its width at a fixed cost. The resamples spread around the pool's
/// statistic; the interval is put around that of all the samples.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))] // public through `testing`
pub fn bootstrap_interval(samples: &[f64], statistic: Statistic, seed: u64) -> Option<(f64, f64)> {
    let n = samples.len();
    if n < 2 {
        return None;
    }
    let m = n.min(MAX_DRAWS);
    let mut rng = SplitMix(seed ^ 0x7472_6163_6567_6174);
    let pooled: Vec<f64>;
    let source = if m == n {
        samples
    } else {
        pooled = (0..m).map(|_| samples[rng.below(n)]).collect();
        &pooled
    };
    let mut stats = if statistic == Statistic::Mean {
        resampled_means(source, &rng)
    } else {
        let mut resample = vec![0.0; m];
        (0..RESAMPLES)
            .map(|_| {
                for slot in resample.iter_mut() {
                    *slot = source[rng.below(m)];
                }
                statistic.of(&resample)
            })
            .collect()
    };
    stats.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let at = |q: f64| stats[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
    let (lo, hi) = (at(tail), at(1.0 - tail));
    if m == n {
        return Some((lo, hi));
    }
    // The statistic of m draws spreads sqrt(n / m) times wider than that of n. The resamples
    // spread around the pool's statistic; the interval is put around that of all the samples.
    let (pool_centre, centre) = (statistic.of(source), statistic.of(samples));
    let scale = (m as f64 / n as f64).sqrt();
    Some((
        centre + (lo - pool_centre) * scale,
        centre + (hi - pool_centre) * scale,
    ))
}

/// The means of [`RESAMPLES`] resamples of `source`, resample `r` drawn from draws `r·m` to
/// `(r+1)·m - 1` of `rng`, each summed in draw order: the bits a stored resample gives. Four
/// resamples are summed side by side, each from its own stretch of the sequence, because one
/// running sum waits on the latency of every addition before it.
fn resampled_means(source: &[f64], rng: &SplitMix) -> Vec<f64> {
    const LANES: usize = 4;
    let m = source.len();
    let mut means = Vec::with_capacity(RESAMPLES);
    while means.len() < RESAMPLES {
        let first = means.len();
        let lanes = LANES.min(RESAMPLES - first);
        let mut rngs: [SplitMix; LANES] = std::array::from_fn(|k| rng.after((first + k) * m));
        // -0.0 is where `Iterator::sum` starts, so an all-zero resample keeps its sign too.
        let mut sums = [-0.0_f64; LANES];
        for _ in 0..m {
            for (sum, rng) in sums.iter_mut().zip(rngs.iter_mut()) {
                *sum += source[rng.below(m)];
            }
        }
        means.extend(sums[..lanes].iter().map(|sum| sum / m as f64));
    }
    means
}

/// Median absolute deviation scaled to estimate σ for normal data (× 1.4826).
pub(crate) fn robust_spread(samples: &[f64]) -> Option<f64> {
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

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [7.0]), Some(7.0));
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(
            median(&mut [20_000_001.0, 20_000_000.0]),
            Some(20_000_000.5)
        );
    }

    #[test]
    fn percentiles_match_numpy_linear() {
        // np.percentile([1,2,3,4,5,6,7,8,9,10], [50, 90, 99]) = 5.5, 9.1, 9.91
        let mut v: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        assert!(close(percentile(&mut v, 50.0).unwrap(), 5.5));
        assert!(close(percentile(&mut v, 90.0).unwrap(), 9.1));
        assert!(close(percentile(&mut v, 99.0).unwrap(), 9.91));
        // np.percentile([10, 20, 40], 90) = 36.0 ; p99 = 39.6 ; p50 = 20
        let mut w = vec![40.0, 10.0, 20.0];
        assert!(close(percentile(&mut w, 90.0).unwrap(), 36.0));
        assert!(close(percentile(&mut w, 99.0).unwrap(), 39.6));
        assert!(close(percentile(&mut w, 50.0).unwrap(), 20.0));
        assert_eq!(percentile(&mut [5.0], 99.0), Some(5.0));
        assert_eq!(percentile(&mut [], 50.0), None);
        assert_eq!(percentile(&mut [1.0, 2.0], 100.0), Some(2.0));
        assert_eq!(percentile(&mut [1.0, 2.0], 0.0), Some(1.0));
    }

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

    #[test]
    fn a_pooled_interval_is_centred_on_all_the_samples() {
        // 1,000,000 samples, skewed: the fixed pool's mean misses the mean of all of them by about
        // a standard error, and the interval must sit around the latter all the same.
        let n = 1_000_000;
        let mut rng = SplitMix(11);
        let samples: Vec<f64> = (0..n)
            .map(|_| {
                let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                15.0 + 40.0 * u.powi(8)
            })
            .collect();
        let mean = Statistic::Mean.of(&samples);
        let sd = (samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        let half = 1.96 * sd / (n as f64).sqrt();
        let (lo, hi) = bootstrap_interval(&samples, Statistic::Mean, 2).unwrap();
        assert!(
            ((hi - lo) / 2.0 / half - 1.0).abs() < 0.15,
            "{lo} {hi} {half}"
        );
        assert!(
            ((lo + hi) / 2.0 - mean).abs() < 0.2 * half,
            "{lo} {hi} {mean}"
        );
    }

    #[test]
    fn many_samples_are_drawn_m_out_of_n_with_the_width_of_n() {
        // 200,000 samples, about 6 times MAX_DRAWS: the interval must still be that of n samples,
        // 1.96 standard errors either side of the mean.
        let n = 200_000;
        let mut rng = SplitMix(9);
        let samples: Vec<f64> = (0..n)
            .map(|_| 10.0 + (rng.next() >> 11) as f64 / (1u64 << 53) as f64)
            .collect();
        let mean = Statistic::Mean.of(&samples);
        let sd = (samples.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        let half = 1.96 * sd / (n as f64).sqrt();
        let (lo, hi) = bootstrap_interval(&samples, Statistic::Mean, 4).unwrap();
        assert!(lo < mean && mean < hi, "{lo} {mean} {hi}");
        let width = (hi - lo) / 2.0;
        assert!((width / half - 1.0).abs() < 0.15, "{width} against {half}");
        assert_eq!(
            bootstrap_interval(&samples, Statistic::Mean, 4),
            Some((lo, hi))
        );
    }

    #[test]
    fn means_summed_side_by_side_are_those_of_resamples_drawn_one_after_another() {
        // Resample r is draws r·m .. (r+1)·m of one sequence, summed in draw order: the bits of
        // drawing each resample in turn and taking its mean, whatever the number of lanes.
        let mut values = SplitMix(5);
        for m in [2, 3, 17, 1000] {
            let source: Vec<f64> = (0..m)
                .map(|_| (values.next() >> 11) as f64 / (1u64 << 40) as f64)
                .collect();
            let rng = SplitMix(77);
            let mut one_by_one = rng.clone();
            let expected: Vec<f64> = (0..RESAMPLES)
                .map(|_| {
                    let resample: Vec<f64> = (0..m).map(|_| source[one_by_one.below(m)]).collect();
                    Statistic::Mean.of(&resample)
                })
                .collect();
            let got = resampled_means(&source, &rng);
            assert_eq!(got.len(), RESAMPLES);
            let same = got
                .iter()
                .zip(&expected)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "m = {m}");
        }
    }
}
