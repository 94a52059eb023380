//! `--expiry-range MIN-MAX` (memtier_benchmark's flag): which commands take a TTL and the range it is
//! drawn from. The composer (`compose.rs`) writes `EX <ttl>` into each such request.

/// `--expiry-range MIN-MAX`: the TTL in seconds of every SET, drawn uniformly from the range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expiry {
    pub min: u64,
    pub max: u64,
}

/// The longest TTL `--expiry-range` takes, in seconds (about 31 years; `EX` overflows far beyond).
pub const MAX_EXPIRY: u64 = 1_000_000_000;

/// Why an `--expiry-range` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpiryError {
    #[error("must be MIN-MAX, whole seconds from 1 to {MAX_EXPIRY}")]
    NotARange,
    #[error("the range {min}-{max} has its minimum above its maximum")]
    Inverted { min: u64, max: u64 },
}

/// Parses `--expiry-range`: `MIN-MAX` seconds, both from 1 (a TTL of 0 is refused by the server).
pub fn parse_expiry(s: &str) -> Result<Expiry, ExpiryError> {
    let (a, b) = s.split_once('-').ok_or(ExpiryError::NotARange)?;
    let num = |t: &str| match t.trim().parse::<u64>() {
        Ok(v) if (1..=MAX_EXPIRY).contains(&v) => Ok(v),
        _ => Err(ExpiryError::NotARange),
    };
    let (min, max) = (num(a)?, num(b)?);
    if min > max {
        return Err(ExpiryError::Inverted { min, max });
    }
    Ok(Expiry { min, max })
}

/// Whether `--expiry-range` adds `EX <ttl>` to a command: a SET that sets no expiry of its own.
pub fn takes_expiry(args: &[&[u8]]) -> bool {
    args.first().is_some_and(|c| c.eq_ignore_ascii_case(b"SET"))
        && args.len() >= 3
        && !args[3..].iter().any(|a| {
            [&b"EX"[..], b"PX", b"EXAT", b"PXAT", b"KEEPTTL"]
                .iter()
                .any(|o| a.eq_ignore_ascii_case(o))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse() {
        assert_eq!(parse_expiry("5-10"), Ok(Expiry { min: 5, max: 10 }));
        assert_eq!(parse_expiry("7-7"), Ok(Expiry { min: 7, max: 7 }));
        assert!(matches!(
            parse_expiry("10-5"),
            Err(ExpiryError::Inverted { .. })
        ));
        for bad in ["0-5", "5", "a-b", "1-", "-3", "1-2000000000"] {
            assert_eq!(parse_expiry(bad), Err(ExpiryError::NotARange), "{bad}");
        }
    }

    #[test]
    fn only_sets_without_their_own_expiry_take_one() {
        assert!(!takes_expiry(&[b"SET", b"k"]));
        assert!(!takes_expiry(&[b"set", b"k", b"v", b"KeepTtl"]));
        assert!(takes_expiry(&[b"set", b"k", b"v", b"GET"]));
    }
}
