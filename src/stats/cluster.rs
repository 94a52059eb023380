//! The counters of a `--cluster` test: each master's share, redirects and failovers, merged across executors.

use crate::stats::histogram::new_histogram;
use hdrhistogram::Histogram;
use std::cmp::Ordering;

/// One master's share of a cluster test.
#[derive(Debug, Clone)]
pub struct NodeStats {
    /// `ip:port` of the master.
    pub name: String,
    /// Requests this master answered (error replies included).
    pub completed: u64,
    /// Latency of those replies, in nanoseconds.
    pub hist: Histogram<u64>,
}

/// A cluster test's per-node figures and redirect counts.
#[derive(Debug, Clone, Default)]
pub struct ClusterStats {
    /// One entry per master that answered at least once (or was known at the start).
    pub nodes: Vec<NodeStats>,
    /// `MOVED` replies received (each request was resent to the new owner).
    pub moved: u64,
    /// `ASK` replies received (each request was resent after ASKING).
    pub ask: u64,
    /// `TRYAGAIN` / `CLUSTERDOWN` replies and lost connections that made a request wait and retry.
    pub retries: u64,
    /// Replies received in each second of the test (index 0: the first second).
    pub per_second: Vec<u64>,
    /// Masters lost during the test, and who answered for their slots afterwards: one entry per loss
    /// (a node lost twice is listed twice), in the order they happened.
    pub failovers: Vec<Failover>,
}

/// A master whose connections were lost during a test, and the first reply for one of its slots from
/// another node afterwards (its promoted replica, or whichever master took the slots).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Failover {
    /// `ip:port` of the lost master.
    pub node: String,
    /// Seconds into the test when a connection to it was first lost (or refused).
    pub lost_s: f64,
    /// The node that answered for its slots first afterwards, if any did.
    pub new_master: Option<String>,
    /// Seconds into the test of that first answer.
    pub answered_s: Option<f64>,
}

impl Failover {
    /// Seconds from the loss to the first answer from another node.
    pub fn recovery_s(&self) -> Option<f64> {
        self.answered_s.map(|a| (a - self.lost_s).max(0.0))
    }
}

impl ClusterStats {
    /// The entry of node `name`, created when missing.
    pub fn node_mut(&mut self, name: &str, sigfig: u8) -> &mut NodeStats {
        let i = match self.nodes.iter().position(|n| n.name == name) {
            Some(i) => i,
            None => {
                self.nodes.push(NodeStats {
                    name: name.to_string(),
                    completed: 0,
                    hist: new_histogram(sigfig),
                });
                self.nodes.len() - 1
            }
        };
        &mut self.nodes[i]
    }

    /// Folds another executor's figures into these (nodes matched by name).
    pub fn merge(&mut self, other: &ClusterStats) {
        self.moved += other.moved;
        self.ask += other.ask;
        self.retries += other.retries;
        if self.per_second.len() < other.per_second.len() {
            self.per_second.resize(other.per_second.len(), 0);
        }
        for (a, b) in self.per_second.iter_mut().zip(&other.per_second) {
            *a += b;
        }
        for f in &other.failovers {
            // The same loss seen by two executors: the same node, lost before either saw an answer.
            let same = |m: &&mut Failover| {
                m.node == f.node
                    && m.lost_s <= f.answered_s.unwrap_or(f64::INFINITY)
                    && f.lost_s <= m.answered_s.unwrap_or(f64::INFINITY)
            };
            match self.failovers.iter_mut().find(same) {
                Some(m) => {
                    m.lost_s = m.lost_s.min(f.lost_s);
                    if let Some(a) = f.answered_s
                        && m.answered_s.is_none_or(|b| a < b)
                    {
                        m.answered_s = Some(a);
                        m.new_master = f.new_master.clone();
                    }
                }
                None => self.failovers.push(f.clone()),
            }
        }
        self.failovers
            .sort_by(|a, b| a.lost_s.partial_cmp(&b.lost_s).unwrap_or(Ordering::Equal));
        for n in &other.nodes {
            match self.nodes.iter_mut().find(|m| m.name == n.name) {
                Some(m) => {
                    m.completed += n.completed;
                    m.hist.add(&n.hist).expect("histograms share their bounds");
                }
                None => self.nodes.push(n.clone()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(node: &str, lost_s: f64, answered_s: Option<f64>) -> Failover {
        Failover {
            node: node.into(),
            lost_s,
            new_master: answered_s.map(|_| "127.0.0.1:7004".into()),
            answered_s,
        }
    }

    #[test]
    fn a_node_lost_twice_stays_two_losses_across_executors() {
        let a = "127.0.0.1:7001";
        let mut one = ClusterStats {
            failovers: vec![loss(a, 2.0, Some(3.5)), loss(a, 8.0, Some(9.5))],
            ..ClusterStats::default()
        };
        // The other executor saw the first loss a little later, and no answer for the second yet.
        let other = ClusterStats {
            failovers: vec![loss(a, 2.1, Some(3.4)), loss(a, 8.2, None)],
            ..ClusterStats::default()
        };
        one.merge(&other);
        assert_eq!(
            one.failovers,
            vec![loss(a, 2.0, Some(3.4)), loss(a, 8.0, Some(9.5))]
        );
    }
}
