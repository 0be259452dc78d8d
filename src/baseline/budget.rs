//! The false-alarm budget over the gated metrics: which z each metric's tolerance takes.
//!
//! A clean run may fail the check through any gated metric, so the chances add up (the union
//! bound) and must stay within the budget. Splitting it evenly (Bonferroni) charges every metric
//! `budget / K`, also a metric whose floor tolerance is many of its sigmas wide and so almost
//! never fails on noise: each gated metric added would widen every other tolerance. Here a
//! metric held at its floor is charged its own chance of passing the floor, and the metrics the
//! budget sets share the rest; the total is still within the budget.

/// The standard normal quantile of `p` in (0, 1) (Acklam's rational approximation, relative
/// error below 1.2e-9).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.024_25 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.024_25 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The chance that a standard normal draw exceeds `x`: `erfc(x / √2) / 2`, from the Chebyshev
/// fit of `erfc` with fractional error below 1.2e-7 everywhere (Numerical Recipes, `erfcc`).
pub(crate) fn normal_upper_tail(x: f64) -> f64 {
    if x == f64::INFINITY {
        return 0.0;
    }
    let u = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * u);
    let poly = [
        -1.265_512_23,
        1.000_023_68,
        0.374_091_96,
        0.096_784_18,
        -0.186_288_06,
        0.278_868_07,
        -1.135_203_98,
        1.488_515_87,
        -0.822_152_23,
        0.170_872_77,
    ]
    .iter()
    .rev()
    .fold(0.0, |acc, c| c + t * acc);
    let erfc = t * (-u * u + poly).exp();
    if x >= 0.0 {
        erfc / 2.0
    } else {
        1.0 - erfc / 2.0
    }
}

/// The factor that takes a spread estimated from `runs` runs to the upper end of its one-sided
/// 95% confidence interval for normal data: `sqrt((n - 1) / χ²₀.₀₅(n - 1))`, with the
/// Wilson-Hilferty approximation of the χ² quantile (within 1% of it from 2 degrees of freedom).
pub(crate) fn spread_upper_bound_factor(runs: usize) -> f64 {
    if runs < 2 {
        return f64::INFINITY;
    }
    let k = (runs - 1) as f64;
    let z = normal_quantile(0.05);
    let c = 2.0 / (9.0 * k);
    let chi2 = k * (1.0 - c + z * c.sqrt()).powi(3);
    if chi2 > 0.0 {
        (k / chi2).sqrt()
    } else {
        f64::INFINITY
    }
}

/// The chance, in all, that a clean run fails one of the metrics when those the budget sets take
/// tolerance `z` sigmas and each other one its floor, `floor_sigmas[i]` of its sigmas wide.
fn false_alarms(z: f64, floor_sigmas: &[f64]) -> f64 {
    floor_sigmas
        .iter()
        .map(|&r| normal_upper_tail(z.max(r)))
        .sum()
}

/// The smallest z whose false alarms over the metrics stay within `budget` (a probability):
/// between the quantile of the whole budget (one metric could fail) and that of an even split
/// (every metric set by the budget). `floor_sigmas[i]` is metric i's floor over its sigma
/// (infinite for a metric with no spread: it cannot fail on noise).
pub(crate) fn z_for_budget(budget: f64, floor_sigmas: &[f64]) -> f64 {
    let even = normal_quantile(1.0 - budget / floor_sigmas.len().max(1) as f64);
    let whole = normal_quantile(1.0 - budget);
    if false_alarms(whole, floor_sigmas) <= budget {
        return whole;
    }
    let (mut lo, mut hi) = (whole, even);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if false_alarms(mid, floor_sigmas) <= budget {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantiles_are_right() {
        assert!((normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
        assert!((normal_quantile(0.95) - 1.644_854).abs() < 1e-6);
        assert!((normal_quantile(1.0 - 0.01 / 15.0) - 3.2087).abs() < 1e-3);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
    }

    #[test]
    fn the_upper_tail_is_the_normal_one() {
        // Known values of 1 - Φ(x).
        for (x, want) in [
            (0.0, 0.5),
            (1.0, 0.158_655_253_9),
            (1.959_963_985, 0.025),
            (3.090_232_306, 0.001),
            (-1.0, 0.841_344_746_1),
        ] {
            let got = normal_upper_tail(x);
            assert!((got - want).abs() <= 2e-7 * want, "{x}: {got} {want}");
        }
        assert_eq!(normal_upper_tail(f64::INFINITY), 0.0);
    }

    #[test]
    fn the_spread_bound_widens_for_few_runs() {
        // sqrt(k / χ²₀.₀₅(k)): 2.37 for 4 degrees of freedom, 1.65 for 9, 1.37 for 19.
        for (runs, want) in [(5, 2.372), (10, 1.645), (20, 1.370)] {
            let got = spread_upper_bound_factor(runs);
            assert!((got - want).abs() < 0.02 * want, "{runs}: {got}");
        }
        assert_eq!(spread_upper_bound_factor(1), f64::INFINITY);
    }

    #[test]
    fn metrics_set_by_the_budget_split_it_evenly() {
        // Every floor below z: Bonferroni exactly.
        let z = z_for_budget(0.01, &[0.5, 1.0, 0.0, 2.0]);
        assert!((z - normal_quantile(1.0 - 0.0025)).abs() < 1e-6, "{z}");
    }

    #[test]
    fn a_metric_far_inside_its_floor_leaves_its_share_to_the_others() {
        // Two metrics at floors of 10 and infinitely many sigmas: the third gets almost all.
        let z = z_for_budget(0.01, &[10.0, f64::INFINITY, 0.0]);
        assert!((z - normal_quantile(0.99)).abs() < 1e-6, "{z}");
        // A floor just above the even split's z spends nearly its share: little is freed.
        let even = normal_quantile(1.0 - 0.01 / 2.0);
        let z = z_for_budget(0.01, &[even + 0.01, 0.0]);
        assert!(z < even && z > even - 0.05, "{z} {even}");
    }

    #[test]
    fn the_chosen_z_spends_at_most_the_budget() {
        for floors in [
            vec![3.0, 3.2, 2.9, 0.1, 0.2],
            vec![2.5; 20],
            vec![f64::INFINITY; 3],
        ] {
            let z = z_for_budget(0.01, &floors);
            assert!(
                false_alarms(z, &floors) <= 0.01 * (1.0 + 1e-6),
                "{floors:?}: {z}"
            );
        }
    }
}
