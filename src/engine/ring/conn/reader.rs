//! A connection's reply reader: the scanner that finds whole replies in received buffers read in
//! place, `--data-verify`'s comparator fed the same bytes, and whether a reply came since the
//! connection opened.

use crate::protocol::in_place::InPlaceScanner;
use crate::protocol::resp::{ProtocolError, Scanned};
use crate::workload::verify::{Verifier, VerifyCounts};

/// Reads a connection's replies.
pub(in crate::engine::ring) struct Reader {
    scanner: InPlaceScanner,
    /// `--data-verify`'s read pass: checks each reply's value.
    verify: Option<Box<Verifier>>,
    /// Set until the connection's first reply: only then can an error be the server refusing it.
    fresh: bool,
}

impl Reader {
    pub(in crate::engine::ring) fn new(verify: Option<Verifier>) -> Reader {
        Reader {
            scanner: InPlaceScanner::default(),
            verify: verify.map(Box::new),
            fresh: true,
        }
    }

    /// Scans `data` for whole replies (see [`InPlaceScanner::feed`]); the comparator reads it first.
    #[inline]
    pub(in crate::engine::ring) fn feed(
        &mut self,
        data: &[u8],
        on_reply: impl FnMut(Scanned, &[u8], u64),
    ) -> Result<(), ProtocolError> {
        if let Some(v) = self.verify.as_mut() {
            v.feed(data);
        }
        self.scanner.feed(data, on_reply)
    }

    /// The comparator, told each request's key as it is written.
    #[inline]
    pub(in crate::engine::ring) fn verifier(&mut self) -> Option<&mut Verifier> {
        self.verify.as_deref_mut()
    }

    /// What the comparator found, if the test checks values.
    pub(in crate::engine::ring) fn verified(&self) -> Option<&VerifyCounts> {
        self.verify.as_ref().map(|v| &v.counts)
    }

    /// True until the first reply since the connection opened.
    #[inline]
    pub(in crate::engine::ring) fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// A reply came.
    #[inline]
    pub(in crate::engine::ring) fn answered(&mut self) {
        self.fresh = false;
    }

    /// The socket is gone: a partial reply is forgotten, and the next socket starts fresh once live.
    pub(in crate::engine::ring) fn reset(&mut self) {
        self.scanner.reset();
        if let Some(v) = self.verify.as_mut() {
            v.reset();
        }
    }

    /// A new socket is live: its first reply may be a refusal.
    pub(in crate::engine::ring) fn opened(&mut self) {
        self.fresh = true;
    }
}
