//! Property tests of `protocol/resp.rs`: generated RESP3 values, encoded and cut at random points, give
//! the scanner's events and the decoder's values they were made from; the control connection's bounded
//! decoder (`protocol/bounded.rs`), fed the same pieces, agrees with the decoder.

use super::tests::{Caller, ERR, OK, feed_chunks, feed_whole};
use super::*;
use crate::protocol::bounded::{self, DecodeError};
use proptest::prelude::*;

/// A generated RESP3 value, including encodings that decode alike.
#[derive(Debug, Clone)]
enum T {
    Simple(String),
    Err(String),
    BlobErr(String),
    Int(i64),
    Bulk(Vec<u8>),
    NullBulk,
    NullArr,
    Null,
    Double(f64),
    Bool(bool),
    Big(String),
    Verb(String, Vec<u8>),
    Arr(Vec<T>),
    Map(Vec<(T, T)>),
    Set(Vec<T>),
    Push(Vec<T>),
    Attr(Vec<(T, T)>, Box<T>),
}

fn enc_len(out: &mut Vec<u8>, t: u8, n: usize) {
    out.extend_from_slice(format!("{}{n}\r\n", char::from(t)).as_bytes());
}

/// Reference encoder, written independently of the module's code.
fn enc(t: &T, out: &mut Vec<u8>) {
    match t {
        T::Simple(s) => out.extend_from_slice(format!("+{s}\r\n").as_bytes()),
        T::Err(s) => out.extend_from_slice(format!("-{s}\r\n").as_bytes()),
        T::BlobErr(s) => {
            enc_len(out, b'!', s.len());
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        T::Int(i) => out.extend_from_slice(format!(":{i}\r\n").as_bytes()),
        T::Bulk(b) => {
            enc_len(out, b'$', b.len());
            out.extend_from_slice(b);
            out.extend_from_slice(b"\r\n");
        }
        T::NullBulk => out.extend_from_slice(b"$-1\r\n"),
        T::NullArr => out.extend_from_slice(b"*-1\r\n"),
        T::Null => out.extend_from_slice(b"_\r\n"),
        T::Double(d) => {
            let s = if d.is_nan() {
                "nan".to_string()
            } else if d.is_infinite() {
                if *d > 0.0 { "inf" } else { "-inf" }.to_string()
            } else {
                format!("{d}")
            };
            out.extend_from_slice(format!(",{s}\r\n").as_bytes());
        }
        T::Bool(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
        T::Big(s) => out.extend_from_slice(format!("({s}\r\n").as_bytes()),
        T::Verb(f, d) => {
            enc_len(out, b'=', d.len() + 4);
            out.extend_from_slice(f.as_bytes());
            out.push(b':');
            out.extend_from_slice(d);
            out.extend_from_slice(b"\r\n");
        }
        T::Arr(v) | T::Set(v) | T::Push(v) => {
            let ty = match t {
                T::Arr(_) => b'*',
                T::Set(_) => b'~',
                _ => b'>',
            };
            enc_len(out, ty, v.len());
            v.iter().for_each(|x| enc(x, out));
        }
        T::Map(kv) | T::Attr(kv, _) => {
            let ty = if matches!(t, T::Map(_)) { b'%' } else { b'|' };
            enc_len(out, ty, kv.len());
            for (k, v) in kv {
                enc(k, out);
                enc(v, out);
            }
            if let T::Attr(_, v) = t {
                enc(v, out);
            }
        }
    }
}

fn expected_value(t: &T) -> Value {
    let all = |v: &Vec<T>| v.iter().map(expected_value).collect();
    match t {
        T::Simple(s) => Value::Simple(s.clone()),
        T::Err(s) | T::BlobErr(s) => Value::Error(s.clone()),
        T::Int(i) => Value::Int(*i),
        T::Bulk(b) => Value::Bulk(b.clone()),
        T::NullBulk | T::NullArr | T::Null => Value::Null,
        T::Double(d) => Value::Double(*d),
        T::Bool(b) => Value::Bool(*b),
        T::Big(s) => Value::BigNumber(s.clone()),
        T::Verb(f, d) => Value::Verbatim(f.clone(), d.clone()),
        T::Arr(v) => Value::Array(all(v)),
        T::Set(v) => Value::Set(all(v)),
        T::Push(v) => Value::Push(all(v)),
        T::Map(kv) => Value::Map(
            kv.iter()
                .map(|(k, v)| (expected_value(k), expected_value(v)))
                .collect(),
        ),
        T::Attr(_, v) => expected_value(v),
    }
}

fn expected_event(t: &T) -> Scanned {
    match t {
        T::Attr(_, v) => expected_event(v),
        T::Push(_) => Scanned::Push,
        T::Err(_) | T::BlobErr(_) => ERR,
        _ => OK,
    }
}

/// Equality where NaN equals NaN.
fn same(a: &Value, b: &Value) -> bool {
    let all =
        |x: &[Value], y: &[Value]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Array(x), Value::Array(y))
        | (Value::Set(x), Value::Set(y))
        | (Value::Push(x), Value::Push(y)) => all(x, y),
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| same(k1, k2) && same(v1, v2))
        }
        _ => a == b,
    }
}

