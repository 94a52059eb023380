//! The bytes of a connection's send while the kernel reads them. They move out of their owner when
//! the send starts ([`super::Conn::lend`]) into the ring's in-flight table, and come back with the send's
//! completion ([`super::Conn::give_back`]), so while the kernel reads them nothing else holds them: no
//! code can change or free them meanwhile. A partial send goes on from the same bytes. A ring
//! dropped with a send in flight (the drain gave up) leaks them.

use crate::workload::PipelineBuffer;
use std::rc::Rc;

/// A send's bytes, and where they go back to.
pub(in crate::engine::ring) enum Lent {
    /// The connection's composed requests, or what a layer wrote (`out`).
    Out(Vec<u8>),
    /// TLS records sealed from the requests.
    Sealed(Vec<u8>),
    /// An opening's handshake records or set-up commands.
    Setup(Vec<u8>),
    /// Fixed-layout requests patched in place.
    Pipe(PipelineBuffer),
    /// Requests without placeholders, shared by the executor's connections and never changed.
    Shared(Rc<PipelineBuffer>),
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        match self {
            Lent::Out(v) | Lent::Sealed(v) | Lent::Setup(v) => v,
            Lent::Pipe(p) => p.buffer(),
            Lent::Shared(p) => p.buffer(),
        }
    }
}
