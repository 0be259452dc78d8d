//! The model-level view of `report`: time per Python scope and per op and shape, and how graph
//! replays got theirs. Nothing here computes a figure; see [`crate::analysis::code`].

use super::doc::Doc;
use super::markup::Inline;
use super::table::Align;
use crate::analysis::code::view::{ModelView, OpRow};
use crate::analysis::code::CaptureStatus;
use crate::analysis::roofline::{Bound, Limit};
use crate::analysis::{RunAnalysis, Scope};
use crate::units::{Unit, MISSING};

/// Characters of a scope name in the scopes table.
const NAME_WIDTH: usize = 40;

/// Characters of an op in the ops table, which has nine columns: what keeps it within GitHub's
/// 900 px comment column, measured by the real-browser check (`.ci/browser/check.mjs`). The
/// JSON holds the op whole.
const OP_WIDTH: usize = 26;

pub(crate) fn code(d: &mut Doc, a: &RunAnalysis) {
    let v = &a.code;
    d.heading(3, "Code: time per Python scope and per op");
    graph_sources(d, v);
    if v.ops.is_empty() && v.scopes.is_empty() {
        d.para(
            "No kernel in scope has an op or a Python frame (record with record_shapes=True and \
             with_stack=True; replayed graphs need their capture).",
        );
        return;
    }
    let unit = match v.scope {
        Scope::Decode => "step",
        Scope::WholeTrace => "rank",
    };
    d.para(&format!(
        "{} of kernel time in scope has an op, {} a Python scope (the innermost `nn.Module`, else \
         the innermost frame of the model's own code; depth {}). Per {unit}, pooled over ranks.",
        Unit::Pct.figure(v.attributed_pct),
        Unit::Pct.figure(v.scoped_pct),
        v.depth
    ));
    scopes(d, v, unit);
    roofline_note(d, v);
    ops(d, v);
}

/// Which peaks the GEMMs are held to, or why none.
fn roofline_note(d: &mut Doc, v: &ModelView) {
    if !v.ops.iter().any(|r| r.gemm.is_some()) {
        return;
    }
    let line = match &v.peaks {
        Ok(p) => format!(
            "GEMMs against the roofline of {} ({}): memory-bound below the ridge point (peak \
             FLOP/s over HBM bandwidth), compute-bound above; the share is of the bound that \
             applies.",
            d.m.inline(&Inline::Text(&p.device)),
            d.m.inline(&Inline::Text(&p.source)),
        ),
        Err(why) => format!("No roofline: {}.", d.m.inline(&Inline::Text(why))),
    };
    d.para(&line);
}

/// `memory 64%`, `compute 41%`, or why neither.
fn bound_cell(b: &Bound) -> String {
    match (b.limit, b.pct_of_limit) {
        (Some(Limit::Memory), Some(p)) => format!("memory {}", Unit::Pct.figure(p)),
        (Some(Limit::Compute), Some(p)) => format!("compute {}", Unit::Pct.figure(p)),
        _ => MISSING.to_string(),
    }
}

fn graph_sources(d: &mut Doc, v: &ModelView) {
    // Ranks that failed for the same reason share one line: eight ranks, one missing capture.
    let mut not_joined: Vec<(&str, Vec<u32>)> = Vec::new();
    for g in &v.graph {
        match &g.status {
            CaptureStatus::Joined {
                file,
                in_trace,
                method,
                replays_joined,
                replays,
                kernels_matched,
                kernels_replayed,
                match_pct,
            } => d.para(&format!(
                "Rank {}: graph replays joined to {} by {method}: {kernels_matched} of \
                 {kernels_replayed} replayed kernels matched ({}), {replays_joined} of {replays} \
                 replays.",
                g.rank,
                if *in_trace {
                    format!("the capture in its own trace {}", path_code(d, file))
                } else {
                    path_code(d, file)
                },
                Unit::Pct.figure(*match_pct),
            )),
            CaptureStatus::NotJoined { reason } => {
                match not_joined.iter_mut().find(|(r, _)| r == reason) {
                    Some((_, ranks)) => ranks.push(g.rank),
                    None => not_joined.push((reason, vec![g.rank])),
                }
            }
        }
    }
    for (reason, ranks) in not_joined {
        let list: Vec<String> = ranks.iter().map(u32::to_string).collect();
        let (who, whose) = match ranks.len() {
            1 => (format!("Rank {}", list[0]), "its"),
            _ => (format!("Ranks {}", list.join(", ")), "their"),
        };
        d.para(&format!(
            "{who}: no attribution for {whose} graph-replayed kernels: {}.",
            d.m.inline(&Inline::Text(reason))
        ));
    }
}

