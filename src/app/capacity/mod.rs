//! `ringbench capacity`: the highest offered rate a server sustains within latency objectives.
//!
//! Each step is a real open-loop run (`--rps` at the step's rate for `--step-duration`, after a dropped
//! `--warmup` at the same rate), so its latency counts from each request's intended send time. Steps rise
//! geometrically from `--from` until one fails, then the search bisects between the last passing and the
//! first failing rate until they are within `--within` (5%) of each other. A step fails when a target
//! percentile is over its objective, the achieved rate is under 95% of the offered one, or requests failed
//! or got error replies. Without `--to`, a short closed-loop probe of the server's maximum sets the upper
//! bound. (`--precision` is taken: it sets the histograms' significant figures, as in a normal run.)
//!
//! This file is `run`: the checks, the server's view, the opening lines, the searches, then `--json` and
//! `--plot`. Its rooms, each using only the ones after it: `searcher.rs` (one whole search against the
//! server: the probe, the steps, their lines), `step.rs` (a run of a step, how a step's runs settle),
//! `text.rs` (the lines a search prints), `search.rs` (the rates a search offers and where it ends, apart
//! from how a step runs), `judge.rs` (a run's `Verdict`), `machine.rs` (steal and idle from /proc/stat),
//! `args.rs` (the search's flags) and `numbers.rs` (how it writes numbers). No room uses this file.

mod args;
mod judge;
mod machine;
mod numbers;
mod search;
mod searcher;
mod step;
mod text;

pub use args::{Objective, SearchArgs, check_cli, check_suite};
pub use judge::Verdict;
pub use machine::Machine;
pub use search::{Answer, Judged};

use crate::app::outcome::{RunError, RunOutcome};
use crate::app::session;
use crate::config::Config;
use crate::engine::{self, RunControl};
use crate::report::result_file::{CapacityEntry, ObjectiveEntry, RunFile, StepEntry, TestEntry};
use crate::stats::TestResult;
use crate::stats::server_view::Watches;
use crate::workload::TestSpec;
use numbers::trim_number;
use search::Searched;
use searcher::Searcher;
use std::io::Write;
use step::Record;
use text::{median_index, objectives_text, spread_text};

/// Everything a finished search produced.
pub struct SearchRun {
    pub outcome: RunOutcome,
    pub entry: CapacityEntry,
}

