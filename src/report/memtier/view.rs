//! The view every memtier output reads: one [`MemtierView`] per run (a test in memtier's terms), its
//! [`Row`]s and their [`Second`]s, the run information and output flags, the average of several runs,
//! and the sections memtier prints for them. `mod.rs` builds a view from a `TestResult`; `table.rs`,
//! `json.rs` and `hdr.rs` write it.

use crate::report::memtier::hist::{layout, mean_us, value_at_percentile};
use hdrhistogram::Histogram;
use std::borrow::Cow;

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
    /// The JSON's "Latency" and "Average Latency", in ms: the latencies' sum over the requests in
    /// whole µs (a `--command` row's: its histogram's mean; an average's: the runs' averaged).
    pub latency_ms: f64,
    /// The sum of every latency, in µs.
    pub total_us: u64,
    /// In memtier's layout (µs).
    pub hist: Histogram<u64>,
    /// A `--ratio` row: `---` instead of latencies when it has none.
    pub blank_when_empty: bool,
    /// One per [`MemtierView::timestamps`] entry.
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
    /// Start and end, µs since the epoch (an average: the first run's start, the last run's end).
    pub start_us: u64,
    pub end_us: u64,
    pub interrupted: bool,
    /// The seconds (from the start) that saw replies (an average: those of any run).
    pub timestamps: Vec<u64>,
    /// The histograms `--hdr-file-prefix` writes beside the full run's: (name, histogram) per
    /// `--command` line, or GET and SET.
    pub hdr_parts: Vec<(String, Histogram<u64>)>,
    /// `--rate-limiting`: every request's latency from its actual send, as memtier measures it (the
    /// rows' latencies run from the intended send), in memtier's layout (µs).
    pub from_send: Option<Histogram<u64>>,
}

/// memtier's average of several runs ("AGGREGATED AVERAGE RESULTS"); `runs` (at least one) are runs
/// of one test, so their rows match. Rates and latencies are the runs' averaged, counts and
/// histograms added up; it spans the first run's start to the last run's end, and each second (from
/// the start) is that second of every run added up.
pub fn average(runs: &[MemtierView]) -> MemtierView {
    let first = &runs[0];
    let mut timestamps: Vec<u64> = runs.iter().flat_map(|v| v.timestamps.clone()).collect();
    timestamps.sort_unstable();
    timestamps.dedup();
    let rows = (0..first.rows.len())
        .map(|i| average_row(&in_runs(runs, Some(i)), &timestamps, first.by_command))
        .collect();
    let totals = average_row(&in_runs(runs, None), &timestamps, false);
    let mut hdr_parts = first.hdr_parts.clone();
    for v in &runs[1..] {
        for (a, b) in hdr_parts.iter_mut().zip(&v.hdr_parts) {
            a.1.add(&b.1).expect("one layout");
        }
    }
    let from_send = runs.iter().try_fold(layout(), |mut sum, v| {
        sum.add(v.from_send.as_ref()?).expect("one layout");
        Some(sum)
    });
    MemtierView {
        rows,
        totals,
        from_send,
        start_us: runs.iter().map(|v| v.start_us).min().unwrap_or(0),
        end_us: runs.iter().map(|v| v.end_us).max().unwrap_or(0),
        interrupted: runs.iter().any(|v| v.interrupted),
        timestamps,
        hdr_parts,
        ..first.clone()
    }
}

/// Row `row` (Totals for `None`) of each run, with that run's seconds.
fn in_runs(runs: &[MemtierView], row: Option<usize>) -> Vec<(&[u64], &Row)> {
    runs.iter()
        .map(|v| {
            let r = row.map_or(&v.totals, |i| &v.rows[i]);
            (v.timestamps.as_slice(), r)
        })
        .collect()
}

/// One row's average over runs: rates and latencies averaged (its latency from the added histogram
/// with `from_hist`), counts, latencies and histograms added up, and at each of `timestamps` the runs'
/// seconds added up.
fn average_row(runs: &[(&[u64], &Row)], timestamps: &[u64], from_hist: bool) -> Row {
    let rows: Vec<&Row> = runs.iter().map(|r| r.1).collect();
    let k = rows.len() as f64;
    let mean = |f: &dyn Fn(&Row) -> f64| rows.iter().map(|r| f(r)).sum::<f64>() / k;
    let mean_opt =
        |f: &dyn Fn(&Row) -> Option<f64>| f(rows[0]).map(|_| mean(&|r| f(r).unwrap_or(0.0)));
    let mut hist = layout();
    for r in &rows {
        hist.add(&r.hist).expect("one layout");
    }
    let seconds = timestamps
        .iter()
        .map(|t| {
            added_seconds(runs.iter().filter_map(|(stamps, r)| {
                let at = stamps.iter().position(|s| s == t)?;
                r.seconds.get(at)
            }))
        })
        .collect();
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
        seconds,
        ..rows[0].clone()
    };
    if from_hist {
        out.latency_ms = out.avg_ms();
    }
    out
}

/// Seconds added up: counts, bytes and latencies summed, the lowest minimum and highest maximum of
/// those with requests, the histograms added.
fn added_seconds<'a>(seconds: impl Iterator<Item = &'a Second>) -> Second {
    let mut out = Second {
        ops: 0,
        bytes_rx: 0,
        bytes_tx: 0,
        total_us: 0,
        min_us: 0,
        max_us: 0,
        hist: layout(),
    };
    for s in seconds {
        if s.ops > 0 {
            out.min_us = if out.ops == 0 {
                s.min_us
            } else {
                out.min_us.min(s.min_us)
            };
            out.max_us = out.max_us.max(s.max_us);
        }
        out.ops += s.ops;
        out.bytes_rx += s.bytes_rx;
        out.bytes_tx += s.bytes_tx;
        out.total_us = out.total_us.saturating_add(s.total_us);
        out.hist.add(&s.hist).expect("one layout");
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
