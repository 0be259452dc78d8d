//! Order statistics and interval arithmetic, as defined in `docs/METRICS.md` ("Units and arithmetic").

/// A half-open time interval `[start, end)` in ns.
pub type Interval = (i64, i64);

/// Median: the middle value, or the mean of the two middle values. `None` for no values.
/// Sorts `values` in place (NaN-free input assumed; NaN sorts last).
pub fn median(values: &mut [f64]) -> Option<f64> {
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
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
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
pub fn percentile(values: &mut [f64], q: f64) -> Option<f64> {
    values.sort_unstable_by(f64::total_cmp);
    percentile_sorted(values, q)
}

/// Arithmetic mean. `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// Merges intervals (any order, nested, touching, zero-length) into sorted disjoint non-empty
/// intervals, in place. Touching intervals merge; empty and inverted ones vanish.
pub fn union_in_place(intervals: &mut Vec<Interval>) {
    intervals.retain(|&(s, e)| e > s);
    if intervals.windows(2).any(|w| w[0].0 > w[1].0) {
        intervals.sort_unstable();
    }
    let mut out = 0usize;
    for k in 0..intervals.len() {
        let (s, e) = intervals[k];
        if out > 0 && s <= intervals[out - 1].1 {
            if e > intervals[out - 1].1 {
                intervals[out - 1].1 = e;
            }
        } else {
            intervals[out] = (s, e);
            out += 1;
        }
    }
    intervals.truncate(out);
}

/// Total length of sorted disjoint intervals (the output of [`union_in_place`]).
pub fn total_len(disjoint: &[Interval]) -> i64 {
    disjoint.iter().map(|&(s, e)| e - s).sum()
}

/// Length of the union of intervals in any order.
pub fn union_len(intervals: &[Interval]) -> i64 {
    let mut v = intervals.to_vec();
    union_in_place(&mut v);
    total_len(&v)
}

/// Length of the intersection of two sets of sorted disjoint intervals (two unions).
pub fn intersection_len(a: &[Interval], b: &[Interval]) -> i64 {
    let (mut i, mut j, mut total) = (0, 0, 0i64);
    while i < a.len() && j < b.len() {
        let s = a[i].0.max(b[j].0);
        let e = a[i].1.min(b[j].1);
        if e > s {
            total += e - s;
        }
        if a[i].1 <= b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
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
    fn union_merges_nested_touching_zero_length_and_unsorted() {
        let mut v = vec![
            (10, 20),
            (0, 5),
            (12, 15),
            (5, 7),
            (30, 30),
            (40, 35),
            (19, 25),
        ];
        union_in_place(&mut v);
        assert_eq!(v, vec![(0, 7), (10, 25)]);
        assert_eq!(total_len(&v), 22);
        assert_eq!(union_len(&[]), 0);
        assert_eq!(union_len(&[(3, 3)]), 0);
        assert_eq!(union_len(&[(0, 10), (0, 10)]), 10);
        assert_eq!(union_len(&[(0, 100), (10, 20), (30, 40)]), 100);
    }

    #[test]
    fn intersection_of_unions() {
        let a = [(0, 10), (20, 30)];
        let b = [(5, 25)];
        assert_eq!(intersection_len(&a, &b), 10);
        assert_eq!(intersection_len(&b, &a), 10);
        // touching is not overlapping
        assert_eq!(intersection_len(&[(0, 10)], &[(10, 20)]), 0);
        assert_eq!(intersection_len(&[], &b), 0);
        // nested
        assert_eq!(
            intersection_len(&[(0, 100)], &[(10, 20), (30, 40), (90, 120)]),
            30
        );
    }
}
