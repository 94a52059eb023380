//! `ringbench capacity`: the highest offered rate a server sustains within latency objectives.
//!
//! Each step is a real open-loop run (`--rps` at the step's rate for `--step-duration`, after a dropped
//! `--warmup` at the same rate), so its latency counts from each request's intended send time. Steps rise
//! geometrically from `--from` until one fails, then the search bisects between the last passing and the
//! first failing rate until they are within `--within` (5%) of each other. A step fails when a target
//! percentile is over its objective, the achieved rate is under 95% of the offered one, or requests failed
//! or got error replies. Without `--to`, a short closed-loop probe of the server's maximum sets the upper
//! bound. (`--precision` is taken: it sets the histograms' significant figures, as in a normal run.)

use crate::cli::capacity::SearchFlags;
use crate::config::shape::RateTarget;
use crate::config::{Config, UsageError};
use crate::engine::{self, Budget, RunControl};
use crate::report::result_file::{
    CapacityEntry, FarBelowEntry, ObjectiveEntry, ProbeEntry, RunFile, SearchEntry, StepEntry,
    TestEntry, host_name,
};
use crate::stats::TestResult;
use crate::stats::server_view::{ServerWatch, Watches};
use crate::{RunError, RunOutcome};
use std::fmt::Write as _;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// A step whose achieved rate is below this share of the offered one fails.
const REACHED: f64 = 0.95;
/// Geometric phase: each step offers this many times the previous one.
const GROWTH: f64 = 2.0;
/// Without `--from`, the first step offers the upper bound divided by this.
const FROM_DIVISOR: f64 = 16.0;
/// Without `--to`, the upper bound is the closed-loop probe's rate times this.
const PROBE_HEADROOM: f64 = 1.25;
/// The most steps one search runs.
const MAX_STEPS: usize = 40;
/// If the first step fails, the search halves the rate at most this many times (64x below `--from`).
const MAX_DESCENT: usize = 6;
/// Fewer late sends than this never make a step client-limited (a few at a tiny rate are noise).
const MIN_LATE: u64 = 10;
/// The highest rate a search may offer (as `--rps`).
const MAX_RATE: f64 = 1e9;

/// One latency objective: the percentile (e.g. 99.9) may be at most `max_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    pub percentile: f64,
    pub max_ms: f64,
}

impl Objective {
    /// `p99`, `p99.9`, `p50`.
    fn label(&self) -> String {
        format!("p{}", trim_number(self.percentile, 4))
    }
}

/// The search's own flags.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchArgs {
    pub objectives: Vec<Objective>,
    pub from: Option<f64>,
    pub to: Option<f64>,
    pub step: Duration,
    pub warmup: Duration,
    /// e.g. 0.05 for 5%.
    pub precision: f64,
    /// Whole searches to run (`--repeat`); the answer is their median.
    pub repeat: usize,
    /// A passing run whose worst objective is at least `1 - borderline` of its limit is confirmed
    /// (`--borderline`; 0 confirms failing runs only).
    pub borderline: f64,
    /// How many times a run spoiled by the client is run again before it counts (`--retries`).
    pub retries: usize,
}

impl Default for SearchArgs {
    fn default() -> Self {
        SearchArgs {
            objectives: vec![Objective {
                percentile: 99.0,
                max_ms: 1.0,
            }],
            from: None,
            to: None,
            step: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            precision: 0.05,
            repeat: 1,
            borderline: 0.10,
            retries: 2,
        }
    }
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// `1.50` -> `1.5`, `2.000` -> `2`, with at most `decimals` decimals.
fn trim_number(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A latency in ms as people write it: `0.612`, `1.9`, `12.4`, `250`.
fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        trim_number(v, 1)
    } else {
        trim_number(v, 3)
    }
}

/// A rate with thousands separators: `412,000`.
fn thousands(v: f64) -> String {
    let n = v.round().max(0.0) as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Parses `p99=1ms,p99.9=5ms` (units us, ms, s).
fn parse_slo(spec: &str) -> Result<Vec<Objective>, UsageError> {
    let bad = |why: &str| usage(format!("invalid value '{spec}' for '--slo': {why}"));
    let mut out: Vec<Objective> = Vec::new();
    for part in spec.split(',').map(str::trim) {
        let (p, limit) = part
            .split_once('=')
            .ok_or_else(|| bad("write each objective as pNN=LATENCY, e.g. p99=1ms"))?;
        let pct: f64 = p
            .trim()
            .strip_prefix(['p', 'P'])
            .and_then(|n| n.parse().ok())
            .filter(|n: &f64| n.is_finite() && *n > 0.0 && *n <= 100.0)
            .ok_or_else(|| {
                bad(&format!(
                    "'{p}' is not a percentile such as p50, p99 or p99.9"
                ))
            })?;
        let limit = limit.trim();
        let (num, scale) = if let Some(n) = limit.strip_suffix("us") {
            (n, 1e-3)
        } else if let Some(n) = limit.strip_suffix("µs") {
            (n, 1e-3)
        } else if let Some(n) = limit.strip_suffix("ms") {
            (n, 1.0)
        } else if let Some(n) = limit.strip_suffix('s') {
            (n, 1e3)
        } else {
            return Err(bad(&format!(
                "'{limit}' needs a unit: us, ms or s (e.g. 1ms)"
            )));
        };
        let max_ms = num
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| v * scale)
            .ok_or_else(|| bad(&format!("'{limit}' is not a latency above 0")))?;
        if out.iter().any(|o| o.percentile == pct) {
            return Err(bad(&format!("{p} is given twice")));
        }
        out.push(Objective {
            percentile: pct,
            max_ms,
        });
    }
    Ok(out)
}

fn parse_rate(flag: &str, v: &str) -> Result<f64, UsageError> {
    v.trim()
        .replace('_', "")
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r >= 1.0 && *r <= MAX_RATE)
        .ok_or_else(|| {
            usage(format!(
                "invalid value '{v}' for '{flag}': must be a rate from 1 to {MAX_RATE} requests per second"
            ))
        })
}

fn parse_seconds(flag: &str, v: &str, zero_ok: bool) -> Result<Duration, UsageError> {
    v.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (*s > 0.0 || (zero_ok && *s == 0.0)) && *s <= 86_400.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            let lowest = if zero_ok { "0 or more" } else { "above 0" };
            usage(format!(
                "invalid value '{v}' for '{flag}': must be a number of seconds, {lowest} and at most 86400"
            ))
        })
}

fn parse_precision(v: &str) -> Result<f64, UsageError> {
    let num = v.trim().trim_end_matches('%');
    num.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.1 && *p <= 100.0)
        .map(|p| p / 100.0)
        .ok_or_else(|| {
            usage(format!(
                "invalid value '{v}' for '--within': must be a percentage from 0.1% to 100% (e.g. 5%)"
            ))
        })
}

fn parse_count(flag: &str, v: &str, lowest: usize, highest: usize) -> Result<usize, UsageError> {
    v.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (lowest..=highest).contains(n))
        .ok_or_else(|| {
            usage(format!(
                "invalid value '{v}' for '{flag}': must be a whole number from {lowest} to {highest}"
            ))
        })
}

