//! Requests whose bytes change from one request to the next: values of varying length or content
//! (`-d MIN-MAX`, `--random-data`), shared random numbers (`__rand_1st__` .. `__rand_9th__`) and weighted
//! mixes of commands (`--mix`). Each request is written into a reusable buffer; nothing is allocated per request.

use crate::workload::keys::{KeyGen, bounded};
use crate::workload::template::{RAND_INT, RequestTemplate, write_12_digits};
use memchr::memmem;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cell::Cell;

/// The value placeholder: replaced by a value of `-d` bytes.
pub const DATA: &[u8] = b"__data__";
/// The key placeholder: the same as `__rand_int__`.
pub const KEY: &[u8] = b"__key__";
/// Random bytes kept beyond the largest value, so values start at many different offsets.
const POOL_SPREAD: usize = 64 * 1024;
/// Room for one `$<len>\r\n` header and the trailing `\r\n` of a value.
const VALUE_FRAMING: usize = 1 + 20 + 4;

/// What values look like: their length range and whether their bytes differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueSpec {
    pub min: usize,
    pub max: usize,
    /// `--random-data`: bytes drawn from a random pool instead of `x`.
    pub random: bool,
}

impl ValueSpec {
    /// Whether values differ between requests (then requests are composed one by one).
    pub fn varies(&self) -> bool {
        self.random || self.min != self.max
    }
}

/// Why a `-d` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataSizeError {
    #[error("must be a size from 1 to {limit}, or MIN-MAX")]
    NotASize { limit: usize },
    #[error("the range {min}-{max} has its minimum above its maximum")]
    Inverted { min: usize, max: usize },
}

/// Parses `-d`: `SIZE` or `MIN-MAX`.
pub fn parse_data_size(s: &str, limit: usize) -> Result<(usize, usize), DataSizeError> {
    let num = |t: &str| -> Result<usize, DataSizeError> {
        match t.trim().parse::<usize>() {
            Ok(v) if (1..=limit).contains(&v) => Ok(v),
            _ => Err(DataSizeError::NotASize { limit }),
        }
    };
    match s.split_once('-') {
        Some((a, b)) => {
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(DataSizeError::Inverted { min: a, max: b });
            }
            Ok((a, b))
        }
        None => num(s).map(|v| (v, v)),
    }
}

/// Why a `--mix` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MixError {
    #[error("'{0}' must be name:weight")]
    NotNameWeight(String),
    #[error("the weight in '{0}' must be a whole number from 1 to 1000000")]
    Weight(String),
    #[error("give at least one name:weight")]
    Empty,
}

/// Parses `--mix`: `name:weight,...`.
pub fn parse_mix(s: &str) -> Result<Vec<(String, u64)>, MixError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, w) = part
            .split_once(':')
            .ok_or_else(|| MixError::NotNameWeight(part.to_string()))?;
        let w: u64 = w
            .trim()
            .parse()
            .ok()
            .filter(|w| *w > 0 && *w <= 1_000_000)
            .ok_or_else(|| MixError::Weight(part.to_string()))?;
        out.push((name.trim().to_ascii_lowercase(), w));
    }
    if out.is_empty() {
        return Err(MixError::Empty);
    }
    Ok(out)
}

/// Rewrites a custom command's arguments: `__key__` becomes `__rand_int__`; a whole-argument `__data__`
/// stays a value slot when values vary and becomes `min` bytes of `x` otherwise; `__data__` inside a
/// longer argument always becomes `min` bytes of `x`.
pub fn expand_args(args: &[Vec<u8>], value: &ValueSpec) -> Vec<Vec<u8>> {
    let fixed = vec![b'x'; value.min];
    args.iter()
        .map(|a| {
            if a == DATA && value.varies() {
                return a.clone();
            }
            replace_all(&replace_all(a, KEY, RAND_INT), DATA, &fixed)
        })
        .collect()
}

fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut last = 0;
    for i in memmem::find_iter(hay, from) {
        out.extend_from_slice(&hay[last..i]);
        out.extend_from_slice(to);
        last = i + from.len();
    }
    out.extend_from_slice(&hay[last..]);
    out
}

