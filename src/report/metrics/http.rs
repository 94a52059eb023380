//! The HTTP/1.1 server behind `--metrics-listen`, bounded in everything a client controls: one
//! listener thread and [`WORKERS`] worker threads, started once; accepted connections wait for a
//! worker in a queue of [`QUEUE`], and one more is answered `503` and closed at once. A request line
//! longer than [`LINE_MAX`] is answered `414`, headers past [`HEADER_LINES_MAX`] lines or
//! [`HEADERS_MAX`] bytes `431`, a request head not whole within [`REQUEST_WITHIN`] of the connection's
//! acceptance (or its previous reply) `408`, each with one line naming the limit, and the connection is
//! closed. Each worker reads into one buffer of its own, allocated once, so memory and threads do not
//! grow with what clients send or how many connect. Only `GET` and `HEAD` are served; bodies are never
//! read. The stop flag ends every thread within about [`POLL`] (a reply being written gets
//! [`STOP_GRACE`] more).

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// Connections served at once.
pub const WORKERS: usize = 4;
/// Accepted connections waiting for a worker; past them a connection is refused with `503`.
pub const QUEUE: usize = 16;
/// The longest request line, its line end included.
pub const LINE_MAX: usize = 8 * 1024;
/// The most header bytes (line ends and the blank line included) after the request line.
pub const HEADERS_MAX: usize = 16 * 1024;
/// The most header lines.
pub const HEADER_LINES_MAX: usize = 64;
/// How long a connection has to send a whole request head, from its acceptance or its last reply: also
/// how long an idle keep-alive connection is kept.
pub const REQUEST_WITHIN: Duration = Duration::from_secs(5);
/// How long a client has to take a reply.
const WRITE_WITHIN: Duration = Duration::from_secs(5);
/// How often a blocked read or write looks at the stop flag.
pub const POLL: Duration = Duration::from_millis(50);
/// How often the listener looks for new connections and at the stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(20);
/// What a reply being written when the server stops still gets.
pub const STOP_GRACE: Duration = Duration::from_millis(250);
/// After a last reply, how long and how much of what the client still sends is read and dropped, so
/// that the close does not reset the connection before the client has read the reply.
const DRAIN: Duration = Duration::from_millis(250);
const DRAIN_BYTES: usize = 1024 * 1024;

/// A reply: status, type and body (a `HEAD` is sent its head alone).
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
}

impl Reply {
    /// A plain-text reply of one line.
    pub fn text(status: u16, line: impl Into<String>) -> Reply {
        let mut body = line.into();
        body.push('\n');
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body,
        }
    }
}

/// What answers a `GET` or `HEAD` of a path (the request target without its query).
pub type Handler = dyn Fn(&str) -> Reply + Send + Sync;

/// A running server: its threads and the flag that stops them.
pub struct Server {
    /// The address it listens on (the port the kernel chose for port 0).
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// What the server's threads share.
struct Shared {
    stop: AtomicBool,
    /// Connections handed to the queue and not yet taken by a worker.
    waiting: AtomicUsize,
    handler: Box<Handler>,
}

/// An accepted connection and when it was accepted.
struct Conn {
    stream: TcpStream,
    at: Instant,
}

impl Server {
    /// Listens on `addr` and serves `handler` from a listener and [`WORKERS`] workers.
    pub fn start(addr: SocketAddr, handler: Box<Handler>) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let bound = listener.local_addr()?;
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            waiting: AtomicUsize::new(0),
            handler,
        });
        let mut server = Server {
            addr: bound,
            shared: shared.clone(),
            threads: Vec::with_capacity(WORKERS + 1),
        };
        let (tx, rx) = std::sync::mpsc::sync_channel::<Conn>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..WORKERS {
            let (rx, shared) = (rx.clone(), shared.clone());
            // A failed spawn drops `server`, which stops and joins the threads started so far.
            server.threads.push(
                std::thread::Builder::new()
                    .name(format!("metrics-http-{i}"))
                    .spawn(move || work(&rx, &shared))?,
            );
        }
        server.threads.push(
            std::thread::Builder::new()
                .name("metrics-listen".to_string())
                .spawn(move || listen(&listener, &tx, &shared))?,
        );
        Ok(server)
    }

    /// Stops the server: the listener closes, each worker ends its connection, and all are joined.
    pub fn shut(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut();
    }
}

