//! The reply decoder of the control connection and of openings ([`Decoder`]): bounded and incremental.
//!
//! It is fed the bytes of one reply as they arrive and resumes where the previous call stopped: each
//! byte is read once, so a reply of many elements decodes in linear time (re-decoding the whole
//! buffer on every read was quadratic). It refuses a reply past its [`Limits`] as soon as that shows:
//! at the header that announces a string or an aggregate too large, or once more bytes than a whole
//! reply may have came without its end, so a server that sends without end cannot grow the buffer.
//! It reads RESP as `resp::decode` (the tests' one-shot reference) does, with the same header checks.
//! The control connection uses it, and so does each data connection's opening on the ring (its set-up
//! replies, and a cluster's slot-map re-reads asked on a connection of their own).

use crate::protocol::resp::{self, Header, ProtocolError, Value};
use std::fmt;

/// How large a reply [`Decoder`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the whole reply: headers, bodies, CRLFs.
    pub bytes: usize,
    /// Elements of the whole reply, nested ones included (a map entry is two, an attribute's count).
    pub elements: u64,
    /// Aggregates open at once.
    pub depth: usize,
}

/// The control connection's limits, and an opening's. Real replies are far smaller: an INFO is a few KB, `CONFIG GET *`
/// a few hundred elements, `CLUSTER NODES` of a 1000-node cluster a few hundred KB, and `CLUSTER SLOTS`
/// with each of the 16384 slots its own range, a master and a replica each, 213 thousand elements in
/// 3.5 MB. A reply costs ringbench about twice its bytes (the buffer, then the decoded copy) and some 90
/// bytes an element: at these limits no reply, refused or taken, brings it near 100 MB. The worst one
/// measured (490 000 small elements, then bytes without end until the byte limit) peaked at 79 MiB;
/// with 64 MiB and a million elements as limits it peaked at 178 MiB. The depth is the data path
/// decoder's.
pub const CONTROL: Limits = Limits {
    bytes: 16 << 20,
    elements: 500_000,
    depth: resp::MAX_DECODE_DEPTH,
};

/// How a reply went past its [`Limits`]. Shown after "the reply ... is".
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    /// A bulk string (or blob error, verbatim string) announces more bytes than the reply has left.
    String { len: u64, limit: usize },
    /// More bytes than the limit came and the reply has not ended.
    Bytes { limit: usize },
    /// Aggregates announce more elements than the limit, `announced` in all so far.
    Elements { announced: u64, limit: u64 },
    /// Aggregates nest deeper than the limit.
    Depth { limit: usize },
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TooLarge::String { len, limit } => write!(
                f,
                "over {}: it announces a string of {len} bytes",
                size(limit)
            ),
            TooLarge::Bytes { limit } => {
                let limit = size(limit);
                write!(f, "over {limit}: {limit} came and it has not ended")
            }
            TooLarge::Elements { announced, limit } => {
                write!(f, "over {limit} elements: it announces {announced}")
            }
            TooLarge::Depth { limit } => write!(f, "nested over {limit} deep"),
        }
    }
}

/// `bytes` in MiB or KiB when it is a whole number of them.
fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// Why [`Decoder::decode`] stopped: bytes that are not RESP, or a reply past the limits. Either way the
/// connection is done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
}

/// An aggregate whose elements are still coming.
#[derive(Debug)]
struct Open {
    /// Its type byte (`*`, `~`, `>`, `%`, or `|` for an attribute, whose elements are dropped).
    t: u8,
    /// Elements still to come.
    left: u64,
    items: Vec<Value>,
}

impl Open {
    fn into_value(self) -> Value {
        match self.t {
            b'*' => Value::Array(self.items),
            b'~' => Value::Set(self.items),
            b'>' => Value::Push(self.items),
            _ => {
                let mut pairs = Vec::with_capacity(self.items.len() / 2);
                let mut it = self.items.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                Value::Map(pairs)
            }
        }
    }
}

/// A bulk-like element whose header is read and whose body has not all come.
#[derive(Debug, Clone, Copy)]
struct Body {
    t: u8,
    /// Where its header starts and where its body starts and ends.
    header: usize,
    start: usize,
    end: usize,
}

/// Most elements an aggregate's vector is made for before they come (it grows as they do).
const PREALLOCATED: u64 = 4096;

/// Decodes one reply at a time from a buffer that starts with it and grows as bytes arrive (see the
/// module's text).
#[derive(Debug)]
pub struct Decoder {
    limits: Limits,
    /// Bytes of the reply taken in: whole elements and the headers of the open aggregates.
    pos: usize,
    /// Bytes after the type byte at `pos` already searched for the `\n` that ends its line.
    searched: usize,
    /// The open aggregates, outermost first.
    open: Vec<Open>,
    /// Elements the aggregates announced so far.
    elements: u64,
    /// The bulk-like element at `pos` when its body has not all come.
    body: Option<Body>,
}

impl Decoder {
    pub fn new(limits: Limits) -> Self {
        Decoder {
            limits,
            pos: 0,
            searched: 0,
            open: Vec::new(),
            elements: 0,
            body: None,
        }
    }

    /// Decodes the reply at the start of `buf`, which holds what the previous calls were given and the
    /// bytes that came since. Ok(None): it has not all come (nothing is read twice on the next call).
    /// Ok(Some((value, used))): the reply, `used` bytes long; the caller drops them before the next
    /// reply's call. Attributes are skipped (the value they annotate is returned); a blob error `!` is
    /// [`Value::Error`]. After an error the decoder starts afresh, but the connection is done.
    pub fn decode(&mut self, buf: &[u8]) -> Result<Option<(Value, usize)>, DecodeError> {
        let r = self.advance(buf);
        if !matches!(r, Ok(None)) {
            *self = Decoder::new(self.limits);
        }
        r
    }

