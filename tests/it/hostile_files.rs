//! Result files made hostile (issue 52): a real run's file edited into what no run writes, then given to
//! the file tools `merge`, `compare` and `report`. Each is refused in one line naming the file and the
//! limit, with exit code 2, in little memory (the tools run under a 200 MB address-space limit and their
//! peak resident memory is measured), never with an abort or a backtrace.

use crate::common::scratch::Scratch;
use crate::common::{RedisServer, bench::Bench, sys};
use base64::Engine as _;
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The address space the tools run in: a tool that allocates what a file claims fails past it.
const ADDRESS_SPACE: u64 = 200 << 20;
/// The most resident memory a tool may reach on these files.
const PEAK_MIB: u64 = 100;
/// How long a tool may take on these files.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A real result file of one SET test, as JSON (one short run, made once for the whole module).
fn real() -> Value {
    static RUN: OnceLock<String> = OnceLock::new();
    let text = RUN.get_or_init(|| {
        let s = RedisServer::start();
        Bench::on(&s)
            .args(["-t", "set", "-n", "3000", "-c", "2", "-q", "--json", "-"])
            .ok()
    });
    serde_json::from_str(text).expect("--json - prints one document")
}

/// How a tool ended.
struct Ended {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    peak_mib: u64,
}

impl Ended {
    /// Refused: exit code 2, one line on stderr holding every one of `words`, in little memory.
    fn assert_refused(&self, words: &[&str]) {
        let shown = format!("exit {:?}, stderr:\n{}", self.code, self.stderr);
        assert_eq!(self.code, Some(2), "{shown}");
        assert_eq!(self.stderr.lines().count(), 1, "{shown}");
        for w in words {
            assert!(self.stderr.contains(w), "no '{w}' in: {shown}");
        }
        self.assert_small();
    }

    /// Peak resident memory under [`PEAK_MIB`], and no panic.
    fn assert_small(&self) {
        assert!(
            self.peak_mib < PEAK_MIB,
            "peak {} MiB: {}",
            self.peak_mib,
            self.stderr
        );
        assert!(
            !self.stderr.contains("panicked") && !self.stderr.contains("backtrace"),
            "{}",
            self.stderr
        );
    }
}

/// Runs ringbench with `args` in `dir` under [`ADDRESS_SPACE`], its output into files, killed past
/// [`TIMEOUT`]; its peak memory.
fn tool(dir: &Scratch, args: &[&str]) -> Ended {
    tool_interrupted(dir, args, None).0
}

/// [`tool`], sent SIGINT after `interrupt` when given: then also how long it took to end after it.
fn tool_interrupted(
    dir: &Scratch,
    args: &[&str],
    interrupt: Option<Duration>,
) -> (Ended, Option<Duration>) {
    let (out, err) = (dir.path("tool.out"), dir.path("tool.err"));
    let mut cmd = Command::new(crate::common::cluster::bin());
    cmd.args(args)
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    sys::limit_address_space(&mut cmd, ADDRESS_SPACE);
    let child = cmd.spawn().unwrap();
    // A tool that hangs (a panic under the memory limit could wait on a lock for good) is killed.
    let pid = child.id() as i32;
    let ended = Arc::new(AtomicBool::new(false));
    let watch = {
        let ended = ended.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut interrupted = None;
            while start.elapsed() < TIMEOUT {
                if ended.load(Ordering::SeqCst) {
                    return (false, interrupted);
                }
                if interrupted.is_none() && interrupt.is_some_and(|i| start.elapsed() >= i) {
                    // Our own child, not reaped yet (ended is false).
                    sys::kill(pid, libc::SIGINT);
                    interrupted = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            (sys::kill(pid, libc::SIGKILL), interrupted)
        })
    };
    let (status, peak_kib) = sys::wait_with_peak_rss(child);
    let done = Instant::now();
    ended.store(true, Ordering::SeqCst);
    let (killed, interrupted) = watch.join().unwrap();
    assert!(!killed, "ringbench {args:?} ran past {TIMEOUT:?}");
    let ended = Ended {
        code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        peak_mib: peak_kib / 1024,
    };
    (ended, interrupted.map(|at| done.duration_since(at)))
}

/// Writes `doc` as `name` in `dir`.
fn write(dir: &Scratch, name: &str, doc: &Value) {
    std::fs::write(dir.path(name), serde_json::to_string_pretty(doc).unwrap()).unwrap();
}

