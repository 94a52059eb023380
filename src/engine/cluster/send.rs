//! Sending: each master's batch from a client's queue onto its connection (a lazy connect on the ring
//! first when it has none), one client's pump, and its end.

use super::*;

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
        let depth = self.depth;
        let paced = self.clients[c].pacing.is_some();
        let composed = self.composer.is_some() || self.replay.is_some();
        let now_ns = stamp(self.base, now);
        let late_ns = LATE.as_nanos() as u64;
        let (mut late_full, mut late_free) = (0u64, 0u64);
        // Partial batches go at the end of the share, while a request waits for its slot, and when
        // the pool is full with nothing in flight to free it (a safety valve: what is in flight and
        // one partial batch per master cannot fill it).
        let starved = self.clients[c].free.len() <= self.clients[c].fresh_held
            && self.conns_of(c).all(|j| !self.owes(j));
        let cl = &mut self.clients[c];
        cl.unreachable.fill(false);
        let whole_only = !paced && !cl.done && !starved && cl.stalled == 0;
        for n in 0..self.clients[c].queue.len() {
            let staged = self.clients[c].stage.get(n).map_or(0, |s| s.count);
            if staged == 0 && self.clients[c].queue[n].is_empty() {
                continue;
            }
            let j = self.link(d, c, n);
            if !self.clients[c].unreachable[n] && !d.is_live(j) {
                if !d.is_closed(j) {
                    // The last connection there is still draining: its end wakes the client.
                    continue;
                }
                // Connect lazily to a node this client has no connection to (a new owner, or after a
                // loss), on the ring: its opening's end wakes the client (or fails like a loss).
                let addr = self.map.nodes[n].addr;
                match d.open_async(j, &node_target(addr)) {
                    Ok(()) => continue,
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
                continue;
            }
            if d.is_sending(j) {
                continue;
            }
            let owed = self.owed_len(j);
            let room = if paced {
                depth.saturating_sub(owed)
            } else if owed == 0 {
                depth
            } else {
                0
            };
            if room == 0 && !paced {
                // Closed loop: its batch is in flight; its reply wakes the client.
                continue;
            }
            let Client {
                reqs,
                queue,
                pipe,
                composed: bufs,
                ..
            } = &mut self.clients[c];
            let q = &mut queue[n];
            if whole_only && q.len() + staged < depth && !q.iter().any(|&i| reqs[i as usize].sent) {
                // Closed loop: a batch leaves whole. More keys for this node come as the others'
                // replies free the pool (it always holds a batch beyond what is in flight and every
                // node's partial batch); the last requests of the share leave as they are, and so do
                // redirected ones.
                continue;
            }
            let k = room.min(q.len());
            let f = (room - k).min(staged);
            // The ASKING commands sent ahead of redirected requests are owed replies too: they are
            // counted while writing, not in a pass of their own.
            let mut asks = 0;
            if k > 0 {
                let (out, mut verify) = d.out_verified(j, k);
                let owed = &mut self.owed[j];
                for i in q.drain(..k) {
                    let r = &mut reqs[i as usize];
                    if r.asking {
                        asks += 1;
                        out.extend_from_slice(ASKING);
                        owed.push_back(ASKING_MARK);
                        if let Some(v) = verify.as_deref_mut() {
                            v.skip();
                        }
                    }
                    let bytes = if composed {
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
                    owed.push_back(if !paced && r.first_sent == 0 && r.stalled == 0 {
                        i | FRESH
                    } else {
                        i
                    });
                    r.sent = true;
                    if r.first_sent == 0 {
                        r.first_sent = now_ns;
                        if r.intended == 0 {
                            r.intended = now_ns;
                        } else if now_ns.saturating_sub(r.intended) > late_ns {
                            if r.full {
                                late_full += 1;
                            } else {
                                late_free += 1;
                            }
                        }
                    }
                }
            }
            if asks > 0 {
                d.out(j, asks);
            }
            if paced {
                // What is left waits for this node's pipeline.
                for &i in q.iter() {
                    reqs[i as usize].full = true;
                }
            }
            if f > 0 {
                // Staged requests go after the pooled ones (their replies are owed after them).
                let (out, verify) = d.out_verified(j, f);
                self.send_staged(c, n, j, f, out, verify);
            }
            if k + f == 0 {
                continue;
            }
            self.sent_ns[j] = now_ns;
            if let Err(e) = d.send(j, now) {
                let e = at_node(&e, &self.map.nodes[n].name);
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
        }
        if late_full + late_free > 0 {
            let mut st = self.state.stats.borrow_mut();
            st.late_full += late_full;
            st.late_free += late_free;
        }
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
