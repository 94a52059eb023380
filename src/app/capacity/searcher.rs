//! One whole search against the server: `Searcher::once` sets the upper bound (`--to`, or a short
//! closed-loop probe), runs `search` with real steps, each settled from its runs (`settled_step`), prints a
//! line per run and the answer, and keeps a `Record` of every run.

use crate::app::capacity::args::{MAX_RATE, SearchArgs};
use crate::app::capacity::judge::{Verdict, carry_client_limit, judge};
use crate::app::capacity::numbers::{thousands, trim_number};
use crate::app::capacity::search::{Searched, far_below, search};
use crate::app::capacity::step::{Record, RunKind, Settle, run_step};
use crate::app::capacity::text::{answer_text, notes_text, step_line};
use crate::app::outcome::RunError;
use crate::config::Config;
use crate::engine::{self, Budget, RunControl};
use crate::report::result_file::ProbeEntry;
use crate::stats::TestResult;
use crate::stats::server_view::Watches;
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// Without `--from`, the first step offers the upper bound divided by this.
const FROM_DIVISOR: f64 = 16.0;
/// Without `--to`, the upper bound is the closed-loop probe's rate times this.
const PROBE_HEADROOM: f64 = 1.25;

/// What one search needs, across the searches of a run.
pub(super) struct Searcher<'a> {
    pub(super) cfg: &'a Arc<Config>,
    pub(super) test: &'a crate::workload::TestSpec,
    pub(super) args: &'a SearchArgs,
    pub(super) control: &'a RunControl,
    pub(super) watch: Watches,
    pub(super) quiet: bool,
    /// The run's servers on this machine (the session's `Opened::local_servers`).
    pub(super) local_servers: usize,
}

/// One search as its steps run: its number, where its runs start in the records, what its steps added up
/// to, and the first error that ended it.
struct Progress {
    /// The search (1-based).
    k: usize,
    /// Index in the records of the search's first run.
    first: usize,
    /// Steps settled so far.
    judged: usize,
    confirmations: u64,
    spoiled: u64,
    noisy: u64,
    /// A run that failed: the search stops.
    failure: Option<RunError>,
    /// Writing a step line failed: the search goes on, and the run fails after it.
    write_failed: Option<std::io::Error>,
}

