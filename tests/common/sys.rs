//! The tests' calls into the C library: ringbench's own safe wrappers (`ringbench::testkit`, in
//! src/sys/ with every other `unsafe` line), so no test file writes `unsafe`.

// Each test binary that includes common/ uses some of them.
#[allow(unused_imports)]
pub use ringbench::testkit::{
    kill, last_core, limit_address_space, limit_open_files, pin_thread, pipe_waiting,
    wait_with_peak_rss,
};
