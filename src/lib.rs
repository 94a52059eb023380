//! ringbench: a thread-per-core load generator for Redis, Valkey and any RESP server.
//!
//! `run(config)` drives the whole pipeline (control connection, every test on the engine, reports),
//! so integration tests exercise exactly what the binary does; `dispatch` parses the command line and runs
//! the subcommands that need no benchmark run (`compare`, `merge`, `report`, `fleet`, `completions`).

mod app;
mod cli;
mod config;
mod engine;
mod net;
mod os_error;
mod protocol;
mod report;
mod stats;
mod sys;
mod workload;

// What `main.rs`, `tests/` and `benches/` name besides `run`, `dispatch` and `capacity`.
pub use cli::Cli;
pub use cli::capacity::SearchFlags;
pub use config::start_at::unix_now;
pub use config::{Config, ConfigError, Env, Settings};
pub use engine::RunControl;
pub use protocol::cluster::key_slot;
pub use protocol::resp::{ReplyScanner, Scanned};
pub use report::result_file::RunFile;
pub use stats::thread_cpu_seconds;
pub use sys::os::{StopSignal, on_stop_signals};
pub use workload::{PipelineBuffer, RequestTemplate};

pub use app::capacity;
use app::{fleet, memtier, session};
use cli::command::{self, Parsed};
use config::{OutputMode, limits, start_at};
use engine::EngineError;
use engine::ring;
use net::ConnError;
use protocol::cluster::ClusterError;

use stats::TestResult;
use stats::server_view;
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Why a run ended early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Conn(#[from] ConnError),
    #[error(transparent)]
    Engine(EngineError),
    #[error(transparent)]
    Ring(#[from] ring::RingError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// An idle connection (`-I`) failed: redis-benchmark says "Error" first.
    #[error("Error: {0}")]
    Idle(#[source] Box<RunError>),
    #[error(transparent)]
    Limit(#[from] limits::LimitError),
    #[error("could not write the output: {0}")]
    Output(#[from] std::io::Error),
    /// A flag that does not fit the server found (exit code 2, like any usage error).
    #[error(transparent)]
    Usage(#[from] config::UsageError),
    /// `--cluster` against a server that is not a cluster node (exit code 2).
    #[error(transparent)]
    NotCluster(ClusterError),
    /// Sinks (`--hdr-out`, `--json`, `--plot`) that could not be written, one line each.
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    Results(Vec<report::sink::SinkError>),
    /// The server refused the run before it began (`NOAUTH`, too many clients): its own message.
    #[error("Error from server: {0}")]
    Server(String),
    /// The server has no room for the run's connections under its `maxclients`.
    #[error("{0}")]
    NoRoom(String),
    /// `--metrics-listen` or `--statsd` could not start.
    #[error(transparent)]
    Metrics(#[from] report::metrics::MetricsError),
}

impl RunError {
    /// The process's exit code for this error: 2 for a usage error, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Usage(_) | RunError::NotCluster(_) => 2,
            _ => 1,
        }
    }
}

impl From<EngineError> for RunError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Conn(c) => RunError::Conn(c),
            other => RunError::Engine(other),
        }
    }
}

/// What a finished run measured.
#[derive(Debug, Default)]
pub struct RunOutcome {
    /// With `-l`, only when `--json` or `--plot` needs them: an endless loop keeps nothing per round.
    pub results: Vec<TestResult>,
    /// True when the run was stopped (signal or caller) before it finished.
    pub stopped: bool,
    /// True when any request failed (sent without an answer).
    pub failed: bool,
    /// True when the server answered any request with an error reply.
    pub error_replies: bool,
    /// True when `--data-verify`'s read pass found a key mismatched, missing or answered with an error.
    pub verify_failed: bool,
}

impl RunOutcome {
    /// True when any request failed (sent without an answer) or was answered with an error.
    pub fn any_failed(&self) -> bool {
        self.failed || self.error_replies || self.verify_failed
    }
}

/// What the command line asks `main` to do once `dispatch` has parsed it.
pub enum Invocation {
    /// A benchmark run with these flags.
    Bench(Box<Cli>),
    /// `ringbench capacity`: the search's flags (`capacity::SearchArgs::from_flags` checks them) and the
    /// benchmark's.
    Capacity(SearchFlags, Box<Cli>),
    /// memtier_benchmark's command line (`ringbench memtier ...`, or started as `memtier_benchmark`):
    /// its run's config, and the `-o` file its report goes to.
    Memtier(Box<Config>, Option<String>),
    /// Nothing more: a subcommand that needs no benchmark ran, help was printed, or a usage error.
    Done(ExitCode),
}

/// Parses the command line (one clap definition, `cli::command`) and runs the subcommands that need no
/// benchmark run (`compare`, `merge`, `report`, `fleet`, `completions`); a usage error is one line on
/// `err` and exit code 2, and nothing is sent anywhere.
pub fn dispatch(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> Invocation {
    let personality = match args {
        [argv0, ..] if memtier::is_memtier_name(argv0) => Some(args.to_vec()),
        [argv0, first, rest @ ..] if first == "memtier" => Some(
            std::iter::once(argv0.clone())
                .chain(rest.iter().cloned())
                .collect(),
        ),
        _ => None,
    };
    if let Some(words) = personality {
        return match memtier::configure(&words, out, err) {
            memtier::Start::Run(cfg, file) => Invocation::Memtier(cfg, file),
            memtier::Start::Done(code) => Invocation::Done(code),
        };
    }
    let parsed = match command::parse(args, &protocol::commands::is_command) {
        Ok(p) => p,
        Err(refused) if refused.is_help() => {
            // Help goes to stdout, with exit code 0 (also for `ringbench fleet` alone).
            let _ = write!(out, "{}", refused.error.render());
            return Invocation::Done(ExitCode::SUCCESS);
        }
        Err(refused) => {
            let _ = writeln!(err, "{}", refused.line());
            return Invocation::Done(ExitCode::from(2));
        }
    };
    let (name, outcome) = match parsed {
        Parsed::Bench(cli) => return Invocation::Bench(cli),
        Parsed::Capacity(flags, cli) => return Invocation::Capacity(flags, cli),
        Parsed::Fleet(flags, run) => {
            return Invocation::Done(fleet::run(&flags, run, out, err, start_at::unix_now()));
        }
        Parsed::Compare(a) => ("compare", report::subcommands::run_compare(&a, out, err)),
        Parsed::Merge(a) => ("merge", report::subcommands::run_merge(&a, out, err)),
        Parsed::Report(a) => ("report", report::subcommands::run_report(&a)),
        Parsed::Completions(shell) => {
            clap_complete::generate(shell, &mut command::definition(), "ringbench", out);
            return Invocation::Done(ExitCode::SUCCESS);
        }
        Parsed::Manpage(dir) => ("manpage", write_man_pages(&dir)),
    };
    Invocation::Done(match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(err, "ringbench: {name}: {e}");
            ExitCode::from(e.code())
        }
    })
}

