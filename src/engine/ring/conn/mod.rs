//! One connection of a driver, in parts with private state: its transport (socket, phase and the
//! operations the kernel holds), its request source, its in-flight record, its reply reader, and its
//! life (openings, reconnects, the ready list). The driver moves a connection through its phases;
//! each part keeps its own rules.

mod in_flight;
mod lent;
mod life;
mod reader;
mod source;
mod transport;

pub(super) use in_flight::{Answered, InFlight};
pub(super) use lent::Lent;
pub(super) use life::Life;
pub(super) use reader::Reader;
pub(super) use source::{Batch, Requests, Source};
pub(crate) use transport::Socket;
pub(super) use transport::{Phase, Transport};

/// One connection's state.
pub(super) struct Conn {
    pub(super) io: Transport,
    pub(super) src: Source,
    pub(super) flight: InFlight,
    pub(super) rx: Reader,
    pub(super) life: Life,
}

impl Conn {
    /// Replies the connection still waits for.
    #[inline]
    pub(super) fn waiting(&self) -> usize {
        self.flight.waiting()
    }

    /// Takes the bytes the connection sends next out of their owner: its opening's output, its TLS
    /// records, or its requests. `None` when an opening has nothing to send.
    pub(super) fn lend(&mut self) -> Option<Lent> {
        let lent = if let Some(o) = self.life.opening_mut() {
            Lent::Setup(o.lend()?)
        } else if self.io.has_tls() {
            Lent::Sealed(self.io.take_sealed())
        } else {
            self.src.lend()
        };
        Some(lent)
    }

    /// The connection's send completed: the kernel is done with its bytes, which go back where they
    /// came from.
    pub(super) fn give_back(&mut self, lent: Lent) {
        match lent {
            Lent::Sealed(v) => self.io.put_sealed(v),
            Lent::Setup(v) => {
                if let Some(o) = self.life.opening_mut() {
                    o.sent(v);
                }
            }
            l => self.src.give_back(l),
        }
    }
}
