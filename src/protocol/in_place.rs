//! Reply boundaries found in receive buffers read in place: the engine's receive buffers go back to
//! the kernel as soon as they are scanned, so only a line cut at a buffer's end is carried over.

use crate::protocol::resp::{ProtocolError, ReplyScanner, Scanned};

/// Finds reply boundaries in receive buffers read in place. Only a line cut at a buffer's end (a
/// few bytes, or an error reply's text) is copied, so the next buffer can complete it.
#[derive(Debug, Default)]
pub struct InPlaceScanner {
    scanner: ReplyScanner,
    carry: Vec<u8>,
    /// Bytes of the reply being scanned consumed so far (its length, once it ends).
    reply_bytes: u64,
}

impl InPlaceScanner {
    /// Scans `data`, calling `on_reply` with each whole reply's kind, its last bytes (for a simple
    /// error its line, for a nil reply the whole of it) and its length in bytes.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        mut on_reply: impl FnMut(Scanned, &[u8], u64),
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
                self.reply_bytes += used as u64;
                if let Some(ev) = ev {
                    on_reply(ev, &self.carry[at..at + used], self.reply_bytes);
                    self.reply_bytes = 0;
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
            self.reply_bytes += used as u64;
            if let Some(ev) = ev {
                on_reply(ev, &data[pos..pos + used], self.reply_bytes);
                self.reply_bytes = 0;
            }
            if used == 0 {
                self.carry.extend_from_slice(&data[pos..]);
                break;
            }
            pos += used;
        }
        Ok(())
    }

    /// Whether a reply `feed` reported (its last bytes `raw`, its length `len`) is a nil: `$-1`, `*-1`
    /// or RESP3's `_`, the whole reply (an array ending in a nil is not one).
    pub fn is_nil(raw: &[u8], len: u64) -> bool {
        raw.len() as u64 == len && matches!(raw, b"$-1\r\n" | b"*-1\r\n" | b"_\r\n")
    }

    /// Forgets a broken connection's partial reply.
    pub fn reset(&mut self) {
        self.scanner = ReplyScanner::new();
        self.carry = Vec::new();
        self.reply_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(chunks: &[&[u8]]) -> Vec<(Scanned, Vec<u8>)> {
        let mut s = InPlaceScanner::default();
        let mut seen = Vec::new();
        for c in chunks {
            s.feed(c, |ev, raw, _| seen.push((ev, raw.to_vec())))
                .unwrap();
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

    #[test]
    fn lengths_and_nil_replies_survive_any_cut() {
        let stream: &[u8] = b"$-1\r\n$5\r\nhello\r\n_\r\n*2\r\n$1\r\na\r\n$-1\r\n+OK\r\n";
        let want: [u64; 5] = [5, 11, 3, 16, 5];
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let mut s = InPlaceScanner::default();
                let mut seen = Vec::new();
                for c in [&stream[..cut], &stream[cut..cut2], &stream[cut2..]] {
                    s.feed(c, |_, raw, len| seen.push((raw.to_vec(), len)))
                        .unwrap();
                }
                let lens: Vec<u64> = seen.iter().map(|x| x.1).collect();
                assert_eq!(lens, want, "cut at {cut} and {cut2}");
                let nils: Vec<bool> = seen
                    .iter()
                    .map(|(raw, len)| InPlaceScanner::is_nil(raw, *len))
                    .collect();
                assert_eq!(
                    nils,
                    [true, false, true, false, false],
                    "cut at {cut} and {cut2}"
                );
                assert_eq!(seen[0].0, b"$-1\r\n");
                assert_eq!(seen[2].0, b"_\r\n");
            }
        }
    }
}
