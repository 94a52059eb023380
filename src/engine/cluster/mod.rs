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
//! and its bytes are built once and copied once, into the connection's send: from the client's pool,
//! or for a lean client (`fresh.rs`: closed loop, a fixed layout) from the node's stage, where it
//! waits as wire bytes and holds no pool entry until something other than its reply happens to it.
//!
//! A lost master: its slots' requests are retried with backoff and the slot map is re-read (a
//! `CLUSTER SLOTS` on a ring connection of its own, `query.rs`) until a promoted replica (or another master) answers for them. When none
//! does within `--failover-timeout`, the shard gives up with a message naming the node and the
//! cluster's state; the run never hangs.

mod failover;
mod figures;
mod fresh;
mod layer;
mod query;
mod questions;
mod reply;
mod route;
mod send;
mod stage;

use crate::config::{EngineSettings, ReadFrom};
use crate::engine::connect;
use crate::engine::ring::{Driver, Layer, Socket};
use crate::engine::schedule::{DueQueue, Pacing};
use crate::engine::shared::{ShardPlan, ShardState};
use crate::net::ConnError;
use crate::net::discovery::{self, DiscoveryError};
use crate::net::target::Target;
use crate::protocol::cluster::{self, DigitSlots, SlotMap};
use crate::protocol::commands;
use crate::protocol::owners::Owners;
use crate::stats::new_histogram;
use crate::workload::PipelineBuffer;
use crate::workload::compose::Composer;
use crate::workload::keys::{Cursors, KeyGen};
use crate::workload::replay::Replay;
use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand::rngs::SmallRng;
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
/// Tags an entry of a connection's expected replies: a closed-loop request first sent in that
/// connection's last send and never made to wait for its slot. Its reply is recorded from the send's
/// time without reading its pool entry (a cache miss when many requests are in flight).
const FRESH: u32 = 1 << 31;