fn parse_borderline(v: &str) -> Result<f64, UsageError> {
    let num = v.trim().trim_end_matches('%');
    num.parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0 && *p <= 50.0)
        .map(|p| p / 100.0)
        .ok_or_else(|| {
            usage(format!(
                "invalid value '{v}' for '--borderline': must be a percentage from 0% to 50% (e.g. 10%)"
            ))
        })
}

impl SearchArgs {
    /// Checks the search's flags as written (`cli::capacity::SearchFlags`); `warmup` is the benchmark's
    /// `--warmup`, each step's warmup here.
    pub fn from_flags(flags: &SearchFlags, warmup: Option<f64>) -> Result<SearchArgs, UsageError> {
        let mut search = SearchArgs::default();
        let mut slos: Vec<Objective> = Vec::new();
        for value in &flags.slo {
            for o in parse_slo(value)? {
                if slos.iter().any(|s| s.percentile == o.percentile) {
                    return Err(usage(format!(
                        "invalid value '{value}' for '--slo': {} is given twice",
                        o.label()
                    )));
                }
                slos.push(o);
            }
        }
        if !slos.is_empty() {
            search.objectives = slos;
        }
        if let Some(v) = &flags.from {
            search.from = Some(parse_rate("--from", v)?);
        }
        if let Some(v) = &flags.to {
            search.to = Some(parse_rate("--to", v)?);
        }
        if let Some(v) = &flags.step_duration {
            search.step = parse_seconds("--step-duration", v, false)?;
        }
        if let Some(w) = warmup {
            search.warmup = parse_seconds("--warmup", &w.to_string(), true)?;
        }
        if let Some(v) = &flags.within {
            search.precision = parse_precision(v)?;
        }
        if let Some(v) = &flags.borderline {
            search.borderline = parse_borderline(v)?;
        }
        if let Some(v) = &flags.retries {
            search.retries = parse_count("--retries", v, 0, 10)?;
        }
        if let Some(v) = &flags.repeat {
            search.repeat = parse_count("--repeat", v, 1, 100)?;
        }
        if let (Some(f), Some(t)) = (search.from, search.to)
            && f > t
        {
            return Err(usage(format!(
                "invalid value '{f}' for '--from': it is above --to {t}"
            )));
        }
        Ok(search)
    }
}

/// Flags of a normal run that a search cannot take, checked on the parsed command line.
pub fn check_cli(cli: &crate::cli::Cli) -> Result<(), UsageError> {
    let refuse = |flag: &str, why: &str| {
        Err(usage(format!(
            "'{flag}' cannot be used with 'capacity': {why}"
        )))
    };
    if cli.rps.is_some() {
        return refuse(
            "--rps",
            "the search chooses each step's rate (see --from and --to)",
        );
    }
    if cli.duration.is_some() {
        return refuse("--duration", "each step runs for --step-duration");
    }
    if cli.requests_given {
        return refuse("-n", "each step runs for --step-duration");
    }
    if cli.loop_forever {
        return refuse("-l", "a search ends when it has its answer");
    }
    if cli.idle {
        return refuse("-I", "a search sends requests");
    }
    if cli.replay.is_some() {
        return refuse("--replay", "a search runs one test at the rates it chooses");
    }
    if cli.csv {
        return refuse("--csv", "use --json for machine-readable steps");
    }
    if cli.hdr_out.is_some() {
        return refuse("--hdr-out", "use --json: it keeps every step's histogram");
    }
    if cli.start_at.is_some() {
        return refuse("--start-at", "not supported by the search");
    }
    Ok(())
}

/// Whether a step passed, and why not.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub pass: bool,
    pub reasons: Vec<String>,
    /// The busiest executor's CPU share of the step.
    pub busy: f64,
    /// Failed with an executor busy at least `cost::BUSY_WARNING`, or with more than 1% of the requests
    /// sent late while their connection had room (the client fell behind its own schedule).
    pub client_limited: bool,
    /// Client-limited although no executor was busy: it fell behind while off a CPU (other processes held
    /// the cores). Such a step says nothing about the server, so the search runs it again.
    pub starved: bool,
    /// Passed, but a percentile is within the borderline margin of its objective.
    pub borderline: bool,
    /// Why the client spoiled a failing run (it fell behind while off a CPU, or the hypervisor stole CPU
    /// time): such a run says nothing about the server and is run again.
    pub spoiled: Option<String>,
    /// What the machine's CPUs did during the run (steal, idle).
    pub machine: Machine,
    /// The server's CPU during the run, in cores (INFO `used_cpu_user` + `used_cpu_sys` over the run's
    /// time; under `--cluster` the masters' sum); `None` without the server's view.
    pub server_busy: Option<f64>,
    /// Requests sent over 1 ms late while their connection had room.
    pub late: u64,
    /// A failing run whose server met the objectives (service time, from each actual send) while
    /// requests waited for their connection: why, in words.
    pub waited: Option<String>,
}

/// What the machine's CPUs did during a run, from /proc/stat: shares of all its CPU time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// Stolen by the hypervisor.
    pub steal: f64,
    /// Idle (idle and iowait).
    pub idle: f64,
}

/// Nothing stolen, nothing idle (what an unreadable /proc/stat gives).
const QUIET: Machine = Machine {
    steal: 0.0,
    idle: 0.0,
};

/// A client that fell behind while off a CPU with at least this share of the machine idle was not
/// crowded out by other processes: its wake-ups came late (the kernel's or the hypervisor's timers).
const IDLE_WOKEN_LATE: f64 = 0.25;

/// Why an executor that fell behind its schedule was off a CPU: crowded out, or woken late.
fn off_cpu_cause(idle: f64) -> String {
    if idle >= IDLE_WOKEN_LATE {
        format!(
            "the machine was {:.0}% idle, so nothing held its cores: its wake-ups came late (the kernel's \
             or the hypervisor's timers)",
            idle * 100.0
        )
    } else {
        format!(
            "other processes held its cores (the machine was {:.0}% idle)",
            idle * 100.0
        )
    }
}

/// Why a failing run failed when the server met every objective from each request's actual send (its
/// service time) and requests were sent over 1 ms late because their connection already had `-P`
/// waiting: the latency over the objective was spent waiting for a connection (one behind its schedule
/// sends each request as the last reply comes), not in the server. `None` otherwise.
fn waited_text(r: &TestResult, objectives: &[Objective]) -> Option<String> {
    let st = &r.stats;
    let service = st.service.as_ref().filter(|h| !h.is_empty())?;
    if st.late_full < MIN_LATE || st.late_full <= st.late_free {
        return None;
    }
    let mut within = Vec::new();
    for o in objectives {
        let v = service.value_at_quantile(o.percentile / 100.0) as f64 / 1e6;
        if v > o.max_ms {
            return None;
        }
        within.push(format!("{} {} ms", o.label(), fmt_ms(v)));
    }
    let slots = r.rate.map_or(0, |t| t.slots);
    Some(format!(
        "the server answered within the objective from each request's actual send (service time {}); \
         the time over it was spent before the send: {} requests waited over 1 ms for their connection \
         (-P already waiting), their connections behind schedule. The answer is the limit of {slots} \
         requests in flight (-c x -P) on this machine, not of the server alone",
        within.join(", "),
        thousands(st.late_full as f64)
    ))
}

