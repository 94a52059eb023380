//! The bytes of a connection's send while the kernel reads them. They move out of their owner when
//! the send starts ([`Driver::lend`]) into the ring's in-flight table, and come back with the send's
//! completion ([`Driver::give_back`]), so while the kernel reads them nothing else holds them: no
//! code can change or free them meanwhile. A partial send goes on from the same bytes. A ring
//! dropped with a send in flight (the drain gave up) leaks them.

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

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        match self {
            Lent::Out(v) | Lent::Sealed(v) | Lent::Setup(v) => v,
            Lent::Pipe(p) => p.buffer(),
            Lent::Shared(p) => p.buffer(),
        }
    }
}

impl Driver<'_> {
    /// Takes the bytes connection `i` sends next out of their owner: its TLS records, its opening's
    /// output, or its requests. `None` when an opening has nothing to send.
    pub(super) fn lend(&mut self, i: usize) -> Option<Lent> {
        let c = &mut self.conns[i];
        let lent = if let Some(o) = c.opening.as_mut() {
            match o.lend() {
                Some(v) => Lent::Setup(v),
                None => return None,
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
        Some(lent)
    }

    /// Connection `i`'s send completed: the kernel is done with its bytes, which go back where they
    /// came from.
    pub(super) fn give_back(&mut self, i: usize, lent: Lent) {
        let c = &mut self.conns[i];
        match lent {
            Lent::Out(v) => c.out = v,
            Lent::Sealed(v) => c.sealed = v,
            Lent::Setup(v) => {
                if let Some(o) = c.opening.as_mut() {
                    o.sent(v);
                }
            }
            Lent::Pipe(p) => c.requests = Requests::Fixed(p),
            Lent::Shared(_) => {}
        }
    }
}
