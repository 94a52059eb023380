//! Results people keep: --json against its schema, histograms against the printed figures, merge, compare,
//! --hdr-out interval logs and --plot charts, all from real runs against a real redis-server.

use crate::common::bench::Bench;
use crate::common::scratch::Scratch;
use crate::common::*;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use ringbench::RunFile;
use serde_json::Value;
use std::path::Path;

fn schema() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/ringbench-result.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn assert_valid(doc: &Value) {
    let v = jsonschema::validator_for(&schema()).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
}

fn load(path: &str) -> (Value, RunFile) {
    let text = std::fs::read_to_string(path).unwrap();
    (
        serde_json::from_str(&text).unwrap(),
        RunFile::load(Path::new(path)).unwrap(),
    )
}

/// The numbers of the summary's latency row (avg min p50 p95 p99 max) of the block titled `title`.
fn summary_row(text: &str, title: &str) -> Vec<String> {
    let block = text
        .split(&format!("====== {title} ======"))
        .nth(1)
        .unwrap_or_else(|| panic!("no block {title} in\n{text}"));
    let mut lines = block.lines().skip_while(|l| !l.contains("avg       min"));
    lines.next();
    lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn json_validates_and_its_histogram_matches_the_printed_figures() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("json");
    let json = dir.path("run.json");
    let text = Bench::on(&s)
        .args([
            "-t",
            "set,get",
            "-n",
            "20000",
            "-c",
            "10",
            "--threads",
            "2",
            "--json",
            &json,
        ])
        .ok();
    let (doc, run) = load(&json);
    assert_valid(&doc);
    assert!(!text.contains("\"format\""), "JSON went to stdout");
    assert_eq!(run.tests.len(), 2);
    assert!(!json.is_empty() && !std::fs::read_to_string(&json).unwrap().contains("password"));
    for t in &run.tests {
        let h: Histogram<u64> = t.histogram.decode().unwrap();
        assert_eq!(h.len(), 20000, "{}", t.title);
        assert_eq!(t.requests, 20000);
        assert!(text.contains(&format!(
            "====== {} ======\n  20000 requests completed",
            t.title
        )));
        let row = summary_row(&text, &t.title);
        let ms = |q: f64| format!("{:.3}", h.value_at_quantile(q) as f64 / 1e6);
        assert_eq!(row[2], ms(0.50), "p50 of {}", t.title);
        assert_eq!(row[4], ms(0.99), "p99 of {}", t.title);
        assert_eq!(row[5], format!("{:.3}", h.max() as f64 / 1e6));
        assert_eq!(format!("{:.3}", t.latency_ms.p99), ms(0.99));
        // Every executor's share, and its thread's CPU.
        assert_eq!(t.executors.len(), 2);
        assert_eq!(t.executors.iter().map(|e| e.requests).sum::<u64>(), 20000);
        assert!(t.executors.iter().all(|e| e.cpu_user_s + e.cpu_sys_s > 0.0));
        // The server's side: exactly the requests (ringbench's own INFO commands excluded).
        let sv = t.server.as_ref().expect("server view");
        assert_eq!(sv.commands_processed, 20000, "{}", t.title);
        assert!(sv.cpu_user_s + sv.cpu_sys_s > 0.0);
        let per = sv.cpu_us_per_request.unwrap();
        assert!((per - (sv.cpu_user_s + sv.cpu_sys_s) * 1e6 / 20000.0).abs() < 1e-6);
        assert!(sv.connected_clients_peak >= sv.connected_clients_before);
        assert!(sv.used_memory_after > 0);
    }
    assert_eq!(s.calls("set"), 20000);
    assert_eq!(s.calls("get"), 20000);
    assert!(text.contains("  server side (INFO before and after the test):"));
    assert!(text.contains("    commands processed: 20000, CPU "));
    // The server lines are part of the summary, before the block's closing blank line.
    let block = text.split("====== SET ======").nth(1).unwrap();
    let summary = block.split("Summary:").nth(1).unwrap();
    let summary = summary.split("\n\n").next().unwrap();
    assert!(summary.contains("connected clients: "), "{summary}");
}

