//! The process's calls into the C library that Rust's standard library does not wrap: resource
//! limits, CPU time, the host name, the stop signals' handler, and a cache prefetch hint.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The soft and hard limits of `resource` (`libc::RLIMIT_*`).
pub fn rlimit(resource: libc::__rlimit_resource_t) -> Option<libc::rlimit> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    (unsafe { libc::getrlimit(resource, &mut r) } == 0).then_some(r)
}

/// Raises the soft limit of `resource` to its hard limit; returns the soft limit in force afterwards.
pub fn raise_rlimit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut r = rlimit(resource)?;
    if r.rlim_cur < r.rlim_max {
        let wanted = libc::rlimit {
            rlim_cur: r.rlim_max,
            rlim_max: r.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(resource, &wanted) } == 0 {
            r = wanted;
        }
    }
    Some(r.rlim_cur)
}

/// User and system CPU seconds of `who` (`libc::RUSAGE_SELF` or `RUSAGE_THREAD`); zeros if unreadable.
pub fn cpu_seconds(who: libc::c_int) -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct it is given and reads nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return (0.0, 0.0);
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

/// This machine's host name, or "unknown".
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Monotonic nanoseconds; `clock_gettime` is async-signal-safe.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A stop signal: its number, the flag it sets, and the exit status of a second one.
pub struct StopSignal {
    pub signal: libc::c_int,
    pub flag: Arc<AtomicBool>,
    pub exit_code: i32,
}

/// Installs the handler of `signals`: the first of them sets `stop` and its own flag; another one at
/// least `again_after_ns` later ends the process at once with that signal's exit code. Signals closer
/// together count as one (a terminal's Ctrl+C reaches both a process and its group).
pub fn on_stop_signals(signals: Vec<StopSignal>, stop: &Arc<AtomicBool>, again_after_ns: u64) {
    let first_at = Arc::new(AtomicU64::new(0));
    for s in signals {
        let stop = stop.clone();
        let first_at = first_at.clone();
        let (flag, code) = (s.flag, s.exit_code);
        let handler = move || {
            let now = monotonic_ns().max(1);
            match first_at.compare_exchange(0, now, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    flag.store(true, Ordering::SeqCst);
                    stop.store(true, Ordering::SeqCst);
                }
                Err(first) if now.saturating_sub(first) >= again_after_ns => {
                    signal_hook::low_level::exit(code);
                }
                Err(_) => {}
            }
        };
        // SAFETY: the handler only reads the clock, uses atomics and may call _exit: all
        // async-signal-safe.
        let _ = unsafe { signal_hook::low_level::register(s.signal, handler) };
    }
}

/// Asks the CPU to bring the cache lines of `*r` (up to `lines` of them) into the cache: a hint that
/// reads nothing and cannot fault. Nothing off x86_64.
#[inline]
pub fn prefetch<T>(r: &T, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = (r as *const T).cast::<i8>();
        let size = std::mem::size_of::<T>().max(1);
        for off in (0..size).step_by(64).take(lines.max(1)) {
            // SAFETY: a prefetch only hints the cache; the address is inside a live object.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (r, lines);
}
