//! A connection's read side: the buffer replies are read into and the scanner that finds where each ends.

use crate::protocol::resp::{ProtocolError, ReplyScanner, Scanned};

/// Bytes read from one connection and not yet consumed, scanned reply by reply. Reused for the whole
/// connection: it grows only when a single reply line is longer than the buffer.
#[derive(Debug)]
pub struct ReplyBuffer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    scanner: ReplyScanner,
}

impl ReplyBuffer {
    pub fn new(capacity: usize) -> Self {
        ReplyBuffer {
            buf: vec![0; capacity],
            start: 0,
            end: 0,
            scanner: ReplyScanner::new(),
        }
    }

    /// Where the next read goes: unread bytes are moved to the front first, and the buffer doubles
    /// only when one unfinished reply line fills all of it.
    #[inline]
    pub fn spare(&mut self) -> &mut [u8] {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else {
                self.buf.resize(self.buf.len() * 2, 0);
            }
        }
        &mut self.buf[self.end..]
    }

    /// Takes `n` bytes just read into [`Self::spare`].
    #[inline]
    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// The next whole reply or push message among the bytes read, with its bytes (for a top-level simple
    /// error, exactly its line); `None` when more must be read. After an error the connection is unusable.
    #[inline]
    pub fn next_reply(&mut self) -> Result<Option<(Scanned, &[u8])>, ProtocolError> {
        while self.start < self.end {
            let (used, event) = self.scanner.scan(&self.buf[self.start..self.end])?;
            let at = self.start;
            self.start += used;
            match event {
                Some(e) => return Ok(Some((e, &self.buf[at..self.start]))),
                None if used == 0 => break,
                None => {}
            }
        }
        Ok(None)
    }

    /// True when bytes were read that no whole reply has used yet.
    #[cfg(test)]
    pub fn has_unread(&self) -> bool {
        self.start < self.end
    }

    /// Forgets everything read (the connection was replaced).
    pub fn reset(&mut self) {
        self.start = 0;
        self.end = 0;
        self.scanner = ReplyScanner::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_split_over_reads_and_a_growing_line() {
        let mut rb = ReplyBuffer::new(8);
        let stream = b"+OK\r\n$5\r\nhello\r\n-ERR a long error line\r\n:7\r\n";
        let mut seen = Vec::new();
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let spare = rb.spare();
            let n = spare.len().min(3).min(rest.len());
            spare[..n].copy_from_slice(&rest[..n]);
            rb.filled(n);
            rest = &rest[n..];
            while let Some((ev, bytes)) = rb.next_reply().unwrap() {
                seen.push((ev, bytes.to_vec()));
            }
        }
        assert_eq!(seen.len(), 4);
        assert_eq!(seen[2].0, Scanned::Reply { error: true });
        assert_eq!(seen[2].1, b"-ERR a long error line\r\n");
        assert!(!rb.has_unread());
    }
}
