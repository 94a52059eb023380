//! `--plot FILE.svg` / `FILE.png`: latency by percentile, one line per test (or per file for `compare`),
//! drawn with plotters' SVG or bitmap backend.
//!
//! The percentile axis is the usual HdrHistogram one: x = log10(1 / (1 - p)), so 90%, 99%, 99.9% ...
//! are evenly spaced, from 0% to 99.999%; latency (ms) is on a log scale as well. Text goes through
//! plotters' ab_glyph fonts: a PNG uses a TrueType font of the system; an SVG only needs text widths for
//! its layout (the viewer draws `<text>`), which a built-in layout-only font gives when the system has none.

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
    #[error("could not draw the chart: {0}")]
    Font(#[from] fonts::NoFont),
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

type Lines = Vec<(String, Vec<(f64, f64)>)>;

fn lines_of(series: &[Series<'_>]) -> Result<Lines, PlotError> {
    let lines: Lines = series
        .iter()
        .filter(|s| !s.hist.is_empty())
        .map(|s| (s.label.clone(), points(s.hist)))
        .collect();
    if lines.is_empty() {
        return Err(PlotError::Empty);
    }
    Ok(lines)
}

/// Draws the chart on any plotters backend.
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    lines: Lines,
) -> Result<(), PlotError> {
    // Latency spans orders of magnitude between p50 and p99.999, so the latency axis is logarithmic too.
    let ys = || lines.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y));
    let top = ys().fold(0.0f64, f64::max).max(0.001) * 1.3;
    let bottom = ys().fold(f64::MAX, f64::min).max(0.0001) / 1.3;
    let fail = |e: &dyn std::fmt::Display| PlotError::Draw(e.to_string());
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 26))
        .margin(16)
        .margin_right(48)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..NINES, (bottom..top).log_scale())
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_labels(NINES as usize + 1)
        .x_label_formatter(&|x| percentile_label(*x))
        .y_label_formatter(&|y| ms_label(*y))
        .x_desc("percentile")
        .y_desc("latency (ms)")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|e| fail(&e))?;
    for (i, (label, pts)) in lines.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|e| fail(&e))?
            .label(label)
            // A filled box, not a line, so the chart holds exactly one line element per series.
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

/// Draws the chart as SVG text.
pub fn render(title: &str, series: &[Series<'_>]) -> Result<String, PlotError> {
    let lines = lines_of(series)?;
    fonts::ensure(false)?;
    let mut svg = String::new();
    draw(
        SVGBackend::with_string(&mut svg, (960, 600)).into_drawing_area(),
        title,
        lines,
    )?;
    Ok(svg)
}

/// A latency axis label: at most four significant digits, no float noise ("0.3", not
/// "0.30000000000000001").
fn ms_label(y: f64) -> String {
    let decimals = if y >= 100.0 {
        0
    } else if y >= 1.0 {
        2
    } else {
        (-(y.log10().floor()) as usize + 2).min(6)
    };
    let s = format!("{y:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Draws a test's seconds as SVG text: requests per second (left axis) and p99 in ms (right axis)
/// against seconds from the test's first send. `seconds` holds (second, rps, p99 ms).
pub fn render_seconds(title: &str, seconds: &[(f64, f64, f64)]) -> Result<String, PlotError> {
    if seconds.is_empty() {
        return Err(PlotError::Empty);
    }
    fonts::ensure(false)?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 420)).into_drawing_area();
        let fail = |e: &dyn std::fmt::Display| PlotError::Draw(e.to_string());
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let right = seconds.iter().map(|s| s.0).fold(0.0f64, f64::max) + 1.0;
        let top_rps = seconds.iter().map(|s| s.1).fold(0.0f64, f64::max).max(1.0) * 1.15;
        let top_p99 = seconds
            .iter()
            .map(|s| s.2)
            .fold(0.0f64, f64::max)
            .max(0.001)
            * 1.15;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .right_y_label_area_size(70)
            .build_cartesian_2d(0f64..right, 0f64..top_rps)
            .map_err(|e| fail(&e))?
            .set_secondary_coord(0f64..right, 0f64..top_p99);
        chart
            .configure_mesh()
            .x_desc("seconds from the first send")
            .y_desc("requests per second")
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(|e| fail(&e))?;
        chart
            .configure_secondary_axes()
            .y_desc("p99 (ms)")
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(|e| fail(&e))?;
        // Each second's value is drawn at the second's middle.
        let rps_color = RGBColor(31, 119, 180);
        let p99_color = RGBColor(214, 39, 40);
        chart
            .draw_series(LineSeries::new(
                seconds.iter().map(|s| (s.0 + 0.5, s.1)),
                rps_color.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?
            .label("requests per second")
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 18, y + 5)], rps_color.filled())
            });
        // Markers too: a test of one second has one point.
        chart
            .draw_series(
                seconds
                    .iter()
                    .map(|s| Circle::new((s.0 + 0.5, s.1), 3, rps_color.filled())),
            )
            .map_err(|e| fail(&e))?;
        chart
            .draw_secondary_series(
                seconds
                    .iter()
                    .map(|s| Circle::new((s.0 + 0.5, s.2), 3, p99_color.filled())),
            )
            .map_err(|e| fail(&e))?;
        chart
            .draw_secondary_series(LineSeries::new(
                seconds.iter().map(|s| (s.0 + 0.5, s.2)),
                p99_color.stroke_width(2),
            ))
            .map_err(|e| fail(&e))?
            .label("p99 (ms, right axis)")
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 18, y + 5)], p99_color.filled())
            });
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}

