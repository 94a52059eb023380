//! A Unix time as the parts of its UTC date and time, for the few places that print a date in a fixed
//! format (memtier's HDR header, the metrics endpoint's HTTP `Date`), without a date crate.

/// Weekday names, from Thursday (1970-01-01 was a Thursday).
pub(crate) const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
pub(crate) const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A UTC date and time: `weekday` and `month` index [`DAYS`] and [`MONTHS`].
pub(crate) struct Utc {
    pub year: i64,
    pub month: usize,
    pub day: i64,
    pub weekday: usize,
    pub hour: u64,
    pub minute: u64,
    pub second: u64,
}

impl Utc {
    /// The UTC date and time of `epoch_secs` seconds after 1970-01-01 00:00:00.
    pub(crate) fn of(epoch_secs: u64) -> Utc {
        let (days, rest) = (epoch_secs / 86_400, epoch_secs % 86_400);
        // Days to a civil date (Howard Hinnant's algorithm), in 400-year eras from 0000-03-01.
        let z = days as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        Utc {
            year: yoe + era * 400 + i64::from(month <= 2),
            month: (month - 1) as usize,
            day,
            weekday: (days % 7) as usize,
            hour: rest / 3600,
            minute: rest / 60 % 60,
            second: rest % 60,
        }
    }
}
