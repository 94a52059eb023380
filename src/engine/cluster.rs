//! The `--cluster` layer of the ring driver: on one executor, logical clients that each hold a
//! connection per master (a ring connection each, added when a client first needs a node that
//! appeared during the run: the node table grows with the cluster) and send every request to the
//! owner of its key's slot, following MOVED and ASK and retrying TRYAGAIN, CLUSTERDOWN and lost
//! connections, so each request ends exactly once (completed or failed). The ring does the I/O
//! (sends, receives, TLS, scanning, `--timeout`); this file decides where each request goes and what
//! each reply means.
//!
//! `-P` is the depth each node sees on each of a client's connections: a connection sends its
//! requests as one batch of up to `-P` (closed loop: the next batch once the last one is answered;
//! open loop: due requests while fewer than `-P` are in flight there). A client draws keys until each
//! of its idle connections has a whole batch; a key drawn for a node whose pipeline is busy waits in
//! that node's queue for its next batch, so no key is wasted and `-n` stays exact. A request's slot is
//! read where the request is built (the template's key digits, or where the composer wrote the key),
//! and its bytes are built once, in the client's pool, and copied once, into the connection's send.
//!
//! A lost master: its slots' requests are retried with backoff and the slot map is re-read (over the
//! blocking control client) until a promoted replica (or another master) answers for them. When none
//! does within `--failover-timeout`, the shard gives up with a message naming the node and the
//! cluster's state; the run never hangs.

use crate::config::Config;
use crate::engine::connect;
use crate::engine::ring::{Driver, Layer, Socket};
use crate::engine::schedule::{DueQueue, LATE, Pacing};
use crate::engine::shared::{ShardPlan, ShardState, note_error};
use crate::net::ConnError;
use crate::net::control::ControlClient;
use crate::net::discovery::{self, DiscoveryError};
use crate::net::target::Target;
use crate::protocol::cluster::{self, DigitSlots, Redirect, SLOTS, SlotMap, UNASSIGNED};
use crate::protocol::resp::Value;
use crate::stats::cluster::{ClusterStats, Failover};
use crate::stats::{ShardStats, new_histogram};
use crate::workload::PipelineBuffer;
use crate::workload::compose::{Composer, KeyAt};
use crate::workload::keys::{KeyGen, bounded};
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cell::Cell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// MOVED / ASK redirects of one request before it counts as failed (a redirect loop).
const MAX_ATTEMPTS: u8 = 64;
/// First wait after TRYAGAIN, CLUSTERDOWN or a lost connection; doubles up to [`BACKOFF_MAX`].
const BACKOFF_START: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_millis(250);
/// At most one full topology refresh per executor in this window: a burst of MOVED replies (a slot
/// range changing owner) costs one CLUSTER SLOTS, not one per reply.
const REFRESH_GAP: Duration = Duration::from_millis(100);
/// How often the layer looks for a node that holds replies back longer than `--failover-timeout`.
const WATCH_EVERY: Duration = Duration::from_millis(10);
/// No ring connection yet from this client to this node.
const NO_CONN: usize = usize::MAX;
/// The ASKING command, sent before a request that follows an ASK redirect.
const ASKING: &[u8] = b"*1\r\n$6\r\nASKING\r\n";
/// How many replies ahead on a connection [`Req`] entries are fetched into the cache.
const PREFETCH_AHEAD: usize = 6;
/// Marks an ASKING reply in a connection's queue of expected replies (its reply is not counted).
const ASKING_MARK: u32 = u32::MAX;

/// The cluster as read at set-up, and how many connection slots each logical client has at first
/// (ring connection `client * stride + node`; a node that appears later gets a connection added).
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
    /// The answer's stamp (see [`Req`]; 0 before it): a request that waited since before it had its
    /// slot answered, so a later wait is a new one.
    answered_ms: u32,
}

/// One master's tally on this executor, indexed like the slot map's nodes: every completed reply is
/// recorded here once; the shard's histogram is their sum, made when the run ends.
struct NodeTally {
    completed: u64,
    hist: Histogram<u64>,
}

/// A mix command's figures on this executor, added to the shard's when the run ends.
struct PartTally {
    hist: Histogram<u64>,
    completed: u64,
    errors: u64,
}

/// Replies not yet recorded that share their node, their reference time and their arrival (a batch
/// answered in one received buffer): one histogram record for all of them.
#[derive(Clone, Copy)]
struct Group {
    node: usize,
    /// Stamps (see [`Req`]) of the reference time and the arrival, and the arrival.
    intended: u64,
    now_ns: u64,
    now: Instant,
    n: u64,
}

