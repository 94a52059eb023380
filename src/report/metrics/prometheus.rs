//! `--metrics-listen`: the run's live figures as an OpenMetrics page at `/metrics`, served from
//! threads of its own (never an executor) until the run is over and a scrape has read the final
//! figures, or `--metrics-linger` has passed.
//!
//! The page is written by prometheus-client's OpenMetrics encoder (escaping, `# TYPE` / `# UNIT` lines,
//! the `_total` and `_bucket` suffixes, `# EOF`), a well-kept crate: the format is where a hand-written
//! encoder would go wrong with some scraper. It is served by `http.rs`, the small HTTP/1.1 server of
//! this folder, bounded in the threads, memory and time any client can make it hold.

use crate::report::metrics::board::{Board, State};
use crate::report::metrics::http;
use crate::stats::live::Snapshot;
use hdrhistogram::Histogram;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Latency bucket bounds in seconds: 1, 1.5, 2, 3, 5 and 7 per decade from 10 µs to 10 s, fine enough
/// for `histogram_quantile` to land within a step of the true percentile.
pub const BOUNDS_S: [f64; 37] = [
    10e-6, 15e-6, 20e-6, 30e-6, 50e-6, 70e-6, 100e-6, 150e-6, 200e-6, 300e-6, 500e-6, 700e-6, 1e-3,
    1.5e-3, 2e-3, 3e-3, 5e-3, 7e-3, 10e-3, 15e-3, 20e-3, 30e-3, 50e-3, 70e-3, 100e-3, 150e-3,
    200e-3, 300e-3, 500e-3, 700e-3, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0,
];

/// The endpoint of a run: its server, and the board it serves.
pub struct Endpoint {
    /// The address it listens on (the port the kernel chose for port 0).
    pub addr: SocketAddr,
    server: http::Server,
    board: Arc<Board>,
}

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[error("--metrics-listen {addr}: cannot listen: {reason}")]
pub struct ListenError {
    addr: SocketAddr,
    reason: String,
}

/// The page's media type.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

impl Endpoint {
    /// Listens on `addr` and serves `board` from threads of its own.
    pub fn start(addr: SocketAddr, board: Arc<Board>) -> Result<Endpoint, ListenError> {
        let served = board.clone();
        let handler = move |path: &str| {
            if path != "/metrics" {
                return http::Reply::text(404, "not found: the metrics are at /metrics");
            }
            // Counted before the page is made: what it shows is at least as new as the count.
            served.note_read();
            http::Reply {
                status: 200,
                content_type: OPENMETRICS,
                body: page(&served),
            }
        };
        let server = http::Server::start(addr, Box::new(handler)).map_err(|e| ListenError {
            addr,
            reason: e.to_string(),
        })?;
        Ok(Endpoint {
            addr: server.addr,
            server,
            board,
        })
    }

    /// After the run: waits until a scrape has read the final figures, at most `linger`, then stops.
    pub fn linger(mut self, linger: Duration) {
        let until = Instant::now() + linger;
        while Instant::now() < until && self.board.read(|s| s.final_reads) == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.server.shut();
    }
}

/// The OpenMetrics page of `board` now.
pub fn page(board: &Arc<Board>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Figures(board.clone())));
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

#[derive(Debug)]
struct Figures(Arc<Board>);

impl Collector for Figures {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.0.read(|s| encode_state(s, &mut enc))
    }
}

