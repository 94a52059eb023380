//! One step at a rate: a run of it (`run_step`: the dropped warmup, then the measured open-loop run, with
//! what the machine's CPUs did meanwhile), how its runs settle into the step's verdict (`Settle`: retries,
//! confirmation, tiebreak; `RunKind`), and each run's `Record`.

use crate::app::capacity::args::SearchArgs;
use crate::app::capacity::judge::Verdict;
use crate::app::capacity::machine::{Machine, cpu_ticks, machine_between};
use crate::app::outcome::RunError;
use crate::app::session;
use crate::config::Config;
use crate::config::shape::RateTarget;
use crate::engine::{self, Budget, RunControl};
use crate::stats::TestResult;
use crate::stats::server_view::Watches;
use std::io::Write;
use std::sync::Arc;

/// One run of a step, as run.
pub(super) struct Record {
    pub(super) offered: f64,
    pub(super) result: TestResult,
    pub(super) warmup: u64,
    pub(super) verdict: Verdict,
    /// Not the run that counts: the step was run again (spoiled, or to be confirmed).
    pub(super) repeated: bool,
    /// The search (1-based) and its step (1-based).
    pub(super) search: usize,
    pub(super) step: usize,
    pub(super) kind: RunKind,
}

/// Runs one step at `rate` (with the run's `local_servers`): its warmup (dropped), then the measured
/// open-loop run, with the machine's CPU steal share during it. `None` when stopped.
pub(super) fn run_step(
    cfg: &Arc<Config>,
    test: &crate::workload::TestSpec,
    (rate, local_servers): (f64, usize),
    args: &SearchArgs,
    control: &RunControl,
    watch: &mut Watches,
    stderr: &mut dyn Write,
) -> Result<Option<(TestResult, u64, Machine)>, RunError> {
    // A phase of the run's one config: the step's rate and length are its budget's, not the config's.
    let mut warm = 0;
    if !args.warmup.is_zero() {
        let budget = Budget {
            requests: u64::MAX,
            duration: Some(args.warmup),
            rps: Some(rate),
            local_servers,
        };
        match session::warm_up(cfg, test, budget, control, stderr)? {
            Some((completed, _)) => warm = completed,
            None => return Ok(None),
        }
    }
    watch.begin();
    let budget = Budget {
        requests: u64::MAX,
        duration: Some(args.step),
        rps: Some(rate),
        local_servers,
    };
    let ticks = cpu_ticks();
    let st = engine::run_phase(&cfg.engine, test, budget, control, stderr, |_| {
        watch.sample()
    })?;
    let machine = machine_between(ticks, cpu_ticks());
    if control.stopped() {
        return Ok(None);
    }
    let title = format!("{} @ {} rps", test.title, rate);
    let requested = st.completed + st.failed;
    let mut r = TestResult::new(title, requested, st);
    // The schedule spans the whole step even when its last request went out earlier (a low rate):
    // the achieved rate is over the step's time, never over a shorter span.
    r.seconds = r.seconds.max(args.step.as_secs_f64());
    r.warmup = (!args.warmup.is_zero()).then_some((warm, args.warmup.as_secs_f64()));
    r.rate = Some(RateTarget {
        rps: rate,
        slots: cfg.engine.load.clients * cfg.engine.load.pipeline,
    });
    session::end_view(watch, &mut r, false);
    Ok(Some((r, warm, machine)))
}

/// Which run of a step this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunKind {
    First,
    /// The run before was spoiled by the client.
    Retry,
    /// Confirms a failing or borderline first run.
    Confirm,
    /// The first two counted runs disagreed.
    Tiebreak,
}

impl RunKind {
    pub(super) fn name(self) -> &'static str {
        match self {
            RunKind::First => "first",
            RunKind::Retry => "retry",
            RunKind::Confirm => "confirm",
            RunKind::Tiebreak => "tiebreak",
        }
    }
}

/// How the runs of one step settle into its verdict: a run spoiled by the client is run again (at most
/// `retries` times) and does not count; a failing or borderline counted run is confirmed by a second; when
/// the two disagree a third decides. The step's last run always carries the step's verdict.
#[derive(Debug, Default)]
pub(super) struct Settle {
    retries: usize,
    pub(super) retried: usize,
    votes: Vec<bool>,
}

impl Settle {
    pub(super) fn new(retries: usize) -> Self {
        Settle {
            retries,
            ..Default::default()
        }
    }

    /// Feeds one run's verdict; returns the next run to make, or None when the step is settled.
    pub(super) fn feed(&mut self, v: &Verdict) -> Option<RunKind> {
        if v.spoiled.is_some() && self.retried < self.retries {
            self.retried += 1;
            return Some(RunKind::Retry);
        }
        self.votes.push(v.pass);
        match self.votes.as_slice() {
            [first] if !first || v.borderline => Some(RunKind::Confirm),
            [a, b] if a != b => Some(RunKind::Tiebreak),
            _ => None,
        }
    }

    /// Counted runs after the first.
    pub(super) fn confirmations(&self) -> usize {
        self.votes.len().saturating_sub(1)
    }

    /// The counted runs disagreed.
    pub(super) fn noisy(&self) -> bool {
        self.votes.iter().any(|&p| p) && self.votes.iter().any(|&p| !p)
    }
}

#[cfg(test)]
mod tests {
    use super::{RunKind, Settle};
    use crate::app::capacity::judge::{Verdict, verdict};

    fn run_of(pass: bool, borderline: bool, spoiled: bool) -> Verdict {
        Verdict {
            borderline,
            spoiled: spoiled.then(|| "x".to_string()),
            ..verdict(pass)
        }
    }

    /// Feeds `runs` to a fresh `Settle`; returns the kinds of run it asked for after each.
    fn settle(retries: usize, runs: &[Verdict]) -> (Vec<Option<RunKind>>, Settle) {
        let mut s = Settle::new(retries);
        let next = runs.iter().map(|v| s.feed(v)).collect();
        (next, s)
    }

    #[test]
    fn a_step_settles_after_confirmation_tiebreak_and_retries() {
        use RunKind::*;
        // A clear pass: one run.
        let (n, s) = settle(2, &[run_of(true, false, false)]);
        assert_eq!(n, [None]);
        assert_eq!((s.confirmations(), s.noisy()), (0, false));
        // A failure is confirmed; two failures settle it.
        let (n, s) = settle(2, &[verdict(false), verdict(false)]);
        assert_eq!(n, [Some(Confirm), None]);
        assert_eq!((s.confirmations(), s.noisy()), (1, false));
        // A failure the confirmation contradicts: a third run decides (and the step was noisy).
        let (n, s) = settle(2, &[verdict(false), verdict(true), verdict(true)]);
        assert_eq!(n, [Some(Confirm), Some(Tiebreak), None]);
        assert_eq!((s.confirmations(), s.noisy()), (2, true));
        // A borderline pass is confirmed too.
        let (n, _) = settle(2, &[run_of(true, true, false), verdict(true)]);
        assert_eq!(n, [Some(Confirm), None]);
        // Spoiled runs are run again and do not vote, at most `retries` times.
        let spoiled = run_of(false, false, true);
        let (n, s) = settle(
            2,
            &[spoiled.clone(), spoiled.clone(), spoiled.clone(), spoiled],
        );
        assert_eq!(n, [Some(Retry), Some(Retry), Some(Confirm), None]);
        assert_eq!((s.retried, s.confirmations()), (2, 1));
        let (n, _) = settle(0, &[run_of(false, false, true), verdict(false)]);
        assert_eq!(n, [Some(Confirm), None]);
    }
}
