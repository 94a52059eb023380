//! ringbench: a thread-per-core load generator for Redis, Valkey and any RESP server.
//!
//! `run(config)` drives the whole pipeline (control connection, every test on the engine, reports),
//! so integration tests exercise exactly what the binary does.

pub mod cli;
pub mod compare;
pub mod config;
pub mod control;
pub mod cost;
pub mod cpus;
pub mod engine;
pub mod hdrlog;
pub mod intervals;
pub mod limits;
pub mod merge;
pub mod net;
pub mod plot;
pub mod report;
pub mod resp;
pub mod result_file;
pub mod results;
pub mod server_view;
pub mod start_at;
pub mod stats;
pub mod tools;
pub mod workload;

use config::{Config, OutputMode};
use engine::{EngineError, RunControl};
use net::ConnError;
use stats::TestResult;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

/// Why a run ended early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Conn(#[from] ConnError),
    #[error("{0}")]
    Engine(String),
    #[error("{0}")]
    Limit(String),
    #[error("could not write the output: {0}")]
    Output(#[from] std::io::Error),
    #[error("{0}")]
    Results(String),
}

impl From<EngineError> for RunError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Conn(c) => RunError::Conn(c),
            EngineError::Executor(s) => RunError::Engine(s),
        }
    }
}

/// What a finished run measured.
#[derive(Debug, Default)]
pub struct RunOutcome {
    pub results: Vec<TestResult>,
    /// True when the run was stopped (signal or caller) before it finished.
    pub stopped: bool,
}

impl RunOutcome {
    /// True when any request failed (sent without an answer).
    pub fn any_failed(&self) -> bool {
        self.results.iter().any(|r| r.stats.failed > 0)
    }
}

/// Where progress goes: `Some` only when it should be shown (a terminal).
pub type ProgressSink<'a> = Option<&'a mut dyn Write>;

/// Runs every test of `cfg`, writing reports to `out` as each test ends.
pub fn run(
    cfg: Config,
    control: &RunControl,
    stdout: &mut dyn Write,
    mut progress: ProgressSink<'_>,
) -> Result<RunOutcome, RunError> {
    // With `--json -` stdout carries the JSON alone.
    let mut sink = std::io::sink();
    let out: &mut dyn Write = if results::json_to_stdout(&cfg) {
        &mut sink
    } else {
        stdout
    };
    let cfg = Arc::new(cfg);
    limits::prepare(cfg.clients, cfg.threads).map_err(RunError::Limit)?;
    let mut ctl = control::ControlClient::connect(&cfg.target, &cfg.setup, cfg.connect_timeout)?;
    let header = report::Header {
        clients: cfg.clients,
        data_size: cfg.data_size,
        keepalive: cfg.keepalive,
        save: ctl.config_get("save"),
        appendonly: ctl.config_get("appendonly"),
        multi_thread: cfg.multi_thread,
        threads: cfg.threads,
    };
    let mut ctl = Some(ctl);
    if cfg.threads > 1
        && let (_, Some(w)) = engine::plan_cores(cfg.threads.min(cfg.clients), cfg.cpus.as_deref())
    {
        eprintln!("ringbench: {w}");
    }

    let mut outcome = RunOutcome::default();
    if cfg.idle {
        writeln!(
            out,
            "Creating {} idle connections and waiting forever (Ctrl+C when done)",
            cfg.clients
        )?;
        out.flush()?;
        // Idle mode opens exactly -c connections.
        drop(ctl.take());
        engine::run_test(&cfg, &cfg.tests[0], 0, control, |_, _| {})?;
        outcome.stopped = true;
        return Ok(outcome);
    }
    let mut watch =
        server_view::ServerWatch::new(ctl.take(), &cfg.target, &cfg.setup, cfg.connect_timeout);
    if let Some(t) = cfg.start_at {
        eprintln!(
            "ringbench: waiting {:.1} s for --start-at {t}",
            (t - start_at::unix_now()).max(0.0)
        );
        if !start_at::wait_until(t, control) {
            outcome.stopped = true;
            return Ok(outcome);
        }
    }
    if cfg.output == OutputMode::Csv {
        out.write_all(report::CSV_HEADER.as_bytes())?;
    }
    loop {
        for test in &cfg.tests {
            if control.stopped() {
                break;
            }
            let started = Instant::now();
            let mut prev = (0u64, 0u64, started);
            let title = test.title.clone();
            watch.begin();
            let mut tick = |completed: u64, lat_sum: u64| {
                watch.sample();
                let Some(p) = progress.as_deref_mut() else {
                    return;
                };
                let now = Instant::now();
                let dt = now.duration_since(prev.2).as_secs_f64().max(1e-9);
                let dc = completed.saturating_sub(prev.0);
                let rps = dc as f64 / dt;
                let overall =
                    completed as f64 / now.duration_since(started).as_secs_f64().max(1e-9);
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
            let stats = engine::run_test(&cfg, test, cfg.requests, control, &mut tick)?;
            if let Some(p) = progress.as_deref_mut() {
                let _ = write!(p, "\r\x1b[K");
                let _ = p.flush();
            }
            for e in &stats.conn_errors {
                eprintln!("ringbench: {}: {e}", test.title);
            }
            if stats.failed > 0 && cfg.output == OutputMode::Csv {
                eprintln!(
                    "ringbench: {}: {} of {} requests failed",
                    test.title, stats.failed, cfg.requests
                );
            }
            let mut result = TestResult::new(test.title.clone(), cfg.requests, stats);
            result.server = watch.end(result.stats.completed, control.stopped());
            results::after_test(&cfg, &result).map_err(RunError::Results)?;
            let text = match cfg.output {
                OutputMode::Normal => results::normal_text(&result, &header),
                OutputMode::Quiet => report::quiet_line(&result),
                OutputMode::Csv => report::csv_row(&result),
            };
            out.write_all(text.as_bytes())?;
            out.flush()?;
            outcome.results.push(result);
        }
        if !cfg.loop_forever || control.stopped() {
            break;
        }
    }
    outcome.stopped = control.stopped();
    results::after_run(&cfg, &outcome.results, outcome.stopped, stdout)
        .map_err(RunError::Results)?;
    Ok(outcome)
}
