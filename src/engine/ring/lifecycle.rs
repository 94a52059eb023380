//! A connection's life on the ring: opening it (a `CONNECT` with `--connect-timeout` linked, then
//! the TLS handshake and set-up commands of [`crate::engine::opening`]), losing it (what it had in
//! flight fails), draining it until the kernel is done with its buffers, and reconnecting after the
//! backoff; and a layer's queries (`--cluster`'s slot-map re-reads), each on a connection of its own
//! that closes once it is answered. Nothing here blocks the executor.

use super::Driver;
use super::conn::Phase;
use crate::engine::opening::Opening;
use crate::engine::shared::RECONNECT_BACKOFF_MS;
use crate::net::ConnError;
use crate::net::target::Target;
use crate::net::tls_session::TlsError;
use crate::sys::ring::Op;
use crate::sys::socket::{self, new_socket};
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

impl Driver<'_> {
    pub(super) fn tls_lost(&self, e: TlsError) -> ConnError {
        ConnError::Tls {
            addr: self.addr.clone(),
            reason: e.to_string(),
        }
    }

    /// Fails what connection `i` had in flight and shuts it down; it reconnects once its last
    /// completions are in.
    pub(super) fn lose(&mut self, i: usize, e: &ConnError) {
        let c = &mut self.conns[i];
        if c.io.phase() != Phase::Live {
            return;
        }
        if self.idle {
            self.failure.get_or_insert_with(|| e.clone());
            // The other executors stop holding too: the run has failed.
            self.plan
                .gate
                .abort
                .store(true, std::sync::atomic::Ordering::Release);
            self.shut(i);
            return;
        }
        if let Some(l) = self.layer.as_mut() {
            c.flight.clear();
            l.on_lost(i, e, Instant::now());
            self.shut(i);
            return;
        }
        let lost = c.flight.clear() as u64;
        {
            let mut st = self.state.stats.borrow_mut();
            st.failed += lost;
            if matches!(e, ConnError::Timeout { .. }) {
                st.timed_out += lost;
            }
            st.note_conn_error(&e.to_string());
        }
        self.shut(i);
    }

    /// Shuts connection `i` down; it reconnects (or, under a layer or `-I`, ends) once its last
    /// completions are in.
    pub(crate) fn shut(&mut self, i: usize) {
        self.set_phase(i, Phase::Draining);
        self.conns[i].io.shutdown();
        self.cancel_connect(i);
        self.maybe_reconnect(i);
    }

    /// A drained connection (no operation left in the kernel) is replaced by a new one, or ends.
    pub(super) fn maybe_reconnect(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.io.phase() != Phase::Draining || !c.io.drained() {
            return;
        }
        // Nothing of this socket is in the kernel any more: its buffers may go.
        c.life.take_opening();
        c.io.close();
        c.rx.reset();
        // Drop the file table's reference too, so the socket really closes.
        let _ = self.ring.set_file(i, -1);
        let c = &mut self.conns[i];
        if self.layer.is_some() || self.idle {
            // A layer connects again when it has something to send there.
            c.flight.clear();
            let failed = c.life.take_error();
            self.set_phase(i, Phase::Done);
            if let Some(l) = self.layer.as_mut() {
                if let Some(e) = failed {
                    l.on_open_failed(i, &e, Instant::now());
                }
                l.wake(i);
            }
            return;
        }
        let renew = c.life.take_renew();
        let finished = c.life.refused()
            || c.waiting() == 0 && (c.src.done_sending() || self.state.remaining.get() == 0);
        if finished || self.plan.control.stopped() {
            self.set_phase(i, Phase::Done);
            return;
        }
        if let Some(e) = c.life.take_error() {
            // An opening attempt failed: the next waits the next backoff step.
            self.open_failed(i, e);
            return;
        }
        // `-k 0` connects again at once; a lost (or refused) connection waits, longer after each
        // loss in a row.
        let at = if renew {
            Instant::now()
        } else {
            Instant::now() + c.life.loss_backoff()
        };
        c.life.retry_from(at);
        self.set_phase(i, Phase::Reconnecting);
    }

    /// What the server's refusal `message` of connection `i` says to the user, once the connection's
    /// life has taken it: a refused reconnect is tried again (with backoff) for up to
    /// `--failover-timeout`, since a server that stalled counts the connections closed meanwhile until
    /// it wakes; a first connection refused, or refusals past that, end the connection.
    pub(super) fn refusal_text(&mut self, i: usize, message: String, now: Instant) -> String {
        let limit = self.cfg.connect.failover_timeout;
        let served = self.conns[i].life.refused_for_now(now, limit);
        let maxclients = message.starts_with("ERR max number of clients");
        match (served, maxclients) {
            (Some(_), true) => format!(
                "{message} (a reconnect: the server still counted connections ringbench had closed, or other clients took their room; tried again for up to --failover-timeout)"
            ),
            (Some(_), false) => {
                format!("{message} (a reconnect; tried again for up to --failover-timeout)")
            }
            (None, true) if self.conns[i].life.was_served() => format!(
                "{message} (reconnects refused for {:.1} s, --failover-timeout: the server kept counting closed connections, or other clients took their room)",
                limit.as_secs_f64()
            ),
            // `-I` prints the server's words alone, as redis-benchmark does.
            (None, true) if !self.idle => format!(
                "{message} (the server's maxclients is below -c: raise it with CONFIG SET maxclients)"
            ),
            (None, _) => message,
        }
    }

    /// Moves connection `i` to `phase`, keeping the counts the loop reads instead of scanning.
    pub(super) fn set_phase(&mut self, i: usize, phase: Phase) {
        let old = self.conns[i].io.set_phase(phase);
        if old == phase {
            return;
        }
        match old {
            Phase::Done => self.done -= 1,
            Phase::Reconnecting => self.reconnecting -= 1,
            Phase::Opening => self.opening -= 1,
            _ => {}
        }
        match phase {
            Phase::Done => self.done += 1,
            Phase::Reconnecting => self.reconnecting += 1,
            Phase::Opening => self.opening += 1,
            _ => {}
        }
    }

    /// Tries the connections whose reconnect is due; each failure waits the next backoff step, and
    /// after the last the connection gives up. All of an executor's connections back off side by
    /// side, so a server that died ends the run within the backoff's total.
    pub(super) fn retry_connects(&mut self, now: Instant) {
        if self.reconnecting == 0 {
            return;
        }
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.io.phase() != Phase::Reconnecting || c.life.retry_at() > now {
                continue;
            }
            // Stopped, or --duration is over while it waited: nothing more to send there.
            if self.plan.control.stopped() || c.src.done_sending() {
                self.set_phase(i, Phase::Done);
                continue;
            }
            let cfg = self.cfg;
            if let Err(e) = self.start_open(i, &cfg.target, now) {
                self.open_failed(i, e);
            }
        }
    }

    /// Opening attempt `attempt` of connection `i` failed with `e`: the first failure is reported,
    /// and the connection tries again after the next backoff step, or gives up after the last (at once
    /// when the server refused its set-up).
    pub(super) fn open_failed(&mut self, i: usize, e: ConnError) {
        let setup_refused = matches!(e, ConnError::Setup { .. } | ConnError::Refused(_));
        if self.conns[i].life.attempt() == 0 {
            self.state
                .stats
                .borrow_mut()
                .note_conn_error(&e.to_string());
        }
        let c = &mut self.conns[i];
        let attempt = c.life.next_attempt();
        match RECONNECT_BACKOFF_MS.get(attempt) {
            Some(ms) if !setup_refused => {
                c.life
                    .set_retry_at(Instant::now() + Duration::from_millis(*ms));
                self.set_phase(i, Phase::Reconnecting);
            }
            _ => self.set_phase(i, Phase::Done),
        }
    }

    /// Starts opening connection `i` to `target` on the ring: a new socket, its `CONNECT` with
    /// `--connect-timeout` linked to it, then (see [`Self::on_connect`]) the TLS handshake and the
    /// set-up commands. Nothing here waits.
    pub(super) fn start_open(
        &mut self,
        i: usize,
        target: &Target,
        now: Instant,
    ) -> Result<(), ConnError> {
        let cfg = self.cfg;
        let addr = target.display();
        let failed = |e: io::Error| ConnError::Connect {
            addr: addr.clone(),
            reason: crate::net::io_reason(e),
        };
        let (fd, args) = new_socket(target.peer(), cfg.connect.connect_timeout).map_err(failed)?;
        self.ring.set_file(i, fd.as_raw_fd()).map_err(failed)?;
        if self.ring.stamped() && !socket::enable_rx_timestamps(&fd) {
            self.stamped = false;
        }
        let opening = Opening::new(
            addr.clone(),
            cfg.tls.as_ref(),
            &cfg.setup,
            now + cfg.connect.connect_timeout,
        )?;
        let c = &mut self.conns[i];
        let (connect, timeout) = (c.io.key(i, Op::Connect), c.io.key(i, Op::Timeout));
        let raw = fd.as_raw_fd();
        c.io.attach(fd);
        c.life.set_opening(opening);
        c.io.started(Op::Connect);
        // What the last socket had to send went with it (a layer routes its requests again).
        c.src.out().clear();
        self.set_phase(i, Phase::Opening);
        // The ring holds the address until the `CONNECT` completes.
        self.ring.connect(connect, timeout, raw, args);
        Ok(())
    }

    /// The `CONNECT` of connection `i` completed with `res`.
    pub(super) fn on_connect(&mut self, i: usize, res: i32) {
        let c = &mut self.conns[i];
        c.io.ended(Op::Connect);
        if c.io.phase() != Phase::Opening {
            self.maybe_reconnect(i);
            return;
        }
        if res < 0 {
            // The linked timeout cancels a connect that takes longer than --connect-timeout.
            let e = if res == -libc::ECANCELED {
                io::Error::from(io::ErrorKind::TimedOut)
            } else {
                io::Error::from_raw_os_error(-res)
            };
            let e = ConnError::Connect {
                addr: self.opening_addr(i),
                reason: crate::net::io_reason(e),
            };
            self.fail_open(i, e);
            return;
        }
        let step = c.life.opening_mut().map(|o| o.connected());
        if let Some(Err(e)) = step {
            self.fail_open(i, e);
            return;
        }
        self.arm_recv(i);
        self.open_progress(i);
    }

    /// Sends what the opening of connection `i` has to send, and makes the connection live once it
    /// is set up.
    pub(super) fn open_progress(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.io.phase() != Phase::Opening || c.io.holds(Op::Send) {
            return;
        }
        if c.life.opening().is_none() {
            return;
        }
        if let Some(bytes) = self.conns[i].lend() {
            self.conns[i].io.begin_send(bytes.as_ref().len());
            self.send_rest(i, bytes);
            return;
        }
        let c = &mut self.conns[i];
        let Some(o) = c.life.opening_mut() else {
            return;
        };
        if !o.ready() {
            return;
        }
        if let Some(answer) = o.take_answer() {
            // A query's connection: its answer goes to the layer and the connection closes.
            c.life.take_opening();
            if let Some(l) = self.layer.as_mut() {
                l.on_answer(i, answer);
            }
            self.set_phase(i, Phase::Draining);
            self.conns[i].io.shutdown();
            self.maybe_reconnect(i);
            return;
        }
        let o = c.life.take_opening().expect("an opening");
        c.io.set_tls(o.into_tls());
        c.io.begin_send(0);
        c.rx.opened();
        c.src.opened();
        c.flight.progress(Instant::now());
        let done = c.src.done_sending();
        self.set_phase(i, Phase::Live);
        if let Some(l) = self.layer.as_mut() {
            // The layer sends what waited for this connection.
            l.wake(i);
        } else if done {
            // --duration ended while it opened.
            self.finish_if_idle(i);
        } else {
            self.make_ready(i);
        }
    }

    /// Starts opening slot `i` (closed) to `target` on the ring, for a layer: it is neither live nor
    /// closed until the opening ends; then the layer's `wake` (live) or `on_open_failed` says how.
    pub(crate) fn open_async(&mut self, i: usize, target: &Target) -> Result<(), ConnError> {
        self.start_open(i, target, Instant::now())
    }

    /// Opens slot `i` (closed) to `target` on the ring to ask `args` once it is set up, for a layer:
    /// the reply goes to the layer's `on_answer` and the connection closes; a failure (connect, set-up,
    /// `--connect-timeout`) goes to its `on_open_failed`. The executor does not wait for either.
    pub(crate) fn ask_async(
        &mut self,
        i: usize,
        target: &Target,
        args: &[&[u8]],
    ) -> Result<(), ConnError> {
        self.start_open(i, target, Instant::now())?;
        if let Some(o) = self.conns[i].life.opening_mut() {
            o.ask(args);
        }
        Ok(())
    }

    /// True while connection `i` is being opened.
    pub(crate) fn is_opening(&self, i: usize) -> bool {
        self.conns[i].io.phase() == Phase::Opening
    }

    /// The opening of connection `i` failed: its socket is shut, and once nothing of it is left in
    /// the kernel the next attempt waits its backoff step.
    pub(super) fn fail_open(&mut self, i: usize, e: ConnError) {
        let c = &mut self.conns[i];
        c.life.failed(e);
        c.io.shutdown();
        self.set_phase(i, Phase::Draining);
        self.maybe_reconnect(i);
    }

    /// The address connection `i` is being opened to, as messages name it.
    fn opening_addr(&self, i: usize) -> String {
        self.conns[i]
            .life
            .opening()
            .map_or_else(|| self.addr.clone(), |o| o.addr().to_string())
    }

    /// Cancels connection `i`'s `CONNECT` if it is in the kernel: a shutdown does not end a connect to
    /// an address that never answers.
    pub(super) fn cancel_connect(&mut self, i: usize) {
        let c = &self.conns[i];
        if c.io.holds(Op::Connect) {
            let (connect, cancel) = (c.io.key(i, Op::Connect), c.io.key(i, Op::Timeout));
            self.ring.cancel(connect, cancel);
        }
    }

    /// Fails the openings that took longer than `--connect-timeout` (handshake and set-up included).
    pub(super) fn check_openings(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.io.phase() == Phase::Opening && c.life.opening().is_some_and(|o| now >= o.deadline)
            {
                let e = ConnError::Connect {
                    addr: self.opening_addr(i),
                    reason: format!(
                        "no answer to the connection's set-up within {} ms",
                        self.cfg.connect.connect_timeout.as_millis()
                    ),
                };
                self.fail_open(i, e);
            }
        }
    }

    pub(super) fn closed(&self) -> ConnError {
        ConnError::Lost {
            addr: self.addr.clone(),
            reason: "closed by the server".into(),
        }
    }

    pub(super) fn io_lost(&self, errno: i32) -> ConnError {
        ConnError::Lost {
            addr: self.addr.clone(),
            reason: io::Error::from_raw_os_error(errno).to_string(),
        }
    }
}
