//! Report lines for open-loop runs (`--rps`) and mixes (`--mix`): both latencies named plainly, the achieved
//! rate next to the target, why a target was missed, and each mixed command's own figures.

use crate::config::shape::RateTarget;
use crate::stats::{PartStats, TestResult, ns_to_ms};
use hdrhistogram::Histogram;
use std::fmt::Write;

/// Below this share of the target, the report says the target was not reached.
const REACHED: f64 = 0.95;

fn summary_row(s: &mut String, h: &Histogram<u64>) {
    let q = |x: f64| ns_to_ms(h.value_at_quantile(x));
    let _ = writeln!(
        s,
        "  {:>11.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
        h.mean() / 1e6,
        ns_to_ms(h.min()),
        q(0.50),
        q(0.95),
        q(0.99),
        ns_to_ms(h.max())
    );
}

/// Why the target was missed, or `None` when it was reached.
pub fn shortfall(r: &TestResult, t: &RateTarget) -> Option<String> {
    let achieved = r.rps();
    if achieved >= REACHED * t.rps {
        return None;
    }
    let st = &r.stats;
    let mean_service_ms = st.service.as_ref().map_or(0.0, |h| h.mean() / 1e6);
    let needed = t.rps * mean_service_ms / 1000.0;
    let why = if stalled(r, t) {
        format!(
            "{} requests fell due and were never sent: {}",
            st.late_unsent,
            unsent_cause(r, t)
        )
    } else if st.late_full > 0 && st.late_full >= st.late_free {
        format!(
            "every connection already had -P requests waiting when more were due ({} sent late); at the \
             measured mean service time of {mean_service_ms:.3} ms the target needs about {needed:.0} requests \
             in flight and -c x -P allows {}: not enough connections or pipeline depth, or the server is \
             slower than the target (if service time grows as -c or -P grow, the server is the limit)",
            st.late_full, t.slots
        )
    } else if st.late_free > 0 {
        format!(
            "the client fell behind its schedule with room in the pipeline ({} sent late): its executors \
             are busy; try more --threads",
            st.late_free
        )
    } else if st.late_unsent > 0 {
        format!(
            "{} requests fell due and were never sent before the end: {}",
            st.late_unsent,
            unsent_cause(r, t)
        )
    } else if st.failed > 0 {
        format!("{} requests failed", st.failed)
    } else {
        "the run ended before the schedule was complete".to_string()
    };
    Some(format!(
        "target not reached: {achieved:.2} of {:.2} requests per second ({:.1}%): {why}",
        t.rps,
        100.0 * achieved / t.rps
    ))
}

/// Whether the run ended with every connection's pipeline full of requests the server had not
/// answered, so requests due after that could not be sent whatever the client did.
fn stalled(r: &TestResult, t: &RateTarget) -> bool {
    r.stats.late_unsent > 0 && r.stats.in_flight >= t.slots as u64
}

/// Why requests that fell due were never sent: the server stopped answering (every connection held
/// -P unanswered requests at the end), or the client was behind its schedule.
fn unsent_cause(r: &TestResult, t: &RateTarget) -> String {
    if stalled(r, t) {
        format!(
            "every connection had -P requests waiting for replies ({} in flight at the end): the server stopped answering",
            r.stats.in_flight
        )
    } else {
        "the client was behind its schedule".to_string()
    }
}

