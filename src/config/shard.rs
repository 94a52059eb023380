//! `--shard I/N` and `--shards N`: one of N client processes (hosts, pods) that together make one run.
//!
//! Each shard runs its exact share of the whole: `-n`, `--rps` and `-c` are split so the shares differ by at
//! most one and add up to the total, sequential keys walk the shard's own slice of `[0, -r)`, and the seed is
//! derived from the shard's index. A Kubernetes Indexed Job gives each pod its index in
//! `JOB_COMPLETION_INDEX`; `--shards N` reads it from there.

use crate::config::error::UsageError;
use serde::{Deserialize, Serialize};

/// The environment variable a Kubernetes Indexed Job sets to the pod's index.
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
/// Most shards a run may have.
pub const MAX_SHARDS: u64 = 100_000;

/// This process's place in a sharded run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 0-based.
    pub index: u64,
    pub count: u64,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

fn count_in_range(flag: &str, value: &str, n: &str) -> Result<u64, UsageError> {
    match n.trim().parse::<u64>() {
        Ok(c) if (1..=MAX_SHARDS).contains(&c) => Ok(c),
        _ => Err(UsageError(format!(
            "invalid value '{value}' for '{flag}': the number of shards must be from 1 to {MAX_SHARDS}"
        ))),
    }
}

impl Shard {
    /// Parses `I/N` (0 <= I < N).
    pub fn parse(value: &str) -> Result<Shard, UsageError> {
        let bad = |why: &str| UsageError(format!("invalid value '{value}' for '--shard': {why}"));
        let (i, n) = value
            .split_once('/')
            .ok_or_else(|| bad("write it as INDEX/COUNT, e.g. 0/3"))?;
        let count = count_in_range("--shard", value, n)?;
        let index: u64 = i
            .trim()
            .parse()
            .map_err(|_| bad("the index must be a number from 0"))?;
        if index >= count {
            return Err(bad(&format!(
                "the index must be below the count (0 to {})",
                count - 1
            )));
        }
        Ok(Shard { index, count })
    }

    /// The shard of `--shard` or `--shards` (with the index from `JOB_COMPLETION_INDEX`, given as `env_index`).
    pub fn from_flags(
        shard: Option<&str>,
        shards: Option<&str>,
        env_index: Option<&str>,
    ) -> Result<Option<Shard>, UsageError> {
        match (shard, shards) {
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(UsageError(
                "'--shard' and '--shards' cannot be used together: give one of them".into(),
            )),
            (Some(s), None) => Shard::parse(s).map(Some),
            (None, Some(n)) => {
                let count = count_in_range("--shards", n, n)?;
                let index = env_index.ok_or_else(|| {
                    UsageError(format!(
                        "'--shards {n}' reads this process's index from {INDEX_VAR}, which is not set: give --shard INDEX/{n} instead"
                    ))
                })?;
                match index.trim().parse::<u64>() {
                    Ok(i) if i < count => Ok(Some(Shard { index: i, count })),
                    _ => Err(UsageError(format!(
                        "invalid value '{index}' in {INDEX_VAR} for '--shards {n}': must be a number from 0 to {}",
                        count - 1
                    ))),
                }
            }
        }
    }

    /// This shard's share of `total`: shares differ by at most one, the lower indexes take the remainder.
    pub fn share(&self, total: u64) -> u64 {
        total / self.count + u64::from(self.index < total % self.count)
    }

    /// This shard's share of a rate: the whole part is split like [`Shard::share`], and the fraction goes
    /// to shard 0, so the shares add up to the rate exactly.
    pub fn share_rate(&self, rate: f64) -> f64 {
        let whole = rate.floor();
        let part = self.share(whole as u64) as f64;
        if self.index == 0 {
            part + (rate - whole)
        } else {
            part
        }
    }

    /// The first number of this shard's slice of `[0, range)` and the slice's length: slices tile the
    /// range and are as long as [`Shard::share`] of it, so with `-n` equal to `-r` each key is written once.
    /// (The key generator cuts the same slice from `Distribution::Sequential`'s part and parts.)
    pub fn slice(&self, range: u64) -> (u64, u64) {
        crate::workload::keys::share_slice(range, self.index, self.count)
    }

