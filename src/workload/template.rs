//! A request compiled once: RESP bytes plus where its `__rand_int__` (and `__rand_1st__` ..
//! `__rand_9th__`) digits go, and the pipeline buffer that repeats it and patches only those digits per
//! batch.

use crate::protocol::digits::{digit_pairs, write_pairs};
use crate::protocol::resp::encode_command;
use memchr::memmem;

/// The placeholder that `-r` replaces with a 12-digit random number.
pub const RAND_INT: &[u8] = b"__rand_int__";
const RAND_WIDTH: usize = RAND_INT.len();

/// The group of the 12-byte placeholder at the start of `b`: 0 for `__rand_int__` (a fresh number at each
/// place), 1..9 for `__rand_1st__`..`__rand_9th__` (one number per command, reused at each place).
pub(crate) fn rand_group(b: &[u8]) -> Option<u8> {
    if b.len() < 12 || &b[..7] != b"__rand_" || &b[10..12] != b"__" {
        return None;
    }
    match &b[7..10] {
        b"int" => Some(0),
        b"1st" => Some(1),
        b"2nd" => Some(2),
        b"3rd" => Some(3),
        [d @ b'4'..=b'9', b't', b'h'] => Some(d - b'0'),
        _ => None,
    }
}

/// A request compiled once into RESP bytes plus the offsets of its placeholders: every `__rand_int__`,
/// and the first of each `__rand_1st__` .. `__rand_9th__` (its other places repeat its digits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    bytes: Vec<u8>,
    rand_offsets: Vec<usize>,
    /// The number stream of each entry of `rand_offsets`: 0 for `__rand_int__`, N for `__rand_Nth__`.
    rand_groups: Vec<u8>,
    /// Placeholders that repeat another one's digits: (destination, source) offsets in [`Self::bytes`].
    copies: Vec<(usize, usize)>,
    /// The bytes a cluster routes by: the first argument after the command name, or the inside of its
    /// `{hash tag}`. `None` for a command without arguments (it may go to any node).
    key_range: Option<std::ops::Range<usize>>,
}

impl RequestTemplate {
    /// True when requests differ from one another (`__rand_int__` filled per request).
    pub fn has_placeholders(&self) -> bool {
        !self.rand_offsets.is_empty() || !self.copies.is_empty()
    }

    /// Compiles a command given as arguments. Placeholders are located only when `randomize` is set;
    /// otherwise they stay literal, as in redis-benchmark without `-r`.
    pub fn from_args(args: &[Vec<u8>], randomize: bool) -> Self {
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let mut bytes = Vec::new();
        encode_command(&mut bytes, &refs);
        let mut t = Self::from_bytes(bytes, randomize);
        t.key_range = first_key_range(args);
        t
    }

    /// A request sent as an inline command (`PING\r\n`).
    pub fn inline(line: &str) -> Self {
        Self::from_bytes(format!("{line}\r\n").into_bytes(), false)
    }

    /// A request sent exactly as these bytes (no placeholders).
    pub fn raw(bytes: Vec<u8>) -> Self {
        Self::from_bytes(bytes, false)
    }

    fn from_bytes(bytes: Vec<u8>, randomize: bool) -> Self {
        let (mut rand_offsets, mut rand_groups, mut copies) = (Vec::new(), Vec::new(), Vec::new());
        let mut first = [None::<usize>; 10];
        let mut last = 0;
        for i in memmem::find_iter(&bytes, b"__rand_").filter(|_| randomize) {
            if i < last {
                continue;
            }
            let Some(g) = rand_group(&bytes[i..]) else {
                continue;
            };
            last = i + RAND_WIDTH;
            match first[g as usize] {
                Some(src) if g > 0 => copies.push((i, src)),
                _ => {
                    if g > 0 {
                        first[g as usize] = Some(i);
                    }
                    rand_offsets.push(i);
                    rand_groups.push(g);
                }
            }
        }
        RequestTemplate {
            bytes,
            rand_offsets,
            rand_groups,
            copies,
            key_range: None,
        }
    }

