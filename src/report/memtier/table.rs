//! memtier's stdout report: the run information lines, each section's results table ("ALL STATS",
//! "RUN #n RESULTS", "BEST RUN RESULTS", ...) with its percentile columns, and the "Request Latency
//! Distribution" block after it.

use crate::report::memtier::hist::{mean_us, percentile_steps, step_figures, value_at_percentile};
use crate::report::memtier::view::{MemtierView, Options, Row, RunInfo, sections};
use hdrhistogram::Histogram;
use std::io::{self, Write};

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
pub(super) fn write_run_information(out: &mut dyn Write, info: &RunInfo) -> io::Result<()> {
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
pub(super) fn write_all_stats(
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
    if let Some(h) = &view.from_send {
        write_from_send(out, h, w, percentiles)?;
    }
    Ok(())
}

/// `--rate-limiting`: the latencies as memtier measures them (from each request's actual send), below
/// the table whose latencies run from the intended send. Its row is `Sent`, not a type of the table.
fn write_from_send(
    out: &mut dyn Write,
    hist: &Histogram<u64>,
    w: usize,
    percentiles: &[f64],
) -> io::Result<()> {
    writeln!(
        out,
        "\nLatency from each request's actual send (memtier's measure; the table's runs from the \
         intended send):"
    )?;
    let mut head = format!("{:<w$} {:>15} ", "Type", "Avg. Latency");
    let mut row = format!(
        "{:<w$} {} ",
        "Sent",
        cell(Some(mean_us(hist) / 1000.0), 15, 5)
    );
    for &p in percentiles {
        head.push_str(&format!("{:>15} ", percentile_label(p as f32)));
        let v = value_at_percentile(hist, f64::from(p as f32), true) as f64 / 1000.0;
        row.push_str(&cell(Some(v), 15, 5));
        row.push(' ');
    }
    writeln!(out, "{head}\n{row}")
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
pub(super) fn percentile_label(q: f32) -> String {
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
pub(super) fn write_histogram(out: &mut dyn Write, view: &MemtierView) -> io::Result<()> {
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
