//! A connection's request source: what fills its sends (fixed-layout requests patched in place,
//! shared bytes, composed or replayed requests, or a layer's), its keys and random draws, its share
//! of the requests, and the open loop's schedule.

use super::in_flight::{Flight, InFlight};
use super::lent::Lent;
use crate::engine::schedule::Pacing;
use crate::workload::PipelineBuffer;
use crate::workload::compose::Composer;
use crate::workload::keys::KeyGen;
use crate::workload::replay::Replay;
use crate::workload::scan_cursor::ScanCursor;
use crate::workload::verify::Verifier;
use rand::rngs::SmallRng;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// What fills a connection's send buffer.
pub(in crate::engine::ring) enum Requests {
    /// Fixed-layout requests, patched in place.
    Fixed(PipelineBuffer),
    /// Requests without placeholders: the same bytes for every connection, one buffer per executor.
    Shared(Rc<PipelineBuffer>),
    /// One request composed at a time (varying values, mixes, the open loop).
    Composed(Arc<Composer>),
    /// Bytes a layer wrote into the connection's `out` (`--cluster`).
    Raw,
    /// The fixed-layout requests are in the kernel's send ([`Lent::Pipe`]).
    Lent,
    /// `--replay`: the captured commands of this share (the run's connection number), copied from
    /// the capture's arena one after the other; `seq` is the connection's place in the share.
    Replay(Arc<Replay>, usize),
}

/// What a closed-loop batch wrote.
pub(in crate::engine::ring) enum Batch {
    /// Fixed-layout requests: this many bytes of the pipeline buffer.
    Fixed(usize),
    /// Requests written one by one into `out`, each in the in-flight record.
    Written,
    /// Nothing (a layer writes this connection's requests).
    Nothing,
}

/// Where a connection's requests come from.
pub(in crate::engine::ring) struct Source {
    requests: Requests,
    /// Composed requests (or a layer's) for the next send.
    out: Vec<u8>,
    keys: KeyGen,
    rng: SmallRng,
    /// Requests this connection may still send (memtier's `-n` per client), else `u64::MAX`.
    left: u64,
    /// Requests written one by one: the place in the open loop's schedule, or in `--replay`'s capture.
    seq: u64,
    pacing: Option<Pacing>,
    next_due: Option<Instant>,
    /// Set once the connection will send nothing more.
    done_sending: bool,
    /// Requests sent since the connection (last) opened: `--reconnect-interval` renews it at its count.
    since_open: u64,
}

impl Source {
    pub(in crate::engine::ring) fn new(
        requests: Requests,
        out: Vec<u8>,
        keys: KeyGen,
        rng: SmallRng,
        left: u64,
        pacing: Option<Pacing>,
    ) -> Source {
        Source {
            requests,
            out,
            keys,
            rng,
            left,
            seq: 0,
            next_due: pacing.as_ref().map(|p| p.intended(0)),
            pacing,
            done_sending: false,
            since_open: 0,
        }
    }

    /// True in the open loop (the connection's requests follow a schedule).
    #[inline]
    pub(in crate::engine::ring) fn is_paced(&self) -> bool {
        self.pacing.is_some()
    }

    #[inline]
    pub(in crate::engine::ring) fn done_sending(&self) -> bool {
        self.done_sending
    }

    /// The connection will send nothing more.
    #[inline]
    pub(in crate::engine::ring) fn stop_sending(&mut self) {
        self.done_sending = true;
    }

    /// memtier's `--reconnect-interval` (`every` requests): true when this connection sent its
    /// interval and has requests left for a new one.
    #[inline]
    pub(in crate::engine::ring) fn interval_done(&self, every: Option<u64>) -> bool {
        every.is_some_and(|r| self.since_open >= r && self.left > 0)
    }

    /// A new socket: the interval counts again.
    pub(in crate::engine::ring) fn opened(&mut self) {
        self.since_open = 0;
    }

    /// Closed loop: how many requests the next batch may hold, at most `depth`.
    pub(in crate::engine::ring) fn want(&self, depth: usize, every: Option<u64>) -> usize {
        // A replayed connection sends its own share of the capture, no more.
        match &self.requests {
            Requests::Replay(r, s) => r.stream(*s).len().saturating_sub(self.seq as usize),
            _ => depth,
        }
        .min(depth)
        .min(self.left.min(depth as u64) as usize)
        // memtier's --reconnect-interval: no more on this connection than the interval allows.
        .min(every.map_or(usize::MAX, |r| r.saturating_sub(self.since_open) as usize))
    }

    /// `n` requests of the shard's were claimed for this connection.
    #[inline]
    pub(in crate::engine::ring) fn took(&mut self, n: usize) {
        self.left -= (n as u64).min(self.left);
        self.since_open += n as u64;
    }

    /// Closed loop: writes a batch of `n` requests at `now`, each one's key told to `verify`.
    pub(in crate::engine::ring) fn write_batch(
        &mut self,
        n: usize,
        now: Instant,
        flight: &mut InFlight,
        verify: Option<&mut Verifier>,
        turn: &Rc<Cell<u64>>,
    ) -> Batch {
        let (keys, rng) = (&mut self.keys, &mut self.rng);
        match &mut self.requests {
            Requests::Fixed(p) => {
                let len = match verify {
                    None => p.fill(n, |g| keys.next_group(g, rng)).len(),
                    // The read pass: each request's key is the one its reply must hold.
                    Some(v) => p
                        .fill(n, |g| {
                            let k = keys.next_group(g, rng);
                            v.expect(k);
                            k
                        })
                        .len(),
                };
                flight.batch(n, now);
                Batch::Fixed(len)
            }
            Requests::Shared(p) => {
                flight.batch(n, now);
                Batch::Fixed(n * p.request_len())
            }
            Requests::Raw | Requests::Lent => Batch::Nothing,
            Requests::Replay(..) | Requests::Composed(_) => {
                self.out.clear();
                for _ in 0..n {
                    self.write_one(now, now, flight, turn);
                }
                Batch::Written
            }
        }
    }

