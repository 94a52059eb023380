//! The run session the apps share: opening a run against its server (the machine's limits, the control
//! connection, the report's header, the server's room for `-c`, a cluster's masters), the server's view
//! of each test, and the parts of one measured phase both the benchmark's tests and capacity's steps
//! are made of (the warmup, the server's view of the phase set on its result).

use crate::app::outcome::RunError;
use crate::config::{self, Config, cpus, limits};
use crate::engine::{self, RunControl, ring};
use crate::net::control;
use crate::net::discovery::{self, DiscoveryError};
use crate::net::target::Target;
use crate::protocol::cluster::ClusterError;
use crate::report;
use crate::stats::{TestResult, server_view};
use crate::workload::TestSpec;
use std::io::Write;
use std::sync::Arc;

/// What opening a run found besides the report's header: the control connection, with `--cluster` the
/// masters, and whether the control connection must give its slot to each test (the server has room for
/// exactly `-c`).
pub(crate) struct Opened {
    pub(crate) ctl: control::ControlClient,
    pub(crate) masters: Vec<Target>,
    pub(crate) yield_slot: bool,
    /// How many of the run's servers are on this machine: the target, or a cluster's local masters
    /// (the phases' `engine::Budget::local_servers`).
    pub(crate) local_servers: usize,
}

/// The machine's side: file and port limits, and io_uring.
pub(crate) fn prepare(cfg: &Config) -> Result<(), RunError> {
    limits::prepare(cfg.engine.load.clients, cfg.engine.connect.threads)?;
    if matches!(cfg.engine.target, Target::Tcp { .. }) && !cfg.engine.connect.cluster {
        limits::local_ports(cfg.engine.load.clients)?;
    }
    ring::probe()?;
    Ok(())
}

/// The control connection and what it reads for the report's header: the server's settings, its room
/// for the run's clients (only if the control connection yields its slot), and with `--cluster` the
/// masters (then `cfg` learns how many of them are on this machine). Each reply must be whole within
/// `--timeout` (else `--connect-timeout`): the first that is not ends the run with
/// [`ConnError::NoReply`](crate::net::ConnError::NoReply); a stop of `control` ends a wait with
/// [`ConnError::Stopped`](crate::net::ConnError::Stopped).
pub(crate) fn connect(
    cfg: &Config,
    control: &RunControl,
) -> Result<(Opened, report::Header), RunError> {
    let wait = control::Wait {
        connect: cfg.engine.connect.connect_timeout,
        reply: cfg
            .engine
            .connect
            .timeout
            .unwrap_or(cfg.engine.connect.connect_timeout),
        stop: Some(control.stop.clone()),
    };
    let mut ctl = control::ControlClient::connect_with(
        &cfg.engine.target,
        cfg.engine.tls.as_ref(),
        &cfg.engine.setup,
        &wait,
    )?;
    let mut header = report::Header {
        clients: cfg.engine.load.clients,
        data_size: cfg.engine.load.data_size,
        data_min: Some(cfg.engine.pace.shape.value.min),
        keepalive: cfg.engine.load.keepalive,
        // One question is enough to learn that the server refuses us (memtier's personality asks no more).
        save: ctl.config_get("save")?,
        appendonly: match cfg.results.memtier {
            None => ctl.config_get("appendonly")?,
            Some(_) => None,
        },
        multi_thread: cfg.engine.connect.multi_thread,
        threads: cfg.engine.connect.threads.min(cfg.engine.load.clients),
        threads_note: threads_note(cfg),
        tls: cfg.engine.tls.as_ref().map(|t| t.checks.clone()),
        cluster_nodes: None,
        expiry: cfg.engine.pace.shape.expiry.map(|e| (e.min, e.max)),
        replay: cfg
            .tests
            .iter()
            .find_map(|t| t.replay.as_deref())
            .map(config::suite::replay::describe),
    };
    // A server that wants a password (or has no room for another client) would answer every request
    // of the run with an error: stop here with its own message.
    if let Some(msg) = ctl.refused.take() {
        return Err(RunError::Server(msg));
    }
    let yield_slot =
        if cfg.engine.connect.cluster || cfg.engine.load.idle || cfg.results.memtier.is_some() {
            false
        } else {
            check_room(&mut ctl, cfg.engine.load.clients as u64)?
        };
    let mut masters = Vec::new();
    let mut local_servers = usize::from(cfg.engine.target.is_local());
    if cfg.engine.connect.cluster {
        let (configs, targets) = cluster_header(cfg, &wait)?;
        header.cluster_nodes = Some(configs);
        local_servers = local_masters(&targets);
        masters = targets;
    }
    Ok((
        Opened {
            ctl,
            masters,
            yield_slot,
            local_servers,
        },
        header,
    ))
}

/// Checks that the server has room under its `maxclients` for `clients` connections (beside the
/// clients already there). Returns true when there is room only if the control connection gives its
/// slot up during each test; refuses the run, before its first test, when there is not even that.
fn check_room(ctl: &mut control::ControlClient, clients: u64) -> Result<bool, RunError> {
    let Some((max, connected)) = ctl.clients_room()? else {
        return Ok(false);
    };
    // The control connection is one of `connected`, and its slot can be given to the test.
    let room = max.saturating_sub(connected) + 1;
    if clients > room {
        return Err(RunError::NoRoom(format!(
            "the server has room for {room} connections (maxclients {max}, {connected} connected, ringbench's own included) and -c is {clients}: raise it with CONFIG SET maxclients, or lower -c"
        )));
    }
    Ok(clients == room)
}