/// A histogram's `data`: HdrHistogram's compressed V2 encoding of a forged header and payload, with the
/// compressed length `clen` (the real one when `None`).
fn forged(payload_len: u32, digits: u32, high: u64, payload: &[u8], clen: Option<u32>) -> String {
    let mut inner = Vec::new();
    for v in [0x1c84_9313u32, payload_len, 0, digits] {
        inner.extend_from_slice(&v.to_be_bytes());
    }
    inner.extend_from_slice(&1u64.to_be_bytes());
    inner.extend_from_slice(&high.to_be_bytes());
    inner.extend_from_slice(&1.0f64.to_be_bytes());
    inner.extend_from_slice(payload);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&inner).unwrap();
    let comp = z.finish().unwrap();
    let mut bytes = 0x1c84_9314u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&clen.unwrap_or(comp.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&comp);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// One count as the V2 payload writes it: zig-zag, then LEB128-64b9B.
fn count(v: i64) -> Vec<u8> {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut out = Vec::new();
    for _ in 0..8 {
        out.push((z & 0x7f) as u8 | if z >> 7 == 0 { 0 } else { 0x80 });
        z >>= 7;
        if z == 0 {
            return out;
        }
    }
    out.push(z as u8);
    out
}

const HOUR_NS: u64 = 3_600_000_000_000;

/// The real file with its test's histogram replaced by `data` (and no per-second series).
fn with_histogram(data: &str, digits: u64) -> Value {
    let mut doc = real();
    let t = &mut doc["tests"][0];
    t["histogram"]["data"] = data.into();
    t["histogram"]["significant_figures"] = digits.into();
    t["per_second"] = Value::Array(Vec::new());
    doc
}

#[test]
fn a_histogram_claiming_a_4_gib_payload_is_refused_by_every_tool_in_little_memory() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("payload");
    write(&dir, "a.json", &real());
    // 3.7 KB of file; its histogram's header claims a payload of 4 GiB (hdrhistogram sized a buffer to
    // it: 4.2 GB resident, or an abort under the limit).
    let big = forged(u32::MAX, 3, HOUR_NS, &[2; 100], None);
    write(&dir, "big.json", &with_histogram(&big, 3));
    for args in [
        vec!["merge", "a.json", "big.json", "-q"],
        vec!["compare", "a.json", "big.json", "--plot", "c.svg"],
        vec!["report", "big.json", "-o", "r.html"],
    ] {
        let ended = tool(&dir, &args);
        ended.assert_refused(&["big.json", "test 1 'SET'", "payload length 4294967295"]);
    }
    assert!(!std::path::Path::new(&dir.path("r.html")).exists());
}

#[test]
fn each_forged_histogram_header_is_refused_naming_its_limit() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("headers");
    write(&dir, "a.json", &real());
    let one = count(3);
    // A zlib bomb: 30 MB of zero counts that compress to 30 KB, its payload length the most its 33792
    // counts could take (9 bytes each): no more is inflated, and those run past the array.
    let bomb = forged(33_792 * 9, 3, HOUR_NS, &vec![0; 30 << 20], None);
    for (name, data, digits, limit) in [
        (
            "digits",
            forged(1, 9, HOUR_NS, &one, None),
            9,
            "9 significant digits (1 to 5)",
        ),
        (
            "range",
            forged(1, 5, u64::MAX, &one, None),
            5,
            "more than the 3407872 of ringbench's own histogram at 5 digits",
        ),
        (
            "clen",
            forged(1, 3, HOUR_NS, &one, Some(1 << 30)),
            3,
            "compressed length 1073741824 is longer than the",
        ),
        ("bomb", bomb, 3, "counts run past the 33792 entries"),
        (
            "short",
            forged(30_000, 3, HOUR_NS, &one, None),
            3,
            "payload length is 30000 bytes, but only 1 inflate",
        ),
        (
            "overrun",
            forged(4, 3, HOUR_NS, &[count(-40_000), one.clone()].concat(), None),
            3,
            "counts run past the 33792 entries",
        ),
        (
            "figures",
            forged(1, 3, HOUR_NS, &one, None),
            200,
            "significant_figures 200 differs from its header's 3",
        ),
    ] {
        let file = format!("{name}.json");
        write(&dir, &file, &with_histogram(&data, digits));
        let ended = tool(&dir, &["merge", "a.json", &file, "-q"]);
        ended.assert_refused(&[&file, "test 1 'SET'", limit]);
    }
}

