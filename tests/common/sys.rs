//! The tests' calls into the C library, and every `unsafe` line of the tests but the counting
//! allocator's (`alloc.rs`): signals to processes the tests started, CPU affinity, a child's
//! address-space limit, a child's peak memory, and the bytes waiting in a pipe.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};

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
    // SAFETY: the closure runs in the forked child before exec and only calls setrlimit, which is
    // async-signal-safe; it touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Waits for `child` (not waited for yet) to end; returns its exit status and its peak resident memory
/// in KiB (`ru_maxrss` of wait4(2)).
pub fn wait_with_peak_rss(child: Child) -> (ExitStatus, u64) {
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid one (integers and timevals).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 only writes the status and the rusage it is given.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return (ExitStatus::from_raw(status), usage.ru_maxrss as u64);
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
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
