//! Per-shard latency histograms and counters, and their merge into one test result.

pub(crate) mod cluster;
pub(crate) mod cost;
mod histogram;
pub(crate) mod intervals;
pub(crate) mod live;
pub(crate) mod server_view;

use hdrhistogram::Histogram;
pub use histogram::{MAX_LATENCY_NS, new_histogram};
use std::time::{Duration, Instant, SystemTime};

/// Most distinct error-reply kinds kept per shard; later kinds are counted as `other`.
const MAX_ERROR_KINDS: usize = 32;

/// The client's memory in one test, for the cost line and the JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientMemory {
    /// Resident bytes before the test opened its connections.
    pub base_rss: u64,
    /// Peak resident bytes while the test ran.
    pub peak_rss: u64,
    /// Connections the test opened.
    pub connections: u64,
}

impl ClientMemory {
    /// Peak bytes above the base per connection.
    pub fn per_connection(&self) -> u64 {
        self.peak_rss.saturating_sub(self.base_rss) / self.connections.max(1)
    }

    /// Starts measuring a test: resets the kernel's peak (VmHWM) and reads the resident size now.
    pub fn start() -> Option<u64> {
        // Writing 5 to clear_refs resets the peak resident size to the current one (Linux 4.0+).
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        proc_status_kb("VmRSS:").map(|kb| kb * 1024)
    }

    /// The peak since [`Self::start`].
    pub fn finish(base_rss: Option<u64>, connections: usize) -> Option<ClientMemory> {
        Some(ClientMemory {
            base_rss: base_rss?,
            peak_rss: proc_status_kb("VmHWM:")? * 1024,
            connections: connections as u64,
        })
    }
}

fn proc_status_kb(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// What one executor did during one test: its share of the work and the CPU its thread used.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExecutorStats {
    /// The executor's index (0-based) within the run.
    pub index: usize,
    /// Replies it received.
    pub requests: u64,
    /// Error replies among them.
    pub errors: u64,
    /// Requests it sent without an answer.
    pub failed: u64,
    /// User CPU seconds its thread used while it drove its connections.
    pub cpu_user_s: f64,
    /// System CPU seconds its thread used while it drove its connections.
    pub cpu_sys_s: f64,
    /// Wall seconds from its first send to its end (the CPU figures' time base).
    pub wall_s: f64,
    /// How its connections did their I/O: its own io_uring and the flags the kernel accepted.
    pub io: &'static str,
}

impl ExecutorStats {
    /// What an executor did in a shard that began at `began` with its thread's CPU at `cpu_start`
    /// (user, sys seconds): its counts from `stats`, and the CPU and wall time since.
    pub fn of_shard(
        index: usize,
        stats: &ShardStats,
        cpu_start: (f64, f64),
        began: std::time::Instant,
        io: &'static str,
    ) -> ExecutorStats {
        let cpu_end = thread_cpu_seconds();
        ExecutorStats {
            index,
            requests: stats.completed,
            errors: stats.errors,
            failed: stats.failed,
            cpu_user_s: (cpu_end.0 - cpu_start.0).max(0.0),
            cpu_sys_s: (cpu_end.1 - cpu_start.1).max(0.0),
            wall_s: began.elapsed().as_secs_f64(),
            io,
        }
    }

    /// Share of its wall time the executor's thread spent on a CPU (0.0 to about 1.0).
    pub fn busy(&self) -> f64 {
        if self.wall_s > 0.0 {
            (self.cpu_user_s + self.cpu_sys_s) / self.wall_s
        } else {
            0.0
        }
    }
}

/// The calling thread's CPU time so far as (user, system) seconds. Called on an executor thread at the
/// start and end of its shard and by the live metrics a few times a second, never per request.
pub fn thread_cpu_seconds() -> (f64, f64) {
    crate::sys::os::cpu_seconds(libc::RUSAGE_THREAD)
}

/// The whole process's CPU time so far as (user, system) seconds.
pub fn process_cpu_seconds() -> (f64, f64) {
    crate::sys::os::cpu_seconds(libc::RUSAGE_SELF)
}

/// The kind of an error reply: its first word (`ERR`, `WRONGTYPE`, `MOVED`, ...), for simple (`-`)
/// and blob (`!`) errors alike.
pub fn error_kind(raw: &[u8]) -> &[u8] {
    let text = match raw.first() {
        Some(b'!') => match memchr::memchr(b'\n', raw) {
            Some(i) => &raw[i + 1..],
            None => &raw[1..],
        },
        Some(b'-') => &raw[1..],
        _ => raw,
    };
    let end = text
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .unwrap_or(text.len());
    &text[..end]
}

