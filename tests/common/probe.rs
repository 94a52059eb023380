//! How much CPU this machine gave while a run went on, from the kernel's pressure stall information
//! (`/proc/pressure/cpu`): the share of the time in which some runnable task waited for a core. A
//! paced client under test that is kept off the cores falls behind its schedule; a test can tell
//! that from a client that falls behind on its own.

use std::time::Instant;

/// The CPU pressure at a moment, to compare with a later one.
pub struct CpuPressure {
    at: Instant,
    /// Microseconds since boot in which some runnable task waited for a CPU (`None`: no PSI here).
    some_us: Option<u64>,
}

impl CpuPressure {
    pub fn now() -> CpuPressure {
        CpuPressure {
            at: Instant::now(),
            some_us: some_total_us(),
        }
    }

    /// The share of the wall time since `self` in which some runnable task waited for a CPU, from 0
    /// to 1; `None` where the kernel keeps no pressure figures.
    pub fn share_since(&self) -> Option<f64> {
        let waited = some_total_us()?.saturating_sub(self.some_us?);
        let wall = self.at.elapsed().as_micros().max(1) as f64;
        Some((waited as f64 / wall).min(1.0))
    }
}

/// The `some ... total=N` figure of `/proc/pressure/cpu`.
fn some_total_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}
