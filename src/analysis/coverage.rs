//! `Input Dims` coverage: how many CPU ops carry tensor shapes, how many carry empty dims (ops
//! with only scalar inputs, such as `aten::empty`) and how many carry none, by op name.

use std::collections::HashMap;

use serde::Serialize;

use crate::reader::model::{dims_have_numbers, Run};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Coverage {
    pub cpu_ops: u64,
    /// `Input Dims` with at least one number (a tensor input with a shape).
    pub with_dims: u64,
    /// `Input Dims` present but without any number (`[[], []]`).
    pub empty_dims: u64,
    /// No `Input Dims` at all.
    pub without_dims: u64,
    /// Per op name, most events first.
    pub by_op: Vec<OpCoverage>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct OpCoverage {
    pub op: String,
    pub with_dims: u64,
    pub empty_dims: u64,
    pub without_dims: u64,
}

impl OpCoverage {
    pub fn total(&self) -> u64 {
        self.with_dims + self.empty_dims + self.without_dims
    }
}

pub(crate) fn coverage(run: &Run) -> Coverage {
    let mut by_op: HashMap<&str, OpCoverage> = HashMap::new();
    let mut c = Coverage::default();
    for trace in &run.traces {
        for op in &trace.cpu_ops {
            let name = trace.name(op.name);
            let entry = by_op.entry(name).or_insert_with(|| OpCoverage {
                op: name.to_string(),
                ..OpCoverage::default()
            });
            c.cpu_ops += 1;
            match op.input_dims.map(|d| dims_have_numbers(trace.name(d))) {
                Some(true) => {
                    c.with_dims += 1;
                    entry.with_dims += 1;
                }
                Some(false) => {
                    c.empty_dims += 1;
                    entry.empty_dims += 1;
                }
                None => {
                    c.without_dims += 1;
                    entry.without_dims += 1;
                }
            }
        }
    }
    c.by_op = by_op.into_values().collect();
    c.by_op
        .sort_by(|a, b| b.total().cmp(&a.total()).then_with(|| a.op.cmp(&b.op)));
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::model::CpuOp;

    #[test]
    fn ops_split_into_with_empty_and_without_dims() {
        let (mut trace, _) = crate::testing::TraceBuilder::new(0).build();
        let mm = trace.names.intern("aten::mm");
        let empty = trace.names.intern("aten::empty");
        let dims = trace.names.intern("[[64, 7168], [7168, 1536]]");
        let none = trace.names.intern("[[], []]");
        let op = |name, input_dims| CpuOp {
            name,
            ts: 0,
            dur: 1,
            tid: 1,
            external_id: None,
            input_dims,
            input_types: None,
        };
        trace.cpu_ops = vec![op(mm, Some(dims)), op(empty, Some(none)), op(empty, None)];
        let run = Run {
            traces: vec![trace],
            missing: None,
            dp_group: None,
            skipped: Vec::new(),
        };
        let c = coverage(&run);
        assert_eq!(
            (c.cpu_ops, c.with_dims, c.empty_dims, c.without_dims),
            (3, 1, 1, 1)
        );
        assert_eq!(c.by_op[0].op, "aten::empty");
        assert_eq!(c.by_op[0].total(), 2);
    }
}
