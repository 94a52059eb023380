//! How memtier reads its latency histograms: its layout (microseconds, 10 µs to 600 s, 2 significant
//! figures), a ringbench histogram (ns) moved into it, and C HdrHistogram's readings memtier prints:
//! the percentile listing, the value at a percentile, the mean and standard deviation (bucket
//! midpoints), the base64 V2-deflate encoding.

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

/// memtier's latency histograms: microseconds, 10 µs to 600 s, 2 significant figures.
const LOW_US: u64 = 10;
const HIGH_US: u64 = 600_000_000;
const SIGFIG: u8 = 2;
/// Its sub-buckets per bucket with that layout (for the `.txt` footer).
pub(super) const SUB_BUCKETS: u32 = 256;
/// Ticks per half distance of its percentile listings.
const TICKS: u32 = 10;

/// An empty histogram of memtier's layout.
pub(super) fn layout() -> Histogram<u64> {
    Histogram::new_with_bounds(LOW_US, HIGH_US, SIGFIG).expect("memtier's bounds are valid")
}

/// A ns histogram in memtier's layout (each bucket's midpoint truncated to µs, capped as memtier
/// caps), and the sum of its latencies in µs.
pub(super) fn micros(ns: &Histogram<u64>) -> (Histogram<u64>, u64) {
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

/// A distribution line's figures as memtier prints them (through a float).
pub(super) fn step_figures(s: &Step) -> (f64, f64) {
    let ms = f64::from((s.value as f64 / 1000.0) as f32);
    (ms, f64::from(s.percentile as f32))
}

/// One line of a percentile listing: a bucket's top (µs), the percentile reached and the count so far.
pub(super) struct Step {
    pub(super) value: u64,
    pub(super) percentile: f64,
    pub(super) cumulative: u64,
}

/// The percentile listing of C HdrHistogram's percentile iterator (10 ticks per half distance),
/// which memtier prints: steps through each bucket, then 100%.
pub(super) fn percentile_steps(h: &Histogram<u64>) -> Vec<Step> {
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
pub(super) fn value_at_percentile(
    h: &Histogram<u64>,
    percentile: f64,
    lowest_at_zero: bool,
) -> u64 {
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
pub(super) fn mean_us(h: &Histogram<u64>) -> f64 {
    let total: u128 = h
        .iter_recorded()
        .map(|v| {
            u128::from(h.median_equivalent(v.value_iterated_to())) * u128::from(v.count_at_value())
        })
        .sum();
    total as f64 / h.len() as f64
}

pub(super) fn stddev_us(h: &Histogram<u64>) -> f64 {
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
pub(super) fn compressed(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Encoding into memory only fails on a histogram too large for the format.
    let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
