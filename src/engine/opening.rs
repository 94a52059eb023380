//! A connection being opened on its executor's ring, after its `CONNECT` completed: the TLS handshake
//! and the set-up commands (AUTH, SELECT, HELLO, CLIENT TRACKING) as bytes to send and bytes received,
//! with no I/O of its own. The ring (`ring/`) sends what [`Opening::lend`] gives and feeds every
//! received buffer to [`Opening::received`]; once [`Opening::ready`] holds the connection is live.
//! An opening may end in one query instead ([`Opening::ask`]: the `--cluster` layer's `CLUSTER SLOTS`
//! and `CLUSTER INFO`): its reply is kept whole ([`Opening::take_answer`]) and the connection closes.

use crate::net::target::Setup;
use crate::net::tls::{self, TlsClient};
use crate::net::{self, ConnError};
use crate::protocol::bounded::{self, DecodeError, Decoder};
use crate::protocol::resp::{self, Value};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::time::Instant;

/// One connection's opening after its `CONNECT`.
pub(crate) struct Opening {
    /// `--connect-timeout` from the moment the attempt began: connect, handshake and set-up together.
    pub deadline: Instant,
    addr: String,
    tls: Option<(rustls::ClientConnection, TlsClient)>,
    /// Encoded set-up commands not yet written (under TLS they wait for the handshake's end).
    setup: Vec<u8>,
    /// The set-up commands whose replies are due, by name, oldest first.
    names: VecDeque<&'static str>,
    /// Bytes to send next (emptied into `sending` when it is given to a send), a buffer to send them
    /// from, and whether that buffer is lent to a send in the kernel ([`Self::lend`]).
    sending: Vec<u8>,
    next: Vec<u8>,
    lent: bool,
    /// Set-up replies received and not yet decoded (plaintext under TLS), and the decoder that reads
    /// them as they come, bounded as the control connection's replies are.
    inbox: Vec<u8>,
    decoder: Decoder,
    /// The reply to the query asked after the set-up ([`Self::ask`]), once it is in.
    answer: Option<Value>,
}

/// The name the query's reply goes by among the set-up replies due.
const QUERY: &str = "query";

impl Opening {
    /// The opening of a connection to `addr` (as messages name it), with a TLS client when the run
    /// uses TLS.
    pub fn new(
        addr: String,
        tls: Option<&TlsClient>,
        setup: &Setup,
        deadline: Instant,
    ) -> Result<Self, ConnError> {
        let mut encoded = Vec::new();
        let mut names = VecDeque::new();
        for (name, args) in net::setup_commands(setup) {
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            resp::encode_command(&mut encoded, &refs);
            names.push_back(name);
        }
        let tls = match tls {
            Some(t) => {
                let conn = rustls::ClientConnection::new(t.config.clone(), t.server_name.clone())
                    .map_err(|e| ConnError::Tls {
                    addr: addr.clone(),
                    reason: tls::describe(&e, Some(t)),
                })?;
                Some((conn, t.clone()))
            }
            None => None,
        };
        Ok(Opening {
            deadline,
            addr,
            tls,
            setup: encoded,
            names,
            sending: Vec::new(),
            next: Vec::new(),
            lent: false,
            inbox: Vec::new(),
            decoder: Decoder::new(bounded::CONTROL),
            answer: None,
        })
    }

    /// Asks `args` once the set-up commands are answered: the opening is then a query, ready when its
    /// reply is in. Called before [`Self::connected`].
    pub fn ask(&mut self, args: &[&[u8]]) {
        resp::encode_command(&mut self.setup, args);
        self.names.push_back(QUERY);
    }

    /// The query's reply ([`Self::ask`]), once: `None` for an opening that asked nothing.
    pub fn take_answer(&mut self) -> Option<Value> {
        self.answer.take()
    }

    /// The socket is connected: the handshake starts, or the set-up commands go out.
    pub fn connected(&mut self) -> Result<(), ConnError> {
        match self.tls.as_mut() {
            Some(_) => self.pump_tls(),
            None => {
                self.next.append(&mut self.setup);
                Ok(())
            }
        }
    }