/// The listener's loop: each new connection goes to the queue, or is refused when it is full. Ends
/// when the stop flag is set, closing the queue (the workers then end too).
fn listen(listener: &TcpListener, tx: &SyncSender<Conn>, shared: &Shared) {
    let mut scratch = [0u8; 4096];
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                shared.waiting.fetch_add(1, Ordering::Relaxed);
                let conn = Conn {
                    stream,
                    at: Instant::now(),
                };
                if let Err(TrySendError::Full(c) | TrySendError::Disconnected(c)) =
                    tx.try_send(conn)
                {
                    shared.waiting.fetch_sub(1, Ordering::Relaxed);
                    refuse_busy(c.stream, &mut scratch);
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // Nothing waiting, or no descriptor left for one (EMFILE): look again shortly.
            Err(_) => std::thread::sleep(ACCEPT_POLL),
        }
    }
}

/// `503` to a connection no worker or queue place is left for, without waiting on it: what it has
/// sent so far is read (so that the close is not a reset), the reply written if the socket takes it.
fn refuse_busy(mut stream: TcpStream, scratch: &mut [u8]) {
    if stream.set_nonblocking(true).is_err() {
        return;
    }
    let _ = stream.read(scratch);
    let reply = Reply::text(
        503,
        format!("busy: {WORKERS} connections served and {QUEUE} waiting; try again"),
    );
    let _ = stream.write_all(&head(&reply, false));
    let _ = stream.write_all(reply.body.as_bytes());
    let _ = stream.shutdown(Shutdown::Write);
}

/// A worker's loop: one connection at a time from the queue, until the queue is closed.
fn work(rx: &Mutex<Receiver<Conn>>, shared: &Shared) {
    let mut buf = vec![0u8; LINE_MAX + HEADERS_MAX].into_boxed_slice();
    loop {
        let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(conn) = next else {
            return;
        };
        shared.waiting.fetch_sub(1, Ordering::Relaxed);
        if !shared.stop.load(Ordering::Relaxed) {
            serve(conn, &mut buf, shared);
        }
    }
}

/// How reading a request head ended.
#[derive(Debug, PartialEq, Eq)]
enum Head {
    /// The head is the first this many bytes of the buffer.
    Whole(usize),
    /// Refused with this reply, then closed.
    Refused(u16),
    /// The peer closed, failed, sent nothing in time, or the server is stopping.
    Gone,
}

/// Serves one connection's requests until it closes, breaks a limit, or keep-alive ends.
fn serve(conn: Conn, buf: &mut [u8], shared: &Shared) {
    let Conn { mut stream, at } = conn;
    if stream.set_nonblocking(false).is_err() {
        return;
    }
    let _ = stream.set_nodelay(true);
    let (mut have, mut deadline) = (0, at + REQUEST_WITHIN);
    loop {
        let end = match read_head(&mut stream, buf, &mut have, deadline, &shared.stop) {
            Head::Whole(end) => end,
            Head::Refused(status) => {
                let reply = Reply::text(status, refusal(status));
                if write_within(&mut stream, &head(&reply, false), &shared.stop) {
                    write_within(&mut stream, reply.body.as_bytes(), &shared.stop);
                }
                return drain(stream, buf, &shared.stop);
            }
            Head::Gone => return,
        };
        let (reply, is_head, keep) = match parse(&buf[..end]) {
            Ok(req) if req.method == "GET" || req.method == "HEAD" => {
                ((shared.handler)(req.path), req.method == "HEAD", req.keep)
            }
            Ok(_) => (Reply::text(405, refusal(405)), false, false),
            Err(status) => (Reply::text(status, refusal(status)), false, false),
        };
        // A connection kept alive gives its worker up when others wait for one.
        let keep = keep && shared.waiting.load(Ordering::Relaxed) == 0;
        let mut out = head(&reply, keep);
        if !is_head {
            out.extend_from_slice(reply.body.as_bytes());
        }
        if !write_within(&mut stream, &out, &shared.stop) {
            return;
        }
        if !keep {
            return drain(stream, buf, &shared.stop);
        }
        // Bytes past the head are the next request's (pipelined).
        buf.copy_within(end..have, 0);
        have -= end;
        deadline = Instant::now() + REQUEST_WITHIN;
    }
}

