//! The memtier personality's output: what memtier_benchmark prints to stdout (the run information
//! lines, each "ALL STATS" / "RUN #n RESULTS" / "BEST RUN RESULTS" / "WORST RUN RESULTS" /
//! "AGGREGATED AVERAGE RESULTS (N runs)" table and its "Request Latency Distribution"), its
//! `--json-out-file` document and its `--hdr-file-prefix` files, built from ringbench's results.
//!
//! Figures are memtier's: every latency goes through a histogram of memtier's own layout
//! (microseconds, 10 µs to 600 s, 2 significant figures) and is read back the way its C HdrHistogram
//! does, so percentiles are the same bucket tops memtier prints (0.055, 0.063, ...). memtier's
//! arithmetic quirks are kept on purpose, since figures are compared with memtier's own:
//! - the JSON's Totals "Latency"/"Average Latency" is whole milliseconds (memtier keeps it in an integer);
//! - with `--command`, the Totals row counts every byte twice (its KB/sec; its JSON "KB/sec RX" and
//!   "KB/sec TX" each hold all bytes);
//! - the averaged section's JSON Totals has no latency figures (min, max and accumulated 0, its
//!   percentiles those of an empty histogram), no RX/TX split, no Runtime and an empty Time-Serie.
//!
//! Not kept: memtier's best/worst pick (its ops/sec overflows, so it names the first run both times);
//! here the best run has the most ops/sec and the worst the fewest, the first one on a tie.
//! Not available from a `TestResult`: connection errors (always 0 here), the cluster MOVED/ASK
//! columns, and bytes per second: a Time-Serie second's "Bytes RX"/"Bytes TX" are the row's bytes
//! shared out in proportion to that second's requests. A row's seconds come from the executors'
//! one-second intervals (`ShardStats::interval_logs`, `part_interval_logs`); without them a test of
//! one second or less is its own second 0, and a longer one has an empty Time-Serie.

#![allow(dead_code)] // Until the memtier personality calls it; remove then.

use crate::stats::TestResult;
use crate::stats::intervals::{INTERVAL, merge_intervals};
use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use serde_json::Value;
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::PathBuf;

/// memtier's latency histograms: microseconds, 10 µs to 600 s, 2 significant figures.
const LOW_US: u64 = 10;
const HIGH_US: u64 = 600_000_000;
const SIGFIG: u8 = 2;
/// Its sub-buckets per bucket with that layout (for the `.txt` footer).
const SUB_BUCKETS: u32 = 256;
/// Ticks per half distance of its percentile listings.
const TICKS: u32 = 10;

/// How `--command` rows are broken down (`--command-stats-breakdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breakdown {
    /// One row per command name, lines of the same command added up (memtier's default).
    Command,
    /// One row per `--command` line.
    Line,
}

/// What the run information lines (and the JSON's "run information") say.
#[derive(Debug, Clone, Copy)]
pub struct RunInfo {
    pub threads: u32,
    pub clients: u32,
    /// `-n` (requests per client); `None` with `--test-time`.
    pub requests: Option<u64>,
    pub test_time: u64,
}

/// The output flags.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--print-percentiles`, as given (memtier's default: 50, 99, 99.9).
    pub percentiles: Vec<f64>,
    pub hide_histogram: bool,
    pub print_all_runs: bool,
}

/// One second of a row, counted from the test's start.
#[derive(Debug, Clone)]
pub struct Second {
    pub ops: u64,
    pub bytes_rx: u64,
    pub bytes_tx: u64,
    pub total_us: u64,
    pub min_us: u64,
    pub max_us: u64,
    pub hist: Histogram<u64>,
}

/// One row of memtier's table ("Sets", "Gets", "Waits", a command's, "Totals").
#[derive(Debug, Clone)]
pub struct Row {
    /// As the table and the JSON name it: "Sets", "Totals", ...
    pub name: String,
    /// As the latency distribution names it: "SET", "GET", "WAIT".
    pub label: String,
    pub ops: u64,
    pub ops_sec: f64,
    /// `None` where memtier prints `---` (its JSON then has 0.00).
    pub hits_sec: Option<f64>,
    pub misses_sec: Option<f64>,
    pub kb_sec: Option<f64>,
    pub kb_sec_rx: f64,
    pub kb_sec_tx: f64,
    /// The JSON's "Latency" and "Average Latency", in ms, as memtier computes them.
    pub latency_ms: f64,
    /// The sum of every latency, in µs.
    pub total_us: u64,
    /// In memtier's layout (µs).
    pub hist: Histogram<u64>,
    /// A `--ratio` row: `---` instead of latencies when it has none.
    pub blank_when_empty: bool,
    /// One per [`MemtierView::timestamps`] entry (none in an average).
    pub seconds: Vec<Second>,
}

impl Row {
    /// Mean latency in ms (memtier's `hdr_mean`: bucket midpoints); NaN without any.
    pub fn avg_ms(&self) -> f64 {
        mean_us(&self.hist) / 1000.0
    }

    /// Latency at `percentile` (0 to 100) in ms, read as memtier reads it.
    pub fn percentile_ms(&self, percentile: f64) -> f64 {
        value_at_percentile(&self.hist, f64::from(percentile as f32), true) as f64 / 1000.0
    }
}

/// One test (one memtier run) in memtier's terms.
#[derive(Debug, Clone)]
pub struct MemtierView {
    /// The rows above "Totals".
    pub rows: Vec<Row>,
    pub totals: Row,
    /// A `--ratio` test (rows Sets, Gets, Waits; Hits/sec and Misses/sec columns).
    pub ratio: bool,
    /// `--command` rows added up by command name.
    pub by_command: bool,
    /// The Type column's width.
    pub type_width: usize,
    /// Start and end, µs since the epoch (0 in an average).
    pub start_us: u64,
    pub end_us: u64,
    pub interrupted: bool,
    /// The average of several runs.
    pub averaged: bool,
    /// The seconds (from the start) that saw replies.
    pub timestamps: Vec<u64>,
    /// The histograms `--hdr-file-prefix` writes beside the full run's: (name, histogram) per
    /// `--command` line, or GET and SET.
    pub hdr_parts: Vec<(String, Histogram<u64>)>,
}

/// One command line's (or the whole test's) figures, latencies in ns.
struct Input<'a> {
    name: String,
    hist: &'a Histogram<u64>,
    completed: u64,
    hits: u64,
    misses: u64,
    bytes_out: u64,
    bytes_in: u64,
    seconds: Vec<Histogram<u64>>,
}