#[test]
fn report_exits_2_when_a_histogram_does_not_decode() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("undecodable");
    // A test's histogram, then a second's, that are base64 but not HdrHistogram's.
    let mut doc = real();
    doc["tests"][0]["histogram"]["data"] = "AAAAAAAAAAAA".into();
    write(&dir, "test.json", &doc);
    let mut doc = real();
    let second = serde_json::json!({"second": 0, "seconds": 1.0, "requests": 1, "rps": 1.0,
        "p50_ms": 0.1, "p99_ms": 0.1, "max_ms": 0.1, "histogram": {"encoding":
        "hdrhistogram-v2-deflate-base64", "unit": "ns", "significant_figures": 3, "data": "AAAAAAAAAAAA"}});
    doc["tests"][0]["per_second"] = Value::Array(vec![second]);
    write(&dir, "second.json", &doc);
    for (file, what) in [("test.json", "test 1 'SET'"), ("second.json", "second 0")] {
        let ended = tool(&dir, &["report", file, "-o", "r.html"]);
        ended.assert_refused(&[file, what, "cookie 0x00000000"]);
    }
}

/// `doc` with the value at JSON pointer `at` set to `v`.
fn set(mut doc: Value, at: &str, v: Value) -> Value {
    *doc.pointer_mut(at).unwrap_or_else(|| panic!("no {at}")) = v;
    doc
}

const LIMIT: u64 = 1 << 53;
const FLAG_MAX: u64 = i64::MAX as u64;

#[test]
fn a_figure_past_2_53_is_refused_naming_its_field() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("figures");
    write(&dir, "a.json", &real());
    let mut kinds = real();
    kinds["tests"][0]["errors"]["by_kind"] = serde_json::json!({"ERR": 1});
    for (at, v, field) in [
        // The finding's: it merged to "19999 requests completed" beside "40000 requested".
        (
            "/tests/0/requests",
            Value::from(u64::MAX),
            "tests[0].requests",
        ),
        (
            "/tests/0/errors/failed",
            Value::from(LIMIT + 1),
            "tests[0].errors.failed",
        ),
        (
            "/tests/0/errors/by_kind/ERR",
            Value::from(u64::MAX),
            "tests[0].errors.by_kind.ERR",
        ),
        (
            "/tests/0/executors/0/requests",
            Value::from(LIMIT + 1),
            "tests[0].executors[0].requests",
        ),
        // A float too: a duration of 1e300 s made `Duration::from_secs_f64` panic.
        (
            "/tests/0/duration_s",
            Value::from(1e300),
            "tests[0].duration_s",
        ),
        (
            "/tests/0/server/used_memory_after",
            Value::from(u64::MAX),
            "tests[0].server.used_memory_after",
        ),
    ] {
        let doc = set(kinds.clone(), at, v);
        write(&dir, "b.json", &doc);
        let ended = tool(&dir, &["merge", "a.json", "b.json", "-q"]);
        ended.assert_refused(&["b.json", field, "past 9007199254740992 (2^53)"]);
    }
    // The flags a run echoes take i64::MAX (-n and -r's range; a `-n` that large stopped by Ctrl+C
    // writes it as the test's `requested`), no more; the seed is any u64.
    for (at, field) in [
        ("/config/requests", "config.requests"),
        ("/config/keyspace", "config.keyspace"),
        ("/tests/0/requested", "tests[0].requested"),
    ] {
        write(&dir, "b.json", &set(real(), at, FLAG_MAX.into()));
        let ended = tool(&dir, &["compare", "a.json", "b.json"]);
        assert_eq!(ended.code, Some(0), "{at}: {}", ended.stderr);
        write(&dir, "b.json", &set(real(), at, u64::MAX.into()));
        let ended = tool(&dir, &["compare", "a.json", "b.json"]);
        ended.assert_refused(&["b.json", field, "past 9223372036854775807 (i64::MAX"]);
    }
    write(
        &dir,
        "b.json",
        &set(real(), "/config/seed", u64::MAX.into()),
    );
    let ended = tool(&dir, &["merge", "a.json", "b.json", "-q"]);
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
}