fn leaf() -> impl Strategy<Value = T> {
    prop_oneof![
        "[^\r\n]{0,12}".prop_map(T::Simple),
        "[A-Z]{1,5} [^\r\n]{0,12}".prop_map(T::Err),
        "[^\r\n]{0,12}".prop_map(T::BlobErr),
        any::<i64>().prop_map(T::Int),
        prop::collection::vec(any::<u8>(), 0..24).prop_map(T::Bulk),
        Just(T::NullBulk),
        Just(T::NullArr),
        Just(T::Null),
        prop_oneof![
            any::<f64>(),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::NAN),
            -1e6..1e6f64,
        ]
        .prop_map(T::Double),
        any::<bool>().prop_map(T::Bool),
        "-?[0-9]{1,40}".prop_map(T::Big),
        ("[a-z]{3}", prop::collection::vec(any::<u8>(), 0..16)).prop_map(|(f, d)| T::Verb(f, d)),
    ]
}

fn value_tree() -> impl Strategy<Value = T> {
    leaf().prop_recursive(6, 48, 4, |inner| {
        let kv = prop::collection::vec((inner.clone(), inner.clone()), 0..3);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(T::Arr),
            prop::collection::vec(inner.clone(), 0..4).prop_map(T::Set),
            prop::collection::vec(inner.clone(), 0..4).prop_map(T::Push),
            kv.clone().prop_map(T::Map),
            (kv, inner).prop_map(|(a, v)| T::Attr(a, Box::new(v))),
        ]
    })
}

fn feed_sized(bytes: &[u8], sizes: &[usize]) -> (Caller, Result<(), ProtocolError>) {
    let mut chunks = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < bytes.len() {
        let end = (pos + sizes[i % sizes.len()]).min(bytes.len());
        chunks.push(&bytes[pos..end]);
        pos = end;
        i += 1;
    }
    feed_chunks(chunks)
}

/// The bounded decoder fed `bytes` in pieces of `sizes` ([`bounded::feed_in_pieces`]).
fn bounded_feed(bytes: &[u8], sizes: &[usize]) -> (Vec<(Value, usize)>, Option<DecodeError>) {
    bounded::feed_in_pieces(bounded::CONTROL, bytes, sizes)
}

/// Mutates a valid encoding: overwrite, insert or delete one byte.
fn mutate(mut bytes: Vec<u8>, op: u8, at: usize, b: u8) -> Vec<u8> {
    let at = at % (bytes.len() + 1);
    match op % 3 {
        0 if at < bytes.len() => bytes[at] = b,
        1 => bytes.insert(at, b),
        _ if at < bytes.len() => {
            bytes.remove(at);
        }
        _ => {}
    }
    bytes
}

fn resp_ish_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        4 => prop::sample::select(b"+-:$*%~>|_,#(!=\r\n0123-?tf".to_vec()),
        1 => any::<u8>(),
    ]
}

