//! The apps above the stages: the `capacity` search, `fleet` (a Kubernetes Job of shards), the
//! memtier_benchmark personality (`memtier`), and `session`, what they and the benchmark (`crate::run`)
//! share: opening a run against its server and the parts of a measured phase.

pub mod capacity;
pub(crate) mod fleet;
pub mod memtier;
pub(crate) mod session;
