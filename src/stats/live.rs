//! What an executor shows of a test while it runs: its running totals for the progress line (plain
//! stores, at most once per turn) and, with live metrics on (`--metrics-listen`, `--statsd`), a copy
//! of its figures a few times a second. Nothing here is touched per request.

use crate::stats::ShardStats;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often an executor copies its figures for the live metrics.
pub const SNAPSHOT_EVERY: Duration = Duration::from_millis(250);

/// The calling thread's CPU seconds so far (user and system).
pub fn thread_cpu_total() -> f64 {
    let (user, sys) = crate::stats::thread_cpu_seconds();
    user + sys
}

/// A shard's live counters. Written by one executor only.
#[derive(Debug, Default)]
pub struct LiveCounters {
    pub completed: AtomicU64,
    pub latency_sum_ns: AtomicU64,
    /// The executor's figures as of its last copy (live metrics only).
    snapshot: Mutex<Option<Snapshot>>,
}

/// One executor's figures at one moment, or several executors' added up.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Latency of every reply so far, in nanoseconds.
    pub hist: Histogram<u64>,
    pub completed: u64,
    pub errors: u64,
    pub failed: u64,
    /// `--mix`: per command, in the mix's order.
    pub parts: Vec<PartSnapshot>,
    /// Per executor: the share of the last interval its thread was on a CPU.
    pub busy: Vec<f64>,
}

/// One mixed command's figures in a [`Snapshot`].
#[derive(Debug, Clone)]
pub struct PartSnapshot {
    /// The upper-case command name.
    pub command: String,
    pub hist: Histogram<u64>,
    pub completed: u64,
    pub errors: u64,
}

impl Snapshot {
    /// A copy of `st`'s figures (allocates; later copies into it reuse its histograms).
    pub fn of(st: &ShardStats, busy: f64) -> Snapshot {
        Snapshot {
            hist: st.hist.clone(),
            completed: st.completed,
            errors: st.errors,
            failed: st.failed,
            parts: st
                .parts
                .iter()
                .map(|p| PartSnapshot {
                    command: p.command.clone(),
                    hist: p.hist.clone(),
                    completed: p.completed,
                    errors: p.errors,
                })
                .collect(),
            busy: vec![busy],
        }
    }

    /// Makes this a copy of `st`'s figures without allocating.
    fn copy_from(&mut self, st: &ShardStats, busy: f64) {
        copy_hist(&mut self.hist, &st.hist);
        self.completed = st.completed;
        self.errors = st.errors;
        self.failed = st.failed;
        if self.parts.len() != st.parts.len() {
            *self = Snapshot::of(st, busy);
            return;
        }
        for (a, b) in self.parts.iter_mut().zip(&st.parts) {
            copy_hist(&mut a.hist, &b.hist);
            a.completed = b.completed;
            a.errors = b.errors;
        }
        self.busy.clear();
        self.busy.push(busy);
    }

    /// Adds another executor's figures to these.
    pub fn add(&mut self, other: &Snapshot) {
        // Every histogram of a run shares its bounds, so adding cannot fail.
        let _ = self.hist.add(&other.hist);
        self.completed += other.completed;
        self.errors += other.errors;
        self.failed += other.failed;
        if self.parts.len() != other.parts.len() {
            self.parts = other.parts.clone();
        } else {
            for (a, b) in self.parts.iter_mut().zip(&other.parts) {
                let _ = a.hist.add(&b.hist);
                a.completed += b.completed;
                a.errors += b.errors;
            }
        }
        self.busy.extend_from_slice(&other.busy);
    }
}

impl Snapshot {
    /// Zero figures, keeping the histograms' memory.
    fn clear(&mut self) {
        self.hist.reset();
        self.completed = 0;
        self.errors = 0;
        self.failed = 0;
        self.busy.clear();
        for p in &mut self.parts {
            p.hist.reset();
            p.completed = 0;
            p.errors = 0;
        }
    }
}

fn copy_hist(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    into.reset();
    let _ = into.add(from);
}

impl LiveCounters {
    /// The progress line's totals: stores only.
    pub fn publish(&self, completed: u64, latency_sum_ns: u64) {
        self.completed.store(completed, Ordering::Relaxed);
        self.latency_sum_ns.store(latency_sum_ns, Ordering::Relaxed);
    }

    pub fn read(&self) -> (u64, u64) {
        (
            self.completed.load(Ordering::Relaxed),
            self.latency_sum_ns.load(Ordering::Relaxed),
        )
    }

    /// Copies the executor's figures for the live metrics; `busy` is the share of the time since the
    /// last copy its thread was on a CPU, and `more` adds latencies kept outside `st` (a `--cluster`
    /// run's per-node histograms).
    pub fn put(&self, st: &ShardStats, busy: f64, more: impl FnOnce(&mut Histogram<u64>)) {
        let mut slot = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_mut() {
            Some(s) => s.copy_from(st, busy),
            None => *slot = Some(Snapshot::of(st, busy)),
        }
        if let Some(s) = slot.as_mut() {
            more(&mut s.hist);
        }
    }
}

/// Every executor's live counters of the test running now, as the run's main thread reads them.
pub struct LiveView<'a> {
    lives: &'a [Arc<LiveCounters>],
}

impl<'a> LiveView<'a> {
    pub fn new(lives: &'a [Arc<LiveCounters>]) -> Self {
        LiveView { lives }
    }

    /// Replies completed and their latency sum (ns), over every executor.
    pub fn totals(&self) -> (u64, u64) {
        self.lives
            .iter()
            .map(|l| l.read())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }

    /// The executors' last copies added up into `into` (left `None` until one has made its first).
    pub fn snapshot_into(&self, into: &mut Option<Snapshot>) {
        if let Some(acc) = into.as_mut() {
            acc.clear();
        }
        for l in self.lives {
            let slot = l.snapshot.lock().unwrap_or_else(|p| p.into_inner());
            let Some(s) = slot.as_ref() else { continue };
            match into.as_mut() {
                Some(acc) => acc.add(s),
                None => *into = Some(s.clone()),
            }
        }
    }
}
