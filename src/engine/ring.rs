//! The data path of one executor on its own io_uring: every connection's sends and receives are
//! queued as SQEs and leave with one `io_uring_enter` per turn of the loop, which also waits for
//! completions. Receives are multishot into a provided buffer ring shared by the executor's
//! connections; the reply scanner reads each buffer in place and gives it back at once.
//!
//! One per-connection state machine serves the closed loop (fixed-layout requests patched in place,
//! or composed requests), the open loop (`--rps`, paced by the wait's deadline, not by a timer per
//! sleep), `-k 0`, `--timeout` and reconnects, over TCP and unix sockets.

use crate::config::Config;
use crate::engine::opening::Opening;
use crate::engine::schedule::{DueQueue, Pacing};
use crate::engine::shared::{
    RECONNECT_BACKOFF_MS, ShardPlan, ShardState, error_text, note_error_in,
};
use crate::net::ConnError;
use crate::net::control::ControlClient;
use crate::net::target::Target;
use crate::protocol::resp::{ProtocolError, ReplyScanner, Scanned};
use crate::stats::ShardStats;
use crate::workload::PipelineBuffer;
use crate::workload::compose::Composer;
use crate::workload::keys::KeyGen;
use io_uring::types::{BufRingEntry, Fd, Fixed, SubmitArgs, Timespec};
use io_uring::{IoUring, cqueue, opcode, squeue};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// Provided receive buffers per executor, and the size of each. They are shared by all of the
/// executor's connections, so memory does not grow with `-c`.
const RECV_BUFFERS: u16 = 512;
const RECV_BUFFER_SIZE: usize = 4096;
/// The buffer group id of the executor's receive buffers.
const BGID: u16 = 7;
/// The longest the loop waits in the kernel before it looks at the stop flag and the clocks again.
const MAX_WAIT: Duration = Duration::from_millis(10);

const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;
const OP_CONNECT: u64 = 3;
const OP_LINK_TIMEOUT: u64 = 4;

/// What the open loop's wait asks for when it only needs to wake at its next due request: more
/// completions than can arrive, so the kernel (6.7 and later, with `DEFER_TASKRUN`) lets replies
/// queue instead of waking the executor for each. Their arrival times come from the kernel's
/// receive timestamps ([`RxStamps`]).
const SLEEP_THROUGH: u32 = 1 << 16;
/// Control space of a timestamped receive: one `cmsghdr` with a `timespec`.
const STAMP_CONTROL_LEN: usize = 32;

/// How the ring of an executor was set up: the best the kernel accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingMode {
    /// `SINGLE_ISSUER | DEFER_TASKRUN`: completions are posted only when the executor waits for them.
    Deferred,
    /// `COOP_TASKRUN`: no interrupt per completion, but completions run on any kernel entry.
    Cooperative,
    /// A plain ring (kernel older than 5.19 for these flags).
    Plain,
}

impl RingMode {
    /// The ring's set-up flags as the header and the JSON name them.
    pub fn describe(self) -> &'static str {
        match self {
            RingMode::Deferred => "io_uring SINGLE_ISSUER|DEFER_TASKRUN",
            RingMode::Cooperative => "io_uring COOP_TASKRUN",
            RingMode::Plain => "io_uring (plain)",
        }
    }
}

/// Why the engine cannot run on this kernel, worded with the fix.
#[derive(Debug, thiserror::Error)]
pub enum RingError {
    #[error(
        "io_uring is not available: {reason}; ringbench needs Linux 6.0 or later with io_uring enabled (sysctl kernel.io_uring_disabled=0, and a container seccomp profile that allows io_uring_setup)"
    )]
    Unavailable { reason: String },
    #[error("io_uring on this kernel lacks {what} (needs Linux 6.0 or later): {reason}")]
    Missing { what: &'static str, reason: String },
}

/// Creates a ring with the best flags the kernel accepts.
pub(crate) fn build(entries: u32) -> io::Result<(IoUring, RingMode)> {
    let cq = entries.saturating_mul(4).max(256);
    if let Ok(r) = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_submit_all()
        .setup_cqsize(cq)
        .build(entries)
    {
        return Ok((r, RingMode::Deferred));
    }
    if let Ok(r) = IoUring::builder()
        .setup_coop_taskrun()
        .setup_submit_all()
        .setup_cqsize(cq)
        .build(entries)
    {
        return Ok((r, RingMode::Cooperative));
    }
    IoUring::builder()
        .setup_cqsize(cq)
        .build(entries)
        .map(|r| (r, RingMode::Plain))
}

/// `io_uring_register` opcodes and `io_uring_enter` flags of the kernel's ABI that the io-uring crate
/// does not keep across calls (its registered ring index lives in one `Submitter`).
const IORING_REGISTER_RING_FDS: libc::c_uint = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_uint = 21;
const IORING_ENTER_GETEVENTS: libc::c_uint = 1;
const IORING_ENTER_EXT_ARG: libc::c_uint = 8;
const IORING_ENTER_REGISTERED_RING: libc::c_uint = 16;

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// `struct __kernel_timespec`.
#[repr(C)]
struct KernelTimespec {
    sec: i64,
    nsec: i64,
}

/// `struct io_uring_getevents_arg`.
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// Registers the ring's own descriptor with the kernel (`IORING_REGISTER_RING_FDS`, Linux 5.18): each
/// `io_uring_enter` then names the ring by the returned index, and the kernel skips the descriptor
/// lookup per call. `None` when the kernel refuses (the ring is then entered by its descriptor).
fn register_ring_fd(ring: &IoUring) -> Option<u32> {
    let mut up = RsrcUpdate {
        offset: u32::MAX,
        resv: 0,
        data: ring.as_raw_fd() as u64,
    };
    // SAFETY: one `io_uring_rsrc_update`, read and written by the kernel during the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring.as_raw_fd(),
            IORING_REGISTER_RING_FDS,
            &mut up as *mut RsrcUpdate,
            1,
        )
    };
    (r == 1).then_some(up.offset)
}

/// Undoes [`register_ring_fd`] (the registration holds a reference to the ring until the thread ends).
fn unregister_ring_fd(ring: &IoUring, index: u32) {
    let up = RsrcUpdate {
        offset: index,
        resv: 0,
        data: 0,
    };
    // SAFETY: as in `register_ring_fd`.
    unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring.as_raw_fd(),
            IORING_UNREGISTER_RING_FDS,
            &up as *const RsrcUpdate,
            1,
        )
    };
}

/// Checks once, before any test, that the kernel has what the engine uses: a ring, provided buffer
/// rings and multishot receive. Returns the ring mode executors will get.
pub fn probe() -> Result<RingMode, RingError> {
    let (ring, mode) = build(8).map_err(|e| RingError::Unavailable {
        reason: reason_of(&e),
    })?;
    let mut probe = io_uring::Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| RingError::Missing {
            what: "opcode probing",
            reason: reason_of(&e),
        })?;
    if !probe.is_supported(opcode::RecvMulti::CODE) || !probe.is_supported(opcode::Send::CODE) {
        return Err(RingError::Missing {
            what: "send and receive operations",
            reason: "not supported".into(),
        });
    }
    BufRing::new(&ring, 8, 64)
        .map_err(|e| RingError::Missing {
            what: "provided buffer rings",
            reason: reason_of(&e),
        })?
        .unregister(&ring);
    Ok(mode)
}

fn reason_of(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOSYS) => "the kernel has no io_uring (ENOSYS)".into(),
        Some(libc::EPERM) => {
            let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
                .map(|s| format!(" (kernel.io_uring_disabled = {})", s.trim()))
                .unwrap_or_default();
            format!("io_uring_setup was refused (EPERM){sysctl}")
        }
        Some(libc::ENOMEM) => "not enough locked memory for the ring (raise `ulimit -l`)".into(),
        _ => e.to_string(),
    }
}

