//! memtier_benchmark's composer: its commands in its order on each connection, key numbers written in
//! decimal after `--key-prefix` (a [`Piece::Bulk`] argument, its length known once written), and value
//! sizes and TTLs drawn as memtier draws them.

use super::*;

/// A piece of a [`Piece::Bulk`] argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ArgPart {
    Lit(u32, u32),
    /// The next number of this group, in decimal.
    Num(u8),
}

/// How a composer's requests take their numbers and their order: ringbench's own (12-digit
/// placeholders, an executor's connections walking one mix cycle together), or memtier_benchmark's
/// (decimal key numbers from its keyspace, each connection sending the commands in their order).
#[derive(Debug, Clone, Default)]
pub struct MemtierStyle {
    /// The keyspace each connection draws from (its numbers already in `[min, max]`).
    pub keys: Option<std::sync::Arc<crate::workload::memtier_keys::KeySpace>>,
    /// Value sizes other than a uniform draw from the value spec's range.
    pub sizes: Option<Sizes>,
    /// `--scan-incremental-iteration`, with `--scan-incremental-max-iterations` (0: no limit): the
    /// one command is a SCAN whose cursor each connection follows (see
    /// [`crate::workload::scan_cursor`]).
    pub scan: Option<u64>,
}

/// memtier's value sizes beyond a uniform draw.
#[derive(Debug, Clone, PartialEq)]
pub enum Sizes {
    /// `--data-size-list SIZE:WEIGHT,...`: each size `weight` times in a row, in turn, on each
    /// connection.
    Cycle(Vec<(usize, u64)>),
    /// `--data-size-pattern S`: the size grows with the key number, from the range's minimum at
    /// `--key-minimum` to its maximum at `--key-maximum`.
    ByKey { key_min: u64, key_max: u64 },
}

impl Composer {
    /// memtier_benchmark's composer: `entries` in memtier's order (each weight is a ratio: the command
    /// is sent that many times in a row, then the next, by each connection on its own), their
    /// placeholders numbers of `style.keys` written in decimal, every whole `__data__` a value and
    /// `__expiry__` a TTL from `expiry`.
    pub fn memtier(
        entries: &[Entry<'_>],
        value: ValueSpec,
        expiry: Option<Expiry>,
        seed: u64,
        style: MemtierStyle,
    ) -> Composer {
        let mut c = Composer::new(&[], true, value, None, seed);
        c.expiry = expiry;
        let mut parts = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let pieces = compile_decimal(&mut c.lit, &mut parts, e.template.bytes());
            let max_len = max_len(&pieces, &parts, value);
            c.variants.push(Variant {
                title: e.title.clone(),
                command: e.command.clone(),
                pattern: None,
                pieces,
                max_len,
                key: match e.template.key_range() {
                    None => KeyAt::Absent,
                    Some(_) => KeyAt::Varies,
                },
            });
            let ratio = e.weight.min(MAX_ORDER) as usize;
            c.sequence
                .extend(std::iter::repeat_n(i as u16, ratio.max(1)));
            c.cumulative
                .push(c.cumulative.last().copied().unwrap_or(0) + e.weight);
        }
        if style.scan.is_some()
            && let Some(first) = entries.first()
        {
            c.push_scan_continuation(&mut parts, first.template.bytes(), value);
        }
        c.parts = parts;
        c.memtier = Some(style);
        c
    }

    /// memtier's `SCAN <cursor> ...`: the first entry's SCAN with its cursor argument (its second)
    /// the connection's cursor. Its figures are its own ("SCAN <cursor>" beside "SCAN 0"); it is sent
    /// only when a connection's cursor is not 0, never by the order of the commands.
    fn push_scan_continuation(&mut self, parts: &mut Vec<ArgPart>, scan: &[u8], value: ValueSpec) {
        let Some(args) = split_resp_args(scan) else {
            return;
        };
        let mut resp = format!("*{}\r\n", args.len()).into_bytes();
        for (i, a) in args.iter().enumerate() {
            let a: &[u8] = if i == 1 { SCAN_CURSOR } else { a };
            crate::protocol::resp::push_bulk(&mut resp, a);
        }
        let pieces = compile_decimal(&mut self.lit, parts, &resp);
        let max_len = max_len(&pieces, parts, value);
        if let Some(v) = self.variants.first_mut() {
            v.title = "SCAN 0".into();
            v.command = "SCAN 0".into();
        }
        self.variants.push(Variant {
            title: "SCAN <cursor>".into(),
            command: "SCAN <cursor>".into(),
            pattern: None,
            pieces,
            max_len,
            key: KeyAt::Absent,
        });
    }

    /// Whether each command's figures are kept apart: a mix, or memtier's test (its rows, even of one
    /// command).
    pub fn counts_each_command(&self) -> bool {
        self.variants.len() > 1 || self.memtier.is_some()
    }

    /// `--scan-incremental-iteration`: its limit of continuations (0: none).
    pub fn scan_iteration(&self) -> Option<u64> {
        self.memtier.as_ref().and_then(|m| m.scan)
    }

    /// memtier's keyspace, when this is its personality's composer.
    pub fn key_space(&self) -> Option<&std::sync::Arc<crate::workload::memtier_keys::KeySpace>> {
        self.memtier.as_ref().and_then(|m| m.keys.as_ref())
    }
}