impl MemtierView {
    /// The view of `r`. A test whose parts are titled "SET" and "GET" is a `--ratio` test; any other
    /// has one part per `--command` line (a test without parts is one command, its title's).
    pub fn of(r: &TestResult, breakdown: Breakdown) -> MemtierView {
        let inputs = inputs(r);
        let whole = series(&r.stats.interval_logs, &r.stats.hist, r.seconds);
        let keep = busy_seconds(&whole);
        let ratio = !r.stats.parts.is_empty()
            && r.stats
                .parts
                .iter()
                .all(|p| p.title == p.command && (p.command == "SET" || p.command == "GET"));
        let by_command = !ratio && breakdown == Breakdown::Command;
        let secs = r.seconds;
        let mut rows = Vec::new();
        for (name, label, group) in groups(&inputs, ratio, by_command) {
            let mut row = row_of(name, label, &group, secs, &keep);
            row.blank_when_empty = ratio;
            if ratio {
                let gets = row.label == "GET";
                row.hits_sec = gets.then(|| per_sec(sum(&group, |i| i.hits), secs));
                row.misses_sec = gets.then(|| per_sec(sum(&group, |i| i.misses), secs));
                row.kb_sec = (row.label != "WAIT").then_some(row.kb_sec_rx + row.kb_sec_tx);
            }
            if by_command {
                row.latency_ms = row.avg_ms();
            }
            rows.push(row);
        }
        let all: Vec<&Input> = inputs.iter().collect();
        let totals = totals_row(&rows, &all, &whole, &keep, ratio, secs);
        let start_us = r
            .wall_start
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_micros() as u64);
        let widest = inputs.iter().map(|i| i.name.len()).max().unwrap_or(0);
        MemtierView {
            rows,
            totals,
            ratio,
            by_command,
            type_width: if ratio { 7 } else { widest.max(6) + 1 },
            start_us,
            end_us: start_us + (secs.max(0.0) * 1e6).round() as u64,
            interrupted: r.interrupted,
            averaged: false,
            timestamps: keep.iter().map(|&i| i as u64).collect(),
            hdr_parts: hdr_parts(&inputs, ratio),
        }
    }
}

fn inputs(r: &TestResult) -> Vec<Input<'_>> {
    let s = &r.stats;
    if s.parts.is_empty() {
        let name = r
            .title
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_uppercase();
        let seconds = series(&s.interval_logs, &s.hist, r.seconds);
        return vec![Input {
            name,
            hist: &s.hist,
            completed: s.completed,
            hits: s.hits,
            misses: s.misses,
            bytes_out: s.bytes_out,
            bytes_in: s.bytes_in,
            seconds,
        }];
    }
    let parts = s.parts.iter().enumerate().map(|(i, p)| {
        let lists: Vec<Vec<Vec<u8>>> = s
            .part_interval_logs
            .iter()
            .filter_map(|e| e.get(i).cloned())
            .collect();
        Input {
            name: p.command.to_uppercase(),
            hist: &p.hist,
            completed: p.completed,
            hits: p.hits,
            misses: p.misses,
            bytes_out: p.bytes_out,
            bytes_in: p.bytes_in,
            seconds: series(&lists, &p.hist, r.seconds),
        }
    });
    parts.collect()
}

/// A histogram's seconds (ns) from executors' interval lists; a test of one second at most is its own
/// second 0 when there are none.
fn series(lists: &[Vec<Vec<u8>>], like: &Histogram<u64>, seconds: f64) -> Vec<Histogram<u64>> {
    match merge_intervals(lists, like) {
        Ok(v) if !v.is_empty() => v,
        _ if seconds <= INTERVAL.as_secs_f64() => vec![like.clone()],
        _ => Vec::new(),
    }
}

/// The seconds memtier lists: those that saw a reply (at least the first).
fn busy_seconds(whole: &[Histogram<u64>]) -> Vec<usize> {
    let busy: Vec<usize> = (0..whole.len()).filter(|&i| !whole[i].is_empty()).collect();
    if busy.is_empty() && !whole.is_empty() {
        return vec![0];
    }
    busy
}

/// The rows' names, distribution labels and lines.
fn groups<'a>(
    inputs: &'a [Input<'a>],
    ratio: bool,
    by_command: bool,
) -> Vec<(String, String, Vec<&'a Input<'a>>)> {
    let pick = |name: &str| inputs.iter().filter(|i| i.name == name).collect::<Vec<_>>();
    if ratio {
        return [("Sets", "SET"), ("Gets", "GET"), ("Waits", "WAIT")]
            .into_iter()
            .map(|(n, l)| (n.to_string(), l.to_string(), pick(l)))
            .collect();
    }
    let mut out: Vec<(String, String, Vec<&Input>)> = Vec::new();
    for i in inputs {
        match out.iter_mut().find(|g| by_command && g.1 == i.name) {
            Some(g) => g.2.push(i),
            None => out.push((row_name(&i.name), i.name.clone(), vec![i])),
        }
    }
    out
}

/// memtier's row name for a command: `SET` -> `Sets`.
fn row_name(command: &str) -> String {
    let lower = command.to_lowercase();
    let mut c = lower.chars();
    match c.next() {
        Some(f) => format!("{}{}s", f.to_uppercase(), c.as_str()),
        None => "s".to_string(),
    }
}

fn sum(group: &[&Input], f: impl Fn(&Input) -> u64) -> u64 {
    group.iter().map(|i| f(i)).sum()
}

fn per_sec(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

fn kb_sec(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / 1024.0 / seconds
    } else {
        0.0
    }
}

/// An empty histogram of memtier's layout.
fn layout() -> Histogram<u64> {
    Histogram::new_with_bounds(LOW_US, HIGH_US, SIGFIG).expect("memtier's bounds are valid")
}

/// A ns histogram in memtier's layout (each bucket's midpoint truncated to µs, capped as memtier
/// caps), and the sum of its latencies in µs.
fn micros(ns: &Histogram<u64>) -> (Histogram<u64>, u64) {
    let mut h = layout();
    let mut total = 0u64;
    for v in ns.iter_recorded() {
        let us = ns.median_equivalent(v.value_iterated_to()) / 1000;
        let n = v.count_at_value();
        total = total.saturating_add(us.saturating_mul(n));
        h.saturating_record_n(us.clamp(LOW_US, HIGH_US), n);
    }
    (h, total)
}

/// The ns histograms of `group` added up (an empty one without any).
fn added<'a>(hists: impl Iterator<Item = &'a Histogram<u64>>) -> Option<Histogram<u64>> {
    let mut sum: Option<Histogram<u64>> = None;
    for h in hists {
        match sum.as_mut() {
            Some(s) => s.add(h).expect("histograms share their bounds"),
            None => sum = Some(h.clone()),
        }
    }
    sum
}

/// A row of `group` (its figures as a `--command` row; the caller adjusts a `--ratio` row's).
fn row_of(name: String, label: String, group: &[&Input], secs: f64, keep: &[usize]) -> Row {
    let (hist, total_us) = match added(group.iter().map(|i| i.hist)) {
        Some(h) => micros(&h),
        None => (layout(), 0),
    };
    let ops = sum(group, |i| i.completed);
    let (rx, tx) = (sum(group, |i| i.bytes_in), sum(group, |i| i.bytes_out));
    let per_second: Vec<Option<Histogram<u64>>> = keep
        .iter()
        .map(|&s| added(group.iter().filter_map(|i| i.seconds.get(s))))
        .collect();
    Row {
        name,
        label,
        ops,
        ops_sec: per_sec(ops, secs),
        hits_sec: None,
        misses_sec: None,
        kb_sec: Some(kb_sec(rx + tx, secs)),
        kb_sec_rx: kb_sec(rx, secs),
        kb_sec_tx: kb_sec(tx, secs),
        latency_ms: total_us
            .checked_div(ops)
            .map_or(0.0, |us| us as f64 / 1000.0),
        total_us,
        hist,
        blank_when_empty: false,
        seconds: seconds_of(&per_second, rx, tx),
    }
}

