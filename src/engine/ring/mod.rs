//! The data path of one executor on its own io_uring: every connection's sends and receives are
//! queued as SQEs and leave with one `io_uring_enter` per turn of the loop, which also waits for
//! completions. Receives are multishot into a provided buffer ring shared by the executor's
//! connections; the reply scanner reads each buffer in place and gives it back at once.
//!
//! One per-connection state machine serves the closed loop (fixed-layout requests patched in place,
//! or composed requests), the open loop (`--rps`, paced by the wait's deadline, not by a timer per
//! sleep), `-k 0`, `--timeout` and reconnects, over TCP and unix sockets.

mod conn;
mod layer_api;
mod lifecycle;
mod memory;
mod receive;
mod send;
mod setup;

pub(crate) use memory::{request_memory, total_memory};

use crate::config::EngineSettings;
use crate::engine::clock::Clock;
use crate::engine::schedule::DueQueue;
use crate::engine::shared::{ShardPlan, ShardState};
use crate::net::ConnError;
use crate::protocol::resp::Value;
use crate::stats::ShardStats;
use crate::stats::live::{SNAPSHOT_EVERY, thread_cpu_total};
use crate::sys::ring::{Back, Completion, Op, Ring, Setup};
pub(crate) use crate::sys::ring::{RingError, RingMode, probe};
use crate::sys::socket;
use crate::workload::PipelineBuffer;
use crate::workload::compose::Composer;
use crate::workload::verify::Values;
pub(crate) use conn::Socket;
use conn::{Conn, Lent, Phase};
use setup::ConnSetup;
use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Provided receive buffers per executor, and the size of each. They are shared by all of the
/// executor's connections, so memory does not grow with `-c`.
const RECV_BUFFERS: u16 = 512;
const RECV_BUFFER_SIZE: usize = 4096;
/// The longest the loop waits in the kernel before it looks at the stop flag and the clocks again.
const MAX_WAIT: Duration = Duration::from_millis(10);
/// How long replies still due may take once `--duration` is over, without `--timeout` (with it, the
/// timeout is their time): then they are counted in flight and the run ends.
const AFTER_DURATION: Duration = Duration::from_secs(1);

/// What the open loop's wait asks for when it only needs to wake at its next due request: more
/// completions than can arrive, so the kernel (6.7 and later, with `DEFER_TASKRUN`) lets replies
/// queue instead of waking the executor for each. Their arrival times come from the kernel's
/// receive timestamps (`SO_TIMESTAMPNS`).
const SLEEP_THROUGH: u32 = 1 << 16;