/// Lines added to the normal block's summary: service time, rate against target, per-command figures.
pub fn summary_lines(r: &TestResult) -> String {
    let mut s = String::new();
    if let Some((n, secs)) = r.warmup {
        let _ = writeln!(
            s,
            "  warmup: {n} requests in {secs:.2} seconds before the run (sent, not counted above)"
        );
    }
    if let Some(svc) = &r.stats.service {
        s.push_str("  service time, from each request's actual send (msec):\n");
        summary_row(&mut s, svc);
    }
    if let Some(t) = &r.rate {
        let _ = writeln!(
            s,
            "  rate: {:.2} requests per second achieved, target {:.2} ({:.1}%)",
            r.rps(),
            t.rps,
            100.0 * r.rps() / t.rps
        );
        if r.stats.late_full + r.stats.late_free > 0 {
            let _ = writeln!(
                s,
                "  late sends (over 1 ms after their intended time): {} with -P already waiting, {} with room",
                r.stats.late_full, r.stats.late_free
            );
        }
        if r.stats.late_unsent > 0 {
            let _ = writeln!(
                s,
                "  never sent: {} requests fell due before the end of --duration and were not sent ({})",
                r.stats.late_unsent,
                unsent_cause(r, t)
            );
        }
        if let Some(why) = shortfall(r, t) {
            let _ = writeln!(s, "  {why}");
        }
    }
    if !r.stats.parts.is_empty() {
        s.push_str("  per command (msec):\n");
        let width = r
            .stats
            .parts
            .iter()
            .map(|p| p.title.chars().count())
            .max()
            .unwrap_or(0)
            .max(12);
        let _ = writeln!(
            s,
            "  {:<width$} {:>10} {:>7} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
            "command", "requests", "share", "rps", "avg", "p50", "p95", "p99", "max", "errors"
        );
        let total = r.stats.completed.max(1) as f64;
        for p in &r.stats.parts {
            let h = &p.hist;
            let _ = writeln!(
                s,
                "  {:<width$} {:>10} {:>6.1}% {:>12.2} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>8}",
                p.title,
                p.completed,
                100.0 * p.completed as f64 / total,
                part_rps(r, p),
                h.mean() / 1e6,
                ns_to_ms(h.value_at_quantile(0.5)),
                ns_to_ms(h.value_at_quantile(0.95)),
                ns_to_ms(h.value_at_quantile(0.99)),
                ns_to_ms(h.max()),
                p.errors
            );
        }
    }
    s
}

/// A mixed command's replies per second over its test's time.
pub fn part_rps(r: &TestResult, p: &PartStats) -> f64 {
    if r.seconds > 0.0 {
        p.completed as f64 / r.seconds
    } else {
        0.0
    }
}

/// What follows the `-q` line's p50 in rate mode: the target and the service time's p50.
pub fn quiet_suffix(r: &TestResult) -> String {
    let mut s = String::new();
    if let Some(t) = &r.rate {
        let _ = write!(s, " (from intended send; target {:.2} rps", t.rps);
        if let Some(svc) = &r.stats.service {
            let _ = write!(
                s,
                ", service p50={:.3} msec",
                ns_to_ms(svc.value_at_quantile(0.5))
            );
        }
        s.push(')');
        if shortfall(r, t).is_some() {
            s.push_str(", target not reached");
        }
    }
    s
}

/// One `-q` line per mixed command (with newlines).
pub fn quiet_parts(r: &TestResult) -> String {
    let mut s = String::new();
    for p in &r.stats.parts {
        let _ = write!(
            s,
            "{} / {}: {:.2} requests per second, p50={:.3} msec",
            r.title,
            p.title,
            part_rps(r, p),
            ns_to_ms(p.hist.value_at_quantile(0.5))
        );
        if p.errors > 0 {
            let _ = write!(s, ", {} error replies", p.errors);
        }
        s.push('\n');
    }
    s
}

/// One CSV row per mixed command (with newlines), titled `MIX ... / COMMAND`.
pub fn csv_parts(r: &TestResult) -> String {
    let mut s = String::new();
    for p in &r.stats.parts {
        let h = &p.hist;
        let _ = writeln!(
            s,
            "\"{}\",\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"",
            format!("{} / {}", r.title, p.title).replace('"', "\"\""),
            part_rps(r, p),
            h.mean() / 1e6,
            ns_to_ms(h.min()),
            ns_to_ms(h.value_at_quantile(0.5)),
            ns_to_ms(h.value_at_quantile(0.95)),
            ns_to_ms(h.value_at_quantile(0.99)),
            ns_to_ms(h.max())
        );
    }
    s
}