/// Each second's figures, the row's bytes shared out by requests.
fn seconds_of(per_second: &[Option<Histogram<u64>>], rx: u64, tx: u64) -> Vec<Second> {
    let counts: Vec<u64> = per_second
        .iter()
        .map(|h| h.as_ref().map_or(0, Histogram::len))
        .collect();
    let (rxs, txs) = (share(rx, &counts), share(tx, &counts));
    let seconds = per_second.iter().zip(rxs.into_iter().zip(txs));
    seconds
        .map(|(h, (bytes_rx, bytes_tx))| {
            let ns = h.clone().unwrap_or_else(|| crate::stats::new_histogram(3));
            let (hist, total_us) = micros(&ns);
            Second {
                ops: ns.len(),
                bytes_rx,
                bytes_tx,
                total_us,
                min_us: ns.min() / 1000,
                max_us: if ns.is_empty() { 0 } else { ns.max() / 1000 },
                hist,
            }
        })
        .collect()
}

/// `total` shared out in proportion to `counts`, the parts adding up to it.
fn share(total: u64, counts: &[u64]) -> Vec<u64> {
    let all: u64 = counts.iter().sum();
    let mut seen = 0u64;
    let mut given = 0u64;
    counts
        .iter()
        .map(|&c| {
            seen += c;
            let upto = if all == 0 {
                0
            } else {
                (total as u128 * seen as u128 / all as u128) as u64
            };
            let part = upto - given;
            given = upto;
            part
        })
        .collect()
}

/// The Totals row: the rows' histograms added up, memtier's whole-ms latency, and with `--command`
/// every byte counted twice, as memtier does.
fn totals_row(
    rows: &[Row],
    all: &[&Input],
    whole: &[Histogram<u64>],
    keep: &[usize],
    ratio: bool,
    secs: f64,
) -> Row {
    let mut t = row_of("Totals".into(), String::new(), all, secs, keep);
    t.hist = layout();
    for r in rows {
        t.hist.add(&r.hist).expect("one layout");
    }
    let per_second: Vec<Option<Histogram<u64>>> =
        keep.iter().map(|&s| whole.get(s).cloned()).collect();
    let (rx, tx) = (sum(all, |i| i.bytes_in), sum(all, |i| i.bytes_out));
    t.seconds = seconds_of(&per_second, rx, tx);
    t.latency_ms = t.latency_ms.trunc();
    if ratio {
        let gets = rows.iter().find(|r| r.label == "GET");
        t.hits_sec = gets.and_then(|g| g.hits_sec);
        t.misses_sec = gets.and_then(|g| g.misses_sec);
    } else {
        t.kb_sec_rx = kb_sec(rx + tx, secs);
        t.kb_sec_tx = t.kb_sec_rx;
        t.kb_sec = Some(2.0 * t.kb_sec_rx);
    }
    t
}

/// What `--hdr-file-prefix` writes per command: GET then SET, or each `--command` line.
fn hdr_parts(inputs: &[Input], ratio: bool) -> Vec<(String, Histogram<u64>)> {
    let mut parts: Vec<(String, Histogram<u64>)> = inputs
        .iter()
        .map(|i| (i.name.clone(), micros(i.hist).0))
        .collect();
    if ratio {
        parts.sort_by_key(|p| p.0 != "GET");
    }
    parts
}

/// memtier's average of several runs ("AGGREGATED AVERAGE RESULTS"); `runs` (at least one) are runs
/// of one test, so their rows match.
pub fn average(runs: &[MemtierView]) -> MemtierView {
    let first = &runs[0];
    let n = runs.len();
    let rows = (0..first.rows.len())
        .map(|i| average_row(runs.iter().map(|v| &v.rows[i]), n, first.by_command))
        .collect();
    let mut totals = average_row(runs.iter().map(|v| &v.totals), n, false);
    let whole_ms: u64 = runs.iter().map(|v| v.totals.latency_ms as u64).sum();
    totals.latency_ms = (whole_ms / n as u64) as f64;
    totals.kb_sec_rx = 0.0;
    totals.kb_sec_tx = 0.0;
    totals.total_us = 0;
    let mut hdr_parts = first.hdr_parts.clone();
    for v in &runs[1..] {
        for (a, b) in hdr_parts.iter_mut().zip(&v.hdr_parts) {
            a.1.add(&b.1).expect("one layout");
        }
    }
    MemtierView {
        rows,
        totals,
        start_us: 0,
        end_us: 0,
        interrupted: false,
        averaged: true,
        timestamps: Vec::new(),
        hdr_parts,
        ..first.clone()
    }
}

fn average_row<'a>(rows: impl Iterator<Item = &'a Row>, n: usize, from_hist: bool) -> Row {
    let rows: Vec<&Row> = rows.collect();
    let k = n as f64;
    let mean = |f: &dyn Fn(&Row) -> f64| rows.iter().map(|r| f(r)).sum::<f64>() / k;
    let mean_opt =
        |f: &dyn Fn(&Row) -> Option<f64>| f(rows[0]).map(|_| mean(&|r| f(r).unwrap_or(0.0)));
    let mut hist = layout();
    for r in &rows {
        hist.add(&r.hist).expect("one layout");
    }
    let mut out = Row {
        ops: rows.iter().map(|r| r.ops).sum(),
        ops_sec: mean(&|r| r.ops_sec),
        hits_sec: mean_opt(&|r| r.hits_sec),
        misses_sec: mean_opt(&|r| r.misses_sec),
        kb_sec: mean_opt(&|r| r.kb_sec),
        kb_sec_rx: mean(&|r| r.kb_sec_rx),
        kb_sec_tx: mean(&|r| r.kb_sec_tx),
        latency_ms: mean(&|r| r.latency_ms),
        total_us: rows.iter().map(|r| r.total_us).sum(),
        hist,
        seconds: Vec::new(),
        ..rows[0].clone()
    };
    if from_hist {
        out.latency_ms = out.avg_ms();
    }
    out
}

/// The sections memtier prints for these runs, titled: "ALL STATS" for one run; otherwise each run
/// (with `--print-all-runs`), the best, the worst and the average.
pub fn sections(runs: &[MemtierView], print_all_runs: bool) -> Vec<(String, Cow<'_, MemtierView>)> {
    if runs.len() == 1 {
        return vec![("ALL STATS".to_string(), Cow::Borrowed(&runs[0]))];
    }
    let mut out = Vec::new();
    if runs.is_empty() {
        return out;
    }
    if print_all_runs {
        for (i, v) in runs.iter().enumerate() {
            out.push((format!("RUN #{} RESULTS", i + 1), Cow::Borrowed(v)));
        }
    }
    let mut best = &runs[0];
    let mut worst = &runs[0];
    for v in runs {
        if v.totals.ops_sec > best.totals.ops_sec {
            best = v;
        }
        if v.totals.ops_sec < worst.totals.ops_sec {
            worst = v;
        }
    }
    out.push(("BEST RUN RESULTS".to_string(), Cow::Borrowed(best)));
    out.push(("WORST RUN RESULTS".to_string(), Cow::Borrowed(worst)));
    let title = format!("AGGREGATED AVERAGE RESULTS ({} runs)", runs.len());
    out.push((title, Cow::Owned(average(runs))));
    out
}

