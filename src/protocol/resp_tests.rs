//! Example tests of `protocol/resp.rs`: each reply kind through the scanner and the decoder, split
//! points, garbage, bounded lines, and the caller that feeds the scanner chunk by chunk.

use super::*;

pub(super) const OK: Scanned = Scanned::Reply { error: false };
pub(super) const ERR: Scanned = Scanned::Reply { error: true };

/// Plays the caller: keeps unconsumed bytes, appends chunks, drops what is consumed.
#[derive(Default)]
pub(super) struct Caller {
    pub(super) sc: ReplyScanner,
    pub(super) buf: Vec<u8>,
    /// Absolute stream offset of `buf[0]`.
    pub(super) offset: usize,
    /// Each event, the absolute offset where it ended, and the bytes consumed by that call.
    pub(super) events: Vec<(Scanned, usize, Vec<u8>)>,
    pub(super) max_buf: usize,
}

impl Caller {
    fn push(&mut self, chunk: &[u8]) -> Result<(), ProtocolError> {
        self.buf.extend_from_slice(chunk);
        self.max_buf = self.max_buf.max(self.buf.len());
        loop {
            let (n, ev) = self.sc.scan(&self.buf)?;
            assert!(n <= self.buf.len());
            if let Some(ev) = ev {
                assert!(n > 0, "an event must consume bytes");
                self.events
                    .push((ev, self.offset + n, self.buf[..n].to_vec()));
                assert!(self.sc.is_idle());
            }
            self.buf.drain(..n);
            self.offset += n;
            if n == 0 {
                return Ok(());
            }
        }
    }

    pub(super) fn summary(&self) -> Vec<(Scanned, usize)> {
        self.events.iter().map(|(e, o, _)| (*e, *o)).collect()
    }
}

pub(super) fn feed_chunks<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> (Caller, Result<(), ProtocolError>) {
    let mut c = Caller::default();
    for ch in chunks {
        if let Err(e) = c.push(ch) {
            return (c, Err(e));
        }
    }
    (c, Ok(()))
}

pub(super) fn feed_whole(bytes: &[u8]) -> (Caller, Result<(), ProtocolError>) {
    feed_chunks([bytes])
}

/// One reply fed whole, in two halves at every split, and byte by byte:
/// exactly one event of the expected kind consuming everything; decode agrees.
fn check(bytes: &[u8], event: Scanned, value: Value) {
    for split in 0..=bytes.len() {
        let (c, r) = feed_chunks([&bytes[..split], &bytes[split..]]);
        r.unwrap();
        assert_eq!(c.summary(), vec![(event, bytes.len())], "split {split}");
        assert!(c.buf.is_empty() && c.sc.is_idle());
    }
    let (c, r) = feed_chunks(bytes.chunks(1));
    r.unwrap();
    assert_eq!(c.summary(), vec![(event, bytes.len())]);
    assert_eq!(decode(bytes).unwrap(), Some((value, bytes.len())));
    for end in 0..bytes.len() {
        assert_eq!(decode(&bytes[..end]).unwrap(), None, "prefix {end}");
    }
}

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

fn simple(s: &str) -> Value {
    Value::Simple(s.to_string())
}

#[test]
fn simple_string() {
    check(b"+OK\r\n", OK, simple("OK"));
    check(b"+\r\n", OK, simple(""));
}

#[test]
fn simple_error() {
    let line = b"-ERR unknown command 'foo'\r\n";
    check(line, ERR, Value::Error("ERR unknown command 'foo'".into()));
    let (c, _) = feed_whole(line);
    assert_eq!(c.events[0].2, line.to_vec());
}

#[test]
fn error_inside_array_is_not_a_top_level_error() {
    check(
        b"*2\r\n-ERR x\r\n:1\r\n",
        OK,
        Value::Array(vec![Value::Error("ERR x".into()), Value::Int(1)]),
    );
}

#[test]
fn integer() {
    check(b":1000\r\n", OK, Value::Int(1000));
    check(b":-42\r\n", OK, Value::Int(-42));
    check(b":-9223372036854775808\r\n", OK, Value::Int(i64::MIN));
}