/// Whether `template` needs composing per request: a value slot, or a shared random number.
pub fn needs_composer(template: &RequestTemplate, randomize: bool) -> bool {
    let b = template.bytes();
    memmem::find(b, DATA).is_some()
        || (randomize
            && memmem::find_iter(b, b"__rand_").any(|i| rand_group(&b[i..]).unwrap_or(0) > 0))
}

/// The group of the 12-byte placeholder at the start of `b`: 0 for `__rand_int__` (a fresh number at each
/// place), 1..9 for `__rand_1st__`..`__rand_9th__` (one number per command, reused at each place).
fn rand_group(b: &[u8]) -> Option<u8> {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// Bytes `start..end` of the literal arena.
    Lit(u32, u32),
    /// 12 digits of a random number of this group.
    Rand(u8),
    /// A whole bulk-string value: header, bytes, CRLF.
    Value,
}

/// Where a composed request's routing key lies (see [`Composer::key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyAt {
    /// The command has no key (any node may take it).
    Absent,
    /// These bytes of every request of the command: its first argument, or the inside of its `{hash
    /// tag}` (placeholders are as long as their digits, so the place never moves).
    Fixed(std::ops::Range<usize>),
    /// A value of varying length comes before the key: it is read from each request.
    Varies,
}

/// One command of a composer: its name (as `INFO commandstats` knows it) and its pieces.
#[derive(Debug, Clone)]
pub struct Variant {
    /// The test title it came from (`GET`, `SET`, ...).
    pub title: String,
    /// The upper-case command name.
    pub command: String,
    pieces: Vec<Piece>,
    max_len: usize,
    key: KeyAt,
}

/// The value each key number must hold (`--data-verify`: `workload::verify::Values`).
pub trait KeyedValues: std::fmt::Debug + Send + Sync {
    fn value(&self, n: u64) -> &[u8];
}

/// A compiled set of request shapes, chosen by weight, with the value pool they draw from.
/// Shared read-only by every executor.
#[derive(Debug, Clone)]
pub struct Composer {
    lit: Vec<u8>,
    variants: Vec<Variant>,
    /// Running sums of the weights, for choosing a variant at random when `order` is empty.
    cumulative: Vec<u64>,
    /// One cycle of variant indices in their weights' proportions, spread evenly (smooth weighted
    /// round-robin over the weights divided by their gcd). An executor walks it with one counter, so its
    /// requests follow the weights exactly, not just on average.
    order: Vec<u16>,
    value: ValueSpec,
    /// Bytes values are copied from: random letters and digits, or `x` without `--random-data`.
    pool: Vec<u8>,
    /// `--data-verify`'s write pass: each value is the one its key must hold (the request's last
    /// `__rand_int__` number before it), not a random one.
    keyed: Option<std::sync::Arc<dyn KeyedValues>>,
}

impl Composer {
    /// Compiles `(title, command, template, weight)` entries. Placeholders are random only with
    /// `randomize` (`-r`), as in the fixed-layout path.
    pub fn new(
        entries: &[(String, String, &RequestTemplate, u64)],
        randomize: bool,
        value: ValueSpec,
        seed: u64,
    ) -> Composer {
        let mut lit = Vec::new();
        let mut variants = Vec::new();
        let mut cumulative = Vec::new();
        let mut sum = 0;
        for (title, command, template, weight) in entries {
            let shared = template.shares_placeholders();
            let pieces = compile(&mut lit, template.bytes(), randomize, &value, shared);
            let max_len = pieces
                .iter()
                .map(|p| match p {
                    Piece::Lit(a, b) => (b - a) as usize,
                    Piece::Rand(_) => RAND_INT.len(),
                    Piece::Value => value.max + VALUE_FRAMING,
                })
                .sum();
            // Bytes before the first value of varying length: their layout is the template's.
            let mut fixed = 0;
            for p in &pieces {
                match p {
                    Piece::Lit(a, b) => fixed += (b - a) as usize,
                    Piece::Rand(_) => fixed += RAND_INT.len(),
                    Piece::Value => break,
                }
            }
            let key = match template.key_range() {
                None => KeyAt::Absent,
                Some(r) if !pieces.contains(&Piece::Value) || r.end <= fixed => KeyAt::Fixed(r),
                Some(_) => KeyAt::Varies,
            };
            sum += weight;
            cumulative.push(sum);
            variants.push(Variant {
                title: title.clone(),
                command: command.clone(),
                pieces,
                max_len,
                key,
            });
        }
        let order = weighted_order(&entries.iter().map(|e| e.3).collect::<Vec<_>>());
        let pool = if value.random {
            let mut rng = SmallRng::seed_from_u64(seed ^ 0x5EED_DA7A);
            const ALPHABET: &[u8] =
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
            (0..value.max + POOL_SPREAD)
                .map(|_| ALPHABET[bounded(rng.next_u64(), ALPHABET.len() as u64) as usize])
                .collect()
        } else {
            vec![b'x'; value.max]
        };
        Composer {
            lit,
            variants,
            cumulative,
            order,
            value,
            pool,
            keyed: None,
        }
    }

