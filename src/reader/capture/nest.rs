//! Which host ranges contain which launches, on the same thread, by one sweep per thread.

use std::collections::BTreeMap;

use super::Range;

/// For each launch, the indices of the `ranges` on its thread that contain it (start at or
/// before its start, end at or after its end), outermost first.
pub(super) fn enclosing<T, L>(ranges: &[Range<T>], launches: &[Range<L>]) -> Vec<Vec<usize>> {
    let mut by_tid: BTreeMap<&str, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, r) in ranges.iter().enumerate() {
        by_tid.entry(&r.tid).or_default().0.push(i);
    }
    for (i, l) in launches.iter().enumerate() {
        by_tid.entry(&l.tid).or_default().1.push(i);
    }
    let mut out = vec![Vec::new(); launches.len()];
    for (_, (mut rs, mut ls)) in by_tid {
        // Outer ranges before the ranges they hold: by start, the longer first.
        rs.sort_by_key(|&i| (ranges[i].ts, -ranges[i].end));
        ls.sort_by_key(|&i| launches[i].ts);
        let mut stack: Vec<usize> = Vec::new();
        let mut next = 0;
        for &l in &ls {
            let launch = &launches[l];
            while next < rs.len() && ranges[rs[next]].ts <= launch.ts {
                let r = &ranges[rs[next]];
                while stack.last().is_some_and(|&top| ranges[top].end <= r.ts) {
                    stack.pop();
                }
                stack.push(rs[next]);
                next += 1;
            }
            while stack.last().is_some_and(|&top| ranges[top].end < launch.ts) {
                stack.pop();
            }
            out[l] = stack
                .iter()
                .copied()
                .filter(|&r| ranges[r].end >= launch.end)
                .collect();
        }
    }
    out
}
