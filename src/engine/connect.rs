//! A shard's first connections, opened together before its test starts: every `CONNECT`, TLS
//! handshake and set-up runs at once on a ring of the executor's own (a bounded number in flight, so
//! the server's listen backlog is not overrun), each bounded by `--connect-timeout`, and a stop
//! (Ctrl+C) ends the wait at once. The sockets are then handed to the executor's driver
//! ([`crate::engine::ring::Driver`]).

use crate::config::Config;
use crate::engine::opening::Opening;
use crate::engine::ring::Socket;
use crate::engine::uring::{self, ConnectArgs};
use crate::net::ConnError;
use crate::net::target::Target;
use io_uring::types::{Fd, SubmitArgs, Timespec};
use io_uring::{IoUring, opcode, squeue};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Openings in flight at once.
const IN_FLIGHT: usize = 128;
const RECV_LEN: usize = 4096;

const OP_CONNECT: u64 = 1;
const OP_TIMEOUT: u64 = 2;
const OP_SEND: u64 = 3;
const OP_RECV: u64 = 4;
const OP_CANCEL: u64 = 5;

/// One connection being opened. Its address, receive buffer and opening stay put while an
/// operation on it is in the kernel (each is boxed and dropped only once nothing is pending).
struct Slot {
    fd: OwnedFd,
    /// Read by the kernel while the `CONNECT` and its timeout are in flight; held, never read here.
    _args: Box<ConnectArgs>,
    opening: Box<Opening>,
    buf: Box<[u8]>,
    connect_pending: bool,
    recv_pending: bool,
    /// The bytes of the send in the kernel ([`Opening::lend`]), given back at its completion, and
    /// how many of them went.
    lent: Option<Vec<u8>>,
    /// Set when the lent bytes (or their rest, after a partial send) are to be sent.
    resend: bool,
    cancel_sent: bool,
    sent: usize,
    ready: bool,
}

impl Slot {
    fn pending(&self) -> bool {
        self.connect_pending || self.recv_pending || self.lent.is_some()
    }
}

fn ud(i: usize, op: u64) -> u64 {
    ((i as u64) << 8) | op
}

struct Connector<'a> {
    cfg: &'a Config,
    ring: IoUring,
    slots: Vec<Option<Slot>>,
    targets: Vec<Target>,
    first_error: Option<ConnError>,
}