    /// Makes every value the one `values` gives the request's key (`--data-verify`'s write pass).
    pub fn with_keyed_values(mut self, values: std::sync::Arc<dyn KeyedValues>) -> Self {
        self.keyed = Some(values);
        self
    }

    /// The commands, in the order their statistics are kept.
    pub fn variants(&self) -> &[Variant] {
        &self.variants
    }

    /// The longest request, in bytes: a buffer of `depth * max_request_len()` never grows.
    pub fn max_request_len(&self) -> usize {
        self.variants.iter().map(|v| v.max_len).max().unwrap_or(0)
    }

    /// Where the routing key of a request of variant `kind` lies, as [`Self::write_request`] writes it.
    pub fn key(&self, kind: usize) -> &KeyAt {
        &self.variants[kind].key
    }

    /// Appends one request to `out` and returns the index of the variant chosen. `turn` is the executor's
    /// position in the mix's cycle, shared by its connections.
    #[inline]
    pub fn write_request(
        &self,
        out: &mut Vec<u8>,
        keys: &mut KeyGen,
        rng: &mut SmallRng,
        turn: &Cell<u64>,
    ) -> usize {
        let kind = if self.variants.len() == 1 {
            0
        } else if !self.order.is_empty() {
            let t = turn.get();
            turn.set(t + 1);
            self.order[(t % self.order.len() as u64) as usize] as usize
        } else {
            let total = *self.cumulative.last().unwrap_or(&1);
            let r = bounded(rng.next_u64(), total);
            self.cumulative.iter().position(|&c| r < c).unwrap_or(0)
        };
        // Numbers of groups 1..9 and [`SHARED_INT`], drawn on first use within this request.
        let mut shared = [u64::MAX; SHARED_INT as usize + 1];
        let mut last = 0;
        for piece in &self.variants[kind].pieces {
            match *piece {
                Piece::Lit(a, b) => out.extend_from_slice(&self.lit[a as usize..b as usize]),
                Piece::Rand(g) => {
                    let v = if g == 0 {
                        keys.next(rng)
                    } else {
                        let slot = &mut shared[g as usize];
                        if *slot == u64::MAX {
                            *slot = keys.next(rng);
                        }
                        *slot
                    };
                    let at = out.len();
                    out.extend_from_slice(&[0u8; 12]);
                    write_12_digits(&mut out[at..], v);
                    last = v;
                }
                Piece::Value if self.keyed.is_some() => {
                    let v = self.keyed.as_ref().map_or(&[][..], |k| k.value(last));
                    out.push(b'$');
                    crate::protocol::resp::push_decimal(out, v.len() as u64);
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(v);
                    out.extend_from_slice(b"\r\n");
                }
                Piece::Value => {
                    let v = &self.value;
                    let len = v.min + bounded(rng.next_u64(), (v.max - v.min + 1) as u64) as usize;
                    let from = if v.random {
                        bounded(rng.next_u64(), (self.pool.len() - len + 1) as u64) as usize
                    } else {
                        0
                    };
                    out.push(b'$');
                    crate::protocol::resp::push_decimal(out, len as u64);
                    out.extend_from_slice(b"\r\n");
                    out.extend_from_slice(&self.pool[from..from + len]);
                    out.extend_from_slice(b"\r\n");
                }
            }
        }
        kind
    }
}

