//! Mermaid charts that GitHub renders in comments and job summaries: the run's decode steps
//! against the baseline's band. Lines in an `xychart-beta` carry no legend, so a sentence under
//! the chart says which line is which.

use crate::gate::DecodeSeries;

/// Points drawn at most: longer runs are averaged in equal buckets, keeping the chart a few
/// hundred characters whatever the run's length.
const MAX_POINTS: usize = 60;

/// The decode step of every kept step (ms) as a line, with the baseline and its tolerance band
/// as flat lines; `None` without steps or a baseline.
pub fn decode_steps(series: &DecodeSeries) -> Option<String> {
    let base = series.baseline_ms?;
    let points = downsample(&series.steps_ms, MAX_POINTS);
    if points.is_empty() {
        return None;
    }
    let band = series.allowance_ms.unwrap_or(0.0).abs();
    let (lo, hi) = (base - band, base + band);
    let min = points.iter().copied().fold(lo, f64::min);
    let max = points.iter().copied().fold(hi, f64::max);
    let pad = ((max - min) * 0.1).max(max.abs() * 1e-3).max(1e-3);
    let flat = |v: f64| line(&vec![v; points.len()]);
    let bucket = series.steps_ms.len().div_ceil(points.len());
    let x_title = if bucket > 1 {
        format!("decode step (mean of {bucket})")
    } else {
        "decode step".to_string()
    };
    let mut chart = format!(
        "```mermaid\nxychart-beta\n    title \"Decode step, ms\"\n    x-axis \"{x_title}\" 1 --> {}\n    y-axis \"ms\" {:.3} --> {:.3}\n    line {}\n    line {}\n",
        points.len(),
        (min - pad).max(0.0),
        max + pad,
        line(&points),
        flat(base),
    );
    if band > 0.0 {
        chart.push_str(&format!("    line {}\n    line {}\n", flat(hi), flat(lo)));
    }
    chart.push_str("```\n\n");
    chart.push_str(&format!(
        "The first line is this run's decode steps ({} kept); the flat lines are the baseline, {base:.3} ms{}.\n\n",
        series.steps_ms.len(),
        if band > 0.0 {
            format!(", and its tolerance band, {lo:.3} to {hi:.3} ms")
        } else {
            String::new()
        }
    ));
    Some(chart)
}

fn line(values: &[f64]) -> String {
    let v: Vec<String> = values.iter().map(|x| format!("{x:.3}")).collect();
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

    #[test]
    fn long_runs_are_averaged_into_at_most_sixty_points() {
        let v: Vec<f64> = (0..1000).map(f64::from).collect();
        let d = downsample(&v, MAX_POINTS);
        assert!(d.len() <= MAX_POINTS && d.len() >= MAX_POINTS / 2);
        assert_eq!(d[0], (0..17).sum::<i32>() as f64 / 17.0);
        assert_eq!(downsample(&[1.0, 2.0], MAX_POINTS), vec![1.0, 2.0]);
    }

    #[test]
    fn the_chart_draws_the_run_the_baseline_and_its_band() {
        let s = DecodeSeries {
            steps_ms: vec![20.0, 21.0, 26.0],
            baseline_ms: Some(20.0),
            allowance_ms: Some(0.6),
        };
        let c = decode_steps(&s).unwrap();
        assert!(c.starts_with("```mermaid\nxychart-beta\n"), "{c}");
        assert!(c.contains("line [20.000, 21.000, 26.000]"), "{c}");
        assert!(c.contains("line [20.000, 20.000, 20.000]"), "{c}");
        assert!(c.contains("line [20.600, 20.600, 20.600]"), "{c}");
        assert!(c.contains("line [19.400, 19.400, 19.400]"), "{c}");
        assert!(c.contains("x-axis \"decode step\" 1 --> 3"), "{c}");
        let none = DecodeSeries {
            baseline_ms: None,
            ..s
        };
        assert!(decode_steps(&none).is_none());
    }
}