#[test]
fn sums_past_2_53_are_refused_not_wrapped_or_saturated() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("sums");
    // Each file's figure is within the limit; their sum is past it.
    for (at, limit, what) in [
        ("/tests/0/requests", LIMIT, "requests of test 'SET'"),
        (
            "/tests/0/errors/failed",
            LIMIT,
            "failed requests of test 'SET'",
        ),
        ("/config/requests", FLAG_MAX, "config.requests"),
        ("/config/clients", FLAG_MAX, "config.clients"),
        ("/tests/0/requested", FLAG_MAX, "requested of test 'SET'"),
    ] {
        let doc = set(real(), at, limit.into());
        write(&dir, "a.json", &doc);
        write(&dir, "b.json", &doc);
        let ended = tool(&dir, &["merge", "a.json", "b.json", "-q"]);
        ended.assert_refused(&["cannot merge: the files'", what, "add up past"]);
    }
    // Histograms: the finding's counts near i64::MAX (they merged to p99 0.000) are refused as they load;
    // two of 2^52 + 1 each load, and their sum is refused.
    let near = count(i64::MAX - 1000);
    let near = forged(near.len() as u32, 3, HOUR_NS, &near, None);
    write(&dir, "a.json", &with_histogram(&near, 3));
    let ended = tool(&dir, &["merge", "a.json", "b.json", "-q"]);
    ended.assert_refused(&["a.json", "a count of 9223372036854774807, more than"]);
    let half = count((1 << 52) + 1);
    let half = forged(half.len() as u32, 3, HOUR_NS, &half, None);
    write(&dir, "a.json", &with_histogram(&half, 3));
    write(&dir, "b.json", &with_histogram(&half, 3));
    let ended = tool(&dir, &["merge", "a.json", "b.json", "-q"]);
    ended.assert_refused(&["test 'SET'", "counts add up past 9007199254740992"]);
}

#[test]
fn the_read_pass_fails_no_more_keys_than_it_checked() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("verify");
    let verify = serde_json::json!({"checked": 5, "verified": 0, "mismatched": 7, "missing": 0,
        "errors": 0, "examples": []});
    let mut doc = real();
    doc["tests"][0]["data_verify"] = verify;
    write(&dir, "a.json", &doc);
    write(&dir, "b.json", &real());
    let ended = tool(&dir, &["merge", "b.json", "a.json", "-q"]);
    ended.assert_refused(&[
        "a.json",
        "7 keys mismatched, missing or in error, more than the 5 checked",
    ]);
}

/// Every number of `v` (its histograms aside: their digits are a small type) set to 2^53, a count's
/// limit.
fn at_the_limit(v: &mut Value) {
    match v {
        Value::Number(n) => {
            *v = if n.is_f64() {
                Value::from(LIMIT as f64)
            } else {
                Value::from(LIMIT)
            }
        }
        Value::Array(items) => items.iter_mut().for_each(at_the_limit),
        Value::Object(fields) => fields
            .iter_mut()
            .filter(|(k, _)| k.as_str() != "histogram")
            .for_each(|(_, x)| at_the_limit(x)),
        _ => {}
    }
}

#[test]
fn every_figure_at_its_limit_is_read_without_a_panic() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("limit");
    let mut doc = real();
    at_the_limit(&mut doc["tests"][0]);
    for flag in [
        "clients",
        "requests",
        "data_size",
        "keyspace",
        "pipeline",
        "threads",
    ] {
        doc["config"][flag] = FLAG_MAX.into();
    }
    doc["tests"][0]["requested"] = FLAG_MAX.into();
    write(&dir, "a.json", &doc);
    write(&dir, "b.json", &doc);
    for args in [
        vec!["compare", "a.json", "b.json", "--plot", "c.svg"],
        vec!["report", "a.json", "b.json", "-o", "r.html"],
    ] {
        let ended = tool(&dir, &args);
        assert_eq!(ended.code, Some(0), "{args:?}: {}", ended.stderr);
        ended.assert_small();
    }
    let ended = tool(&dir, &["merge", "a.json", "b.json", "-q"]);
    ended.assert_refused(&["cannot merge: the files'", "add up past"]);
}

/// A histogram at 5 significant digits holding one count: 26 MiB of counts once decoded.
fn five_digits() -> String {
    let one = count(1);
    forged(one.len() as u32, 5, HOUR_NS, &one, None)
}