/// One provided-buffer descriptor as the kernel lays it out (`struct io_uring_buf`). The ring's tail is
/// the `resv` field of entry 0: it is only ever written through [`BufRing::publish`], and entries are
/// written field by field, so no reference covers the tail the kernel reads.
#[repr(C)]
struct RawBuf {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

const _: () = assert!(std::mem::size_of::<RawBuf>() == std::mem::size_of::<BufRingEntry>());

/// The executor's provided receive buffers: a ring of buffer descriptors the kernel takes from and
/// the executor gives back to, and the memory they describe. The kernel writes into that memory, so
/// it is held by a raw pointer (never borrowed as a whole); a buffer is read only between the
/// completion that hands it over and [`Self::give_back`]. Registered with the ring on creation, it is
/// unregistered by [`Self::unregister`] before it is freed; a `BufRing` dropped while still
/// registered (the kernel may still fill its buffers) leaks its memory instead of freeing it.
struct BufRing {
    entries: *mut RawBuf,
    ring_bytes: usize,
    count: u16,
    tail: u16,
    size: usize,
    memory: *mut u8,
    memory_len: usize,
    registered: bool,
}

impl BufRing {
    fn new(ring: &IoUring, count: u16, size: usize) -> io::Result<BufRing> {
        let ring_bytes = count as usize * std::mem::size_of::<RawBuf>();
        // SAFETY: an anonymous private mapping; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let memory_len = count as usize * size;
        let memory = Box::into_raw(vec![0u8; memory_len].into_boxed_slice()).cast::<u8>();
        let mut br = BufRing {
            entries: ptr.cast(),
            ring_bytes,
            count,
            tail: 0,
            size,
            memory,
            memory_len,
            registered: false,
        };
        // SAFETY: the mapping is page aligned and `count` entries long; it and the memory stay until
        // `unregister` (or are leaked).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(ptr as u64, count, BGID, 0)?;
        }
        br.registered = true;
        for bid in 0..count {
            br.give_back(bid);
        }
        br.publish();
        Ok(br)
    }

    /// The bytes the kernel put in buffer `bid`.
    fn data(&self, bid: u16, len: usize) -> &[u8] {
        assert!(
            bid < self.count && len <= self.size,
            "buffer {bid} of {len} bytes"
        );
        // SAFETY: within the memory; the kernel handed buffer `bid` over with its completion and
        // does not write it again before `give_back`, which takes `&mut self` and so cannot run
        // while this slice lives.
        unsafe { std::slice::from_raw_parts(self.memory.add(bid as usize * self.size), len) }
    }

    /// Puts buffer `bid` back at the tail; the kernel sees it after [`Self::publish`].
    fn give_back(&mut self, bid: u16) {
        let slot = (self.tail & (self.count - 1)) as usize;
        let addr = self.memory as u64 + (bid as usize * self.size) as u64;
        // SAFETY: `slot` < `count`, within the mapping; the kernel reads only entries between its
        // head and the published tail, and this one is past the tail until `publish`. The fields
        // are written one by one: entry 0's `resv` (the tail) is not touched.
        unsafe {
            let e = self.entries.add(slot);
            std::ptr::addr_of_mut!((*e).addr).write(addr);
            std::ptr::addr_of_mut!((*e).len).write(self.size as u32);
            std::ptr::addr_of_mut!((*e).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail field of the first entry, as the kernel's ABI defines it: a u16, aligned,
        // in the mapping, and only ever accessed atomically from here.
        let tail = unsafe { AtomicU16::from_ptr(std::ptr::addr_of_mut!((*self.entries).resv)) };
        tail.store(self.tail, Ordering::Release);
    }

    /// Ends the registration with `ring` (the kernel takes no buffer from it after this) and frees it.
    fn unregister(mut self, ring: &IoUring) {
        if ring.submitter().unregister_buf_ring(BGID).is_ok() {
            self.registered = false;
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        if self.registered {
            // The kernel may still use them: leaked, not freed under it.
            return;
        }
        // SAFETY: the mapping and the memory made in `new`, no longer registered with any ring.
        unsafe {
            libc::munmap(self.entries.cast(), self.ring_bytes);
            drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                self.memory,
                self.memory_len,
            )));
        }
    }
}

/// Open loop: receives are multishot `recvmsg`s that carry each buffer's kernel receive timestamp
/// (`SO_TIMESTAMPNS`), so a reply's latency ends when it reached the socket, not when the executor
/// next woke. The executor can then sleep until its next due request instead of waking for every
/// reply. The message header describes the layout of each buffer (no name, a fixed control space);
/// it is boxed so its address is stable while receives that read it are in the kernel.
struct RxStamps {
    msghdr: Box<libc::msghdr>,
}

impl RxStamps {
    fn new() -> RxStamps {
        // SAFETY: msghdr is plain data; all-zero is a valid value (null pointers, zero lengths).
        let mut msghdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msghdr.msg_controllen = STAMP_CONTROL_LEN;
        RxStamps { msghdr }
    }

    /// Asks the kernel to timestamp what socket `fd` receives.
    fn enable(fd: &OwnedFd) -> bool {
        let on: libc::c_int = 1;
        // SAFETY: a valid socket and an int option value that outlives the call.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    }

    /// Splits a received buffer into where its payload starts, how long it is, and its receive
    /// timestamp (nanoseconds of `CLOCK_REALTIME`), when the kernel gave one.
    fn parse(&self, buf: &[u8]) -> Option<(usize, usize, Option<u64>)> {
        let out = io_uring::types::RecvMsgOut::parse(buf, &self.msghdr).ok()?;
        let at = buf.len() - out.payload_data().len();
        let mut stamp = None;
        let control = out.control_data();
        // One `cmsghdr` (len, level, type) then the data, as the kernel lays it out on 64-bit Linux.
        let head = std::mem::size_of::<libc::cmsghdr>();
        if control.len() >= head + 16 {
            let level = i32::from_ne_bytes(control[8..12].try_into().ok()?);
            let kind = i32::from_ne_bytes(control[12..16].try_into().ok()?);
            if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS {
                let sec = i64::from_ne_bytes(control[head..head + 8].try_into().ok()?);
                let nsec = i64::from_ne_bytes(control[head + 8..head + 16].try_into().ok()?);
                stamp = u64::try_from(sec)
                    .ok()
                    .map(|s| s * 1_000_000_000 + nsec.max(0) as u64);
            }
        }
        Some((at, out.payload_data().len(), stamp))
    }
}

/// A turn's clock: the monotonic `now` the loop reads, and the same moment on the wall clock, to
/// turn a kernel receive timestamp into an `Instant`.
#[derive(Clone, Copy)]
struct Clock {
    now: Instant,
    real_ns: u64,
}

impl Clock {
    fn read(stamps: bool) -> Clock {
        let now = Instant::now();
        let real_ns = if stamps {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        } else {
            0
        };
        Clock { now, real_ns }
    }

    /// When a buffer stamped `stamp` arrived: `now` less its age, never later than `now`.
    fn arrival(&self, stamp: Option<u64>) -> Instant {
        match stamp {
            Some(t) if self.real_ns > 0 => self
                .now
                .checked_sub(Duration::from_nanos(self.real_ns.saturating_sub(t)))
                .unwrap_or(self.now),
            _ => self.now,
        }
    }
}

/// Finds reply boundaries in receive buffers read in place. Only a line cut at a buffer's end (a
/// few bytes, or an error reply's text) is copied, so the next buffer can complete it.
#[derive(Debug, Default)]
pub struct InPlaceScanner {
    scanner: ReplyScanner,
    carry: Vec<u8>,
}

impl InPlaceScanner {
    /// Scans `data`, calling `on_reply` with each whole reply's kind and (for a simple error) its line.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        mut on_reply: impl FnMut(Scanned, &[u8]),
    ) -> Result<(), ProtocolError> {
        // First finish a line that an earlier buffer cut.
        while !self.carry.is_empty() {
            if data.is_empty() {
                return Ok(());
            }
            let take = memchr::memchr(b'\n', data).map_or(data.len(), |i| i + 1);
            self.carry.extend_from_slice(&data[..take]);
            data = &data[take..];
            let mut at = 0;
            loop {
                let (used, ev) = self.scanner.scan(&self.carry[at..])?;
                if let Some(ev) = ev {
                    on_reply(ev, &self.carry[at..at + used]);
                }
                at += used;
                if used == 0 || at == self.carry.len() {
                    break;
                }
            }
            self.carry.drain(..at);
        }
        let mut pos = 0;
        while pos < data.len() {
            let (used, ev) = self.scanner.scan(&data[pos..])?;
            if let Some(ev) = ev {
                on_reply(ev, &data[pos..pos + used]);
            }
            if used == 0 {
                self.carry.extend_from_slice(&data[pos..]);
                break;
            }
            pos += used;
        }
        Ok(())
    }

