//! The server's side of a test: `INFO` before, during and after it, over the blocking control connection.
//!
//! Commands processed and CPU seconds are deltas over the test; CPU per request is what makes
//! io-threads and Redis-vs-Valkey comparisons readable. Nothing here touches the hot path: the watch
//! samples `INFO clients` from the main thread while the executors run: once as soon as every
//! connection is open, then on each progress tick (every 250 ms).

use crate::net::control::ControlClient;
use crate::net::target::{Setup, Target};
use crate::protocol::resp::Value;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::time::Duration;

/// How long INFO may take before and after a test.
const INFO_WAIT: Duration = Duration::from_secs(1);
/// How long INFO may take while a test runs or after a stop: the main thread must stay responsive.
const SHORT_INFO_WAIT: Duration = Duration::from_millis(250);
/// How many `INFO clients` one sample may take while the count of connected clients still rises.
const MAX_RISING_SAMPLES: usize = 8;

/// The figures of one `INFO` reply that the view needs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerSnapshot {
    pub total_commands_processed: u64,
    pub used_cpu_user: f64,
    pub used_cpu_sys: f64,
    pub used_memory: u64,
    pub connected_clients: u64,
}

impl ServerSnapshot {
    /// Reads the fields from an `INFO` text; `None` when a field the view needs is missing.
    pub fn parse(info: &str) -> Option<ServerSnapshot> {
        let field = |name: &str| {
            info.lines().find_map(|l| {
                l.strip_prefix(name)
                    .and_then(|r| r.strip_prefix(':'))
                    .map(str::trim)
            })
        };
        Some(ServerSnapshot {
            total_commands_processed: field("total_commands_processed")?.parse().ok()?,
            used_cpu_user: field("used_cpu_user")?.parse().ok()?,
            used_cpu_sys: field("used_cpu_sys")?.parse().ok()?,
            used_memory: field("used_memory")?.parse().ok()?,
            connected_clients: field("connected_clients")?.parse().ok()?,
        })
    }
}

/// What the server did during one test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerView {
    /// `total_commands_processed` after minus before, less ringbench's own INFO commands: the requests
    /// plus any per-connection setup (AUTH, SELECT, HELLO), and other clients' commands if there were any.
    pub commands_processed: u64,
    /// `used_cpu_user` after minus before, in seconds.
    pub cpu_user_s: f64,
    /// `used_cpu_sys` after minus before, in seconds.
    pub cpu_sys_s: f64,
    /// Server CPU microseconds (user + sys) per completed request; null without completed requests.
    pub cpu_us_per_request: Option<f64>,
    pub used_memory_before: u64,
    pub used_memory_after: u64,
    /// Connected clients before the test (ringbench's control connection included).
    pub connected_clients_before: u64,
    /// The most connected clients seen while the test ran: sampled once every connection is open, then
    /// every 250 ms (before and after only when no sample answered).
    pub connected_clients_peak: u64,
    pub connected_clients_after: u64,
    /// `--cluster`: each master's own view (the figures above are their sums), in node order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeView>,
}

/// One master's side of a cluster test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    /// `ip:port` of the node: a master, or a replica that served reads (`--rfr`).
    pub node: String,
    /// True for a replica (it served reads under `--rfr`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replica: bool,
    #[serde(flatten)]
    pub view: ServerView,
}

impl ServerView {
    /// The sum of every master's view; `completed` is the test's requests over all of them.
    pub fn sum(nodes: Vec<NodeView>, completed: u64) -> ServerView {
        let mut t = ServerView::default();
        for n in &nodes {
            let v = &n.view;
            t.commands_processed += v.commands_processed;
            t.cpu_user_s += v.cpu_user_s;
            t.cpu_sys_s += v.cpu_sys_s;
            t.used_memory_before += v.used_memory_before;
            t.used_memory_after += v.used_memory_after;
            t.connected_clients_before += v.connected_clients_before;
            t.connected_clients_peak += v.connected_clients_peak;
            t.connected_clients_after += v.connected_clients_after;
        }
        t.cpu_us_per_request = (completed > 0).then(|| t.cpu_s() * 1e6 / completed as f64);
        t.nodes = nodes;
        t
    }