/// What a driver layered on the ring does instead of the single-node closed and open loops: it decides
/// what each connection sends and what each reply means (`--cluster` routes requests to node
/// connections and follows redirects). The ring keeps the connections, their sends, receives, TLS,
/// scanning and `--timeout`; a connection that is lost is not reconnected by the ring but left to the
/// layer ([`Driver::open`]).
pub(crate) trait Layer {
    /// `n` whole replies that are not errors arrived together on connection `conn` at `now` (one
    /// call per run of them in a received buffer).
    fn on_replies(&mut self, conn: usize, n: u64, now: Instant);
    /// One error reply (`raw`, its line) arrived on connection `conn` at `now`, after the runs of
    /// replies before it.
    fn on_error_reply(&mut self, conn: usize, raw: &[u8], now: Instant);
    /// One nil reply arrived on connection `conn` at `now`, after the runs before it: a miss when it
    /// answers a GET, otherwise a reply like the others.
    fn on_nil_reply(&mut self, conn: usize, now: Instant);
    /// Connection `conn` failed with `e`; the replies it still owed will not come.
    fn on_lost(&mut self, conn: usize, e: &ConnError, now: Instant);
    /// Opening connection `conn` ([`Driver::open_async`]) failed with `e`; nothing was sent on it.
    fn on_open_failed(&mut self, conn: usize, e: &ConnError, now: Instant);
    /// The query asked on connection `conn` ([`Driver::ask_async`]) was answered with `answer`; the
    /// connection closes.
    fn on_answer(&mut self, conn: usize, answer: Value);
    /// Connection `conn` finished a send, or closed: what waited for it may go on.
    fn wake(&mut self, conn: usize);
    /// Queues whatever is due now, on any connection (called once per turn of the loop).
    fn pump(&mut self, d: &mut Driver<'_>, now: Instant);
    /// The next moment the layer has something to do without a completion (a backoff's end, a request due).
    fn next_wake(&self) -> Option<Instant>;
    /// True once the layer will send nothing more.
    fn finished(&self) -> bool;
    /// Adds the layer's figures to the shard's when the run ends.
    fn finish(&mut self, stats: &mut ShardStats);
    /// Adds the latencies the layer keeps outside the shard's histogram until [`Self::finish`] to
    /// `into`, for the live metrics (a few times a second, never per reply).
    fn live_latencies(&self, into: &mut hdrhistogram::Histogram<u64>);
}

/// One executor's ring and its connections, driven until the shard's share is done or the run stops.
pub(crate) struct Driver<'a> {
    /// The executor's ring: what each operation's SQE points at is in its in-flight table until the
    /// completion gives it back. Connections added later ([`Driver::add_connection`]) beyond its
    /// registered file table use plain descriptors.
    ring: Ring<Lent>,
    conns: Vec<Conn>,
    ready: VecDeque<usize>,
    plan: &'a ShardPlan,
    state: &'a ShardState,
    cfg: &'a EngineSettings,
    addr: String,
    turn: Rc<Cell<u64>>,
    mixed: bool,
    /// Per command of the test (its mix's, else the test's own): whether it is a GET, whose nil
    /// replies are misses and other replies hits.
    gets: Vec<bool>,
    /// `--data-verify`'s read pass: the values its connections' comparators expect (`None` otherwise).
    values: Option<Rc<Values>>,
    /// Plaintext of the receive buffer being scanned, under TLS.
    plain: Vec<u8>,
    /// Connections finished, and waiting to reconnect.
    done: usize,
    reconnecting: usize,
    opening: usize,
    /// `--cluster`: what the connections send and what replies mean.
    layer: Option<Box<dyn Layer + 'a>>,
    /// `-I`: the connections send nothing; the first one the server refuses or closes ends the run.
    idle: bool,
    /// `-I`: why the run ended.
    failure: Option<ConnError>,
    /// Open loop: connections that wait for their next request's due time, earliest first.
    timers: DueQueue,
    /// Open loop: connections whose next request is due at the moment given but that cannot send it
    /// before a reply makes room (or their send in the kernel completes). Once the earliest of those
    /// moments has come, the wait wakes for completions again instead of sleeping through them.
    blocked: DueQueue,
    /// Open loop: wake-ups fall on a grid of [`crate::engine::schedule::QUANTUM`] from `began`, so one
    /// wake-up sends every request that fell due within the quantum before it.
    began: Instant,
    /// `--duration` is over and every connection was told so (done once, not every turn).
    deadline_passed: bool,
    /// False once a timestamped receive came without its timestamp: the wait wakes for replies again.
    stamped: bool,
}

