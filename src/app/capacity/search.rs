//! The search itself, apart from how a step runs: `search` rises geometrically from the lowest rate until
//! a step fails (falls when the first one does), then bisects until the bracket is within the precision
//! (`Judged` steps, the `Answer`'s indices). `Searched` is one whole search's outcome, and `far_below` says
//! why an answer far below the closed-loop probe is so low.

use crate::app::capacity::judge::Verdict;
use crate::report::result_file::{FarBelowEntry, ProbeEntry, SearchEntry};

/// Geometric phase: each step offers this many times the previous one.
const GROWTH: f64 = 2.0;

/// The most steps one search runs.
const MAX_STEPS: usize = 40;

/// If the first step fails, the search halves the rate at most this many times (64x below `--from`).
const MAX_DESCENT: usize = 6;

/// One step of the search: the rate it offered and how it was judged.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub offered: f64,
    pub verdict: Verdict,
}

/// Where the search ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Highest passing rate below `next` (None: no step passed).
    pub capacity: Option<usize>,
    /// Index of the lowest failing step above the capacity (None: no step failed).
    pub next: Option<usize>,
}

/// The search itself, independent of how a step is run: `run` runs one step at a rate and returns how it
/// went, or `None` to stop (a signal). Returns the steps' indices of the answer.
pub(super) fn search(
    from: f64,
    to: f64,
    precision: f64,
    mut run: impl FnMut(f64) -> Option<Verdict>,
) -> (Vec<Judged>, Answer) {
    let mut steps: Vec<Judged> = Vec::new();
    let mut pass: Option<usize> = None;
    let mut fail: Option<usize> = None;
    let mut step = |rate: f64, steps: &mut Vec<Judged>| -> Option<bool> {
        if steps.len() >= MAX_STEPS {
            return None;
        }
        let v = run(rate)?;
        let ok = v.pass;
        steps.push(Judged {
            offered: rate,
            verdict: v,
        });
        Some(ok)
    };
    let round = |r: f64| r.round().max(1.0);
    // Rising geometrically from `from` until a step fails or `to` passes.
    let mut rate = round(from);
    'outer: {
        loop {
            match step(rate, &mut steps) {
                None => break 'outer,
                Some(true) => {
                    pass = Some(steps.len() - 1);
                    if rate >= to {
                        break 'outer;
                    }
                    rate = round((rate * GROWTH).min(to));
                }
                Some(false) => {
                    fail = Some(steps.len() - 1);
                    break;
                }
            }
        }
        // The first step failed: fall geometrically until one passes.
        let mut descents = 0;
        while pass.is_none() && descents < MAX_DESCENT {
            descents += 1;
            let lower = round(rate / GROWTH);
            if lower >= rate {
                break 'outer;
            }
            rate = lower;
            match step(rate, &mut steps) {
                None => break 'outer,
                Some(true) => pass = Some(steps.len() - 1),
                Some(false) => fail = Some(steps.len() - 1),
            }
        }
        // Bisect until the bracket is within the precision.
        while let (Some(p), Some(f)) = (pass, fail) {
            let (lo, hi) = (steps[p].offered, steps[f].offered);
            if hi <= lo * (1.0 + precision) {
                break;
            }
            let mid = round((lo + hi) / 2.0);
            if mid <= lo || mid >= hi {
                break;
            }
            match step(mid, &mut steps) {
                None => break,
                Some(true) => pass = Some(steps.len() - 1),
                Some(false) => fail = Some(steps.len() - 1),
            }
        }
    }
    (
        steps,
        Answer {
            capacity: pass,
            next: fail,
        },
    )
}

/// An answer below this share of the closed-loop probe's rate is far below it: the answer says why.
const FAR_BELOW: f64 = 0.5;

/// A server that used less than this share of a core during the failing step above a far-below answer
/// was not held back by its load: the step failed on a latency floor or on stalls.
const SERVER_AT_EASE: f64 = 0.5;

/// Whether an answer is far below the probe, and why: the client was the limit, the runs were spoiled or
/// disagreed (a noisy machine), the failing step above it failed while the server was at ease
/// (`server_busy`, in cores, under [`SERVER_AT_EASE`]: not its load), or else the objective is out of
/// reach on this machine above the answer.
pub(super) fn far_below(
    capacity: Option<f64>,
    probe_rps: Option<f64>,
    client_limited: bool,
    spoiled: u64,
    noisy: u64,
    server_busy: Option<f64>,
) -> Option<FarBelowEntry> {
    let probe = probe_rps.filter(|p| *p > 0.0)?;
    let share = capacity.unwrap_or(0.0) / probe;
    if share >= FAR_BELOW {
        return None;
    }
    let why = if client_limited {
        "client-limited"
    } else if spoiled + noisy > 0 {
        "noisy"
    } else if server_busy.is_some_and(|b| b < SERVER_AT_EASE) {
        "server-at-ease"
    } else {
        "objective"
    };
    Some(FarBelowEntry {
        share,
        why: why.into(),
    })
}

