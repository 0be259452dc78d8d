//! Mermaid charts that GitHub renders in comments and job summaries: the run's decode steps
//! against the baseline's band, and per-rank compute / wait / transfer bars. Series in an
//! `xychart-beta` carry no legend, so a sentence under each chart says which is which.
//!
//! Every chart starts with an init line that sets the palette: mermaid's default draws the first
//! series in `#ECECFF`, almost invisible on GitHub's white. The run is drawn in [`RUN`], which
//! contrasts at least 3:1 with both GitHub backgrounds (white and `#0d1117`); the baseline and its
//! band are grey ([`SECONDARY`]), secondary to the run in both themes.

use crate::gate::{DecodePoint, DecodeSeries, PointKind};
use crate::units::{fixed, Unit};

/// Points drawn at most: longer runs are averaged in equal buckets, keeping the chart a few
/// hundred characters whatever the run's length.
const MAX_POINTS: usize = 60;

/// The run's colour: 3.6:1 against white, 5.3:1 against GitHub's dark background.
pub(crate) const RUN: &str = "#e8590c";
/// The baseline, the band and other context: a mid grey, visible in both themes.
pub(crate) const SECONDARY: &str = "#8c959f";
/// The bars' second and third series (wait, transfer), after [`RUN`] (compute).
const WAIT: &str = "#0969da";
const TRANSFER: &str = "#8c959f";

/// The init line that sets the plot palette, in mermaid's order of the series.
fn init_line(palette: &[&str]) -> String {
    format!(
        "%%{{init: {{\"themeVariables\": {{\"xyChart\": {{\"plotColorPalette\": \"{}\"}}}}}}}}%%\n",
        palette.join(", ")
    )
}

/// The decode chart's height in px (mermaid's default, 500, would fill a screen): with the
/// y-axis of [`y_axis`] the band is at least [`MAX_BANDS_TALL`]th of the plot.
const CHART_HEIGHT: u32 = 220;
/// The y-axis spans at most this many band heights, so the band stays visible (20 px or more)
/// however far the run moved; steps beyond are drawn at the edge and named in the caption.
const MAX_BANDS_TALL: f64 = 5.0;

/// The init line with the chart's height too.
fn init_sized(palette: &[&str], height: u32) -> String {
    format!(
        "%%{{init: {{\"xyChart\": {{\"height\": {height}}}, \"themeVariables\": {{\"xyChart\": {{\"plotColorPalette\": \"{}\"}}}}}}}}%%\n",
        palette.join(", ")
    )
}

/// The y-axis, bottom and top: the kept steps and the baseline's band with a margin, never the
/// stalls (one 46 ms stall would flatten a 4% regression onto the band), and at most
/// [`MAX_BANDS_TALL`] bands tall. Steps outside are drawn at its edge.
fn y_axis(series: &DecodeSeries) -> (f64, f64) {
    let kept: Vec<f64> = series
        .steps
        .iter()
        .filter(|p| p.kind == PointKind::Kept)
        .map(|p| p.wall_ms)
        .collect();
    let judged = if kept.is_empty() {
        series.steps.iter().map(|p| p.wall_ms).collect()
    } else {
        kept
    };
    let mut min = judged.iter().copied().fold(f64::INFINITY, f64::min);
    let mut max = judged.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let band = series.allowance_ms.unwrap_or(0.0).abs();
    if let Some(b) = series.baseline_ms {
        min = min.min(b - band);
        max = max.max(b + band);
        if band > 0.0 {
            // Where the run left the band far behind, the axis follows the band, and the run
            // is drawn at the edge it crossed.
            let tall = 2.0 * band * MAX_BANDS_TALL / 1.2;
            max = max.min(b - band + tall);
            min = min.max(b + band - tall);
        }
    }
    let pad = ((max - min) * 0.1).max(max.abs() * 1e-3).max(1e-3);
    ((min - pad).max(0.0), max + pad)
}

