//! `ringbench capacity` against a real redis-server: the search converges and its answer follows from the
//! steps it printed, the JSON's steps match what the server counted, a server slowed on purpose has a lower
//! capacity, a search the client cannot keep up with says so, one stall of the server during a step is
//! confirmed away, `--repeat` reports the spread, a search on a real cluster is counted on every master,
//! and an answer far below the probe whose failing steps left the server at ease says so.

use crate::common::bench::Bench;
use crate::common::cluster::Cluster;
use crate::common::lock::alone;
use crate::common::scratch::Scratch;
use crate::common::*;
use ringbench::RunFile;
use serde_json::Value;
use std::io::{BufRead, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Runs `ringbench capacity` against `s` and returns (stdout, stderr), asserting success.
fn capacity(s: &RedisServer, args: &[&str]) -> (String, String) {
    let out = Bench::capacity(s).args(args).output();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "capacity {args:?} failed: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// A rate as printed (`412,000`).
fn rate(text: &str) -> f64 {
    text.trim()
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("not a rate: {text:?}"))
}

/// The word after `key` in `line`.
fn after<'a>(line: &'a str, key: &str) -> &'a str {
    let i = line
        .find(key)
        .unwrap_or_else(|| panic!("no {key:?} in {line:?}"));
    line[i + key.len()..].split_whitespace().next().unwrap()
}

/// A printed step: offered, achieved, passed.
#[derive(Debug)]
struct Step {
    offered: f64,
    achieved: f64,
    pass: bool,
    /// Discarded and run again (the client fell behind while off a CPU).
    repeated: bool,
}

fn steps(out: &str) -> Vec<Step> {
    out.lines()
        .filter(|l| l.starts_with("step "))
        .map(|l| Step {
            offered: rate(after(l, "offered ")),
            achieved: rate(after(l, "achieved ")),
            pass: l.contains("  pass") && !l.contains("  FAIL: "),
            repeated: l.contains("running the step again"),
        })
        .collect()
}

/// The answer line's capacity and next step (None when absent).
fn answer(out: &str) -> (Option<f64>, Option<f64>) {
    let line = out
        .lines()
        .find(|l| l.starts_with("capacity: "))
        .unwrap_or_else(|| panic!("no answer in\n{out}"));
    if line.starts_with("capacity: below ") {
        return (None, Some(rate(after(line, "below "))));
    }
    if line.starts_with("capacity: at least ") {
        return (Some(rate(after(line, "at least "))), None);
    }
    (
        Some(rate(after(line, "capacity: "))),
        line.contains("next step ")
            .then(|| rate(after(line, "next step "))),
    )
}

fn schema() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/ringbench-result.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The result file at `json`, checked against the result schema.
fn schema_checked(json: &str) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema()).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
    doc
}