/// A failing run during which the hypervisor stole at least this share of the machine's CPU time was
/// spoiled by the client's machine.
const STEAL_SPOILS: f64 = 0.02;

/// Judges a finished step against the objectives; `machine` is what the machine's CPUs did during it.
fn judge(
    r: &TestResult,
    offered: f64,
    objectives: &[Objective],
    borderline: f64,
    machine: Machine,
) -> Verdict {
    let mut reasons = Vec::new();
    for o in objectives {
        let v = r.quantile_ms(o.percentile / 100.0);
        if v > o.max_ms {
            reasons.push(format!(
                "{} {} ms > {} ms",
                o.label(),
                fmt_ms(v),
                fmt_ms(o.max_ms)
            ));
        }
    }
    let achieved = r.rps();
    if achieved < REACHED * offered {
        reasons.push(format!(
            "achieved {:.1}% of offered",
            100.0 * achieved / offered
        ));
    }
    if r.stats.failed > 0 {
        reasons.push(format!("{} requests failed", r.stats.failed));
    }
    if r.stats.errors > 0 {
        reasons.push(format!("{} error replies", r.stats.errors));
    }
    let busy = r
        .stats
        .executors
        .iter()
        .map(crate::stats::ExecutorStats::busy)
        .fold(0.0, f64::max);
    let pass = reasons.is_empty();
    // Requests sent late although their connection had room: the client, not the server, held them.
    let st = &r.stats;
    let late_with_room = st.late_free > st.late_full
        && st.late_free >= MIN_LATE
        && st.late_free * 100 > st.completed.max(1);
    // Short of the rate with the connections mostly empty: by Little's law the requests in flight were
    // the achieved rate times the service time (from the actual send); a server that held the rate back
    // would have held every slot. Under half of them in flight, the client did not send (it sent too
    // little to count many late sends when it was off a CPU most of the step).
    let slots = r.rate.map_or(0, |t| t.slots) as f64;
    // Nothing answered (no service time): the requests the step left unanswered are those in
    // flight. None sent to a server that took the connections is a client that never ran its
    // schedule (a step entirely off a CPU); a server that held the rate back would have them all.
    let in_flight = st
        .service
        .as_ref()
        .filter(|h| !h.is_empty())
        .map(|h| achieved * h.mean() / 1e9)
        .or_else(|| {
            (st.completed == 0 && st.conn_errors.is_empty())
                .then_some((st.in_flight + st.failed) as f64)
        });
    let idle_slots =
        achieved < REACHED * offered && slots > 0.0 && in_flight.is_some_and(|n| n < 0.5 * slots);
    let late_with_room = late_with_room || idle_slots;
    let saturated = busy >= crate::stats::cost::BUSY_WARNING;
    let starved = !pass && late_with_room && !saturated;
    let near = pass
        && borderline > 0.0
        && objectives
            .iter()
            .any(|o| r.quantile_ms(o.percentile / 100.0) >= o.max_ms * (1.0 - borderline));
    let spoiled = if starved {
        Some(format!(
            "behind its schedule while off a CPU (executor on a CPU {:.0}% of the step, {} sent late with room; {})",
            busy * 100.0,
            st.late_free,
            off_cpu_cause(machine.idle)
        ))
    } else if !pass && machine.steal >= STEAL_SPOILS {
        Some(format!(
            "CPU steal {:.1}% of the machine",
            machine.steal * 100.0
        ))
    } else {
        None
    };
    let client_limited = !pass && (saturated || late_with_room);
    let waited = if pass || client_limited {
        None
    } else {
        waited_text(r, objectives)
    };
    let server_busy = r
        .server
        .as_ref()
        .filter(|_| r.seconds > 0.0)
        .map(|v| v.cpu_s() / r.seconds);
    Verdict {
        pass,
        waited,
        server_busy,
        client_limited,
        starved,
        borderline: near,
        spoiled,
        machine,
        late: st.late_free,
        reasons,
        busy,
    }
}

/// The machine's CPU time in clock ticks, from /proc/stat's `cpu` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ticks {
    steal: u64,
    /// idle and iowait.
    idle: u64,
    total: u64,
}

fn cpu_ticks() -> Option<Ticks> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    cpu_ticks_of(&text)
}

fn cpu_ticks_of(text: &str) -> Option<Ticks> {
    let line = text.lines().next()?.strip_prefix("cpu ")?;
    // user nice system idle iowait irq softirq steal (guest time is counted in user already).
    let v: Vec<u64> = line
        .split_whitespace()
        .map_while(|x| x.parse().ok())
        .collect();
    Some(Ticks {
        steal: *v.get(7)?,
        idle: v[3] + v[4],
        total: v.iter().take(8).sum(),
    })
}

/// The shares of CPU time stolen and idle between two `cpu_ticks` readings (0 when unknown).
fn machine_between(before: Option<Ticks>, after: Option<Ticks>) -> Machine {
    match (before, after) {
        (Some(a), Some(b)) if b.total > a.total => {
            let total = (b.total - a.total) as f64;
            Machine {
                steal: b.steal.saturating_sub(a.steal) as f64 / total,
                idle: b.idle.saturating_sub(a.idle) as f64 / total,
            }
        }
        _ => QUIET,
    }
}

/// A step that failed with the client as the limit in one of its runs (`client`, the first such) says
/// so in its verdict `v`, even when its last run fell short for a reason the client cannot see, and
/// gives that run's figures (not the last run's, which did not show it).
fn carry_client_limit(v: &mut Verdict, client: Option<Verdict>) {
    if let Some(c) = client.filter(|_| !v.pass && !v.client_limited) {
        v.client_limited = true;
        // The client, not a wait for connections, is then what the step says failed it.
        v.waited = None;
        v.starved = c.starved;
        v.busy = c.busy;
        v.machine = c.machine;
        v.late = c.late;
    }
}

/// Which run of a step this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunKind {
    First,
    /// The run before was spoiled by the client.
    Retry,
    /// Confirms a failing or borderline first run.
    Confirm,
    /// The first two counted runs disagreed.
    Tiebreak,
}

impl RunKind {
    fn name(self) -> &'static str {
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
struct Settle {
    retries: usize,
    retried: usize,
    votes: Vec<bool>,
}

impl Settle {
    fn new(retries: usize) -> Self {
        Settle {
            retries,
            ..Default::default()
        }
    }

