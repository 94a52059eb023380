//! How a run ends: the errors that end it early (`RunError`, each with its exit code) and what a
//! finished run hands back to `main` (`RunOutcome`).

use crate::config::{self, limits};
use crate::engine::EngineError;
use crate::engine::ring;
use crate::net::ConnError;
use crate::protocol::cluster::ClusterError;
use crate::report;
use crate::stats::TestResult;

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

    /// True when the run was stopped (SIGINT, SIGTERM) while it waited for the server, before any
    /// test: the signal's exit code, and nothing to say.
    pub fn is_stop(&self) -> bool {
        matches!(self, RunError::Conn(ConnError::Stopped))
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