#[test]
fn search_converges_and_its_answer_follows_from_its_steps() {
    let _turn = alone();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("converge");
    let json = dir.path("c.json");
    let svg = dir.path("c.svg");
    // A lenient objective: the search ends where the client or the server stops keeping up, which a
    // debug build on a shared machine reaches well below --to.
    let (out, err) = capacity(
        &s,
        &[
            "-t",
            "set",
            "-r",
            "1000",
            "--slo",
            "p99=200ms",
            "--from",
            "1000",
            "--to",
            "512000",
            "--within",
            "10%",
            "--step-duration",
            "0.3",
            "--warmup",
            "0.1",
            "--json",
            &json,
            "--plot",
            &svg,
        ],
    );
    assert!(err.is_empty(), "stderr: {err}");
    assert!(
        out.contains("the server is not restarted between steps"),
        "{out}"
    );
    let all = steps(&out);
    let steps: Vec<&Step> = all.iter().filter(|s| !s.repeated).collect();
    let (cap, next) = answer(&out);
    let (cap, next) = (
        cap.unwrap_or_else(|| panic!("no step passed\n{out}")),
        next.unwrap_or_else(|| panic!("no step failed\n{out}")),
    );
    // Converged: the bracket is within the precision.
    assert!(next <= cap * 1.10, "bracket {cap}..{next}\n{out}");
    // The answer is the highest passing step, the next step the lowest failing one above it.
    let best = steps.iter().filter(|s| s.pass).map(|s| s.offered);
    assert_eq!(best.fold(0.0, f64::max), cap, "{out}");
    let lowest_fail = steps
        .iter()
        .filter(|s| !s.pass && s.offered > cap)
        .map(|s| s.offered);
    assert_eq!(lowest_fail.fold(f64::MAX, f64::min), next, "{out}");
    // Geometric first: the second step doubles the first (or halves it, when the first failed).
    assert_eq!(steps[0].offered, 1000.0, "{out}");
    let expected = if steps[0].pass { 2000.0 } else { 500.0 };
    assert_eq!(steps[1].offered, expected, "{out}");
    let at_cap = steps.iter().find(|s| s.offered == cap).unwrap();
    assert!(at_cap.achieved >= 0.95 * cap, "{at_cap:?}\n{out}");

    // The JSON: every step's full result, in order, with the server's counts.
    let file = RunFile::load(Path::new(&json)).unwrap();
    schema_checked(&json);
    let c = file.capacity.as_ref().expect("a capacity section");
    assert_eq!(c.steps.len(), all.len());
    assert_eq!(file.tests.len(), all.len());
    assert_eq!((c.capacity_rps, c.next_rps), (Some(cap), Some(next)));
    assert!(!c.client_limited || out.contains("client-limited"), "{out}");
    let (mut sent, mut warmed) = (0, 0);
    for ((t, e), printed) in file.tests.iter().zip(&c.steps).zip(&all) {
        assert_eq!(e.offered_rps, printed.offered);
        assert_eq!((e.pass, e.repeated), (printed.pass, printed.repeated));
        assert_eq!(t.command, "SET");
        let h = t.histogram.decode().unwrap();
        assert_eq!(h.len(), t.requests, "{}", t.title);
        assert_eq!(t.errors.failed, 0);
        // The step ran for its time at its rate (warmup dropped).
        assert!(t.duration_s >= 0.3, "{}: {}", t.title, t.duration_s);
        warmed += e.warmup_requests;
        sent += t.requests + e.warmup_requests;
    }
    // Each step had its warmup (a step's 0.1 s can pass with nothing sent when a loaded machine
    // holds the executor off its core for that long, so the count is over the steps).
    assert!(warmed > 0, "{out}");
    assert_eq!(sent, s.calls("set"), "the server's SET count");

    // compare reads it like any result file (a copy: the same file twice is refused).
    let copy = format!("{json}.copy.json");
    std::fs::copy(&json, &copy).unwrap();
    let cmp = Bench::new().args(["compare", &json, &copy]).output();
    assert!(
        cmp.status.success(),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    let table = String::from_utf8_lossy(&cmp.stdout);
    assert!(table.contains(&format!("SET @ {} rps", cap)), "{table}");

    // merge takes it too (the same search from two client machines would be merged step by step).
    let merged = Bench::new().args(["merge", &json, &copy, "-q"]).output();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );

    // The knee chart: a line per percentile and the objective.
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    for label in ["p50", "p99", "p99.9", "objective p99 <= 200 ms"] {
        assert!(
            texts.iter().any(|t| t.trim() == label),
            "no {label:?} in the chart"
        );
    }
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count();
    assert!(lines >= 3, "{lines} lines");
}