/// Everything memtier prints to stdout after its runs (its progress lines go to stderr): the run
/// information, then each section's table and, unless `--hide-histogram`, its distribution.
pub fn write_report(
    out: &mut dyn Write,
    info: &RunInfo,
    runs: &[MemtierView],
    opts: &Options,
) -> io::Result<()> {
    write_run_information(out, info)?;
    for (title, view) in sections(runs, opts.print_all_runs) {
        write_all_stats(out, &title, &view, &opts.percentiles)?;
        if !opts.hide_histogram {
            write_histogram(out, &view)?;
        }
    }
    Ok(())
}

/// `1         Threads` and the two lines after it.
pub fn write_run_information(out: &mut dyn Write, info: &RunInfo) -> io::Result<()> {
    let (n, what) = match info.requests {
        Some(n) => (n, "Requests per client"),
        None => (info.test_time, "Seconds"),
    };
    write!(
        out,
        "{:<9} Threads\n{:<9} Connections per thread\n{:<9} {what}\n",
        info.threads, info.clients, n
    )
}

/// memtier's results table titled `title` ("ALL STATS", ...), a latency column per percentile.
pub fn write_all_stats(
    out: &mut dyn Write,
    title: &str,
    view: &MemtierView,
    percentiles: &[f64],
) -> io::Result<()> {
    let w = view.type_width;
    let mut head = format!("{:<w$} {:>12} ", "Type", "Ops/sec");
    let mut width = w + 1 + 13 + 13 + 16 * (1 + percentiles.len());
    if view.ratio {
        head.push_str(&format!("{:>12} {:>12} ", "Hits/sec", "Misses/sec"));
        width += 26;
    }
    head.push_str(&format!("{:>15} ", "Avg. Latency"));
    for &p in percentiles {
        head.push_str(&format!("{:>15} ", percentile_label(p as f32)));
    }
    head.push_str(&format!("{:>12} ", "KB/sec"));
    writeln!(out, "\n\n{title}\n{}", "=".repeat(width))?;
    writeln!(out, "{head}\n{}", "-".repeat(width))?;
    for row in view.rows.iter().chain([&view.totals]) {
        writeln!(out, "{}", table_row(row, view, percentiles))?;
    }
    Ok(())
}

fn table_row(row: &Row, view: &MemtierView, percentiles: &[f64]) -> String {
    let w = view.type_width;
    let mut s = format!("{:<w$} {} ", row.name, cell(Some(row.ops_sec), 12, 2));
    if view.ratio {
        s.push_str(&format!(
            "{} {} ",
            cell(row.hits_sec, 12, 2),
            cell(row.misses_sec, 12, 2)
        ));
    }
    let blank = row.blank_when_empty && row.hist.is_empty();
    s.push_str(&cell((!blank).then(|| row.avg_ms()), 15, 5));
    s.push(' ');
    for &p in percentiles {
        s.push_str(&cell((!blank).then(|| row.percentile_ms(p)), 15, 5));
        s.push(' ');
    }
    s.push_str(&cell(row.kb_sec, 12, 2));
    s.push(' ');
    s
}

/// A number right-aligned in `width` with `decimals`, `---` for none, `-nan` as glibc prints NaN.
fn cell(v: Option<f64>, width: usize, decimals: usize) -> String {
    match v {
        None => format!("{:>width$}", "---"),
        Some(x) if x.is_nan() => format!("{:>width$}", "-nan"),
        Some(x) => format!("{x:>width$.decimals$}"),
    }
}

/// A percentile column's title: `p50 Latency`, `p99.9 Latency`, and as memtier counts a float's
/// decimals, `p99.990 Latency` for 99.99.
fn percentile_label(q: f32) -> String {
    let mut digits = 0;
    let mut num = q.abs();
    num -= num.trunc();
    while f64::from(num.abs()) > 0.001 && digits < 3 {
        num *= 10.0;
        digits += 1;
        num -= num.trunc();
    }
    format!("p{:.*} Latency", digits, f64::from(q))
}

/// The "Request Latency Distribution" block memtier prints after a table.
pub fn write_histogram(out: &mut dyn Write, view: &MemtierView) -> io::Result<()> {
    write!(
        out,
        "\n\nRequest Latency Distribution\n{:<6} {:>12} {:>12}\n{}\n",
        "Type",
        "<= msec   ",
        "Percent",
        "-".repeat(72)
    )?;
    for (i, row) in view.rows.iter().enumerate() {
        for s in percentile_steps(&row.hist) {
            let (ms, pct) = step_figures(&s);
            writeln!(out, "{:<6} {ms:8.3} {pct:12.3}", row.label)?;
        }
        // A --ratio test's last row (Waits) has no rule after it.
        if !(view.ratio && i + 1 == view.rows.len()) {
            writeln!(out, "---")?;
        }
    }
    Ok(())
}

/// A distribution line's figures as memtier prints them (through a float).
fn step_figures(s: &Step) -> (f64, f64) {
    let ms = f64::from((s.value as f64 / 1000.0) as f32);
    (ms, f64::from(s.percentile as f32))
}

/// One line of a percentile listing: a bucket's top (µs), the percentile reached and the count so far.
struct Step {
    value: u64,
    percentile: f64,
    cumulative: u64,
}

/// The percentile listing of C HdrHistogram's percentile iterator (10 ticks per half distance),
/// which memtier prints: steps through each bucket, then 100%.
fn percentile_steps(h: &Histogram<u64>) -> Vec<Step> {
    let total = h.len();
    let mut steps = Vec::new();
    let (mut next, mut cumulative, mut last) = (0.0f64, 0u64, 0u64);
    for v in h.iter_recorded() {
        cumulative += v.count_at_value();
        last = v.value_iterated_to();
        let reached = 100.0 * cumulative as f64 / total as f64;
        while next <= reached {
            steps.push(Step {
                value: last,
                percentile: next,
                cumulative,
            });
            let exp = ((100.0 / (100.0 - next)).ln() / 2f64.ln()) as i64 + 1;
            let half = 2f64.powf(exp as f64) as i64;
            next += 100.0 / (i64::from(TICKS) * half) as f64;
            if cumulative == total {
                break;
            }
        }
    }
    steps.push(Step {
        value: last,
        percentile: 100.0,
        cumulative,
    });
    steps
}