/// Every decode step found (warm-up, kept and left out) as a line in real step numbers, with
/// the baseline and its tolerance band as flat lines when there is a baseline; `None` without
/// steps. Warm-up steps are labelled `w1`, `w2`, ...; the steps after them are numbered from 1,
/// as the stall sentence numbers them.
pub(crate) fn decode_steps(series: &DecodeSeries) -> Option<String> {
    if series.steps.is_empty() {
        return None;
    }
    let labels = step_labels(&series.steps);
    let walls: Vec<f64> = series.steps.iter().map(|p| p.wall_ms).collect();
    let (points, point_labels, bucket) = if walls.len() > MAX_POINTS {
        let bucket = walls.len().div_ceil(MAX_POINTS);
        let points = downsample(&walls, MAX_POINTS);
        let firsts = labels.iter().step_by(bucket).cloned().collect();
        (points, firsts, bucket)
    } else {
        (walls, labels, 1)
    };
    let band = series.allowance_ms.unwrap_or(0.0).abs();
    let base = series.baseline_ms;
    let axis = y_axis(series);
    let points: Vec<f64> = points.iter().map(|v| v.clamp(axis.0, axis.1)).collect();
    let flat = |v: f64| line(&vec![v; points.len()]);
    let x_title = if bucket > 1 {
        format!("decode step (mean of {bucket} from the one named)")
    } else {
        "decode step".to_string()
    };
    let mut palette = vec![RUN];
    if base.is_some() {
        palette.push(SECONDARY);
        if band > 0.0 {
            palette.extend([SECONDARY, SECONDARY]);
        }
    }
    let mut chart = format!(
        "```mermaid\n{}xychart-beta\n    x-axis \"{x_title}\" [{}]\n    y-axis \"ms\" {} --> {}\n    line {}\n",
        init_sized(&palette, CHART_HEIGHT),
        point_labels
            .iter()
            .map(|l| format!("\"{l}\""))
            .collect::<Vec<_>>()
            .join(", "),
        fixed(axis.0, 3),
        fixed(axis.1, 3),
        line(&points),
    );
    if let Some(b) = base {
        chart.push_str(&format!("    line {}\n", flat(b)));
        if band > 0.0 {
            chart.push_str(&format!(
                "    line {}\n    line {}\n",
                flat(b + band),
                flat(b - band)
            ));
        }
    }
    chart.push_str("```\n\n");
    chart.push_str(&caption(series, bucket, axis));
    Some(chart)
}

/// What the decode chart shows, in words: the lines, the warm-up, the stalls and the steps the
/// band judges.
fn caption(series: &DecodeSeries, bucket: usize, axis: (f64, f64)) -> String {
    let count = |k: PointKind| series.steps.iter().filter(|p| p.kind == k).count();
    let labels = step_labels(&series.steps);
    let named = |k: PointKind| -> Vec<String> {
        series
            .steps
            .iter()
            .zip(&labels)
            .filter(|(p, _)| p.kind == k)
            .map(|(_, l)| l.clone())
            .collect()
    };
    let found = series.steps.len();
    let rank = series
        .rank
        .map(|r| format!(" on rank {r}"))
        .unwrap_or_default();
    let mut s = format!("Orange: every decode step found{rank}, {found} in start order");
    let warmup = count(PointKind::Warmup);
    if warmup > 0 {
        s.push_str(&format!(" (w1 to w{warmup} warm-up, not judged)"));
    }
    if bucket > 1 {
        s.push_str(&format!(
            "; each point is the mean of {bucket} consecutive steps, labelled with the first"
        ));
    }
    s.push('.');
    let stalls = named(PointKind::Stall);
    if !stalls.is_empty() {
        s.push_str(&format!(
            " {} stalled (step{} {}): left out of the median.",
            stalls.len(),
            if stalls.len() == 1 { "" } else { "s" },
            stalls.join(", ")
        ));
    }
    s.push_str(&off_axis(series, &labels, axis));
    let fast = named(PointKind::Fast);
    if !fast.is_empty() {
        s.push_str(&format!(
            " {} faster outlier{} left out (step{} {}).",
            fast.len(),
            if fast.len() == 1 { "" } else { "s" },
            if fast.len() == 1 { "" } else { "s" },
            fast.join(", ")
        ));
    }
    if let Some(b) = series.baseline_ms {
        let band = series.allowance_ms.unwrap_or(0.0).abs();
        s.push_str(&format!(" Grey: the baseline, {}", Unit::Ms.figure(b)));
        if band > 0.0 {
            s.push_str(&format!(
                ", and its band, {} to {}, which judges",
                Unit::Ms.number(b - band),
                Unit::Ms.figure(b + band)
            ));
        } else {
            s.push_str(", against");
        }
        s.push_str(&format!(
            " the median of the {} kept steps.",
            count(PointKind::Kept)
        ));
    }
    s.push_str("\n\n");
    s
}

