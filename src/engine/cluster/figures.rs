//! What a cluster run records: each reply once, into its master's histogram (replies of one buffer
//! with one latency as one record), and the counters published to the shard's figures.

use super::{ClusterLayer, Group, NodeTally, Req};
use crate::stats::ShardStats;
use crate::stats::new_histogram;
use std::time::Instant;

impl ClusterLayer<'_> {
    /// Records the reply from node `node` that arrived at `now` for request `r` (an error reply when
    /// `error`): latency from its intended time, service time from its first send, its mix command's
    /// figures. Replies sharing node, reference time and arrival are recorded together.
    /// `now_ns` is `now`'s stamp.
    pub(super) fn complete(
        &mut self,
        node: usize,
        r: &Req,
        error: bool,
        now: Instant,
        now_ns: u64,
    ) {
        let intended = if r.intended == 0 { now_ns } else { r.intended };
        self.complete_run(node, intended, now_ns, now, 1);
        if let Some(svc) = self.service.as_mut() {
            let sent = if r.first_sent == 0 {
                intended
            } else {
                r.first_sent
            };
            svc.saturating_record(now_ns.saturating_sub(sent).max(1));
        }
        if let Some(part) = self.parts.get_mut(r.kind as usize) {
            let lat = now_ns.saturating_sub(intended).max(1);
            part.hist.saturating_record(lat);
            part.completed += 1;
            part.errors += u64::from(error);
        }
    }

    /// Records `n` replies from node `node` that arrived at `now` (stamp `now_ns`) for requests
    /// intended at stamp `intended` into the current group when they share it (service time and a
    /// mix command's figures are the caller's).
    pub(super) fn complete_run(
        &mut self,
        node: usize,
        intended: u64,
        now_ns: u64,
        now: Instant,
        n: u64,
    ) {
        match self.group.as_mut() {
            Some(g) if g.node == node && g.intended == intended && g.now_ns == now_ns => g.n += n,
            _ => {
                self.flush_group();
                self.group = Some(Group {
                    node,
                    intended,
                    now_ns,
                    now,
                    n,
                });
            }
        }
    }

    /// Records the current group into its node's histogram.
    pub(super) fn flush_group(&mut self) {
        let Some(g) = self.group.take() else {
            return;
        };
        let lat = g.now_ns.saturating_sub(g.intended).max(1);
        if let Some(total) = self.interval_total.as_mut()
            && let Some(rec) = self.state.intervals.borrow_mut().as_mut()
            && rec.due(g.now)
        {
            // `--hdr-out`: the seconds before this reply are cut from the sum of what is recorded.
            total.reset();
            for t in &self.tallies {
                let _ = total.add(&t.hist);
            }
            let parts = &self.parts;
            rec.cut_until(g.now, total, |i| parts.get(i).map(|p| &p.hist));
        }
        while self.tallies.len() <= g.node {
            self.tallies.push(NodeTally {
                completed: 0,
                hist: new_histogram(self.cfg.record.precision),
            });
        }
        let t = &mut self.tallies[g.node];
        t.completed += g.n;
        t.hist.saturating_record_n(lat, g.n);
        self.fresh += g.n;
        self.fresh_lat_ns += lat * g.n;
        self.fresh_end = Some(g.now);
        let second = g.now.saturating_duration_since(self.plan.epoch).as_secs() as usize;
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += g.n;
    }

    /// Adds the replies recorded since the last call to `st`'s counters (and the live latency sum).
    pub(super) fn publish_into(&mut self, st: &mut ShardStats) {
        self.flush_group();
        if self.fresh == 0 {
            return;
        }
        st.completed += self.fresh;
        st.end = self.fresh_end;
        self.state
            .latency_sum_ns
            .set(self.state.latency_sum_ns.get() + self.fresh_lat_ns);
        self.fresh = 0;
        self.fresh_lat_ns = 0;
    }

    /// GET hits and misses, once every reply is counted in `st`: a GET answered, not with an error,
    /// and not nil is a hit (per command of a mix, and for the whole test).
    pub(super) fn hits_and_misses_into(&self, st: &mut ShardStats) {
        if !st.parts.is_empty() {
            for (k, part) in st.parts.iter_mut().enumerate() {
                if self.gets.get(k).copied().unwrap_or(false) {
                    let m = self.misses[k];
                    part.misses += m;
                    part.hits += part.completed.saturating_sub(part.errors + m);
                    st.hits += part.completed.saturating_sub(part.errors + m);
                    st.misses += m;
                }
            }
        } else if self.gets.first().copied().unwrap_or(false) {
            let m = self.misses[0];
            st.misses += m;
            st.hits += st.completed.saturating_sub(st.errors + m);
        }
    }

    /// [`Self::publish_into`] the shard's figures: once per received buffer, not per reply.
    pub(super) fn publish(&mut self) {
        if self.group.is_none() && self.fresh == 0 {
            return;
        }
        let state = self.state;
        self.publish_into(&mut state.stats.borrow_mut());
    }
}
