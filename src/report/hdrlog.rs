//! `--hdr-out PREFIX`: one HdrHistogram interval log per test (`<PREFIX><test>.hlog`), one interval per
//! second, in the standard text format that HdrHistogram's own log tools read.

use crate::config::paths::{log_path, slug};
use crate::stats::TestResult;
use crate::stats::intervals::{INTERVAL, IntervalError, merge_intervals};
use hdrhistogram::serialization::V2DeflateSerializeError;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{
    IntervalLogWriterBuilder, IntervalLogWriterError, Tag,
};
use std::time::{Duration, UNIX_EPOCH};

/// Why a test's log could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Intervals(#[from] IntervalError),
    #[error("{0}")]
    Begin(#[source] std::io::Error),
    #[error("{0}")]
    Histogram(#[source] IntervalLogWriterError<V2DeflateSerializeError>),
}

/// Why a log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HdrLogError {
    #[error("could not write the interval log {path}: {source}")]
    Render {
        path: String,
        #[source]
        source: RenderError,
    },
    #[error("could not write the interval log {path}: {}", crate::os_error::wording(.source))]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The interval log of one test as text: BaseTime is the test's first send, each interval's timestamp
/// is its offset from there, max values are in milliseconds, and the tag is the test's slug.
pub fn render(r: &TestResult) -> Result<Vec<u8>, RenderError> {
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
        .map_err(RenderError::Begin)?;
    let slug = slug(&r.title);
    let tag = Tag::new(&slug);
    let total = Duration::from_secs_f64(r.seconds.max(0.0));
    for (i, h) in intervals.iter().enumerate() {
        let start = INTERVAL * i as u32;
        // The last interval ends with the test, not on a whole second.
        let len = total.saturating_sub(start).min(INTERVAL);
        w.write_histogram(h, start, len, tag)
            .map_err(RenderError::Histogram)?;
    }
    Ok(out)
}

/// Writes the log of one test next to `prefix`; returns its path.
pub fn write(prefix: &str, r: &TestResult) -> Result<String, HdrLogError> {
    let path = log_path(prefix, &r.title);
    let text = render(r).map_err(|source| HdrLogError::Render {
        path: path.clone(),
        source,
    })?;
    std::fs::write(&path, &text).map_err(|source| HdrLogError::Io {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}
