//! `--start-at UNIX_TIME`: runs launched on several hosts (ssh, Ansible, a Kubernetes Job) start together.
//!
//! The moment is checked when the flags are read: more than `MAX_LATE` in the past means this host missed
//! the common start (its window would not overlap the others', so a merge would mislead), and more than
//! `MAX_AHEAD` in the future is almost always milliseconds given as seconds. Both are usage errors.

use crate::config::error::UsageError;
use std::time::{SystemTime, UNIX_EPOCH};

/// How late a host may be and still start (clock skew and ssh fan-out take a moment).
pub const MAX_LATE: f64 = 1.0;
/// How far ahead a start may be set.
pub const MAX_AHEAD: f64 = 24.0 * 3600.0;

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Validates a `--start-at` value against `now` (Unix seconds).
pub fn parse_start_at(value: &str, now: f64) -> Result<f64, UsageError> {
    let bad = |why: String| UsageError(format!("invalid value '{value}' for '--start-at': {why}"));
    let t: f64 = value
        .trim()
        .parse()
        .ok()
        .filter(|t: &f64| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| {
            bad("must be a Unix time in seconds, e.g. $(( $(date +%s) + 10 ))".into())
        })?;
    if t < now - MAX_LATE {
        return Err(bad(format!("that moment is {:.1} s in the past", now - t)));
    }
    if t > now + MAX_AHEAD {
        return Err(bad(format!(
            "that moment is {:.0} s ahead (more than 24 h; seconds, not milliseconds)",
            t - now
        )));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_near_moments_and_names_the_flag_otherwise() {
        let now = 1_700_000_000.0;
        assert_eq!(parse_start_at("1700000010", now), Ok(1_700_000_010.0));
        assert_eq!(parse_start_at("1699999999.5", now), Ok(1_699_999_999.5));
        for (v, why) in [
            ("1699999990", "in the past"),
            ("1700000000000", "not milliseconds"),
            ("soon", "Unix time"),
            ("-5", "Unix time"),
        ] {
            let e = parse_start_at(v, now).unwrap_err().0;
            assert!(e.contains("'--start-at'") && e.contains(why), "{e}");
        }
    }
}
