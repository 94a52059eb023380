//! What the engine's drivers (`ring`, `cluster`) and its shard lifecycle (`mod.rs`) share: the run's
//! flags, a shard's plan and state, the start gate, and how an error reply is counted. A leaf: it uses
//! no other file of the engine.

use crate::config::EngineSettings;
use crate::engine::schedule::Pacing;
use crate::stats::ShardStats;
use crate::stats::intervals::IntervalRecorder;
use crate::stats::live::LiveCounters;
use crate::workload::TestSpec;
use crate::workload::keys::{Cursors, KeyGen};
use crate::workload::scan_cursor::ScanCursor;
use std::cell::{Cell, RefCell, RefMut};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// Pauses between attempts to reconnect a dropped connection; after the last, the connection gives up.
/// They add up to 1.35 s, so a run against a server that died ends within 2 s.
pub(crate) const RECONNECT_BACKOFF_MS: [u64; 5] = [50, 100, 200, 400, 600];
/// Flags shared by the whole run: set by signal handlers or the caller, read by every executor.
#[derive(Debug, Default, Clone)]
pub struct RunControl {
    /// Stop the current test now and report what completed.
    pub stop: Arc<AtomicBool>,
}

impl RunControl {
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Everything one shard needs; sent to its executor thread.
pub(crate) struct ShardPlan {
    pub(crate) cfg: Arc<EngineSettings>,
    pub(crate) test: TestSpec,
    pub(crate) index: usize,
    pub(crate) clients: usize,
    /// Global index of this shard's first connection (open-loop schedules are staggered by it).
    pub(crate) first_client: usize,
    pub(crate) requests: u64,
    /// Where this shard's share of the requests starts among the test's (the shares before it summed):
    /// a composer's turn starts there, so the shards' requests walk one mix cycle or dataset in turn.
    pub(crate) first_request: u64,
    pub(crate) duration: Option<Duration>,
    /// The phase's rate over all connections (`--rps`, or a capacity step's); `None`: closed loop.
    pub(crate) rps: Option<f64>,
    pub(crate) gate: Arc<StartGate>,
    pub(crate) control: RunControl,
    pub(crate) live: Arc<LiveCounters>,
    pub(crate) error_clock: Arc<AtomicU64>,
    /// Lines for stderr (`-e`'s error replies): written by `run_phase` to the writer it is given.
    pub(crate) stderr: mpsc::Sender<String>,
    pub(crate) epoch: Instant,
}

impl ShardPlan {
    /// The key generator of one of this shard's connections; `cursors` are the shard's positions in a
    /// sequential keyspace (made by [`Self::cursors`]), shared by its connections.
    pub(crate) fn keys(&self, cursors: &Rc<Cursors>, conn: usize) -> KeyGen {
        let cfg = &self.cfg;
        let own = self
            .test
            .compose
            .as_ref()
            .map(|c| c.patterns())
            .unwrap_or_default();
        let keys = KeyGen::new(
            cfg.pace.shape.distribution,
            cfg.load.keyspace.unwrap_or(1),
            self.index,
            cfg.connect.threads.min(cfg.load.clients),
            cursors,
            &own,
        );
        // memtier's keyspace: each connection is one of its clients.
        let mut keys = match self.test.compose.as_ref().and_then(|c| c.key_space()) {
            Some(space) => keys.with_memtier(space, (self.first_client + conn) as u64),
            None => keys,
        };
        if let Some(max) = self.test.compose.as_ref().and_then(|c| c.scan_iteration()) {
            keys.scan = Some(Box::new(ScanCursor::new(max)));
        }
        keys
    }

    /// The shard's sequential positions: one per number stream of the test's commands.
    pub(crate) fn cursors(&self) -> Rc<Cursors> {
        Cursors::new(self.test.compose.as_ref().map_or(1, |c| c.variants().len()))
    }