/// How many distinct connection failure messages a test keeps.
pub const MAX_CONN_ERRORS: usize = 5;

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
    /// Of `failed`: requests whose reply took longer than `--timeout`.
    pub timed_out: u64,
    /// The client process's memory during the test: resident bytes before its connections were
    /// opened and the peak while it ran (Linux), with the number of connections.
    pub client_memory: Option<ClientMemory>,
    /// Requests never sent: the run gave up on the server (or was stopped) before their turn.
    pub not_sent: u64,
    /// Requests sent (or queued to send) whose replies had not come when a signal or the end of
    /// `--duration` stopped the run: neither completed nor failed.
    pub in_flight: u64,
    /// Connection failures seen (distinct messages, the first few), for the report.
    pub conn_errors: Vec<String>,
    /// When this shard started sending.
    pub start: Option<Instant>,
    /// When this shard received its last reply.
    pub end: Option<Instant>,
    /// Per-node figures and redirect counts (`--cluster` only).
    pub cluster: Option<cluster::ClusterStats>,
    /// Error replies by kind (first word of the reply), in the order first seen.
    pub error_kinds: Vec<(String, u64)>,
    /// One entry per executor merged into these figures.
    pub executors: Vec<ExecutorStats>,
    /// Per executor (only with `--hdr-out`): its one-second interval histograms in order, each
    /// V2-encoded when its second ended (see `intervals`).
    pub interval_logs: Vec<Vec<Vec<u8>>>,
    /// Like `interval_logs`, per executor and per mixed command: `[executor][command][second]`.
    pub part_interval_logs: Vec<Vec<Vec<Vec<u8>>>>,
    /// Open loop (`--rps`) only: latency from the actual send (service time); `hist` then holds the
    /// latency from each request's intended send time.
    pub service: Option<Histogram<u64>>,
    /// `--mix` only: figures per command, in the mix's order.
    pub parts: Vec<PartStats>,
    /// Open loop: requests sent over 1 ms late because their connection already had `-P` waiting.
    pub late_full: u64,
    /// Open loop: requests sent over 1 ms late although their connection had room (the client was busy).
    pub late_free: u64,
    /// Open loop under `--duration`: requests that fell due before the end and were never sent (the
    /// client was behind its schedule); the schedule is these and every request sent.
    pub late_unsent: u64,
    /// `--data-verify`'s read pass: keys checked and what was wrong with them.
    pub verify: Option<crate::workload::verify::VerifyCounts>,
    /// GET replies that held a value (hits) and nil replies (misses), in every mode.
    pub hits: u64,
    pub misses: u64,
    /// Bytes of requests sent and of replies received (protocol bytes, before TLS).
    pub bytes_out: u64,
    pub bytes_in: u64,
}

/// One command's figures inside a mix.
#[derive(Debug, Clone)]
pub struct PartStats {
    pub title: String,
    /// The upper-case command name, as `INFO commandstats` names it.
    pub command: String,
    pub hist: Histogram<u64>,
    pub completed: u64,
    pub errors: u64,
    /// Of its replies, when the command is a GET: values found, and nil replies (the key was missing).
    pub hits: u64,
    pub misses: u64,
    /// Bytes of its requests sent, and of their replies received.
    pub bytes_out: u64,
    pub bytes_in: u64,
}

impl PartStats {
    /// An empty part for command `command` of a test, titled `title`.
    pub fn new(title: String, command: String, sigfig: u8) -> Self {
        PartStats {
            title,
            command,
            hist: new_histogram(sigfig),
            completed: 0,
            errors: 0,
            hits: 0,
            misses: 0,
            bytes_out: 0,
            bytes_in: 0,
        }
    }
}

impl ShardStats {
    pub fn new(sigfig: u8) -> Self {
        ShardStats {
            hist: new_histogram(sigfig),
            completed: 0,
            errors: 0,
            first_error: None,
            failed: 0,
            timed_out: 0,
            client_memory: None,
            not_sent: 0,
            in_flight: 0,
            conn_errors: Vec::new(),
            start: None,
            end: None,
            cluster: None,
            error_kinds: Vec::new(),
            executors: Vec::new(),
            interval_logs: Vec::new(),
            part_interval_logs: Vec::new(),
            service: None,
            parts: Vec::new(),
            late_full: 0,
            late_free: 0,
            late_unsent: 0,
            verify: None,
            hits: 0,
            misses: 0,
            bytes_out: 0,
            bytes_in: 0,
        }
    }

    /// Counts one error reply under its kind. Allocates only the first time a kind is seen.
    pub fn count_error_kind(&mut self, raw: &[u8]) {
        let kind = error_kind(raw);
        if let Some(e) = self
            .error_kinds
            .iter_mut()
            .find(|(k, _)| k.as_bytes() == kind)
        {
            e.1 += 1;
            return;
        }
        let name = if self.error_kinds.len() >= MAX_ERROR_KINDS {
            "other".to_string()
        } else {
            String::from_utf8_lossy(kind).into_owned()
        };
        self.add_error_kind(&name, 1);
    }