    /// Server CPU seconds, user plus system.
    pub fn cpu_s(&self) -> f64 {
        self.cpu_user_s + self.cpu_sys_s
    }

    /// The lines printed under the summary in normal mode (each with its newline).
    pub fn summary_text(&self) -> String {
        let mut s = String::new();
        if self.nodes.is_empty() {
            s.push_str("  server side (INFO before and after the test):\n");
        } else {
            let replicas = self.nodes.iter().filter(|n| n.replica).count();
            let masters = self.nodes.len() - replicas;
            let _ = match replicas {
                0 => writeln!(
                    s,
                    "  server side (INFO before and after the test, summed over {masters} masters):"
                ),
                r => writeln!(
                    s,
                    "  server side (INFO before and after the test, summed over {masters} masters and {r} replicas):"
                ),
            };
        }
        let per = match self.cpu_us_per_request {
            Some(us) => format!("{us:.3} usec per request"),
            None => "no requests".into(),
        };
        let _ = writeln!(
            s,
            "    commands processed: {}, CPU {:.3} s (user {:.3}, sys {:.3}), {per}",
            self.commands_processed,
            self.cpu_s(),
            self.cpu_user_s,
            self.cpu_sys_s
        );
        let _ = writeln!(
            s,
            "    memory used: {} -> {}, connected clients: {} before, {} peak, {} after",
            human_bytes(self.used_memory_before),
            human_bytes(self.used_memory_after),
            self.connected_clients_before,
            self.connected_clients_peak,
            self.connected_clients_after
        );
        for n in &self.nodes {
            let v = &n.view;
            let per = match v.cpu_us_per_request {
                Some(us) => format!("{us:.3} usec per request"),
                None => "no requests".into(),
            };
            let _ = writeln!(
                s,
                "    {} {}: commands processed: {}, CPU {:.3} s, {per}",
                if n.replica { "replica" } else { "master" },
                n.node,
                v.commands_processed,
                v.cpu_s()
            );
        }
        s
    }
}

/// The watches of a run: the server's, or with `--cluster` one per node of the cluster.
///
/// A cluster's nodes are read (`CLUSTER NODES`) when each test begins and on each sample, so a master
/// added or promoted during the run is watched too: from the test's start when it was in the cluster
/// then (a replica, or a master with no slots yet), else from when it was first seen. The view sums
/// every node that was a master serving slots at some point of the test, or answered its requests.
pub struct Watches {
    watches: Vec<Watched>,
    /// `--cluster`: how a node found later is watched (TLS, setup, connect timeout).
    cluster: Option<NewWatch>,
}

struct Watched {
    /// The node's address (`ip:port`, as the per-node figures name it).
    name: String,
    watch: ServerWatch,
    /// Seen serving slots as a master during the current test.
    master: bool,
}

struct NewWatch {
    tls: Option<crate::net::tls::TlsClient>,
    setup: Setup,
    connect_timeout: Duration,
}

impl Watches {
    /// No server watched (memtier's personality: the server sees only the benchmark's traffic).
    pub fn none() -> Self {
        Watches {
            watches: Vec::new(),
            cluster: None,
        }
    }

    /// One server.
    pub fn one(w: ServerWatch) -> Self {
        Watches {
            watches: vec![Watched {
                name: String::new(),
                watch: w,
                master: true,
            }],
            cluster: None,
        }
    }

    /// A cluster's masters as read at the start, each with its address; the other nodes are found
    /// with `CLUSTER NODES` and watched over connections set up with `tls`, `setup`, `connect_timeout`.
    pub fn cluster(
        masters: Vec<(String, ServerWatch)>,
        tls: Option<&crate::net::tls::TlsClient>,
        setup: &Setup,
        connect_timeout: Duration,
    ) -> Self {
        Watches {
            watches: masters
                .into_iter()
                .map(|(name, watch)| Watched {
                    name,
                    watch,
                    master: true,
                })
                .collect(),
            cluster: Some(NewWatch {
                tls: tls.cloned(),
                setup: setup.clone(),
                connect_timeout,
            }),
        }
    }

