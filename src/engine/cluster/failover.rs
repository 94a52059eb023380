//! Redirects, losses and failovers: a lost master noted and the node that answers for its slots found
//! (the slot map is re-read by `query.rs`), requests that wait for their slot retried with backoff, and the give-up after
//! `--failover-timeout`.

use super::{
    ASKING_MARK, BACKOFF_MAX, BACKOFF_START, ClusterLayer, LostNode, MAX_ATTEMPTS, WATCH_EVERY,
    stamp_ms, untag,
};
use crate::engine::ring::Driver;
use crate::protocol::cluster::UNASSIGNED;
use std::time::Instant;

impl ClusterLayer<'_> {
    /// Notes that a connection to `node` was lost or refused, for a node that owns slots (what follows
    /// is a failover, or a give-up): once per loss, so a node lost again after another node answered
    /// for its slots (it became a master again, and failed again) is listed again.
    pub(super) fn note_lost(&mut self, node: usize, now: Instant) {
        let node = node as u16;
        if self
            .lost
            .iter()
            .any(|l| l.node == node && l.answered.is_none())
        {
            return;
        }
        let slots: Vec<bool> = self.map.owner.iter().map(|&o| o == node).collect();
        if !slots.contains(&true) {
            return;
        }
        let lost_s = self.seconds(now);
        self.lost.push(LostNode {
            node,
            lost_s,
            slots,
            answered: None,
            answered_ms: 0,
        });
        self.watching = true;
    }

    /// Notes a reply from `node` for `slot`: the first for a lost master's slot from another node marks
    /// the end of its failover.
    pub(super) fn note_answer(&mut self, node: usize, slot: u16, now: Instant) {
        if !self.watching {
            return;
        }
        let at = self.seconds(now);
        let mut open = false;
        for l in self.lost.iter_mut() {
            if l.answered.is_none() {
                if l.node as usize != node && l.slots[slot as usize] {
                    l.answered = Some((node as u16, at));
                    l.answered_ms = stamp_ms(self.base, now);
                } else {
                    open = true;
                }
            }
        }
        self.watching = open;
    }

    /// Ends this shard's run: `slot` has had no answering master for `--failover-timeout` (or `silent`
    /// did not reply within it). Asks the other nodes for the cluster's state for the message
    /// ([`Self::give_up_message`]).
    pub(super) fn give_up(&mut self, slot: u16, silent: Option<usize>) {
        if self.abort.is_some() {
            return;
        }
        // The node that was silent: the one named, or the lost master whose slot this was (the map
        // may name nobody, or a new owner that never answered), or else the slot's owner.
        let o = silent.unwrap_or_else(|| {
            self.lost
                .iter()
                .rev()
                .find(|l| l.answered.is_none() && l.slots[slot as usize])
                .map_or(self.map.owner[slot as usize], |l| l.node) as usize
        });
        let owner = self.map.nodes.get(o).map(|n| n.name.clone());
        let secs = self.cfg.connect.failover_timeout.as_secs_f64();
        let what = match (silent, owner) {
            (Some(_), Some(n)) => format!("{n} sent no reply for {secs} s"),
            (None, Some(n)) => {
                format!("no master answered for the slots of {n} (slot {slot}) for {secs} s")
            }
            (_, None) => format!("slot {slot} has had no master for {secs} s"),
        };
        self.abort = Some(what);
        // The message names the cluster's state as another node sees it: asked on the ring, the run
        // ends once it is answered (or no node could answer).
        self.ask_state(o);
    }

    /// Why the shard gave up, whole: what was silent, the cluster's state, the flag.
    pub(super) fn give_up_message(&self) -> Option<String> {
        let what = self.abort.as_ref()?;
        let state = self
            .queries
            .state
            .as_deref()
            .unwrap_or("cluster_state unknown (no other node answered CLUSTER INFO)");
        Some(format!(
            "--cluster: {what}; {state}; giving up (--failover-timeout)"
        ))
    }

    /// Moves client `c`'s redirected and lost requests to its list to route again; false when the
    /// shard gave up (a slot without an answering master for `--failover-timeout`).
    pub(super) fn take_retries(&mut self, c: usize, now: Instant) -> bool {
        let now_ms = stamp_ms(self.base, now);
        // Whole milliseconds beyond the timeout: a stamp's truncation never makes it give up early.
        let limit_ms = self
            .cfg
            .connect
            .failover_timeout
            .as_millis()
            .min(u32::MAX as u128) as u32;
        let cl = &mut self.clients[c];
        if cl.lost {
            self.retries += cl.retry.len() as u64;
            for &i in &cl.retry {
                let r = &mut cl.reqs[i as usize];
                // A lost connection sends the request to its slot's owner again, as the map says.
                r.target = UNASSIGNED;
                r.asking = false;
                if r.stalled == 0 {
                    r.stalled = now_ms;
                    cl.stalled += 1;
                }
            }
        }
        let mut stuck = None;
        let mut failed = 0;
        let lost = &self.lost;
        for k in 0..cl.retry.len() {
            let i = cl.retry[k];
            let r = &mut cl.reqs[i as usize];
            if r.stalled != 0
                && lost
                    .iter()
                    .any(|l| l.answered_ms > r.stalled && l.slots[r.slot as usize])
            {
                // Its slot was answered since it began to wait (a failover ended): this wait is a
                // new one (the next failover of the same slots), timed from now.
                r.stalled = now_ms;
                r.waits = 0;
            }
            if r.attempts >= MAX_ATTEMPTS {
                failed += 1;
                cl.release(i);
                continue;
            }
            if r.target == UNASSIGNED
                && self.map.owner[r.slot as usize] == UNASSIGNED
                && r.stalled == 0
            {
                r.stalled = now_ms;
                cl.stalled += 1;
            }
            if r.stalled != 0 && now_ms.saturating_sub(r.stalled) > limit_ms {
                stuck = stuck.or(Some(r.slot));
            }
            if r.stalled != 0 {
                r.waits = r.waits.saturating_add(1);
            }
            cl.todo.push(i);
        }
        cl.retry.clear();
        if failed > 0 {
            self.state.stats.borrow_mut().failed += failed;
        }
        if let Some(slot) = stuck {
            self.give_up(slot, None);
            return false;
        }
        let (moved, lost, wait) = (cl.moved, cl.lost, cl.wait);
        cl.moved = false;
        cl.lost = false;
        cl.wait = false;
        if moved || lost {
            self.refresh();
        }
        let cl = &mut self.clients[c];
        if (wait || lost) && !cl.todo.is_empty() {
            let round = cl
                .todo
                .iter()
                .map(|&i| cl.reqs[i as usize].waits)
                .max()
                .unwrap_or(1);
            let backoff = BACKOFF_START
                .saturating_mul(1 << round.min(6))
                .min(BACKOFF_MAX);
            cl.wake_at = Some(now + backoff);
        }
        true
    }

    /// Gives up when a node has held replies back longer than `--failover-timeout`.
    pub(super) fn watch(&mut self, d: &Driver<'_>, now: Instant) {
        if now < self.next_watch {
            return;
        }
        self.next_watch = now + WATCH_EVERY;
        let limit = self.cfg.connect.failover_timeout;
        for j in 0..self.owed.len() {
            let (due, last) = d.owed(j);
            if due > 0 && d.is_live(j) && now.saturating_duration_since(last) >= limit {
                let (c, node) = self.ends[j];
                let slot = self.owed[j]
                    .iter()
                    .find(|&&i| i != ASKING_MARK)
                    .map(|&i| self.clients[c].reqs[untag(i) as usize].slot)
                    .or_else(|| self.staged_slot(j))
                    .unwrap_or(0);
                self.give_up(slot, Some(node));
                return;
            }
        }
    }
}
