//! Key number distributions for `__rand_int__` and friends (`--distribution`): drawn without allocation.

use rand::Rng;
use rand_distr::Distribution as _;
use std::cell::Cell;
use std::rc::Rc;

/// Which numbers `__rand_int__` takes in `[0, r)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Every number equally likely (the default, as in redis-benchmark).
    Uniform,
    /// Each executor walks its own share of `[0, r)` in order, wrapping around when it is used up. With
    /// `--shard`, the process's executors share slice `part` of `parts` of the range (`0` of `1`: all of it).
    Sequential { part: u64, parts: u64 },
    /// Number `k` (0-based) has weight `1 / (k + 1)^exponent`: key 0 is the hottest.
    Zipf(f64),
    /// A normal distribution centred on `r / 2` with standard deviation `r / 6`, clamped to `[0, r)`.
    Gaussian,
}

/// Why a `--distribution` value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DistributionError {
    #[error("the zipf exponent '{0}' must be a number in (0, 10]")]
    ZipfExponent(String),
    #[error("must be uniform, sequential, zipf[:exponent] or gaussian")]
    Unknown,
}

impl Distribution {
    /// Parses `uniform`, `sequential`, `zipf`, `zipf:EXPONENT` or `gaussian`.
    pub fn parse(s: &str) -> Result<Distribution, DistributionError> {
        let lower = s.to_ascii_lowercase();
        match lower.as_str() {
            "uniform" => Ok(Distribution::Uniform),
            "sequential" => Ok(Distribution::Sequential { part: 0, parts: 1 }),
            "gaussian" => Ok(Distribution::Gaussian),
            "zipf" => Ok(Distribution::Zipf(1.0)),
            _ => match lower.strip_prefix("zipf:") {
                Some(e) => match e.parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 && x <= 10.0 => Ok(Distribution::Zipf(x)),
                    _ => Err(DistributionError::ZipfExponent(e.to_string())),
                },
                None => Err(DistributionError::Unknown),
            },
        }
    }
}

