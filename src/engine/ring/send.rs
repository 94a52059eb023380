//! What each connection sends: closed-loop batches patched in place or composed, the open loop's due
//! requests on the wake-up grid, and the sends themselves (sealed first under TLS).

use super::*;

impl Driver<'_> {
    /// Sends `bytes[out_at..out_len]` on connection `i`; the ring holds the bytes until the send's
    /// completion gives them back ([`Driver::on_send`]).
    pub(super) fn send_rest(&mut self, i: usize, bytes: lent::Lent) {
        let c = &mut self.conns[i];
        let Some(fd) = c.fd.as_ref() else {
            // No socket to send on: the bytes go straight back.
            return self.give_back(i, bytes);
        };
        c.send_pending = true;
        let k = key(i, c.generation, Op::Send);
        self.ring
            .send(k, fd.as_raw_fd(), bytes, c.out_at, c.out_len);
    }

    /// Queues what connection `i` has to send now: a closed-loop batch, or the open loop's due requests.
    // Long on purpose: the per-batch fill; each loop writes under one borrow of the connection.
    pub(super) fn fill(&mut self, i: usize, now: Instant) {
        if self.idle || self.layer.is_some() {
            return;
        }
        let depth = self.cfg.run.pipeline;
        let state = self.state;
        let c = &mut self.conns[i];
        if c.phase != Phase::Live || c.send_pending || c.done_sending {
            return;
        }
        if c.pacing.is_none()
            && c.waiting() == 0
            && self
                .cfg
                .run
                .reconnect_every
                .is_some_and(|r| c.since_open >= r && c.left > 0)
        {
            // memtier's --reconnect-interval: this connection has sent its share; a new one sends on.
            c.renew = true;
            self.shut(i);
            return;
        }
        let past_deadline = |t: Instant| state.deadline.is_some_and(|d| t >= d);
        let mut k = 0usize;
        match &c.pacing {
            None => {
                if c.waiting() > 0 {
                    return;
                }
                // A replayed connection sends its own share of the capture, no more.
                let want = match &c.requests {
                    Requests::Replay(r, s) => r.stream(*s).len().saturating_sub(c.seq as usize),
                    _ => depth,
                }
                .min(depth)
                .min(c.left.min(depth as u64) as usize)
                // memtier's --reconnect-interval: no more on this connection than the interval allows.
                .min(
                    self.cfg
                        .run
                        .reconnect_every
                        .map_or(usize::MAX, |r| r.saturating_sub(c.since_open) as usize),
                );
                let n = if past_deadline(now) || want == 0 {
                    0
                } else {
                    state.claim(want)
                };
                c.left -= (n as u64).min(c.left);
                c.since_open += n as u64;
                if n == 0 {
                    c.done_sending = true;
                    self.finish_if_idle(i);
                    return;
                }
                match &mut c.requests {
                    Requests::Fixed(p) => {
                        let (keys, rng, verify) = (&mut c.keys, &mut c.rng, &mut c.verify);
                        c.out_len = match verify {
                            None => p.fill(n, |g| keys.next_group(g, rng)).len(),
                            // The read pass: each request's key is the one its reply must hold.
                            Some(v) => p
                                .fill(n, |g| {
                                    let k = keys.next_group(g, rng);
                                    v.expect(k);
                                    k
                                })
                                .len(),
                        };
                        c.due = n;
                        c.batch_sent = now;
                        state.stats.borrow_mut().bytes_out += c.out_len as u64;
                    }
                    Requests::Shared(p) => {
                        c.out_len = n * p.request_len();
                        c.due = n;
                        c.batch_sent = now;
                        state.stats.borrow_mut().bytes_out += c.out_len as u64;
                    }
                    Requests::Raw | Requests::Lent => return,
                    Requests::Replay(r, s) => {
                        c.out.clear();
                        for _ in 0..n {
                            let at = c.out.len();
                            let kind = r.write(*s, c.seq as usize, &mut c.out);
                            c.seq += 1;
                            c.flights.push_back(Flight {
                                intended: now,
                                sent: now,
                                kind,
                                len: (c.out.len() - at) as u32,
                            });
                        }
                    }
                    Requests::Composed(comp) => {
                        c.out.clear();
                        for _ in 0..n {
                            let at = c.out.len();
                            let kind =
                                comp.write_request(&mut c.out, &mut c.keys, &mut c.rng, &self.turn);
                            c.flights.push_back(Flight {
                                intended: now,
                                sent: now,
                                kind,
                                len: (c.out.len() - at) as u32,
                            });
                        }
                    }
                }
                k = n;
            }
            Some(p) => {
                if !matches!(c.requests, Requests::Composed(_) | Requests::Replay(..)) {
                    return;
                }
                c.out.clear();
                while c.flights.len() < depth {
                    let due = c.next_due.unwrap_or(now);
                    if past_deadline(due) || past_deadline(now) {
                        c.done_sending = true;
                        break;
                    }
                    if due > now {
                        break;
                    }
                    if let Requests::Replay(r, s) = &c.requests
                        && c.seq as usize >= r.stream(*s).len()
                    {
                        c.done_sending = true;
                        break;
                    }
                    if c.left == 0 || state.claim(1) == 0 {
                        c.done_sending = true;
                        break;
                    }
                    c.left -= 1;
                    if now.duration_since(due) > crate::engine::schedule::LATE {
                        let mut st = state.stats.borrow_mut();
                        if c.room_at > due {
                            st.late_full += 1;
                        } else {
                            st.late_free += 1;
                        }
                    }
                    let at = c.out.len();
                    let kind = match &c.requests {
                        Requests::Composed(comp) => {
                            comp.write_request(&mut c.out, &mut c.keys, &mut c.rng, &self.turn)
                        }
                        Requests::Replay(r, s) => r.write(*s, c.seq as usize, &mut c.out),
                        _ => 0,
                    };
                    c.flights.push_back(Flight {
                        intended: due,
                        sent: now,
                        kind,
                        len: (c.out.len() - at) as u32,
                    });
                    k += 1;
                    c.seq += 1;
                    c.next_due = Some(p.intended(c.seq));
                }
            }
        }
        if k == 0 {
            self.finish_if_idle(i);
            self.schedule(i, now);
            return;
        }
        if c.waiting() == k {
            c.last_progress = now;
        }
        if let Err(e) = self.start_send(i) {
            self.lose(i, &e);
            return;
        }
        self.schedule(i, now);
    }

    /// Open loop: puts connection `i` where its next request will be found, if it has room for one: in
    /// the ready list when it is due already, else in the timers at its due time. A full connection is
    /// scheduled again when a reply makes room, one with a send in the kernel when the send is done;
    /// until then it is in `blocked` at its due time.
    pub(super) fn schedule(&mut self, i: usize, now: Instant) {
        let depth = self.cfg.run.pipeline;
        let c = &mut self.conns[i];
        self.blocked.forget(i);
        if c.pacing.is_none() || c.phase != Phase::Live || c.done_sending {
            return;
        }
        let Some(due) = c.next_due else { return };
        if c.flights.len() >= depth || (due <= now && c.send_pending) {
            // A completion lets it send: the wait must not sleep through that past `due`.
            self.blocked.set(i, due);
            return;
        }
        if due <= now {
            self.make_ready(i);
            return;
        }
        self.timers.set(i, due);
    }

    /// How many completions the turn's wait waits for: 1, or [`SLEEP_THROUGH`] when it may sleep
    /// until `wait` (made no later than the moment a blocked connection's request falls due). With
    /// timestamped receives the open loop sleeps until its next due request; replies queue
    /// meanwhile, as long as no connection has a request due that only a completion lets it send
    /// (memtier's bursts at --pipeline 1: the rest of a burst waits for each reply).
    pub(super) fn completions_to_wait_for(&mut self, now: Instant, wait: &mut Duration) -> u32 {
        if !self.stamped || !self.ready.is_empty() || self.timers.is_empty() {
            return 1;
        }
        match self.blocked.earliest() {
            Some(t) if t <= now => 1,
            Some(t) => {
                *wait = (*wait).min(t.saturating_duration_since(now));
                SLEEP_THROUGH
            }
            None => SLEEP_THROUGH,
        }
    }

    /// Open loop: moves the connections whose timer is due by `now` to the ready list.
    pub(super) fn due_timers(&mut self, now: Instant) {
        let (conns, ready) = (&mut self.conns, &mut self.ready);
        self.timers.pop_due(now, |i| {
            if !conns[i].queued {
                conns[i].queued = true;
                ready.push_back(i);
            }
        });
    }

    /// Open loop: when the loop next wakes for a due request: the earliest timer, moved up to the
    /// next point of the quantum grid, so requests due within one quantum leave with one wake-up.
    pub(super) fn next_timer(&self) -> Option<Instant> {
        let t = self.timers.next()?;
        let q = crate::engine::schedule::QUANTUM.as_nanos() as u64;
        let since = t.saturating_duration_since(self.began).as_nanos() as u64;
        Some(self.began + Duration::from_nanos(since.div_ceil(q) * q))
    }

    /// Sends what connection `i` has ready (`out_len` bytes of its requests, or all of `out`),
    /// sealed first under TLS.
    pub(super) fn start_send(&mut self, i: usize) -> Result<(), ConnError> {
        let c = &mut self.conns[i];
        c.out_at = 0;
        if let Requests::Composed(_) | Requests::Raw | Requests::Replay(..) = c.requests {
            c.out_len = c.out.len();
        }
        if let Some(t) = c.tls.as_mut() {
            let plain = match &c.requests {
                Requests::Fixed(p) => &p.buffer()[..c.out_len],
                Requests::Shared(p) => &p.buffer()[..c.out_len],
                Requests::Composed(_) | Requests::Raw | Requests::Replay(..) => &c.out[..],
                Requests::Lent => unreachable!("no send is in flight"),
            };
            match t.seal(plain, &mut c.sealed) {
                Ok(n) => c.out_len = n,
                Err(e) => return Err(self.tls_lost(e)),
            }
        }
        if let Some(bytes) = self.lend(i) {
            self.send_rest(i, bytes);
        }
        Ok(())
    }

    /// Connection `i`'s send completed with `res`; `bytes` are what it sent from.
    pub(super) fn on_send(&mut self, i: usize, res: i32, bytes: lent::Lent, now: Instant) {
        let c = &mut self.conns[i];
        c.send_pending = false;
        let partial = res >= 0 && c.out_at + (res as usize) < c.out_len;
        if partial && matches!(c.phase, Phase::Opening | Phase::Live) {
            // The rest goes from the same bytes.
            c.out_at += res as usize;
            self.send_rest(i, bytes);
            return;
        }
        // The kernel is done with the bytes.
        self.give_back(i, bytes);
        let c = &mut self.conns[i];
        if c.phase == Phase::Opening {
            if res < 0 {
                let e = self.io_lost(-res);
                self.fail_open(i, e);
                return;
            }
            c.out_len = 0;
            self.open_progress(i);
            return;
        }
        if c.phase != Phase::Live {
            self.maybe_reconnect(i);
            return;
        }
        if res < 0 {
            let e = self.io_lost(-res);
            self.lose(i, &e);
            return;
        }
        c.out_at = c.out_len;
        self.after_progress(i, now);
    }
}