impl<'a> Driver<'a> {
    /// Takes over `socks` (connected, set up; `None` for a slot a layer connects later) for this shard.
    pub(crate) fn new(
        plan: &'a ShardPlan,
        state: &'a ShardState,
        socks: Vec<Option<Socket>>,
        composer: Option<Arc<Composer>>,
        began: Instant,
        layer: Option<Box<dyn Layer + 'a>>,
    ) -> io::Result<Driver<'a>> {
        let cfg = &*plan.cfg;
        let entries = (socks.len() * 2 + 16).next_power_of_two().clamp(64, 4096) as u32;
        // Sockets are registered files (slot i = connection i), so no operation looks its file up.
        let fds: Vec<i32> = socks
            .iter()
            .map(|s| s.as_ref().map_or(-1, |(fd, _)| fd.as_raw_fd()))
            .collect();
        // The single-node open loop reads replies' arrival times from the kernel; a socket that
        // refuses the option turns it off for the executor.
        let stamps = plan.rps.is_some()
            && layer.is_none()
            && !cfg.load.idle
            && socks
                .iter()
                .flatten()
                .all(|(fd, _)| socket::enable_rx_timestamps(fd));
        let ring = Ring::new(Setup {
            entries,
            buffers: Some((RECV_BUFFERS, RECV_BUFFER_SIZE)),
            stamps,
            files: &fds,
        })?;
        let depth = cfg.load.pipeline;
        // The executor's values, shared by its connections.
        let values = cfg
            .load
            .verify
            .filter(|_| plan.test.command == "GET")
            .map(|spec| Rc::new(Values::new(&spec)));
        let mixed = composer.as_ref().is_some_and(|c| c.counts_each_command())
            || plan.test.replay.is_some();
        let gets = setup::gets(plan, &composer);
        let shared = (composer.is_none()
            && plan.test.replay.is_none()
            && !plan.test.template.has_placeholders())
        .then(|| Rc::new(PipelineBuffer::new(&plan.test.template, depth)));
        let setup = ConnSetup {
            plan,
            composer: &composer,
            shared: &shared,
            values: &values,
            cursor: plan.cursors(),
            layered: layer.is_some(),
            began,
        };
        let conns = socks
            .into_iter()
            .enumerate()
            .map(|(i, sock)| setup.conn(i, sock))
            .collect::<Vec<_>>();
        let absent = conns.iter().filter(|c| c.io.phase() == Phase::Done).count();
        let conns_len = conns.len();
        let idle = cfg.load.idle;
        Ok(Driver {
            ring,
            ready: if layer.is_some() || idle {
                VecDeque::new()
            } else {
                (0..conns.len()).collect()
            },
            conns,
            plan,
            state,
            cfg,
            addr: cfg.target.display(),
            turn: Rc::new(Cell::new(plan.first_request)),
            values,
            mixed,
            gets,
            plain: Vec::new(),
            done: absent,
            reconnecting: 0,
            opening: 0,
            layer,
            idle,
            failure: None,
            timers: DueQueue::new(conns_len),
            blocked: DueQueue::new(conns_len),
            began,
            deadline_passed: false,
            stamped: stamps,
        })
    }

    /// How this executor's ring was set up.
    pub(crate) fn mode(&self) -> RingMode {
        self.ring.mode()
    }

    fn arm_recv(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(fd) = c.io.raw_fd() else { return };
        c.io.started(Op::Recv);
        self.ring.recv_multi(c.io.key(i, Op::Recv), fd);
    }

    fn make_ready(&mut self, i: usize) {
        if self.conns[i].life.queue() {
            self.ready.push_back(i);
        }
    }

    /// Runs until every connection is done or the run is stopped.
    // Long on purpose: the executor's event loop; its waits and clocks carry from turn to turn.
    pub(crate) fn run(&mut self) {
        for i in 0..self.conns.len() {
            self.arm_recv(i);
        }
        let timeout = self.cfg.connect.timeout;
        let open_loop = self.plan.rps.is_some();
        let mut next_timeout_check = Instant::now();
        let mut cq = Vec::with_capacity(256);
        let layered = self.layer.is_some();
        // Live metrics: the shard's figures are copied a few times a second.
        let mut snapshot_at = self.cfg.record.live.then(Instant::now);
        // The thread's CPU and the time at the last copy (read only with live metrics on).
        let mut cpu_then = snapshot_at.map_or((0.0, Instant::now()), |t| (thread_cpu_total(), t));
        while !self.plan.control.stopped() {
            let now = Instant::now();
            if self.idle
                && (self.failure.is_some()
                    || self
                        .plan
                        .gate
                        .abort
                        .load(std::sync::atomic::Ordering::Acquire))
            {
                break;
            }
            if self.duration_over(now) {
                break;
            }
            self.retry_connects(now);
            if self.opening > 0 {
                self.check_openings(now);
            }
            // Queue every due send.
            if let Some(mut l) = self.layer.take() {
                l.pump(self, now);
                self.layer = Some(l);
            } else {
                if open_loop {
                    self.due_timers(now);
                }
                while let Some(i) = self.ready.pop_front() {
                    self.conns[i].life.unqueue();
                    self.fill(i, now);
                }
            }
            if self.done == self.conns.len() && self.layer.as_ref().is_none_or(|l| l.finished()) {
                break;
            }
            // Wait for at least one completion, or until the next request is due.
            let mut wait = MAX_WAIT;
            if let Some(t) = self.next_timer() {
                wait = wait.min(t.saturating_duration_since(now));
            }
            if let Some(t) = timeout {
                wait = wait.min(t);
            }
            if let Some(w) = self.layer.as_ref().and_then(|l| l.next_wake()) {
                wait = wait.min(w.saturating_duration_since(now));
            }
            if self.reconnecting + self.opening > 0
                && let Some(r) = self
                    .conns
                    .iter()
                    .filter_map(|c| match c.io.phase() {
                        Phase::Reconnecting => Some(c.life.retry_at()),
                        Phase::Opening => c.life.opening().map(|o| o.deadline),
                        _ => None,
                    })
                    .min()
            {
                wait = wait.min(r.saturating_duration_since(now));
            }
            // Wake at the --duration deadline (after it, replies still due wake the loop; it does
            // not poll for them).
            if let Some(d) = self.state.deadline
                && now < d
            {
                wait = wait.min(
                    d.saturating_duration_since(now)
                        .max(Duration::from_micros(50)),
                );
            }
            let want = self.completions_to_wait_for(now, &mut wait);
            if let Err(e) = self.ring.submit_and_wait(wait, want) {
                let err = ConnError::Lost {
                    addr: self.addr.clone(),
                    reason: format!("io_uring_enter failed: {e}"),
                };
                for i in 0..self.conns.len() {
                    self.lose(i, &err);
                }
                break;
            }
            let clock = Clock::read(self.ring.stamped());
            let now = clock.now;
            self.reap(&mut cq, clock);
            if self.idle {
                // `-I`: the live count is the connections still open.
                self.plan
                    .live
                    .publish((self.conns.len() - self.done) as u64, 0);
            } else {
                self.plan.live.publish(
                    self.state.stats.borrow().completed,
                    self.state.latency_sum_ns.get(),
                );
                if let Some(at) = snapshot_at
                    && now >= at
                {
                    let cpu = thread_cpu_total();
                    let wall = now.saturating_duration_since(cpu_then.1).as_secs_f64();
                    let busy = if wall > 0.0 {
                        (cpu - cpu_then.0) / wall
                    } else {
                        0.0
                    };
                    cpu_then = (cpu, now);
                    let layer = self.layer.as_ref();
                    self.plan.live.put(&self.state.stats.borrow(), busy, |h| {
                        if let Some(l) = layer {
                            l.live_latencies(h);
                        }
                    });
                    snapshot_at = Some(now + SNAPSHOT_EVERY);
                }
            }
            if let Some(t) = timeout
                && now >= next_timeout_check
            {
                self.check_timeouts(now, t);
                // A tenth of the timeout, between 1 and 10 ms: a late reply is caught within that,
                // and the sweep over the connections stays rare with many of them.
                next_timeout_check =
                    now + (t / 10).clamp(Duration::from_millis(1), Duration::from_millis(10));
            }
        }
        // Open loop under --duration: what fell due and was never sent is part of the schedule too.
        if !layered
            && !self.idle
            && !self.plan.control.stopped()
            && let Some(d) = self.state.deadline
        {
            let behind = self.due_unsent(d.min(Instant::now()));
            self.state.stats.borrow_mut().late_unsent += behind;
        }
        // Requests still in flight when the loop ends failed, unless the run was stopped on purpose
        // (a signal, or the end of --duration).
        if self.conns.iter().any(|c| c.rx.verified().is_some()) {
            let mut st = self.state.stats.borrow_mut();
            let counts = st.verify.get_or_insert_with(Default::default);
            for v in self.conns.iter().filter_map(|c| c.rx.verified()) {
                counts.merge(v);
            }
        }
        let left: u64 = self.conns.iter().map(|c| c.waiting() as u64).sum();
        if left > 0 && !layered {
            let mut st = self.state.stats.borrow_mut();
            if self.plan.control.stopped() || self.state.deadline.is_some() {
                st.in_flight += left;
            } else {
                st.failed += left;
            }
        }
        self.drain(&mut cq);
        if let Some(l) = self.layer.as_mut() {
            l.finish(&mut self.state.stats.borrow_mut());
        }
    }

    /// `--duration`: at its end every connection stops sending (under `--cluster` the layer stops its
    /// clients), and requests already sent may still answer; true once they have had their time
    /// (`--timeout`, else [`AFTER_DURATION`]): the loop then ends with those still unanswered in
    /// flight, so a server that stopped reading cannot hold the run.
    fn duration_over(&mut self, now: Instant) -> bool {
        let Some(end) = self.state.deadline.filter(|&d| now >= d) else {
            return false;
        };
        if !self.deadline_passed && self.layer.is_none() {
            self.deadline_passed = true;
            for i in 0..self.conns.len() {
                self.conns[i].src.stop_sending();
                self.finish_if_idle(i);
                if self.conns[i].io.phase() == Phase::Opening {
                    // Nothing is left to send on it: its opening is abandoned.
                    self.shut(i);
                }
            }
        }
        now >= end + self.cfg.connect.timeout.unwrap_or(AFTER_DURATION) + MAX_WAIT
    }

    /// `-I`: why the run ended early (the server refused or closed a connection), if it did.
    pub(crate) fn take_failure(&mut self) -> Option<ConnError> {
        self.failure.take()
    }

    /// Handles every completion posted. Receive buffers go back to the kernel as their guards drop.
    fn reap(&mut self, cq: &mut Vec<Completion<Lent>>, clock: Clock) {
        let now = clock.now;
        self.ring.reap(cq);
        for done in cq.drain(..) {
            let i = done.key.slot as usize;
            let stale = !self.conns[i].io.is_current(done.key.generation);
            match (done.key.op, stale, done.back) {
                (Op::Recv, false, back) => {
                    let buf = match back {
                        Back::Buffer(b) => Some(b),
                        _ => None,
                    };
                    self.on_recv(i, done.res, done.more, buf, clock)
                }
                (Op::Send, false, Back::Sent(bytes)) => self.on_send(i, done.res, bytes, now),
                (Op::Connect, _, _) => self.on_connect(i, done.res),
                _ => {}
            }
        }
    }

    /// Shuts every connection down and waits (briefly) for the kernel to finish with their buffers.
    fn drain(&mut self, cq: &mut Vec<Completion<Lent>>) {
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            c.src.stop_sending();
            c.io.shutdown();
            self.cancel_connect(i);
            if matches!(self.conns[i].io.phase(), Phase::Live | Phase::Opening) {
                self.set_phase(i, Phase::Draining);
            }
        }
        let until = Instant::now() + Duration::from_millis(500);
        while self.conns.iter().any(|c| !c.io.drained()) && Instant::now() < until {
            if self
                .ring
                .submit_and_wait(Duration::from_millis(10), 1)
                .is_err()
            {
                break;
            }
            self.reap(cq, Clock::read(self.ring.stamped()));
        }
    }
}

/// True for the error a server sends instead of serving a connection it will close.
fn is_refusal(raw: &[u8]) -> bool {
    raw.starts_with(b"-ERR max number of clients reached") || raw.starts_with(b"-DENIED ")
}
