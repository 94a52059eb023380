//! The tests' calls into the C library: ringbench's own safe wrappers (`ringbench::testkit`, in
//! src/sys/ beside the rest of what the compiler cannot check), so no test file needs an unchecked block.

// Each test binary that includes common/ uses some of them.
#[allow(unused_imports)]
pub use ringbench::testkit::{
    kill, last_core, limit_address_space, limit_open_files, pin_thread, pipe_waiting,
    wait_with_peak_rss,
};