/// Per-request routing state; an entry of a client's request pool. Small and aligned (two to a cache
/// line, none across two): a reply's first touch of its entry is a miss when many are in flight.
/// Times are stamps: nanoseconds (milliseconds for `stalled`) since the layer's base, plus one; 0 is
/// "not yet".
#[derive(Debug, Clone, Copy, Default)]
#[repr(align(32))]
struct Req {
    /// When it was due (open loop) or first sent (closed loop): latency runs from here, across
    /// redirects and resends.
    intended: u64,
    /// Its first write to a server: service time (open loop) runs from here.
    first_sent: u64,
    /// When the request first had to wait for its slot; it fails after `--failover-timeout`.
    stalled: u32,
    slot: u16,
    /// A node named by the last MOVED/ASK, used instead of the slot map; [`UNASSIGNED`] for none.
    target: u16,
    /// The mix's command it is (0 without a mix).
    kind: u16,
    /// MOVED / ASK redirects followed.
    attempts: u8,
    /// Waits (lost connection, CLUSTERDOWN, TRYAGAIN, no owner) so far: the backoff grows with them.
    waits: u8,
    asking: bool,
    /// Whether it was written to a server at least once (else a give-up counts it as not sent).
    sent: bool,
    /// Open loop: it fell due, or waited, while a pipeline was full (a late send is then the
    /// pipeline's lateness, not the client's).
    full: bool,
}

const _: () = assert!(std::mem::size_of::<Req>() == 32);

/// Asks the CPU to bring pool entry `i` into the cache (nothing for [`ASKING_MARK`] or off x86_64).
#[inline]
fn prefetch(reqs: &[Req], i: u32) {
    #[cfg(target_arch = "x86_64")]
    if let Some(r) = reqs.get(i as usize) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch only hints the cache; it reads nothing and cannot fault, and the
        // pointer is to a live entry.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((r as *const Req).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (reqs, i);
}

/// A stamp of `t` in nanoseconds since `base`, plus one (0 is "not yet").
fn stamp(base: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(base).as_nanos() as u64 + 1
}

/// A stamp of `t` in milliseconds since `base`, plus one (0 is "not yet").
fn stamp_ms(base: Instant, t: Instant) -> u32 {
    (t.saturating_duration_since(base).as_millis() as u32).saturating_add(1)
}

/// One logical client: a connection per node, each with its own pipeline of up to `-P` requests.
/// Closed loop: a connection sends its next batch once the last one is answered. Open loop: each
/// request is drawn when due and sent at once when its node has fewer than `-P` in flight, else as
/// soon as one of them ends, its latency still running from its intended time.
struct Client {
    /// The request pool: every request the client holds (queued, in flight, or to retry).
    reqs: Vec<Req>,
    /// Entries of `reqs` not in use.
    free: Vec<u32>,
    /// Per node (indexed like the slot map's nodes): requests routed there and not yet sent, oldest
    /// first.
    queue: Vec<VecDeque<u32>>,
    /// Requests back from a redirect or a loss, to route again (after the backoff, if any); and those
    /// redirected or lost since (handled on the next pump).
    todo: Vec<u32>,
    retry: Vec<u32>,
    /// Fixed-layout requests, one per pool entry, patched in place; or composed requests, each in its
    /// own buffer of `max` bytes.
    pipe: PipelineBuffer,
    composed: Vec<Vec<u8>>,
    keys: KeyGen,
    rng: SmallRng,
    pacing: Option<Pacing>,
    /// Open loop: the next request's number in this client's schedule, and whether the next request
    /// fell due with the pool full (its lateness is then the pipelines', not the client's).
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
    /// Nodes that could not be reached in this pump.
    unreachable: Vec<bool>,
    /// Per node: the ring connection this client uses for it ([`NO_CONN`] before the first need).
    links: Vec<usize>,
    /// Requests in the pool that had to wait for their slot (lost master, CLUSTERDOWN, TRYAGAIN, no
    /// owner). Closed loop: while there are any the client draws no new keys, as a client whose
    /// request waits does not go on (a failover stalls it).
    stalled: u32,
}

impl Client {
    /// Gives pool entry `i` back: its request ended (completed or failed).
    fn release(&mut self, i: u32) {
        self.stalled -= u32::from(self.reqs[i as usize].stalled != 0);
        self.free.push(i);
    }
}

