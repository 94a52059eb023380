//! A connection's transport: its socket and the socket's generation, its phase, which of its
//! operations the kernel holds, the send in progress, and its TLS session with the records sealed
//! for that send.

use crate::net::tls_session::{TlsError, TlsSession};
use crate::sys::ring::{Key, Op};
use crate::sys::socket;
use std::os::fd::{AsRawFd, OwnedFd};

/// A connected, set-up socket, with its TLS session when the run uses TLS.
pub(crate) type Socket = (OwnedFd, Option<rustls::ClientConnection>);

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::engine::ring) enum Phase {
    /// Connected and driven.
    Live,
    /// Shut down after a failure or at `-k 0`; waits for its last completions before reconnecting.
    Draining,
    /// Waiting to connect again (its backoff is in [`super::Life`]).
    Reconnecting,
    /// Being opened on the ring: its `CONNECT`, TLS handshake or set-up commands are in flight.
    Opening,
    /// Finished (or could not reconnect).
    Done,
}

/// The operations of one socket the kernel holds: at most one of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Held(u8);

impl Held {
    fn bit(op: Op) -> u8 {
        match op {
            Op::Recv => 1,
            Op::Send => 2,
            Op::Connect | Op::Timeout => 4,
        }
    }
}

/// A connection's socket and what the kernel does with it.
pub(in crate::engine::ring) struct Transport {
    fd: Option<OwnedFd>,
    /// Bumped when a socket closes, so completions of an earlier socket are recognised and ignored.
    generation: u16,
    phase: Phase,
    held: Held,
    /// The send in progress: how many bytes it sends, and how many went.
    len: usize,
    at: usize,
    /// The TLS session, when the run uses TLS: requests are sealed into `sealed` before they are sent.
    tls: Option<Box<TlsSession>>,
    sealed: Vec<u8>,
}

impl Transport {
    /// A transport over `fd` (live), or none yet (done until it is opened).
    pub(in crate::engine::ring) fn new(
        fd: Option<OwnedFd>,
        tls: Option<rustls::ClientConnection>,
    ) -> Transport {
        Transport {
            phase: if fd.is_some() {
                Phase::Live
            } else {
                Phase::Done
            },
            fd,
            generation: 0,
            held: Held::default(),
            len: 0,
            at: 0,
            tls: tls.map(TlsSession::new),
            sealed: Vec::new(),
        }
    }

    #[inline]
    pub(in crate::engine::ring) fn phase(&self) -> Phase {
        self.phase
    }

    /// Moves to `phase`, returning the phase it left.
    pub(in crate::engine::ring) fn set_phase(&mut self, phase: Phase) -> Phase {
        std::mem::replace(&mut self.phase, phase)
    }

    /// The socket's descriptor, if it has one.
    #[inline]
    pub(in crate::engine::ring) fn raw_fd(&self) -> Option<i32> {
        self.fd.as_ref().map(|f| f.as_raw_fd())
    }

    /// The ring's name for operation `op` of this socket, the connection being `slot`.
    #[inline]
    pub(in crate::engine::ring) fn key(&self, slot: usize, op: Op) -> Key {
        Key::new(slot, self.generation, op)
    }

    /// True when a completion of socket `generation` is this socket's.
    #[inline]
    pub(in crate::engine::ring) fn is_current(&self, generation: u16) -> bool {
        self.generation == generation
    }

    /// True while the kernel holds an `op` of this socket.
    #[inline]
    pub(in crate::engine::ring) fn holds(&self, op: Op) -> bool {
        self.held.0 & Held::bit(op) != 0
    }

    /// The kernel took an `op` of this socket.
    #[inline]
    pub(in crate::engine::ring) fn started(&mut self, op: Op) {
        self.held.0 |= Held::bit(op);
    }

    /// The kernel's `op` of this socket ended.
    #[inline]
    pub(in crate::engine::ring) fn ended(&mut self, op: Op) {
        self.held.0 &= !Held::bit(op);
    }

    /// True when the kernel holds nothing of this socket.
    #[inline]
    pub(in crate::engine::ring) fn drained(&self) -> bool {
        self.held == Held::default()
    }

    /// Shuts the socket down (both ways): its operations in the kernel end.
    pub(in crate::engine::ring) fn shutdown(&self) {
        if let Some(fd) = &self.fd {
            socket::shutdown(fd);
        }
    }

    /// Takes a new socket; what the last one had to send went with it.
    pub(in crate::engine::ring) fn attach(&mut self, fd: OwnedFd) {
        self.fd = Some(fd);
        self.len = 0;
        self.at = 0;
    }

    /// Closes the socket (the kernel holds nothing of it): completions still posted for it are stale.
    pub(in crate::engine::ring) fn close(&mut self) {
        debug_assert!(self.drained());
        self.fd = None;
        self.generation = self.generation.wrapping_add(1);
    }

    /// The next send is `len` bytes, from their start.
    #[inline]
    pub(in crate::engine::ring) fn begin_send(&mut self, len: usize) {
        self.len = len;
        self.at = 0;
    }

    /// The length of the last send (0 once its bytes were let go).
    #[inline]
    pub(in crate::engine::ring) fn send_len(&self) -> usize {
        self.len
    }

    /// The part of the send still to go: from, to.
    #[inline]
    pub(in crate::engine::ring) fn send_rest(&self) -> (usize, usize) {
        (self.at, self.len)
    }

    /// `sent` more bytes went; true when some are left.
    #[inline]
    pub(in crate::engine::ring) fn advance(&mut self, sent: usize) -> bool {
        if self.at + sent < self.len {
            self.at += sent;
            true
        } else {
            self.at = self.len;
            false
        }
    }

    /// True when the run uses TLS on this socket.
    #[inline]
    pub(in crate::engine::ring) fn has_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The socket's TLS session, after its handshake.
    pub(in crate::engine::ring) fn set_tls(&mut self, tls: Option<rustls::ClientConnection>) {
        self.tls = tls.map(TlsSession::new);
    }

    /// Under TLS, seals `plain` into the next send's records and returns their length.
    #[inline]
    pub(in crate::engine::ring) fn seal(
        &mut self,
        plain: &[u8],
    ) -> Option<Result<usize, TlsError>> {
        let t = self.tls.as_mut()?;
        Some(t.seal(plain, &mut self.sealed))
    }

    /// Under TLS, opens `data` into `plain`; true when the peer closed the session.
    #[inline]
    pub(in crate::engine::ring) fn open(
        &mut self,
        data: &[u8],
        plain: &mut Vec<u8>,
    ) -> Option<Result<bool, TlsError>> {
        let t = self.tls.as_mut()?;
        Some(t.open(data, plain))
    }

    /// The sealed records, for the kernel's send.
    pub(in crate::engine::ring) fn take_sealed(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.sealed)
    }

    /// The sealed records' buffer, back from the kernel.
    pub(in crate::engine::ring) fn put_sealed(&mut self, v: Vec<u8>) {
        self.sealed = v;
    }
}
