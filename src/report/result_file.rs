//! The JSON result file (`--json`): its types, how a run becomes one, and how one is read back.
//!
//! `schema/ringbench-result.schema.json` describes this format. The latency histogram is kept whole in
//! HdrHistogram's compressed V2 encoding (base64), the form HdrHistogram's tools in other languages read,
//! so `merge` and `compare` work from exact data, not from rounded percentiles.

use crate::config::Config;
pub use crate::report::encoded_histogram::{EncodedHistogram, HELD_AT_ONCE, HistogramError};
use crate::stats::server_view::ServerView;
use crate::stats::{ShardStats, TestResult, new_histogram, ns_to_ms};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Value of the `format` field.
pub const FORMAT: &str = "ringbench-result";
/// Value of the `format_version` field; bumped when a field changes meaning.
pub const FORMAT_VERSION: u32 = 1;

/// Why a result file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ResultFileError {
    #[error("{path}: {reason}")]
    Read { path: String, reason: String },
    #[error("{path}: not a ringbench result file: {reason}")]
    Parse { path: String, reason: String },
    /// A result file holding what no run writes (a figure past a limit, a histogram that does not check).
    #[error("{path}: {reason}")]
    Refused { path: String, reason: String },
    #[error("could not write {path}: {reason}")]
    Write { path: String, reason: String },
}

/// One result file: a run (or a merge of runs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunFile {
    pub format: String,
    pub format_version: u32,
    pub ringbench_version: String,
    /// The client machine's host name (for a merge: the hosts, comma-separated).
    pub client_host: String,
    /// When the file was written, Unix seconds.
    pub created_unix: f64,
    pub config: RunConfig,
    /// True when the run was stopped (signal) before it finished.
    pub stopped: bool,
    /// For a merge: the runs it combines.
    #[serde(default)]
    pub merged_from: Vec<MergedSource>,
    pub tests: Vec<TestEntry>,
    /// `ringbench capacity` only: the search, one step per entry of `tests` (same order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityEntry>,
    /// `--run-count` above 1: each test's runs (every run is an entry of `tests`), summed up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Vec<crate::report::repeats::Repeats>>,
}

/// What `ringbench capacity` searched and found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CapacityEntry {
    /// The latency objectives: each percentile's highest allowed latency.
    pub objectives: Vec<ObjectiveEntry>,
    /// The search stops when the bracket (first failing rate over last passing rate, minus one) is at most this.
    pub precision: f64,
    pub step_duration_s: f64,
    pub warmup_s: f64,
    /// The closed-loop probe that set the upper bound, when `--to` was not given.
    pub probe: Option<ProbeEntry>,
    /// One per step, in the order run; `tests[i]` holds step i's full result.
    pub steps: Vec<StepEntry>,
    /// The highest offered rate that passed below the lowest that failed (none passed: null).
    pub capacity_rps: Option<f64>,
    /// The lowest failing rate above the capacity (none failed: null).
    pub next_rps: Option<f64>,
    /// True when the client, not the server, was the limit in that failing step (an executor busy at least
    /// 90%, or requests sent late with room in the pipeline).
    pub client_limited: bool,
    /// A passing run whose worst objective is at least `1 - borderline` of its limit is confirmed.
    #[serde(default)]
    pub borderline: f64,
    /// How many times a run spoiled by the client is run again before it counts.
    #[serde(default)]
    pub retries: usize,
    /// Runs made to confirm a failing or borderline run (and to break a tie), over every search.
    #[serde(default)]
    pub confirmations: u64,
    /// Runs spoiled by the client (behind its schedule while off a CPU, or CPU steal) and run again.
    #[serde(default)]
    pub spoiled: u64,
    /// Steps whose counted runs disagreed (one passed, one failed): a third run decided.
    #[serde(default)]
    pub noisy_steps: u64,
    /// Set when the answer is below half of the closed-loop probe's rate: how far, and why.
    #[serde(default)]
    pub far_below_probe: Option<FarBelowEntry>,
    /// One per search (`--repeat`); the fields above describe the median one, the counts are totals.
    #[serde(default)]
    pub searches: Vec<SearchEntry>,
    /// The median, lowest and highest answer over the searches (a search with no passing step counts 0).
    #[serde(default)]
    pub median_rps: Option<f64>,
    #[serde(default)]
    pub min_rps: Option<f64>,
    #[serde(default)]
    pub max_rps: Option<f64>,
}

