//! A small blocking client for the control path (CONFIG GET, INFO, topology), never the hot path.

use crate::config::{Setup, Target};
use crate::net::{self, ConnError};
use crate::resp::{self, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// A blocking connection with setup done.
pub struct ControlClient {
    sock: Sock,
    buf: Vec<u8>,
    addr: String,
}

impl ControlClient {
    /// Connects and runs the setup commands.
    pub fn connect(target: &Target, setup: &Setup, timeout: Duration) -> Result<Self, ConnError> {
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
                Sock::Tcp(s)
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
            addr,
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
        let mut req = Vec::new();
        resp::encode_command(&mut req, args);
        let lost = |e: std::io::Error| ConnError::Lost {
            addr: self.addr.clone(),
            reason: net::io_reason(e),
        };
        match &mut self.sock {
            Sock::Tcp(s) => s.write_all(&req),
            Sock::Unix(s) => s.write_all(&req),
        }
        .map_err(lost)?;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            match resp::decode(&self.buf) {
                Ok(Some((v, used))) => {
                    self.buf.drain(..used);
                    if matches!(v, Value::Push(_)) {
                        continue;
                    }
                    return Ok(v);
                }
                Ok(None) => {}
                Err(e) => return Err(ConnError::Protocol(e.to_string())),
            }
            let n = match &mut self.sock {
                Sock::Tcp(s) => s.read(&mut chunk),
                Sock::Unix(s) => s.read(&mut chunk),
            }
            .map_err(|e| ConnError::Lost {
                addr: self.addr.clone(),
                reason: net::io_reason(e),
            })?;
            if n == 0 {
                return Err(ConnError::Lost {
                    addr: self.addr.clone(),
                    reason: "closed by the server".into(),
                });
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Changes how long a reply may take (the server view uses short waits so a stalled server cannot
    /// hold up the run).
    pub fn set_read_timeout(&mut self, timeout: Duration) {
        let _ = match &self.sock {
            Sock::Tcp(s) => s.set_read_timeout(Some(timeout)),
            Sock::Unix(s) => s.set_read_timeout(Some(timeout)),
        };
    }

    /// `CONFIG GET name`: the value, or `None` when the server refuses CONFIG or has no such parameter.
    pub fn config_get(&mut self, name: &str) -> Option<String> {
        match self.command(&[b"CONFIG", b"GET", name.as_bytes()]).ok()? {
            Value::Array(items) if items.len() >= 2 => items[1].as_str().map(String::from),
            Value::Map(pairs) => pairs
                .first()
                .and_then(|(_, v)| v.as_str().map(String::from)),
            _ => None,
        }
    }
}
