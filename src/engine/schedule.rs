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

use crate::config::EngineSettings;
use crate::stats::{PartStats, ShardStats, new_histogram};
use crate::workload::TestSpec;
use crate::workload::compose::Composer;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
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
#[derive(Debug, Clone)]
pub struct Pacing {
    start: Instant,
    index: u64,
    conns: u64,
    ns_per_request: f64,
    /// `--replay`: when each of this connection's commands is due (nanoseconds from `start`), instead
    /// of the even stream.
    due: Option<Arc<[u64]>>,
    /// memtier's `--rate-limiting`: requests due together, every `burst * conns * ns_per_request`
    /// (0: the even stream).
    burst: u64,
}

impl Pacing {
    /// The schedule of connection `index` of `conns`, sharing `rps` from `start`.
    pub fn new(start: Instant, index: usize, conns: usize, rps: f64) -> Pacing {
        Pacing {
            start,
            index: index as u64,
            conns: conns.max(1) as u64,
            ns_per_request: 1e9 / rps,
            due: None,
            burst: 0,
        }
    }

    /// memtier_benchmark's `--rate-limiting RATE` for connection `index` of `conns`: bursts of
    /// `ceil(RATE / 50)` requests, `burst / RATE` seconds apart (about 50 a second), every connection's
    /// at the same moments, as memtier's connections' timers start together.
    pub fn bursts(start: Instant, index: usize, conns: usize, rate: u64) -> Pacing {
        let rate = rate.max(1);
        Pacing {
            start,
            index: index as u64,
            conns: conns.max(1) as u64,
            ns_per_request: 1e9 / (rate as f64 * conns.max(1) as f64),
            due: None,
            burst: rate.div_ceil(50),
        }
    }

    /// A replayed connection's schedule: its command `i` is due `due[i]` nanoseconds after `start`
    /// (past its last command, at the last one's time).
    pub fn replay(start: Instant, due: Arc<[u64]>) -> Pacing {
        Pacing {
            start,
            index: 0,
            conns: 1,
            ns_per_request: 0.0,
            due: Some(due),
            burst: 0,
        }
    }

    /// When this connection's request number `i` is due.
    pub fn intended(&self, i: u64) -> Instant {
        if let Some(d) = &self.due {
            let at = d.get(i as usize).or(d.last()).copied().unwrap_or(0);
            return self.start + Duration::from_nanos(at);
        }
        // memtier's bursts (`burst` 0: the even stream, each connection at its own offset).
        let slot = match self.burst {
            0 => self.index + i * self.conns,
            b => (i - i % b) * self.conns,
        };
        self.start + Duration::from_nanos((slot as f64 * self.ns_per_request) as u64)
    }

    /// How many of requests `from`, `from + 1`, ... (at most `limit` of them) are due before `end`:
    /// at the end of `--duration`, those a connection never sent. The schedule never goes back, so
    /// the first request due at `end` or later is found by doubling steps, then halving them.
    pub fn due_before(&self, from: u64, end: Instant, limit: u64) -> u64 {
        let due = |n: u64| n > 0 && self.intended(from + n - 1) < end;
        // Requests [from, from + n) are all due when the last of them is.
        let mut lo = 0u64;
        let mut step = 1u64;
        while step <= limit - lo && due(lo + step) {
            lo += step;
            step = step.saturating_mul(2);
        }
        // The first one not due is within (lo, lo + step].
        let mut hi = lo.saturating_add(step).min(limit);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if due(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }
}

/// Items of a driver (connections, clients) that wait for a moment, earliest first. Each item waits for
/// at most one moment: moving it leaves its old entry in the heap, skipped when it surfaces.
pub(crate) struct DueQueue {
    heap: BinaryHeap<Reverse<(Instant, u32)>>,
    at: Vec<Option<Instant>>,
}

impl DueQueue {
    pub(crate) fn new(items: usize) -> DueQueue {
        DueQueue {
            heap: BinaryHeap::with_capacity(items * 2),
            at: vec![None; items],
        }
    }

    /// Item `i` waits for `due` instead of what it waited for.
    pub(crate) fn set(&mut self, i: usize, due: Instant) {
        if self.at[i] != Some(due) {
            self.at[i] = Some(due);
            self.heap.push(Reverse((due, i as u32)));
        }
    }

    /// Item `i` waits for `due` unless it already waits for an earlier moment.
    pub(crate) fn set_earliest(&mut self, i: usize, due: Instant) {
        if self.at[i].is_none_or(|t| due < t) {
            self.set(i, due);
        }
    }

    /// Hands each item whose moment is at or before `now` to `f`, once, and forgets its moment.
    pub(crate) fn pop_due(&mut self, now: Instant, mut f: impl FnMut(usize)) {
        while let Some(&Reverse((t, i))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            let i = i as usize;
            if self.at[i] == Some(t) {
                self.at[i] = None;
                f(i);
            }
        }
    }

    /// Item `i` waits for nothing (its entry, if any, is skipped when it surfaces).
    pub(crate) fn forget(&mut self, i: usize) {
        self.at[i] = None;
    }