    /// Makes every placeholder repeat the first one's digits, so all of them get one random number
    /// per request (cluster mode: the ten MSET keys share one hash tag and so one slot).
    pub fn share_first_placeholder(mut self) -> Self {
        if let Some((&first, rest)) = self.rand_offsets.split_first() {
            self.copies.extend(rest.iter().map(|&o| (o, first)));
            self.rand_offsets.truncate(1);
            self.rand_groups.truncate(1);
        }
        self
    }

    /// Whether every placeholder repeats the first one's number (see [`Self::share_first_placeholder`]).
    pub fn shares_placeholders(&self) -> bool {
        !self.copies.is_empty()
    }

    /// The byte range of the routing key inside [`Self::bytes`] (see the field's doc).
    pub fn key_range(&self) -> Option<std::ops::Range<usize>> {
        self.key_range.clone()
    }

    /// When the routing key holds exactly one placeholder's digits (and nothing else varies in it):
    /// that placeholder's index among [`Self::rand_offsets`] and where its digits start inside the key.
    /// Its slot then follows from the number alone (`protocol::cluster::DigitSlots`).
    pub fn key_digits(&self) -> Option<(usize, usize)> {
        let key = self.key_range.clone()?;
        let inside = |o: usize| o < key.end && o + RAND_WIDTH > key.start;
        if self.copies.iter().any(|&(d, _)| inside(d)) {
            return None;
        }
        let mut found = self
            .rand_offsets
            .iter()
            .enumerate()
            .filter(|&(_, &o)| inside(o));
        let (index, &at) = found.next()?;
        if found.next().is_some() || at < key.start || at + RAND_WIDTH > key.end {
            return None;
        }
        Some((index, at - key.start))
    }

    /// True when the routing key has no placeholder in it: every request has the same key.
    pub fn key_is_constant(&self) -> bool {
        let Some(key) = self.key_range.clone() else {
            return false;
        };
        let inside = |o: usize| o < key.end && o + RAND_WIDTH > key.start;
        !self.rand_offsets.iter().any(|&o| inside(o))
            && !self.copies.iter().any(|&(d, _)| inside(d))
    }

    /// The request's bytes, with placeholders as compiled.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where each patched placeholder starts inside [`Self::bytes`].
    pub fn rand_offsets(&self) -> &[usize] {
        &self.rand_offsets
    }

    /// The number stream of each of [`Self::rand_offsets`] (0: `__rand_int__`, N: `__rand_Nth__`).
    pub fn rand_groups(&self) -> &[u8] {
        &self.rand_groups
    }

    /// Fills the placeholders of `req`, a copy of this request, with `nums` (one per entry of
    /// [`Self::rand_offsets`], in order). Reads only this template's small tables, which stay in the
    /// cache however many copies are patched.
    #[inline]
    pub fn patch(&self, req: &mut [u8], nums: &[u64]) {
        for (&off, &v) in self.rand_offsets.iter().zip(nums) {
            write_12_digits(&mut req[off..off + RAND_WIDTH], v);
        }
        for &(dst, src) in &self.copies {
            req.copy_within(src..src + RAND_WIDTH, dst);
        }
    }
}

/// Where the routing key of an encoded command lies: its first argument, narrowed to the inside of a
/// `{hash tag}` when it has one. Placeholder digits never contain braces, so the range holds for every
/// request made from the template.
fn first_key_range(args: &[Vec<u8>]) -> Option<std::ops::Range<usize>> {
    let key = args.get(1)?;
    let digits = |n: usize| n.to_string().len();
    // `*<argc>\r\n`, then the command name as `$<len>\r\n<name>\r\n`, then `$<len>\r\n` of the key.
    let start = 1
        + digits(args.len())
        + 2
        + (1 + digits(args[0].len()) + 2 + args[0].len() + 2)
        + (1 + digits(key.len()) + 2);
    let tag = crate::protocol::cluster::hash_tag(key).unwrap_or(0..key.len());
    Some(start + tag.start..start + tag.end)
}

