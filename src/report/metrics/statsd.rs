//! `--statsd`: once a second while a test runs, its rate and latencies go to a StatsD server over UDP
//! as one datagram of lines `<prefix>.<label>.<test>.<metric>:<value>|<type>` (memtier_benchmark's
//! metric names, with the test's name added because a ringbench run holds several tests; memtier's
//! personality sends memtier's own names, without it). A test's end
//! sends its final figures and a zero rate, so a dashboard's line drops when the load stops.

use crate::config::metrics::StatsdSettings;
use crate::report::metrics::board::Board;
use hdrhistogram::Histogram;
use std::fmt::Write;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// How often the figures go out.
pub const EVERY: Duration = Duration::from_secs(1);

/// The percentiles sent as gauges, with their names' suffixes.
const PERCENTILES: [(f64, &str); 3] = [(50.0, "p50"), (99.0, "p99"), (99.9, "p99_9")];

/// A StatsD destination and what was last sent to it.
pub struct Statsd {
    socket: UdpSocket,
    /// `<prefix>.<label>.`
    stem: String,
    /// memtier's names: no test segment.
    flat: bool,
    clients: usize,
    next: Instant,
    /// The test last sent: its name, and its figures then (for the last interval's deltas).
    prev: Option<(String, Histogram<u64>)>,
    /// When the test last sent began, and its completed count then (for the running average).
    began: Option<(String, Instant, u64)>,
}

/// Why the StatsD destination cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("--statsd {host}:{port}: {reason}")]
pub struct StatsdError {
    host: String,
    port: u16,
    reason: String,
}

impl Statsd {
    /// A socket sending to `s`'s server (its name looked up now).
    pub fn connect(s: &StatsdSettings, clients: usize) -> Result<Statsd, StatsdError> {
        let err = |reason: String| StatsdError {
            host: s.host.clone(),
            port: s.port,
            reason,
        };
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(s.host.as_str(), s.port))
            .map_err(|e| err(format!("cannot resolve '{}': {e}", s.host)))?
            .next()
            .ok_or_else(|| err(format!("'{}' has no address", s.host)))?;
        let local = if addr.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let socket = UdpSocket::bind(local).map_err(|e| err(e.to_string()))?;
        socket.connect(addr).map_err(|e| err(e.to_string()))?;
        // A full socket buffer drops a second's figures rather than slowing the run.
        let _ = socket.set_nonblocking(true);
        Ok(Statsd {
            socket,
            stem: format!("{}.{}.", s.prefix, s.label),
            flat: s.flat,
            clients,
            next: Instant::now(),
            prev: None,
            began: None,
        })
    }

    /// Sends the running test's figures when a second has passed since the last send.
    pub fn tick(&mut self, board: &Board, now: Instant) {
        if now >= self.next {
            self.next = now + EVERY;
            self.send(board, now, None);
        }
    }

    /// A test ended: its final figures, with a zero rate.
    pub fn end_test(&mut self, board: &Board, title: &str) {
        self.send(board, Instant::now(), Some(title));
        self.prev = None;
        self.began = None;
    }

    /// Sends the figures of the running test, or of test `ended` that has just ended.
    fn send(&mut self, board: &Board, now: Instant, ended: Option<&str>) {
        let lines = board.read(|s| {
            let t = match ended {
                Some(title) => s.tests.iter().find(|t| t.title == title),
                None => s.tests.iter().find(|t| t.running),
            }?;
            let total = t.total()?;
            Some(self.lines(&t.title, t.rate, &total, now, ended.is_some()))
        });
        if let Some(lines) = lines {
            let _ = self.socket.send(lines.as_bytes());
        }
    }

    fn lines(
        &mut self,
        title: &str,
        rate: f64,
        total: &crate::stats::live::Snapshot,
        now: Instant,
        ended: bool,
    ) -> String {
        let name = if self.flat {
            String::new()
        } else {
            metric_name(title) + "."
        };
        if self.began.as_ref().is_none_or(|b| b.0 != *title) {
            self.began = Some((title.to_string(), now, total.completed));
            self.prev = None;
        }
        let (_, since, at_start) = self.began.clone().unwrap_or((String::new(), now, 0));
        let mut interval = total.hist.clone();
        if let Some((t, h)) = &self.prev
            && t == title
        {
            // Histograms of one run share their bounds; a smaller total (a new run) sends the whole.
            if interval.subtract(h).is_err() {
                interval = total.hist.clone();
            }
        }
        let secs = now.saturating_duration_since(since).as_secs_f64().max(1e-9);
        let avg_rate = total.completed.saturating_sub(at_start) as f64 / secs;
        let mut s = String::new();
        let mut put = |metric: &str, v: f64, kind: &str| {
            let _ = writeln!(s, "{}{name}{metric}:{v:.3}|{kind}", self.stem);
        };
        put("ops_sec", if ended { 0.0 } else { rate }, "g");
        put("ops_sec_avg", if ended { 0.0 } else { avg_rate }, "g");
        if !interval.is_empty() {
            put("latency_ms", interval.mean() / 1e6, "ms");
            for (q, suffix) in PERCENTILES {
                put(
                    &format!("latency_{suffix}"),
                    interval.value_at_percentile(q) as f64 / 1e6,
                    "g",
                );
            }
        }
        if !total.hist.is_empty() {
            put("latency_avg_ms", total.hist.mean() / 1e6, "ms");
        }
        put("completed", total.completed as f64, "g");
        put("errors", total.errors as f64, "g");
        put("failed", total.failed as f64, "g");
        put("connections", self.clients as f64, "g");
        self.prev = Some((title.to_string(), total.hist.clone()));
        s
    }
}

/// A test's title as one StatsD name segment: lower case, runs of other characters as one `_`.
pub fn metric_name(title: &str) -> String {
    let mut s = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.is_empty() && !s.ends_with('_') {
            s.push('_');
        }
    }
    s.trim_end_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_become_one_segment() {
        assert_eq!(metric_name("GET"), "get");
        assert_eq!(
            metric_name("LPUSH (needed to benchmark LPOP)"),
            "lpush_needed_to_benchmark_lpop"
        );
        assert_eq!(metric_name("MSET (10 keys)"), "mset_10_keys");
    }
}
