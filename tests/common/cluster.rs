//! A real local Redis Cluster for the tests (started with scripts/cluster.sh), stopped when dropped.

use super::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A cluster of three masters (and their replicas, if any) owned by one test; stopped when dropped.
pub struct Cluster {
    pub dir: PathBuf,
    /// Every node, masters and replicas (and masters added with [`Cluster::add_master`]).
    pub ports: Vec<u16>,
    /// `cluster-node-timeout` in milliseconds.
    pub node_timeout_ms: u64,
}

/// The ringbench binary the tests run through [`super::bench::Bench`]: this build, or the one
/// `$RINGBENCH_BIN` names (to see what another build does with the same test).
pub fn bin() -> PathBuf {
    std::env::var_os("RINGBENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ringbench")))
}

pub fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster.sh")
}

impl Cluster {
    pub fn start() -> Cluster {
        Self::start_with(0, 5000)
    }

    /// Three masters with `replicas` replicas each, `cluster-node-timeout` in milliseconds.
    pub fn start_with(replicas: usize, node_timeout_ms: u64) -> Cluster {
        Self::start_trying(replicas, node_timeout_ms, "")
    }

    /// [`Cluster::start_with`], its nodes trying `ports` first (`RINGBENCH_CLUSTER_PORTS`).
    pub fn start_trying(replicas: usize, node_timeout_ms: u64, ports: &str) -> Cluster {
        let mut last = String::new();
        // A port picked by the script can be taken by another test in between; try again then.
        for _ in 0..3 {
            let out = Command::new(script())
                .args(["start", "3", &replicas.to_string()])
                .env(
                    "RINGBENCH_CLUSTER_NODE_TIMEOUT",
                    node_timeout_ms.to_string(),
                )
                .env("RINGBENCH_CLUSTER_PORTS", ports)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            if out.status.success() {
                let mut lines = text.lines();
                let dir = PathBuf::from(lines.next().unwrap());
                let ports = lines
                    .map(|l| l.rsplit_once(':').unwrap().1.parse().unwrap())
                    .collect::<Vec<u16>>();
                assert_eq!(ports.len(), 3 * (1 + replicas), "{text}");
                let c = Cluster {
                    dir,
                    ports,
                    node_timeout_ms,
                };
                // The start script's own PINGs are not the run's.
                c.reset_stats();
                return c;
            }
            last = String::from_utf8_lossy(&out.stderr).to_string();
        }
        panic!("scripts/cluster.sh start failed: {last}");
    }

    /// `CONFIG RESETSTAT` on every node.
    pub fn reset_stats(&self) {
        for &p in &self.ports {
            self.cli(p, &["config", "resetstat"]);
        }
    }

    pub fn cli(&self, port: u16, args: &[&str]) -> String {
        super::redis_cli(port, args)
    }

    /// Sends one command per line of `commands` through a single redis-cli; returns its output lines.
    pub fn batch(&self, port: u16, commands: &str) -> Vec<String> {
        cli_batch(port, commands)
    }

    /// The nodes that are masters now (asked of `via`), and for each its replicas.
    pub fn roles(&self, via: u16) -> (Vec<u16>, HashMap<u16, u16>) {
        let nodes = self.cli(via, &["cluster", "nodes"]);
        let port_of = |f: &str| -> u16 {
            f.split('@')
                .next()
                .unwrap()
                .rsplit_once(':')
                .unwrap()
                .1
                .parse()
                .unwrap()
        };
        let mut ids = HashMap::new();
        let lines: Vec<Vec<&str>> = nodes.lines().map(|l| l.split(' ').collect()).collect();
        for f in &lines {
            ids.insert(f[0].to_string(), port_of(f[1]));
        }
        let mut masters = Vec::new();
        let mut replica_of = HashMap::new();
        for f in &lines {
            let port = port_of(f[1]);
            if f[2].contains("fail") && !f[2].contains("pfail") {
                continue;
            }
            if f[2].contains("master") {
                masters.push(port);
            } else if let Some(&m) = ids.get(f[3]) {
                replica_of.insert(port, m);
            }
        }
        (masters, replica_of)
    }