/// The steps beyond the y-axis, drawn at its edge: " Off the chart, drawn at its top edge: step
/// 6 (45.964 ms)." (at most [`OFF_AXIS_NAMED`] named, then how many more).
fn off_axis(series: &DecodeSeries, labels: &[String], axis: (f64, f64)) -> String {
    let mut s = String::new();
    for (edge, outside) in [
        ("top", &(|v: f64| v > axis.1) as &dyn Fn(f64) -> bool),
        ("bottom", &|v: f64| v < axis.0),
    ] {
        let off: Vec<String> = series
            .steps
            .iter()
            .zip(labels)
            .filter(|(p, _)| outside(p.wall_ms))
            .map(|(p, l)| format!("{l} ({})", Unit::Ms.figure(p.wall_ms)))
            .collect();
        if off.is_empty() {
            continue;
        }
        let more = off.len().saturating_sub(OFF_AXIS_NAMED);
        let mut named = off[..off.len().min(OFF_AXIS_NAMED)].join(", ");
        if more > 0 {
            named.push_str(&format!(" and {more} more"));
        }
        let steps = if off.len() == 1 { "step" } else { "steps" };
        let named = format!("{steps} {named}");
        s.push_str(&format!(
            " Off the chart, drawn at its {edge} edge: {named}."
        ));
    }
    s
}

/// Steps off the chart named in its caption at most.
const OFF_AXIS_NAMED: usize = 5;

/// `w1`, `w2`, ... for the warm-up steps, then `1`, `2`, ... for the steps after them.
fn step_labels(steps: &[DecodePoint]) -> Vec<String> {
    let (mut w, mut n) = (0, 0);
    steps
        .iter()
        .map(|p| {
            if p.kind == PointKind::Warmup {
                w += 1;
                format!("w{w}")
            } else {
                n += 1;
                n.to_string()
            }
        })
        .collect()
}

/// The pie's slice colours, in slice order (most time first): mid tones of distinct hues, each at
/// least 3:1 against both GitHub backgrounds (mermaid's default palette starts with `#ECECFF`,
/// almost invisible on white). Ten, one per category.
pub(crate) const PIE_PALETTE: [&str; 10] = [
    RUN, "#0969da", "#1a7f37", "#8250df", "#cf222e", "#1b7c83", "#9a6700", "#bf3989", SECONDARY,
    "#6e7781",
];
/// The percentages written on the slices: black reads at least 3:1 on every slice colour. The
/// slices are drawn opaque (`pieOpacity` 1; mermaid's 0.7 would blend them into the background,
/// darkening them under black text in the dark theme).
const PIE_TEXT: &str = "#000000";

/// A pie of `(label, value)` slices (values printed by the caller, through `units`), most first,
/// with an init line that sets [`PIE_PALETTE`]; `None` without a slice. Labels are reduced to
/// letters, digits, spaces and `-_.:#()/` so that no label can end the string or the block.
pub(crate) fn pie(title: &str, slices: &[(String, String)]) -> Option<String> {
    if slices.is_empty() {
        return None;
    }
    let vars: Vec<String> = PIE_PALETTE
        .iter()
        .enumerate()
        .map(|(i, c)| format!("\"pie{}\": \"{c}\"", i + 1))
        .collect();
    let mut out = format!(
        "```mermaid\n%%{{init: {{\"themeVariables\": {{{}, \"pieSectionTextColor\": \"{PIE_TEXT}\", \"pieOpacity\": \"1\"}}}}}}%%\npie showData title {}\n",
        vars.join(", "),
        chart_text(title)
    );
    for (label, value) in slices {
        out.push_str(&format!("    \"{}\" : {value}\n", chart_text(label)));
    }
    out.push_str("```\n\n");
    Some(out)
}

