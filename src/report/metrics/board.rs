//! The run's live figures as the metrics outputs read them: per test, the finished runs' totals plus
//! the running one's latest copy. The run's main thread writes it on each progress tick (four times a
//! second) and when a test ends; the Prometheus endpoint and the StatsD push read it. The executors
//! never touch it.

use crate::stats::TestResult;
use crate::stats::live::{LiveView, Snapshot};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The shortest span the current rate is measured over.
const RATE_SPAN: Duration = Duration::from_secs(1);

/// The run's live figures, shared by the main thread and the outputs.
#[derive(Debug)]
pub struct Board {
    state: Mutex<State>,
}

/// What the board holds; read through [`Board::read`].
#[derive(Debug, Default)]
pub struct State {
    /// The run's configuration, as `name = value` labels.
    pub info: Vec<(String, String)>,
    /// Every test seen so far, in the order they first ran.
    pub tests: Vec<TestFigures>,
    /// True once the last test has ended.
    pub finished: bool,
    /// Scrapes answered since `finished` was set.
    pub final_reads: u64,
}

/// One test's figures over all its runs so far (`-l`, `--run-count`).
#[derive(Debug)]
pub struct TestFigures {
    pub title: String,
    /// The finished runs, added up.
    pub done: Option<Snapshot>,
    /// Requests the finished runs left unsent.
    pub not_sent: u64,
    /// The running run's latest figures (`None` when it is not running, or has nothing yet).
    pub live: Option<Snapshot>,
    pub running: bool,
    /// Replies per second over the last second or so (0 when not running).
    pub rate: f64,
    rate_mark: Option<(Instant, u64)>,
    /// Each executor's busy share in its last interval.
    pub busy: Vec<f64>,
}

impl TestFigures {
    /// The finished runs and the running one added up.
    pub fn total(&self) -> Option<Snapshot> {
        match (&self.done, &self.live) {
            (Some(d), Some(l)) => {
                let mut t = d.clone();
                t.add(l);
                Some(t)
            }
            (d, l) => d.clone().or_else(|| l.clone()),
        }
    }
}

impl Board {
    /// A board for a run described by `info`.
    pub fn new(info: Vec<(String, String)>) -> Board {
        Board {
            state: Mutex::new(State {
                info,
                ..State::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the board under its lock.
    pub fn read<T>(&self, f: impl FnOnce(&State) -> T) -> T {
        f(&self.lock())
    }

    /// Counts a scrape: the endpoint's linger ends once one has read the final figures.
    pub fn note_read(&self) {
        let mut s = self.lock();
        if s.finished {
            s.final_reads += 1;
        }
    }

    /// Test `title` starts (again).
    pub fn begin(&self, title: &str) {
        let mut s = self.lock();
        let t = entry(&mut s, title);
        t.running = true;
        t.live = None;
        t.rate = 0.0;
        t.rate_mark = None;
    }

    /// The running test's latest figures from its executors, at `now`.
    pub fn update(&self, title: &str, view: &LiveView, now: Instant) {
        let (completed, _) = view.totals();
        let mut s = self.lock();
        let t = entry(&mut s, title);
        view.snapshot_into(&mut t.live);
        if let Some(l) = &t.live {
            t.busy.clone_from(&l.busy);
        }
        match t.rate_mark {
            None => t.rate_mark = Some((now, completed)),
            Some((at, c)) if now.saturating_duration_since(at) >= RATE_SPAN => {
                let secs = now.saturating_duration_since(at).as_secs_f64();
                t.rate = completed.saturating_sub(c) as f64 / secs;
                t.rate_mark = Some((now, completed));
            }
            Some(_) => {}
        }
    }

    /// Test `result.title` ended: its exact figures join the finished runs'.
    pub fn end(&self, result: &TestResult) {
        let st = &result.stats;
        let mut exact = Snapshot::of(st, 0.0);
        // The busy shares are the last run's (below), not kept per run.
        exact.busy.clear();
        let mut s = self.lock();
        let t = entry(&mut s, &result.title);
        match t.done.as_mut() {
            Some(d) => d.add(&exact),
            None => t.done = Some(exact),
        }
        t.not_sent += st.not_sent;
        t.busy = st.executors.iter().map(|e| e.busy()).collect();
        t.live = None;
        t.running = false;
        t.rate = 0.0;
        t.rate_mark = None;
    }

    /// The last test has ended: what the board holds now is final.
    pub fn finish(&self) {
        self.lock().finished = true;
    }
}

fn entry<'a>(s: &'a mut State, title: &str) -> &'a mut TestFigures {
    let i = match s.tests.iter().position(|t| t.title == title) {
        Some(i) => i,
        None => {
            s.tests.push(TestFigures {
                title: title.to_string(),
                done: None,
                not_sent: 0,
                live: None,
                running: false,
                rate: 0.0,
                rate_mark: None,
                busy: Vec::new(),
            });
            s.tests.len() - 1
        }
    };
    &mut s.tests[i]
}
