//! The benchmark, redis-benchmark's run: every test of the suite (or `-I`'s idle connections) against
//! one server, on the session the apps share, with the reports written as each test ends.

use super::outcome::{RunError, RunOutcome};
use super::session;
use crate::config::{Config, OutputMode, start_at};
use crate::engine::{self, EngineError, RunControl};
use crate::net::ConnError;
use crate::report;
use crate::stats::{self, TestResult, server_view};
use crate::workload;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

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
    let (opened, header) = match session::connect(&cfg, control) {
        // Stopped before the first test: nothing measured to report.
        Err(RunError::Conn(ConnError::Stopped)) => {
            return Ok(RunOutcome {
                stopped: true,
                ..RunOutcome::default()
            });
        }
        other => other?,
    };
    let local_servers = opened.local_servers;
    let cfg = Arc::new(cfg);
    if cfg.engine.load.idle {
        return run_idle(&cfg, opened, control, stdout, stderr, progress);
    }
    // memtier's personality reads nothing from the server while it runs, as memtier does not.
    let mut watch = if cfg.results.memtier.is_some() {
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
        cfg.engine.load.clients
    )?;
    stdout.flush()?;
    let local_servers = opened.local_servers;
    drop(opened);
    let mut shown = None;
    let ran = engine::run_test(
        &cfg.engine,
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
    let Some(t) = cfg.engine.pace.start_at else {
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
                if !cfg.engine.pace.loop_forever
                    || cfg.results.json.is_some()
                    || cfg.results.plot.is_some()
                {
                    self.outcome.results.push(result);
                }
            }
            if self.control.stopped()
                || !cfg.engine.pace.loop_forever && iteration >= cfg.engine.pace.run_count
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
        if let Some(warmup) = cfg.engine.pace.shape.warmup {
            let budget = engine::Budget {
                requests: u64::MAX,
                duration: Some(warmup),
                rps: cfg.engine.pace.shape.rps,
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
            &cfg.engine,
            test,
            cfg.engine.load.requests,
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
        let requested = requested(cfg, &stats);
        if cfg.results.output == OutputMode::Csv {
            csv_notes(self.stderr, &test.title, &stats, requested);
        }
        let mut result = TestResult::new(test.title.clone(), requested, stats);
        result.warmup = warmed;
        result.timeout_ms = cfg.engine.connect.timeout.map(|t| t.as_millis() as u64);
        result.rate = cfg
            .engine
            .pace
            .shape
            .rps
            .map(|rps| crate::config::shape::RateTarget {
                rps,
                slots: cfg.engine.load.clients * cfg.engine.load.pipeline,
            });
        session::end_view(self.watch, &mut result, control.stopped());
        result.interrupted = control.stopped();
        if result.interrupted && cfg.results.output == OutputMode::Csv {
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
            if cfg.results.output == OutputMode::Csv {
                let _ = write!(self.stderr, "ringbench: {}", report::verify::verify_text(v));
            }
        }
        if !cfg.engine.connect.cluster
            && !self.hinted
            && let Some(h) = redirect_hint(result)
        {
            let _ = writeln!(self.stderr, "{h}");
            self.hinted = true;
        }
    }
}

/// A CSV run's failures, said on stderr: its rows have no room for them.
/// The requests a test was asked for: `-n`, or under `--duration` what was sent (answered, failed, or
/// still in flight at the end) and, under `--rps`, what fell due and was never sent: the schedule.
fn requested(cfg: &Config, stats: &stats::ShardStats) -> u64 {
    if cfg.engine.pace.shape.duration.is_some() {
        stats.completed + stats.failed + stats.in_flight + stats.late_unsent
    } else {
        cfg.engine.load.requests
    }
}

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