/// Why an answer is far below the closed-loop probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FarBelowEntry {
    /// The answer over the probe's rate.
    pub share: f64,
    /// `client-limited`, `noisy` (runs spoiled or disagreeing), `server-at-ease` (the failing step above
    /// failed with the server under half a core busy) or `objective` (out of reach here).
    pub why: String,
}

/// One whole search of a `--repeat` run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchEntry {
    pub probe: Option<ProbeEntry>,
    pub capacity_rps: Option<f64>,
    pub next_rps: Option<f64>,
    pub client_limited: bool,
    /// Steps (rates) the search judged, and runs it made for them.
    pub steps: usize,
    pub runs: usize,
    pub confirmations: u64,
    pub spoiled: u64,
    pub noisy_steps: u64,
    pub far_below_probe: Option<FarBelowEntry>,
}

/// One latency objective.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectiveEntry {
    /// e.g. 99.9 for p99.9.
    pub percentile: f64,
    pub max_ms: f64,
}

/// The closed-loop probe of a capacity search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeEntry {
    pub requests: u64,
    pub duration_s: f64,
    pub rps: f64,
}

/// One step of a capacity search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepEntry {
    pub offered_rps: f64,
    pub achieved_rps: f64,
    pub pass: bool,
    /// Why the step failed (empty when it passed).
    pub reasons: Vec<String>,
    /// Requests completed in the step's warmup (sent to the server, dropped from its figures).
    pub warmup_requests: u64,
    /// The busiest executor's share of the step on a CPU.
    pub client_busy: f64,
    /// Not the run that counts: the step was run again at the same rate (this run was spoiled by the
    /// client, or it is confirmed by a later one); the step's last run carries its verdict.
    #[serde(default)]
    pub repeated: bool,
    /// The search (1-based, `--repeat`) and its step (1-based) this run belongs to.
    #[serde(default)]
    pub search: usize,
    #[serde(default)]
    pub step: usize,
    /// `first`, `retry` (the run before was spoiled), `confirm` or `tiebreak`.
    #[serde(default)]
    pub run: String,
    /// Why the client spoiled this run (it is then run again, within `retries`).
    #[serde(default)]
    pub spoiled: Option<String>,
    /// The machine's CPU time stolen by its hypervisor during the run, as a share of all CPU time.
    #[serde(default)]
    pub cpu_steal: f64,
    /// The machine's idle CPU time (idle and iowait) during the run, as a share of all CPU time.
    #[serde(default)]
    pub cpu_idle: f64,
    /// Passed within `borderline` of an objective.
    #[serde(default)]
    pub borderline: bool,
}

/// The run's configuration, without the password.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub target: String,
    pub user: Option<String>,
    /// Whether a password was given (the password itself is never written).
    pub auth: bool,
    pub dbnum: u32,
    pub resp3: bool,
    pub tracking: bool,
    pub clients: u64,
    pub requests: u64,
    pub data_size: u64,
    pub keyspace: Option<u64>,
    pub pipeline: u64,
    pub threads: u64,
    pub keepalive: bool,
    pub seed: u64,
    pub precision: u8,
    pub start_at: Option<f64>,
    pub tests: Vec<String>,
    /// `--shard`/`--shards`: which shard of a run this file is (`clients`, `requests` are its share).
    #[serde(default)]
    pub shard: Option<crate::config::shard::Shard>,
    /// `--rps`: the target rate (a shard's: its share; a merge's: the sum).
    #[serde(default)]
    pub rps: Option<f64>,
    /// `--rps`: the wake-up grid of the pacing, microseconds: a request leaves at most this long after
    /// its intended time (plus the kernel's wake-up delay). Absent without `--rps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_quantum_us: Option<f64>,
    /// `--cluster`: requests were routed to each key's master (absent in files of older versions).
    #[serde(default)]
    pub cluster: bool,
    /// `--expiry-range`: the TTL range of SETs, `[min, max]` seconds. Absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiry_range: Option<[u64; 2]>,
}

