//! RESP2/RESP3 reply scanning for the hot path, and a small decoder for setup replies.
//!
//! [`ReplyScanner`] finds where replies end without building them: it keeps a
//! counter of elements still owed instead of a nesting stack, skips bulk bodies
//! without needing them to be buffered whole, and never allocates.
//!
//! [`decode`] builds a [`Value`] tree; it is meant for the few replies seen
//! while setting up (HELLO, CONFIG GET, INFO, ...), not for measured traffic.
//! Both share the same header validation, so they agree on what is well formed
//! (the decoder is only stricter about verbatim formats and nesting depth).

use std::fmt::Write as _;

/// Longest line (a header, or a simple string or error) accepted while its `\n` has not arrived
/// yet: a server that never ends a line is a protocol error, not an ever-growing buffer.
const MAX_LINE: usize = 64 * 1024;

/// Deepest nesting [`decode`] accepts (it recurses; the scanner has no limit).
const MAX_DECODE_DEPTH: usize = 256;

/// How many bytes of the offending input a [`ProtocolError`] shows.
const SNIPPET_LEN: usize = 32;

/// A reply stream that is not valid RESP; the connection should be dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("protocol error: {reason} (bytes: {snippet})")]
pub struct ProtocolError {
    /// What was wrong.
    pub reason: &'static str,
    /// Up to 32 bytes starting at the offending place, escaped for display.
    pub snippet: String,
}

impl ProtocolError {
    fn new(reason: &'static str, at: &[u8]) -> Self {
        Self {
            reason,
            snippet: escape_snippet(at),
        }
    }
}

fn escape_snippet(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(SNIPPET_LEN * 2);
    for &b in bytes.iter().take(SNIPPET_LEN) {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(char::from(b)),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    if bytes.len() > SNIPPET_LEN {
        s.push_str("...");
    }
    s
}

/// What [`ReplyScanner::scan`] saw end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scanned {
    /// A whole top-level reply ended; `error` is true for an error reply (`-` simple error or `!` blob error) at top level.
    Reply { error: bool },
    /// A whole RESP3 push message (`>` at top level) ended; it is not the reply to any request.
    Push,
}

const KIND_NONE: u8 = 0;
const KIND_REPLY: u8 = 1;
const KIND_ERROR: u8 = 2;
const KIND_PUSH: u8 = 3;

/// Incremental, allocation-free finder of reply boundaries.
///
/// Feed it the bytes not yet consumed (the caller keeps unconsumed bytes and
/// appends what arrives). After a `ProtocolError` its state is meaningless
/// and the connection should be dropped.
#[derive(Debug, Default, Clone)]
pub struct ReplyScanner {
    /// Elements still needed to finish the current top-level reply; 0 when idle.
    pending: u64,
    /// Kind of the current top-level value (`KIND_*`), `KIND_NONE` until its header is read.
    kind: u8,
    /// Bulk body bytes still to skip (the CRLF after them is counted in `crlf_left`).
    body_left: u64,
    /// Bytes of the CRLF after a bulk body still to check: 2, 1 or 0.
    crlf_left: u8,
    /// Bytes after the type byte of the line at the start of the buffer already
    /// searched for `\n` (so long simple lines are not re-searched quadratically).
    line_searched: usize,
}

impl ReplyScanner {
    pub fn new() -> Self {
        Self::default()
    }

    /// True when the scanner is between replies (no partial reply absorbed).
    pub fn is_idle(&self) -> bool {
        self.pending == 0
    }

