//! ringbench: a thread-per-core load generator for Redis, Valkey and any RESP server.
//!
//! `run(config)` drives the whole pipeline (control connection, every test on the engine, reports),
//! so integration tests exercise exactly what the binary does.

pub mod capacity;
pub mod cli;
pub mod cluster;
mod cluster_engine;
pub mod compare;
pub mod compose;
pub mod config;
pub mod control;
pub mod cost;
pub mod cpus;
pub mod engine;
pub mod hdrlog;
pub mod intervals;
pub mod keys;
pub mod limits;
pub mod merge;
pub mod net;
pub mod plot;
pub mod rate_report;
pub mod replies;
pub mod report;
pub mod resp;
pub mod result_file;
pub mod results;
pub mod schedule;
pub mod server_view;
pub mod shape;
pub mod start_at;
pub mod stats;
pub mod tls;
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
    /// A flag that does not fit the server found (exit code 2, like any usage error).
    #[error("{0}")]
    Usage(String),
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
    /// With `-l`, only when `--json` or `--plot` needs them: an endless loop keeps nothing per round.
    pub results: Vec<TestResult>,
    /// True when the run was stopped (signal or caller) before it finished.
    pub stopped: bool,
    /// True when any request failed (sent without an answer).
    pub failed: bool,
}

impl RunOutcome {
    /// True when any request failed (sent without an answer).
    pub fn any_failed(&self) -> bool {
        self.failed
    }
}

/// Where progress goes: `Some` only when it should be shown (a terminal).
pub type ProgressSink<'a> = Option<&'a mut dyn Write>;

/// Reads the cluster's masters for `--cluster`: their configuration for the header, and a check that
/// `-c` gives every master at least one connection.
fn cluster_header(cfg: &Config) -> Result<Vec<cluster::NodeConfig>, RunError> {
    let map = cluster::discover(
        &cfg.target,
        cfg.tls.as_ref(),
        &cfg.setup,
        cfg.connect_timeout,
    )
    .map_err(|e| match e {
        cluster::ClusterError::Conn(c) => RunError::Conn(c),
        cluster::ClusterError::NotCluster { .. } => RunError::Usage(e.to_string()),
        other => RunError::Engine(other.to_string()),
    })?;
    let masters = map.masters().len();
    if cfg.clients < masters {
        return Err(RunError::Usage(format!(
            "invalid value '{}' for '-c': the cluster has {masters} masters and each needs at least one client",
            cfg.clients
        )));
    }
    Ok(cluster::node_configs(
        &map,
        cfg.tls.as_ref(),
        &cfg.setup,
        cfg.connect_timeout,
    ))
}

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
    let mut ctl = control::ControlClient::connect(
        &cfg.target,
        cfg.tls.as_ref(),
        &cfg.setup,
        cfg.connect_timeout,
    )?;
    let header = report::Header {
        clients: cfg.clients,
        data_size: cfg.data_size,
        keepalive: cfg.keepalive,
        save: ctl.config_get("save")?,
        appendonly: ctl.config_get("appendonly")?,
        multi_thread: cfg.multi_thread,
        threads: cfg.threads,
        cluster_nodes: None,
    };
    let mut header = header;
    if cfg.cluster {
        header.cluster_nodes = Some(cluster_header(&cfg)?);
    }
    let mut ctl = Some(ctl);
    if cfg.threads > 1
        && let (_, Some(w)) = engine::plan_cores(
            cfg.threads.min(cfg.clients),
            cfg.cpus.as_deref(),
            cfg.target.is_local(),
        )
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
    let mut watch = server_view::ServerWatch::new(
        ctl.take(),
        &cfg.target,
        cfg.tls.as_ref(),
        &cfg.setup,
        cfg.connect_timeout,
    );
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
            let mut warmed = None;
            if let Some(warmup) = cfg.shape.warmup {
                // The server sees the warmup; its figures are dropped.
                let budget = engine::Budget {
                    requests: u64::MAX,
                    duration: Some(warmup),
                };
                let w = engine::run_phase(&cfg, test, budget, control, |_, _| {})?;
                warmed = Some((w.completed, w.elapsed().as_secs_f64()));
                if control.stopped() {
                    break;
                }
            }
            let stats = engine::run_test(&cfg, test, cfg.requests, control, &mut tick)?;
            if let Some(p) = progress.as_deref_mut() {
                let _ = write!(p, "\r\x1b[K");
                let _ = p.flush();
            }
            for e in &stats.conn_errors {
                eprintln!("ringbench: {}: {e}", test.title);
            }
            let requested = if cfg.shape.duration.is_some() {
                stats.completed + stats.failed
            } else {
                cfg.requests
            };
            if stats.failed > 0 && cfg.output == OutputMode::Csv {
                eprintln!(
                    "ringbench: {}: {} of {} requests failed",
                    test.title, stats.failed, requested
                );
            }
            let mut result = TestResult::new(test.title.clone(), requested, stats);
            result.warmup = warmed;
            result.rate = cfg.shape.rps.map(|rps| rate_report::RateTarget {
                rps,
                slots: cfg.clients * cfg.pipeline,
            });
            result.server = watch.end(result.stats.completed, control.stopped());
            results::after_test(&cfg, &result).map_err(RunError::Results)?;
            let text = match cfg.output {
                OutputMode::Normal => results::normal_text(&result, &header),
                OutputMode::Quiet => {
                    report::quiet_line(&result) + &rate_report::quiet_parts(&result)
                }
                OutputMode::Csv => report::csv_row(&result) + &rate_report::csv_parts(&result),
            };
            out.write_all(text.as_bytes())?;
            out.flush()?;
            outcome.failed |= result.stats.failed > 0;
            if !cfg.loop_forever || cfg.json.is_some() || cfg.plot.is_some() {
                outcome.results.push(result);
            }
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