/// One run that a merged file combines.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MergedSource {
    pub file: String,
    pub client_host: String,
    pub clients: u64,
    /// The source's shard, when it was one.
    #[serde(default)]
    pub shard: Option<crate::config::shard::Shard>,
}

/// One test's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestEntry {
    pub title: String,
    pub command: String,
    pub requested: u64,
    /// Replies received (error replies included).
    pub requests: u64,
    pub errors: ErrorCounts,
    /// Wall-clock time of the first send and the last reply, Unix seconds.
    pub start_unix: f64,
    pub end_unix: f64,
    pub duration_s: f64,
    pub rps: f64,
    pub latency_ms: LatencySummary,
    pub histogram: EncodedHistogram,
    pub executors: Vec<ExecutorEntry>,
    pub server: Option<ServerView>,
    /// `--cluster` only: per-node replies, redirects, replies per second and failovers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterEntry>,
    /// The client's memory in this test (Linux), when it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_memory: Option<MemoryEntry>,
    /// `--data-verify`'s read pass: keys checked and what was wrong with them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gets: Option<GetCounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_verify: Option<crate::report::verify::VerifyEntry>,
    /// A mix (`--mix`, `--command`, a `;` sequence) or a replay: each command's own figures, in the
    /// report's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandEntry>,
    /// Each second of the test: replies, rate, p50/p99/max and that second's histogram.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_second: Vec<crate::report::per_second::SecondEntry>,
}

/// One command of a mix or a replay: its replies, error replies, rate and latency.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommandEntry {
    /// The command as the test names it (`GET`, `SET __key__ __data__`, ...).
    pub title: String,
    /// The upper-case command name, as `INFO commandstats` names it.
    pub command: String,
    /// Replies received, error replies included.
    pub requests: u64,
    /// Error replies.
    pub errors: u64,
    pub rps: f64,
    pub latency_ms: LatencySummary,
    pub histogram: EncodedHistogram,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gets: Option<GetCounts>,
}

/// GET replies that held a value and nil replies (memtier_benchmark's hits and misses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetCounts {
    pub hits: u64,
    pub misses: u64,
}

impl GetCounts {
    /// The counts, when any GET was answered with a value or nil.
    pub fn of(hits: u64, misses: u64) -> Option<GetCounts> {
        (hits + misses > 0).then_some(GetCounts { hits, misses })
    }
}

impl CommandEntry {
    /// The entries of a test's mixed commands.
    pub fn of_parts(r: &TestResult) -> Vec<CommandEntry> {
        r.stats
            .parts
            .iter()
            .map(|p| CommandEntry {
                title: p.title.clone(),
                command: p.command.clone(),
                requests: p.completed,
                errors: p.errors,
                rps: crate::report::rate_report::part_rps(r, p),
                latency_ms: LatencySummary::of(&p.hist),
                histogram: EncodedHistogram::encode(&p.hist),
                gets: GetCounts::of(p.hits, p.misses),
            })
            .collect()
    }

    /// The figures back, as a test's part.
    pub fn to_part(&self) -> Result<crate::stats::PartStats, HistogramError> {
        let mut part = crate::stats::PartStats::new(self.title.clone(), self.command.clone(), 3);
        part.hist = self.histogram.decode()?;
        part.completed = self.requests;
        part.errors = self.errors;
        if let Some(g) = self.gets {
            part.hits = g.hits;
            part.misses = g.misses;
        }
        Ok(part)
    }
}

/// The client's resident memory in one test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// Peak resident bytes of the client process while the test ran.
    pub peak_rss_bytes: u64,
    /// Peak bytes above the resident size before the test, per connection.
    pub bytes_per_connection: u64,
}

