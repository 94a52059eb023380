//! The kernel's side of an executor's ring, and every `unsafe` line it needs: the ring's set-up and
//! probing, the registered ring descriptor and the `io_uring_enter` call that uses it, the provided
//! receive buffers (their memory is the kernel's to write between a receive and its give-back), the
//! timestamped `recvmsg` header, and sockets with the address their `CONNECT` reads. Everything here
//! has a safe API; what the drivers above (`ring/`, `connect.rs`) keep is pushing SQEs, each with
//! the rule of the buffers it points at.

use io_uring::IoUring;
use io_uring::opcode;
use io_uring::types::{BufRingEntry, Timespec};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use crate::net::target::Target;

/// The buffer group id of the executor's receive buffers.
pub(crate) const BGID: u16 = 7;
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
/// Asks the CPU to bring the cache lines of `*r` (up to `lines` of them) into the cache: a hint that
/// reads nothing and cannot fault. Nothing off x86_64.
#[inline]
pub(crate) fn prefetch<T>(r: &T, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = (r as *const T).cast::<i8>();
        let size = std::mem::size_of::<T>().max(1);
        for off in (0..size).step_by(64).take(lines.max(1)) {
            // SAFETY: a prefetch only hints the cache; the address is inside a live object.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (r, lines);
}

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
pub(crate) fn register_ring_fd(ring: &IoUring) -> Option<u32> {
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
pub(crate) fn unregister_ring_fd(ring: &IoUring, index: u32) {
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
pub(crate) struct BufRing {
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
    pub(crate) fn new(ring: &IoUring, count: u16, size: usize) -> io::Result<BufRing> {
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
    pub(crate) fn data(&self, bid: u16, len: usize) -> &[u8] {
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
    pub(crate) fn give_back(&mut self, bid: u16) {
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

    pub(crate) fn publish(&self) {
        // SAFETY: the tail field of the first entry, as the kernel's ABI defines it: a u16, aligned,
        // in the mapping, and only ever accessed atomically from here.
        let tail = unsafe { AtomicU16::from_ptr(std::ptr::addr_of_mut!((*self.entries).resv)) };
        tail.store(self.tail, Ordering::Release);
    }

    /// Ends the registration with `ring` (the kernel takes no buffer from it after this) and frees it.
    pub(crate) fn unregister(mut self, ring: &IoUring) {
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
pub(crate) struct RxStamps {
    pub(crate) msghdr: Box<libc::msghdr>,
}

impl RxStamps {
    pub(crate) fn new() -> RxStamps {
        // SAFETY: msghdr is plain data; all-zero is a valid value (null pointers, zero lengths).
        let mut msghdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msghdr.msg_controllen = STAMP_CONTROL_LEN;
        RxStamps { msghdr }
    }

    /// Asks the kernel to timestamp what socket `fd` receives.
    pub(crate) fn enable(fd: &OwnedFd) -> bool {
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
    pub(crate) fn parse(&self, buf: &[u8]) -> Option<(usize, usize, Option<u64>)> {
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
pub(crate) struct Clock {
    pub(crate) now: Instant,
    pub(crate) real_ns: u64,
}

/// The widest gap between the two monotonic reads around the wall-clock read that [`Clock::read`]
/// takes as one moment (both are vDSO reads of tens of nanoseconds each).
const PAIR_GAP: Duration = Duration::from_micros(2);
/// How many times [`Clock::read`] reads the pair before it keeps the closest one.
const PAIR_TRIES: usize = 4;

impl Clock {
    pub(crate) fn read(stamps: bool) -> Clock {
        if !stamps {
            return Clock {
                now: Instant::now(),
                real_ns: 0,
            };
        }
        Clock::paired(Instant::now, || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        })
    }

    /// The two clocks at one moment: the wall clock read between two monotonic reads, the moment
    /// being their midpoint. An interrupt or a preemption between the reads would shift every arrival
    /// converted with the pair by its length (earlier, so latencies would read short), so a pair
    /// whose reads are more than [`PAIR_GAP`] apart is read again, and after [`PAIR_TRIES`] the
    /// closest pair is kept.
    fn paired(mono: impl Fn() -> Instant, wall: impl Fn() -> u64) -> Clock {
        let read = || {
            let before = mono();
            let real_ns = wall();
            let gap = mono().saturating_duration_since(before);
            let now = before + gap / 2;
            (gap, Clock { now, real_ns })
        };
        let mut best = read();
        for _ in 1..PAIR_TRIES {
            if best.0 <= PAIR_GAP {
                break;
            }
            let next = read();
            if next.0 < best.0 {
                best = next;
            }
        }
        best.1
    }

    /// When a buffer stamped `stamp` arrived: `now` less its age, never later than `now`.
    pub(crate) fn arrival(&self, stamp: Option<u64>) -> Instant {
        match stamp {
            Some(t) if self.real_ns > 0 => self
                .now
                .checked_sub(Duration::from_nanos(self.real_ns.saturating_sub(t)))
                .unwrap_or(self.now),
            _ => self.now,
        }
    }
}

/// `io_uring_enter` on the ring registered as `index` ([`register_ring_fd`]): submits `to_submit`
/// SQEs and waits up to `wait` for `want` completions.
pub(crate) fn enter_registered(
    index: u32,
    to_submit: u32,
    want: u32,
    wait: Duration,
) -> io::Result<usize> {
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
    // the ring, made by `register_ring_fd` and dropped with its driver.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            index,
            to_submit as libc::c_uint,
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

/// Submits what `ring` has queued until its submission queue has room for `n` more entries (so `n`
/// linked entries go in one submission).
pub(crate) fn make_room(ring: &mut IoUring, n: usize) {
    loop {
        let sq = ring.submission();
        let free = sq.capacity() - sq.len();
        drop(sq);
        if free >= n {
            return;
        }
        let _ = ring.submit();
    }
}

/// Shuts socket `fd` down both ways; the operations pending on it then complete.
pub(crate) fn shutdown(fd: &OwnedFd) {
    // SAFETY: shutdown(2) on a descriptor we own.
    unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
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

    /// Fake clocks for [`Clock::paired`]: each read of the monotonic clock moves it by the next step
    /// (µs), and the wall clock reads 10^12 ns plus the monotonic clock's microseconds so far.
    fn paired_with(steps: &[u64]) -> (Instant, Clock) {
        use std::cell::Cell;
        let base = Instant::now();
        let (at, next) = (Cell::new(0u64), Cell::new(0usize));
        let mono = || {
            let step = steps.get(next.get()).copied().unwrap_or(0);
            next.set(next.get() + 1);
            at.set(at.get() + step);
            base + Duration::from_micros(at.get())
        };
        let wall = || 1_000_000_000_000 + at.get() * 1_000;
        (base, Clock::paired(mono, wall))
    }

    #[test]
    fn a_pair_of_clocks_split_by_a_preemption_is_read_again() {
        // Reads at 0 and 50 µs (preempted around the wall read, taken at 0), then at 60 and 60:
        // the second pair is kept, so a stamp maps to its true instant.
        let (base, clock) = paired_with(&[0, 50, 10, 0]);
        assert_eq!(clock.now, base + Duration::from_micros(60));
        assert_eq!(clock.real_ns, 1_000_000_000_000 + 60_000);
        let stamp = 1_000_000_000_000 + 55_000;
        assert_eq!(clock.arrival(Some(stamp)), base + Duration::from_micros(55));
        // A close pair on the first try is taken at once, at the midpoint of its reads.
        let (base, clock) = paired_with(&[7, 1]);
        assert_eq!(clock.real_ns, 1_000_000_000_000 + 7_000);
        assert_eq!(clock.now, base + Duration::from_nanos(7_500));
    }

    #[test]
    fn when_no_pair_is_close_the_closest_is_kept() {
        // Gaps of 40, 9, 30 and 20 µs: the second pair (reads at 40 + 0 and 40 + 9) is kept.
        let (base, clock) = paired_with(&[0, 40, 0, 9, 0, 30, 0, 20]);
        assert_eq!(clock.real_ns, 1_000_000_000_000 + 40_000);
        assert_eq!(clock.now, base + Duration::from_nanos(44_500));
    }
}