#[test]
fn json_to_stdout_is_the_only_output_and_counts_error_kinds() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    s.cli(&["rpush", "alist", "x"]);
    let out = Bench::on(&s)
        .args(["-n", "500", "-c", "5", "--json", "-", "incr", "alist"])
        .output();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let doc: Value = serde_json::from_str(&stdout).expect("stdout is one JSON document");
    assert_valid(&doc);
    let t = &doc["tests"][0];
    assert_eq!(t["errors"]["replies"], 500);
    assert_eq!(t["errors"]["by_kind"]["WRONGTYPE"], 500);
    assert_eq!(t["requests"], 500);
}

#[test]
fn schema_rejects_a_broken_file() {
    let _turn = crate::common::lock::shared();
    let mut doc: Value = serde_json::json!({"format": "ringbench-result", "format_version": 1});
    let v = jsonschema::validator_for(&schema()).unwrap();
    assert!(!v.is_valid(&doc));
    doc["format_version"] = 2.into();
    assert!(!v.is_valid(&doc));
}

#[test]
fn merge_of_two_runs_sums_requests_and_merges_histograms() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("merge");
    let (a, b, m) = (dir.path("a.json"), dir.path("b.json"), dir.path("m.json"));
    Bench::on(&s)
        .args(["-t", "set", "-n", "12000", "-c", "4", "-q", "--json", &a])
        .ok();
    Bench::on(&s)
        .args(["-t", "set", "-n", "8000", "-c", "40", "-q", "--json", &b])
        .ok();
    let out = Bench::new().args(["merge", &a, &b, "--json", &m]).output();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (doc, merged) = load(&m);
    assert_valid(&doc);
    let (_, ra) = load(&a);
    let (_, rb) = load(&b);
    let (ta, tb, tm) = (&ra.tests[0], &rb.tests[0], &merged.tests[0]);
    assert_eq!(tm.requests, 20000);
    assert_eq!(s.calls("set"), 20000);
    let h = tm.histogram.decode().unwrap();
    assert_eq!(h.len(), 20000);
    let (lo, hi) = if ta.latency_ms.p99 <= tb.latency_ms.p99 {
        (ta.latency_ms.p99, tb.latency_ms.p99)
    } else {
        (tb.latency_ms.p99, ta.latency_ms.p99)
    };
    assert!(
        lo <= tm.latency_ms.p99 && tm.latency_ms.p99 <= hi,
        "merged p99 {} not within [{lo}, {hi}]",
        tm.latency_ms.p99
    );
    assert_eq!(merged.config.clients, 44);
    assert_eq!(merged.merged_from.len(), 2);
    assert_eq!(tm.executors.len(), 2);
    // Throughput is over the span that holds both runs (they ran one after the other here).
    let span = tb.end_unix.max(ta.end_unix) - ta.start_unix.min(tb.start_unix);
    assert!((tm.rps - 20000.0 / span).abs() < 1e-6 * tm.rps.max(1.0));
    assert!(text.contains("20000 requests completed"), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("overlap"),
        "runs one after the other should be warned about"
    );
}

