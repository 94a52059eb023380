//! How a run goes once connected, decided by the command line alone, in sections: what to send
//! ([`Load`]), how to pace it ([`Pace`]), how to connect ([`Connecting`]), how finely to record
//! ([`Record`]) and where results go ([`Results`]); and [`EngineSettings`], the part of a resolved
//! config the engine is handed.

use super::shape::Shape;
use std::path::PathBuf;
use std::time::Duration;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// The full per-test block.
    Normal,
    /// `-q`: one line per test.
    Quiet,
    /// `--csv`.
    Csv,
}

/// `--rfr`: where a `--cluster` run sends its reads (commands that only read; writes always go to
/// the slot's master).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadFrom {
    /// `no`: to the master.
    #[default]
    Masters,
    /// `yes`: to the master's replicas (to the master when it has none).
    Replicas,
    /// `all`: spread over the master and its replicas.
    All,
}

/// How the run goes once connected, in sections: what to send, how to pace, how to connect, how finely
/// to record, and where results go. Decided by [`Settings::parse`](crate::config::Settings::parse) alone
/// and carried unchanged into the resolved [`Config`](crate::config::Config): the first four into its
/// [`EngineSettings`], the results beside them.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub load: Load,
    pub pace: Pace,
    pub connect: Connecting,
    pub record: Record,
    pub results: Results,
}

/// The engine's section of a resolved config, and all of it the engine sees: where the server is and
/// how each connection is set up, what to send, how to pace it, how to connect, and how finely to
/// record. Which tests run and where their results go stay with the caller.
#[derive(Debug)]
pub struct EngineSettings {
    pub target: crate::net::target::Target,
    pub setup: crate::net::target::Setup,
    /// TLS settings with `--tls` or `rediss://`.
    pub tls: Option<crate::net::tls::TlsClient>,
    pub load: Load,
    pub pace: Pace,
    pub connect: Connecting,
    pub record: Record,
}

/// How the executors record: the histograms' significant digits (`--precision`), whether they print
/// each error reply as it comes (`-e`), and whether live metrics (`--metrics-listen`, `--statsd`) copy
/// their figures a few times a second.
#[derive(Debug, Clone, Copy)]
pub struct Record {
    pub precision: u8,
    pub show_errors: bool,
    pub live: bool,
}

/// What to send: the connections, the requests and their share, the keys and values, and when a connection is renewed.
#[derive(Debug, Clone)]
pub struct Load {
    pub clients: usize,
    pub requests: u64,
    /// `--shard`: where this process's share of `-n` starts among all the shards' (0 without), so
    /// composed requests (mix cycles, dataset rows) go on where the shard before it stops.
    pub first_request: u64,
    pub data_size: usize,
    pub keyspace: Option<u64>,
    pub pipeline: usize,
    pub seed: u64,
    /// memtier without `--distinct-client-seed`: every connection draws from the same seed.
    pub same_seed: bool,
    /// memtier's `-n`: each connection sends exactly this many requests (the total is its multiple).
    pub per_connection: Option<u64>,
    pub idle: bool,
    /// `--data-verify` / `--verify-only`: the suite is the verification's passes.
    pub verify: Option<crate::workload::verify::VerifySpec>,
    pub keepalive: bool,
    /// memtier's `--reconnect-interval`: each connection is closed and opened again (its set-up
    /// included) after this many requests, as `-k 0` does after each batch.
    pub reconnect_every: Option<u64>,
    /// `--shard` / `--shards`: this process's place in a run of several; `clients`, `requests`, the rate,
    /// the seed and the sequential key slice above are already this shard's share.
    pub shard: Option<crate::config::shard::Shard>,
}

/// How to pace: the rate, duration and request shape, memtier's bursts, the start time and repeats.
#[derive(Debug, Clone)]
pub struct Pace {
    /// Pacing and request shape: `--rps`, `--duration`, `--warmup`, distributions, values, mixes.
    pub shape: Shape,
    /// memtier's `--rate-limiting`: each connection's rate, sent in memtier's bursts (with `shape.rps`
    /// the whole run's rate).
    pub burst_rate: Option<u64>,
    /// `--start-at`: Unix time to wait for before the first test.
    pub start_at: Option<f64>,
    pub loop_forever: bool,
    /// `--run-count`: how many times the suite runs (1: once).
    pub run_count: u64,
}

/// How to connect: executors and their cores, the cluster routing, and the timeouts.
#[derive(Debug, Clone)]
pub struct Connecting {
    /// Executors to start (1 without `--threads`).
    pub threads: usize,
    /// Whether `--threads` was given (the header says `multi-thread: yes`).
    pub multi_thread: bool,
    /// `--cpus`: the cores executors are pinned to, in order (`None`: the usable cores in order).
    pub cpus: Option<Vec<usize>>,
    /// `--cluster`: route every request to the master that owns its key's slot.
    pub cluster: bool,
    /// `--rfr`: with `--cluster`, where reads go.
    pub read_from: ReadFrom,
    /// `--failover-timeout`: with `--cluster`, how long a request for a slot that no master answers
    /// (its master lost, no replica promoted yet) is retried before the run gives up.
    pub failover_timeout: Duration,
    /// `--timeout`: how long a request may wait for its reply.
    pub timeout: Option<Duration>,
    /// `--connect-timeout`: how long connecting (and setup) may take.
    pub connect_timeout: Duration,
}

/// Where results go: the output mode, the result files, live metrics, memtier's results.
#[derive(Debug, Clone)]
pub struct Results {
    pub output: OutputMode,
    /// `--json`: a file, or `-` for stdout.
    pub json: Option<String>,
    /// `--hdr-out`: interval logs go to `<prefix><test>.hlog`.
    pub hdr_out: Option<String>,
    /// `--plot`: an SVG file.
    pub plot: Option<PathBuf>,
    /// `--report`: an HTML page of the run.
    pub report: Option<PathBuf>,
    /// `--metrics-listen` / `--statsd`: where live figures go while the run lasts.
    pub metrics: Option<crate::config::metrics::MetricsSettings>,
    /// memtier's personality: its results (tables, JSON, HDR files) instead of ringbench's.
    pub memtier: Option<std::sync::Arc<crate::config::memtier::output::MemtierOutput>>,
}