/// A cluster test's own figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterEntry {
    /// Replies per node (`ip:port`), error replies included.
    pub nodes: std::collections::BTreeMap<String, u64>,
    pub moved: u64,
    pub ask: u64,
    pub retries: u64,
    /// Replies received in each second of the test.
    pub per_second: Vec<u64>,
    /// Masters lost during the test and who answered for their slots afterwards.
    pub failovers: Vec<FailoverEntry>,
}

/// One lost master (times in seconds from the start of the test).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailoverEntry {
    pub node: String,
    pub lost_s: f64,
    pub new_master: Option<String>,
    pub answered_s: Option<f64>,
    /// From the loss to the first reply for its slots from another node.
    pub recovery_s: Option<f64>,
}

impl ClusterEntry {
    fn of(c: &crate::stats::cluster::ClusterStats) -> Self {
        ClusterEntry {
            nodes: c
                .nodes
                .iter()
                .map(|n| (n.name.clone(), n.completed))
                .collect(),
            moved: c.moved,
            ask: c.ask,
            retries: c.retries,
            per_second: c.per_second.clone(),
            failovers: c
                .failovers
                .iter()
                .map(|f| FailoverEntry {
                    node: f.node.clone(),
                    lost_s: f.lost_s,
                    new_master: f.new_master.clone(),
                    answered_s: f.answered_s,
                    recovery_s: f.recovery_s(),
                })
                .collect(),
        }
    }
}

/// Errors by kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// Error replies from the server.
    pub replies: u64,
    /// Error replies by their first word (`ERR`, `WRONGTYPE`, ...).
    pub by_kind: std::collections::BTreeMap<String, u64>,
    /// The first error reply's text.
    pub first: Option<String>,
    /// Requests sent without an answer (connection lost, run stopped).
    pub failed: u64,
    /// Of `failed`: requests whose reply took longer than `--timeout`.
    #[serde(default)]
    pub timed_out: u64,
    /// `--timeout` in milliseconds, when given.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Requests never sent (the run gave up on the server, or was stopped, before their turn).
    #[serde(default)]
    pub not_sent: u64,
    /// Requests whose replies had not come when a signal or the end of `--duration` stopped the run.
    #[serde(default)]
    pub in_flight: u64,
    /// Open loop under `--duration`: requests that fell due before the end and were never sent (the
    /// client was behind its schedule).
    #[serde(default)]
    pub late_unsent: u64,
}

/// Latency figures in milliseconds, read from the histogram.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencySummary {
    pub avg: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
}

impl LatencySummary {
    /// The figures of a histogram in nanoseconds.
    pub fn of(h: &Histogram<u64>) -> Self {
        let q = |q: f64| ns_to_ms(h.value_at_quantile(q));
        LatencySummary {
            avg: h.mean() / 1e6,
            min: ns_to_ms(h.min()),
            max: ns_to_ms(h.max()),
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
        }
    }
}

/// One executor's share of a test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecutorEntry {
    /// The client machine it ran on.
    pub host: String,
    pub index: u64,
    pub requests: u64,
    pub errors: u64,
    pub failed: u64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// How the executor's connections did their I/O (its own io_uring and its set-up flags); empty in
    /// files written before it was recorded.
    #[serde(default)]
    pub io: String,
}