#[test]
fn runs_with_the_same_start_at_start_together_and_merge() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("startat");
    let at = ringbench::unix_now() + 2.0;
    let at_s = format!("{at:.3}");
    let spawn = |out: &str| {
        Bench::on(&s)
            .args(["-t", "get", "-n", "10000", "-c", "5", "-q"])
            .args(["--start-at", &at_s, "--json", out])
            .command()
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (dir.path("a.json"), dir.path("b.json"));
    let pa = spawn(&a);
    let pb = spawn(&b);
    for p in [pa, pb] {
        let out = p.wait_with_output().unwrap();
        assert!(out.status.success());
        // The wait is shown on a terminal only: a successful run writes nothing to stderr.
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (_, ra) = load(&a);
    let (_, rb) = load(&b);
    for r in [&ra, &rb] {
        assert!(r.tests[0].start_unix >= at, "started before --start-at");
        assert_eq!(r.config.start_at, Some(at_s.parse().unwrap()));
    }
    let out = Bench::new().args(["merge", &a, &b, "-q"]).output();
    assert!(out.status.success());
    assert_eq!(s.calls("get"), 20000);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Merged 2 runs"), "{text}");
}

#[test]
fn compare_prints_the_changes_against_the_first_file() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("compare");
    let (a, b) = (dir.path("base.json"), dir.path("new.json"));
    Bench::on(&s)
        .args([
            "-t", "set,get", "-n", "10000", "-c", "2", "-q", "--json", &a,
        ])
        .ok();
    Bench::on(&s)
        .args([
            "-t", "set,get", "-n", "10000", "-c", "20", "-P", "4", "-q", "--json", &b,
        ])
        .ok();
    let svg = dir.path("cmp.svg");
    let out = Bench::new()
        .args(["compare", &a, &b, "--plot", &svg])
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (_, ra) = load(&a);
    let (_, rb) = load(&b);
    for (ta, tb) in ra.tests.iter().zip(&rb.tests) {
        let block = text
            .split(&format!("====== {} ======", ta.title))
            .nth(1)
            .unwrap();
        let base_line = block.lines().find(|l| l.starts_with(&a)).unwrap();
        let new_line = block.lines().find(|l| l.starts_with(&b)).unwrap();
        assert!(base_line.contains(&format!("{:.2}", ta.rps)), "{base_line}");
        assert!(!base_line.contains('%'), "{base_line}");
        let pct = |x: f64, y: f64| format!("({:+.1}%)", (y - x) / x * 100.0);
        for want in [
            format!("{:.2} {}", tb.rps, pct(ta.rps, tb.rps)),
            format!(
                "{:.3} {}",
                tb.latency_ms.p50,
                pct(ta.latency_ms.p50, tb.latency_ms.p50)
            ),
            format!(
                "{:.3} {}",
                tb.latency_ms.p99,
                pct(ta.latency_ms.p99, tb.latency_ms.p99)
            ),
        ] {
            assert!(new_line.contains(&want), "missing {want} in {new_line}");
        }
        let (sa, sb) = (ta.server.as_ref().unwrap(), tb.server.as_ref().unwrap());
        let (ca, cb) = (
            sa.cpu_us_per_request.unwrap(),
            sb.cpu_us_per_request.unwrap(),
        );
        assert!(
            new_line.contains(&format!("{cb:.3} {}", pct(ca, cb))),
            "{new_line}"
        );
    }
    // With two tests in each file, the chart has one line per file and test.
    assert_eq!(series_lines(&svg), 4);
}

/// Number of data lines in a chart: polylines drawn 2 px wide with more than two points (axes and
/// grid lines are 1 px, two points).
fn series_lines(path: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| {
            (n.has_tag_name("polyline") || n.has_tag_name("path"))
                && n.attribute("stroke-width") == Some("2")
                && n.attribute("points")
                    .is_some_and(|p| p.split_whitespace().count() > 2)
        })
        .count()
}

#[test]
fn plot_draws_one_line_per_test() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let dir = Scratch::new("plot");
    let svg = dir.path("run.svg");
    Bench::on(&s)
        .args(["-t", "set,get,incr", "-n", "5000", "-q", "--plot", &svg])
        .ok();
    assert_eq!(series_lines(&svg), 3);
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let labels: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for label in ["SET", "GET", "INCR", "0%", "99.999%", "percentile"] {
        assert!(labels.contains(&label), "no text {label} in {labels:?}");
    }
}

