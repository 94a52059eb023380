//! Per-shard latency histograms and counters, and their merge into one test result.

use crate::cost::ExecutorCost;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Highest latency recorded without clamping: one hour, in nanoseconds.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// How many distinct connection failure messages a test keeps.
pub const MAX_CONN_ERRORS: usize = 5;

/// A new latency histogram (nanoseconds) with `sigfig` significant figures.
pub fn new_histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, sigfig).expect("histogram bounds are valid")
}

/// What one executor measured during one test. Owned by that executor alone until it ends.
#[derive(Debug, Clone)]
pub struct ShardStats {
    /// Latency of every reply, in nanoseconds.
    pub hist: Histogram<u64>,
    /// Replies received (error replies included).
    pub completed: u64,
    /// Error replies received.
    pub errors: u64,
    /// The first error reply's text.
    pub first_error: Option<String>,
    /// Requests sent whose reply never came (connection lost, run stopped).
    pub failed: u64,
    /// Connection failures seen (distinct messages, the first few), for the report.
    pub conn_errors: Vec<String>,
    /// When this shard started sending.
    pub start: Option<Instant>,
    /// When this shard received its last reply.
    pub end: Option<Instant>,
    /// Each executor's CPU and wall time during the test (one entry per shard after merging).
    pub executors: Vec<ExecutorCost>,
}

impl ShardStats {
    pub fn new(sigfig: u8) -> Self {
        ShardStats {
            hist: new_histogram(sigfig),
            completed: 0,
            errors: 0,
            first_error: None,
            failed: 0,
            conn_errors: Vec::new(),
            start: None,
            end: None,
            executors: Vec::new(),
        }
    }

    /// Folds another shard's figures into this one.
    pub fn merge(&mut self, other: &ShardStats) {
        self.hist
            .add(&other.hist)
            .expect("histograms share their bounds");
        self.completed += other.completed;
        self.errors += other.errors;
        self.failed += other.failed;
        if self.first_error.is_none() {
            self.first_error = other.first_error.clone();
        }
        for e in &other.conn_errors {
            self.note_conn_error(e);
        }
        self.executors.extend_from_slice(&other.executors);
        self.start = match (self.start, other.start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.end = match (self.end, other.end) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    /// Keeps a connection failure's message unless it is already known or enough are kept.
    pub fn note_conn_error(&mut self, msg: &str) {
        if self.conn_errors.len() < MAX_CONN_ERRORS && !self.conn_errors.iter().any(|e| e == msg) {
            self.conn_errors.push(msg.to_string());
        }
    }

    /// Wall time from the first send to the last reply over all shards merged so far.
    pub fn elapsed(&self) -> Duration {
        match (self.start, self.end) {
            (Some(s), Some(e)) if e > s => e - s,
            _ => Duration::ZERO,
        }
    }
}

/// A shard's live counters, read by the progress line. Written by one executor only
/// (plain stores, no read-modify-write), at most once per batch.
#[derive(Debug, Default)]
pub struct LiveCounters {
    pub completed: AtomicU64,
    pub latency_sum_ns: AtomicU64,
}

impl LiveCounters {
    pub fn publish(&self, completed: u64, latency_sum_ns: u64) {
        self.completed.store(completed, Ordering::Relaxed);
        self.latency_sum_ns.store(latency_sum_ns, Ordering::Relaxed);
    }

    pub fn read(&self) -> (u64, u64) {
        (
            self.completed.load(Ordering::Relaxed),
            self.latency_sum_ns.load(Ordering::Relaxed),
        )
    }
}

/// The outcome of one test, merged over every executor.
#[derive(Debug, Clone)]
pub struct TestResult {
    pub title: String,
    pub requested: u64,
    pub stats: ShardStats,
    /// Seconds used to compute throughput.
    pub seconds: f64,
}

impl TestResult {
    pub fn new(title: String, requested: u64, stats: ShardStats) -> Self {
        let seconds = stats.elapsed().as_secs_f64();
        TestResult {
            title,
            requested,
            stats,
            seconds,
        }
    }

    /// Completed requests per second.
    pub fn rps(&self) -> f64 {
        if self.seconds > 0.0 {
            self.stats.completed as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// A latency quantile in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        ns_to_ms(self.stats.hist.value_at_quantile(q))
    }

    pub fn avg_ms(&self) -> f64 {
        self.stats.hist.mean() / 1e6
    }

    pub fn min_ms(&self) -> f64 {
        ns_to_ms(self.stats.hist.min())
    }

    pub fn max_ms(&self) -> f64 {
        ns_to_ms(self.stats.hist.max())
    }
}

pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_sums_counts_and_histograms() {
        let mut a = ShardStats::new(3);
        let mut b = ShardStats::new(3);
        a.hist.record(1_000).unwrap();
        a.completed = 1;
        b.hist.record_n(2_000_000, 3).unwrap();
        b.completed = 3;
        b.errors = 2;
        b.first_error = Some("ERR x".into());
        a.merge(&b);
        assert_eq!(a.hist.len(), 4);
        assert_eq!(a.completed, 4);
        assert_eq!(a.errors, 2);
        assert_eq!(a.first_error.as_deref(), Some("ERR x"));
    }

    #[test]
    fn long_latencies_are_not_clamped() {
        let mut h = new_histogram(3);
        h.record(90_000_000_000).unwrap();
        assert!(h.max() >= 89_900_000_000);
    }
}
