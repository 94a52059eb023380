//! The control connection's replies, and the set-up replies of connections opened on the ring, are
//! bounded. Fake servers (not Redis: a real one cannot send these replies) answer ringbench's first
//! control command (`CONFIG GET save`), or a data connection's first set-up command, with a reply larger
//! than any real one; ringbench refuses it at once, with one line naming the limit, in little memory.
//! A control reply must also be whole within its bound (a paused server, a trickling fake), and a stop
//! ends the wait for it.

use crate::common::bench::Bench;
use crate::common::lock::shared;
use crate::common::sys;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Stdio;
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

/// One PING against 127.0.0.1:`port` with `extra` flags, watched as [`run_watched`] does.
fn ping_once(port: u16, extra: &[&str], limit: Duration) -> Watched {
    let bench = Bench::port(port)
        .args(extra)
        .args(["-t", "ping", "-n", "1", "-c", "1"]);
    run_watched(bench, limit)
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

/// Runs `bench` and fails the test, killing it, when it runs past `limit` or its resident memory goes
/// past 1 GiB (an unbounded control connection grew by 0.5 GB a second); otherwise says how it ended,
/// with its peak memory.
fn run_watched(bench: Bench, limit: Duration) -> Watched {
    let mut cmd = bench.command();
    let shown = format!("{cmd:?}");
    let started = Instant::now();
    let mut child = cmd
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
        panic!("{shown} {why}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    }
    Watched {
        code: status.code(),
        stdout,
        stderr,
        took,
        peak_mib: peak_kib / 1024,
    }
}

/// Shows how a run ended (with `--nocapture`).
fn report(w: &Watched) {
    eprintln!(
        "exit {:?} in {:?}, peak {} MiB: {}",
        w.code,
        w.took,
        w.peak_mib,
        w.stderr.trim_end()
    );
}

/// The run's outcome: exit code 1 within a few seconds, nothing on stdout, `line` alone on stderr,
/// and a peak resident memory under 100 MiB.
fn assert_refused(w: &Watched, line: &str) {
    report(w);
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
    });
    let w = ping_once(port, &[], Duration::from_secs(10));
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
    });
    let w = ping_once(port, &[], Duration::from_secs(20));
    assert_refused(
        &w,
        &format!(
            "ringbench: the reply of 127.0.0.1:{port} to CONFIG GET save is over 500000 elements: it announces 2000000"
        ),
    );
}

