//! Sending: each master's batch from a client's queue onto its connection (a lazy connect on the ring
//! first when it has none), one client's pump, and its end.

use super::{
    ASKING, ASKING_MARK, Client, ClusterLayer, FRESH, NO_CONN, at_node, node_target, stamp, untag,
};
use crate::engine::ring::Driver;
use crate::engine::schedule::LATE;
use crate::net::ConnError;
use std::collections::VecDeque;
use std::time::Instant;

impl ClusterLayer<'_> {
    /// Ends client `c`: what it still holds (to send, to retry, or waiting for a reply) counts as
    /// failed (sent at least once) or not sent, and its connections are closed.
    pub(super) fn finish_client(&mut self, d: &mut Driver<'_>, c: usize) {
        let (mut sent, mut unsent) = self.staged_counts(c);
        self.drop_staged(c);
        let links = std::mem::take(&mut self.clients[c].links);
        for &j in links.iter().filter(|&&j| j != NO_CONN) {
            self.forget_staged(j);
        }
        let cl = &mut self.clients[c];
        cl.finished = true;
        let reqs = &cl.reqs;
        let mut count = |i: u32| {
            let i = untag(i);
            if i != ASKING_MARK {
                if reqs[i as usize].sent {
                    sent += 1;
                } else {
                    unsent += 1;
                }
            }
        };
        cl.todo.drain(..).for_each(&mut count);
        cl.retry.drain(..).for_each(&mut count);
        for q in cl.queue.iter_mut() {
            q.drain(..).for_each(&mut count);
        }
        for &j in links.iter().filter(|&&j| j != NO_CONN) {
            self.owed[j].drain(..).for_each(&mut count);
            if d.is_live(j) || d.is_opening(j) {
                d.shut(j);
            }
        }
        self.clients[c].links = links;
        let mut st = self.state.stats.borrow_mut();
        if self.plan.control.stopped() || self.state.deadline.is_some() {
            // Stopped by a signal or the end of --duration: what was sent is in flight; what was
            // drawn but not sent counts as not sent after a signal, and not at all under --duration.
            st.in_flight += sent;
            if self.state.deadline.is_none() {
                st.not_sent += unsent;
            }
        } else {
            st.failed += sent;
            st.not_sent += unsent;
        }
    }

    /// Sends each of client `c`'s connections its batch: up to `-P` queued requests (closed loop:
    /// once its last batch is answered; open loop: while it has fewer than `-P` in flight). A request
    /// whose connection is still sending or draining waits for that connection's news.
    pub(super) fn send(&mut self, d: &mut Driver<'_>, c: usize, now: Instant) {
        let paced = self.clients[c].pacing.is_some();
        // Partial batches go at the end of the share, while a request waits for its slot, and when
        // the pool is full with nothing in flight to free it (a safety valve: what is in flight and
        // one partial batch per master cannot fill it).
        let starved = self.clients[c].free.len() <= self.clients[c].fresh_held
            && self.conns_of(c).all(|j| !self.owes(j));
        let cl = &mut self.clients[c];
        cl.unreachable.fill(false);
        let mut t = Batches {
            paced,
            composed: self.composer.is_some() || self.replay.is_some(),
            whole_only: !paced && !cl.done && !starved && cl.stalled == 0,
            now_ns: stamp(self.base, now),
            late_ns: LATE.as_nanos() as u64,
            late_full: 0,
            late_free: 0,
        };
        for n in 0..self.clients[c].queue.len() {
            self.send_node(d, c, n, now, &mut t);
        }
        if t.late_full + t.late_free > 0 {
            let mut st = self.state.stats.borrow_mut();
            st.late_full += t.late_full;
            st.late_free += t.late_free;
        }
    }

    /// Sends client `c`'s connection to node `n` its batch, if it has one and may take it.
    #[inline]
    fn send_node(&mut self, d: &mut Driver<'_>, c: usize, n: usize, now: Instant, t: &mut Batches) {
        let depth = self.depth;
        let staged = self.clients[c].stage.get(n).map_or(0, |s| s.count);
        if staged == 0 && self.clients[c].queue[n].is_empty() {
            return;
        }
        let j = self.link(d, c, n);
        if !self.reachable(d, c, n, j, now) || d.is_sending(j) {
            return;
        }
        let owed = self.owed_len(j);
        let room = if t.paced {
            depth.saturating_sub(owed)
        } else if owed == 0 {
            depth
        } else {
            0
        };
        if room == 0 && !t.paced {
            // Closed loop: its batch is in flight; its reply wakes the client.
            return;
        }
        let cl = &mut self.clients[c];
        let q = &cl.queue[n];
        if t.whole_only && q.len() + staged < depth && !q.iter().any(|&i| cl.reqs[i as usize].sent)
        {
            // Closed loop: a batch leaves whole. More keys for this node come as the others'
            // replies free the pool (it always holds a batch beyond what is in flight and every
            // node's partial batch); the last requests of the share leave as they are, and so do
            // redirected ones.
            return;
        }
        let k = room.min(q.len());
        let f = (room - k).min(staged);
        if k > 0 {
            let (out, verify) = d.out_verified(j, k);
            let asks = cl.write_batch(n, k, out, verify, &mut self.owed[j], t);
            if asks > 0 {
                d.out(j, asks);
            }
        }
        if t.paced {
            // What is left waits for this node's pipeline.
            let Client { reqs, queue, .. } = cl;
            for &i in queue[n].iter() {
                reqs[i as usize].full = true;
            }
        }
        if f > 0 {
            // Staged requests go after the pooled ones (their replies are owed after them).
            let (out, verify) = d.out_verified(j, f);
            self.send_staged(c, n, j, f, out, verify);
        }
        if k + f == 0 {
            return;
        }
        self.sent_ns[j] = t.now_ns;
        if let Err(e) = d.send(j, now) {
            self.send_failed(c, n, j, &e, now);
        }
    }

    /// False when client `c` cannot send to node `n` on connection `j` now: the last connection there
    /// is still draining, or one is being opened (its end wakes the client), or the node is out of
    /// reach (its queued and staged requests go back to be retried).
    #[inline]
    fn reachable(
        &mut self,
        d: &mut Driver<'_>,
        c: usize,
        n: usize,
        j: usize,
        now: Instant,
    ) -> bool {
        if !self.clients[c].unreachable[n] && !d.is_live(j) {
            if !d.is_closed(j) {
                // The last connection there is still draining: its end wakes the client.
                return false;
            }
            // Connect lazily to a node this client has no connection to (a new owner, or after a
            // loss), on the ring: its opening's end wakes the client (or fails like a loss).
            let addr = self.map.nodes[n].addr;
            match d.open_async(j, &node_target(addr)) {
                Ok(()) => return false,
                Err(e) => {
                    self.state
                        .stats
                        .borrow_mut()
                        .note_conn_error(&e.to_string());
                    self.clients[c].unreachable[n] = true;
                    self.note_lost(n, now);
                }
            }
        }
        if self.clients[c].unreachable[n] {
            let cl = &mut self.clients[c];
            let q = &mut cl.queue[n];
            cl.retry.extend(q.drain(..));
            cl.lost = true;
            self.unstage(c, n);
            return false;
        }
        true
    }

    /// Connection `j` (client `c`'s to node `n`) failed to send with `e`: what it owed, pooled and
    /// staged, goes back to the client to be retried.
    #[inline]
    fn send_failed(&mut self, c: usize, n: usize, j: usize, e: &ConnError, now: Instant) {
        let e = at_node(e, &self.map.nodes[n].name);
        self.state
            .stats
            .borrow_mut()
            .note_conn_error(&e.to_string());
        let staged = self.land_staged(j);
        let owed = self.owed[j]
            .drain(..)
            .filter(|&i| i != ASKING_MARK)
            .map(untag);
        let cl = &mut self.clients[c];
        cl.retry.extend(owed);
        cl.retry.extend(staged);
        cl.lost = true;
        self.note_lost(n, now);
    }

    /// Everything client `c` has to do now.
    pub(super) fn pump_client(&mut self, d: &mut Driver<'_>, c: usize, now: Instant) {
        if self.clients[c].finished {
            return;
        }
        if self.abort.is_some() {
            self.finish_client(d, c);
            return;
        }
        if let Some(w) = self.clients[c].wake_at {
            if now < w {
                self.schedule(c, w);
                return;
            }
            self.clients[c].wake_at = None;
        }
        self.pump_work(d, c, now);
        let cl = &self.clients[c];
        if cl.finished {
            return;
        }
        if let Some(w) = cl.wake_at {
            self.schedule(c, w);
        } else if !cl.retry.is_empty() {
            // Requests that came back while sending (a node out of reach, a slot without owner):
            // again on the next turn.
            self.mark(c);
        } else if let Some(p) = &cl.pacing
            && !cl.done
            && !cl.free.is_empty()
        {
            let at = p.intended(cl.seq);
            self.schedule(c, at);
        }
    }

    pub(super) fn pump_work(&mut self, d: &mut Driver<'_>, c: usize, now: Instant) {
        let cl = &self.clients[c];
        if !cl.retry.is_empty() || cl.lost || cl.wait {
            if !self.take_retries(c, now) {
                self.finish_client(d, c);
                return;
            }
            if self.clients[c].wake_at.is_some() {
                return;
            }
        }
        // Requests back from a redirect or a loss go first on their nodes.
        while let Some(i) = self.clients[c].todo.pop() {
            self.enqueue(c, i, true);
        }
        if self.clients[c].pacing.is_some() {
            self.admit(c, now);
        } else {
            self.top_up(d, c, now);
        }
        if self.clients[c].done && self.empty(c) && self.quiet(d, c) {
            self.finish_client(d, c);
            return;
        }
        self.send(d, c, now);
    }
}

