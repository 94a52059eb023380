//! Whether a difference between two sides of a comparison is more than run-to-run noise: the change of
//! the median from side A to side B, with a 95% confidence interval from a bootstrap of both sides'
//! repetitions (each resample draws every side's runs with replacement and takes the medians' ratio),
//! and a verdict that says so in words. One run per side cannot tell noise from a change, and says so.

use crate::workload::keys::bounded;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The method, as the output names it.
pub const METHOD: &str = "bootstrap of the median, 10000 resamples";
const RESAMPLES: usize = 10_000;
/// The same data gives the same interval on every run.
const SEED: u64 = 0x5EED_C0DE;

/// A side's median, the change of B's median against A's, and the 95% interval of that change (both
/// in percent of A's median).
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    pub median_a: f64,
    pub median_b: f64,
    pub change_pct: f64,
    /// `None` when a side has fewer than two runs (noise cannot be judged).
    pub ci_pct: Option<(f64, f64)>,
}

/// The median of `v` (sorted in place); `v` is not empty.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Judges samples `a` and `b` (rps of each run, say); `None` when a side is empty or A's median is 0.
pub fn judge(a: &[f64], b: &[f64]) -> Option<Judged> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let median_a = median(&mut a.to_vec());
    let median_b = median(&mut b.to_vec());
    if median_a == 0.0 {
        return None;
    }
    let change_pct = (median_b / median_a - 1.0) * 100.0;
    if a.len() < 2 || b.len() < 2 {
        return Some(Judged {
            median_a,
            median_b,
            change_pct,
            ci_pct: None,
        });
    }
    let mut rng = SmallRng::seed_from_u64(SEED);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut changes = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        for x in ra.iter_mut() {
            *x = a[bounded(rng.next_u64(), a.len() as u64) as usize];
        }
        for x in rb.iter_mut() {
            *x = b[bounded(rng.next_u64(), b.len() as u64) as usize];
        }
        let ma = median(&mut ra);
        if ma != 0.0 {
            changes.push((median(&mut rb) / ma - 1.0) * 100.0);
        }
    }
    changes.sort_by(f64::total_cmp);
    let at = |q: f64| changes[((changes.len() - 1) as f64 * q).round() as usize];
    Some(Judged {
        median_a,
        median_b,
        change_pct,
        ci_pct: Some((at(0.025), at(0.975))),
    })
}

impl Judged {
    /// The verdict for a figure where more is better (`higher_is_better`, as rps) or worse (latency):
    /// "B is 12.0% faster (95% CI 8.1% to 16.3%)", "no significant difference (...)", or why it cannot
    /// say.
    pub fn verdict(&self, better: &str, worse: &str, higher_is_better: bool) -> String {
        let Some((lo, hi)) = self.ci_pct else {
            return format!(
                "{:+.1}%; one run per side: noise cannot be judged (repeat each side, e.g. -l or several files per side)",
                self.change_pct
            );
        };
        let ci = format!("95% CI {lo:+.1}% to {hi:+.1}%");
        if lo <= 0.0 && hi >= 0.0 {
            return format!("no significant difference ({:+.1}%, {ci})", self.change_pct);
        }
        let up = lo > 0.0;
        let word = if up == higher_is_better {
            better
        } else {
            worse
        };
        format!("B is {:.1}% {word} ({ci})", self.change_pct.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clear_change_is_significant_and_noise_is_not() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0];
        let b = [120.0, 118.0, 123.0, 121.0, 119.0];
        let j = judge(&a, &b).unwrap();
        assert_eq!(j.median_a, 100.0);
        assert_eq!(j.median_b, 120.0);
        let (lo, hi) = j.ci_pct.unwrap();
        assert!(
            lo > 10.0 && hi < 30.0 && lo <= 20.0 && hi >= 20.0,
            "{lo} {hi}"
        );
        let v = j.verdict("faster", "slower", true);
        assert!(v.starts_with("B is 20.0% faster (95% CI +"), "{v}");
        // Latency 20% higher is worse.
        assert!(
            j.verdict("lower", "higher", false)
                .starts_with("B is 20.0% higher")
        );

        // Overlapping runs: the interval spans 0.
        let b = [97.0, 103.0, 100.5, 99.5, 104.0];
        let v = judge(&a, &b).unwrap().verdict("faster", "slower", true);
        assert!(v.starts_with("no significant difference"), "{v}");

        // One run a side.
        let v = judge(&[100.0], &[150.0])
            .unwrap()
            .verdict("faster", "slower", true);
        assert!(v.contains("one run per side"), "{v}");
        assert!(judge(&[], &[1.0]).is_none());
        // The same data, the same interval.
        assert_eq!(judge(&a, &b), judge(&a, &b));
    }
}
