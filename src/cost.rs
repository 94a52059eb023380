//! The client's own cost: executor CPU time per test, read twice per shard (never per request),
//! and the report line that says whether the client was the limit.

use std::fmt::Write;
use std::time::Instant;

/// An executor busy at least this share of the test's wall time was probably the limit.
pub const BUSY_WARNING: f64 = 0.90;

/// CPU time used so far by the calling thread, in nanoseconds (0 when the clock cannot be read).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A running measurement of one executor thread: started when its shard starts sending.
#[derive(Debug, Clone, Copy)]
pub struct CostClock {
    cpu_ns: u64,
    wall: Instant,
}

impl CostClock {
    /// Reads the calling thread's CPU clock and the wall clock.
    pub fn start() -> Self {
        CostClock {
            cpu_ns: thread_cpu_ns(),
            wall: Instant::now(),
        }
    }

    /// What the calling thread (the same one that started the clock) used since [`Self::start`].
    pub fn stop(&self) -> ExecutorCost {
        ExecutorCost {
            cpu_ns: thread_cpu_ns().saturating_sub(self.cpu_ns),
            wall_ns: self.wall.elapsed().as_nanos() as u64,
        }
    }
}

/// One executor's CPU and wall time during one test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExecutorCost {
    pub cpu_ns: u64,
    pub wall_ns: u64,
}

impl ExecutorCost {
    /// Share of the wall time the executor spent on a CPU (0.0 to about 1.0).
    pub fn busy(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.cpu_ns as f64 / self.wall_ns as f64
        }
    }
}

/// The client-cost lines of the normal report (each with its newline); empty when nothing was measured.
pub fn cost_lines(executors: &[ExecutorCost], completed: u64) -> String {
    let mut s = String::new();
    if executors.is_empty() || completed == 0 {
        return s;
    }
    let cpu: u64 = executors.iter().map(|e| e.cpu_ns).sum();
    let busy: Vec<String> = executors
        .iter()
        .map(|e| format!("{:.0}%", e.busy() * 100.0))
        .collect();
    let _ = writeln!(
        s,
        "  client: {:.0} ns CPU per request; executor busy: {}",
        cpu as f64 / completed as f64,
        busy.join(", ")
    );
    let max = executors.iter().map(ExecutorCost::busy).fold(0.0, f64::max);
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

    #[test]
    fn thread_clock_advances_with_work() {
        let c = CostClock::start();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let cost = c.stop();
        assert!(cost.cpu_ns > 0, "{cost:?} {x}");
        assert!(cost.wall_ns >= cost.cpu_ns / 2);
    }

    #[test]
    fn line_and_warning() {
        let calm = [
            ExecutorCost {
                cpu_ns: 400_000,
                wall_ns: 1_000_000,
            },
            ExecutorCost {
                cpu_ns: 500_000,
                wall_ns: 1_000_000,
            },
        ];
        let s = cost_lines(&calm, 1000);
        assert_eq!(
            s,
            "  client: 900 ns CPU per request; executor busy: 40%, 50%\n"
        );
        let hot = [ExecutorCost {
            cpu_ns: 950_000,
            wall_ns: 1_000_000,
        }];
        let s = cost_lines(&hot, 1000);
        assert!(s.contains("busy: 95%"), "{s}");
        assert!(s.contains("warning: an executor was busy 95%"), "{s}");
        assert!(s.contains("--threads"), "{s}");
        assert_eq!(cost_lines(&hot, 0), "");
    }
}
