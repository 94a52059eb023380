//! A small blocking client for the control path (CONFIG GET, INFO, topology), never the hot path. Its
//! replies are decoded as they arrive and bounded (`protocol::bounded::CONTROL`): a server that sends
//! without end, or announces a reply larger than any real one, ends with [`ConnError::TooLarge`].
//! Each reply must be whole within a bound ([`Wait::reply`]), however its bytes trickle in: a server
//! that does not answer in time ends with [`ConnError::NoReply`]; and a stop handle ([`Wait::stop`])
//! ends a wait within [`STOP_CHECK`] of being set, with [`ConnError::Stopped`].

use crate::net::target::{Setup, Target};
use crate::net::tls::TlsClient;
use crate::net::{self, ConnError};
use crate::protocol::bounded::{self, DecodeError, Decoder};
use crate::protocol::resp::{self, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a wait for a reply looks at the stop handle (a signal usually ends the wait at once:
/// a socket read with a timeout is not restarted after a handler ran).
pub const STOP_CHECK: Duration = Duration::from_millis(100);

/// How long a control connection may wait, and what may stop it.
#[derive(Debug, Clone)]
pub struct Wait {
    /// Connecting (and the TLS handshake).
    pub connect: Duration,
    /// One whole reply, from the request sent to its last byte.
    pub reply: Duration,
    /// Set when the run is to stop: a wait for a reply then ends with [`ConnError::Stopped`].
    pub stop: Option<Arc<AtomicBool>>,
}

impl Wait {
    /// `timeout` for connecting and for each reply; nothing stops it.
    pub fn new(timeout: Duration) -> Self {
        Wait {
            connect: timeout,
            reply: timeout,
            stop: None,
        }
    }
}

/// Why [`Sock::read_by`] read nothing.
enum ReadFail {
    Io(std::io::Error),
    /// The deadline passed.
    Late,
    /// The stop handle was set.
    Stopped,
}

enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Sock {
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sock::Tcp(s) => s.write_all(buf),
            Sock::Unix(s) => s.write_all(buf),
            Sock::Tls(s) => {
                s.write_all(buf)?;
                s.flush()
            }
        }
    }

    fn set_read_timeout(&self, timeout: Duration) -> std::io::Result<()> {
        match self {
            Sock::Tcp(s) => s.set_read_timeout(Some(timeout)),
            Sock::Unix(s) => s.set_read_timeout(Some(timeout)),
            Sock::Tls(s) => s.sock.set_read_timeout(Some(timeout)),
        }
    }

    /// Reads what is there, waiting until `deadline` at most, and no longer than [`STOP_CHECK`] at a
    /// time between looks at `stop`. A signal that interrupts the wait (a socket with a read timeout is
    /// not restarted after a handler ran) looks at `stop` and waits again.
    fn read_by(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
        stop: Option<&AtomicBool>,
    ) -> Result<usize, ReadFail> {
        loop {
            if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
                return Err(ReadFail::Stopped);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ReadFail::Late);
            }
            // A zero timeout would mean no timeout at all.
            let slice = left.min(STOP_CHECK).max(Duration::from_millis(1));
            self.set_read_timeout(slice).map_err(ReadFail::Io)?;
            let r = match self {
                Sock::Tcp(s) => s.read(buf),
                Sock::Unix(s) => s.read(buf),
                Sock::Tls(s) => s.read(buf),
            };
            match r {
                Ok(n) => return Ok(n),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted
                            | std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(ReadFail::Io(e)),
            }
        }
    }
}

/// A blocking connection with setup done.
pub struct ControlClient {
    sock: Sock,
    /// Bytes received and not yet taken by a whole reply: the start of the reply being decoded.
    buf: Vec<u8>,
    decoder: Decoder,
    /// The error of a reply over the limits: the connection is done, and every later command gets it.
    failed: Option<ConnError>,
    addr: String,
    tls: Option<TlsClient>,
    /// The server's error when it refused a command in a way that every command would meet
    /// (`NOAUTH`, too many clients).
    pub refused: Option<String>,
    /// Set once the server sent a whole RESP reply: until then, bytes that are not RESP or a close
    /// say the port is not a RESP server's (or wants TLS), not that a reply went wrong.
    answered: bool,
    /// How long a whole reply may take (see [`Self::set_read_timeout`]).
    reply: Duration,
    stop: Option<Arc<AtomicBool>>,
}