/// One whole search's outcome.
pub(super) struct Searched {
    pub(super) steps: Vec<Judged>,
    pub(super) answer: Answer,
    pub(super) probe: Option<ProbeEntry>,
    pub(super) runs: usize,
    pub(super) confirmations: u64,
    pub(super) spoiled: u64,
    pub(super) noisy: u64,
    pub(super) far: Option<FarBelowEntry>,
}

impl Searched {
    pub(super) fn capacity(&self) -> Option<f64> {
        self.answer.capacity.map(|i| self.steps[i].offered)
    }

    pub(super) fn next(&self) -> Option<f64> {
        self.answer.next.map(|i| self.steps[i].offered)
    }

    /// The server's CPU (cores) during the lowest failing step above the answer.
    pub(super) fn next_server_busy(&self) -> Option<f64> {
        self.answer
            .next
            .and_then(|i| self.steps[i].verdict.server_busy)
    }

    pub(super) fn client_limited(&self) -> bool {
        self.answer
            .next
            .is_some_and(|i| self.steps[i].verdict.client_limited)
    }

    pub(super) fn entry(&self) -> SearchEntry {
        SearchEntry {
            probe: self.probe.clone(),
            capacity_rps: self.capacity(),
            next_rps: self.next(),
            client_limited: self.client_limited(),
            steps: self.steps.len(),
            runs: self.runs,
            confirmations: self.confirmations,
            spoiled: self.spoiled,
            noisy_steps: self.noisy,
            far_below_probe: self.far.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_DESCENT, MAX_STEPS, far_below, search};
    use crate::app::capacity::judge::verdict;

    #[test]
    fn search_brackets_a_threshold_within_the_precision() {
        for threshold in [1.0, 700.0, 12_345.0, 99_999.0, 1e6] {
            let (steps, a) = search(1000.0, 200_000.0, 0.05, |r| Some(verdict(r <= threshold)));
            let (p, f) = (a.capacity, a.next);
            if threshold < 1000.0 / 64.0 {
                // Six halvings below --from and still failing: the answer is "below" the lowest step.
                assert!(p.is_none(), "{threshold}");
                assert_eq!(steps.len(), 1 + MAX_DESCENT);
                assert_eq!(steps[f.unwrap()].offered, 16.0);
                continue;
            }
            if threshold >= 200_000.0 {
                assert!(f.is_none() && steps[p.unwrap()].offered == 200_000.0);
                continue;
            }
            let (lo, hi) = (steps[p.unwrap()].offered, steps[f.unwrap()].offered);
            assert!(lo <= threshold && hi > threshold, "{threshold}: {lo} {hi}");
            assert!(hi <= lo * 1.05 || hi - lo <= 1.0, "{threshold}: {lo} {hi}");
            // The answer is the highest passing step, the next the lowest failing one.
            let best = steps.iter().filter(|s| s.verdict.pass).map(|s| s.offered);
            assert_eq!(best.fold(0.0, f64::max), lo);
            let worst = steps.iter().filter(|s| !s.verdict.pass).map(|s| s.offered);
            assert_eq!(worst.fold(f64::MAX, f64::min), hi);
            assert!(steps.len() <= MAX_STEPS);
        }
    }

    #[test]
    fn stopping_ends_the_search() {
        let mut n = 0;
        let (steps, a) = search(1000.0, 1e6, 0.05, |_| {
            n += 1;
            (n <= 2).then(|| verdict(true))
        });
        assert_eq!(steps.len(), 2);
        assert_eq!(a.capacity, Some(1));
        assert_eq!(a.next, None);
    }

    #[test]
    fn far_below_the_probe_names_its_cause() {
        let f = |cap, cl, sp, noisy| far_below(cap, Some(100_000.0), cl, sp, noisy, None);
        assert_eq!(f(Some(60_000.0), true, 0, 0), None);
        let e = f(Some(10_000.0), true, 3, 1).unwrap();
        assert_eq!((e.why.as_str(), e.share), ("client-limited", 0.1));
        assert_eq!(f(Some(10_000.0), false, 0, 1).unwrap().why, "noisy");
        assert_eq!(f(None, false, 0, 0).unwrap().why, "objective");
        assert_eq!(far_below(Some(1.0), None, true, 0, 0, None), None);
        // Failed with the server at ease: said so; with the server busy, or unknown: the objective.
        let g = |busy| {
            far_below(Some(10_000.0), Some(100_000.0), false, 0, 0, busy)
                .unwrap()
                .why
        };
        assert_eq!(g(Some(0.12)), "server-at-ease");
        assert_eq!(g(Some(0.9)), "objective");
        assert_eq!(g(None), "objective");
        // Client-limited and noisy come first.
        let h = far_below(Some(10_000.0), Some(100_000.0), true, 0, 1, Some(0.1));
        assert_eq!(h.unwrap().why, "client-limited");
    }
}