fn path_code(d: &Doc, path: &std::path::Path) -> String {
    d.m.inline(&Inline::Code(&path.display().to_string()))
}

fn scopes(d: &mut Doc, v: &ModelView, unit: &str) {
    if v.scopes.is_empty() {
        return;
    }
    let rows = v
        .scopes
        .iter()
        .map(|r| {
            vec![
                r.scope.clone(),
                r.instances
                    .map_or_else(|| MISSING.into(), |n| n.to_string()),
                crate::units::count(r.calls),
                Unit::Ms.number(r.ms),
                Unit::Pct.number(r.pct),
                r.lead_op.clone().unwrap_or_else(|| MISSING.into()),
            ]
        })
        .collect();
    let calls = format!("Calls per {unit}");
    let ms = format!("ms per {unit}");
    d.long_table(
        &[
            ("Python scope", Align::Left),
            ("Instances", Align::Right),
            (&calls, Align::Right),
            (&ms, Align::Right),
            ("% of time", Align::Right),
            ("Lead op", Align::Left),
        ],
        Some((0, NAME_WIDTH)),
        rows,
        "scopes",
    );
}

fn ops(d: &mut Doc, v: &ModelView) {
    if v.ops.is_empty() {
        return;
    }
    let rows = v
        .ops
        .iter()
        .map(|r| {
            let (tflops, tbps) = r.gemm.as_ref().map_or_else(
                || (MISSING.to_string(), MISSING.to_string()),
                |g| {
                    (
                        crate::units::fixed(g.tflops, 1),
                        crate::units::fixed(g.tbps, 2),
                    )
                },
            );
            let bound = r
                .gemm
                .as_ref()
                .and_then(|g| g.bound.as_ref())
                .map_or_else(|| MISSING.to_string(), bound_cell);
            vec![
                r.op.clone(),
                shapes_cell(r),
                r.dtypes
                    .iter()
                    .map(|t| short_dtype(t))
                    .collect::<Vec<_>>()
                    .join(", "),
                crate::units::count(r.calls),
                Unit::Us.number(r.us_per_call),
                Unit::Pct.number(r.pct),
                tflops,
                tbps,
                bound,
            ]
        })
        .collect();
    // Narrow headers: the sentence above says per what the calls are counted.
    d.long_table(
        &[
            ("Op", Align::Left),
            ("Shapes (GEMM: M×N×K)", Align::Left),
            ("Dtypes", Align::Left),
            ("Calls", Align::Right),
            ("µs/call", Align::Right),
            ("%", Align::Right),
            ("TFLOP/s", Align::Right),
            ("TB/s", Align::Right),
            ("Bound", Align::Left),
        ],
        Some((0, OP_WIDTH)),
        rows,
        "ops",
    );
}

/// A trace's tensor type as a table cell holds it: `c10::BFloat16` is `bf16`.
fn short_dtype(t: &str) -> &str {
    match t.strip_prefix("c10::").unwrap_or(t) {
        "BFloat16" => "bf16",
        "Half" => "fp16",
        "float" | "Float" => "fp32",
        "double" | "Double" => "fp64",
        "Float8_e4m3fn" | "Float8_e4m3fnuz" => "fp8 e4m3",
        "Float8_e5m2" | "Float8_e5m2fnuz" => "fp8 e5m2",
        "Float4_e2m1fn_x2" => "fp4 e2m1",
        "int" | "Int" => "i32",
        "long int" | "Long" => "i64",
        "unsigned char" | "Byte" => "u8",
        "signed char" | "Char" => "i8",
        other => other,
    }
}

/// A GEMM's `M×N×K`, else each tensor input's dims, cut to what a table column holds.
fn shapes_cell(r: &OpRow) -> String {
    match (&r.gemm, r.shapes.is_empty()) {
        (Some(g), _) if g.batch > 1 => format!("{}× {}×{}×{}", g.batch, g.m, g.n, g.k),
        (Some(g), _) => format!("{}×{}×{}", g.m, g.n, g.k),
        (None, true) => MISSING.into(),
        (None, false) => super::table::cut_to(&r.shapes, SHAPES_WIDTH),
    }
}

/// Characters of an op's input dims in the op table; the JSON holds them whole.
const SHAPES_WIDTH: usize = 48;
