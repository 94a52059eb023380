//! Requests whose bytes change from one request to the next: values of varying length or content
//! (`-d MIN-MAX`, `--random-data`), shared random numbers (`__rand_1st__` .. `__rand_9th__`), TTLs
//! (`--expiry-range`) and weighted mixes of commands (`--mix`, `--command`). Each request is written into
//! a reusable buffer; nothing is allocated per request.

pub use crate::workload::expiry::{Expiry, parse_expiry, takes_expiry};
use crate::workload::keys::{Distribution, KeyGen, bounded};
use crate::workload::template::{RAND_INT, RequestTemplate, rand_group, write_12_digits};
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

/// Whether `template` needs composing per request: a value slot. (`__rand_int__` and `__rand_1st__` ..
/// `__rand_9th__` are patched in place, each from its own stream.)
pub fn needs_composer(template: &RequestTemplate, _randomize: bool) -> bool {
    memmem::find(template.bytes(), DATA).is_some()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// Bytes `start..end` of the literal arena.
    Lit(u32, u32),
    /// 12 digits of a random number of this group.
    Rand(u8),
    /// A whole bulk-string value: header, bytes, CRLF.
    Value,
    /// A TTL in seconds drawn from `--expiry-range`, as a bulk string (after a literal `EX`).
    Expiry,
    /// A bulk string whose content is `count` [`ArgPart`]s from index `first` of the composer's
    /// `parts`: literals and numbers in decimal (memtier's key names), its length known once written.
    Bulk(u32, u16),
    /// The connection's SCAN cursor, as a bulk string (memtier's `--scan-incremental-iteration`).
    Cursor,
}

/// Whether `--expiry-range` gives `template`'s requests a TTL (see [`takes_expiry`]).
pub fn wants_expiry(template: &RequestTemplate) -> bool {
    split_resp_args(template.bytes()).is_some_and(|a| takes_expiry(&a))
}

/// One command of a composer as its caller describes it.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    /// The test title it came from (`GET`, `SET __key__ __data__`, ...).
    pub title: String,
    /// The upper-case command name.
    pub command: String,
    pub template: &'a RequestTemplate,
    pub weight: u64,
    /// Its own key pattern (`--command-key-pattern`), else the run's `--distribution`.
    pub pattern: Option<Distribution>,
}

impl<'a> Entry<'a> {
    /// An entry of weight 1 with the run's key distribution.
    pub fn one(title: &str, command: &str, template: &'a RequestTemplate) -> Self {
        Entry {
            title: title.to_string(),
            command: command.to_string(),
            template,
            weight: 1,
            pattern: None,
        }
    }
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
    /// Its own key pattern (`--command-key-pattern`), else `None`: the run's distribution.
    pub pattern: Option<Distribution>,
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
    expiry: Option<Expiry>,
    /// Bytes values are copied from: random letters and digits, or `x` without `--random-data`.
    pool: Vec<u8>,
    /// `--dataset`: one command per row, sent in turn in place of the variant's pieces.
    rows: Option<Rows>,
    /// `--data-verify`'s write pass: each value is the one its key must hold (the request's last
    /// `__rand_int__` number before it), not a random one.
    keyed: Option<std::sync::Arc<dyn KeyedValues>>,
    /// memtier's personality: its keyspace, and each connection's commands in their order.
    memtier: Option<MemtierStyle>,
    /// The parts of [`Piece::Bulk`] arguments.
    parts: Vec<ArgPart>,
    /// memtier's order: each command repeated its ratio times, walked by each connection on its own.
    sequence: Vec<u16>,
}

/// The commands of a `--dataset` run, one per row, each compiled once into pieces of the composer's
/// arena: its fields in place, its `__rand_*__` placeholders left to fill per request.
#[derive(Debug, Clone, Default)]
struct Rows {
    pieces: Vec<Piece>,
    /// Where each row's pieces start in `pieces`, and one more entry for the end.
    starts: Vec<usize>,
}

/// A dataset whose compiled commands passed the 4 GiB the composer's arena can address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("its rows' commands take more than 4 GiB once encoded")]
pub struct RowsTooLarge;

/// Builds the composer of a `--dataset` run from each row's command.
#[derive(Debug)]
pub struct RowsBuilder {
    lit: Vec<u8>,
    rows: Rows,
    max_len: usize,
    randomize: bool,
    expiry: Option<Expiry>,
    encoded: Vec<u8>,
}

