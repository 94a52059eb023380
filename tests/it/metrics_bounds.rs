//! `--metrics-listen` under attack (issue 52, finding 7): endless request lines and headers, a
//! thousand silent connections, and SIGINT while they go on. The endpoint's memory and threads stay
//! bounded, each attacker is refused (414, 431, 503 or a close) and a normal scrape still gets its page.

use crate::common::bench::Bench;
use crate::common::{RedisServer, sys};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the done criterion allows the whole process, whatever the endpoint is sent.
const RSS_LIMIT_KB: u64 = 100 * 1024;

/// A ringbench run serving `--metrics-listen 127.0.0.1:0` against a server of its own: a slow open
/// loop (200 requests a second on 2 connections) for 30 s, killed when dropped.
struct Run {
    child: Child,
    port: u16,
    _server: RedisServer,
}

impl Run {
    fn start() -> Run {
        let server = RedisServer::start();
        let mut child = Bench::on(&server)
            .args(["-t", "get", "-c", "2", "--rps", "200", "--duration", "30"])
            // The default --metrics-linger (5 s): a run stopped by a signal does not linger.
            .args(["--metrics-listen", "127.0.0.1:0"])
            .spawn();
        // The normal report's first line names the port the kernel chose.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            let n = stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "ringbench ended before serving its metrics");
            if let Some(rest) = line.trim().strip_prefix("Serving live metrics at http://") {
                let addr = rest.strip_suffix("/metrics").unwrap();
                break addr.rsplit(':').next().unwrap().parse().unwrap();
            }
        };
        // The rest of its output is drained so that it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let mut stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let run = Run {
            child,
            port,
            _server: server,
        };
        // Under way: its executors are up (the thread count is the run's own from here).
        let start = Instant::now();
        while !run
            .get()
            .is_some_and(|(_, page)| page.contains("ringbench_test_running{test=\"GET\"} 1"))
        {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the run never started"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        run
    }

    /// A field of /proc/PID/status (`VmRSS` in kB, `Threads`), 0 once the process is gone.
    fn status(&self, field: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    /// The process's largest RSS (kB) and thread count, sampled every 20 ms until `done` is set.
    fn watch(&self, done: &AtomicBool) -> (u64, u64) {
        let (mut rss, mut threads) = (0, 0);
        while !done.load(Ordering::Relaxed) {
            rss = rss.max(self.status("VmRSS"));
            threads = threads.max(self.status("Threads"));
            std::thread::sleep(Duration::from_millis(20));
        }
        (rss, threads)
    }

    /// A GET /metrics on a fresh connection: its status and body.
    fn get(&self) -> Option<(u16, String)> {
        crate::metrics::http_get(self.port, "/metrics")
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How one attacking connection ended.
#[derive(Debug)]
struct Outcome {
    /// Bytes it wrote before its writes failed (or `for_at_most` ran out), the sockets' buffers
    /// included.
    sent: usize,
    /// How long it kept writing.
    took: Duration,
    /// The status line it read back, if any.
    answer: Option<String>,
}

/// Connects to `port`, writes `head` and then `filler` over and over until a write fails or
/// `for_at_most` has passed, reading whatever comes back meanwhile (`None`: no connection).
fn attack(
    port: u16,
    head: &'static [u8],
    filler: &'static [u8],
    for_at_most: Duration,
) -> Option<Outcome> {
    let start = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut r = s.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        r.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 || got.len() > 64 * 1024 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got).into_owned();
        text.lines().next().map(str::to_string)
    });
    let mut sent = 0;
    let mut wrote = s.write_all(head).is_ok();
    let chunk: Vec<u8> = filler.iter().copied().cycle().take(64 * 1024).collect();
    while wrote && start.elapsed() < for_at_most {
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => wrote = false,
        }
    }
    let took = start.elapsed();
    let _ = s.shutdown(std::net::Shutdown::Both);
    let answer = reader.join().unwrap();
    Some(Outcome { sent, took, answer })
}

/// Four connections sending `head` then `filler` endlessly for up to 2 s: the process's peak RSS
/// (kB) and RSS before, and each connection's outcome.
fn four_endless(run: &Run, head: &'static [u8], filler: &'static [u8]) -> (u64, u64, Vec<Outcome>) {
    let before = run.status("VmRSS");
    let done = AtomicBool::new(false);
    let port = run.port;
    let (peak, outcomes) = std::thread::scope(|s| {
        let watcher = s.spawn(|| run.watch(&done));
        let attackers: Vec<_> = (0..4)
            .map(|_| s.spawn(move || attack(port, head, filler, Duration::from_secs(2)).unwrap()))
            .collect();
        let outcomes: Vec<Outcome> = attackers.into_iter().map(|a| a.join().unwrap()).collect();
        done.store(true, Ordering::Relaxed);
        (watcher.join().unwrap().0, outcomes)
    });
    (peak, before, outcomes)
}

/// Each attacker was refused with `status` (or only closed) well before its 2 s were up, and the
/// process stayed under the memory limit, growing by less than 8 MB.
fn assert_refused(what: &str, status: &str, peak: u64, before: u64, outcomes: &[Outcome]) {
    eprintln!(
        "{what}: RSS {before} kB before, peak {peak} kB; {:?}",
        outcomes
    );
    assert!(
        peak < RSS_LIMIT_KB && peak < before + 8 * 1024,
        "{what}: RSS {before} kB before, peak {peak} kB"
    );
    for o in outcomes {
        assert!(
            o.took < Duration::from_millis(1500),
            "{what}: not refused after {} bytes in {:?}",
            o.sent,
            o.took
        );
        if let Some(a) = &o.answer {
            assert!(a.starts_with(&format!("HTTP/1.1 {status} ")), "{what}: {a}");
        }
    }
    assert!(
        outcomes.iter().any(|o| o.answer.is_some()),
        "{what}: no attacker read a {status}"
    );
}