/// True for an error reply that the server gives to any command on this connection: authentication
/// required, or the connection refused for `maxclients`.
pub fn refuses_everything(msg: &str) -> bool {
    msg.starts_with("NOAUTH") || msg.starts_with("ERR max number of clients")
}

impl ControlClient {
    /// Connects (with a TLS handshake when `tls` is set) and runs the setup commands, `timeout`
    /// bounding the connect and each reply, with nothing to stop a wait.
    pub fn connect(
        target: &Target,
        tls: Option<&TlsClient>,
        setup: &Setup,
        timeout: Duration,
    ) -> Result<Self, ConnError> {
        Self::connect_with(target, tls, setup, &Wait::new(timeout))
    }

    /// Connects (with a TLS handshake when `tls` is set) and runs the setup commands, waiting as `wait`
    /// says.
    pub fn connect_with(
        target: &Target,
        tls: Option<&TlsClient>,
        setup: &Setup,
        wait: &Wait,
    ) -> Result<Self, ConnError> {
        let timeout = wait.connect;
        let addr = target.display();
        let fail = |e: std::io::Error| ConnError::Connect {
            addr: addr.clone(),
            reason: net::io_reason(e),
        };
        let sock = match target {
            Target::Tcp { addr: a, .. } => {
                let s = TcpStream::connect_timeout(a, timeout).map_err(fail)?;
                s.set_read_timeout(Some(timeout)).map_err(fail)?;
                let _ = s.set_nodelay(true);
                match tls {
                    None => Sock::Tcp(s),
                    Some(t) => Sock::Tls(Box::new(handshake(s, t, &addr)?)),
                }
            }
            Target::Unix(p) => {
                let s = UnixStream::connect(p).map_err(fail)?;
                s.set_read_timeout(Some(timeout)).map_err(fail)?;
                Sock::Unix(s)
            }
        };
        let mut c = ControlClient {
            sock,
            buf: Vec::new(),
            decoder: Decoder::new(bounded::CONTROL),
            failed: None,
            addr,
            tls: tls.cloned(),
            refused: None,
            answered: false,
            reply: wait.reply,
            stop: wait.stop.clone(),
        };
        for (name, args) in net::setup_commands(setup) {
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            let v = c.command(&refs)?;
            net::check_setup_reply(name, &v)?;
        }
        Ok(c)
    }