    fn add_error_kind(&mut self, name: &str, n: u64) {
        match self.error_kinds.iter_mut().find(|(k, _)| k == name) {
            Some(e) => e.1 += n,
            None => self.error_kinds.push((name.to_string(), n)),
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
        self.timed_out += other.timed_out;
        if self.client_memory.is_none() {
            self.client_memory = other.client_memory;
        }
        self.not_sent += other.not_sent;
        self.in_flight += other.in_flight;
        self.late_full += other.late_full;
        self.late_free += other.late_free;
        self.late_unsent += other.late_unsent;
        self.hits += other.hits;
        self.misses += other.misses;
        self.bytes_out += other.bytes_out;
        self.bytes_in += other.bytes_in;
        if let Some(o) = &other.verify {
            self.verify.get_or_insert_with(Default::default).merge(o);
        }
        match (&mut self.service, &other.service) {
            (Some(a), Some(b)) => a.add(b).expect("histograms share their bounds"),
            (None, Some(b)) => self.service = Some(b.clone()),
            _ => {}
        }
        if self.parts.is_empty() {
            self.parts = other.parts.clone();
        } else {
            for (a, b) in self.parts.iter_mut().zip(&other.parts) {
                a.hist.add(&b.hist).expect("histograms share their bounds");
                a.completed += b.completed;
                a.errors += b.errors;
                a.hits += b.hits;
                a.misses += b.misses;
                a.bytes_out += b.bytes_out;
                a.bytes_in += b.bytes_in;
            }
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error.clone();
        }
        if let Some(o) = &other.cluster {
            self.cluster.get_or_insert_with(Default::default).merge(o);
        }
        for e in &other.conn_errors {
            self.note_conn_error(e);
        }
        self.start = match (self.start, other.start) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.end = match (self.end, other.end) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        for (k, n) in &other.error_kinds {
            self.add_error_kind(k, *n);
        }
        self.executors.extend(other.executors.iter().cloned());
        self.interval_logs
            .extend(other.interval_logs.iter().cloned());
        self.part_interval_logs
            .extend(other.part_interval_logs.iter().cloned());
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

/// The outcome of one test, merged over every executor.
#[derive(Debug, Clone)]
pub struct TestResult {
    pub title: String,
    pub requested: u64,
    pub stats: ShardStats,
    /// Seconds used to compute throughput.
    pub seconds: f64,
    /// Wall-clock time of the first send, when known.
    pub wall_start: Option<SystemTime>,
    /// The server's side of the test (INFO before and after), when the server answered INFO.
    pub server: Option<crate::stats::server_view::ServerView>,
    /// Open loop: the target the test aimed at.
    pub rate: Option<crate::config::shape::RateTarget>,
    /// `--warmup`: requests completed in the warmup (sent, then dropped from every figure) and its seconds.
    pub warmup: Option<(u64, f64)>,
    /// `--timeout` in milliseconds, for the `N timed out at T ms` figure.
    pub timeout_ms: Option<u64>,
    /// True when a signal (or the caller) stopped the test before it finished.
    pub interrupted: bool,
}

impl TestResult {
    pub fn new(title: String, requested: u64, stats: ShardStats) -> Self {
        let seconds = stats.elapsed().as_secs_f64();
        // Instants have no calendar meaning; anchor the start to the wall clock once, here.
        let wall_start = stats
            .start
            .and_then(|s| SystemTime::now().checked_sub(s.elapsed()));
        TestResult {
            title,
            requested,
            stats,
            seconds,
            wall_start,
            server: None,
            rate: None,
            warmup: None,
            timeout_ms: None,
            interrupted: false,
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
    fn error_kinds_are_counted_by_first_word() {
        let mut a = ShardStats::new(3);
        a.count_error_kind(b"-ERR unknown command\r\n");
        a.count_error_kind(b"-WRONGTYPE Operation against a key\r\n");
        a.count_error_kind(b"-ERR again\r\n");
        a.count_error_kind(b"!9\r\nSYNTAX no\r\n");
        assert_eq!(
            a.error_kinds,
            [
                ("ERR".to_string(), 2),
                ("WRONGTYPE".to_string(), 1),
                ("SYNTAX".to_string(), 1)
            ]
        );
        let mut b = ShardStats::new(3);
        b.count_error_kind(b"-ERR x\r\n");
        b.merge(&a);
        assert_eq!(b.error_kinds[0], ("ERR".to_string(), 3));
    }

    #[test]
    fn thread_cpu_grows() {
        // The kernel accounts thread CPU in ticks on some configurations: busy work until the reading
        // moves, which must happen well within a few seconds of burning this thread's CPU.
        let (u0, s0) = thread_cpu_seconds();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        loop {
            for i in 0..1_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            let (u1, s1) = thread_cpu_seconds();
            if u1 + s1 > u0 + s0 {
                break;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(5),
                "thread CPU did not move in 5 s of busy work: {u0} {s0} {u1} {s1}"
            );
        }
    }

    #[test]
    fn long_latencies_are_not_clamped() {
        let mut h = new_histogram(3);
        h.record(90_000_000_000).unwrap();
        assert!(h.max() >= 89_900_000_000);
    }
}
