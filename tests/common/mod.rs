//! Test harness: a real `redis-server` on a free port (or unix socket), `redis-cli` for the server's side
//! of every check, and the `ringbench` binary under test, run through [`bench::Bench`].
#![allow(dead_code)]

pub mod alloc;
pub mod bench;
pub mod cluster;
pub mod fault;
pub mod lock;
pub mod netns;
pub mod probe;
pub mod scratch;
pub mod sys;

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` process owned by one test; stopped when dropped.
pub struct RedisServer {
    child: Child,
    pub port: u16,
    pub socket: PathBuf,
    pub dir: PathBuf,
}

/// True when `reply`, a `redis-cli CONFIG GET dir` output, names `dir` (compared resolved, as the
/// server reports it): the server that answered is the one started in `dir`.
pub fn reports_dir(reply: &str, dir: &std::path::Path) -> bool {
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    reply
        .lines()
        .nth(1)
        .is_some_and(|d| std::path::Path::new(d.trim()) == dir)
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl RedisServer {
    /// Starts a server with no persistence; `extra` are more `--name value` arguments.
    pub fn start_with(extra: &[&str]) -> RedisServer {
        for _ in 0..5 {
            let port = free_port();
            // A directory (and so a unix socket) of this server's own, whatever its port: two tests
            // of one process can be handed the same free port.
            static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("ringbench-test-{}-{n}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let socket = dir.join("redis.sock");
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1 ::1"])
                .args(["--save", "", "--appendonly", "no"])
                .args([
                    "--unixsocket",
                    socket.to_str().unwrap(),
                    "--unixsocketperm",
                    "700",
                ])
                .args(["--dir", dir.to_str().unwrap(), "--maxclients", "20000"])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            let child = cmd
                .spawn()
                .expect("redis-server must be installed (apt-get install redis-server)");
            let mut server = RedisServer {
                child,
                port,
                socket,
                dir,
            };
            if server.wait_ready() {
                return server;
            }
            let _ = server.child.kill();
        }
        panic!("could not start redis-server");
    }

    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            // Asked through its own unix socket: a server on the port could be a parallel test's
            // that took the port between its pick and this server's bind (then this one exits). The
            // socket is listened on after the port, so once it answers, the port is this server's.
            let out = Command::new("redis-cli")
                .arg("-s")
                .arg(&self.socket)
                .arg("ping")
                .output()
                .unwrap();
            let reply = String::from_utf8_lossy(&out.stdout);
            if reply.trim() == "PONG" || reply.contains("NOAUTH") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Runs `redis-cli` against this server and returns its trimmed stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        redis_cli(self.port, args)
    }

    /// `INFO commandstats` as command name -> calls.
    pub fn commandstats(&self) -> HashMap<String, u64> {
        parse_commandstats(&self.cli(&["info", "commandstats"]))
    }

    /// Calls of one command (`set`, `get`, ...) since the last reset.
    pub fn calls(&self, command: &str) -> u64 {
        self.commandstats()
            .get(&command.to_lowercase())
            .copied()
            .unwrap_or(0)
    }

    /// Empties every db and resets the statistics.
    pub fn reset(&self) {
        self.cli(&["flushall"]);
        self.cli(&["config", "resetstat"]);
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits until the server has executed more than `calls` of `command`.
    pub fn wait_for_calls(&self, command: &str, calls: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.calls(command) <= calls {
            assert!(
                Instant::now() < deadline,
                "the server never saw {calls} {command} calls"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn parse_commandstats(info: &str) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for line in info.lines() {
        if let Some(rest) = line.strip_prefix("cmdstat_")
            && let Some((name, fields)) = rest.split_once(':')
        {
            for f in fields.split(',') {
                if let Some(v) = f.strip_prefix("calls=") {
                    m.insert(name.to_string(), v.trim().parse().unwrap());
                }
            }
        }
    }
    m
}

/// Runs `redis-cli -p port` with `args` and returns its trimmed stdout.
pub fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The `Cpus_allowed_list` of a /proc `status` text, as the kernel writes it (`0-1`); empty when absent.
fn allowed_cpus(status: &str) -> String {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// The allowed CPUs (`Cpus_allowed_list` of /proc) of each executor of the running ringbench `child`, as
/// `(executor index, list)`, once `executors` of them are seen (or after 10 s). Executor i's threads are
/// named ringbench-<i>-<glommio id>.
pub fn executor_cpus(child: &Child, executors: usize) -> Vec<(usize, String)> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut last: Vec<(usize, String)>;
    // A sample counts when it has each executor once (with `-l` a new round's thread can be seen
    // before it is pinned, beside the old round's) and the next sample says the same.
    let settled = |f: &Vec<(usize, String)>, last: &Vec<(usize, String)>| {
        f.len() >= executors && f.windows(2).all(|w| w[0].0 != w[1].0) && f == last
    };
    while Instant::now() < deadline {
        last = std::mem::take(&mut found);
        let dir = format!("/proc/{}/task", child.id());
        for task in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if let Some(rest) = comm.trim().strip_prefix("ringbench-") {
                let i = rest.split('-').next().unwrap_or(rest);
                let allowed = allowed_cpus(
                    &std::fs::read_to_string(task.path().join("status")).unwrap_or_default(),
                );
                found.push((i.parse::<usize>().unwrap(), allowed));
                found.sort();
                found.dedup();
            }
        }
        if settled(&found, &last) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    found.sort();
    found
}

/// The cores this test process may use, from /proc (the same mask ringbench inherits).
pub fn usable_cores() -> Vec<usize> {
    let mut cores = Vec::new();
    for part in own_cpus().split(',') {
        match part.split_once('-') {
            Some((a, b)) => cores.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => cores.push(part.parse().unwrap()),
        }
    }
    cores
}

/// The cores this test process may use as the kernel writes them (`0-1`): an executor left unpinned
/// has this list.
pub fn own_cpus() -> String {
    let list = allowed_cpus(&std::fs::read_to_string("/proc/self/status").unwrap());
    assert!(
        !list.is_empty(),
        "/proc/self/status has no Cpus_allowed_list"
    );
    list
}

/// Parses the `requests: N requested, C completed, F failed` line of the normal block.
pub fn request_counts(stdout: &str) -> Option<(u64, u64, u64)> {
    request_split(stdout).map(|(r, c, f, _)| (r, c, f))
}

/// Parses the requests line into (requested, completed, failed, not sent).
pub fn request_split(stdout: &str) -> Option<(u64, u64, u64, u64)> {
    request_account(stdout).map(|a| (a.requested, a.completed, a.failed, a.not_sent))
}

/// The normal block's `requests:` line, each figure by its label (0 when absent).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Account {
    pub requested: u64,
    pub completed: u64,
    pub failed: u64,
    pub not_sent: u64,
    pub in_flight: u64,
    /// Open loop under --duration: requests that fell due and were never sent.
    pub late_unsent: u64,
}

pub fn request_account(stdout: &str) -> Option<Account> {
    let line = stdout
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("requests: "))?;
    let line = line.replace(" (sent, no reply)", "");
    let mut a = Account::default();
    for part in line.split(", ") {
        let (n, label) = part.split_once(' ')?;
        let n: u64 = n.parse().ok()?;
        match label {
            "requested" => a.requested = n,
            "completed" => a.completed = n,
            l if l.starts_with("failed") => a.failed = n,
            "not sent" => a.not_sent = n,
            l if l.starts_with("in flight") => a.in_flight = n,
            "fell due and were never sent" => a.late_unsent = n,
            _ => return None,
        }
    }
    Some(a)
}

/// After an interrupt: the normal block accounts for every one of `requested` (completed + failed +
/// not sent + in flight when stopped), and the server's `executed` lies between the completed ones and
/// those plus the ones in flight.
pub fn assert_interrupted_account(stdout: &str, requested: u64, executed: u64) {
    let a = request_account(stdout).expect("a requests line");
    assert_eq!(a.requested, requested, "{stdout}");
    assert_eq!(
        a.completed + a.failed + a.not_sent + a.in_flight,
        requested,
        "{a:?}\n{stdout}"
    );
    assert!(
        (a.completed..=a.completed + a.in_flight).contains(&executed),
        "the server executed {executed}, {a:?}\n{stdout}"
    );
}

/// The first test's "N requests completed in S seconds" as (N, S).
pub fn completed(out: &str) -> (u64, f64) {
    let line = out
        .lines()
        .find(|l| l.contains(" requests completed in "))
        .unwrap_or_else(|| panic!("no completion line in\n{out}"));
    let w: Vec<&str> = line.split_whitespace().collect();
    (w[0].parse().unwrap(), w[4].parse().unwrap())
}

/// Sends `commands` (one per line, quoted as redis-cli reads its input) through one `redis-cli`
/// connection to `port`; its answers, one per line.
#[allow(dead_code)]
pub fn cli_batch(port: u16, commands: &str) -> Vec<String> {
    use std::io::Write;
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(commands.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "redis-cli failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect()
}
