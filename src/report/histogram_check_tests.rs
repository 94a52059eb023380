//! Stored histograms checked before they are decoded: real ones pass, each forged header is refused.
use super::*;
use crate::stats::new_histogram;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use std::io::Write;

fn encoded(h: &Histogram<u64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).unwrap();
    bytes
}

/// Compressed V2 bytes of a forged header and payload.
fn forged(payload_len: u32, digits: u32, low: u64, high: u64, payload: &[u8]) -> Vec<u8> {
    let mut inner = Vec::new();
    for v in [V2_COOKIE, payload_len, 0, digits] {
        inner.extend_from_slice(&v.to_be_bytes());
    }
    inner.extend_from_slice(&low.to_be_bytes());
    inner.extend_from_slice(&high.to_be_bytes());
    inner.extend_from_slice(&1.0f64.to_be_bytes());
    inner.extend_from_slice(payload);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&inner).unwrap();
    let comp = z.finish().unwrap();
    let mut out = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
    out.extend_from_slice(&(comp.len() as u32).to_be_bytes());
    out.extend_from_slice(&comp);
    out
}

fn zigzag(v: i64) -> Vec<u8> {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut out = Vec::new();
    for _ in 0..8 {
        let b = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
    out.push(z as u8);
    out
}

const HOUR: u64 = crate::stats::MAX_LATENCY_NS;

#[test]
fn the_counts_length_is_hdrhistograms() {
    for (low, high, digits) in [
        (1, HOUR, 1),
        (1, HOUR, 3),
        (1, HOUR, 5),
        (1000, 60_000_000_000, 2),
        (7, 15, 4),
        (1, u64::MAX, 3),
        (1 << 40, u64::MAX, 2),
        ((1 << 50) - 1, 1 << 60, 2),
        ((1 << 53) - 1, 1 << 60, 3),
        (1 << 52, u64::MAX, 1),
    ] {
        let h = Histogram::<u64>::new_with_bounds(low, high, digits as u8).ok();
        assert_eq!(
            counts_len(low, high, digits),
            h.map(|h| h.distinct_values() as u64),
            "{low}..{high} at {digits}"
        );
    }
    assert_eq!(counts_len(0, HOUR, 3), None);
    assert_eq!(counts_len(10, 19, 3), None);
    assert_eq!(counts_len(1 << 50, u64::MAX, 5), None);
    assert_eq!(max_counts(), 3_407_872);
}

#[test]
fn real_histograms_pass_with_their_total() {
    for digits in 1..=5 {
        let mut h = new_histogram(digits);
        for v in [1u64, 150_000, 300_000, 2_500_000, HOUR] {
            h.record_n(v, v % 7 + 1).unwrap();
        }
        let c = check(&encoded(&h)).unwrap();
        assert_eq!(c.total, h.len());
        assert_eq!(c.digits, digits);
        assert_eq!(c.counts, h.distinct_values() as u64);
    }
    let empty = check(&encoded(&new_histogram(3))).unwrap();
    assert_eq!(empty.total, 0);
}

#[test]
fn forged_headers_are_refused_by_their_limit() {
    let ok = |p: &[u8]| forged(p.len() as u32, 3, 1, HOUR, p);
    let one = zigzag(5);
    assert_eq!(check(&ok(&one)).unwrap().total, 5);
    // A payload of 4 GiB claimed, a few bytes present.
    assert!(matches!(
        check(&forged(u32::MAX, 3, 1, HOUR, &one)),
        Err(Refusal::PayloadTooLong { .. })
    ));
    // Within what the counts could take, but not there.
    assert!(matches!(
        check(&forged(1000, 3, 1, HOUR, &one)),
        Err(Refusal::PayloadShort { .. })
    ));
    let mut b = ok(&one);
    b[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(check(&b), Err(Refusal::Compressed { .. })));
    b[0] = 0;
    assert!(matches!(check(&b), Err(Refusal::Cookie(_))));
    assert_eq!(check(&b[..3]), Err(Refusal::Short(3)));
    assert_eq!(check(&forged(1, 0, 1, HOUR, &one)), Err(Refusal::Digits(0)));
    assert_eq!(check(&forged(1, 9, 1, HOUR, &one)), Err(Refusal::Digits(9)));
    assert!(matches!(
        check(&forged(1, 3, 0, HOUR, &one)),
        Err(Refusal::Range { .. })
    ));
    // Five digits over the whole u64 range: a counts array past ringbench's own at five digits.
    assert!(matches!(
        check(&forged(1, 5, 1, u64::MAX, &one)),
        Err(Refusal::Counts { .. })
    ));
}

#[test]
fn forged_payloads_are_refused_by_their_limit() {
    let of = |p: Vec<u8>| check(&forged(p.len() as u32, 3, 1, HOUR, &p));
    let near_max = zigzag(i64::MAX - 1000);
    assert!(matches!(of(near_max), Err(Refusal::Count(_))));
    let half = zigzag(1 << 52);
    assert_eq!(
        of([half.clone(), half.clone()].concat()).unwrap().total,
        1 << 53
    );
    assert_eq!(
        of([half.clone(), half.clone(), zigzag(1)].concat()),
        Err(Refusal::Total)
    );
    // A run of zeros past the array, and i64::MIN (whose negation overflows in hdrhistogram).
    let len = counts_len(1, HOUR, 3).unwrap();
    assert_eq!(
        of([zigzag(-(len as i64)), zigzag(1)].concat()),
        Err(Refusal::Overrun(len))
    );
    assert_eq!(of(zigzag(i64::MIN)), Err(Refusal::Overrun(len)));
    assert_eq!(of(vec![0x80, 0x80]), Err(Refusal::Truncated));
}

#[test]
fn a_zlib_bomb_inflates_no_further_than_its_header_allows() {
    // 30 MB of zeros compress to about 30 KB; the header claims one byte of payload, then as many as
    // its counts could take: what inflates past that is never read, what is read runs past the array.
    let zeros = vec![0u8; 30 << 20];
    let c = check(&forged(1, 3, 1, HOUR, &zeros)).unwrap();
    assert_eq!(c.v2.len(), V2_HEADER + 1);
    let len = counts_len(1, HOUR, 3).unwrap();
    let most = (len * COUNT_BYTES as u64) as u32;
    assert_eq!(
        check(&forged(most, 3, 1, HOUR, &zeros)),
        Err(Refusal::Overrun(len))
    );
}
