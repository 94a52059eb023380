//! Example tests of `protocol/bounded.rs`: replies fed in pieces, each limit refused where it shows,
//! and linear decoding of a reply of many elements. The property tests in `resp_prop_tests.rs` check
//! that it agrees with `resp::decode` on generated and arbitrary bytes.

use super::*;
use std::time::{Duration, Instant};

/// Feeds `bytes` in pieces of `piece` bytes ([`feed_in_pieces`]).
fn feed(limits: Limits, bytes: &[u8], piece: usize) -> (Vec<(Value, usize)>, Option<DecodeError>) {
    feed_in_pieces(limits, bytes, &[piece])
}

fn too_large(limits: Limits, bytes: &[u8], piece: usize) -> TooLarge {
    match feed(limits, bytes, piece) {
        (_, Some(DecodeError::TooLarge(t))) => t,
        other => panic!("not refused: {other:?}"),
    }
}

const SMALL: Limits = Limits {
    bytes: 64,
    elements: 5,
    depth: 3,
};

#[test]
fn replies_in_any_pieces_decode_as_a_whole() {
    let stream: &[u8] = b"*3\r\n$5\r\nhello\r\n%1\r\n+k\r\n|1\r\n+a\r\n:1\r\n:7\r\n$-1\r\n\
        >2\r\n+message\r\n+tick\r\n=8\r\ntxt:abcd\r\n~0\r\n-ERR no\r\n";
    let want = vec![
        (
            Value::Array(vec![
                Value::Bulk(b"hello".to_vec()),
                Value::Map(vec![(Value::Simple("k".into()), Value::Int(7))]),
                Value::Null,
            ]),
            44,
        ),
        (
            Value::Push(vec![
                Value::Simple("message".into()),
                Value::Simple("tick".into()),
            ]),
            21,
        ),
        (Value::Verbatim("txt".into(), b"abcd".to_vec()), 14),
        (Value::Set(vec![]), 4),
        (Value::Error("ERR no".into()), 9),
    ];
    for piece in [1, 2, 3, 7, stream.len()] {
        assert_eq!(
            feed(CONTROL, stream, piece),
            (want.clone(), None),
            "{piece}"
        );
    }
}

#[test]
fn a_string_longer_than_a_reply_is_refused_at_its_header() {
    let t = too_large(CONTROL, b"$1099511627776\r\n", 1);
    assert_eq!(
        t,
        TooLarge::String {
            len: 1 << 40,
            limit: 16 << 20
        }
    );
    assert_eq!(
        t.to_string(),
        "over 16 MiB: it announces a string of 1099511627776 bytes"
    );
    // The body and its CRLF must fit in what the reply has left: 64 bytes is `*2\r\n`, `:1\r\n`, the
    // header `$49\r\n`, 49 bytes and the CRLF; one more does not.
    let fits = format!("*2\r\n:1\r\n$49\r\n{}\r\n", "x".repeat(49));
    assert_eq!(fits.len(), 64);
    assert_eq!(feed(SMALL, fits.as_bytes(), 5).0.len(), 1);
    let over = format!("*2\r\n:1\r\n$50\r\n{}\r\n", "x".repeat(50));
    assert_eq!(
        too_large(SMALL, over.as_bytes(), 64),
        TooLarge::String { len: 50, limit: 64 }
    );
    for t in [b'!', b'='] {
        let h = format!("{}100\r\n", char::from(t));
        assert!(matches!(
            too_large(SMALL, h.as_bytes(), 1),
            TooLarge::String { len: 100, .. }
        ));
    }
}

#[test]
fn an_aggregate_of_more_elements_than_the_limit_is_refused_at_its_header() {
    let t = too_large(CONTROL, b"*2000000\r\n", 1);
    assert_eq!(
        t,
        TooLarge::Elements {
            announced: 2_000_000,
            limit: 500_000
        }
    );
    assert_eq!(t.to_string(), "over 500000 elements: it announces 2000000");
    // Nested elements count, a map entry is two, an attribute's count too.
    assert_eq!(
        too_large(SMALL, b"*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n*1\r\n", 3),
        TooLarge::Elements {
            announced: 6,
            limit: 5
        }
    );
    assert!(matches!(
        too_large(SMALL, b"%3\r\n", 1),
        TooLarge::Elements { announced: 6, .. }
    ));
    assert!(matches!(
        too_large(SMALL, b"|3\r\n", 1),
        TooLarge::Elements { announced: 6, .. }
    ));
    // Five is allowed.
    assert_eq!(
        feed(SMALL, b"*2\r\n*3\r\n:1\r\n:2\r\n:3\r\n:4\r\n", 3)
            .0
            .len(),
        1
    );
}

