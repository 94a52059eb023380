//! How the search writes its numbers: decimals without trailing zeros, latencies in ms as people write
//! them, rates with thousands separators.

/// `1.50` -> `1.5`, `2.000` -> `2`, with at most `decimals` decimals.
pub(super) fn trim_number(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A latency in ms as people write it: `0.612`, `1.9`, `12.4`, `250`.
pub(super) fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        trim_number(v, 1)
    } else {
        trim_number(v, 3)
    }
}

/// A rate with thousands separators: `412,000`.
pub(super) fn thousands(v: f64) -> String {
    let n = v.round().max(0.0) as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fmt_ms, thousands};

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(412_000.0), "412,000");
        assert_eq!(thousands(999.6), "1,000");
        assert_eq!(thousands(12.0), "12");
        assert_eq!(fmt_ms(1.0), "1");
        assert_eq!(fmt_ms(1.9), "1.9");
        assert_eq!(fmt_ms(0.6124), "0.612");
        assert_eq!(fmt_ms(123.4), "123");
    }
}