impl Composer {
    /// Writes one [`Piece::Bulk`] argument: its numbers drawn first, so its length is known.
    #[inline]
    pub(super) fn write_bulk(
        &self,
        out: &mut Vec<u8>,
        parts: &[ArgPart],
        kind: usize,
        keys: &mut KeyGen,
        rng: &mut SmallRng,
    ) -> u64 {
        let mut nums = [0u64; 4];
        let mut len = 0usize;
        let mut k = 0;
        for p in parts {
            match *p {
                ArgPart::Lit(a, b) => len += (b - a) as usize,
                ArgPart::Num(g) => {
                    let v = keys.next_in(kind, g, rng);
                    if k < nums.len() {
                        nums[k] = v;
                    }
                    k += 1;
                    len += v.checked_ilog10().unwrap_or(0) as usize + 1;
                }
            }
        }
        out.push(b'$');
        crate::protocol::resp::push_decimal(out, len as u64);
        out.extend_from_slice(b"\r\n");
        let mut k = 0;
        for p in parts {
            match *p {
                ArgPart::Lit(a, b) => out.extend_from_slice(&self.lit[a as usize..b as usize]),
                ArgPart::Num(_) => {
                    crate::protocol::resp::push_decimal(out, nums[k.min(nums.len() - 1)]);
                    k += 1;
                }
            }
        }
        out.extend_from_slice(b"\r\n");
        nums[k.clamp(1, nums.len()) - 1]
    }
}

/// A value's length as memtier sizes it: fixed (no draw), drawn from the range by the client's
/// generator, the next of its size cycle, or the one the request's key number `key` gives.
pub(super) fn memtier_size(m: &MemtierStyle, v: &ValueSpec, key: u64, keys: &mut KeyGen) -> usize {
    let Some(sizes) = m.sizes.as_ref() else {
        if v.min == v.max {
            return v.min;
        }
        return keys
            .memtier_range(v.min.max(1) as u64, v.max as u64)
            .map_or(v.min, |n| n as usize);
    };
    match sizes {
        Sizes::Cycle(list) => {
            let total: u64 = list.iter().map(|(_, w)| w).sum();
            let mut t = keys.size_turn % total.max(1);
            keys.size_turn = keys.size_turn.wrapping_add(1);
            for &(size, w) in list {
                if t < w {
                    return size;
                }
                t -= w;
            }
            v.max
        }
        Sizes::ByKey { key_min, key_max } => {
            let span = key_max.saturating_sub(*key_min).max(1) as f64;
            let a = key.saturating_sub(*key_min) as f64 / span;
            (v.min + ((v.max - v.min) as f64 * a) as usize).clamp(v.min, v.max)
        }
    }
}

/// memtier's TTL placeholder (`SETEX __key__ __expiry__ __data__`): a TTL from `--expiry-range`.
pub const EXPIRY: &[u8] = b"__expiry__";

/// Compiles a RESP-encoded command for memtier's composer: a whole `__data__` is a value, a whole
/// `__expiry__` a TTL, and an argument with placeholders (at most 4) a [`Piece::Bulk`] of its
/// literal bytes and decimal numbers.
/// The longest request `pieces` write.
fn max_len(pieces: &[Piece], parts: &[ArgPart], value: ValueSpec) -> usize {
    pieces
        .iter()
        .map(|p| match *p {
            Piece::Lit(a, b) => (b - a) as usize,
            Piece::Rand(_) => RAND_INT.len(),
            Piece::Value => value.max + VALUE_FRAMING,
            Piece::Expiry | Piece::Cursor => VALUE_FRAMING,
            Piece::Bulk(first, n) => {
                VALUE_FRAMING
                    + parts[first as usize..first as usize + n as usize]
                        .iter()
                        .map(|p| match *p {
                            ArgPart::Lit(a, b) => (b - a) as usize,
                            ArgPart::Num(_) => 20,
                        })
                        .sum::<usize>()
            }
        })
        .sum()
}

/// The cursor argument of memtier's `SCAN <cursor>` ([`Piece::Cursor`]).
const SCAN_CURSOR: &[u8] = b"__scan_cursor__";

fn compile_decimal(lit: &mut Vec<u8>, parts: &mut Vec<ArgPart>, bytes: &[u8]) -> Vec<Piece> {
    let Some(args) = split_resp_args(bytes) else {
        return inline_pieces(lit, bytes);
    };
    let mut pieces = Vec::new();
    let mut open: Option<u32> = None;
    push_lit(lit, &mut open, format!("*{}\r\n", args.len()).as_bytes());
    for arg in args {
        if arg == DATA || arg == EXPIRY || arg == SCAN_CURSOR {
            close(lit, &mut pieces, &mut open);
            pieces.push(if arg == DATA {
                Piece::Value
            } else if arg == EXPIRY {
                Piece::Expiry
            } else {
                Piece::Cursor
            });
            continue;
        }
        let places: Vec<(usize, u8)> = memmem::find_iter(arg, b"__rand_")
            .filter_map(|i| rand_group(&arg[i..]).map(|g| (i, g)))
            .take(4)
            .collect();
        if places.is_empty() {
            push_lit(lit, &mut open, format!("${}\r\n", arg.len()).as_bytes());
            push_lit(lit, &mut open, arg);
            push_lit(lit, &mut open, b"\r\n");
            continue;
        }
        close(lit, &mut pieces, &mut open);
        let first = parts.len() as u32;
        let mut last = 0;
        for (i, g) in places {
            if i < last {
                continue;
            }
            if i > last {
                let a = lit.len() as u32;
                lit.extend_from_slice(&arg[last..i]);
                parts.push(ArgPart::Lit(a, lit.len() as u32));
            }
            parts.push(ArgPart::Num(g));
            last = i + RAND_INT.len();
        }
        if last < arg.len() {
            let a = lit.len() as u32;
            lit.extend_from_slice(&arg[last..]);
            parts.push(ArgPart::Lit(a, lit.len() as u32));
        }
        pieces.push(Piece::Bulk(first, (parts.len() as u32 - first) as u16));
    }
    close(lit, &mut pieces, &mut open);
    pieces
}
