//! `ringbench compare BASE.json NEW.json ...`: a side-by-side table per test (rps, p50, p99, server CPU per
//! request) with each file's change in percent against the first, and whether each change is more than
//! noise (`report::significance`). `ringbench compare A1.json A2.json vs B1.json B2.json` compares two
//! sides of several runs each (a file's repeated tests, from `-l`, count as runs too).

use crate::report::printable::printable;
use crate::report::result_file::{RunFile, TestEntry};
use crate::report::significance::{self, Judged};
use std::fmt::Write;

/// One file of a comparison: its label (the path as given) and its content.
pub struct Loaded {
    pub label: String,
    pub file: RunFile,
}

/// Change of `new` against `base` in percent; `None` when the base is zero.
pub fn change_pct(base: f64, new: f64) -> Option<f64> {
    (base != 0.0).then(|| (new - base) / base * 100.0)
}

fn cell(value: Option<f64>, base: Option<f64>, decimals: usize, is_base: bool) -> String {
    match value {
        None => "-".into(),
        Some(v) => {
            let mut s = format!("{v:.decimals$}");
            if !is_base {
                match base.and_then(|b| change_pct(b, v)) {
                    Some(c) => {
                        let _ = write!(s, " ({c:+.1}%)");
                    }
                    None => s.push_str(" (n/a)"),
                }
            }
            s
        }
    }
}

/// The figures compared, per test entry.
fn figures(t: &TestEntry) -> [Option<f64>; 4] {
    [
        Some(t.rps),
        Some(t.latency_ms.p50),
        Some(t.latency_ms.p99),
        t.server.as_ref().and_then(|s| s.cpu_us_per_request),
    ]
}

/// The titles of every test in the files, in first-seen order.
pub fn test_titles(files: &[Loaded]) -> Vec<String> {
    let mut titles: Vec<String> = Vec::new();
    for f in files {
        for t in &f.file.tests {
            if !titles.contains(&t.title) {
                titles.push(t.title.clone());
            }
        }
    }
    titles
}

/// The comparison table as text.
pub fn table(files: &[Loaded]) -> String {
    const HEADS: [&str; 4] = ["rps", "p50 (ms)", "p99 (ms)", "srv CPU/req (us)"];
    const DECIMALS: [usize; 4] = [2, 3, 3, 3];
    let mut s = String::new();
    for title in test_titles(files) {
        let entries: Vec<Option<&TestEntry>> = files
            .iter()
            .map(|f| f.file.tests.iter().find(|t| t.title == title))
            .collect();
        let base = entries[0].map(figures).unwrap_or([None; 4]);
        let rows: Vec<Vec<String>> = files
            .iter()
            .zip(&entries)
            .enumerate()
            .map(|(i, (f, e))| {
                let vals = e.map(figures).unwrap_or([None; 4]);
                let mut row = vec![printable(&f.label).into_owned()];
                for k in 0..4 {
                    row.push(cell(vals[k], base[k], DECIMALS[k], i == 0));
                }
                row
            })
            .collect();
        let mut widths = [4usize, 0, 0, 0, 0];
        for k in 0..4 {
            widths[k + 1] = HEADS[k].len();
        }
        for r in &rows {
            for (k, c) in r.iter().enumerate() {
                widths[k] = widths[k].max(c.len());
            }
        }
        let _ = writeln!(s, "====== {} ======", printable(&title));
        let _ = write!(s, "{:<w$}", "file", w = widths[0]);
        for k in 0..4 {
            let _ = write!(s, "  {:>w$}", HEADS[k], w = widths[k + 1]);
        }
        s.push('\n');
        for r in &rows {
            let _ = write!(s, "{:<w$}", r[0], w = widths[0]);
            for k in 1..5 {
                let _ = write!(s, "  {:>w$}", r[k], w = widths[k]);
            }
            s.push('\n');
        }
        for f in &files[1..] {
            let _ = writeln!(
                s,
                "{} vs {}: {}",
                printable(&f.label),
                printable(&files[0].label),
                verdicts(
                    &runs(&files[..1], &title),
                    &runs(std::slice::from_ref(f), &title)
                )
            );
        }
        s.push('\n');
    }
    let _ = writeln!(s, "(significance: {})", significance::METHOD);
    s
}

/// Every run of test `title` in `files` (a file holds one per `-l` loop), as (rps, p50, p99).
fn runs(files: &[Loaded], title: &str) -> Vec<[f64; 3]> {
    files
        .iter()
        .flat_map(|f| f.file.tests.iter().filter(|t| t.title == title))
        .map(|t| [t.rps, t.latency_ms.p50, t.latency_ms.p99])
        .collect()
}

fn column(runs: &[[f64; 3]], k: usize) -> Vec<f64> {
    runs.iter().map(|r| r[k]).collect()
}

/// The verdicts on rps and p99 of runs `b` against runs `a`.
fn verdicts(a: &[[f64; 3]], b: &[[f64; 3]]) -> String {
    let rps = significance::judge(&column(a, 0), &column(b, 0));
    let p99 = significance::judge(&column(a, 2), &column(b, 2));
    let say = |j: Option<Judged>, better, worse, up| {
        j.map_or_else(|| "-".to_string(), |j| j.verdict(better, worse, up))
    };
    format!(
        "rps: {}; p99: {}",
        say(rps, "faster", "slower", true),
        say(p99, "lower", "higher", false)
    )
}

/// Two sides of several runs each: per test, each side's runs and medians, and whether B differs
/// from A beyond the noise of the runs.
pub fn sides(a: &[Loaded], b: &[Loaded]) -> String {
    let mut all: Vec<&Loaded> = a.iter().collect();
    all.extend(b);
    let mut titles: Vec<String> = Vec::new();
    for f in &all {
        for t in &f.file.tests {
            if !titles.contains(&t.title) {
                titles.push(t.title.clone());
            }
        }
    }
    let mut s = String::new();
    for title in titles {
        let (ra, rb) = (runs(a, &title), runs(b, &title));
        let _ = writeln!(s, "====== {} ======", printable(&title));
        let _ = writeln!(
            s,
            "{:<4}  {:>4}  {:>14}  {:>10}  {:>10}",
            "side", "runs", "rps (median)", "p50 (ms)", "p99 (ms)"
        );
        for (name, r) in [("A", &ra), ("B", &rb)] {
            let med = |k| significance::judge(&column(r, k), &column(r, k)).map(|j| j.median_a);
            let cell = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
            let _ = writeln!(
                s,
                "{name:<4}  {:>4}  {:>14}  {:>10}  {:>10}",
                r.len(),
                cell(med(0), 2),
                cell(med(1), 3),
                cell(med(2), 3)
            );
        }
        let _ = writeln!(s, "{}", verdicts(&ra, &rb));
        s.push('\n');
    }
    let _ = writeln!(s, "(significance: {})", significance::METHOD);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_relative_to_the_base() {
        assert_eq!(change_pct(100.0, 125.0), Some(25.0));
        assert_eq!(change_pct(0.0, 1.0), None);
        assert_eq!(cell(Some(125.0), Some(100.0), 2, false), "125.00 (+25.0%)");
        assert_eq!(cell(Some(0.5), Some(1.0), 3, false), "0.500 (-50.0%)");
        assert_eq!(cell(Some(1.0), Some(1.0), 3, true), "1.000");
        assert_eq!(cell(None, Some(1.0), 3, false), "-");
    }
}
