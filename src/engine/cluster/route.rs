//! Drawing and routing requests: each built in its pool entry with its key's slot, queued for the node
//! that owns the slot, closed-loop clients topped up to whole batches and open-loop ones admitted when
//! due.

use super::{ClusterLayer, NO_CONN, Req, stamp};
use crate::config::ReadFrom;
use crate::engine::ring::Driver;
use crate::engine::schedule::LATE;
use crate::protocol::cluster;
use crate::protocol::cluster::SLOTS;
use crate::protocol::cluster::UNASSIGNED;
use crate::workload::compose::KeyAt;
use crate::workload::keys::bounded;
use rand::Rng;
use std::time::Instant;

impl ClusterLayer<'_> {
    /// Builds request `i` of client `c` in its pool entry and returns its node (`None`: it has no
    /// owner now and waits on the retry list). Its slot comes from where the key was written.
    pub(super) fn build(&mut self, c: usize, i: usize) -> Option<usize> {
        let cl = &mut self.clients[c];
        let (slot, kind) = match (self.replay.as_deref(), self.composer.as_deref()) {
            (Some(r), _) => {
                let (share, pos) = (self.plan.first_client + c, cl.replayed);
                cl.replayed += 1;
                let out = &mut cl.composed[i];
                out.clear();
                let kind = r.write(share, pos, out);
                (r.slot(share, pos), kind as u16)
            }
            (None, Some(comp)) => {
                let out = &mut cl.composed[i];
                out.clear();
                let kind = comp.write_request(out, &mut cl.keys, &mut cl.rng, &self.turn);
                if self.tagged {
                    cluster::fill_slot_tags(out, cl.rng.next_u64());
                }
                let slot = match comp.key(kind) {
                    KeyAt::Fixed(r) => Some(cluster::slot_of(&out[r.clone()])),
                    KeyAt::Varies => cluster::request_key(out).map(cluster::slot_of),
                    KeyAt::Absent => None,
                };
                (slot, kind as u16)
            }
            (None, None) => {
                let (keys, rng) = (&mut cl.keys, &mut cl.rng);
                match &self.digits {
                    // The key's slot from the number its digits were patched with.
                    Some((index, slots)) => {
                        let (mut k, mut key) = (0, 0);
                        cl.pipe.fill_request(i, |g| {
                            let v = keys.next_group(g, rng);
                            if k == *index {
                                key = v;
                            }
                            k += 1;
                            v
                        });
                        (Some(slots.slot(key)), 0)
                    }
                    None => {
                        let bytes = cl.pipe.fill_request(i, |g| keys.next_group(g, rng));
                        (
                            self.key
                                .as_ref()
                                .map(|r| cluster::slot_of(&bytes[r.clone()])),
                            0,
                        )
                    }
                }
            }
        };
        // A command without a key may go anywhere: spread such requests over the masters.
        let slot = slot.unwrap_or_else(|| bounded(cl.rng.next_u64(), SLOTS as u64) as u16);
        cl.reqs[i] = Req {
            slot,
            kind,
            target: UNASSIGNED,
            ..Req::default()
        };
        self.enqueue(c, i as u32, false)
    }

    /// Routes request `i` of client `c` to the node a redirect named, or else to its slot's owner: to
    /// the back of that node's queue (its front with `first`). Returns the node, or `None` when the
    /// slot has no owner now (the request waits on the retry list).
    pub(super) fn enqueue(&mut self, c: usize, i: u32, first: bool) -> Option<usize> {
        let r = &self.clients[c].reqs[i as usize];
        let node = if r.target != UNASSIGNED {
            let node = r.target as usize;
            if node < self.map.nodes.len() && node >= self.clients[c].queue.len() {
                // A node a redirect just named: every client gets room for it.
                self.grow_nodes();
            }
            node
        } else {
            let (slot, kind) = (r.slot, r.kind);
            self.route(c, slot, kind)
        };
        let cl = &mut self.clients[c];
        if node >= cl.queue.len() {
            // No owner (or a node the map does not hold): it waits for its slot.
            cl.retry.push(i);
            cl.wait = true;
            return None;
        }
        if first {
            cl.queue[node].push_front(i);
        } else {
            cl.queue[node].push_back(i);
        }
        Some(node)
    }

    /// The node client `c` sends a request of kind `kind` for `slot` to: its owner (or under `--rfr` a
    /// replica for a read). Every client gets room for a node the map names that it had none for; a
    /// node it has no room for means the slot has no owner now.
    #[inline]
    pub(super) fn route(&mut self, c: usize, slot: u16, kind: u16) -> usize {
        let owner = self.owners.of(slot, &self.map.owner);
        let node = if self.read_from != ReadFrom::Masters
            && owner != UNASSIGNED
            && self.reads[kind as usize]
        {
            self.read_node(c, owner)
        } else {
            owner
        } as usize;
        if node < self.map.nodes.len() && node >= self.clients[c].queue.len() {
            self.grow_nodes();
        }
        node
    }

    /// `--rfr`: the node client `c`'s next read of a slot `master` owns goes to: its replicas in
    /// turn (`yes`), or the master and its replicas in turn (`all`); the master when it has none.
    fn read_node(&mut self, c: usize, master: u16) -> u16 {
        let replicas = &self.map.replicas[master as usize];
        let cl = &mut self.clients[c];
        cl.turn = cl.turn.wrapping_add(1);
        match (self.read_from, replicas.len()) {
            (_, 0) => master,
            (ReadFrom::All, n) => match cl.turn as usize % (n + 1) {
                0 => master,
                k => replicas[k - 1],
            },
            (_, n) => replicas[cl.turn as usize % n],
        }
    }

    /// True when client `c`'s connection to node `n` can take a whole batch now (or once it is
    /// opened): closed loop, its last batch is answered.
    pub(super) fn idle(&self, d: &Driver<'_>, c: usize, n: usize) -> bool {
        let j = self.clients[c].links[n];
        j == NO_CONN || !self.owes(j) && !d.is_sending(j) && (d.is_live(j) || d.is_closed(j))
    }

    /// Closed loop: draws requests until every idle connection of client `c` has a whole batch
    /// queued (or the pool is full, or the share is done). Keys that fall to busy nodes wait in their
    /// queues.
    pub(super) fn top_up(&mut self, d: &Driver<'_>, c: usize, now: Instant) {
        if self.clients[c].done {
            return;
        }
        if self.state.deadline.is_some_and(|t| now >= t) {
            // --duration is over: requests drawn but never sent are dropped (nothing counts them).
            let cl = &mut self.clients[c];
            cl.done = true;
            let (reqs, free, stalled) = (&cl.reqs, &mut cl.free, &mut cl.stalled);
            for q in cl.queue.iter_mut() {
                q.retain(|&i| {
                    let r = &reqs[i as usize];
                    if !r.sent {
                        *stalled -= u32::from(r.stalled != 0);
                        free.push(i);
                    }
                    r.sent
                });
            }
            self.drop_staged(c);
            return;
        }
        if self.clients[c].stalled > 0 {
            return;
        }
        let depth = self.depth;
        let mut short = if self.masters.is_empty() { depth } else { 0 };
        // Which connections take a batch does not change while keys are drawn (nothing is sent).
        let mut idle_now = std::mem::take(&mut self.idle_now);
        idle_now.clear();
        idle_now.resize(self.clients[c].queue.len(), false);
        for &n in &self.masters {
            if self.idle(d, c, n) {
                idle_now[n] = true;
                short += depth.saturating_sub(self.queued_for(c, n));
            }
        }
        if self.lean.is_some() {
            while short > 0 {
                let cl = &mut self.clients[c];
                if cl.free.len() <= cl.fresh_held {
                    break;
                }
                if self.state.claim(1) == 0 {
                    self.clients[c].done = true;
                    break;
                }
                // Which node a key falls to is random: the count is kept without a branch on it.
                let fills = match self.build_staged(c) {
                    Some(n) => {
                        (self.queued_for(c, n) <= depth) & idle_now.get(n).copied().unwrap_or(false)
                    }
                    None => self.masters.is_empty(),
                };
                short -= usize::from(fills);
            }
            self.idle_now = idle_now;
            return;
        }
        while short > 0 {
            let Some(i) = self.clients[c].free.pop() else {
                break;
            };
            if self.replay_done(c) || self.state.claim(1) == 0 {
                let cl = &mut self.clients[c];
                cl.free.push(i);
                cl.done = true;
                break;
            }
            match self.build(c, i as usize) {
                Some(n)
                    if self.clients[c].queue[n].len() <= depth
                        && idle_now.get(n).copied().unwrap_or(false) =>
                {
                    short -= 1;
                }
                None if self.masters.is_empty() => short -= 1,
                _ => {}
            }
        }
        self.idle_now = idle_now;
    }

    /// Requests client `c` holds for node `n` and has not sent: queued from the pool, and staged.
    fn queued_for(&self, c: usize, n: usize) -> usize {
        let cl = &self.clients[c];
        cl.queue[n].len() + cl.stage.get(n).map_or(0, |s| s.count)
    }

    /// `--replay`: whether client `c` has built every command of its share.
    fn replay_done(&self, c: usize) -> bool {
        self.replay
            .as_deref()
            .is_some_and(|r| self.clients[c].replayed >= r.stream(self.plan.first_client + c).len())
    }

    /// Open loop: takes every request of client `c` that is due, while its pool has room.
    pub(super) fn admit(&mut self, c: usize, now: Instant) {
        let deadline = self.state.deadline;
        while !self.clients[c].done {
            let replay_done = self.replay_done(c);
            // A replay's client has its share of the capture to send, no more.
            let share = self.replay.as_deref().map_or(u64::MAX, |r| {
                let left = r.stream(self.plan.first_client + c).len();
                left.saturating_sub(self.clients[c].replayed) as u64
            });
            let cl = &mut self.clients[c];
            let Some(at) = cl.pacing.as_ref().map(|p| p.intended(cl.seq)) else {
                return;
            };
            if replay_done {
                cl.done = true;
                break;
            }
            if let Some(d) = deadline.filter(|&d| at >= d || now >= d) {
                // The end of --duration: what fell due before it and was never drawn is not sent.
                let behind = cl
                    .pacing
                    .as_ref()
                    .map_or(0, |p| p.due_before(cl.seq, d, share));
                cl.done = true;
                let behind = behind.min(self.state.remaining.get());
                self.state.stats.borrow_mut().late_unsent += behind;
                break;
            }
            if at > now {
                break;
            }
            let Some(i) = cl.free.pop() else {
                // No room: it goes as soon as a request in flight ends.
                if now > at + LATE {
                    cl.was_full = true;
                }
                break;
            };
            if self.state.claim(1) == 0 {
                cl.free.push(i);
                cl.done = true;
                break;
            }
            let full = std::mem::take(&mut cl.was_full);
            cl.seq += 1;
            self.build(c, i as usize);
            let r = &mut self.clients[c].reqs[i as usize];
            r.intended = stamp(self.base, at);
            r.full = full;
        }
    }
}
