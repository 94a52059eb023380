//! `--data-verify` / `--verify-only` (memtier_benchmark's flags): the value every key of the keyspace must
//! hold (a pure function of its number, `--seed` and `-d`, so a read pass knows it without being told),
//! the two passes' tests, and the streaming comparator that checks each GET reply of the read pass
//! against it in the receive buffers, without copying the reply.

use crate::workload::compose::{Composer, DATA, Entry, KeyedValues, ValueSpec};
use crate::workload::keys::bounded;
use crate::workload::{RequestTemplate, TestSpec};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

/// The key prefix of both passes: key number `n` is `key:<n as 12 digits>`, as in the default suite.
pub const KEY_PREFIX: &str = "key:";
/// The read pass's title; the engine checks the replies of the test whose command is GET.
pub const READ_TITLE: &str = "GET (data verify)";
/// The write pass's title.
pub const WRITE_TITLE: &str = "SET (data verify)";
/// Random bytes kept beyond the largest value, so values start at many different offsets.
const POOL_SPREAD: usize = 64 * 1024;
/// Examples of bad keys kept per executor (and in the merged figures).
pub const MAX_EXAMPLES: usize = 5;

/// What `--data-verify` / `--verify-only` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifySpec {
    /// `-d` and `--random-data`.
    pub value: ValueSpec,
    /// `--seed` as given (0 without it), not the shard's own seed: every shard and every later
    /// `--verify-only` run must agree on the values.
    pub seed: u64,
    /// False with `--verify-only`: the read pass alone.
    pub write: bool,
}

/// The values of the keyspace: key `n`'s value is `value(n)`, a slice of one pool built once.
#[derive(Debug, Clone)]
pub struct Values {
    spec: ValueSpec,
    seed: u64,
    pool: Vec<u8>,
}

/// A 64-bit mix (splitmix64's finaliser).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Values {
    pub fn new(spec: &VerifySpec) -> Values {
        let v = spec.value;
        let pool = if v.random {
            let mut rng = SmallRng::seed_from_u64(spec.seed ^ 0xDA7A_7E51_F1ED);
            const ALPHABET: &[u8] =
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
            (0..v.max + POOL_SPREAD)
                .map(|_| ALPHABET[bounded(rng.next_u64(), ALPHABET.len() as u64) as usize])
                .collect()
        } else {
            vec![b'x'; v.max]
        };
        Values {
            spec: v,
            seed: spec.seed,
            pool,
        }
    }

    /// The value key number `n` holds: `-d` bytes of `x`; with `-d MIN-MAX` a length drawn from a hash
    /// of `n` and the seed; with `--random-data` bytes of a random pool from an offset drawn likewise.
    #[inline]
    pub fn value(&self, n: u64) -> &[u8] {
        let v = &self.spec;
        if !v.varies() {
            return &self.pool[..v.min];
        }
        let h = mix(n ^ mix(self.seed));
        let len = v.min + bounded(h, (v.max - v.min + 1) as u64) as usize;
        let from = if v.random {
            bounded(mix(h), (self.pool.len() - len + 1) as u64) as usize
        } else {
            0
        };
        &self.pool[from..from + len]
    }
}

impl KeyedValues for Values {
    fn value(&self, n: u64) -> &[u8] {
        Values::value(self, n)
    }
}

/// The tests of `--data-verify` (the write pass, then the read pass) or of `--verify-only` (the read
/// pass): SET and GET of `key:<n>` for every `n` of the keyspace, in order.
pub fn verify_tests(spec: &VerifySpec) -> Vec<TestSpec> {
    let key = format!("{KEY_PREFIX}__rand_int__").into_bytes();
    let mut tests = Vec::new();
    if spec.write {
        let value = if spec.value.varies() {
            DATA.to_vec()
        } else {
            vec![b'x'; spec.value.min]
        };
        let args = [b"SET".to_vec(), key.clone(), value];
        let template = RequestTemplate::from_args(&args, true);
        let compose = spec.value.varies().then(|| {
            let entries = [Entry::one(WRITE_TITLE, "SET", &template)];
            let c = Composer::new(&entries, true, spec.value, None, spec.seed)
                .with_keyed_values(Arc::new(Values::new(spec)));
            Arc::new(c)
        });
        tests.push(TestSpec {
            title: WRITE_TITLE.to_string(),
            command: "SET".to_string(),
            template,
            compose,
            replay: None,
        });
    }
    tests.push(TestSpec {
        title: READ_TITLE.to_string(),
        command: "GET".to_string(),
        template: RequestTemplate::from_args(&[b"GET".to_vec(), key], true),
        compose: None,
        replay: None,
    });
    tests
}