/// An executor's cluster layer over its ring.
struct ClusterLayer<'a> {
    plan: &'a ShardPlan,
    state: &'a ShardState,
    cfg: &'a Config,
    depth: usize,
    /// Per ring connection: its client and node.
    ends: Vec<(usize, usize)>,
    /// What request times are stamped from (see [`Req`]).
    base: Instant,
    map: SlotMap,
    /// The nodes that own slots: the ones a client fills batches for.
    masters: Vec<usize>,
    initial: Vec<String>,
    tallies: Vec<NodeTally>,
    parts: Vec<PartTally>,
    service: Option<Histogram<u64>>,
    /// Replies of the current group, and those recorded but not yet added to the shard's counters.
    group: Option<Group>,
    fresh: u64,
    fresh_lat_ns: u64,
    fresh_end: Option<Instant>,
    /// `--hdr-out`: the sum of the node histograms, made when a second's interval is cut.
    interval_total: Option<Histogram<u64>>,
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
    /// The connection of the last reply (a new one starts a run of prefetches).
    last_conn: usize,
    /// Per ring connection: the requests whose replies it owes, in send order ([`ASKING_MARK`] for ASKING).
    owed: Vec<VecDeque<u32>>,
    clients: Vec<Client>,
    composer: Option<Arc<Composer>>,
    /// The fixed-layout template's routing key bytes (`None`: a command without a key), and when the
    /// key's only varying part is one placeholder: its index and the slots of its numbers.
    key: Option<Range<usize>>,
    digits: Option<(usize, DigitSlots)>,
    /// The executor's position in the mix's cycle, shared by its clients.
    turn: Rc<Cell<u64>>,
    next_watch: Instant,
    /// Clients to pump on the next turn (a reply, a finished send, a loss, work left), each once.
    ready: Vec<usize>,
    pumping: Vec<usize>,
    queued: Vec<bool>,
    /// When clients are due without news (an open-loop request, a backoff's end), earliest first.
    schedule: DueQueue,
    /// `-k 0` (closed loop): connections whose batch is answered, to close before their next one.
    renew: Vec<usize>,
}

fn node_target(addr: SocketAddr) -> Target {
    Target::Tcp {
        host: addr.ip().to_string(),
        port: addr.port(),
        addr,
    }
}

/// `e` as it happened on a connection to node `name`: the ring words a connection's failures with
/// the seed's address, the layer knows which node it was.
fn at_node(e: &ConnError, name: &str) -> ConnError {
    let addr = name.to_string();
    match e {
        ConnError::Lost { reason, .. } => ConnError::Lost {
            addr,
            reason: reason.clone(),
        },
        ConnError::Tls { reason, .. } => ConnError::Tls {
            addr,
            reason: reason.clone(),
        },
        ConnError::Timeout { ms, .. } => ConnError::Timeout { addr, ms: *ms },
        other => other.clone(),
    }
}

fn cluster_to_conn(e: DiscoveryError) -> ConnError {
    match e {
        DiscoveryError::Conn(c) => c,
        other => ConnError::Protocol(other.to_string()),
    }
}