/// `ringbench manpage DIR` (hidden; `scripts/man.sh` runs it): `ringbench.1` and one page per subcommand.
fn write_man_pages(dir: &std::path::Path) -> Result<(), report::subcommands::ToolError> {
    std::fs::create_dir_all(dir)
        .and_then(|()| clap_mangen::generate_to(command::definition(), dir))
        .map_err(|e| {
            report::subcommands::ToolError::Other(format!(
                "could not write the man pages to {}: {}",
                dir.display(),
                os_error::describe(e)
            ))
        })
}

/// The hint for a node that redirects (`MOVED` / `ASK`) while `--cluster` is off.
fn redirect_hint(r: &TestResult) -> Option<String> {
    let kind = r
        .stats
        .error_kinds
        .iter()
        .find(|(k, _)| k == "MOVED" || k == "ASK")?;
    Some(format!(
        "ringbench: the server answered {} {} times: it is a Redis Cluster node; add --cluster to send each key to the master that owns it",
        kind.0, kind.1
    ))
}

/// Where progress goes: `Some` only when it should be shown (a terminal).
pub type ProgressSink<'a> = Option<&'a mut dyn Write>;

/// Runs every test of `cfg`, writing reports to `stdout` as each test ends; warnings, `-e`'s error replies
/// and the notes of a CSV run go to `stderr` (nothing, when the run succeeds); the terminal's progress line
/// goes to `progress`. The steps: check the machine, connect and read the server, (`-I`: hold idle
/// connections), watch the server, wait for `--start-at`, then every round of tests into the sinks.
pub fn run(
    cfg: Config,
    control: &RunControl,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    mut progress: ProgressSink<'_>,
) -> Result<RunOutcome, RunError> {
    session::prepare(&cfg)?;
    let (opened, header) = session::connect(&cfg)?;
    let local_servers = opened.local_servers;
    let cfg = Arc::new(cfg);
    if cfg.run.load.idle {
        return run_idle(&cfg, opened, control, stdout, stderr, progress);
    }
    // memtier's personality reads nothing from the server while it runs, as memtier does not.
    let mut watch = if cfg.run.results.memtier.is_some() {
        server_view::Watches::none()
    } else {
        session::watch_server(&cfg, opened)
    };
    if !wait_for_start(&cfg, control, &mut progress) {
        return Ok(RunOutcome {
            stopped: true,
            ..RunOutcome::default()
        });
    }
    let mut sinks = report::sinks::Sinks::for_run(&cfg, header)?;
    sinks.start(stdout)?;
    let mut runner = Runner {
        cfg: &cfg,
        control,
        stderr,
        progress,
        watch: &mut watch,
        sinks: &mut sinks,
        outcome: RunOutcome::default(),
        hinted: false,
        local_servers,
    };
    runner.rounds(stdout)?;
    let mut outcome = runner.outcome;
    outcome.stopped = control.stopped();
    sinks.finish(&outcome.results, outcome.stopped, stdout)?;
    if !sinks.unwritten.is_empty() {
        return Err(RunError::Results(std::mem::take(&mut sinks.unwritten)));
    }
    Ok(outcome)
}