/// A connection's reusable pipeline buffer: `depth` copies of one request laid end to end.
/// Per batch only the placeholder digits are overwritten; the buffer is never reallocated.
#[derive(Debug)]
pub struct PipelineBuffer {
    bytes: Vec<u8>,
    request_len: usize,
    /// Each placeholder's offset in the buffer and its number stream.
    offsets: Vec<(usize, u8)>,
    offsets_per_request: usize,
    copies: Vec<(usize, usize)>,
    copies_per_request: usize,
}

impl PipelineBuffer {
    /// Lays out `depth` copies of `template`.
    pub fn new(template: &RequestTemplate, depth: usize) -> Self {
        let request_len = template.bytes.len();
        let mut bytes = Vec::with_capacity(request_len * depth);
        let mut offsets = Vec::with_capacity(template.rand_offsets.len() * depth);
        let mut copies = Vec::with_capacity(template.copies.len() * depth);
        for i in 0..depth {
            bytes.extend_from_slice(&template.bytes);
            offsets.extend(
                template
                    .rand_offsets
                    .iter()
                    .zip(&template.rand_groups)
                    .map(|(o, &g)| (o + i * request_len, g)),
            );
            let base = i * request_len;
            copies.extend(template.copies.iter().map(|&(d, s)| (d + base, s + base)));
        }
        PipelineBuffer {
            bytes,
            request_len,
            offsets,
            offsets_per_request: template.rand_offsets.len(),
            copies,
            copies_per_request: template.copies.len(),
        }
    }

    /// The whole buffer; [`Self::fill`] says how much of it a batch uses.
    pub fn buffer(&self) -> &[u8] {
        &self.bytes
    }

    /// The length of one request in bytes.
    pub fn request_len(&self) -> usize {
        self.request_len
    }

    /// Fills the first `count` requests' placeholders with numbers from `next` (given each one's stream)
    /// and returns their bytes.
    #[inline]
    pub fn fill(&mut self, count: usize, mut next: impl FnMut(u8) -> u64) -> &[u8] {
        let n = count * self.offsets_per_request;
        for &(off, g) in &self.offsets[..n] {
            write_12_digits(&mut self.bytes[off..off + RAND_WIDTH], next(g));
        }
        for &(dst, src) in &self.copies[..count * self.copies_per_request] {
            self.bytes.copy_within(src..src + RAND_WIDTH, dst);
        }
        &self.bytes[..count * self.request_len]
    }
}

impl PipelineBuffer {
    /// Fills request `i`'s placeholders with numbers from `next` and returns its bytes (a buffer used
    /// as a pool of requests built one at a time, each routed on its own: `--cluster`).
    /// The placeholders are found from the first request's offsets (a small table that stays in the
    /// cache) plus request `i`'s start, not from request `i`'s own entries.
    #[inline]
    pub fn fill_request(&mut self, i: usize, mut next: impl FnMut(u8) -> u64) -> &[u8] {
        let base = i * self.request_len;
        for &(off, g) in &self.offsets[..self.offsets_per_request] {
            let off = base + off;
            write_12_digits(&mut self.bytes[off..off + RAND_WIDTH], next(g));
        }
        for &(dst, src) in &self.copies[..self.copies_per_request] {
            self.bytes
                .copy_within(base + src..base + src + RAND_WIDTH, base + dst);
        }
        self.request(i)
    }

    /// How many numbers one request takes (its placeholders, each from its stream).
    pub fn placeholders(&self) -> usize {
        self.offsets_per_request
    }

    /// Request `i`'s bytes as last filled.
    #[inline]
    pub fn request(&self, i: usize) -> &[u8] {
        &self.bytes[i * self.request_len..(i + 1) * self.request_len]
    }
}

