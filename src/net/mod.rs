//! Connections to the server on an executor: TCP, TLS over TCP, or unix socket, connected and set up (AUTH,
//! SELECT, HELLO, TRACKING).

pub(crate) mod control;
pub(crate) mod discovery;
pub(crate) mod replies;
pub(crate) mod target;
pub(crate) mod tls;

use crate::protocol::resp::{self, Value};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpStream, UnixStream};
use std::io;
use std::time::Duration;
use target::{Setup, Target};
use tls::TlsClient;

/// A connection's failure, worded for the user.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ConnError {
    /// The server could not be reached.
    #[error("Could not connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    /// A setup command (AUTH, SELECT, HELLO, CLIENT TRACKING) was refused; fatal for the run.
    #[error("{command} failed: {message}")]
    Setup {
        command: &'static str,
        message: String,
    },
    /// The connection broke during the run.
    #[error("connection to {addr} lost: {reason}")]
    Lost { addr: String, reason: String },
    /// The server sent bytes that are not RESP.
    #[error("{0}")]
    Protocol(String),
    /// The TLS handshake failed, or the server refused the session (a missing client certificate shows
    /// only after the handshake in TLS 1.3).
    #[error("TLS with {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    /// The server refused the connection with an error reply before serving it (maxclients,
    /// protected mode).
    #[error("Error from server: {0}")]
    Refused(String),
    /// No reply came within `--timeout` (or setup within `--connect-timeout`).
    #[error("no reply from {addr} within {ms} ms")]
    Timeout { addr: String, ms: u128 },
}

impl ConnError {
    /// What a read on a connection to `addr` returned, as bytes read or the reason the connection is
    /// done: closed by the server, no reply within `timeout` (`--timeout`), or an I/O failure.
    pub fn from_read(
        read: io::Result<usize>,
        addr: &str,
        timeout: Option<Duration>,
    ) -> Result<usize, ConnError> {
        let lost = |reason: String| ConnError::Lost {
            addr: addr.to_string(),
            reason,
        };
        match read {
            Ok(0) => Err(lost("closed by the server".into())),
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(ConnError::Timeout {
                addr: addr.to_string(),
                ms: timeout.map(|t| t.as_millis()).unwrap_or(0),
            }),
            Err(e) => Err(lost(io_reason(e))),
        }
    }

    /// The error for an I/O failure on `addr`: `Tls` when TLS caused it, else what `other` makes of it.
    pub fn from_io(
        e: io::Error,
        addr: &str,
        tls: Option<&TlsClient>,
        other: impl FnOnce(String) -> ConnError,
    ) -> ConnError {
        match tls::rustls_error(&e) {
            Some(t) => ConnError::Tls {
                addr: addr.to_string(),
                reason: tls::describe(t, tls),
            },
            None => other(io_reason(e)),
        }
    }
}

/// The setup commands for `setup`, each with the name used in messages.
pub fn setup_commands(setup: &Setup) -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let mut cmds = Vec::new();
    if let Some(pass) = &setup.password {
        let mut a = vec![b"AUTH".to_vec()];
        if let Some(user) = &setup.user {
            a.push(user.as_bytes().to_vec());
        }
        a.push(pass.as_bytes().to_vec());
        cmds.push(("AUTH", a));
    }
    if setup.dbnum != 0 {
        cmds.push((
            "SELECT",
            vec![b"SELECT".to_vec(), setup.dbnum.to_string().into_bytes()],
        ));
    }
    if setup.resp3 {
        cmds.push(("HELLO 3", vec![b"HELLO".to_vec(), b"3".to_vec()]));
    }
    if setup.tracking {
        cmds.push((
            "CLIENT TRACKING on",
            vec![b"CLIENT".to_vec(), b"TRACKING".to_vec(), b"on".to_vec()],
        ));
    }
    cmds
}

/// The setup commands encoded as one pipelined request, and their names in order.
pub fn encode_setup(setup: &Setup) -> (Vec<u8>, Vec<&'static str>) {
    let mut bytes = Vec::new();
    let mut names = Vec::new();
    for (name, args) in setup_commands(setup) {
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        resp::encode_command(&mut bytes, &refs);
        names.push(name);
    }
    (bytes, names)
}

/// Checks one setup reply; an error reply ends the run with the server's message.
pub fn check_setup_reply(name: &'static str, v: &Value) -> Result<(), ConnError> {
    match v {
        Value::Error(msg) => Err(ConnError::Setup {
            command: name,
            message: msg.clone(),
        }),
        _ => Ok(()),
    }
}

/// A stream to the server, owned by one connection task.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    /// Boxed: rustls's connection state is large and the plain variants should stay small.
    Tls(Box<futures_rustls::client::TlsStream<TcpStream>>),
}