/// Reads the layout (blocking, over the control client) and opens every client's connection to every
/// master, all together on a ring ([`connect::open_all`]; `stopped` abandons them). Slot
/// `client * stride + node` holds client `client`'s connection to node `node`.
pub(crate) fn open(
    cfg: &Config,
    clients: usize,
    stopped: &dyn Fn() -> bool,
) -> Result<(Vec<Option<Socket>>, Option<Topology>), ConnError> {
    let map = discovery::discover(
        &cfg.target,
        cfg.tls.as_ref(),
        &cfg.setup,
        cfg.run.connect_timeout,
    )
    .map_err(cluster_to_conn)?;
    let stride = map.nodes.len();
    let masters = map.masters();
    let mut targets = Vec::new();
    for _ in 0..clients {
        for n in 0..stride {
            if masters.contains(&(n as u16)) {
                targets.push(node_target(map.nodes[n].addr));
            }
        }
    }
    let mut opened = connect::open_all(cfg, targets, stopped)?.into_iter();
    let mut socks = Vec::with_capacity(clients * stride);
    for _ in 0..clients {
        for n in 0..stride {
            socks.push(if masters.contains(&(n as u16)) {
                opened.next().flatten()
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
    let masters = masters_of(&map);
    // Room for a batch in flight and one waiting on every master, plus one more batch: what is in
    // flight and every node's partial batch never fill it, so a closed-loop batch always completes.
    let pool = (depth * (2 * masters.len().max(1) + 1)).min(ASKING_MARK as usize - 1);
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
                reqs: vec![Req::default(); pool],
                free: (0..pool as u32).rev().collect(),
                queue: (0..stride).map(|_| VecDeque::with_capacity(pool)).collect(),
                todo: Vec::with_capacity(pool),
                retry: Vec::with_capacity(pool),
                pipe: PipelineBuffer::new(
                    &plan.test.template,
                    if composer.is_some() { 0 } else { pool },
                ),
                composed: if composer.is_some() {
                    (0..pool).map(|_| Vec::with_capacity(max)).collect()
                } else {
                    Vec::new()
                },
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
                unreachable: vec![false; stride],
                links: (i * stride..(i + 1) * stride).collect(),
                stalled: 0,
            }
        })
        .collect();
    let initial = map
        .masters()
        .iter()
        .map(|&i| map.nodes[i as usize].name.clone())
        .collect();
    let (parts, service) = {
        let st = state.stats.borrow();
        let parts = st
            .parts
            .iter()
            .map(|p| PartTally {
                hist: new_histogram_like(&p.hist),
                completed: 0,
                errors: 0,
            })
            .collect();
        (parts, st.service.as_ref().map(new_histogram_like))
    };
    let interval_total = state
        .intervals
        .borrow()
        .is_some()
        .then(|| new_histogram(cfg.run.precision));
    Box::new(ClusterLayer {
        plan,
        state,
        cfg,
        depth,
        ends: (0..plan.clients)
            .flat_map(|c| (0..stride).map(move |n| (c, n)))
            .collect(),
        base: began.min(plan.epoch),
        map,
        masters,
        initial,
        tallies: Vec::new(),
        parts,
        service,
        group: None,
        fresh: 0,
        fresh_lat_ns: 0,
        fresh_end: None,
        interval_total,
        moved: 0,
        ask: 0,
        retries: 0,
        last_refresh: None,
        per_second: Vec::new(),
        lost: Vec::new(),
        watching: false,
        abort: None,
        last_conn: usize::MAX,
        owed: (0..plan.clients * stride)
            .map(|_| VecDeque::with_capacity(depth * 2))
            .collect(),
        clients,
        key: plan.test.template.key_range(),
        digits: plan.test.template.key_digits().and_then(|(index, at)| {
            let t = &plan.test.template;
            let key = &t.bytes()[t.key_range()?];
            Some((index, DigitSlots::new(key, at)?))
        }),
        composer,
        turn: Rc::new(Cell::new(0)),
        next_watch: began,
        ready: (0..plan.clients).collect(),
        pumping: Vec::with_capacity(plan.clients),
        queued: vec![true; plan.clients],
        schedule: DueQueue::new(plan.clients),
        renew: Vec::new(),
    })
}

/// The nodes of `map` that own slots.
fn masters_of(map: &SlotMap) -> Vec<usize> {
    map.masters().into_iter().map(usize::from).collect()
}

/// An empty histogram with `h`'s bounds and precision.
fn new_histogram_like(h: &Histogram<u64>) -> Histogram<u64> {
    let mut e = h.clone();
    e.reset();
    e
}

impl ClusterLayer<'_> {
    /// Gives every client a queue (and a place for a connection) for each node of the map: called
    /// when the map names a node it did not know (a refresh, a redirect).
    fn grow_nodes(&mut self) {
        let n = self.map.nodes.len();
        for cl in self.clients.iter_mut().filter(|cl| cl.queue.len() < n) {
            let room = cl.reqs.len();
            cl.queue.resize_with(n, || VecDeque::with_capacity(room));
            cl.unreachable.resize(n, false);
            cl.links.resize(n, NO_CONN);
        }
    }

    /// Client `c`'s ring connection to node `n`, added to the ring when it has none yet (a node that
    /// appeared during the run).
    fn link(&mut self, d: &mut Driver<'_>, c: usize, n: usize) -> usize {
        let j = self.clients[c].links[n];
        if j != NO_CONN {
            return j;
        }
        let j = d.add_connection();
        debug_assert_eq!(j, self.ends.len());
        self.ends.push((c, n));
        self.owed.push(VecDeque::with_capacity(self.depth * 2));
        self.clients[c].links[n] = j;
        j
    }

    /// The ring connections client `c` has (one per node it has needed).
    fn conns_of(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        self.clients[c]
            .links
            .iter()
            .copied()
            .filter(|&j| j != NO_CONN)
    }

    /// Puts client `c` on the list of the next pump.
    fn mark(&mut self, c: usize) {
        if !self.queued[c] {
            self.queued[c] = true;
            self.ready.push(c);
        }
    }

    /// Puts client `c` on the executor's schedule for `at` (kept if it is there for earlier).
    fn schedule(&mut self, c: usize, at: Instant) {
        self.schedule.set_earliest(c, at);
    }

    /// Records the reply from node `node` that arrived at `now` for request `r` (an error reply when
    /// `error`): latency from its intended time, service time from its first send, its mix command's
    /// figures. Replies sharing node, reference time and arrival are recorded together.
    /// `now_ns` is `now`'s stamp.
    fn complete(&mut self, node: usize, r: &Req, error: bool, now: Instant, now_ns: u64) {
        let intended = if r.intended == 0 { now_ns } else { r.intended };
        match self.group.as_mut() {
            Some(g) if g.node == node && g.intended == intended && g.now_ns == now_ns => g.n += 1,
            _ => {
                self.flush_group();
                self.group = Some(Group {
                    node,
                    intended,
                    now_ns,
                    now,
                    n: 1,
                });
            }
        }
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

    /// Records the current group into its node's histogram.
    fn flush_group(&mut self) {
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
            rec.cut_until(g.now, total);
        }
        while self.tallies.len() <= g.node {
            self.tallies.push(NodeTally {
                completed: 0,
                hist: new_histogram(self.cfg.run.precision),
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
    fn publish_into(&mut self, st: &mut ShardStats) {
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

    /// [`Self::publish_into`] the shard's figures: once per received buffer, not per reply.
    fn publish(&mut self) {
        if self.group.is_none() && self.fresh == 0 {
            return;
        }
        let state = self.state;
        self.publish_into(&mut state.stats.borrow_mut());
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
                self.masters = masters_of(&self.map);
                self.grow_nodes();
                break;
            }
        }
        self.last_refresh = Some(Instant::now());
    }

    /// Seconds since the run's epoch (the same clock on every executor).
    fn seconds(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.plan.epoch).as_secs_f64()
    }

    /// Notes that a connection to `node` was lost or refused, for a node that owns slots (what follows
    /// is a failover, or a give-up): once per loss, so a node lost again after another node answered
    /// for its slots (it became a master again, and failed again) is listed again.
    fn note_lost(&mut self, node: usize, now: Instant) {
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
    fn give_up(&mut self, slot: u16, silent: Option<usize>) {
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

    /// Ends client `c`: what it still holds (to send, to retry, or waiting for a reply) counts as
    /// failed (sent at least once) or not sent, and its connections are closed.
    fn finish_client(&mut self, d: &mut Driver<'_>, c: usize) {
        let links = std::mem::take(&mut self.clients[c].links);
        let cl = &mut self.clients[c];
        cl.finished = true;
        let mut sent = 0u64;
        let mut unsent = 0u64;
        let reqs = &cl.reqs;
        let mut count = |i: u32| {
            if i != ASKING_MARK {
                if reqs[i as usize].sent {
                    sent += 1;
                } else {
                    unsent += 1;
                }
            }
        };
        cl.todo.drain(..).for_each(&mut count);
        cl.retry.drain(..).for_each(&mut count);
        for q in cl.queue.iter_mut() {
            q.drain(..).for_each(&mut count);
        }
        for &j in links.iter().filter(|&&j| j != NO_CONN) {
            self.owed[j].drain(..).for_each(&mut count);
            if d.is_live(j) || d.is_opening(j) {
                d.shut(j);
            }
        }
        self.clients[c].links = links;
        let mut st = self.state.stats.borrow_mut();
        if self.plan.control.stopped() || self.state.deadline.is_some() {
            // Stopped by a signal or the end of --duration: what was sent is in flight; what was
            // drawn but not sent counts as not sent after a signal, and not at all under --duration.
            st.in_flight += sent;
            if self.state.deadline.is_none() {
                st.not_sent += unsent;
            }
        } else {
            st.failed += sent;
            st.not_sent += unsent;
        }
    }

    /// True when client `c` has nothing in flight on any of its connections.
    fn quiet(&self, d: &Driver<'_>, c: usize) -> bool {
        self.conns_of(c)
            .all(|j| self.owed[j].is_empty() && !d.is_sending(j))
    }

    /// True when client `c` holds no request (queued, to route or to retry).
    fn empty(&self, c: usize) -> bool {
        let cl = &self.clients[c];
        cl.todo.is_empty() && cl.retry.is_empty() && cl.queue.iter().all(VecDeque::is_empty)
    }

    /// Builds request `i` of client `c` in its pool entry and returns its node (`None`: it has no
    /// owner now and waits on the retry list). Its slot comes from where the key was written.
    fn build(&mut self, c: usize, i: usize) -> Option<usize> {
        let cl = &mut self.clients[c];
        let (slot, kind) = match self.composer.as_deref() {
            Some(comp) => {
                let out = &mut cl.composed[i];
                out.clear();
                let kind = comp.write_request(out, &mut cl.keys, &mut cl.rng, &self.turn);
                let slot = match comp.key(kind) {
                    KeyAt::Fixed(r) => Some(cluster::slot_of(&out[r.clone()])),
                    KeyAt::Varies => cluster::request_key(out).map(cluster::slot_of),
                    KeyAt::Absent => None,
                };
                (slot, kind as u16)
            }
            None => {
                let (keys, rng) = (&mut cl.keys, &mut cl.rng);
                match &self.digits {
                    // The key's slot from the number its digits were patched with.
                    Some((index, slots)) => {
                        let (mut k, mut key) = (0, 0);
                        cl.pipe.fill_request(i, || {
                            let v = keys.next(rng);
                            if k == *index {
                                key = v;
                            }
                            k += 1;
                            v
                        });
                        (Some(slots.slot(key)), 0)
                    }
                    None => {
                        let bytes = cl.pipe.fill_request(i, || keys.next(rng));
                        (
                            self.key
                                .as_ref()
                                .map(|r| cluster::slot_of(&bytes[r.clone()])),
                            0,
                        )
                    }
                }
            }
        };
        // A command without a key may go anywhere: spread such requests over the masters.
        let slot = slot.unwrap_or_else(|| bounded(cl.rng.next_u64(), SLOTS as u64) as u16);
        cl.reqs[i] = Req {
            slot,
            kind,
            target: UNASSIGNED,
            ..Req::default()
        };
        self.enqueue(c, i as u32, false)
    }

    /// Routes request `i` of client `c` to the node a redirect named, or else to its slot's owner: to
    /// the back of that node's queue (its front with `first`). Returns the node, or `None` when the
    /// slot has no owner now (the request waits on the retry list).
    fn enqueue(&mut self, c: usize, i: u32, first: bool) -> Option<usize> {
        let r = &self.clients[c].reqs[i as usize];
        let node = if r.target != UNASSIGNED {
            r.target
        } else {
            self.map.owner[r.slot as usize]
        } as usize;
        if node < self.map.nodes.len() && node >= self.clients[c].queue.len() {
            // A node a redirect just named: every client gets room for it.
            self.grow_nodes();
        }
        let cl = &mut self.clients[c];
        if node >= cl.queue.len() {
            // No owner (or a node the map does not hold): it waits for its slot.
            cl.retry.push(i);
            cl.wait = true;
            return None;
        }
        if first {
            cl.queue[node].push_front(i);
        } else {
            cl.queue[node].push_back(i);
        }
        Some(node)
    }

    /// True when client `c`'s connection to node `n` can take a whole batch now (or once it is
    /// opened): closed loop, its last batch is answered.
    fn idle(&self, d: &Driver<'_>, c: usize, n: usize) -> bool {
        let j = self.clients[c].links[n];
        j == NO_CONN
            || self.owed[j].is_empty() && !d.is_sending(j) && (d.is_live(j) || d.is_closed(j))
    }

    /// Closed loop: draws requests until every idle connection of client `c` has a whole batch
    /// queued (or the pool is full, or the share is done). Keys that fall to busy nodes wait in their
    /// queues.
    fn top_up(&mut self, d: &Driver<'_>, c: usize, now: Instant) {
        if self.clients[c].done {
            return;
        }
        if self.state.deadline.is_some_and(|t| now >= t) {
            // --duration is over: requests drawn but never sent are dropped (nothing counts them).
            let cl = &mut self.clients[c];
            cl.done = true;
            let (reqs, free, stalled) = (&cl.reqs, &mut cl.free, &mut cl.stalled);
            for q in cl.queue.iter_mut() {
                q.retain(|&i| {
                    let r = &reqs[i as usize];
                    if !r.sent {
                        *stalled -= u32::from(r.stalled != 0);
                        free.push(i);
                    }
                    r.sent
                });
            }
            return;
        }
        if self.clients[c].stalled > 0 {
            return;
        }
        let depth = self.depth;
        let mut short = if self.masters.is_empty() { depth } else { 0 };
        for &n in &self.masters {
            if self.idle(d, c, n) {
                short += depth.saturating_sub(self.clients[c].queue[n].len());
            }
        }
        while short > 0 {
            let Some(i) = self.clients[c].free.pop() else {
                break;
            };
            if self.state.claim(1) == 0 {
                let cl = &mut self.clients[c];
                cl.free.push(i);
                cl.done = true;
                break;
            }
            match self.build(c, i as usize) {
                Some(n)
                    if self.clients[c].queue[n].len() <= depth
                        && self.masters.contains(&n)
                        && self.idle(d, c, n) =>
                {
                    short -= 1;
                }
                None if self.masters.is_empty() => short -= 1,
                _ => {}
            }
        }
    }

    /// Open loop: takes every request of client `c` that is due, while its pool has room.
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
            let Some(i) = cl.free.pop() else {
                // No room: it goes as soon as a request in flight ends.
                if now > at + LATE {
                    cl.was_full = true;
                }
                break;
            };
            if self.state.claim(1) == 0 {
                cl.free.push(i);
                cl.done = true;
                break;
            }
            let full = std::mem::take(&mut cl.was_full);
            cl.seq += 1;
            self.build(c, i as usize);
            let r = &mut self.clients[c].reqs[i as usize];
            r.intended = stamp(self.base, at);
            r.full = full;
        }
    }

    /// Sends each of client `c`'s connections its batch: up to `-P` queued requests (closed loop:
    /// once its last batch is answered; open loop: while it has fewer than `-P` in flight). A request
    /// whose connection is still sending or draining waits for that connection's news.
    fn send(&mut self, d: &mut Driver<'_>, c: usize, now: Instant) {
        let depth = self.depth;
        let paced = self.clients[c].pacing.is_some();
        let composed = self.composer.is_some();
        let now_ns = stamp(self.base, now);
        let late_ns = LATE.as_nanos() as u64;
        let (mut late_full, mut late_free) = (0u64, 0u64);
        // Partial batches go at the end of the share, while a request waits for its slot, and when
        // the pool is full with nothing in flight to free it (a safety valve: what is in flight and
        // one partial batch per master cannot fill it).
        let starved =
            self.clients[c].free.is_empty() && self.conns_of(c).all(|j| self.owed[j].is_empty());
        let cl = &mut self.clients[c];
        cl.unreachable.fill(false);
        let whole_only = !paced && !cl.done && !starved && cl.stalled == 0;
        for n in 0..self.clients[c].queue.len() {
            if self.clients[c].queue[n].is_empty() {
                continue;
            }
            let j = self.link(d, c, n);
            if !self.clients[c].unreachable[n] && !d.is_live(j) {
                if !d.is_closed(j) {
                    // The last connection there is still draining: its end wakes the client.
                    continue;
                }
                // Connect lazily to a node this client has no connection to (a new owner, or after a
                // loss), on the ring: its opening's end wakes the client (or fails like a loss).
                let addr = self.map.nodes[n].addr;
                match d.open_async(j, &node_target(addr)) {
                    Ok(()) => continue,
                    Err(e) => {
                        self.state
                            .stats
                            .borrow_mut()
                            .note_conn_error(&e.to_string());
                        self.clients[c].unreachable[n] = true;
                        self.note_lost(n, now);
                    }
                }
            }
            if self.clients[c].unreachable[n] {
                let cl = &mut self.clients[c];
                let q = &mut cl.queue[n];
                cl.retry.extend(q.drain(..));
                cl.lost = true;
                continue;
            }
            if d.is_sending(j) {
                continue;
            }
            let owed = self.owed[j].len();
            let room = if paced {
                depth.saturating_sub(owed)
            } else if owed == 0 {
                depth
            } else {
                0
            };
            let Client {
                reqs,
                queue,
                pipe,
                composed: bufs,
                ..
            } = &mut self.clients[c];
            let q = &mut queue[n];
            if whole_only && q.len() < depth && !q.iter().any(|&i| reqs[i as usize].sent) {
                // Closed loop: a batch leaves whole. More keys for this node come as the others'
                // replies free the pool (it always holds a batch beyond what is in flight and every
                // node's partial batch); the last requests of the share leave as they are, and so do
                // redirected ones.
                continue;
            }
            let k = room.min(q.len());
            if k > 0 {
                let asks = q
                    .iter()
                    .take(k)
                    .filter(|&&i| reqs[i as usize].asking)
                    .count();
                let out = d.out(j, k + asks);
                let owed = &mut self.owed[j];
                for i in q.drain(..k) {
                    let r = &mut reqs[i as usize];
                    if r.asking {
                        out.extend_from_slice(ASKING);
                        owed.push_back(ASKING_MARK);
                    }
                    out.extend_from_slice(if composed {
                        &bufs[i as usize]
                    } else {
                        pipe.request(i as usize)
                    });
                    owed.push_back(i);
                    r.sent = true;
                    if r.first_sent == 0 {
                        r.first_sent = now_ns;
                        if r.intended == 0 {
                            r.intended = now_ns;
                        } else if now_ns.saturating_sub(r.intended) > late_ns {
                            if r.full {
                                late_full += 1;
                            } else {
                                late_free += 1;
                            }
                        }
                    }
                }
            }
            if paced {
                // What is left waits for this node's pipeline.
                for &i in q.iter() {
                    reqs[i as usize].full = true;
                }
            }
            if k == 0 {
                continue;
            }
            if let Err(e) = d.send(j, now) {
                let e = at_node(&e, &self.map.nodes[n].name);
                self.state
                    .stats
                    .borrow_mut()
                    .note_conn_error(&e.to_string());
                let owed = self.owed[j].drain(..).filter(|&i| i != ASKING_MARK);
                let cl = &mut self.clients[c];
                cl.retry.extend(owed);
                cl.lost = true;
                self.note_lost(n, now);
            }
        }
        if late_full + late_free > 0 {
            let mut st = self.state.stats.borrow_mut();
            st.late_full += late_full;
            st.late_free += late_free;
        }
    }

    /// Moves client `c`'s redirected and lost requests to its list to route again; false when the
    /// shard gave up (a slot without an answering master for `--failover-timeout`).
    fn take_retries(&mut self, c: usize, now: Instant) -> bool {
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
                self.schedule(c, w);
                return;
            }
            self.clients[c].wake_at = None;
        }
        self.pump_work(d, c, now);
        let cl = &self.clients[c];
        if cl.finished {
            return;
        }
        if let Some(w) = cl.wake_at {
            self.schedule(c, w);
        } else if !cl.retry.is_empty() {
            // Requests that came back while sending (a node out of reach, a slot without owner):
            // again on the next turn.
            self.mark(c);
        } else if let Some(p) = cl.pacing
            && !cl.done
            && !cl.free.is_empty()
        {
            let at = p.intended(cl.seq);
            self.schedule(c, at);
        }
    }

    fn pump_work(&mut self, d: &mut Driver<'_>, c: usize, now: Instant) {
        let cl = &self.clients[c];
        if !cl.retry.is_empty() || cl.lost || cl.wait {
            if !self.take_retries(c, now) {
                self.finish_client(d, c);
                return;
            }
            if self.clients[c].wake_at.is_some() {
                return;
            }
        }
        // Requests back from a redirect or a loss go first on their nodes.
        while let Some(i) = self.clients[c].todo.pop() {
            self.enqueue(c, i, true);
        }
        if self.clients[c].pacing.is_some() {
            self.admit(c, now);
        } else {
            self.top_up(d, c, now);
        }
        if self.clients[c].done && self.empty(c) && self.quiet(d, c) {
            self.finish_client(d, c);
            return;
        }
        self.send(d, c, now);
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

impl Layer for ClusterLayer<'_> {
    fn on_reply(&mut self, conn: usize, error: bool, raw: &[u8], now: Instant) {
        let (c, node) = self.ends[conn];
        self.mark(c);
        let Some(i) = self.owed[conn].pop_front() else {
            return;
        };
        // The entries of the replies to come on this connection are fetched ahead: the first reply
        // of a run asks for the next few, each later one for the one that many places on.
        let owed = &self.owed[conn];
        let reqs = &self.clients[c].reqs;
        if conn != self.last_conn {
            self.last_conn = conn;
            owed.iter()
                .take(PREFETCH_AHEAD)
                .for_each(|&k| prefetch(reqs, k));
        } else if let Some(&k) = owed.get(PREFETCH_AHEAD - 1) {
            prefetch(reqs, k);
        }
        if self.owed[conn].is_empty() && !self.cfg.run.keepalive && self.clients[c].pacing.is_none()
        {
            // `-k 0`: a new connection for each batch, as without --cluster.
            self.renew.push(conn);
        }
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
                    r.attempts = r.attempts.saturating_add(1);
                    cl.moved = true;
                    cl.retry.push(i);
                    return;
                }
                Some(Redirect::Ask { node, .. }) => {
                    self.ask += 1;
                    let idx = self.map.node_for(node, &discovery::resolve_node);
                    r.target = idx.unwrap_or(UNASSIGNED);
                    r.asking = idx.is_some();
                    r.attempts = r.attempts.saturating_add(1);
                    cl.retry.push(i);
                    return;
                }
                Some(Redirect::TryAgain | Redirect::ClusterDown) => {
                    self.retries += 1;
                    r.target = UNASSIGNED;
                    r.asking = false;
                    if r.stalled == 0 {
                        r.stalled = stamp_ms(self.base, now);
                        cl.stalled += 1;
                    }
                    cl.wait = true;
                    cl.retry.push(i);
                    return;
                }
                None => note_error(self.state, self.plan, raw),
            }
        }
        let r = *r;
        cl.release(i);
        self.note_answer(node, r.slot, now);
        self.complete(node, &r, error, now, stamp(self.base, now));
    }

    fn on_lost(&mut self, conn: usize, e: &ConnError, now: Instant) {
        let (c, node) = self.ends[conn];
        self.mark(c);
        let cl = &mut self.clients[c];
        let owed = self.owed[conn].drain(..).filter(|&i| i != ASKING_MARK);
        let mut st = self.state.stats.borrow_mut();
        st.note_conn_error(&at_node(e, &self.map.nodes[node].name).to_string());
        if matches!(e, ConnError::Timeout { .. }) {
            // A reply late beyond --timeout: its request fails, it is not sent again.
            let mut n = 0;
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
        cl.lost = true;
        self.note_lost(node, now);
    }

    fn on_open_failed(&mut self, conn: usize, e: &ConnError, now: Instant) {
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
        cl.lost = true;
        self.note_lost(node, now);
    }

    fn wake(&mut self, conn: usize) {
        // Called after each received buffer (and each finished send): its replies go into the
        // shard's counters together.
        self.publish();
        self.mark(self.ends[conn].0);
    }

    fn pump(&mut self, d: &mut Driver<'_>, now: Instant) {
        self.publish();
        self.watch(d, now);
        if !self.renew.is_empty() {
            let owed = &self.owed;
            // A connection whose send is still in the kernel closes once it is done.
            self.renew.retain(|&j| {
                if !d.is_live(j) || !owed[j].is_empty() {
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
        self.clients.iter().all(|c| c.finished)
    }

    fn finish(&mut self, stats: &mut ShardStats) {
        // A signal ended the loop before these clients finished: what they had sent is in flight,
        // what they had drawn is not sent (under --duration it was never requested).
        for c in 0..self.clients.len() {
            let cl = &mut self.clients[c];
            if cl.finished {
                continue;
            }
            cl.finished = true;
            let (reqs, owed) = (&cl.reqs, &self.owed);
            let (mut sent, mut unsent) = (0u64, 0u64);
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
            for &i in held {
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
        self.publish_into(stats);
        if let Some(why) = &self.abort
            && !stats.conn_errors.contains(why)
        {
            // Why the run ended comes first, whatever else was noted (the list is capped).
            stats.conn_errors.insert(0, why.clone());
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
        if let (Some(mine), Some(svc)) = (&self.service, stats.service.as_mut()) {
            svc.add(mine).expect("histograms share their bounds");
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
