//! Live metrics against real peers: Debian's `prometheus` scraping `--metrics-listen` during a run
//! (its HTTP API queried afterwards), and a UDP listener receiving `--statsd`'s datagrams. Counts are
//! checked against the real redis-server's commandstats.

use crate::common::bench::Bench;
use crate::common::scratch::Scratch;
use crate::common::{RedisServer, free_port};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A plain HTTP/1.0 GET on loopback: (status, body).
pub(crate) fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let status = raw.split_whitespace().nth(1)?.parse().ok()?;
    let body = raw.split_once("\r\n\r\n").map(|x| x.1.to_string())?;
    Some((status, body))
}

/// Percent-encodes a PromQL query for a URL.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A Prometheus server of its own, scraping `target` once a second; stopped when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: Scratch,
}

impl Prometheus {
    fn start(target: u16) -> Prometheus {
        let dir = Scratch::new("prometheus");
        let config = dir.path("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: ringbench\n    static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={config}"))
            .arg(format!("--storage.tsdb.path={}", dir.path("data")))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path("prometheus.log")).unwrap())
            .spawn()
            .expect("prometheus must be installed (apt-get install prometheus)");
        let p = Prometheus {
            child,
            port,
            _dir: dir,
        };
        let start = Instant::now();
        while http_get(port, "/-/ready").map(|r| r.0) != Some(200) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "prometheus did not become ready on port {port}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // Targets reach the scrape loop a few seconds after ready: wait for its first (failed) scrape,
        // so the run is scraped from its first second.
        while !http_get(port, "/api/v1/targets").is_some_and(|r| {
            r.1.contains("\"health\":\"down\"") || r.1.contains("\"health\":\"up\"")
        }) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "prometheus did not start scraping"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        p
    }

    /// The single value of an instant query (`None`: no series).
    fn value(&self, query: &str) -> Option<f64> {
        let (status, body) =
            http_get(self.port, &format!("/api/v1/query?query={}", encode(query)))?;
        assert_eq!(status, 200, "{query}: {body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let result = v["data"]["result"].as_array()?;
        assert!(result.len() <= 1, "{query}: {body}");
        result.first()?["value"][1].as_str()?.parse().ok()
    }

    /// Polls `query` until it gives `want` (Prometheus stores a scrape a moment after it is served).
    fn wait_for(&self, query: &str, want: f64) -> Option<f64> {
        let start = Instant::now();
        loop {
            let got = self.value(query);
            if got == Some(want) || start.elapsed() > Duration::from_secs(15) {
                return got;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON report's p99 (ms) of test `title`.
fn json_p99(json: &serde_json::Value, title: &str) -> f64 {
    json["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == title)
        .unwrap()["latency_ms"]["p99"]
        .as_f64()
        .unwrap()
}

#[test]
fn prometheus_scrapes_a_run_and_its_final_totals_match_the_server() {
    let _turn = crate::common::lock::shared();
    let server = RedisServer::start();
    let port = free_port();
    let prom = Prometheus::start(port);
    let dir = Scratch::new("scrape");
    let json = dir.path("run.json");
    let listen = format!("127.0.0.1:{port}");
    let args = [
        "-t",
        "set,get",
        "--duration",
        "5",
        "-c",
        "20",
        "--metrics-listen",
        &listen,
        "--metrics-linger",
        "20",
        "--json",
        &json,
        "-q",
    ];
    let started = Instant::now();
    let out = Bench::on(&server).args(args).output();
    let took = started.elapsed();
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The linger ends at the first scrape after the run, well before its 20 s bound.
    assert!(took < Duration::from_secs(18), "took {took:?}");
    let stats = server.commandstats();
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for (test, cmd) in [("SET", "set"), ("GET", "get")] {
        let calls = stats[cmd] as f64;
        assert!(calls > 1000.0, "{cmd}: {calls}");
        let series = format!("ringbench_requests_completed_total{{test=\"{test}\"}}");
        // The final scrape, read past the staleness mark Prometheus sets when the target went away.
        let last = prom.wait_for(&format!("last_over_time({series}[5m])"), calls);
        assert_eq!(
            last,
            Some(calls),
            "{test}: Prometheus's total vs the server's calls"
        );
        // Scraped while the test ran, not only at the end: smaller totals came first.
        let scrapes = prom
            .value(&format!("count_over_time({series}[5m])"))
            .unwrap();
        assert!(scrapes >= 4.0, "{test}: {scrapes} scrapes");
        let first = prom.value(&format!("min_over_time({series}[5m])")).unwrap();
        assert!(first < calls, "{test}: first scrape {first} of {calls}");
        let failed = prom.value(&format!(
            "last_over_time(ringbench_requests_failed_total{{test=\"{test}\"}}[5m])"
        ));
        assert_eq!(failed, Some(0.0));
        // histogram_quantile over the whole test's buckets lands near the report's own p99.
        let p99 = prom
            .value(&format!(
                "histogram_quantile(0.99, last_over_time(ringbench_latency_seconds_bucket{{test=\"{test}\"}}[5m]))"
            ))
            .unwrap()
            * 1e3;
        let own = json_p99(&report, test);
        assert!(
            p99 > own / 1.7 && p99 < own * 1.7,
            "{test}: histogram_quantile p99 {p99} ms vs the report's {own} ms"
        );
    }
    let up = prom.value("max_over_time(up{job=\"ringbench\"}[5m])");
    assert_eq!(up, Some(1.0));
}

#[test]
fn the_endpoint_serves_openmetrics_while_the_run_lasts() {
    let _turn = crate::common::lock::shared();
    let server = RedisServer::start();
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let child = Bench::on(&server)
        .args([
            "-t",
            "get",
            "--duration",
            "3",
            "-c",
            "5",
            "--metrics-listen",
            &listen,
            "--metrics-linger",
            "0",
        ])
        .spawn();
    let start = Instant::now();
    let page = loop {
        if let Some((200, body)) = http_get(port, "/metrics")
            && body.contains("ringbench_test_running{test=\"GET\"} 1")
        {
            break body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no page while running"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(page.ends_with("# EOF\n"), "{page}");
    assert!(page.contains("# TYPE ringbench_latency_seconds histogram"));
    assert!(page.contains("ringbench_run_info{version="), "{page}");
    assert!(page.contains(&format!("target=\"127.0.0.1:{}\"", server.port)));
    assert_eq!(http_get(port, "/nothing").map(|r| r.0), Some(404));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("Serving live metrics at http://{listen}/metrics")),
        "{text}"
    );
    assert!(out.stderr.is_empty());
}

#[test]
fn a_taken_metrics_port_is_a_one_line_error() {
    let _turn = crate::common::lock::shared();
    let server = RedisServer::start();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let out = Bench::on(&server)
        .args(["-t", "get", "-n", "10", "--metrics-listen", &addr])
        .output();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("--metrics-listen {addr}: cannot listen")),
        "{err}"
    );
    assert_eq!(server.calls("get"), 0);
    let out = Bench::on(&server)
        .args(["--metrics-listen", "localhost:1"])
        .output();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn statsd_lines_arrive_once_a_second_and_end_with_the_final_figures() {
    let _turn = crate::common::lock::shared();
    let server = RedisServer::start();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let dest = sock.local_addr().unwrap().to_string();
    let mut child = Bench::on(&server)
        .args([
            "-t",
            "get",
            "--duration",
            "3.5",
            "-c",
            "5",
            "--statsd",
            &dest,
            "--statsd-prefix",
            "lab",
            "--statsd-run-label",
            "t1",
            "-q",
        ])
        .spawn();
    let mut datagrams = Vec::new();
    let mut buf = [0u8; 65536];
    let status = loop {
        if let Ok(n) = sock.recv(&mut buf) {
            datagrams.push(String::from_utf8(buf[..n].to_vec()).unwrap());
        }
        if let Some(s) = child.try_wait().unwrap() {
            // Anything still queued in the socket.
            while let Ok(n) = sock.recv(&mut buf) {
                datagrams.push(String::from_utf8(buf[..n].to_vec()).unwrap());
            }
            break s;
        }
    };
    assert!(status.success());
    let value = |d: &str, metric: &str| -> Option<(f64, String)> {
        d.lines().find_map(|l| {
            let rest = l.strip_prefix(&format!("lab.t1.get.{metric}:"))?;
            let (v, kind) = rest.split_once('|')?;
            Some((v.parse().ok()?, kind.to_string()))
        })
    };
    for d in &datagrams {
        for l in d.lines() {
            assert!(
                l.starts_with("lab.t1.get.") && l.contains(':') && l.contains('|'),
                "{l}"
            );
        }
    }
    // A push each second while it ran, then the end's.
    let live: Vec<&String> = datagrams
        .iter()
        .filter(|d| value(d, "ops_sec").is_some_and(|v| v.0 > 0.0))
        .collect();
    assert!(live.len() >= 2, "{datagrams:#?}");
    let last = datagrams.last().unwrap();
    assert_eq!(value(last, "ops_sec"), Some((0.0, "g".to_string())));
    assert_eq!(
        value(last, "completed").unwrap().0,
        server.calls("get") as f64
    );
    let p99 = value(live[0], "latency_p99").unwrap();
    assert!(p99.0 > 0.0 && p99.0 < 1000.0 && p99.1 == "g", "{p99:?}");
    assert_eq!(value(live[0], "latency_ms").unwrap().1, "ms");
    assert_eq!(value(live[0], "connections").unwrap().0, 5.0);
}
