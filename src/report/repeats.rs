//! `--run-count N`: each test's runs summed up once the last has run: the median, min and max of rps,
//! p50 and p99 with their spread, as a text block, as the `-q` and CSV lines (the median stands for the
//! runs there), and as the JSON's `repeats`.

use crate::stats::TestResult;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// A figure over the runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        let median = crate::report::significance::median(&mut v);
        Spread {
            median,
            min: v[0],
            max: v[v.len() - 1],
        }
    }

    /// (max - min) / median, in percent.
    pub fn spread_pct(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median * 100.0
        }
    }
}

/// One test's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Repeats {
    pub title: String,
    pub runs: usize,
    pub rps: Spread,
    pub avg_ms: Spread,
    pub min_ms: Spread,
    pub p50_ms: Spread,
    pub p95_ms: Spread,
    pub p99_ms: Spread,
    pub max_ms: Spread,
}

/// Each test's runs among `results`, in first-run order.
pub fn summarize(results: &[TestResult]) -> Vec<Repeats> {
    let mut titles: Vec<&str> = Vec::new();
    for r in results {
        if !titles.contains(&r.title.as_str()) {
            titles.push(&r.title);
        }
    }
    titles
        .into_iter()
        .map(|title| {
            let runs: Vec<&TestResult> = results.iter().filter(|r| r.title == title).collect();
            let of =
                |f: &dyn Fn(&TestResult) -> f64| Spread::of(runs.iter().map(|r| f(r)).collect());
            Repeats {
                title: title.to_string(),
                runs: runs.len(),
                rps: of(&|r| r.rps()),
                avg_ms: of(&|r| r.avg_ms()),
                min_ms: of(&|r| r.min_ms()),
                p50_ms: of(&|r| r.quantile_ms(0.50)),
                p95_ms: of(&|r| r.quantile_ms(0.95)),
                p99_ms: of(&|r| r.quantile_ms(0.99)),
                max_ms: of(&|r| r.max_ms()),
            }
        })
        .collect()
}

/// The summary block of the normal output (with a final blank line).
pub fn text(r: &Repeats) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "====== {}: {} runs ======", r.title, r.runs);
    let line = |s: &mut String, name: &str, x: &Spread, decimals: usize, unit: &str| {
        let _ = writeln!(
            s,
            "  {name}: median {:.decimals$}{unit}, min {:.decimals$}, max {:.decimals$} (spread {:.1}%)",
            x.median,
            x.min,
            x.max,
            x.spread_pct()
        );
    };
    line(&mut s, "requests per second", &r.rps, 2, "");
    line(&mut s, "p50", &r.p50_ms, 3, " msec");
    line(&mut s, "p99", &r.p99_ms, 3, " msec");
    s.push('\n');
    s
}

/// The `-q` line: the medians, and the range of rps over the runs.
pub fn quiet_line(r: &Repeats) -> String {
    format!(
        "{}: {:.2} requests per second, p50={:.3} msec (median of {} runs; rps {:.2} to {:.2})\n",
        r.title, r.rps.median, r.p50_ms.median, r.runs, r.rps.min, r.rps.max
    )
}

/// The CSV row: each column's median over the runs.
pub fn csv_row(r: &Repeats) -> String {
    crate::report::csv_line(
        &r.title,
        [
            r.rps.median,
            r.avg_ms.median,
            r.min_ms.median,
            r.p50_ms.median,
            r.p95_ms.median,
            r.p99_ms.median,
            r.max_ms.median,
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_is_the_range_over_the_median() {
        let s = Spread::of(vec![120.0, 100.0, 80.0]);
        assert_eq!((s.median, s.min, s.max), (100.0, 80.0, 120.0));
        assert_eq!(s.spread_pct(), 40.0);
        let s = Spread::of(vec![1.0, 3.0]);
        assert_eq!(s.median, 2.0);
    }
}
