//! `--plot FILE.svg`: latency by percentile, one line per test (or per file for `compare`), drawn with
//! plotters' SVG backend.
//!
//! The percentile axis is the usual HdrHistogram one: x = log10(1 / (1 - p)), so 90%, 99%, 99.9% ...
//! are evenly spaced, from 0% to 99.999%; latency (ms) is on a log scale as well. plotters is built without font features: the SVG backend
//! writes text as `<text>` elements for the viewer to render, so no font library is needed.

use hdrhistogram::Histogram;
use plotters::prelude::*;

/// The highest percentile drawn: 99.999%, five nines.
pub const NINES: f64 = 5.0;
/// Points per line.
const STEPS: usize = 500;

/// Why a chart could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("could not draw the chart: {0}")]
    Draw(String),
    #[error("could not write the chart {path}: {reason}")]
    Write { path: String, reason: String },
    #[error("nothing to plot: no latencies were recorded")]
    Empty,
}

/// One line of the chart.
pub struct Series<'a> {
    pub label: String,
    pub hist: &'a Histogram<u64>,
}

/// The percentile label of a position on the axis (x = log10(1 / (1 - p))).
pub fn percentile_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let nines = x.round() as i32;
    if (x - x.round()).abs() < 1e-9 {
        format!("{p:.*}%", (nines - 2).max(0) as usize)
    } else if p < 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// The points of one line: (axis position, latency in ms).
pub fn points(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    (0..=STEPS)
        .map(|i| {
            let x = NINES * i as f64 / STEPS as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64 / 1e6)
        })
        .collect()
}

/// Draws the chart as SVG text.
pub fn render(title: &str, series: &[Series<'_>]) -> Result<String, PlotError> {
    let lines: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .filter(|s| !s.hist.is_empty())
        .map(|s| (s.label.clone(), points(s.hist)))
        .collect();
    if lines.is_empty() {
        return Err(PlotError::Empty);
    }
    // Latency spans orders of magnitude between p50 and p99.999, so the latency axis is logarithmic too.
    let ys = || lines.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y));
    let top = ys().fold(0.0f64, f64::max).max(0.001) * 1.3;
    let bottom = ys().fold(f64::MAX, f64::min).max(0.0001) / 1.3;
    let draw = |e: &dyn std::fmt::Display| PlotError::Draw(e.to_string());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 26))
            .margin(16)
            .margin_right(48)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..NINES, (bottom..top).log_scale())
            .map_err(|e| draw(&e))?;
        chart
            .configure_mesh()
            .x_labels(NINES as usize + 1)
            .x_label_formatter(&|x| percentile_label(*x))
            .y_label_formatter(&|y| format!("{y}"))
            .x_desc("percentile")
            .y_desc("latency (ms)")
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(|e| draw(&e))?;
        for (i, (label, pts)) in lines.into_iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(|e| draw(&e))?
                .label(label)
                // A filled box, not a line, so the chart holds exactly one line element per series.
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 18, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(|e| draw(&e))?;
        root.present().map_err(|e| draw(&e))?;
    }
    Ok(svg)
}

/// Draws the chart into `path`.
pub fn write(path: &std::path::Path, title: &str, series: &[Series<'_>]) -> Result<(), PlotError> {
    let svg = render(title, series)?;
    std::fs::write(path, svg).map_err(|e| PlotError::Write {
        path: path.display().to_string(),
        reason: crate::net::io_reason(e),
    })
}

/// One step of a capacity search, for the knee chart.
pub struct KneePoint<'a> {
    /// The step's offered rate (requests per second).
    pub offered: f64,
    pub pass: bool,
    pub hist: &'a Histogram<u64>,
}

/// The percentiles the knee chart draws: p50, p99, p99.9 and every objective's.
fn knee_percentiles(objectives: &[(f64, f64)]) -> Vec<f64> {
    let mut ps = vec![50.0, 99.0, 99.9];
    for (p, _) in objectives {
        if !ps.contains(p) {
            ps.push(*p);
        }
    }
    ps.sort_by(f64::total_cmp);
    ps
}