/// C HdrHistogram's `hdr_value_at_percentile` (`lowest_at_zero`) or the per-second
/// `hdr_value_at_percentiles` (not): the top of the bucket holding the given rank.
fn value_at_percentile(h: &Histogram<u64>, percentile: f64, lowest_at_zero: bool) -> u64 {
    let wanted = ((percentile.min(100.0) / 100.0) * h.len() as f64 + 0.5) as u64;
    let mut seen = 0;
    let mut value = 0;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= wanted.max(1) {
            value = v.value_iterated_to();
            break;
        }
    }
    if lowest_at_zero && percentile == 0.0 {
        h.lowest_equivalent(value)
    } else {
        h.highest_equivalent(value)
    }
}

/// memtier's `hdr_mean` in µs: bucket midpoints; NaN for an empty histogram.
fn mean_us(h: &Histogram<u64>) -> f64 {
    let total: u128 = h
        .iter_recorded()
        .map(|v| {
            u128::from(h.median_equivalent(v.value_iterated_to())) * u128::from(v.count_at_value())
        })
        .sum();
    total as f64 / h.len() as f64
}

fn stddev_us(h: &Histogram<u64>) -> f64 {
    let mean = mean_us(h);
    let dev: f64 = h
        .iter_recorded()
        .map(|v| {
            let d = h.median_equivalent(v.value_iterated_to()) as f64 - mean;
            d * d * v.count_at_value() as f64
        })
        .sum();
    (dev / h.len() as f64).sqrt()
}

/// A histogram V2-deflate encoded in base64, as memtier's "Compressed Histogram" and `.hgrm` lines.
fn compressed(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Encoding into memory only fails on a histogram too large for the format.
    let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// memtier's JSON writer (its `json_handler`): a tab per level, each item on its own line, a comma
/// leading the next item; numbers as memtier formats them, NaN as null.
struct JsonText {
    out: String,
    depth: usize,
}

impl JsonText {
    fn newline(&mut self) {
        self.out.push('\n');
        self.out.extend(std::iter::repeat_n('\t', self.depth));
    }

    fn key(&mut self, key: Option<&str>) {
        if let Some(k) = key {
            self.out
                .push_str(&serde_json::to_string(k).unwrap_or_default());
            self.out.push(':');
        }
    }

    /// Opens an object (`{`) or an array (`[`), named or not.
    fn open(&mut self, key: Option<&str>, bracket: char) {
        self.key(key);
        self.out.push(bracket);
        self.depth += 1;
        self.newline();
    }

    /// Closes what [`Self::open`] opened: memtier seeks back over the last comma (or the last tab
    /// of an empty nesting).
    fn close(&mut self, bracket: char) {
        self.out.pop();
        self.out.push(bracket);
        self.depth -= 1;
        self.newline();
        if self.depth > 0 {
            self.out.push(',');
        }
    }

    /// One item whose value is `text`, already JSON.
    fn raw(&mut self, key: &str, text: &str) {
        self.key(Some(key));
        self.out.push(' ');
        self.out.push_str(text);
        self.newline();
        self.out.push(',');
    }

    fn int(&mut self, key: &str, v: u64) {
        self.raw(key, &v.to_string());
    }

    fn fixed(&mut self, key: &str, v: f64, decimals: usize) {
        let text = if v.is_nan() {
            "null".to_string()
        } else {
            format!("{v:.decimals$}")
        };
        self.raw(key, &text);
    }

    fn str(&mut self, key: &str, v: &str) {
        self.raw(key, &serde_json::to_string(v).unwrap_or_default());
    }
}

/// memtier's `--json-out-file` document for these runs as a value (a repeated key, such as two
/// "Sets" rows with `--command-stats-breakdown=line`, keeps its last value; see [`json_text`]).
/// `configuration` is memtier's configuration echo, in its order.
pub fn json(
    configuration: &[(String, Value)],
    info: &RunInfo,
    runs: &[MemtierView],
    opts: &Options,
) -> Value {
    let text = json_text(configuration, info, runs, opts);
    serde_json::from_str(&text).expect("the document is JSON")
}

/// The same document as memtier writes it: its key order, tabs and number formats, repeated keys kept.
pub fn json_text(
    configuration: &[(String, Value)],
    info: &RunInfo,
    runs: &[MemtierView],
    opts: &Options,
) -> String {
    let mut w = JsonText {
        out: String::new(),
        depth: 0,
    };
    w.open(None, '{');
    w.open(Some("configuration"), '{');
    for (k, v) in configuration {
        w.raw(k, &v.to_string());
    }
    w.close('}');
    w.open(Some("run information"), '{');
    w.int("Threads", info.threads.into());
    w.int("Connections per thread", info.clients.into());
    match info.requests {
        Some(n) => w.int("Requests per client", n),
        None => w.int("Seconds", info.test_time),
    }
    w.int("Format version", 2);
    w.close('}');
    let mut quantiles: Vec<f64> = opts
        .percentiles
        .iter()
        .map(|&p| f64::from(p as f32))
        .collect();
    quantiles.sort_by(f64::total_cmp);
    for (title, view) in sections(runs, opts.print_all_runs) {
        w.open(Some(&title), '{');
        section_json(&mut w, &view, &quantiles, opts.hide_histogram);
        w.close('}');
    }
    w.close('}');
    w.out
}

fn section_json(w: &mut JsonText, view: &MemtierView, quantiles: &[f64], hide_histogram: bool) {
    let (start_ms, end_ms) = (view.start_us / 1000, view.end_us / 1000);
    w.open(Some("Runtime"), '{');
    w.int("Start time", start_ms);
    w.int("Finish time", end_ms);
    w.int("Total duration", end_ms - start_ms);
    w.str("Time unit", "MILLISECONDS");
    w.str(
        "Interrupted",
        if view.interrupted { "true" } else { "false" },
    );
    w.close('}');
    for row in &view.rows {
        row_json(w, row, view, quantiles, &row.hist);
    }
    // memtier's averaged Totals has an empty histogram.
    let hist = if view.averaged {
        &layout()
    } else {
        &view.totals.hist
    };
    row_json(w, &view.totals, view, quantiles, hist);
    if hide_histogram {
        return;
    }
    for row in &view.rows {
        w.open(Some(&row.label), '[');
        for step in percentile_steps(&row.hist) {
            let (ms, pct) = step_figures(&step);
            w.open(None, '{');
            w.fixed("<=msec", ms, 3);
            w.fixed("percent", pct, 3);
            w.close('}');
        }
        w.close(']');
    }
}

/// A percentile's key, as memtier's 7-byte buffer cuts it: `p50.00`, `p99.99`, `p100.0`.
fn percentile_key(q: f64, decimals: usize) -> String {
    format!("p{q:.decimals$}").chars().take(6).collect()
}

fn row_json(
    w: &mut JsonText,
    row: &Row,
    view: &MemtierView,
    quantiles: &[f64],
    hist: &Histogram<u64>,
) {
    let ms = |us: u64| us as f64 / 1000.0;
    let some = !hist.is_empty();
    let kb = row.kb_sec.unwrap_or(0.0);
    w.open(Some(&row.name), '{');
    w.int("Count", row.ops);
    w.fixed("Ops/sec", row.ops_sec, 2);
    w.fixed("Hits/sec", row.hits_sec.unwrap_or(0.0), 2);
    w.fixed("Misses/sec", row.misses_sec.unwrap_or(0.0), 2);
    w.fixed("Connection Errors/sec", 0.0, 2);
    w.int("Connection Errors", 0);
    w.fixed("Latency", row.latency_ms, 3);
    w.fixed("Average Latency", row.latency_ms, 3);
    w.int("Accumulated Latency", row.total_us / 1000);
    w.fixed("Min Latency", if some { ms(hist.min()) } else { 0.0 }, 3);
    w.fixed("Max Latency", if some { ms(hist.max()) } else { 0.0 }, 3);
    w.fixed("KB/sec", kb, 2);
    w.fixed("KB/sec RX/TX", kb, 2);
    w.fixed("KB/sec RX", row.kb_sec_rx, 2);
    w.fixed("KB/sec TX", row.kb_sec_tx, 2);
    w.open(Some("Time-Serie"), '{');
    for (t, s) in view.timestamps.iter().zip(&row.seconds) {
        second_json(w, &t.to_string(), s, quantiles);
    }
    w.close('}');
    w.open(Some("Percentile Latencies"), '{');
    for &q in quantiles {
        w.fixed(
            &percentile_key(q, 3),
            ms(value_at_percentile(hist, q, true)),
            3,
        );
    }
    w.open(Some("Histogram log format"), '{');
    w.str("Compressed Histogram", &compressed(hist));
    w.close('}');
    w.close('}');
    w.close('}');
}

fn second_json(w: &mut JsonText, key: &str, s: &Second, quantiles: &[f64]) {
    w.open(Some(key), '{');
    w.int("Bytes RX", s.bytes_rx);
    w.int("Bytes TX", s.bytes_tx);
    w.int("Count", s.ops);
    if s.ops > 0 {
        w.fixed(
            "Average Latency",
            s.total_us as f64 / s.ops as f64 / 1000.0,
            3,
        );
        w.int("Accumulated Latency", s.total_us / 1000);
        w.fixed("Min Latency", s.min_us as f64 / 1000.0, 3);
        w.fixed("Max Latency", s.max_us as f64 / 1000.0, 3);
        for &q in quantiles {
            let v = value_at_percentile(&s.hist, q, false) as f64 / 1000.0;
            w.fixed(&percentile_key(q, 2), v, 3);
        }
    }
    w.close('}');
}

/// Writes memtier's `--hdr-file-prefix` files of run `run` (1-based): `PREFIX_FULL_RUN_n` and, per
/// command, `PREFIX_GET_command_run_n` (memtier's names), each as `.txt` (HdrHistogram's percentile
/// listing, in ms) and `.hgrm` (a one-interval HistogramLogProcessor log, in µs), none for a command
/// without replies. Returns the paths written.
pub fn write_hdr_files(prefix: &str, run: usize, view: &MemtierView) -> io::Result<Vec<PathBuf>> {
    let mut files = vec![(
        format!("{prefix}_FULL_RUN_{run}"),
        "Full Run command HDR latency histogram results".to_string(),
        &view.totals.hist,
    )];
    for (name, h) in &view.hdr_parts {
        let header = format!("{name} command HDR latency histogram results");
        files.push((format!("{prefix}_{name}_command_run_{run}"), header, h));
    }
    let mut written = Vec::new();
    for (stem, header, h) in files {
        if h.is_empty() {
            continue;
        }
        let txt = PathBuf::from(format!("{stem}.txt"));
        std::fs::write(&txt, percentiles_text(h))?;
        let hgrm = PathBuf::from(format!("{stem}.hgrm"));
        std::fs::write(&hgrm, log_text(h, &header, view.start_us, view.end_us))?;
        // Two --command lines of one command write the same files, the last one's kept (as memtier).
        if !written.contains(&txt) {
            written.extend([txt, hgrm]);
        }
    }
    Ok(written)
}

/// C HdrHistogram's classic `hdr_percentiles_print` of `h`, values in ms.
fn percentiles_text(h: &Histogram<u64>) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "{:>12} {:>12} {:>12} {:>12}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    for step in percentile_steps(h) {
        let p = step.percentile / 100.0;
        let v = step.value as f64 / 1000.0;
        let _ = writeln!(
            s,
            "{v:12.2} {p:12.6} {:12} {:12.2}",
            step.cumulative,
            1.0 / (1.0 - p)
        );
    }
    let _ = write!(
        s,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]\n#[Max     = {:12.3}, Total count    = {:12}]\n#[Buckets = {:12}, SubBuckets     = {:12}]\n",
        mean_us(h) / 1000.0,
        stddev_us(h) / 1000.0,
        h.max() as f64 / 1000.0,
        h.len(),
        h.buckets(),
        SUB_BUCKETS
    );
    s
}

