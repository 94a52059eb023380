//! The `--cluster` layer of the ring driver: on one executor, logical clients that each hold a
//! connection per master (ring connection `client * stride + node`) and send every request to the
//! owner of its key's slot, following MOVED and ASK and retrying TRYAGAIN, CLUSTERDOWN and lost
//! connections, so each request ends exactly once (completed or failed). The ring does the I/O
//! (sends, receives, TLS, scanning, `--timeout`); this file decides where each request goes and what
//! each reply means.
//!
//! A lost master: its slots' requests are retried with backoff and the slot map is re-read (over the
//! blocking control client) until a promoted replica (or another master) answers for them. When none
//! does within `--failover-timeout`, the shard gives up with a message naming the node and the
//! cluster's state; the run never hangs.

use crate::config::Config;
use crate::engine::ring::{self, Driver, Layer, Socket};
use crate::engine::schedule::{LATE, Pacing};
use crate::engine::shared::{ShardPlan, ShardState, note_error};
use crate::net::ConnError;
use crate::net::control::ControlClient;
use crate::net::discovery::{self, DiscoveryError};
use crate::net::target::Target;
use crate::protocol::cluster::{self, Redirect, SLOTS, SlotMap, UNASSIGNED};
use crate::protocol::resp::Value;
use crate::stats::cluster::{ClusterStats, Failover};
use crate::stats::{ShardStats, new_histogram};
use crate::workload::PipelineBuffer;
use crate::workload::compose::Composer;
use crate::workload::keys::{KeyGen, bounded};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cell::Cell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// MOVED / ASK redirects of one request before it counts as failed (a redirect loop).
const MAX_ATTEMPTS: u16 = 64;
/// First wait after TRYAGAIN, CLUSTERDOWN or a lost connection; doubles up to [`BACKOFF_MAX`].
const BACKOFF_START: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_millis(250);
/// At most one full topology refresh per executor in this window: a burst of MOVED replies (a slot
/// range changing owner) costs one CLUSTER SLOTS, not one per reply.
const REFRESH_GAP: Duration = Duration::from_millis(100);
/// How often the layer looks for a node that holds replies back longer than `--failover-timeout`.
const WATCH_EVERY: Duration = Duration::from_millis(10);
/// The ASKING command, sent before a request that follows an ASK redirect.
const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";
/// Marks an ASKING reply in a connection's queue of expected replies (its reply is not counted).
const ASKING_MARK: u32 = u32::MAX;

/// The cluster as read at set-up, and how many connection slots each logical client has (node
/// indices at or beyond it, nodes that appear during the run past that many, are not routed to).
pub(crate) struct Topology {
    map: SlotMap,
    stride: usize,
}

/// A master whose connection was lost: when, which slots it owned then, and the first reply for one
/// of those slots from another node (its promoted replica, usually).
struct LostNode {
    node: u16,
    lost_s: f64,
    slots: Vec<bool>,
    answered: Option<(u16, f64)>,
}

/// One master's tally on this executor, indexed like the slot map's nodes.
struct NodeTally {
    completed: u64,
    hist: Histogram<u64>,
}

/// Per-request routing state within one batch.
#[derive(Debug, Clone, Copy, Default)]
struct Req {
    slot: u16,
    /// A node named by the last MOVED/ASK, used instead of the slot map; [`UNASSIGNED`] for none.
    target: u16,
    asking: bool,
    /// MOVED / ASK redirects followed.
    attempts: u16,
    /// Waits (lost connection, CLUSTERDOWN, TRYAGAIN, no owner) so far: the backoff grows with them.
    waits: u16,
    /// When the request first had to wait for its slot; it fails after `--failover-timeout`.
    stalled: Option<Instant>,
    /// Whether it was written to a server at least once (else a give-up counts it as not sent).
    sent: bool,
    /// Where its bytes lie in the client's request buffer.
    at: u32,
    len: u32,
    /// The mix's command it is (0 without a mix).
    kind: u16,
    /// When it was due (open loop) or its round was sent (closed loop): latency runs from here, across
    /// redirects and resends.
    intended: Option<Instant>,
    /// Its first write to a server: service time (open loop) runs from here.
    first_sent: Option<Instant>,
}