impl Stream {
    /// Writes all of `buf` (for TLS: encrypted and handed to the socket, not left in rustls's buffer).
    pub async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
            Stream::Tls(s) => {
                s.write_all(buf).await?;
                // rustls keeps records it could not send at once; the reply never comes unless they go out.
                s.flush().await
            }
        }
    }

    /// Reads what is available into `buf`; 0 means the server closed the connection.
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf).await,
            Stream::Unix(s) => s.read(buf).await,
            Stream::Tls(s) => s.read(buf).await,
        }
    }

    /// Sets glommio's read timeout on the socket (TCP, also under TLS); unix streams have none, see
    /// [`Self::read_within`].
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> glommio::Result<(), ()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(timeout),
            Stream::Tls(s) => s.get_ref().0.set_read_timeout(timeout),
            Stream::Unix(_) => Ok(()),
        }
    }

    /// Like [`Self::read`], failing with `TimedOut` after `timeout`. TCP streams use glommio's own
    /// read timeout (no extra timer per read); unix streams have none, so a timer wraps the read.
    pub async fn read_within(
        &mut self,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        match (self, timeout) {
            (Stream::Tcp(s), t) => {
                s.set_read_timeout(t).map_err(io::Error::from)?;
                s.read(buf).await
            }
            (Stream::Unix(s), Some(t)) => glommio::timer::timeout(t, async {
                s.read(buf).await.map_err(glommio::GlommioError::IoError)
            })
            .await
            .map_err(|e| match e {
                glommio::GlommioError::IoError(io) => io,
                other => io::Error::new(io::ErrorKind::TimedOut, other.to_string()),
            }),
            (Stream::Unix(s), None) => s.read(buf).await,
            (Stream::Tls(s), t) => {
                // glommio's read timeout on the socket under TLS: rustls passes its TimedOut through.
                s.get_mut().0.set_read_timeout(t).map_err(io::Error::from)?;
                s.read(buf).await
            }
        }
    }
}

/// Opens a stream to `target` within `timeout`, with a TLS handshake first when `tls` is set.
pub async fn connect(
    target: &Target,
    tls: Option<&TlsClient>,
    timeout: Duration,
) -> Result<Stream, ConnError> {
    let fail = |e: String| ConnError::Connect {
        addr: target.display(),
        reason: e,
    };
    match target {
        Target::Tcp { addr, .. } => {
            let s = TcpStream::connect_timeout(*addr, timeout)
                .await
                .map_err(|e| fail(io_reason(e.into())))?;
            s.set_nodelay(true).map_err(|e| fail(e.to_string()))?;
            match tls {
                None => Ok(Stream::Tcp(s)),
                Some(t) => tls_handshake(s, t, target, timeout).await,
            }
        }
        Target::Unix(path) => {
            let fut = UnixStream::connect(path);
            let s = glommio::timer::timeout(timeout, async {
                fut.await
                    .map_err(|e| glommio::GlommioError::IoError(io::Error::from(e)))
            })
            .await
            .map_err(|e| fail(io_reason(e.into())))?;
            Ok(Stream::Unix(s))
        }
    }
}

/// Runs the TLS handshake on a connected socket within `timeout`.
async fn tls_handshake(
    s: TcpStream,
    t: &TlsClient,
    target: &Target,
    timeout: Duration,
) -> Result<Stream, ConnError> {
    let addr = target.display();
    let connector = futures_rustls::TlsConnector::from(t.config.clone());
    let handshake = connector.connect(t.server_name.clone(), s);
    let done = glommio::timer::timeout(timeout, async {
        handshake.await.map_err(glommio::GlommioError::IoError)
    })
    .await;
    match done {
        Ok(stream) => Ok(Stream::Tls(Box::new(stream))),
        Err(glommio::GlommioError::IoError(e)) => {
            Err(ConnError::from_io(e, &addr, Some(t), |r| ConnError::Tls {
                addr: addr.clone(),
                reason: r,
            }))
        }
        Err(e) => Err(ConnError::Tls {
            addr: addr.clone(),
            reason: io_reason(e.into()),
        }),
    }
}

/// The plain reason of an I/O error, without glommio's decorations.
pub fn io_reason(e: io::Error) -> String {
    if let Some(t) = tls::rustls_error(&e) {
        return tls::describe(t, None);
    }
    crate::os_error::describe(e)
}

/// Runs the setup commands on a fresh stream (not counted, not timed); each reply may take `timeout`.
pub async fn run_setup(
    stream: &mut Stream,
    setup: &[u8],
    names: &[&'static str],
    addr: &str,
    timeout: Duration,
) -> Result<(), ConnError> {
    if names.is_empty() {
        return Ok(());
    }
    let lost = |reason: String| ConnError::Lost {
        addr: addr.to_string(),
        reason,
    };
    stream
        .write_all(setup)
        .await
        .map_err(|e| lost(io_reason(e)))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let mut done = 0;
    while done < names.len() {
        let n = stream
            .read_within(&mut chunk, Some(timeout))
            .await
            .map_err(|e| match e.kind() {
                io::ErrorKind::TimedOut => ConnError::Timeout {
                    addr: addr.to_string(),
                    ms: timeout.as_millis(),
                },
                _ => lost(io_reason(e)),
            })?;
        if n == 0 {
            return Err(lost("closed by the server during setup".into()));
        }
        buf.extend_from_slice(&chunk[..n]);
        loop {
            match resp::decode(&buf) {
                Ok(Some((v, used))) => {
                    buf.drain(..used);
                    if matches!(v, Value::Push(_)) {
                        continue;
                    }
                    check_setup_reply(names[done], &v)?;
                    done += 1;
                    if done == names.len() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(ConnError::Protocol(e.to_string())),
            }
        }
    }
    Ok(())
}
