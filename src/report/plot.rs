//! `--plot FILE.svg` / `FILE.png`: latency by percentile, one line per test (or per file for `compare`),
//! drawn with plotters' SVG or bitmap backend.
//!
//! The percentile axis is the usual HdrHistogram one: x = log10(1 / (1 - p)), so 90%, 99%, 99.9% ...
//! are evenly spaced, from 0% to 99.999%; latency (ms) is on a log scale as well, labelled at every
//! decade. Text is DejaVu Sans, embedded (`assets/fonts`, its licence beside it): an SVG takes its widths
//! for the layout, a PNG its glyphs, drawn by `glyphs::Glyphs`. A title may have a second line (after a
//! `\n`): the run's target and flags. Legends sit beside the plot, never over it.

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

/// One line of the chart: its points, computed once from a histogram (which need not be kept: a file
/// tool draws many without holding them).
pub struct Series {
    pub label: String,
    /// (axis position, latency in ms); none for an empty histogram, which is not drawn.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn of(label: String, h: &Histogram<u64>) -> Series {
        let points = if h.is_empty() { Vec::new() } else { points(h) };
        Series { label, points }
    }
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

fn lines_of(series: &[Series]) -> Result<Lines, PlotError> {
    let lines: Lines = series
        .iter()
        .filter(|s| !s.points.is_empty())
        .map(|s| (s.label.clone(), s.points.clone()))
        .collect();
    if lines.is_empty() {
        return Err(PlotError::Empty);
    }
    Ok(lines)
}

/// Dark, distinct line colours, readable on white (plotters' palette has a faint yellow): one per line,
/// in order.
pub const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 140, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(0, 0, 0),
    RGBColor(0, 128, 128),
    RGBColor(200, 82, 0),
];

/// The `i`th line's colour.
pub fn color(i: usize) -> RGBAColor {
    COLORS[i % COLORS.len()].to_rgba()
}

/// How a legend entry shows its line: a filled box (a line of points) or a thin bar (a threshold).
#[derive(Clone, Copy)]
enum Mark {
    Box,
    Bar,
}

type Area<DB> = DrawingArea<DB, plotters::coord::Shift>;

fn draw_error(e: &dyn std::fmt::Display) -> PlotError {
    PlotError::Draw(e.to_string())
}

/// The axes' lowest and highest latency: whole decades around `lo..hi` (ms), a little wider, so that every
/// decade the data crosses, and the ones below and above it, are labelled.
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let lo = lo.max(1e-4);
    let hi = hi.max(lo * 1.01);
    let bottom = 10f64.powf(lo.log10().floor());
    let top = 10f64.powf(hi.log10().ceil());
    // A little past the decades: the axis' key points are found by repeated multiplication.
    (bottom / 1.05, top * 1.05)
}

/// Fills the background, writes the title (and its second line, if any) and splits off a legend column
/// wide enough for `labels`. Returns the plot's area and the legend's.
fn frame<DB: DrawingBackend>(
    root: Area<DB>,
    title: &str,
    labels: &[&str],
) -> Result<(Area<DB>, Area<DB>), PlotError> {
    root.fill(&WHITE).map_err(|e| draw_error(&e))?;
    let (head, sub) = title.split_once('\n').unwrap_or((title, ""));
    let mut area = root
        .titled(head, ("sans-serif", 24))
        .map_err(|e| draw_error(&e))?;
    if !sub.is_empty() {
        area = area
            .titled(
                sub,
                ("sans-serif", 15).into_font().color(&RGBColor(60, 60, 60)),
            )
            .map_err(|e| draw_error(&e))?;
    }
    let font = TextStyle::from(("sans-serif", 15).into_font());
    let widest = labels
        .iter()
        .map(|l| area.estimate_text_size(l, &font).map_or(0, |(w, _)| w))
        .max()
        .unwrap_or(0);
    let (w, _) = area.dim_in_pixel();
    let legend_w = (widest + 48).min(w / 3);
    let (plot, legend) = area.split_horizontally(w - legend_w);
    Ok((plot, legend))
}

/// Draws the legend's entries from the top of its column.
fn legend<DB: DrawingBackend>(
    area: &Area<DB>,
    entries: &[(String, RGBAColor, Mark)],
) -> Result<(), PlotError> {
    let style = TextStyle::from(("sans-serif", 15).into_font()).pos(
        plotters_backend::text_anchor::Pos::new(
            plotters_backend::text_anchor::HPos::Left,
            plotters_backend::text_anchor::VPos::Center,
        ),
    );
    for (i, (label, color, mark)) in entries.iter().enumerate() {
        let y = 40 + 24 * i as i32;
        let (top, bottom) = match mark {
            Mark::Box => (y - 5, y + 5),
            Mark::Bar => (y - 1, y + 1),
        };
        area.draw(&Rectangle::new([(6, top), (24, bottom)], color.filled()))
            .map_err(|e| draw_error(&e))?;
        area.draw(&Text::new(label.clone(), (32, y), style.clone()))
            .map_err(|e| draw_error(&e))?;
    }
    Ok(())
}

