//! A placeholder's number as the twelve decimal digits a request carries, taken as six digit pairs:
//! what the digits are written from and what a key's cluster slot is computed from, so one number is
//! divided once for both.

/// The six digit pairs (each 0..=99) of `v` modulo 10^12 written as 12 zero-padded digits, most
/// significant first. Two independent chains of three divisions, not one of six.
#[inline]
pub fn digit_pairs(v: u64) -> [u8; 6] {
    let v = v % 1_000_000_000_000;
    let (mut hi, mut lo) = (v / 1_000_000, v % 1_000_000);
    let mut p = [0u8; 6];
    for k in (0..3).rev() {
        p[k] = (hi % 100) as u8;
        p[k + 3] = (lo % 100) as u8;
        hi /= 100;
        lo /= 100;
    }
    p
}

/// Writes `pairs` as their 12 ASCII digits at the start of `out`.
#[inline]
pub fn write_pairs(out: &mut [u8], pairs: &[u8; 6]) {
    let out = &mut out[..12];
    for (k, &p) in pairs.iter().enumerate() {
        let i = usize::from(p % 100) * 2;
        out[2 * k..2 * k + 2].copy_from_slice(&DIGIT_PAIRS[i..i + 2]);
    }
}

const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_read_as_the_zero_padded_number() {
        for v in [
            0u64,
            7,
            42,
            99,
            100,
            123_456,
            999_999,
            1_000_000,
            987_654_321_012,
            999_999_999_999,
        ] {
            let mut out = [0u8; 12];
            write_pairs(&mut out, &digit_pairs(v));
            assert_eq!(std::str::from_utf8(&out).unwrap(), format!("{v:012}"));
        }
        // Taken modulo 10^12.
        assert_eq!(digit_pairs(1_000_000_000_042), digit_pairs(42));
    }
}
