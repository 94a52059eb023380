//! Tests of `report/plot.rs`: the charts' labels, scales and files.

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
fn the_embedded_font_lays_out_text_by_its_glyphs() {
    fonts::ensure();
    let font = FontDesc::new(FontFamily::Name("sans-serif"), 20.0, FontStyle::Normal);
    let (w_wide, _) = font.box_size("WWWW").unwrap();
    let (w_thin, _) = font.box_size("iiii").unwrap();
    assert!(
        w_wide > 2 * w_thin,
        "W {w_wide} px, i {w_thin} px: not a real font's widths"
    );
}

/// The columns of `text` drawn at 15 px (as the legend's labels are) that have ink, left to right.
fn inked_columns(text: &str) -> Vec<bool> {
    fonts::ensure();
    let (w, h) = (200u32, 40u32);
    let mut buf = vec![255u8; (w * h * 3) as usize];
    {
        let area = glyphs::Glyphs(BitMapBackend::with_buffer(&mut buf, (w, h))).into_drawing_area();
        let style = TextStyle::from(("sans-serif", 15).into_font());
        area.draw(&Text::new(text.to_string(), (4, 10), style))
            .unwrap();
        area.present().unwrap();
    }
    (0..w as usize)
        .map(|x| (0..h as usize).any(|y| buf[(y * w as usize + x) * 3] < 128))
        .collect()
}

#[test]
fn png_words_are_not_split() {
    // The widest blank gap inside a word: a split word ("SE T") has one far wider than its others.
    for word in ["SET", "objective", "LPUSH", "percentile"] {
        let cols = inked_columns(word);
        let first = cols.iter().position(|&c| c).unwrap();
        let last = cols.iter().rposition(|&c| c).unwrap();
        let mut gap = 0;
        let mut widest = 0;
        for &c in &cols[first..=last] {
            gap = if c { 0 } else { gap + 1 };
            widest = widest.max(gap);
        }
        assert!(widest <= 2, "{word}: a blank gap of {widest} px inside it");
    }
}

/// The SVG's text elements.
fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_string())
        .collect()
}

#[test]
fn every_decade_is_labelled_below_one_ms_too() {
    let mut h = new_histogram(3);
    for v in 20_000..400_000u64 {
        h.record(v).unwrap(); // 0.02 ms to 0.4 ms
    }
    let svg = render("t\nsub", &[Series::of("x".into(), &h)]).unwrap();
    let t = texts(&svg);
    for label in ["0.01", "0.1", "1", "sub"] {
        assert!(t.iter().any(|x| x == label), "no {label} in {t:?}");
    }
    assert_eq!(decades(0.3, 0.9), (0.1 / 1.05, 1.0 * 1.05));
    assert_eq!(decades(2.0, 40.0), (1.0 / 1.05, 100.0 * 1.05));
}

#[test]
fn the_knee_marks_its_answer_beside_the_plot() {
    let mut h = new_histogram(3);
    for v in 100_000..300_000u64 {
        h.record(v).unwrap();
    }
    let objectives = [(99.0, 1.0)];
    let steps = [
        KneePoint::of(1000.0, true, &h, &objectives),
        KneePoint::of(2000.0, false, &h, &objectives),
    ];
    let svg = render_knee("k", &steps, &objectives, Some(1000.0)).unwrap();
    let t = texts(&svg);
    for label in [
        "capacity 1000 rps",
        "objective p99 <= 1 ms",
        "p50",
        "p99",
        "p99.9",
    ] {
        assert!(t.iter().any(|x| x == label), "no {label} in {t:?}");
    }
}

#[test]
fn empty_runs_are_an_error() {
    let h = new_histogram(3);
    let s = [Series::of("x".into(), &h)];
    assert!(matches!(render("t", &s), Err(PlotError::Empty)));
}