/// Draws the chart on any plotters backend.
fn draw<DB: DrawingBackend>(root: Area<DB>, title: &str, lines: Lines) -> Result<(), PlotError> {
    // Latency spans orders of magnitude between p50 and p99.999, so the latency axis is logarithmic too.
    let ys = || lines.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y));
    let (bottom, top) = decades(ys().fold(f64::MAX, f64::min), ys().fold(0.0f64, f64::max));
    let labels: Vec<&str> = lines.iter().map(|(l, _)| l.as_str()).collect();
    let (plot, side) = frame(root, title, &labels)?;
    let mut chart = ChartBuilder::on(&plot)
        .margin(16)
        .margin_right(36)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..NINES, (bottom..top).log_scale())
        .map_err(|e| draw_error(&e))?;
    chart
        .configure_mesh()
        .x_labels(NINES as usize + 1)
        .y_labels(12)
        .x_label_formatter(&|x| percentile_label(*x))
        .y_label_formatter(&|y| ms_label(*y))
        .x_desc("percentile")
        .y_desc("latency (ms)")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|e| draw_error(&e))?;
    let mut entries = Vec::new();
    for (i, (label, pts)) in lines.into_iter().enumerate() {
        let color = color(i);
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|e| draw_error(&e))?;
        entries.push((label, color, Mark::Box));
    }
    legend(&side, &entries)?;
    plot.present().map_err(|e| draw_error(&e))?;
    Ok(())
}

