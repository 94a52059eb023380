//! The integration tests, one binary: each module is a topic, run against a real `redis-server` (and real
//! clusters, TLS, namespaces) with the `ringbench` binary under test. One binary links once and lets the
//! test threads mix topics; a test that judges time takes `common::lock::alone()`, every other test
//! `common::lock::shared()`, so nothing runs beside the timed ones. `tests/alloc.rs` stays apart: it
//! installs a counting global allocator for its whole process.

#[path = "../common/mod.rs"]
mod common;

mod bounds;
mod capacity;
mod cli;
mod cluster;
mod control;
mod core;
mod dataset;
mod faults;
mod fleet;
mod fuzz_cli;
mod hostile_files;
mod memtier;
mod metrics;
mod metrics_bounds;
mod mix;
mod perf;
mod rate;
mod replay;
mod report;
mod results;
mod tls;
mod verify;
