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

    /// The server refused the connection.
    pub(in crate::engine::ring) fn refuse(&mut self) {
        self.refused = true;
    }

    #[inline]
    pub(in crate::engine::ring) fn refused(&self) -> bool {
        self.refused
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
