//! How an I/O error is worded for the user, as redis-benchmark words it ("Connection refused", "No such
//! file or directory"): shared by the network and the report writers, so it sits below both.

use std::io;

/// The error's wording without Rust's " (os error N)" suffix.
pub fn describe(e: io::Error) -> String {
    wording(&e)
}

/// [`describe`] for an error that is kept (as the source of another one).
pub fn wording(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => "Connection refused".into(),
        io::ErrorKind::NotFound => "No such file or directory".into(),
        io::ErrorKind::TimedOut => "Connection timed out".into(),
        _ => match e.raw_os_error() {
            Some(code) => io::Error::from_raw_os_error(code).to_string(),
            None => e.to_string(),
        },
    }
}