/// One logical client. Closed loop: rounds of `-P` requests, a round after the previous one has
/// ended. Open loop: each request is sent when due while up to `-P` are in flight; one that falls
/// due with `-P` in flight is sent as soon as one of them ends, its latency still running from its
/// intended time.
struct Client {
    reqs: Vec<Req>,
    /// Requests to route and send now, and those redirected or lost since (handled on the next pump).
    todo: Vec<u32>,
    retry: Vec<u32>,
    /// Open loop: the entries of `reqs` not in flight.
    free: Vec<u32>,
    /// Fixed-layout requests, patched in place; composed requests each in their own region of `max` bytes.
    pipe: PipelineBuffer,
    composed: Vec<u8>,
    one: Vec<u8>,
    keys: KeyGen,
    rng: SmallRng,
    pacing: Option<Pacing>,
    /// Open loop: the next request's number in this client's schedule, and whether the next request
    /// fell due while `-P` were in flight (its lateness is then the pipeline's, not the client's).
    seq: u64,
    was_full: bool,
    /// No more requests will be claimed; and the client is done altogether.
    done: bool,
    finished: bool,
    /// A backoff: nothing is sent before this.
    wake_at: Option<Instant>,
    /// What happened since the last pump: a request waits for its slot, was moved, or a connection was lost.
    wait: bool,
    moved: bool,
    lost: bool,
    /// Connections written to in this pump (sent at its end), and nodes that could not be reached in it.
    dirty: Vec<usize>,
    unreachable: Vec<bool>,
}

/// An executor's cluster layer over its ring.
struct ClusterLayer<'a> {
    plan: &'a ShardPlan,
    state: &'a ShardState,
    cfg: &'a Config,
    stride: usize,
    map: SlotMap,
    initial: Vec<String>,
    tallies: Vec<NodeTally>,
    moved: u64,
    ask: u64,
    retries: u64,
    last_refresh: Option<Instant>,
    /// Replies per second of the test (from the run's epoch, shared by every executor).
    per_second: Vec<u64>,
    lost: Vec<LostNode>,
    /// True while a lost master's slots have not been answered by another node.
    watching: bool,
    /// Set when the shard gave up (a slot without an answering master for `--failover-timeout`): why.
    abort: Option<String>,
    /// Per ring connection: the requests whose replies it owes, in send order ([`ASKING_MARK`] for ASKING).
    owed: Vec<VecDeque<u32>>,
    clients: Vec<Client>,
    composer: Option<Arc<Composer>>,
    /// The executor's position in the mix's cycle, shared by its clients.
    turn: Rc<Cell<u64>>,
    max: usize,
    next_watch: Instant,
    /// Clients to pump on the next turn (a reply, a finished send, a loss, work left), each once.
    ready: Vec<usize>,
    pumping: Vec<usize>,
    queued: Vec<bool>,
    /// The earliest backoff's end among the clients, if any is backing off.
    next_backoff: Option<Instant>,
}

fn node_target(addr: SocketAddr) -> Target {
    Target::Tcp {
        host: addr.ip().to_string(),
        port: addr.port(),
        addr,
    }
}

fn cluster_to_conn(e: DiscoveryError) -> ConnError {
    match e {
        DiscoveryError::Conn(c) => c,
        other => ConnError::Protocol(other.to_string()),
    }
}

/// Reads the layout and opens every client's connection to every master (blocking; set-up only).
/// Slot `client * stride + node` holds client `client`'s connection to node `node`.
pub(crate) fn open(
    cfg: &Config,
    clients: usize,
) -> Result<(Vec<Option<Socket>>, Option<Topology>), ConnError> {
    let map = discovery::discover(
        &cfg.target,
        cfg.tls.as_ref(),
        &cfg.setup,
        cfg.run.connect_timeout,
    )
    .map_err(cluster_to_conn)?;
    let stride = (map.nodes.len() * 2).max(8);
    let masters = map.masters();
    let mut socks = Vec::with_capacity(clients * stride);
    for _ in 0..clients {
        for n in 0..stride {
            socks.push(if masters.contains(&(n as u16)) {
                Some(ring::connect_to(cfg, &node_target(map.nodes[n].addr))?)
            } else {
                None
            });
        }
    }
    Ok((socks, Some(Topology { map, stride })))
}

