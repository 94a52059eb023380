//! A small blocking client for the control path (CONFIG GET, INFO, topology), never the hot path. Its
//! replies are decoded as they arrive and bounded (`protocol::bounded::CONTROL`): a server that sends
//! without end, or announces a reply larger than any real one, ends with [`ConnError::TooLarge`].

use crate::net::target::{Setup, Target};
use crate::net::tls::TlsClient;
use crate::net::{self, ConnError};
use crate::protocol::bounded::{self, DecodeError, Decoder};
use crate::protocol::resp::{self, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

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

    /// Reads what is there. A signal that interrupts the wait (a socket with a read timeout is not
    /// restarted after a handler ran) waits again: the handler decides whether the run stops.
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let r = match self {
                Sock::Tcp(s) => s.read(buf),
                Sock::Unix(s) => s.read(buf),
                Sock::Tls(s) => s.read(buf),
            };
            match r {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => return other,
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
}

/// True for an error reply that the server gives to any command on this connection: authentication
/// required, or the connection refused for `maxclients`.
pub fn refuses_everything(msg: &str) -> bool {
    msg.starts_with("NOAUTH") || msg.starts_with("ERR max number of clients")
}

impl ControlClient {
    /// Connects (with a TLS handshake when `tls` is set) and runs the setup commands.
    pub fn connect(
        target: &Target,
        tls: Option<&TlsClient>,
        setup: &Setup,
        timeout: Duration,
    ) -> Result<Self, ConnError> {
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
            let n = match self.sock.read(&mut chunk) {
                Ok(n) => n,
                Err(e)
                    if !self.answered
                        && self.tls.is_none()
                        && e.kind() == std::io::ErrorKind::ConnectionReset =>
                {
                    0
                }
                Err(e) => return Err(lost(e)),
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
            Err(e @ ConnError::TooLarge { .. }) => return Err(e),
            Err(_) => None,
        };
        Ok(connected.map(|c| (max, c)))
    }

    /// Closes the connection and waits (up to the read timeout) until the server has closed its
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
        while let Ok(n) = self.sock.read(&mut chunk) {
            if n == 0 {
                break;
            }
        }
    }

    /// Changes how long a reply may take (the server view uses short waits so a stalled server cannot
    /// hold up the run).
    pub fn set_read_timeout(&mut self, timeout: Duration) {
        let _ = match &self.sock {
            Sock::Tcp(s) => s.set_read_timeout(Some(timeout)),
            Sock::Unix(s) => s.set_read_timeout(Some(timeout)),
            Sock::Tls(s) => s.sock.set_read_timeout(Some(timeout)),
        };
    }

    /// `CONFIG GET name`: the value, or `None` when the server refuses CONFIG or has no such parameter.
    /// Only a TLS failure, a server that does not speak RESP, and a reply over the limits are errors:
    /// every connection of the run would meet the first two (a TLS 1.3 server that wants a client
    /// certificate says so on the first request), and the third is no answer to go without.
    pub fn config_get(&mut self, name: &str) -> Result<Option<String>, ConnError> {
        let reply = match self.command(&[b"CONFIG", b"GET", name.as_bytes()]) {
            Ok(v) => v,
            Err(
                e
                @ (ConnError::Tls { .. } | ConnError::NotResp { .. } | ConnError::TooLarge { .. }),
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