#[test]
fn hdr_out_writes_an_interval_log_per_test_that_reads_back() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let dir = Scratch::new("hdr");
    let prefix = dir.path("run1-");
    let json = dir.path("run.json");
    Bench::on(&s)
        .args([
            "-t",
            "set,lpush",
            "-n",
            "30000",
            "-c",
            "2",
            "--threads",
            "2",
            "-q",
            "--hdr-out",
            &prefix,
            "--json",
            &json,
        ])
        .ok();
    let (_, run) = load(&json);
    for (t, file, tag) in [
        (&run.tests[0], "run1-set.hlog", "set"),
        (&run.tests[1], "run1-lpush.hlog", "lpush"),
    ] {
        let bytes = std::fs::read(dir.path(file)).unwrap();
        let mut total: Option<Histogram<u64>> = None;
        let mut starts = Vec::new();
        let mut base_time = None;
        for entry in IntervalLogIterator::new(&bytes) {
            match entry.expect("every line parses") {
                LogEntry::BaseTime(b) => base_time = Some(b.as_secs_f64()),
                LogEntry::StartTime(_) => {}
                LogEntry::Interval(iv) => {
                    assert_eq!(iv.tag().unwrap().as_str(), tag);
                    assert!(iv.duration().as_secs_f64() <= 1.0);
                    starts.push(iv.start_timestamp().as_secs_f64());
                    let raw = base64_decode(iv.encoded_histogram());
                    let h: Histogram<u64> = Deserializer::new()
                        .deserialize(&mut raw.as_slice())
                        .unwrap();
                    match &mut total {
                        Some(t) => t.add(&h).unwrap(),
                        None => total = Some(h),
                    }
                }
            }
        }
        let total = total.expect("at least one interval");
        // The intervals partition the test: their sum is the test's whole histogram.
        assert_eq!(total.len(), 30000);
        assert_eq!(total, t.histogram.decode().unwrap());
        assert!(starts.iter().enumerate().all(|(i, s)| *s == i as f64));
        let whole = t.duration_s.floor() as usize;
        assert!(
            starts.len() == whole + 1 || starts.len() == whole,
            "{} intervals for {} s",
            starts.len(),
            t.duration_s
        );
        assert!((base_time.unwrap() - t.start_unix).abs() < 0.01);
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

#[test]
fn mistakes_are_one_line_and_exit_2() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("mistakes");
    let bad = dir.path("bad.json");
    std::fs::write(&bad, "{\"format\": 1}").unwrap();
    let bad2 = dir.path("bad2.json");
    std::fs::write(&bad2, "{\"format\": 1}").unwrap();
    for (args, want) in [
        (vec!["--start-at", "12"], "'--start-at'"),
        (vec!["--start-at", "soon"], "'--start-at'"),
        (vec!["--json", "/no/such/folder/x.json"], "'--json'"),
        (
            vec!["merge", "/no/such.json", "/no/such2.json"],
            "/no/such.json",
        ),
        (
            vec!["merge", bad.as_str(), bad2.as_str()],
            "not a ringbench result file",
        ),
        (vec!["compare", bad.as_str()], "compare"),
    ] {
        let out = Bench::new().args(&args).output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn merge_refuses_different_workloads() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let dir = Scratch::new("mismatch");
    let (a, b) = (dir.path("a.json"), dir.path("b.json"));
    Bench::on(&s)
        .args(["-t", "set", "-n", "1000", "-q", "--json", &a])
        .ok();
    Bench::on(&s)
        .args(["-t", "get", "-n", "1000", "-q", "--json", &b])
        .ok();
    let out = Bench::new().args(["merge", &a, &b]).output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("test list"));
}

#[test]
fn an_interval_log_that_cannot_be_written_keeps_the_report() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("gone");

    // Checked before the run: a place no file can be created in is refused at once, by its value.
    let out = Bench::on(&s)
        .args(["-t", "set", "-n", "10", "--hdr-out", "/proc/x-"])
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ringbench: invalid value '/proc/x-' for '--hdr-out'"),
        "{err}"
    );
    assert_eq!(s.calls("set"), 0, "the run started anyway");

    // Unwritable only after the check (the folder is removed during the first test): every report is
    // printed, every test runs, the JSON is written, and the error comes last with exit code 1.
    let logs = dir.0.join("logs");
    std::fs::create_dir(&logs).unwrap();
    let prefix = format!("{}/run-", logs.display());
    let json = dir.path("run.json");
    let n = 100_000u64;
    let child = Bench::on(&s)
        .args([
            "-t",
            "set,get",
            "-n",
            &n.to_string(),
            "-c",
            "10",
            "--hdr-out",
            &prefix,
            "--json",
            &json,
        ])
        .spawn();
    s.wait_for_calls("set", 1000);
    std::fs::remove_dir(&logs).unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("====== SET ======") && stdout.contains("====== GET ======"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("  {n} requests completed")),
        "{stdout}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    for (line, test) in lines.iter().zip(["set", "get"]) {
        assert!(
            line.starts_with(&format!(
                "ringbench: could not write the interval log {prefix}{test}.hlog"
            )),
            "{stderr}"
        );
    }
    assert_eq!((s.calls("set"), s.calls("get")), (n, n));
    let (doc, run) = load(&json);
    assert_valid(&doc);
    assert_eq!(run.tests.len(), 2);
}

#[test]
fn plot_to_a_png_name_draws_a_png() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let dir = Scratch::new("png");
    let png_path = dir.path("run.png");
    let out = Bench::on(&s)
        .args(["-t", "set,get", "-n", "3000", "-q", "--plot", &png_path])
        .output();
    assert!(out.status.success() && out.stderr.is_empty());
    let decoder = png::Decoder::new(std::fs::File::open(&png_path).expect("a PNG file"));
    let mut reader = decoder.read_info().expect("a valid PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (960, 600));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(3).collect();
    // Each test's line (and its legend box) in its own colour, the chart's first two (dark blue and red:
    // readable on white), and text and axes in black.
    for (i, rgb) in [[31u8, 119, 180], [214, 39, 40]].into_iter().enumerate() {
        let n = pixels.iter().filter(|p| **p == rgb).count();
        assert!(n > 500, "series {i}: {n} pixels of its colour");
    }
    let dark = pixels.iter().filter(|p| p.iter().all(|&c| c < 60)).count();
    assert!(dark > 2000, "{dark} dark pixels: no text or axes");
}