/// Maps 64 random bits into [0, range) without division.
#[inline]
/// The random seed of connection `conn` of executor `executor`: distinct per connection, and the
/// same for the same `--seed`.
pub fn connection_seed(seed: u64, executor: usize, conn: usize) -> u64 {
    seed.wrapping_add((executor as u64) << 32)
        .wrapping_add(conn as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

pub fn bounded(x: u64, range: u64) -> u64 {
    ((x as u128 * range as u128) >> 64) as u64
}

/// Part `part` of `parts` of `[0, len)`: its first number and length. Parts are cut as requests are
/// shared (`--shard`'s shares, the engine's per-executor split): each has `len / parts` numbers and the
/// lower parts one more each for the remainder, so a part with `k` requests walks `k` keys.
pub fn share_slice(len: u64, part: u64, parts: u64) -> (u64, u64) {
    let parts = parts.max(1);
    let (whole, extra) = (len / parts, len % parts);
    let start = part.saturating_mul(whole) + part.min(extra);
    (start, whole + u64::from(part < extra))
}

/// Part `part` of `parts` of `[base, base + len)` (see [`share_slice`]); the whole when it is empty.
fn slice(base: u64, len: u64, part: u64, parts: u64) -> (u64, u64) {
    match share_slice(len, part, parts) {
        (start, n) if n > 0 => (base + start, n),
        _ => (base, len),
    }
}

/// How many independent number streams each key source has: `__rand_int__` (0) and `__rand_1st__` ..
/// `__rand_9th__` (1 to 9), each with its own position in a sequential walk, as in valkey-benchmark.
pub const STREAMS: usize = 10;

/// The sequential positions of one executor, shared by its connections (cells on one thread, so
/// nothing is shared between executors): one per stream of the run's distribution, then one per
/// stream of each mixed command that has a key pattern of its own.
#[derive(Debug)]
pub struct Cursors(Vec<Cell<u64>>);

impl Cursors {
    /// Positions for a test of `variants` commands (1 for a test that is not a mix), all at 0.
    pub fn new(variants: usize) -> Rc<Cursors> {
        Rc::new(Cursors(
            (0..STREAMS * (1 + variants.max(1)))
                .map(|_| Cell::new(0))
                .collect(),
        ))
    }
}

/// How one key source draws its numbers.
#[derive(Debug, Clone)]
enum Draw {
    Uniform {
        range: u64,
    },
    Sequential {
        start: u64,
        len: u64,
    },
    Zipf(Zipf),
    Gaussian {
        range: u64,
        normal: rand_distr::Normal<f64>,
    },
}

impl Draw {
    fn new(dist: Distribution, range: u64, shard: usize, shards: usize) -> Draw {
        match dist {
            Distribution::Uniform => Draw::Uniform { range },
            Distribution::Sequential { part, parts } => {
                // The process's slice first (--shard), then this executor's slice of it. A slice that is
                // empty (more shards or executors than keys) is replaced by the whole range it was cut from.
                let (base, span) = slice(0, range, part, parts);
                let (start, len) = slice(base, span, shard as u64, shards as u64);
                Draw::Sequential { start, len }
            }
            Distribution::Zipf(e) => Draw::Zipf(Zipf::new(range, e)),
            Distribution::Gaussian => {
                let r = range as f64;
                Draw::Gaussian {
                    range,
                    normal: rand_distr::Normal::new(r / 2.0, r / 6.0)
                        .expect("a finite range has a finite standard deviation"),
                }
            }
        }
    }

    #[inline]
    fn next<R: Rng>(&mut self, cursor: &Cell<u64>, rng: &mut R) -> u64 {
        match self {
            Draw::Uniform { range } => bounded(rng.next_u64(), *range),
            Draw::Sequential { start, len } => {
                let c = cursor.get();
                cursor.set(if c + 1 >= *len { 0 } else { c + 1 });
                *start + c
            }
            Draw::Zipf(z) => z.sample(rng),
            Draw::Gaussian { range, normal } => {
                let x = normal.sample(rng);
                let r = *range as f64;
                if x <= 0.0 {
                    0
                } else if x >= r {
                    *range - 1
                } else {
                    x as u64
                }
            }
        }
    }
}

/// A connection's key generator: the run's distribution, and for each command of a mix that has a key
/// pattern of its own (`--command-key-pattern`) that pattern. Each of them has [`STREAMS`] streams; a
/// sequential stream's position is in the executor's [`Cursors`].
#[derive(Debug, Clone)]
pub struct KeyGen {
    cursors: Rc<Cursors>,
    main: Draw,
    /// Per command of the test: its own draw, or `None` for the run's.
    own: Vec<Option<Draw>>,
    /// memtier's personality: this connection's keys (then every number is drawn here).
    memtier: Option<Box<crate::workload::memtier_keys::ClientKeys>>,
    /// memtier's personality: this connection's place in its commands' order.
    pub turn: u64,
    /// memtier's `--data-size-list`: this connection's place in the sizes' cycle.
    pub size_turn: u64,
    /// memtier's `--scan-incremental-iteration`: this connection's SCAN cursor.
    pub scan: Option<Box<crate::workload::scan_cursor::ScanCursor>>,
}

impl KeyGen {
    /// A generator over `[0, range)` for executor `shard` of `shards`. Sequential executors share the
    /// positions created once per executor (`cursors`, made for `own.len()` commands), each over its
    /// own slice of the range. `own` holds each command's key pattern, if it has one.
    pub fn new(
        dist: Distribution,
        range: u64,
        shard: usize,
        shards: usize,
        cursors: &Rc<Cursors>,
        own: &[Option<Distribution>],
    ) -> KeyGen {
        let range = range.max(1);
        KeyGen {
            cursors: cursors.clone(),
            main: Draw::new(dist, range, shard, shards),
            own: own
                .iter()
                .map(|d| d.map(|d| Draw::new(d, range, shard, shards)))
                .collect(),
            memtier: None,
            turn: 0,
            size_turn: 0,
            scan: None,
        }
    }

    /// Draws every number from memtier's keyspace as client `client` of the run.
    pub fn with_memtier(
        mut self,
        space: &crate::workload::memtier_keys::KeySpace,
        client: u64,
    ) -> Self {
        self.memtier = Some(Box::new(crate::workload::memtier_keys::ClientKeys::new(
            space,
            client,
            space.client_seed(client),
        )));
        self
    }

    /// memtier's personality: a number in `[lo, hi]` from the client's generator (its value sizes and
    /// TTLs), `None` otherwise.
    #[inline]
    pub fn memtier_range(&mut self, lo: u64, hi: u64) -> Option<u64> {
        self.memtier.as_mut().map(|m| m.range(lo, hi))
    }

    /// The next number of `__rand_int__` in `[0, range)`, from the run's distribution.
    #[inline]
    pub fn next<R: Rng>(&mut self, rng: &mut R) -> u64 {
        self.main.next(&self.cursors.0[0], rng)
    }

    /// The next number of stream `group` (0: `__rand_int__`, 1..9: `__rand_1st__`..`__rand_9th__`) from
    /// the run's distribution (a test that is not a mix: the patched-in-place path).
    #[inline]
    pub fn next_group<R: Rng>(&mut self, group: u8, rng: &mut R) -> u64 {
        self.main
            .next(&self.cursors.0[group as usize % STREAMS], rng)
    }

    /// The next number of stream `group` (0: `__rand_int__`, 1..9: `__rand_1st__`..`__rand_9th__`) for
    /// command `command` of the test: from its own key pattern when it has one, else from the run's.
    #[inline]
    pub fn next_in<R: Rng>(&mut self, command: usize, group: u8, rng: &mut R) -> u64 {
        if let Some(m) = self.memtier.as_mut() {
            return m.next(command);
        }
        let g = group as usize % STREAMS;
        match self.own.get_mut(command) {
            Some(Some(d)) => {
                let at = STREAMS * (1 + command) + g;
                match self.cursors.0.get(at) {
                    Some(c) => d.next(c, rng),
                    None => d.next(&self.cursors.0[g], rng),
                }
            }
            _ => self.main.next(&self.cursors.0[g], rng),
        }
    }
}

/// Zipf sampling over `n` numbers (`rand_distr::Zipf`, by rejection-inversion: constant memory whatever
/// `n` is, and on average little more than one uniform draw per number), shifted to start at 0.
#[derive(Debug, Clone)]
pub struct Zipf(rand_distr::Zipf<f64>);

impl Zipf {
    /// `n` is at least 1 and `exponent` in (0, 10] (`Distribution::parse` and `KeyGen::new` see to it).
    pub fn new(n: u64, exponent: f64) -> Zipf {
        Zipf(
            rand_distr::Zipf::new(n.max(1) as f64, exponent)
                .expect("n >= 1 and a positive finite exponent make a Zipf distribution"),
        )
    }

    /// A number in `[0, n)`; 0 is the most frequent.
    #[inline]
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        // rand_distr draws ranks 1..=n as whole floats.
        self.0.sample(rng) as u64 - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    #[test]
    fn parse_names() {
        assert_eq!(Distribution::parse("uniform"), Ok(Distribution::Uniform));
        assert_eq!(Distribution::parse("ZIPF"), Ok(Distribution::Zipf(1.0)));
        assert_eq!(Distribution::parse("zipf:0.8"), Ok(Distribution::Zipf(0.8)));
        assert!(Distribution::parse("zipf:-1").is_err());
        assert!(Distribution::parse("pareto").is_err());
    }

    #[test]
    fn sequential_walks_each_share_once() {
        let seq = Distribution::Sequential { part: 0, parts: 1 };
        let mut a = KeyGen::new(seq, 10, 0, 2, &Cursors::new(1), &[]);
        let mut b = KeyGen::new(seq, 10, 1, 2, &Cursors::new(1), &[]);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut seen: Vec<u64> = (0..5).map(|_| a.next(&mut rng)).collect();
        seen.extend((0..5).map(|_| b.next(&mut rng)));
        seen.sort();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert_eq!(a.next(&mut rng), 0, "wraps around");
    }

    #[test]
    fn sequential_shards_split_the_range_then_executors_split_the_shard() {
        // 3 processes (--shard i/3) of 2 executors each over 1000 keys: every key once, no overlap.
        let mut rng = SmallRng::seed_from_u64(1);
        let mut seen = Vec::new();
        for part in 0..3 {
            for exec in 0..2 {
                let mut k = KeyGen::new(
                    Distribution::Sequential { part, parts: 3 },
                    1000,
                    exec,
                    2,
                    &Cursors::new(1),
                    &[],
                );
                let Draw::Sequential { len, .. } = &k.main else {
                    panic!("sequential")
                };
                let len = *len;
                seen.extend((0..len).map(|_| k.next(&mut rng)));
            }
        }
        seen.sort();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        // More shards than keys: a shard with an empty slice (shard 2 of 3 over 2 keys) walks the whole range.
        let seq = Distribution::Sequential { part: 2, parts: 3 };
        let k = KeyGen::new(seq, 2, 0, 1, &Cursors::new(1), &[]);
        assert!(matches!(
            k.main,
            Draw::Sequential {
                start: 0,
                len: 2,
                ..
            }
        ));
    }

    #[test]
    fn odd_ranges_are_sliced_like_the_requests() {
        // -n 300001 -r 300001 on 3 shards: shard 0 sends 100,001 requests, so it walks 100,001 keys.
        let slices: Vec<(u64, u64)> = (0..3).map(|p| share_slice(300_001, p, 3)).collect();
        assert_eq!(
            slices,
            [(0, 100_001), (100_001, 100_000), (200_001, 100_000)]
        );
        for (len, parts) in [(10u64, 4u64), (7, 7), (2, 3), (1_000_001, 6), (u64::MAX, 7)] {
            let mut next = 0u64;
            for p in 0..parts {
                let (start, n) = share_slice(len, p, parts);
                assert_eq!(start, next, "{len} over {parts}");
                assert_eq!(n, len / parts + u64::from(p < len % parts));
                next = start.wrapping_add(n);
            }
            assert_eq!(next, len);
        }
        // 3 shards of 2 executors, -n and -r 30001: each executor walks as many keys as it sends
        // requests (30001 over 3, then over 2), and together they cover every key once.
        let mut rng = SmallRng::seed_from_u64(1);
        let mut seen = Vec::new();
        for part in 0..3 {
            let shard_requests = 30_001 / 3 + u64::from(part < 30_001 % 3);
            for exec in 0..2u64 {
                let sent = shard_requests / 2 + u64::from(exec < shard_requests % 2);
                let seq = Distribution::Sequential { part, parts: 3 };
                let mut k = KeyGen::new(seq, 30_001, exec as usize, 2, &Cursors::new(1), &[]);
                seen.extend((0..sent).map(|_| k.next(&mut rng)));
            }
        }
        seen.sort();
        assert_eq!(seen, (0..30_001).collect::<Vec<_>>());
    }

    #[test]
    fn streams_and_commands_walk_on_their_own() {
        // valkey-benchmark: __rand_int__ and __rand_1st__ are separate sequences; a mixed command with a
        // pattern of its own (memtier's --command-key-pattern S) has its own too.
        let seq = Distribution::Sequential { part: 0, parts: 1 };
        let cursors = Cursors::new(2);
        let mut k = KeyGen::new(seq, 50, 0, 1, &cursors, &[None, Some(seq)]);
        let mut other = KeyGen::new(seq, 50, 0, 1, &cursors, &[None, Some(seq)]);
        let mut rng = SmallRng::seed_from_u64(1);
        let int: Vec<u64> = (0..3).map(|_| k.next_in(0, 0, &mut rng)).collect();
        let first: Vec<u64> = (0..3).map(|_| k.next_in(0, 1, &mut rng)).collect();
        assert_eq!((int, first), (vec![0, 1, 2], vec![0, 1, 2]));
        // Command 1 has its own streams; a second connection of the executor continues them.
        assert_eq!(k.next_in(1, 0, &mut rng), 0);
        assert_eq!(other.next_in(1, 0, &mut rng), 1);
        assert_eq!(other.next(&mut rng), 3, "the run's stream 0 is shared too");
    }

    #[test]
    fn zipf_matches_its_weights() {
        // With exponent 1 over 100 numbers, P(0) = 1 / H_100 ~ 0.193 and P(1) = P(0) / 2.
        let z = Zipf::new(100, 1.0);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = [0u64; 100];
        let n = 200_000;
        for _ in 0..n {
            counts[z.sample(&mut rng) as usize] += 1;
        }
        let h100: f64 = (1..=100).map(|k| 1.0 / k as f64).sum();
        let p0 = counts[0] as f64 / n as f64;
        assert!((p0 - 1.0 / h100).abs() < 0.01, "p0 {p0}");
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((ratio - 2.0).abs() < 0.1, "ratio {ratio}");
        let z = Zipf::new(1000, 0.5);
        assert!((0..10_000).all(|_| z.sample(&mut rng) < 1000));
    }

    #[test]
    fn gaussian_centres_and_stays_in_range() {
        let mut g = KeyGen::new(Distribution::Gaussian, 1000, 0, 1, &Cursors::new(1), &[]);
        let mut rng = SmallRng::seed_from_u64(3);
        let v: Vec<u64> = (0..50_000).map(|_| g.next(&mut rng)).collect();
        assert!(v.iter().all(|&x| x < 1000));
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        assert!((mean - 500.0).abs() < 5.0, "mean {mean}");
        let within = v.iter().filter(|&&x| (333..667).contains(&x)).count() as f64;
        assert!((within / v.len() as f64 - 0.6827).abs() < 0.02);
    }
}
