//! A test's per-second series in the JSON (`tests[].per_second`): each second's replies, rate and
//! latency percentiles, from the same one-second interval histograms `--hdr-out` writes (every
//! executor's, added up), each second's histogram kept too so `merge` adds shards' seconds exactly.

use crate::report::encoded_histogram::{EncodedHistogram, HistogramError, add_checked};
use crate::stats::intervals::{INTERVAL, IntervalError, merge_intervals};
use crate::stats::{TestResult, ns_to_ms};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// One second of a test, counted from its first send.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecondEntry {
    /// Seconds from the test's first send to this interval's start.
    pub second: u64,
    /// Its length in seconds: 1, less for the test's last.
    pub seconds: f64,
    pub requests: u64,
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub histogram: EncodedHistogram,
}

impl SecondEntry {
    fn of(second: u64, seconds: f64, h: &Histogram<u64>) -> Self {
        let requests = h.len();
        SecondEntry {
            second,
            seconds,
            requests,
            rps: if seconds > 0.0 {
                requests as f64 / seconds
            } else {
                0.0
            },
            p50_ms: ns_to_ms(h.value_at_quantile(0.5)),
            p99_ms: ns_to_ms(h.value_at_quantile(0.99)),
            max_ms: ns_to_ms(h.max()),
            histogram: EncodedHistogram::encode(h),
        }
    }
}

/// The series of `r` (empty when its executors cut no intervals).
pub fn of(r: &TestResult) -> Result<Vec<SecondEntry>, IntervalError> {
    let hists = merge_intervals(&r.stats.interval_logs, &r.stats.hist)?;
    let step = INTERVAL.as_secs_f64();
    let n = hists.len();
    Ok(hists
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let start = i as f64 * step;
            // The last interval ends with the test.
            let len = if i + 1 == n {
                (r.seconds - start).clamp(0.0, step)
            } else {
                step
            };
            SecondEntry::of(i as u64, len, h)
        })
        .collect())
}

/// The shards' series of one test added up second by second (seconds counted from each shard's own
/// first send: shards of one run start together, `--start-at`).
pub fn merge(series: &[&[SecondEntry]]) -> Result<Vec<SecondEntry>, HistogramError> {
    let longest = series.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(longest);
    for i in 0..longest {
        let mut sum: Option<Histogram<u64>> = None;
        let mut seconds: f64 = 0.0;
        for s in series {
            if let Some(e) = s.get(i) {
                let h = e.histogram.decode()?;
                seconds = seconds.max(e.seconds);
                match sum.as_mut() {
                    Some(total) => add_checked(total, &h)?,
                    None => sum = Some(h),
                }
            }
        }
        if let Some(h) = sum {
            out.push(SecondEntry::of(i as u64, seconds, &h));
        }
    }
    Ok(out)
}