/// Sends `DEBUG SLEEP 0.02` to the server, then waits 5 ms, until stopped: the server answers no one for
/// 20 ms out of every 25.
fn slow_down(port: u16, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut reader = std::io::BufReader::new(c.try_clone().unwrap());
        let mut c = c;
        let mut line = String::new();
        while !stop.load(Ordering::Relaxed) {
            c.write_all(b"DEBUG SLEEP 0.02\r\n").unwrap();
            line.clear();
            reader.read_line(&mut line).unwrap();
            assert_eq!(line, "+OK\r\n");
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

#[test]
fn a_slowed_server_has_a_lower_capacity() {
    let _turn = alone();
    let s = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let args = [
        "-t",
        "set",
        "--slo",
        "p99=200ms",
        "--from",
        "1000",
        "--to",
        "256000",
        "--within",
        "25%",
        "--step-duration",
        "0.3",
        "--warmup",
        "0.1",
        "-q",
    ];
    let (plain, _) = capacity(&s, &args);
    let plain_cap = answer(&plain)
        .0
        .unwrap_or_else(|| panic!("no step passed unslowed\n{plain}"));
    let stop = Arc::new(AtomicBool::new(false));
    let side = slow_down(s.port, stop.clone());
    let (slowed, _) = capacity(&s, &args);
    stop.store(true, Ordering::Relaxed);
    side.join().unwrap();
    let slowed_cap = answer(&slowed).0.unwrap_or(0.0);
    assert!(
        slowed_cap < plain_cap,
        "slowed {slowed_cap} vs {plain_cap}\nunslowed:\n{plain}\nslowed:\n{slowed}"
    );
    // -q prints the answer alone: the capacity line, and the answer's notes on why it stopped there
    // (the client was the limit, as it can be here with a fast engine and a debug build, or requests
    // waited for their connection: the in-flight limit, as a release build can reach); no step lines,
    // no checking summary.
    let lines: Vec<&str> = plain.lines().collect();
    assert!(lines[0].starts_with("capacity: "), "{plain}");
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.starts_with("client-limited: ") || l.starts_with("in-flight limit: ")),
        "{plain}"
    );
}

/// A thread spinning on `core` until stopped.
fn hog(core: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        crate::common::sys::pin_thread(core);
        let mut x = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for i in 0..10_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
        }
    })
}

#[test]
fn a_search_the_client_cannot_keep_up_with_blames_the_client() {
    let _turn = alone();
    let s = RedisServer::start();
    // The one executor gets a sliver of its core: pinned to the core a spinning thread holds, at the
    // lowest priority (a few percent of the core). Deep pipelines leave it room, so it falls behind
    // its own schedule.
    let core = crate::common::sys::last_core();
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = hog(core, stop.clone());
    let cpus = core.to_string();
    let out = Bench::capacity(&s)
        .under("nice", ["-n", "19"])
        .args([
            "-t",
            "set",
            "--threads",
            "1",
            "--cpus",
            &cpus,
            "-c",
            "50",
            "-P",
            "32",
        ])
        .args([
            "--slo", "p99=1s", "--from", "800000", "--to", "800000", "--within", "100%",
        ])
        .args(["--step-duration", "0.3", "--warmup", "0"])
        .output();
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let steps = steps(&text);
    assert!(!steps[0].pass, "{text}");
    assert!(
        text.contains("client-limited: the client was the limit at "),
        "{text}"
    );
    assert!(text.contains("--cpus"), "{text}");
}

#[test]
fn search_flag_mistakes_are_one_line_usage_errors() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    for (args, flag) in [
        (vec!["--slo", "p99=1"], "'--slo'"),
        (vec!["--slo", "x=1ms"], "'--slo'"),
        (vec!["--from", "0"], "'--from'"),
        (vec!["--from", "9000", "--to", "10"], "'--from'"),
        (vec!["--to"], "'--to <rate>'"),
        (vec!["--step-duration", "-1"], "'--step-duration'"),
        (vec!["--within", "200%"], "'--within'"),
        (vec!["--rps", "1000"], "'--rps'"),
        (vec!["--duration", "3"], "'--duration'"),
        (vec!["-n", "10"], "'-n'"),
        (vec!["-t", "get,set"], "one test at a time"),
        // From the flags alone: ahead of the --json folder check, and a name that brings a second test counts it.
        (
            vec!["-t", "lrange_100", "--json", "/nonexistent/d/x.json"],
            "one test at a time, not 2",
        ),
        (vec!["-c", "0"], "'-c'"),
        (vec!["--repeat", "0"], "'--repeat'"),
        (vec!["--retries", "-1"], "'--retries'"),
        (vec!["--borderline", "90%"], "'--borderline'"),
        // Found on the command line, before any file is checked (the --json folder does not exist).
        (
            vec![
                "--data-verify",
                "-r",
                "10",
                "--json",
                "/nonexistent/d/x.json",
            ],
            "--data-verify or --verify-only",
        ),
        (
            vec![
                "--metrics-listen",
                "127.0.0.1:0",
                "--json",
                "/nonexistent/d/x.json",
            ],
            "--metrics-listen or --statsd",
        ),
    ] {
        let out = Bench::capacity(&s).args(&args).output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
    assert_eq!(s.calls("set") + s.calls("get"), 0);
}