    /// Scans the bytes not yet consumed. Returns how many bytes of `buf` were consumed and, when a
    /// top-level reply or push message ended exactly at that point, what it was.
    /// Partial progress is allowed: (n > 0, None) means n bytes were absorbed into the scanner's state and the
    /// caller may drop them; (0, None) means nothing can progress until more bytes arrive.
    /// When it returns Some, `consumed` ends exactly at the end of that reply (the caller loops to get the next one).
    /// For a top-level simple error (`-ERR ...\r\n`) the consumed bytes of that call are exactly that line, so the caller can show it.
    pub fn scan(&mut self, buf: &[u8]) -> Result<(usize, Option<Scanned>), ProtocolError> {
        let mut pos = 0usize;
        loop {
            if self.crlf_left != 0 {
                if self.body_left != 0 {
                    let avail = (buf.len() - pos) as u64;
                    if avail < self.body_left {
                        self.body_left -= avail;
                        return Ok((buf.len(), None));
                    }
                    // Fits in usize: it is at most `avail`.
                    pos += self.body_left as usize;
                    self.body_left = 0;
                }
                while self.crlf_left != 0 {
                    let Some(&b) = buf.get(pos) else {
                        return Ok((pos, None));
                    };
                    let want = if self.crlf_left == 2 { b'\r' } else { b'\n' };
                    if b != want {
                        return Err(ProtocolError::new(
                            "bulk body not terminated by CRLF",
                            &buf[pos..],
                        ));
                    }
                    pos += 1;
                    self.crlf_left -= 1;
                }
                if let Some(ev) = self.finish_element() {
                    return Ok((pos, Some(ev)));
                }
            }

            let Some(&t) = buf.get(pos) else {
                return Ok((pos, None));
            };
            // Between replies, the common whole replies (`+OK`, an integer, a bulk string that is all
            // in `buf`) are passed over without the general path's line search and state.
            if self.pending == 0
                && self.line_searched == 0
                && let Some(len) = quick_reply(t, &buf[pos..])
            {
                return Ok((pos + len, Some(Scanned::Reply { error: false })));
            }
            let limited = check_type(t, &buf[pos..])?;
            let at_top = self.kind == KIND_NONE && self.pending <= 1;
            if at_top && t == b'-' && pos != 0 {
                // Hand back what came before (top-level attributes) first, so
                // the call that reports this error consumes exactly its line.
                return Ok((pos, None));
            }
            // `line_searched` is only non-zero when the line starts at 0.
            let searched = self.line_searched.min(buf.len() - pos - 1);
            let Some((end, next)) = find_line(buf, pos, searched, limited)? else {
                self.line_searched = buf.len() - pos - 1;
                return Ok((pos, None));
            };
            self.line_searched = 0;
            let h = header(t, &buf[pos + 1..end], &buf[pos..])?;
            if self.pending == 0 {
                self.pending = 1;
            }
            if at_top && t != b'|' {
                self.kind = match t {
                    b'-' | b'!' => KIND_ERROR,
                    b'>' => KIND_PUSH,
                    _ => KIND_REPLY,
                };
            }
            let line_start = pos;
            pos = next;
            match h {
                Header::Done | Header::Null => {
                    if let Some(ev) = self.finish_element() {
                        return Ok((pos, Some(ev)));
                    }
                }
                Header::Body(n) => {
                    self.body_left = n;
                    self.crlf_left = 2;
                }
                Header::Agg(n) => {
                    self.add_pending(n, &buf[line_start..])?;
                    if let Some(ev) = self.finish_element() {
                        return Ok((pos, Some(ev)));
                    }
                }
                Header::Attr(n) => self.add_pending(n, &buf[line_start..])?,
            }
        }
    }

    #[inline]
    fn add_pending(&mut self, n: u64, at: &[u8]) -> Result<(), ProtocolError> {
        self.pending = self
            .pending
            .checked_add(n)
            .ok_or_else(|| ProtocolError::new("aggregate length too large", at))?;
        Ok(())
    }

    /// One element finished; returns the event when that completed the top-level reply.
    #[inline]
    fn finish_element(&mut self) -> Option<Scanned> {
        self.pending -= 1;
        if self.pending != 0 {
            return None;
        }
        let ev = match self.kind {
            KIND_ERROR => Scanned::Reply { error: true },
            KIND_PUSH => Scanned::Push,
            _ => Scanned::Reply { error: false },
        };
        self.kind = KIND_NONE;
        Some(ev)
    }
}