/// Longest mix cycle kept; longer ones (huge coprime weights) fall back to random draws.
const MAX_ORDER: u64 = 1 << 16;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// One cycle of indices in proportion to `weights`, evenly interleaved (smooth weighted round-robin).
fn weighted_order(weights: &[u64]) -> Vec<u16> {
    let g = weights.iter().fold(0, |a, &w| gcd(a, w)).max(1);
    let w: Vec<i64> = weights.iter().map(|&x| (x / g) as i64).collect();
    let total: i64 = w.iter().sum();
    if weights.len() < 2 || total as u64 > MAX_ORDER || weights.len() > u16::MAX as usize {
        return Vec::new();
    }
    let mut current = vec![0i64; w.len()];
    (0..total)
        .map(|_| {
            for (c, x) in current.iter_mut().zip(&w) {
                *c += x;
            }
            let best = (0..w.len())
                .max_by_key(|&i| (current[i], -(i as i64)))
                .unwrap_or(0);
            current[best] -= total;
            best as u16
        })
        .collect()
}

/// The group of every `__rand_int__` of a template whose placeholders share one number per request
/// (cluster MSET: ten keys under one hash tag, so one slot).
const SHARED_INT: u8 = 10;

/// Splits a RESP-encoded command (or an inline one) into pieces, appending literals to `lit`. With
/// `shared`, every `__rand_int__` of a request gets the same number.
fn compile(
    lit: &mut Vec<u8>,
    bytes: &[u8],
    randomize: bool,
    value: &ValueSpec,
    shared: bool,
) -> Vec<Piece> {
    let mut pieces = Vec::new();
    // Start of the literal being built, if any: adjacent literal bytes become one piece.
    let mut open: Option<u32> = None;
    fn push_lit(lit: &mut Vec<u8>, open: &mut Option<u32>, b: &[u8]) {
        if open.is_none() {
            *open = Some(lit.len() as u32);
        }
        lit.extend_from_slice(b);
    }
    fn close(lit: &[u8], pieces: &mut Vec<Piece>, open: &mut Option<u32>) {
        if let Some(a) = open.take()
            && (a as usize) < lit.len()
        {
            pieces.push(Piece::Lit(a, lit.len() as u32));
        }
    }
    let Some(args) = split_resp_args(bytes) else {
        push_lit(lit, &mut open, bytes);
        close(lit, &mut pieces, &mut open);
        return pieces;
    };
    push_lit(lit, &mut open, format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        if arg == DATA && value.varies() {
            close(lit, &mut pieces, &mut open);
            pieces.push(Piece::Value);
            continue;
        }
        push_lit(lit, &mut open, format!("${}\r\n", arg.len()).as_bytes());
        let mut last = 0;
        if randomize {
            for i in memmem::find_iter(arg, b"__rand_") {
                if i < last {
                    continue;
                }
                if let Some(g) = rand_group(&arg[i..]) {
                    push_lit(lit, &mut open, &arg[last..i]);
                    close(lit, &mut pieces, &mut open);
                    pieces.push(Piece::Rand(if g == 0 && shared { SHARED_INT } else { g }));
                    last = i + 12;
                }
            }
        }
        push_lit(lit, &mut open, &arg[last..]);
        push_lit(lit, &mut open, b"\r\n");
    }
    close(lit, &mut pieces, &mut open);
    pieces
}