    /// Forgets a broken connection's partial reply.
    pub fn reset(&mut self) {
        self.scanner = ReplyScanner::new();
        self.carry = Vec::new();
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

/// A request waiting for its reply (composed requests and the open loop).
#[derive(Debug, Clone, Copy)]
struct Flight {
    intended: Instant,
    sent: Instant,
    kind: usize,
}

/// What fills a connection's send buffer.
enum Requests {
    /// Fixed-layout requests, patched in place.
    Fixed(PipelineBuffer),
    /// Requests without placeholders: the same bytes for every connection, one buffer per executor.
    Shared(Rc<PipelineBuffer>),
    /// One request composed at a time (varying values, mixes, the open loop).
    Composed(Arc<Composer>),
    /// Bytes a [`Layer`] wrote into the connection's `out` (`--cluster`).
    Raw,
}

/// What a driver layered on the ring does instead of the single-node closed and open loops: it decides
/// what each connection sends and what each reply means (`--cluster` routes requests to node
/// connections and follows redirects). The ring keeps the connections, their sends, receives, TLS,
/// scanning and `--timeout`; a connection that is lost is not reconnected by the ring but left to the
/// layer ([`Driver::open`]).
pub(crate) trait Layer {
    /// One whole reply (an error reply when `error`) arrived on connection `conn` at `now`.
    fn on_reply(&mut self, conn: usize, error: bool, raw: &[u8], now: Instant);
    /// Connection `conn` failed with `e`; the replies it still owed will not come.
    fn on_lost(&mut self, conn: usize, e: &ConnError, now: Instant);
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Connected and driven.
    Live,
    /// Shut down after a failure or at `-k 0`; waits for its last completions before reconnecting.
    Draining,
    /// Waiting to connect again (attempt `attempt` of the backoff, at `retry_at`).
    Reconnecting,
    /// Being opened on the ring: its `CONNECT`, TLS handshake or set-up commands are in flight.
    Opening,
    /// Finished (or could not reconnect).
    Done,
}

/// One connection's state.
struct Conn {
    fd: Option<OwnedFd>,
    /// Bumped on every reconnect, so completions of an earlier socket are recognised and ignored.
    generation: u16,
    phase: Phase,
    recv_armed: bool,
    send_pending: bool,
    /// Send buffer and the part of it still to go.
    out: Vec<u8>,
    out_len: usize,
    out_at: usize,
    requests: Requests,
    /// Fixed closed loop: replies still due from the current batch, sent at `batch_sent`.
    due: usize,
    batch_sent: Instant,
    /// Composed requests and the open loop: one entry per request waiting for its reply.
    flights: VecDeque<Flight>,
    reader: InPlaceScanner,
    keys: KeyGen,
    rng: SmallRng,
    pacing: Option<Pacing>,
    seq: u64,
    next_due: Option<Instant>,
    done_sending: bool,
    /// Open loop: when a reply last made room in a connection that had `-P` waiting. A request due
    /// before then was late because of the pipeline, not the client.
    room_at: Instant,
    /// What `--timeout` runs from: when the oldest request still unanswered was sent (under a layer,
    /// the later of that batch's send and the last whole reply). Bytes that end no reply do not move it.
    last_progress: Instant,
    /// Set by [`Driver::out`] when the connection owed nothing: the layer's next send starts the clock.
    restart_clock: bool,
    /// Set while the connection waits in the ready list.
    queued: bool,
    /// Set when the connection is drained because of `-k 0` (not a failure).
    renew: bool,
    /// Set until the connection's first reply: only then can an error be the server refusing it.
    fresh: bool,
    /// Set when the server refused the connection; it is not tried again.
    refused: bool,
    /// The TLS session, when the run uses TLS: requests are sealed into its buffer before they
    /// are sent, and receive buffers are opened into the executor's plaintext buffer.
    tls: Option<Box<TlsSession>>,
    /// Reconnect attempts made since the connection was lost, and when the next one is due.
    attempt: usize,
    retry_at: Instant,
    /// While [`Phase::Opening`]: the handshake and set-up, and what its `CONNECT` reads (both stay
    /// put until the connection is live or drained).
    opening: Option<Box<Opening>>,
    connect_args: Option<Box<ConnectArgs>>,
    connect_pending: bool,
    /// Why the last opening attempt failed, for the backoff once the attempt is drained.
    open_error: Option<ConnError>,
}

impl Conn {
    fn waiting(&self) -> usize {
        self.due + self.flights.len()
    }
}

fn user_data(conn: usize, generation: u16, op: u64) -> u64 {
    ((conn as u64) << 32) | ((generation as u64) << 8) | op
}

/// One executor's ring and its connections, driven until the shard's share is done or the run stops.
pub(crate) struct Driver<'a> {
    ring: IoUring,
    mode: RingMode,
    /// True when the sockets are registered files.
    fixed: bool,
    /// How many slots the registered file table has: connections added later
    /// ([`Driver::add_connection`]) beyond it use plain descriptors.
    files: usize,
    /// Unregistered and freed in `Drop` when nothing is in the kernel, else leaked.
    bufs: std::mem::ManuallyDrop<BufRing>,
    conns: Vec<Conn>,
    ready: VecDeque<usize>,
    plan: &'a ShardPlan,
    state: &'a ShardState,
    cfg: &'a Config,
    addr: String,
    turn: Rc<Cell<u64>>,
    mixed: bool,
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
    /// The ring's registered index for `io_uring_enter`, when the kernel took the registration.
    ring_index: Option<u32>,
    /// Open loop: connections that wait for their next request's due time, earliest first.
    timers: DueQueue,
    /// Open loop: wake-ups fall on a grid of [`crate::engine::schedule::QUANTUM`] from `began`, so one
    /// wake-up sends every request that fell due within the quantum before it.
    began: Instant,
    /// `--duration` is over and every connection was told so (done once, not every turn).
    deadline_passed: bool,
    /// Open loop: receives carry kernel timestamps, so the wait need not wake for each reply.
    stamps: Option<RxStamps>,
    /// False once a timestamped receive came without its timestamp: the wait wakes for replies again.
    stamped: bool,
}

impl Drop for Driver<'_> {
    /// The drain ([`Driver::run`]'s end) waits for every operation; when it gave up (after 500 ms) or
    /// never ran (a panic), what the kernel may still read or write is leaked rather than freed: the
    /// connections' buffers, the receive buffers and the `recvmsg` header.
    fn drop(&mut self) {
        let pending = self
            .conns
            .iter()
            .any(|c| c.recv_armed || c.send_pending || c.connect_pending);
        if pending {
            std::mem::forget(std::mem::take(&mut self.conns));
            std::mem::forget(self.stamps.take());
        } else {
            // SAFETY: taken once, here, and not used after.
            let bufs = unsafe { std::mem::ManuallyDrop::take(&mut self.bufs) };
            bufs.unregister(&self.ring);
        }
        if let Some(index) = self.ring_index {
            unregister_ring_fd(&self.ring, index);
        }
    }
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
        let (ring, mode) = build(entries)?;
        let bufs = BufRing::new(&ring, RECV_BUFFERS, RECV_BUFFER_SIZE)?;
        // Sockets are registered files (slot i = connection i), so no operation looks its file up;
        // a kernel that refuses the table gets plain descriptors.
        let fds: Vec<i32> = socks
            .iter()
            .map(|s| s.as_ref().map_or(-1, |(fd, _)| fd.as_raw_fd()))
            .collect();
        let fixed = ring.submitter().register_files(&fds).is_ok();
        // The single-node open loop reads replies' arrival times from the kernel; a socket that
        // refuses the option turns it off for the executor.
        let stamps = (cfg.run.shape.rps.is_some() && layer.is_none() && !cfg.run.idle)
            .then(RxStamps::new)
            .filter(|_| socks.iter().flatten().all(|(fd, _)| RxStamps::enable(fd)));
        let cursor = Rc::new(Cell::new(0u64));
        let depth = cfg.run.pipeline;
        let mixed = composer.as_ref().is_some_and(|c| c.variants().len() > 1);
        let shared = (composer.is_none() && !plan.test.template.has_placeholders())
            .then(|| Rc::new(PipelineBuffer::new(&plan.test.template, depth)));
        let conns = socks
            .into_iter()
            .enumerate()
            .map(|(i, sock)| {
                let (fd, tls) = match sock {
                    Some((fd, tls)) => (Some(fd), tls),
                    None => (None, None),
                };
                let seed = crate::workload::keys::connection_seed(cfg.run.seed, plan.index, i);
                let (requests, out, flights) = match &composer {
                    _ if layer.is_some() => (Requests::Raw, Vec::new(), VecDeque::new()),
                    Some(c) => (
                        Requests::Composed(c.clone()),
                        Vec::with_capacity(depth * c.max_request_len()),
                        VecDeque::with_capacity(depth),
                    ),
                    None => (
                        match &shared {
                            Some(b) => Requests::Shared(b.clone()),
                            None => {
                                Requests::Fixed(PipelineBuffer::new(&plan.test.template, depth))
                            }
                        },
                        Vec::new(),
                        VecDeque::new(),
                    ),
                };
                // A layer paces its own requests.
                let pacing = plan.pacing(began, i).filter(|_| layer.is_none());
                Conn {
                    phase: if fd.is_some() {
                        Phase::Live
                    } else {
                        Phase::Done
                    },
                    fd,
                    generation: 0,
                    recv_armed: false,
                    send_pending: false,
                    out,
                    out_len: 0,
                    out_at: 0,
                    requests,
                    due: 0,
                    batch_sent: began,
                    flights,
                    reader: InPlaceScanner::default(),
                    keys: plan.keys(&cursor),
                    rng: SmallRng::seed_from_u64(seed),
                    next_due: pacing.map(|p| p.intended(0)),
                    pacing,
                    seq: 0,
                    done_sending: false,
                    room_at: began,
                    last_progress: began,
                    restart_clock: false,
                    queued: false,
                    renew: false,
                    attempt: 0,
                    retry_at: began,
                    fresh: true,
                    refused: false,
                    tls: tls.map(TlsSession::new),
                    opening: None,
                    connect_args: None,
                    connect_pending: false,
                    open_error: None,
                }
            })
            .collect::<Vec<_>>();
        let absent = conns.iter().filter(|c| c.phase == Phase::Done).count();
        let conns_len = conns.len();
        let ring_index = register_ring_fd(&ring);
        let idle = cfg.run.idle;
        Ok(Driver {
            ring,
            mode,
            fixed,
            files: conns_len,
            bufs: std::mem::ManuallyDrop::new(bufs),
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
            turn: Rc::new(Cell::new(0)),
            mixed,
            plain: Vec::new(),
            done: absent,
            reconnecting: 0,
            opening: 0,
            layer,
            idle,
            failure: None,
            ring_index,
            timers: DueQueue::new(conns_len),
            began,
            deadline_passed: false,
            stamped: stamps.is_some(),
            stamps,
        })
    }

    /// How this executor's ring was set up.
    pub(crate) fn mode(&self) -> RingMode {
        self.mode
    }

    fn push(&mut self, sqe: squeue::Entry) {
        // SAFETY: every buffer an SQE points at lives in a connection that is not dropped or
        // reallocated while the operation is in flight (`send_pending`).
        while unsafe { self.ring.submission().push(&sqe) }.is_err() {
            let _ = self.ring.submit();
        }
    }

    fn arm_recv(&mut self, i: usize) {
        let fixed = self.is_fixed(i);
        let c = &mut self.conns[i];
        let Some(fd) = c.fd.as_ref() else { return };
        let sqe = match (&self.stamps, fixed) {
            (Some(s), true) => opcode::RecvMsgMulti::new(Fixed(i as u32), &*s.msghdr, BGID).build(),
            (Some(s), false) => {
                opcode::RecvMsgMulti::new(Fd(fd.as_raw_fd()), &*s.msghdr, BGID).build()
            }
            (None, true) => opcode::RecvMulti::new(Fixed(i as u32), BGID).build(),
            (None, false) => opcode::RecvMulti::new(Fd(fd.as_raw_fd()), BGID).build(),
        }
        .user_data(user_data(i, c.generation, OP_RECV));
        c.recv_armed = true;
        self.push(sqe);
    }

    fn send_rest(&mut self, i: usize) {
        let fixed = self.is_fixed(i);
        let c = &mut self.conns[i];
        let Some(fd) = c.fd.as_ref() else { return };
        let ptr = match (&c.tls, &c.requests) {
            _ if c.opening.is_some() => match c.opening.as_mut().and_then(|o| o.output()) {
                Some(bytes) => bytes.as_ptr(),
                None => return,
            },
            (Some(t), _) => t.sealed.as_ptr(),
            (None, Requests::Fixed(p)) => p.buffer().as_ptr(),
            (None, Requests::Shared(p)) => p.buffer().as_ptr(),
            (None, Requests::Composed(_) | Requests::Raw) => c.out.as_ptr(),
        };
        let rest = c.out_len - c.out_at;
        // SAFETY: the bytes live in the connection's own buffers (see `push`).
        let at = unsafe { ptr.add(c.out_at) };
        let sqe = if fixed {
            opcode::Send::new(Fixed(i as u32), at, rest as u32).build()
        } else {
            opcode::Send::new(Fd(fd.as_raw_fd()), at, rest as u32).build()
        }
        .user_data(user_data(i, c.generation, OP_SEND));
        c.send_pending = true;
        self.push(sqe);
    }

    /// Queues what connection `i` has to send now: a closed-loop batch, or the open loop's due requests.
    fn fill(&mut self, i: usize, now: Instant) {
        if self.idle || self.layer.is_some() {
            return;
        }
        let depth = self.cfg.run.pipeline;
        let state = self.state;
        let c = &mut self.conns[i];
        if c.phase != Phase::Live || c.send_pending || c.done_sending {
            return;
        }
        let past_deadline = |t: Instant| state.deadline.is_some_and(|d| t >= d);
        let mut k = 0usize;
        match c.pacing {
            None => {
                if c.waiting() > 0 {
                    return;
                }
                let n = if past_deadline(now) {
                    0
                } else {
                    state.claim(depth)
                };
                if n == 0 {
                    c.done_sending = true;
                    self.finish_if_idle(i);
                    return;
                }
                match &mut c.requests {
                    Requests::Fixed(p) => {
                        let (keys, rng) = (&mut c.keys, &mut c.rng);
                        c.out_len = p.fill(n, || keys.next(rng)).len();
                        c.due = n;
                        c.batch_sent = now;
                    }
                    Requests::Shared(p) => {
                        c.out_len = n * p.request_len();
                        c.due = n;
                        c.batch_sent = now;
                    }
                    Requests::Raw => return,
                    Requests::Composed(comp) => {
                        c.out.clear();
                        for _ in 0..n {
                            let kind =
                                comp.write_request(&mut c.out, &mut c.keys, &mut c.rng, &self.turn);
                            c.flights.push_back(Flight {
                                intended: now,
                                sent: now,
                                kind,
                            });
                        }
                    }
                }
                k = n;
            }
            Some(p) => {
                let Requests::Composed(comp) = &c.requests else {
                    return;
                };
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
                    if state.claim(1) == 0 {
                        c.done_sending = true;
                        break;
                    }
                    if now.duration_since(due) > crate::engine::schedule::LATE {
                        let mut st = state.stats.borrow_mut();
                        if c.room_at > due {
                            st.late_full += 1;
                        } else {
                            st.late_free += 1;
                        }
                    }
                    let kind = comp.write_request(&mut c.out, &mut c.keys, &mut c.rng, &self.turn);
                    c.flights.push_back(Flight {
                        intended: due,
                        sent: now,
                        kind,
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
    /// scheduled again when a reply makes room; one with a send in the kernel, when the send is done.
    fn schedule(&mut self, i: usize, now: Instant) {
        let depth = self.cfg.run.pipeline;
        let c = &mut self.conns[i];
        if c.pacing.is_none()
            || c.phase != Phase::Live
            || c.done_sending
            || c.flights.len() >= depth
        {
            return;
        }
        let Some(due) = c.next_due else { return };
        if due <= now {
            if !c.send_pending {
                self.make_ready(i);
            }
            return;
        }
        self.timers.set(i, due);
    }

    /// Open loop: moves the connections whose timer is due by `now` to the ready list.
    fn due_timers(&mut self, now: Instant) {
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
    fn next_timer(&self) -> Option<Instant> {
        let t = self.timers.next()?;
        let q = crate::engine::schedule::QUANTUM.as_nanos() as u64;
        let since = t.saturating_duration_since(self.began).as_nanos() as u64;
        Some(self.began + Duration::from_nanos(since.div_ceil(q) * q))
    }

    /// Sends what connection `i` has ready (`out_len` bytes of its requests, or all of `out`),
    /// sealed first under TLS.
    fn start_send(&mut self, i: usize) -> Result<(), ConnError> {
        let c = &mut self.conns[i];
        c.out_at = 0;
        if let Requests::Composed(_) | Requests::Raw = c.requests {
            c.out_len = c.out.len();
        }
        if let Some(t) = c.tls.as_mut() {
            let plain = match &c.requests {
                Requests::Fixed(p) => &p.buffer()[..c.out_len],
                Requests::Shared(p) => &p.buffer()[..c.out_len],
                Requests::Composed(_) | Requests::Raw => &c.out[..],
            };
            match t.seal(plain) {
                Ok(n) => c.out_len = n,
                Err(e) => return Err(self.tls_lost(e)),
            }
        }
        self.send_rest(i);
        Ok(())
    }

    fn tls_lost(&self, e: TlsError) -> ConnError {
        ConnError::Tls {
            addr: self.addr.clone(),
            reason: e.to_string(),
        }
    }

    /// Fails what connection `i` had in flight and shuts it down; it reconnects once its last
    /// completions are in.
    fn lose(&mut self, i: usize, e: &ConnError) {
        let c = &mut self.conns[i];
        if c.phase != Phase::Live {
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
            c.due = 0;
            l.on_lost(i, e, Instant::now());
            self.shut(i);
            return;
        }
        let lost = c.waiting() as u64;
        c.due = 0;
        c.flights.clear();
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
        let c = &mut self.conns[i];
        if let Some(fd) = &c.fd {
            // SAFETY: shutting down our own socket; its pending operations then complete.
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
        }
        self.maybe_reconnect(i);
    }

    /// A drained connection (no operation left in the kernel) is replaced by a new one, or ends.
    fn maybe_reconnect(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.phase != Phase::Draining || c.recv_armed || c.send_pending || c.connect_pending {
            return;
        }
        // Nothing of this socket is in the kernel any more: its buffers may go.
        c.opening = None;
        c.connect_args = None;
        c.fd = None;
        c.reader.reset();
        c.generation = c.generation.wrapping_add(1);
        if self.is_fixed(i) {
            // Drop the table's reference too, so the socket really closes.
            let _ = self.ring.submitter().register_files_update(i as u32, &[-1]);
        }
        let c = &mut self.conns[i];
        if self.layer.is_some() || self.idle {
            // A layer connects again when it has something to send there.
            c.due = 0;
            self.set_phase(i, Phase::Done);
            if let Some(l) = self.layer.as_mut() {
                l.wake(i);
            }
            return;
        }
        let renew = std::mem::take(&mut c.renew);
        let finished =
            c.refused || c.waiting() == 0 && (c.done_sending || self.state.remaining.get() == 0);
        if finished || self.plan.control.stopped() {
            self.set_phase(i, Phase::Done);
            return;
        }
        if let Some(e) = c.open_error.take() {
            // An opening attempt failed: the next waits the next backoff step.
            self.open_failed(i, e);
            return;
        }
        // `-k 0` connects again at once; a lost connection first waits the first backoff step.
        c.attempt = 0;
        c.retry_at = if renew {
            Instant::now()
        } else {
            Instant::now() + Duration::from_millis(RECONNECT_BACKOFF_MS[0])
        };
        self.set_phase(i, Phase::Reconnecting);
    }

    /// Moves connection `i` to `phase`, keeping the counts the loop reads instead of scanning.
    fn set_phase(&mut self, i: usize, phase: Phase) {
        let old = std::mem::replace(&mut self.conns[i].phase, phase);
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
    fn retry_connects(&mut self, now: Instant) {
        if self.reconnecting == 0 {
            return;
        }
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.phase != Phase::Reconnecting || c.retry_at > now {
                continue;
            }
            // Stopped, or --duration is over while it waited: nothing more to send there.
            if self.plan.control.stopped() || c.done_sending {
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
    fn open_failed(&mut self, i: usize, e: ConnError) {
        let setup_refused = matches!(e, ConnError::Setup { .. } | ConnError::Refused(_));
        if self.conns[i].attempt == 0 {
            self.state
                .stats
                .borrow_mut()
                .note_conn_error(&e.to_string());
        }
        let c = &mut self.conns[i];
        c.attempt += 1;
        match RECONNECT_BACKOFF_MS.get(c.attempt) {
            Some(ms) if !setup_refused => {
                c.retry_at = Instant::now() + Duration::from_millis(*ms);
                self.set_phase(i, Phase::Reconnecting);
            }
            _ => self.set_phase(i, Phase::Done),
        }
    }

    /// Starts opening connection `i` to `target` on the ring: a new socket, its `CONNECT` with
    /// `--connect-timeout` linked to it, then (see [`Self::on_connect`]) the TLS handshake and the
    /// set-up commands. Nothing here waits.
    fn start_open(&mut self, i: usize, target: &Target, now: Instant) -> Result<(), ConnError> {
        let cfg = self.cfg;
        let addr = target.display();
        let failed = |e: io::Error| ConnError::Connect {
            addr: addr.clone(),
            reason: crate::net::io_reason(e),
        };
        let (fd, args) = new_socket(target, cfg.run.connect_timeout).map_err(failed)?;
        let fixed = self.is_fixed(i);
        if fixed
            && let Err(e) = self
                .ring
                .submitter()
                .register_files_update(i as u32, &[fd.as_raw_fd()])
        {
            return Err(failed(e));
        }
        if self.stamps.is_some() && !RxStamps::enable(&fd) {
            self.stamped = false;
        }
        let opening = Opening::new(
            addr.clone(),
            cfg.tls.as_ref(),
            &cfg.setup,
            now + cfg.run.connect_timeout,
        )?;
        let c = &mut self.conns[i];
        let connect = if fixed {
            opcode::Connect::new(Fixed(i as u32), args.sockaddr(), args.len)
        } else {
            opcode::Connect::new(Fd(fd.as_raw_fd()), args.sockaddr(), args.len)
        }
        .build()
        .flags(squeue::Flags::IO_LINK)
        .user_data(user_data(i, c.generation, OP_CONNECT));
        let timeout = opcode::LinkTimeout::new(&args.timeout)
            .build()
            .user_data(user_data(i, c.generation, OP_LINK_TIMEOUT));
        c.fd = Some(fd);
        c.opening = Some(Box::new(opening));
        c.connect_args = Some(args);
        c.connect_pending = true;
        c.out_len = 0;
        c.out_at = 0;
        self.set_phase(i, Phase::Opening);
        // The two go in one submission: a full queue is flushed before the first, never between.
        loop {
            let sq = self.ring.submission();
            let free = sq.capacity() - sq.len();
            drop(sq);
            if free >= 2 {
                break;
            }
            let _ = self.ring.submit();
        }
        self.push(connect);
        self.push(timeout);
        Ok(())
    }

    /// The `CONNECT` of connection `i` completed with `res`.
    fn on_connect(&mut self, i: usize, res: i32) {
        let c = &mut self.conns[i];
        c.connect_pending = false;
        if c.phase != Phase::Opening {
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
                addr: self.addr.clone(),
                reason: crate::net::io_reason(e),
            };
            self.fail_open(i, e);
            return;
        }
        let step = c.opening.as_mut().map(|o| o.connected());
        if let Some(Err(e)) = step {
            self.fail_open(i, e);
            return;
        }
        self.arm_recv(i);
        self.open_progress(i);
    }

    /// Sends what the opening of connection `i` has to send, and makes the connection live once it
    /// is set up.
    fn open_progress(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.phase != Phase::Opening || c.send_pending {
            return;
        }
        let Some(o) = c.opening.as_mut() else { return };
        if let Some(bytes) = o.output() {
            c.out_len = bytes.len();
            c.out_at = 0;
            self.send_rest(i);
            return;
        }
        if !o.ready() {
            return;
        }
        let o = c.opening.take().expect("an opening");
        c.connect_args = None;
        c.tls = o.into_tls().map(TlsSession::new);
        c.out_len = 0;
        c.out_at = 0;
        c.fresh = true;
        c.last_progress = Instant::now();
        let done = c.done_sending;
        self.set_phase(i, Phase::Live);
        if done {
            // --duration ended while it opened.
            self.finish_if_idle(i);
        } else {
            self.make_ready(i);
        }
    }

    /// The opening of connection `i` failed: its socket is shut, and once nothing of it is left in
    /// the kernel the next attempt waits its backoff step.
    fn fail_open(&mut self, i: usize, e: ConnError) {
        let c = &mut self.conns[i];
        c.open_error = Some(e);
        if let Some(fd) = &c.fd {
            // SAFETY: shutting down our own socket; its pending operations then complete.
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
        }
        self.set_phase(i, Phase::Draining);
        self.maybe_reconnect(i);
    }

    /// Fails the openings that took longer than `--connect-timeout` (handshake and set-up included).
    fn check_openings(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.phase == Phase::Opening && c.opening.as_ref().is_some_and(|o| now >= o.deadline) {
                let e = ConnError::Connect {
                    addr: self.addr.clone(),
                    reason: format!(
                        "no answer to the connection's set-up within {} ms",
                        self.cfg.run.connect_timeout.as_millis()
                    ),
                };
                self.fail_open(i, e);
            }
        }
    }

    /// Connects slot `i` (not live) to `target` and arms its receive. `Err(None)`: the connection
    /// opened but the ring's file table would not take it (the slot stays unusable).
    pub(crate) fn open(&mut self, i: usize, target: &Target) -> Result<(), Option<ConnError>> {
        let (fd, tls) = connect_to(self.cfg, target)?;
        if self.is_fixed(i) {
            let raw = fd.as_raw_fd();
            if self
                .ring
                .submitter()
                .register_files_update(i as u32, &[raw])
                .is_err()
            {
                return Err(None);
            }
        }
        if self.stamps.is_some() && !RxStamps::enable(&fd) {
            self.stamped = false;
        }
        let c = &mut self.conns[i];
        c.fd = Some(fd);
        c.tls = tls.map(TlsSession::new);
        c.fresh = true;
        c.last_progress = Instant::now();
        self.set_phase(i, Phase::Live);
        self.arm_recv(i);
        Ok(())
    }

    /// True when connection `i` is a slot of the registered file table.
    fn is_fixed(&self, i: usize) -> bool {
        self.fixed && i < self.files
    }

    /// Adds a connection slot with no socket (a layer's, for a node that appeared during the run) and
    /// returns its index; [`Self::open`] connects it.
    pub(crate) fn add_connection(&mut self) -> usize {
        let now = Instant::now();
        self.conns.push(Conn {
            fd: None,
            generation: 0,
            phase: Phase::Done,
            recv_armed: false,
            send_pending: false,
            out: Vec::new(),
            out_len: 0,
            out_at: 0,
            requests: Requests::Raw,
            due: 0,
            batch_sent: now,
            flights: VecDeque::new(),
            reader: InPlaceScanner::default(),
            keys: self.plan.keys(&Rc::new(Cell::new(0))),
            rng: SmallRng::seed_from_u64(0),
            pacing: None,
            seq: 0,
            next_due: None,
            done_sending: false,
            room_at: now,
            last_progress: now,
            restart_clock: false,
            queued: false,
            renew: false,
            fresh: true,
            refused: false,
            tls: None,
            attempt: 0,
            retry_at: now,
            opening: None,
            connect_args: None,
            connect_pending: false,
            open_error: None,
        });
        self.done += 1;
        self.conns.len() - 1
    }

    /// True when connection `i` is connected and driven.
    pub(crate) fn is_live(&self, i: usize) -> bool {
        self.conns[i].phase == Phase::Live
    }

    /// True when slot `i` has no socket and nothing in the kernel: [`Self::open`] may use it.
    pub(crate) fn is_closed(&self, i: usize) -> bool {
        self.conns[i].phase == Phase::Done
    }

    /// True while connection `i` has a send in the kernel (its buffer must not change).
    pub(crate) fn is_sending(&self, i: usize) -> bool {
        self.conns[i].send_pending
    }

    /// Replies connection `i` still owes, and when it last sent or received.
    pub(crate) fn owed(&self, i: usize) -> (usize, Instant) {
        (self.conns[i].due, self.conns[i].last_progress)
    }

    /// Connection `i`'s send buffer, for a layer to write `replies` more requests into before [`Self::send`].
    /// Panics while a send of that buffer is in the kernel ([`Self::is_sending`]): the kernel reads
    /// it then, so it must not change.
    pub(crate) fn out(&mut self, i: usize, replies: usize) -> &mut Vec<u8> {
        let c = &mut self.conns[i];
        assert!(
            !c.send_pending,
            "connection {i}'s send buffer is in the kernel"
        );
        if c.out_len > 0 && !c.send_pending {
            // The last send is done: its bytes go.
            c.out.clear();
            c.out_len = 0;
        }
        c.restart_clock |= c.due == 0;
        c.due += replies;
        &mut c.out
    }

    /// Sends connection `i`'s buffer; on failure the connection is shut and its requests are the
    /// caller's to retry.
    /// Panics while the last send is still in the kernel, as [`Self::out`].
    pub(crate) fn send(&mut self, i: usize, now: Instant) -> Result<(), ConnError> {
        let c = &mut self.conns[i];
        assert!(
            !c.send_pending,
            "connection {i}'s send buffer is in the kernel"
        );
        if std::mem::take(&mut c.restart_clock) {
            c.last_progress = now;
        }
        let r = self.start_send(i);
        if r.is_err() {
            self.conns[i].due = 0;
            self.shut(i);
        }
        r
    }

    fn make_ready(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.queued {
            c.queued = true;
            self.ready.push_back(i);
        }
    }

    /// Handles one receive completion of connection `i`.
    fn on_recv(&mut self, i: usize, mut res: i32, flags: u32, clock: Clock) {
        let more = cqueue::more(flags);
        let now = clock.now;
        if let Some(bid) = cqueue::buffer_select(flags) {
            let mut found = (0, res.max(0) as usize, now);
            if res > 0
                && let Some(s) = &self.stamps
            {
                // A `recvmsg` buffer: header and control first; no payload is the peer's close.
                match s.parse(self.bufs.data(bid, res as usize)) {
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
            if res > 0 && self.conns[i].phase == Phase::Live {
                let (at, len, arrived) = found;
                self.scan(i, bid, at, len, now, arrived);
            } else if res > 0 && self.conns[i].phase == Phase::Opening {
                let (at, len, _) = found;
                let step = self.conns[i]
                    .opening
                    .as_mut()
                    .map(|o| o.received(&self.bufs.data(bid, at + len)[at..]));
                self.bufs.give_back(bid);
                if let Some(Err(e)) = step {
                    self.fail_open(i, e);
                } else {
                    self.open_progress(i);
                }
                let c = &mut self.conns[i];
                if !more {
                    c.recv_armed = false;
                    if c.phase == Phase::Opening {
                        self.arm_recv(i);
                    } else {
                        self.maybe_reconnect(i);
                    }
                }
                return;
            }
            self.bufs.give_back(bid);
        }
        let c = &mut self.conns[i];
        if !more {
            c.recv_armed = false;
        }
        if c.phase == Phase::Opening {
            let e = match res {
                0 => c.opening.as_ref().map(|o| o.closed()),
                r if r == -libc::ENOBUFS => None,
                r if r < 0 => Some(self.io_lost(-r)),
                _ => None,
            };
            match e {
                Some(e) => self.fail_open(i, e),
                None if !more => {
                    self.bufs.publish();
                    self.arm_recv(i);
                }
                None => {}
            }
            return;
        }
        if c.phase != Phase::Live {
            if !more {
                self.maybe_reconnect(i);
            }
            return;
        }
        match res {
            0 => self.lose(i, &self.closed()),
            // The executor's buffers ran out: they were given back above, so receive again.
            r if r == -libc::ENOBUFS && !more => {
                self.bufs.publish();
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

    fn closed(&self) -> ConnError {
        ConnError::Lost {
            addr: self.addr.clone(),
            reason: "closed by the server".into(),
        }
    }

    fn io_lost(&self, errno: i32) -> ConnError {
        ConnError::Lost {
            addr: self.addr.clone(),
            reason: io::Error::from_raw_os_error(errno).to_string(),
        }
    }

    /// Scans `len` bytes of buffer `bid` from `at` for connection `i`'s replies, which reached the
    /// socket at `arrived` (the kernel's timestamp in the open loop, else `now`).
    fn scan(&mut self, i: usize, bid: u16, at: usize, len: usize, now: Instant, arrived: Instant) {
        let (state, plan, mixed, idle) = (self.state, self.plan, self.mixed, self.idle);
        let mut layer = self.layer.as_deref_mut();
        let layer_present = layer.is_some();
        let mut data = &self.bufs.data(bid, at + len)[at..];
        let c = &mut self.conns[i];
        let mut closed = false;
        if let Some(t) = c.tls.as_mut() {
            match t.open(data, &mut self.plain) {
                Ok(eof) => closed = eof,
                Err(reason) => {
                    let e = self.tls_lost(reason);
                    self.lose(i, &e);
                    return;
                }
            }
            data = &self.plain;
        }
        let full = c.flights.len() >= self.cfg.run.pipeline;
        let (reader, flights, due, batch_sent) =
            (&mut c.reader, &mut c.flights, &mut c.due, c.batch_sent);
        // The shard's figures are borrowed once per buffer (not under a layer, which records its
        // own), and replies with the same latency are recorded together: a batch is one record.
        let mut st = layer.is_none().then(|| state.figures(now));
        let (mut run, mut service_run) = (Run::default(), Run::default());
        let (mut counted, mut lat_sum) = (0u64, 0u64);
        let mut batch = 0u64;
        let mut extra = false;
        let mut refused: Option<String> = None;
        let mut whole = 0u64;
        let fresh = c.fresh;
        let scanned = reader.feed(data, |ev, raw| {
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
                let mut text = error_text(raw);
                if text.starts_with("ERR max number of clients") {
                    text.push_str(
                        " (the server's maxclients is below -c: raise it with CONFIG SET maxclients)",
                    );
                }
                refused = Some(text);
                return;
            }
            if let Some(l) = layer.as_mut() {
                if *due == 0 {
                    extra = true;
                    return;
                }
                *due -= 1;
                l.on_reply(i, error, raw, now);
                return;
            }
            let Some(st) = st.as_deref_mut() else {
                return;
            };
            if *due > 0 {
                *due -= 1;
                batch += 1;
                if error {
                    note_error_in(st, plan, raw);
                }
                return;
            }
            let Some(f) = flights.pop_front() else {
                extra = true;
                return;
            };
            if error {
                note_error_in(st, plan, raw);
            }
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
            }
        });
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
        }
        drop(st);
        state
            .latency_sum_ns
            .set(state.latency_sum_ns.get() + lat_sum);
        if whole > 0 {
            // `--timeout` runs from the send of the oldest request still unanswered (a fixed batch's
            // all left at its start), not from the last byte: a reply that trickles in still times out.
            if layer_present {
                c.last_progress = now;
            } else if let Some(f) = c.flights.front() {
                c.last_progress = f.sent;
            }
            c.fresh = false;
        }
        if full && c.flights.len() < self.cfg.run.pipeline {
            c.room_at = arrived;
        }
        if let Some(message) = refused {
            c.refused = true;
            let e = ConnError::Refused(message);
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
    fn after_progress(&mut self, i: usize, now: Instant) {
        if let Some(l) = self.layer.as_mut() {
            l.wake(i);
            return;
        }
        if self.idle {
            return;
        }
        let c = &mut self.conns[i];
        if c.phase != Phase::Live || c.send_pending {
            return;
        }
        if c.pacing.is_some() && !c.done_sending {
            self.schedule(i, now);
            return;
        }
        if c.waiting() > 0 {
            return;
        }
        if c.done_sending {
            self.finish_if_idle(i);
            return;
        }
        if !self.cfg.run.keepalive && c.pacing.is_none() {
            c.renew = true;
            self.shut(i);
            return;
        }
        self.make_ready(i);
    }

    /// Closes a connection that will send no more and waits for nothing.
    fn finish_if_idle(&mut self, i: usize) {
        let c = &self.conns[i];
        if c.phase == Phase::Live && c.done_sending && c.waiting() == 0 && !c.send_pending {
            self.shut(i);
        }
    }

    fn on_send(&mut self, i: usize, res: i32, now: Instant) {
        let c = &mut self.conns[i];
        c.send_pending = false;
        if c.phase == Phase::Opening {
            if res < 0 {
                let e = self.io_lost(-res);
                self.fail_open(i, e);
                return;
            }
            c.out_at += res as usize;
            if c.out_at < c.out_len {
                self.send_rest(i);
                return;
            }
            if let Some(o) = c.opening.as_mut() {
                o.sent();
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
        c.out_at += res as usize;
        if c.out_at < c.out_len {
            self.send_rest(i);
            return;
        }
        self.after_progress(i, now);
    }

    /// Fails connections that waited longer than `--timeout` for a reply.
    fn check_timeouts(&mut self, now: Instant, timeout: Duration) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.phase == Phase::Live
                && c.waiting() > 0
                && now.saturating_duration_since(c.last_progress) > timeout
            {
                let e = ConnError::Timeout {
                    addr: self.addr.clone(),
                    ms: timeout.as_millis(),
                };
                self.lose(i, &e);
            }
        }
    }

    /// Runs until every connection is done or the run is stopped.
    pub(crate) fn run(&mut self) {
        for i in 0..self.conns.len() {
            self.arm_recv(i);
        }
        let timeout = self.cfg.run.timeout;
        let open_loop = self.cfg.run.shape.rps.is_some();
        let mut next_timeout_check = Instant::now();
        let mut cq = Vec::with_capacity(256);
        let layered = self.layer.is_some();
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
            if !layered && !self.deadline_passed && self.state.deadline.is_some_and(|d| now >= d) {
                // --duration is over: requests already sent may still answer.
                self.deadline_passed = true;
                for i in 0..self.conns.len() {
                    self.conns[i].done_sending = true;
                    self.finish_if_idle(i);
                }
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
                    self.conns[i].queued = false;
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
                    .filter_map(|c| match c.phase {
                        Phase::Reconnecting => Some(c.retry_at),
                        Phase::Opening => c.opening.as_ref().map(|o| o.deadline),
                        _ => None,
                    })
                    .min()
            {
                wait = wait.min(r.saturating_duration_since(now));
            }
            if let Some(d) = self.state.deadline {
                wait = wait.min(
                    d.saturating_duration_since(now)
                        .max(Duration::from_micros(50)),
                );
            }
            // With timestamped receives the open loop sleeps until its next due request; replies
            // queue meanwhile (a connection whose reply makes room sends at the next point of the
            // grid). Otherwise the first completion wakes it.
            let want = if self.stamped && self.ready.is_empty() && !self.timers.is_empty() {
                SLEEP_THROUGH
            } else {
                1
            };
            if let Err(e) = self.submit_and_wait(wait, want) {
                let err = ConnError::Lost {
                    addr: self.addr.clone(),
                    reason: format!("io_uring_enter failed: {e}"),
                };
                for i in 0..self.conns.len() {
                    self.lose(i, &err);
                }
                break;
            }
            let clock = Clock::read(self.stamps.is_some());
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
        // Requests still in flight when the loop ends failed, unless the run was stopped on purpose
        // (a signal, or the end of --duration).
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

    /// `-I`: why the run ended early (the server refused or closed a connection), if it did.
    pub(crate) fn take_failure(&mut self) -> Option<ConnError> {
        self.failure.take()
    }

    /// Submits what is queued and waits up to `wait` for `want` completions.
    fn submit_and_wait(&mut self, wait: Duration, want: u32) -> io::Result<()> {
        let entered = match self.ring_index {
            Some(index) => self.enter_registered(index, wait, want),
            None => {
                let ts = Timespec::new()
                    .sec(wait.as_secs())
                    .nsec(wait.subsec_nanos());
                let args = SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(want as usize, &args)
            }
        };
        match entered {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// `io_uring_enter` by the ring's registered index: submits what is queued and waits up to `wait`
    /// for `want` completions.
    fn enter_registered(&mut self, index: u32, wait: Duration, want: u32) -> io::Result<usize> {
        let to_submit = self.ring.submission().len() as libc::c_uint;
        let ts = KernelTimespec {
            sec: wait.as_secs() as i64,
            nsec: i64::from(wait.subsec_nanos()),
        };
        let arg = GeteventsArg {
            sigmask: 0,
            sigmask_sz: 0,
            min_wait_usec: 0,
            ts: &ts as *const KernelTimespec as u64,
        };
        // SAFETY: the argument structs outlive the call; `index` names this thread's registration of
        // this ring, made in `new` and dropped with the driver.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                index,
                to_submit,
                want as libc::c_uint,
                IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG | IORING_ENTER_REGISTERED_RING,
                &arg as *const GeteventsArg,
                std::mem::size_of::<GeteventsArg>(),
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    /// Handles every completion posted, then gives the scanned buffers back to the kernel.
    fn reap(&mut self, cq: &mut Vec<(u64, i32, u32)>, clock: Clock) {
        let now = clock.now;
        cq.extend(
            self.ring
                .completion()
                .map(|e| (e.user_data(), e.result(), e.flags())),
        );
        for &(ud, res, flags) in cq.iter() {
            let i = (ud >> 32) as usize;
            let generation = ((ud >> 8) & 0xffff) as u16;
            let stale = self.conns[i].generation != generation;
            match (ud & 0xff, stale) {
                (OP_RECV, true) => {
                    if let Some(bid) = cqueue::buffer_select(flags) {
                        self.bufs.give_back(bid);
                    }
                }
                (OP_RECV, false) => self.on_recv(i, res, flags, clock),
                (OP_SEND, false) => self.on_send(i, res, now),
                (OP_CONNECT, _) => self.on_connect(i, res),
                _ => {}
            }
        }
        cq.clear();
        self.bufs.publish();
    }

    /// Shuts every connection down and waits (briefly) for the kernel to finish with their buffers.
    fn drain(&mut self, cq: &mut Vec<(u64, i32, u32)>) {
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            c.done_sending = true;
            if let Some(fd) = &c.fd {
                // SAFETY: our own socket; pending operations on it complete.
                unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
            }
            if c.connect_pending {
                // A connect the shutdown does not end (a silent address) is cancelled.
                let cancel = opcode::AsyncCancel::new(user_data(i, c.generation, OP_CONNECT))
                    .build()
                    .user_data(user_data(i, c.generation, OP_LINK_TIMEOUT));
                self.push(cancel);
            }
            let c = &self.conns[i];
            if matches!(c.phase, Phase::Live | Phase::Opening) {
                self.set_phase(i, Phase::Draining);
            }
        }
        let until = Instant::now() + Duration::from_millis(500);
        while self
            .conns
            .iter()
            .any(|c| c.recv_armed || c.send_pending || c.connect_pending)
            && Instant::now() < until
        {
            if self.submit_and_wait(Duration::from_millis(10), 1).is_err() {
                break;
            }
            self.reap(cq, Clock::read(self.stamps.is_some()));
        }
    }
}

/// The request buffer memory a test needs over all executors: one buffer of `-P` requests per
/// connection, or per executor when every connection sends the same bytes.
pub(crate) fn request_memory(cfg: &Config, test: &crate::workload::TestSpec, shards: usize) -> u64 {
    let depth = cfg.run.pipeline as u64;
    match crate::engine::schedule::composer_for(cfg, test) {
        Some(c) => cfg.run.clients as u64 * depth * c.max_request_len() as u64,
        None if test.template.has_placeholders() => {
            cfg.run.clients as u64 * depth * test.template.bytes().len() as u64
        }
        None => shards as u64 * depth * test.template.bytes().len() as u64,
    }
}

/// This machine's memory in bytes, from /proc/meminfo.
pub(crate) fn total_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// True for the error a server sends instead of serving a connection it will close.
fn is_refusal(raw: &[u8]) -> bool {
    raw.starts_with(b"-ERR max number of clients reached") || raw.starts_with(b"-DENIED ")
}

/// What a `CONNECT` and its linked timeout read: the server's address and `--connect-timeout`
/// (boxed, so they stay put while the operations are in the kernel).
pub(crate) struct ConnectArgs {
    addr: libc::sockaddr_storage,
    pub(crate) len: libc::socklen_t,
    pub(crate) timeout: Timespec,
}

impl ConnectArgs {
    pub(crate) fn sockaddr(&self) -> *const libc::sockaddr {
        (&self.addr as *const libc::sockaddr_storage).cast()
    }
}

/// A new socket for `target` (TCP with `TCP_NODELAY`, or unix), not connected yet, and the arguments
/// of its `CONNECT`.
pub(crate) fn new_socket(
    target: &Target,
    timeout: Duration,
) -> io::Result<(OwnedFd, Box<ConnectArgs>)> {
    use std::os::fd::FromRawFd;
    // SAFETY: sockaddr_storage is plain data; all-zero is valid.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let (domain, len) = match target {
        Target::Tcp {
            addr: std::net::SocketAddr::V4(a),
            ..
        } => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: a sockaddr_in fits in (and is aligned for) sockaddr_storage.
            unsafe { std::ptr::write((&mut addr as *mut libc::sockaddr_storage).cast(), sin) };
            (libc::AF_INET, std::mem::size_of::<libc::sockaddr_in>())
        }
        Target::Tcp {
            addr: std::net::SocketAddr::V6(a),
            ..
        } => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut addr as *mut libc::sockaddr_storage).cast(), sin6) };
            (libc::AF_INET6, std::mem::size_of::<libc::sockaddr_in6>())
        }
        Target::Unix(path) => {
            use std::os::unix::ffi::OsStrExt;
            let bytes = path.as_os_str().as_bytes();
            // SAFETY: sockaddr_un is plain data; all-zero is valid.
            let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
            if bytes.len() >= sun.sun_path.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the unix socket path is too long",
                ));
            }
            sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
            for (d, &b) in sun.sun_path.iter_mut().zip(bytes) {
                *d = b as libc::c_char;
            }
            // SAFETY: as above, for sockaddr_un.
            unsafe { std::ptr::write((&mut addr as *mut libc::sockaddr_storage).cast(), sun) };
            let path_at = std::mem::offset_of!(libc::sockaddr_un, sun_path);
            (libc::AF_UNIX, path_at + bytes.len() + 1)
        }
    };
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let raw = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just made and owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    if domain != libc::AF_UNIX {
        let on: libc::c_int = 1;
        // SAFETY: a valid socket and an int option value that outlives the call.
        unsafe {
            libc::setsockopt(
                raw,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    let args = Box::new(ConnectArgs {
        addr,
        len: len as libc::socklen_t,
        timeout: Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos()),
    });
    Ok((fd, args))
}

/// A connected, set-up socket, with its TLS session when the run uses TLS.
pub(crate) type Socket = (OwnedFd, Option<rustls::ClientConnection>);

/// Opens one connection to `target` (a cluster node), TLS handshake and setup commands included
/// (blocking).
pub(crate) fn connect_to(cfg: &Config, target: &Target) -> Result<Socket, ConnError> {
    ControlClient::connect(
        target,
        cfg.tls.as_ref(),
        &cfg.setup,
        cfg.run.connect_timeout,
    )?
    .into_socket()
}

/// Why a TLS session on the ring failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// rustls could not take or give bytes.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The server's records were refused (bad record, alert, certificate).
    #[error("{0}")]
    Session(String),
}

/// A connection's TLS session fed from and into the ring's buffers.
struct TlsSession {
    conn: rustls::ClientConnection,
    /// Records to send; the ring sends from here.
    sealed: Vec<u8>,
}

impl TlsSession {
    fn new(conn: rustls::ClientConnection) -> Box<TlsSession> {
        Box::new(TlsSession {
            conn,
            sealed: Vec::new(),
        })
    }

    /// Encrypts `plain` (and anything else rustls has to send) into [`Self::sealed`]; returns its length.
    /// rustls takes plaintext only up to its buffer limit, so the records are drained as it goes: a
    /// request of any size, or a batch of any depth, is sealed whole.
    fn seal(&mut self, plain: &[u8]) -> Result<usize, TlsError> {
        use std::io::Write;
        self.sealed.clear();
        let mut rest = plain;
        loop {
            let took = self.conn.writer().write(rest)?;
            rest = &rest[took..];
            let mut drained = false;
            while self.conn.wants_write() {
                self.conn.write_tls(&mut self.sealed)?;
                drained = true;
            }
            if rest.is_empty() {
                return Ok(self.sealed.len());
            }
            if took == 0 && !drained {
                return Err(TlsError::Io(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the TLS session took no more plaintext",
                )));
            }
        }
    }

    /// Decrypts the records in `data` into `plain` (replacing its contents); true when the server
    /// closed the session.
    fn open(&mut self, mut data: &[u8], plain: &mut Vec<u8>) -> Result<bool, TlsError> {
        use std::io::Read;
        plain.clear();
        let mut closed = false;
        while !data.is_empty() {
            self.conn.read_tls(&mut data)?;
            self.conn
                .process_new_packets()
                .map_err(|e| TlsError::Session(crate::net::tls::describe(&e, None)))?;
            loop {
                let at = plain.len();
                if plain.capacity() - at < 4096 {
                    plain.reserve(16 * 1024);
                }
                plain.resize(plain.capacity(), 0);
                match self.conn.reader().read(&mut plain[at..]) {
                    Ok(0) => {
                        plain.truncate(at);
                        closed = true;
                        break;
                    }
                    Ok(n) => plain.truncate(at + n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        plain.truncate(at);
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receive_timestamp_becomes_the_reply_arrival() {
        let now = Instant::now();
        let clock = Clock {
            now,
            real_ns: 1_000_000_000_000,
        };
        // Stamped 30 µs before the turn read its clocks.
        let stamp = clock.real_ns - 30_000;
        assert_eq!(clock.arrival(Some(stamp)), now - Duration::from_micros(30));
        // No stamp, or one from the future (the wall clock stepped back): the turn's own time.
        assert_eq!(clock.arrival(None), now);
        assert_eq!(clock.arrival(Some(clock.real_ns + 5_000)), now);
    }

    fn replies(chunks: &[&[u8]]) -> Vec<(Scanned, Vec<u8>)> {
        let mut s = InPlaceScanner::default();
        let mut seen = Vec::new();
        for c in chunks {
            s.feed(c, |ev, raw| seen.push((ev, raw.to_vec()))).unwrap();
        }
        seen
    }

    #[test]
    fn replies_cut_anywhere_are_found_once() {
        let stream: &[u8] =
            b"+OK\r\n$5\r\nhello\r\n-ERR a long error line\r\n:7\r\n*2\r\n$1\r\na\r\n:1\r\n";
        let whole = replies(&[stream]);
        assert_eq!(whole.len(), 5);
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let got = replies(&[&stream[..cut], &stream[cut..cut2], &stream[cut2..]]);
                assert_eq!(got.len(), 5, "cut at {cut} and {cut2}");
                assert_eq!(got[2].0, Scanned::Reply { error: true });
                assert_eq!(
                    got[2].1, b"-ERR a long error line\r\n",
                    "cut at {cut} and {cut2}"
                );
            }
        }
    }

    #[test]
    fn byte_by_byte() {
        let stream: &[u8] = b"-ERR x\r\n+PONG\r\n>2\r\n+a\r\n+b\r\n$3\r\nabc\r\n";
        let chunks: Vec<&[u8]> = stream.chunks(1).collect();
        let got = replies(&chunks);
        let kinds: Vec<Scanned> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            kinds,
            [
                Scanned::Reply { error: true },
                Scanned::Reply { error: false },
                Scanned::Push,
                Scanned::Reply { error: false }
            ]
        );
        assert_eq!(got[0].1, b"-ERR x\r\n");
    }
}
