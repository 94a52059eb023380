//! Splitting a line into arguments as redis-cli does (`sdssplitargs`), for `--command`, `--mix` and
//! `--replay`'s plain and MONITOR lines: spaces separate arguments; `"..."` takes `\"`, `\\`, `\n`,
//! `\r`, `\t`, `\b`, `\a` and `\xHH` (any other `\c` is `c`); `'...'` takes `\'`. A closing quote must
//! be followed by a space or the line's end.

/// Why a line cannot be split into arguments; columns are 1-based.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitError {
    /// The quote (`"` when `double`) of the argument starting at `column` is not closed.
    Unclosed { double: bool, column: usize },
    /// The closing quote at `column` is followed by something other than a space.
    AfterQuote { column: usize },
}

impl SplitError {
    /// The error, saying where on the line it is.
    pub fn located(&self) -> String {
        match self {
            SplitError::Unclosed { double, column } => {
                let q = if *double { "\"quote\"" } else { "'quote'" };
                format!("unterminated {q} in the argument starting at column {column}")
            }
            SplitError::AfterQuote { column } => {
                format!("a closing quote at column {column} must be followed by a space")
            }
        }
    }
}

/// The arguments of `line`, and whether any of them was quoted.
pub fn split(line: &[u8]) -> Result<(Vec<Vec<u8>>, bool), SplitError> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut args = Vec::new();
    let mut quoted = false;
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= n {
            return Ok((args, quoted));
        }
        let start = i;
        let mut cur = Vec::new();
        let (mut dq, mut sq) = (false, false);
        loop {
            let c = line.get(i).copied();
            if dq || sq {
                let closing = if dq { b'"' } else { b'\'' };
                match c {
                    None => {
                        return Err(SplitError::Unclosed {
                            double: dq,
                            column: start + 1,
                        });
                    }
                    Some(b'\\') if dq && line.get(i + 1) == Some(&b'x') => {
                        match (
                            line.get(i + 2).and_then(|&b| hex(b)),
                            line.get(i + 3).and_then(|&b| hex(b)),
                        ) {
                            (Some(h), Some(l)) => {
                                cur.push(h << 4 | l);
                                i += 3;
                            }
                            _ => {
                                cur.push(b'x');
                                i += 1;
                            }
                        }
                    }
                    Some(b'\\') if dq && i + 1 < n => {
                        i += 1;
                        cur.push(match line[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    Some(b'\\') if sq && line.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        cur.push(b'\'');
                    }
                    Some(b) if b == closing => {
                        if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                            return Err(SplitError::AfterQuote { column: i + 1 });
                        }
                        i += 1;
                        break;
                    }
                    Some(b) => cur.push(b),
                }
            } else {
                match c {
                    None => break,
                    Some(b) if b.is_ascii_whitespace() => break,
                    Some(b'"') => (dq, quoted) = (true, true),
                    Some(b'\'') => (sq, quoted) = (true, true),
                    Some(b) => cur.push(b),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}
