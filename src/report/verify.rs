//! The `data verify:` lines of `--data-verify`'s read pass: keys checked, what was wrong, a few examples.

use crate::workload::verify::{VerifyCounts, key_name};

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
