//! memtier_benchmark's keyspace, for its personality (`ringbench memtier`): key numbers in
//! `[--key-minimum, --key-maximum]` (both included), drawn per client (connection) by each command's
//! pattern letter: `R` uniform, `S` sequential from the minimum (one position per command, each client
//! its own), `P` parallel (each client walks its own slice of the range in order), `G` gaussian
//! (`--key-median`, `--key-stddev`, redrawn until inside the range) and `Z` zipf (`--key-zipf-exp`, the
//! lowest number the hottest). The numbers are written in decimal after `--key-prefix`, as memtier
//! names its keys (`memtier-6306`), by the composer.
//!
//! Each client draws from its own generator of memtier's kind (glibc's `random_r` with a 63-word
//! state, two draws making one 62-bit number), seeded as memtier seeds its clients, and takes its
//! numbers, value sizes and TTLs from it in memtier's order: the same seed gives the same keys as
//! memtier_benchmark sends.

/// glibc's `random_r` as `initstate_r` sets it up with memtier's 512-byte state (its "TYPE_4": 63
/// words, the second tap one word ahead), seeded with `seed + 1` as memtier seeds a client.
#[derive(Debug, Clone)]
pub struct MemtierRandom {
    state: [i32; 63],
    front: usize,
    rear: usize,
}

impl MemtierRandom {
    /// The generator of a client whose seed is `seed` (memtier's 0 unless `--distinct-client-seed` or
    /// `--randomize`).
    pub fn new(seed: u32) -> MemtierRandom {
        let mut state = [0i32; 63];
        let mut word = seed.wrapping_add(1) as i32;
        if word == 0 {
            word = 1;
        }
        state[0] = word;
        for slot in state.iter_mut().skip(1) {
            // 16807 * word mod (2^31 - 1), without overflow (Schrage).
            let (hi, lo) = (i64::from(word) / 127_773, i64::from(word) % 127_773);
            let mut w = 16_807 * lo - 2_836 * hi;
            if w < 0 {
                w += 2_147_483_647;
            }
            word = w as i32;
            *slot = word;
        }
        let mut r = MemtierRandom {
            state,
            front: 1,
            rear: 0,
        };
        for _ in 0..630 {
            r.next31();
        }
        r
    }

    /// One `random_r` draw: 31 bits.
    #[inline]
    fn next31(&mut self) -> u64 {
        let v = (self.state[self.front] as u32).wrapping_add(self.state[self.rear] as u32);
        self.state[self.front] = v as i32;
        self.front = (self.front + 1) % 63;
        self.rear = (self.rear + 1) % 63;
        u64::from(v >> 1)
    }

    /// memtier's number: two draws, 62 bits.
    #[inline]
    pub fn next(&mut self) -> u64 {
        let hi = self.next31();
        (hi << 31) | self.next31()
    }

    /// A number in `[lo, hi]`, as memtier reduces it (a remainder).
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        let span = hi.wrapping_sub(lo).wrapping_add(1);
        if span == 0 {
            return self.next();
        }
        self.next() % span + lo
    }

    /// A draw in [0, 1], as memtier divides by its largest number.
    #[inline]
    fn unit(&mut self) -> f64 {
        self.next() as f64 / 0x3fff_ffff_ffff_ffffu64 as f64
    }
}

/// A pattern letter of `--key-pattern` or `--command-key-pattern`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Random,
    Sequential,
    Parallel,
    Gaussian,
    Zipf,
}

impl Pattern {
    /// `R`, `S`, `P`, `G` or `Z` (memtier takes upper case only).
    pub fn parse(letter: &str) -> Option<Pattern> {
        match letter {
            "R" => Some(Pattern::Random),
            "S" => Some(Pattern::Sequential),
            "P" => Some(Pattern::Parallel),
            "G" => Some(Pattern::Gaussian),
            "Z" => Some(Pattern::Zipf),
            _ => None,
        }
    }
}

/// The run's keyspace, shared by every client.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpace {
    pub min: u64,
    pub max: u64,
    /// Each command's pattern, in the test's command order.
    pub patterns: Vec<Pattern>,
    /// `--key-stddev` and `--key-median`; 0 for memtier's defaults (a sixth of the range, its middle).
    pub stddev: f64,
    pub median: f64,
    /// `--key-zipf-exp`.
    pub zipf_exp: f64,
    /// Clients in the whole run (`-t` x `-c`): `P` cuts the range into this many slices.
    pub clients: u64,
    /// The clients' seed: 0, or the clock's with `--randomize`.
    pub seed: u32,
    /// `--distinct-client-seed`: client `i` adds `i` to the seed.
    pub distinct: bool,
}

