//! Process resource limits: raises the soft open-files and locked-memory limits to the hard ones, and
//! says which limit is too low for a run before it starts. [`check_memory`] (called by
//! [`Config::resolve`](crate::config::Config::resolve)) refuses `-d` x `-P` x `-c` request buffers the
//! machine's available memory or the address-space limit cannot hold.

use crate::config::error::{UsageError, usage};
use crate::workload::TestSpec;

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

/// Address space an executor maps besides its request buffers (thread stack, io_uring rings, the
/// provided-buffer pool, glommio's own memory): about 140 MB measured, rounded up.
const MAPPED_PER_EXECUTOR: u64 = 192 << 20;
/// Address space the process maps besides its executors (heap, histograms, libraries), rounded up.
const MAPPED_BASE: u64 = 64 << 20;

/// How much memory a run may still take: read by [`MemoryRoom::of_process`], given by a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryRoom {
    /// `MemAvailable` of /proc/meminfo, in bytes (`None`: unknown).
    pub available: Option<u64>,
    /// The soft address-space limit (`RLIMIT_AS`, `ulimit -v`), in bytes (`None`: unlimited or unknown).
    pub address_space: Option<u64>,
    /// The address space this process maps now (`VmSize` of /proc/self/status), in bytes.
    pub mapped: u64,
}

/// A `kB` figure of a /proc file such as `MemAvailable:  24031652 kB`, in bytes.
fn proc_kb(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

impl MemoryRoom {
    /// This machine's and this process's figures now.
    pub fn of_process() -> MemoryRoom {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        MemoryRoom {
            available: proc_kb(&meminfo, "MemAvailable:"),
            address_space: get(libc::RLIMIT_AS)
                .map(|r| r.rlim_cur)
                .filter(|&l| l != libc::RLIM_INFINITY),
            mapped: proc_kb(&status, "VmSize:").unwrap_or(0),
        }
    }
}

/// The request buffer memory a test needs over all executors, as the engine allocates it: one buffer
/// of `pipeline` requests per connection when requests differ (placeholders filled per request, or
/// composed: `per_request` is set with `--rps`, which composes every request), else one per executor.
/// With `--cluster` each connection has such a buffer per node; this counts one node.
pub fn request_buffers(
    test: &TestSpec,
    clients: usize,
    pipeline: usize,
    executors: usize,
    per_request: bool,
) -> u64 {
    let (len, per_connection) = match &test.compose {
        Some(c) => (c.max_request_len(), true),
        None => (
            test.template.bytes().len(),
            per_request || test.template.has_placeholders(),
        ),
    };
    let buffers = if per_connection { clients } else { executors };
    (buffers as u64)
        .saturating_mul(pipeline as u64)
        .saturating_mul(len as u64)
}

fn gb(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// Refuses a run whose biggest test's request buffers (`-d` x `-P` x `-c`, see [`request_buffers`]) do
/// not fit in the memory `room` says is available, or in the address space left under `RLIMIT_AS`.
/// One line naming the flags, the test and the figures.
pub fn check_memory(
    tests: &[TestSpec],
    data_size: usize,
    clients: usize,
    pipeline: usize,
    executors: usize,
    per_request: bool,
    room: &MemoryRoom,
) -> Result<(), UsageError> {
    let Some((need, test)) = tests
        .iter()
        .map(|t| {
            (
                request_buffers(t, clients, pipeline, executors, per_request),
                t,
            )
        })
        .max_by_key(|(need, _)| *need)
    else {
        return Ok(());
    };
    let what = format!(
        "{}: -d {data_size} with -P {pipeline} and -c {clients} needs {} of request buffers",
        test.title,
        gb(need)
    );
    if let Some(available) = room.available
        && need > available
    {
        return Err(usage(format!(
            "{what}, more than the {} of memory available (MemAvailable); lower -c, -P or -d",
            gb(available)
        )));
    }
    if let Some(limit) = room.address_space {
        let other = room
            .mapped
            .saturating_add(MAPPED_BASE)
            .saturating_add((executors as u64).saturating_mul(MAPPED_PER_EXECUTOR));
        let left = limit.saturating_sub(other);
        if need > left {
            return Err(usage(format!(
                "{what}, more than the {} the address-space limit leaves (RLIMIT_AS {}, ulimit -v {}); lower -c, -P or -d, or raise the limit",
                gb(left),
                gb(limit),
                limit / 1024
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::template::RequestTemplate;

    fn set_test(value: usize, randomize: bool) -> TestSpec {
        let args = [
            b"SET".to_vec(),
            b"key:__rand_int__".to_vec(),
            vec![b'x'; value],
        ];
        TestSpec {
            title: "SET".into(),
            command: "SET".into(),
            template: RequestTemplate::from_args(&args, randomize),
            compose: None,
        }
    }

    #[test]
    fn buffers_are_per_connection_when_requests_differ() {
        let t = set_test(10_000_000, true);
        let len = t.template.bytes().len() as u64;
        assert_eq!(len, 10_000_049);
        assert_eq!(request_buffers(&t, 50, 16, 1, false), 50 * 16 * len);
        let same = set_test(10_000_000, false);
        assert_eq!(request_buffers(&same, 50, 16, 2, false), 2 * 16 * len);
        assert_eq!(request_buffers(&same, 50, 16, 2, true), 50 * 16 * len);
    }

    #[test]
    fn buffers_past_the_memory_or_the_address_space_are_refused() {
        let tests = [set_test(3, true), set_test(10_000_000, true)];
        let check = |room: MemoryRoom| check_memory(&tests, 10_000_000, 50, 16, 1, false, &room);
        let roomy = MemoryRoom {
            available: Some(24 << 30),
            address_space: None,
            mapped: 20 << 20,
        };
        assert_eq!(check(roomy), Ok(()));
        // `ulimit -v 6000000`: 8.0 GB of buffers cannot be mapped.
        let e = check(MemoryRoom {
            address_space: Some(6_000_000 * 1024),
            ..roomy
        })
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("SET: -d 10000000 with -P 16 and -c 50 needs 8.0 GB of request buffers, more than the 5.9 GB the address-space limit leaves (RLIMIT_AS 6.1 GB, ulimit -v 6000000)"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
        let e = check(MemoryRoom {
            available: Some(3 << 30),
            ..roomy
        })
        .unwrap_err()
        .0;
        assert!(
            e.contains("needs 8.0 GB of request buffers, more than the 3.2 GB of memory available (MemAvailable); lower -c, -P or -d"),
            "{e}"
        );
        // Unknown figures refuse nothing; a limit with room passes.
        assert_eq!(check(MemoryRoom::default()), Ok(()));
        let e = check(MemoryRoom {
            address_space: Some(9 << 30),
            ..roomy
        });
        assert_eq!(e, Ok(()));
        assert!(MemoryRoom::of_process().available.is_some());
    }

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
