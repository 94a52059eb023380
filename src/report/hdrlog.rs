//! `--hdr-out PREFIX`: one HdrHistogram interval log per test (`<PREFIX><test>.hlog`), one interval per
//! second, in the standard text format that HdrHistogram's own log tools read.

use crate::config::paths::{log_path, slug};
use crate::stats::TestResult;
use crate::stats::intervals::{INTERVAL, merge_intervals};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use std::time::{Duration, UNIX_EPOCH};

/// Why a log could not be written.
#[derive(Debug, thiserror::Error)]
#[error("could not write the interval log {path}: {reason}")]
pub struct HdrLogError {
    pub path: String,
    pub reason: String,
}

/// The interval log of one test as text: BaseTime is the test's first send, each interval's timestamp
/// is its offset from there, max values are in milliseconds, and the tag is the test's slug.
pub fn render(r: &TestResult) -> Result<Vec<u8>, String> {
    let intervals = merge_intervals(&r.stats.interval_logs, &r.stats.hist)?;
    let base = r.wall_start.unwrap_or(UNIX_EPOCH);
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(&format!(
            "ringbench {}: {} (latency in nanoseconds)",
            env!("CARGO_PKG_VERSION"),
            r.title
        ))
        .with_start_time(base)
        .with_base_time(base)
        .with_max_value_divisor(1e6);
    let mut w = builder
        .begin_log_with(&mut out, &mut serializer)
        .map_err(|e| e.to_string())?;
    let slug = slug(&r.title);
    let tag = Tag::new(&slug);
    let total = Duration::from_secs_f64(r.seconds.max(0.0));
    for (i, h) in intervals.iter().enumerate() {
        let start = INTERVAL * i as u32;
        // The last interval ends with the test, not on a whole second.
        let len = total.saturating_sub(start).min(INTERVAL);
        w.write_histogram(h, start, len, tag)
            .map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Writes the log of one test next to `prefix`; returns its path.
pub fn write(prefix: &str, r: &TestResult) -> Result<String, HdrLogError> {
    let path = log_path(prefix, &r.title);
    let fail = |reason: String| HdrLogError {
        path: path.clone(),
        reason,
    };
    let text = render(r).map_err(fail)?;
    std::fs::write(&path, text).map_err(|e| fail(crate::os_error::describe(e)))?;
    Ok(path)
}