    /// Sends one command and returns its reply (push messages are skipped).
    pub fn command(&mut self, args: &[&[u8]]) -> Result<Value, ConnError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut req = Vec::new();
        resp::encode_command(&mut req, args);
        let (addr, tls) = (&self.addr, self.tls.as_ref());
        let lost = |e: std::io::Error| {
            ConnError::from_io(e, addr, tls, |reason| ConnError::Lost {
                addr: addr.clone(),
                reason,
            })
        };
        self.sock.write_all(&req).map_err(lost)?;
        let deadline = Instant::now() + self.reply;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match self.decoder.decode(&self.buf) {
                Ok(Some((v, used))) => {
                    self.answered = true;
                    self.buf.drain(..used);
                    if matches!(v, Value::Push(_)) {
                        continue;
                    }
                    return Ok(v);
                }
                Ok(None) => {}
                Err(DecodeError::TooLarge(t)) => {
                    let e = ConnError::TooLarge {
                        addr: self.addr.clone(),
                        command: command_name(args),
                        what: t.to_string(),
                    };
                    self.buf = Vec::new();
                    self.failed = Some(e.clone());
                    return Err(e);
                }
                Err(DecodeError::Protocol(e)) if !self.answered => {
                    return Err(ConnError::NotResp {
                        addr: self.addr.clone(),
                        what: not_resp(&self.buf, self.tls.is_some(), &e.to_string()),
                    });
                }
                Err(DecodeError::Protocol(e)) => return Err(ConnError::Protocol(e.to_string())),
            }
            let n = match self
                .sock
                .read_by(&mut chunk, deadline, self.stop.as_deref())
            {
                Ok(n) => n,
                Err(ReadFail::Io(e))
                    if !self.answered
                        && self.tls.is_none()
                        && e.kind() == std::io::ErrorKind::ConnectionReset =>
                {
                    0
                }
                Err(ReadFail::Io(e)) => return Err(lost(e)),
                // A late reply would answer the next command: the connection is done either way.
                Err(why) => {
                    let e = match why {
                        ReadFail::Stopped => ConnError::Stopped,
                        _ => ConnError::NoReply {
                            addr: self.addr.clone(),
                            command: command_name(args),
                            ms: self.reply.as_millis(),
                            got: self.buf.len(),
                        },
                    };
                    self.buf = Vec::new();
                    self.failed = Some(e.clone());
                    return Err(e);
                }
            };
            if n == 0 && !self.answered {
                // A TLS port closes a connection whose first bytes are not a TLS hello.
                return Err(ConnError::NotResp {
                    addr: self.addr.clone(),
                    what: if self.tls.is_none() {
                        "closed the connection before any reply (a TLS port does that to a plain client: add --tls if it is one)".into()
                    } else {
                        "closed the connection before any reply".into()
                    },
                });
            }
            if n == 0 {
                return Err(ConnError::Lost {
                    addr: self.addr.clone(),
                    reason: "closed by the server".into(),
                });
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// How full the server is: its `maxclients` and its `connected_clients` (this connection
    /// included), when it says both. A reply over the limits is an error.
    pub fn clients_room(&mut self) -> Result<Option<(u64, u64)>, ConnError> {
        let Some(max) = self.config_get("maxclients")?.and_then(|v| v.parse().ok()) else {
            return Ok(None);
        };
        let connected = match self.command(&[b"INFO", b"clients"]) {
            Ok(v) => v.as_str().and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("connected_clients:")
                        .and_then(|n| n.trim().parse().ok())
                })
            }),
            Err(
                e @ (ConnError::TooLarge { .. } | ConnError::NoReply { .. } | ConnError::Stopped),
            ) => {
                return Err(e);
            }
            Err(_) => None,
        };
        Ok(connected.map(|c| (max, c)))
    }

    /// Closes the connection and waits (up to the reply bound) until the server has closed its
    /// side too, so the slot it held under `maxclients` is free when this returns. Sends no command.
    pub fn close(mut self) {
        use std::net::Shutdown;
        let _ = match &mut self.sock {
            Sock::Tcp(s) => s.shutdown(Shutdown::Write),
            Sock::Unix(s) => s.shutdown(Shutdown::Write),
            Sock::Tls(s) => {
                s.conn.send_close_notify();
                let _ = s.flush();
                s.sock.shutdown(Shutdown::Write)
            }
        };
        let mut chunk = [0u8; 4096];
        let deadline = Instant::now() + self.reply;
        while let Ok(n) = self
            .sock
            .read_by(&mut chunk, deadline, self.stop.as_deref())
        {
            if n == 0 {
                break;
            }
        }
    }

    /// Changes how long a whole reply may take (the server view uses short waits so a stalled server
    /// cannot hold up the run).
    pub fn set_read_timeout(&mut self, timeout: Duration) {
        self.reply = timeout;
    }

    /// Drops the stop handle: a wait for a reply then ends only at its bound (the server view reads
    /// the server after a stopped test, with short bounds of its own).
    pub fn unstoppable(&mut self) {
        self.stop = None;
    }

    /// `CONFIG GET name`: the value, or `None` when the server refuses CONFIG or has no such parameter.
    /// Only a TLS failure, a server that does not speak RESP, a reply over the limits, no reply within
    /// the bound and a stop are errors: every connection of the run would meet the first two (a TLS
    /// 1.3 server that wants a client certificate says so on the first request), the third and fourth
    /// are no answer to go without (a server that stalls the control connection stalls the test), and
    /// the last ends the run. An error reply (a server that refuses CONFIG) is `None`.
    pub fn config_get(&mut self, name: &str) -> Result<Option<String>, ConnError> {
        let reply = match self.command(&[b"CONFIG", b"GET", name.as_bytes()]) {
            Ok(v) => v,
            Err(
                e @ (ConnError::Tls { .. }
                | ConnError::NotResp { .. }
                | ConnError::TooLarge { .. }
                | ConnError::NoReply { .. }
                | ConnError::Stopped),
            ) => return Err(e),
            Err(_) => return Ok(None),
        };
        if let Value::Error(msg) = &reply
            && refuses_everything(msg)
        {
            self.refused.get_or_insert_with(|| msg.clone());
        }
        Ok(match reply {
            Value::Array(items) if items.len() >= 2 => items[1].as_str().map(String::from),
            Value::Map(pairs) => pairs
                .first()
                .and_then(|(_, v)| v.as_str().map(String::from)),
            _ => None,
        })
    }
}

