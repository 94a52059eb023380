//! Process resource limits: raises the soft open-files and locked-memory limits to the hard ones, and
//! says which limit is too low for a run before it starts.

/// Files a run keeps open besides its connections: executor rings, eventfds, timers, stdio.
const FILES_PER_EXECUTOR: u64 = 16;
const FILES_BASE: u64 = 32;

/// A process limit too low for the run; the message names the limit and how to raise it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    #[error(
        "-c {clients} needs about {needed} open files, but the open-files limit (RLIMIT_NOFILE) is {files} (hard limit {hard}); raise it with `ulimit -n {needed}` (as root, or in /etc/security/limits.conf)"
    )]
    OpenFiles {
        clients: usize,
        needed: u64,
        files: u64,
        hard: u64,
    },
    #[error(
        "-c {clients} needs {needed} local ports to one server address, but net.ipv4.ip_local_port_range ({low}-{high}) has {ports}; widen it (sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\") or use several clients"
    )]
    LocalPorts {
        clients: usize,
        needed: usize,
        low: u64,
        high: u64,
        ports: u64,
    },
}

fn get(resource: libc::__rlimit_resource_t) -> Option<libc::rlimit> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    (unsafe { libc::getrlimit(resource, &mut r) } == 0).then_some(r)
}

/// Raises the soft limit of `resource` to its hard limit; returns the soft limit in force afterwards.
fn raise(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut r = get(resource)?;
    if r.rlim_cur < r.rlim_max {
        let wanted = libc::rlimit {
            rlim_cur: r.rlim_max,
            rlim_max: r.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we own.
        if unsafe { libc::setrlimit(resource, &wanted) } == 0 {
            r = wanted;
        }
    }
    Some(r.rlim_cur)
}

/// Raises the soft open-files and memlock limits as far as the hard limits allow, then checks that
/// `clients` connections on `executors` executors fit. The error names the limit and how to raise it.
pub fn prepare(clients: usize, executors: usize) -> Result<(), LimitError> {
    let _ = raise(libc::RLIMIT_MEMLOCK);
    let Some(files) = raise(libc::RLIMIT_NOFILE) else {
        return Ok(());
    };
    let needed = clients as u64 + executors as u64 * FILES_PER_EXECUTOR + FILES_BASE;
    if files != libc::RLIM_INFINITY && needed > files {
        let hard = get(libc::RLIMIT_NOFILE)
            .map(|r| r.rlim_max)
            .unwrap_or(files);
        return Err(LimitError::OpenFiles {
            clients,
            needed,
            files,
            hard,
        });
    }
    Ok(())
}

/// Checks that `clients` connections to one TCP address fit in the local port range: each needs its
/// own local port. The error names the sysctl to raise.
pub fn local_ports(clients: usize) -> Result<(), LimitError> {
    let Ok(range) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range") else {
        return Ok(());
    };
    let mut it = range
        .split_whitespace()
        .filter_map(|v| v.parse::<u64>().ok());
    let (Some(low), Some(high)) = (it.next(), it.next()) else {
        return Ok(());
    };
    let ports = high.saturating_sub(low) + 1;
    // The control connection and the server view take two more.
    if clients as u64 + 2 > ports {
        return Err(LimitError::LocalPorts {
            clients,
            needed: clients + 2,
            low,
            high,
            ports,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soft_limit_is_raised_to_hard() {
        let _ = prepare(1, 1);
        let r = get(libc::RLIMIT_NOFILE).unwrap();
        assert_eq!(r.rlim_cur, r.rlim_max);
    }

    #[test]
    fn too_many_clients_name_the_limit() {
        let e = prepare(usize::MAX / 4, 1).unwrap_err().to_string();
        assert!(
            e.contains("RLIMIT_NOFILE") && e.contains("ulimit -n"),
            "{e}"
        );
    }
}
