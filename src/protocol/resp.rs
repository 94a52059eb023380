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
//! The control connection decodes with the bounded, incremental [`super::bounded::Decoder`] instead.

use std::fmt::Write as _;

/// Longest line (a header, or a simple string or error) accepted while its `\n` has not arrived
/// yet: a server that never ends a line is a protocol error, not an ever-growing buffer.
const MAX_LINE: usize = 64 * 1024;

/// Deepest nesting [`decode`] accepts (it recurses; the scanner has no limit).
pub(super) const MAX_DECODE_DEPTH: usize = 256;

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
    pub(super) fn new(reason: &'static str, at: &[u8]) -> Self {
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
pub(super) enum Header {
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
pub(super) fn check_type(t: u8, at: &[u8]) -> Result<bool, ProtocolError> {
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
pub(super) fn find_line(
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
pub(super) fn header(t: u8, line: &[u8], at: &[u8]) -> Result<Header, ProtocolError> {
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
/// The one-shot reference the property tests hold [`crate::protocol::bounded::Decoder`] (what the
/// connections use) to; the tests only.
#[cfg(test)]
pub fn decode(buf: &[u8]) -> Result<Option<(Value, usize)>, ProtocolError> {
    decode_at(buf, 0, 0)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Decodes the reply that starts at `pos` of `buf`, `depth` aggregates deep (see [`decode`]).
#[cfg(test)]
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
pub(super) fn line_value(t: u8, line: &[u8], at: &[u8]) -> Result<Value, ProtocolError> {
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
#[cfg(test)]
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
    let value = body_value(t, &buf[next..body_end], at)?;
    Ok(Some((value, body_end + 2)))
}

/// The value of a bulk-like element of type `t` whose whole `body` is in (a verbatim string's is at
/// least 4 bytes: [`header`] checked); `at` is where its header starts, for the error.
pub(super) fn body_value(t: u8, body: &[u8], at: &[u8]) -> Result<Value, ProtocolError> {
    Ok(match t {
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
    })
}

/// An aggregate of type `t` (array, set, push, map) whose `n` elements start at `next`, `depth`
/// aggregates deep.
#[cfg(test)]
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
#[path = "resp_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "resp_prop_tests.rs"]
mod prop_tests;
