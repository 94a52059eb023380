//! What a layer (`--cluster`) asks of the driver: connection slots added as nodes appear, each
//! connection's state, and its send buffer (checked: never while the kernel reads it).

use super::conn::Phase;
use super::{Driver, setup};
use crate::net::ConnError;
use crate::sys::ring::Op;
use crate::workload::verify::Verifier;
use std::time::Instant;

impl Driver<'_> {
    /// Adds a connection slot with no socket (a layer's, for a node that appeared during the run) and
    /// returns its index; [`Self::open`] connects it.
    pub(crate) fn add_connection(&mut self) -> usize {
        let conn = setup::added(self.plan, &self.values, Instant::now());
        self.conns.push(conn);
        self.done += 1;
        self.conns.len() - 1
    }

    /// True when connection `i` is connected and driven.
    pub(crate) fn is_live(&self, i: usize) -> bool {
        self.conns[i].io.phase() == Phase::Live
    }

    /// True when slot `i` has no socket and nothing in the kernel: [`Self::open`] may use it.
    pub(crate) fn is_closed(&self, i: usize) -> bool {
        self.conns[i].io.phase() == Phase::Done
    }

    /// True while connection `i` has a send in the kernel (its buffer must not change).
    pub(crate) fn is_sending(&self, i: usize) -> bool {
        self.conns[i].io.holds(Op::Send)
    }

    /// Replies connection `i` still owes, and when it last sent or received.
    pub(crate) fn owed(&self, i: usize) -> (usize, Instant) {
        self.conns[i].flight.owed()
    }

    /// Connection `i`'s send buffer, for a layer to write `replies` more requests into before [`Self::send`].
    /// Panics while a send is in the kernel ([`Self::is_sending`]): the bytes being sent are the
    /// send's then (out of reach: see `lent.rs`), and what comes back at its completion would replace
    /// what was written meanwhile.
    pub(crate) fn out(&mut self, i: usize, replies: usize) -> &mut Vec<u8> {
        let c = &mut self.conns[i];
        assert!(
            !c.io.holds(Op::Send),
            "connection {i}'s send buffer is in the kernel"
        );
        if c.io.send_len() > 0 {
            // The last send is done: its bytes go.
            c.src.out().clear();
            c.io.begin_send(0);
        }
        c.flight.owe(replies);
        c.src.out()
    }

    /// [`Self::out`], with connection `i`'s `--data-verify` comparator (`None` when the test checks
    /// nothing): it is told the key of each request written to the buffer, in order.
    pub(crate) fn out_verified(
        &mut self,
        i: usize,
        replies: usize,
    ) -> (&mut Vec<u8>, Option<&mut Verifier>) {
        self.out(i, replies);
        let c = &mut self.conns[i];
        (c.src.out(), c.rx.verifier())
    }

    /// Sends connection `i`'s buffer; on failure the connection is shut and its requests are the
    /// caller's to retry.
    /// Panics while the last send is still in the kernel, as [`Self::out`].
    pub(crate) fn send(&mut self, i: usize, now: Instant) -> Result<(), ConnError> {
        let c = &mut self.conns[i];
        assert!(
            !c.io.holds(Op::Send),
            "connection {i}'s send buffer is in the kernel"
        );
        c.flight.sending(now);
        let r = self.start_send(i);
        if r.is_err() {
            self.conns[i].flight.clear();
            self.shut(i);
        }
        r
    }
}
