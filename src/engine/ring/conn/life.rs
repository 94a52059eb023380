//! A connection's life beyond its socket: its opening (handshake and set-up) while it is opened,
//! why the last opening failed, the reconnect backoff, whether the server refused it or it is being
//! renewed, and its place in the driver's ready list.

use crate::engine::opening::Opening;
use crate::net::ConnError;
use std::time::Instant;

/// Openings, reconnects and the ready list.
pub(in crate::engine::ring) struct Life {
    /// While the connection is opened: the handshake and set-up (kept until it is live or drained).
    opening: Option<Box<Opening>>,
    /// Why the last opening attempt failed, for the backoff once the attempt is drained.
    open_error: Option<ConnError>,
    /// Reconnect attempts made since the connection was lost, and when the next one is due.
    attempt: usize,
    retry_at: Instant,
    /// Set when the connection is drained because of `-k 0` or memtier's `--reconnect-interval`.
    renew: bool,
    /// Set when the server refused the connection; it is not tried again.
    refused: bool,
    /// Set once the server has answered a request on this connection (any of its sockets): a later
    /// refusal is of a reconnect, which the server may take back (see [`Life::refused_for_now`]).
    served: bool,
    /// Since when the server has refused this connection's reconnects (cleared by an answer).
    refused_since: Option<Instant>,
    /// Losses in a row with no answer between them (each reconnect then waits twice as long).
    losses: u32,
    /// Set while the connection waits in the ready list.
    queued: bool,
}

impl Life {
    pub(in crate::engine::ring) fn new(now: Instant) -> Life {
        Life {
            opening: None,
            open_error: None,
            attempt: 0,
            retry_at: now,
            renew: false,
            refused: false,
            served: false,
            refused_since: None,
            losses: 0,
            queued: false,
        }
    }

    /// The opening in progress.
    #[inline]
    pub(in crate::engine::ring) fn opening(&self) -> Option<&Opening> {
        self.opening.as_deref()
    }

    #[inline]
    pub(in crate::engine::ring) fn opening_mut(&mut self) -> Option<&mut Opening> {
        self.opening.as_deref_mut()
    }

    pub(in crate::engine::ring) fn set_opening(&mut self, o: Opening) {
        self.opening = Some(Box::new(o));
    }

    /// Ends the opening (live, answered, or drained), handing it over.
    pub(in crate::engine::ring) fn take_opening(&mut self) -> Option<Box<Opening>> {
        self.opening.take()
    }

    /// The opening failed with `e`.
    pub(in crate::engine::ring) fn failed(&mut self, e: ConnError) {
        self.open_error = Some(e);
    }

    /// Why the last opening failed, once.
    pub(in crate::engine::ring) fn take_error(&mut self) -> Option<ConnError> {
        self.open_error.take()
    }

    /// Reconnect attempts made since the connection was lost.
    #[inline]
    pub(in crate::engine::ring) fn attempt(&self) -> usize {
        self.attempt
    }

    /// Another attempt failed: returns how many have.
    pub(in crate::engine::ring) fn next_attempt(&mut self) -> usize {
        self.attempt += 1;
        self.attempt
    }

    /// The backoff starts again: the first attempt is due at `at`.
    pub(in crate::engine::ring) fn retry_from(&mut self, at: Instant) {
        self.attempt = 0;
        self.retry_at = at;
    }

    /// The next attempt is due at `at`.
    pub(in crate::engine::ring) fn set_retry_at(&mut self, at: Instant) {
        self.retry_at = at;
    }

    /// When the next attempt is due.
    #[inline]
    pub(in crate::engine::ring) fn retry_at(&self) -> Instant {
        self.retry_at
    }

    /// Drained on purpose (`-k 0`, `--reconnect-interval`): connect again at once.
    pub(in crate::engine::ring) fn renew(&mut self) {
        self.renew = true;
    }

    /// Whether the drain was on purpose, once.
    pub(in crate::engine::ring) fn take_renew(&mut self) -> bool {
        std::mem::take(&mut self.renew)
    }

    #[inline]
    pub(in crate::engine::ring) fn refused(&self) -> bool {
        self.refused
    }

    /// The server answered a request on this connection: a refusal streak, if any, is over.
    #[inline]
    pub(in crate::engine::ring) fn served(&mut self) {
        self.served = true;
        self.refused_since = None;
        self.losses = 0;
    }

    /// The pause before reconnecting a lost connection: 50 ms after a loss that followed an answer,
    /// twice as long after each loss in a row without one, up to 1.6 s (a stalled server timing every
    /// reconnect out would otherwise get a new connection from each client every `--timeout`, all
    /// counted against its maxclients when it wakes).
    pub(in crate::engine::ring) fn loss_backoff(&mut self) -> std::time::Duration {
        self.losses += 1;
        std::time::Duration::from_millis(50 << (self.losses - 1).min(5))
    }

    /// The server refused the connection at `now`: `Some(first)` (when the refusals began) when it
    /// may be tried again, a reconnect the server refused for less than `limit` (a server that stalled
    /// still counts the connections that were closed meanwhile, until it wakes and reads their
    /// closes); `None` when it is refused for good (it never served this connection, or `limit` has
    /// passed).
    pub(in crate::engine::ring) fn refused_for_now(
        &mut self,
        now: Instant,
        limit: std::time::Duration,
    ) -> Option<Instant> {
        if !self.served {
            self.refused = true;
            return None;
        }
        let first = *self.refused_since.get_or_insert(now);
        if now.saturating_duration_since(first) >= limit {
            self.refused = true;
            return None;
        }
        Some(first)
    }

    /// Whether the server has answered a request on this connection.
    pub(in crate::engine::ring) fn was_served(&self) -> bool {
        self.served
    }

    /// Puts the connection in the ready list's count: false when it is there already.
    #[inline]
    pub(in crate::engine::ring) fn queue(&mut self) -> bool {
        !std::mem::replace(&mut self.queued, true)
    }

    /// The connection left the ready list.
    #[inline]
    pub(in crate::engine::ring) fn unqueue(&mut self) {
        self.queued = false;
    }
}
