//! The `--cluster` side of the engine: on one executor, logical clients that each hold a connection per
//! master and send every request to the owner of its key's slot, following MOVED and ASK and retrying
//! TRYAGAIN, CLUSTERDOWN and lost connections, so each request ends exactly once (completed or failed).
//!
//! A lost master: its slots' requests are retried with backoff and the slot map is re-read until a
//! promoted replica (or another master) answers for them. When none does within `--failover-timeout`,
//! the shard gives up with a message naming the node and the cluster's state; the run never hangs.

use crate::engine::schedule::{LATE, Pacing};
use crate::engine::{GateGuard, ShardPlan, ShardState, note_error};
use crate::net::discovery::DiscoveryError;
use crate::net::replies::ReplyBuffer;
use crate::net::target::Target;
use crate::net::tls::TlsClient;
use crate::net::{self, ConnError, Stream};
use crate::protocol::cluster::{self, Redirect, SLOTS, SlotMap, UNASSIGNED};
use crate::protocol::resp::{self, Scanned, Value};
use crate::stats::cluster::{ClusterStats, Failover};
use crate::stats::intervals::IntervalRecorder;
use crate::stats::{ExecutorStats, ShardStats, new_histogram, thread_cpu_seconds};
use crate::workload::PipelineBuffer;
use crate::workload::compose::Composer;
use crate::workload::keys::{KeyGen, bounded};
use futures_lite::AsyncRead;
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::{Duration, Instant};

/// Read buffer per node connection; grows only for a single reply line longer than this.
const READ_BUFFER: usize = 16 * 1024;
/// MOVED / ASK redirects of one request before it counts as failed (a redirect loop).
const MAX_ATTEMPTS: u16 = 64;
/// First wait after TRYAGAIN, CLUSTERDOWN or a lost connection; doubles up to [`BACKOFF_MAX`].
const BACKOFF_START: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_millis(250);
/// At most one full topology refresh per executor in this window: a burst of MOVED replies (a slot
/// range changing owner) costs one CLUSTER SLOTS, not one per reply.
const REFRESH_GAP: Duration = Duration::from_millis(100);
/// How often an executor looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);
/// The ASKING command, sent before a request that follows an ASK redirect.
const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";
/// Marks an ASKING reply in a connection's queue of expected replies (its reply is not counted).
const ASKING_MARK: u32 = u32::MAX;

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

/// An executor's cluster state, shared by its logical clients on one thread.
struct Shard {
    plan: Rc<ShardPlan>,
    state: ShardState,
    map: RefCell<SlotMap>,
    tallies: RefCell<Vec<NodeTally>>,
    moved: Cell<u64>,
    ask: Cell<u64>,
    retries: Cell<u64>,
    setup: Vec<u8>,
    names: Vec<&'static str>,
    refreshing: Cell<bool>,
    last_refresh: Cell<Option<Instant>>,
    /// Replies per second of the test (from the run's epoch, shared by every executor).
    per_second: RefCell<Vec<u64>>,
    lost: RefCell<Vec<LostNode>>,
    /// True while a lost master's slots have not been answered by another node.
    watching: Cell<bool>,
    /// Set when the shard gave up (a slot without an answering master for `--failover-timeout`): why.
    abort: RefCell<Option<String>>,
    giving_up: Cell<bool>,
}

/// A logical client's connection to one node.
struct NodeConn {
    stream: Option<Stream>,
    replies: ReplyBuffer,
    /// Requests of the current round for this node, written in one go.
    out: Vec<u8>,
    /// Indices of the requests whose replies are owed, in send order ([`ASKING_MARK`] for ASKING).
    owed: VecDeque<u32>,
}

impl NodeConn {
    fn new(stream: Option<Stream>, depth: usize) -> Self {
        NodeConn {
            stream,
            replies: ReplyBuffer::new(READ_BUFFER),
            out: Vec::new(),
            owed: VecDeque::with_capacity(depth * 2),
        }
    }

