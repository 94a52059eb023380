//! `--cpus LIST`: which cores the executors are pinned to, checked against the cores this process may use.

use crate::config::error::UsageError;

/// The cores this process may run on (its affinity mask), in ascending order; empty when unknown.
pub fn usable_cores() -> Vec<usize> {
    core_affinity::get_core_ids()
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.id)
        .collect()
}

/// The highest core number accepted when the usable cores are unknown (Linux's most CPUs, 8192, minus one).
const MAX_CORE: usize = 8191;

/// Parses a list such as `2,3`, `0-1` or `0-3,6` into cores in the order written, and checks each is
/// in `usable`. A core named twice is a mistake (two executors would share it without saying so).
/// Every number is checked against the highest usable core before a range is expanded, so the list
/// never grows past the cores there are.
pub fn parse_cpus(list: &str, usable: &[usize]) -> Result<Vec<usize>, UsageError> {
    let bad = |why: &str| UsageError(format!("invalid value '{list}' for '--cpus': {why}"));
    let top = usable.iter().copied().max().unwrap_or(MAX_CORE);
    let not_usable = |c: &str| {
        if usable.is_empty() {
            bad(&format!(
                "core {c} is above the highest core number, {MAX_CORE}"
            ))
        } else {
            bad(&format!(
                "core {c} is not one this process may use ({})",
                describe(usable)
            ))
        }
    };
    let mut cores = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        let num = |t: &str| {
            let t = t.trim();
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                // Digits only: a number too long for usize is still a core past the last one.
                match t.parse::<usize>() {
                    Ok(c) if c <= top => Ok(c),
                    _ => Err(not_usable(t)),
                }
            } else {
                Err(bad("expected core numbers such as 2,3 or 0-1"))
            }
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(bad("a range must go upwards, as in 0-3"));
                }
                cores.extend(a..=b);
            }
            None => cores.push(num(part)?),
        }
        if cores.len() > top + 1 {
            // More cores than there are numbers up to the highest: one is named twice.
            break;
        }
    }
    let mut seen = std::collections::HashSet::new();
    for &c in &cores {
        if !seen.insert(c) {
            return Err(bad(&format!("core {c} is named twice")));
        }
        if !usable.is_empty() && !usable.contains(&c) {
            return Err(bad(&format!(
                "core {c} is not one this process may use ({})",
                describe(usable)
            )));
        }
    }
    Ok(cores)
}

/// `0-3,6` style text for a sorted core list.
pub fn describe(cores: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cores.len() {
        let mut j = i;
        while j + 1 < cores.len() && cores[j + 1] == cores[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cores[i].to_string()
        } else {
            format!("{}-{}", cores[i], cores[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges() {
        let usable = [0, 1, 2, 3, 6];
        assert_eq!(parse_cpus("2,3", &usable).unwrap(), [2, 3]);
        assert_eq!(parse_cpus("3,2", &usable).unwrap(), [3, 2]);
        assert_eq!(parse_cpus("0-1", &usable).unwrap(), [0, 1]);
        assert_eq!(parse_cpus("0-2,6", &usable).unwrap(), [0, 1, 2, 6]);
    }

    #[test]
    fn mistakes_name_the_flag() {
        let usable = [0, 1];
        for (list, want) in [
            ("5", "core 5 is not one this process may use (0-1)"),
            ("x", "expected core numbers"),
            ("", "expected core numbers"),
            ("1-0", "upwards"),
            ("1,1", "named twice"),
            ("0,,1", "expected core numbers"),
        ] {
            let e = parse_cpus(list, &usable).unwrap_err().0;
            assert!(
                e.starts_with(&format!("invalid value '{list}' for '--cpus'")),
                "{e}"
            );
            assert!(e.contains(want), "{list}: {e}");
        }
    }

    #[test]
    fn huge_numbers_are_refused_before_a_range_is_expanded() {
        let usable = [0, 1];
        for list in [
            "0-18446744073709551615",
            "0-18446744073709551616",
            "0-4294967296",
            "0-99999999999999999999999999",
            "4294967296",
            "1,2-3",
        ] {
            let e = parse_cpus(list, &usable).unwrap_err().0;
            assert!(
                e.starts_with(&format!("invalid value '{list}' for '--cpus'"))
                    && e.contains("is not one this process may use (0-1)"),
                "{e}"
            );
        }
        // Unknown usable cores: bounded by the most cores Linux has.
        let e = parse_cpus("0-18446744073709551615", &[]).unwrap_err().0;
        assert!(e.contains("above the highest core number, 8191"), "{e}");
        assert_eq!(parse_cpus("8190-8191", &[]).unwrap(), [8190, 8191]);
        // Ranges repeated past the number of cores stop growing: the repeat is named.
        let many = vec!["0-1"; 100_000].join(",");
        let e = parse_cpus(&many, &usable).unwrap_err().0;
        assert!(e.contains("core 0 is named twice"), "{e}");
        assert!(
            parse_cpus("+1", &usable)
                .unwrap_err()
                .0
                .contains("expected core numbers")
        );
    }

    #[test]
    fn describe_ranges() {
        assert_eq!(describe(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(describe(&[1]), "1");
    }
}
