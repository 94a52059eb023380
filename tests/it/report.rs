//! The HTML report in a real browser: Debian's chromium, headless, renders the page ringbench wrote
//! (`--report`, and `ringbench report` of several files) from the file alone, and a screenshot shows its
//! charts drawn. The page must fetch nothing: no script, style or image from elsewhere.

use crate::common::bench::Bench;
use crate::common::scratch::Scratch;
use crate::common::*;
use std::process::Command;

/// Chromium as the machine's one browser, headless, with what keeps it off the network.
fn chromium(args: &[&str]) -> std::process::Output {
    let profile = tempdir("chromium-profile");
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .expect("chromium must be installed (scripts/test.sh installs it)");
    let _ = std::fs::remove_dir_all(&profile);
    out
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("ringbench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// Each RGB pixel of a PNG.
fn pixels(path: &str) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::fs::File::open(path).expect("a screenshot"));
    let mut reader = decoder.read_info().expect("a valid PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let step = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        other => panic!("unexpected colour type {other:?}"),
    };
    let px = buf[..info.buffer_size()]
        .chunks(step)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (info.width, info.height, px)
}

#[test]
fn the_html_report_is_self_contained_and_a_browser_draws_it() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let dir = Scratch::new("html-report");
    let (page, a, b) = (dir.path("run.html"), dir.path("a.json"), dir.path("b.json"));
    Bench::on(&s)
        .args([
            "-t", "set,get", "-n", "20000", "-q", "--report", &page, "--json", &a,
        ])
        .ok();
    Bench::on(&s)
        .args([
            "-t",
            "get",
            "--rps",
            "4000",
            "--duration",
            "2.5",
            "-q",
            "--json",
            &b,
        ])
        .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    // Nothing to fetch: the only URL is SVG's namespace, which names and loads nothing.
    let urls: Vec<&str> = html
        .match_indices("http")
        .map(|(i, _)| &html[i..(i + 40).min(html.len())])
        .filter(|u| !u.starts_with("http://www.w3.org/"))
        .collect();
    assert!(urls.is_empty(), "the page refers to {urls:?}");
    for tag in ["<script", "<link", "<img", "@import"] {
        assert!(!html.contains(tag), "the page has {tag}");
    }
    // The browser's own view of the page: both tests, with their charts.
    let url = format!("file://{page}");
    let dom = chromium(&["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&dom.stdout).to_string();
    for want in [
        "<h3>SET</h3>",
        "<h3>GET</h3>",
        "SET: latency by percentile",
        "GET: each second",
        "no failures",
    ] {
        assert!(dom.contains(want), "the rendered page lacks {want}");
    }
    assert!(
        dom.matches("<svg").count() >= 4,
        "charts: {}",
        dom.matches("<svg").count()
    );
    // Two files: the comparison and its verdicts first, then each file.
    let both = dir.path("both.html");
    let out = Bench::new().args(["report", &a, &b, "-o", &both]).output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The screenshot stays in the test output directory, to look at.
    let shot = format!("{}/html-report.png", env!("CARGO_TARGET_TMPDIR"));
    let out = chromium(&[
        "--window-size=1200,5200",
        &format!("--screenshot={shot}"),
        &format!("file://{both}"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (w, h, px) = pixels(&shot);
    assert_eq!((w, h), (1200, 5200));
    // The charts' lines: the latency line's blue (the charts' first colour) and the per-second
    // chart's blue rate line and red p99 line, drawn in many pixels each; and dark text.
    let near = |p: &[u8; 3], c: [u8; 3]| p.iter().zip(c).all(|(&a, b)| a.abs_diff(b) < 40);
    let count = |c: [u8; 3]| px.iter().filter(|p| near(p, c)).count();
    assert!(
        count([31, 119, 180]) > 300,
        "rate line: {}",
        count([31, 119, 180])
    );
    assert!(
        count([214, 39, 40]) > 300,
        "p99 line: {}",
        count([214, 39, 40])
    );
    let dark = px.iter().filter(|p| p.iter().all(|&c| c < 80)).count();
    assert!(dark > 5000, "{dark} dark pixels: no text");
    let page = std::fs::read_to_string(&both).unwrap();
    assert!(page.contains("<h2>Comparison</h2>"), "no comparison");
    assert!(
        page.contains("one run per side: noise cannot be judged"),
        "no verdict"
    );
    // A name that is not .html is a usage error; an output that cannot be written, exit 1... (2 for
    // a bad file given to read).
    let out = Bench::on(&s)
        .args(["-n", "10", "--report", "x.txt"])
        .output();
    assert_eq!(out.status.code(), Some(2));
    let out = Bench::new()
        .args(["report", "/nonexistent.json", "-o", &dir.path("x.html")])
        .output();
    assert_eq!(out.status.code(), Some(2));
}