/// What was wrong with a key the read pass read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Its value is not the one written.
    Mismatched,
    /// It does not exist (a nil reply).
    Missing,
    /// The server answered with an error (`WRONGTYPE`, ...).
    Error,
}

impl Problem {
    /// The word for it, as the report prints it.
    pub fn from_word(w: &str) -> Option<Problem> {
        [Problem::Mismatched, Problem::Missing, Problem::Error]
            .into_iter()
            .find(|p| p.word() == w)
    }

    pub fn word(self) -> &'static str {
        match self {
            Problem::Mismatched => "mismatched",
            Problem::Missing => "missing",
            Problem::Error => "error",
        }
    }
}

/// The read pass's figures: keys checked and what was wrong with them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyCounts {
    /// Replies compared.
    pub checked: u64,
    /// Of `checked`: values that differ from the ones written.
    pub mismatched: u64,
    /// Of `checked`: keys that do not exist.
    pub missing: u64,
    /// Of `checked`: error replies.
    pub errors: u64,
    /// The first few bad keys (by number) and what was wrong with each.
    pub examples: Vec<(u64, Problem)>,
}

impl VerifyCounts {
    /// Keys whose value was the one written.
    pub fn verified(&self) -> u64 {
        self.checked - self.mismatched - self.missing - self.errors
    }

    /// Keys that failed (memtier's "keys failed"): mismatched, missing or answered with an error.
    pub fn failed(&self) -> u64 {
        self.mismatched + self.missing + self.errors
    }

    fn note(&mut self, key: u64, p: Problem) {
        match p {
            Problem::Mismatched => self.mismatched += 1,
            Problem::Missing => self.missing += 1,
            Problem::Error => self.errors += 1,
        }
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push((key, p));
        }
    }

    /// Folds another executor's figures into these; examples are kept in key order.
    pub fn merge(&mut self, o: &VerifyCounts) {
        self.checked += o.checked;
        self.mismatched += o.mismatched;
        self.missing += o.missing;
        self.errors += o.errors;
        self.examples.extend_from_slice(&o.examples);
        self.examples.sort_by_key(|e| e.0);
        self.examples.truncate(MAX_EXAMPLES);
    }
}

/// The key number of a request made by [`verify_tests`] (its first `key:` and 12 digits).
pub fn key_number(request: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(request, KEY_PREFIX.as_bytes())? + KEY_PREFIX.len();
    let digits = request.get(at..at + 12)?;
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0'))
    })
}

/// The key name of number `n`.
pub fn key_name(n: u64) -> String {
    format!("{KEY_PREFIX}{:012}", n % 1_000_000_000_000)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before a reply's first byte.
    Start,
    /// In a `$`/`!` header's length (`neg` after a `-`), or a `_` null's line.
    Header {
        blob_error: bool,
        len: u64,
        neg: bool,
    },
    /// The header's `\n` is due.
    HeaderEnd {
        blob_error: bool,
        len: u64,
        neg: bool,
    },
    /// In a bulk reply's body: `at` of `len` bytes seen, `ok` while they equal the expected value.
    Body {
        blob_error: bool,
        len: usize,
        at: usize,
        ok: bool,
    },
    /// The body's `\r\n`: `left` bytes to go.
    Tail { left: u8, problem: Option<Problem> },
    /// The rest of a one-line reply, up to its `\n`.
    Line,
    /// An error reply's line: its first bytes are kept, to tell a redirect from an answer.
    Error { n: u8 },
}