    /// Reads the cluster's nodes through the first watch that answers, marks the masters that serve
    /// slots and starts watching the nodes not yet watched (`begun`: their "before" is taken now).
    fn discover(&mut self, begun: bool) {
        let Some(new) = &self.cluster else {
            return;
        };
        let Some((text, via)) = self
            .watches
            .iter_mut()
            .find_map(|w| Some((w.watch.cluster_nodes()?, w.watch.target.clone())))
        else {
            return;
        };
        for node in crate::protocol::cluster::parse_cluster_nodes(&text) {
            let name = node.name();
            if let Some(w) = self.watches.iter_mut().find(|w| w.name == name) {
                w.master |= node.serving;
                continue;
            }
            let addr = if node.host.is_empty() {
                match &via {
                    Target::Tcp { addr, .. } => {
                        Some(std::net::SocketAddr::new(addr.ip(), node.port))
                    }
                    Target::Unix(_) => None,
                }
            } else {
                crate::net::discovery::resolve_node(&node.host, node.port)
            };
            let Some(addr) = addr else { continue };
            let target = Target::Tcp {
                host: addr.ip().to_string(),
                port: addr.port(),
                addr,
            };
            let mut watch = ServerWatch::new(
                None,
                &target,
                new.tls.as_ref(),
                &new.setup,
                new.connect_timeout,
            );
            if begun {
                watch.begin();
            }
            self.watches.push(Watched {
                name,
                watch,
                master: node.serving,
            });
        }
    }

    fn each(&mut self) -> impl Iterator<Item = &mut ServerWatch> {
        self.watches.iter_mut().map(|w| &mut w.watch)
    }

    pub fn begin(&mut self) {
        self.each().for_each(ServerWatch::begin);
        if self.cluster.is_some() {
            // Masters as they are now; a node the last test saw as master but no longer is drops out.
            for w in self.watches.iter_mut() {
                w.master = false;
            }
            self.discover(true);
        }
    }

    pub fn sample(&mut self) {
        self.discover(true);
        self.each().for_each(ServerWatch::sample);
    }

    /// The test's view. `completed` is the test's total; `per_node` gives one master's share (cluster).
    /// A cluster view needs every master's figures: with one missing, the sum would mislead.
    pub fn end(
        &mut self,
        completed: u64,
        per_node: impl Fn(&str) -> u64,
        stopped: bool,
    ) -> Option<ServerView> {
        if self.cluster.is_none() {
            return self.watches.first_mut()?.watch.end(completed, stopped);
        }
        self.discover(true);
        let mut nodes = Vec::with_capacity(self.watches.len());
        let mut all = true;
        for w in self.watches.iter_mut() {
            let share = per_node(&w.name);
            if !(w.master || share > 0) {
                // A replica all along: not part of the sum (its "before" is dropped).
                w.watch.before = None;
                continue;
            }
            match w.watch.end(share, stopped) {
                Some(view) => nodes.push(NodeView {
                    node: w.name.clone(),
                    replica: !w.master,
                    view,
                }),
                None => all = false,
            }
        }
        all.then(|| ServerView::sum(nodes, completed))
    }
}

/// Bytes as INFO's `used_memory_human` writes them (K, M, G with two decimals).
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}G", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.2}M", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else {
        format!("{b}B")
    }
}

/// Watches the server across one test through a control connection.
///
/// An INFO that fails or times out (a stalled or paused server) drops the connection: that test has no
/// server view, and the next test reconnects. A reply without the needed fields (not Redis or Valkey)
/// turns the view off for the run.
pub struct ServerWatch {
    ctl: Option<ControlClient>,
    target: Target,
    tls: Option<crate::net::tls::TlsClient>,
    setup: Setup,
    connect_timeout: Duration,
    before: Option<ServerSnapshot>,
    /// The most connected clients sampled during the test; `None` before the first sample.
    peak_clients: Option<u64>,
    /// INFO commands sent since `before` (the server counts them in total_commands_processed).
    info_sent: u64,
    /// Set once INFO fails or lacks the fields: the server does not offer this view.
    unavailable: bool,
    /// The server has room for the test's connections only without this one: the watch closes its
    /// connection once the "before" snapshot is taken and connects again for the "after" one
    /// (connected clients are then not sampled during the test: the peak is the clients there before,
    /// less this one, plus the test's `clients`).
    yields: bool,
    clients: u64,
}

