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

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine terms: relative error below 1e-13).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[1..]
        .iter()
        .enumerate()
        .fold(G[0], |acc, (i, g)| acc + g / (x + i as f64 + 1.0));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of the incomplete beta function (Numerical Recipes, `betacf`).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..500 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// The regularized incomplete beta function I_x(a, b).
pub(crate) fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The chance that a Student-t draw of `df` degrees of freedom (any real > 0; infinite is the
/// normal) exceeds `t`.
pub(crate) fn t_upper_tail(t: f64, df: f64) -> f64 {
    if t == f64::INFINITY {
        return 0.0;
    }
    if !df.is_finite() || df > 1e7 {
        return normal_upper_tail(t);
    }
    let half = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t));
    if t >= 0.0 {
        half
    } else {
        1.0 - half
    }
}

/// The Student-t quantile of `p` in (0, 1) for `df` degrees of freedom (bisection on
/// [`t_upper_tail`], to 1e-10 relative).
pub(crate) fn t_quantile(p: f64, df: f64) -> f64 {
    if !df.is_finite() || df > 1e7 {
        return normal_quantile(p);
    }
    if p < 0.5 {
        return -t_quantile(1.0 - p, df);
    }
    let want = 1.0 - p;
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while t_upper_tail(hi, df) > want && hi < 1e12 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_upper_tail(mid, df) > want {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-10 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// The factor that takes a spread of `df` degrees of freedom to the upper end of its one-sided
/// 95% confidence interval for normal data: `sqrt(df / χ²₀.₀₅(df))` (Wilson-Hilferty).
pub(crate) fn spread_upper_bound_factor_df(df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::INFINITY;
    }
    if df.is_infinite() {
        return 1.0;
    }
    let z = normal_quantile(0.05);
    let c = 2.0 / (9.0 * df);
    let chi2 = df * (1.0 - c + z * c.sqrt()).powi(3);
    if chi2 > 0.0 {
        (df / chi2).sqrt()
    } else {
        f64::INFINITY
    }
}

/// The factor that takes a spread estimated from `runs` runs (n - 1 degrees of freedom) to the
/// upper end of its one-sided 95% confidence interval ([`spread_upper_bound_factor_df`]).
#[cfg(test)]
pub(crate) fn spread_upper_bound_factor(runs: usize) -> f64 {
    if runs < 2 {
        return f64::INFINITY;
    }
    spread_upper_bound_factor_df((runs - 1) as f64)
}

/// The chance, in all, that a clean run fails one of the metrics when those the budget sets take
/// tolerance `z` sigmas and each other one its floor, `floor_sigmas[i]` of its sigmas wide.
#[cfg(test)]
fn false_alarms(z: f64, floor_sigmas: &[f64]) -> f64 {
    false_alarms_t(z, floor_sigmas, f64::INFINITY)
}

/// The same, for a clean run's distance that follows Student's t of `df` degrees of freedom
/// in sigmas (the spread estimated from few runs: a prediction, not a known sd).
fn false_alarms_t(z: f64, floor_sigmas: &[f64], df: f64) -> f64 {
    floor_sigmas
        .iter()
        .map(|&r| t_upper_tail(z.max(r), df))
        .sum()
}

/// The smallest z whose false alarms over the metrics stay within `budget` (a probability):
/// between the quantile of the whole budget (one metric could fail) and that of an even split
/// (every metric set by the budget). `floor_sigmas[i]` is metric i's floor over its sigma
/// (infinite for a metric with no spread: it cannot fail on noise).
#[cfg(test)]
pub(crate) fn z_for_budget(budget: f64, floor_sigmas: &[f64]) -> f64 {
    t_for_budget(budget, floor_sigmas, f64::INFINITY)
}

/// As [`z_for_budget`], for distances that follow Student's t of `df` degrees of freedom (in
/// sigmas of the estimated spread): the prediction interval's multiplier.
pub(crate) fn t_for_budget(budget: f64, floor_sigmas: &[f64], df: f64) -> f64 {
    let even = t_quantile(1.0 - budget / floor_sigmas.len().max(1) as f64, df);
    let whole = t_quantile(1.0 - budget, df);
    if false_alarms_t(whole, floor_sigmas, df) <= budget {
        return whole;
    }
    let (mut lo, mut hi) = (whole, even);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if false_alarms_t(mid, floor_sigmas, df) <= budget {
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
    fn t_quantiles_match_the_tables() {
        // Student-t table values (two-sided 99%, 95%; one-sided 95%) and the normal limit.
        for (p, df, want) in [
            (0.995, 9.0, 3.2498),
            (0.975, 4.0, 2.7764),
            (0.95, 1.0, 6.3138),
            (0.975, 2.0, 4.3027),
            (0.995, 19.0, 2.8609),
            (0.9995, 7.0, 5.4079),
            (0.975, 1e9, 1.959_96),
        ] {
            let got = t_quantile(p, df);
            assert!(
                (got - want).abs() < 1e-4 * want,
                "t({p}, {df}) = {got}, want {want}"
            );
        }
        assert!((t_upper_tail(2.776_445, 4.0) - 0.025).abs() < 1e-7);
        assert!((t_quantile(0.025, 4.0) + 2.7764).abs() < 1e-3);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn the_budget_widens_for_few_degrees_of_freedom() {
        let floors = [0.5, 1.0, 0.0, 2.0];
        let z = z_for_budget(0.01, &floors);
        let t9 = t_for_budget(0.01, &floors, 9.0);
        assert!((t9 - t_quantile(1.0 - 0.0025, 9.0)).abs() < 1e-6, "{t9}");
        assert!(t9 > z && t_for_budget(0.01, &floors, 4.0) > t9);
        assert!(false_alarms_t(t9, &floors, 9.0) <= 0.01 * (1.0 + 1e-6));
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
