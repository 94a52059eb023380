//! memtier's `--scan-incremental-iteration`: one connection's SCAN cursor. The connection sends
//! `SCAN 0 ...` first, then `SCAN <cursor> ...` with the cursor each reply returned, until a reply's
//! cursor is 0 (or `--scan-incremental-max-iterations` continuations were sent): then it starts over.
//! Needs `--pipeline 1`: the reply that sets the cursor comes before the next request is written.

/// The widest cursor: a 64-bit number in decimal.
const CURSOR_MAX: usize = 20;
/// The bytes of a reply's head kept to read its cursor (`*2\r\n$20\r\n` + 20 digits + CRLF).
const HEAD: usize = 32;

/// One connection's place in its SCAN iteration.
#[derive(Debug, Clone)]
pub struct ScanCursor {
    cursor: [u8; CURSOR_MAX],
    len: u8,
    /// Continuations sent in this iteration.
    iterations: u64,
    /// `--scan-incremental-max-iterations` (0: follow the cursor until it is 0).
    max: u64,
    /// The first bytes of the reply being received.
    head: [u8; HEAD],
    head_len: u8,
}

impl ScanCursor {
    pub fn new(max: u64) -> ScanCursor {
        let mut c = ScanCursor {
            cursor: [0; CURSOR_MAX],
            len: 0,
            iterations: 0,
            max,
            head: [0; HEAD],
            head_len: 0,
        };
        c.restart();
        c
    }

    /// The cursor the next request sends.
    pub fn cursor(&self) -> &[u8] {
        &self.cursor[..self.len as usize]
    }

    /// Whether the next request continues an iteration (`SCAN <cursor>`), not starts one (`SCAN 0`).
    pub fn continues(&self) -> bool {
        self.cursor() != b"0"
    }

    /// Keeps the first bytes of the reply being received (`data` comes after what was kept already).
    pub fn receive(&mut self, data: &[u8]) {
        let at = self.head_len as usize;
        let take = (HEAD - at).min(data.len());
        self.head[at..at + take].copy_from_slice(&data[..take]);
        self.head_len += take as u8;
    }

    /// A reply ended: an error, or a reply to a continuation (`continued`) or a start. The next
    /// request sends the cursor the reply returned, or starts over after an error, a cursor of 0 or
    /// the last continuation allowed.
    pub fn replied(&mut self, error: bool, continued: bool) {
        let head = &self.head[..self.head_len as usize];
        let next = if error {
            None
        } else {
            crate::protocol::cursor::scan_cursor(head)
        };
        self.iterations += u64::from(continued);
        match next {
            Some(c) if c != b"0" && (self.max == 0 || self.iterations < self.max) => {
                self.cursor[..c.len()].copy_from_slice(c);
                self.len = c.len() as u8;
            }
            _ => self.restart(),
        }
        self.head_len = 0;
    }

    fn restart(&mut self) {
        self.cursor[0] = b'0';
        self.len = 1;
        self.iterations = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_cursor_until_zero_or_the_last_continuation() {
        let mut c = ScanCursor::new(2);
        assert!(!c.continues());
        // A reply cut in two buffers.
        c.receive(b"*2\r\n$3\r\n1");
        c.receive(b"76\r\n*1\r\n$3\r\nabc\r\n");
        c.replied(false, false);
        assert_eq!(c.cursor(), b"176");
        assert!(c.continues());
        c.receive(b"*2\r\n$2\r\n88\r\n*0\r\n");
        c.replied(false, true);
        assert_eq!(c.cursor(), b"88");
        // The second continuation is the last one allowed: start over whatever the cursor.
        c.receive(b"*2\r\n$2\r\n99\r\n*0\r\n");
        c.replied(false, true);
        assert_eq!(c.cursor(), b"0");
        c.receive(b"*2\r\n$1\r\n7\r\n*0\r\n");
        c.replied(false, false);
        assert_eq!(c.cursor(), b"7");
        // An error starts over.
        c.receive(b"-ERR invalid cursor\r\n");
        c.replied(true, true);
        assert_eq!(c.cursor(), b"0");
        // Without a limit, it stops at a cursor of 0 only.
        let mut c = ScanCursor::new(0);
        for cursor in ["5", "6", "7"] {
            c.receive(format!("*2\r\n${}\r\n{cursor}\r\n*0\r\n", cursor.len()).as_bytes());
            c.replied(false, c.continues());
            assert_eq!(c.cursor(), cursor.as_bytes());
        }
        c.receive(b"*2\r\n$1\r\n0\r\n*0\r\n");
        c.replied(false, true);
        assert!(!c.continues());
    }
}