fn pct_label(p: f64) -> String {
    let s = format!("{p:.4}");
    format!("p{}", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Draws the knee chart as SVG text: latency percentiles (log scale) against offered load, one line per
/// percentile through the steps in rate order (failed steps marked with a cross), and each objective
/// (percentile, ms) as a dashed horizontal line in its percentile's colour.
pub fn render_knee(
    title: &str,
    steps: &[KneePoint<'_>],
    objectives: &[(f64, f64)],
) -> Result<String, PlotError> {
    let mut steps: Vec<&KneePoint<'_>> = steps.iter().filter(|s| !s.hist.is_empty()).collect();
    if steps.is_empty() {
        return Err(PlotError::Empty);
    }
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let ps = knee_percentiles(objectives);
    // Per percentile: (offered, latency ms, passed) per step.
    type Line = (f64, Vec<(f64, f64, bool)>);
    let lines: Vec<Line> = ps
        .iter()
        .map(|&p| {
            let pts = steps
                .iter()
                .map(|s| {
                    let ms = s.hist.value_at_quantile(p / 100.0) as f64 / 1e6;
                    (s.offered, ms.max(0.0001), s.pass)
                })
                .collect();
            (p, pts)
        })
        .collect();
    let ys = || {
        lines
            .iter()
            .flat_map(|(_, p)| p.iter().map(|&(_, y, _)| y))
            .chain(objectives.iter().map(|&(_, ms)| ms))
    };
    let top = ys().fold(0.0f64, f64::max).max(0.001) * 1.5;
    let bottom = ys().fold(f64::MAX, f64::min).max(0.0001) / 1.5;
    let right = steps.iter().map(|s| s.offered).fold(0.0, f64::max) * 1.05;
    let draw = |e: &dyn std::fmt::Display| PlotError::Draw(e.to_string());
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 26))
            .margin(16)
            .margin_right(48)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..right, (bottom..top).log_scale())
            .map_err(|e| draw(&e))?;
        chart
            .configure_mesh()
            .x_label_formatter(&|x| {
                if right >= 10_000.0 {
                    format!("{:.0}k", x / 1000.0)
                } else {
                    format!("{x:.0}")
                }
            })
            .y_label_formatter(&|y| format!("{y}"))
            .x_desc("offered load (requests per second)")
            .y_desc("latency (ms)")
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .draw()
            .map_err(|e| draw(&e))?;
        // Dark, distinct colours (the default palette's yellow is hard to read on white).
        const COLORS: [RGBColor; 6] = [
            RGBColor(31, 119, 180),
            RGBColor(214, 39, 40),
            RGBColor(44, 140, 44),
            RGBColor(148, 103, 189),
            RGBColor(140, 86, 75),
            RGBColor(0, 0, 0),
        ];
        let color_of = |p: f64| {
            let i = ps.iter().position(|&q| q == p).unwrap_or(0);
            COLORS[i % COLORS.len()].to_rgba()
        };
        for (p, pts) in &lines {
            let color = color_of(*p);
            chart
                .draw_series(LineSeries::new(
                    pts.iter().map(|&(x, y, _)| (x, y)),
                    color.stroke_width(2),
                ))
                .map_err(|e| draw(&e))?
                .label(pct_label(*p))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 18, y + 5)], color.filled())
                });
            chart
                .draw_series(pts.iter().map(|&(x, y, pass)| {
                    if pass {
                        Circle::new((x, y), 3, color.filled()).into_dyn()
                    } else {
                        Cross::new((x, y), 5, color.stroke_width(2)).into_dyn()
                    }
                }))
                .map_err(|e| draw(&e))?;
        }
        for &(p, ms) in objectives {
            let color = color_of(p);
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, ms), (right, ms)],
                    10,
                    6,
                    color.stroke_width(2),
                ))
                .map_err(|e| draw(&e))?
                .label(format!("objective {} <= {ms} ms", pct_label(p)))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 1), (x + 18, y + 1)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(|e| draw(&e))?;
        root.present().map_err(|e| draw(&e))?;
    }
    Ok(svg)
}

/// Draws the knee chart into `path`.
pub fn write_knee(
    path: &std::path::Path,
    title: &str,
    steps: &[KneePoint<'_>],
    objectives: &[(f64, f64)],
) -> Result<(), PlotError> {
    let svg = render_knee(title, steps, objectives)?;
    std::fs::write(path, svg).map_err(|e| PlotError::Write {
        path: path.display().to_string(),
        reason: crate::net::io_reason(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_histogram;

    #[test]
    fn axis_labels_are_percentiles() {
        assert_eq!(percentile_label(0.0), "0%");
        assert_eq!(percentile_label(1.0), "90%");
        assert_eq!(percentile_label(2.0), "99%");
        assert_eq!(percentile_label(3.0), "99.9%");
        assert_eq!(percentile_label(5.0), "99.999%");
    }

    #[test]
    fn lines_rise_with_the_percentile() {
        let mut h = new_histogram(3);
        for v in 1..=100_000u64 {
            h.record(v * 100).unwrap();
        }
        let p = points(&h);
        assert_eq!(p.len(), STEPS + 1);
        assert!(p.windows(2).all(|w| w[1].1 >= w[0].1));
        assert!((p[STEPS / 5].1 - 9.0).abs() < 0.05, "{:?}", p[STEPS / 5]);
    }

    #[test]
    fn empty_runs_are_an_error() {
        let h = new_histogram(3);
        let s = [Series {
            label: "x".into(),
            hist: &h,
        }];
        assert!(matches!(render("t", &s), Err(PlotError::Empty)));
    }
}
