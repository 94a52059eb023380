//! The bytes of a connection's send while the kernel reads them. They move out of their owner when
//! the send starts ([`Driver::lend`]) and back when it completes ([`Driver::give_back`]), so while
//! the kernel reads them nothing else holds them: no code can change or free them meanwhile. A
//! partial send goes on from the same bytes. A driver dropped with a send in flight (its drain gave
//! up) leaks them with the connection.

use super::*;

/// A send's bytes, and where they go back to.
pub(super) enum Lent {
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

impl Lent {
    pub(super) fn bytes(&self) -> &[u8] {
        match self {
            Lent::Out(v) | Lent::Sealed(v) | Lent::Setup(v) => v,
            Lent::Pipe(p) => p.buffer(),
            Lent::Shared(p) => p.buffer(),
        }
    }
}

impl Driver<'_> {
    /// Moves the bytes connection `i` sends next into its send: its TLS records, its opening's
    /// output, or its requests. False when an opening has nothing to send.
    pub(super) fn lend(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        debug_assert!(c.lent.is_none(), "one send at a time per connection");
        let lent = if let Some(o) = c.opening.as_mut() {
            match o.lend() {
                Some(v) => Lent::Setup(v),
                None => return false,
            }
        } else if c.tls.is_some() {
            Lent::Sealed(std::mem::take(&mut c.sealed))
        } else {
            match std::mem::replace(&mut c.requests, Requests::Lent) {
                Requests::Fixed(p) => Lent::Pipe(p),
                Requests::Shared(p) => {
                    c.requests = Requests::Shared(p.clone());
                    Lent::Shared(p)
                }
                r @ (Requests::Composed(_) | Requests::Raw | Requests::Replay(..)) => {
                    c.requests = r;
                    Lent::Out(std::mem::take(&mut c.out))
                }
                Requests::Lent => unreachable!("requests are lent only with their send"),
            }
        };
        c.lent = Some(lent);
        true
    }

    /// Connection `i`'s send completed: the kernel is done with its bytes, which go back where they
    /// came from.
    pub(super) fn give_back(&mut self, i: usize) {
        let c = &mut self.conns[i];
        match c.lent.take() {
            Some(Lent::Out(v)) => c.out = v,
            Some(Lent::Sealed(v)) => c.sealed = v,
            Some(Lent::Setup(v)) => {
                if let Some(o) = c.opening.as_mut() {
                    o.sent(v);
                }
            }
            Some(Lent::Pipe(p)) => c.requests = Requests::Fixed(p),
            Some(Lent::Shared(_)) | None => {}
        }
    }
}
