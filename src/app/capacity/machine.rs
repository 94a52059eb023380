//! What the machine's CPUs did during a run, from /proc/stat: the shares of its CPU time stolen by the
//! hypervisor and idle (`Machine`), between two `cpu_ticks` readings.

/// What the machine's CPUs did during a run, from /proc/stat: shares of all its CPU time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// Stolen by the hypervisor.
    pub steal: f64,
    /// Idle (idle and iowait).
    pub idle: f64,
}

/// Nothing stolen, nothing idle (what an unreadable /proc/stat gives).
pub(super) const QUIET: Machine = Machine {
    steal: 0.0,
    idle: 0.0,
};

/// The machine's CPU time in clock ticks, from /proc/stat's `cpu` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ticks {
    steal: u64,
    /// idle and iowait.
    idle: u64,
    total: u64,
}

pub(super) fn cpu_ticks() -> Option<Ticks> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    cpu_ticks_of(&text)
}

fn cpu_ticks_of(text: &str) -> Option<Ticks> {
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    // user nice system idle iowait irq softirq steal (guest time is counted in user already).
    let v: Vec<u64> = line
        .split_whitespace()
        .map_while(|x| x.parse().ok())
        .collect();
    Some(Ticks {
        steal: *v.get(7)?,
        idle: v[3] + v[4],
        total: v.iter().take(8).sum(),
    })
}

/// The shares of CPU time stolen and idle between two `cpu_ticks` readings (0 when unknown).
pub(super) fn machine_between(before: Option<Ticks>, after: Option<Ticks>) -> Machine {
    match (before, after) {
        (Some(a), Some(b)) if b.total > a.total => {
            let total = (b.total - a.total) as f64;
            Machine {
                steal: b.steal.saturating_sub(a.steal) as f64 / total,
                idle: b.idle.saturating_sub(a.idle) as f64 / total,
            }
        }
        _ => QUIET,
    }
}

#[cfg(test)]
mod tests {
    use super::{QUIET, Ticks, cpu_ticks, cpu_ticks_of, machine_between};

    #[test]
    fn cpu_steal_and_idle_are_read_from_proc_stat() {
        let before = "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n";
        let after = "cpu  150 0 60 880 10 0 0 50 0 0\n";
        assert_eq!(
            cpu_ticks_of(before),
            Some(Ticks {
                steal: 40,
                idle: 810,
                total: 1000
            })
        );
        let m = machine_between(cpu_ticks_of(before), cpu_ticks_of(after));
        assert!((m.steal - 10.0 / 150.0).abs() < 1e-12, "{m:?}");
        assert!((m.idle - 80.0 / 150.0).abs() < 1e-12, "{m:?}");
        assert_eq!(machine_between(None, cpu_ticks_of(after)), QUIET);
        assert!(cpu_ticks().is_some());
    }
}
