//! A stored histogram checked before anything is allocated for it.
//!
//! hdrhistogram's `Deserializer` trusts the V2 header it reads: it inflates as much as the compressed
//! length claims, sizes a buffer to the payload length the header claims (up to 4 GiB) and allocates the
//! counts array of whatever range and precision the header names. So the bytes are read here first,
//! against limits a result file can justify: the compressed length within the bytes present, the inflated
//! bytes no more than the header's counts could need, a counts array no larger than ringbench's own
//! histogram at five significant digits, every count and their total at most [`MAX_COUNT`]. Only then are
//! the (uncompressed) V2 bytes handed to the `Deserializer`.

use crate::stats::MAX_LATENCY_NS;
use std::io::Read;

/// The highest count, or sum of counts, a result file may hold: 2^53, past any run's requests (28 years at
/// ten million a second) and the last integer an f64 (JSON's numbers) holds exactly.
pub const MAX_COUNT: u64 = 1 << 53;

/// HdrHistogram's V2 cookie and its compressed form's (`0x1c849303 | 0x10`, `0x1c849304 | 0x10`).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The V2 header: cookie, payload length, normalizing offset, significant digits (4 bytes each), lowest
/// and highest value, integer to double ratio (8 bytes each).
const V2_HEADER: usize = 40;
/// The most bytes one count takes in the payload (a LEB128-64b9B varint).
const COUNT_BYTES: usize = 9;
/// The most significant digits HdrHistogram keeps (and `--precision` takes).
const MAX_DIGITS: u32 = 5;

/// Why stored histogram bytes are refused: each names the limit it is past.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("{0} bytes, shorter than the 8 of a compressed V2 histogram's header")]
    Short(usize),
    #[error("cookie {0:#010x} is not HdrHistogram's compressed V2 (0x1c849314)")]
    Cookie(u32),
    #[error("its compressed length {claimed} is longer than the {present} bytes present")]
    Compressed { claimed: u32, present: usize },
    #[error("it does not inflate: {0}")]
    Inflate(String),
    #[error("its inner cookie {0:#010x} is not HdrHistogram's V2 (0x1c849313)")]
    InnerCookie(u32),
    #[error("its normalizing offset {0} is not 0 (the only one HdrHistogram reads)")]
    Offset(u32),
    #[error("its integer to double ratio {0} is not 1 (the only one HdrHistogram reads)")]
    Ratio(f64),
    #[error("{0} significant digits (1 to 5)")]
    Digits(u32),
    #[error(
        "its range {low}..{high} is not one HdrHistogram makes (lowest at least 1, highest at least twice it)"
    )]
    Range { low: u64, high: u64 },
    #[error(
        "its range {low}..{high} at {digits} digits needs {len} counts, more than the {max} of ringbench's own histogram at 5 digits"
    )]
    Counts {
        low: u64,
        high: u64,
        digits: u32,
        len: u64,
        max: u64,
    },
    #[error(
        "its payload length {claimed} is more than its {counts} counts could take ({COUNT_BYTES} bytes each)"
    )]
    PayloadTooLong { claimed: u32, counts: u64 },
    #[error("its payload length is {claimed} bytes, but only {present} inflate")]
    PayloadShort { claimed: u32, present: usize },
    #[error("its payload ends inside a count")]
    Truncated,
    #[error("its counts run past the {0} entries of its array")]
    Overrun(u64),
    #[error("a count of {0}, more than {MAX_COUNT} (2^53)")]
    Count(u64),
    #[error("its counts add up past {MAX_COUNT} (2^53)")]
    Total,
}

/// Histogram bytes that passed the checks.
#[derive(Debug, PartialEq)]
pub struct Checked {
    /// The histogram in HdrHistogram's uncompressed V2 encoding, header included.
    pub v2: Vec<u8>,
    pub digits: u8,
    /// The length of the counts array decoding allocates.
    pub counts: u64,
    /// The sum of its counts.
    pub total: u64,
}

