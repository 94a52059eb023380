//! Open-loop pacing for `--rps` (latency from each request's intended send time, service time from its
//! actual send), and which requests are composed one at a time (varying values, mixes); the drivers
//! (`engine::ring`, `engine::cluster`) follow this schedule.
//!
//! Open loop, per connection: request `i` of connection `c` (of `C` in the whole run) is due at
//! `start + (c + i * C) / rps`, so the connections interleave into one even stream at the target rate.
//! A connection keeps up to `-P` requests in flight: while it has room, it sends each request when due and
//! meanwhile reads replies; when it has `-P` waiting, it only reads, and the requests that fall due
//! meanwhile are sent as soon as replies make room. Their latency still counts from when they were due, so
//! a stalled server shows its stall (no coordinated omission). One slow reply therefore holds back a
//! connection's schedule only once `-P` requests pile up behind it; `-c` and `-P` bound how many requests
//! can wait at once (`-c * -P`), which is what the report names when the target is missed.

use crate::config::Config;
use crate::stats::{PartStats, ShardStats, new_histogram};
use crate::workload::TestSpec;
use crate::workload::compose::Composer;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A request sent later than this after its intended time counts as late in the report.
pub(crate) const LATE: Duration = Duration::from_millis(1);

/// The open loop's wake-up grid: an executor wakes for due requests only at multiples of this from
/// its start, and sends every request that fell due since, so a request leaves at most this much
/// after its intended time (plus the kernel's wake-up delay) and one wake-up serves all the
/// requests due within it. Latency still counts from each request's intended time.
pub(crate) const QUANTUM: Duration = Duration::from_micros(20);

/// One connection's open-loop schedule.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    start: Instant,
    index: u64,
    conns: u64,
    ns_per_request: f64,
}

impl Pacing {
    /// The schedule of connection `index` of `conns`, sharing `rps` from `start`.
    pub fn new(start: Instant, index: usize, conns: usize, rps: f64) -> Pacing {
        Pacing {
            start,
            index: index as u64,
            conns: conns.max(1) as u64,
            ns_per_request: 1e9 / rps,
        }
    }

    /// When this connection's request number `i` is due.
    pub fn intended(&self, i: u64) -> Instant {
        let slot = self.index + i * self.conns;
        self.start + Duration::from_nanos((slot as f64 * self.ns_per_request) as u64)
    }
}

/// The composer a test runs with on the per-request path, or `None` for the fixed-layout fast path.
/// Open-loop runs always take the per-request path, compiling the test's own template if needed.
pub(crate) fn composer_for(cfg: &Config, test: &TestSpec) -> Option<Arc<Composer>> {
    match (&test.compose, cfg.run.shape.rps) {
        (Some(c), _) => Some(c.clone()),
        (None, Some(_)) => Some(Arc::new(Composer::new(
            &[(test.title.clone(), test.command.clone(), &test.template, 1)],
            cfg.run.keyspace.is_some(),
            cfg.run.shape.value,
            cfg.run.seed,
        ))),
        (None, None) => None,
    }
}

/// Adds the histograms a shard needs beyond the plain one: service time (open loop), one per mixed command.
pub(crate) fn prepare_stats(stats: &mut ShardStats, cfg: &Config, test: &TestSpec) {
    if cfg.run.shape.rps.is_some() {
        stats.service = Some(new_histogram(cfg.run.precision));
    }
    if let Some(c) = &test.compose
        && c.variants().len() > 1
    {
        stats.parts = c
            .variants()
            .iter()
            .map(|v| PartStats {
                title: v.title.clone(),
                hist: new_histogram(cfg.run.precision),
                completed: 0,
                errors: 0,
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_interleave_into_one_even_stream() {
        let t0 = Instant::now();
        let rps = 1000.0;
        let conns = 4;
        let mut all: Vec<u128> = (0..conns)
            .flat_map(|c| {
                let p = Pacing::new(t0, c, conns, rps);
                (0..250).map(move |i| p.intended(i).duration_since(t0).as_micros())
            })
            .collect();
        all.sort();
        assert_eq!(all.len(), 1000);
        for (j, t) in all.iter().enumerate() {
            assert_eq!(*t, j as u128 * 1000, "request {j}");
        }
    }
}