#[test]
fn many_tests_at_5_digits_are_decoded_one_at_a_time() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("many");
    // 20 tests (a 26 KB file), each histogram 26 MiB decoded: merge held them all (575 MB), compare
    // --plot twice that, report's capacity knee every step's.
    let mut doc = with_histogram(&five_digits(), 5);
    let t0 = doc["tests"][0].clone();
    let mut tests = Vec::new();
    let mut steps = Vec::new();
    for i in 0..20 {
        let mut t = t0.clone();
        t["title"] = format!("T{i}").into();
        tests.push(t);
        steps.push(serde_json::json!({"offered_rps": 1000.0 * (i + 1) as f64,
            "achieved_rps": 1000.0, "pass": true, "reasons": [], "warmup_requests": 0,
            "client_busy": 0.1}));
    }
    doc["config"]["tests"] = tests.iter().map(|t| t["title"].clone()).collect();
    doc["tests"] = Value::Array(tests);
    write(&dir, "a.json", &doc);
    write(&dir, "b.json", &doc);
    doc["capacity"] = serde_json::json!({"objectives": [{"percentile": 99.0, "max_ms": 1.0}],
        "precision": 0.05, "step_duration_s": 1.0, "warmup_s": 0.0, "probe": null, "steps": steps,
        "capacity_rps": 20000.0, "next_rps": null, "client_limited": false});
    write(&dir, "capacity.json", &doc);
    for args in [
        vec!["merge", "a.json", "b.json", "-q", "--plot", "m.svg"],
        vec!["compare", "a.json", "b.json", "--plot", "c.svg"],
        vec!["report", "capacity.json", "-o", "r.html"],
    ] {
        let ended = tool(&dir, &args);
        assert_eq!(ended.code, Some(0), "{args:?}: {}", ended.stderr);
        ended.assert_small();
    }
    let page = std::fs::read_to_string(dir.path("r.html")).unwrap();
    assert!(page.contains("capacity: latency against offered load"));
}

#[test]
fn a_test_holding_more_than_64_mib_of_histograms_is_refused() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("held");
    // One test of 20 mixed commands, each histogram at 5 digits: 520 MiB decoded together, which the
    // merged text report held (549 MB).
    let mut doc = real();
    let t = &mut doc["tests"][0];
    t["per_second"] = Value::Array(Vec::new());
    let command = serde_json::json!({"title": "GET", "command": "GET", "requests": 1, "errors": 0,
        "rps": 1.0, "latency_ms": t["latency_ms"].clone(), "histogram": {"encoding":
        "hdrhistogram-v2-deflate-base64", "unit": "ns", "significant_figures": 5,
        "data": five_digits()}});
    t["commands"] = (0..20)
        .map(|i| {
            let mut c = command.clone();
            c["title"] = format!("C{i}").into();
            c
        })
        .collect();
    write(&dir, "a.json", &doc);
    write(&dir, "b.json", &doc);
    let ended = tool(&dir, &["merge", "a.json", "b.json", "-q"]);
    ended.assert_refused(&[
        "merged test 'SET'",
        "take 520 MiB decoded, more than the 64 MiB a file tool holds at once",
    ]);
    assert_eq!(std::fs::read_to_string(dir.path("tool.out")).unwrap(), "");
}

/// A title that clears the screen, sets the terminal's title, rings its bell, returns over its line,
/// breaks it, reverses what follows, and holds a C1 control (CSI).
const HOSTILE: &str = "SET\u{1b}[2J\u{1b}]0;pwned\u{7}\rX\nY\u{202e}Z\u{9b}0m";

/// No control character but line breaks, no bidirectional override, in `text`.
fn assert_printable(what: &str, text: &str) {
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
        .collect();
    assert!(bad.is_empty(), "{what}: {bad:?} in:\n{text}");
}