    /// Feeds one run's verdict; returns the next run to make, or None when the step is settled.
    fn feed(&mut self, v: &Verdict) -> Option<RunKind> {
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
    fn confirmations(&self) -> usize {
        self.votes.len().saturating_sub(1)
    }

    /// The counted runs disagreed.
    fn noisy(&self) -> bool {
        self.votes.iter().any(|&p| p) && self.votes.iter().any(|&p| !p)
    }
}

/// The percentiles a step line shows: p50, p99, p99.9 and any other objective's.
fn shown_percentiles(objectives: &[Objective]) -> Vec<f64> {
    let mut ps = vec![50.0, 99.0, 99.9];
    for o in objectives {
        if !ps.contains(&o.percentile) {
            ps.push(o.percentile);
        }
    }
    ps.sort_by(f64::total_cmp);
    ps
}

/// One step's live line (with its newline).
fn step_line(
    n: usize,
    offered: f64,
    r: &TestResult,
    v: &Verdict,
    objectives: &[Objective],
) -> String {
    let mut s = format!(
        "step {n:>2}: offered {:>11} rps  achieved {:>11} rps ",
        thousands(offered),
        thousands(r.rps())
    );
    for p in shown_percentiles(objectives) {
        let _ = write!(
            s,
            " p{} {} ms",
            trim_number(p, 4),
            fmt_ms(r.quantile_ms(p / 100.0))
        );
    }
    if v.pass {
        s.push_str("  pass");
        if v.borderline {
            s.push_str(" (borderline)");
        }
    } else {
        let _ = write!(s, "  FAIL: {}", v.reasons.join("; "));
        if v.starved {
            let _ = write!(
                s,
                " (client fell behind while off a CPU: executor on a CPU {:.0}% of the step, {} sent late with room)",
                v.busy * 100.0,
                r.stats.late_free
            );
        } else if v.client_limited {
            let _ = write!(
                s,
                " (client-limited: executor busy {:.0}%, {} sent late with room)",
                v.busy * 100.0,
                r.stats.late_free
            );
        }
        if let Some(why) = v.spoiled.as_ref().filter(|_| !v.starved) {
            let _ = write!(s, " (spoiled by the client's machine: {why})");
        }
    }
    s.push('\n');
    s
}

/// The objectives as text: `p99 <= 1 ms, p99.9 <= 5 ms`.
fn objectives_text(objectives: &[Objective]) -> String {
    objectives
        .iter()
        .map(|o| format!("{} <= {} ms", o.label(), fmt_ms(o.max_ms)))
        .collect::<Vec<_>>()
        .join(", ")
}

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
fn search(
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

/// The final answer's lines (each with its newline).
fn answer_text(
    steps: &[Judged],
    answer: &Answer,
    objectives: &[Objective],
    to: f64,
    threads: usize,
    stopped: bool,
) -> String {
    let mut s = String::new();
    let slo = objectives_text(objectives);
    if stopped {
        s.push_str("search stopped before it converged; the answer so far:\n");
    }
    match (answer.capacity, answer.next) {
        (Some(p), Some(f)) => {
            let next = &steps[f];
            let _ = writeln!(
                s,
                "capacity: {} rps at {slo} (next step {} rps: {})",
                thousands(steps[p].offered),
                thousands(next.offered),
                next.verdict.reasons.join("; ")
            );
        }
        (Some(p), None) if stopped => {
            let _ = writeln!(
                s,
                "capacity: at least {} rps at {slo} (no step failed before the stop)",
                thousands(steps[p].offered)
            );
        }
        (Some(p), None) => {
            let _ = writeln!(
                s,
                "capacity: at least {} rps at {slo} (every step passed, up to --to {}; raise --to to search higher)",
                thousands(steps[p].offered),
                thousands(to)
            );
        }
        (None, Some(f)) => {
            let next = &steps[f];
            let _ = writeln!(
                s,
                "capacity: below {} rps at {slo} (no step passed; the lowest, {} rps: {})",
                thousands(next.offered),
                thousands(next.offered),
                next.verdict.reasons.join("; ")
            );
        }
        (None, None) => s.push_str("capacity: unknown (no step ran)\n"),
    }
    if let Some(f) = answer.next
        && steps[f].verdict.client_limited
    {
        let v = &steps[f].verdict;
        let late = v.late;
        let why = if v.starved {
            format!(
                "it fell behind its schedule ({late} requests sent late with room in the pipeline) while its \
                 executor was on a CPU only {:.0}% of the step: {}; give the executors idle cores with \
                 --cpus, more --threads, or a quieter machine",
                v.busy * 100.0,
                off_cpu_cause(v.machine.idle)
            )
        } else {
            format!(
                "an executor was busy {:.0}% of the step ({late} requests sent late with room in the \
                 pipeline); this is ringbench's ceiling with --threads {threads}: add --threads or give the \
                 executors more cores with --cpus",
                v.busy * 100.0
            )
        };
        let _ = writeln!(
            s,
            "client-limited: the client was the limit at {} rps, not the server: {why}; then search again",
            thousands(steps[f].offered)
        );
    }
    if let Some(f) = answer.next
        && let Some(w) = &steps[f].verdict.waited
    {
        let _ = writeln!(
            s,
            "in-flight limit: at {} rps {w}",
            thousands(steps[f].offered)
        );
    }
    s
}

/// Everything a finished search produced.
pub struct SearchRun {
    pub outcome: RunOutcome,
    pub entry: CapacityEntry,
}

fn step_config(cfg: &Config, rps: Option<f64>, duration: Duration) -> Arc<Config> {
    let mut c = cfg.clone();
    c.run.shape.rps = rps;
    c.run.shape.duration = Some(duration);
    c.run.shape.warmup = None;
    c.run.loop_forever = false;
    Arc::new(c)
}

/// One run of a step, as run.
struct Record {
    offered: f64,
    result: TestResult,
    warmup: u64,
    verdict: Verdict,
    /// Not the run that counts: the step was run again (spoiled, or to be confirmed).
    repeated: bool,
    /// The search (1-based) and its step (1-based).
    search: usize,
    step: usize,
    kind: RunKind,
}

/// Runs one step at `rate`: its warmup (dropped), then the measured open-loop run, with the machine's CPU
/// steal share during it. `None` when stopped.
fn run_step(
    cfg: &Config,
    test: &crate::workload::TestSpec,
    rate: f64,
    args: &SearchArgs,
    control: &RunControl,
    watch: &mut Watches,
    stderr: &mut dyn Write,
) -> Result<Option<(TestResult, u64, Machine)>, RunError> {
    let scfg = step_config(cfg, Some(rate), args.step);
    let mut warm = 0;
    if !args.warmup.is_zero() {
        let budget = Budget {
            requests: u64::MAX,
            duration: Some(args.warmup),
        };
        warm = engine::run_phase(&scfg, test, budget, control, stderr, |_| {})?.completed;
        if control.stopped() {
            return Ok(None);
        }
    }
    watch.begin();
    let budget = Budget {
        requests: u64::MAX,
        duration: Some(args.step),
    };
    let ticks = cpu_ticks();
    let st = engine::run_phase(&scfg, test, budget, control, stderr, |_| watch.sample())?;
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
        slots: cfg.run.clients * cfg.run.pipeline,
    });
    let per_node = |name: &str| {
        r.stats.cluster.as_ref().map_or(0, |c| {
            c.nodes
                .iter()
                .filter(|n| n.name == name)
                .map(|n| n.completed)
                .sum()
        })
    };
    let view = watch.end(r.stats.completed, per_node, false);
    r.server = view;
    Ok(Some((r, warm, machine)))
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
fn far_below(
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
struct Searched {
    steps: Vec<Judged>,
    answer: Answer,
    probe: Option<ProbeEntry>,
    runs: usize,
    confirmations: u64,
    spoiled: u64,
    noisy: u64,
    far: Option<FarBelowEntry>,
}

impl Searched {
    fn capacity(&self) -> Option<f64> {
        self.answer.capacity.map(|i| self.steps[i].offered)
    }

    fn next(&self) -> Option<f64> {
        self.answer.next.map(|i| self.steps[i].offered)
    }

    /// The server's CPU (cores) during the lowest failing step above the answer.
    fn next_server_busy(&self) -> Option<f64> {
        self.answer
            .next
            .and_then(|i| self.steps[i].verdict.server_busy)
    }

    fn client_limited(&self) -> bool {
        self.answer
            .next
            .is_some_and(|i| self.steps[i].verdict.client_limited)
    }

    fn entry(&self) -> SearchEntry {
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

/// The lines after a search's answer (each with its newline): how much checking it took, and, when the
/// answer is far below the closed-loop probe, why. `quiet` leaves the checking out.
fn notes_text(s: &Searched, quiet: bool) -> String {
    let mut t = String::new();
    if !quiet {
        let disagreed = if s.noisy > 0 {
            format!(
                " ({} step{} whose runs disagreed: a third run decided)",
                s.noisy,
                if s.noisy == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            t,
            "checked: {} confirming run{}{disagreed}; {} run{} spoiled by the client, run again; {} runs in all",
            s.confirmations,
            if s.confirmations == 1 { "" } else { "s" },
            s.spoiled,
            if s.spoiled == 1 { "" } else { "s" },
            s.runs
        );
    }
    if let (Some(f), Some(p)) = (&s.far, &s.probe) {
        let cap = s.capacity().unwrap_or(0.0);
        let why = match f.why.as_str() {
            "client-limited" => "the client was the limit, not the server (see client-limited)".to_string(),
            "noisy" => format!(
                "noisy steps ({} run{} spoiled by the client, {} step{} whose runs disagreed): other work held \
                 the machine's cores; search again on a quieter machine, or quote the median of --repeat",
                s.spoiled,
                if s.spoiled == 1 { "" } else { "s" },
                s.noisy,
                if s.noisy == 1 { "" } else { "s" }
            ),
            "server-at-ease" => format!(
                "the server was at ease: the steps above failed on latency, confirmed, with the client \
                 keeping up and the server using {:.0}% of a core during the first of them, so not its load \
                 but a latency floor or stalls (the network's round trip, late wake-ups of the machine's \
                 CPUs, a pause of the server such as a fork); search again, or quote the median of --repeat",
                100.0 * s.next_server_busy().unwrap_or(0.0)
            ),
            _ => "the objective is out of reach on this machine above it: the steps above failed on \
                  latency, confirmed, with the client keeping up (the server, or stalls of a machine \
                  shared with other work)"
                .to_string(),
        };
        let _ = writeln!(
            t,
            "far below the closed loop: {} rps is {:.1}% of the probe's {} rps: {why}",
            thousands(cap),
            100.0 * f.share,
            thousands(p.rps)
        );
    }
    t
}

/// The index of the median of `values` (the lower middle one when their count is even).
fn median_index(values: &[f64]) -> Option<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    order.get(values.len().saturating_sub(1) / 2).copied()
}

/// The summary of several searches (with its newline).
fn spread_text(answers: &[f64]) -> String {
    let Some(m) = median_index(answers) else {
        return String::new();
    };
    let min = answers.iter().copied().fold(f64::MAX, f64::min);
    let max = answers.iter().copied().fold(0.0, f64::max);
    let ratio = if min > 0.0 {
        format!("max/min {:.2}", max / min)
    } else {
        "max/min unbounded: a search had no passing step".to_string()
    };
    let all: Vec<String> = answers.iter().map(|a| thousands(*a)).collect();
    format!(
        "over {} searches: median {} rps, min {}, max {} ({ratio}); answers {}\n",
        answers.len(),
        thousands(answers[m]),
        thousands(min),
        thousands(max),
        all.join(" / ")
    )
}

/// What one search needs, across the searches of a run.
struct Searcher<'a> {
    cfg: &'a Config,
    test: &'a crate::workload::TestSpec,
    args: &'a SearchArgs,
    control: &'a RunControl,
    watch: Watches,
    quiet: bool,
}

impl Searcher<'_> {
    /// Runs search number `k` (1-based): the probe (without --to), then the steps, each settled; prints
    /// its lines and its answer to `out`, and appends every run to `records`.
    fn once(
        &mut self,
        k: usize,
        out: &mut dyn Write,
        stderr: &mut dyn Write,
        records: &mut Vec<Record>,
    ) -> Result<Searched, RunError> {
        let (cfg, test, args, control, quiet) =
            (self.cfg, self.test, self.args, self.control, self.quiet);
        // The upper bound: --to, or a short closed-loop probe of the server's maximum.
        let mut probe = None;
        let to = match args.to {
            Some(t) => t,
            None => {
                let secs = args.step.min(Duration::from_secs(2));
                let pcfg = step_config(cfg, None, secs);
                let budget = Budget {
                    requests: u64::MAX,
                    duration: Some(secs),
                };
                let st = engine::run_phase(&pcfg, test, budget, control, stderr, |_| {})?;
                let r = TestResult::new(test.title.clone(), st.completed, st);
                let rps = r.rps();
                probe = Some(ProbeEntry {
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
                to
            }
        };
        let from = args
            .from
            .unwrap_or_else(|| (to / FROM_DIVISOR).round().max(1.0))
            .min(to);
        let first = records.len();
        let mut failure: Option<RunError> = None;
        let mut write_failed: Option<std::io::Error> = None;
        let (mut confirmations, mut spoiled, mut noisy) = (0u64, 0u64, 0u64);
        let mut judged = 0usize;
        let watch = &mut self.watch;
        let (steps, answer) = search(from, to, args.precision, |rate| {
            let mut settle = Settle::new(args.retries);
            let mut kind = RunKind::First;
            // The first failing run of this step that had the client as its limit (spoiled ones
            // included).
            let mut client: Option<Verdict> = None;
            loop {
                if control.stopped() || failure.is_some() {
                    return None;
                }
                let (r, warm, machine) =
                    match run_step(cfg, test, rate, args, control, watch, stderr) {
                        Ok(Some(x)) => x,
                        Ok(None) => return None,
                        Err(e) => {
                            failure = Some(e);
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
                        step_line(records.len() - first + 1, rate, &r, &v, &args.objectives);
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
                        write_failed.get_or_insert(e);
                    }
                }
                let mut r = r;
                if args.repeat > 1 {
                    let _ = write!(r.title, " [search {k}]");
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
                    search: k,
                    step: judged + 1,
                    kind,
                });
                match next {
                    Some(n) => kind = n,
                    None => {
                        carry_client_limit(&mut v, client.take());
                        judged += 1;
                        confirmations += settle.confirmations() as u64;
                        spoiled += settle.retried as u64;
                        noisy += u64::from(settle.noisy());
                        return Some(v);
                    }
                }
            }
        });
        // Runs of a step the search did not finish (stopped) still count as made.
        if let Some(e) = failure {
            return Err(e);
        }
        if let Some(e) = write_failed {
            return Err(e.into());
        }
        let stopped = control.stopped();
        let text = answer_text(
            &steps,
            &answer,
            &args.objectives,
            to,
            cfg.run.threads,
            stopped,
        );
        out.write_all(text.as_bytes())?;
        let mut s = Searched {
            steps,
            answer,
            probe,
            runs: records.len() - first,
            confirmations,
            spoiled,
            noisy,
            far: None,
        };
        s.far = far_below(
            s.capacity(),
            s.probe.as_ref().map(|p| p.rps),
            s.client_limited(),
            spoiled,
            noisy,
            s.next_server_busy(),
        );
        out.write_all(notes_text(&s, quiet).as_bytes())?;
        out.flush()?;
        Ok(s)
    }
}

/// Runs the search against the server of `cfg` (one test; with `--cluster`, its masters), printing a line
/// per run to `stdout`, then the answer; with `--repeat` it runs that many searches and ends with their
/// median and spread. Writes `--json` and `--plot` at the end. Warnings and `-e`'s error replies go to
/// `stderr`.
pub fn run(
    mut cfg: Config,
    args: &SearchArgs,
    control: &RunControl,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<SearchRun, RunError> {
    if cfg.run.verify.is_some() {
        return Err(RunError::Usage(usage(
            "'capacity' cannot be combined with --data-verify or --verify-only: they check values, not a rate",
        )));
    }
    if cfg.run.metrics.is_some() {
        return Err(RunError::Usage(usage(
            "'capacity' cannot be combined with --metrics-listen or --statsd: its steps are short runs at rates it chooses; watch its JSON or --plot instead",
        )));
    }
    if cfg.tests.len() != 1 {
        return Err(RunError::Usage(usage(format!(
            "'capacity' searches one test at a time, not {}: give one with -t, --mix or a command",
            cfg.tests.len()
        ))));
    }
    let test = cfg.tests[0].clone();
    let mut sink = std::io::sink();
    let to_stdout = crate::report::results::json_to_stdout(&cfg);
    let quiet = cfg.run.output == crate::config::OutputMode::Quiet;
    let out: &mut dyn Write = if to_stdout { &mut sink } else { stdout };
    crate::config::limits::prepare(cfg.run.clients, cfg.run.threads)?;
    let ctl = crate::net::control::ControlClient::connect(
        &cfg.target,
        cfg.tls.as_ref(),
        &cfg.setup,
        cfg.run.connect_timeout,
    )?;
    let watch_of = |ctl, target: &crate::net::target::Target| {
        ServerWatch::new(
            ctl,
            target,
            cfg.tls.as_ref(),
            &cfg.setup,
            cfg.run.connect_timeout,
        )
    };
    // With --cluster every step is checked against every master (the same discovery as a normal run:
    // a node that is not a cluster, or fewer clients than masters, ends here).
    let mut masters = 0;
    let watch = if cfg.run.cluster {
        let (_, targets) = crate::cluster_header(&cfg)?;
        drop(ctl);
        masters = targets.len();
        cfg.run.local_servers = crate::local_masters(&targets);
        Watches::cluster(
            targets
                .iter()
                .map(|t| (t.display(), watch_of(None, t)))
                .collect(),
            cfg.tls.as_ref(),
            &cfg.setup,
            cfg.run.connect_timeout,
        )
    } else {
        Watches::one(watch_of(Some(ctl), &cfg.target))
    };
    if cfg.run.threads > 1
        && let (_, Some(w)) = engine::plan_cores(
            cfg.run.threads.min(cfg.run.clients),
            cfg.run.cpus.as_deref(),
            cfg.run.local_servers,
        )
    {
        let _ = writeln!(stderr, "ringbench: {w}");
    }
    if !quiet {
        let cluster = if masters > 0 {
            format!(" --cluster ({masters} masters)")
        } else {
            String::new()
        };
        writeln!(
            out,
            "capacity search: {}; -c {} -P {} --threads {}{cluster}; objective {}",
            test.title,
            cfg.run.clients,
            cfg.run.pipeline,
            cfg.run.threads,
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
        out.flush()?;
    }
    let mut searcher = Searcher {
        cfg: &cfg,
        test: &test,
        args,
        control,
        watch,
        quiet,
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
    let chosen = median.map(|m| &searches[m]);
    let total = |f: fn(&Searched) -> u64| searches.iter().map(f).sum::<u64>();
    let entry = CapacityEntry {
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
    };
    if let Some(dest) = &cfg.run.json {
        let host = host_name();
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
    // The knee of the median search; a search stopped before its first step ended has nothing to draw.
    let knee = median.map_or(0, |m| m + 1);
    if let Some(path) = cfg
        .run
        .plot
        .as_ref()
        .filter(|_| records.iter().any(|r| r.search == knee))
    {
        let points: Vec<crate::report::plot::KneePoint> = records
            .iter()
            .filter(|rec| !rec.repeated && rec.search == knee)
            .map(|rec| crate::report::plot::KneePoint {
                offered: rec.offered,
                pass: rec.verdict.pass,
                hist: &rec.result.stats.hist,
            })
            .collect();
        let objectives: Vec<(f64, f64)> = args
            .objectives
            .iter()
            .map(|o| (o.percentile, o.max_ms))
            .collect();
        let title = format!(
            "ringbench capacity: {}\n{}",
            test.title,
            crate::report::result_file::RunConfig::of(&cfg).summary(false)
        );
        crate::report::plot::write_knee(path, &title, &points, &objectives, entry.capacity_rps)
            .map_err(|e| RunError::Results(vec![e.into()]))?;
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(pass: bool) -> Verdict {
        Verdict {
            pass,
            reasons: if pass { vec![] } else { vec!["x".into()] },
            busy: 0.5,
            client_limited: false,
            starved: false,
            borderline: false,
            spoiled: None,
            machine: QUIET,
            server_busy: None,
            late: 0,
            waited: None,
        }
    }

    #[test]
    fn slo_parsing() {
        assert_eq!(
            parse_slo("p99=1ms").unwrap(),
            [Objective {
                percentile: 99.0,
                max_ms: 1.0
            }]
        );
        let v = parse_slo("p50=300us, p99.9=0.005s").unwrap();
        assert_eq!(v[0].max_ms, 0.3);
        assert_eq!(v[1].percentile, 99.9);
        assert!((v[1].max_ms - 5.0).abs() < 1e-9);
        assert_eq!(v[1].label(), "p99.9");
        for bad in [
            "p99",
            "p99=1",
            "q99=1ms",
            "p0=1ms",
            "p101=1ms",
            "p99=-1ms",
            "p99=1ms,p99=2ms",
        ] {
            let e = parse_slo(bad).unwrap_err().0;
            assert!(e.contains("'--slo'"), "{bad}: {e}");
        }
    }

    /// The search's flags of `ringbench capacity ARGS`, parsed with the command line's definition.
    fn search_of(args: &[&str]) -> Result<SearchArgs, String> {
        match crate::cli::command::parse_words(&[&["capacity"][..], args].concat()) {
            Ok(crate::cli::command::Parsed::Capacity(flags, cli)) => {
                SearchArgs::from_flags(&flags, cli.warmup).map_err(|e| e.0)
            }
            Ok(p) => panic!("{p:?}"),
            Err(e) => Err(e.line()),
        }
    }

    #[test]
    fn own_flags_are_read_beside_the_benchmark_flags() {
        let s = search_of(&[
            "-t",
            "get",
            "--slo",
            "p99=2ms",
            "--slo=p50=0.5ms",
            "--from",
            "1000",
            "--to=8000",
            "--step-duration",
            "0.5",
            "--warmup",
            "0",
            "--within",
            "10%",
            "-P",
            "4",
        ])
        .unwrap();
        assert_eq!(s.objectives.len(), 2);
        assert_eq!((s.from, s.to), (Some(1000.0), Some(8000.0)));
        assert_eq!(s.step, Duration::from_millis(500));
        assert!(s.warmup.is_zero());
        assert!((s.precision - 0.1).abs() < 1e-12);
        let err = |a: &[&str]| search_of(a).unwrap_err();
        assert!(err(&["--from"]).contains("'--from <rate>'"));
        assert!(err(&["--from", "0"]).contains("'--from'"));
        assert!(err(&["--within", "0%"]).contains("'--within'"));
        assert!(err(&["--step-duration", "0"]).contains("'--step-duration'"));
        assert!(err(&["--from", "10", "--to", "5"]).contains("'--from'"));
        assert!(err(&["--slo", "p99=1ms", "--slo", "p99=2ms"]).contains("given twice"));
    }

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

    fn result_with(completed: u64, seconds: f64, busy: f64, late_free: u64) -> TestResult {
        let mut st = crate::stats::ShardStats::new(3);
        st.hist.record_n(100_000, completed).unwrap();
        st.completed = completed;
        st.late_free = late_free;
        st.executors.push(crate::stats::ExecutorStats {
            cpu_user_s: busy * seconds,
            wall_s: seconds,
            ..Default::default()
        });
        let mut r = TestResult::new("t".into(), completed, st);
        r.seconds = seconds;
        r
    }

    #[test]
    fn a_step_whose_server_met_the_objective_says_its_requests_waited_for_their_connections() {
        let slo = parse_slo("p99=1ms").unwrap();
        // p99 5 ms from the intended sends, 0.2 ms from the actual ones, 40 sent late behind a full
        // pipeline: the time over the objective was spent waiting for a connection.
        let waiting = |late_full: u64, service_ns: u64| {
            let mut r = result_with(1000, 1.0, 0.5, 0);
            r.stats.hist.reset();
            r.stats.hist.record_n(5_000_000, 1000).unwrap();
            let mut svc = crate::stats::new_histogram(3);
            svc.record_n(service_ns, 1000).unwrap();
            r.stats.service = Some(svc);
            r.stats.late_full = late_full;
            r.rate = Some(RateTarget {
                rps: 1000.0,
                slots: 50,
            });
            r
        };
        let v = judge(&waiting(40, 200_000), 1000.0, &slo, 0.0, QUIET);
        assert!(!v.pass && !v.client_limited, "{v:?}");
        let w = v.waited.as_deref().expect("the wait is named");
        assert!(
            w.contains("service time p99 0.2 ms")
                && w.contains("40 requests waited")
                && w.contains("50"),
            "{w}"
        );
        let steps = [Judged {
            offered: 1000.0,
            verdict: v,
        }];
        let a = Answer {
            capacity: None,
            next: Some(0),
        };
        let text = answer_text(&steps, &a, &slo, 1000.0, 1, false);
        assert!(
            text.contains("in-flight limit: at 1,000 rps the server answered"),
            "{text}"
        );
        // A step made client-limited by an earlier run of it (carry_client_limit) names the client,
        // not a wait for connections.
        let mut carried = judge(&waiting(40, 200_000), 1000.0, &slo, 0.0, QUIET);
        carry_client_limit(
            &mut carried,
            Some(Verdict {
                client_limited: true,
                busy: 0.95,
                ..verdict(false)
            }),
        );
        let steps = [Judged {
            offered: 1000.0,
            verdict: carried,
        }];
        let text = answer_text(&steps, &a, &slo, 1000.0, 1, false);
        assert!(
            text.contains("client-limited:") && !text.contains("in-flight limit"),
            "{text}"
        );
        // The server over the objective itself, or no sends held behind a full pipeline: not said.
        assert_eq!(
            judge(&waiting(40, 3_000_000), 1000.0, &slo, 0.0, QUIET).waited,
            None
        );
        assert_eq!(
            judge(&waiting(0, 200_000), 1000.0, &slo, 0.0, QUIET).waited,
            None
        );
    }

    #[test]
    fn verdicts_name_the_limit() {
        let slo = parse_slo("p99=1ms").unwrap();
        // Reached, fast: pass.
        let v = judge(&result_with(1000, 1.0, 0.5, 0), 1000.0, &slo, 0.0, QUIET);
        assert!(v.pass && !v.client_limited, "{v:?}");
        // Short of the rate with a saturated executor: the client is the limit.
        let v = judge(&result_with(800, 1.0, 0.95, 0), 1000.0, &slo, 0.0, QUIET);
        assert!(!v.pass && v.client_limited && !v.starved, "{v:?}");
        assert_eq!(v.reasons, ["achieved 80.0% of offered"]);
        // Short with an idle executor and no late sends: the server.
        let v = judge(&result_with(800, 1.0, 0.3, 0), 1000.0, &slo, 0.0, QUIET);
        assert!(!v.pass && !v.client_limited, "{v:?}");
        // Late with room while off a CPU: starved, run again.
        let v = judge(&result_with(800, 1.0, 0.3, 100), 1000.0, &slo, 0.0, QUIET);
        assert!(v.client_limited && v.starved, "{v:?}");
        // Over the objective.
        let v = judge(
            &result_with(1000, 1.0, 0.3, 0),
            1000.0,
            &parse_slo("p50=50us").unwrap(),
            0.0,
            QUIET,
        );
        assert_eq!(v.reasons, ["p50 0.1 ms > 0.05 ms"]);
        let steps = [
            Judged {
                offered: 500.0,
                verdict: judge(&result_with(500, 1.0, 0.5, 0), 500.0, &slo, 0.0, QUIET),
            },
            Judged {
                offered: 1000.0,
                verdict: judge(&result_with(800, 1.0, 0.95, 0), 1000.0, &slo, 0.0, QUIET),
            },
        ];
        let a = Answer {
            capacity: Some(0),
            next: Some(1),
        };
        let text = answer_text(&steps, &a, &slo, 1000.0, 1, false);
        assert!(
            text.starts_with(
                "capacity: 500 rps at p99 <= 1 ms (next step 1,000 rps: achieved 80.0% of offered)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("client-limited: the client was the limit at 1,000 rps"),
            "{text}"
        );
        assert!(
            text.contains("busy 95%") && text.contains("--threads 1"),
            "{text}"
        );
    }

    #[test]
    fn a_step_client_limited_by_an_earlier_run_quotes_that_runs_figures() {
        // The first run: 94% busy with 50 sent late, client-limited. The confirming run fails too, at
        // 85% with none late: the step is client-limited, and says so with the first run's figures.
        let first = Verdict {
            client_limited: true,
            busy: 0.94,
            late: 50,
            machine: Machine {
                steal: 0.0,
                idle: 0.1,
            },
            ..verdict(false)
        };
        let mut last = Verdict {
            busy: 0.85,
            ..verdict(false)
        };
        carry_client_limit(&mut last, Some(first.clone()));
        assert!(last.client_limited && !last.starved, "{last:?}");
        assert_eq!((last.busy, last.late, last.machine.idle), (0.94, 50, 0.1));
        // A last run that passed, or one client-limited itself, keeps its own verdict.
        let mut passed = verdict(true);
        carry_client_limit(&mut passed, Some(first.clone()));
        assert_eq!(passed, verdict(true));
        let own = Verdict {
            client_limited: true,
            busy: 0.97,
            late: 3,
            ..verdict(false)
        };
        let mut v = own.clone();
        carry_client_limit(&mut v, Some(first));
        assert_eq!(v, own);
    }

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

    #[test]
    fn spoiled_and_borderline_runs_are_recognised() {
        let slo = parse_slo("p99=1ms").unwrap();
        // Off a CPU and behind its schedule: spoiled. With the machine busy, other processes held the
        // cores; with it mostly idle, nothing did: the executor's wake-ups came late.
        let v = judge(&result_with(800, 1.0, 0.3, 100), 1000.0, &slo, 0.1, QUIET);
        let why = v.spoiled.as_deref().unwrap();
        assert!(
            why.contains("off a CPU") && why.contains("other processes held"),
            "{v:?}"
        );
        let idle = Machine {
            steal: 0.0,
            idle: 0.6,
        };
        let v = judge(&result_with(800, 1.0, 0.3, 100), 1000.0, &slo, 0.1, idle);
        let why = v.spoiled.as_deref().unwrap();
        assert!(
            why.contains("60% idle") && why.contains("wake-ups came late"),
            "{v:?}"
        );
        assert!(!why.contains("other processes"), "{v:?}");
        // CPU steal during a failing run: spoiled; during a passing one: nothing to retry.
        let stolen = Machine {
            steal: 0.05,
            idle: 0.5,
        };
        let v = judge(&result_with(800, 1.0, 0.3, 0), 1000.0, &slo, 0.1, stolen);
        assert_eq!(v.spoiled.as_deref(), Some("CPU steal 5.0% of the machine"));
        let v = judge(&result_with(1000, 1.0, 0.3, 0), 1000.0, &slo, 0.1, stolen);
        assert!(v.pass && v.spoiled.is_none(), "{v:?}");
        // Short of the rate with the slots mostly empty (0.8 in flight of 10 by Little's law): the
        // client did not send, although it counted few late sends.
        let mut r = result_with(800, 1.0, 0.3, 0);
        r.rate = Some(RateTarget {
            rps: 1000.0,
            slots: 10,
        });
        let mut service = crate::stats::new_histogram(3);
        service.record_n(1_000_000, 800).unwrap();
        r.stats.service = Some(service);
        let v = judge(&r, 1000.0, &slo, 0.1, QUIET);
        assert!(
            v.client_limited && v.starved && v.spoiled.is_some(),
            "{v:?}"
        );
        // The same shortfall with every slot full (10 in flight): the server.
        let mut service = crate::stats::new_histogram(3);
        service.record_n(12_500_000, 800).unwrap();
        r.stats.service = Some(service);
        let v = judge(&r, 1000.0, &slo, 0.1, QUIET);
        assert!(!v.client_limited && v.spoiled.is_none(), "{v:?}");
        // Nothing sent and nothing answered, the connections up: the client never ran its schedule.
        let mut idle = result_with(0, 0.3, 0.0, 0);
        idle.rate = Some(RateTarget {
            rps: 1000.0,
            slots: 10,
        });
        let v = judge(&idle, 1000.0, &slo, 0.1, QUIET);
        assert!(
            v.client_limited && v.starved && v.spoiled.is_some(),
            "{v:?}"
        );
        // Every slot sent and none answered: the server.
        idle.stats.in_flight = 10;
        let v = judge(&idle, 1000.0, &slo, 0.1, QUIET);
        assert!(!v.client_limited && v.spoiled.is_none(), "{v:?}");
        // Nothing sent because the connections failed: not the client's schedule.
        idle.stats.in_flight = 0;
        idle.stats.conn_errors.push("refused".into());
        let v = judge(&idle, 1000.0, &slo, 0.1, QUIET);
        assert!(!v.client_limited && v.spoiled.is_none(), "{v:?}");
        // Saturated: the client's ceiling, not spoiled (a rerun would say the same).
        let v = judge(&result_with(800, 1.0, 0.95, 0), 1000.0, &slo, 0.1, QUIET);
        assert!(v.client_limited && v.spoiled.is_none(), "{v:?}");
        // p99 of 0.1 ms against 0.105 ms: within 10%, borderline; against 1 ms: not.
        let tight = parse_slo("p99=105us").unwrap();
        let v = judge(&result_with(1000, 1.0, 0.3, 0), 1000.0, &tight, 0.1, QUIET);
        assert!(v.pass && v.borderline, "{v:?}");
        let v = judge(&result_with(1000, 1.0, 0.3, 0), 1000.0, &tight, 0.0, QUIET);
        assert!(v.pass && !v.borderline, "{v:?}");
        let v = judge(&result_with(1000, 1.0, 0.3, 0), 1000.0, &slo, 0.1, QUIET);
        assert!(v.pass && !v.borderline, "{v:?}");
    }

    #[test]
    fn cpu_steal_and_idle_are_read_from_proc_stat() {
        let before = "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3\n";
        let after = "cpu  150 0 60 880 10 0 0 50 0 0\n";
        assert_eq!(
            cpu_ticks_of(before),
            Some(Ticks {
                steal: 40,
                idle: 810,
                total: 1000
            })
        );
        let m = machine_between(cpu_ticks_of(before), cpu_ticks_of(after));
        assert!((m.steal - 10.0 / 150.0).abs() < 1e-12, "{m:?}");
        assert!((m.idle - 80.0 / 150.0).abs() < 1e-12, "{m:?}");
        assert_eq!(machine_between(None, cpu_ticks_of(after)), QUIET);
        assert!(cpu_ticks().is_some());
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

    #[test]
    fn repeated_searches_report_median_and_spread() {
        assert_eq!(median_index(&[3.0, 1.0, 2.0]), Some(2));
        assert_eq!(median_index(&[4.0, 1.0, 3.0, 2.0]), Some(3));
        assert_eq!(median_index(&[]), None);
        let t = spread_text(&[100_000.0, 120_000.0, 110_000.0]);
        assert_eq!(
            t,
            "over 3 searches: median 110,000 rps, min 100,000, max 120,000 (max/min 1.20); answers 100,000 / 120,000 / 110,000\n"
        );
        assert!(spread_text(&[0.0, 5.0]).contains("max/min unbounded"));
    }

    #[test]
    fn confirmation_flags_parse() {
        let s = search_of(&["--repeat", "5", "--borderline=0", "--retries", "0"]).unwrap();
        assert_eq!((s.repeat, s.borderline, s.retries), (5, 0.0, 0));
        let d = SearchArgs::default();
        assert_eq!((d.repeat, d.borderline, d.retries), (1, 0.10, 2));
        for (a, flag) in [
            (["--repeat", "0"], "'--repeat'"),
            (["--retries", "x"], "'--retries'"),
            (["--borderline", "60%"], "'--borderline'"),
        ] {
            let e = search_of(&a).unwrap_err();
            assert!(e.contains(flag), "{e}");
        }
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(412_000.0), "412,000");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(12.0), "12");
        assert_eq!(fmt_ms(1.0), "1");
        assert_eq!(fmt_ms(1.9), "1.9");
        assert_eq!(fmt_ms(0.6124), "0.612");
        assert_eq!(fmt_ms(123.4), "123");
    }
}
