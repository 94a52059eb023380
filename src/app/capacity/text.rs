//! The lines a search prints: a run's step line, the objectives, the answer (and why the client or the
//! connections were the limit), the notes after it (the checking done, why far below the probe) and the
//! spread of repeated searches (`median_index` picks their median).

use crate::app::capacity::args::Objective;
use crate::app::capacity::judge::{Verdict, off_cpu_cause};
use crate::app::capacity::numbers::{fmt_ms, thousands, trim_number};
use crate::app::capacity::search::{Answer, Judged, Searched};
use crate::stats::TestResult;
use std::fmt::Write as _;

/// The percentiles a step line shows: p50, p99, p99.9 and any other objective's.
fn shown_percentiles(objectives: &[Objective]) -> Vec<f64> {
    let mut ps = vec![50.0, 99.0, 99.9];
    for o in objectives {
        if !ps.contains(&o.percentile) {
            ps.push(o.percentile);
        }
    }
    ps.sort_by(f64::total_cmp);
    ps
}

/// One step's live line (with its newline).
pub(super) fn step_line(
    n: usize,
    offered: f64,
    r: &TestResult,
    v: &Verdict,
    objectives: &[Objective],
) -> String {
    let mut s = format!(
        "step {n:>2}: offered {:>11} rps  achieved {:>11} rps ",
        thousands(offered),
        thousands(r.rps())
    );
    for p in shown_percentiles(objectives) {
        let _ = write!(
            s,
            " p{} {} ms",
            trim_number(p, 4),
            fmt_ms(r.quantile_ms(p / 100.0))
        );
    }
    if v.pass {
        s.push_str("  pass");
        if v.borderline {
            s.push_str(" (borderline)");
        }
    } else {
        let _ = write!(s, "  FAIL: {}", v.reasons.join("; "));
        if v.starved {
            let _ = write!(
                s,
                " (client fell behind while off a CPU: executor on a CPU {:.0}% of the step, {} sent late with room)",
                v.busy * 100.0,
                r.stats.late_free
            );
        } else if v.client_limited {
            let _ = write!(
                s,
                " (client-limited: executor busy {:.0}%, {} sent late with room)",
                v.busy * 100.0,
                r.stats.late_free
            );
        }
        if let Some(why) = v.spoiled.as_ref().filter(|_| !v.starved) {
            let _ = write!(s, " (spoiled by the client's machine: {why})");
        }
    }
    s.push('\n');
    s
}