    /// Writes the next composed or replayed request, due at `due` and sent at `now`, into `out` and
    /// the in-flight record.
    #[inline]
    fn write_one(
        &mut self,
        due: Instant,
        now: Instant,
        flight: &mut InFlight,
        turn: &Rc<Cell<u64>>,
    ) {
        let at = self.out.len();
        let kind = match &self.requests {
            Requests::Composed(comp) => {
                comp.write_request(&mut self.out, &mut self.keys, &mut self.rng, turn)
            }
            Requests::Replay(r, s) => r.write(*s, self.seq as usize, &mut self.out),
            _ => 0,
        };
        flight.push(Flight {
            intended: due,
            sent: now,
            kind,
            len: (self.out.len() - at) as u32,
        });
        self.seq += 1;
    }

    /// Open loop: true when the requests are written one at a time (composed or replayed), and
    /// their buffer is emptied for the turn's.
    pub(in crate::engine::ring) fn begin_paced(&mut self) -> bool {
        if !matches!(self.requests, Requests::Composed(_) | Requests::Replay(..)) {
            return false;
        }
        self.out.clear();
        true
    }

    /// Open loop: when the next request is due.
    #[inline]
    pub(in crate::engine::ring) fn next_due(&self) -> Option<Instant> {
        self.next_due
    }

    /// Open loop: true when the connection may send one more request (its capture share and `-n`
    /// per client not spent).
    #[inline]
    pub(in crate::engine::ring) fn has_more(&self) -> bool {
        if let Requests::Replay(r, s) = &self.requests
            && self.seq as usize >= r.stream(*s).len()
        {
            return false;
        }
        self.left > 0
    }

    /// Open loop: writes the request due at `due`, sent at `now`, and moves to the next due time.
    pub(in crate::engine::ring) fn write_paced(
        &mut self,
        due: Instant,
        now: Instant,
        flight: &mut InFlight,
        turn: &Rc<Cell<u64>>,
    ) {
        self.left -= 1;
        self.write_one(due, now, flight, turn);
        self.next_due = self.pacing.as_ref().map(|p| p.intended(self.seq));
    }

    /// Open loop: how many requests of the schedule fell due before `end` and were never written
    /// (at most what the connection's capture share and `-n` per client leave).
    pub(in crate::engine::ring) fn unsent_before(&self, end: Instant) -> u64 {
        let Some(p) = self.pacing.as_ref() else {
            return 0;
        };
        let limit = match &self.requests {
            Requests::Replay(r, s) => (r.stream(*s).len() as u64).saturating_sub(self.seq),
            _ => u64::MAX,
        };
        p.due_before(self.seq, end, limit.min(self.left))
    }

    /// The length of the next send when its requests were written into `out` (not fixed-layout).
    #[inline]
    pub(in crate::engine::ring) fn written_len(&self) -> Option<usize> {
        match self.requests {
            Requests::Composed(_) | Requests::Raw | Requests::Replay(..) => Some(self.out.len()),
            _ => None,
        }
    }

    /// The first `len` bytes of the next send's requests (to seal under TLS).
    pub(in crate::engine::ring) fn plain(&self, len: usize) -> &[u8] {
        match &self.requests {
            Requests::Fixed(p) => &p.buffer()[..len],
            Requests::Shared(p) => &p.buffer()[..len],
            Requests::Composed(_) | Requests::Raw | Requests::Replay(..) => &self.out[..],
            Requests::Lent => unreachable!("no send is in flight"),
        }
    }

    /// The requests' bytes for the kernel's send: they leave their owner until [`Self::give_back`].
    pub(in crate::engine::ring) fn lend(&mut self) -> Lent {
        match std::mem::replace(&mut self.requests, Requests::Lent) {
            Requests::Fixed(p) => Lent::Pipe(p),
            Requests::Shared(p) => {
                self.requests = Requests::Shared(p.clone());
                Lent::Shared(p)
            }
            r @ (Requests::Composed(_) | Requests::Raw | Requests::Replay(..)) => {
                self.requests = r;
                Lent::Out(std::mem::take(&mut self.out))
            }
            Requests::Lent => unreachable!("requests are lent only with their send"),
        }
    }

    /// The requests' bytes, back from the kernel.
    pub(in crate::engine::ring) fn give_back(&mut self, lent: Lent) {
        match lent {
            Lent::Out(v) => self.out = v,
            Lent::Pipe(p) => self.requests = Requests::Fixed(p),
            Lent::Shared(_) | Lent::Sealed(_) | Lent::Setup(_) => {}
        }
    }

    /// The buffer a layer writes the next send's requests into.
    #[inline]
    pub(in crate::engine::ring) fn out(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// memtier's SCAN iteration: reads the next cursor from each reply.
    #[inline]
    pub(in crate::engine::ring) fn scan_cursor(&mut self) -> Option<&mut ScanCursor> {
        self.keys.scan.as_deref_mut()
    }
}
