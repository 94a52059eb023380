//! An io_uring whose operations own what the kernel reads and writes. Every buffer an SQE points at
//! is moved into the ring's in-flight table when the operation is queued and comes back only with
//! its completion: a send's bytes ([`Back::Sent`]), a one-shot receive's buffer
//! ([`Back::Received`]), a `CONNECT`'s address (dropped at its completion). A multishot receive's
//! data arrives as a [`RecvBuf`] guard that gives its buffer back when dropped. A ring dropped while
//! operations are still in the kernel leaks what they use instead of freeing it. Safe code outside
//! this module can therefore neither free, change nor read memory the kernel owns.

use super::bufring::BufRing;
pub use super::bufring::RecvBuf;
use super::socket::ConnectArgs;
use io_uring::types::{Fd, Fixed, SubmitArgs, Timespec};
use io_uring::{IoUring, cqueue, opcode, squeue};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::Duration;

/// The buffer group id of a ring's provided receive buffers.
const BGID: u16 = 7;
/// Control space of a timestamped receive: one `cmsghdr` with a `timespec`.
const STAMP_CONTROL_LEN: usize = 32;

/// How a ring was set up: the best the kernel accepted.
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

/// What an operation is; the low byte of its user data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Recv = 1,
    Send = 2,
    Connect = 3,
    /// A `CONNECT`'s linked timeout, and a cancellation (their completions carry nothing).
    Timeout = 4,
}

/// Names an operation: its slot (a connection), the slot's generation when it was queued (so the
/// completions of an earlier socket are told apart), and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub slot: u32,
    pub generation: u16,
    pub op: Op,
}

impl Key {
    pub fn new(slot: usize, generation: u16, op: Op) -> Key {
        Key {
            slot: slot as u32,
            generation,
            op,
        }
    }

    fn user_data(self) -> u64 {
        ((self.slot as u64) << 32) | ((self.generation as u64) << 8) | self.op as u64
    }

    fn of(user_data: u64) -> Option<Key> {
        let op = match user_data & 0xff {
            1 => Op::Recv,
            2 => Op::Send,
            3 => Op::Connect,
            4 => Op::Timeout,
            _ => return None,
        };
        Some(Key {
            slot: (user_data >> 32) as u32,
            generation: ((user_data >> 8) & 0xffff) as u16,
            op,
        })
    }
}

/// What a completion gives back.
pub enum Back<S> {
    Nothing,
    /// A send's bytes, all of them (the completion's result says how many went).
    Sent(S),
    /// A one-shot receive's buffer (the result says how many bytes are in it).
    Received(Box<[u8]>),
    /// A multishot receive's buffer.
    Buffer(RecvBuf),
}

/// One completion.
pub struct Completion<S> {
    pub key: Key,
    /// The kernel's result: bytes moved, 0, or a negated errno.
    pub res: i32,
    /// A multishot receive stays armed.
    pub more: bool,
    pub back: Back<S>,
}

/// How to set a ring up.
pub struct Setup<'a> {
    pub entries: u32,
    /// Provided receive buffers for multishot receives: how many (a power of two) and their size.
    pub buffers: Option<(u16, usize)>,
    /// Multishot receives are `recvmsg`s that carry each buffer's kernel receive timestamp.
    pub stamps: bool,
    /// Descriptors to register as files (slot i = `files[i]`, -1 for none); empty for none.
    pub files: &'a [RawFd],
}

/// What the kernel holds of one slot's operations.
struct InFlight<S> {
    send: Option<S>,
    recv: Option<Box<[u8]>>,
    connect: Option<Box<ConnectArgs>>,
    /// A multishot receive is armed.
    armed: bool,
}

impl<S> Default for InFlight<S> {
    fn default() -> Self {
        InFlight {
            send: None,
            recv: None,
            connect: None,
            armed: false,
        }
    }
}