/// Text inside a chart: letters, digits, spaces and `-_.:#()/`, nothing that ends a string.
fn chart_text(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric() || " -_.:#()/".contains(*c))
        .collect()
}

/// Per-rank bars of compute, wait and transfer per decode step (ms), drawn as overlapping bars
/// of the running sums so that they read as stacked: `None` without a rank measured.
pub(crate) fn rank_bars(ranks: &[(String, f64, f64, f64)]) -> Option<String> {
    if ranks.is_empty() {
        return None;
    }
    let labels: Vec<String> = ranks
        .iter()
        .map(|(l, ..)| format!("\"{}\"", axis_label(l)))
        .collect();
    let total: Vec<f64> = ranks.iter().map(|(_, c, w, t)| c + w + t).collect();
    let compute_wait: Vec<f64> = ranks.iter().map(|(_, c, w, _)| c + w).collect();
    let compute: Vec<f64> = ranks.iter().map(|(_, c, ..)| *c).collect();
    let max = total.iter().copied().fold(0.0, f64::max);
    let top = if max > 0.0 { max * 1.1 } else { 1.0 };
    Some(format!(
        "```mermaid\n{}xychart-beta\n    title \"Per decode step, ms: compute, wait, transfer\"\n    x-axis [{}]\n    y-axis \"ms\" 0 --> {}\n    bar {}\n    bar {}\n    bar {}\n```\n\nPer rank, bottom to top: compute in orange, waiting in collectives in blue, transfer in grey (the medians of the table below, stacked).\n\n",
        init_line(&[TRANSFER, WAIT, RUN]),
        labels.join(", "),
        fixed(top, 3),
        line(&total),
        line(&compute_wait),
        line(&compute),
    ))
}

/// A category label mermaid cannot misread: letters, digits, spaces and `-_.:#` only (a rank's
/// label may carry a host name from the trace), at most 24 characters.
fn axis_label(label: &str) -> String {
    label
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || " -_.:#".contains(*c))
        .take(24)
        .collect()
}

fn line(values: &[f64]) -> String {
    let v: Vec<String> = values.iter().map(|x| fixed(*x, 3)).collect();
    format!("[{}]", v.join(", "))
}