#[test]
fn sigterm_ends_a_search_with_the_answer_so_far() {
    let _turn = alone();
    let s = RedisServer::start();
    let child = Bench::capacity(&s)
        .args([
            "-t",
            "get",
            "--slo",
            "p99=1s",
            "--from",
            "1000",
            "--to",
            "2000",
            "--step-duration",
            "30",
            "--warmup",
            "0",
        ])
        .spawn();
    s.wait_for_calls("get", 100);
    // SAFETY: kill(2) on our own child's pid.
    assert!(crate::common::sys::kill(child.id() as i32, libc::SIGTERM));
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(143), "{stdout}");
    assert!(
        stdout.contains("search stopped before it converged"),
        "{stdout}"
    );
    assert!(
        stdout.contains("capacity: unknown (no step ran)"),
        "{stdout}"
    );
}

/// Waits (over its own connection, reading `INFO commandstats`) until the server has run `calls` GETs,
/// then sends one `DEBUG SLEEP 0.05`: the server answers no one for 50 ms. Returns the GETs it had run.
fn stall_after_gets(port: u16, calls: u64) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut reader = std::io::BufReader::new(c.try_clone().unwrap());
        let mut c = c;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            c.write_all(b"INFO commandstats\r\n").unwrap();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let len: usize = line.trim()[1..].parse().unwrap();
            let mut body = vec![0u8; len + 2];
            std::io::Read::read_exact(&mut reader, &mut body).unwrap();
            let gets = parse_commandstats(&String::from_utf8_lossy(&body))
                .get("get")
                .copied()
                .unwrap_or(0);
            if gets >= calls {
                c.write_all(b"DEBUG SLEEP 0.05\r\n").unwrap();
                line.clear();
                reader.read_line(&mut line).unwrap();
                assert_eq!(line, "+OK\r\n");
                return gets;
            }
            assert!(std::time::Instant::now() < deadline, "no GETs came");
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

#[test]
fn one_stall_of_the_server_in_a_step_is_confirmed_away() {
    let _turn = alone();
    let s = RedisServer::start_with(&["--enable-debug-command", "local"]);
    let dir = Scratch::new("stall");
    let json = dir.path("s.json");
    // One rate, a lenient objective: without the stall the answer is "at least 2,000 rps". With no
    // probe and no warmup, the first GETs are the first step's: the stall lands 0.1 s into its 1 s.
    // --retries 0: whether or not the stalled run also looks spoiled by the client (sends held up
    // while the server answered no one count as late), it is counted, so only its confirmation can
    // keep the answer.
    let side = stall_after_gets(s.port, 200);
    let (out, err) = capacity(
        &s,
        &[
            "--retries",
            "0",
            "-t",
            "get",
            "--slo",
            "p99=20ms",
            "--from",
            "2000",
            "--to",
            "2000",
            "--within",
            "5%",
            "--step-duration",
            "1",
            "--warmup",
            "0",
            "--json",
            &json,
        ],
    );
    let gets_then = side.join().unwrap();
    assert!(err.is_empty(), "stderr: {err}");
    let file = RunFile::load(Path::new(&json)).unwrap();
    let c = file.capacity.as_ref().unwrap();
    // The stall hit the first run: 1 in 20 of its requests waited up to 50 ms, so its p99 failed.
    let first = &c.steps[0];
    assert!(gets_then < 2000 && !first.pass, "{gets_then} GETs\n{out}");
    assert!(first.reasons[0].starts_with("p99 "), "{:?}\n{out}", first);
    // It was confirmed, not believed: the step was run again (and a tie broken), and the answer is the
    // stall-free one, within --within.
    assert!(first.repeated && first.run == "first", "{out}");
    assert_eq!(c.steps[1].run, "confirm", "{out}");
    assert!(c.confirmations >= 1, "{out}");
    assert!(
        c.capacity_rps.is_some_and(|r| r >= 2000.0 / 1.05),
        "{:?}\n{out}",
        c.capacity_rps
    );
    assert!(
        out.contains("running the step again to confirm it"),
        "{out}"
    );
    assert!(
        out.contains(&format!("checked: {} confirming run", c.confirmations)),
        "{out}"
    );
    // Every run reached the server, and only they did.
    let sent: u64 = file.tests.iter().map(|t| t.requests).sum();
    assert_eq!(sent, s.calls("get"), "{out}");
}

