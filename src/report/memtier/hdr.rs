//! memtier's `--hdr-file-prefix` files: per run, `PREFIX_FULL_RUN_n` and one per command, each as C
//! HdrHistogram's percentile listing (`.txt`, in ms) and its one-interval log (`.hgrm`, in µs).

use crate::report::memtier::hist::{SUB_BUCKETS, compressed, mean_us, percentile_steps, stddev_us};
use crate::report::memtier::view::MemtierView;
use hdrhistogram::Histogram;
use std::io;
use std::path::PathBuf;

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
pub(super) fn gmt_date(epoch_secs: u64) -> String {
    use crate::report::utc::{DAYS, MONTHS, Utc};
    let u = Utc::of(epoch_secs);
    format!(
        "{} {} {:02}:{:02}:{:02} GMT {}",
        DAYS[u.weekday], MONTHS[u.month], u.hour, u.minute, u.second, u.year
    )
}