/// Compares scanner and decoder on arbitrary bytes; neither may panic.
fn compare_on(bytes: &[u8], sizes: &[usize]) -> Result<(), TestCaseError> {
    let decoded = decode(bytes);
    let (whole, whole_r) = feed_whole(bytes);
    let (chunked, chunked_r) = feed_sized(bytes, sizes);
    prop_assert_eq!(whole.summary(), chunked.summary());
    prop_assert_eq!(
        whole_r.map_err(|e| e.reason),
        chunked_r.map_err(|e| e.reason)
    );
    let first = whole.events.first().map(|e| e.1);
    match &decoded {
        Ok(Some((v, used))) => {
            prop_assert_eq!(first, Some(*used));
            prop_assert_eq!(matches!(v, Value::Error(_)), whole.events[0].0 == ERR);
        }
        // Incomplete for the decoder means no event from the scanner.
        Ok(None) => prop_assert!(first.is_none()),
        // The decoder may be stricter than the scanner (verbatim format, depth).
        Err(_) => {}
    }
    // The bounded decoder, fed in pieces, finds the same first reply or error; it refuses at its
    // header a string or an aggregate larger than a whole reply, which the decoder awaits.
    let (replies, err) = bounded_feed(bytes, sizes);
    match (&decoded, replies.first(), &err) {
        (Ok(Some((v, used))), Some((b, b_used)), _) => {
            prop_assert!(same(v, b), "{:?} != {:?}", v, b);
            prop_assert_eq!(used, b_used);
        }
        (Ok(None), None, None | Some(DecodeError::TooLarge(_))) => {}
        (Err(e), None, Some(DecodeError::Protocol(b))) => prop_assert_eq!(e.reason, b.reason),
        (d, b, e) => prop_assert!(false, "decode {:?}, bounded {:?} then {:?}", d, b, e),
    }
    Ok(())
}

/// Cases per property: 2000 in the test suite; `RINGBENCH_FUZZ_CASES` makes a long fuzzing run.
fn fuzz_cases() -> u32 {
    std::env::var("RINGBENCH_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases()))]

    #[test]
    fn generated_values_scan_and_round_trip(
        values in prop::collection::vec(value_tree(), 1..6),
        sizes in prop::collection::vec(1usize..48, 1..20),
    ) {
        let mut stream = Vec::new();
        let mut ends = Vec::new();
        for v in &values {
            enc(v, &mut stream);
            ends.push(stream.len());
        }
        let (c, r) = feed_sized(&stream, &sizes);
        prop_assert!(r.is_ok(), "{:?}", r);
        let expected: Vec<(Scanned, usize)> =
            values.iter().map(expected_event).zip(ends.iter().copied()).collect();
        prop_assert_eq!(c.summary(), expected);
        prop_assert!(c.buf.is_empty() && c.sc.is_idle());
        for ((v, _, consumed), t) in c.events.iter().zip(&values) {
            if let (&ERR, T::Err(s)) = (v, t) {
                prop_assert_eq!(consumed, &format!("-{s}\r\n").into_bytes());
            }
        }
        let mut start = 0;
        for (v, end) in values.iter().zip(&ends) {
            let got = decode(&stream[start..]).unwrap();
            let (value, used) = got.expect("complete value decoded as incomplete");
            prop_assert_eq!(start + used, *end);
            let want = expected_value(v);
            prop_assert!(same(&value, &want), "{:?} != {:?}", value, want);
            prop_assert_eq!(decode(&stream[start..*end - 1]).unwrap(), None);
            start = *end;
        }
        let (replies, err) = bounded_feed(&stream, &sizes);
        prop_assert!(err.is_none(), "{:?}", err);
        prop_assert_eq!(replies.len(), values.len());
        let mut start = 0;
        for ((value, used), (v, end)) in replies.iter().zip(values.iter().zip(&ends)) {
            let want = expected_value(v);
            prop_assert!(same(value, &want), "{:?} != {:?}", value, want);
            prop_assert_eq!(start + used, *end);
            start = *end;
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_agree(
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        sizes in prop::collection::vec(1usize..8, 1..8),
    ) {
        compare_on(&bytes, &sizes)?;
    }

    #[test]
    fn resp_like_bytes_never_panic_and_agree(
        bytes in prop::collection::vec(resp_ish_byte(), 0..64),
        sizes in prop::collection::vec(1usize..8, 1..8),
    ) {
        compare_on(&bytes, &sizes)?;
    }

    #[test]
    fn mutated_values_never_panic_and_agree(
        v in value_tree(),
        op in any::<u8>(),
        at in any::<usize>(),
        b in resp_ish_byte(),
        sizes in prop::collection::vec(1usize..8, 1..8),
    ) {
        let mut bytes = Vec::new();
        enc(&v, &mut bytes);
        compare_on(&mutate(bytes, op, at, b), &sizes)?;
    }

    #[test]
    fn encode_command_round_trips_any_args(
        args in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..8),
    ) {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        let mut out = b"junk".to_vec();
        encode_command(&mut out, &refs);
        let want = Value::Array(args.iter().cloned().map(Value::Bulk).collect());
        prop_assert_eq!(decode(&out[4..]).unwrap(), Some((want, out.len() - 4)));
        let (c, r) = feed_whole(&out[4..]);
        prop_assert!(r.is_ok());
        prop_assert_eq!(c.summary(), vec![(OK, out.len() - 4)]);
    }
}
