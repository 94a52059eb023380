//! A turn's clock: the monotonic time the executor's loop reads, paired with the wall clock to turn
//! a kernel receive timestamp into the moment a reply reached its socket.

use std::time::{Duration, Instant};

/// A turn's clock: the monotonic `now` the loop reads, and the same moment on the wall clock, to
/// turn a kernel receive timestamp into an `Instant`.
#[derive(Clone, Copy)]
pub(crate) struct Clock {
    pub(crate) now: Instant,
    pub(crate) real_ns: u64,
}

/// The widest gap between the two monotonic reads around the wall-clock read that [`Clock::read`]
/// takes as one moment (both are vDSO reads of tens of nanoseconds each).
const PAIR_GAP: Duration = Duration::from_micros(2);
/// How many times [`Clock::read`] reads the pair before it keeps the closest one.
const PAIR_TRIES: usize = 4;

impl Clock {
    pub(crate) fn read(stamps: bool) -> Clock {
        if !stamps {
            return Clock {
                now: Instant::now(),
                real_ns: 0,
            };
        }
        Clock::paired(Instant::now, || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        })
    }

    /// The two clocks at one moment: the wall clock read between two monotonic reads, the moment
    /// being their midpoint. An interrupt or a preemption between the reads would shift every arrival
    /// converted with the pair by its length (earlier, so latencies would read short), so a pair
    /// whose reads are more than [`PAIR_GAP`] apart is read again, and after [`PAIR_TRIES`] the
    /// closest pair is kept.
    fn paired(mono: impl Fn() -> Instant, wall: impl Fn() -> u64) -> Clock {
        let read = || {
            let before = mono();
            let real_ns = wall();
            let gap = mono().saturating_duration_since(before);
            let now = before + gap / 2;
            (gap, Clock { now, real_ns })
        };
        let mut best = read();
        for _ in 1..PAIR_TRIES {
            if best.0 <= PAIR_GAP {
                break;
            }
            let next = read();
            if next.0 < best.0 {
                best = next;
            }
        }
        best.1
    }

    /// When a buffer stamped `stamp` arrived: `now` less its age, never later than `now`.
    pub(crate) fn arrival(&self, stamp: Option<u64>) -> Instant {
        match stamp {
            Some(t) if self.real_ns > 0 => self
                .now
                .checked_sub(Duration::from_nanos(self.real_ns.saturating_sub(t)))
                .unwrap_or(self.now),
            _ => self.now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receive_timestamp_becomes_the_reply_arrival() {
        let now = Instant::now();
        let clock = Clock {
            now,
            real_ns: 1_000_000_000_000,
        };
        // Stamped 30 µs before the turn read its clocks.
        let stamp = clock.real_ns - 30_000;
        assert_eq!(clock.arrival(Some(stamp)), now - Duration::from_micros(30));
        // No stamp, or one from the future (the wall clock stepped back): the turn's own time.
        assert_eq!(clock.arrival(None), now);
        assert_eq!(clock.arrival(Some(clock.real_ns + 5_000)), now);
    }

    /// Fake clocks for [`Clock::paired`]: each read of the monotonic clock moves it by the next step
    /// (µs), and the wall clock reads 10^12 ns plus the monotonic clock's microseconds so far.
    fn paired_with(steps: &[u64]) -> (Instant, Clock) {
        use std::cell::Cell;
        let base = Instant::now();
        let (at, next) = (Cell::new(0u64), Cell::new(0usize));
        let mono = || {
            let step = steps.get(next.get()).copied().unwrap_or(0);
            next.set(next.get() + 1);
            at.set(at.get() + step);
            base + Duration::from_micros(at.get())
        };
        let wall = || 1_000_000_000_000 + at.get() * 1_000;
        (base, Clock::paired(mono, wall))
    }

    #[test]
    fn a_pair_of_clocks_split_by_a_preemption_is_read_again() {
        // Reads at 0 and 50 µs (preempted around the wall read, taken at 0), then at 60 and 60:
        // the second pair is kept, so a stamp maps to its true instant.
        let (base, clock) = paired_with(&[0, 50, 10, 0]);
        assert_eq!(clock.now, base + Duration::from_micros(60));
        assert_eq!(clock.real_ns, 1_000_000_000_000 + 60_000);
        let stamp = 1_000_000_000_000 + 55_000;
        assert_eq!(clock.arrival(Some(stamp)), base + Duration::from_micros(55));
        // A close pair on the first try is taken at once, at the midpoint of its reads.
        let (base, clock) = paired_with(&[7, 1]);
        assert_eq!(clock.real_ns, 1_000_000_000_000 + 7_000);
        assert_eq!(clock.now, base + Duration::from_nanos(7_500));
    }

    #[test]
    fn when_no_pair_is_close_the_closest_is_kept() {
        // Gaps of 40, 9, 30 and 20 µs: the second pair (reads at 40 + 0 and 40 + 9) is kept.
        let (base, clock) = paired_with(&[0, 40, 0, 9, 0, 30, 0, 20]);
        assert_eq!(clock.real_ns, 1_000_000_000_000 + 40_000);
        assert_eq!(clock.now, base + Duration::from_nanos(44_500));
    }
}
