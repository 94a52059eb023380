//! What the layer asks the cluster and where it stands with it: the questions (`CLUSTER SLOTS`,
//! `CLUSTER INFO`) and [`Queries`], the state of asking them ([`super::query`] asks them; it also
//! makes a new [`Queries`], beside the [`super::NO_CONN`] it starts from).

use std::net::SocketAddr;
use std::time::Instant;

/// What the layer is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Question {
    /// `CLUSTER SLOTS`: the slot map.
    Slots,
    /// `CLUSTER INFO`: the cluster's state, for the message of a give-up.
    Info,
}

impl Question {
    pub(super) fn args(self) -> &'static [&'static [u8]] {
        match self {
            Question::Slots => &[b"CLUSTER", b"SLOTS"],
            Question::Info => &[b"CLUSTER", b"INFO"],
        }
    }
}

/// The layer's questions: at most one asked at a time, on one ring connection.
pub(super) struct Queries {
    /// The ring connection questions are asked on ([`super::NO_CONN`] before the first).
    pub(super) conn: usize,
    /// The question being asked, the nodes to ask it (in order) and how many were tried.
    pub(super) asking: Option<Question>,
    pub(super) nodes: Vec<SocketAddr>,
    pub(super) tried: usize,
    /// The node asked now, and whether its answer (or failure) is in: then the next node is asked.
    pub(super) at: Option<SocketAddr>,
    pub(super) move_on: bool,
    /// A slot-map re-read is wanted.
    pub(super) want_slots: bool,
    /// A give-up wants the cluster's state from every node but this one.
    pub(super) want_info: Option<usize>,
    pub(super) last_slots: Option<Instant>,
    /// What a node answered to `CLUSTER INFO` ("cluster_state:fail (says 127.0.0.1:7001)").
    pub(super) state: Option<String>,
}

impl Queries {
    /// True when ring connection `conn` is the one questions are asked on.
    pub(super) fn owns(&self, conn: usize) -> bool {
        conn == self.conn
    }

    /// True while a give-up's `CLUSTER INFO` is wanted or being asked.
    pub(super) fn asking_info(&self) -> bool {
        self.want_info.is_some() || self.asking == Some(Question::Info)
    }
}