    /// A seed for this shard derived from the run's seed (SplitMix64 of the two), different per shard.
    pub fn seed(&self, seed: u64) -> u64 {
        let mut z = seed.wrapping_add(
            self.index
                .wrapping_add(1)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Checks that this shard gets at least one of `total` for `flag` (e.g. `-c 2` cannot feed 3 shards).
    pub fn nonzero_share(&self, flag: &str, total: u64) -> Result<u64, UsageError> {
        let s = self.share(total);
        if s == 0 {
            return Err(UsageError(format!(
                "invalid value '{total}' for '{flag}': {} shards need at least {} (shard {self} would get none)",
                self.count, self.count
            )));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(n: u64) -> impl Iterator<Item = Shard> {
        (0..n).map(move |index| Shard { index, count: n })
    }

    #[test]
    fn shares_add_up_for_odd_totals() {
        for (total, n) in [(1_000_001u64, 3u64), (7, 7), (10, 4), (50, 3), (1, 1)] {
            let shares: Vec<u64> = all(n).map(|s| s.share(total)).collect();
            assert_eq!(shares.iter().sum::<u64>(), total, "{total} over {n}");
            let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
            assert!(hi - lo <= 1, "{shares:?}");
        }
        let s: Vec<u64> = all(3).map(|s| s.share(1_000_001)).collect();
        assert_eq!(s, [333_334, 333_334, 333_333]);
        let r: Vec<f64> = all(3).map(|s| s.share_rate(1000.5)).collect();
        assert_eq!(r, [334.5, 333.0, 333.0]);
        assert_eq!(r.iter().sum::<f64>(), 1000.5);
    }

    #[test]
    fn slices_tile_the_range() {
        for (r, n) in [(1000u64, 3u64), (10, 4), (2, 3), (u64::MAX, 7)] {
            let mut next = 0u64;
            for s in all(n) {
                let (start, len) = s.slice(r);
                assert_eq!(start, next);
                next = start.wrapping_add(len);
            }
            assert_eq!(next, r);
        }
    }

    #[test]
    fn odd_slices_follow_the_request_shares() {
        for (total, n) in [
            (300_001u64, 3u64),
            (30_001, 3),
            (10, 4),
            (7, 7),
            (2, 3),
            (5, 1),
        ] {
            let mut next = 0;
            for s in all(n) {
                let (start, len) = s.slice(total);
                assert_eq!((start, len), (next, s.share(total)), "{s} of {total}");
                next += len;
            }
            assert_eq!(next, total);
        }
        let s: Vec<(u64, u64)> = all(3).map(|s| s.slice(300_001)).collect();
        assert_eq!(s, [(0, 100_001), (100_001, 100_000), (200_001, 100_000)]);
    }

    #[test]
    fn seeds_differ_per_shard_and_are_stable() {
        let seeds: Vec<u64> = all(4).map(|s| s.seed(42)).collect();
        let mut d = seeds.clone();
        d.sort();
        d.dedup();
        assert_eq!(d.len(), 4);
        assert_eq!(seeds, all(4).map(|s| s.seed(42)).collect::<Vec<_>>());
    }

    #[test]
    fn flags_parse_and_mistakes_name_the_flag() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        for (v, why) in [
            ("3/3", "below the count"),
            ("x/3", "index"),
            ("1/0", "from 1"),
            ("1", "INDEX/COUNT"),
        ] {
            let e = Shard::parse(v).unwrap_err().0;
            assert!(e.contains("'--shard'") && e.contains(why), "{e}");
        }
        let s = Shard::from_flags(None, Some("4"), Some("3")).unwrap();
        assert_eq!(s, Some(Shard { index: 3, count: 4 }));
        let e = Shard::from_flags(None, Some("4"), None).unwrap_err().0;
        assert!(e.contains(INDEX_VAR) && e.contains("'--shards 4'"), "{e}");
        let e = Shard::from_flags(None, Some("4"), Some("4")).unwrap_err().0;
        assert!(e.contains(INDEX_VAR) && e.contains("'4'"), "{e}");
        assert!(Shard::from_flags(Some("0/2"), Some("2"), None).is_err());
        let e = Shard { index: 2, count: 3 }
            .nonzero_share("-c", 2)
            .unwrap_err()
            .0;
        assert!(e.contains("'-c'") && e.contains("2/3"), "{e}");
    }
}