#[test]
fn bytes_past_the_limit_without_the_end_are_refused() {
    // Small elements, without end: refused once the buffer holds more than the limit.
    let mut endless = b"*5\r\n".to_vec();
    endless.extend(std::iter::repeat_n(b"+aaaaaaaaaaaaaaaaaaaa\r\n", 4).flatten());
    endless.extend_from_slice(b"+aaaaaaaaaaaaaaaa");
    let t = too_large(SMALL, &endless, 8);
    assert_eq!(t, TooLarge::Bytes { limit: 64 });
    assert_eq!(
        t.to_string(),
        "over 64 bytes: 64 bytes came and it has not ended"
    );
    assert_eq!(
        TooLarge::Bytes { limit: 64 << 20 }.to_string(),
        "over 64 MiB: 64 MiB came and it has not ended"
    );
    // A whole reply over the limit given at once is refused too.
    let long = format!("+{}\r\n", "a".repeat(70));
    assert_eq!(
        too_large(SMALL, long.as_bytes(), long.len()),
        TooLarge::Bytes { limit: 64 }
    );
}

#[test]
fn nesting_past_the_depth_is_refused() {
    // Three aggregates open, then a fourth: fine until something starts inside it.
    assert!(feed(SMALL, b"*1\r\n*1\r\n*1\r\n*1\r\n", 1).1.is_none());
    let t = too_large(SMALL, b"*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", 1);
    assert_eq!(t, TooLarge::Depth { limit: 3 });
    assert_eq!(t.to_string(), "nested over 3 deep");
    // Attributes count: their elements are one level in.
    assert!(
        feed(SMALL, b"*1\r\n*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", 1)
            .1
            .is_none()
    );
    assert_eq!(
        too_large(SMALL, b"*1\r\n*1\r\n*1\r\n|1\r\n+a\r\n", 1),
        TooLarge::Depth { limit: 3 }
    );
}

#[test]
fn bad_bytes_are_protocol_errors() {
    for bad in [
        &b"?x\r\n"[..],
        b"$3\r\nabcX\r\n",
        b"*1\r\n:x\r\n",
        b"=4\r\nabcd\r\n",
    ] {
        for piece in [1, bad.len()] {
            assert!(
                matches!(feed(CONTROL, bad, piece).1, Some(DecodeError::Protocol(_))),
                "{bad:?}"
            );
        }
    }
    let mut long_line = b"+".to_vec();
    long_line.extend(std::iter::repeat_n(b'a', 70_000));
    match feed(CONTROL, &long_line, 16 * 1024).1 {
        Some(DecodeError::Protocol(e)) => {
            assert_eq!(e.reason, "line longer than 64 KiB without CRLF")
        }
        other => panic!("{other:?}"),
    }
}

/// A reply of half a million elements (the limit) arriving 16 KiB at a time, as the control connection
/// reads it, decodes in one pass: re-decoding the buffer from its start on each read took a minute.
#[test]
fn half_a_million_elements_in_pieces_decode_in_linear_time() {
    const N: usize = 500_000;
    let mut reply = format!("*{N}\r\n").into_bytes();
    for _ in 0..N {
        reply.extend_from_slice(b"$1\r\nx\r\n");
    }
    let began = Instant::now();
    let (replies, err) = feed(CONTROL, &reply, 16 * 1024);
    let took = began.elapsed();
    assert!(err.is_none(), "{err:?}");
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].1, reply.len());
    match &replies[0].0 {
        Value::Array(items) => assert_eq!(items.len(), N),
        other => panic!("{other:?}"),
    }
    // 0.25 s unoptimized. Decoding the buffer from its start after each of the 214 reads took 0.9 s
    // for 100 000 elements and 3.7 s for 200 000: quadratic, some 23 s for 500 000.
    assert!(took < Duration::from_secs(10), "{took:?}");
}
