//! `--hdr-out PREFIX`: one HdrHistogram interval log per test (`<PREFIX><test>.hlog`), one interval per
//! second, in the standard text format that HdrHistogram's own log tools read; and one per command of a
//! mix (`<PREFIX><test>_cmd<N>_<command>.hlog`), its own replies per second.

use crate::config::paths::{log_path, part_log_title, slug};
use crate::stats::TestResult;
use crate::stats::intervals::{INTERVAL, IntervalError, merge_intervals};
use hdrhistogram::Histogram;
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
    let total = Duration::from_secs_f64(r.seconds.max(0.0));
    // The last interval ends with the test, not on a whole second.
    log_text(r, &r.title, &spans(&intervals, total))
}

/// The log of command `index` of a mix: one interval per second, as the test's (or its whole test as
/// one interval when the seconds were not kept).
pub fn render_part(r: &TestResult, index: usize) -> Result<Vec<u8>, RenderError> {
    let p = &r.stats.parts[index];
    let title = part_log_title(&r.title, index, &p.title);
    let total = Duration::from_secs_f64(r.seconds.max(0.0));
    let lists: Vec<Vec<Vec<u8>>> = r
        .stats
        .part_interval_logs
        .iter()
        .filter_map(|e| e.get(index).cloned())
        .collect();
    if lists.is_empty() {
        return log_text(r, &title, &[(&p.hist, Duration::ZERO, total)]);
    }
    let intervals = merge_intervals(&lists, &p.hist)?;
    log_text(r, &title, &spans(&intervals, total))
}

/// Each interval with its start and length: whole seconds, the last one ending with the test.
fn spans(
    intervals: &[Histogram<u64>],
    total: Duration,
) -> Vec<(&Histogram<u64>, Duration, Duration)> {
    intervals
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let start = INTERVAL * i as u32;
            (h, start, total.saturating_sub(start).min(INTERVAL))
        })
        .collect()
}

fn log_text(
    r: &TestResult,
    title: &str,
    spans: &[(&Histogram<u64>, Duration, Duration)],
) -> Result<Vec<u8>, RenderError> {
    let base = r.wall_start.unwrap_or(UNIX_EPOCH);
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut builder = IntervalLogWriterBuilder::new();
    builder
        .add_comment(&format!(
            "ringbench {}: {} (latency in nanoseconds)",
            env!("CARGO_PKG_VERSION"),
            title
        ))
        .with_start_time(base)
        .with_base_time(base)
        .with_max_value_divisor(1e6);
    let mut w = builder
        .begin_log_with(&mut out, &mut serializer)
        .map_err(RenderError::Begin)?;
    let slug = slug(title);
    let tag = Tag::new(&slug);
    for &(h, start, len) in spans {
        w.write_histogram(h, start, len, tag)
            .map_err(RenderError::Histogram)?;
    }
    Ok(out)
}

/// Writes the log of one test next to `prefix` (and one per command of a mix); returns the test's path.
pub fn write(prefix: &str, r: &TestResult) -> Result<String, HdrLogError> {
    let path = log_path(prefix, &r.title);
    write_one(&path, render(r))?;
    for (i, p) in r.stats.parts.iter().enumerate() {
        let part = log_path(prefix, &part_log_title(&r.title, i, &p.title));
        write_one(&part, render_part(r, i))?;
    }
    Ok(path)
}

fn write_one(path: &str, text: Result<Vec<u8>, RenderError>) -> Result<(), HdrLogError> {
    let text = text.map_err(|source| HdrLogError::Render {
        path: path.to_string(),
        source,
    })?;
    std::fs::write(path, &text).map_err(|source| HdrLogError::Io {
        path: path.to_string(),
        source,
    })
}
