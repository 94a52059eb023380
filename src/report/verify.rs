//! The `data verify:` lines of `--data-verify`'s read pass: keys checked, what was wrong, a few examples.

use crate::workload::verify::{Problem, VerifyCounts, key_name};
use serde::{Deserialize, Serialize};

/// The read pass's figures in a result file (`data_verify`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyEntry {
    pub checked: u64,
    pub verified: u64,
    pub mismatched: u64,
    pub missing: u64,
    pub errors: u64,
    /// The first few bad keys.
    pub examples: Vec<VerifyExample>,
}

/// One bad key: its name and `mismatched`, `missing` or `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyExample {
    pub key: String,
    pub problem: String,
}

impl VerifyEntry {
    pub fn of(c: &VerifyCounts) -> VerifyEntry {
        VerifyEntry {
            checked: c.checked,
            verified: c.verified(),
            mismatched: c.mismatched,
            missing: c.missing,
            errors: c.errors,
            examples: c
                .examples
                .iter()
                .map(|(k, p)| VerifyExample {
                    key: key_name(*k),
                    problem: p.word().to_string(),
                })
                .collect(),
        }
    }

    /// The figures again (a merge adds them up, its text report prints them); an example whose key
    /// or problem cannot be read back is left out.
    pub fn counts(&self) -> VerifyCounts {
        VerifyCounts {
            checked: self.checked,
            mismatched: self.mismatched,
            missing: self.missing,
            errors: self.errors,
            examples: self
                .examples
                .iter()
                .filter_map(|e| {
                    let n = e.key.strip_prefix("key:")?.parse().ok()?;
                    Some((n, Problem::from_word(&e.problem)?))
                })
                .collect(),
        }
    }
}

/// Adds up the entries of several shards' files (`None` when none has one).
pub fn merge_entries<'a>(entries: impl Iterator<Item = &'a VerifyEntry>) -> Option<VerifyEntry> {
    let mut total: Option<VerifyCounts> = None;
    for e in entries {
        total
            .get_or_insert_with(Default::default)
            .merge(&e.counts());
    }
    total.as_ref().map(VerifyEntry::of)
}

/// The block printed under the read pass's report (and, for a CSV run, on stderr).
pub fn verify_text(c: &VerifyCounts) -> String {
    let mut s = format!(
        "data verify: {} keys checked, {} verified, {} mismatched, {} missing, {} errors\n",
        c.checked,
        c.verified(),
        c.mismatched,
        c.missing,
        c.errors
    );
    for (key, problem) in &c.examples {
        s.push_str(&format!("  {} {}\n", key_name(*key), problem.word()));
    }
    if c.failed() > c.examples.len() as u64 {
        s.push_str(&format!(
            "  ... and {} more\n",
            c.failed() - c.examples.len() as u64
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::verify::Problem;

    #[test]
    fn entries_read_back_and_add_up() {
        let c = VerifyCounts {
            checked: 10,
            mismatched: 1,
            missing: 0,
            errors: 1,
            examples: vec![(3, Problem::Mismatched), (9, Problem::Error)],
        };
        let e = VerifyEntry::of(&c);
        assert_eq!(e.examples[0].key, "key:000000000003");
        assert_eq!(e.counts(), c);
        let m = merge_entries([&e, &e].into_iter()).unwrap();
        assert_eq!(
            (m.checked, m.verified, m.mismatched, m.errors),
            (20, 16, 2, 2)
        );
        assert!(merge_entries(std::iter::empty()).is_none());
    }

    #[test]
    fn names_the_examples() {
        let c = VerifyCounts {
            checked: 10,
            mismatched: 1,
            missing: 1,
            errors: 0,
            examples: vec![(3, Problem::Mismatched), (7, Problem::Missing)],
        };
        assert_eq!(
            verify_text(&c),
            "data verify: 10 keys checked, 8 verified, 1 mismatched, 1 missing, 0 errors\n  key:000000000003 mismatched\n  key:000000000007 missing\n"
        );
    }
}