    fn advance(&mut self, buf: &[u8]) -> Result<Option<(Value, usize)>, DecodeError> {
        loop {
            if let Some(b) = self.body {
                let Some(value) = self.body(buf, b)? else {
                    return self.incomplete(buf);
                };
                self.body = None;
                self.pos = b.end + 2;
                if let Some(v) = self.place(value) {
                    return Ok(Some((v, self.pos)));
                }
                continue;
            }
            let pos = self.pos;
            let Some(&t) = buf.get(pos) else {
                return self.incomplete(buf);
            };
            let at = &buf[pos..];
            if self.open.len() > self.limits.depth {
                return Err(TooLarge::Depth {
                    limit: self.limits.depth,
                }
                .into());
            }
            let limited = resp::check_type(t, at)?;
            let searched = self.searched.min(buf.len() - pos - 1);
            let Some((end, next)) = resp::find_line(buf, pos, searched, limited)? else {
                self.searched = buf.len() - pos - 1;
                return self.incomplete(buf);
            };
            self.searched = 0;
            if next > self.limits.bytes {
                return Err(TooLarge::Bytes {
                    limit: self.limits.bytes,
                }
                .into());
            }
            let line = &buf[pos + 1..end];
            let value = match resp::header(t, line, at)? {
                Header::Null => Value::Null,
                Header::Done => resp::line_value(t, line, at)?,
                Header::Body(n) => {
                    // The body and its CRLF must fit in what the reply has left.
                    let room = self.limits.bytes.saturating_sub(next).saturating_sub(2);
                    let start = next;
                    let end = match usize::try_from(n) {
                        Ok(n) if n <= room => start + n,
                        _ => {
                            return Err(TooLarge::String {
                                len: n,
                                limit: self.limits.bytes,
                            }
                            .into());
                        }
                    };
                    self.body = Some(Body {
                        t,
                        header: pos,
                        start,
                        end,
                    });
                    continue;
                }
                Header::Agg(n) | Header::Attr(n) => {
                    self.elements = self.elements.saturating_add(n);
                    if self.elements > self.limits.elements {
                        return Err(TooLarge::Elements {
                            announced: self.elements,
                            limit: self.limits.elements,
                        }
                        .into());
                    }
                    self.pos = next;
                    let open = Open {
                        t,
                        left: n,
                        items: Vec::with_capacity(n.min(PREALLOCATED) as usize),
                    };
                    match (n, t) {
                        (0, b'|') => continue,
                        (0, _) => open.into_value(),
                        _ => {
                            self.open.push(open);
                            continue;
                        }
                    }
                }
            };
            self.pos = next;
            if let Some(v) = self.place(value) {
                return Ok(Some((v, self.pos)));
            }
        }
    }

    /// The value of the bulk-like element `b` once its body and CRLF are in `buf`.
    fn body(&self, buf: &[u8], b: Body) -> Result<Option<Value>, ProtocolError> {
        if buf.len() <= b.end {
            return Ok(None);
        }
        if buf[b.end] != b'\r' || buf.get(b.end + 1).is_some_and(|&c| c != b'\n') {
            return Err(ProtocolError::new(
                "bulk body not terminated by CRLF",
                &buf[b.end..],
            ));
        }
        if buf.len() < b.end + 2 {
            return Ok(None);
        }
        resp::body_value(b.t, &buf[b.start..b.end], &buf[b.header..]).map(Some)
    }

    /// Ok(None) for a reply that has not all come, unless more bytes than a whole reply may have came.
    fn incomplete(&self, buf: &[u8]) -> Result<Option<(Value, usize)>, DecodeError> {
        if buf.len() > self.limits.bytes {
            return Err(TooLarge::Bytes {
                limit: self.limits.bytes,
            }
            .into());
        }
        Ok(None)
    }

    /// Puts a whole element in the aggregate it belongs to, closing those it completes; returns the
    /// reply once the element is the reply or completes it.
    fn place(&mut self, mut v: Value) -> Option<Value> {
        loop {
            let Some(top) = self.open.last_mut() else {
                return Some(v);
            };
            top.left -= 1;
            if top.t != b'|' {
                top.items.push(v);
            }
            if top.left != 0 {
                return None;
            }
            let done = self.open.pop().expect("an open aggregate");
            if done.t == b'|' {
                // The attribute is over; the value it annotates comes next, in its place.
                return None;
            }
            v = done.into_value();
        }
    }
}

/// Feeds `bytes` to a decoder of `limits` in pieces of the `sizes` given in turn, decoding after each
/// piece as a connection does after each read: the replies (each with its length), then the error, if
/// any. For the tests of this module and of `resp`.
#[cfg(test)]
pub(crate) fn feed_in_pieces(
    limits: Limits,
    bytes: &[u8],
    sizes: &[usize],
) -> (Vec<(Value, usize)>, Option<DecodeError>) {
    let mut d = Decoder::new(limits);
    let (mut buf, mut out) = (Vec::new(), Vec::new());
    let (mut pos, mut i) = (0, 0);
    while pos < bytes.len() {
        let end = (pos + sizes[i % sizes.len()]).min(bytes.len());
        buf.extend_from_slice(&bytes[pos..end]);
        (pos, i) = (end, i + 1);
        loop {
            match d.decode(&buf) {
                Ok(Some((v, used))) => {
                    buf.drain(..used);
                    out.push((v, used));
                }
                Ok(None) => break,
                Err(e) => return (out, Some(e)),
            }
        }
    }
    (out, None)
}

#[cfg(test)]
#[path = "bounded_tests.rs"]
mod tests;
