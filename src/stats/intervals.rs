//! One-second interval histograms cut from an executor's running histogram (for `--hdr-out` and the
//! JSON's per-second series).
//!
//! The hot path keeps recording into the executor's one total histogram only. When a second boundary has
//! passed (checked once per read event), the recorder takes the difference between the total now and the
//! total at the previous boundary, and keeps it V2-encoded (a few hundred bytes instead of a full counts
//! array). Allocation happens only there, once a second.

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use std::time::{Duration, Instant};

/// Length of one interval.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Cuts one executor's total histogram (and each mixed command's) into consecutive one-second intervals.
pub struct IntervalRecorder {
    next: Instant,
    whole: Cutter,
    /// One per command of a mix, in the mix's order.
    parts: Vec<Cutter>,
    scratch: Histogram<u64>,
    serializer: V2Serializer,
}

/// The running total at the last boundary of one histogram, and its intervals so far.
struct Cutter {
    previous_total: Histogram<u64>,
    encoded: Vec<Vec<u8>>,
}

impl Cutter {
    fn new(like: &Histogram<u64>) -> Self {
        Cutter {
            previous_total: Histogram::new_from(like),
            encoded: Vec::new(),
        }
    }

    fn cut(
        &mut self,
        total: &Histogram<u64>,
        scratch: &mut Histogram<u64>,
        ser: &mut V2Serializer,
    ) {
        scratch.reset();
        // Both share the total's layout, so these cannot fail.
        let _ = scratch.add(total);
        let _ = scratch.subtract(&self.previous_total);
        let mut bytes = Vec::new();
        let _ = ser.serialize(scratch, &mut bytes);
        self.encoded.push(bytes);
        self.previous_total.reset();
        let _ = self.previous_total.add(total);
    }
}

/// The intervals of one executor: its total's, and each mixed command's.
pub type Intervals = (Vec<Vec<u8>>, Vec<Vec<Vec<u8>>>);

impl IntervalRecorder {
    /// A recorder whose first interval starts at `start`, for a test of `parts` mixed commands (0 for
    /// one that is not a mix); `like` gives the histogram layout.
    pub fn new(start: Instant, like: &Histogram<u64>, parts: usize) -> Self {
        IntervalRecorder {
            next: start + INTERVAL,
            whole: Cutter::new(like),
            parts: (0..parts).map(|_| Cutter::new(like)).collect(),
            scratch: Histogram::new_from(like),
            serializer: V2Serializer::new(),
        }
    }

    /// True when a boundary has passed and `cut_until` must run before recording more.
    #[inline]
    pub fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    /// Closes every interval that ended before `now` (empty ones included: a stall is a real second).
    /// `part(i)` is mixed command `i`'s running total.
    pub fn cut_until<'a>(
        &mut self,
        now: Instant,
        total: &Histogram<u64>,
        part: impl Fn(usize) -> Option<&'a Histogram<u64>>,
    ) {
        while now >= self.next {
            self.cut(total, &part);
            self.next += INTERVAL;
        }
    }

    /// Closes the last (partial) interval and returns every interval, V2-encoded, in order: the
    /// total's, then each mixed command's.
    pub fn finish<'a>(
        mut self,
        total: &Histogram<u64>,
        part: impl Fn(usize) -> Option<&'a Histogram<u64>>,
    ) -> Intervals {
        self.cut(total, &part);
        (
            self.whole.encoded,
            self.parts.into_iter().map(|c| c.encoded).collect(),
        )
    }

    fn cut<'a>(
        &mut self,
        total: &Histogram<u64>,
        part: &impl Fn(usize) -> Option<&'a Histogram<u64>>,
    ) {
        let (scratch, ser) = (&mut self.scratch, &mut self.serializer);
        self.whole.cut(total, scratch, ser);
        for (i, c) in self.parts.iter_mut().enumerate() {
            if let Some(h) = part(i) {
                c.cut(h, scratch, ser);
            }
        }
    }
}

/// An interval that could not be read back or added up.
#[derive(Debug, thiserror::Error)]
pub enum IntervalError {
    #[error("interval {index}: {source:?}")]
    Decode {
        index: usize,
        #[source]
        source: hdrhistogram::serialization::DeserializeError,
    },
    #[error("interval {index}: {source:?}")]
    Add {
        index: usize,
        #[source]
        source: hdrhistogram::errors::AdditionError,
    },
}

/// Sums the executors' interval lists index by index into one histogram per second.
pub fn merge_intervals(
    per_executor: &[Vec<Vec<u8>>],
    like: &Histogram<u64>,
) -> Result<Vec<Histogram<u64>>, IntervalError> {
    let longest = per_executor.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(longest);
    let mut de = Deserializer::new();
    for i in 0..longest {
        let mut h = Histogram::new_from(like);
        for list in per_executor {
            if let Some(bytes) = list.get(i) {
                let part: Histogram<u64> = de
                    .deserialize(&mut bytes.as_slice())
                    .map_err(|source| IntervalError::Decode { index: i, source })?;
                h.add(&part)
                    .map_err(|source| IntervalError::Add { index: i, source })?;
            }
        }
        out.push(h);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_histogram;

    #[test]
    fn intervals_partition_the_total() {
        let t0 = Instant::now();
        let mut total = new_histogram(3);
        let mut r = IntervalRecorder::new(t0, &total, 0);
        total.record_n(1_000, 5).unwrap();
        let t = t0 + Duration::from_millis(1500);
        assert!(r.due(t));
        r.cut_until(t, &total, |_| None);
        total.record_n(2_000_000, 3).unwrap();
        // A stall: seconds 1 and 2 pass with nothing, then one more value in second 3.
        let t = t0 + Duration::from_millis(3200);
        r.cut_until(t, &total, |_| None);
        total.record(5_000).unwrap();
        let list = r.finish(&total, |_| None).0;
        let merged = merge_intervals(&[list.clone(), list], &total).unwrap();
        let counts: Vec<u64> = merged.iter().map(|h| h.len()).collect();
        assert_eq!(counts, [10, 6, 0, 2]);
        assert_eq!(merged[1].max(), total.highest_equivalent(2_000_000));
    }
}
