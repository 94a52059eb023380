//! How a latency histogram is made (nanoseconds, one hour at most): one place for every histogram of a run.

use hdrhistogram::Histogram;

/// Highest latency recorded without clamping: one hour, in nanoseconds.
pub const MAX_LATENCY_NS: u64 = 3_600_000_000_000;

/// A new latency histogram (nanoseconds) with `sigfig` significant figures.
pub fn new_histogram(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, sigfig).expect("histogram bounds are valid")
}
