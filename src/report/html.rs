//! `--report FILE.html` and `ringbench report FILE.json... -o FILE.html`: one self-contained page a
//! browser shows with no network fetch (styles inline, charts as inline SVG). For each result file: the
//! header (target, flags, client host, the client's cost), each test's table, its latency by
//! percentile, its per-second rate and p99, the server's side, the capacity knee when the file is a
//! capacity search, and what failed. Given several files, the comparison and its verdicts come first.

use crate::report::compare::{self, Loaded};
use crate::report::plot::{self, KneePoint, Series};
use crate::report::result_file::{ErrorCounts, RunFile, TestEntry};
use std::fmt::Write;

/// `s` with HTML's special characters escaped, and its control characters (but line breaks) as
/// `printable` writes them.
fn esc(s: &str) -> String {
    let s = crate::report::printable::printable_lines(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}\
h1{font-size:26px}h2{font-size:21px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:36px}\
h3{font-size:17px;margin-top:28px}table{border-collapse:collapse;margin:8px 0}\
td,th{border:1px solid #ccc;padding:3px 9px;text-align:right}th{background:#f2f2f2}\
td.l,th.l{text-align:left}pre{background:#f7f7f7;padding:10px;white-space:pre-wrap}\
.fail{color:#b00020;font-weight:bold}.ok{color:#1b7f2a}.chart svg{max-width:100%;height:auto}";

/// The page for `files` (their labels are the paths as given).
pub fn page(files: &[Loaded]) -> String {
    let mut s = String::new();
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        s,
        "<title>ringbench report</title><style>{STYLE}</style></head><body>\n<h1>ringbench report</h1>\n"
    );
    if files.len() > 1 {
        s.push_str("<h2>Comparison</h2>\n<pre>");
        s.push_str(&esc(&compare::table(files)));
        s.push_str("</pre>\n");
    }
    for f in files {
        file_section(&mut s, f);
    }
    s.push_str("</body></html>\n");
    s
}

fn row(s: &mut String, cells: &[String], head: bool) {
    let tag = if head { "th" } else { "td" };
    s.push_str("<tr>");
    for (i, c) in cells.iter().enumerate() {
        let class = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(s, "<{tag}{class}>{}</{tag}>", esc(c));
    }
    s.push_str("</tr>\n");
}

fn file_section(s: &mut String, f: &Loaded) {
    let file = &f.file;
    let c = &file.config;
    let _ = writeln!(s, "<h2>{}</h2>", esc(&f.label));
    s.push_str("<table>\n");
    let mut kv = |k: &str, v: String| row(s, &[k.to_string(), v], false);
    kv("target", c.target.clone());
    kv(
        "ringbench",
        format!("{} on {}", file.ringbench_version, file.client_host),
    );
    kv(
        "clients / pipeline / threads",
        format!("{} / {} / {}", c.clients, c.pipeline, c.threads),
    );
    kv("requests per test", c.requests.to_string());
    kv("payload", format!("{} bytes", c.data_size));
    kv("keyspace", c.keyspace.map_or("-".into(), |k| k.to_string()));
    kv("tests", c.tests.join(", "));
    if let Some(rps) = c.rps {
        kv("target rate", format!("{rps:.0} rps"));
    }
    if c.cluster {
        kv("cluster", "yes".into());
    }
    if file.stopped {
        kv("stopped", "yes: a signal ended the run early".into());
    }
    s.push_str("</table>\n");
    if let Some(cap) = &file.capacity {
        capacity_section(s, file, cap);
    }
    for t in &file.tests {
        test_section(s, t);
    }
}

/// One test: its table, the client's and the server's cost, what failed, and its two charts.
fn test_section(s: &mut String, t: &TestEntry) {
    let _ = writeln!(s, "<h3>{}</h3>", esc(&t.title));
    test_table(s, t);
    cost_paragraphs(s, t);
    failures_paragraph(s, &t.errors);
    test_charts(s, t);
}

/// The test's table: requests, rate, latency figures and failure counts.
fn test_table(s: &mut String, t: &TestEntry) {
    let l = &t.latency_ms;
    s.push_str("<table>\n");
    row(
        s,
        &[
            "requests",
            "rps",
            "avg ms",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "error replies",
            "failed",
            "not sent",
        ]
        .map(String::from),
        true,
    );
    let e = &t.errors;
    row(
        s,
        &[
            t.requests.to_string(),
            format!("{:.2}", t.rps),
            format!("{:.3}", l.avg),
            format!("{:.3}", l.p50),
            format!("{:.3}", l.p90),
            format!("{:.3}", l.p99),
            format!("{:.3}", l.p99_9),
            format!("{:.3}", l.max),
            e.replies.to_string(),
            e.failed.to_string(),
            e.not_sent.to_string(),
        ],
        false,
    );
    s.push_str("</table>\n");
}

/// The client's cost (its threads' CPU per request) and the server's (INFO before and after).
fn cost_paragraphs(s: &mut String, t: &TestEntry) {
    // The client's cost: its threads' CPU per request.
    let cpu: f64 = t.executors.iter().map(|x| x.cpu_user_s + x.cpu_sys_s).sum();
    if t.requests > 0 && cpu > 0.0 {
        let _ = writeln!(
            s,
            "<p>client: {:.0} ns CPU per request ({} executor{})</p>",
            cpu * 1e9 / t.requests as f64,
            t.executors.len(),
            if t.executors.len() == 1 { "" } else { "s" }
        );
    }
    if let Some(v) = &t.server {
        let per = v
            .cpu_us_per_request
            .map_or("no requests".to_string(), |us| {
                format!("{us:.3} usec per request")
            });
        let _ = writeln!(
            s,
            "<p>server (INFO before and after): {} commands processed, CPU {:.3} s, {}</p>",
            v.commands_processed,
            v.cpu_s(),
            esc(&per)
        );
    }
}

/// What failed (error replies by kind, failed, not sent, in flight, the first error), or that nothing did.
fn failures_paragraph(s: &mut String, e: &ErrorCounts) {
    if e.replies + e.failed + e.not_sent + e.in_flight > 0 {
        let mut what = Vec::new();
        if e.replies > 0 {
            let kinds: Vec<String> = e.by_kind.iter().map(|(k, v)| format!("{k} {v}")).collect();
            what.push(format!(
                "{} error replies ({})",
                e.replies,
                kinds.join(", ")
            ));
        }
        if e.failed > 0 {
            what.push(format!("{} failed", e.failed));
        }
        if e.not_sent > 0 {
            what.push(format!("{} not sent", e.not_sent));
        }
        if e.in_flight > 0 {
            what.push(format!("{} in flight when stopped", e.in_flight));
        }
        if let Some(first) = &e.first {
            what.push(format!("first: {first}"));
        }
        let _ = writeln!(
            s,
            "<p class=\"fail\">failures: {}</p>",
            esc(&what.join("; "))
        );
    } else {
        s.push_str("<p class=\"ok\">no failures</p>\n");
    }
}

/// The test's latency by percentile and its per-second rate and p99, as inline SVG.
fn test_charts(s: &mut String, t: &TestEntry) {
    let title = crate::report::printable::printable(&t.title);
    if let Ok(h) = t.histogram.decode() {
        let series = [Series::of(title.to_string(), &h)];
        if let Ok(svg) = plot::render(&format!("{title}: latency by percentile"), &series) {
            let _ = writeln!(s, "<div class=\"chart\">{svg}</div>");
        }
    }
    let seconds: Vec<(f64, f64, f64)> = t
        .per_second
        .iter()
        // A file's figures are not trusted to be what a run writes: a negative one would overflow the
        // chart's pixel arithmetic.
        .map(|e| (e.second as f64, e.rps.max(0.0), e.p99_ms.max(0.0)))
        .collect();
    if let Ok(svg) = plot::render_seconds(&format!("{title}: each second"), &seconds) {
        let _ = writeln!(s, "<div class=\"chart\">{svg}</div>");
    }
}

fn capacity_section(
    s: &mut String,
    file: &RunFile,
    cap: &crate::report::result_file::CapacityEntry,
) {
    s.push_str("<h3>capacity</h3>\n");
    let answer = match cap.capacity_rps {
        Some(rps) => format!("{rps:.0} rps within the objective"),
        None => "no step passed".to_string(),
    };
    let _ = writeln!(
        s,
        "<p><b>{}</b>{}</p>",
        esc(&answer),
        if cap.client_limited {
            " (client-limited)"
        } else {
            ""
        }
    );
    let objectives: Vec<(f64, f64)> = cap
        .objectives
        .iter()
        .map(|o| (o.percentile, o.max_ms.max(0.0001)))
        .collect();
    // The knee: each counted step's percentiles against its offered rate, one histogram decoded at a time.
    let points: Vec<KneePoint> = cap
        .steps
        .iter()
        .zip(&file.tests)
        .filter(|(step, _)| !step.repeated)
        .filter_map(|(step, t)| {
            let h = t.histogram.decode().ok()?;
            Some(KneePoint::of(
                step.offered_rps.max(0.0),
                step.pass,
                &h,
                &objectives,
            ))
        })
        .collect();
    if let Ok(svg) = plot::render_knee(
        "capacity: latency against offered load",
        &points,
        &objectives,
        cap.capacity_rps.map(|r| r.max(0.0)),
    ) {
        let _ = writeln!(s, "<div class=\"chart\">{svg}</div>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(esc("a\u{1b}[2J\u{7}\r\nb"), "a\\u{1b}[2J\\u{7}\\r\nb");
    }
}