/// The cluster layer for one shard's ring driver.
pub(crate) fn layer<'a>(
    plan: &'a ShardPlan,
    state: &'a ShardState,
    topology: Topology,
    composer: Option<Arc<Composer>>,
    began: Instant,
) -> Box<dyn Layer + 'a> {
    let cfg = &*plan.cfg;
    let Topology { map, stride } = topology;
    let depth = cfg.run.pipeline;
    let cursor = Rc::new(Cell::new(0u64));
    let max = composer.as_ref().map_or(0, |c| c.max_request_len());
    let clients = (0..plan.clients)
        .map(|i| {
            let seed = cfg
                .run
                .seed
                .wrapping_add((plan.index as u64) << 32)
                .wrapping_add(i as u64)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
            Client {
                reqs: vec![Req::default(); depth],
                todo: Vec::with_capacity(depth),
                retry: Vec::with_capacity(depth),
                free: (0..depth as u32).rev().collect(),
                pipe: PipelineBuffer::new(&plan.test.template, depth),
                composed: vec![0u8; depth * max],
                one: Vec::with_capacity(max),
                keys: plan.keys(&cursor),
                rng: SmallRng::seed_from_u64(seed),
                pacing: plan.pacing(began, i),
                seq: 0,
                was_full: false,
                done: false,
                finished: false,
                wake_at: None,
                wait: false,
                moved: false,
                lost: false,
                dirty: Vec::with_capacity(stride),
                unreachable: vec![false; stride],
            }
        })
        .collect();
    let initial = map
        .masters()
        .iter()
        .map(|&i| map.nodes[i as usize].name.clone())
        .collect();
    Box::new(ClusterLayer {
        plan,
        state,
        cfg,
        stride,
        map,
        initial,
        tallies: Vec::new(),
        moved: 0,
        ask: 0,
        retries: 0,
        last_refresh: None,
        per_second: Vec::new(),
        lost: Vec::new(),
        watching: false,
        abort: None,
        owed: (0..plan.clients * stride)
            .map(|_| VecDeque::with_capacity(depth * 2))
            .collect(),
        clients,
        composer,
        turn: Rc::new(Cell::new(0)),
        max,
        next_watch: began,
        ready: (0..plan.clients).collect(),
        pumping: Vec::with_capacity(plan.clients),
        queued: vec![true; plan.clients],
        next_backoff: None,
    })
}

