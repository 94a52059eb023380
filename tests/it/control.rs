//! The control connection's replies are bounded. Fake servers (not Redis: a real one cannot send these
//! replies) answer ringbench's first control command (`CONFIG GET save`) with a reply larger than any
//! real one; ringbench refuses it at once, with one line naming the limit, in little memory.

use crate::common::lock::shared;
use crate::common::sys;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Starts a fake server (not Redis): on each connection it reads the first request, answers it with
/// `answer` (which writes until it is done or the client goes), then holds the connection until the
/// client closes it. Returns its port.
fn fake_server(answer: fn(&mut TcpStream)) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                if matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                    answer(&mut conn);
                }
                while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    port
}

/// How a run of [`run_watched`] ended.
struct Watched {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
    /// Peak resident memory, in MiB.
    peak_mib: u64,
}

/// The resident memory of process `pid`, in MiB (0 once it is gone).
fn rss_mib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib / 1024)
}

/// Runs ringbench with `args` and fails the test, killing it, when it runs past `limit` or its
/// resident memory goes past 1 GiB (an unbounded control connection grew by 0.5 GB a second);
/// otherwise says how it ended, with its peak memory.
fn run_watched(args: &[&str], limit: Duration) -> Watched {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringbench"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let read_all = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().unwrap()));
    let stderr = read_all(Box::new(child.stderr.take().unwrap()));
    let ended = Arc::new(AtomicBool::new(false));
    let watch = {
        let ended = ended.clone();
        std::thread::spawn(move || {
            while !ended.load(Ordering::SeqCst) {
                let why = if started.elapsed() > limit {
                    format!("ran past {limit:?}")
                } else if rss_mib(pid) > 1024 {
                    format!("went past 1 GiB resident in {:?}", started.elapsed())
                } else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                // Our own child, not reaped yet (ended is false).
                sys::kill(pid, libc::SIGKILL);
                return Some(why);
            }
            None
        })
    };
    let (status, peak_kib) = sys::wait_with_peak_rss(child);
    let took = started.elapsed();
    ended.store(true, Ordering::SeqCst);
    let killed = watch.join().unwrap();
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    if let Some(why) = killed {
        panic!("ringbench {args:?} {why}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    }
    Watched {
        code: status.code(),
        stdout,
        stderr,
        took,
        peak_mib: peak_kib / 1024,
    }
}

/// The run's outcome: exit code 1 within a few seconds, nothing on stdout, `line` alone on stderr,
/// and a peak resident memory under 100 MiB.
fn assert_refused(w: &Watched, line: &str) {
    eprintln!(
        "exit {:?} in {:?}, peak {} MiB: {}",
        w.code,
        w.took,
        w.peak_mib,
        w.stderr.trim_end()
    );
    assert_eq!(w.code, Some(1), "{}\n{}", w.stdout, w.stderr);
    assert_eq!(w.stderr, format!("{line}\n"));
    assert_eq!(w.stdout, "");
    assert!(w.took < Duration::from_secs(5), "{:?}", w.took);
    assert!(w.peak_mib < 100, "peak {} MiB", w.peak_mib);
}

/// A fake server that answers the first command with a terabyte string header, `$1099511627776`, and
/// then bytes without end: ringbench read them all, 13.5 GB in 27 s. It is refused at the header.
#[test]
fn a_fake_server_announcing_a_terabyte_string_is_refused_at_the_header() {
    let _turn = shared();
    let port = fake_server(|conn| {
        if conn.write_all(b"$1099511627776\r\n").is_err() {
            return;
        }
        let bytes = [b'x'; 64 * 1024];
        while conn.write_all(&bytes).is_ok() {}
    })
    .to_string();
    let w = run_watched(
        &["-p", &port, "-t", "ping", "-n", "1", "-c", "1"],
        Duration::from_secs(10),
    );
    assert_refused(
        &w,
        &format!(
            "ringbench: the reply of 127.0.0.1:{port} to CONFIG GET save is over 16 MiB: it announces a string of 1099511627776 bytes"
        ),
    );
}

/// A fake server that answers the first command with an array of two million one-byte strings
/// (14 MB): ringbench decoded the buffer from its start after each 16 KiB read, minutes of quadratic
/// work. It is refused at the array's header.
#[test]
fn a_fake_server_answering_two_million_elements_is_refused_at_the_header() {
    let _turn = shared();
    let port = fake_server(|conn| {
        if conn.write_all(b"*2000000\r\n").is_err() {
            return;
        }
        let batch = b"$1\r\nx\r\n".repeat(10_000);
        for _ in 0..200 {
            if conn.write_all(&batch).is_err() {
                return;
            }
        }
    })
    .to_string();
    let w = run_watched(
        &["-p", &port, "-t", "ping", "-n", "1", "-c", "1"],
        Duration::from_secs(20),
    );
    assert_refused(
        &w,
        &format!(
            "ringbench: the reply of 127.0.0.1:{port} to CONFIG GET save is over 500000 elements: it announces 2000000"
        ),
    );
}