/// Writes `v` (taken modulo 10^12) as exactly 12 zero-padded decimal digits.
#[inline]
pub fn write_12_digits(out: &mut [u8], v: u64) {
    write_pairs(out, &digit_pairs(v));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twelve_digits_are_zero_padded() {
        let mut b = [0u8; 12];
        write_12_digits(&mut b, 42);
        assert_eq!(&b, b"000000000042");
        write_12_digits(&mut b, 999_999_999_999);
        assert_eq!(&b, b"999999999999");
        write_12_digits(&mut b, 1_000_000_000_001);
        assert_eq!(&b, b"000000000001");
    }

    #[test]
    fn template_finds_every_placeholder() {
        let t = RequestTemplate::from_args(
            &[b"SET".to_vec(), b"a:__rand_int__:__rand_int__".to_vec()],
            true,
        );
        assert_eq!(t.rand_offsets().len(), 2);
        for &o in t.rand_offsets() {
            assert_eq!(&t.bytes()[o..o + 12], RAND_INT);
        }
        let literal = RequestTemplate::from_args(&[b"GET".to_vec(), RAND_INT.to_vec()], false);
        assert!(literal.rand_offsets().is_empty());
    }

    #[test]
    fn rand_nth_is_patched_once_and_repeated() {
        let t = RequestTemplate::from_args(
            &[
                b"SET".to_vec(),
                b"a:__rand_1st__:__rand_int__".to_vec(),
                b"__rand_1st__ __rand_int__ __rand_2nd__".to_vec(),
            ],
            true,
        );
        assert_eq!(t.rand_groups(), [1, 0, 0, 2]);
        let mut p = PipelineBuffer::new(&t, 2);
        let mut n = 0;
        let out = p
            .fill(2, |g| {
                n += 1;
                u64::from(g) * 100 + n
            })
            .to_vec();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("a:000000000101:000000000002\r\n"), "{text}");
        assert!(
            text.contains("000000000101 000000000003 000000000204\r\n"),
            "{text}"
        );
        assert!(text.contains("a:000000000105:000000000006\r\n"), "{text}");
        let plain = RequestTemplate::from_args(&[b"GET".to_vec(), b"__rand_1st__".to_vec()], false);
        assert!(plain.rand_offsets().is_empty() && !plain.has_placeholders());
    }

    #[test]
    fn pipeline_fill_overwrites_only_digits() {
        let t = RequestTemplate::from_args(&[b"GET".to_vec(), b"key:__rand_int__".to_vec()], true);
        let mut p = PipelineBuffer::new(&t, 3);
        let mut n = 0;
        let out = p
            .fill(2, |_| {
                n += 1;
                n
            })
            .to_vec();
        assert_eq!(
            out,
            b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000001\r\n*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000002\r\n"
        );
        let cap = p.bytes.capacity();
        p.fill(3, |_| 7);
        assert_eq!(p.bytes.capacity(), cap);
    }

    #[test]
    fn key_digits_name_the_one_placeholder_of_the_key() {
        let t = RequestTemplate::from_args(
            &[
                b"SET".to_vec(),
                b"key:__rand_int__".to_vec(),
                RAND_INT.to_vec(),
            ],
            true,
        );
        assert_eq!(t.key_digits(), Some((0, 4)));
        let two = RequestTemplate::from_args(
            &[b"SET".to_vec(), b"__rand_int____rand_int__".to_vec()],
            true,
        );
        assert_eq!(two.key_digits(), None);
        let plain = RequestTemplate::from_args(&[b"GET".to_vec(), b"k".to_vec()], true);
        assert_eq!(plain.key_digits(), None);
        assert!(plain.key_is_constant());
        assert!(!t.key_is_constant());
        assert!(!two.key_is_constant());
        let keyless = RequestTemplate::from_args(&[b"PING".to_vec()], true);
        assert!(!keyless.key_is_constant());
    }

    #[test]
    fn one_request_is_filled_alone() {
        let t = RequestTemplate::from_args(&[b"GET".to_vec(), b"key:__rand_int__".to_vec()], true);
        let mut p = PipelineBuffer::new(&t, 3);
        p.fill(3, |_| 5);
        let one = p.fill_request(1, |_| 9).to_vec();
        assert_eq!(one, b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000009\r\n");
        assert_eq!(
            p.request(0),
            b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000000005\r\n"
        );
        assert_eq!(p.request(2), p.request(0));
        let key = t.key_range().unwrap();
        assert_eq!(&one[key], b"key:000000000009");
    }
}