    /// Takes in bytes the server sent.
    pub fn received(&mut self, data: &[u8]) -> Result<(), ConnError> {
        if self.tls.is_none() {
            self.inbox.extend_from_slice(data);
            return self.decode();
        }
        let mut rest = data;
        while !rest.is_empty() {
            let (conn, t) = self.tls.as_mut().expect("a TLS opening");
            if let Err(e) = conn.read_tls(&mut rest) {
                return Err(self.tls_failed(e.to_string()));
            }
            if let Err(e) = conn.process_new_packets() {
                let reason = tls::describe(&e, Some(t));
                return Err(self.tls_failed(reason));
            }
            self.pump_tls()?;
        }
        self.decode()
    }

    /// The address messages name.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The connection closed before it was set up.
    pub fn closed(&self) -> ConnError {
        ConnError::Lost {
            addr: self.addr.clone(),
            reason: "closed by the server during set-up".into(),
        }
    }

    /// The bytes to send now, when there are any and none are being sent: the buffer moves to the
    /// send, and comes back with [`Self::sent`] once the kernel is done with it.
    pub fn lend(&mut self) -> Option<Vec<u8>> {
        if self.lent {
            return None;
        }
        if self.sending.is_empty() {
            std::mem::swap(&mut self.sending, &mut self.next);
        }
        if self.sending.is_empty() {
            return None;
        }
        self.lent = true;
        Some(std::mem::take(&mut self.sending))
    }

    /// The buffer [`Self::lend`] gave was sent.
    pub fn sent(&mut self, mut buf: Vec<u8>) {
        buf.clear();
        self.sending = buf;
        self.lent = false;
    }

    /// True once the handshake is done, every set-up reply is in and nothing is left to send: the
    /// connection can be driven (its TLS session, if any, comes from [`Self::into_tls`]).
    pub fn ready(&self) -> bool {
        let handshaking = self
            .tls
            .as_ref()
            .is_some_and(|(c, _)| c.is_handshaking() || c.wants_write());
        !handshaking
            && !self.lent
            && self.setup.is_empty()
            && self.names.is_empty()
            && self.sending.is_empty()
            && self.next.is_empty()
    }

    /// The TLS session for the live connection.
    pub fn into_tls(self) -> Option<rustls::ClientConnection> {
        self.tls.map(|(c, _)| c)
    }