/// `compare A... vs B...` judges each test's change against the noise of the runs on each side: `-P 16`
/// against `-P 1` (20 connections each) is a change no noise explains (the verdict says "faster" with
/// an interval above 0), the same runs on both sides are no difference, one run a side cannot judge
/// noise, and a misplaced `vs` is a usage error.
#[test]
fn compare_says_whether_a_difference_is_beyond_the_noise_of_repeated_runs() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let dir = Scratch::new("significance");
    let side = |name: &str, flags: &[&str]| -> Vec<String> {
        (0..3)
            .map(|i| {
                let path = dir.path(&format!("{name}{i}.json"));
                let mut args = vec!["-t", "get", "-n", "20000", "-q", "--json", &path];
                args.extend(flags);
                Bench::on(&s).args(&args).ok();
                path
            })
            .collect()
    };
    let a = side("a", &["-c", "20", "-P", "1"]);
    let b = side("b", &["-c", "20", "-P", "16"]);
    let mut args = vec!["compare"];
    args.extend(a.iter().map(String::as_str));
    args.push("vs");
    args.extend(b.iter().map(String::as_str));
    let out = Bench::new().args(&args).output();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rps = |f: &str| load(f).1.tests[0].rps;
    let (ma, mb) = (
        median(a.iter().map(|f| rps(f)).collect()),
        median(b.iter().map(|f| rps(f)).collect()),
    );
    assert!(
        text.contains(&format!("A        3  {ma:>14.2}")),
        "side A's median rps {ma:.2}\n{text}"
    );
    let verdict = text.lines().find(|l| l.starts_with("rps: ")).unwrap();
    let gain = (mb / ma - 1.0) * 100.0;
    assert!(
        verdict.starts_with(&format!("rps: B is {gain:.1}% faster (95% CI +")),
        "{verdict}\n{text}"
    );
    assert!(
        text.contains("(significance: bootstrap of the median"),
        "{text}"
    );
    // The same runs on both sides (in another order): no difference.
    let out = Bench::new()
        .args(["compare", &a[0], &a[1], &a[2], "vs", &a[2], &a[0], &a[1]])
        .output();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("rps: no significant difference (+0.0%, 95% CI -"),
        "{text}"
    );
    // One run a side: the change, and no verdict on noise.
    let out = Bench::new().args(["compare", &a[0], "vs", &b[0]]).output();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("one run per side: noise cannot be judged"),
        "{text}"
    );
    // `vs` first, last or twice.
    for bad in [
        vec!["compare", "vs", &a[0], &b[0]],
        vec!["compare", &a[0], &b[0], "vs"],
        vec!["compare", &a[0], "vs", &a[1], "vs", &b[0]],
    ] {
        let out = Bench::new().args(&bad).output();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("'vs'") && err.lines().count() == 1, "{err}");
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `--run-count 3` runs the suite three times: every run is in the JSON (and reached the server), and
/// each test is summed up once the last run is over: the medians, min and max in the text, the medians
/// standing for the runs in `-q` and CSV, and `repeats` in the JSON (which `compare` reads as runs).
#[test]
fn run_count_repeats_the_suite_and_sums_each_test_up() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("run-count");
    let json = dir.path("runs.json");
    let text = Bench::on(&s)
        .args([
            "-t",
            "set,get",
            "-n",
            "5000",
            "--run-count",
            "3",
            "--json",
            &json,
        ])
        .ok();
    assert_eq!(s.calls("set"), 15000);
    assert_eq!(s.calls("get"), 15000);
    let (doc, file) = load(&json);
    assert_valid(&doc);
    assert_eq!(file.tests.len(), 6);
    let repeats = doc["repeats"].as_array().unwrap();
    assert_eq!(repeats.len(), 2);
    for (i, title) in ["SET", "GET"].into_iter().enumerate() {
        let mut rps: Vec<f64> = file
            .tests
            .iter()
            .filter(|t| t.title == title)
            .map(|t| t.rps)
            .collect();
        rps.sort_by(f64::total_cmp);
        let r = &repeats[i];
        assert_eq!(r["title"], title);
        assert_eq!(r["runs"], 3);
        assert_eq!(r["rps"]["median"].as_f64().unwrap(), rps[1]);
        assert_eq!(r["rps"]["min"].as_f64().unwrap(), rps[0]);
        assert_eq!(r["rps"]["max"].as_f64().unwrap(), rps[2]);
        assert_eq!(text.matches(&format!("====== {title} ======")).count(), 3);
        assert!(
            text.contains(&format!(
                "====== {title}: 3 runs ======\n  requests per second: median {:.2}, min {:.2}, max {:.2}",
                rps[1], rps[0], rps[2]
            )),
            "{text}"
        );
    }
    // -q and CSV: one line per test, the medians.
    let q = Bench::on(&s)
        .args(["-t", "set,get", "-n", "2000", "--run-count", "3", "-q"])
        .ok();
    let lines: Vec<&str> = q.lines().collect();
    assert_eq!(lines.len(), 2, "{q}");
    assert!(lines[0].starts_with("SET: ") && lines[0].contains("(median of 3 runs; rps "));
    let csv = Bench::on(&s)
        .args(["-t", "get", "-n", "2000", "--run-count", "2", "--csv"])
        .ok();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(
        csv.lines().nth(1).unwrap().starts_with("\"GET\",\""),
        "{csv}"
    );
    // The file's runs are runs for compare.
    let out = Bench::new().args(["compare", &json, "vs", &json]).output();
    let cmp = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        cmp.contains("rps: no significant difference (+0.0%"),
        "{cmp}"
    );
    // With -l, or 0 runs: a usage error.
    for bad in [&["--run-count", "2", "-l"][..], &["--run-count", "0"][..]] {
        let out = Bench::on(&s).args(["-n", "10"]).args(bad).output();
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--run-count"));
    }
}

