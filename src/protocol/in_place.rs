//! Reply boundaries found in receive buffers read in place: the engine's receive buffers go back to
//! the kernel as soon as they are scanned, so only a line cut at a buffer's end is carried over.

use crate::protocol::resp::{ProtocolError, ReplyScanner, Scanned};

/// Finds reply boundaries in receive buffers read in place. Only a line cut at a buffer's end (a
/// few bytes, or an error reply's text) is copied, so the next buffer can complete it.
#[derive(Debug, Default)]
pub struct InPlaceScanner {
    scanner: ReplyScanner,
    carry: Vec<u8>,
}

impl InPlaceScanner {
    /// Scans `data`, calling `on_reply` with each whole reply's kind and (for a simple error) its line.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        mut on_reply: impl FnMut(Scanned, &[u8]),
    ) -> Result<(), ProtocolError> {
        // First finish a line that an earlier buffer cut.
        while !self.carry.is_empty() {
            if data.is_empty() {
                return Ok(());
            }
            let take = memchr::memchr(b'\n', data).map_or(data.len(), |i| i + 1);
            self.carry.extend_from_slice(&data[..take]);
            data = &data[take..];
            let mut at = 0;
            loop {
                let (used, ev) = self.scanner.scan(&self.carry[at..])?;
                if let Some(ev) = ev {
                    on_reply(ev, &self.carry[at..at + used]);
                }
                at += used;
                if used == 0 || at == self.carry.len() {
                    break;
                }
            }
            self.carry.drain(..at);
        }
        let mut pos = 0;
        while pos < data.len() {
            let (used, ev) = self.scanner.scan(&data[pos..])?;
            if let Some(ev) = ev {
                on_reply(ev, &data[pos..pos + used]);
            }
            if used == 0 {
                self.carry.extend_from_slice(&data[pos..]);
                break;
            }
            pos += used;
        }
        Ok(())
    }

    /// Forgets a broken connection's partial reply.
    pub fn reset(&mut self) {
        self.scanner = ReplyScanner::new();
        self.carry = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(chunks: &[&[u8]]) -> Vec<(Scanned, Vec<u8>)> {
        let mut s = InPlaceScanner::default();
        let mut seen = Vec::new();
        for c in chunks {
            s.feed(c, |ev, raw| seen.push((ev, raw.to_vec()))).unwrap();
        }
        seen
    }

    #[test]
    fn replies_cut_anywhere_are_found_once() {
        let stream: &[u8] =
            b"+OK\r\n$5\r\nhello\r\n-ERR a long error line\r\n:7\r\n*2\r\n$1\r\na\r\n:1\r\n";
        let whole = replies(&[stream]);
        assert_eq!(whole.len(), 5);
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let got = replies(&[&stream[..cut], &stream[cut..cut2], &stream[cut2..]]);
                assert_eq!(got.len(), 5, "cut at {cut} and {cut2}");
                assert_eq!(got[2].0, Scanned::Reply { error: true });
                assert_eq!(
                    got[2].1, b"-ERR a long error line\r\n",
                    "cut at {cut} and {cut2}"
                );
            }
        }
    }

    #[test]
    fn byte_by_byte() {
        let stream: &[u8] = b"-ERR x\r\n+PONG\r\n>2\r\n+a\r\n+b\r\n$3\r\nabc\r\n";
        let chunks: Vec<&[u8]> = stream.chunks(1).collect();
        let got = replies(&chunks);
        let kinds: Vec<Scanned> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            kinds,
            [
                Scanned::Reply { error: true },
                Scanned::Reply { error: false },
                Scanned::Push,
                Scanned::Reply { error: false }
            ]
        );
        assert_eq!(got[0].1, b"-ERR x\r\n");
    }
}
