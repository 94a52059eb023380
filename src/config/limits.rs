//! Process resource limits: raises the soft open-files and locked-memory limits to the hard ones, and
//! says which limit is too low for a run before it starts. [`check_memory`] (called by
//! [`Config::resolve`](crate::config::Config::resolve)) refuses `-d` x `-P` x `-c` request buffers the
//! machine's available memory or the address-space limit cannot hold.

use crate::sys::os;
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
        "--cluster: -c {clients} opens a connection to each of the {nodes} nodes for each client, about {needed} open files, but the open-files limit (RLIMIT_NOFILE) is {files} (hard limit {hard}); raise it with `ulimit -n {needed}` (as root, or in /etc/security/limits.conf), or lower -c"
    )]
    ClusterFiles {
        clients: usize,
        nodes: usize,
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

/// Raises the soft open-files and memlock limits as far as the hard limits allow, then checks that
/// `clients` connections on `executors` executors fit. The error names the limit and how to raise it.
pub fn prepare(clients: usize, executors: usize) -> Result<(), LimitError> {
    let _ = os::raise_rlimit(libc::RLIMIT_MEMLOCK);
    let Some(files) = os::raise_rlimit(libc::RLIMIT_NOFILE) else {
        return Ok(());
    };
    let needed = clients as u64 + executors as u64 * FILES_PER_EXECUTOR + FILES_BASE;
    if files != libc::RLIM_INFINITY && needed > files {
        let hard = os::rlimit(libc::RLIMIT_NOFILE)
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

/// Checks, once a cluster's layout is read and before any connection to its nodes opens, that each
/// of `clients` clients holding a connection to each of `nodes` nodes (and a view of each node) fits
/// under the open-files limit [`prepare`] raised. The error names the limit and how to raise it.
pub fn cluster_files(clients: usize, nodes: usize, executors: usize) -> Result<(), LimitError> {
    let Some(r) = os::rlimit(libc::RLIMIT_NOFILE) else {
        return Ok(());
    };
    let needed = (clients as u64)
        .saturating_add(1)
        .saturating_mul(nodes as u64)
        .saturating_add(executors as u64 * FILES_PER_EXECUTOR + FILES_BASE);
    if r.rlim_cur != libc::RLIM_INFINITY && needed > r.rlim_cur {
        return Err(LimitError::ClusterFiles {
            clients,
            nodes,
            needed,
            files: r.rlim_cur,
            hard: r.rlim_max,
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
            address_space: os::rlimit(libc::RLIMIT_AS)
                .map(|r| r.rlim_cur)
                .filter(|&l| l != libc::RLIM_INFINITY),
            mapped: proc_kb(&status, "VmSize:").unwrap_or(0),
        }
    }
}

/// Request buffers the machine or the address-space limit cannot hold: one line naming the flags and the
/// figures; exit code 1, like the other limits a run does not fit in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MemoryError(pub String);

/// What one test's requests weigh: the longest request and whether each connection has its own
/// buffer of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestSize {
    pub title: String,
    /// The longest request, in bytes (the composer's longest when requests are composed).
    pub request_len: u64,
    /// Requests differ (placeholders filled per request, or composed: with `--rps`, `per_request`,
    /// every request is), so each connection has a buffer; otherwise each executor has one.
    pub per_connection: bool,
}

impl TestSize {
    /// `test`'s size, as the engine lays out its buffers.
    pub fn of(test: &TestSpec, per_request: bool) -> TestSize {
        let (len, per_connection) = match &test.compose {
            Some(c) => (c.max_request_len(), true),
            // A replay copies its commands into a buffer of `-P` of the longest per connection.
            None if test.replay.is_some() => (test.template.bytes().len(), true),
            None => (
                test.template.bytes().len(),
                per_request || test.template.has_placeholders(),
            ),
        };
        TestSize {
            title: test.title.clone(),
            request_len: len as u64,
            per_connection,
        }
    }

    /// The size with values of `d` bytes, from the sizes of the same test built with values of 1
    /// (`one`) and 2 bytes (`two`): a request grows by a byte per copy of the value and byte of it.
    pub fn scaled(one: &TestSize, two: &TestSize, d: u64) -> TestSize {
        let copies = two.request_len.saturating_sub(one.request_len);
        TestSize {
            request_len: one
                .request_len
                .saturating_add(copies.saturating_mul(d.saturating_sub(1))),
            ..one.clone()
        }
    }

    /// The request buffer memory this test needs over all executors: `pipeline` requests per buffer.
    /// With `--cluster` each connection has such a buffer per node; this counts one node.
    pub fn buffers(&self, clients: usize, pipeline: usize, executors: usize) -> u64 {
        let buffers = if self.per_connection {
            clients
        } else {
            executors
        };
        (buffers as u64)
            .saturating_mul(pipeline as u64)
            .saturating_mul(self.request_len)
    }
}

fn gb(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// The load a memory check is about: the flags that size the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    /// `-d` (its maximum), as given.
    pub data_size: usize,
    pub clients: usize,
    pub pipeline: usize,
    pub executors: usize,
}

/// Refuses a run whose biggest test's request buffers (`-d` x `-P` x `-c`, see [`TestSize::buffers`]),
/// with `held` bytes the suite's compiled requests keep besides, do not fit in the memory `room` says
/// is available, or in the address space left under `RLIMIT_AS`. One line naming the flags, the test
/// and the figures.
pub fn check_memory(
    tests: &[TestSize],
    held: u64,
    load: Load,
    room: &MemoryRoom,
) -> Result<(), MemoryError> {
    let Some((buffers, test)) = tests
        .iter()
        .map(|t| (t.buffers(load.clients, load.pipeline, load.executors), t))
        .max_by_key(|(need, _)| *need)
    else {
        return Ok(());
    };
    let need = buffers.saturating_add(held);
    // The suite's own requests are named when they weigh more than a hundredth of the whole.
    let suite = if held > need / 100 {
        format!(" (and {} for the suite's requests and values)", gb(held))
    } else {
        String::new()
    };
    let what = format!(
        "{}: -d {} with -P {} and -c {} needs {} of request buffers{suite}",
        test.title,
        load.data_size,
        load.pipeline,
        load.clients,
        gb(buffers)
    );
    if let Some(available) = room.available
        && need > available
    {
        return Err(MemoryError(format!(
            "{what}, more than the {} of memory available (MemAvailable); lower -c, -P or -d",
            gb(available)
        )));
    }
    if let Some(limit) = room.address_space {
        let other = room
            .mapped
            .saturating_add(MAPPED_BASE)
            .saturating_add((load.executors as u64).saturating_mul(MAPPED_PER_EXECUTOR));
        let left = limit.saturating_sub(other);
        if need > left {
            return Err(MemoryError(format!(
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
            replay: None,
        }
    }

    #[test]
    fn buffers_are_per_connection_when_requests_differ() {
        let t = TestSize::of(&set_test(10_000_000, true), false);
        assert_eq!(t.request_len, 10_000_049);
        assert_eq!(t.buffers(50, 16, 1), 50 * 16 * 10_000_049);
        let same = TestSize::of(&set_test(10_000_000, false), false);
        assert_eq!(same.buffers(50, 16, 2), 2 * 16 * 10_000_049);
        let paced = TestSize::of(&set_test(10_000_000, false), true);
        assert_eq!(paced.buffers(50, 16, 2), 50 * 16 * 10_000_049);
        // Sized from two small builds: within the digits of the value's length header.
        let (one, two) = (
            TestSize::of(&set_test(1, true), false),
            TestSize::of(&set_test(2, true), false),
        );
        let scaled = TestSize::scaled(&one, &two, 10_000_000);
        assert!(
            scaled.request_len.abs_diff(t.request_len) <= 8,
            "{scaled:?}"
        );
        assert!(scaled.per_connection);
    }

    #[test]
    fn buffers_past_the_memory_or_the_address_space_are_refused() {
        let tests = [
            TestSize::of(&set_test(3, true), false),
            TestSize::of(&set_test(10_000_000, true), false),
        ];
        let load = Load {
            data_size: 10_000_000,
            clients: 50,
            pipeline: 16,
            executors: 1,
        };
        let check = |held: u64, room: MemoryRoom| check_memory(&tests, held, load, &room);
        let roomy = MemoryRoom {
            available: Some(24 << 30),
            address_space: None,
            mapped: 20 << 20,
        };
        assert_eq!(check(0, roomy), Ok(()));
        // `ulimit -v 6000000`: 8.0 GB of buffers cannot be mapped.
        let e = check(
            0,
            MemoryRoom {
                address_space: Some(6_000_000 * 1024),
                ..roomy
            },
        )
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("SET: -d 10000000 with -P 16 and -c 50 needs 8.0 GB of request buffers, more than the 5.9 GB the address-space limit leaves (RLIMIT_AS 6.1 GB, ulimit -v 6000000)"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
        let e = check(
            0,
            MemoryRoom {
                available: Some(3 << 30),
                ..roomy
            },
        )
        .unwrap_err()
        .0;
        assert!(
            e.contains("needs 8.0 GB of request buffers, more than the 3.2 GB of memory available (MemAvailable); lower -c, -P or -d"),
            "{e}"
        );
        // The suite's own requests count, and are named when they weigh.
        let e = check(20_000_000_000, roomy).unwrap_err().0;
        assert!(
            e.contains("needs 8.0 GB of request buffers (and 20.0 GB for the suite's requests and values), more than the 25.8 GB"),
            "{e}"
        );
        // Unknown figures refuse nothing; a limit with room passes.
        assert_eq!(check(0, MemoryRoom::default()), Ok(()));
        let ok = check(
            0,
            MemoryRoom {
                address_space: Some(9 << 30),
                ..roomy
            },
        );
        assert_eq!(ok, Ok(()));
        assert!(MemoryRoom::of_process().available.is_some());
    }

    #[test]
    fn soft_limit_is_raised_to_hard() {
        let _ = prepare(1, 1);
        let r = os::rlimit(libc::RLIMIT_NOFILE).unwrap();
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