/// Each test's JSON has its per-second series: the seconds' replies add up to the test's, each with
/// its rate and percentiles and its histogram; `merge` adds the shards' seconds one by one.
#[test]
fn the_json_has_a_per_second_series_that_merge_adds_up() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let dir = Scratch::new("per-second");
    let (a, b, m) = (dir.path("a.json"), dir.path("b.json"), dir.path("m.json"));
    for (path, c) in [(&a, "5"), (&b, "10")] {
        Bench::on(&s)
            .args([
                "-t",
                "get",
                "--rps",
                "3000",
                "--duration",
                "2.5",
                "-c",
                c,
                "-q",
                "--json",
                path,
            ])
            .ok();
    }
    let (doc, ra) = load(&a);
    assert_valid(&doc);
    let (_, rb) = load(&b);
    for r in [&ra, &rb] {
        let t = &r.tests[0];
        let series = &t.per_second;
        // 2.5 s: two whole seconds and a last part (a reply late after the deadline may add one).
        assert!((3..=4).contains(&series.len()), "{} seconds", series.len());
        assert_eq!(series.iter().map(|e| e.requests).sum::<u64>(), t.requests);
        for (i, e) in series.iter().enumerate() {
            assert_eq!(e.second, i as u64);
            assert_eq!(e.histogram.decode().unwrap().len(), e.requests);
            assert!(e.p50_ms <= e.p99_ms && e.p99_ms <= e.max_ms, "{e:?}");
            if i + 1 < series.len() {
                assert_eq!(e.seconds, 1.0);
                assert_eq!(e.rps, e.requests as f64);
            }
        }
    }
    let out = Bench::new()
        .args(["merge", &a, &b, "--ignore-shards", "--json", &m])
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (doc, merged) = load(&m);
    assert_valid(&doc);
    let (sa, sb, sm) = (
        &ra.tests[0].per_second,
        &rb.tests[0].per_second,
        &merged.tests[0].per_second,
    );
    assert_eq!(sm.len(), sa.len().max(sb.len()));
    for (i, e) in sm.iter().enumerate() {
        let (pa, pb) = (
            sa.get(i).map_or(0, |e| e.requests),
            sb.get(i).map_or(0, |e| e.requests),
        );
        assert_eq!(e.requests, pa + pb, "second {i}");
        assert_eq!(e.histogram.decode().unwrap().len(), e.requests);
    }
}