/// Opens one connection to each of `targets` (TLS and set-up included). Returns them in order, or
/// the first failure. When `stopped` turns true the openings are abandoned and the slots not yet
/// open are `None`.
pub(crate) fn open_all(
    cfg: &Config,
    targets: Vec<Target>,
    stopped: &dyn Fn() -> bool,
) -> Result<Vec<Option<Socket>>, ConnError> {
    let n = targets.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let entries = (IN_FLIGHT * 3).next_power_of_two() as u32;
    let ring = uring::build(entries)
        .map(|(r, _)| r)
        .map_err(|e| ConnError::Lost {
            addr: cfg.target.display(),
            reason: format!("could not set up the executor's io_uring: {e}"),
        })?;
    let mut c = Connector {
        cfg,
        ring,
        slots: (0..n).map(|_| None).collect(),
        targets,
        first_error: None,
    };
    let mut next = 0;
    let mut open = 0;
    let mut done: Vec<Option<Socket>> = (0..n).map(|_| None).collect();
    let mut finished = 0;
    while finished < n {
        if stopped() {
            break;
        }
        while open < IN_FLIGHT && next < n && c.first_error.is_none() {
            c.start(next);
            next += 1;
            open += 1;
        }
        if c.first_error.is_some() {
            break;
        }
        let now = Instant::now();
        let mut wait = Duration::from_millis(10);
        for (i, s) in c.slots.iter().enumerate() {
            if let Some(s) = s {
                if now >= s.opening.deadline {
                    c.first_error.get_or_insert_with(|| ConnError::Connect {
                        addr: c.targets[i].display(),
                        reason: format!(
                            "no answer within {} ms",
                            cfg.run.connect_timeout.as_millis()
                        ),
                    });
                }
                wait = wait.min(s.opening.deadline.saturating_duration_since(now));
            }
        }
        if c.first_error.is_some() {
            break;
        }
        c.wait(wait);
        for i in c.reap() {
            let s = c.slots[i].take().expect("a ready slot");
            let fd = s.fd;
            done[i] = Some((fd, s.opening.into_tls()));
            finished += 1;
            open -= 1;
        }
    }
    c.abandon();
    match c.first_error.take() {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

impl Connector<'_> {
    fn push(&mut self, sqe: squeue::Entry) {
        // SAFETY: every buffer an SQE points at is boxed in a slot that is kept until its
        // operations complete (`Slot::pending`), or until `abandon` has waited for them.
        while unsafe { self.ring.submission().push(&sqe) }.is_err() {
            let _ = self.ring.submit();
        }
    }

    fn fail(&mut self, i: usize, e: ConnError) {
        self.first_error.get_or_insert(e);
        let _ = i;
    }

    fn start(&mut self, i: usize) {
        let cfg = self.cfg;
        let target = self.targets[i].clone();
        let addr = target.display();
        let (fd, args) = match uring::new_socket(&target, cfg.run.connect_timeout) {
            Ok(x) => x,
            Err(e) => {
                return self.fail(
                    i,
                    ConnError::Connect {
                        addr,
                        reason: crate::net::io_reason(e),
                    },
                );
            }
        };
        let opening = match Opening::new(
            addr,
            cfg.tls.as_ref(),
            &cfg.setup,
            Instant::now() + cfg.run.connect_timeout,
        ) {
            Ok(o) => o,
            Err(e) => return self.fail(i, e),
        };
        let connect = opcode::Connect::new(Fd(fd.as_raw_fd()), args.sockaddr(), args.len)
            .build()
            .flags(squeue::Flags::IO_LINK)
            .user_data(ud(i, OP_CONNECT));
        let timeout = opcode::LinkTimeout::new(&args.timeout)
            .build()
            .user_data(ud(i, OP_TIMEOUT));
        self.slots[i] = Some(Slot {
            fd,
            _args: args,
            opening: Box::new(opening),
            buf: vec![0u8; RECV_LEN].into_boxed_slice(),
            connect_pending: true,
            recv_pending: false,
            lent: None,
            resend: false,
            cancel_sent: false,
            sent: 0,
            ready: false,
        });
        // The linked pair goes in one submission.
        uring::make_room(&mut self.ring, 2);
        self.push(connect);
        self.push(timeout);
    }

    fn wait(&mut self, wait: Duration) {
        let ts = Timespec::new()
            .sec(wait.as_secs())
            .nsec(wait.subsec_nanos());
        let args = SubmitArgs::new().timespec(&ts);
        let _ = self.ring.submitter().submit_with_args(1, &args);
    }

    /// Handles the completions posted; returns the slots that became ready.
    fn reap(&mut self) -> Vec<usize> {
        let cqes: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|e| (e.user_data(), e.result()))
            .collect();
        let mut ready = Vec::new();
        for (data, res) in cqes {
            let (i, op) = ((data >> 8) as usize, data & 0xff);
            let Some(s) = self.slots.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            let addr = || self.targets[i].display();
            let step = match op {
                OP_CONNECT => {
                    s.connect_pending = false;
                    if res < 0 {
                        let e = if res == -libc::ECANCELED {
                            io::Error::from(io::ErrorKind::TimedOut)
                        } else {
                            io::Error::from_raw_os_error(-res)
                        };
                        Err(ConnError::Connect {
                            addr: addr(),
                            reason: crate::net::io_reason(e),
                        })
                    } else {
                        s.opening.connected()
                    }
                }
                OP_SEND => {
                    let whole = s.lent.as_ref().map_or(0, Vec::len);
                    let done = res < 0 || s.sent + res as usize >= whole;
                    if done && let Some(v) = s.lent.take() {
                        // The kernel is done with the bytes: they go back to the opening.
                        s.opening.sent(v);
                        s.sent = 0;
                    }
                    if res < 0 {
                        Err(lost(addr(), -res))
                    } else {
                        if !done {
                            s.sent += res as usize;
                            s.resend = true;
                        }
                        Ok(())
                    }
                }
                OP_RECV => {
                    s.recv_pending = false;
                    match res {
                        n if n > 0 => {
                            let len = n as usize;
                            let data = s.buf[..len].to_vec();
                            s.opening.received(&data)
                        }
                        0 if !s.ready => Err(s.opening.closed()),
                        n if n < 0 && n != -libc::ECANCELED && !s.ready => Err(lost(addr(), -n)),
                        _ => Ok(()),
                    }
                }
                _ => continue,
            };
            if let Err(e) = step {
                self.fail(i, e);
                continue;
            }
            if self.progress(i) {
                ready.push(i);
            }
        }
        ready
    }

    /// Sends or receives what slot `i` needs next; true once it is open with nothing in the kernel.
    fn progress(&mut self, i: usize) -> bool {
        let Some(s) = self.slots[i].as_mut() else {
            return false;
        };
        if s.connect_pending {
            return false;
        }
        if s.lent.is_none() {
            s.lent = s.opening.lend();
            s.resend = s.lent.is_some();
        }
        if let Some(out) = s.lent.as_ref() {
            if std::mem::take(&mut s.resend) {
                let rest = &out[s.sent..];
                let sqe = opcode::Send::new(Fd(s.fd.as_raw_fd()), rest.as_ptr(), rest.len() as u32)
                    .build()
                    .user_data(ud(i, OP_SEND));
                // The bytes stay in `s.lent` until the send's completion.
                self.push(sqe);
            }
            return false;
        }
        if s.opening.ready() {
            s.ready = true;
            if s.recv_pending {
                if !s.cancel_sent {
                    s.cancel_sent = true;
                    let sqe = opcode::AsyncCancel::new(ud(i, OP_RECV))
                        .build()
                        .user_data(ud(i, OP_CANCEL));
                    self.push(sqe);
                }
                return false;
            }
            return true;
        }
        if !s.recv_pending {
            let sqe = opcode::Recv::new(Fd(s.fd.as_raw_fd()), s.buf.as_mut_ptr(), RECV_LEN as u32)
                .build()
                .user_data(ud(i, OP_RECV));
            s.recv_pending = true;
            self.push(sqe);
        }
        false
    }

    /// Shuts every slot still opening and waits until the kernel is done with all of them.
    fn abandon(&mut self) {
        for i in 0..self.slots.len() {
            let Some(s) = self.slots[i].as_ref() else {
                continue;
            };
            uring::shutdown(&s.fd);
            if s.connect_pending {
                let sqe = opcode::AsyncCancel::new(ud(i, OP_CONNECT))
                    .build()
                    .user_data(ud(i, OP_CANCEL));
                self.push(sqe);
            }
        }
        // Cancelled and shut, every operation ends at once; should one not, its slot is leaked
        // rather than freed under the kernel.
        let until = Instant::now() + self.cfg.run.connect_timeout + Duration::from_secs(1);
        while self.slots.iter().flatten().any(Slot::pending) {
            if Instant::now() >= until {
                for s in self.slots.drain(..).flatten() {
                    if s.pending() {
                        std::mem::forget(s);
                    }
                }
                return;
            }
            self.wait(Duration::from_millis(10));
            let cqes: Vec<(u64, i32)> = self
                .ring
                .completion()
                .map(|e| (e.user_data(), e.result()))
                .collect();
            for (data, _) in cqes {
                let (i, op) = ((data >> 8) as usize, data & 0xff);
                if let Some(s) = self.slots.get_mut(i).and_then(Option::as_mut) {
                    match op {
                        OP_CONNECT => s.connect_pending = false,
                        OP_SEND => s.lent = None,
                        OP_RECV => s.recv_pending = false,
                        _ => {}
                    }
                }
            }
        }
        self.slots.clear();
    }
}

fn lost(addr: String, errno: i32) -> ConnError {
    ConnError::Lost {
        addr,
        reason: io::Error::from_raw_os_error(errno).to_string(),
    }
}
