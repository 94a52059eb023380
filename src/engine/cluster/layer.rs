//! The cluster layer as the ring driver sees it: replies, losses, wake-ups, the turn's pump and the
//! figures at the end.

use super::{ASKING_MARK, ClusterLayer, FRESH, NO_CONN, at_node, stamp, untag};
use crate::engine::ring::Driver;
use crate::engine::ring::Layer;
use crate::net::ConnError;
use crate::protocol::resp::Value;
use crate::stats::ShardStats;
use crate::stats::cluster::ClusterStats;
use crate::stats::cluster::Failover;
use std::time::Instant;

impl Layer for ClusterLayer<'_> {
    fn on_replies(&mut self, conn: usize, n: u64, now: Instant) {
        // (The client is woken by `wake`, which follows.)
        let (c, node) = self.ends[conn];
        let now_ns = stamp(self.base, now);
        // A closed-loop request first sent in the connection's last send needs nothing from its pool
        // entry: its latency runs from that send, and it never waited for its slot.
        let quick = !self.watching && self.service.is_none() && self.parts.is_empty();
        let (mut sent_together, mut left) = (0u64, n);
        while left > 0 {
            let Some(e) = self.owed[conn].front().copied() else {
                // The rest answer staged requests (owed after every pooled one).
                sent_together += self.answer_staged(conn, left, now);
                break;
            };
            if e == ASKING_MARK {
                self.owed[conn].pop_front();
                left -= 1;
                continue;
            }
            if quick && e & FRESH != 0 {
                self.owed[conn].pop_front();
                self.clients[c].free.push(e & !FRESH);
                sent_together += 1;
                left -= 1;
                continue;
            }
            if sent_together > 0 {
                let at = self.sent_ns[conn];
                self.complete_run(node, at, now_ns, now, std::mem::take(&mut sent_together));
            }
            self.on_one_reply(conn, false, &[], now);
            left -= 1;
        }
        if sent_together > 0 {
            let at = self.sent_ns[conn];
            self.complete_run(node, at, now_ns, now, sent_together);
        }
        self.after_replies(conn, c);
    }

    fn on_nil_reply(&mut self, conn: usize, now: Instant) {
        // The request it answers: the first owed (a staged one is the test's only command).
        let c = self.ends[conn].0;
        let kind = match self.owed[conn].front().map(|&e| untag(e)) {
            Some(ASKING_MARK) => None,
            Some(i) => Some(self.clients[c].reqs[i as usize].kind as usize),
            None => Some(0),
        };
        if let Some(k) = kind.filter(|&k| self.gets.get(k).copied().unwrap_or(false)) {
            self.misses[k] += 1;
        }
        self.on_replies(conn, 1, now);
    }

    fn on_error_reply(&mut self, conn: usize, raw: &[u8], now: Instant) {
        self.mark(self.ends[conn].0);
        self.on_one_reply(conn, true, raw, now);
        self.after_replies(conn, self.ends[conn].0);
    }

    fn on_lost(&mut self, conn: usize, e: &ConnError, now: Instant) {
        let (c, node) = self.ends[conn];
        self.mark(c);
        let timeout = matches!(e, ConnError::Timeout { .. });
        // Staged requests in flight fail with the connection (a timeout), or are retried.
        let (staged_failed, staged) = if timeout {
            (self.forget_staged(conn), Vec::new())
        } else {
            (0, self.land_staged(conn))
        };
        let cl = &mut self.clients[c];
        let owed = self.owed[conn]
            .drain(..)
            .filter(|&i| i != ASKING_MARK)
            .map(untag);
        let mut st = self.state.stats.borrow_mut();
        st.note_conn_error(&at_node(e, &self.map.nodes[node].name).to_string());
        if timeout {
            // A reply late beyond --timeout: its request fails, it is not sent again.
            let mut n = staged_failed;
            for i in owed {
                n += 1;
                cl.release(i);
            }
            st.failed += n;
            st.timed_out += n;
            return;
        }
        drop(st);
        cl.retry.extend(owed);
        cl.retry.extend(staged);
        cl.lost = true;
        self.note_lost(node, now);
    }

    fn on_open_failed(&mut self, conn: usize, e: &ConnError, now: Instant) {
        if self.queries.owns(conn) {
            self.on_question_failed();
            return;
        }
        // Like a node that could not be reached: what waited for it is routed again after the
        // backoff (and a re-read of the slot map).
        let (c, node) = self.ends[conn];
        self.mark(c);
        self.state
            .stats
            .borrow_mut()
            .note_conn_error(&at_node(e, &self.map.nodes[node].name).to_string());
        let cl = &mut self.clients[c];
        if let Some(q) = cl.queue.get_mut(node) {
            cl.retry.extend(q.drain(..));
        }
        self.unstage(c, node);
        let cl = &mut self.clients[c];
        cl.lost = true;
        self.note_lost(node, now);
    }

    fn on_answer(&mut self, _conn: usize, answer: Value) {
        self.on_question_answered(answer);
    }

    fn wake(&mut self, conn: usize) {
        // Called after each received buffer (and each finished send): its replies go into the
        // shard's counters together.
        self.publish();
        if self.queries.owns(conn) {
            return;
        }
        let c = self.ends[conn].0;
        let cl = &self.clients[c];
        // Closed loop, a connection that still owes replies sends nothing before they come: its
        // finished send, or part of its replies, leaves the client nothing new to do.
        if cl.pacing.is_some() || !self.owes(conn) || !cl.retry.is_empty() || cl.lost || cl.wait {
            self.mark(c);
        }
    }

    fn pump(&mut self, d: &mut Driver<'_>, now: Instant) {
        self.publish();
        self.owners.refresh(&self.map.owner);
        self.watch(d, now);
        self.ask(d, now);
        if !self.renew.is_empty() {
            let (owed, flight) = (&self.owed, &self.flight);
            // A connection whose send is still in the kernel closes once it is done.
            self.renew.retain(|&j| {
                if !d.is_live(j) || !owed[j].is_empty() || flight[j].owed > 0 {
                    return false;
                }
                if d.is_sending(j) {
                    return true;
                }
                d.shut(j);
                false
            });
        }
        if self.abort.is_some() {
            (0..self.clients.len()).for_each(|c| self.mark(c));
        }
        // Clients due without news: an open-loop request, a backoff's end.
        let (queued, ready) = (&mut self.queued, &mut self.ready);
        self.schedule.pop_due(now, |c| {
            if !queued[c] {
                queued[c] = true;
                ready.push(c);
            }
        });
        std::mem::swap(&mut self.ready, &mut self.pumping);
        for k in 0..self.pumping.len() {
            self.queued[self.pumping[k]] = false;
        }
        for k in 0..self.pumping.len() {
            let c = self.pumping[k];
            self.pump_client(d, c, now);
        }
        self.pumping.clear();
    }

    fn next_wake(&self) -> Option<Instant> {
        if !self.ready.is_empty() {
            return Some(self.next_watch.min(Instant::now()));
        }
        self.schedule.next()
    }

    fn finished(&self) -> bool {
        // A give-up waits for its CLUSTER INFO (bounded by --connect-timeout per node asked).
        self.clients.iter().all(|c| c.finished) && !self.queries.asking_info()
    }

    fn live_latencies(&self, into: &mut hdrhistogram::Histogram<u64>) {
        for t in &self.tallies {
            let _ = into.add(&t.hist);
        }
    }

    fn finish(&mut self, stats: &mut ShardStats) {
        self.count_unfinished(stats);
        self.publish_into(stats);
        if let Some(why) = self.give_up_message()
            && !stats.conn_errors.contains(&why)
        {
            // Why the run ended comes first, whatever else was noted (the list is capped).
            stats.conn_errors.insert(0, why);
            stats.conn_errors.truncate(crate::stats::MAX_CONN_ERRORS);
        }
        // Every reply was recorded once, in its node's histogram: the shard's is their sum.
        for t in &self.tallies {
            stats
                .hist
                .add(&t.hist)
                .expect("histograms share their bounds");
        }
        for (mine, part) in self.parts.iter().zip(stats.parts.iter_mut()) {
            part.hist
                .add(&mine.hist)
                .expect("histograms share their bounds");
            part.completed += mine.completed;
            part.errors += mine.errors;
        }
        self.hits_and_misses_into(stats);
        if let (Some(mine), Some(svc)) = (&self.service, stats.service.as_mut()) {
            svc.add(mine).expect("histograms share their bounds");
        }
        stats.cluster = Some(self.cluster_stats());
    }
}

