//! Where the server is and how each connection to it is set up: what every connection needs, the control
//! client's and the ring's alike (the ring's are opened by the control client and handed over).

use std::net::SocketAddr;
use std::path::PathBuf;

/// Where the server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A TCP server: the name as given, and the address it resolved to.
    Tcp {
        host: String,
        port: u16,
        addr: SocketAddr,
    },
    /// A unix socket.
    Unix(PathBuf),
}

impl Target {
    /// True when the server runs on this machine (a loopback address or a unix socket).
    pub fn is_local(&self) -> bool {
        match self {
            Target::Tcp { addr, .. } => addr.ip().is_loopback(),
            Target::Unix(_) => true,
        }
    }

    /// Where a socket to this target connects.
    pub fn peer(&self) -> crate::sys::socket::Peer<'_> {
        match self {
            Target::Tcp { addr, .. } => crate::sys::socket::Peer::Tcp(*addr),
            Target::Unix(p) => crate::sys::socket::Peer::Unix(p),
        }
    }

    /// The address as a user would write it.
    pub fn display(&self) -> String {
        match self {
            Target::Tcp { host, port, .. } if host.contains(':') => format!("[{host}]:{port}"),
            Target::Tcp { host, port, .. } => format!("{host}:{port}"),
            Target::Unix(p) => p.display().to_string(),
        }
    }
}

/// Credentials and per-connection setup.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Setup {
    pub user: Option<String>,
    pub password: Option<String>,
    pub dbnum: u32,
    pub resp3: bool,
    pub tracking: bool,
    /// `--cluster --rfr`: `READONLY`, so a replica serves reads for its master's slots.
    pub readonly: bool,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password is never printed, not even in debug output.
        f.debug_struct("Setup")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .field("dbnum", &self.dbnum)
            .field("resp3", &self.resp3)
            .field("tracking", &self.tracking)
            .field("readonly", &self.readonly)
            .finish()
    }
}
