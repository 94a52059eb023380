//! A shard's first connections, opened together before its test starts: every `CONNECT`, TLS
//! handshake and set-up runs at once on a ring of the executor's own (a bounded number in flight, so
//! the server's listen backlog is not overrun), each bounded by `--connect-timeout`, and a stop
//! (Ctrl+C) ends the wait at once. The sockets are then handed to the executor's driver
//! ([`crate::engine::ring::Driver`]).

use crate::config::EngineSettings;
use crate::engine::opening::Opening;
use crate::engine::ring::Socket;
use crate::net::ConnError;
use crate::net::target::Target;
use crate::sys::ring::{Back, Completion, Key, Op, Ring, Setup};
use crate::sys::socket;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Openings in flight at once.
const IN_FLIGHT: usize = 128;
const RECV_LEN: usize = 4096;

/// One connection being opened. What the kernel reads or writes for it (its address, the bytes of a
/// send, its receive buffer) is in the ring's in-flight table until the operation completes.
struct Slot {
    fd: OwnedFd,
    opening: Box<Opening>,
    /// The receive buffer, while no receive holds it.
    buf: Option<Box<[u8]>>,
    connect_pending: bool,
    recv_pending: bool,
    send_pending: bool,
    cancel_sent: bool,
    /// How many bytes of the send in the kernel went so far.
    sent: usize,
    ready: bool,
}

fn key(i: usize, op: Op) -> Key {
    Key::new(i, 0, op)
}

struct Connector<'a> {
    cfg: &'a EngineSettings,
    ring: Ring<Vec<u8>>,
    slots: Vec<Option<Slot>>,
    targets: Vec<Target>,
    first_error: Option<ConnError>,
    /// The completions of a turn (kept, so a turn allocates nothing for them).
    cqes: Vec<Completion<Vec<u8>>>,
}