/// The V2 header's fields, as read.
struct Header {
    payload: u32,
    digits: u32,
    low: u64,
    high: u64,
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_u64(b: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The length of the counts array HdrHistogram allocates for `low..high` at `digits` significant digits
/// (its `new_with_bounds`, computed without allocating); `None` when it refuses the range.
pub fn counts_len(low: u64, high: u64, digits: u32) -> Option<u64> {
    if !(1..=u64::MAX / 2).contains(&low) || high < 2 * low || digits > MAX_DIGITS {
        return None;
    }
    let largest = 2 * 10u32.pow(digits);
    // As HdrHistogram computes them, floats included, so the figure is the one it allocates.
    let unit_magnitude = (low as f64).log2().floor() as u32;
    let sub_bucket_magnitude = f64::from(largest).log2().ceil() as u32;
    if unit_magnitude + sub_bucket_magnitude > 63 {
        return None;
    }
    let sub_bucket_count = 1u64 << sub_bucket_magnitude;
    let mut untrackable = sub_bucket_count << unit_magnitude;
    let mut buckets = 1u64;
    while untrackable <= high {
        if untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        untrackable <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) * (sub_bucket_count / 2))
}

/// The largest counts array accepted: ringbench's own histogram (1 ns to an hour) at 5 digits.
pub fn max_counts() -> u64 {
    counts_len(1, MAX_LATENCY_NS, MAX_DIGITS).expect("ringbench's own range is valid")
}

/// Checks compressed V2 bytes (as a result file stores them, base64 decoded) and inflates them.
pub fn check(bytes: &[u8]) -> Result<Checked, Refusal> {
    if bytes.len() < 8 {
        return Err(Refusal::Short(bytes.len()));
    }
    let cookie = be_u32(bytes, 0);
    if cookie != V2_COMPRESSED_COOKIE {
        return Err(Refusal::Cookie(cookie));
    }
    let claimed = be_u32(bytes, 4);
    let present = bytes.len() - 8;
    if claimed as usize > present {
        return Err(Refusal::Compressed { claimed, present });
    }
    let mut z = flate2::read::ZlibDecoder::new(&bytes[8..8 + claimed as usize]);
    let mut v2 = vec![0u8; V2_HEADER];
    z.read_exact(&mut v2)
        .map_err(|e| Refusal::Inflate(e.to_string()))?;
    let header = read_header(&v2)?;
    let counts = header_counts(&header)?;
    // The payload is read as it inflates, never sized from the claim: a false length costs nothing.
    let want = u64::from(header.payload);
    (&mut z)
        .take(want)
        .read_to_end(&mut v2)
        .map_err(|e| Refusal::Inflate(e.to_string()))?;
    let present = v2.len() - V2_HEADER;
    if (present as u64) < want {
        return Err(Refusal::PayloadShort {
            claimed: header.payload,
            present,
        });
    }
    let total = walk(&v2[V2_HEADER..], counts)?;
    Ok(Checked {
        v2,
        digits: header.digits as u8,
        counts,
        total,
    })
}

/// The inner V2 header's fields, those HdrHistogram would refuse refused here.
fn read_header(v2: &[u8]) -> Result<Header, Refusal> {
    let cookie = be_u32(v2, 0);
    if cookie != V2_COOKIE {
        return Err(Refusal::InnerCookie(cookie));
    }
    let offset = be_u32(v2, 8);
    if offset != 0 {
        return Err(Refusal::Offset(offset));
    }
    let ratio = f64::from_be_bytes(v2[32..40].try_into().expect("8 bytes"));
    if ratio != 1.0 {
        return Err(Refusal::Ratio(ratio));
    }
    let digits = be_u32(v2, 12);
    if !(1..=MAX_DIGITS).contains(&digits) {
        return Err(Refusal::Digits(digits));
    }
    Ok(Header {
        payload: be_u32(v2, 4),
        digits,
        low: be_u64(v2, 16),
        high: be_u64(v2, 24),
    })
}

/// The header's counts array length, within [`max_counts`], and its payload length within what those
/// counts could take.
fn header_counts(h: &Header) -> Result<u64, Refusal> {
    let (low, high, digits) = (h.low, h.high, h.digits);
    let len = counts_len(low, high, digits).ok_or(Refusal::Range { low, high })?;
    let max = max_counts();
    if len > max {
        return Err(Refusal::Counts {
            low,
            high,
            digits,
            len,
            max,
        });
    }
    if u64::from(h.payload) > len * COUNT_BYTES as u64 {
        return Err(Refusal::PayloadTooLong {
            claimed: h.payload,
            counts: len,
        });
    }
    Ok(len)
}

/// One LEB128-64b9B varint at the start of `b`, and its length.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &byte) in b.iter().enumerate().take(COUNT_BYTES) {
        if i == COUNT_BYTES - 1 {
            // The ninth byte is taken whole.
            return Some((value | (u64::from(byte) << 56), COUNT_BYTES));
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Reads the payload as HdrHistogram does (zig-zag varints: a count, or a negative run of zero counts)
/// without writing anything: every count, zero or not, lands inside the `counts` entries, none is over
/// [`MAX_COUNT`], and neither is their sum, which is returned.
fn walk(payload: &[u8], counts: u64) -> Result<u64, Refusal> {
    let (mut at, mut index, mut total) = (0usize, 0u64, 0u64);
    while at < payload.len() {
        let (zz, n) = varint(&payload[at..]).ok_or(Refusal::Truncated)?;
        at += n;
        let value = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
        if value < 0 {
            index = index.saturating_add(value.unsigned_abs());
            if index > counts {
                return Err(Refusal::Overrun(counts));
            }
            continue;
        }
        if index >= counts {
            return Err(Refusal::Overrun(counts));
        }
        let count = value as u64;
        if count > 0 {
            if count > MAX_COUNT {
                return Err(Refusal::Count(count));
            }
            total = total
                .checked_add(count)
                .filter(|t| *t <= MAX_COUNT)
                .ok_or(Refusal::Total)?;
        }
        index += 1;
    }
    Ok(total)
}

#[cfg(test)]
#[path = "histogram_check_tests.rs"]
mod tests;
