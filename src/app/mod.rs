//! The apps above the stages: the benchmark (`benchmark`, redis-benchmark's run), the `capacity`
//! search, `fleet` (a Kubernetes Job of shards), the memtier_benchmark personality (`memtier`), the
//! file tools (`files`: `compare`, `merge`, `report`), and what they share: `session` (opening a run
//! against its server and the parts of a measured phase) and `outcome` (how a run ends).

pub(crate) mod benchmark;
pub mod capacity;
pub(crate) mod files;
pub(crate) mod fleet;
pub mod memtier;
pub(crate) mod outcome;
pub(crate) mod session;