/// The error replies a cluster layer answers by sending the request again (see
/// `protocol::cluster::parse_redirect`): not the key's answer.
const RETRIED: [&[u8]; 4] = [b"MOVED ", b"ASK ", b"TRYAGAIN", b"CLUSTERDOWN"];
/// What [`Verifier::skip`] queues: a reply that answers no key (`ASKING`'s).
const SKIP: u64 = u64::MAX;

/// The read pass's comparator for one connection: fed every byte it receives (plaintext), it walks the
/// GET replies (`$<len>\r\n<value>\r\n`, `$-1\r\n`, `_\r\n`, `-ERR ...\r\n`) and compares each value with
/// the one its key must hold, the key at the front of [`Self::expect`]'s queue, wherever buffers cut it.
#[derive(Debug)]
pub struct Verifier {
    values: Rc<Values>,
    keys: VecDeque<u64>,
    state: State,
    /// The key of the reply being read.
    key: u64,
    /// Whether redirect errors are retried elsewhere (`--cluster`): they are then not counted.
    retried: bool,
    /// The first bytes of an error reply's line.
    head: [u8; 12],
    pub counts: VerifyCounts,
}

impl Verifier {
    /// A comparator for a connection with up to `depth` requests in flight; `values` is its
    /// executor's, shared by its connections.
    pub fn new(values: Rc<Values>, depth: usize, retried: bool) -> Verifier {
        Verifier {
            values,
            keys: VecDeque::with_capacity(depth),
            state: State::Start,
            key: 0,
            retried,
            head: [0; 12],
            counts: VerifyCounts::default(),
        }
    }

    /// The next request sent reads key number `n`.
    #[inline]
    pub fn expect(&mut self, n: u64) {
        self.keys.push_back(n);
    }

    /// The next request sent answers no key (a cluster's `ASKING`): its one-line reply is skipped.
    #[inline]
    pub fn skip(&mut self) {
        self.keys.push_back(SKIP);
    }

    /// Forgets what a lost connection had in flight: those requests are counted as failed, not here.
    pub fn reset(&mut self) {
        self.keys.clear();
        self.state = State::Start;
    }

    fn finish(&mut self, problem: Option<Problem>) {
        self.counts.checked += 1;
        if let Some(p) = problem {
            self.counts.note(self.key, p);
        }
        self.state = State::Start;
    }