impl RowsBuilder {
    /// Placeholders are filled per request only with `randomize` (`-r`), as in the other paths; a SET
    /// gets a TTL with `expiry` (`--expiry-range`), as there.
    pub fn new(randomize: bool, expiry: Option<Expiry>) -> RowsBuilder {
        RowsBuilder {
            lit: Vec::new(),
            rows: Rows {
                pieces: Vec::new(),
                starts: vec![0],
            },
            max_len: 0,
            randomize,
            expiry,
            encoded: Vec::new(),
        }
    }

    /// Adds the next row's command.
    pub fn push(&mut self, args: &[Vec<u8>]) -> Result<(), RowsTooLarge> {
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        self.encoded.clear();
        crate::protocol::resp::encode_command(&mut self.encoded, &refs);
        if self.lit.len() + self.encoded.len() > u32::MAX as usize {
            return Err(RowsTooLarge);
        }
        let fixed = ValueSpec {
            min: 1,
            max: 1,
            random: false,
        };
        let pieces = compile(
            &mut self.lit,
            &self.encoded,
            self.randomize,
            &fixed,
            false,
            self.expiry,
        );
        let len: usize = pieces
            .iter()
            .map(|p| match p {
                Piece::Lit(a, b) => (b - a) as usize,
                Piece::Rand(_) => RAND_INT.len(),
                Piece::Value => fixed.max + VALUE_FRAMING,
                Piece::Expiry | Piece::Bulk(..) | Piece::Cursor => VALUE_FRAMING,
            })
            .sum();
        self.max_len = self.max_len.max(len);
        self.rows.pieces.extend_from_slice(&pieces);
        self.rows.starts.push(self.rows.pieces.len());
        Ok(())
    }

    /// The composer: one command (`title`, `command`) whose request `t` of an executor is row
    /// `t % rows` (`t` counted by the executor's turn, from its first request's place in the run).
    /// `None` when no row was pushed.
    pub fn finish(self, title: String, command: String) -> Option<Composer> {
        if self.rows.starts.len() < 2 {
            return None;
        }
        Some(Composer {
            lit: self.lit,
            variants: vec![Variant {
                title,
                command,
                pattern: None,
                pieces: Vec::new(),
                max_len: self.max_len,
                key: KeyAt::Varies,
            }],
            cumulative: vec![1],
            order: Vec::new(),
            value: ValueSpec {
                min: 1,
                max: 1,
                random: false,
            },
            pool: Vec::new(),
            expiry: self.expiry,
            rows: Some(self.rows),
            keyed: None,
            memtier: None,
            parts: Vec::new(),
            sequence: Vec::new(),
        })
    }
}

impl Composer {
    /// Compiles the entries. Placeholders are random only with `randomize` (`-r`), as in the fixed-layout
    /// path; with `expiry`, each SET without an expiry of its own gets `EX <ttl>` appended.
    pub fn new(
        entries: &[Entry<'_>],
        randomize: bool,
        value: ValueSpec,
        expiry: Option<Expiry>,
        seed: u64,
    ) -> Composer {
        let mut lit = Vec::new();
        let mut variants = Vec::new();
        let mut cumulative = Vec::new();
        let mut sum = 0;
        for e in entries {
            let template = e.template;
            let shared = template.shares_placeholders();
            let pieces = compile(
                &mut lit,
                template.bytes(),
                randomize,
                &value,
                shared,
                expiry,
            );
            let max_len = pieces
                .iter()
                .map(|p| match p {
                    Piece::Lit(a, b) => (b - a) as usize,
                    Piece::Rand(_) => RAND_INT.len(),
                    Piece::Value => value.max + VALUE_FRAMING,
                    Piece::Expiry | Piece::Bulk(..) | Piece::Cursor => VALUE_FRAMING,
                })
                .sum();
            // Bytes before the first value of varying length: their layout is the template's.
            let mut fixed = 0;
            for p in &pieces {
                match p {
                    Piece::Lit(a, b) => fixed += (b - a) as usize,
                    Piece::Rand(_) => fixed += RAND_INT.len(),
                    Piece::Value | Piece::Expiry | Piece::Bulk(..) | Piece::Cursor => break,
                }
            }
            let key = match template.key_range() {
                None => KeyAt::Absent,
                Some(r) if !pieces.contains(&Piece::Value) || r.end <= fixed => KeyAt::Fixed(r),
                Some(_) => KeyAt::Varies,
            };
            sum += e.weight;
            cumulative.push(sum);
            variants.push(Variant {
                title: e.title.clone(),
                command: e.command.clone(),
                pattern: e.pattern,
                pieces,
                max_len,
                key,
            });
        }
        let order = weighted_order(&entries.iter().map(|e| e.weight).collect::<Vec<_>>());
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
            expiry,
            pool,
            rows: None,
            keyed: None,
            memtier: None,
            parts: Vec::new(),
            sequence: Vec::new(),
        }
    }

