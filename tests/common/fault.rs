//! A fault-injecting fake server (not Redis): it answers PING-style requests with replies cut into
//! random pieces, with a malformed byte, one byte at a time, after RESP3 pushes, or with a line that
//! never ends: faults a real redis-server cannot produce.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

/// What the fault server does to its replies.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// Every reply is written in several pieces split at random byte positions.
    SplitReplies,
    /// The reply to request number N (counted over all connections) starts with `?`, which is not RESP.
    MalformedAt(u64),
    /// Every reply is `+OK\r\n`, written one byte every this many milliseconds.
    Drip(u64),
    /// Before every reply, this many RESP3 push messages, one every 100 ms.
    PushesFirst(u32),
    /// Every reply is a simple string that never ends: `+` and then `a`s, without CRLF, until the
    /// client goes away.
    EndlessLine,
}

pub struct FaultServer {
    pub port: u16,
    /// Requests received (complete RESP arrays), the control connection's included.
    pub requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// The reply the fault server sends: an array holding a bulk string, a map and an integer.
pub const REPLY: &[u8] = b"*3\r\n$11\r\nhello world\r\n%1\r\n+k\r\n:12345\r\n$-1\r\n";

impl FaultServer {
    pub fn start(fault: Fault) -> FaultServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (requests.clone(), stop.clone());
        thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let r = r.clone();
                thread::spawn(move || serve(conn, fault, r, n as u64));
            }
        });
        FaultServer {
            port,
            requests,
            stop,
        }
    }
}

/// Length of the first complete RESP array of bulk strings in `buf`, if there is one.
fn request_len(buf: &[u8]) -> Option<usize> {
    fn line(buf: &[u8], at: usize) -> Option<(i64, usize)> {
        let end = buf[at..].windows(2).position(|w| w == b"\r\n")? + at;
        let n = std::str::from_utf8(&buf[at + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    }
    let (n, mut at) = line(buf, 0)?;
    for _ in 0..n {
        let (len, body) = line(buf, at)?;
        at = body + len as usize + 2;
        if at > buf.len() {
            return None;
        }
    }
    Some(at)
}

fn serve(mut conn: TcpStream, fault: Fault, requests: Arc<AtomicU64>, seed: u64) {
    let _ = conn.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    loop {
        let n = match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut out = Vec::new();
        let mut answers = 0;
        while let Some(len) = request_len(&buf) {
            let is_config = buf[..len]
                .windows(6)
                .any(|w| w.eq_ignore_ascii_case(b"CONFIG"));
            buf.drain(..len);
            let seq = requests.fetch_add(1, Ordering::SeqCst) + 1;
            if is_config {
                out.extend_from_slice(b"*0\r\n");
            } else if matches!(fault, Fault::MalformedAt(at) if at == seq) {
                out.extend_from_slice(b"?oops\r\n");
            } else {
                out.extend_from_slice(REPLY);
                answers += 1;
            }
        }
        if out.is_empty() {
            continue;
        }
        let answered = answers > 0;
        match fault {
            Fault::Drip(ms) if answered => {
                for b in b"+OK\r\n".repeat(answers) {
                    thread::sleep(std::time::Duration::from_millis(ms));
                    if conn.write_all(&[b]).is_err() {
                        return;
                    }
                }
                continue;
            }
            Fault::PushesFirst(n) if answered => {
                for _ in 0..n {
                    if conn.write_all(b">2\r\n+message\r\n+tick\r\n").is_err() {
                        return;
                    }
                    thread::sleep(std::time::Duration::from_millis(100));
                }
            }
            Fault::EndlessLine if answered => {
                let a = [b'a'; 65536];
                if conn.write_all(b"+").is_err() {
                    return;
                }
                while conn.write_all(&a).is_ok() {}
                return;
            }
            _ => {}
        }
        // Write the replies in random pieces, each its own segment.
        let mut at = 0;
        while at < out.len() {
            let piece = match fault {
                Fault::SplitReplies => 1 + (next() % 9) as usize,
                _ => out.len(),
            };
            let end = (at + piece).min(out.len());
            if conn.write_all(&out[at..end]).is_err() {
                return;
            }
            at = end;
        }
    }
}
