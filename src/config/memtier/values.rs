//! memtier's option values, read and checked: its defaults, the readers of a number, a ratio and a
//! range, a `--command` line's arguments, one command of its test, and the one-line usage and refusal
//! messages. A leaf: `mod.rs` and `options.rs` both use it, and it uses neither.

use crate::config::error::UsageError;
use crate::workload::memtier_keys::Pattern;

/// memtier's default `-c` (per thread), `-t`, `-n` (per client), `-d`, `--ratio` and key range.
pub(super) const CLIENTS: u64 = 50;
pub(super) const THREADS: u64 = 4;
pub(super) const REQUESTS: u64 = 10_000;
pub(super) const DATA_SIZE: usize = 32;
pub(super) const KEY_MAXIMUM: u64 = 10_000_000;
/// memtier's seed when `--randomize` is not given: every run draws the same keys.
pub(super) const CONSTANT_SEED: u64 = 0x006d_656d_7469_6572;

/// One command of memtier's test: its arguments (placeholders expanded), title and name, ratio and
/// key pattern.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Command {
    pub(super) args: Vec<Vec<u8>>,
    pub(super) title: String,
    pub(super) name: String,
    pub(super) ratio: u64,
    pub(super) pattern: Pattern,
}

pub(super) fn usage(msg: String) -> UsageError {
    UsageError(msg)
}

pub(super) fn refuse(option: &str, why: &str) -> UsageError {
    usage(format!("option '{option}' is not supported: {why}"))
}

/// A whole number above 0 for `option`.
pub(super) fn positive(option: &str, v: &str) -> Result<u64, UsageError> {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(usage(format!(
            "invalid value '{v}' for '{option}': must be a whole number greater than zero"
        ))),
    }
}

/// `A:B` (memtier's `--ratio`), each a whole number.
pub(super) fn ratio(option: &str, v: &str) -> Result<(u64, u64), UsageError> {
    let bad = || {
        usage(format!(
            "invalid value '{v}' for '{option}': must be expressed as [0-n]:[0-n]"
        ))
    };
    let (a, b) = v.split_once(':').ok_or_else(bad)?;
    let (a, b) = (
        a.parse::<u64>().map_err(|_| bad())?,
        b.parse::<u64>().map_err(|_| bad())?,
    );
    if a + b == 0 || a.max(b) > crate::workload::mix::MAX_WEIGHT {
        return Err(bad());
    }
    Ok((a, b))
}

/// `MIN-MAX` (memtier's ranges).
pub(super) fn range(option: &str, v: &str, lowest: u64) -> Result<(u64, u64), UsageError> {
    let bad = || {
        usage(format!(
            "invalid value '{v}' for '{option}': must be expressed as [{lowest}-n]-[1-n] with the minimum not above the maximum"
        ))
    };
    let (a, b) = v.split_once('-').ok_or_else(bad)?;
    let (a, b) = (
        a.parse::<u64>().map_err(|_| bad())?,
        b.parse::<u64>().map_err(|_| bad())?,
    );
    if a < lowest || b < 1 || a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// A `--command` line's arguments, its `__key__` (the first in an argument) named as memtier names keys
/// and a whole `__data__` left for the value.
pub(super) fn command_args(line: &str, prefix: &str) -> Result<Vec<Vec<u8>>, UsageError> {
    let (words, _) = crate::workload::mix::split_words(line)
        .map_err(|why| usage(format!("invalid value '{line}' for '--command': {why}")))?;
    let key = b"__key__";
    let data = crate::workload::compose::DATA;
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        if let Some(i) = memchr::memmem::find(&w, key) {
            let mut a = w[..i].to_vec();
            a.extend_from_slice(prefix.as_bytes());
            a.extend_from_slice(crate::workload::RAND_INT);
            a.extend_from_slice(&w[i + key.len()..]);
            out.push(a);
        } else if memchr::memmem::find(&w, data).is_some() && w != data {
            return Err(usage(format!(
                "invalid value '{line}' for '--command': the data placeholder can't be combined with other data"
            )));
        } else {
            out.push(w);
        }
    }
    Ok(out)
}
