//! Redirects, losses and failovers: the slot map re-read, a lost master noted and the node that answers
//! for its slots found, requests that wait for their slot retried with backoff, and the give-up after
//! `--failover-timeout`.

use super::*;

impl ClusterLayer<'_> {
    /// Re-reads the slot map unless it was read just now.
    pub(super) fn refresh(&mut self, now: Instant) {
        if self
            .last_refresh
            .is_some_and(|t| now.saturating_duration_since(t) < REFRESH_GAP)
        {
            return;
        }
        let mut candidates: Vec<SocketAddr> = self
            .map
            .masters()
            .iter()
            .map(|&i| self.map.nodes[i as usize].addr)
            .collect();
        for n in &self.map.nodes {
            if !candidates.contains(&n.addr) {
                candidates.push(n.addr);
            }
        }
        for addr in candidates {
            if let Ok(fresh) = discovery::discover(
                &node_target(addr),
                self.cfg.tls.as_ref(),
                &self.cfg.setup,
                self.cfg.run.connect_timeout,
            ) {
                self.map.update_from(&fresh);
                self.masters = masters_of(&self.map);
                self.grow_nodes();
                break;
            }
        }
        self.last_refresh = Some(Instant::now());
    }

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
    /// did not reply within it). Asks the other nodes for the cluster's state for the message.
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
        let mut state = String::from("cluster_state unknown (no other node answered CLUSTER INFO)");
        for (_, n) in self.map.nodes.iter().enumerate().filter(|&(i, _)| i != o) {
            let target = node_target(n.addr);
            let reply = ControlClient::connect(
                &target,
                self.cfg.tls.as_ref(),
                &self.cfg.setup,
                self.cfg.run.connect_timeout,
            )
            .and_then(|mut c| c.command(&[b"CLUSTER", b"INFO"]));
            if let Ok(Value::Bulk(b) | Value::Verbatim(_, b)) = reply
                && let Some(line) = String::from_utf8_lossy(&b)
                    .lines()
                    .find(|l| l.starts_with("cluster_state:"))
            {
                state = format!("{} (says {})", line.trim(), target.display());
                break;
            }
        }
        let secs = self.cfg.run.failover_timeout.as_secs_f64();
        let what = match (silent, owner) {
            (Some(_), Some(n)) => format!("{n} sent no reply for {secs} s"),
            (None, Some(n)) => {
                format!("no master answered for the slots of {n} (slot {slot}) for {secs} s")
            }
            (_, None) => format!("slot {slot} has had no master for {secs} s"),
        };
        self.abort = Some(format!(
            "--cluster: {what}; {state}; giving up (--failover-timeout)"
        ));
    }

    /// Moves client `c`'s redirected and lost requests to its list to route again; false when the
    /// shard gave up (a slot without an answering master for `--failover-timeout`).
    pub(super) fn take_retries(&mut self, c: usize, now: Instant) -> bool {
        let now_ms = stamp_ms(self.base, now);
        // Whole milliseconds beyond the timeout: a stamp's truncation never makes it give up early.
        let limit_ms = self
            .cfg
            .run
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
            self.refresh(now);
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
        let limit = self.cfg.run.failover_timeout;
        for j in 0..self.owed.len() {
            let (due, last) = d.owed(j);
            if due > 0 && d.is_live(j) && now.saturating_duration_since(last) >= limit {
                let (c, node) = self.ends[j];
                let slot = self.owed[j]
                    .iter()
                    .find(|&&i| i != ASKING_MARK)
                    .map_or(0, |&i| self.clients[c].reqs[i as usize].slot);
                self.give_up(slot, Some(node));
                return;
            }
        }
    }
}