/// One test's label set.
fn test_label(title: &str) -> [(&'static str, &str); 1] {
    [("test", title)]
}

/// Every family of the scrape: the run's, each test's counts and latency, a mix's parts, the client's.
fn encode_state(s: &State, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    encode_run(s, enc)?;
    let totals: Vec<(&str, Option<Snapshot>)> = s
        .tests
        .iter()
        .map(|t| (t.title.as_str(), t.total()))
        .collect();
    encode_counts(s, &totals, enc)?;
    encode_latency(&totals, enc)?;
    encode_parts(&totals, enc)?;
    encode_client(s, enc)
}

/// The run's info (target and flags) and whether it has finished.
fn encode_run(s: &State, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let info: Vec<(&str, &str)> = s
        .info
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    enc.encode_descriptor(
        "ringbench_run",
        "The run's target and flags (value 1)",
        None,
        MetricType::Info,
    )?
    .encode_info(&info)?;
    gauge(
        enc,
        "ringbench_run_finished",
        "1 once every test of the run has ended: the figures are final",
        &[(None, u64::from(s.finished) as f64)],
    )
}

/// Each test's request counters (completed, error replies, failed, not sent), its rate and whether it
/// runs; `totals` holds each test's figures so far.
fn encode_counts(
    s: &State,
    totals: &[(&str, Option<Snapshot>)],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let of = |f: fn(&Snapshot) -> u64| -> Vec<(Option<&str>, u64)> {
        totals
            .iter()
            .map(|(t, snap)| (Some(*t), snap.as_ref().map_or(0, f)))
            .collect()
    };
    counter(
        enc,
        "ringbench_requests_completed",
        "Replies received (error replies included)",
        &of(|x| x.completed),
    )?;
    counter(
        enc,
        "ringbench_error_replies",
        "Error replies received",
        &of(|x| x.errors),
    )?;
    counter(
        enc,
        "ringbench_requests_failed",
        "Requests sent whose reply never came (connection lost, timeout)",
        &of(|x| x.failed),
    )?;
    let not_sent: Vec<(Option<&str>, u64)> = s
        .tests
        .iter()
        .map(|t| (Some(t.title.as_str()), t.not_sent))
        .collect();
    counter(
        enc,
        "ringbench_requests_not_sent",
        "Requests never sent: the run gave up on the server or was stopped (known when a test ends)",
        &not_sent,
    )?;
    let rates: Vec<(Option<&str>, f64)> = s
        .tests
        .iter()
        .map(|t| (Some(t.title.as_str()), t.rate))
        .collect();
    gauge(
        enc,
        "ringbench_requests_per_second",
        "Replies per second over about the last second (0 when the test is not running)",
        &rates,
    )?;
    let running: Vec<(Option<&str>, f64)> = s
        .tests
        .iter()
        .map(|t| (Some(t.title.as_str()), u64::from(t.running) as f64))
        .collect();
    gauge(
        enc,
        "ringbench_test_running",
        "1 while the test runs",
        &running,
    )
}

/// Each test's latency histogram (the tests with figures so far).
fn encode_latency(
    totals: &[(&str, Option<Snapshot>)],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(
        "ringbench_latency",
        "Latency of each reply (open loop: from its intended send time)",
        Some(&Unit::Seconds),
        MetricType::Histogram,
    )?;
    for (title, snap) in totals {
        if let Some(snap) = snap {
            histogram(&mut m.encode_family(&test_label(title))?, &snap.hist)?;
        }
    }
    Ok(())
}

/// The client's own figures: the CPU time ringbench has used and how busy each executor was.
fn encode_client(s: &State, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let (user, sys) = crate::stats::process_cpu_seconds();
    let cpu = user + sys;
    enc.encode_descriptor(
        "ringbench_client_cpu",
        "CPU time the ringbench process has used (user and system)",
        Some(&Unit::Seconds),
        MetricType::Counter,
    )?
    .encode_counter::<NoLabelSet, f64, u64>(&cpu, None)?;
    let busy = s
        .tests
        .iter()
        .rev()
        .find(|t| t.running)
        .or(s.tests.last())
        .map(|t| t.busy.clone())
        .unwrap_or_default();
    let ratio = Unit::Other("ratio".to_string());
    let mut m = enc.encode_descriptor(
        "ringbench_executor_busy",
        "Share of the last interval each executor's thread was on a CPU (the running or last test)",
        Some(&ratio),
        MetricType::Gauge,
    )?;
    for (i, b) in busy.iter().enumerate() {
        let label = [("executor", i.to_string())];
        m.encode_family(&label)?.encode_gauge(b)?;
    }
    Ok(())
}

/// A mix's per-command counters and latencies (`test` and `command` labels).
fn encode_parts(
    totals: &[(&str, Option<Snapshot>)],
    enc: &mut DescriptorEncoder,
) -> Result<(), std::fmt::Error> {
    let parts: Vec<(&str, &crate::stats::live::PartSnapshot)> = totals
        .iter()
        .filter_map(|(t, s)| s.as_ref().map(|s| (*t, s)))
        .flat_map(|(t, s)| s.parts.iter().map(move |p| (t, p)))
        .collect();
    if parts.is_empty() {
        return Ok(());
    }
    type Pick = fn(&crate::stats::live::PartSnapshot) -> u64;
    let families: [(&str, &str, Pick); 2] = [
        (
            "ringbench_command_completed",
            "Replies received per command of a mix",
            |p| p.completed,
        ),
        (
            "ringbench_command_error_replies",
            "Error replies per command of a mix",
            |p| p.errors,
        ),
    ];
    for (name, help, pick) in families {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (t, p) in &parts {
            let labels = [("test", *t), ("command", p.command.as_str())];
            m.encode_family(&labels)?
                .encode_counter::<NoLabelSet, u64, u64>(&pick(p), None)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "ringbench_command_latency",
        "Latency of each reply per command of a mix",
        Some(&Unit::Seconds),
        MetricType::Histogram,
    )?;
    for (t, p) in &parts {
        let labels = [("test", *t), ("command", p.command.as_str())];
        histogram(&mut m.encode_family(&labels)?, &p.hist)?;
    }
    Ok(())
}

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    values: &[(Option<&str>, u64)],
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (test, v) in values {
        match test {
            Some(t) => m
                .encode_family(&test_label(t))?
                .encode_counter::<NoLabelSet, u64, u64>(v, None)?,
            None => m.encode_counter::<NoLabelSet, u64, u64>(v, None)?,
        }
    }
    Ok(())
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    values: &[(Option<&str>, f64)],
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (test, v) in values {
        match test {
            Some(t) => m.encode_family(&test_label(t))?.encode_gauge(v)?,
            None => m.encode_gauge(v)?,
        }
    }
    Ok(())
}

/// A latency histogram (ns) as Prometheus buckets in seconds.
fn histogram(
    m: &mut prometheus_client::encoding::MetricEncoder,
    h: &Histogram<u64>,
) -> Result<(), std::fmt::Error> {
    let (buckets, sum) = buckets(h);
    m.encode_histogram::<NoLabelSet>(sum, h.len(), &buckets, None)
}

/// The per-bucket (not cumulative) counts of `h` under [`BOUNDS_S`], the last bucket unbounded, and
/// the sum of the values in seconds.
pub fn buckets(h: &Histogram<u64>) -> (Vec<(f64, u64)>, f64) {
    let mut out: Vec<(f64, u64)> = BOUNDS_S
        .iter()
        .map(|&b| (b, 0))
        .chain(std::iter::once((f64::INFINITY, 0)))
        .collect();
    let mut sum_ns = 0f64;
    let mut i = 0;
    for v in h.iter_recorded() {
        let ns = h.median_equivalent(v.value_iterated_to());
        let s = ns as f64 / 1e9;
        while i < BOUNDS_S.len() && s > BOUNDS_S[i] {
            i += 1;
        }
        out[i].1 += v.count_at_value();
        sum_ns += ns as f64 * v.count_at_value() as f64;
    }
    (out, sum_ns / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_histogram;

    #[test]
    fn buckets_hold_every_value_once() {
        let mut h = new_histogram(3);
        h.record_n(40_000, 10).unwrap(); // 40 µs
        h.record_n(2_500_000, 3).unwrap(); // 2.5 ms
        h.record(20_000_000_000).unwrap(); // 20 s, past the last bound
        let (b, sum) = buckets(&h);
        let count = |bound: f64| b.iter().find(|(x, _)| *x == bound).unwrap().1;
        assert_eq!(count(50e-6), 10);
        assert_eq!(count(3e-3), 3);
        assert_eq!(count(f64::INFINITY), 1);
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), 14);
        assert!(
            (sum - (10.0 * 40e-6 + 3.0 * 2.5e-3 + 20.0)).abs() < 0.05,
            "{sum}"
        );
    }
}