impl ClusterLayer<'_> {
    /// Puts client `c` on the list of the next pump.
    fn mark(&mut self, c: usize) {
        if !self.queued[c] {
            self.queued[c] = true;
            self.ready.push(c);
        }
    }

    /// Re-reads the slot map unless it was read just now.
    fn refresh(&mut self, now: Instant) {
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
                break;
            }
        }
        self.last_refresh = Some(Instant::now());
    }

    /// Records the reply from node `node` that arrived at `now` for request `r` (an error reply when
    /// `error`): latency from its intended time, service time from its first send, its mix command's
    /// figures.
    fn complete(&mut self, node: usize, r: &Req, error: bool, now: Instant) {
        let intended = r.intended.unwrap_or(now);
        let lat = (now.saturating_duration_since(intended).as_nanos() as u64).max(1);
        self.state.record(now, lat, 1);
        {
            let mut st = self.state.stats.borrow_mut();
            if let Some(svc) = st.service.as_mut() {
                let sent = r.first_sent.unwrap_or(intended);
                svc.saturating_record(
                    (now.saturating_duration_since(sent).as_nanos() as u64).max(1),
                );
            }
            if let Some(part) = st.parts.get_mut(r.kind as usize) {
                part.hist.saturating_record(lat);
                part.completed += 1;
                part.errors += u64::from(error);
            }
        }
        while self.tallies.len() <= node {
            self.tallies.push(NodeTally {
                completed: 0,
                hist: new_histogram(self.cfg.run.precision),
            });
        }
        self.tallies[node].completed += 1;
        self.tallies[node].hist.saturating_record(lat);
        let second = now.saturating_duration_since(self.plan.epoch).as_secs() as usize;
        if self.per_second.len() <= second {
            self.per_second.resize(second + 1, 0);
        }
        self.per_second[second] += 1;
    }

    /// Seconds since the run's epoch (the same clock on every executor).
    fn seconds(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.plan.epoch).as_secs_f64()
    }

    /// Notes that a connection to `node` was lost or refused (first time only, and only for a node
    /// that owns slots: what follows is a failover, or a give-up).
    fn note_lost(&mut self, node: usize, now: Instant) {
        let node = node as u16;
        if self.lost.iter().any(|l| l.node == node) {
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
        });
        self.watching = true;
    }

    /// Notes a reply from `node` for `slot`: the first for a lost master's slot from another node marks
    /// the end of its failover.
    fn note_answer(&mut self, node: usize, slot: u16, now: Instant) {
        if !self.watching {
            return;
        }
        let at = self.seconds(now);
        let mut open = false;
        for l in self.lost.iter_mut() {
            if l.answered.is_none() {
                if l.node as usize != node && l.slots[slot as usize] {
                    l.answered = Some((node as u16, at));
                } else {
                    open = true;
                }
            }
        }
        self.watching = open;
    }

    /// Ends this shard's run: `slot` has had no answering master for `--failover-timeout` (or `silent`
    /// did not reply within it). Asks the other nodes for the cluster's state for the message.
    fn give_up(&mut self, slot: u16, silent: Option<usize>) {
        if self.abort.is_some() {
            return;
        }
        let o = silent.unwrap_or(self.map.owner[slot as usize] as usize);
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

    /// Ends client `c`: what it still holds (to send, to retry, or waiting for a reply) counts as
    /// failed (sent at least once) or not sent, and its connections are closed.
    fn finish_client(&mut self, d: &mut Driver<'_>, c: usize) {
        let stride = self.stride;
        let cl = &mut self.clients[c];
        cl.finished = true;
        let mut sent = 0u64;
        let mut unsent = 0u64;
        let mut count = |i: u32| {
            if i != ASKING_MARK {
                if cl.reqs[i as usize].sent {
                    sent += 1;
                } else {
                    unsent += 1;
                }
            }
        };
        cl.todo.drain(..).for_each(&mut count);
        cl.retry.drain(..).for_each(&mut count);
        for j in c * stride..(c + 1) * stride {
            self.owed[j].drain(..).for_each(&mut count);
            if d.is_live(j) {
                d.shut(j);
            }
        }
        if !(self.plan.control.stopped() || self.state.deadline.is_some()) {
            let mut st = self.state.stats.borrow_mut();
            st.failed += sent;
            st.not_sent += unsent;
        }
    }

    /// True when client `c` has nothing in flight on any of its connections.
    fn quiet(&self, d: &Driver<'_>, c: usize) -> bool {
        (c * self.stride..(c + 1) * self.stride)
            .all(|j| self.owed[j].is_empty() && !d.is_sending(j))
    }

    /// Writes request `i` of client `c` with the composer into its region; returns its slot.
    fn compose(&mut self, c: usize, i: usize) -> u16 {
        let cl = &mut self.clients[c];
        let comp = self.composer.as_ref().expect("a composer");
        cl.one.clear();
        let kind = comp.write_request(&mut cl.one, &mut cl.keys, &mut cl.rng, &self.turn);
        let at = i * self.max;
        cl.composed[at..at + cl.one.len()].copy_from_slice(&cl.one);
        let slot = match cluster::request_key(&cl.one) {
            Some(k) => cluster::slot_of(k),
            // A command without a key may go anywhere: spread such requests over the masters.
            None => bounded(cl.rng.next_u64(), SLOTS as u64) as u16,
        };
        cl.reqs[i] = Req {
            slot,
            at: at as u32,
            len: cl.one.len() as u32,
            kind: kind as u16,
            target: UNASSIGNED,
            ..Req::default()
        };
        slot
    }

    /// Closed loop: a new round of up to `-P` requests; false when the client's share is done.
    fn new_round(&mut self, c: usize, now: Instant) -> bool {
        if self.state.deadline.is_some_and(|d| now >= d) {
            return false;
        }
        let k = self.state.claim(self.cfg.run.pipeline);
        if k == 0 {
            return false;
        }
        if self.composer.is_some() {
            for i in 0..k {
                self.compose(c, i);
            }
        } else {
            let key = self.plan.test.template.key_range();
            let cl = &mut self.clients[c];
            let len = cl.pipe.request_len();
            let (keys, rng) = (&mut cl.keys, &mut cl.rng);
            let fixed = cl.pipe.fill(k, || keys.next(rng));
            for (i, r) in cl.reqs[..k].iter_mut().enumerate() {
                let slot = match &key {
                    Some(kr) => cluster::slot_of(&fixed[i * len + kr.start..i * len + kr.end]),
                    // A command without a key may go anywhere: spread such requests over the masters.
                    None => bounded(cl.rng.next_u64(), SLOTS as u64) as u16,
                };
                *r = Req {
                    slot,
                    target: UNASSIGNED,
                    at: (i * len) as u32,
                    len: len as u32,
                    ..Req::default()
                };
            }
        }
        let cl = &mut self.clients[c];
        for r in &mut cl.reqs[..k] {
            r.intended = Some(now);
        }
        cl.todo.clear();
        cl.todo.extend(0..k as u32);
        true
    }

    /// Open loop: takes every request that is due while fewer than `-P` are in flight; false once
    /// the schedule is over.
    fn admit(&mut self, c: usize, now: Instant) {
        let deadline = self.state.deadline;
        let Some(p) = self.clients[c].pacing else {
            return;
        };
        while !self.clients[c].done {
            let cl = &mut self.clients[c];
            let at = p.intended(cl.seq);
            if deadline.is_some_and(|d| at >= d || now >= d) {
                cl.done = true;
                break;
            }
            if at > now {
                break;
            }
            let Some(&i) = cl.free.last() else {
                // No room: it goes as soon as a request in flight ends.
                if now > at + LATE {
                    cl.was_full = true;
                }
                break;
            };
            if self.state.claim(1) == 0 {
                cl.done = true;
                break;
            }
            cl.free.pop();
            if now.duration_since(at) > LATE {
                let mut st = self.state.stats.borrow_mut();
                if cl.was_full {
                    st.late_full += 1;
                } else {
                    st.late_free += 1;
                }
            }
            cl.was_full = false;
            self.compose(c, i as usize);
            let cl = &mut self.clients[c];
            cl.reqs[i as usize].intended = Some(at);
            cl.todo.push(i);
            cl.seq += 1;
        }
    }

    /// Moves client `c`'s redirected and lost requests back to its to-send list; false when the
    /// shard gave up (a slot without an answering master for `--failover-timeout`).
    fn take_retries(&mut self, c: usize, now: Instant) -> bool {
        let paced = self.clients[c].pacing.is_some();
        let cl = &mut self.clients[c];
        if cl.lost {
            self.retries += cl.retry.len() as u64;
            for &i in &cl.retry {
                let r = &mut cl.reqs[i as usize];
                // A lost connection sends the request to its slot's owner again, as the map says.
                r.target = UNASSIGNED;
                r.asking = false;
                r.stalled.get_or_insert(now);
            }
        }
        let mut stuck = None;
        let mut failed = 0;
        for k in 0..cl.retry.len() {
            let i = cl.retry[k];
            let r = &mut cl.reqs[i as usize];
            if r.attempts >= MAX_ATTEMPTS {
                failed += 1;
                if paced {
                    cl.free.push(i);
                }
                continue;
            }
            if r.target == UNASSIGNED && self.map.owner[r.slot as usize] == UNASSIGNED {
                r.stalled.get_or_insert(now);
            }
            if r.stalled
                .is_some_and(|t| now.duration_since(t) >= self.cfg.run.failover_timeout)
            {
                stuck = stuck.or(Some(r.slot));
            }
            if r.stalled.is_some() {
                r.waits = r.waits.saturating_add(1);
            }
            cl.todo.push(i);
        }
        cl.retry.clear();
        self.state.stats.borrow_mut().failed += failed;
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
            let at = now + backoff;
            cl.wake_at = Some(at);
            self.next_backoff = Some(self.next_backoff.map_or(at, |b| b.min(at)));
        }
        true
    }

    /// Routes client `c`'s requests to the node a redirect named, or else to its slot's owner, and
    /// sends each connection's share; a request whose connection is still sending waits for the next pump.
    fn route(&mut self, d: &mut Driver<'_>, c: usize, now: Instant) {
        let stride = self.stride;
        self.clients[c]
            .unreachable
            .iter_mut()
            .for_each(|u| *u = false);
        let mut k = 0;
        while k < self.clients[c].todo.len() {
            let cl = &mut self.clients[c];
            let i = cl.todo[k];
            let r = cl.reqs[i as usize];
            let node = if r.target != UNASSIGNED {
                r.target
            } else {
                self.map.owner[r.slot as usize]
            } as usize;
            if node >= stride || cl.unreachable[node] {
                cl.todo.swap_remove(k);
                cl.retry.push(i);
                if node >= stride {
                    cl.wait = true;
                } else {
                    cl.lost = true;
                }
                continue;
            }
            let j = c * stride + node;
            if !d.is_live(j) && !d.is_closed(j) {
                // The last connection there is still draining: the request waits for the next pump.
                k += 1;
                continue;
            }
            if !d.is_live(j) {
                // Connect lazily to a node this client has no connection to (a new owner, or after a loss).
                let addr = self.map.nodes[node].addr;
                if d.open(j, &node_target(addr)).is_err() {
                    self.clients[c].unreachable[node] = true;
                    self.note_lost(node, now);
                    continue;
                }
            }
            if d.is_sending(j) {
                k += 1;
                continue;
            }
            let cl = &mut self.clients[c];
            cl.todo.swap_remove(k);
            let bytes: &[u8] = if self.composer.is_some() {
                &cl.composed
            } else {
                cl.pipe.buffer()
            };
            let out = d.out(j, 1 + usize::from(r.asking));
            if out.is_empty() {
                cl.dirty.push(j);
            }
            if r.asking {
                out.extend_from_slice(ASKING);
                self.owed[j].push_back(ASKING_MARK);
            }
            let at = r.at as usize;
            out.extend_from_slice(&bytes[at..at + r.len as usize]);
            self.owed[j].push_back(i);
            let r = &mut cl.reqs[i as usize];
            r.sent = true;
            r.first_sent.get_or_insert(now);
        }
        while let Some(j) = self.clients[c].dirty.pop() {
            if let Err(e) = d.send(j, now) {
                self.state
                    .stats
                    .borrow_mut()
                    .note_conn_error(&e.to_string());
                let owed = self.owed[j].drain(..).filter(|&i| i != ASKING_MARK);
                let cl = &mut self.clients[c];
                cl.retry.extend(owed);
                cl.lost = true;
                self.note_lost(j % stride, now);
            }
        }
    }

    /// Everything client `c` has to do now.
    fn pump_client(&mut self, d: &mut Driver<'_>, c: usize, now: Instant) {
        if self.clients[c].finished {
            return;
        }
        if self.abort.is_some() {
            self.finish_client(d, c);
            return;
        }
        if let Some(w) = self.clients[c].wake_at {
            if now < w {
                return;
            }
            self.clients[c].wake_at = None;
        }
        self.pump_work(d, c, now);
        let cl = &self.clients[c];
        // Requests that waited for a busy or draining connection, or came back while routing: again
        // on the next turn.
        if !cl.finished && cl.wake_at.is_none() && (!cl.todo.is_empty() || !cl.retry.is_empty()) {
            self.mark(c);
        }
    }

    fn pump_work(&mut self, d: &mut Driver<'_>, c: usize, now: Instant) {
        if !self.clients[c].retry.is_empty() || self.clients[c].lost || self.clients[c].wait {
            if !self.take_retries(c, now) {
                self.finish_client(d, c);
                return;
            }
            if self.clients[c].wake_at.is_some() {
                return;
            }
        }
        let paced = self.clients[c].pacing.is_some();
        if paced {
            self.admit(c, now);
        }
        let cl = &self.clients[c];
        if cl.todo.is_empty() && cl.retry.is_empty() && self.quiet(d, c) {
            let over = if paced {
                cl.done
            } else {
                !self.new_round(c, now)
            };
            if over {
                self.finish_client(d, c);
                return;
            }
        }
        if !self.clients[c].todo.is_empty() {
            self.route(d, c, now);
        }
    }

    /// Gives up when a node has held replies back longer than `--failover-timeout`.
    fn watch(&mut self, d: &Driver<'_>, now: Instant) {
        if now < self.next_watch {
            return;
        }
        self.next_watch = now + WATCH_EVERY;
        let limit = self.cfg.run.failover_timeout;
        for j in 0..self.owed.len() {
            let (due, last) = d.owed(j);
            if due > 0 && d.is_live(j) && now.saturating_duration_since(last) >= limit {
                let node = j % self.stride;
                let slot = self.owed[j]
                    .iter()
                    .find(|&&i| i != ASKING_MARK)
                    .map_or(0, |&i| self.clients[j / self.stride].reqs[i as usize].slot);
                self.give_up(slot, Some(node));
                return;
            }
        }
    }
}

