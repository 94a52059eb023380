//! What the tests need of the C library, behind safe functions, so that no test file writes `unsafe`:
//! signals to processes a test started, CPU affinity, a child's address-space limit and peak memory,
//! the bytes waiting in a pipe, and a counting global allocator for the allocation tests (a test binary
//! that wants it declares `#[global_allocator] static A: Counting = Counting;` itself). Not used by
//! ringbench itself; public (and hidden from the docs) for `tests/` and `benches/` only.

use std::alloc::{GlobalAlloc, Layout, System};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicU64, Ordering};

/// Counts allocations and reallocations, of the whole process and of each thread.
pub struct Counting;

/// Allocations made by the whole process.
pub static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Allocations made by the current thread (other test threads do not count here).
    pub static THREAD_ALLOCS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn count() {
    ALLOCS.fetch_add(1, Ordering::Relaxed);
    let _ = THREAD_ALLOCS.try_with(|c| c.set(c.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(p, l, n) }
    }
}

/// Sends `sig` to process `pid` (one the test started); true when it was sent.
pub fn kill(pid: i32, sig: i32) -> bool {
    // SAFETY: kill(2) reads no memory of ours.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// The last core this process may run on.
pub fn last_core() -> usize {
    // SAFETY: sched_getaffinity fills the zeroed set it is given.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    assert_eq!(rc, 0);
    (0..libc::CPU_SETSIZE as usize)
        .rev()
        .find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .unwrap()
}

/// Pins the calling thread to `core`.
pub fn pin_thread(core: usize) {
    // SAFETY: the set is zeroed, then one core is added; sched_setaffinity reads it only.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe {
        libc::CPU_SET(core, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

/// Sets the child's soft and hard `RLIMIT_AS` to `bytes` before it executes.
pub fn limit_address_space(cmd: &mut Command, bytes: u64) {
    limit(cmd, libc::RLIMIT_AS, bytes);
}

/// Sets the child's soft and hard `RLIMIT_NOFILE` to `files` before it executes.
pub fn limit_open_files(cmd: &mut Command, files: u64) {
    limit(cmd, libc::RLIMIT_NOFILE, files);
}

fn limit(cmd: &mut Command, resource: libc::__rlimit_resource_t, value: u64) {
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit, which is
    // async-signal-safe; it touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Waits for `child` (not waited for yet) to end; returns its exit status and its peak resident memory
/// in KiB: the highest `VmHWM` of `/proc/PID/status` read every millisecond once the child runs its own
/// program. (wait4's `ru_maxrss` counts the memory of the forked copy of the test process too, before
/// the exec: 190 MiB for a child that used 12 MiB, when other tests of the binary held a lot.) A
/// child that ends within a millisecond of its exec reads as 0.
pub fn wait_with_peak_rss(child: Child) -> (ExitStatus, u64) {
    let pid = child.id() as i32;
    let own = std::env::current_exe().ok();
    let (exe, status_file) = (format!("/proc/{pid}/exe"), format!("/proc/{pid}/status"));
    let mut peak = 0;
    let mut status = 0;
    loop {
        // Only once the exec is done: before it, the child is a copy of this process.
        if std::fs::read_link(&exe).ok() != own
            && let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = peak.max(kib);
        }
        // SAFETY: waitpid only writes the status it is given.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return (ExitStatus::from_raw(status), peak);
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "waitpid: {e}");
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The bytes waiting to be read in the pipe `pipe` (a child's stdout, say).
pub fn pipe_waiting(pipe: &impl std::os::fd::AsRawFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int, the bytes waiting in the pipe.
    assert_eq!(
        unsafe { libc::ioctl(pipe.as_raw_fd(), libc::FIONREAD, &mut n) },
        0
    );
    n as usize
}
