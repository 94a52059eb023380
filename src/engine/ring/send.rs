//! What each connection sends: closed-loop batches patched in place or composed, the open loop's due
//! requests on the wake-up grid, and the sends themselves (sealed first under TLS).

use super::conn::{Batch, Lent, Phase};
use super::{Driver, SLEEP_THROUGH};
use crate::net::ConnError;
use crate::sys::ring::Op;
use std::time::{Duration, Instant};

impl Driver<'_> {
    /// Sends the rest of connection `i`'s send from `bytes`; the ring holds the bytes until the
    /// send's completion gives them back ([`Driver::on_send`]).
    pub(super) fn send_rest(&mut self, i: usize, bytes: Lent) {
        let c = &mut self.conns[i];
        let Some(fd) = c.io.raw_fd() else {
            // No socket to send on: the bytes go straight back.
            return c.give_back(bytes);
        };
        c.io.started(Op::Send);
        let (at, len) = c.io.send_rest();
        self.ring.send(c.io.key(i, Op::Send), fd, bytes, at, len);
    }

    /// Queues what connection `i` has to send now: a closed-loop batch, or the open loop's due requests.
    pub(super) fn fill(&mut self, i: usize, now: Instant) {
        if self.idle || self.layer.is_some() {
            return;
        }
        let c = &mut self.conns[i];
        if c.io.phase() != Phase::Live || c.io.holds(Op::Send) || c.src.done_sending() {
            return;
        }
        let every = self.cfg.load.reconnect_every;
        if !c.src.is_paced() && c.waiting() == 0 && c.src.interval_done(every) {
            // memtier's --reconnect-interval: this connection has sent its share; a new one sends on.
            c.life.renew();
            self.shut(i);
            return;
        }
        let k = if c.src.is_paced() {
            self.fill_paced(i, now)
        } else {
            self.fill_batch(i, now)
        };
        let Some(k) = k else { return };
        let c = &mut self.conns[i];
        if k == 0 {
            self.finish_if_idle(i);
            self.schedule(i, now);
            return;
        }
        if c.waiting() == k {
            c.flight.progress(now);
        }
        if let Err(e) = self.start_send(i) {
            self.lose(i, &e);
            return;
        }
        self.schedule(i, now);
    }

    /// Closed loop: writes connection `i`'s next batch (it waits for nothing) and returns its size;
    /// `None` when there is nothing more to do.
    fn fill_batch(&mut self, i: usize, now: Instant) -> Option<usize> {
        let (state, depth) = (self.state, self.cfg.load.pipeline);
        let c = &mut self.conns[i];
        if c.waiting() > 0 {
            return None;
        }
        let want = c.src.want(depth, self.cfg.load.reconnect_every);
        let past_deadline = state.deadline.is_some_and(|d| now >= d);
        let n = if past_deadline || want == 0 {
            0
        } else {
            state.claim(want)
        };
        c.src.took(n);
        if n == 0 {
            c.src.stop_sending();
            self.finish_if_idle(i);
            return None;
        }
        match c
            .src
            .write_batch(n, now, &mut c.flight, c.rx.verifier(), &self.turn)
        {
            Batch::Fixed(len) => {
                c.io.begin_send(len);
                state.stats.borrow_mut().bytes_out += len as u64;
            }
            Batch::Written => {}
            Batch::Nothing => return None,
        }
        Some(n)
    }

    /// Open loop: writes connection `i`'s requests that are due by `now`, as many as `-P` has room
    /// for, and returns how many (`None` when its requests are not written one by one).
    fn fill_paced(&mut self, i: usize, now: Instant) -> Option<usize> {
        let (state, depth) = (self.state, self.cfg.load.pipeline);
        let past_deadline = |t: Instant| state.deadline.is_some_and(|d| t >= d);
        let c = &mut self.conns[i];
        if !c.src.begin_paced() {
            return None;
        }
        let mut k = 0;
        while c.flight.queued() < depth {
            let due = c.src.next_due().unwrap_or(now);
            if past_deadline(due) || past_deadline(now) {
                c.src.stop_sending();
                break;
            }
            if due > now {
                break;
            }
            if !c.src.has_more() || state.claim(1) == 0 {
                c.src.stop_sending();
                break;
            }
            if now.duration_since(due) > crate::engine::schedule::LATE {
                let mut st = state.stats.borrow_mut();
                if c.flight.room_at() > due {
                    st.late_full += 1;
                } else {
                    st.late_free += 1;
                }
            }
            c.src.write_paced(due, now, &mut c.flight, &self.turn);
            k += 1;
        }
        Some(k)
    }

    /// Open loop, when the run ends at `end` (the end of `--duration`, or before it when every
    /// connection ended first): the requests that fell due by then and were never sent, which nothing
    /// else counts (the client was behind its schedule: off a CPU, or every connection had `-P`
    /// waiting).
    pub(super) fn due_unsent(&self, end: Instant) -> u64 {
        let due: u64 = self.conns.iter().map(|c| c.src.unsent_before(end)).sum();
        due.min(self.state.remaining.get())
    }

    /// Open loop: puts connection `i` where its next request will be found, if it has room for one: in
    /// the ready list when it is due already, else in the timers at its due time. A full connection is
    /// scheduled again when a reply makes room, one with a send in the kernel when the send is done;
    /// until then it is in `blocked` at its due time.
    pub(super) fn schedule(&mut self, i: usize, now: Instant) {
        let depth = self.cfg.load.pipeline;
        let c = &mut self.conns[i];
        self.blocked.forget(i);
        if !c.src.is_paced() || c.io.phase() != Phase::Live || c.src.done_sending() {
            return;
        }
        let Some(due) = c.src.next_due() else { return };
        if c.flight.queued() >= depth || (due <= now && c.io.holds(Op::Send)) {
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
            if conns[i].life.queue() {
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

    /// Sends what connection `i` has ready (the batch's bytes of its fixed-layout requests, or all it
    /// wrote), sealed first under TLS.
    pub(super) fn start_send(&mut self, i: usize) -> Result<(), ConnError> {
        let c = &mut self.conns[i];
        let len = c.src.written_len().unwrap_or(c.io.send_len());
        c.io.begin_send(len);
        match c.io.seal(c.src.plain(len)) {
            Some(Ok(n)) => c.io.begin_send(n),
            Some(Err(e)) => return Err(self.tls_lost(e)),
            None => {}
        }
        if let Some(bytes) = self.conns[i].lend() {
            self.send_rest(i, bytes);
        }
        Ok(())
    }

    /// Connection `i`'s send completed with `res`; `bytes` are what it sent from.
    pub(super) fn on_send(&mut self, i: usize, res: i32, bytes: Lent, now: Instant) {
        let c = &mut self.conns[i];
        c.io.ended(Op::Send);
        let going = matches!(c.io.phase(), Phase::Opening | Phase::Live);
        if res >= 0 && going && c.io.advance(res as usize) {
            // The rest goes from the same bytes.
            self.send_rest(i, bytes);
            return;
        }
        // The kernel is done with the bytes.
        self.conns[i].give_back(bytes);
        let c = &mut self.conns[i];
        if c.io.phase() == Phase::Opening {
            if res < 0 {
                let e = self.io_lost(-res);
                self.fail_open(i, e);
                return;
            }
            c.io.begin_send(0);
            self.open_progress(i);
            return;
        }
        if c.io.phase() != Phase::Live {
            self.maybe_reconnect(i);
            return;
        }
        if res < 0 {
            let e = self.io_lost(-res);
            self.lose(i, &e);
            return;
        }
        self.after_progress(i, now);
    }
}