/// What a complete header line means for the structure.
#[derive(Debug, Clone, Copy)]
enum Header {
    /// A line-only element (simple string, error, integer, double, ...).
    Done,
    /// A null element (`_`, `$-1`, `*-1`).
    Null,
    /// A bulk-like element whose body of this many bytes (then CRLF) follows.
    Body(u64),
    /// An aggregate with this many child elements (maps already doubled).
    Agg(u64),
    /// An attribute with this many child elements; does not fill a slot.
    Attr(u64),
}

/// Checks the type byte; returns whether its line is length-limited (every known type's is).
#[inline]
fn check_type(t: u8, at: &[u8]) -> Result<bool, ProtocolError> {
    match t {
        b'+' | b'-' | b':' | b',' | b'#' | b'(' | b'_' | b'$' | b'!' | b'=' | b'*' | b'~'
        | b'>' | b'%' | b'|' => Ok(true),
        b';' | b'.' => Err(ProtocolError::new(
            "streamed RESP3 types are not supported",
            at,
        )),
        _ => Err(ProtocolError::new("unknown reply type byte", at)),
    }
}

/// The length of the whole reply at the start of `b` when it is `+OK`, an integer or a bulk string
/// whose body and CRLF are all in `b`; `None` for anything else (the general path then decides,
/// errors included). `t` is `b[0]`.
#[inline]
fn quick_reply(t: u8, b: &[u8]) -> Option<usize> {
    match t {
        b'+' => b.starts_with(b"+OK\r\n").then_some(5),
        b'$' | b':' => {
            let start = if t == b':' && b.get(1) == Some(&b'-') {
                2
            } else {
                1
            };
            let mut i = start;
            let mut n: u64 = 0;
            while i < b.len() && i - start < 18 {
                let d = b[i].wrapping_sub(b'0');
                if d > 9 {
                    break;
                }
                n = n * 10 + u64::from(d);
                i += 1;
            }
            // Digits, no leading zero, then CRLF.
            if i == start || (b[start] == b'0' && i - start > 1) || b.get(i..i + 2) != Some(b"\r\n")
            {
                return None;
            }
            let head = i + 2;
            if t == b':' {
                return Some(head);
            }
            let end = head.checked_add(usize::try_from(n).ok()?)?;
            (b.get(end..end.checked_add(2)?) == Some(b"\r\n")).then_some(end + 2)
        }
        _ => None,
    }
}

/// Finds the end of the line starting (with its type byte) at `pos`, searching
/// from `pos + 1 + searched`. Returns (end of content, start of next line).
#[inline]
fn find_line(
    buf: &[u8],
    pos: usize,
    searched: usize,
    limited: bool,
) -> Result<Option<(usize, usize)>, ProtocolError> {
    let from = pos + 1 + searched;
    match memchr::memchr(b'\n', &buf[from..]) {
        Some(i) => {
            let nl = from + i;
            if nl < pos + 2 || buf[nl - 1] != b'\r' {
                return Err(ProtocolError::new(
                    "line not terminated by CRLF",
                    &buf[pos..],
                ));
            }
            Ok(Some((nl - 1, nl + 1)))
        }
        None if limited && buf.len() - pos > MAX_LINE => Err(ProtocolError::new(
            "line longer than 64 KiB without CRLF",
            &buf[pos..],
        )),
        None => Ok(None),
    }
}

