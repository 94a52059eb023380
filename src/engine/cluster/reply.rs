//! One reply read against its pool entry: a redirect (MOVED, ASK), a wait (TRYAGAIN, CLUSTERDOWN), an
//! error, or a completion; and what a connection does once its replies are in.

use super::{ASKING_MARK, ClusterLayer, PREFETCH_AHEAD, prefetch, stamp, stamp_ms, untag};
use crate::engine::shared::note_error;
use crate::net::discovery;
use crate::protocol::cluster;
use crate::protocol::cluster::Redirect;
use crate::protocol::cluster::UNASSIGNED;
use std::time::Instant;

impl ClusterLayer<'_> {
    /// The next reply owed on connection `conn` (an error reply, its line `raw`, when `error`).
    pub(super) fn on_one_reply(&mut self, conn: usize, error: bool, raw: &[u8], now: Instant) {
        let (c, node) = self.ends[conn];
        let Some(i) = self.owed[conn]
            .pop_front()
            .map(untag)
            .or_else(|| self.next_staged(conn))
        else {
            return;
        };
        // The entries of the replies to come on this connection are fetched ahead: the first reply
        // of a run asks for the next few, each later one for the one that many places on.
        let owed = &self.owed[conn];
        let reqs = &self.clients[c].reqs;
        if conn != self.last_conn {
            self.last_conn = conn;
            owed.iter()
                .take(PREFETCH_AHEAD)
                .for_each(|&k| prefetch(reqs, untag(k)));
        } else if let Some(&k) = owed.get(PREFETCH_AHEAD - 1) {
            prefetch(reqs, untag(k));
        }
        if i == ASKING_MARK {
            return;
        }
        let cl = &mut self.clients[c];
        let r = &mut cl.reqs[i as usize];
        if error {
            match cluster::parse_redirect(raw) {
                Some(Redirect::Moved { slot, node }) => {
                    self.moved += 1;
                    if let Some(idx) = self.map.node_for(node, &discovery::resolve_node) {
                        self.map.owner[slot as usize] = idx;
                        self.owners.invalidate();
                        r.target = idx;
                    } else {
                        r.target = UNASSIGNED;
                    }
                    r.asking = false;
                    r.attempts = r.attempts.saturating_add(1);
                    cl.moved = true;
                    cl.retry.push(i);
                    return;
                }
                Some(Redirect::Ask { node, .. }) => {
                    self.ask += 1;
                    let idx = self.map.node_for(node, &discovery::resolve_node);
                    r.target = idx.unwrap_or(UNASSIGNED);
                    r.asking = idx.is_some();
                    r.attempts = r.attempts.saturating_add(1);
                    cl.retry.push(i);
                    return;
                }
                Some(Redirect::TryAgain | Redirect::ClusterDown) => {
                    self.retries += 1;
                    r.target = UNASSIGNED;
                    r.asking = false;
                    if r.stalled == 0 {
                        r.stalled = stamp_ms(self.base, now);
                        cl.stalled += 1;
                    }
                    cl.wait = true;
                    cl.retry.push(i);
                    return;
                }
                None => note_error(self.state, self.plan, raw),
            }
        }
        let r = *r;
        cl.release(i);
        self.note_answer(node, r.slot, now);
        self.complete(node, &r, error, now, stamp(self.base, now));
    }

    /// After replies on connection `conn` of client `c`: under `-k 0` (closed loop) a connection
    /// whose batch is answered is renewed before its next one, as without --cluster.
    pub(super) fn after_replies(&mut self, conn: usize, c: usize) {
        if !self.owes(conn) && !self.cfg.load.keepalive && self.clients[c].pacing.is_none() {
            self.renew.push(conn);
        }
    }
}
