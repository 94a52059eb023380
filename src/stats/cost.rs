//! The client's own cost in the normal report: CPU per request and each executor's busy share,
//! from the per-executor thread CPU times the engine reads at each shard's start and end.

use crate::stats::{ClientMemory, ExecutorStats};
use std::fmt::Write;

/// An executor busy at least this share of the test's wall time was probably the limit.
pub const BUSY_WARNING: f64 = 0.90;

/// The client-cost lines of the normal report (each with its newline); empty when nothing was measured.
pub fn cost_lines(
    executors: &[ExecutorStats],
    completed: u64,
    memory: Option<&ClientMemory>,
) -> String {
    let mut s = String::new();
    if executors.is_empty() || completed == 0 {
        return s;
    }
    let cpu_s: f64 = executors.iter().map(|e| e.cpu_user_s + e.cpu_sys_s).sum();
    let busy: Vec<String> = executors
        .iter()
        .map(|e| format!("{:.0}%", e.busy() * 100.0))
        .collect();
    let mut io: Vec<&str> = executors
        .iter()
        .map(|e| e.io)
        .filter(|m| !m.is_empty())
        .collect();
    io.dedup();
    let io = if io.is_empty() {
        String::new()
    } else {
        format!("; I/O: {}", io.join(", "))
    };
    let memory = memory
        .map(|m| {
            format!(
                "; peak RSS {:.1} MB ({} bytes per connection)",
                m.peak_rss as f64 / 1e6,
                m.per_connection()
            )
        })
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "  client: {:.0} ns CPU per request; executor busy: {}{memory}{io}",
        cpu_s * 1e9 / completed as f64,
        busy.join(", ")
    );
    let max = executors
        .iter()
        .map(ExecutorStats::busy)
        .fold(0.0, f64::max);
    if max >= BUSY_WARNING {
        let _ = writeln!(
            s,
            "  warning: an executor was busy {:.0}% of the time: the client was probably the limit; more --threads or cores would help",
            max * 100.0
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::thread_cpu_seconds;

    fn exec(cpu_s: f64, wall_s: f64) -> ExecutorStats {
        ExecutorStats {
            cpu_user_s: cpu_s * 0.25,
            cpu_sys_s: cpu_s * 0.75,
            wall_s,
            ..ExecutorStats::default()
        }
    }

    #[test]
    fn thread_clock_advances_with_work() {
        let before = thread_cpu_seconds();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let after = thread_cpu_seconds();
        assert!(after.0 + after.1 > before.0 + before.1, "{x}");
    }

    #[test]
    fn line_and_warning() {
        let s = cost_lines(&[exec(0.0004, 0.001), exec(0.0005, 0.001)], 1000, None);
        assert_eq!(
            s,
            "  client: 900 ns CPU per request; executor busy: 40%, 50%\n"
        );
        let memory = ClientMemory {
            base_rss: 6_000_000,
            peak_rss: 7_000_000,
            connections: 1000,
        };
        let s = cost_lines(&[exec(0.0004, 0.001)], 1000, Some(&memory));
        assert!(
            s.contains("; peak RSS 7.0 MB (1000 bytes per connection)"),
            "{s}"
        );
        let hot = [exec(0.00095, 0.001)];
        let s = cost_lines(&hot, 1000, None);
        assert!(s.contains("busy: 95%"), "{s}");
        assert!(s.contains("warning: an executor was busy 95%"), "{s}");
        assert!(s.contains("--threads"), "{s}");
        assert_eq!(cost_lines(&hot, 0, None), "");
    }
}