/// Reads into `buf` (holding `have` bytes already) until it holds a whole request head, a limit is
/// broken, the peer goes, `deadline` passes or `stop` is set.
fn read_head(
    stream: &mut TcpStream,
    buf: &mut [u8],
    have: &mut usize,
    deadline: Instant,
    stop: &AtomicBool,
) -> Head {
    let mut scan = Scan::default();
    loop {
        match scan.step(&buf[..*have]) {
            Step::More => {}
            Step::Whole(end) => return Head::Whole(end),
            Step::Refuse(status) => return Head::Refused(status),
        }
        let now = Instant::now();
        if stop.load(Ordering::Relaxed) {
            return Head::Gone;
        }
        if now >= deadline {
            // A connection that sent nothing is closed without a word (an idle keep-alive).
            return if *have > 0 {
                Head::Refused(408)
            } else {
                Head::Gone
            };
        }
        if stream
            .set_read_timeout(Some((deadline - now).min(POLL)))
            .is_err()
        {
            return Head::Gone;
        }
        // The limits are met before the buffer is full: `scan` refuses a head that cannot fit.
        match stream.read(&mut buf[*have..]) {
            Ok(0) => return Head::Gone,
            Ok(n) => *have += n,
            Err(e) if is_wait(&e) => {}
            Err(_) => return Head::Gone,
        }
    }
}

/// A read or write that timed out or was interrupted, to be tried again.
fn is_wait(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
    )
}

/// Where the scan of a request head is: the lines seen so far.
#[derive(Debug, Default)]
struct Scan {
    /// Where the next line starts.
    from: usize,
    /// Where the request line ends (past its `\n`), once it has.
    line_end: Option<usize>,
    /// Header lines seen.
    lines: usize,
}

#[derive(Debug, PartialEq, Eq)]
enum Step {
    More,
    Whole(usize),
    Refuse(u16),
}

impl Scan {
    /// Scans the lines of `data` not scanned yet: the head's end, or a broken limit, or more needed.
    fn step(&mut self, data: &[u8]) -> Step {
        while let Some(i) = memchr::memchr(b'\n', &data[self.from..]) {
            let end = self.from + i + 1;
            match self.line_end {
                None if end > LINE_MAX => return Step::Refuse(414),
                None => self.line_end = Some(end),
                Some(start) => {
                    if end - start > HEADERS_MAX {
                        return Step::Refuse(431);
                    }
                    if matches!(&data[self.from..end], b"\r\n" | b"\n") {
                        return Step::Whole(end);
                    }
                    self.lines += 1;
                    if self.lines > HEADER_LINES_MAX {
                        return Step::Refuse(431);
                    }
                }
            }
            self.from = end;
        }
        match self.line_end {
            None if data.len() >= LINE_MAX => Step::Refuse(414),
            Some(start) if data.len() - start >= HEADERS_MAX => Step::Refuse(431),
            _ => Step::More,
        }
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
struct Request<'a> {
    method: &'a str,
    /// The target's path: no query, no scheme and host (an absolute-form target's).
    path: &'a str,
    /// The client keeps the connection (HTTP/1.1 unless `Connection: close`; HTTP/1.0 with
    /// `Connection: keep-alive`) and sent no body, which would have to be read.
    keep: bool,
}

/// Parses a whole request head (`head` ends with its blank line); an error is the status to refuse
/// it with.
fn parse(head: &[u8]) -> Result<Request<'_>, u16> {
    let text = std::str::from_utf8(head).map_err(|_| 400u16)?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let line = lines.next().unwrap_or("");
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(400);
    };
    let minor = match version.strip_prefix("HTTP/1.") {
        Some(m) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()) => m,
        _ if version.starts_with("HTTP/") => return Err(505),
        _ => return Err(400),
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(400);
    }
    let (mut close, mut keep_alive, mut body) = (false, false, false);
    for l in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = l.split_once(':').ok_or(400u16)?;
        if name.is_empty() || name.contains([' ', '\t']) {
            return Err(400);
        }
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                close |= token.eq_ignore_ascii_case("close");
                keep_alive |= token.eq_ignore_ascii_case("keep-alive");
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            body |= value.parse::<u64>().map_err(|_| 400u16)? > 0;
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            body = true;
        }
    }
    let keep = !body && !close && (minor != "0" || keep_alive);
    Ok(Request {
        method,
        path: path_of(target),
        keep,
    })
}