#[test]
fn bulk_string() {
    check(b"$5\r\nhello\r\n", OK, bulk("hello"));
    check(b"$0\r\n\r\n", OK, bulk(""));
    check(b"$4\r\na\r\nb\r\n", OK, bulk("a\r\nb"));
}

#[test]
fn null_bulk() {
    check(b"$-1\r\n", OK, Value::Null);
}

#[test]
fn null_array() {
    check(b"*-1\r\n", OK, Value::Null);
}

#[test]
fn empty_array() {
    check(b"*0\r\n", OK, Value::Array(vec![]));
}

#[test]
fn nested_arrays() {
    check(
        b"*2\r\n*2\r\n*1\r\n*1\r\n:1\r\n$-1\r\n+x\r\n",
        OK,
        Value::Array(vec![
            Value::Array(vec![
                Value::Array(vec![Value::Array(vec![Value::Int(1)])]),
                Value::Null,
            ]),
            simple("x"),
        ]),
    );
    check(
        b"*3\r\n*0\r\n*1\r\n*-1\r\n*1\r\n*1\r\n$1\r\nz\r\n",
        OK,
        Value::Array(vec![
            Value::Array(vec![]),
            Value::Array(vec![Value::Null]),
            Value::Array(vec![Value::Array(vec![bulk("z")])]),
        ]),
    );
}

#[test]
fn resp3_null() {
    check(b"_\r\n", OK, Value::Null);
}

#[test]
fn map() {
    check(
        b"%2\r\n+first\r\n:1\r\n+second\r\n*1\r\n%0\r\n",
        OK,
        Value::Map(vec![
            (simple("first"), Value::Int(1)),
            (simple("second"), Value::Array(vec![Value::Map(vec![])])),
        ]),
    );
}

#[test]
fn set() {
    check(
        b"~3\r\n+a\r\n:2\r\n~1\r\n_\r\n",
        OK,
        Value::Set(vec![
            simple("a"),
            Value::Int(2),
            Value::Set(vec![Value::Null]),
        ]),
    );
}

#[test]
fn attribute_before_value() {
    let attr: &[u8] =
        b"|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n";
    let mut top = attr.to_vec();
    top.extend_from_slice(b"*2\r\n:2039123\r\n:9543892\r\n");
    check(
        &top,
        OK,
        Value::Array(vec![Value::Int(2039123), Value::Int(9543892)]),
    );
    // Nested: the attribute does not take the slot of the value it annotates.
    let mut nested = b"*2\r\n".to_vec();
    nested.extend_from_slice(attr);
    nested.extend_from_slice(b":1\r\n|0\r\n:2\r\n");
    check(
        &nested,
        OK,
        Value::Array(vec![Value::Int(1), Value::Int(2)]),
    );
    // Attribute before a top-level error: the error line is reported on its own.
    let mut e = attr.to_vec();
    e.extend_from_slice(b"-ERR boom\r\n");
    check(&e, ERR, Value::Error("ERR boom".into()));
    let (c, _) = feed_whole(&e);
    assert_eq!(c.events[0].2, b"-ERR boom\r\n".to_vec());
}

