//! Sockets as the ring uses them: a new non-connected socket and the address its `CONNECT` reads,
//! receive timestamps, and shutting a socket down.

use io_uring::types::Timespec;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

/// Where a socket connects to.
#[derive(Clone, Copy, Debug)]
pub enum Peer<'a> {
    Tcp(std::net::SocketAddr),
    Unix(&'a Path),
}

/// Shuts socket `fd` down both ways; the operations pending on it then complete.
pub fn shutdown(fd: &OwnedFd) {
    // SAFETY: shutdown(2) on a descriptor we own.
    unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
}

/// Asks the kernel to timestamp what socket `fd` receives (`SO_TIMESTAMPNS`); false if it refuses.
pub fn enable_rx_timestamps(fd: &OwnedFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and an int option value that outlives the call.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

/// What a `CONNECT` and its linked timeout read: the server's address and `--connect-timeout`
/// (boxed, so they stay put while the operations are in the kernel).
pub struct ConnectArgs {
    addr: libc::sockaddr_storage,
    len: libc::socklen_t,
    timeout: Timespec,
}

impl ConnectArgs {
    pub(super) fn len(&self) -> libc::socklen_t {
        self.len
    }

    pub(super) fn timeout(&self) -> &Timespec {
        &self.timeout
    }

    pub(super) fn sockaddr(&self) -> *const libc::sockaddr {
        (&self.addr as *const libc::sockaddr_storage).cast()
    }
}

/// A new socket for `target` (TCP with `TCP_NODELAY`, or unix), not connected yet, and the arguments
/// of its `CONNECT`.
pub fn new_socket(peer: Peer<'_>, timeout: Duration) -> io::Result<(OwnedFd, Box<ConnectArgs>)> {
    use std::os::fd::FromRawFd;
    // SAFETY: sockaddr_storage is plain data; all-zero is valid.
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let (domain, len) = match peer {
        Peer::Tcp(std::net::SocketAddr::V4(a)) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: a sockaddr_in fits in (and is aligned for) sockaddr_storage.
            unsafe { std::ptr::write((&mut addr as *mut libc::sockaddr_storage).cast(), sin) };
            (libc::AF_INET, std::mem::size_of::<libc::sockaddr_in>())
        }
        Peer::Tcp(std::net::SocketAddr::V6(a)) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut addr as *mut libc::sockaddr_storage).cast(), sin6) };
            (libc::AF_INET6, std::mem::size_of::<libc::sockaddr_in6>())
        }
        Peer::Unix(path) => {
            use std::os::unix::ffi::OsStrExt;
            let bytes = path.as_os_str().as_bytes();
            // SAFETY: sockaddr_un is plain data; all-zero is valid.
            let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
            if bytes.len() >= sun.sun_path.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the unix socket path is too long",
                ));
            }
            sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
            for (d, &b) in sun.sun_path.iter_mut().zip(bytes) {
                *d = b as libc::c_char;
            }
            // SAFETY: as above, for sockaddr_un.
            unsafe { std::ptr::write((&mut addr as *mut libc::sockaddr_storage).cast(), sun) };
            let path_at = std::mem::offset_of!(libc::sockaddr_un, sun_path);
            (libc::AF_UNIX, path_at + bytes.len() + 1)
        }
    };
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let raw = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just made and owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    if domain != libc::AF_UNIX {
        let on: libc::c_int = 1;
        // SAFETY: a valid socket and an int option value that outlives the call.
        unsafe {
            libc::setsockopt(
                raw,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
    }
    let args = Box::new(ConnectArgs {
        addr,
        len: len as libc::socklen_t,
        timeout: Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos()),
    });
    Ok((fd, args))
}