#[test]
fn strings_from_files_reach_the_terminal_escaped() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("printable");
    let mut doc = real();
    doc["tests"][0]["title"] = HOSTILE.into();
    doc["config"]["tests"] = serde_json::json!([HOSTILE]);
    doc["client_host"] = "host\u{7}\u{1b}[31m".into();
    doc["tests"][0]["errors"]["first"] = "ERR \u{1b}[5m".into();
    write(&dir, "a.json", &doc);
    write(&dir, "b.json", &doc);
    doc["config"]["target"] = "127.0.0.1:\u{1b}[8m1".into();
    doc["config"]["pipeline"] = 7.into();
    write(&dir, "c.json", &doc);
    let mut bad = doc.clone();
    bad["tests"][0]["histogram"]["data"] = "AAAAAAAAAAAA".into();
    write(&dir, "bad.json", &bad);
    // The same title, escaped as each tool prints it.
    let shown = "SET\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\rX\\nY\\u{202e}Z\\u{9b}0m";
    for args in [
        vec!["compare", "a.json", "c.json", "--plot", "c.svg"],
        vec!["merge", "a.json", "b.json"],
        vec!["merge", "a.json", "b.json", "-q", "--plot", "m.svg"],
        vec!["report", "a.json", "c.json", "-o", "r.html"],
        vec!["merge", "a.json", "bad.json"],
    ] {
        let ended = tool(&dir, &args);
        assert_printable(&format!("{args:?} stdout"), &ended.stdout);
        assert_printable(&format!("{args:?} stderr"), &ended.stderr);
        assert!(
            ended.stdout.contains(shown) || ended.stderr.contains(shown) || args[0] == "report",
            "{args:?}: no {shown} in\n{}\n{}",
            ended.stdout,
            ended.stderr
        );
    }
    // The charts and the page: the target (compare's subtitle) and the title, escaped.
    for (file, want) in [
        ("c.svg", "127.0.0.1:\\u{1b}[8m1"),
        ("m.svg", "SET\\u{1b}[2J"),
        ("r.html", "SET\\u{1b}[2J"),
    ] {
        let text = std::fs::read_to_string(dir.path(file)).unwrap();
        assert_printable(file, &text);
        assert!(text.contains(want), "no {want} in {file}");
    }
}

#[test]
fn a_missing_output_folder_is_a_usage_error_before_any_input_is_read() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("outputs");
    write(&dir, "a.json", &real());
    write(&dir, "b.json", &real());
    // The inputs are fine, missing, or hostile (a histogram claiming 4 GiB): the output is found first.
    let big = forged(u32::MAX, 3, HOUR_NS, &[2; 100], None);
    write(&dir, "big.json", &with_histogram(&big, 3));
    for inputs in [
        ["a.json", "b.json"],
        ["none.json", "b.json"],
        ["a.json", "big.json"],
    ] {
        for (args, flag) in [
            (vec!["merge", "--json", "/no/such/m.json", "-q"], "'--json'"),
            (vec!["merge", "--plot", "/no/such/m.svg"], "'--plot'"),
            (vec!["compare", "--plot", "/no/such/c.png"], "'--plot'"),
            (vec!["report", "-o", "/no/such/r.html"], "'--output'"),
            (vec!["report", "--output", "."], "'--output'"),
        ] {
            let mut args = args.clone();
            args.extend(inputs);
            let ended = tool(&dir, &args);
            let folder = if flag == "'--output'" && args.contains(&".") {
                "'.' is a folder"
            } else {
                "folder '/no/such' does not exist"
            };
            ended.assert_refused(&[flag, folder]);
            assert_eq!(ended.stdout, "", "{args:?}");
        }
    }
}

#[test]
fn sigint_ends_a_long_merge_within_a_second() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("sigint");
    // A real test with 600 seconds, each second's histogram at 5 digits: merge adds them second by
    // second (26 MiB each decoded), for many seconds.
    let mut doc = real();
    let second = serde_json::json!({"second": 0, "seconds": 1.0, "requests": 1, "rps": 1.0,
        "p50_ms": 0.1, "p99_ms": 0.1, "max_ms": 0.1, "histogram": {"encoding":
        "hdrhistogram-v2-deflate-base64", "unit": "ns", "significant_figures": 5,
        "data": five_digits()}});
    doc["tests"][0]["per_second"] = (0..600)
        .map(|i| {
            let mut s = second.clone();
            s["second"] = i.into();
            s
        })
        .collect();
    write(&dir, "a.json", &doc);
    write(&dir, "b.json", &doc);
    let (ended, after) = tool_interrupted(
        &dir,
        &["merge", "a.json", "b.json", "-q"],
        Some(Duration::from_millis(700)),
    );
    let after = after.expect("still running when interrupted");
    assert_eq!(ended.signal, Some(libc::SIGINT), "{}", ended.stderr);
    assert!(
        after < Duration::from_secs(1),
        "ended {after:?} after SIGINT"
    );
    ended.assert_small();
}