    /// Moves what rustls has to send into the output; once the handshake is done, writes the set-up
    /// commands into it and reads the plaintext received.
    fn pump_tls(&mut self) -> Result<(), ConnError> {
        let Some((conn, _)) = self.tls.as_mut() else {
            return Ok(());
        };
        if !conn.is_handshaking() && !self.setup.is_empty() {
            if let Err(e) = conn.writer().write_all(&self.setup) {
                return Err(self.tls_failed(e.to_string()));
            }
            self.setup.clear();
        }
        let (conn, _) = self.tls.as_mut().expect("a TLS opening");
        while conn.wants_write() {
            if let Err(e) = conn.write_tls(&mut self.next) {
                return Err(self.tls_failed(e.to_string()));
            }
        }
        let mut chunk = [0u8; 4096];
        loop {
            match conn.reader().read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => self.inbox.extend_from_slice(&chunk[..n]),
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// Checks each whole set-up reply in the inbox.
    fn decode(&mut self) -> Result<(), ConnError> {
        loop {
            let (v, used) = match self.decoder.decode(&self.inbox) {
                Ok(Some(x)) => x,
                Ok(None) => return Ok(()),
                Err(DecodeError::TooLarge(t)) => {
                    self.inbox = Vec::new();
                    return Err(ConnError::TooLarge {
                        addr: self.addr.clone(),
                        command: self.names.front().copied().unwrap_or("set-up").to_string(),
                        what: t.to_string(),
                    });
                }
                Err(DecodeError::Protocol(e)) => {
                    return Err(ConnError::Protocol(format!("{}: {e}", self.addr)));
                }
            };
            self.inbox.drain(..used);
            if matches!(v, Value::Push(_)) {
                continue;
            }
            let Some(name) = self.names.pop_front() else {
                return Err(ConnError::Protocol(format!(
                    "{}: the server sent a reply before any request",
                    self.addr
                )));
            };
            if name == QUERY {
                self.answer = Some(v);
                continue;
            }
            net::check_setup_reply(name, &v)?;
        }
    }

    fn tls_failed(&self, reason: String) -> ConnError {
        ConnError::Tls {
            addr: self.addr.clone(),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn opening(setup: &Setup) -> Opening {
        Opening::new(
            "127.0.0.1:6379".into(),
            None,
            setup,
            Instant::now() + Duration::from_secs(1),
        )
        .unwrap()
    }

    #[test]
    fn without_set_up_commands_a_plain_connection_is_ready_at_once() {
        let mut o = opening(&Setup::default());
        o.connected().unwrap();
        assert!(o.lend().is_none());
        assert!(o.ready());
    }

    #[test]
    fn set_up_replies_arriving_in_pieces_make_it_ready_and_an_error_is_the_commands() {
        let setup = Setup {
            password: Some("pw".into()),
            dbnum: 2,
            ..Setup::default()
        };
        let mut o = opening(&setup);
        o.connected().unwrap();
        let out = o.lend().unwrap();
        assert!(out.starts_with(b"*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n*2\r\n$6\r\nSELECT\r\n"));
        assert!(!o.ready());
        o.sent(out);
        o.received(b"+O").unwrap();
        o.received(b"K\r\n+OK").unwrap();
        assert!(!o.ready());
        o.received(b"\r\n").unwrap();
        assert!(o.ready());

        let mut o = opening(&setup);
        o.connected().unwrap();
        let out = o.lend().unwrap();
        o.sent(out);
        let e = o
            .received(b"-WRONGPASS invalid username-password pair\r\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "AUTH failed: WRONGPASS invalid username-password pair"
        );
    }

    #[test]
    fn a_query_after_the_set_up_keeps_its_whole_reply() {
        let setup = Setup {
            dbnum: 1,
            ..Setup::default()
        };
        let mut o = opening(&setup);
        o.ask(&[b"CLUSTER", b"INFO"]);
        o.connected().unwrap();
        let out = o.lend().unwrap();
        assert!(out.ends_with(b"*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n"));
        o.sent(out);
        o.received(b"+OK\r\n$16\r\ncluster_st").unwrap();
        assert!(!o.ready());
        assert!(o.take_answer().is_none());
        o.received(b"ate:ok\r\n").unwrap();
        assert!(o.ready());
        match o.take_answer() {
            Some(Value::Bulk(b)) => assert_eq!(b, b"cluster_state:ok"),
            other => panic!("unexpected answer {other:?}"),
        }
        // An error reply is an answer too, not a set-up failure.
        let mut o = opening(&Setup::default());
        o.ask(&[b"CLUSTER", b"SLOTS"]);
        o.connected().unwrap();
        let out = o.lend().unwrap();
        o.sent(out);
        o.received(b"-ERR This instance has cluster support disabled\r\n")
            .unwrap();
        assert!(o.ready());
        assert!(matches!(o.take_answer(), Some(Value::Error(_))));
    }

    #[test]
    fn the_bytes_being_sent_are_lent_once_and_the_opening_waits_for_them() {
        let setup = Setup {
            resp3: true,
            ..Setup::default()
        };
        let mut o = opening(&setup);
        o.connected().unwrap();
        let out = o.lend().unwrap();
        // While the send has them, nothing more is lent and the opening is not ready.
        assert!(o.lend().is_none());
        o.received(b"%0\r\n").unwrap();
        assert!(!o.ready());
        o.sent(out);
        assert!(o.lend().is_none());
        assert!(o.ready());
    }
}