/// An entry of a connection's expected replies as a pool index (or [`ASKING_MARK`]).
#[inline]
fn untag(e: u32) -> u32 {
    if e == ASKING_MARK { e } else { e & !FRESH }
}

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
    /// A node named by the last MOVED/ASK, used instead of the slot map; [`cluster::UNASSIGNED`] for none.
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
    if let Some(r) = reqs.get(i as usize) {
        crate::sys::os::prefetch(r, 1);
    }
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
    /// `--replay`: how many commands of this client's share have been built.
    replayed: usize,
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
    /// `--rfr`: the client's count of reads, which turns them over a slot's replicas.
    turn: u32,
    /// A lean client ([`fresh`]): per node, the requests drawn for it and not yet sent, as bytes.
    stage: Vec<stage::Stage>,
    /// Staged requests and those in flight: each holds room in the pool without an entry of it.
    fresh_held: usize,
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
    cfg: &'a EngineSettings,
    depth: usize,
    /// Per ring connection: its client and node.
    ends: Vec<(usize, usize)>,
    /// What request times are stamped from (see [`Req`]).
    base: Instant,
    map: SlotMap,
    /// `map`'s owners as ranges (rebuilt whenever the map changes).
    owners: Owners,
    /// The nodes requests go to, the ones a client fills batches for: the masters (the nodes that own
    /// slots), and under `--rfr` the replicas that take reads.
    masters: Vec<usize>,
    /// `--rfr`, and per kind of request (the mix's command; 0 without a mix) whether it only reads.
    read_from: ReadFrom,
    reads: Vec<bool>,
    /// Per kind of request, whether it is a GET, and the nil replies (misses) its requests got.
    gets: Vec<bool>,
    misses: Vec<u64>,
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
    /// `CLUSTER SLOTS` re-reads and a give-up's `CLUSTER INFO`, asked on the ring.
    queries: questions::Queries,
    /// Replies per second of the test (from the run's epoch, shared by every executor).
    per_second: Vec<u64>,
    lost: Vec<LostNode>,
    /// True while a lost master's slots have not been answered by another node.
    watching: bool,
    /// Set when the shard gave up (a slot without an answering master for `--failover-timeout`): what
    /// was silent (the message is [`ClusterLayer::give_up_message`]).
    abort: Option<String>,
    /// The connection of the last reply (a new one starts a run of prefetches).
    last_conn: usize,
    /// Per ring connection: the requests whose replies it owes, in send order ([`ASKING_MARK`] for
    /// ASKING, [`FRESH`] tagging), and the stamp of its last send.
    owed: Vec<VecDeque<u32>>,
    sent_ns: Vec<u64>,
    /// Per ring connection: its staged requests in flight, owed after the entries of `owed`.
    flight: Vec<stage::Flight>,
    /// Closed loop with a fixed layout whose key's slot is known from its numbers: requests are
    /// staged as bytes per node ([`fresh`]); `None` for the pool alone.
    lean: Option<stage::LeanKey>,
    /// A lean request's one placeholder, when it is the key's ([`stage::OneKey`]).
    one: Option<stage::OneKey>,
    /// Numbers drawn for one staged request.
    scratch: Vec<u64>,
    clients: Vec<Client>,
    composer: Option<Arc<Composer>>,
    /// `--replay`: the capture; client `c` sends share `plan.first_client + c` of it.
    replay: Option<Arc<Replay>>,
    /// The fixed-layout template's routing key bytes (`None`: a command without a key), and when the
    /// key's only varying part is one placeholder: its index and the slots of its numbers.
    key: Option<Range<usize>>,
    digits: Option<(usize, DigitSlots)>,
    /// The command holds valkey-benchmark's `{tag}`: each composed request gets a hash tag of its own.
    tagged: bool,
    /// The executor's position in the mix's cycle, shared by its clients.
    turn: Rc<Cell<u64>>,
    next_watch: Instant,
    /// Clients to pump on the next turn (a reply, a finished send, a loss, work left), each once.
    ready: Vec<usize>,
    pumping: Vec<usize>,
    queued: Vec<bool>,
    /// Closed loop, within one top-up: per node, whether the client's connection there takes a whole
    /// batch (a master with its last batch answered).
    idle_now: Vec<bool>,
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
    cfg: &EngineSettings,
    clients: usize,
    stopped: &dyn Fn() -> bool,
) -> Result<(Vec<Option<Socket>>, Option<Topology>), ConnError> {
    let map = discovery::discover(
        &cfg.target,
        cfg.tls.as_ref(),
        &cfg.setup,
        &crate::net::control::Wait::new(cfg.connect.connect_timeout),
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
    let depth = cfg.load.pipeline;
    let read_from = cfg.connect.read_from;
    let shape = Shape::of(plan, &map, &composer, began);
    let cursor = plan.cursors();
    let clients = (0..plan.clients)
        .map(|i| Client::new(plan, &shape, stride, &cursor, began, i))
        .collect();
    let Shape {
        reads,
        gets,
        masters,
        digits,
        lean,
        one,
        ..
    } = shape;
    let misses = vec![0; gets.len()];
    let replay = plan.test.replay.clone();
    let initial = map
        .masters()
        .iter()
        .map(|&i| map.nodes[i as usize].name.clone())
        .collect();
    let (parts, service, interval_total) = empty_tallies(state, cfg.record.precision);
    Box::new(ClusterLayer {
        plan,
        state,
        cfg,
        depth,
        ends: (0..plan.clients)
            .flat_map(|c| (0..stride).map(move |n| (c, n)))
            .collect(),
        base: began.min(plan.epoch),
        owners: Owners::new(&map.owner),
        map,
        masters,
        read_from,
        reads,
        gets,
        misses,
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
        queries: questions::Queries::new(),
        per_second: Vec::new(),
        lost: Vec::new(),
        watching: false,
        abort: None,
        last_conn: usize::MAX,
        owed: (0..plan.clients * stride)
            .map(|_| VecDeque::with_capacity(depth * 2))
            .collect(),
        sent_ns: vec![0; plan.clients * stride],
        flight: (0..plan.clients * stride)
            .map(|_| stage::Flight::default())
            .collect(),
        lean,
        one,
        scratch: Vec::new(),
        clients,
        key: plan.test.template.key_range(),
        digits,
        tagged: composer
            .as_ref()
            .is_some_and(|c| c.literals_contain(cluster::SLOT_TAG)),
        composer,
        replay,
        turn: Rc::new(Cell::new(plan.first_request)),
        next_watch: began,
        ready: (0..plan.clients).collect(),
        pumping: Vec::with_capacity(plan.clients),
        queued: vec![true; plan.clients],
        idle_now: Vec::new(),
        schedule: DueQueue::new(plan.clients),
        renew: Vec::new(),
    })
}

/// What a shard's requests are like, read once at set-up from its plan, its composer and the map.
struct Shape {
    /// Per kind of request (the mix's command; 0 without a mix): whether it only reads, and whether
    /// it is a GET.
    reads: Vec<bool>,
    gets: Vec<bool>,
    /// The nodes requests go to (see [`serving`]).
    masters: Vec<usize>,
    /// Entries of each client's request pool.
    pool: usize,
    /// Requests are composed (or replayed), each into its own buffer of `max` bytes.
    composed: bool,
    max: usize,
    /// See [`ClusterLayer`]'s fields of the same names.
    digits: Option<(usize, DigitSlots)>,
    lean: Option<stage::LeanKey>,
    one: Option<stage::OneKey>,
}

impl Shape {
    fn of(
        plan: &ShardPlan,
        map: &SlotMap,
        composer: &Option<Arc<Composer>>,
        began: Instant,
    ) -> Shape {
        let depth = plan.cfg.load.pipeline;
        let (reads, gets) = kinds(plan, composer);
        let masters = serving(map, plan.cfg.connect.read_from, &reads);
        // Room for a batch in flight and one waiting on every master, plus one more batch: what is in
        // flight and every node's partial batch never fill it, so a closed-loop batch always completes.
        let pool = (depth * (2 * masters.len().max(1) + 1)).min(FRESH as usize - 1);
        let replay = &plan.test.replay;
        let max = match (composer, replay) {
            (_, Some(r)) => r.max_request_len(),
            (Some(c), None) => c.max_request_len(),
            (None, None) => 0,
        };
        let composed = composer.is_some() || replay.is_some();
        let digits = plan.test.template.key_digits().and_then(|(index, at)| {
            let t = &plan.test.template;
            let key = &t.bytes()[t.key_range()?];
            Some((index, DigitSlots::new(key, at)?))
        });
        let paced = plan.pacing(began, 0).is_some();
        let lean = if paced || composed || plan.clients == 0 {
            None
        } else {
            stage::LeanKey::of(&plan.test.template, digits.is_some())
        };
        let one =
            lean.and_then(|_| stage::OneKey::of(&plan.test.template, digits.as_ref().map(|d| d.0)));
        Shape {
            reads,
            gets,
            masters,
            pool,
            composed,
            max,
            digits,
            lean,
            one,
        }
    }
}

/// Per kind of request (a replay's command names, the mix's commands, or the test's one command):
/// whether it only reads, and whether it is a GET.
fn kinds(plan: &ShardPlan, composer: &Option<Arc<Composer>>) -> (Vec<bool>, Vec<bool>) {
    let reads: Vec<bool> = match (&plan.test.replay, composer) {
        // A replay's kinds are its command names.
        (Some(r), _) => r.names().iter().map(|n| commands::reads_only(n)).collect(),
        (None, Some(comp)) => comp
            .variants()
            .iter()
            .map(|v| commands::reads_only(&v.command))
            .collect(),
        (None, None) => vec![commands::reads_only(&plan.test.command)],
    };
    let gets: Vec<bool> = match (&plan.test.replay, composer) {
        (Some(r), _) => r
            .names()
            .iter()
            .map(|n| n.eq_ignore_ascii_case("GET"))
            .collect(),
        (None, Some(comp)) => comp.variants().iter().map(|v| v.command == "GET").collect(),
        (None, None) => vec![plan.test.command == "GET"],
    };
    (reads, gets)
}

impl Client {
    /// Logical client `i` of the shard, with its request pool, keys, seed and pacing.
    fn new(
        plan: &ShardPlan,
        shape: &Shape,
        stride: usize,
        cursor: &Rc<Cursors>,
        began: Instant,
        i: usize,
    ) -> Client {
        let (pool, composed) = (shape.pool, shape.composed);
        let seed = plan
            .cfg
            .load
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
            pipe: PipelineBuffer::new(&plan.test.template, if composed { 0 } else { pool }),
            composed: if composed {
                (0..pool).map(|_| Vec::with_capacity(shape.max)).collect()
            } else {
                Vec::new()
            },
            keys: plan.keys(cursor, i),
            rng: SmallRng::seed_from_u64(seed),
            pacing: plan.pacing(began, i),
            seq: 0,
            replayed: 0,
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
            turn: i as u32,
            stage: if shape.lean.is_some() {
                (0..stride)
                    .map(|_| stage::Stage::new(&plan.test.template, pool))
                    .collect()
            } else {
                Vec::new()
            },
            fresh_held: 0,
        }
    }
}