/// Validates a complete header line (`line` excludes the type byte and CRLF).
#[inline]
fn header(t: u8, line: &[u8], at: &[u8]) -> Result<Header, ProtocolError> {
    let err = |reason| Err(ProtocolError::new(reason, at));
    match t {
        b'+' | b'-' => Ok(Header::Done),
        b':' => match parse_int(line) {
            Some(_) => Ok(Header::Done),
            None => err("invalid integer"),
        },
        b',' => match parse_double(line) {
            Some(_) => Ok(Header::Done),
            None => err("invalid double"),
        },
        b'#' => match line {
            b"t" | b"f" => Ok(Header::Done),
            _ => err("invalid boolean"),
        },
        b'(' => {
            if is_big_number(line) {
                Ok(Header::Done)
            } else {
                err("invalid big number")
            }
        }
        b'_' => {
            if line.is_empty() {
                Ok(Header::Null)
            } else {
                err("invalid null")
            }
        }
        b'$' | b'!' | b'=' => {
            let n = parse_len(line, at)?;
            if n < 0 {
                return if t == b'$' {
                    Ok(Header::Null)
                } else {
                    err("invalid length")
                };
            }
            if t == b'=' && n < 4 {
                return err("verbatim string too short");
            }
            Ok(Header::Body(n as u64))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = parse_len(line, at)?;
            if n < 0 {
                return if t == b'*' {
                    Ok(Header::Null)
                } else {
                    err("invalid length")
                };
            }
            let n = n as u64;
            match t {
                // n <= i64::MAX, so 2n fits in u64.
                b'%' => Ok(Header::Agg(2 * n)),
                b'|' => Ok(Header::Attr(2 * n)),
                _ => Ok(Header::Agg(n)),
            }
        }
        _ => err("unknown reply type byte"),
    }
}

/// Parses a length: an integer >= -1 (`-1` meaning null where allowed).
#[inline]
fn parse_len(line: &[u8], at: &[u8]) -> Result<i64, ProtocolError> {
    if line == b"?" {
        return Err(ProtocolError::new(
            "streamed RESP3 types are not supported",
            at,
        ));
    }
    match parse_int(line) {
        Some(n) if n >= -1 => Ok(n),
        _ => Err(ProtocolError::new("invalid length", at)),
    }
}

/// Optional sign then at least one digit, fitting in an i64.
#[inline]
fn parse_int(line: &[u8]) -> Option<i64> {
    let (neg, digits) = match line.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, line),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulate negatively so i64::MIN parses.
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if neg { Some(v) } else { v.checked_neg() }
}

fn parse_double(line: &[u8]) -> Option<f64> {
    std::str::from_utf8(line).ok()?.parse::<f64>().ok()
}

fn is_big_number(line: &[u8]) -> bool {
    let digits = match line.split_first() {
        Some((b'-' | b'+', rest)) => rest,
        _ => line,
    };
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

/// A decoded reply (see [`decode`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Array(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Set(Vec<Value>),
    Push(Vec<Value>),
    Double(f64),
    Bool(bool),
    BigNumber(String),
    /// Format (three characters, e.g. `txt`) and data.
    Verbatim(String, Vec<u8>),
}

impl Value {
    /// Text of a simple string, error, big number, or of a bulk / verbatim
    /// string that is valid UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Simple(s) | Value::Error(s) | Value::BigNumber(s) => Some(s),
            Value::Bulk(b) | Value::Verbatim(_, b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// An integer reply, or a simple / bulk string or big number holding a
    /// decimal integer that fits in i64 (servers often send numbers as strings).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Simple(s) | Value::BigNumber(s) => parse_int(s.as_bytes()),
            Value::Bulk(b) => parse_int(b),
            _ => None,
        }
    }
}