    /// Drops the connection; the requests still owed a reply go back to `retry`.
    fn lose(&mut self, retry: &mut Vec<u32>) {
        self.stream = None;
        self.replies.reset();
        self.out.clear();
        retry.extend(self.owed.drain(..).filter(|&i| i != ASKING_MARK));
    }
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
    /// Where its bytes lie in the round's buffer.
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

fn node_target(addr: SocketAddr) -> Target {
    Target::Tcp {
        host: addr.ip().to_string(),
        port: addr.port(),
        addr,
    }
}

async fn connect_node(
    addr: SocketAddr,
    tls: Option<&TlsClient>,
    setup: &[u8],
    names: &[&'static str],
    timeout: Duration,
    read_timeout: Option<Duration>,
) -> Result<Stream, ConnError> {
    let target = node_target(addr);
    let mut s = net::connect(&target, tls, timeout).await?;
    net::run_setup(&mut s, setup, names, &target.display(), timeout).await?;
    // `--timeout`: a reply that takes longer fails its request (glommio checks this inside every read).
    s.set_read_timeout(read_timeout)
        .map_err(|e| ConnError::Protocol(e.to_string()))?;
    Ok(s)
}

/// Reads the slot map with `CLUSTER SLOTS` over a fresh connection (control traffic, not counted).
async fn fetch_slots(
    target: &Target,
    tls: Option<&TlsClient>,
    setup: &[u8],
    names: &[&'static str],
    timeout: Duration,
) -> Result<SlotMap, DiscoveryError> {
    let value = query(target, tls, setup, names, timeout, &[b"CLUSTER", b"SLOTS"]).await?;
    let seed = match target {
        Target::Tcp { addr, .. } => *addr,
        Target::Unix(_) => SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    Ok(SlotMap::from_cluster_slots(
        &value,
        seed,
        &target.display(),
    )?)
}

/// Sends one control command over a fresh connection and reads its reply, all within `timeout`.
async fn query(
    target: &Target,
    tls: Option<&TlsClient>,
    setup: &[u8],
    names: &[&'static str],
    timeout: Duration,
    command: &[&[u8]],
) -> Result<Value, ConnError> {
    let work = query_unbounded(target, tls, setup, names, timeout, command);
    let late = async {
        glommio::timer::sleep(timeout).await;
        Err(ConnError::Lost {
            addr: target.display(),
            reason: format!("no reply within {} ms", timeout.as_millis()),
        })
    };
    futures_lite::future::or(work, late).await
}

async fn query_unbounded(
    target: &Target,
    tls: Option<&TlsClient>,
    setup: &[u8],
    names: &[&'static str],
    timeout: Duration,
    command: &[&[u8]],
) -> Result<Value, ConnError> {
    let display = target.display();
    let mut s = net::connect(target, tls, timeout).await?;
    net::run_setup(&mut s, setup, names, &display, timeout).await?;
    let lost = |reason: String| ConnError::Lost {
        addr: display.clone(),
        reason,
    };
    let mut req = Vec::new();
    resp::encode_command(&mut req, command);
    s.write_all(&req)
        .await
        .map_err(|e| lost(net::io_reason(e)))?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let value = loop {
        match resp::decode(&buf) {
            Ok(Some((Value::Push(_), used))) => {
                buf.drain(..used);
                continue;
            }
            Ok(Some((v, _))) => break v,
            Ok(None) => {}
            Err(e) => return Err(ConnError::Protocol(format!("{display}: {e}"))),
        }
        let n = s
            .read(&mut chunk)
            .await
            .map_err(|e| lost(net::io_reason(e)))?;
        if n == 0 {
            return Err(lost("closed by the server".into()));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    Ok(value)
}

fn cluster_to_conn(e: DiscoveryError) -> ConnError {
    match e {
        DiscoveryError::Conn(c) => c,
        other => ConnError::Protocol(other.to_string()),
    }
}

impl Shard {
    /// Re-reads the slot map unless another client of this executor is doing it or did it just now.
    async fn refresh(&self) {
        if self.refreshing.get()
            || self
                .last_refresh
                .get()
                .is_some_and(|t| t.elapsed() < REFRESH_GAP)
        {
            return;
        }
        self.refreshing.set(true);
        let candidates: Vec<SocketAddr> = {
            let m = self.map.borrow();
            let masters = m.masters();
            let mut v: Vec<SocketAddr> =
                masters.iter().map(|&i| m.nodes[i as usize].addr).collect();
            for n in &m.nodes {
                if !v.contains(&n.addr) {
                    v.push(n.addr);
                }
            }
            v
        };
        for addr in candidates {
            if let Ok(fresh) = fetch_slots(
                &node_target(addr),
                self.plan.cfg.tls.as_ref(),
                &self.setup,
                &self.names,
                self.plan.cfg.connect_timeout,
            )
            .await
            {
                self.map.borrow_mut().update_from(&fresh);
                break;
            }
        }
        self.last_refresh.set(Some(Instant::now()));
        self.refreshing.set(false);
    }

    /// Records the reply from node `node` that arrived at `now` for request `r` (an error reply when
    /// `error`): latency from its intended time, service time from its first send, its mix command's
    /// figures.
    fn complete(&self, node: usize, r: &Req, error: bool, now: Instant) {
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
        let mut t = self.tallies.borrow_mut();
        while t.len() <= node {
            t.push(NodeTally {
                completed: 0,
                hist: new_histogram(self.plan.cfg.precision),
            });
        }
        t[node].completed += 1;
        t[node].hist.saturating_record(lat);
        let second = now.saturating_duration_since(self.plan.epoch).as_secs() as usize;
        let mut per = self.per_second.borrow_mut();
        if per.len() <= second {
            per.resize(second + 1, 0);
        }
        per[second] += 1;
    }

    fn fail(&self, n: u64) {
        self.state.stats.borrow_mut().failed += n;
    }

    /// Seconds since the run's epoch (the same clock on every executor).
    fn seconds(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.plan.epoch).as_secs_f64()
    }

    /// Notes that a connection to `node` was lost or refused (first time only, and only for a node
    /// that owns slots: what follows is a failover, or a give-up).
    fn note_lost(&self, node: usize, now: Instant) {
        let node = node as u16;
        let mut lost = self.lost.borrow_mut();
        if lost.iter().any(|l| l.node == node) {
            return;
        }
        let slots: Vec<bool> = self.map.borrow().owner.iter().map(|&o| o == node).collect();
        if !slots.contains(&true) {
            return;
        }
        lost.push(LostNode {
            node,
            lost_s: self.seconds(now),
            slots,
            answered: None,
        });
        self.watching.set(true);
    }

    /// Notes a reply from `node` for `slot`: the first for a lost master's slot from another node marks
    /// the end of its failover.
    fn note_answer(&self, node: usize, slot: u16, now: Instant) {
        if !self.watching.get() {
            return;
        }
        let mut open = false;
        for l in self.lost.borrow_mut().iter_mut() {
            if l.answered.is_none() {
                if l.node as usize != node && l.slots[slot as usize] {
                    l.answered = Some((node as u16, self.seconds(now)));
                } else {
                    open = true;
                }
            }
        }
        self.watching.set(open);
    }

    fn aborted(&self) -> bool {
        self.abort.borrow().is_some()
    }

    /// Ends this shard's run: `slot` has had no answering master for `--failover-timeout` (or `node`
    /// did not reply within it). Asks the other nodes for the cluster's state for the message.
    async fn give_up(&self, slot: u16, silent: Option<usize>) {
        if self.aborted() || self.giving_up.replace(true) {
            return;
        }
        let (owner, others): (Option<String>, Vec<SocketAddr>) = {
            let m = self.map.borrow();
            let o = silent.unwrap_or(m.owner[slot as usize] as usize);
            let owner = m.nodes.get(o).map(|n| n.name.clone());
            let others = m
                .nodes
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != o)
                .map(|(_, n)| n.addr)
                .collect();
            (owner, others)
        };
        let mut state = String::from("cluster_state unknown (no other node answered CLUSTER INFO)");
        for addr in others {
            let target = node_target(addr);
            let reply = query(
                &target,
                self.plan.cfg.tls.as_ref(),
                &self.setup,
                &self.names,
                self.plan.cfg.connect_timeout,
                &[b"CLUSTER", b"INFO"],
            )
            .await;
            if let Ok(Value::Bulk(b) | Value::Verbatim(_, b)) = reply
                && let Some(line) = String::from_utf8_lossy(&b)
                    .lines()
                    .find(|l| l.starts_with("cluster_state:"))
            {
                state = format!("{} (says {})", line.trim(), target.display());
                break;
            }
        }
        let secs = self.plan.cfg.failover_timeout.as_secs_f64();
        let what = match (silent, owner) {
            (Some(_), Some(n)) => format!("{n} sent no reply for {secs} s"),
            (None, Some(n)) => {
                format!("no master answered for the slots of {n} (slot {slot}) for {secs} s")
            }
            (_, None) => format!("slot {slot} has had no master for {secs} s"),
        };
        *self.abort.borrow_mut() = Some(format!(
            "--cluster: {what}; {state}; giving up (--failover-timeout)"
        ));
    }

    /// Counts the requests `list` names as failed (sent at least once) or not sent.
    fn drop_requests(&self, reqs: &[Req], list: &[u32]) {
        let sent = list.iter().filter(|&&i| reqs[i as usize].sent).count() as u64;
        let mut st = self.state.stats.borrow_mut();
        st.failed += sent;
        st.not_sent += list.len() as u64 - sent;
    }
}

/// Runs one executor's share of a cluster test (called by the engine for `--cluster`).
pub(crate) async fn run_shard(
    plan: ShardPlan,
    mut guard: GateGuard,
) -> Result<ShardStats, ConnError> {
    let cfg = plan.cfg.clone();
    let (setup, names) = net::encode_setup(&cfg.setup);
    let depth = cfg.pipeline;

    // Phase 1: read the layout and open every client's connection to every master (neither counted
    // nor timed).
    let prepared = async {
        let map = fetch_slots(
            &cfg.target,
            cfg.tls.as_ref(),
            &setup,
            &names,
            cfg.connect_timeout,
        )
        .await
        .map_err(cluster_to_conn)?;
        let masters = map.masters();
        let mut pending = Vec::with_capacity(plan.clients * masters.len());
        for _ in 0..plan.clients {
            for &m in &masters {
                let addr = map.nodes[m as usize].addr;
                let (setup, names) = (setup.clone(), names.clone());
                let (timeout, read_timeout) = (cfg.connect_timeout, cfg.timeout);
                let cfg = cfg.clone();
                pending.push((
                    m,
                    glommio::spawn_local(async move {
                        let tls = cfg.tls.as_ref();
                        connect_node(addr, tls, &setup, &names, timeout, read_timeout).await
                    }),
                ));
            }
        }
        let mut clients = Vec::with_capacity(plan.clients);
        let mut failure = None;
        let mut it = pending.into_iter();
        for _ in 0..plan.clients {
            let mut conns: Vec<NodeConn> = (0..map.nodes.len())
                .map(|_| NodeConn::new(None, depth))
                .collect();
            for _ in 0..masters.len() {
                let (m, task) = it.next().expect("one task per client and master");
                match task.await {
                    Ok(s) => conns[m as usize].stream = Some(s),
                    Err(e) => failure = failure.or(Some(e)),
                }
            }
            clients.push(conns);
        }
        match failure {
            Some(e) => Err(e),
            None => Ok((map, clients)),
        }
    }
    .await;
    if prepared.is_err() {
        plan.gate.abort.store(true, Ordering::Release);
    }
    // Phase 2: every shard starts sending at the same moment, or none does.
    let go = plan.gate.wait(cfg.threads.min(cfg.clients)).await;
    guard.passed = true;
    let (map, clients) = prepared?;
    if !go {
        return Ok(ShardStats::new(cfg.precision));
    }
    if cfg.idle {
        let _keep_open = clients;
        while !plan.control.stopped() {
            glommio::timer::sleep(STOP_POLL).await;
        }
        return Ok(ShardStats::new(cfg.precision));
    }

    // Phase 3: drive the logical clients.
    let initial: Vec<String> = map
        .masters()
        .iter()
        .map(|&i| map.nodes[i as usize].name.clone())
        .collect();
    let cpu_start = thread_cpu_seconds();
    let started = Instant::now();
    let shard_deadline = plan.duration.map(|d| started + d);
    let shards = cfg.threads.min(cfg.clients);
    let cursor = Rc::new(Cell::new(0u64));
    let mut stats = ShardStats::new(cfg.precision);
    crate::engine::schedule::prepare_stats(&mut stats, &cfg, &plan.test);
    let composer = crate::engine::schedule::composer_for(&cfg, &plan.test);
    let turn = Rc::new(Cell::new(0u64));
    let first_client = plan.first_client;
    let intervals = cfg
        .hdr_out
        .is_some()
        .then(|| IntervalRecorder::new(started, &stats.hist));
    let shard = Rc::new(Shard {
        state: ShardState {
            remaining: Cell::new(plan.requests),
            stats: RefCell::new(stats),
            latency_sum_ns: Cell::new(0),
            intervals: RefCell::new(intervals),
            deadline: shard_deadline,
        },
        plan: Rc::new(plan),
        map: RefCell::new(map),
        tallies: RefCell::new(Vec::new()),
        moved: Cell::new(0),
        ask: Cell::new(0),
        retries: Cell::new(0),
        setup,
        names,
        refreshing: Cell::new(false),
        last_refresh: Cell::new(None),
        per_second: RefCell::new(Vec::new()),
        lost: RefCell::new(Vec::new()),
        watching: Cell::new(false),
        abort: RefCell::new(None),
        giving_up: Cell::new(false),
    });
    shard.state.stats.borrow_mut().start = Some(started);
    let tasks: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(i, conns)| {
            let seed = cfg
                .seed
                .wrapping_add((shard.plan.index as u64) << 32)
                .wrapping_add(i as u64)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let keys = KeyGen::new(
                cfg.shape.distribution,
                cfg.keyspace.unwrap_or(1),
                shard.plan.index,
                shards,
                &cursor,
            );
            let pacing = cfg
                .shape
                .rps
                .map(|rps| Pacing::new(started, first_client + i, cfg.clients, rps));
            let feed = Feed {
                keys,
                seed,
                composer: composer.clone(),
                turn: turn.clone(),
                pacing,
            };
            glommio::spawn_local(drive(shard.clone(), conns, feed))
        })
        .collect();
    let all = async {
        for t in tasks {
            t.await;
        }
    };
    let stop = {
        let control = shard.plan.control.clone();
        async move {
            while !control.stopped() {
                glommio::timer::sleep(STOP_POLL).await;
            }
        }
    };
    futures_lite::future::or(all, stop).await;

    let mut stats = shard.state.stats.borrow().clone();
    // Requests never claimed: not sent (the shard gave up, or was stopped). With --duration there is no
    // count to fall short of.
    if shard.state.deadline.is_none() {
        stats.not_sent += shard.state.remaining.get();
    }
    if let Some(why) = shard.abort.borrow().as_ref() {
        stats.note_conn_error(why);
    }
    // The test took as long as the shard ran, replies or not (a stall counts).
    let end = Instant::now();
    stats.end = Some(end);
    // Seconds without a reply (a stall at the end) are in the per-second figures too.
    let seconds = end.saturating_duration_since(shard.plan.epoch).as_secs() as usize + 1;
    {
        let mut per = shard.per_second.borrow_mut();
        if per.len() < seconds {
            per.resize(seconds, 0);
        }
    }
    if let Some(rec) = shard.state.intervals.borrow_mut().take() {
        stats.interval_logs.push(rec.finish(&stats.hist));
    }
    let executor = ExecutorStats::of_shard(
        shard.plan.index,
        &stats,
        cpu_start,
        started,
        crate::engine::GLOMMIO_IO,
    );
    stats.executors.push(executor);
    let map = shard.map.borrow();
    let mut cs = ClusterStats {
        moved: shard.moved.get(),
        ask: shard.ask.get(),
        retries: shard.retries.get(),
        per_second: shard.per_second.borrow().clone(),
        failovers: shard
            .lost
            .borrow()
            .iter()
            .map(|l| Failover {
                node: map.nodes[l.node as usize].name.clone(),
                lost_s: l.lost_s,
                new_master: l.answered.map(|(n, _)| map.nodes[n as usize].name.clone()),
                answered_s: l.answered.map(|(_, t)| t),
            })
            .collect(),
        ..ClusterStats::default()
    };
    for name in &initial {
        cs.node_mut(name, cfg.precision);
    }
    for (i, t) in shard.tallies.borrow().iter().enumerate() {
        if t.completed > 0 {
            let n = cs.node_mut(&map.nodes[i].name, cfg.precision);
            n.completed += t.completed;
            n.hist.add(&t.hist).expect("histograms share their bounds");
        }
    }
    stats.cluster = Some(cs);
    Ok(stats)
}

/// Waits until one of the connections that owe replies has bytes (or an error) and reads them into its
/// buffer; returns that connection's index and the read's outcome. Polls every such connection in one
/// future, so each reply is timed when it arrives, whichever master sent it.
async fn read_any(conns: &mut [NodeConn]) -> (usize, std::io::Result<usize>) {
    futures_lite::future::poll_fn(|cx| {
        for (i, c) in conns.iter_mut().enumerate() {
            if c.owed.is_empty() {
                continue;
            }
            let Some(stream) = c.stream.as_mut() else {
                continue;
            };
            let buf = c.replies.spare();
            let polled = match stream {
                Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
                Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
                Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            };
            if let Poll::Ready(r) = polled {
                return Poll::Ready((i, r));
            }
        }
        Poll::Pending
    })
    .await
}

/// What ended a wait for replies.
enum Read {
    Got((usize, std::io::Result<usize>)),
    /// The watchdog: no reply for `--failover-timeout`.
    Silent,
    /// The open loop's next request is due.
    Due,
}

/// Where a logical client's requests come from and when they are due.
struct Feed {
    keys: KeyGen,
    seed: u64,
    /// Requests written one by one (varying values, mixes, the open loop); `None` for the fixed layout.
    composer: Option<Arc<Composer>>,
    /// The executor's position in the mix's cycle, shared by its clients.
    turn: Rc<Cell<u64>>,
    /// `--rps`: this client's schedule.
    pacing: Option<Pacing>,
}

/// One logical client; each request is routed to its slot's owner and ends once (completed or failed),
/// redirects and resends included. Closed loop: rounds of `-P` requests, a round after the previous
/// one has ended. Open loop: each request is sent when due while up to `-P` are in flight, replies being
/// read meanwhile; one that falls due with `-P` in flight is sent as soon as one of them ends, and its
/// latency still runs from its intended time.
async fn drive(shard: Rc<Shard>, mut conns: Vec<NodeConn>, feed: Feed) {
    let Feed {
        mut keys,
        seed,
        composer,
        turn,
        pacing,
    } = feed;
    let plan = shard.plan.clone();
    let cfg = &plan.cfg;
    let template = &plan.test.template;
    let key = template.key_range();
    let depth = cfg.pipeline;
    let mut pipe = PipelineBuffer::new(template, depth);
    let len = pipe.request_len();
    // Composed requests: each one's bytes in its own region of `max` bytes (kept until it ends, for
    // resends), written through `one`.
    let max = composer.as_ref().map_or(0, |c| c.max_request_len());
    let mut composed = vec![0u8; depth * max];
    let mut one = Vec::with_capacity(max);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut reqs = vec![Req::default(); depth];
    let mut todo: Vec<u32> = Vec::with_capacity(depth);
    let mut retry: Vec<u32> = Vec::with_capacity(depth);
    // Open loop: the entries of `reqs` not in flight, the next request's number in this client's
    // schedule, whether the schedule is over, and whether the next request fell due while `-P` requests
    // were in flight (its lateness is then the pipeline's, not the client's).
    let paced = pacing.is_some();
    let mut free: Vec<u32> = (0..depth as u32).rev().collect();
    let mut seq = 0u64;
    let mut done = false;
    let mut was_full = false;
    // Armed for each round's replies: a node that holds them back longer than --failover-timeout ends
    // the run too. One timer per client, reset per round (not created per read).
    let mut watchdog = glommio::timer::Timer::new(cfg.failover_timeout);
    // Writes request `i` with the composer into its region; returns its slot.
    let mut compose = |i: usize,
                       reqs: &mut [Req],
                       composed: &mut [u8],
                       keys: &mut KeyGen,
                       rng: &mut SmallRng|
     -> u16 {
        let c = composer.as_ref().expect("a composer");
        one.clear();
        let kind = c.write_request(&mut one, keys, rng, &turn);
        let at = i * max;
        composed[at..at + one.len()].copy_from_slice(&one);
        reqs[i] = Req {
            at: at as u32,
            len: one.len() as u32,
            kind: kind as u16,
            target: UNASSIGNED,
            ..Req::default()
        };
        match cluster::request_key(&one) {
            Some(k) => cluster::slot_of(k),
            // A command without a key may go anywhere: spread such requests over the masters.
            None => bounded(rng.next_u64(), SLOTS as u64) as u16,
        }
    };
    loop {
        if plan.control.stopped() || shard.aborted() {
            return;
        }
        // Closed loop: a new round of `-P` requests. (The open loop admits requests in the loop below.)
        let mut fixed: &[u8] = &[];
        if !paced {
            let now = Instant::now();
            if shard.state.deadline.is_some_and(|d| now >= d) {
                return;
            }
            let k = shard.state.claim(depth);
            if k == 0 {
                return;
            }
            if composer.is_some() {
                for i in 0..k {
                    reqs[i].slot = compose(i, &mut reqs, &mut composed, &mut keys, &mut rng);
                }
            } else {
                fixed = pipe.fill(k, || keys.next(&mut rng));
                for (i, r) in reqs[..k].iter_mut().enumerate() {
                    let slot = match &key {
                        Some(kr) => cluster::slot_of(&fixed[i * len + kr.start..i * len + kr.end]),
                        // A command without a key may go anywhere: spread such requests over the masters.
                        None => bounded(rng.next_u64(), SLOTS as u64) as u16,
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
            let sent = Instant::now();
            for r in &mut reqs[..k] {
                r.intended = Some(sent);
            }
            todo.clear();
            todo.extend(0..k as u32);
        }
        loop {
            if plan.control.stopped() {
                return;
            }
            if shard.aborted() {
                shard.drop_requests(&reqs, &todo);
                return;
            }
            if let Some(p) = &pacing {
                // Open loop: every request that is due, while fewer than `-P` are in flight.
                let now = Instant::now();
                let deadline = shard.state.deadline;
                let mut admitted = false;
                while !done {
                    let at = p.intended(seq);
                    if deadline.is_some_and(|d| at >= d || now >= d) {
                        done = true;
                        break;
                    }
                    if at > now {
                        break;
                    }
                    let Some(&i) = free.last() else {
                        // No room: it goes as soon as a request in flight ends.
                        break;
                    };
                    if shard.state.claim(1) == 0 {
                        done = true;
                        break;
                    }
                    free.pop();
                    if now.duration_since(at) > LATE {
                        let mut st = shard.state.stats.borrow_mut();
                        if was_full {
                            st.late_full += 1;
                        } else {
                            st.late_free += 1;
                        }
                    }
                    let i = i as usize;
                    reqs[i].slot = compose(i, &mut reqs, &mut composed, &mut keys, &mut rng);
                    reqs[i].intended = Some(at);
                    todo.push(i as u32);
                    seq += 1;
                    admitted = true;
                }
                if admitted {
                    was_full = false;
                }
                if todo.is_empty() && conns.iter().all(|c| c.owed.is_empty()) {
                    // Nothing in flight: done, or wait for the next request's time.
                    if done {
                        return;
                    }
                    if !cfg.keepalive {
                        for c in conns.iter_mut() {
                            c.stream = None;
                        }
                    }
                    let wait = p.intended(seq).saturating_duration_since(Instant::now());
                    glommio::timer::sleep(wait.min(STOP_POLL)).await;
                    continue;
                }
            }
            let bytes: &[u8] = if composer.is_some() { &composed } else { fixed };
            let mut wait = false;
            let mut moved = false;
            let mut lost = false;
            // Route: each request to the node a redirect named, or else to its slot's owner.
            for &i in &todo {
                let r = reqs[i as usize];
                let node = if r.target != UNASSIGNED {
                    r.target
                } else {
                    shard.map.borrow().owner[r.slot as usize]
                };
                if node == UNASSIGNED {
                    retry.push(i);
                    wait = true;
                    continue;
                }
                let node = node as usize;
                while conns.len() <= node {
                    conns.push(NodeConn::new(None, depth));
                }
                let c = &mut conns[node];
                if r.asking {
                    c.out.extend_from_slice(ASKING);
                    c.owed.push_back(ASKING_MARK);
                }
                let at = r.at as usize;
                c.out.extend_from_slice(&bytes[at..at + r.len as usize]);
                c.owed.push_back(i);
            }
            // Send: connect lazily to nodes this client has no connection to (new owners, -k 0).
            for (n, c) in conns.iter_mut().enumerate() {
                if c.out.is_empty() {
                    continue;
                }
                if c.stream.is_none() {
                    let addr = shard.map.borrow().nodes[n].addr;
                    match connect_node(
                        addr,
                        cfg.tls.as_ref(),
                        &shard.setup,
                        &shard.names,
                        cfg.connect_timeout,
                        cfg.timeout,
                    )
                    .await
                    {
                        Ok(s) => c.stream = Some(s),
                        Err(_) => {
                            shard.note_lost(n, Instant::now());
                            c.lose(&mut retry);
                            lost = true;
                            continue;
                        }
                    }
                }
                let stream = c.stream.as_mut().expect("connected above");
                let write_at = Instant::now();
                if stream.write_all(&c.out).await.is_err() {
                    shard.note_lost(n, Instant::now());
                    c.lose(&mut retry);
                    lost = true;
                    continue;
                }
                for &i in &c.owed {
                    if i != ASKING_MARK {
                        let r = &mut reqs[i as usize];
                        r.sent = true;
                        r.first_sent.get_or_insert(write_at);
                    }
                }
                c.out.clear();
            }
            // Receive every owed reply (open loop: until the next request is due and there is room for
            // it); redirected requests go to `retry`.
            if !todo.is_empty() {
                watchdog.reset(cfg.failover_timeout);
            }
            while conns.iter().any(|c| !c.owed.is_empty()) {
                let next_due = match &pacing {
                    Some(p) if !done && !free.is_empty() => Some(p.intended(seq)),
                    _ => None,
                };
                let until_due = next_due.map(|d| d.saturating_duration_since(Instant::now()));
                if until_due.is_some_and(|w| w.is_zero()) {
                    break;
                }
                let room = !free.is_empty();
                let read = futures_lite::future::or(
                    async { Read::Got(read_any(&mut conns).await) },
                    futures_lite::future::or(
                        async {
                            (&mut watchdog).await;
                            Read::Silent
                        },
                        async {
                            match until_due {
                                Some(w) => glommio::timer::sleep(w).await,
                                None => futures_lite::future::pending::<()>().await,
                            }
                            Read::Due
                        },
                    ),
                )
                .await;
                let (n, res) = match read {
                    Read::Got(r) => r,
                    Read::Due => break,
                    Read::Silent => {
                        let silent = conns.iter().position(|c| !c.owed.is_empty());
                        let mut owed = Vec::new();
                        for c in conns.iter_mut() {
                            c.lose(&mut owed);
                        }
                        // (The round's other requests completed, or wait in `retry`.)
                        owed.append(&mut retry);
                        let slot = owed.first().map(|&i| reqs[i as usize].slot).unwrap_or(0);
                        shard.give_up(slot, silent).await;
                        shard.drop_requests(&reqs, &owed);
                        return;
                    }
                };
                let now = Instant::now();
                // A request that fell due while `-P` were in flight is late because of `-P`/`-c` (or
                // the server), not because the client was busy.
                if let Some(p) = &pacing {
                    was_full = !room && !done && now > p.intended(seq) + LATE;
                }
                let c = &mut conns[n];
                match res {
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                        // A reply late beyond --timeout: its request fails, it is not sent again.
                        let owed = c.owed.iter().filter(|&&i| i != ASKING_MARK).count() as u64;
                        let addr = shard.map.borrow().nodes[n].name.clone();
                        let ms = cfg.timeout.map(|t| t.as_millis()).unwrap_or(0);
                        let mut st = shard.state.stats.borrow_mut();
                        st.failed += owed;
                        st.timed_out += owed;
                        st.note_conn_error(&ConnError::Timeout { addr, ms }.to_string());
                        drop(st);
                        let mut dropped = Vec::new();
                        c.lose(&mut dropped);
                        if paced {
                            free.extend(dropped);
                        }
                        continue;
                    }
                    Ok(0) | Err(_) => {
                        let name = shard.map.borrow().nodes[n].name.clone();
                        let reason = match res {
                            Err(e) => net::io_reason(e),
                            Ok(_) => "closed by the server".to_string(),
                        };
                        shard
                            .state
                            .stats
                            .borrow_mut()
                            .note_conn_error(&ConnError::Lost { addr: name, reason }.to_string());
                        shard.note_lost(n, now);
                        c.lose(&mut retry);
                        lost = true;
                        continue;
                    }
                    Ok(got) => c.replies.filled(got),
                }
                loop {
                    let (event, raw) = match c.replies.next_reply() {
                        Ok(Some(r)) => r,
                        Ok(None) => break,
                        Err(_) => {
                            c.lose(&mut retry);
                            lost = true;
                            break;
                        }
                    };
                    match event {
                        Scanned::Reply { error } => {
                            let Some(i) = c.owed.pop_front() else {
                                // More replies than requests: the stream cannot be trusted any more.
                                c.lose(&mut retry);
                                lost = true;
                                break;
                            };
                            if i == ASKING_MARK {
                                continue;
                            }
                            let r = &mut reqs[i as usize];
                            if error {
                                match cluster::parse_redirect(raw) {
                                    Some(Redirect::Moved { slot, node }) => {
                                        shard.moved.set(shard.moved.get() + 1);
                                        let mut map = shard.map.borrow_mut();
                                        if let Some(idx) = map.node_for(node) {
                                            map.owner[slot as usize] = idx;
                                            r.target = idx;
                                        } else {
                                            r.target = UNASSIGNED;
                                        }
                                        r.asking = false;
                                        r.attempts += 1;
                                        moved = true;
                                        retry.push(i);
                                        continue;
                                    }
                                    Some(Redirect::Ask { node, .. }) => {
                                        shard.ask.set(shard.ask.get() + 1);
                                        let idx = shard.map.borrow_mut().node_for(node);
                                        r.target = idx.unwrap_or(UNASSIGNED);
                                        r.asking = idx.is_some();
                                        r.attempts += 1;
                                        retry.push(i);
                                        continue;
                                    }
                                    Some(Redirect::TryAgain | Redirect::ClusterDown) => {
                                        shard.retries.set(shard.retries.get() + 1);
                                        r.target = UNASSIGNED;
                                        r.asking = false;
                                        r.stalled.get_or_insert(now);
                                        wait = true;
                                        retry.push(i);
                                        continue;
                                    }
                                    None => note_error(&shard.state, &plan, raw),
                                }
                            }
                            shard.note_answer(n, r.slot, now);
                            shard.complete(n, r, error, now);
                            if paced {
                                free.push(i);
                            }
                        }
                        Scanned::Push => {}
                    }
                }
            }
            let now = Instant::now();
            if lost {
                shard.retries.set(shard.retries.get() + retry.len() as u64);
                for &i in &retry {
                    let r = &mut reqs[i as usize];
                    // A lost connection sends the request to its slot's owner again, as the map says.
                    r.target = UNASSIGNED;
                    r.asking = false;
                    r.stalled.get_or_insert(now);
                }
            }
            // Next round: what was redirected or lost, unless it loops on redirects or its slot has had
            // no answering master for --failover-timeout.
            todo.clear();
            let mut stuck = None;
            for &i in &retry {
                let r = &mut reqs[i as usize];
                if r.attempts >= MAX_ATTEMPTS {
                    shard.fail(1);
                    if paced {
                        free.push(i);
                    }
                    continue;
                }
                if r.target == UNASSIGNED && shard.map.borrow().owner[r.slot as usize] == UNASSIGNED
                {
                    r.stalled.get_or_insert(now);
                }
                if r.stalled
                    .is_some_and(|t| now.duration_since(t) >= cfg.failover_timeout)
                {
                    stuck = stuck.or(Some(r.slot));
                }
                if r.stalled.is_some() {
                    r.waits = r.waits.saturating_add(1);
                }
                todo.push(i);
            }
            retry.clear();
            if let Some(slot) = stuck {
                shard.give_up(slot, None).await;
                shard.drop_requests(&reqs, &todo);
                return;
            }
            if todo.is_empty() && !paced {
                break;
            }
            if moved || lost {
                shard.refresh().await;
            }
            if paced {
                plan.live.publish(
                    shard.state.stats.borrow().completed,
                    shard.state.latency_sum_ns.get(),
                );
            }
            if (wait || lost) && !todo.is_empty() {
                let round = todo
                    .iter()
                    .map(|&i| reqs[i as usize].waits)
                    .max()
                    .unwrap_or(1);
                let backoff = BACKOFF_START
                    .saturating_mul(1 << round.min(6))
                    .min(BACKOFF_MAX);
                glommio::timer::sleep(backoff).await;
            }
        }
        plan.live.publish(
            shard.state.stats.borrow().completed,
            shard.state.latency_sum_ns.get(),
        );
        if !cfg.keepalive {
            for c in conns.iter_mut() {
                c.stream = None;
            }
        }
    }
}
