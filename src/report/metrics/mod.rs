//! Live metrics while a run lasts: `--metrics-listen` (a Prometheus endpoint) and `--statsd` (a push),
//! both fed by one [`board::Board`] the run's main thread updates on its progress ticks.

pub(crate) mod board;
pub(crate) mod http;
pub(crate) mod prometheus;
pub(crate) mod statsd;

use crate::config::{Config, OutputMode};
use crate::report::sink::{Sink, SinkError};
use crate::stats::TestResult;
use crate::stats::live::LiveView;
use board::Board;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A run's live metrics outputs.
pub struct LiveMetrics {
    board: Arc<Board>,
    endpoint: Option<prometheus::Endpoint>,
    statsd: Option<statsd::Statsd>,
    linger: Duration,
    /// The normal report's first line gives the endpoint's address.
    announce: bool,
}

/// Why an output could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error(transparent)]
    Listen(#[from] prometheus::ListenError),
    #[error(transparent)]
    Statsd(#[from] statsd::StatsdError),
}

impl LiveMetrics {
    /// Starts the outputs `cfg` asks for (`None` when it asks for none).
    pub fn start(cfg: &Config) -> Result<Option<LiveMetrics>, MetricsError> {
        let Some(m) = cfg.results.metrics.as_ref() else {
            return Ok(None);
        };
        let board = Arc::new(Board::new(run_labels(cfg)));
        let statsd = match &m.statsd {
            Some(s) => Some(statsd::Statsd::connect(s, cfg.engine.load.clients)?),
            None => None,
        };
        let endpoint = match m.listen {
            Some(addr) => Some(prometheus::Endpoint::start(addr, board.clone())?),
            None => None,
        };
        Ok(Some(LiveMetrics {
            board,
            endpoint,
            statsd,
            linger: m.linger,
            announce: cfg.results.output == OutputMode::Normal
                && !crate::report::results::json_to_stdout(cfg),
        }))
    }

    /// The endpoint's address, once listening.
    pub fn url(&self) -> Option<String> {
        self.endpoint
            .as_ref()
            .map(|e| format!("http://{}/metrics", e.addr))
    }
}

impl Sink for LiveMetrics {
    fn start(&mut self, out: &mut dyn Write) -> Result<(), SinkError> {
        if let Some(url) = self.url().filter(|_| self.announce) {
            writeln!(out, "Serving live metrics at {url}")?;
        }
        Ok(())
    }

    fn begin(&mut self, title: &str) {
        self.board.begin(title);
    }

    fn tick(&mut self, title: &str, live: &LiveView) {
        let now = Instant::now();
        self.board.update(title, live, now);
        if let Some(s) = self.statsd.as_mut() {
            s.tick(&self.board, now);
        }
    }

    fn test(&mut self, r: &TestResult, _out: &mut dyn Write) -> Result<(), SinkError> {
        self.board.end(r);
        if let Some(s) = self.statsd.as_mut() {
            s.end_test(&self.board, &r.title);
        }
        Ok(())
    }

    /// The endpoint serves the final figures until a scrape has read them, at most `--metrics-linger`;
    /// not after a run stopped by a signal, which ends at once.
    fn finish(
        &mut self,
        _results: &[TestResult],
        stopped: bool,
        _out: &mut dyn Write,
    ) -> Result<(), SinkError> {
        self.board.finish();
        if let Some(e) = self.endpoint.take() {
            e.linger(if stopped { Duration::ZERO } else { self.linger });
        }
        Ok(())
    }
}

/// The run's target and flags as labels (never a password: the target names host and port only).
fn run_labels(cfg: &Config) -> Vec<(String, String)> {
    let r = &cfg.engine;
    let mut l = vec![
        ("version", env!("CARGO_PKG_VERSION").to_string()),
        ("target", cfg.engine.target.display()),
        ("clients", r.load.clients.to_string()),
        ("pipeline", r.load.pipeline.to_string()),
        ("threads", r.connect.threads.min(r.load.clients).to_string()),
        ("data_size", r.load.data_size.to_string()),
        (
            "tests",
            cfg.tests
                .iter()
                .map(|t| t.title.as_str())
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("cluster", r.connect.cluster.to_string()),
        ("tls", cfg.engine.tls.is_some().to_string()),
    ];
    if let Some(rps) = r.pace.shape.rps {
        l.push(("rps", rps.to_string()));
    }
    if let Some(d) = r.pace.shape.duration {
        l.push(("duration_s", d.as_secs_f64().to_string()));
    } else {
        l.push(("requests", r.load.requests.to_string()));
    }
    l.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
