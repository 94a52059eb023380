//! Reads a Redis Cluster's layout from a server over a blocking control connection: the slot map, each
//! master's address, and each master's configuration for the report header.

use crate::net::ConnError;
use crate::net::control::{ControlClient, Wait};
use crate::net::target::{Setup, Target};
use crate::net::tls::TlsClient;
use crate::protocol::cluster::{ClusterError, SlotMap};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Why the cluster's layout could not be read: the connection, or the reply.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(transparent)]
    Conn(#[from] ConnError),
}

/// Reads the cluster's layout over a blocking control connection to `target` (with the masters'
/// replicas when the connections are to read from them), waiting as `wait` says.
pub fn discover(
    target: &Target,
    tls: Option<&TlsClient>,
    setup: &Setup,
    wait: &Wait,
) -> Result<SlotMap, DiscoveryError> {
    let mut c = ControlClient::connect_with(target, tls, setup, wait)?;
    let v = c.command(&[b"CLUSTER", b"SLOTS"])?;
    let seed = match target {
        Target::Tcp { addr, .. } => *addr,
        // Through a unix socket the node's own address is unknown; loopback is where such a node runs.
        Target::Unix(_) => SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    // Reads from replicas (`--rfr`, whose connections send READONLY) need them in the map.
    let read = if setup.readonly {
        SlotMap::with_replicas
    } else {
        SlotMap::from_cluster_slots
    };
    Ok(read(&v, seed, &target.display(), &resolve_node)?)
}

/// `save` and `appendonly` of one master, for the report header.
#[derive(Debug, Clone, Default)]
pub struct NodeConfig {
    pub save: Option<String>,
    pub appendonly: Option<String>,
}

/// Each master's address, in node order.
pub fn master_targets(map: &SlotMap) -> Vec<Target> {
    map.masters()
        .into_iter()
        .map(|i| {
            let n = &map.nodes[i as usize];
            Target::Tcp {
                host: n.addr.ip().to_string(),
                port: n.addr.port(),
                addr: n.addr,
            }
        })
        .collect()
}

/// Reads each master's `save` and `appendonly` (left empty for a master that refuses CONFIG or
/// cannot be reached), waiting as `wait` says: a master that does not answer within its bound
/// ([`ConnError::NoReply`]) and a stop ([`ConnError::Stopped`]) are errors.
pub fn node_configs(
    map: &SlotMap,
    tls: Option<&TlsClient>,
    setup: &Setup,
    wait: &Wait,
) -> Result<Vec<NodeConfig>, ConnError> {
    let fatal = |e: &ConnError| matches!(e, ConnError::NoReply { .. } | ConnError::Stopped);
    let mut configs = Vec::new();
    for target in master_targets(map) {
        let mut c = match ControlClient::connect_with(&target, tls, setup, wait) {
            Ok(c) => c,
            Err(e) if fatal(&e) => return Err(e),
            Err(_) => {
                configs.push(NodeConfig::default());
                continue;
            }
        };
        let mut get = |name| match c.config_get(name) {
            Err(e) if fatal(&e) => Err(e),
            other => Ok(other.ok().flatten()),
        };
        configs.push(NodeConfig {
            save: get("save")?,
            appendonly: get("appendonly")?,
        });
    }
    Ok(configs)
}

/// Resolves `host:port` as the cluster names a node; the blocking resolver runs only for names that are
/// not IP addresses (hostnames announced with `cluster-announce-hostname`).
pub fn resolve_node(host: &str, port: u16) -> Option<SocketAddr> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, port));
    }
    (host, port).to_socket_addrs().ok()?.next()
}
