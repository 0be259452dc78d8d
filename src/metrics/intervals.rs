//! Interval arithmetic on GPU activities, as defined in `docs/METRICS.md` ("Units and arithmetic").

/// A half-open time interval `[start, end)` in ns.
pub(crate) type Interval = (i64, i64);

/// Merges intervals (any order, nested, touching, zero-length) into sorted disjoint non-empty
/// intervals, in place. Touching intervals merge; empty and inverted ones vanish.
pub(crate) fn union_in_place(intervals: &mut Vec<Interval>) {
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
pub(crate) fn total_len(disjoint: &[Interval]) -> i64 {
    disjoint.iter().map(|&(s, e)| e - s).sum()
}

/// Length of the union of intervals in any order.
#[cfg(test)]
pub(crate) fn union_len(intervals: &[Interval]) -> i64 {
    let mut v = intervals.to_vec();
    union_in_place(&mut v);
    total_len(&v)
}

/// Length of the intersection of two sets of sorted disjoint intervals (two unions).
pub(crate) fn intersection_len(a: &[Interval], b: &[Interval]) -> i64 {
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