impl ServerWatch {
    /// A watch over `ctl`; `target`, `tls`, `setup` and `connect_timeout` serve to reconnect after a failure.
    pub fn new(
        ctl: Option<ControlClient>,
        target: &Target,
        tls: Option<&crate::net::tls::TlsClient>,
        setup: &Setup,
        connect_timeout: Duration,
    ) -> Self {
        ServerWatch {
            ctl,
            target: target.clone(),
            tls: tls.cloned(),
            setup: setup.clone(),
            connect_timeout,
            before: None,
            peak_clients: None,
            info_sent: 0,
            unavailable: false,
            yields: false,
            clients: 0,
        }
    }

    /// Makes the watch give its connection's slot to the test's `clients` connections (see
    /// [`Self::yields`]).
    pub fn yield_slot(&mut self, clients: u64) {
        self.yields = true;
        self.clients = clients;
    }

    fn reconnect(&mut self) {
        self.ctl = ControlClient::connect(
            &self.target,
            self.tls.as_ref(),
            &self.setup,
            self.connect_timeout,
        )
        .ok();
    }

    fn info(&mut self, section: Option<&str>, wait: Duration) -> Option<ServerSnapshot> {
        if self.unavailable {
            return None;
        }
        let ctl = self.ctl.as_mut()?;
        ctl.set_read_timeout(wait);
        let reply = match section {
            Some(s) => ctl.command(&[b"INFO", s.as_bytes()]),
            None => ctl.command(&[b"INFO"]),
        };
        self.info_sent += 1;
        let text = match &reply {
            Ok(v) if !matches!(v, Value::Error(_)) => v.as_str(),
            Ok(_) => None,
            Err(_) => {
                // A late reply would answer the next command: this connection is done.
                self.ctl = None;
                self.before = None;
                return None;
            }
        };
        if section.is_some() {
            // A partial INFO: only connected_clients is needed.
            let clients = text.and_then(|t| {
                t.lines().find_map(|l| {
                    l.strip_prefix("connected_clients:")
                        .and_then(|v| v.trim().parse().ok())
                })
            });
            return clients.map(|c| ServerSnapshot {
                connected_clients: c,
                ..ServerSnapshot::default()
            });
        }
        let snap = text.and_then(ServerSnapshot::parse);
        if snap.is_none() {
            self.unavailable = true;
        }
        snap
    }

    /// `CLUSTER NODES` over this watch's connection (counted as its own command, like INFO);
    /// `None` when it has no connection or the node does not answer.
    fn cluster_nodes(&mut self) -> Option<String> {
        if self.unavailable {
            return None;
        }
        let ctl = self.ctl.as_mut()?;
        ctl.set_read_timeout(SHORT_INFO_WAIT);
        let reply = ctl.command(&[b"CLUSTER", b"NODES"]);
        if self.before.is_some() {
            self.info_sent += 1;
        }
        match reply {
            Ok(Value::Error(_)) => None,
            Ok(v) => v.as_str().map(str::to_string),
            Err(_) => {
                self.ctl = None;
                self.before = None;
                None
            }
        }
    }

    /// Takes the "before" snapshot (reconnecting first when a previous INFO failed).
    pub fn begin(&mut self) {
        // Twice at most: an idle control connection may have been closed by the server's `timeout`
        // (a long --start-at wait, a long previous test).
        for _ in 0..2 {
            if self.ctl.is_none() && !self.unavailable {
                self.reconnect();
            }
            self.before = self.info(None, INFO_WAIT);
            if self.before.is_some() || self.ctl.is_some() {
                break;
            }
        }
        self.info_sent = 0;
        self.peak_clients = None;
        if self.yields
            && let Some(ctl) = self.ctl.take()
        {
            ctl.close();
        }
    }