/// What one [`ClusterLayer::send`] knows for all of a client's nodes, and the requests it found late.
struct Batches {
    paced: bool,
    /// Requests are in their own buffers (composed or replayed), not in the client's pipeline.
    composed: bool,
    /// Closed loop: only whole batches leave (see [`ClusterLayer::send_node`]).
    whole_only: bool,
    /// The send's stamp (see [`super::Req`]), and how long past its intended time a request is late.
    now_ns: u64,
    late_ns: u64,
    /// Requests first sent late: with their pipeline full, or not.
    late_full: u64,
    late_free: u64,
}

impl Client {
    /// Writes the first `k` requests of node `n`'s queue into `out` (each after an ASKING when it
    /// follows an ASK redirect) and owes their replies in `owed`; returns how many ASKINGs it wrote.
    #[inline]
    fn write_batch(
        &mut self,
        n: usize,
        k: usize,
        out: &mut Vec<u8>,
        mut verify: Option<&mut crate::workload::verify::Verifier>,
        owed: &mut VecDeque<u32>,
        t: &mut Batches,
    ) -> usize {
        let Client {
            reqs,
            queue,
            pipe,
            composed: bufs,
            ..
        } = self;
        // The ASKING commands sent ahead of redirected requests are owed replies too: they are
        // counted while writing, not in a pass of their own.
        let mut asks = 0;
        for i in queue[n].drain(..k) {
            let r = &mut reqs[i as usize];
            if r.asking {
                asks += 1;
                out.extend_from_slice(ASKING);
                owed.push_back(ASKING_MARK);
                if let Some(v) = verify.as_deref_mut() {
                    v.skip();
                }
            }
            let bytes = if t.composed {
                &bufs[i as usize]
            } else {
                pipe.request(i as usize)
            };
            out.extend_from_slice(bytes);
            // --data-verify's read pass: the key its reply must hold, in send order.
            if let Some(v) = verify.as_deref_mut() {
                v.expect(crate::workload::verify::key_number(bytes).unwrap_or(u64::MAX));
            }
            // Closed loop: every request a connection owes left in its last send.
            owed.push_back(if !t.paced && r.first_sent == 0 && r.stalled == 0 {
                i | FRESH
            } else {
                i
            });
            r.sent = true;
            if r.first_sent == 0 {
                r.first_sent = t.now_ns;
                if r.intended == 0 {
                    r.intended = t.now_ns;
                } else if t.now_ns.saturating_sub(r.intended) > t.late_ns {
                    if r.full {
                        t.late_full += 1;
                    } else {
                        t.late_free += 1;
                    }
                }
            }
        }
        asks
    }
}