impl<S> InFlight<S> {
    fn busy(&self) -> bool {
        self.send.is_some() || self.recv.is_some() || self.connect.is_some() || self.armed
    }
}

/// One thread's ring, with the memory its operations use. `S` is what a send's bytes are held in:
/// they are read in place, so they must stay where they are while the table holds `S` (each slot's
/// entry is boxed, so `S` itself does not move).
pub struct Ring<S: AsRef<[u8]>> {
    uring: IoUring,
    mode: RingMode,
    /// The ring's registered index for `io_uring_enter`, when the kernel took the registration.
    index: Option<u32>,
    /// How many slots are registered files (0 when the kernel refused the table).
    files: usize,
    bufs: Option<Rc<BufRing>>,
    /// The header of timestamped receives, read by the kernel while they are armed.
    stamps: Option<Box<libc::msghdr>>,
    table: Vec<Box<InFlight<S>>>,
}

/// Creates a ring with the best flags the kernel accepts.
fn build(entries: u32) -> io::Result<(IoUring, RingMode)> {
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

impl<S: AsRef<[u8]>> Ring<S> {
    pub fn new(setup: Setup<'_>) -> io::Result<Ring<S>> {
        let (uring, mode) = build(setup.entries)?;
        let bufs = match setup.buffers {
            Some((count, size)) => Some(Rc::new(BufRing::new(&uring, BGID, count, size)?)),
            None => None,
        };
        // Sockets as registered files, so no operation looks its file up; a kernel that refuses the
        // table gets plain descriptors.
        let files =
            if !setup.files.is_empty() && uring.submitter().register_files(setup.files).is_ok() {
                setup.files.len()
            } else {
                0
            };
        let stamps = (setup.stamps && bufs.is_some()).then(|| {
            // SAFETY: msghdr is plain data; all-zero is a valid value (null pointers, zero lengths).
            let mut msghdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
            msghdr.msg_controllen = STAMP_CONTROL_LEN;
            msghdr
        });
        let index = enter::register_ring_fd(&uring);
        Ok(Ring {
            uring,
            mode,
            index,
            files,
            bufs,
            stamps,
            table: Vec::new(),
        })
    }

    pub fn mode(&self) -> RingMode {
        self.mode
    }

    /// True when multishot receives carry kernel timestamps.
    pub fn stamped(&self) -> bool {
        self.stamps.is_some()
    }

    /// True when slot `slot` is a registered file (its operations name the slot, not `fd`).
    pub fn is_fixed(&self, slot: usize) -> bool {
        slot < self.files
    }

    /// Puts `fd` (or nothing, -1) in registered slot `slot`; nothing for a slot beyond the table.
    pub fn set_file(&mut self, slot: usize, fd: RawFd) -> io::Result<()> {
        if !self.is_fixed(slot) {
            return Ok(());
        }
        self.uring
            .submitter()
            .register_files_update(slot as u32, &[fd])
            .map(|_| ())
    }

    fn entry(&mut self, slot: usize) -> &mut InFlight<S> {
        if slot >= self.table.len() {
            self.table.resize_with(slot + 1, Box::default);
        }
        &mut self.table[slot]
    }

    fn push(&mut self, sqe: squeue::Entry) {
        // SAFETY: every buffer an SQE points at is in the in-flight table (or, for the receive
        // header and the provided buffers, owned by the ring) until the operation's completion; a
        // ring dropped before then leaks them.
        while unsafe { self.uring.submission().push(&sqe) }.is_err() {
            let _ = self.uring.submit();
        }
    }

    /// Submits what is queued until the submission queue has room for `n` more entries.
    fn make_room(&mut self, n: usize) {
        loop {
            let sq = self.uring.submission();
            let free = sq.capacity() - sq.len();
            drop(sq);
            if free >= n {
                return;
            }
            let _ = self.uring.submit();
        }
    }

    /// Sends `bytes[from..to]` on `fd` (slot `key.slot`); the bytes come back with the completion.
    /// One send at a time per slot.
    pub fn send(&mut self, key: Key, fd: RawFd, bytes: S, from: usize, to: usize) {
        let fixed = self.is_fixed(key.slot as usize);
        let e = self.entry(key.slot as usize);
        assert!(e.send.is_none(), "one send at a time per slot");
        let stored: &S = e.send.insert(bytes);
        let rest = &stored.as_ref()[from..to];
        let (ptr, len) = (rest.as_ptr(), rest.len() as u32);
        let sqe = if fixed {
            opcode::Send::new(Fixed(key.slot), ptr, len).build()
        } else {
            opcode::Send::new(Fd(fd), ptr, len).build()
        };
        self.push(sqe.user_data(key.user_data()));
    }

    /// Arms a multishot receive on `fd` into the provided buffers (timestamped when the ring is).
    pub fn recv_multi(&mut self, key: Key, fd: RawFd) {
        assert!(self.bufs.is_some(), "a ring without provided buffers");
        let fixed = self.is_fixed(key.slot as usize);
        let sqe = match (&self.stamps, fixed) {
            (Some(h), true) => opcode::RecvMsgMulti::new(Fixed(key.slot), &**h, BGID).build(),
            (Some(h), false) => opcode::RecvMsgMulti::new(Fd(fd), &**h, BGID).build(),
            (None, true) => opcode::RecvMulti::new(Fixed(key.slot), BGID).build(),
            (None, false) => opcode::RecvMulti::new(Fd(fd), BGID).build(),
        };
        self.entry(key.slot as usize).armed = true;
        self.push(sqe.user_data(key.user_data()));
    }

    /// Receives once into `buf`, which comes back with the completion. One at a time per slot.
    pub fn recv(&mut self, key: Key, fd: RawFd, buf: Box<[u8]>) {
        let e = self.entry(key.slot as usize);
        assert!(e.recv.is_none(), "one receive at a time per slot");
        let b = e.recv.insert(buf);
        let sqe = opcode::Recv::new(Fd(fd), b.as_mut_ptr(), b.len() as u32).build();
        self.push(sqe.user_data(key.user_data()));
    }

    /// Connects `fd` to the address in `args`, cancelled after its timeout (the timeout's completion
    /// is `timeout_key`). The arguments are dropped at the `CONNECT`'s completion.
    pub fn connect(&mut self, key: Key, timeout_key: Key, fd: RawFd, args: Box<ConnectArgs>) {
        let fixed = self.is_fixed(key.slot as usize);
        let e = self.entry(key.slot as usize);
        assert!(e.connect.is_none(), "one connect at a time per slot");
        let a = e.connect.insert(args);
        let connect = if fixed {
            opcode::Connect::new(Fixed(key.slot), a.sockaddr(), a.len())
        } else {
            opcode::Connect::new(Fd(fd), a.sockaddr(), a.len())
        }
        .build()
        .flags(squeue::Flags::IO_LINK)
        .user_data(key.user_data());
        let timeout = opcode::LinkTimeout::new(a.timeout())
            .build()
            .user_data(timeout_key.user_data());
        // The linked pair goes in one submission: a full queue is flushed before the first.
        self.make_room(2);
        self.push(connect);
        self.push(timeout);
    }

    /// Cancels the operation `target`; the cancellation's own completion is `key`.
    pub fn cancel(&mut self, target: Key, key: Key) {
        let sqe = opcode::AsyncCancel::new(target.user_data())
            .build()
            .user_data(key.user_data());
        self.push(sqe);
    }

    /// True while slot `slot` has an operation that holds memory in the kernel.
    pub fn slot_busy(&self, slot: usize) -> bool {
        self.table.get(slot).is_some_and(|e| e.busy())
    }

    /// Submits what is queued and waits up to `wait` for `want` completions. A wait that ends by its
    /// timeout, a signal or a full completion queue is not an error.
    pub fn submit_and_wait(&mut self, wait: Duration, want: u32) -> io::Result<()> {
        if let Some(b) = &self.bufs {
            b.publish();
        }
        let entered = match self.index {
            Some(index) => {
                let to_submit = self.uring.submission().len() as u32;
                enter::enter_registered(index, to_submit, want, wait)
            }
            None => {
                let ts = Timespec::new()
                    .sec(wait.as_secs())
                    .nsec(wait.subsec_nanos());
                let args = SubmitArgs::new().timespec(&ts);
                self.uring
                    .submitter()
                    .submit_with_args(want as usize, &args)
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

    /// Moves the completions posted into `out`, each with what it gives back.
    pub fn reap(&mut self, out: &mut Vec<Completion<S>>) {
        for e in self.uring.completion() {
            let Some(key) = Key::of(e.user_data()) else {
                continue;
            };
            let (res, flags) = (e.result(), e.flags());
            let more = cqueue::more(flags);
            let slot = key.slot as usize;
            let back = match key.op {
                Op::Recv => {
                    let buf = cqueue::buffer_select(flags)
                        .and_then(|bid| self.bufs.as_ref()?.handed_over(bid, res.max(0) as usize));
                    let entry = self.table.get_mut(slot);
                    match (buf, entry) {
                        (Some(b), e) => {
                            if let Some(e) = e {
                                e.armed &= more;
                            }
                            Back::Buffer(b)
                        }
                        (None, Some(e)) => match e.recv.take() {
                            Some(b) => Back::Received(b),
                            None => {
                                e.armed &= more;
                                Back::Nothing
                            }
                        },
                        (None, None) => Back::Nothing,
                    }
                }
                Op::Send => match self.table.get_mut(slot).and_then(|e| e.send.take()) {
                    Some(s) => Back::Sent(s),
                    None => Back::Nothing,
                },
                Op::Connect => {
                    if let Some(e) = self.table.get_mut(slot) {
                        e.connect = None;
                    }
                    Back::Nothing
                }
                Op::Timeout => Back::Nothing,
            };
            out.push(Completion {
                key,
                res,
                more,
                back,
            });
        }
    }

    /// Splits a timestamped receive's buffer into where its payload starts, how long it is, and its
    /// receive timestamp (nanoseconds of `CLOCK_REALTIME`), when the kernel gave one.
    pub fn split_stamped(&self, buf: &[u8]) -> Option<(usize, usize, Option<u64>)> {
        let out = io_uring::types::RecvMsgOut::parse(buf, self.stamps.as_deref()?).ok()?;
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

impl<S: AsRef<[u8]>> Drop for Ring<S> {
    /// What the kernel may still read or write (an operation whose completion never came) is leaked
    /// rather than freed: the table's buffers, the provided buffers and the receive header.
    fn drop(&mut self) {
        if self.table.iter().any(|e| e.busy()) {
            std::mem::forget(std::mem::take(&mut self.table));
            std::mem::forget(self.stamps.take());
            std::mem::forget(self.bufs.take());
        } else if let Some(b) = &self.bufs {
            b.unregister(&self.uring);
        }
        if let Some(index) = self.index {
            enter::unregister_ring_fd(&self.uring, index);
        }
    }
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
    BufRing::new(&ring, BGID, 8, 64)
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

/// The registered ring descriptor and the `io_uring_enter` that uses it: kernel ABI the io-uring
/// crate does not keep across calls (its registered index lives in one `Submitter`).
mod enter {
    use super::*;

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
    pub(super) fn register_ring_fd(ring: &IoUring) -> Option<u32> {
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
    pub(super) fn unregister_ring_fd(ring: &IoUring, index: u32) {
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

    /// `io_uring_enter` on the ring registered as `index` ([`register_ring_fd`]): submits `to_submit`
    /// SQEs and waits up to `wait` for `want` completions.
    pub(super) fn enter_registered(
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::socket::{Peer, new_socket};
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    fn ring(buffers: Option<(u16, usize)>) -> Ring<Vec<u8>> {
        Ring::new(Setup {
            entries: 8,
            buffers,
            stamps: false,
            files: &[],
        })
        .expect("a ring")
    }

    /// Waits until `ring` posts at least one completion (a few tries of 100 ms).
    fn completions(ring: &mut Ring<Vec<u8>>) -> Vec<Completion<Vec<u8>>> {
        let mut out = Vec::new();
        for _ in 0..50 {
            ring.submit_and_wait(Duration::from_millis(100), 1).unwrap();
            ring.reap(&mut out);
            if !out.is_empty() {
                break;
            }
        }
        out
    }

    #[test]
    fn a_send_holds_its_bytes_until_its_completion_gives_them_back() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut r = ring(None);
        let bytes = b"PING\r\n".to_vec();
        let at = bytes.as_ptr();
        r.send(Key::new(3, 9, Op::Send), a.as_raw_fd(), bytes, 1, 6);
        assert!(
            r.slot_busy(3),
            "the table holds the bytes while the send is queued"
        );
        let done = completions(&mut r);
        assert_eq!(done.len(), 1);
        let c = &done[0];
        assert_eq!((c.key, c.res), (Key::new(3, 9, Op::Send), 5));
        match &c.back {
            Back::Sent(v) => assert_eq!((v.as_ptr(), &v[..]), (at, &b"PING\r\n"[..])),
            _ => panic!("the send's bytes come back with it"),
        }
        assert!(!r.slot_busy(3));
        let mut got = [0u8; 5];
        b.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ING\r\n");
    }

    #[test]
    fn a_received_buffer_stays_out_of_the_kernel_until_its_guard_drops() {
        let (mut a, b) = UnixStream::pair().unwrap();
        // Two buffers: holding both guards leaves the kernel none for the third message.
        let mut r = ring(Some((2, 64)));
        let key = Key::new(0, 1, Op::Recv);
        r.recv_multi(key, b.as_raw_fd());
        let mut held = Vec::new();
        for msg in [&b"one"[..], b"two"] {
            a.write_all(msg).unwrap();
            let done = completions(&mut r);
            assert_eq!(done.len(), 1);
            let c = done.into_iter().next().unwrap();
            assert!(c.more, "the multishot receive stays armed");
            match c.back {
                Back::Buffer(g) => {
                    assert_eq!(g.data(), msg);
                    held.push(g);
                }
                _ => panic!("a multishot receive hands over a buffer"),
            }
        }
        a.write_all(b"three").unwrap();
        let done = completions(&mut r);
        assert_eq!(done.len(), 1);
        assert_eq!((done[0].res, done[0].more), (-libc::ENOBUFS, false));
        assert!(!r.slot_busy(0), "the receive ended");
        // The guards give their buffers back: the message waiting in the socket arrives.
        drop(held);
        r.recv_multi(key, b.as_raw_fd());
        let done = completions(&mut r);
        match &done[0].back {
            Back::Buffer(g) => assert_eq!(g.data(), b"three"),
            _ => panic!("the buffers were given back"),
        }
    }

    #[test]
    fn a_connect_holds_its_address_until_it_completes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (fd, args) = new_socket(Peer::Tcp(addr), Duration::from_secs(5)).unwrap();
        let mut r = ring(None);
        let key = Key::new(1, 0, Op::Connect);
        r.connect(key, Key::new(1, 0, Op::Timeout), fd.as_raw_fd(), args);
        assert!(r.slot_busy(1));
        let mut done = Vec::new();
        while !done.iter().any(|c: &Completion<Vec<u8>>| c.key == key) {
            done.extend(completions(&mut r));
        }
        let c = done.iter().find(|c| c.key == key).unwrap();
        assert_eq!(c.res, 0);
        assert!(!r.slot_busy(1));
        assert!(listener.accept().is_ok());
    }
}
