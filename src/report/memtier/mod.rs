//! The memtier personality's output: what memtier_benchmark prints to stdout (the run information
//! lines, each "ALL STATS" / "RUN #n RESULTS" / "BEST RUN RESULTS" / "WORST RUN RESULTS" /
//! "AGGREGATED AVERAGE RESULTS (N runs)" table and its "Request Latency Distribution"), its
//! `--json-out-file` document and its `--hdr-file-prefix` files, built from ringbench's results.
//! This file builds the view every output reads (one [`MemtierView`] per run, its [`Row`]s) from a
//! `TestResult`; `view.rs` holds the view's types, the average of several runs and the sections,
//! `table.rs`, `json.rs` and `hdr.rs` write it, `hist.rs` reads histograms as memtier's C HdrHistogram
//! does. The files use one another by name (`crate::report::memtier::<file>`), never this one.
//!
//! Figures are memtier's: every latency goes through a histogram of memtier's own layout
//! (microseconds, 10 µs to 600 s, 2 significant figures) and is read back the way its C HdrHistogram
//! does, so percentiles are the same bucket tops memtier prints (0.055, 0.063, ...), and every format
//! detail is memtier's. But ringbench's numbers are true, so these memtier quirks are dropped on
//! purpose:
//! - the JSON's Totals "Latency"/"Average Latency" is the true average in ms (total latency over
//!   requests, as every other row), where memtier truncates it to whole milliseconds;
//! - with `--command`, the Totals row counts each byte once (its KB/sec, its JSON "KB/sec RX" and
//!   "KB/sec TX"), where memtier counts every byte twice;
//! - the averaged section's JSON Totals is filled like any row (memtier zeroes it): min, max,
//!   accumulated latency and percentiles from the runs' histograms added up, "KB/sec RX"/"KB/sec TX"
//!   the runs' rates averaged as "KB/sec" is. Its Runtime runs from the first run's start to the
//!   last run's end ("Interrupted" if any run was), and every row's Time-Serie holds, for each second
//!   from the start, that second of every run added up (counts and bytes summed, histograms added),
//!   where memtier's are zero and empty.
//!
//! Not kept either: memtier's best/worst pick (its ops/sec overflows, so it names the first run both
//! times); here the best run has the most ops/sec and the worst the fewest, the first one on a tie.
//! Not available from a `TestResult`: connection errors (always 0 here), the cluster MOVED/ASK
//! columns, and bytes per second: a Time-Serie second's "Bytes RX"/"Bytes TX" are the row's bytes
//! shared out in proportion to that second's requests. A row's seconds come from the executors'
//! one-second intervals (`ShardStats::interval_logs`, `part_interval_logs`); without them a test of
//! one second or less is its own second 0, and a longer one has an empty Time-Serie.

mod hdr;
mod hist;
mod json;
mod table;
#[cfg(test)]
mod tests;
mod view;

pub use hdr::write_hdr_files;
pub use json::json_text;
pub use table::write_report;
pub use view::{MemtierView, Options, Row, RunInfo, Second};

use crate::stats::TestResult;
use crate::stats::intervals::{INTERVAL, merge_intervals};
use hdrhistogram::Histogram;
use hist::{layout, micros};

/// How `--command` rows are broken down (`--command-stats-breakdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Breakdown {
    /// One row per command name, lines of the same command added up (memtier's default).
    Command,
    /// One row per `--command` line.
    Line,
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
            timestamps: keep.iter().map(|&i| i as u64).collect(),
            hdr_parts: hdr_parts(&inputs, ratio),
            from_send: r.stats.service.as_ref().map(|h| micros(h).0),
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

/// The Totals row: every line's figures (each byte counted once, the true average latency), the rows'
/// histograms added up, and with `--ratio` the Gets' hits and misses.
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
    if ratio {
        let gets = rows.iter().find(|r| r.label == "GET");
        t.hits_sec = gets.and_then(|g| g.hits_sec);
        t.misses_sec = gets.and_then(|g| g.misses_sec);
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