    /// SIGKILL of one node, as a crash would.
    pub fn kill(&self, port: u16) {
        self.signal(port, libc::SIGKILL);
    }

    pub fn signal(&self, port: u16, sig: i32) {
        let pid: i32 = std::fs::read_to_string(self.dir.join(port.to_string()).join("redis.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // A redis-server this test started.
        assert!(super::sys::kill(pid, sig));
    }

    /// A node's `INFO replication` field.
    pub fn replication(&self, port: u16, field: &str) -> String {
        self.cli(port, &["info", "replication"])
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{field}:")))
            .unwrap_or("")
            .trim()
            .to_string()
    }

    pub fn dbsizes(&self) -> Vec<u64> {
        self.ports
            .iter()
            .map(|&p| self.cli(p, &["dbsize"]).parse().unwrap())
            .collect()
    }

    /// Calls of `command` summed over the masters.
    pub fn calls(&self, command: &str) -> u64 {
        self.ports.iter().map(|&p| self.calls_on(p, command)).sum()
    }

    pub fn node_id(&self, port: u16) -> String {
        self.cli(port, &["cluster", "myid"])
    }

    /// The port of the master that owns `slot`.
    pub fn owner(&self, slot: u16) -> u16 {
        let nodes = self.cli(self.ports[0], &["cluster", "nodes"]);
        for line in nodes.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if !f[2].contains("master") {
                continue;
            }
            let port: u16 = f[1]
                .split('@')
                .next()
                .unwrap()
                .rsplit_once(':')
                .unwrap()
                .1
                .parse()
                .unwrap();
            for r in &f[8..] {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                if let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>())
                    && (a..=b).contains(&slot)
                {
                    return port;
                }
            }
        }
        panic!("no owner for slot {slot}:\n{nodes}");
    }
}