/// True when `path` names a PNG file.
fn is_png(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("png"))
}

/// Draws the chart into `path`: PNG for a `.png` name, SVG otherwise.
pub fn write(path: &std::path::Path, title: &str, series: &[Series<'_>]) -> Result<(), PlotError> {
    if is_png(path) {
        let lines = lines_of(series)?;
        fonts::ensure(true)?;
        return draw(
            BitMapBackend::new(path, (960, 600)).into_drawing_area(),
            title,
            lines,
        )
        .map_err(|e| png_error(path, e));
    }
    let svg = render(title, series)?;
    std::fs::write(path, svg).map_err(|e| PlotError::Write {
        path: path.display().to_string(),
        reason: crate::os_error::describe(e),
    })
}

/// A drawing failure of a PNG is a failure to write its file (the bitmap backend writes as it presents).
fn png_error(path: &std::path::Path, e: PlotError) -> PlotError {
    match e {
        PlotError::Draw(reason) => PlotError::Write {
            path: path.display().to_string(),
            reason,
        },
        other => other,
    }
}

/// Fonts for plotters' text. The SVG backend writes text as `<text>` for the viewer to render and only
/// needs widths for the layout; a PNG needs real glyphs, taken from a TrueType font of the system.
mod fonts {
    use plotters::style::FontStyle;
    use std::sync::OnceLock;

    /// Where Debian, Ubuntu, Fedora and Arch put common sans-serif fonts.
    const CANDIDATES: [&str; 6] = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
        "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
        "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    ];

    /// Which font is registered: a system font (glyphs) or the layout-only one.
    static REGISTERED: OnceLock<bool> = OnceLock::new();

    /// Registers the first system font that parses; true when one did.
    fn register_system_font() -> bool {
        CANDIDATES.iter().any(|p| {
            let Ok(bytes) = std::fs::read(p) else {
                return false;
            };
            // plotters keeps fonts for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
        })
    }

    /// A PNG was asked for and the system has no TrueType font to draw its text with.
    #[derive(Debug, thiserror::Error)]
    #[error(
        "a PNG chart needs a TrueType font and none was found (looked for {0} and others); install fonts-dejavu-core or name the file .svg"
    )]
    pub struct NoFont(&'static str);

    /// Registers the fonts once. `glyphs`: the caller draws pixels (PNG) and needs a system font.
    pub(super) fn ensure(glyphs: bool) -> Result<(), NoFont> {
        let has_glyphs = *REGISTERED.get_or_init(|| {
            if register_system_font() {
                return true;
            }
            let bytes: &'static [u8] = Box::leak(layout_only_font().into_boxed_slice());
            let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, bytes);
            false
        });
        if glyphs && !has_glyphs {
            return Err(NoFont(CANDIDATES[0]));
        }
        Ok(())
    }

    /// A TrueType font with one empty glyph 0.6 em wide: enough for plotters to lay out SVG text,
    /// whose glyphs the SVG viewer supplies. Tables: head, hhea, hmtx, maxp (all big-endian).
    pub(super) fn layout_only_font() -> Vec<u8> {
        let mut head = Vec::new();
        head.extend(1u16.to_be_bytes()); // majorVersion
        head.extend(0u16.to_be_bytes()); // minorVersion
        head.extend(0x0001_0000u32.to_be_bytes()); // fontRevision
        head.extend(0u32.to_be_bytes()); // checksumAdjustment
        head.extend(0x5F0F_3CF5u32.to_be_bytes()); // magicNumber
        head.extend(0u16.to_be_bytes()); // flags
        head.extend(1000u16.to_be_bytes()); // unitsPerEm
        head.extend([0u8; 16]); // created, modified
        for v in [0i16, -200, 600, 800] {
            head.extend(v.to_be_bytes()); // xMin, yMin, xMax, yMax
        }
        head.extend(0u16.to_be_bytes()); // macStyle
        head.extend(8u16.to_be_bytes()); // lowestRecPPEM
        head.extend(2i16.to_be_bytes()); // fontDirectionHint
        head.extend(0i16.to_be_bytes()); // indexToLocFormat
        head.extend(0i16.to_be_bytes()); // glyphDataFormat
        let mut hhea = Vec::new();
        hhea.extend(0x0001_0000u32.to_be_bytes()); // version
        for v in [800i16, -200, 0] {
            hhea.extend(v.to_be_bytes()); // ascender, descender, lineGap
        }
        hhea.extend(600u16.to_be_bytes()); // advanceWidthMax
        for v in [0i16, 0, 600, 1, 0, 0, 0, 0, 0, 0, 0] {
            // minLeftSideBearing, minRightSideBearing, xMaxExtent, caretSlopeRise, caretSlopeRun,
            // caretOffset, 4 reserved, metricDataFormat
            hhea.extend(v.to_be_bytes());
        }
        hhea.extend(1u16.to_be_bytes()); // numberOfHMetrics
        let mut hmtx = Vec::new();
        hmtx.extend(600u16.to_be_bytes()); // advanceWidth
        hmtx.extend(0i16.to_be_bytes()); // lsb
        let mut maxp = Vec::new();
        maxp.extend(0x0000_5000u32.to_be_bytes()); // version 0.5
        maxp.extend(1u16.to_be_bytes()); // numGlyphs
        let tables: [(&[u8; 4], Vec<u8>); 4] = [
            (b"head", head),
            (b"hhea", hhea),
            (b"hmtx", hmtx),
            (b"maxp", maxp),
        ];
        let mut font = Vec::new();
        font.extend(0x0001_0000u32.to_be_bytes()); // sfntVersion
        font.extend((tables.len() as u16).to_be_bytes());
        font.extend(64u16.to_be_bytes()); // searchRange
        font.extend(2u16.to_be_bytes()); // entrySelector
        font.extend(0u16.to_be_bytes()); // rangeShift
        let mut offset = 12 + 16 * tables.len();
        let mut body = Vec::new();
        for (tag, data) in &tables {
            font.extend(*tag);
            font.extend(0u32.to_be_bytes()); // checksum (not checked by readers)
            font.extend((offset as u32).to_be_bytes());
            font.extend((data.len() as u32).to_be_bytes());
            body.extend(data);
            while body.len() % 4 != 0 {
                body.push(0);
            }
            offset = 12 + 16 * tables.len() + body.len();
        }
        font.extend(body);
        font
    }
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

