//! The counting global allocator for in-process allocation tests (`ringbench::testkit`). A test file
//! that wants it declares `#[global_allocator] static A: Counting = Counting;` itself, so the other test
//! binaries keep the system one.

#[allow(unused_imports)]
pub use ringbench::testkit::{ALLOCS, Counting, THREAD_ALLOCS};