/// How messages name the command `args`: its words, or only the first for AUTH and HELLO, whose
/// arguments may hold a password.
fn command_name(args: &[&[u8]]) -> String {
    let first = args.first().map_or_else(String::new, |a| {
        String::from_utf8_lossy(a).to_ascii_uppercase()
    });
    if matches!(first.as_str(), "AUTH" | "HELLO") {
        return first;
    }
    let rest = args.iter().skip(1).map(|a| String::from_utf8_lossy(a));
    std::iter::once(first.into())
        .chain(rest)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a server whose first bytes (`first`) are not RESP seems to be, for [`ConnError::NotResp`].
fn not_resp(first: &[u8], tls: bool, error: &str) -> String {
    let head: String = String::from_utf8_lossy(&first[..first.len().min(24)])
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if first.starts_with(b"HTTP/") || first.starts_with(b"<") {
        format!("HTTP, not RESP (\"{}\"): is the port right?", head.trim())
    } else if !tls && matches!(first.first(), Some(0x14..=0x17)) && first.get(1) == Some(&3) {
        "with a TLS record: it looks like a TLS port, add --tls".into()
    } else if first.starts_with(b"SSH-") {
        format!("SSH, not RESP (\"{}\"): is the port right?", head.trim())
    } else {
        format!("bytes that are not RESP: {error}")
    }
}

/// Runs the TLS handshake to the end, so that certificate problems show here rather than on the first command.
fn handshake(
    mut sock: TcpStream,
    t: &TlsClient,
    addr: &str,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, ConnError> {
    let fail = |reason: String| ConnError::Tls {
        addr: addr.to_string(),
        reason,
    };
    let mut conn = rustls::ClientConnection::new(t.config.clone(), t.server_name.clone())
        .map_err(|e| fail(crate::net::tls::describe(&e, Some(t))))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock).map_err(|e| {
            let silent = matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            );
            let plain = matches!(
                crate::net::tls::rustls_error(&e),
                Some(rustls::Error::InvalidMessage(_))
            );
            if silent || plain {
                // A plain port reads a TLS hello as a command that never ends (or answers it with
                // a plain-text error): nothing that TLS understands comes back.
                let how = if silent {
                    "no answer to the TLS hello"
                } else {
                    "a plain-text answer to the TLS hello"
                };
                fail(format!(
                    "{how}: it does not look like a TLS port (drop --tls if it is a plain one)"
                ))
            } else {
                ConnError::from_io(e, addr, Some(t), fail)
            }
        })?;
    }
    Ok(rustls::StreamOwned::new(conn, sock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_named_by_its_words_but_auth_and_hello_by_their_first() {
        assert_eq!(
            command_name(&[b"CONFIG", b"GET", b"save"]),
            "CONFIG GET save"
        );
        assert_eq!(command_name(&[b"info"]), "INFO");
        assert_eq!(command_name(&[b"AUTH", b"user", b"s3cret"]), "AUTH");
        assert_eq!(
            command_name(&[b"hello", b"3", b"AUTH", b"user", b"s3cret"]),
            "HELLO"
        );
    }
}