/// The arguments of a RESP array of bulk strings; `None` for anything else (an inline command).
fn split_resp_args(b: &[u8]) -> Option<Vec<&[u8]>> {
    let line = |from: usize| -> Option<(usize, usize)> {
        let end = from + memchr::memchr(b'\r', &b[from..])?;
        let n = std::str::from_utf8(&b[from + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    };
    if b.first() != Some(&b'*') {
        return None;
    }
    let (count, mut at) = line(0)?;
    let mut args = Vec::with_capacity(count);
    for _ in 0..count {
        if b.get(at) != Some(&b'$') {
            return None;
        }
        let (len, body) = line(at)?;
        args.push(b.get(body..body + len)?);
        at = body + len + 2;
    }
    Some(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::keys::Distribution;
    use std::rc::Rc;

    fn tpl(args: &[&str]) -> RequestTemplate {
        let a: Vec<Vec<u8>> = args.iter().map(|s| s.as_bytes().to_vec()).collect();
        RequestTemplate::from_args(&a, true)
    }

    fn keys() -> KeyGen {
        KeyGen::new(Distribution::Uniform, 1000, 0, 1, &Rc::new(Cell::new(0)))
    }

    #[test]
    fn cluster_mset_keys_share_one_tag_when_composed() {
        let v = ValueSpec {
            min: 2,
            max: 5,
            random: true,
        };
        let params = crate::workload::SuiteParams {
            value: DATA.to_vec(),
            randomize: true,
            tag: String::new(),
            cluster: true,
        };
        let names = vec!["mset".to_string()];
        let t = &crate::workload::default_suite(Some(&names), &params).unwrap()[0];
        let c = Composer::new(
            &[(t.title.clone(), t.command.clone(), &t.template, 1)],
            true,
            v,
            7,
        );
        let mut k = keys();
        let mut rng = SmallRng::seed_from_u64(1);
        let turn = Cell::new(0);
        for _ in 0..20 {
            let mut out = Vec::new();
            let kind = c.write_request(&mut out, &mut k, &mut rng, &turn);
            let tag = crate::protocol::cluster::request_key(&out)
                .unwrap()
                .to_vec();
            // The composer knows where it wrote the key: the same bytes, without reading the request.
            let KeyAt::Fixed(at) = c.key(kind) else {
                panic!("the key's place is fixed: {:?}", c.key(kind));
            };
            assert_eq!(&out[at.clone()], tag.as_slice());
            let text = String::from_utf8(out).unwrap();
            let tags: Vec<&str> = text
                .split("\r\n")
                .filter(|l| l.starts_with("key:{"))
                .map(|l| &l[5..17])
                .collect();
            assert_eq!(tags.len(), 10, "{text}");
            assert!(tags.iter().all(|t| t.as_bytes() == tag), "{text}");
        }
    }

    #[test]
    fn data_sizes_and_mixes_parse() {
        assert_eq!(parse_data_size("50", 100), Ok((50, 50)));
        assert_eq!(parse_data_size("10-20", 100), Ok((10, 20)));
        assert!(parse_data_size("20-10", 100).is_err());
        assert!(parse_data_size("0", 100).is_err());
        assert!(parse_data_size("x", 100).is_err());
        assert_eq!(
            parse_mix("get:80, SET:20").unwrap(),
            [("get".to_string(), 80), ("set".to_string(), 20)]
        );
        assert!(parse_mix("get").is_err());
        assert!(parse_mix("get:0").is_err());
    }

    #[test]
    fn expand_rewrites_key_and_fixed_data() {
        let fixed = ValueSpec {
            min: 3,
            max: 3,
            random: false,
        };
        let a = expand_args(&[b"set".to_vec(), KEY.to_vec(), DATA.to_vec()], &fixed);
        assert_eq!(a, [b"set".to_vec(), RAND_INT.to_vec(), b"xxx".to_vec()]);
        let varying = ValueSpec {
            min: 3,
            max: 9,
            random: false,
        };
        let a = expand_args(&[b"v:__data__".to_vec(), DATA.to_vec()], &varying);
        assert_eq!(a, [b"v:xxx".to_vec(), DATA.to_vec()]);
    }

    #[test]
    fn shared_numbers_repeat_within_one_command() {
        let t = tpl(&[
            "MSET",
            "a:__rand_1st__",
            "__rand_1st__",
            "b:__rand_int__",
            "__rand_2nd__",
        ]);
        assert!(needs_composer(&t, true));
        let c = Composer::new(
            &[("MSET".into(), "MSET".into(), &t, 1)],
            true,
            ValueSpec {
                min: 3,
                max: 3,
                random: false,
            },
            1,
        );
        let mut out = Vec::with_capacity(c.max_request_len());
        let mut rng = SmallRng::seed_from_u64(9);
        c.write_request(&mut out, &mut keys(), &mut rng, &Cell::new(0));
        let args = split_resp_args(&out).unwrap();
        assert_eq!(args[0], b"MSET");
        assert_eq!(&args[1][2..], args[2]);
        assert!(args[2].iter().all(u8::is_ascii_digit) && args[2].len() == 12);
        assert!(out.len() <= c.max_request_len());
    }

    #[test]
    fn values_vary_in_length_and_content() {
        let t = tpl(&["SET", "key:__rand_int__", "__data__"]);
        let spec = ValueSpec {
            min: 5,
            max: 40,
            random: true,
        };
        let c = Composer::new(&[("SET".into(), "SET".into(), &t, 1)], true, spec, 2);
        let mut out = Vec::with_capacity(8 * c.max_request_len());
        let cap = out.capacity();
        let mut rng = SmallRng::seed_from_u64(3);
        let mut k = keys();
        let mut lens = std::collections::HashSet::new();
        let mut vals = std::collections::HashSet::new();
        for _ in 0..8 {
            out.clear();
            c.write_request(&mut out, &mut k, &mut rng, &Cell::new(0));
            let args = split_resp_args(&out).unwrap();
            let KeyAt::Fixed(at) = c.key(0) else {
                panic!("the key comes before the value: {:?}", c.key(0));
            };
            assert_eq!(&out[at.clone()], args[1]);
            assert!((5..=40).contains(&args[2].len()));
            assert!(args[2].iter().all(u8::is_ascii_alphanumeric));
            lens.insert(args[2].len());
            vals.insert(args[2].to_vec());
        }
        assert!(lens.len() > 1 && vals.len() > 1);
        assert_eq!(out.capacity(), cap);
    }

    #[test]
    fn a_key_after_a_varying_value_is_read_from_the_request() {
        let spec = ValueSpec {
            min: 1,
            max: 9,
            random: false,
        };
        let t = tpl(&["SET", "__data__", "v"]);
        let c = Composer::new(&[("SET".into(), "SET".into(), &t, 1)], true, spec, 2);
        assert_eq!(c.key(0), &KeyAt::Varies);
        let t = tpl(&["PING"]);
        let c = Composer::new(&[("PING".into(), "PING".into(), &t, 1)], true, spec, 2);
        assert_eq!(c.key(0), &KeyAt::Absent);
    }

    #[test]
    fn weights_pick_variants() {
        let get = tpl(&["GET", "k"]);
        let set = tpl(&["SET", "k", "v"]);
        let c = Composer::new(
            &[
                ("GET".into(), "GET".into(), &get, 3),
                ("SET".into(), "SET".into(), &set, 1),
            ],
            false,
            ValueSpec {
                min: 1,
                max: 1,
                random: false,
            },
            0,
        );
        let mut rng = SmallRng::seed_from_u64(4);
        let mut n = [0u32; 2];
        let mut out = Vec::new();
        let turn = Cell::new(0);
        let mut first = Vec::new();
        for _ in 0..40_000 {
            out.clear();
            let k = c.write_request(&mut out, &mut keys(), &mut rng, &turn);
            n[k] += 1;
            if first.len() < 8 {
                first.push(k);
            }
        }
        assert_eq!(n, [30_000, 10_000]);
        assert_eq!(first, [0, 0, 1, 0, 0, 0, 1, 0], "interleaved, not in runs");
        assert_eq!(weighted_order(&[80, 20]).len(), 5);
        assert!(weighted_order(&[1_000_000, 999_999]).is_empty());
        let inline = RequestTemplate::inline("PING");
        let c = Composer::new(
            &[("P".into(), "PING".into(), &inline, 1)],
            true,
            ValueSpec {
                min: 1,
                max: 1,
                random: false,
            },
            0,
        );
        out.clear();
        c.write_request(&mut out, &mut keys(), &mut rng, &Cell::new(0));
        assert_eq!(out, b"PING\r\n");
    }
}