/// The layer's own tallies: per mix command, the service time, and `--hdr-out`'s interval sum.
type Tallies = (
    Vec<PartTally>,
    Option<Histogram<u64>>,
    Option<Histogram<u64>>,
);

/// The layer's tallies, empty and like the shard's: per mix command, the service time (when the shard
/// keeps it), and the sum of the node histograms (when the shard writes intervals).
fn empty_tallies(state: &ShardState, precision: u8) -> Tallies {
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
    let interval_total = state
        .intervals
        .borrow()
        .is_some()
        .then(|| new_histogram(precision));
    (
        parts,
        st.service.as_ref().map(new_histogram_like),
        interval_total,
    )
}

/// The nodes of `map` requests go to: the masters unless every request is a read sent to replicas
/// (`--rfr yes`), and the replicas when reads go there. A master without a replica takes its reads.
fn serving(map: &SlotMap, read_from: ReadFrom, reads: &[bool]) -> Vec<usize> {
    let any_read = reads.iter().any(|&r| r);
    let any_write = reads.iter().any(|&r| !r);
    if read_from == ReadFrom::Masters || !any_read {
        return map.masters().into_iter().map(usize::from).collect();
    }
    let mut nodes = Vec::new();
    for m in map.masters() {
        let replicas = &map.replicas[m as usize];
        if any_write || read_from == ReadFrom::All || replicas.is_empty() {
            nodes.push(m as usize);
        }
        nodes.extend(replicas.iter().map(|&r| r as usize));
    }
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

/// An empty histogram with `h`'s bounds and precision.
fn new_histogram_like(h: &Histogram<u64>) -> Histogram<u64> {
    let mut e = h.clone();
    e.reset();
    e
}

impl ClusterLayer<'_> {
    /// The nodes requests go to now (see [`serving`]).
    fn serving(&self) -> Vec<usize> {
        serving(&self.map, self.read_from, &self.reads)
    }

    /// Gives every client a queue (and a place for a connection) for each node of the map: called
    /// when the map names a node it did not know (a refresh, a redirect).
    fn grow_nodes(&mut self) {
        let n = self.map.nodes.len();
        for cl in self.clients.iter_mut().filter(|cl| cl.queue.len() < n) {
            let room = cl.reqs.len();
            cl.queue.resize_with(n, || VecDeque::with_capacity(room));
            cl.unreachable.resize(n, false);
            cl.links.resize(n, NO_CONN);
            if self.lean.is_some() {
                let room = cl.reqs.len();
                cl.stage
                    .resize_with(n, || stage::Stage::new(&self.plan.test.template, room));
            }
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
        self.sent_ns.push(0);
        self.flight.push(stage::Flight::default());
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

    /// Seconds since the run's epoch (the same clock on every executor).
    fn seconds(&self, now: Instant) -> f64 {
        now.saturating_duration_since(self.plan.epoch).as_secs_f64()
    }

    /// True when client `c` has nothing in flight on any of its connections.
    fn quiet(&self, d: &Driver<'_>, c: usize) -> bool {
        self.conns_of(c).all(|j| !self.owes(j) && !d.is_sending(j))
    }

    /// True when client `c` holds no request (queued, to route or to retry).
    fn empty(&self, c: usize) -> bool {
        let cl = &self.clients[c];
        cl.todo.is_empty()
            && cl.retry.is_empty()
            && cl.queue.iter().all(VecDeque::is_empty)
            && cl.stage.iter().all(|s| s.count == 0)
    }
}