/// Reads one RESP request (an array of bulk strings) from `conn` into `buf` (which keeps what followed
/// it) and returns its words; `None` once the client has gone.
fn next_request(conn: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<String>> {
    loop {
        if let Some((words, used)) = parse_request(buf) {
            buf.drain(..used);
            return Some(words);
        }
        let mut chunk = [0u8; 4096];
        match conn.read(&mut chunk) {
            Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
}

/// A whole request at the start of `buf`: its words and its length.
fn parse_request(buf: &[u8]) -> Option<(Vec<String>, usize)> {
    let line = |at: usize| -> Option<(&[u8], usize)> {
        let end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((&buf[at..end], end + 2))
    };
    let (head, mut at) = line(0)?;
    let n: usize = std::str::from_utf8(head.strip_prefix(b"*")?)
        .ok()?
        .parse()
        .ok()?;
    let mut words = Vec::with_capacity(n);
    for _ in 0..n {
        let (len, body) = line(at)?;
        let len: usize = std::str::from_utf8(len.strip_prefix(b"$")?)
            .ok()?
            .parse()
            .ok()?;
        if buf.len() < body + len + 2 {
            return None;
        }
        words.push(String::from_utf8_lossy(&buf[body..body + len]).into_owned());
        at = body + len + 2;
    }
    Some((words, at))
}

/// A fake server (not Redis) whose first connection, ringbench's control connection, gets plain
/// answers (`CONFIG GET`: none, `INFO`: empty, anything else `+OK`), while every later connection, a
/// data connection being set up on the ring, gets a terabyte string header and bytes without end as the
/// answer to its first set-up command (`SELECT` here). The opening decodes set-up replies with the same
/// bounds as the control connection: it is refused at the header.
#[test]
fn a_set_up_reply_announcing_a_terabyte_string_is_refused_on_the_ring() {
    let _turn = shared();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (i, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                while let Some(words) = next_request(&mut conn, &mut buf) {
                    let cmd = words.first().map(|w| w.to_ascii_uppercase());
                    let answer: &[u8] = match cmd.as_deref() {
                        _ if i > 0 => {
                            if conn.write_all(b"$1099511627776\r\n").is_err() {
                                return;
                            }
                            let bytes = [b'x'; 64 * 1024];
                            while conn.write_all(&bytes).is_ok() {}
                            return;
                        }
                        Some("CONFIG") => b"*0\r\n",
                        Some("INFO") => b"$0\r\n\r\n",
                        _ => b"+OK\r\n",
                    };
                    if conn.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let w = ping_once(port, &["--dbnum", "1"], Duration::from_secs(10));
    report(&w);
    let said = format!(
        "the reply of 127.0.0.1:{port} to SELECT is over 16 MiB: it announces a string of 1099511627776 bytes"
    );
    assert_eq!(w.code, Some(1), "{}\n{}", w.stdout, w.stderr);
    assert!(w.stderr.contains(&said), "{}\n{}", w.stdout, w.stderr);
    assert!(w.took < Duration::from_secs(5), "{:?}", w.took);
    assert!(w.peak_mib < 100, "peak {} MiB", w.peak_mib);
}

/// A real server under `CLIENT PAUSE ... ALL` accepts connections and answers none of their commands:
/// ringbench's first control command, `CONFIG GET save`, gets no reply. Three such commands each waited
/// out --connect-timeout (and their timeouts were ignored), so the run started 15 s late with the
/// defaults; now the first missing reply ends the run at its bound with one line.
#[test]
fn a_server_that_accepts_and_never_answers_ends_the_run_at_the_bound() {
    let _turn = shared();
    let s = crate::common::RedisServer::start();
    assert_eq!(s.cli(&["client", "pause", "30000", "all"]), "OK");
    let w = ping_once(
        s.port,
        &["--connect-timeout", "2000"],
        Duration::from_secs(15),
    );
    report(&w);
    assert_eq!(w.code, Some(1), "{}\n{}", w.stdout, w.stderr);
    assert_eq!(
        w.stderr,
        format!(
            "ringbench: no reply from 127.0.0.1:{} to CONFIG GET save within 2000 ms\n",
            s.port
        )
    );
    assert_eq!(w.stdout, "");
    assert!(w.took < Duration::from_secs(4), "{:?}", w.took);
    // The server is killed with the paused clients (an unpause would wait for the pause to end).
}

/// A fake server (not Redis: a real one cannot be made to trickle) that answers `CONFIG GET save` with
/// a valid reply one byte every 200 ms (4.4 s in all): each byte restarted the per-read timeout, so the
/// reply came whole however slow. Now the whole reply must come within the bound, `--timeout` here.
#[test]
fn a_trickling_reply_is_cut_off_at_the_bound() {
    let _turn = shared();
    let port = fake_server(|conn| {
        for b in b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n" {
            std::thread::sleep(Duration::from_millis(200));
            if conn.write_all(&[*b]).is_err() {
                return;
            }
        }
    });
    let w = ping_once(port, &["--timeout", "1000"], Duration::from_secs(15));
    report(&w);
    assert_eq!(w.code, Some(1), "{}\n{}", w.stdout, w.stderr);
    let want = format!(
        "ringbench: no reply from 127.0.0.1:{port} to CONFIG GET save within 1000 ms (only "
    );
    assert!(
        w.stderr.starts_with(&want)
            && w.stderr.ends_with(" bytes of it came)\n")
            && w.stderr.lines().count() == 1,
        "{}",
        w.stderr
    );
    assert_eq!(w.stdout, "");
    assert!(w.took < Duration::from_secs(3), "{:?}", w.took);
}

/// SIGINT 1 s into a control read that gets no reply (a paused server, --connect-timeout 30000): the
/// read loop retried after the signal without looking at the stop flag, so the process ran on until
/// the waits ran out. Now it ends within a second of the signal, as an interrupted run: exit 130,
/// nothing measured, nothing said.
#[test]
fn sigint_during_a_stalled_control_read_ends_the_run_within_a_second() {
    let _turn = shared();
    let s = crate::common::RedisServer::start();
    assert_eq!(s.cli(&["client", "pause", "30000", "all"]), "OK");
    let mut child = Bench::on(&s)
        .args([
            "--connect-timeout",
            "30000",
            "-t",
            "ping",
            "-n",
            "1",
            "-c",
            "1",
        ])
        .spawn();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.try_wait().unwrap().is_none(),
        "ended before the signal"
    );
    let signalled = Instant::now();
    assert!(sys::kill(child.id() as i32, libc::SIGINT));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(5) {
            sys::kill(child.id() as i32, libc::SIGKILL);
            let _ = child.wait();
            panic!("still running 5 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = signalled.elapsed();
    let out = child.wait_with_output().unwrap();
    eprintln!("exit {:?} {took:?} after SIGINT", status.code());
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert_eq!(status.code(), Some(130));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    // The server is killed with the paused clients (an unpause would wait for the pause to end).
}

/// A server that refuses CONFIG with an error reply (renamed or disabled on managed services) answers:
/// only a missing reply ends the run, so this one runs whole, and says nothing on stderr. (A guard
/// for the fatal missing reply: it passes before and after it.)
#[test]
fn a_server_that_refuses_config_with_an_error_still_runs() {
    let _turn = shared();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                while let Some(words) = next_request(&mut conn, &mut buf) {
                    let answer: &[u8] = match words[0].to_ascii_uppercase().as_str() {
                        "CONFIG" => {
                            b"-ERR unknown command 'CONFIG', with args beginning with: \r\n"
                        }
                        "INFO" => b"$0\r\n\r\n",
                        _ => b"+PONG\r\n",
                    };
                    if conn.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let w = run_watched(
        Bench::port(port).args(["-t", "ping_mbulk", "-n", "100", "-c", "1", "-q"]),
        Duration::from_secs(10),
    );
    report(&w);
    assert_eq!(w.code, Some(0), "{}\n{}", w.stdout, w.stderr);
    assert_eq!(w.stderr, "");
    assert!(w.stdout.starts_with("PING_MBULK: "), "{}", w.stdout);
}
