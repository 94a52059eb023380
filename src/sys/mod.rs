//! The kernel's ABI and every `unsafe` line of ringbench, behind safe APIs: the io_uring of an
//! executor with an in-flight table that owns what each operation's SQE points at ([`ring`]), its
//! provided receive buffers handed out as guards (`bufring`), sockets and their `CONNECT`
//! addresses ([`socket`]), and the C library calls the standard library does not wrap ([`os`]).
//! Nothing outside this folder writes `unsafe`; it depends on no other stage.

mod bufring;
pub mod os;
pub mod ring;
pub mod socket;
#[doc(hidden)]
pub mod testkit;
