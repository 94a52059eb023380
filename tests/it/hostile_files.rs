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
use std::sync::OnceLock;

/// The address space the tools run in: a tool that allocates what a file claims fails past it.
const ADDRESS_SPACE: u64 = 200 << 20;
/// The most resident memory a tool may reach on these files.
const PEAK_MIB: u64 = 100;

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

/// Runs ringbench with `args` in `dir` under [`ADDRESS_SPACE`], its output into files; its peak memory.
fn tool(dir: &Scratch, args: &[&str]) -> Ended {
    let (out, err) = (dir.path("tool.out"), dir.path("tool.err"));
    let mut cmd = Command::new(crate::common::cluster::bin());
    cmd.args(args)
        .current_dir(&dir.0)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap());
    sys::limit_address_space(&mut cmd, ADDRESS_SPACE);
    let (status, peak_kib) = sys::wait_with_peak_rss(cmd.spawn().unwrap());
    Ended {
        code: status.code(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        peak_mib: peak_kib / 1024,
    }
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
