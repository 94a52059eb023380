//! A connection's in-flight record: the requests sent and not yet answered (a fixed-layout batch as
//! a count, composed and paced requests one by one), and the moments `--timeout` and the open
//! loop's lateness are judged from.

use std::collections::VecDeque;
use std::time::Instant;

/// A request waiting for its reply (composed requests and the open loop).
#[derive(Debug, Clone, Copy)]
pub(in crate::engine::ring) struct Flight {
    pub(in crate::engine::ring) intended: Instant,
    pub(in crate::engine::ring) sent: Instant,
    pub(in crate::engine::ring) kind: usize,
    /// The request's length in bytes.
    pub(in crate::engine::ring) len: u32,
}

/// What one whole reply answered.
pub(in crate::engine::ring) enum Answered {
    /// A request of the fixed-layout batch, sent at the batch's time.
    Batch,
    /// The oldest request waiting one by one.
    One(Flight),
    /// Nothing: the server sent more replies than requests.
    Extra,
}

/// The requests a connection waits on.
pub(in crate::engine::ring) struct InFlight {
    /// Replies still due from the current batch (fixed closed loop, or a layer's requests), sent at
    /// `batch_sent`.
    due: usize,
    batch_sent: Instant,
    /// Composed requests and the open loop: one entry per request waiting for its reply.
    flights: VecDeque<Flight>,
    /// Open loop: when a reply last made room in a connection that had `-P` waiting. A request due
    /// before then was late because of the pipeline, not the client.
    room_at: Instant,
    /// What `--timeout` runs from: when the oldest request still unanswered was sent (under a layer,
    /// the later of that batch's send and the last whole reply). Bytes that end no reply do not move it.
    last_progress: Instant,
    /// Set when a layer's request was written while nothing was owed: its send starts the clock.
    restart_clock: bool,
}

impl InFlight {
    /// An empty record with room for `capacity` requests one by one.
    pub(in crate::engine::ring) fn new(capacity: usize, now: Instant) -> InFlight {
        InFlight {
            due: 0,
            batch_sent: now,
            flights: VecDeque::with_capacity(capacity),
            room_at: now,
            last_progress: now,
            restart_clock: false,
        }
    }

    /// Replies the connection still waits for.
    #[inline]
    pub(in crate::engine::ring) fn waiting(&self) -> usize {
        self.due + self.flights.len()
    }

    /// Requests waiting one by one.
    #[inline]
    pub(in crate::engine::ring) fn queued(&self) -> usize {
        self.flights.len()
    }

    /// A fixed-layout batch of `n` requests left at `now`.
    #[inline]
    pub(in crate::engine::ring) fn batch(&mut self, n: usize, now: Instant) {
        self.due = n;
        self.batch_sent = now;
    }

    /// When the current batch left.
    #[inline]
    pub(in crate::engine::ring) fn batch_sent(&self) -> Instant {
        self.batch_sent
    }

    /// One request, waiting one by one.
    #[inline]
    pub(in crate::engine::ring) fn push(&mut self, f: Flight) {
        self.flights.push_back(f);
    }

    /// What the next whole reply answers (not under a layer).
    #[inline]
    pub(in crate::engine::ring) fn answer(&mut self) -> Answered {
        if self.due > 0 {
            self.due -= 1;
            return Answered::Batch;
        }
        match self.flights.pop_front() {
            Some(f) => Answered::One(f),
            None => Answered::Extra,
        }
    }

    /// Under a layer: the next whole reply answers one of its requests; false when none is owed.
    #[inline]
    pub(in crate::engine::ring) fn answer_layered(&mut self) -> bool {
        if self.due == 0 {
            return false;
        }
        self.due -= 1;
        true
    }

    /// Forgets every request waiting (lost with the connection), returning how many.
    pub(in crate::engine::ring) fn clear(&mut self) -> usize {
        let n = self.waiting();
        self.due = 0;
        self.flights.clear();
        n
    }

    /// A layer wrote `replies` more requests: the first after nothing was owed starts the clock at
    /// its send ([`Self::sending`]).
    pub(in crate::engine::ring) fn owe(&mut self, replies: usize) {
        self.restart_clock |= self.due == 0;
        self.due += replies;
    }

    /// A layer's requests leave at `now`.
    pub(in crate::engine::ring) fn sending(&mut self, now: Instant) {
        if std::mem::take(&mut self.restart_clock) {
            self.last_progress = now;
        }
    }

    /// Replies owed to a layer, and when the connection last sent or received.
    pub(in crate::engine::ring) fn owed(&self) -> (usize, Instant) {
        (self.due, self.last_progress)
    }

    /// What `--timeout` runs from.
    #[inline]
    pub(in crate::engine::ring) fn last_progress(&self) -> Instant {
        self.last_progress
    }

    /// `--timeout` runs from `at` (a send to a connection that owed nothing, or an opening's end).
    #[inline]
    pub(in crate::engine::ring) fn progress(&mut self, at: Instant) {
        self.last_progress = at;
    }

    /// Whole replies came at `now`: `--timeout` runs from the oldest request still unanswered (a
    /// fixed batch's all left at its start), or under a layer from `now`.
    #[inline]
    pub(in crate::engine::ring) fn replied(&mut self, now: Instant, layered: bool) {
        if layered {
            self.last_progress = now;
        } else if let Some(f) = self.flights.front() {
            self.last_progress = f.sent;
        }
    }

    /// Open loop: when a reply last made room.
    #[inline]
    pub(in crate::engine::ring) fn room_at(&self) -> Instant {
        self.room_at
    }

    /// Open loop: a reply arriving at `at` made room.
    #[inline]
    pub(in crate::engine::ring) fn made_room(&mut self, at: Instant) {
        self.room_at = at;
    }
}