    /// Makes every value the one `values` gives the request's key (`--data-verify`'s write pass).
    pub fn with_keyed_values(mut self, values: std::sync::Arc<dyn KeyedValues>) -> Self {
        self.keyed = Some(values);
        self
    }

    /// Each command's own key pattern, in order (what [`KeyGen::new`] takes).
    pub fn patterns(&self) -> Vec<Option<Distribution>> {
        self.variants.iter().map(|v| v.pattern).collect()
    }

    /// The commands, in the order their statistics are kept.
    pub fn variants(&self) -> &[Variant] {
        &self.variants
    }

    /// Whether `needle` may appear in the literal bytes of a request (a match across two pieces
    /// counts too: a false yes, never a false no).
    pub fn literals_contain(&self, needle: &[u8]) -> bool {
        memmem::find(&self.lit, needle).is_some()
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
        let kind = self.choose_kind(keys, rng, turn);
        // Numbers of groups 1..9 and [`SHARED_INT`], drawn on first use within this request.
        let mut shared = [u64::MAX; SHARED_INT as usize + 1];
        let mut pending_len: Option<usize> = None;
        let pieces = match &self.rows {
            Some(rows) => {
                let t = turn.get();
                turn.set(t.wrapping_add(1));
                let row = (t % (rows.starts.len() as u64 - 1)) as usize;
                &rows.pieces[rows.starts[row]..rows.starts[row + 1]]
            }
            None => &self.variants[kind].pieces,
        };
        let mut last = 0;
        for piece in pieces {
            match *piece {
                Piece::Lit(a, b) => out.extend_from_slice(&self.lit[a as usize..b as usize]),
                Piece::Rand(g) => {
                    // Each group is its own stream (valkey-benchmark: its own sequential position);
                    // the shared `__rand_int__` of a cluster MSET is stream 0's.
                    let stream = if g == SHARED_INT { 0 } else { g };
                    let v = if g == 0 {
                        keys.next_in(kind, 0, rng)
                    } else {
                        let slot = &mut shared[g as usize];
                        if *slot == u64::MAX {
                            *slot = keys.next_in(kind, stream, rng);
                        }
                        *slot
                    };
                    let at = out.len();
                    out.extend_from_slice(&[0u8; 12]);
                    write_12_digits(&mut out[at..], v);
                    last = v;
                }
                Piece::Value => self.write_value(out, last, &mut pending_len, keys, rng),
                Piece::Bulk(first, n) => {
                    let parts = &self.parts[first as usize..first as usize + n as usize];
                    last = self.write_bulk(out, parts, kind, keys, rng);
                }
                Piece::Cursor => {
                    let cursor = keys.scan.as_deref().map_or(&b"0"[..], |c| c.cursor());
                    crate::protocol::resp::push_bulk(out, cursor);
                }
                Piece::Expiry => self.write_expiry(out, last, &mut pending_len, keys, rng),
            }
        }
        kind
    }

    /// The variant of the next request: the only one, the SCAN iteration's step, memtier's order for
    /// this connection, the mix's cycle (`turn`), or a weighted draw.
    #[inline]
    fn choose_kind(&self, keys: &mut KeyGen, rng: &mut SmallRng, turn: &Cell<u64>) -> usize {
        if self.variants.len() == 1 {
            0
        } else if let Some(scan) = keys.scan.as_deref() {
            // memtier's SCAN iteration: `SCAN 0 ...` (0) starts it, `SCAN <cursor> ...` (1) goes on.
            usize::from(scan.continues())
        } else if !self.sequence.is_empty() {
            // memtier: this connection's own place in the commands' order.
            let t = keys.turn;
            keys.turn = t.wrapping_add(1);
            self.sequence[(t % self.sequence.len() as u64) as usize] as usize
        } else if !self.order.is_empty() {
            let t = turn.get();
            turn.set(t + 1);
            self.order[(t % self.order.len() as u64) as usize] as usize
        } else {
            let total = *self.cumulative.last().unwrap_or(&1);
            let r = bounded(rng.next_u64(), total);
            self.cumulative.iter().position(|&c| r < c).unwrap_or(0)
        }
    }