impl KeySpace {
    /// Client `index`'s seed, as memtier seeds it.
    pub fn client_seed(&self, index: u64) -> u32 {
        if self.distinct {
            self.seed.wrapping_add(index as u32)
        } else {
            self.seed
        }
    }

    /// Client `index`'s range: the whole one, or with `P` as the first command's pattern its slice
    /// (`(max - min) / clients + 1` numbers each, the last client taking what is left).
    pub fn client_range(&self, index: u64) -> (u64, u64) {
        if self.patterns.first() != Some(&Pattern::Parallel) {
            return (self.min, self.max);
        }
        let clients = self.clients.max(1);
        let index = index % clients;
        let span = (self.max - self.min) / clients + 1;
        let lo = self.min.saturating_add(span.saturating_mul(index));
        let hi = if index == clients - 1 {
            self.max
        } else {
            lo.saturating_add(span - 1)
        };
        (lo.min(self.max), hi.min(self.max))
    }
}

/// One client's key numbers.
#[derive(Debug, Clone)]
pub struct ClientKeys {
    min: u64,
    max: u64,
    patterns: Vec<Pattern>,
    /// Each command's next sequential number.
    next: Vec<u64>,
    random: MemtierRandom,
    median: f64,
    stddev: f64,
    /// The polar method's second number, kept for the next draw.
    spare: Option<f64>,
    zipf: Zipf,
}

/// memtier's zipf draw over `[min, max]` (rejection-inversion, Hörmann and Derflinger 1996): weights
/// `1 / k^exp`, so the lowest number is the most frequent.
#[derive(Debug, Clone, Copy)]
struct Zipf {
    min: f64,
    max: f64,
    exp: f64,
    h_min: f64,
    h_max: f64,
    s: f64,
}

impl Zipf {
    fn new(min: u64, max: u64, exp: f64) -> Zipf {
        let min = min.max(1) as f64;
        let max = (max as f64).max(min);
        let one = (exp - 1.0).abs() < 1e-4;
        let (h_min, h_max, t) = if one {
            (
                (min + 0.5).ln() - 1.0 / min,
                (max + 0.5).ln(),
                (min + 1.5).ln() - 1.0 / (min + 1.0),
            )
        } else {
            let q = 1.0 - exp;
            (
                (min + 0.5).powf(q) - q * min.powf(-exp),
                (max + 0.5).powf(q),
                (min + 1.5).powf(q) - q * (min + 1.0).powf(-exp),
            )
        };
        let s = if one {
            min + 1.0 - t.exp()
        } else {
            min + 1.0 - t.powf(1.0 / (1.0 - exp))
        };
        Zipf {
            min,
            max,
            exp,
            h_min,
            h_max,
            s,
        }
    }

    fn sample(&self, r: &mut MemtierRandom) -> u64 {
        let one = (self.exp - 1.0).abs() < 1e-4;
        loop {
            let u = r.unit() * (self.h_max - self.h_min) + self.h_min;
            let mut x = if one {
                u.exp()
            } else {
                u.powf(1.0 / (1.0 - self.exp))
            };
            if x < self.min - 0.5 {
                x = self.min + 0.5;
            }
            if x >= self.max + 0.5 {
                x = self.max;
            }
            let k = (x + 0.5).floor();
            if k - x <= self.s {
                return k as u64;
            }
            let accept = if one {
                u > (k + 0.5).ln() - 1.0 / k
            } else {
                (u - (k + 0.5).powf(1.0 - self.exp)) / (1.0 - self.exp) > -k.powf(-self.exp)
            };
            if accept {
                return k as u64;
            }
        }
    }
}

impl ClientKeys {
    /// Client `index`'s generator, its draws seeded with `seed` (memtier's client seed).
    pub fn new(space: &KeySpace, index: u64, seed: u32) -> ClientKeys {
        let (min, max) = space.client_range(index);
        let len = (max - min) as f64;
        let median = if space.median > 0.0 {
            space.median
        } else {
            len / 2.0 + min as f64 + 0.5
        };
        let stddev = if space.stddev > 0.0 {
            space.stddev
        } else {
            len / 6.0
        };
        ClientKeys {
            min,
            max,
            patterns: space.patterns.clone(),
            next: vec![min; space.patterns.len().max(1)],
            random: MemtierRandom::new(seed),
            median,
            stddev,
            spare: None,
            zipf: Zipf::new(min, max, space.zipf_exp),
        }
    }