#[test]
fn repeated_searches_report_the_median_and_the_spread() {
    let _turn = alone();
    let s = RedisServer::start();
    let dir = Scratch::new("repeat");
    let json = dir.path("r.json");
    let (out, _) = capacity(
        &s,
        &[
            "-t",
            "set",
            "--slo",
            "p99=200ms",
            "--from",
            "1000",
            "--to",
            "2000",
            "--step-duration",
            "0.2",
            "--warmup",
            "0",
            "--repeat",
            "3",
            "--json",
            &json,
        ],
    );
    let file = RunFile::load(Path::new(&json)).unwrap();
    schema_checked(&json);
    let c = file.capacity.as_ref().unwrap();
    assert_eq!(c.searches.len(), 3, "{out}");
    let mut answers: Vec<f64> = c
        .searches
        .iter()
        .map(|s| s.capacity_rps.unwrap_or(0.0))
        .collect();
    // Each search's runs are its own, in order, and its printed answer is its JSON one.
    for (k, sr) in c.searches.iter().enumerate() {
        let runs = c.steps.iter().filter(|e| e.search == k + 1).count();
        assert_eq!(runs, sr.runs, "{out}");
        assert_eq!(out.matches(&format!("search {} of 3:", k + 1)).count(), 1);
    }
    let printed: Vec<f64> = out
        .lines()
        .filter(|l| l.starts_with("capacity: "))
        .map(|l| answer(l).0.unwrap_or(0.0))
        .collect();
    assert_eq!(printed, answers, "{out}");
    answers.sort_by(f64::total_cmp);
    assert_eq!(c.median_rps, Some(answers[1]));
    assert_eq!((c.min_rps, c.max_rps), (Some(answers[0]), Some(answers[2])));
    assert_eq!(c.capacity_rps, Some(answers[1]));
    let summary = out
        .lines()
        .find(|l| l.starts_with("over 3 searches: median "))
        .unwrap_or_else(|| panic!("no summary in\n{out}"));
    assert_eq!(rate(after(summary, "median ")), answers[1], "{summary}");
    assert_eq!(
        rate(after(summary, "min ").trim_end_matches(',')),
        answers[0]
    );
    let sent: u64 = file.tests.iter().map(|t| t.requests).sum();
    assert_eq!(sent, s.calls("set"), "{out}");
}

#[test]
fn a_cluster_search_is_counted_on_every_master() {
    let _turn = alone();
    let c = Cluster::start();
    let dir = Scratch::new("cluster");
    let json = dir.path("k.json");
    let port = c.ports[0].to_string();
    let out = Bench::new()
        .args(["capacity", "-p", &port, "--cluster", "-t", "set"])
        .args(["-r", "10000", "-c", "6", "--slo", "p99=200ms"])
        .args(["--from", "1000", "--to", "4000", "--within", "25%"])
        .args(["--step-duration", "0.3", "--warmup", "0"])
        .json(&json)
        .output();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success() && err.is_empty(), "{text}\n{err}");
    assert!(text.contains("--cluster (3 masters)"), "{text}");
    let (cap, _) = answer(&text);
    assert!(cap.is_some(), "{text}");
    let doc = schema_checked(&json);
    let tests = doc["tests"].as_array().unwrap();
    let steps = doc["capacity"]["steps"].as_array().unwrap();
    assert!(!tests.is_empty() && tests.len() == steps.len(), "{text}");
    // Every step's requests, master by master, are what that master ran: the client's per-node counts
    // of every step summed, against each master's INFO commandstats.
    let mut total = 0;
    for &p in &c.ports {
        let name = format!("127.0.0.1:{p}");
        let client: u64 = tests
            .iter()
            .map(|t| t["cluster"]["nodes"][&name].as_u64().unwrap_or(0))
            .sum();
        let server = c.calls_on(p, "set");
        assert_eq!(client, server, "{name}\n{text}");
        assert!(server > 0, "{name}");
        total += server;
    }
    let requests: u64 = tests.iter().map(|t| t["requests"].as_u64().unwrap()).sum();
    assert_eq!(requests, total, "{text}");
    // Each step's server view covers the three masters.
    for t in tests {
        assert_eq!(
            t["server"]["nodes"].as_array().map(Vec::len),
            Some(3),
            "{t}"
        );
    }
}

