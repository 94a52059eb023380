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

/// Parses a list such as `2,3`, `0-1` or `0-3,6` into cores in the order written, and checks each is
/// in `usable`. A core named twice is a mistake (two executors would share it without saying so).
pub fn parse_cpus(list: &str, usable: &[usize]) -> Result<Vec<usize>, UsageError> {
    let bad = |why: &str| UsageError(format!("invalid value '{list}' for '--cpus': {why}"));
    let mut cores = Vec::new();
    for part in list.split(',') {
        let part = part.trim();
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| bad("expected core numbers such as 2,3 or 0-1"))
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
    fn describe_ranges() {
        assert_eq!(describe(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(describe(&[1]), "1");
    }
}