    /// A number in `[lo, hi]` from this client's generator (value sizes, TTLs: memtier draws them
    /// after the key, from the same generator).
    #[inline]
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        self.random.range(lo, hi)
    }

    /// A normal draw around 0 with deviation `stddev` (the polar method, two at a time).
    fn gaussian(&mut self) -> f64 {
        if let Some(v) = self.spare.take() {
            return self.stddev * v;
        }
        loop {
            let u = self.random.unit() * 2.0 - 1.0;
            let v = self.random.unit() * 2.0 - 1.0;
            let s = u * u + v * v;
            if s < 1.0 && s != 0.0 {
                let f = (-2.0 * s.ln() / s).sqrt();
                self.spare = Some(v * f);
                return self.stddev * u * f;
            }
        }
    }

    /// The next key number of command `command`.
    #[inline]
    pub fn next(&mut self, command: usize) -> u64 {
        let pattern = self
            .patterns
            .get(command)
            .copied()
            .unwrap_or(Pattern::Random);
        match pattern {
            Pattern::Random => self.random.range(self.min, self.max),
            Pattern::Sequential | Pattern::Parallel => {
                let at = command.min(self.next.len() - 1);
                let k = self.next[at];
                self.next[at] = if k >= self.max { self.min } else { k + 1 };
                k
            }
            Pattern::Gaussian => {
                if self.min == self.max {
                    return self.min;
                }
                loop {
                    let v = self.gaussian() + self.median;
                    if v >= self.min as f64 && v <= self.max as f64 + 1.0 {
                        break v as u64;
                    }
                }
            }
            Pattern::Zipf => self.zipf.sample(&mut self.random),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_memtiers() {
        // memtier_benchmark's first keys over its default range, all of its clients alike (seed 0),
        // and a client seeded 5 (--distinct-client-seed): glibc random_r's sequence.
        let mut r = MemtierRandom::new(0);
        let keys: Vec<u64> = (0..8).map(|_| r.range(0, 10_000_000)).collect();
        assert_eq!(
            keys,
            [
                6263819, 1168204, 5586315, 3771236, 108564, 8141770, 1577859, 6918333
            ]
        );
        let mut r = MemtierRandom::new(5);
        assert_eq!(r.next(), 2133142592396018401);
        assert_eq!(r.range(0, 10_000_000), 3506550);
    }

    fn space(patterns: &[Pattern], min: u64, max: u64, clients: u64) -> KeySpace {
        KeySpace {
            min,
            max,
            patterns: patterns.to_vec(),
            stddev: 0.0,
            median: 0.0,
            zipf_exp: 1.0,
            clients,
            seed: 0,
            distinct: false,
        }
    }

    #[test]
    fn sequential_walks_the_whole_range_from_its_minimum_per_command() {
        let s = space(&[Pattern::Sequential, Pattern::Sequential], 1, 5, 4);
        let mut k = ClientKeys::new(&s, 3, 0);
        let a: Vec<u64> = (0..7).map(|_| k.next(0)).collect();
        assert_eq!(a, [1, 2, 3, 4, 5, 1, 2]);
        assert_eq!(k.next(1), 1, "each command has its own position");
    }

    #[test]
    fn parallel_slices_cover_the_range_once() {
        let s = space(&[Pattern::Parallel], 1, 1000, 7);
        let mut seen = Vec::new();
        for c in 0..7 {
            let (lo, hi) = s.client_range(c);
            let mut k = ClientKeys::new(&s, c, 0);
            seen.extend((lo..=hi).map(|_| k.next(0)));
        }
        seen.sort();
        assert_eq!(seen, (1..=1000).collect::<Vec<_>>());
    }

    #[test]
    fn draws_stay_in_the_range() {
        for p in [Pattern::Random, Pattern::Gaussian, Pattern::Zipf] {
            let s = space(&[p], 10, 20, 1);
            let mut k = ClientKeys::new(&s, 0, 9);
            let v: Vec<u64> = (0..5000).map(|_| k.next(0)).collect();
            assert!(v.iter().all(|x| (10..=20).contains(x)), "{p:?}");
            assert!(v.contains(&10) && v.contains(&20) || p != Pattern::Random);
        }
        let s = space(&[Pattern::Zipf], 0, 100, 1);
        let mut k = ClientKeys::new(&s, 0, 9);
        let ones = (0..10000).filter(|_| k.next(0) == 1).count();
        assert!(ones > 1000, "zipf's hottest key is the lowest: {ones}");
        let s = space(&[Pattern::Gaussian], 0, 10_000, 1);
        let mut k = ClientKeys::new(&s, 0, 9);
        let v: Vec<f64> = (0..20000).map(|_| k.next(0) as f64).collect();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        assert!(
            (mean - 5000.0).abs() < 60.0 && (sd - 1666.0).abs() < 60.0,
            "{mean} {sd}"
        );
    }

    #[test]
    fn letters() {
        assert_eq!(Pattern::parse("P"), Some(Pattern::Parallel));
        assert_eq!(Pattern::parse("r"), None);
        assert_eq!(Pattern::parse("RS"), None);
    }
}