/// Opens one connection to each of `targets` (TLS and set-up included). Returns them in order, or
/// the first failure. When `stopped` turns true the openings are abandoned and the slots not yet
/// open are `None`.
pub(crate) fn open_all(
    cfg: &EngineSettings,
    targets: Vec<Target>,
    stopped: &dyn Fn() -> bool,
) -> Result<Vec<Option<Socket>>, ConnError> {
    let n = targets.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let entries = (IN_FLIGHT * 3).next_power_of_two() as u32;
    let setup = Setup {
        entries,
        buffers: None,
        stamps: false,
        files: &[],
    };
    let ring = Ring::new(setup).map_err(|e| ConnError::Lost {
        addr: cfg.target.display(),
        reason: format!("could not set up the executor's io_uring: {e}"),
    })?;
    let mut c = Connector {
        cfg,
        ring,
        slots: (0..n).map(|_| None).collect(),
        targets,
        first_error: None,
        cqes: Vec::new(),
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
                            cfg.connect.connect_timeout.as_millis()
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
    fn fail(&mut self, e: ConnError) {
        self.first_error.get_or_insert(e);
    }

    fn start(&mut self, i: usize) {
        let cfg = self.cfg;
        let target = self.targets[i].clone();
        let addr = target.display();
        let (fd, args) = match socket::new_socket(target.peer(), cfg.connect.connect_timeout) {
            Ok(x) => x,
            Err(e) => {
                return self.fail(ConnError::Connect {
                    addr,
                    reason: crate::net::io_reason(e),
                });
            }
        };
        let opening = match Opening::new(
            addr,
            cfg.tls.as_ref(),
            &cfg.setup,
            Instant::now() + cfg.connect.connect_timeout,
        ) {
            Ok(o) => o,
            Err(e) => return self.fail(e),
        };
        let raw = fd.as_raw_fd();
        self.slots[i] = Some(Slot {
            fd,
            opening: Box::new(opening),
            buf: Some(vec![0u8; RECV_LEN].into_boxed_slice()),
            connect_pending: true,
            recv_pending: false,
            send_pending: false,
            cancel_sent: false,
            sent: 0,
            ready: false,
        });
        self.ring
            .connect(key(i, Op::Connect), key(i, Op::Timeout), raw, args);
    }

    fn wait(&mut self, wait: Duration) {
        let _ = self.ring.submit_and_wait(wait, 1);
    }

    /// Handles the completions posted; returns the slots that became ready.
    fn reap(&mut self) -> Vec<usize> {
        let mut cqes = std::mem::take(&mut self.cqes);
        self.ring.reap(&mut cqes);
        let mut ready = Vec::new();
        for Completion { key, res, back, .. } in cqes.drain(..) {
            let i = key.slot as usize;
            let Some(s) = self.slots.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            let addr = || self.targets[i].display();
            let step = match (key.op, back) {
                (Op::Connect, _) => {
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
                (Op::Send, Back::Sent(v)) => {
                    let whole = v.len();
                    if res >= 0 && s.sent + (res as usize) < whole {
                        // The rest goes from the same bytes.
                        s.sent += res as usize;
                        let raw = s.fd.as_raw_fd();
                        self.ring.send(key, raw, v, s.sent, whole);
                        continue;
                    }
                    // The kernel is done with the bytes: they go back to the opening.
                    s.send_pending = false;
                    s.sent = 0;
                    s.opening.sent(v);
                    if res < 0 {
                        Err(lost(addr(), -res))
                    } else {
                        Ok(())
                    }
                }
                (Op::Recv, Back::Received(buf)) => {
                    s.recv_pending = false;
                    let step = match res {
                        n if n > 0 => s.opening.received(&buf[..n as usize]),
                        0 if !s.ready => Err(s.opening.closed()),
                        n if n < 0 && n != -libc::ECANCELED && !s.ready => Err(lost(addr(), -n)),
                        _ => Ok(()),
                    };
                    s.buf = Some(buf);
                    step
                }
                _ => continue,
            };
            if let Err(e) = step {
                self.fail(e);
                continue;
            }
            if self.progress(i) {
                ready.push(i);
            }
        }
        self.cqes = cqes;
        ready
    }

    /// Sends or receives what slot `i` needs next; true once it is open with nothing in the kernel.
    fn progress(&mut self, i: usize) -> bool {
        let Some(s) = self.slots[i].as_mut() else {
            return false;
        };
        if s.connect_pending || s.send_pending {
            return false;
        }
        let raw = s.fd.as_raw_fd();
        if let Some(out) = s.opening.lend() {
            let len = out.len();
            s.send_pending = true;
            s.sent = 0;
            self.ring.send(key(i, Op::Send), raw, out, 0, len);
            return false;
        }
        if s.opening.ready() {
            s.ready = true;
            if s.recv_pending {
                if !s.cancel_sent {
                    s.cancel_sent = true;
                    self.ring.cancel(key(i, Op::Recv), key(i, Op::Timeout));
                }
                return false;
            }
            return true;
        }
        if !s.recv_pending
            && let Some(buf) = s.buf.take()
        {
            s.recv_pending = true;
            self.ring.recv(key(i, Op::Recv), raw, buf);
        }
        false
    }

    /// Shuts every slot still opening and waits until the kernel is done with all of them.
    fn abandon(&mut self) {
        for i in 0..self.slots.len() {
            let Some(s) = self.slots[i].as_ref() else {
                continue;
            };
            socket::shutdown(&s.fd);
            if s.connect_pending {
                self.ring.cancel(key(i, Op::Connect), key(i, Op::Timeout));
            }
        }
        // Cancelled and shut, every operation ends at once; should one not, the ring leaks what it
        // uses rather than freeing it under the kernel.
        let until = Instant::now() + self.cfg.connect.connect_timeout + Duration::from_secs(1);
        let mut cqes = Vec::new();
        while (0..self.slots.len()).any(|i| self.ring.slot_busy(i)) && Instant::now() < until {
            self.wait(Duration::from_millis(10));
            self.ring.reap(&mut cqes);
            cqes.clear();
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
