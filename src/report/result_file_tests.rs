//! Result files written and read back.
use super::*;

#[test]
fn histogram_round_trips_losslessly() {
    let mut h = new_histogram(3);
    for v in [1u64, 150_000, 300_000, 2_500_000, 90_000_000_000] {
        h.record_n(v, v % 7 + 1).unwrap();
    }
    let e = EncodedHistogram::encode(&h);
    assert_eq!(
        e.encoding,
        crate::report::encoded_histogram::HISTOGRAM_ENCODING
    );
    // The V2 compressed cookie, base64: every HdrHistogram implementation starts here.
    assert!(e.data.starts_with("HISTFA"), "{}", &e.data[..10]);
    let d = e.decode().unwrap();
    assert_eq!(d, h);
}

#[test]
fn a_bad_histogram_is_an_error() {
    let mut e = EncodedHistogram::encode(&new_histogram(3));
    e.data = "not base64!".into();
    assert!(e.decode().is_err());
    e.encoding = "v1".into();
    assert!(e.decode().unwrap_err().to_string().contains("encoding"));
}