#[test]
fn an_objective_no_server_meets_says_the_server_was_at_ease() {
    let _turn = alone();
    let s = RedisServer::start();
    let dir = Scratch::new("at-ease");
    let json = dir.path("e.json");
    // p99 <= 1 µs: under any loopback round trip, so every step fails while redis idles. Steps of
    // 0.5 s: the search ends near 95 rps, and in 0.2 s steps (19 requests) one request whose timer
    // woke past the step's end on a loaded machine is 5% of the step, which reads as a client that
    // fell behind; in 0.5 s it is 2%.
    let (out, _) = capacity(
        &s,
        &[
            "-t",
            "get",
            "-c",
            "10",
            "--threads",
            "1",
            "--slo",
            "p99=0.001ms",
            "--step-duration",
            "0.5",
            "--warmup",
            "0",
            "--retries",
            "0",
            "--json",
            &json,
        ],
    );
    let file = RunFile::load(Path::new(&json)).unwrap();
    schema_checked(&json);
    let c = file.capacity.as_ref().unwrap();
    assert_eq!(c.capacity_rps, None, "{out}");
    let far = c
        .far_below_probe
        .as_ref()
        .unwrap_or_else(|| panic!("no far-below verdict in\n{out}"));
    // Near 95 rps the client sleeps between requests; on a machine whose other load keeps it off its
    // CPU past its timers (a loaded CI machine), the true verdict is the client, which
    // `a_search_the_client_cannot_keep_up_with_blames_the_client` checks. It is taken here only when the
    // lowest step's own record shows the machine busy; on a machine with idle CPU it must be the server.
    let lowest_rate = c
        .steps
        .iter()
        .map(|e| e.offered_rps)
        .fold(f64::INFINITY, f64::min);
    let idle = c
        .steps
        .iter()
        .filter(|e| e.offered_rps == lowest_rate)
        .map(|e| e.cpu_idle)
        .fold(f64::INFINITY, f64::min);
    if far.why == "client-limited" && idle < 0.5 {
        assert!(
            out.contains("client-limited: the client was the limit"),
            "{out}"
        );
        return;
    }
    assert_eq!(
        far.why, "server-at-ease",
        "machine idle {idle} at the lowest step\n{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("far below the closed loop: "))
        .unwrap_or_else(|| panic!("no far-below line in\n{out}"));
    assert!(line.contains("the server was at ease"), "{line}");
    // The share of a core it quotes is the server's own, from INFO, over the lowest failing step.
    let lowest = c.steps.iter().rev().find(|e| !e.pass).unwrap();
    let t = file
        .tests
        .iter()
        .rev()
        .find(|t| t.title.ends_with(&format!("@ {} rps", lowest.offered_rps)))
        .unwrap_or_else(|| panic!("no result for {} rps in\n{out}", lowest.offered_rps));
    let server = t.server.as_ref().unwrap();
    let busy = server.cpu_s() / t.duration_s;
    assert!(
        busy < 0.5,
        "server busy {busy} at {} rps",
        lowest.offered_rps
    );
    assert!(
        line.contains(&format!("using {:.0}% of a core", 100.0 * busy)),
        "{line} (server {busy})"
    );
    // Every GET the server counted is a step's or the probe's.
    let sent: u64 = file.tests.iter().map(|t| t.requests).sum();
    let probe = c.probe.as_ref().unwrap().requests;
    assert_eq!(sent + probe, s.calls("get"), "{out}");
}

/// A server with no room under its `maxclients` for `-c` is refused before the first step, with the
/// benchmark's own message, and sees no request: a search run against it used to read the refused
/// connections as a client that fell behind, and answered.
#[test]
fn a_server_without_room_for_the_clients_is_refused_before_the_search() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--maxclients", "6"]);
    s.reset();
    let out = Bench::capacity(&s)
        .args(["-t", "get", "-c", "10", "--slo", "p99=5ms"])
        .args(["--step-duration", "0.3"])
        .output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("the server has room for 6 connections") && stderr.contains("-c is 10"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(s.calls("get"), 0, "{stdout}");
}