    /// Checks the replies in `data`, the next bytes the connection received.
    pub fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            match self.state {
                State::Start => {
                    let Some(key) = self.keys.pop_front() else {
                        // A reply no request of this pass asked for: the ring reports it.
                        return;
                    };
                    self.key = key;
                    let b = data[0];
                    data = &data[1..];
                    self.start(key, b);
                }
                State::Header {
                    blob_error,
                    len,
                    neg,
                } => {
                    let b = data[0];
                    data = &data[1..];
                    self.state = header_byte(blob_error, len, neg, b);
                }
                State::HeaderEnd {
                    blob_error,
                    len,
                    neg,
                } => {
                    let b = data[0];
                    data = &data[1..];
                    if b == b'\n' {
                        self.header_end(blob_error, len, neg);
                    }
                }
                State::Body {
                    blob_error,
                    len,
                    at,
                    ok,
                } => data = self.body(data, blob_error, len, at, ok),
                State::Tail { left, problem } => {
                    let take = (left as usize).min(data.len());
                    data = &data[take..];
                    let left = left - take as u8;
                    if left == 0 {
                        self.finish(problem);
                    } else {
                        self.state = State::Tail { left, problem };
                    }
                }
                State::Error { n } => {
                    let b = data[0];
                    data = &data[1..];
                    self.error_byte(n, b);
                }
                State::Line => match memchr::memchr(b'\n', data) {
                    Some(i) => {
                        data = &data[i + 1..];
                        self.state = State::Start;
                    }
                    None => return,
                },
            }
        }
    }

    /// A reply's first byte `b`, the answer for `key`: says what comes next, and counts a reply that
    /// can hold no value (a null, any one-line reply but an error).
    #[inline]
    fn start(&mut self, key: u64, b: u8) {
        if key == SKIP {
            self.state = State::Line;
            return;
        }
        self.state = match b {
            b'$' | b'!' => State::Header {
                blob_error: b == b'!',
                len: 0,
                neg: false,
            },
            b'_' => {
                self.counts.checked += 1;
                self.counts.note(key, Problem::Missing);
                State::Line
            }
            b'-' => State::Error { n: 0 },
            // Any other one-line reply is no value.
            _ => {
                self.counts.checked += 1;
                self.counts.note(key, Problem::Mismatched);
                State::Line
            }
        };
    }

    /// The header's `\n` came: a negative length is a missing key, else the body follows (already
    /// wrong when its length is not the expected value's).
    #[inline]
    fn header_end(&mut self, blob_error: bool, len: u64, neg: bool) {
        if neg {
            self.finish(Some(Problem::Missing));
            return;
        }
        let len = len as usize;
        let ok = !blob_error && self.values.value(self.key).len() == len;
        self.state = State::Body {
            blob_error,
            len,
            at: 0,
            ok,
        };
    }

    /// Compares what `data` holds of the body (`at` of `len` bytes seen, `ok` while they equal the
    /// expected value) and returns the bytes after it.
    #[inline]
    fn body<'a>(
        &mut self,
        data: &'a [u8],
        blob_error: bool,
        len: usize,
        at: usize,
        ok: bool,
    ) -> &'a [u8] {
        let take = (len - at).min(data.len());
        let ok = ok && data[..take] == self.values.value(self.key)[at..at + take];
        let at = at + take;
        self.state = if at == len {
            let problem = if blob_error {
                Some(Problem::Error)
            } else {
                (!ok).then_some(Problem::Mismatched)
            };
            State::Tail { left: 2, problem }
        } else {
            State::Body {
                blob_error,
                len,
                at,
                ok,
            }
        };
        &data[take..]
    }

    /// Byte `b` of an error reply's line, `n` bytes in: its first bytes are kept; at its `\n` it counts
    /// unless it is a redirect the cluster layer retries.
    #[inline]
    fn error_byte(&mut self, n: u8, b: u8) {
        if b != b'\n' {
            if (n as usize) < self.head.len() {
                self.head[n as usize] = b;
            }
            self.state = State::Error {
                n: n.saturating_add(1),
            };
            return;
        }
        let head = &self.head[..(n as usize).min(self.head.len())];
        if !(self.retried && RETRIED.iter().any(|r| head.starts_with(r))) {
            self.counts.checked += 1;
            self.counts.note(self.key, Problem::Error);
        }
        self.state = State::Start;
    }
}

