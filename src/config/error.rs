//! The config stage's errors. A usage error (a flag's value that cannot be used) exits with code 2, as do a
//! file named by a flag that cannot be written and a `-x` stdin that cannot be read; a server name that does
//! not resolve, and request buffers the machine cannot hold, exit with code 1.

use std::io;

/// A usage error: one line naming the flag and the value; exit code 2.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct UsageError(pub String);

/// A usage error from its message.
pub(crate) fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// Why the file a flag names cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum PathProblem {
    #[error("give a file name")]
    Empty,
    #[error("folder '{0}' does not exist")]
    NoFolder(String),
    #[error("'{0}' is a folder")]
    IsFolder(String),
    #[error("cannot write '{path}': {}", crate::os_error::wording(.source))]
    CannotWrite {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot create a file in folder '{dir}': {}", crate::os_error::wording(.source))]
    CannotCreate {
        dir: String,
        #[source]
        source: io::Error,
    },
}

/// A file named by `--json`, `--plot` or `--hdr-out` that cannot be written; exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("invalid value '{value}' for '{flag}': {problem}")]
pub struct PathError {
    pub flag: &'static str,
    pub value: String,
    #[source]
    pub problem: PathProblem,
}

/// A server name that does not resolve; exit code 1.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("Could not connect to {host}:{port}: {source}")]
    Lookup {
        host: String,
        port: u16,
        #[source]
        source: io::Error,
    },
    #[error("Could not connect to {host}:{port}: no address for the name")]
    NoAddress { host: String, port: u16 },
}

/// A failure while building the config: [`Settings::parse`](crate::config::Settings::parse) gives only
/// `Usage`; [`Config::resolve`](crate::config::Config::resolve) any of them.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Usage(#[from] UsageError),
    #[error(transparent)]
    Path(#[from] PathError),
    /// A TLS flag whose file or value cannot be used.
    #[error(transparent)]
    Tls(#[from] crate::net::tls::TlsFlagError),
    #[error("'-x': could not read stdin: {0}")]
    Stdin(#[source] io::Error),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// Request buffers that do not fit in memory or under the address-space limit; exit code 1.
    #[error(transparent)]
    Memory(#[from] crate::config::limits::MemoryError),
}

impl ConfigError {
    /// The process's exit code for this error: 2 for the user's mistake, 1 for an unreachable name or
    /// a run the machine cannot hold.
    pub fn exit_code(&self) -> u8 {
        match self {
            ConfigError::Resolve(_) | ConfigError::Memory(_) => 1,
            _ => 2,
        }
    }
}
