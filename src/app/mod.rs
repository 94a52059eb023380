//! The apps above the stages. `session` is what they share: opening a run against its server and the
//! parts of a measured phase. The benchmark (`crate::run`), `capacity`, `fleet` and the memtier personality
//! use it.

pub(crate) mod session;