/// Draws the chart as SVG text.
pub fn render(title: &str, series: &[Series]) -> Result<String, PlotError> {
    let lines = lines_of(series)?;
    fonts::ensure();
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
    fonts::ensure();
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
pub fn write(path: &std::path::Path, title: &str, series: &[Series]) -> Result<(), PlotError> {
    if is_png(path) {
        let lines = lines_of(series)?;
        fonts::ensure();
        return draw(
            glyphs::Glyphs(BitMapBackend::new(path, (960, 600))).into_drawing_area(),
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

/// The charts' font: DejaVu Sans, embedded, so every chart's text looks the same on every machine and a
/// PNG needs no font installed. An SVG takes its text widths for the layout (the viewer draws the text).
mod fonts {
    use plotters::style::FontStyle;
    use std::sync::Once;

    /// DejaVu Sans 2.37 (Bitstream Vera licence, in assets/fonts/LICENSE).
    pub(super) const DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

    static REGISTERED: Once = Once::new();

    /// Registers the font as plotters' "sans-serif", once.
    pub(super) fn ensure() {
        REGISTERED.call_once(|| {
            // The embedded file is a valid TrueType font (the tests parse it).
            let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, DEJAVU_SANS);
        });
    }
}

/// A bitmap backend whose text is laid out glyph by glyph at the font's own positions. plotters' ab_glyph
/// text drawing places each glyph's outline at the pen position without its left side bearing, which
/// splits words in a PNG ("SE T", "ob jective"); this draws each glyph where the font puts it.
mod glyphs {
    use ab_glyph::{Font, FontRef, ScaleFont};
    use plotters::prelude::*;
    use plotters_backend::text_anchor::{HPos, VPos};
    use plotters_backend::{
        BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
    };

    pub struct Glyphs<B>(pub B);

    type Result<B> = std::result::Result<(), DrawingErrorKind<<B as DrawingBackend>::ErrorType>>;

    impl<B: DrawingBackend> DrawingBackend for Glyphs<B> {
        type ErrorType = B::ErrorType;

        fn get_size(&self) -> (u32, u32) {
            self.0.get_size()
        }
        fn ensure_prepared(&mut self) -> Result<B> {
            self.0.ensure_prepared()
        }
        fn present(&mut self) -> Result<B> {
            self.0.present()
        }
        fn draw_pixel(&mut self, p: BackendCoord, c: BackendColor) -> Result<B> {
            self.0.draw_pixel(p, c)
        }
        fn draw_line<S: BackendStyle>(
            &mut self,
            a: BackendCoord,
            b: BackendCoord,
            s: &S,
        ) -> Result<B> {
            self.0.draw_line(a, b, s)
        }
        fn draw_rect<S: BackendStyle>(
            &mut self,
            a: BackendCoord,
            b: BackendCoord,
            s: &S,
            fill: bool,
        ) -> Result<B> {
            self.0.draw_rect(a, b, s, fill)
        }
        fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
            &mut self,
            path: I,
            s: &S,
        ) -> Result<B> {
            self.0.draw_path(path, s)
        }
        fn draw_circle<S: BackendStyle>(
            &mut self,
            c: BackendCoord,
            r: u32,
            s: &S,
            fill: bool,
        ) -> Result<B> {
            self.0.draw_circle(c, r, s, fill)
        }
        fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
            &mut self,
            vert: I,
            s: &S,
        ) -> Result<B> {
            self.0.fill_polygon(vert, s)
        }
        fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Result<B> {
            self.0.blit_bitmap(pos, size, src)
        }

        /// As plotters' own (anchor, rotation, the layout box of its text), but each glyph's outline is
        /// drawn at its pen position plus its bearing.
        fn draw_text<S: BackendTextStyle>(
            &mut self,
            text: &str,
            style: &S,
            pos: BackendCoord,
        ) -> Result<B> {
            let color = style.color();
            if color.alpha == 0.0 {
                return Ok(());
            }
            let font = FontRef::try_from_slice(super::fonts::DEJAVU_SANS)
                .expect("the embedded font parses");
            let size = style.size() as f32;
            let scaled = font.as_scaled(size);
            let ((min_x, min_y), (max_x, max_y)) = style
                .layout_box(text)
                .map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
            let (width, height) = (max_x - min_x, max_y - min_y);
            let dx = match style.anchor().h_pos {
                HPos::Left => 0,
                HPos::Right => -width,
                HPos::Center => -width / 2,
            };
            let dy = match style.anchor().v_pos {
                VPos::Top => 0,
                VPos::Center => -height / 2,
                VPos::Bottom => -height,
            };
            let trans = style.transform();
            let (w, h) = self.get_size();
            // The baseline where plotters puts it (half the size down from the layout box's top).
            let baseline = size / 2.0;
            let mut pen = 0f32;
            let mut prev = None;
            for c in text.chars() {
                let id = scaled.glyph_id(c);
                if let Some(p) = prev {
                    pen += scaled.kern(p, id);
                }
                prev = Some(id);
                let glyph = id.with_scale_and_position(size, ab_glyph::point(pen, baseline));
                pen += scaled.h_advance(id);
                let Some(outline) = scaled.outline_glyph(glyph) else {
                    continue;
                };
                let bounds = outline.px_bounds();
                let mut covered = Vec::new();
                outline.draw(|x, y, a| covered.push((x, y, a)));
                for (x, y, a) in covered {
                    let gx = bounds.min.x as i32 + x as i32;
                    let gy = bounds.min.y as i32 + y as i32;
                    let (x, y) = trans.transform(gx + dx - min_x, gy + dy - min_y);
                    let (x, y) = (pos.0 + x, pos.1 + y);
                    if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 && a > 0.0 {
                        let c = BackendColor {
                            alpha: color.alpha * f64::from(a.min(1.0)),
                            rgb: color.rgb,
                        };
                        self.0.draw_pixel((x, y), c)?;
                    }
                }
            }
            Ok(())
        }
    }
}

/// One step of a capacity search, for the knee chart: its latencies, computed once from its histogram.
pub struct KneePoint {
    /// The step's offered rate (requests per second).
    pub offered: f64,
    pub pass: bool,
    /// Latency (ms) at each of `knee_percentiles(objectives)`; none when the step recorded nothing.
    pub ms: Vec<f64>,
}

impl KneePoint {
    pub fn of(offered: f64, pass: bool, h: &Histogram<u64>, objectives: &[(f64, f64)]) -> Self {
        let ms = match h.is_empty() {
            true => Vec::new(),
            false => knee_percentiles(objectives)
                .iter()
                .map(|p| h.value_at_quantile(p / 100.0) as f64 / 1e6)
                .collect(),
        };
        KneePoint { offered, pass, ms }
    }
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

fn knee_of(steps: &[KneePoint], objectives: &[(f64, f64)]) -> Result<Knee, PlotError> {
    fonts::ensure();
    let mut steps: Vec<&KneePoint> = steps.iter().filter(|s| !s.ms.is_empty()).collect();
    if steps.is_empty() {
        return Err(PlotError::Empty);
    }
    steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    let ps = knee_percentiles(objectives);
    let lines: Vec<KneeLine> = ps
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let pts = steps
                .iter()
                .map(|s| (s.offered, s.ms[i].max(0.0001), s.pass))
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
    let top = ys().fold(0.0f64, f64::max);
    let bottom = ys().fold(f64::MAX, f64::min);
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
/// percentile through the steps in rate order (failed steps marked with a cross), each objective
/// (percentile, ms) as a dashed horizontal line in its percentile's colour, and the search's answer
/// (`capacity`, requests per second) as a vertical line.
pub fn render_knee(
    title: &str,
    steps: &[KneePoint],
    objectives: &[(f64, f64)],
    capacity: Option<f64>,
) -> Result<String, PlotError> {
    fonts::ensure();
    let knee = knee_of(steps, objectives)?;
    let mut svg = String::new();
    draw_knee(
        SVGBackend::with_string(&mut svg, (960, 600)).into_drawing_area(),
        title,
        &knee,
        objectives,
        capacity,
    )?;
    Ok(svg)
}

/// The answer's legend label: "capacity 41000 rps".
fn capacity_label(rps: f64) -> String {
    format!("capacity {rps:.0} rps")
}

fn draw_knee<DB: DrawingBackend>(
    root: Area<DB>,
    title: &str,
    knee: &Knee,
    objectives: &[(f64, f64)],
    capacity: Option<f64>,
) -> Result<(), PlotError> {
    let Knee {
        ps,
        lines,
        right,
        bottom,
        top,
    } = knee;
    let right = capacity.map_or(*right, |c| right.max(c * 1.05));
    let (bottom, top) = decades(*bottom, *top);
    let color_of = |p: f64| color(ps.iter().position(|&q| q == p).unwrap_or(0));
    let mut entries: Vec<(String, RGBAColor, Mark)> = lines
        .iter()
        .map(|(p, _)| (pct_label(*p), color_of(*p), Mark::Box))
        .collect();
    entries.extend(objectives.iter().map(|&(p, ms)| {
        (
            format!("objective {} <= {ms} ms", pct_label(p)),
            color_of(p),
            Mark::Bar,
        )
    }));
    let answer_color = RGBColor(90, 90, 90).to_rgba();
    if let Some(c) = capacity {
        entries.push((capacity_label(c), answer_color, Mark::Bar));
    }
    let labels: Vec<&str> = entries.iter().map(|(l, _, _)| l.as_str()).collect();
    let (plot, side) = frame(root, title, &labels)?;
    let mut chart = ChartBuilder::on(&plot)
        .margin(16)
        .margin_right(36)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..right, (bottom..top).log_scale())
        .map_err(|e| draw_error(&e))?;
    chart
        .configure_mesh()
        .y_labels(12)
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
        .map_err(|e| draw_error(&e))?;
    for (p, pts) in lines {
        let color = color_of(*p);
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|&(x, y, _)| (x, y)),
                color.stroke_width(2),
            ))
            .map_err(|e| draw_error(&e))?;
        chart
            .draw_series(pts.iter().map(|&(x, y, pass)| {
                if pass {
                    Circle::new((x, y), 3, color.filled()).into_dyn()
                } else {
                    Cross::new((x, y), 5, color.stroke_width(2)).into_dyn()
                }
            }))
            .map_err(|e| draw_error(&e))?;
    }
    for &(p, ms) in objectives {
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, ms), (right, ms)],
                10,
                6,
                color_of(p).stroke_width(2),
            ))
            .map_err(|e| draw_error(&e))?;
    }
    if let Some(c) = capacity {
        chart
            .draw_series(DashedLineSeries::new(
                [(c, bottom), (c, top)],
                4,
                4,
                answer_color.stroke_width(2),
            ))
            .map_err(|e| draw_error(&e))?;
    }
    legend(&side, &entries)?;
    plot.present().map_err(|e| draw_error(&e))?;
    Ok(())
}

/// Draws the knee chart into `path`.
pub fn write_knee(
    path: &std::path::Path,
    title: &str,
    steps: &[KneePoint],
    objectives: &[(f64, f64)],
    capacity: Option<f64>,
) -> Result<(), PlotError> {
    if is_png(path) {
        fonts::ensure();
        let knee = knee_of(steps, objectives)?;
        return draw_knee(
            glyphs::Glyphs(BitMapBackend::new(path, (960, 600))).into_drawing_area(),
            title,
            &knee,
            objectives,
            capacity,
        )
        .map_err(|e| png_error(path, e));
    }
    let svg = render_knee(title, steps, objectives, capacity)?;
    std::fs::write(path, svg).map_err(|e| PlotError::Write {
        path: path.display().to_string(),
        reason: crate::os_error::describe(e),
    })
}

#[cfg(test)]
#[path = "plot_tests.rs"]
mod tests;
