//! memtier_benchmark's keyspace, for its personality (`ringbench memtier`): key numbers in
//! `[--key-minimum, --key-maximum]` (both included), drawn per client (connection) by each command's
//! pattern letter: `R` uniform, `S` sequential from the minimum (one position per command, each client
//! its own), `P` parallel (each client walks its own slice of the range in order), `G` gaussian
//! (`--key-median`, `--key-stddev`, redrawn until inside the range) and `Z` zipf (`--key-zipf-exp`, the
//! lowest number the hottest). The numbers are written in decimal after `--key-prefix`, as memtier
//! names its keys (`memtier-6306`), by the composer.

use crate::workload::keys::bounded;
use rand::Rng;
use rand_distr::Distribution as _;

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
}

impl KeySpace {
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
    normal: Option<rand_distr::Normal<f64>>,
    zipf: Option<rand_distr::Zipf<f64>>,
    /// The zipf draw's lowest number: memtier's is at least 1.
    zipf_min: u64,
}

impl ClientKeys {
    /// Client `index`'s generator.
    pub fn new(space: &KeySpace, index: u64) -> ClientKeys {
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
            (len / 6.0).max(f64::MIN_POSITIVE)
        };
        let zipf_min = min.max(1);
        let zipf_max = max.max(zipf_min);
        ClientKeys {
            min,
            max,
            patterns: space.patterns.clone(),
            next: vec![min; space.patterns.len().max(1)],
            normal: space
                .patterns
                .contains(&Pattern::Gaussian)
                .then(|| rand_distr::Normal::new(median, stddev).ok())
                .flatten(),
            zipf: space
                .patterns
                .contains(&Pattern::Zipf)
                .then(|| {
                    rand_distr::Zipf::new((zipf_max - zipf_min + 1) as f64, space.zipf_exp).ok()
                })
                .flatten(),
            zipf_min,
        }
    }

    /// The next key number of command `command`.
    #[inline]
    pub fn next<R: Rng>(&mut self, command: usize, rng: &mut R) -> u64 {
        let pattern = self
            .patterns
            .get(command)
            .copied()
            .unwrap_or(Pattern::Random);
        match pattern {
            Pattern::Random => self.min + bounded(rng.next_u64(), self.max - self.min + 1),
            Pattern::Sequential | Pattern::Parallel => {
                let at = command.min(self.next.len() - 1);
                let k = self.next[at];
                self.next[at] = if k >= self.max { self.min } else { k + 1 };
                k
            }
            Pattern::Gaussian => match &self.normal {
                Some(n) if self.max > self.min => loop {
                    let v = n.sample(rng);
                    if v >= self.min as f64 && v <= self.max as f64 + 1.0 {
                        break (v as u64).min(self.max);
                    }
                },
                _ => self.min,
            },
            // Ranks 1..=n, rank 1 the most frequent: the lowest number.
            Pattern::Zipf => match &self.zipf {
                Some(z) => self.zipf_min + z.sample(rng) as u64 - 1,
                None => self.zipf_min,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn space(patterns: &[Pattern], min: u64, max: u64, clients: u64) -> KeySpace {
        KeySpace {
            min,
            max,
            patterns: patterns.to_vec(),
            stddev: 0.0,
            median: 0.0,
            zipf_exp: 1.0,
            clients,
        }
    }

    #[test]
    fn sequential_walks_the_whole_range_from_its_minimum_per_command() {
        let s = space(&[Pattern::Sequential, Pattern::Sequential], 1, 5, 4);
        let mut k = ClientKeys::new(&s, 3);
        let mut rng = SmallRng::seed_from_u64(1);
        let a: Vec<u64> = (0..7).map(|_| k.next(0, &mut rng)).collect();
        assert_eq!(a, [1, 2, 3, 4, 5, 1, 2]);
        assert_eq!(k.next(1, &mut rng), 1, "each command has its own position");
    }

    #[test]
    fn parallel_slices_cover_the_range_once() {
        let s = space(&[Pattern::Parallel], 1, 1000, 7);
        let mut seen = Vec::new();
        let mut rng = SmallRng::seed_from_u64(1);
        for c in 0..7 {
            let (lo, hi) = s.client_range(c);
            let mut k = ClientKeys::new(&s, c);
            seen.extend((lo..=hi).map(|_| k.next(0, &mut rng)));
        }
        seen.sort();
        assert_eq!(seen, (1..=1000).collect::<Vec<_>>());
    }

    #[test]
    fn draws_stay_in_the_range() {
        let mut rng = SmallRng::seed_from_u64(9);
        for p in [Pattern::Random, Pattern::Gaussian, Pattern::Zipf] {
            let s = space(&[p], 10, 20, 1);
            let mut k = ClientKeys::new(&s, 0);
            let v: Vec<u64> = (0..5000).map(|_| k.next(0, &mut rng)).collect();
            assert!(v.iter().all(|x| (10..=20).contains(x)), "{p:?}");
            assert!(v.contains(&10) && v.contains(&20) || p != Pattern::Random);
        }
        let s = space(&[Pattern::Zipf], 0, 100, 1);
        let mut k = ClientKeys::new(&s, 0);
        let ones = (0..10000).filter(|_| k.next(0, &mut rng) == 1).count();
        assert!(ones > 1000, "zipf's hottest key is the lowest: {ones}");
    }

    #[test]
    fn letters() {
        assert_eq!(Pattern::parse("P"), Some(Pattern::Parallel));
        assert_eq!(Pattern::parse("r"), None);
        assert_eq!(Pattern::parse("RS"), None);
    }
}