#[test]
fn an_endless_request_line_is_refused_with_414_and_memory_stays_bounded() {
    let _turn = crate::common::lock::shared();
    let run = Run::start();
    let (peak, before, outcomes) = four_endless(&run, b"GET /", b"metrics");
    assert_refused("endless request line", "414", peak, before, &outcomes);
    assert_eq!(run.get().map(|r| r.0), Some(200));
}

#[test]
fn endless_headers_are_refused_with_431_and_memory_stays_bounded() {
    let _turn = crate::common::lock::shared();
    let run = Run::start();
    let (peak, before, outcomes) = four_endless(
        &run,
        b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        b"X-Filler: 0123456789abcdef0123456789abcdef\r\n",
    );
    assert_refused("endless headers", "431", peak, before, &outcomes);
    assert_eq!(run.get().map(|r| r.0), Some(200));
}

/// Opens `n` connections to `port` that send nothing (a connection the server closed at once is
/// kept too).
fn silent(port: u16, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|i| {
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .unwrap_or_else(|e| panic!("connection {i}: {e}"))
        })
        .collect()
}

#[test]
fn a_thousand_silent_connections_leave_the_threads_fixed_and_a_scrape_served() {
    let _turn = crate::common::lock::shared();
    let run = Run::start();
    let threads_before = run.status("Threads");
    let done = AtomicBool::new(false);
    let (held, threads) = std::thread::scope(|s| {
        let watcher = s.spawn(|| run.watch(&done));
        let held = silent(run.port, 1000);
        std::thread::sleep(Duration::from_millis(300));
        done.store(true, Ordering::Relaxed);
        (held, watcher.join().unwrap().1)
    });
    eprintln!("1000 silent connections: {threads_before} threads before, {threads} at most");
    assert!(
        threads <= threads_before + 2,
        "{threads_before} threads before, {threads} with 1000 connections"
    );
    // The busy endpoint refuses a new connection or keeps it waiting; once the silent ones have had
    // their 5 s for a request, a scrape on a fresh connection gets its page.
    let start = Instant::now();
    let page = loop {
        if let Some((200, body)) = run.get() {
            break body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(8),
            "no page 8 s after the silent connections"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("a scrape got its page {:?} after", start.elapsed());
    assert!(page.ends_with("# EOF\n"), "{page}");
    // Every silent connection is answered (503) or closed within the 5 s it has for a request (the
    // scrape may get a worker a silent one gave up first): none holds a worker for longer. A
    // connection still open is read again until it ends, at most 8 s after the scrape began.
    let mut open: Vec<_> = held.into_iter().collect();
    loop {
        open.retain(|c| {
            let mut c = c;
            c.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
            let e = c.read(&mut [0u8; 512]).err();
            e.is_some_and(|e| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut))
        });
        if open.is_empty() || start.elapsed() > Duration::from_secs(8) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(open.len(), 0, "silent connections still open");
}

/// Attackers that reconnect whenever they are refused, until `stop` is set: two endless request
/// lines, two endless headers, and 200 silent connections.
fn ongoing_attacks(port: u16, stop: Arc<AtomicBool>) -> Vec<JoinHandle<()>> {
    let mut handles = Vec::new();
    let kinds: [(&'static [u8], &'static [u8]); 2] = [
        (b"GET /", b"metrics"),
        (
            b"GET /metrics HTTP/1.1\r\n",
            b"X-Filler: 0123456789abcdef\r\n",
        ),
    ];
    for (head, filler) in kinds.into_iter().chain(kinds) {
        let stop = stop.clone();
        handles.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed)
                && attack(port, head, filler, Duration::from_millis(500)).is_some()
            {}
        }));
    }
    handles.push(std::thread::spawn(move || {
        let mut held = Vec::new();
        while !stop.load(Ordering::Relaxed) && held.len() < 200 {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(c) => held.push(c),
                Err(_) => return,
            }
        }
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }));
    handles
}

#[test]
fn sigint_ends_the_run_within_a_second_while_the_endpoint_is_attacked() {
    let _turn = crate::common::lock::shared();
    let mut run = Run::start();
    let stop = Arc::new(AtomicBool::new(false));
    let attackers = ongoing_attacks(run.port, stop.clone());
    std::thread::sleep(Duration::from_secs(1));
    let peak = run.status("VmRSS");
    assert!(run.child.try_wait().unwrap().is_none(), "ended early");
    let signalled = Instant::now();
    assert!(sys::kill(run.child.id() as i32, libc::SIGINT));
    let status = loop {
        if let Some(status) = run.child.try_wait().unwrap() {
            break status;
        }
        if signalled.elapsed() > Duration::from_secs(10) {
            break run.child.try_wait().unwrap().unwrap_or_default();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let took = signalled.elapsed();
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        let _ = a.join();
    }
    eprintln!("SIGINT under attack: exit {status:?} {took:?} after; RSS {peak} kB");
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert_eq!(status.code(), Some(130));
    assert!(peak < RSS_LIMIT_KB, "RSS {peak} kB");
}