/// The path of a request target: origin form (`/metrics?x`) or absolute form
/// (`http://host:9464/metrics`).
fn path_of(target: &str) -> &str {
    let rest = match target.split_once("://") {
        Some((_, after)) if !target.starts_with('/') => {
            after.find('/').map_or("/", |i| &after[i..])
        }
        _ => target,
    };
    rest.split(['?', '#']).next().unwrap_or("")
}

/// The one line each refusal says (the limit it names).
fn refusal(status: u16) -> String {
    match status {
        400 => "bad request: not an HTTP/1.x request head".to_string(),
        405 => "only GET and HEAD: the metrics are at GET /metrics".to_string(),
        408 => format!(
            "the request head did not arrive within {} s",
            REQUEST_WITHIN.as_secs()
        ),
        414 => format!("the request line is longer than {LINE_MAX} bytes"),
        431 => {
            format!("the request headers are over {HEADER_LINES_MAX} lines or {HEADERS_MAX} bytes")
        }
        505 => "only HTTP/1.0 and HTTP/1.1".to_string(),
        _ => reason(status).to_string(),
    }
}

/// The reason phrase of each status the server sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        414 => "URI Too Long",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Unknown",
    }
}

/// The status line and headers of `reply` (its body's length, whether or not the body follows).
fn head(reply: &Reply, keep: bool) -> Vec<u8> {
    let extra = match reply.status {
        405 => "Allow: GET, HEAD\r\n",
        503 => "Retry-After: 1\r\n",
        _ => "",
    };
    format!(
        "HTTP/1.1 {} {}\r\nDate: {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: {}\r\n{extra}\r\n",
        reply.status,
        reason(reply.status),
        http_date(SystemTime::now()),
        reply.content_type,
        reply.body.len(),
        if keep { "keep-alive" } else { "close" },
    )
    .into_bytes()
}

/// Writes all of `bytes` within [`WRITE_WITHIN`] (or [`STOP_GRACE`] once `stop` is set); false when
/// they were not all written.
fn write_within(stream: &mut TcpStream, mut bytes: &[u8], stop: &AtomicBool) -> bool {
    let mut deadline = Instant::now() + WRITE_WITHIN;
    let mut stopping = false;
    while !bytes.is_empty() {
        let now = Instant::now();
        if !stopping && stop.load(Ordering::Relaxed) {
            stopping = true;
            deadline = deadline.min(now + STOP_GRACE);
        }
        if now >= deadline
            || stream
                .set_write_timeout(Some((deadline - now).min(POLL)))
                .is_err()
        {
            return false;
        }
        match stream.write(bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            Err(e) if is_wait(&e) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Closes a connection after its last reply: the sending side first, then what the client still
/// sends is read and dropped, for at most [`DRAIN`] and [`DRAIN_BYTES`], so that it can read the
/// reply before the close.
fn drain(mut stream: TcpStream, buf: &mut [u8], stop: &AtomicBool) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let until = Instant::now() + DRAIN;
    let mut dropped = 0;
    while !stop.load(Ordering::Relaxed) && dropped < DRAIN_BYTES {
        let now = Instant::now();
        if now >= until || stream.set_read_timeout(Some(until - now)).is_err() {
            return;
        }
        match stream.read(buf) {
            Ok(0) => return,
            Ok(n) => dropped += n,
            Err(e) if is_wait(&e) => {}
            Err(_) => return,
        }
    }
}

/// `t` as an HTTP date (IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`).
fn http_date(t: SystemTime) -> String {
    use crate::report::utc::{DAYS, MONTHS, Utc};
    let u = Utc::of(
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    );
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[u.weekday], u.day, MONTHS[u.month], u.year, u.hour, u.minute, u.second
    )
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