/// `-I`: opens exactly `-c` idle connections and holds them until stopped, showing on a terminal how
/// many are still open.
fn run_idle(
    cfg: &Arc<Config>,
    opened: session::Opened,
    control: &RunControl,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
    mut progress: ProgressSink<'_>,
) -> Result<RunOutcome, RunError> {
    writeln!(
        stdout,
        "Creating {} idle connections and waiting forever (Ctrl+C when done)",
        cfg.run.load.clients
    )?;
    stdout.flush()?;
    let local_servers = opened.local_servers;
    drop(opened);
    let mut shown = None;
    let ran = engine::run_test(
        cfg,
        &cfg.tests[0],
        0,
        local_servers,
        control,
        stderr,
        |live| {
            let (open, _) = live.totals();
            if let Some(p) = progress.as_deref_mut()
                && shown != Some(open)
            {
                let _ = write!(p, "\r\x1b[Kclients: {open}");
                let _ = p.flush();
                shown = Some(open);
            }
        },
    );
    if let Some(p) = progress
        && shown.is_some()
    {
        let _ = writeln!(p);
    }
    // Like redis-benchmark, an idle connection that fails says "Error" first; the server's own
    // refusal already reads "Error from server: ...".
    ran.map_err(|e| match e {
        EngineError::Conn(c @ ConnError::Refused(_)) => RunError::Conn(c),
        other => RunError::Idle(Box::new(RunError::from(other))),
    })?;
    Ok(RunOutcome {
        stopped: true,
        ..RunOutcome::default()
    })
}

/// `--start-at`: waits for its time; false when the run was stopped meanwhile.
fn wait_for_start(cfg: &Config, control: &RunControl, progress: &mut ProgressSink<'_>) -> bool {
    let Some(t) = cfg.run.pace.start_at else {
        return true;
    };
    // Shown on a terminal only: a pod's or a host's log is its result (--json -), and a successful run
    // writes nothing to stderr.
    if let Some(p) = progress.as_deref_mut() {
        let _ = writeln!(
            p,
            "ringbench: waiting {:.1} s for --start-at {t}",
            (t - start_at::unix_now()).max(0.0)
        );
    }
    engine::wait_until(t, control)
}

/// The rounds of a run (`-l`, `--run-count`), each test into the sinks as it ends.
struct Runner<'a, 'p> {
    cfg: &'a Arc<Config>,
    control: &'a RunControl,
    stderr: &'a mut dyn Write,
    progress: ProgressSink<'p>,
    watch: &'a mut server_view::Watches,
    sinks: &'a mut report::sinks::Sinks,
    outcome: RunOutcome,
    /// The `--cluster` hint has been given.
    hinted: bool,
    /// The run's servers on this machine (the session's `Opened::local_servers`).
    local_servers: usize,
}

impl Runner<'_, '_> {
    fn rounds(&mut self, stdout: &mut dyn Write) -> Result<(), RunError> {
        let cfg = self.cfg.clone();
        let mut iteration = 0;
        loop {
            iteration += 1;
            for test in &cfg.tests {
                if self.control.stopped() {
                    break;
                }
                let Some(result) = self.one_test(test)? else {
                    break;
                };
                self.sinks.test(&result, stdout)?;
                self.account(&result);
                if !cfg.run.pace.loop_forever
                    || cfg.run.results.json.is_some()
                    || cfg.run.results.plot.is_some()
                {
                    self.outcome.results.push(result);
                }
            }
            if self.control.stopped()
                || !cfg.run.pace.loop_forever && iteration >= cfg.run.pace.run_count
            {
                return Ok(());
            }
        }
    }

