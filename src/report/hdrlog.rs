//! `--hdr-out PREFIX`: one HdrHistogram interval log per test (`<PREFIX><test>.hlog`), one interval per
//! second, in the standard text format that HdrHistogram's own log tools read.

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

/// The file name part for a test title: lower case, runs of other characters as one `_`.
pub fn slug(title: &str) -> String {
    let mut s = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('_') {
            s.push('_');
        }
    }
    let s = s.trim_matches('_').to_string();
    if s.is_empty() { "test".into() } else { s }
}

/// The log's path for a test.
pub fn log_path(prefix: &str, title: &str) -> String {
    format!("{prefix}{}.hlog", slug(title))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug("SET"), "set");
        assert_eq!(
            slug("LRANGE_100 (first 100 elements)"),
            "lrange_100_first_100_elements"
        );
        assert_eq!(
            slug("lpush mylist ele:__rand_int__"),
            "lpush_mylist_ele_rand_int"
        );
        assert_eq!(slug("***"), "test");
        assert_eq!(log_path("out/run1-", "GET"), "out/run1-get.hlog");
    }
}