    /// The earliest moment an item still waits for (entries left by moved or forgotten items are
    /// dropped on the way).
    pub(crate) fn earliest(&mut self) -> Option<Instant> {
        while let Some(&Reverse((t, i))) = self.heap.peek() {
            if self.at[i as usize] == Some(t) {
                return Some(t);
            }
            self.heap.pop();
        }
        None
    }

    /// The earliest moment waited for (possibly an item's old one, which only wakes its driver early).
    pub(crate) fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|r| r.0.0)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// The composer a test runs with on the per-request path, or `None` for the fixed-layout fast path.
/// Open-loop phases (`rps`) always take the per-request path, compiling the test's own template if
/// needed.
pub(crate) fn composer_for(
    cfg: &EngineSettings,
    test: &TestSpec,
    rps: Option<f64>,
) -> Option<Arc<Composer>> {
    if test.replay.is_some() {
        // A replay sends its captured bytes (`Requests::Replay`), composed once at load.
        return None;
    }
    match (&test.compose, rps) {
        (Some(c), _) => Some(c.clone()),
        (None, Some(_)) => Some(Arc::new(Composer::new(
            &[crate::workload::compose::Entry::one(
                &test.title,
                &test.command,
                &test.template,
            )],
            cfg.load.keyspace.is_some(),
            cfg.pace.shape.value,
            cfg.pace.shape.expiry,
            cfg.load.seed,
        ))),
        (None, None) => None,
    }
}

/// Adds the histograms a shard needs beyond the plain one: service time (an open-loop phase, `rps`), one
/// per mixed command.
pub(crate) fn prepare_stats(
    stats: &mut ShardStats,
    cfg: &EngineSettings,
    test: &TestSpec,
    rps: Option<f64>,
) {
    if rps.is_some() {
        stats.service = Some(new_histogram(cfg.record.precision));
    }
    if let Some(c) = &test.compose
        && c.counts_each_command()
    {
        stats.parts = c
            .variants()
            .iter()
            .map(|v| PartStats::new(v.title.clone(), v.command.clone(), cfg.record.precision))
            .collect();
    }
    if let Some(r) = &test.replay {
        stats.parts = r
            .names()
            .iter()
            // A replay's titles are its command names.
            .map(|name| {
                PartStats::new(
                    name.clone(),
                    name.to_ascii_uppercase(),
                    cfg.record.precision,
                )
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_items_come_out_once_in_order_and_a_moved_item_only_at_its_new_time() {
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let mut q = DueQueue::new(3);
        q.set(0, at(30));
        q.set(1, at(10));
        q.set(2, at(20));
        q.set(0, at(50)); // moved later: its entry at 30 is skipped
        q.set_earliest(2, at(40)); // later than it waits for: kept at 20
        let mut out = Vec::new();
        q.pop_due(at(45), |i| out.push(i));
        assert_eq!(out, vec![1, 2]);
        assert_eq!(q.next(), Some(at(50)));
        q.pop_due(at(50), |i| out.push(i));
        assert_eq!(out, vec![1, 2, 0]);
        assert!(q.is_empty());
    }

    #[test]
    fn the_earliest_moment_skips_moved_and_forgotten_items() {
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let mut q = DueQueue::new(3);
        assert_eq!(q.earliest(), None);
        q.set(0, at(10));
        q.set(1, at(20));
        q.set(2, at(30));
        q.forget(0);
        assert_eq!(q.earliest(), Some(at(20)));
        q.set(1, at(40)); // moved later: its entry at 20 no longer counts
        assert_eq!(q.earliest(), Some(at(30)));
        q.forget(2);
        q.forget(1);
        assert_eq!(q.earliest(), None);
    }

    #[test]
    fn requests_due_before_an_end_are_counted_from_any_point_of_the_schedule() {
        let t0 = Instant::now();
        let end = t0 + Duration::from_secs(2);
        // 2000 rps over 50 connections: each has 80 requests due in the first 2 s.
        let total: u64 = (0..50)
            .map(|c| Pacing::new(t0, c, 50, 2000.0).due_before(0, end, u64::MAX))
            .sum();
        assert_eq!(total, 4000);
        let p = Pacing::new(t0, 7, 50, 2000.0);
        assert_eq!(p.due_before(30, end, u64::MAX), 50);
        assert_eq!(p.due_before(79, end, u64::MAX), 1);
        assert_eq!(p.due_before(80, end, u64::MAX), 0);
        assert_eq!(p.due_before(500, end, u64::MAX), 0);
        assert_eq!(p.due_before(30, end, 20), 20);
        assert_eq!(p.due_before(0, t0, u64::MAX), 0);
        // A replay's commands past its last are due at the last one's time: the limit bounds them.
        let r = Pacing::replay(t0, Arc::from(vec![0, 10, 20, 3_000_000_000]));
        assert_eq!(r.due_before(0, end, 4), 3);
        assert_eq!(r.due_before(1, end, 3), 2);
        let r = Pacing::replay(t0, Arc::from(vec![0, 10, 20]));
        assert_eq!(r.due_before(0, end, 3), 3);
        // memtier's bursts: 40 requests every 20 ms on every connection (2000 a second each).
        let b = Pacing::bursts(t0, 0, 1, 2000);
        assert_eq!(
            b.due_before(0, t0 + Duration::from_millis(50), u64::MAX),
            120
        );
    }

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