    /// Runs one test (after its `--warmup`); `None` when the run was stopped in the warmup.
    fn one_test(&mut self, test: &workload::TestSpec) -> Result<Option<TestResult>, RunError> {
        let cfg = self.cfg;
        let control = self.control;
        let started = Instant::now();
        let mut prev = (0u64, 0u64, started);
        let title = test.title.clone();
        self.watch.begin();
        self.sinks.begin(&title);
        let mut warmed = None;
        if let Some(warmup) = cfg.run.pace.shape.warmup {
            let budget = engine::Budget {
                requests: u64::MAX,
                duration: Some(warmup),
                rps: cfg.run.pace.shape.rps,
                local_servers: self.local_servers,
            };
            warmed = session::warm_up(cfg, test, budget, control, self.stderr)?;
            if warmed.is_none() {
                return Ok(None);
            }
        }
        let (watch, sinks, progress) = (&mut *self.watch, &mut *self.sinks, &mut self.progress);
        let tick = |live: &stats::live::LiveView| {
            watch.sample();
            sinks.tick(&title, live);
            let Some(p) = progress.as_deref_mut() else {
                return;
            };
            let (completed, lat_sum) = live.totals();
            let now = Instant::now();
            let dt = now.duration_since(prev.2).as_secs_f64().max(1e-9);
            let dc = completed.saturating_sub(prev.0);
            let rps = dc as f64 / dt;
            let overall = completed as f64 / now.duration_since(started).as_secs_f64().max(1e-9);
            let avg = if dc > 0 {
                lat_sum.saturating_sub(prev.1) as f64 / dc as f64 / 1e6
            } else {
                0.0
            };
            let overall_avg = if completed > 0 {
                lat_sum as f64 / completed as f64 / 1e6
            } else {
                0.0
            };
            prev = (completed, lat_sum, now);
            let _ = write!(
                p,
                "\r\x1b[K{}",
                report::progress_line(&title, rps, overall, avg, overall_avg)
            );
            let _ = p.flush();
        };
        let stats = engine::run_test(
            cfg,
            test,
            cfg.run.load.requests,
            self.local_servers,
            control,
            self.stderr,
            tick,
        )?;
        if let Some(p) = self.progress.as_deref_mut() {
            let _ = write!(p, "\r\x1b[K");
            let _ = p.flush();
        }
        for e in &stats.conn_errors {
            let _ = writeln!(self.stderr, "ringbench: {}: {e}", test.title);
        }
        let requested = if cfg.run.pace.shape.duration.is_some() {
            // What was sent (answered, failed, or still in flight at the end), and under --rps what
            // fell due and was never sent: the schedule.
            stats.completed + stats.failed + stats.in_flight + stats.late_unsent
        } else {
            cfg.run.load.requests
        };
        if cfg.run.results.output == OutputMode::Csv {
            csv_notes(self.stderr, &test.title, &stats, requested);
        }
        let mut result = TestResult::new(test.title.clone(), requested, stats);
        result.warmup = warmed;
        result.timeout_ms = cfg.run.connect.timeout.map(|t| t.as_millis() as u64);
        result.rate = cfg.run.pace.shape.rps.map(|rps| config::shape::RateTarget {
            rps,
            slots: cfg.run.load.clients * cfg.run.load.pipeline,
        });
        session::end_view(self.watch, &mut result, control.stopped());
        result.interrupted = control.stopped();
        if result.interrupted && cfg.run.results.output == OutputMode::Csv {
            let _ = writeln!(
                self.stderr,
                "ringbench: {}: interrupted after {} of {} requests",
                test.title, result.stats.completed, requested
            );
        }
        Ok(Some(result))
    }

    /// What a finished test means for the run's exit code, and the `--cluster` hint.
    fn account(&mut self, result: &TestResult) {
        let (cfg, outcome) = (self.cfg, &mut self.outcome);
        // Requests left unsent because the run gave up (not because it was stopped) count too.
        outcome.failed |=
            result.stats.failed > 0 || (result.stats.not_sent > 0 && !self.control.stopped());
        outcome.error_replies |= result.stats.errors > 0;
        if let Some(v) = result.stats.verify.as_ref().filter(|v| v.failed() > 0) {
            outcome.verify_failed = true;
            if cfg.run.results.output == OutputMode::Csv {
                let _ = write!(self.stderr, "ringbench: {}", report::verify::verify_text(v));
            }
        }
        if !cfg.run.connect.cluster
            && !self.hinted
            && let Some(h) = redirect_hint(result)
        {
            let _ = writeln!(self.stderr, "{h}");
            self.hinted = true;
        }
    }
}

/// A CSV run's failures, said on stderr: its rows have no room for them.
fn csv_notes(stderr: &mut dyn Write, title: &str, stats: &stats::ShardStats, requested: u64) {
    if stats.errors > 0 {
        let _ = writeln!(
            stderr,
            "ringbench: {title}: {} error replies (first: {})",
            stats.errors,
            stats.first_error.as_deref().unwrap_or("")
        );
    }
    if stats.failed > 0 || stats.not_sent > 0 {
        let _ = writeln!(
            stderr,
            "ringbench: {title}: {} of {requested} requests failed, {} not sent",
            stats.failed, stats.not_sent
        );
    }
    for p in stats.parts.iter().filter(|p| p.errors > 0) {
        let _ = writeln!(
            stderr,
            "ringbench: {title} / {}: {} error replies",
            p.title, p.errors
        );
    }
}