/// C HdrHistogram's log of `h` as one interval from `start_us` to `end_us`.
fn log_text(h: &Histogram<u64>, header: &str, start_us: u64, end_us: u64) -> String {
    let secs = |us: u64| us as f64 / 1e6;
    format!(
        "#[{header}]\n#[Histogram log format version 1.2]\n#[StartTime: {:.3} (seconds since epoch), {}]\n\"StartTimestamp\",\"EndTimestamp\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n{:.3},{:.3},{}.0,{}\n",
        secs(start_us),
        gmt_date(start_us / 1_000_000),
        secs(start_us),
        secs(end_us),
        h.max(),
        compressed(h)
    )
}

/// `strftime("%a %b %X %Z %Y")` of a UTC time as memtier writes it (`Mon Dec 02:43:48 GMT 2026`: no
/// day of the month).
fn gmt_date(epoch_secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = epoch_secs / 86_400;
    let t = epoch_secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm), in 400-year eras from 0000-03-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:02}:{:02}:{:02} GMT {year}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{PartStats, ShardStats};
    use std::time::{Duration, Instant};

    /// The key names of a real memtier_benchmark `--json-out-file` (`--ratio`, one run), written
    /// down from memtier's output.
    const TOP: &str = "configuration|run information|ALL STATS";
    const RUN_INFORMATION: &str =
        "Threads|Connections per thread|Requests per client|Format version";
    const SECTION: &str = "Runtime|Sets|Gets|Waits|Totals|SET|GET|WAIT";
    const RUNTIME: &str = "Start time|Finish time|Total duration|Time unit|Interrupted";
    const ROW: &str = "Count|Ops/sec|Hits/sec|Misses/sec|Connection Errors/sec|Connection Errors|\
        Latency|Average Latency|Accumulated Latency|Min Latency|Max Latency|KB/sec|KB/sec RX/TX|\
        KB/sec RX|KB/sec TX|Time-Serie|Percentile Latencies";
    const SECOND: &str = "Bytes RX|Bytes TX|Count|Average Latency|Accumulated Latency|Min Latency|\
        Max Latency|p50.00|p99.00|p99.90";
    const PERCENTILES: &str = "p50.00|p99.00|p99.90|Histogram log format";

    fn part(title: &str, command: &str, lat_us: &[u64], out_in: (u64, u64)) -> PartStats {
        let mut p = PartStats::new(title.into(), command.into(), 3);
        for &us in lat_us {
            p.hist.record(us * 1000).unwrap();
        }
        p.completed = lat_us.len() as u64;
        (p.bytes_out, p.bytes_in) = out_in;
        p
    }

    fn result(parts: Vec<PartStats>, millis: u64) -> TestResult {
        let mut st = ShardStats::new(3);
        for p in &parts {
            st.hist.add(&p.hist).unwrap();
            st.completed += p.completed;
            st.hits += p.hits;
            st.misses += p.misses;
            st.bytes_out += p.bytes_out;
            st.bytes_in += p.bytes_in;
        }
        st.parts = parts;
        let t = Instant::now();
        st.start = Some(t);
        st.end = Some(t + Duration::from_millis(millis));
        TestResult::new("memtier".into(), st.completed, st)
    }

    /// A `--ratio` test of 0.5 s: 4 SETs (55, 55, 63, 247 µs), 2 GETs (40, 100 µs), one a hit.
    fn ratio(millis: u64) -> TestResult {
        let set = part("SET", "SET", &[55, 55, 63, 247], (160, 20));
        let mut get = part("GET", "GET", &[40, 100], (60, 14));
        (get.hits, get.misses) = (1, 1);
        result(vec![set, get], millis)
    }

    fn commands() -> TestResult {
        let parts = vec![
            part("SET __key__ __data__", "SET", &[55, 63], (80, 10)),
            part("GET __key__", "GET", &[40], (30, 7)),
            part("set __key__ x", "SET", &[247], (40, 5)),
        ];
        result(parts, 500)
    }

    fn opts(hide_histogram: bool) -> Options {
        Options {
            percentiles: vec![50.0, 99.0, 99.9],
            hide_histogram,
            print_all_runs: false,
        }
    }

    const INFO: RunInfo = RunInfo {
        threads: 1,
        clients: 2,
        requests: Some(500),
        test_time: 0,
    };

    fn text(f: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        f(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn keys(v: &Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    fn sorted(names: &str) -> Vec<String> {
        let mut k: Vec<String> = names.split('|').map(str::to_string).collect();
        k.sort();
        k
    }

    #[test]
    fn ratio_table_is_memtiers() {
        let view = MemtierView::of(&ratio(500), Breakdown::Command);
        let out = text(|o| write_report(o, &INFO, &[view], &opts(true)));
        let want = [
            "1         Threads",
            "2         Connections per thread",
            "500       Requests per client",
            "",
            "",
            "ALL STATS",
            &"=".repeat(124),
            "Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency     p99 Latency   p99.9 Latency       KB/sec ",
            &"-".repeat(124),
            "Sets            8.00          ---          ---         0.10200         0.05500         0.24700         0.24700         0.35 ",
            "Gets            4.00         2.00         2.00         0.07200         0.04700         0.10300         0.10300         0.14 ",
            "Waits           0.00          ---          ---             ---             ---             ---             ---          --- ",
            "Totals         12.00         2.00         2.00         0.09200         0.05500         0.24700         0.24700         0.50 ",
        ];
        assert_eq!(out.lines().collect::<Vec<_>>(), want, "{out}");
    }

    #[test]
    fn distribution_steps_as_c_hdrhistogram() {
        let view = MemtierView::of(&ratio(500), Breakdown::Command);
        let out = text(|o| write_histogram(o, &view));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            &lines[..5],
            [
                "",
                "",
                "Request Latency Distribution",
                "Type     <= msec         Percent",
                &"-".repeat(72)
            ]
        );
        let gets: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with("GET"))
            .collect();
        // 40 µs is the bucket 40..47: percentiles 0 to 50 in steps of 5, then 52.5 and 100 at 103.
        assert_eq!(gets.len(), 13);
        assert_eq!(gets[0], "GET       0.047        0.000");
        assert_eq!(gets[10], "GET       0.047       50.000");
        assert_eq!(gets[11], "GET       0.103       52.500");
        assert_eq!(gets[12], "GET       0.103      100.000");
        assert_eq!(lines.iter().filter(|l| **l == "---").count(), 2);
        assert_eq!(lines.last(), Some(&"WAIT      0.000      100.000"));
    }

    #[test]
    fn command_rows_by_command_and_by_line() {
        let r = commands();
        let by_command = MemtierView::of(&r, Breakdown::Command);
        let names: Vec<&str> = by_command.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["Sets", "Gets"]);
        assert_eq!(by_command.rows[0].ops, 3);
        let out = text(|o| write_all_stats(o, "ALL STATS", &by_command, &[50.0, 99.99, 100.0]));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[4],
            "Type         Ops/sec    Avg. Latency     p50 Latency p99.990 Latency    p100 Latency       KB/sec "
        );
        assert_eq!(lines[5].len(), 8 + 13 + 16 * 4 + 13);
        // memtier counts every byte of a --command test twice in Totals: 172 bytes in 0.5 s.
        assert!(lines[8].starts_with("Totals          8.00 "), "{out}");
        assert!(
            lines[8].ends_with(&format!("{:12.2} ", 2.0 * 172.0 / 1024.0 / 0.5)),
            "{out}"
        );
        let by_line = MemtierView::of(&r, Breakdown::Line);
        let names: Vec<&str> = by_line.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["Sets", "Gets", "Sets"]);
        let doc = json_text(&[], &INFO, &[by_line], &opts(false));
        assert_eq!(doc.matches("\"Sets\":{").count(), 2);
        assert_eq!(doc.matches("\"SET\":[").count(), 2);
    }

    #[test]
    fn json_has_memtiers_keys_and_figures() {
        let view = MemtierView::of(&ratio(500), Breakdown::Command);
        let config = [
            ("server".to_string(), Value::from("127.0.0.1")),
            ("port".to_string(), Value::from(6379)),
        ];
        let doc = json(&config, &INFO, &[view], &opts(false));
        assert_eq!(keys(&doc), sorted(TOP));
        assert_eq!(keys(&doc["run information"]), sorted(RUN_INFORMATION));
        let all = &doc["ALL STATS"];
        assert_eq!(keys(all), sorted(SECTION));
        assert_eq!(keys(&all["Runtime"]), sorted(RUNTIME));
        assert_eq!(all["Runtime"]["Total duration"], 500);
        for row in ["Sets", "Gets", "Waits", "Totals"] {
            assert_eq!(keys(&all[row]), sorted(ROW), "{row}");
            assert_eq!(keys(&all[row]["Percentile Latencies"]), sorted(PERCENTILES));
        }
        assert_eq!(keys(&all["Sets"]["Time-Serie"]["0"]), sorted(SECOND));
        assert_eq!(
            keys(&all["Waits"]["Time-Serie"]["0"]),
            sorted("Bytes RX|Bytes TX|Count")
        );
        let sets = &all["Sets"];
        assert_eq!(sets["Count"], 4);
        assert_eq!(sets["Ops/sec"], 8.0);
        assert_eq!(sets["Latency"], 0.104);
        assert_eq!(sets["Min Latency"], 0.048);
        assert_eq!(sets["Max Latency"], 0.247);
        assert_eq!(sets["KB/sec"], 0.35);
        assert_eq!(sets["Percentile Latencies"]["p50.00"], 0.055);
        assert_eq!(all["Gets"]["Hits/sec"], 2.0);
        assert_eq!(all["Gets"]["KB/sec RX"], 0.03);
        assert_eq!(all["Waits"]["Percentile Latencies"]["p99.90"], 0.007);
        assert_eq!(all["Totals"]["Latency"], 0.0);
        assert_eq!(all["Totals"]["Time-Serie"]["0"]["Bytes TX"], 220);
        assert_eq!(
            all["GET"][0],
            serde_json::json!({"<=msec": 0.047, "percent": 0.0})
        );
        let text = json_text(
            &config,
            &INFO,
            &[MemtierView::of(&ratio(500), Breakdown::Command)],
            &opts(false),
        );
        assert!(text.starts_with("{\n\t\"configuration\":{\n\t\t\"server\": \"127.0.0.1\"\n\t\t,\"port\": 6379\n\t\t}\n\t,\"run information\":{"), "{text}");
        assert!(text.contains("\t\t\t,\"Ops/sec\": 8.00\n"), "{text}");
        let reread: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(reread["ALL STATS"]["Sets"], doc["ALL STATS"]["Sets"]);
    }

    #[test]
    fn several_runs_best_worst_and_average() {
        let runs = [
            MemtierView::of(&ratio(1000), Breakdown::Command),
            MemtierView::of(&ratio(500), Breakdown::Command),
        ];
        let titles: Vec<String> = sections(&runs, true).into_iter().map(|s| s.0).collect();
        assert_eq!(
            titles,
            [
                "RUN #1 RESULTS",
                "RUN #2 RESULTS",
                "BEST RUN RESULTS",
                "WORST RUN RESULTS",
                "AGGREGATED AVERAGE RESULTS (2 runs)"
            ]
        );
        let s = sections(&runs, false);
        assert_eq!(s[0].1.totals.ops_sec, 12.0);
        assert_eq!(s[1].1.totals.ops_sec, 6.0);
        let avg = &s[2].1;
        assert_eq!((avg.rows[0].ops, avg.rows[0].ops_sec), (8, 6.0));
        let doc = json(&[], &INFO, &runs, &opts(true));
        let agg = &doc["AGGREGATED AVERAGE RESULTS (2 runs)"];
        assert_eq!(agg["Runtime"]["Start time"], 0);
        assert_eq!(agg["Sets"]["Time-Serie"], serde_json::json!({}));
        assert_eq!(agg["Totals"]["Min Latency"], 0.0);
        assert_eq!(agg["Totals"]["Percentile Latencies"]["p50.00"], 0.007);
        assert_eq!(agg["Sets"]["Percentile Latencies"]["p50.00"], 0.055);
        assert!(doc.get("ALL STATS").is_none());
    }

    #[test]
    fn labels_and_keys_as_memtier_cuts_them() {
        assert_eq!(percentile_label(50.0), "p50 Latency");
        assert_eq!(percentile_label(99.9), "p99.9 Latency");
        assert_eq!(percentile_label(99.99), "p99.990 Latency");
        assert_eq!(percentile_key(f64::from(99.99f32), 3), "p99.99");
        assert_eq!(percentile_key(100.0, 3), "p100.0");
        assert_eq!(percentile_key(50.0, 2), "p50.00");
        assert_eq!(gmt_date(1_796_611_428), "Mon Dec 02:43:48 GMT 2026");
        assert_eq!(share(10, &[1, 1, 1]), [3, 3, 4]);
    }

    #[test]
    fn hdr_files_have_memtiers_names_and_formats() {
        let dir =
            std::env::temp_dir().join(format!("ringbench-memtier-hdr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let prefix = dir.join("h").to_string_lossy().into_owned();
        let view = MemtierView::of(&ratio(500), Breakdown::Command);
        let files = write_hdr_files(&prefix, 1, &view).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "h_FULL_RUN_1.txt",
                "h_FULL_RUN_1.hgrm",
                "h_GET_command_run_1.txt",
                "h_GET_command_run_1.hgrm",
                "h_SET_command_run_1.txt",
                "h_SET_command_run_1.hgrm"
            ]
        );
        let txt = std::fs::read_to_string(&files[2]).unwrap();
        let lines: Vec<&str> = txt.lines().collect();
        assert_eq!(
            lines[0],
            "       Value   Percentile   TotalCount 1/(1-Percentile)"
        );
        assert_eq!(
            lines[2],
            "        0.05     0.000000            1         1.00"
        );
        assert_eq!(
            lines[lines.len() - 4],
            "        0.10     1.000000            2          inf"
        );
        assert_eq!(
            lines[lines.len() - 2],
            "#[Max     =        0.103, Total count    =            2]"
        );
        assert_eq!(
            lines[lines.len() - 1],
            "#[Buckets =           20, SubBuckets     =          256]"
        );
        let log = std::fs::read_to_string(&files[1]).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(
            lines[0],
            "#[Full Run command HDR latency histogram results]"
        );
        assert_eq!(lines[1], "#[Histogram log format version 1.2]");
        assert_eq!(
            lines[3],
            "\"StartTimestamp\",\"EndTimestamp\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        );
        assert!(lines[4].contains(",247.0,HISTF"), "{log}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn time_serie_from_the_executors_seconds() {
        use hdrhistogram::serialization::V2Serializer;
        let encode = |us: &[u64]| {
            let mut h = crate::stats::new_histogram(3);
            us.iter().for_each(|v| h.record(v * 1000).unwrap());
            let mut bytes = Vec::new();
            V2Serializer::new().serialize(&h, &mut bytes).unwrap();
            bytes
        };
        let mut r = ratio(1500);
        r.stats.interval_logs = vec![vec![encode(&[55, 55, 63, 40, 100]), encode(&[247])]];
        let sets = vec![encode(&[55, 55, 63]), encode(&[247])];
        let gets = vec![encode(&[40, 100]), encode(&[])];
        r.stats.part_interval_logs = vec![vec![sets, gets]];
        let view = MemtierView::of(&r, Breakdown::Command);
        assert_eq!(view.timestamps, [0, 1]);
        let doc = json(&[], &INFO, &[view], &opts(true));
        let serie = |row: &str| doc["ALL STATS"][row]["Time-Serie"].clone();
        assert_eq!(keys(&serie("Sets")), ["0", "1"]);
        assert_eq!(serie("Sets")["1"]["Count"], 1);
        assert_eq!(serie("Sets")["1"]["Max Latency"], 0.247);
        assert_eq!(serie("Sets")["1"]["p50.00"], 0.247);
        assert_eq!(
            (
                serie("Sets")["0"]["Bytes TX"].clone(),
                serie("Sets")["1"]["Bytes TX"].clone()
            ),
            (120.into(), 40.into())
        );
        assert_eq!(keys(&serie("Gets")["1"]), sorted("Bytes RX|Bytes TX|Count"));
        assert_eq!(serie("Totals")["0"]["Count"], 5);
        assert_eq!(serie("Totals")["0"]["Accumulated Latency"], 0);
    }
}