/// At most `max` points: the means of equal consecutive buckets (the last may be shorter).
fn downsample(values: &[f64], max: usize) -> Vec<f64> {
    if values.len() <= max {
        return values.to_vec();
    }
    values
        .chunks(values.len().div_ceil(max))
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(wall_ms: f64, kind: PointKind) -> DecodePoint {
        DecodePoint { wall_ms, kind }
    }

    /// WCAG 2 relative luminance of `#rrggbb`.
    fn luminance(hex: &str) -> f64 {
        let hex = hex.trim().trim_start_matches('#');
        assert_eq!(hex.len(), 6, "{hex}");
        let c = |i: usize| {
            let v = u8::from_str_radix(&hex[i..i + 2], 16).unwrap() as f64 / 255.0;
            if v <= 0.03928 {
                v / 12.92
            } else {
                ((v + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * c(0) + 0.7152 * c(2) + 0.0722 * c(4)
    }

    fn contrast(a: &str, b: &str) -> f64 {
        let (x, y) = (luminance(a), luminance(b));
        (x.max(y) + 0.05) / (x.min(y) + 0.05)
    }

    /// The first colour of the palette in the chart's init line.
    fn first_plot_colour(chart: &str) -> String {
        let init = chart
            .lines()
            .nth(1)
            .filter(|l| l.starts_with("%%{init:"))
            .unwrap_or_else(|| panic!("no init line after the fence: {chart}"));
        let json = init
            .trim_start_matches("%%{init:")
            .trim_end_matches("}%%")
            .trim();
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let palette = v["themeVariables"]["xyChart"]["plotColorPalette"]
            .as_str()
            .unwrap()
            .to_string();
        palette.split(',').next().unwrap().trim().to_string()
    }

    #[test]
    fn contrast_is_computed_as_wcag_defines_it() {
        assert!((contrast("#000000", "#ffffff") - 21.0).abs() < 1e-9);
        // mermaid's default first colour, the one that hid the run on white.
        assert!(contrast("#ECECFF", "#ffffff") < 1.2);
    }

    #[test]
    fn every_chart_draws_the_run_at_three_to_one_on_both_github_backgrounds() {
        let s = DecodeSeries {
            steps: vec![point(20.0, PointKind::Kept), point(21.0, PointKind::Kept)],
            baseline_ms: Some(20.0),
            allowance_ms: Some(0.6),
            rank: None,
        };
        let bars = rank_bars(&[("rank 0".into(), 10.0, 1.0, 2.0)]).unwrap();
        for chart in [decode_steps(&s).unwrap(), bars] {
            let first = first_plot_colour(&chart);
            for bg in ["#ffffff", "#0d1117"] {
                let c = contrast(&first, bg);
                assert!(c >= 3.0, "{first} on {bg}: {c:.2}:1");
            }
        }
        // The run's colour, not the baseline's, comes first in the decode chart.
        assert_eq!(first_plot_colour(&decode_steps(&s).unwrap()), RUN);
    }

    #[test]
    fn every_pie_slice_and_its_text_read_at_three_to_one_on_both_github_backgrounds() {
        let slices: Vec<(String, String)> = (0..PIE_PALETTE.len())
            .map(|i| (format!("c{i}\"]\n```"), "1.000".to_string()))
            .collect();
        let chart = pie("Kernel time by category (ms per step)", &slices).unwrap();
        let init = chart.lines().nth(1).unwrap();
        let json = init
            .trim_start_matches("%%{init:")
            .trim_end_matches("}%%")
            .trim();
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let vars = &v["themeVariables"];
        let text = vars["pieSectionTextColor"].as_str().unwrap();
        assert_eq!(vars["pieOpacity"], "1", "slices drawn in their colour");
        let mut colours = Vec::new();
        for i in 1..=slices.len() {
            let c = vars[format!("pie{i}")].as_str().unwrap();
            for bg in ["#ffffff", "#0d1117"] {
                let k = contrast(c, bg);
                assert!(k >= 3.0, "slice {i} {c} on {bg}: {k:.2}:1");
            }
            let k = contrast(c, text);
            assert!(k >= 3.0, "the text {text} on slice {i} {c}: {k:.2}:1");
            colours.push(c);
        }
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), slices.len(), "one colour per slice");
        // mermaid's default first slice colour fails the same check.
        assert!(contrast("#ECECFF", "#ffffff") < 3.0);
        // A label cannot end its string or the block.
        assert_eq!(chart.matches("```").count(), 2, "{chart}");
        assert!(chart.contains("    \"c0\" : 1.000\n"), "{chart}");
        assert!(pie("t", &[]).is_none());
    }

    #[test]
    fn long_runs_are_averaged_into_at_most_sixty_points() {
        let v: Vec<f64> = (0..1000).map(f64::from).collect();
        let d = downsample(&v, MAX_POINTS);
        assert!(d.len() <= MAX_POINTS && d.len() >= MAX_POINTS / 2);
        assert_eq!(d[0], (0..17).sum::<i32>() as f64 / 17.0);
        assert_eq!(downsample(&[1.0, 2.0], MAX_POINTS), vec![1.0, 2.0]);
        let s = DecodeSeries {
            steps: v.iter().map(|&w| point(w, PointKind::Kept)).collect(),
            baseline_ms: None,
            allowance_ms: None,
            rank: None,
        };
        let c = decode_steps(&s).unwrap();
        assert!(c.contains("mean of 17 consecutive steps"), "{c}");
        assert!(c.contains("[\"1\", \"18\", \"35\""), "{c}");
    }

    #[test]
    fn the_chart_draws_every_step_with_warm_up_and_stalls_in_real_numbers() {
        let s = DecodeSeries {
            steps: vec![
                point(30.0, PointKind::Warmup),
                point(20.0, PointKind::Kept),
                point(60.0, PointKind::Stall),
                point(21.0, PointKind::Kept),
                point(10.0, PointKind::Fast),
            ],
            baseline_ms: Some(20.0),
            allowance_ms: Some(0.6),
            rank: Some(3),
        };
        let c = decode_steps(&s).unwrap();
        assert!(c.starts_with("```mermaid\n%%{init:"), "{c}");
        assert!(c.contains("\nxychart-beta\n"), "{c}");
        assert!(
            c.contains("x-axis \"decode step\" [\"w1\", \"1\", \"2\", \"3\", \"4\"]"),
            "{c}"
        );
        assert!(
            c.contains("line [21.160, 20.000, 21.160, 21.000, 19.240]"),
            "{c}"
        );
        assert!(
            c.contains("line [20.000, 20.000, 20.000, 20.000, 20.000]"),
            "{c}"
        );
        assert!(
            c.contains("line [20.600, 20.600, 20.600, 20.600, 20.600]"),
            "{c}"
        );
        assert!(
            c.contains("line [19.400, 19.400, 19.400, 19.400, 19.400]"),
            "{c}"
        );
        // The axis fits the kept steps and the band; the rest is drawn at its edges, and named.
        assert!(c.contains("y-axis \"ms\" 19.240 --> 21.160"), "{c}");
        assert!(
            c.contains("top edge: steps w1 (30.000 ms), 2 (60.000 ms).")
                && c.contains("bottom edge: step 4 (10.000 ms)."),
            "{c}"
        );
        assert!(c.contains("5 in start order (w1 to w1 warm-up"), "{c}");
        assert!(c.contains("1 stalled (step 2)"), "{c}");
        assert!(c.contains("faster outlier left out (step 4)"), "{c}");
        assert!(c.contains("median of the 2 kept steps"), "{c}");
        assert!(c.contains("on rank 3"), "{c}");
        let none = DecodeSeries {
            steps: Vec::new(),
            ..s.clone()
        };
        assert!(decode_steps(&none).is_none());
        // Without a baseline: the run alone.
        let alone = DecodeSeries {
            baseline_ms: None,
            ..s
        };
        let c = decode_steps(&alone).unwrap();
        assert_eq!(c.matches("    line ").count(), 1, "{c}");
        assert!(!c.contains("Grey"), "{c}");
    }

    #[test]
    fn a_run_far_above_its_band_keeps_the_band_a_fifth_of_the_axis() {
        let s = DecodeSeries {
            steps: (0..10).map(|_| point(40.0, PointKind::Kept)).collect(),
            baseline_ms: Some(20.0),
            allowance_ms: Some(0.6),
            rank: None,
        };
        let (bottom, top) = y_axis(&s);
        assert!(
            1.2 / (top - bottom) >= 1.0 / MAX_BANDS_TALL - 1e-9,
            "{bottom} {top}"
        );
        let c = decode_steps(&s).unwrap();
        assert!(
            c.contains("top edge: steps 1 (40.000 ms), 2 (40.000 ms)"),
            "{c}"
        );
        assert!(c.contains("and 5 more."), "{c}");
    }

    #[test]
    fn rank_bars_stack_compute_wait_and_transfer() {
        let c = rank_bars(&[
            ("rank 0".into(), 10.0, 1.0, 2.0),
            ("rank 1".into(), 12.0, 0.5, 2.0),
        ])
        .unwrap();
        assert!(c.contains("x-axis [\"rank 0\", \"rank 1\"]"), "{c}");
        assert!(
            c.contains("bar [13.000, 14.500]\n    bar [11.000, 12.500]\n    bar [10.000, 12.000]"),
            "{c}"
        );
        assert!(rank_bars(&[]).is_none());
        let hostile = rank_bars(&[("r\"]\n```<b>".into(), 1.0, 1.0, 1.0)]).unwrap();
        assert!(hostile.contains("x-axis [\"rb\"]"), "{hostile}");
    }
}