impl Layer for ClusterLayer<'_> {
    fn on_reply(&mut self, conn: usize, error: bool, raw: &[u8], now: Instant) {
        let (c, node) = (conn / self.stride, conn % self.stride);
        self.mark(c);
        let Some(i) = self.owed[conn].pop_front() else {
            return;
        };
        if i == ASKING_MARK {
            return;
        }
        let cl = &mut self.clients[c];
        let r = &mut cl.reqs[i as usize];
        if error {
            match cluster::parse_redirect(raw) {
                Some(Redirect::Moved { slot, node }) => {
                    self.moved += 1;
                    if let Some(idx) = self.map.node_for(node, &discovery::resolve_node) {
                        self.map.owner[slot as usize] = idx;
                        r.target = idx;
                    } else {
                        r.target = UNASSIGNED;
                    }
                    r.asking = false;
                    r.attempts += 1;
                    cl.moved = true;
                    cl.retry.push(i);
                    return;
                }
                Some(Redirect::Ask { node, .. }) => {
                    self.ask += 1;
                    let idx = self.map.node_for(node, &discovery::resolve_node);
                    r.target = idx.unwrap_or(UNASSIGNED);
                    r.asking = idx.is_some();
                    r.attempts += 1;
                    cl.retry.push(i);
                    return;
                }
                Some(Redirect::TryAgain | Redirect::ClusterDown) => {
                    self.retries += 1;
                    r.target = UNASSIGNED;
                    r.asking = false;
                    r.stalled.get_or_insert(now);
                    cl.wait = true;
                    cl.retry.push(i);
                    return;
                }
                None => note_error(self.state, self.plan, raw),
            }
        }
        let r = *r;
        if cl.pacing.is_some() {
            cl.free.push(i);
        }
        self.note_answer(node, r.slot, now);
        self.complete(node, &r, error, now);
    }

    fn on_lost(&mut self, conn: usize, e: &ConnError, now: Instant) {
        let (c, node) = (conn / self.stride, conn % self.stride);
        self.mark(c);
        let cl = &mut self.clients[c];
        let owed = self.owed[conn].drain(..).filter(|&i| i != ASKING_MARK);
        let mut st = self.state.stats.borrow_mut();
        st.note_conn_error(&e.to_string());
        if matches!(e, ConnError::Timeout { .. }) {
            // A reply late beyond --timeout: its request fails, it is not sent again.
            let paced = cl.pacing.is_some();
            let mut n = 0;
            for i in owed {
                n += 1;
                if paced {
                    cl.free.push(i);
                }
            }
            st.failed += n;
            st.timed_out += n;
            return;
        }
        drop(st);
        cl.retry.extend(owed);
        cl.lost = true;
        self.note_lost(node, now);
    }

    fn wake(&mut self, conn: usize) {
        self.mark(conn / self.stride);
    }

    fn pump(&mut self, d: &mut Driver<'_>, now: Instant) {
        self.watch(d, now);
        // Every client when the open loop paces them or the shard gave up; those whose backoff ended;
        // else only those with news.
        if self.cfg.run.shape.rps.is_some() || self.abort.is_some() {
            (0..self.clients.len()).for_each(|c| self.mark(c));
        }
        if self.next_backoff.is_some_and(|b| b <= now) {
            self.next_backoff = None;
            for c in 0..self.clients.len() {
                match self.clients[c].wake_at {
                    Some(w) if w <= now => self.mark(c),
                    Some(w) => {
                        self.next_backoff = Some(self.next_backoff.map_or(w, |b| b.min(w)));
                    }
                    None => {}
                }
            }
        }
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
        let due = self.cfg.run.shape.rps.and_then(|_| {
            self.clients
                .iter()
                .filter(|c| !c.finished && c.wake_at.is_none() && !c.done && !c.free.is_empty())
                .filter_map(|c| c.pacing.map(|p| p.intended(c.seq)))
                .min()
        });
        match (due, self.next_backoff) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn finished(&self) -> bool {
        self.clients.iter().all(|c| c.finished)
    }

    fn finish(&mut self, stats: &mut ShardStats) {
        if let Some(why) = &self.abort {
            stats.note_conn_error(why);
        }
        // Seconds without a reply (a stall at the end) are in the per-second figures too.
        let seconds = Instant::now()
            .saturating_duration_since(self.plan.epoch)
            .as_secs() as usize
            + 1;
        if self.per_second.len() < seconds {
            self.per_second.resize(seconds, 0);
        }
        let precision = self.cfg.run.precision;
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
        stats.cluster = Some(cs);
    }
}