/// The state after byte `b` of a `$`/`!` header's length: a digit adds to it, `-` makes it negative,
/// anything else (the `\r`) ends it.
#[inline]
fn header_byte(blob_error: bool, len: u64, neg: bool, b: u8) -> State {
    match b {
        b'0'..=b'9' => State::Header {
            blob_error,
            len: len.saturating_mul(10).saturating_add(u64::from(b - b'0')),
            neg,
        },
        b'-' => State::Header {
            blob_error,
            len,
            neg: true,
        },
        _ => State::HeaderEnd {
            blob_error,
            len,
            neg,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(min: usize, max: usize, random: bool) -> VerifySpec {
        VerifySpec {
            value: ValueSpec { min, max, random },
            seed: 7,
            write: true,
        }
    }

    fn reply(v: &[u8]) -> Vec<u8> {
        let mut r = format!("${}\r\n", v.len()).into_bytes();
        r.extend_from_slice(v);
        r.extend_from_slice(b"\r\n");
        r
    }

    #[test]
    fn values_are_a_function_of_the_key() {
        let a = Values::new(&spec(3, 3, false));
        assert_eq!(a.value(0), b"xxx");
        assert_eq!(a.value(99), b"xxx");
        let r = Values::new(&spec(5, 40, true));
        let again = Values::new(&spec(5, 40, true));
        let mut lens = std::collections::BTreeSet::new();
        for n in 0..200 {
            let v = r.value(n);
            assert!((5..=40).contains(&v.len()));
            assert_eq!(v, again.value(n));
            lens.insert(v.len());
        }
        assert!(lens.len() > 10);
        assert_ne!(r.value(1), r.value(2));
        let other_seed = Values::new(&VerifySpec {
            seed: 8,
            ..spec(5, 40, true)
        });
        assert!((0..20).any(|n| other_seed.value(n) != r.value(n)));
    }

    #[test]
    fn replies_cut_anywhere_are_checked_once() {
        let s = spec(2, 30, true);
        let values = Values::new(&s);
        let mut stream = Vec::new();
        stream.extend(reply(values.value(0)));
        stream.extend(reply(b"not the value"));
        stream.extend(b"$-1\r\n");
        stream.extend(b"-WRONGTYPE Operation\r\n");
        stream.extend(reply(values.value(4)));
        stream.extend(b"_\r\n");
        let mut wrong = values.value(6).to_vec();
        wrong[0] ^= 1;
        stream.extend(reply(&wrong));
        for cut in 0..stream.len() {
            let mut v = Verifier::new(Rc::new(Values::new(&s)), 8, false);
            for n in 0..7 {
                v.expect(n);
            }
            v.feed(&stream[..cut]);
            v.feed(&stream[cut..]);
            let c = &v.counts;
            assert_eq!(
                (c.checked, c.mismatched, c.missing, c.errors, c.verified()),
                (7, 2, 2, 1, 2),
                "cut at {cut}"
            );
            assert_eq!(
                c.examples,
                [
                    (1, Problem::Mismatched),
                    (2, Problem::Missing),
                    (3, Problem::Error),
                    (5, Problem::Missing),
                    (6, Problem::Mismatched)
                ]
            );
        }
        let mut v = Verifier::new(Rc::new(Values::new(&s)), 8, false);
        for n in 0..7 {
            v.expect(n);
        }
        for b in &stream {
            v.feed(std::slice::from_ref(b));
        }
        assert_eq!(v.counts.checked, 7);
        assert_eq!(v.counts.failed(), 5);
    }

    #[test]
    fn under_a_cluster_redirects_and_asking_are_no_answer() {
        let s = spec(4, 4, false);
        let stream: &[u8] = b"-MOVED 3999 127.0.0.1:7001\r\n+OK\r\n$4\r\nxxxx\r\n-ASK 1 127.0.0.1:7002\r\n-TRYAGAIN x\r\n-CLUSTERDOWN y\r\n-ERR other\r\n";
        for retried in [true, false] {
            let mut v = Verifier::new(Rc::new(Values::new(&s)), 8, retried);
            // Key 1 redirected, then sent again after ASKING; keys 2, 3, 4 redirected; key 5 fails.
            v.expect(1);
            v.skip();
            v.expect(1);
            for k in 2..=5 {
                v.expect(k);
            }
            for b in stream {
                v.feed(std::slice::from_ref(b));
            }
            let c = &v.counts;
            if retried {
                assert_eq!((c.checked, c.errors, c.verified()), (2, 1, 1));
                assert_eq!(c.examples, [(5, Problem::Error)]);
            } else {
                assert_eq!((c.checked, c.errors, c.verified()), (6, 5, 1));
            }
        }
        assert_eq!(
            key_number(b"*2\r\n$3\r\nGET\r\n$16\r\nkey:000000004321\r\n"),
            Some(4321)
        );
        assert_eq!(key_number(b"*1\r\n$4\r\nPING\r\n"), None);
    }

    #[test]
    fn merge_keeps_the_lowest_examples() {
        let mut a = VerifyCounts::default();
        for k in [9, 3, 7] {
            a.checked += 1;
            a.note(k, Problem::Missing);
        }
        let mut b = VerifyCounts::default();
        for k in [1, 8, 2] {
            b.checked += 1;
            b.note(k, Problem::Mismatched);
        }
        a.merge(&b);
        assert_eq!((a.checked, a.missing, a.mismatched), (6, 3, 3));
        let keys: Vec<u64> = a.examples.iter().map(|e| e.0).collect();
        assert_eq!(keys, [1, 2, 3, 7, 8]);
        assert_eq!(key_name(42), "key:000000000042");
    }
}