#[test]
fn double() {
    check(b",1.23\r\n", OK, Value::Double(1.23));
    check(b",-5e3\r\n", OK, Value::Double(-5000.0));
    check(b",10\r\n", OK, Value::Double(10.0));
    check(b",inf\r\n", OK, Value::Double(f64::INFINITY));
    check(b",-inf\r\n", OK, Value::Double(f64::NEG_INFINITY));
    let (c, r) = feed_whole(b",nan\r\n");
    r.unwrap();
    assert_eq!(c.summary(), vec![(OK, 6)]);
    match decode(b",nan\r\n").unwrap() {
        Some((Value::Double(d), 6)) => assert!(d.is_nan()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn boolean() {
    check(b"#t\r\n", OK, Value::Bool(true));
    check(b"#f\r\n", OK, Value::Bool(false));
}

#[test]
fn big_number() {
    check(
        b"(3492890328409238509324850943850943825024385\r\n",
        OK,
        Value::BigNumber("3492890328409238509324850943850943825024385".into()),
    );
    check(b"(-1\r\n", OK, Value::BigNumber("-1".into()));
}

#[test]
fn verbatim() {
    check(
        b"=15\r\ntxt:Some string\r\n",
        OK,
        Value::Verbatim("txt".into(), b"Some string".to_vec()),
    );
    check(b"=4\r\nmkd:\r\n", OK, Value::Verbatim("mkd".into(), vec![]));
}

#[test]
fn blob_error() {
    check(
        b"!21\r\nSYNTAX invalid syntax\r\n",
        ERR,
        Value::Error("SYNTAX invalid syntax".into()),
    );
}

#[test]
fn push_message() {
    check(
        b">2\r\n+message\r\n$3\r\nfoo\r\n",
        Scanned::Push,
        Value::Push(vec![simple("message"), bulk("foo")]),
    );
    // A `>` that is not at top level is just an aggregate.
    check(b"*1\r\n>0\r\n", OK, Value::Array(vec![Value::Push(vec![])]));
}

/// Every reply above, with a push message in the middle.
fn mixed_stream() -> (Vec<u8>, Vec<Scanned>) {
    let parts: &[(&[u8], Scanned)] = &[
        (b"+OK\r\n", OK),
        (b"-ERR wrong\r\n", ERR),
        (b":-42\r\n", OK),
        (b"$5\r\nhello\r\n", OK),
        (b"$0\r\n\r\n", OK),
        (b"$-1\r\n", OK),
        (b"*-1\r\n", OK),
        (b"*0\r\n", OK),
        (b"*2\r\n*2\r\n*1\r\n*1\r\n:1\r\n$-1\r\n-x\r\n", OK),
        (
            b">3\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nfoo\r\n_\r\n",
            Scanned::Push,
        ),
        (b"_\r\n", OK),
        (b"%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n%0\r\n", OK),
        (b"~2\r\n+a\r\n#t\r\n", OK),
        (b"|1\r\n+ttl\r\n:3600\r\n$3\r\nval\r\n", OK),
        (b"|1\r\n+k\r\n+v\r\n-ERR after attr\r\n", ERR),
        (b",inf\r\n", OK),
        (b",-inf\r\n", OK),
        (b",nan\r\n", OK),
        (b",3.5\r\n", OK),
        (b"#f\r\n", OK),
        (b"(123456789012345678901234567890\r\n", OK),
        (b"=15\r\ntxt:Some string\r\n", OK),
        (b"!10\r\nERR failed\r\n", ERR),
        (b">2\r\n+message\r\n$3\r\nfoo\r\n", Scanned::Push),
        (b"+last\r\n", OK),
    ];
    let mut bytes = Vec::new();
    let mut events = Vec::new();
    for (b, e) in parts {
        bytes.extend_from_slice(b);
        events.push(*e);
    }
    (bytes, events)
}

#[test]
fn every_split_point_gives_the_same_events() {
    let (bytes, expected) = mixed_stream();
    let (whole, r) = feed_whole(&bytes);
    r.unwrap();
    let kinds: Vec<Scanned> = whole.events.iter().map(|e| e.0).collect();
    assert_eq!(kinds, expected);
    assert_eq!(whole.offset, bytes.len());
    let reference = whole.summary();
    for split in 0..=bytes.len() {
        let (c, r) = feed_chunks([&bytes[..split], &bytes[split..]]);
        r.unwrap();
        assert_eq!(c.summary(), reference, "split at {split}");
    }
    for a in (0..bytes.len()).step_by(7) {
        for b in a..=bytes.len() {
            let (c, r) = feed_chunks([&bytes[..a], &bytes[a..b], &bytes[b..]]);
            r.unwrap();
            assert_eq!(c.summary(), reference, "splits at {a}, {b}");
        }
    }
    let (c, r) = feed_chunks(bytes.chunks(1));
    r.unwrap();
    assert_eq!(c.summary(), reference);
    // Top-level simple errors are reported by a call that consumed exactly their line.
    for (ev, _, consumed) in &c.events {
        if *ev == ERR && consumed[0] == b'-' {
            assert!(consumed.ends_with(b"\r\n"));
            assert_eq!(memchr::memchr(b'\n', consumed), Some(consumed.len() - 1));
        }
    }
}

#[test]
fn decode_walks_the_mixed_stream() {
    let (bytes, expected) = mixed_stream();
    let (whole, _) = feed_whole(&bytes);
    let mut pos = 0;
    for (i, (_, end, _)) in whole.events.iter().enumerate() {
        let (v, used) = decode(&bytes[pos..]).unwrap().unwrap();
        assert_eq!(pos + used, *end);
        assert_eq!(matches!(v, Value::Error(_)), expected[i] == ERR);
        pos += used;
    }
    assert_eq!(pos, bytes.len());
}

fn scan_err(bytes: &[u8]) -> ProtocolError {
    let (_, whole) = feed_whole(bytes);
    let (_, bytewise) = feed_chunks(bytes.chunks(1));
    let e = whole.expect_err("scanner accepted garbage");
    let b = bytewise.expect_err("scanner accepted garbage bytewise");
    assert_eq!(b.reason, e.reason);
    assert!(decode(bytes).is_err(), "decode accepted {bytes:?}");
    e
}

#[test]
fn garbage_is_rejected() {
    let e = scan_err(b"?foo\r\n");
    assert_eq!(e.reason, "unknown reply type byte");
    assert_eq!(e.snippet, "?foo\\r\\n");
    assert_eq!(
        e.to_string(),
        "protocol error: unknown reply type byte (bytes: ?foo\\r\\n)"
    );
    assert_eq!(scan_err(b"\x00\xff").snippet, "\\x00\\xff");
    // Each input and the reason it is refused with (whole and byte by byte).
    let refused: [(&[u8], &str); 22] = [
        (b"$abc\r\n", "invalid length"),
        (b"$\r\n", "invalid length"),
        (b"*-2\r\n", "invalid length"),
        (b"%-1\r\n", "invalid length"),
        (b"$1x\r\n", "invalid length"),
        (b"*99999999999999999999\r\n", "invalid length"),
        (b"$3\r\nfooXX", "bulk body not terminated by CRLF"),
        (b"$3\r\nfoo\rX", "bulk body not terminated by CRLF"),
        (b"#x\r\n", "invalid boolean"),
        (b"#tt\r\n", "invalid boolean"),
        (b"#\r\n", "invalid boolean"),
        (b":12a\r\n", "invalid integer"),
        (b":-\r\n", "invalid integer"),
        (b",abc\r\n", "invalid double"),
        (b"(12.5\r\n", "invalid big number"),
        (b"_x\r\n", "invalid null"),
        (b"=3\r\nab:\r\n", "verbatim string too short"),
        (b"+OK\n", "line not terminated by CRLF"),
        (b"+\n", "line not terminated by CRLF"),
        (b"$?\r\n", "streamed RESP3 types are not supported"),
        (b"*?\r\n", "streamed RESP3 types are not supported"),
        (b";4\r\nabcd\r\n", "streamed RESP3 types are not supported"),
    ];
    for (input, reason) in refused {
        assert_eq!(scan_err(input).reason, reason, "{input:?}");
    }
    // Garbage after a good reply: the good reply is still reported first.
    let (c, r) = feed_whole(b"+OK\r\n\x01");
    assert_eq!(c.summary(), vec![(OK, 5)]);
    assert_eq!(r.unwrap_err().reason, "unknown reply type byte");
    // Only the decoder checks the verbatim format prefix.
    assert!(decode(b"=4\r\nabcd\r\n").is_err());
}

#[test]
fn every_line_is_bounded_without_its_crlf() {
    let mut long_header = b"*".to_vec();
    long_header.extend(std::iter::repeat_n(b'1', MAX_LINE + 10));
    let mut sc = ReplyScanner::new();
    assert_eq!(
        sc.scan(&long_header).unwrap_err().reason,
        "line longer than 64 KiB without CRLF"
    );
    assert!(decode(&long_header).is_err());

    // A 60 KB simple string, arriving 1 KiB at a time, is a reply.
    let mut line = b"+".to_vec();
    line.extend(std::iter::repeat_n(b'a', 60_000));
    line.extend_from_slice(b"\r\n");
    let (c, r) = feed_chunks(line.chunks(1024));
    r.unwrap();
    assert_eq!(c.summary(), vec![(OK, line.len())]);
    assert_eq!(decode(&line).unwrap().unwrap().1, line.len());
    assert_eq!(decode(&line[..line.len() - 1]).unwrap(), None);

    // A simple line that never ends (a server dripping bytes without CRLF) is an error past the
    // limit, not a buffer that grows without bound.
    for t in [b'+', b'-'] {
        let mut endless = vec![t];
        endless.extend(std::iter::repeat_n(b'a', MAX_LINE + 10));
        let (_, r) = feed_chunks(endless.chunks(1024));
        assert_eq!(
            r.unwrap_err().reason,
            "line longer than 64 KiB without CRLF"
        );
        assert!(decode(&endless).is_err());
    }
}

#[test]
fn large_bulk_is_skipped_without_buffering() {
    const BODY: usize = 1 << 20;
    const CHUNK: usize = 4096;
    let mut stream = format!("${BODY}\r\n").into_bytes();
    stream.extend((0..BODY).map(|i| (i % 251) as u8));
    stream.extend_from_slice(b"\r\n+OK\r\n");
    let mut c = Caller::default();
    let mut absorbed_mid_body = false;
    for chunk in stream.chunks(CHUNK) {
        c.push(chunk).unwrap();
        absorbed_mid_body |= !c.sc.is_idle() && c.buf.is_empty();
    }
    assert!(absorbed_mid_body);
    assert_eq!(
        c.summary(),
        vec![(OK, stream.len() - 5), (OK, stream.len())]
    );
    assert!(c.max_buf <= CHUNK, "caller buffer grew to {}", c.max_buf);
    assert!(c.buf.is_empty() && c.sc.is_idle());
}

#[test]
fn scanner_is_idle_between_replies_only() {
    let mut sc = ReplyScanner::new();
    assert!(sc.is_idle());
    assert_eq!(sc.scan(b"$5\r\nhel").unwrap(), (7, None));
    assert!(!sc.is_idle());
    assert_eq!(sc.scan(b"lo\r").unwrap(), (3, None));
    assert_eq!(sc.scan(b"\n+O").unwrap(), (1, Some(OK)));
    assert!(sc.is_idle());
    assert_eq!(sc.scan(b"+O").unwrap(), (0, None));
    assert!(sc.is_idle());
    assert_eq!(sc.scan(b"+OK\r\n").unwrap(), (5, Some(OK)));
    assert_eq!(sc.scan(b"").unwrap(), (0, None));
}

#[test]
fn encode_command_round_trips() {
    let mut out = Vec::new();
    encode_command(&mut out, &[b"SET", b"key:1", b"", b"a\r\nb"]);
    assert_eq!(
        out,
        b"*4\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$0\r\n\r\n$4\r\na\r\nb\r\n".to_vec()
    );
    assert_eq!(
        decode(&out).unwrap(),
        Some((
            Value::Array(vec![bulk("SET"), bulk("key:1"), bulk(""), bulk("a\r\nb")]),
            out.len()
        ))
    );
    let mut empty = Vec::new();
    encode_command(&mut empty, &[]);
    assert_eq!(empty, b"*0\r\n".to_vec());
}

#[test]
fn value_accessors() {
    assert_eq!(simple("OK").as_str(), Some("OK"));
    assert_eq!(Value::Bulk(vec![0xff]).as_str(), None);
    assert_eq!(Value::Int(7).as_int(), Some(7));
    assert_eq!(bulk("-12").as_int(), Some(-12));
    assert_eq!(bulk("1.5").as_int(), None);
    assert_eq!(Value::Null.as_str(), None);
}