    /// A value's bulk string: the one `--data-verify` gives key `last`, else a slice of the pool of the
    /// size drawn before (`pending_len`), memtier's for `last`, or a uniform draw.
    #[inline]
    fn write_value(
        &self,
        out: &mut Vec<u8>,
        last: u64,
        pending_len: &mut Option<usize>,
        keys: &mut KeyGen,
        rng: &mut SmallRng,
    ) {
        if let Some(k) = &self.keyed {
            crate::protocol::resp::push_bulk(out, k.value(last));
            return;
        }
        let v = &self.value;
        let len = match (pending_len.take(), self.memtier.as_ref()) {
            (Some(len), _) => len,
            (None, Some(m)) => memtier_size(m, v, last, keys),
            (None, None) => v.min + bounded(rng.next_u64(), (v.max - v.min + 1) as u64) as usize,
        };
        let from = if v.random {
            bounded(rng.next_u64(), (self.pool.len() - len + 1) as u64) as usize
        } else {
            0
        };
        crate::protocol::resp::push_bulk(out, &self.pool[from..from + len]);
    }

    /// A TTL's bulk string (`--expiry-range`, or memtier's); with memtier the value size is drawn first,
    /// into `pending_len`.
    #[inline]
    fn write_expiry(
        &self,
        out: &mut Vec<u8>,
        last: u64,
        pending_len: &mut Option<usize>,
        keys: &mut KeyGen,
        rng: &mut SmallRng,
    ) {
        let e = self.expiry.unwrap_or(Expiry { min: 1, max: 1 });
        // memtier draws a SETEX's value size before its TTL.
        if let Some(m) = self.memtier.as_ref() {
            *pending_len = Some(memtier_size(m, &self.value, last, keys));
        }
        let ttl = match keys.memtier_range(e.min, e.max) {
            Some(t) => t,
            None => e.min + bounded(rng.next_u64(), e.max - e.min + 1),
        };
        let digits = ttl.checked_ilog10().unwrap_or(0) as u64 + 1;
        out.push(b'$');
        crate::protocol::resp::push_decimal(out, digits);
        out.extend_from_slice(b"\r\n");
        crate::protocol::resp::push_decimal(out, ttl);
        out.extend_from_slice(b"\r\n");
    }
}

/// An inline command (not a RESP array): one literal piece, nothing to fill.
fn inline_pieces(lit: &mut Vec<u8>, bytes: &[u8]) -> Vec<Piece> {
    let (mut pieces, mut open) = (Vec::new(), None);
    push_lit(lit, &mut open, bytes);
    close(lit, &mut pieces, &mut open);
    pieces
}

/// Appends `b` to the literal being built (starting one at the arena's end when none is open).
fn push_lit(lit: &mut Vec<u8>, open: &mut Option<u32>, b: &[u8]) {
    if open.is_none() {
        *open = Some(lit.len() as u32);
    }
    lit.extend_from_slice(b);
}

/// Ends the literal being built, if any, as a piece.
fn close(lit: &[u8], pieces: &mut Vec<Piece>, open: &mut Option<u32>) {
    if let Some(a) = open.take()
        && (a as usize) < lit.len()
    {
        pieces.push(Piece::Lit(a, lit.len() as u32));
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
/// `shared`, every `__rand_int__` of a request gets the same number; with `expiry`, a SET that sets no
/// expiry of its own ends with `EX <ttl>`.
fn compile(
    lit: &mut Vec<u8>,
    bytes: &[u8],
    randomize: bool,
    value: &ValueSpec,
    shared: bool,
    expiry: Option<Expiry>,
) -> Vec<Piece> {
    let mut pieces = Vec::new();
    // Start of the literal being built, if any: adjacent literal bytes become one piece.
    let mut open: Option<u32> = None;
    let Some(args) = split_resp_args(bytes) else {
        return inline_pieces(lit, bytes);
    };
    let ex = expiry.is_some() && takes_expiry(&args);
    let count = args.len() + if ex { 2 } else { 0 };
    push_lit(lit, &mut open, format!("*{count}\r\n").as_bytes());
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
    if ex {
        push_lit(lit, &mut open, b"$2\r\nEX\r\n");
        close(lit, &mut pieces, &mut open);
        pieces.push(Piece::Expiry);
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

mod memtier;
#[cfg(test)]
mod tests;

use memtier::{ArgPart, memtier_size};
pub use memtier::{EXPIRY, MemtierStyle, Sizes};