/// Seconds since the Unix epoch of a wall-clock time.
pub fn unix_seconds(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl RunConfig {
    /// The target and the flags that shape the load, in one line (a chart's subtitle):
    /// `127.0.0.1:6379  -c 50 -P 1 -d 3 -n 100000`, then `-r`, `--threads`, `--rps`, ... when set.
    /// `requests`: whether `-n` is part of it (a capacity search's steps are timed instead).
    pub fn summary(&self, requests: bool) -> String {
        let mut s = format!(
            "{}  -c {} -P {} -d {}",
            self.target, self.clients, self.pipeline, self.data_size
        );
        if requests {
            s.push_str(&format!(" -n {}", self.requests));
        }
        if let Some(r) = self.keyspace {
            s.push_str(&format!(" -r {r}"));
        }
        if self.threads > 1 {
            s.push_str(&format!(" --threads {}", self.threads));
        }
        if let Some(rps) = self.rps {
            s.push_str(&format!(" --rps {rps}"));
        }
        if self.cluster {
            s.push_str(" --cluster");
        }
        if self.resp3 {
            s.push_str(" -3");
        }
        if let Some(sh) = &self.shard {
            s.push_str(&format!(" --shard {}/{}", sh.index, sh.count));
        }
        s
    }

    pub fn of(cfg: &Config) -> Self {
        RunConfig {
            target: cfg.engine.target.display(),
            user: cfg.engine.setup.user.clone(),
            auth: cfg.engine.setup.password.is_some(),
            dbnum: cfg.engine.setup.dbnum,
            resp3: cfg.engine.setup.resp3,
            tracking: cfg.engine.setup.tracking,
            clients: cfg.engine.load.clients as u64,
            requests: cfg.engine.load.requests,
            data_size: cfg.engine.load.data_size as u64,
            keyspace: cfg.engine.load.keyspace,
            pipeline: cfg.engine.load.pipeline as u64,
            threads: cfg.engine.connect.threads.min(cfg.engine.load.clients) as u64,
            keepalive: cfg.engine.load.keepalive,
            seed: cfg.engine.load.seed,
            precision: cfg.engine.record.precision,
            start_at: cfg.engine.pace.start_at,
            tests: cfg.tests.iter().map(|t| t.title.clone()).collect(),
            shard: cfg.engine.load.shard,
            rps: cfg.engine.pace.shape.rps,
            pacing_quantum_us: cfg
                .engine
                .pace
                .shape
                .rps
                .map(|_| crate::engine::QUANTUM.as_secs_f64() * 1e6),
            cluster: cfg.engine.connect.cluster,
            expiry_range: cfg.engine.pace.shape.expiry.map(|e| [e.min, e.max]),
        }
    }
}

impl TestEntry {
    /// The entry of a finished test; `command` is the test's command name.
    pub fn of(r: &TestResult, command: &str, host: &str) -> Self {
        let st = &r.stats;
        let start_unix = r.wall_start.map(unix_seconds).unwrap_or(0.0);
        TestEntry {
            title: r.title.clone(),
            command: command.to_string(),
            requested: r.requested,
            requests: st.completed,
            errors: ErrorCounts {
                replies: st.errors,
                by_kind: st.error_kinds.iter().cloned().collect(),
                first: st.first_error.clone(),
                failed: st.failed,
                timed_out: st.timed_out,
                timeout_ms: r.timeout_ms,
                not_sent: st.not_sent,
                in_flight: st.in_flight,
                late_unsent: st.late_unsent,
            },
            start_unix,
            end_unix: start_unix + r.seconds,
            duration_s: r.seconds,
            rps: r.rps(),
            latency_ms: LatencySummary::of(&st.hist),
            histogram: EncodedHistogram::encode(&st.hist),
            executors: st
                .executors
                .iter()
                .map(|e| ExecutorEntry {
                    host: host.to_string(),
                    index: e.index as u64,
                    requests: e.requests,
                    errors: e.errors,
                    failed: e.failed,
                    cpu_user_s: e.cpu_user_s,
                    cpu_sys_s: e.cpu_sys_s,
                    io: e.io.to_string(),
                })
                .collect(),
            server: r.server.clone(),
            cluster: st.cluster.as_ref().map(ClusterEntry::of),
            client_memory: st.client_memory.map(|m| MemoryEntry {
                peak_rss_bytes: m.peak_rss,
                bytes_per_connection: m.per_connection(),
            }),
            gets: GetCounts::of(st.hits, st.misses),
            data_verify: st
                .verify
                .as_ref()
                .map(crate::report::verify::VerifyEntry::of),
            commands: CommandEntry::of_parts(r),
            // The intervals were cut by this run's executors: they decode.
            per_second: crate::report::per_second::of(r).unwrap_or_default(),
        }
    }

    /// Bytes the test's histograms (its own and each mixed command's) take decoded together, refused past
    /// [`HELD_AT_ONCE`].
    pub fn check_held(&self) -> Result<u64, HistogramError> {
        let mut held = self.histogram.decoded_bytes()?;
        for c in &self.commands {
            held += c.histogram.decoded_bytes()?;
        }
        if held > HELD_AT_ONCE {
            return Err(HistogramError::Held {
                mib: held >> 20,
                commands: self.commands.len(),
            });
        }
        Ok(held)
    }

    /// A `TestResult` rebuilt from the entry (for the text report of a merge), its histograms within
    /// [`HELD_AT_ONCE`].
    pub fn to_result(&self) -> Result<TestResult, HistogramError> {
        self.check_held()?;
        let hist = self.histogram.decode()?;
        let mut stats = ShardStats::new(hist.sigfig());
        stats.hist = hist;
        stats.completed = self.requests;
        stats.errors = self.errors.replies;
        stats.failed = self.errors.failed;
        stats.timed_out = self.errors.timed_out;
        stats.not_sent = self.errors.not_sent;
        stats.in_flight = self.errors.in_flight;
        stats.late_unsent = self.errors.late_unsent;
        stats.verify = self.data_verify.as_ref().map(|v| v.counts());
        stats.first_error = self.errors.first.clone();
        stats.parts = self
            .commands
            .iter()
            .map(CommandEntry::to_part)
            .collect::<Result<_, _>>()?;
        stats.error_kinds = self
            .errors
            .by_kind
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let now = Instant::now();
        stats.start = Some(now);
        stats.end = now.checked_add(Duration::from_secs_f64(self.duration_s.max(0.0)));
        let mut r = TestResult::new(self.title.clone(), self.requested, stats);
        r.seconds = self.duration_s;
        r.wall_start = UNIX_EPOCH.checked_add(Duration::from_secs_f64(self.start_unix.max(0.0)));
        r.server = self.server.clone();
        r.timeout_ms = self.errors.timeout_ms;
        Ok(r)
    }
}

impl RunFile {
    /// The file for a finished run.
    pub fn of_run(cfg: &Config, results: &[TestResult], stopped: bool) -> Self {
        let host = crate::sys::os::host_name();
        let tests = results
            .iter()
            .map(|r| {
                let command = cfg
                    .tests
                    .iter()
                    .find(|t| t.title == r.title)
                    .map(|t| t.command.as_str())
                    .unwrap_or("");
                TestEntry::of(r, command, &host)
            })
            .collect();
        RunFile {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            ringbench_version: env!("CARGO_PKG_VERSION").into(),
            client_host: host,
            created_unix: unix_seconds(SystemTime::now()),
            config: RunConfig::of(cfg),
            stopped,
            merged_from: Vec::new(),
            tests,
            capacity: None,
            repeats: (cfg.engine.pace.run_count > 1)
                .then(|| crate::report::repeats::summarize(results)),
        }
    }

    /// The file as pretty JSON, with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a result file always serializes");
        s.push('\n');
        s
    }

    /// Writes the file to `dest` (`-` is `out`).
    pub fn write_to(
        &self,
        dest: &str,
        out: &mut dyn std::io::Write,
    ) -> Result<(), ResultFileError> {
        let json = self.to_json();
        let fail = |e: std::io::Error| ResultFileError::Write {
            path: dest.to_string(),
            reason: crate::os_error::describe(e),
        };
        if dest == "-" {
            out.write_all(json.as_bytes()).map_err(fail)?;
            out.flush().map_err(fail)
        } else {
            std::fs::write(dest, json).map_err(fail)
        }
    }
}

/// An empty histogram with the project's bounds, for sums of decoded ones.
pub fn empty_histogram(sigfig: u8) -> Histogram<u64> {
    new_histogram(sigfig)
}

#[cfg(test)]
#[path = "result_file_tests.rs"]
mod tests;