    /// Samples connected clients; called from the progress tick (the first once every connection of
    /// the test is open). A connection is open on the client's side before the server has accepted
    /// it, so while the count still rises from one sample to the next it is sampled again at once
    /// (each INFO waits for a turn of the server's event loop, in which it accepts what is pending).
    pub fn sample(&mut self) {
        if self.before.is_none() {
            return;
        }
        let mut last = None;
        for _ in 0..MAX_RISING_SAMPLES {
            let Some(s) = self.info(Some("clients"), SHORT_INFO_WAIT) else {
                return;
            };
            self.peak_clients = Some(self.peak_clients.unwrap_or(0).max(s.connected_clients));
            if last.is_some_and(|l| s.connected_clients <= l) {
                return;
            }
            last = Some(s.connected_clients);
        }
    }

    /// Takes the "after" snapshot and returns the view of the test, given the requests it completed.
    /// `stopped` (a signal) allows only a short wait: the report must not hang on a stalled server.
    pub fn end(&mut self, completed: u64, stopped: bool) -> Option<ServerView> {
        let before = self.before.take()?;
        let mut own = self.info_sent + 1; // the "before" INFO is counted once it has run
        if self.yields && self.ctl.is_none() {
            // Its set-up commands (AUTH, SELECT, HELLO) are counted too.
            self.reconnect();
            own += crate::net::setup_commands(&self.setup).len() as u64;
        }
        let wait = if stopped { SHORT_INFO_WAIT } else { INFO_WAIT };
        let after = self.info(None, wait)?;
        let cpu_user_s = (after.used_cpu_user - before.used_cpu_user).max(0.0);
        let cpu_sys_s = (after.used_cpu_sys - before.used_cpu_sys).max(0.0);
        let cpu_us = (cpu_user_s + cpu_sys_s) * 1e6;
        Some(ServerView {
            commands_processed: after
                .total_commands_processed
                .saturating_sub(before.total_commands_processed)
                .saturating_sub(own),
            cpu_user_s,
            cpu_sys_s,
            cpu_us_per_request: (completed > 0).then(|| cpu_us / completed as f64),
            used_memory_before: before.used_memory,
            used_memory_after: after.used_memory,
            connected_clients_before: before.connected_clients,
            connected_clients_peak: match self.peak_clients {
                Some(p) => p,
                None if self.yields => (before.connected_clients.saturating_sub(1) + self.clients)
                    .max(after.connected_clients),
                None => before.connected_clients.max(after.connected_clients),
            },
            connected_clients_after: after.connected_clients,
            nodes: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_needed_fields() {
        let info = "# Server\r\nredis_version:7.0.15\r\n# Clients\r\nconnected_clients:3\r\n\
                    # Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n\
                    # Stats\r\ntotal_commands_processed:42\r\n\
                    # CPU\r\nused_cpu_sys:0.5\r\nused_cpu_user:1.25\r\nused_cpu_sys_children:9\r\n";
        let s = ServerSnapshot::parse(info).unwrap();
        assert_eq!(s.total_commands_processed, 42);
        assert_eq!(s.connected_clients, 3);
        assert_eq!(s.used_memory, 1_048_576);
        assert_eq!((s.used_cpu_user, s.used_cpu_sys), (1.25, 0.5));
        assert!(ServerSnapshot::parse("connected_clients:3\r\n").is_none());
    }

    #[test]
    fn summary_lines() {
        let v = ServerView {
            commands_processed: 1000,
            cpu_user_s: 0.25,
            cpu_sys_s: 0.5,
            cpu_us_per_request: Some(750.0),
            used_memory_before: 1024 * 1024,
            used_memory_after: 3 * 1024 * 1024,
            connected_clients_before: 1,
            connected_clients_peak: 51,
            connected_clients_after: 1,
            nodes: Vec::new(),
        };
        let t = v.summary_text();
        assert!(
            t.contains("commands processed: 1000, CPU 0.750 s (user 0.250, sys 0.500), 750.000 usec per request"),
            "{t}"
        );
        assert!(
            t.contains(
                "memory used: 1.00M -> 3.00M, connected clients: 1 before, 51 peak, 1 after"
            ),
            "{t}"
        );
    }
}