/// The objectives as text: `p99 <= 1 ms, p99.9 <= 5 ms`.
pub(super) fn objectives_text(objectives: &[Objective]) -> String {
    objectives
        .iter()
        .map(|o| format!("{} <= {} ms", o.label(), fmt_ms(o.max_ms)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The final answer's lines (each with its newline).
pub(super) fn answer_text(
    steps: &[Judged],
    answer: &Answer,
    objectives: &[Objective],
    to: f64,
    threads: usize,
    stopped: bool,
) -> String {
    let mut s = String::new();
    let slo = objectives_text(objectives);
    if stopped {
        s.push_str("search stopped before it converged; the answer so far:\n");
    }
    match (answer.capacity, answer.next) {
        (Some(p), Some(f)) => {
            let next = &steps[f];
            let _ = writeln!(
                s,
                "capacity: {} rps at {slo} (next step {} rps: {})",
                thousands(steps[p].offered),
                thousands(next.offered),
                next.verdict.reasons.join("; ")
            );
        }
        (Some(p), None) if stopped => {
            let _ = writeln!(
                s,
                "capacity: at least {} rps at {slo} (no step failed before the stop)",
                thousands(steps[p].offered)
            );
        }
        (Some(p), None) => {
            let _ = writeln!(
                s,
                "capacity: at least {} rps at {slo} (every step passed, up to --to {}; raise --to to search higher)",
                thousands(steps[p].offered),
                thousands(to)
            );
        }
        (None, Some(f)) => {
            let next = &steps[f];
            let _ = writeln!(
                s,
                "capacity: below {} rps at {slo} (no step passed; the lowest, {} rps: {})",
                thousands(next.offered),
                thousands(next.offered),
                next.verdict.reasons.join("; ")
            );
        }
        (None, None) => s.push_str("capacity: unknown (no step ran)\n"),
    }
    if let Some(f) = answer.next
        && steps[f].verdict.client_limited
    {
        let v = &steps[f].verdict;
        let late = v.late;
        let why = if v.starved {
            format!(
                "it fell behind its schedule ({late} requests sent late with room in the pipeline) while its \
                 executor was on a CPU only {:.0}% of the step: {}; give the executors idle cores with \
                 --cpus, more --threads, or a quieter machine",
                v.busy * 100.0,
                off_cpu_cause(v.machine.idle)
            )
        } else {
            format!(
                "an executor was busy {:.0}% of the step ({late} requests sent late with room in the \
                 pipeline); this is ringbench's ceiling with --threads {threads}: add --threads or give the \
                 executors more cores with --cpus",
                v.busy * 100.0
            )
        };
        let _ = writeln!(
            s,
            "client-limited: the client was the limit at {} rps, not the server: {why}; then search again",
            thousands(steps[f].offered)
        );
    }
    if let Some(f) = answer.next
        && let Some(w) = &steps[f].verdict.waited
    {
        let _ = writeln!(
            s,
            "in-flight limit: at {} rps {w}",
            thousands(steps[f].offered)
        );
    }
    s
}

/// The lines after a search's answer (each with its newline): how much checking it took, and, when the
/// answer is far below the closed-loop probe, why. `quiet` leaves the checking out.
pub(super) fn notes_text(s: &Searched, quiet: bool) -> String {
    let mut t = String::new();
    if !quiet {
        let disagreed = if s.noisy > 0 {
            format!(
                " ({} step{} whose runs disagreed: a third run decided)",
                s.noisy,
                if s.noisy == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            t,
            "checked: {} confirming run{}{disagreed}; {} run{} spoiled by the client, run again; {} runs in all",
            s.confirmations,
            if s.confirmations == 1 { "" } else { "s" },
            s.spoiled,
            if s.spoiled == 1 { "" } else { "s" },
            s.runs
        );
    }
    if let (Some(f), Some(p)) = (&s.far, &s.probe) {
        let cap = s.capacity().unwrap_or(0.0);
        let why = match f.why.as_str() {
            "client-limited" => "the client was the limit, not the server (see client-limited)".to_string(),
            "noisy" => format!(
                "noisy steps ({} run{} spoiled by the client, {} step{} whose runs disagreed): other work held \
                 the machine's cores; search again on a quieter machine, or quote the median of --repeat",
                s.spoiled,
                if s.spoiled == 1 { "" } else { "s" },
                s.noisy,
                if s.noisy == 1 { "" } else { "s" }
            ),
            "server-at-ease" => format!(
                "the server was at ease: the steps above failed on latency, confirmed, with the client \
                 keeping up and the server using {:.0}% of a core during the first of them, so not its load \
                 but a latency floor or stalls (the network's round trip, late wake-ups of the machine's \
                 CPUs, a pause of the server such as a fork); search again, or quote the median of --repeat",
                100.0 * s.next_server_busy().unwrap_or(0.0)
            ),
            _ => "the objective is out of reach on this machine above it: the steps above failed on \
                  latency, confirmed, with the client keeping up (the server, or stalls of a machine \
                  shared with other work)"
                .to_string(),
        };
        let _ = writeln!(
            t,
            "far below the closed loop: {} rps is {:.1}% of the probe's {} rps: {why}",
            thousands(cap),
            100.0 * f.share,
            thousands(p.rps)
        );
    }
    t
}

/// The index of the median of `values` (the lower middle one when their count is even).
pub(super) fn median_index(values: &[f64]) -> Option<usize> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    order.get(values.len().saturating_sub(1) / 2).copied()
}

/// The summary of several searches (with its newline).
pub(super) fn spread_text(answers: &[f64]) -> String {
    let Some(m) = median_index(answers) else {
        return String::new();
    };
    let min = answers.iter().copied().fold(f64::MAX, f64::min);
    let max = answers.iter().copied().fold(0.0, f64::max);
    let ratio = if min > 0.0 {
        format!("max/min {:.2}", max / min)
    } else {
        "max/min unbounded: a search had no passing step".to_string()
    };
    let all: Vec<String> = answers.iter().map(|a| thousands(*a)).collect();
    format!(
        "over {} searches: median {} rps, min {}, max {} ({ratio}); answers {}\n",
        answers.len(),
        thousands(answers[m]),
        thousands(min),
        thousands(max),
        all.join(" / ")
    )
}

#[cfg(test)]
mod tests {
    use super::{median_index, spread_text};

    #[test]
    fn repeated_searches_report_median_and_spread() {
        assert_eq!(median_index(&[3.0, 1.0, 2.0]), Some(2));
        assert_eq!(median_index(&[4.0, 1.0, 3.0, 2.0]), Some(3));
        assert_eq!(median_index(&[]), None);
        let t = spread_text(&[100_000.0, 120_000.0, 110_000.0]);
        assert_eq!(
            t,
            "over 3 searches: median 110,000 rps, min 100,000, max 120,000 (max/min 1.20); answers 100,000 / 120,000 / 110,000\n"
        );
        assert!(spread_text(&[0.0, 5.0]).contains("max/min unbounded"));
    }
}