/// Decodes one whole reply from the start of `buf`: Ok(None) when incomplete, Ok(Some((value, used))) otherwise. Attributes are skipped (the value they annotate is returned). Blob error `!` decodes to Value::Error.
pub fn decode(buf: &[u8]) -> Result<Option<(Value, usize)>, ProtocolError> {
    decode_at(buf, 0, 0)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Decodes the reply that starts at `pos` of `buf`, `depth` aggregates deep (see [`decode`]).
fn decode_at(
    buf: &[u8],
    mut pos: usize,
    depth: usize,
) -> Result<Option<(Value, usize)>, ProtocolError> {
    loop {
        let Some(&t) = buf.get(pos) else {
            return Ok(None);
        };
        let at = &buf[pos..];
        if depth > MAX_DECODE_DEPTH {
            return Err(ProtocolError::new("reply nested too deeply", at));
        }
        let limited = check_type(t, at)?;
        let Some((end, next)) = find_line(buf, pos, 0, limited)? else {
            return Ok(None);
        };
        let line = &buf[pos + 1..end];
        let value = match header(t, line, at)? {
            Header::Null => Value::Null,
            Header::Done => line_value(t, line, at)?,
            Header::Body(n) => return decode_body(buf, t, n, next, at),
            Header::Agg(n) => return decode_agg(buf, t, n, next, depth),
            Header::Attr(n) => {
                let mut p = next;
                for _ in 0..n {
                    match decode_at(buf, p, depth + 1)? {
                        Some((_, e)) => p = e,
                        None => return Ok(None),
                    }
                }
                pos = p;
                continue;
            }
        };
        return Ok(Some((value, next)));
    }
}

/// The value of a line-only element of type `t` (simple string, error, integer, double, boolean, big
/// number); `at` is where it starts, for the error.
fn line_value(t: u8, line: &[u8], at: &[u8]) -> Result<Value, ProtocolError> {
    Ok(match t {
        b'+' => Value::Simple(lossy(line)),
        b'-' => Value::Error(lossy(line)),
        b':' => {
            Value::Int(parse_int(line).ok_or_else(|| ProtocolError::new("invalid integer", at))?)
        }
        b',' => Value::Double(
            parse_double(line).ok_or_else(|| ProtocolError::new("invalid double", at))?,
        ),
        b'#' => Value::Bool(line == b"t"),
        _ => Value::BigNumber(lossy(line)),
    })
}

/// A bulk-like element of type `t` (bulk string, blob error, verbatim string) whose body of `n` bytes
/// starts at `next`; `at` is where its header starts.
fn decode_body(
    buf: &[u8],
    t: u8,
    n: u64,
    next: usize,
    at: &[u8],
) -> Result<Option<(Value, usize)>, ProtocolError> {
    let body_end = usize::try_from(n)
        .ok()
        .and_then(|n| next.checked_add(n))
        .ok_or_else(|| ProtocolError::new("bulk length too large", at))?;
    if buf.len() <= body_end {
        return Ok(None);
    }
    if buf[body_end] != b'\r' || buf.get(body_end + 1).is_some_and(|&b| b != b'\n') {
        return Err(ProtocolError::new(
            "bulk body not terminated by CRLF",
            &buf[body_end..],
        ));
    }
    if buf.len() < body_end + 2 {
        return Ok(None);
    }
    let body = &buf[next..body_end];
    let value = match t {
        b'$' => Value::Bulk(body.to_vec()),
        b'!' => Value::Error(lossy(body)),
        _ => {
            if body[3] != b':' {
                return Err(ProtocolError::new(
                    "verbatim string without format prefix",
                    at,
                ));
            }
            Value::Verbatim(lossy(&body[..3]), body[4..].to_vec())
        }
    };
    Ok(Some((value, body_end + 2)))
}

/// An aggregate of type `t` (array, set, push, map) whose `n` elements start at `next`, `depth`
/// aggregates deep.
fn decode_agg(
    buf: &[u8],
    t: u8,
    n: u64,
    next: usize,
    depth: usize,
) -> Result<Option<(Value, usize)>, ProtocolError> {
    // Each element takes at least 3 bytes, so cap the preallocation.
    let cap = n.min(((buf.len() - next) / 3) as u64) as usize;
    let mut items = Vec::with_capacity(cap);
    let mut p = next;
    for _ in 0..n {
        match decode_at(buf, p, depth + 1)? {
            Some((v, e)) => {
                items.push(v);
                p = e;
            }
            None => return Ok(None),
        }
    }
    let value = match t {
        b'*' => Value::Array(items),
        b'~' => Value::Set(items),
        b'>' => Value::Push(items),
        _ => {
            let mut pairs = Vec::with_capacity(items.len() / 2);
            let mut it = items.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            Value::Map(pairs)
        }
    };
    Ok(Some((value, p)))
}

/// Appends a command as a RESP array of bulk strings.
pub fn encode_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.reserve(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.push(b'*');
    push_decimal(out, args.len() as u64);
    out.extend_from_slice(b"\r\n");
    for arg in args {
        push_bulk(out, arg);
    }
}

/// Appends `bytes` as one RESP bulk string: `$<len>\r\n<bytes>\r\n`.
#[inline]
pub(crate) fn push_bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    push_decimal(out, bytes.len() as u64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal without formatting machinery.
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        tmp[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&tmp[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OK: Scanned = Scanned::Reply { error: false };
    const ERR: Scanned = Scanned::Reply { error: true };

    /// Plays the caller: keeps unconsumed bytes, appends chunks, drops what is consumed.
    #[derive(Default)]
    struct Caller {
        sc: ReplyScanner,
        buf: Vec<u8>,
        /// Absolute stream offset of `buf[0]`.
        offset: usize,
        /// Each event, the absolute offset where it ended, and the bytes consumed by that call.
        events: Vec<(Scanned, usize, Vec<u8>)>,
        max_buf: usize,
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

        fn summary(&self) -> Vec<(Scanned, usize)> {
            self.events.iter().map(|(e, o, _)| (*e, *o)).collect()
        }
    }

    fn feed_chunks<'a>(
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

    fn feed_whole(bytes: &[u8]) -> (Caller, Result<(), ProtocolError>) {
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
        assert_eq!(scan_err(b"$abc\r\n").reason, "invalid length");
        assert_eq!(scan_err(b"$\r\n").reason, "invalid length");
        assert_eq!(scan_err(b"*-2\r\n").reason, "invalid length");
        assert_eq!(scan_err(b"%-1\r\n").reason, "invalid length");
        assert_eq!(scan_err(b"$1x\r\n").reason, "invalid length");
        assert_eq!(
            scan_err(b"*99999999999999999999\r\n").reason,
            "invalid length"
        );
        assert_eq!(
            scan_err(b"$3\r\nfooXX").reason,
            "bulk body not terminated by CRLF"
        );
        assert_eq!(
            scan_err(b"$3\r\nfoo\rX").reason,
            "bulk body not terminated by CRLF"
        );
        assert_eq!(scan_err(b"#x\r\n").reason, "invalid boolean");
        assert_eq!(scan_err(b"#tt\r\n").reason, "invalid boolean");
        assert_eq!(scan_err(b"#\r\n").reason, "invalid boolean");
        assert_eq!(scan_err(b":12a\r\n").reason, "invalid integer");
        assert_eq!(scan_err(b":-\r\n").reason, "invalid integer");
        assert_eq!(scan_err(b",abc\r\n").reason, "invalid double");
        assert_eq!(scan_err(b"(12.5\r\n").reason, "invalid big number");
        assert_eq!(scan_err(b"_x\r\n").reason, "invalid null");
        assert_eq!(
            scan_err(b"=3\r\nab:\r\n").reason,
            "verbatim string too short"
        );
        assert_eq!(scan_err(b"+OK\n").reason, "line not terminated by CRLF");
        assert_eq!(scan_err(b"+\n").reason, "line not terminated by CRLF");
        assert_eq!(
            scan_err(b"$?\r\n").reason,
            "streamed RESP3 types are not supported"
        );
        assert_eq!(
            scan_err(b"*?\r\n").reason,
            "streamed RESP3 types are not supported"
        );
        assert_eq!(
            scan_err(b";4\r\nabcd\r\n").reason,
            "streamed RESP3 types are not supported"
        );
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

    // ---- property tests ----

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
        let all = |x: &[Value], y: &[Value]| {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        };
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
            ("[a-z]{3}", prop::collection::vec(any::<u8>(), 0..16))
                .prop_map(|(f, d)| T::Verb(f, d)),
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
        match decoded {
            Ok(Some((v, used))) => {
                prop_assert_eq!(first, Some(used));
                prop_assert_eq!(matches!(v, Value::Error(_)), whole.events[0].0 == ERR);
            }
            // Incomplete for the decoder means no event from the scanner.
            Ok(None) => prop_assert!(first.is_none()),
            // The decoder may be stricter than the scanner (verbatim format, depth).
            Err(_) => {}
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
}
