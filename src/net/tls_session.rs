//! A connection's TLS session fed from and into a ring's buffers: requests are sealed into a buffer
//! the ring sends from, and each receive buffer is opened into plaintext for the scanner.

use std::io;

/// Why a TLS session on the ring failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// rustls could not take or give bytes.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The server's records were refused (bad record, alert, certificate).
    #[error("{0}")]
    Session(String),
}

/// A connection's TLS session fed from and into the ring's buffers.
pub(crate) struct TlsSession {
    conn: rustls::ClientConnection,
}

impl TlsSession {
    pub(crate) fn new(conn: rustls::ClientConnection) -> Box<TlsSession> {
        Box::new(TlsSession { conn })
    }

    /// Encrypts `plain` (and anything else rustls has to send) into `sealed` (replacing its contents);
    /// returns its length. rustls takes plaintext only up to its buffer limit, so the records are
    /// drained as it goes: a request of any size, or a batch of any depth, is sealed whole.
    pub(crate) fn seal(&mut self, plain: &[u8], sealed: &mut Vec<u8>) -> Result<usize, TlsError> {
        use std::io::Write;
        sealed.clear();
        let mut rest = plain;
        loop {
            let took = self.conn.writer().write(rest)?;
            rest = &rest[took..];
            let mut drained = false;
            while self.conn.wants_write() {
                self.conn.write_tls(sealed)?;
                drained = true;
            }
            if rest.is_empty() {
                return Ok(sealed.len());
            }
            if took == 0 && !drained {
                return Err(TlsError::Io(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "the TLS session took no more plaintext",
                )));
            }
        }
    }

    /// Decrypts the records in `data` into `plain` (replacing its contents); true when the server
    /// closed the session.
    pub(crate) fn open(&mut self, mut data: &[u8], plain: &mut Vec<u8>) -> Result<bool, TlsError> {
        use std::io::Read;
        plain.clear();
        let mut closed = false;
        while !data.is_empty() {
            self.conn.read_tls(&mut data)?;
            self.conn
                .process_new_packets()
                .map_err(|e| TlsError::Session(crate::net::tls::describe(&e, None)))?;
            loop {
                let at = plain.len();
                if plain.capacity() - at < 4096 {
                    plain.reserve(16 * 1024);
                }
                plain.resize(plain.capacity(), 0);
                match self.conn.reader().read(&mut plain[at..]) {
                    Ok(0) => {
                        plain.truncate(at);
                        closed = true;
                        break;
                    }
                    Ok(n) => plain.truncate(at + n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        plain.truncate(at);
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(closed)
    }
}