impl ClusterLayer<'_> {
    /// Counts what the clients a signal stopped before they finished still held: what they had sent
    /// is in flight, what they had drawn is not sent (under --duration it was never requested).
    fn count_unfinished(&mut self, stats: &mut ShardStats) {
        for c in 0..self.clients.len() {
            let cl = &mut self.clients[c];
            if cl.finished {
                continue;
            }
            cl.finished = true;
            let (mut sent, mut unsent) = self.staged_counts(c);
            let cl = &self.clients[c];
            let (reqs, owed) = (&cl.reqs, &self.owed);
            let held = cl
                .todo
                .iter()
                .chain(&cl.retry)
                .chain(cl.queue.iter().flatten())
                .chain(
                    cl.links
                        .iter()
                        .filter(|&&j| j != NO_CONN)
                        .flat_map(|&j| owed[j].iter()),
                );
            for i in held.map(|&i| untag(i)) {
                if i != ASKING_MARK {
                    if reqs[i as usize].sent {
                        sent += 1;
                    } else {
                        unsent += 1;
                    }
                }
            }
            stats.in_flight += sent;
            if self.state.deadline.is_none() {
                stats.not_sent += unsent;
            }
        }
    }

    /// The cluster's own figures at the end: redirects, retries, replies per second, failovers and
    /// each node's tally.
    fn cluster_stats(&mut self) -> ClusterStats {
        // Seconds without a reply (a stall at the end) are in the per-second figures too.
        let seconds = Instant::now()
            .saturating_duration_since(self.plan.epoch)
            .as_secs() as usize
            + 1;
        if self.per_second.len() < seconds {
            self.per_second.resize(seconds, 0);
        }
        let precision = self.cfg.record.precision;
        let mut cs = ClusterStats {
            moved: self.moved,
            ask: self.ask,
            retries: self.retries,
            per_second: std::mem::take(&mut self.per_second),
            failovers: self
                .lost
                .iter()
                .map(|l| Failover {
                    node: self.map.nodes[l.node as usize].name.clone(),
                    lost_s: l.lost_s,
                    new_master: l
                        .answered
                        .map(|(n, _)| self.map.nodes[n as usize].name.clone()),
                    answered_s: l.answered.map(|(_, t)| t),
                })
                .collect(),
            ..ClusterStats::default()
        };
        for name in &self.initial {
            cs.node_mut(name, precision);
        }
        for (i, t) in self.tallies.iter().enumerate() {
            if t.completed > 0 {
                let n = cs.node_mut(&self.map.nodes[i].name, precision);
                n.completed += t.completed;
                n.hist.add(&t.hist).expect("histograms share their bounds");
            }
        }
        cs
    }
}