/// The knee chart's data: its percentiles, one line per percentile, and the x and y bounds.
struct Knee {
    ps: Vec<f64>,
    lines: Vec<KneeLine>,
    right: f64,
    bottom: f64,
    top: f64,
}

/// Per percentile: (offered, latency ms, passed) per step.
type KneeLine = (f64, Vec<(f64, f64, bool)>);

fn knee_of(steps: &[KneePoint<'_>], objectives: &[(f64, f64)]) -> Result<Knee, PlotError> {
    fonts::ensure(false)?;
    let mut steps: Vec<&KneePoint<'_>> = steps.iter().filter(|s| !s.hist.is_empty()).collect();
    if steps.is_empty() {
        return Err(PlotError::Empty);
    }
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let ps = knee_percentiles(objectives);
    let lines: Vec<KneeLine> = ps
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
    Ok(Knee {
        ps,
        lines,
        right,
        bottom,
        top,
    })
}

/// Draws the knee chart as SVG text: latency percentiles (log scale) against offered load, one line per
/// percentile through the steps in rate order (failed steps marked with a cross), and each objective
/// (percentile, ms) as a dashed horizontal line in its percentile's colour.
pub fn render_knee(
    title: &str,
    steps: &[KneePoint<'_>],
    objectives: &[(f64, f64)],
) -> Result<String, PlotError> {
    fonts::ensure(false)?;
    let knee = knee_of(steps, objectives)?;
    let mut svg = String::new();
    draw_knee(
        SVGBackend::with_string(&mut svg, (960, 600)).into_drawing_area(),
        title,
        &knee,
        objectives,
    )?;
    Ok(svg)
}

fn draw_knee<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    knee: &Knee,
    objectives: &[(f64, f64)],
) -> Result<(), PlotError> {
    let draw = |e: &dyn std::fmt::Display| PlotError::Draw(e.to_string());
    let Knee {
        ps,
        lines,
        right,
        bottom,
        top,
    } = knee;
    let (right, bottom, top) = (*right, *bottom, *top);
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
        .y_label_formatter(&|y| ms_label(*y))
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
    for (p, pts) in lines {
        let color = color_of(*p);
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|&(x, y, _)| (x, y)),
                color.stroke_width(2),
            ))
            .map_err(|e| draw(&e))?
            .label(pct_label(*p))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], color.filled()));
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
            .legend(move |(x, y)| Rectangle::new([(x, y - 1), (x + 18, y + 1)], color.filled()));
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
    Ok(())
}