/// Runs the search against the server of `cfg` (one test; with `--cluster`, its masters), printing a line
/// per run to `stdout`, then the answer; with `--repeat` it runs that many searches and ends with their
/// median and spread. Writes `--json` and `--plot` at the end. Warnings and `-e`'s error replies go to
/// `stderr`.
pub fn run(
    cfg: Config,
    args: &SearchArgs,
    control: &RunControl,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<SearchRun, RunError> {
    let test = the_test(&cfg)?;
    let mut sink = std::io::sink();
    let to_stdout = crate::report::results::json_to_stdout(&cfg);
    let quiet = cfg.results.output == crate::config::OutputMode::Quiet;
    let out: &mut dyn Write = if to_stdout { &mut sink } else { stdout };
    session::prepare(&cfg)?;
    let (watch, masters, local_servers) = server_watches(&cfg, control)?;
    // Built once: the probe and every step are phases of it, each with its own rate and length.
    let cfg = std::sync::Arc::new(cfg);
    if cfg.engine.connect.threads > 1
        && let (_, Some(w)) = engine::plan_cores(
            cfg.engine.connect.threads.min(cfg.engine.load.clients),
            cfg.engine.connect.cpus.as_deref(),
            local_servers,
        )
    {
        let _ = writeln!(stderr, "ringbench: {w}");
    }
    if !quiet {
        write_header(out, &cfg, &test, args, masters)?;
    }
    let mut searcher = Searcher {
        cfg: &cfg,
        test: &test,
        args,
        control,
        watch,
        quiet,
        local_servers,
    };
    let mut records: Vec<Record> = Vec::new();
    let mut searches: Vec<Searched> = Vec::new();
    for k in 1..=args.repeat {
        if control.stopped() {
            break;
        }
        if args.repeat > 1 && !quiet {
            writeln!(out, "search {k} of {}:", args.repeat)?;
        }
        searches.push(searcher.once(k, out, stderr, &mut records)?);
    }
    let stopped = control.stopped();
    let answers: Vec<f64> = searches
        .iter()
        .map(|s| s.capacity().unwrap_or(0.0))
        .collect();
    if args.repeat > 1 {
        out.write_all(spread_text(&answers).as_bytes())?;
        out.flush()?;
    }
    let median = median_index(&answers);
    let entry = capacity_entry(args, &records, &searches, &answers, median);
    if let Some(dest) = &cfg.results.json {
        let host = crate::sys::os::host_name();
        let mut file = RunFile::of_run(&cfg, &[], stopped);
        file.tests = records
            .iter()
            .map(|rec| TestEntry::of(&rec.result, &test.command, &host))
            .collect();
        file.config.tests = records.iter().map(|rec| rec.result.title.clone()).collect();
        file.capacity = Some(entry.clone());
        file.write_to(dest, stdout)
            .map_err(|e| RunError::Results(vec![e.into()]))?;
    }
    write_plot(&cfg, &test, args, &records, median, entry.capacity_rps)?;
    let results: Vec<TestResult> = records.into_iter().map(|rec| rec.result).collect();
    let failed = results.iter().any(|r| r.stats.failed > 0);
    let error_replies = results.iter().any(|r| r.stats.errors > 0);
    Ok(SearchRun {
        outcome: RunOutcome {
            results,
            stopped,
            failed,
            error_replies,
            verify_failed: false,
        },
        entry,
    })
}

/// The one test a search runs: the suite [`check_suite`] let through (a caller that skipped it gets its
/// usage error here).
fn the_test(cfg: &Config) -> Result<crate::workload::TestSpec, RunError> {
    args::one_test(cfg.tests.len()).map_err(RunError::Usage)?;
    Ok(cfg.tests[0].clone())
}

/// The server's view during each step: its one node, or with `--cluster` every master (the same opening
/// as a normal run: a node that is not a cluster, or fewer clients than masters, ends here). Returns the
/// watches, the number of masters (0 without `--cluster`) and how many of the servers are local.
fn server_watches(cfg: &Config, control: &RunControl) -> Result<(Watches, usize, usize), RunError> {
    let (opened, _) = session::connect(cfg, control)?;
    let (masters, local) = (opened.masters.len(), opened.local_servers);
    Ok((session::watch_server(cfg, opened), masters, local))
}

/// The search's opening lines: what it searches with which flags against which objectives, how each step
/// runs and is checked, and that the server is not restarted between steps.
fn write_header(
    out: &mut dyn Write,
    cfg: &Config,
    test: &TestSpec,
    args: &SearchArgs,
    masters: usize,
) -> std::io::Result<()> {
    let cluster = if masters > 0 {
        format!(" --cluster ({masters} masters)")
    } else {
        String::new()
    };
    writeln!(
        out,
        "capacity search: {}; -c {} -P {} --threads {}{cluster}; objective {}",
        test.title,
        cfg.engine.load.clients,
        cfg.engine.load.pipeline,
        cfg.engine.connect.threads,
        objectives_text(&args.objectives)
    )?;
    let warmup = if args.warmup.is_zero() {
        "with no warmup".to_string()
    } else {
        format!(
            "after {} s of warmup at the same rate, dropped from its figures",
            trim_number(args.warmup.as_secs_f64(), 3)
        )
    };
    writeln!(
        out,
        "each step: {} s open loop at its rate (latency from each request's intended send) {warmup}",
        trim_number(args.step.as_secs_f64(), 3),
    )?;
    let borderline = if args.borderline > 0.0 {
        format!(
            " and each pass within {}% of an objective",
            trim_number(args.borderline * 100.0, 2)
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "each failing step{borderline} is run again to confirm it (a third run breaks a tie); a run spoiled by the client is run again, at most {} times",
        args.retries
    )?;
    writeln!(
        out,
        "the server is not restarted between steps: each step finds the data and state the previous ones left"
    )?;
    out.flush()
}

/// The JSON's `capacity` entry: the objectives and settings, every run of every search, the median
/// search's answer (`median`, an index of `searches`) and the spread of `answers` (one per search).
fn capacity_entry(
    args: &SearchArgs,
    records: &[Record],
    searches: &[Searched],
    answers: &[f64],
    median: Option<usize>,
) -> CapacityEntry {
    let chosen = median.map(|m| &searches[m]);
    let total = |f: fn(&Searched) -> u64| searches.iter().map(f).sum::<u64>();
    CapacityEntry {
        objectives: args
            .objectives
            .iter()
            .map(|o| ObjectiveEntry {
                percentile: o.percentile,
                max_ms: o.max_ms,
            })
            .collect(),
        precision: args.precision,
        step_duration_s: args.step.as_secs_f64(),
        warmup_s: args.warmup.as_secs_f64(),
        probe: chosen.and_then(|s| s.probe.clone()),
        steps: records
            .iter()
            .map(|rec| StepEntry {
                offered_rps: rec.offered,
                achieved_rps: rec.result.rps(),
                pass: rec.verdict.pass,
                reasons: rec.verdict.reasons.clone(),
                warmup_requests: rec.warmup,
                client_busy: rec.verdict.busy,
                repeated: rec.repeated,
                search: rec.search,
                step: rec.step,
                run: rec.kind.name().to_string(),
                spoiled: rec.verdict.spoiled.clone(),
                cpu_steal: rec.verdict.machine.steal,
                cpu_idle: rec.verdict.machine.idle,
                borderline: rec.verdict.borderline,
            })
            .collect(),
        capacity_rps: chosen.and_then(Searched::capacity),
        next_rps: chosen.and_then(Searched::next),
        client_limited: chosen.is_some_and(Searched::client_limited),
        borderline: args.borderline,
        retries: args.retries,
        confirmations: total(|s| s.confirmations),
        spoiled: total(|s| s.spoiled),
        noisy_steps: total(|s| s.noisy),
        far_below_probe: chosen.and_then(|s| s.far.clone()),
        searches: searches.iter().map(Searched::entry).collect(),
        median_rps: median.map(|m| answers[m]),
        min_rps: (!answers.is_empty()).then(|| answers.iter().copied().fold(f64::MAX, f64::min)),
        max_rps: (!answers.is_empty()).then(|| answers.iter().copied().fold(0.0, f64::max)),
    }
}

/// Draws `--plot`: the knee of the median search (`median`, an index of the searches), its counted runs
/// against the objectives and the answer `capacity_rps`.
fn write_plot(
    cfg: &Config,
    test: &TestSpec,
    args: &SearchArgs,
    records: &[Record],
    median: Option<usize>,
    capacity_rps: Option<f64>,
) -> Result<(), RunError> {
    // The knee of the median search; a search stopped before its first step ended has nothing to draw.
    let knee = median.map_or(0, |m| m + 1);
    if let Some(path) = cfg
        .results
        .plot
        .as_ref()
        .filter(|_| records.iter().any(|r| r.search == knee))
    {
        let objectives: Vec<(f64, f64)> = args
            .objectives
            .iter()
            .map(|o| (o.percentile, o.max_ms))
            .collect();
        let points: Vec<crate::report::plot::KneePoint> = records
            .iter()
            .filter(|rec| !rec.repeated && rec.search == knee)
            .map(|rec| {
                let h = &rec.result.stats.hist;
                crate::report::plot::KneePoint::of(rec.offered, rec.verdict.pass, h, &objectives)
            })
            .collect();
        let title = format!(
            "ringbench capacity: {}\n{}",
            test.title,
            crate::report::result_file::RunConfig::of(cfg).summary(false)
        );
        crate::report::plot::write_knee(path, &title, &points, &objectives, capacity_rps)
            .map_err(|e| RunError::Results(vec![e.into()]))?;
    }
    Ok(())
}