impl Cluster {
    /// Starts node `port` (again: a node killed earlier rejoins with its nodes.conf) with the flags
    /// scripts/cluster.sh gives its nodes. False when it does not answer within 10 s, or when the server
    /// answering on `port` is not this node.
    pub fn start_node(&self, port: u16) -> bool {
        let d = self.dir.join(port.to_string());
        std::fs::create_dir_all(&d).unwrap();
        let path = |f: &str| d.join(f).to_str().unwrap().to_string();
        let started = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes"])
            // A replica stays with the master it was added to (no migration to a master without one).
            .args(["--cluster-allow-replica-migration", "no"])
            .args(["--cluster-config-file", &path("nodes.conf")])
            .args(["--cluster-node-timeout", &self.node_timeout_ms.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "yes"])
            .args(["--dir", d.to_str().unwrap()])
            .args(["--pidfile", &path("redis.pid")])
            .args(["--logfile", &path("redis.log")])
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while started && std::time::Instant::now() < deadline {
            // The server answering must be this one: a parallel test can take a port between its
            // pick and this bind (then ours exits and theirs answers with their dir).
            let answer = self.cli(port, &["config", "get", "dir"]);
            if answer.lines().nth(1).is_some() {
                return super::reports_dir(&answer, &d);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }

    /// Starts an empty master and adds it to the cluster (`redis-cli --cluster add-node`); it owns
    /// no slot until [`Cluster::reshard`] gives it some. Returns its port.
    pub fn add_master(&mut self) -> u16 {
        for _ in 0..5 {
            let port = self.new_port();
            if !self.start_node(port) {
                continue;
            }
            let out = Command::new("redis-cli")
                .args(["--cluster", "add-node"])
                .arg(format!("127.0.0.1:{port}"))
                .arg(format!("127.0.0.1:{}", self.ports[0]))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "add-node {port}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            self.ports.push(port);
            // Known to every node, and its own view complete, before it takes slots.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let id = self.node_id(port);
            loop {
                let known = self.ports.iter().all(|&p| {
                    self.cli(p, &["cluster", "nodes"])
                        .lines()
                        .any(|l| l.starts_with(&id) && !l.contains("handshake"))
                });
                let ok = self
                    .cli(port, &["cluster", "info"])
                    .contains("cluster_state:ok");
                if known && ok {
                    return port;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "node {port} did not join the cluster"
                );
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        panic!("could not start a node to add");
    }

    /// A port for a new node: free, and below 22768 so its cluster bus port (+10000) stays below the
    /// ephemeral range, as the script's ports do.
    fn new_port(&self) -> u16 {
        loop {
            let p = 20000 + free_port() % 2700;
            let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
            if free(p) && free(p + 10000) && !self.ports.contains(&p) {
                return p;
            }
        }
    }

    /// Starts `count` nodes and makes each a replica of `master` (CLUSTER MEET, then CLUSTER
    /// REPLICATE once it knows the master, all side by side); returns their ports once all are in sync.
    pub fn add_replicas(&mut self, master: u16, count: usize) -> Vec<u16> {
        let id = self.node_id(master);
        let mut added = Vec::new();
        while added.len() < count {
            let port = self.new_port();
            if self.start_node(port) {
                self.ports.push(port);
                added.push(port);
                let seed = self.ports[0].to_string();
                assert_eq!(
                    self.cli(port, &["cluster", "meet", "127.0.0.1", &seed]),
                    "OK"
                );
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut pending = added.clone();
        while !pending.is_empty() {
            pending.retain(|&p| self.cli(p, &["cluster", "replicate", &id]) != "OK");
            assert!(
                std::time::Instant::now() < deadline,
                "{pending:?} never learned of {master}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        for &p in &added {
            while self.replication(p, "master_link_status") != "up" {
                assert!(
                    std::time::Instant::now() < deadline,
                    "replica {p} did not sync"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        added
    }

    /// Moves `slots` slots (and their keys) from master `from` to master `to` with
    /// `redis-cli --cluster reshard`.
    pub fn reshard(&self, from: u16, to: u16, slots: u32) {
        let out = Command::new("redis-cli")
            .args(["--cluster", "reshard"])
            .arg(format!("127.0.0.1:{}", self.ports[0]))
            .args(["--cluster-from", &self.node_id(from)])
            .args(["--cluster-to", &self.node_id(to)])
            .args(["--cluster-slots", &slots.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "reshard {from} -> {to}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Calls of `command` (lower case) that node `port` counted.
    /// The replicas (every node not a master), once each is in sync and listed by `CLUSTER SLOTS`
    /// (a replica is listed once it has replicated something: the wait writes a few keys).
    pub fn listed_replicas(&self) -> Vec<u16> {
        let (masters, _) = self.roles(self.ports[0]);
        let replicas: Vec<u16> = self
            .ports
            .iter()
            .copied()
            .filter(|p| !masters.contains(p))
            .collect();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while replicas
            .iter()
            .any(|&r| self.replication(r, "master_link_status") != "up")
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the replicas did not sync"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        for k in 0..100 {
            self.cli(self.ports[0], &["-c", "set", &format!("warm{k}"), "x"]);
        }
        let listed = |slots: String| {
            replicas
                .iter()
                .all(|r| slots.lines().any(|l| l == r.to_string()))
        };
        while !listed(self.cli(self.ports[0], &["cluster", "slots"])) {
            assert!(
                std::time::Instant::now() < deadline,
                "CLUSTER SLOTS does not list the replicas"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        replicas
    }

    pub fn calls_on(&self, port: u16, command: &str) -> u64 {
        parse_commandstats(&self.cli(port, &["info", "commandstats"]))
            .get(command)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .args(["stop", self.dir.to_str().unwrap()])
            .output();
    }
}
