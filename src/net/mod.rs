//! Connections to the server: how their failures are worded, the setup commands (AUTH, SELECT, HELLO,
//! TRACKING), the TLS client, and the blocking control client that also opens the engine's connections.

pub(crate) mod control;
pub(crate) mod discovery;
pub(crate) mod target;
pub(crate) mod tls;
pub(crate) mod tls_session;

use crate::protocol::resp::Value;
use std::io;
use target::Setup;
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
    /// The server's first answer was not RESP at all (HTTP, a TLS record, garbage, a close before
    /// any reply): the port is not a RESP server's, or wants TLS.
    #[error("{addr} answered {what}")]
    NotResp { addr: String, what: String },
    /// The TLS handshake failed, or the server refused the session (a missing client certificate shows
    /// only after the handshake in TLS 1.3).
    #[error("TLS with {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    /// The server refused the connection with an error reply before serving it (maxclients,
    /// protected mode).
    #[error("Error from server: {0}")]
    Refused(String),
    /// A reply on the control connection went past its size limits (`protocol::bounded::CONTROL`):
    /// `command` names the command (without its arguments when they may hold a password), `what`
    /// how the reply went past them.
    #[error("the reply of {addr} to {command} is {what}")]
    TooLarge {
        addr: String,
        command: String,
        what: String,
    },
    /// No reply came within `--timeout` (or setup within `--connect-timeout`).
    #[error("no reply from {addr} within {ms} ms")]
    Timeout { addr: String, ms: u128 },
    /// A control connection's reply to `command` was not whole within `ms` (`got` bytes of it came).
    #[error("no reply from {addr} to {command} within {ms} ms{}", partial(*got))]
    NoReply {
        addr: String,
        command: String,
        ms: u128,
        got: usize,
    },
    /// The run was stopped (SIGINT, SIGTERM) while a control connection waited for a reply.
    #[error("stopped while waiting for the server")]
    Stopped,
}

/// What [`ConnError::NoReply`] adds when part of the reply came.
fn partial(got: usize) -> String {
    match got {
        0 => String::new(),
        n => format!(" (only {n} bytes of it came)"),
    }
}

impl ConnError {
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
    if setup.readonly {
        cmds.push(("READONLY", vec![b"READONLY".to_vec()]));
    }
    cmds
}

/// Checks one setup reply; an error reply ends the run with the server's message.
pub fn check_setup_reply(name: &'static str, v: &Value) -> Result<(), ConnError> {
    match v {
        // A full server answers whatever comes first with this: it is no verdict on that command.
        Value::Error(msg) if msg.starts_with("ERR max number of clients") => {
            Err(ConnError::Refused(msg.clone()))
        }
        Value::Error(msg) => Err(ConnError::Setup {
            command: name,
            message: msg.clone(),
        }),
        _ => Ok(()),
    }
}

/// The plain reason of an I/O error, as the user reads it (TLS alerts named, no "os error N" suffix).
pub fn io_reason(e: io::Error) -> String {
    if let Some(t) = tls::rustls_error(&e) {
        return tls::describe(t, None);
    }
    crate::os_error::describe(e)
}