    /// The `--rps` schedule of this shard's connection `i`, from `began`.
    pub(crate) fn pacing(&self, began: Instant, i: usize) -> Option<Pacing> {
        if let Some(r) = &self.test.replay {
            // A paced replay follows its capture's times (or --rps over the file's order).
            return r
                .stream(self.first_client + i)
                .due()
                .map(|d| Pacing::replay(began, d.clone()));
        }
        let cfg = &self.cfg;
        if let Some(rate) = cfg.pace.burst_rate {
            return Some(Pacing::bursts(
                began,
                self.first_client + i,
                cfg.load.clients,
                rate,
            ));
        }
        self.rps
            .map(|rps| Pacing::new(began, self.first_client + i, cfg.load.clients, rps))
    }
}

/// Lets every shard start sending at the same moment, or none: a shard that cannot start
/// (its executor failed, or its connections did) opens the gate with `abort` set.
#[derive(Debug, Default)]
pub(crate) struct StartGate {
    pub(crate) ready: AtomicUsize,
    pub(crate) abort: AtomicBool,
}

impl StartGate {
    pub(crate) async fn wait(&self, shards: usize) -> bool {
        self.ready.fetch_add(1, Ordering::AcqRel);
        loop {
            if self.abort.load(Ordering::Acquire) {
                return false;
            }
            if self.ready.load(Ordering::Acquire) >= shards {
                return true;
            }
            glommio::timer::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Marks the gate aborted when dropped before the shard reached it (its executor never ran, or failed).
pub(crate) struct GateGuard {
    pub(crate) gate: Arc<StartGate>,
    pub(crate) passed: bool,
}

impl Drop for GateGuard {
    fn drop(&mut self) {
        if !self.passed {
            self.gate.abort.store(true, Ordering::Release);
        }
    }
}

/// A shard's state, shared by its connection tasks on one thread.
pub(crate) struct ShardState {
    pub(crate) remaining: Cell<u64>,
    pub(crate) stats: RefCell<ShardStats>,
    pub(crate) latency_sum_ns: Cell<u64>,
    /// Per-second histograms, only with `--hdr-out`.
    pub(crate) intervals: RefCell<Option<IntervalRecorder>>,
    /// When this shard stops claiming requests (`--duration`); checked on the shard's own clock.
    pub(crate) deadline: Option<Instant>,
}

impl ShardState {
    /// The shard's figures, borrowed once to record the replies that arrived by `now` (a whole
    /// receive buffer's). With `--hdr-out`, a second that ended before `now` is cut into its
    /// interval first.
    pub(crate) fn figures(&self, now: Instant) -> RefMut<'_, ShardStats> {
        let st = self.stats.borrow_mut();
        if let Some(rec) = self.intervals.borrow_mut().as_mut()
            && rec.due(now)
        {
            rec.cut_until(now, &st.hist, |i| st.parts.get(i).map(|p| &p.hist));
        }
        st
    }

    /// Takes up to `want` requests from the shard's share.
    pub(crate) fn claim(&self, want: usize) -> usize {
        let rem = self.remaining.get();
        let k = rem.min(want as u64);
        self.remaining.set(rem - k);
        k as usize
    }
}

/// An error reply's text without its type byte and line end.
pub(crate) fn error_text(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw)
        .trim_start_matches(['-', '!'])
        .trim_end()
        .to_string()
}

/// Counts an error reply, keeps the first one's text, and prints it with `-e` (at most once a second).
pub(crate) fn note_error(state: &ShardState, plan: &ShardPlan, raw: &[u8]) {
    note_error_in(&mut state.stats.borrow_mut(), plan, raw);
}

/// [`note_error`] into figures already borrowed.
pub(crate) fn note_error_in(st: &mut ShardStats, plan: &ShardPlan, raw: &[u8]) {
    st.errors += 1;
    st.count_error_kind(raw);
    let text = || error_text(raw);
    if st.first_error.is_none() {
        st.first_error = Some(text());
    }
    if plan.cfg.record.show_errors {
        let now_ms = plan.epoch.elapsed().as_millis() as u64 + 1000;
        let last = plan.error_clock.load(Ordering::Relaxed);
        if now_ms >= last + 1000
            && plan
                .error_clock
                .compare_exchange(last, now_ms, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let _ = plan.stderr.send(format!("Error from server: {}", text()));
        }
    }
}