impl Searcher<'_> {
    /// Runs search number `k` (1-based): the probe (without --to), then the steps, each settled; prints
    /// its lines and its answer to `out`, and appends every run to `records`.
    pub(super) fn once(
        &mut self,
        k: usize,
        out: &mut dyn Write,
        stderr: &mut dyn Write,
        records: &mut Vec<Record>,
    ) -> Result<Searched, RunError> {
        let (to, probe) = self.upper_bound(out, stderr)?;
        let args = self.args;
        let from = args
            .from
            .unwrap_or_else(|| (to / FROM_DIVISOR).round().max(1.0))
            .min(to);
        let mut progress = Progress {
            k,
            first: records.len(),
            judged: 0,
            confirmations: 0,
            spoiled: 0,
            noisy: 0,
            failure: None,
            write_failed: None,
        };
        let (steps, answer) = search(from, to, args.precision, |rate| {
            self.settled_step(rate, &mut progress, out, stderr, records)
        });
        // Runs of a step the search did not finish (stopped) still count as made.
        if let Some(e) = progress.failure {
            return Err(e);
        }
        if let Some(e) = progress.write_failed {
            return Err(e.into());
        }
        let stopped = self.control.stopped();
        let text = answer_text(
            &steps,
            &answer,
            &args.objectives,
            to,
            self.cfg.engine.connect.threads,
            stopped,
        );
        out.write_all(text.as_bytes())?;
        let mut s = Searched {
            steps,
            answer,
            probe,
            runs: records.len() - progress.first,
            confirmations: progress.confirmations,
            spoiled: progress.spoiled,
            noisy: progress.noisy,
            far: None,
        };
        s.far = far_below(
            s.capacity(),
            s.probe.as_ref().map(|p| p.rps),
            s.client_limited(),
            progress.spoiled,
            progress.noisy,
            s.next_server_busy(),
        );
        out.write_all(notes_text(&s, self.quiet).as_bytes())?;
        out.flush()?;
        Ok(s)
    }

    /// The search's upper bound: --to, or a short closed-loop probe of the server's maximum (with the
    /// probe's figures, its line printed to `out`).
    fn upper_bound(
        &self,
        out: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<(f64, Option<ProbeEntry>), RunError> {
        let (cfg, test, args, control, quiet) =
            (self.cfg, self.test, self.args, self.control, self.quiet);
        if let Some(t) = args.to {
            return Ok((t, None));
        }
        let secs = args.step.min(Duration::from_secs(2));
        // The probe: a closed-loop phase of the same config.
        let budget = Budget {
            requests: u64::MAX,
            duration: Some(secs),
            rps: None,
            local_servers: self.local_servers,
        };
        let st = engine::run_phase(&cfg.engine, test, budget, control, stderr, |_| {})?;
        let r = TestResult::new(test.title.clone(), st.completed, st);
        let rps = r.rps();
        let probe = Some(ProbeEntry {
            requests: r.stats.completed,
            duration_s: r.seconds,
            rps,
        });
        let to = (rps * PROBE_HEADROOM).round().clamp(1.0, MAX_RATE);
        if !quiet {
            writeln!(
                out,
                "probe: closed loop for {} s: {} rps; searching up to {} rps (--to sets the bound)",
                trim_number(r.seconds, 2),
                thousands(rps),
                thousands(to)
            )?;
            out.flush()?;
        }
        Ok((to, probe))
    }

    /// Runs the step at `rate` until its runs settle (`Settle`), printing a line per run and recording
    /// each; returns the step's verdict, or `None` to end the search (stopped, or a run failed: then in
    /// `p.failure`).
    fn settled_step(
        &mut self,
        rate: f64,
        p: &mut Progress,
        out: &mut dyn Write,
        stderr: &mut dyn Write,
        records: &mut Vec<Record>,
    ) -> Option<Verdict> {
        let (cfg, test, args, control, quiet) =
            (self.cfg, self.test, self.args, self.control, self.quiet);
        let mut settle = Settle::new(args.retries);
        let mut kind = RunKind::First;
        // The first failing run of this step that had the client as its limit (spoiled ones
        // included).
        let mut client: Option<Verdict> = None;
        loop {
            if control.stopped() || p.failure.is_some() {
                return None;
            }
            let (r, warm, machine) = match run_step(
                cfg,
                test,
                (rate, self.local_servers),
                args,
                control,
                &mut self.watch,
                stderr,
            ) {
                Ok(Some(x)) => x,
                Ok(None) => return None,
                Err(e) => {
                    p.failure = Some(e);
                    return None;
                }
            };
            let mut v = judge(&r, rate, &args.objectives, args.borderline, machine);
            let next = settle.feed(&v);
            if v.client_limited && client.is_none() {
                client = Some(v.clone());
            }
            if !quiet {
                let mut line =
                    step_line(records.len() - p.first + 1, rate, &r, &v, &args.objectives);
                let again = match next {
                    Some(RunKind::Retry) => Some("; running the step again (spoiled)"),
                    Some(RunKind::Confirm) => Some("; running the step again to confirm it"),
                    Some(RunKind::Tiebreak) => {
                        Some("; running the step again: its two runs disagreed")
                    }
                    _ => None,
                };
                if let Some(again) = again {
                    line.insert_str(line.len() - 1, again);
                }
                if let Err(e) = out.write_all(line.as_bytes()).and_then(|_| out.flush()) {
                    p.write_failed.get_or_insert(e);
                }
            }
            let mut r = r;
            if args.repeat > 1 {
                let _ = write!(r.title, " [search {}]", p.k);
            }
            if next.is_some() {
                r.title.push_str(" (run again)");
            }
            records.push(Record {
                offered: rate,
                result: r,
                warmup: warm,
                verdict: v.clone(),
                repeated: next.is_some(),
                search: p.k,
                step: p.judged + 1,
                kind,
            });
            match next {
                Some(n) => kind = n,
                None => {
                    carry_client_limit(&mut v, client.take());
                    p.judged += 1;
                    p.confirmations += settle.confirmations() as u64;
                    p.spoiled += settle.retried as u64;
                    p.noisy += u64::from(settle.noisy());
                    return Some(v);
                }
            }
        }
    }
}
