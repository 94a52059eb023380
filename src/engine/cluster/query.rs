//! The layer's questions to the cluster, each asked on a ring connection of its own that closes once
//! it is answered ([`Driver::ask_async`]): `CLUSTER SLOTS` to re-read the slot map after redirects
//! and losses, and `CLUSTER INFO` for a give-up's message. The executor never waits for an answer: a
//! question is asked in a pump, its answer (or its failure, within `--connect-timeout`) arrives as a
//! completion, and a node that does not answer passes the question to the next node.

use super::questions::{Queries, Question};
use super::stage;
use super::{ClusterLayer, NO_CONN, REFRESH_GAP, node_target};
use crate::engine::ring::Driver;
use crate::net::discovery;
use crate::protocol::cluster::SlotMap;
use crate::protocol::resp::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Instant;

impl Queries {
    /// Nothing asked yet, and no connection to ask on.
    pub(super) fn new() -> Self {
        Queries {
            conn: NO_CONN,
            asking: None,
            nodes: Vec::new(),
            tried: 0,
            at: None,
            move_on: false,
            want_slots: false,
            want_info: None,
            last_slots: None,
            state: None,
        }
    }
}

impl ClusterLayer<'_> {
    /// Asks for the slot map again, unless it was read just now (a burst of MOVED replies costs one
    /// `CLUSTER SLOTS`). The next pump asks it.
    pub(super) fn refresh(&mut self) {
        self.queries.want_slots = true;
    }

    /// Asks every node but `skip` for the cluster's state, for a give-up's message.
    pub(super) fn ask_state(&mut self, skip: usize) {
        self.queries.want_info = Some(skip);
    }

    /// Asks what is wanted, when nothing is being asked (called in every pump).
    pub(super) fn ask(&mut self, d: &mut Driver<'_>, now: Instant) {
        let q = &mut self.queries;
        if q.conn != NO_CONN && !d.is_closed(q.conn) && q.asking.is_none() {
            // The last question's connection is still closing.
            return;
        }
        if q.asking.is_some() {
            if q.move_on && (q.conn == NO_CONN || d.is_closed(q.conn)) {
                q.move_on = false;
                self.ask_next(d);
            }
            return;
        }
        if let Some(skip) = q.want_info.take() {
            q.nodes = self
                .map
                .nodes
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != skip)
                .map(|(_, n)| n.addr)
                .collect();
            q.asking = Some(Question::Info);
            q.tried = 0;
            self.ask_next(d);
            return;
        }
        let recent = q
            .last_slots
            .is_some_and(|t| now.saturating_duration_since(t) < REFRESH_GAP);
        if q.want_slots && !recent {
            q.want_slots = false;
            // The masters first, then every other node the map knows.
            let mut nodes: Vec<SocketAddr> = self
                .map
                .masters()
                .iter()
                .map(|&i| self.map.nodes[i as usize].addr)
                .collect();
            for n in &self.map.nodes {
                if !nodes.contains(&n.addr) {
                    nodes.push(n.addr);
                }
            }
            let q = &mut self.queries;
            q.nodes = nodes;
            q.asking = Some(Question::Slots);
            q.tried = 0;
            self.ask_next(d);
        }
    }

    /// Asks the current question of the next node; when every node was tried, the question ends
    /// unanswered.
    fn ask_next(&mut self, d: &mut Driver<'_>) {
        let Some(question) = self.queries.asking else {
            return;
        };
        if self.queries.conn == NO_CONN {
            let j = d.add_connection();
            debug_assert_eq!(j, self.ends.len());
            // No client's: the questions' connection is never live and owes no reply.
            self.ends.push((usize::MAX, usize::MAX));
            self.owed.push(VecDeque::new());
            self.sent_ns.push(0);
            self.flight.push(stage::Flight::default());
            self.queries.conn = j;
        }
        let q = &mut self.queries;
        while q.tried < q.nodes.len() {
            let addr = q.nodes[q.tried];
            q.tried += 1;
            if d.ask_async(q.conn, &node_target(addr), question.args())
                .is_ok()
            {
                q.at = Some(addr);
                return;
            }
        }
        self.answered(question);
    }

    /// The current question ended: answered, or no node could answer it.
    fn answered(&mut self, question: Question) {
        let q = &mut self.queries;
        q.asking = None;
        q.at = None;
        q.move_on = false;
        if question == Question::Slots {
            q.last_slots = Some(Instant::now());
        }
    }

    /// An answer arrived on the questions' connection.
    pub(super) fn on_question_answered(&mut self, answer: Value) {
        let (Some(question), Some(addr)) = (self.queries.asking, self.queries.at) else {
            return;
        };
        match question {
            Question::Slots => {
                let target = node_target(addr);
                let read = if self.cfg.setup.readonly {
                    SlotMap::with_replicas
                } else {
                    SlotMap::from_cluster_slots
                };
                if let Ok(fresh) = read(&answer, addr, &target.display(), &discovery::resolve_node)
                {
                    let moved = self.map.update_from(&fresh);
                    self.owners.rebuild(&self.map.owner);
                    self.masters = self.serving();
                    self.grow_nodes();
                    self.answered(question);
                    if moved {
                        self.wake_backed_off();
                    }
                    return;
                }
            }
            Question::Info => {
                if let Value::Bulk(b) | Value::Verbatim(_, b) = &answer
                    && let Some(line) = String::from_utf8_lossy(b)
                        .lines()
                        .find(|l| l.starts_with("cluster_state:"))
                {
                    self.queries.state = Some(format!("{} (says {addr})", line.trim()));
                    self.answered(question);
                    return;
                }
            }
        }
        // Not an answer this question can use: the next node is asked.
        self.queries.move_on = true;
    }

    /// A re-read moved slots (a promoted replica took a lost master's, say): the clients waiting out
    /// a backoff route their requests by the new map now, instead of after the backoff (which the
    /// map they waited on set: up to [`super::BACKOFF_MAX`] more of a failover).
    fn wake_backed_off(&mut self) {
        for c in 0..self.clients.len() {
            if self.clients[c].wake_at.take().is_some() {
                self.mark(c);
            }
        }
    }

    /// The questions' connection could not be opened or set up: the next node is asked.
    pub(super) fn on_question_failed(&mut self) {
        if self.queries.asking.is_some() {
            self.queries.move_on = true;
        }
    }
}