/// The bracket after `threads: N` in the header: fewer executors than `--threads` asked (one per client
/// at most), and executors sharing cores. It belongs to the report, not to stderr.
fn threads_note(cfg: &Config) -> Option<String> {
    let ran = cfg.engine.connect.threads.min(cfg.engine.load.clients);
    let mut parts = Vec::new();
    if ran < cfg.engine.connect.threads {
        parts.push(format!(
            "{} asked, one per client",
            cfg.engine.connect.threads
        ));
    }
    if ran > 1 {
        let cores = match &cfg.engine.connect.cpus {
            Some(list) => list.len(),
            None => cpus::usable_cores().len(),
        };
        if cores > 0 && ran > cores {
            parts.push(format!(
                "sharing {cores} {}",
                if cores == 1 { "core" } else { "cores" }
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// How many of a cluster's masters run on this machine (a loopback address).
fn local_masters(masters: &[Target]) -> usize {
    masters.iter().filter(|t| t.is_local()).count()
}

/// Reads the cluster's masters for `--cluster`: their configuration for the header, their addresses
/// for the server view, and a check that `-c` gives every master at least one connection. Each
/// connection waits as `wait` says.
fn cluster_header(
    cfg: &Config,
    wait: &control::Wait,
) -> Result<(Vec<discovery::NodeConfig>, Vec<Target>), RunError> {
    let map = discovery::discover(
        &cfg.engine.target,
        cfg.engine.tls.as_ref(),
        &cfg.engine.setup,
        wait,
    )
    .map_err(|e| match e {
        DiscoveryError::Conn(c) => RunError::Conn(c),
        DiscoveryError::Cluster(e @ ClusterError::NotCluster { .. }) => RunError::NotCluster(e),
        DiscoveryError::Cluster(other) => RunError::Cluster(other),
    })?;
    let masters = map.masters().len();
    if cfg.engine.load.clients < masters {
        return Err(RunError::Usage(config::UsageError(format!(
            "invalid value '{}' for '-c': the cluster has {masters} masters and each needs at least one client",
            cfg.engine.load.clients
        ))));
    }
    // Each client connects to every master (and, reading from replicas, to their replicas too).
    let nodes = masters + map.replicas.iter().map(Vec::len).sum::<usize>();
    limits::cluster_files(cfg.engine.load.clients, nodes, cfg.engine.connect.threads)?;
    Ok((
        discovery::node_configs(&map, cfg.engine.tls.as_ref(), &cfg.engine.setup, wait)?,
        discovery::master_targets(&map),
    ))
}

/// The server's view of each test (INFO before and after); with `--cluster` of every master, each
/// watch connecting when its first test begins. It takes the control connection over, without its stop
/// handle: the view reads the server after a stopped test too, with short bounds of its own.
pub(crate) fn watch_server(cfg: &Config, opened: Opened) -> server_view::Watches {
    let Opened {
        mut ctl,
        masters,
        yield_slot,
        ..
    } = opened;
    ctl.unstoppable();
    let watch_of = |ctl, target: &Target| {
        server_view::ServerWatch::new(
            ctl,
            target,
            cfg.engine.tls.as_ref(),
            &cfg.engine.setup,
            cfg.engine.connect.connect_timeout,
        )
    };
    if masters.is_empty() {
        let mut w = watch_of(Some(ctl), &cfg.engine.target);
        if yield_slot {
            w.yield_slot(cfg.engine.load.clients as u64);
        }
        server_view::Watches::one(w)
    } else {
        drop(ctl);
        server_view::Watches::cluster(
            masters
                .iter()
                .map(|t| (t.display(), watch_of(None, t)))
                .collect(),
            cfg.engine.tls.as_ref(),
            &cfg.engine.setup,
            cfg.engine.connect.connect_timeout,
        )
    }
}

/// A phase's warmup, run with its own `budget` (its length, and the phase's rate: `None` is the closed
/// loop): the server sees it, its figures are dropped. Returns what it completed and its length in seconds, or `None` when the
/// run was stopped in it.
pub(crate) fn warm_up(
    cfg: &Arc<Config>,
    test: &TestSpec,
    budget: engine::Budget,
    control: &RunControl,
    stderr: &mut dyn Write,
) -> Result<Option<(u64, f64)>, RunError> {
    let w = engine::run_phase(&cfg.engine, test, budget, control, stderr, |_| {})?;
    if control.stopped() {
        return Ok(None);
    }
    Ok(Some((w.completed, w.elapsed().as_secs_f64())))
}

/// Ends the server's view of a measured phase and sets it on `result`: with `--cluster`, each master's
/// figures beside the requests the engine counted for it.
pub(crate) fn end_view(watch: &mut server_view::Watches, result: &mut TestResult, stopped: bool) {
    let per_node = |name: &str| {
        result.stats.cluster.as_ref().map_or(0, |c| {
            c.nodes
                .iter()
                .filter(|n| n.name == name)
                .map(|n| n.completed)
                .sum()
        })
    };
    let view = watch.end(result.stats.completed, per_node, stopped);
    result.server = view;
}