/// Draws the knee chart into `path`.
pub fn write_knee(
    path: &std::path::Path,
    title: &str,
    steps: &[KneePoint<'_>],
    objectives: &[(f64, f64)],
) -> Result<(), PlotError> {
    if is_png(path) {
        fonts::ensure(true)?;
        let knee = knee_of(steps, objectives)?;
        return draw_knee(
            BitMapBackend::new(path, (960, 600)).into_drawing_area(),
            title,
            &knee,
            objectives,
        )
        .map_err(|e| png_error(path, e));
    }
    let svg = render_knee(title, steps, objectives)?;
    std::fs::write(path, svg).map_err(|e| PlotError::Write {
        path: path.display().to_string(),
        reason: crate::os_error::describe(e),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn latency_labels_have_no_float_noise() {
        assert_eq!(super::ms_label(0.30000000000000004), "0.3");
        assert_eq!(super::ms_label(0.04), "0.04");
        assert_eq!(super::ms_label(2.5), "2.5");
        assert_eq!(super::ms_label(250.0), "250");
        assert_eq!(super::ms_label(0.0005), "0.0005");
    }

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
    fn the_layout_only_font_lays_out_svg_text() {
        // Registered directly: whichever font this machine has, the layout-only one must parse.
        let bytes: &'static [u8] = Box::leak(fonts::layout_only_font().into_boxed_slice());
        assert!(
            plotters::style::register_font("ringbench-layout", FontStyle::Normal, bytes).is_ok()
        );
        let font = FontDesc::new(
            FontFamily::Name("ringbench-layout"),
            10.0,
            FontStyle::Normal,
        );
        let (w, _) = font.box_size("abcd").unwrap();
        assert_eq!(w, 24, "4 characters of 0.6 em at 10 px");
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
