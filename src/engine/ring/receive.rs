//! Replies: receive completions, the scan that counts and records every reply of a buffer in place,
//! what a connection does once it has room again, and `--timeout`.

use super::conn::{Answered, Phase};
use super::{Driver, is_refusal};
use crate::engine::clock::Clock;
use crate::engine::shared::{error_text, note_error_in};
use crate::net::ConnError;
use crate::protocol::in_place::InPlaceScanner;
use crate::protocol::resp::Scanned;
use crate::sys::ring::{Op, RecvBuf};
use std::time::{Duration, Instant};

impl Driver<'_> {
    /// Handles one receive completion of connection `i`; `buf` is the buffer it filled, given back to
    /// the kernel when it is dropped.
    pub(super) fn on_recv(
        &mut self,
        i: usize,
        mut res: i32,
        more: bool,
        buf: Option<RecvBuf>,
        clock: Clock,
    ) {
        let now = clock.now;
        if let Some(buf) = buf {
            let mut found = (0, res.max(0) as usize, now);
            if res > 0 && self.ring.stamped() {
                // A `recvmsg` buffer: header and control first; no payload is the peer's close.
                match self.ring.split_stamped(buf.data()) {
                    Some((at, len, stamp)) => {
                        self.stamped &= stamp.is_some() || len == 0;
                        found = (at, len, clock.arrival(stamp));
                        if len == 0 {
                            res = 0;
                        }
                    }
                    None => res = -libc::EPROTO,
                }
            }
            if res > 0 && self.conns[i].io.phase() == Phase::Live {
                let (at, len, arrived) = found;
                self.scan(i, &buf.data()[at..at + len], now, arrived);
            } else if res > 0 && self.conns[i].io.phase() == Phase::Opening {
                let (at, len, _) = found;
                let step = self.conns[i]
                    .life
                    .opening_mut()
                    .map(|o| o.received(&buf.data()[at..at + len]));
                drop(buf);
                if let Some(Err(e)) = step {
                    self.fail_open(i, e);
                } else {
                    self.open_progress(i);
                }
                let c = &mut self.conns[i];
                if !more {
                    c.io.ended(Op::Recv);
                    if c.io.phase() == Phase::Opening {
                        self.arm_recv(i);
                    } else {
                        self.maybe_reconnect(i);
                    }
                }
                return;
            }
        }
        let c = &mut self.conns[i];
        if !more {
            c.io.ended(Op::Recv);
        }
        if c.io.phase() == Phase::Opening {
            let e = match res {
                0 => c.life.opening().map(|o| o.closed()),
                r if r == -libc::ENOBUFS => None,
                r if r < 0 => Some(self.io_lost(-r)),
                _ => None,
            };
            match e {
                Some(e) => self.fail_open(i, e),
                None if !more => {
                    self.arm_recv(i);
                }
                None => {}
            }
            return;
        }
        if c.io.phase() != Phase::Live {
            if !more {
                self.maybe_reconnect(i);
            }
            return;
        }
        match res {
            0 => self.lose(i, &self.closed()),
            // The executor's buffers ran out: they were given back, so receive again (the ring lets
            // the kernel see them before it submits).
            r if r == -libc::ENOBUFS && !more => {
                self.arm_recv(i);
            }
            r if r == -libc::ENOBUFS => {}
            r if r < 0 => {
                let e = self.io_lost(-r);
                self.lose(i, &e)
            }
            _ if !more => self.arm_recv(i),
            _ => {}
        }
    }

    /// Scans `data` (a received buffer's payload) for connection `i`'s replies, which reached the
    /// socket at `arrived` (the kernel's timestamp in the open loop, else `now`).
    // Long on purpose: the per-buffer reply scan; its callback's tallies and borrows span replies.
    pub(super) fn scan(&mut self, i: usize, data: &[u8], now: Instant, arrived: Instant) {
        // Under TLS the plaintext is read instead, for as long as the scan needs it.
        let mut data: &[u8] = data;
        let (state, plan, mixed, idle) = (self.state, self.plan, self.mixed, self.idle);
        let gets = &self.gets;
        let gets_any = gets.iter().any(|&g| g);
        let mut layer = self.layer.as_deref_mut();
        let layer_present = layer.is_some();
        let c = &mut self.conns[i];
        let mut closed = false;
        match c.io.open(data, &mut self.plain) {
            Some(Ok(eof)) => {
                closed = eof;
                data = &self.plain;
            }
            Some(Err(reason)) => {
                let e = self.tls_lost(reason);
                self.lose(i, &e);
                return;
            }
            None => {}
        }
        let full = c.flight.queued() >= self.cfg.load.pipeline;
        // memtier's SCAN iteration (--pipeline 1): the reply's head holds the next cursor.
        let mut scan = c.src.scan_cursor();
        if let Some(s) = scan.as_mut() {
            s.receive(data);
        }
        let batch_sent = c.flight.batch_sent();
        let (reader, flight) = (&mut c.rx, &mut c.flight);
        // The shard's figures are borrowed once per buffer (not under a layer, which records its
        // own), and replies with the same latency are recorded together: a batch is one record.
        let mut st = layer.is_none().then(|| state.figures(now));
        let (mut run, mut service_run) = (Run::default(), Run::default());
        let (mut counted, mut lat_sum) = (0u64, 0u64);
        let mut batch = 0u64;
        let mut extra = false;
        let mut refused: Option<String> = None;
        let mut whole = 0u64;
        let fresh = reader.is_fresh();
        // Under a layer: replies that are not errors, handed over together.
        let mut ok_run = 0u64;
        let (mut hits, mut misses, mut bytes_in) = (0u64, 0u64, 0u64);
        let scanned = reader.feed(data, |ev, raw, len| {
            // A push message answers no request: it neither counts nor moves `--timeout`.
            let Scanned::Reply { error } = ev else {
                return;
            };
            if refused.is_some() {
                return;
            }
            whole += 1;
            if idle {
                // `-I` sends nothing: an error is the server refusing the connection.
                if error {
                    refused = Some(error_text(raw));
                }
                return;
            }
            // A server that refuses a connection (maxclients, protected mode) says so before it
            // reads anything: that line answers no request.
            if error && fresh && batch == 0 && is_refusal(raw) {
                refused = Some(error_text(raw));
                return;
            }
            if let Some(l) = layer.as_mut() {
                if !flight.answer_layered() {
                    extra = true;
                    return;
                }
                if error {
                    if ok_run > 0 {
                        l.on_replies(i, std::mem::take(&mut ok_run), now);
                    }
                    l.on_error_reply(i, raw, now);
                } else if gets_any && InPlaceScanner::is_nil(raw, len) {
                    if ok_run > 0 {
                        l.on_replies(i, std::mem::take(&mut ok_run), now);
                    }
                    l.on_nil_reply(i, now);
                } else {
                    ok_run += 1;
                }
                return;
            }
            let Some(st) = st.as_deref_mut() else {
                return;
            };
            bytes_in += len;
            let f = match flight.answer() {
                Answered::Batch => {
                    batch += 1;
                    if error {
                        note_error_in(st, plan, raw);
                    } else if gets[0] {
                        let nil = InPlaceScanner::is_nil(raw, len);
                        hits += u64::from(!nil);
                        misses += u64::from(nil);
                    }
                    return;
                }
                Answered::One(f) => f,
                Answered::Extra => {
                    extra = true;
                    return;
                }
            };
            if let Some(s) = scan.as_mut() {
                s.replied(error, f.kind == 1);
            }
            let (mut hit, mut miss) = (0, 0);
            if error {
                note_error_in(st, plan, raw);
            } else if gets.get(f.kind).copied().unwrap_or(false) {
                let nil = InPlaceScanner::is_nil(raw, len);
                (hit, miss) = (u64::from(!nil), u64::from(nil));
                hits += hit;
                misses += miss;
            }
            st.bytes_out += u64::from(f.len);
            let lat = arrived.saturating_duration_since(f.intended).as_nanos() as u64;
            run.push(&mut st.hist, lat);
            counted += 1;
            lat_sum += lat;
            if let Some(svc) = st.service.as_mut() {
                let service = arrived.saturating_duration_since(f.sent).as_nanos() as u64;
                service_run.push(svc, service);
            }
            if mixed && let Some(part) = st.parts.get_mut(f.kind) {
                part.hist.saturating_record(lat.max(1));
                part.completed += 1;
                part.errors += u64::from(error);
                part.hits += hit;
                part.misses += miss;
                part.bytes_out += u64::from(f.len);
                part.bytes_in += len;
            }
        });
        if ok_run > 0
            && let Some(l) = layer.as_mut()
        {
            l.on_replies(i, ok_run, now);
        }
        if let Some(st) = st.as_deref_mut() {
            run.flush(&mut st.hist);
            if let Some(svc) = st.service.as_mut() {
                service_run.flush(svc);
            }
            if batch > 0 {
                let lat = now.saturating_duration_since(batch_sent).as_nanos() as u64;
                st.hist.saturating_record_n(lat.max(1), batch);
                counted += batch;
                lat_sum += lat * batch;
            }
            if counted > 0 {
                st.completed += counted;
                st.end = Some(now);
            }
            st.hits += hits;
            st.misses += misses;
            st.bytes_in += bytes_in;
        }
        drop(st);
        state
            .latency_sum_ns
            .set(state.latency_sum_ns.get() + lat_sum);
        if whole > 0 {
            // `--timeout` runs from the send of the oldest request still unanswered (a fixed batch's
            // all left at its start), not from the last byte: a reply that trickles in still times out.
            c.flight.replied(now, layer_present);
            c.rx.answered();
        }
        if full && c.flight.queued() < self.cfg.load.pipeline {
            c.flight.made_room(arrived);
        }
        if whole > 0 && refused.is_none() {
            c.life.served();
        }
        if let Some(message) = refused {
            let e = ConnError::Refused(self.refusal_text(i, message, now));
            self.lose(i, &e);
            return;
        }
        if let Err(e) = scanned {
            let e = ConnError::Protocol(format!("{}: {e}", self.addr));
            self.lose(i, &e);
            return;
        }
        if extra {
            let e = ConnError::Protocol(format!(
                "{}: the server sent more replies than requests",
                self.addr
            ));
            self.lose(i, &e);
            return;
        }
        if closed {
            self.lose(i, &self.closed());
            return;
        }
        self.after_progress(i, now);
    }

    /// After replies or a finished send: a connection with nothing in flight sends again (closed
    /// loop), or with `-k 0` gets a new connection first; one whose share is done is closed.
    pub(super) fn after_progress(&mut self, i: usize, now: Instant) {
        if let Some(l) = self.layer.as_mut() {
            l.wake(i);
            return;
        }
        if self.idle {
            return;
        }
        let c = &mut self.conns[i];
        if c.io.phase() != Phase::Live || c.io.holds(Op::Send) {
            return;
        }
        if c.src.is_paced() && !c.src.done_sending() {
            self.schedule(i, now);
            return;
        }
        if c.waiting() > 0 {
            return;
        }
        if c.src.done_sending() {
            self.finish_if_idle(i);
            return;
        }
        let interval_done = c.src.interval_done(self.cfg.load.reconnect_every);
        if (!self.cfg.load.keepalive || interval_done) && !c.src.is_paced() {
            c.life.renew();
            self.shut(i);
            return;
        }
        self.make_ready(i);
    }

    /// Closes a connection that will send no more and waits for nothing.
    pub(super) fn finish_if_idle(&mut self, i: usize) {
        let c = &self.conns[i];
        if c.io.phase() == Phase::Live
            && c.src.done_sending()
            && c.waiting() == 0
            && !c.io.holds(Op::Send)
        {
            self.shut(i);
        }
    }

    /// Fails connections that waited longer than `--timeout` for a reply.
    pub(super) fn check_timeouts(&mut self, now: Instant, timeout: Duration) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.io.phase() == Phase::Live
                && c.waiting() > 0
                && now.saturating_duration_since(c.flight.last_progress()) > timeout
            {
                let e = ConnError::Timeout {
                    addr: self.addr.clone(),
                    ms: timeout.as_millis(),
                };
                self.lose(i, &e);
            }
        }
    }
}

/// Replies of one value in a row (a latency), recorded into a histogram with one call when the value
/// changes or the buffer ends.
#[derive(Default)]
struct Run {
    value: u64,
    n: u64,
}

impl Run {
    fn push(&mut self, hist: &mut hdrhistogram::Histogram<u64>, value: u64) {
        if self.n > 0 && self.value != value {
            self.flush(hist);
        }
        self.value = value;
        self.n += 1;
    }

    fn flush(&mut self, hist: &mut hdrhistogram::Histogram<u64>) {
        if self.n > 0 {
            hist.saturating_record_n(self.value.max(1), self.n);
        }
        self.n = 0;
    }
}
