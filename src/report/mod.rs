//! Formats finished test results as text: the normal block, the `-q` line, CSV, and the live progress line.

pub(crate) mod compare;
pub(crate) mod encoded_histogram;
pub(crate) mod hdrlog;
mod histogram_check;
pub(crate) mod html;
pub(crate) mod memtier;
pub(crate) mod memtier_sink;
pub(crate) mod merge;
pub(crate) mod metrics;
pub(crate) mod per_second;
pub(crate) mod plot;
pub(crate) mod printable;
pub(crate) mod rate_report;
pub(crate) mod repeats;
pub(crate) mod result_file;
pub(crate) mod result_load;
pub(crate) mod results;
mod significance;
pub(crate) mod sink;
pub(crate) mod sinks;
pub(crate) mod utc;
pub(crate) mod verify;

use crate::stats::{TestResult, ns_to_ms};
use std::fmt::Write;

/// What the header of the normal block says about the run and the server.
#[derive(Debug, Clone, Default)]
pub struct Header {
    pub clients: usize,
    pub data_size: usize,
    /// `-d MIN-MAX`: the smallest value size (values are `data_size` bytes at most).
    pub data_min: Option<usize>,
    pub keepalive: bool,
    /// `CONFIG GET save`, when the server answered it.
    pub save: Option<String>,
    /// `CONFIG GET appendonly`, when the server answered it.
    pub appendonly: Option<String>,
    pub multi_thread: bool,
    /// Executors that ran (`--threads`, at most one per client).
    pub threads: usize,
    /// What the `threads:` line adds in brackets (fewer executors than asked, cores shared).
    pub threads_note: Option<String>,
    /// With TLS: which checks of the server's certificate ran.
    pub tls: Option<String>,
    /// `--cluster`: each master's configuration, in node order (replaces the host configuration lines).
    pub cluster_nodes: Option<Vec<crate::net::discovery::NodeConfig>>,
    /// `--expiry-range`: the TTL range of SETs, in seconds.
    pub expiry: Option<(u64, u64)>,
    /// `--replay`: what is replayed and how (replaces the payload line).
    pub replay: Option<String>,
}

/// The CSV header line (with its newline).
pub const CSV_HEADER: &str = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n";

/// One CSV row (with its newline); the title's quotes are doubled.
pub fn csv_row(r: &TestResult) -> String {
    csv_line(
        &r.title,
        [
            r.rps(),
            r.avg_ms(),
            r.min_ms(),
            r.quantile_ms(0.50),
            r.quantile_ms(0.95),
            r.quantile_ms(0.99),
            r.max_ms(),
        ],
    )
}

/// A CSV row of [`CSV_HEADER`]'s columns: the title (its quotes doubled), rps, then avg, min, p50,
/// p95, p99 and max in ms.
pub(crate) fn csv_line(title: &str, v: [f64; 7]) -> String {
    format!(
        "\"{}\",\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"\n",
        title.replace('"', "\"\""),
        v[0],
        v[1],
        v[2],
        v[3],
        v[4],
        v[5],
        v[6]
    )
}

/// The `-q` line (with its newline).
pub fn quiet_line(r: &TestResult) -> String {
    let mut s = format!(
        "{}: {:.2} requests per second, p50={:.3} msec",
        r.title,
        r.rps(),
        r.quantile_ms(0.50)
    );
    s.push_str(&crate::report::rate_report::quiet_suffix(r));
    append_failures(&mut s, r, ", ");
    if r.interrupted {
        s.push_str(" (interrupted)");
    }
    s.push('\n');
    s
}

fn append_failures(s: &mut String, r: &TestResult, sep: &str) {
    if r.stats.errors > 0 {
        let _ = write!(s, "{sep}{} error replies", r.stats.errors);
    }
    if r.stats.failed > 0 {
        let _ = write!(s, "{sep}{} failed", r.stats.failed);
    }
    if r.stats.not_sent > 0 {
        let _ = write!(s, "{sep}{} not sent", r.stats.not_sent);
    }
    if r.stats.in_flight > 0 {
        let _ = write!(s, "{sep}{} in flight when stopped", r.stats.in_flight);
    }
    if let Some(t) = timed_out(r) {
        let _ = write!(s, "{sep}{t}");
    }
    let redirects = redirect_counts(r);
    if !redirects.is_empty() {
        let _ = write!(s, "{sep}{redirects}");
    }
}

/// The live progress line, without its leading `\r`.
pub fn progress_line(
    title: &str,
    rps: f64,
    overall_rps: f64,
    avg_ms: f64,
    overall_avg_ms: f64,
) -> String {
    format!(
        "{title}: rps={rps:.1} (overall: {overall_rps:.1}) avg_msec={avg_ms:.3} (overall: {overall_avg_ms:.3})"
    )
}

/// The full per-test block.
pub fn normal_block(r: &TestResult, h: &Header) -> String {
    let mut s = String::new();
    header_lines(&mut s, r, h);
    s.push('\n');
    let total = r.stats.hist.len();
    if total > 0 {
        percentile_lines(&mut s, r);
        cumulative_lines(&mut s, r);
    }
    summary_lines(&mut s, r);
    if let Some(c) = &r.stats.cluster {
        s.push_str("  per node:\n");
        per_node_lines(&mut s, r, c);
        s.push_str(&failover_lines(c));
    }
    s.push_str(&crate::stats::cost::cost_lines(
        &r.stats.executors,
        r.stats.completed,
        r.stats.client_memory.as_ref(),
    ));
    s.push('\n');
    s
}

/// The block's head: the title, the run's shape (requests, clients, payload, keep-alive, rate, TLS),
/// the server's configuration and the threads.
fn header_lines(s: &mut String, r: &TestResult, h: &Header) {
    let _ = writeln!(s, "====== {} ======", r.title);
    let _ = writeln!(
        s,
        "  {} requests completed in {:.2} seconds",
        r.stats.completed, r.seconds
    );
    let _ = writeln!(s, "  {} parallel clients", h.clients);
    match h.data_min {
        _ if h.replay.is_some() => {
            let _ = writeln!(s, "  {}", h.replay.as_deref().unwrap_or_default());
        }
        Some(min) if min != h.data_size => {
            let _ = writeln!(s, "  {min}-{} bytes payload", h.data_size);
        }
        _ => {
            let _ = writeln!(s, "  {} bytes payload", h.data_size);
        }
    }
    if let Some((min, max)) = h.expiry {
        let _ = writeln!(s, "  SETs expire: EX {min}-{max} seconds (--expiry-range)");
    }
    let _ = writeln!(s, "  keep alive: {}", u8::from(h.keepalive));
    if let Some(t) = &r.rate {
        let _ = writeln!(
            s,
            "  open loop: target {:.2} rps; sends leave on a {} usec wake-up grid (latency from each intended send)",
            t.rps,
            crate::engine::QUANTUM.as_micros()
        );
    }
    if let Some(tls) = &h.tls {
        let _ = writeln!(s, "  TLS: {tls}");
    }
    server_config_lines(s, h);
    let _ = writeln!(
        s,
        "  multi-thread: {}",
        if h.multi_thread { "yes" } else { "no" }
    );
    if h.multi_thread {
        match &h.threads_note {
            Some(note) => {
                let _ = writeln!(s, "  threads: {} ({note})", h.threads);
            }
            None => {
                let _ = writeln!(s, "  threads: {}", h.threads);
            }
        }
    }
}

/// The server's `save` and `appendonly`: each master's with `--cluster`, else the host's.
fn server_config_lines(s: &mut String, h: &Header) {
    if let Some(nodes) = &h.cluster_nodes {
        let _ = writeln!(s, "  cluster mode: yes ({} masters)", nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            let _ = writeln!(s, "  node [{i}] configuration:");
            if let Some(save) = &n.save {
                let save = if save.is_empty() { "NONE" } else { save };
                let _ = writeln!(s, "    save: {save}");
            }
            if let Some(aof) = &n.appendonly {
                let _ = writeln!(s, "    appendonly: {aof}");
            }
        }
    } else {
        if let Some(save) = &h.save {
            let _ = writeln!(s, "  host configuration \"save\": {save}");
        }
        if let Some(aof) = &h.appendonly {
            let _ = writeln!(s, "  host configuration \"appendonly\": {aof}");
        }
    }
}

/// "Latency by percentile distribution": the minimum, then halving steps (50, 75, 87.5, ...) until
/// every request is covered, then the maximum. Called only when the histogram holds a value.
fn percentile_lines(s: &mut String, r: &TestResult) {
    let hist = &r.stats.hist;
    let total = hist.len();
    if r.stats.service.is_some() {
        s.push_str(
            "Latency by percentile distribution (from each request's intended send time):\n",
        );
    } else {
        s.push_str("Latency by percentile distribution:\n");
    }
    let line = |s: &mut String, pct: f64, ns: u64| {
        let count = hist.count_between(0, ns);
        let _ = writeln!(
            s,
            "{pct:.3}% <= {:.3} milliseconds (cumulative count {count})",
            ns_to_ms(ns)
        );
        count
    };
    line(s, 0.0, hist.min());
    // Halving steps: 50, 75, 87.5, ... until every request is covered.
    let mut pct = 50.0;
    loop {
        let ns = hist.value_at_percentile(pct);
        if line(s, pct, ns) >= total || pct >= 99.9999 {
            break;
        }
        pct += (100.0 - pct) / 2.0;
    }
    line(s, 100.0, hist.max());
    s.push('\n');
}

/// "Cumulative distribution of latencies": a line at each bound where the count changed. Called only
/// when the histogram holds a value.
fn cumulative_lines(s: &mut String, r: &TestResult) {
    let hist = &r.stats.hist;
    let total = hist.len();
    s.push_str("Cumulative distribution of latencies:\n");
    // 0.1 ms steps up to 2 ms, then 1 ms steps; a line where the count changed.
    let mut last = None;
    let mut bound_us: u64 = 100;
    loop {
        let ns = bound_us * 1000;
        let count = hist.count_between(0, ns).min(total);
        if last != Some(count) {
            let _ = writeln!(
                s,
                "{:.3}% <= {:.3} milliseconds (cumulative count {count})",
                count as f64 * 100.0 / total as f64,
                bound_us as f64 / 1000.0
            );
            last = Some(count);
        }
        if count >= total {
            break;
        }
        bound_us += if bound_us < 2000 { 100 } else { 1000 };
        // Past a second, jump to the bucket that holds the next recorded value.
        if bound_us > 1_000_000 {
            let next = hist.value_at_quantile((count + 1) as f64 / total as f64) / 1000;
            bound_us = bound_us.max(next.div_ceil(1000) * 1000);
        }
    }
    s.push('\n');
}

/// "Summary:": the throughput with the failures beside it, the latency table, the timeouts, the rate
/// lines, the first error reply and the requests that did not complete.
fn summary_lines(s: &mut String, r: &TestResult) {
    s.push_str("Summary:\n");
    let _ = write!(
        s,
        "  throughput summary: {:.2} requests per second",
        r.rps()
    );
    // Failures sit next to the rate, so that a reader of this line alone cannot miss them.
    append_failures(s, r, ", ");
    if r.interrupted {
        s.push_str(" (interrupted)");
    }
    s.push('\n');
    if r.stats.service.is_some() {
        s.push_str("  latency summary, from each request's intended send time (msec):\n");
    } else {
        s.push_str("  latency summary (msec):\n");
    }
    let _ = writeln!(
        s,
        "  {:>11} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "avg", "min", "p50", "p95", "p99", "max"
    );
    let _ = writeln!(
        s,
        "  {:>11.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
        r.avg_ms(),
        r.min_ms(),
        r.quantile_ms(0.50),
        r.quantile_ms(0.95),
        r.quantile_ms(0.99),
        r.max_ms()
    );
    if let Some(t) = timed_out(r) {
        let _ = writeln!(s, "  {t}");
    }
    s.push_str(&crate::report::rate_report::summary_lines(r));
    if r.stats.errors > 0 {
        let _ = writeln!(
            s,
            "  error replies: {} (first: {})",
            r.stats.errors,
            r.stats.first_error.as_deref().unwrap_or("")
        );
    }
    if r.stats.failed > 0
        || r.stats.not_sent > 0
        || r.stats.in_flight > 0
        || r.stats.completed < r.requested
    {
        let _ = write!(
            s,
            "  requests: {} requested, {} completed, {} failed (sent, no reply)",
            r.requested, r.stats.completed, r.stats.failed
        );
        if r.stats.not_sent > 0 {
            let _ = write!(s, ", {} not sent", r.stats.not_sent);
        }
        if r.stats.in_flight > 0 {
            let _ = write!(s, ", {} in flight when stopped", r.stats.in_flight);
        }
        if r.stats.late_unsent > 0 {
            let _ = write!(s, ", {} fell due and were never sent", r.stats.late_unsent);
        }
        s.push('\n');
    }
}

/// Under "per node:", each master's requests, rate, p50 and p99, then the redirects.
fn per_node_lines(s: &mut String, r: &TestResult, c: &crate::stats::cluster::ClusterStats) {
    // Executors meet the masters in different orders; print them in one stable order.
    let mut nodes: Vec<_> = c.nodes.iter().collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    for n in nodes {
        let rps = if r.seconds > 0.0 {
            n.completed as f64 / r.seconds
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "    {}: {} requests, {:.2} requests per second, p50={:.3} msec, p99={:.3} msec",
            n.name,
            n.completed,
            rps,
            ns_to_ms(n.hist.value_at_quantile(0.50)),
            ns_to_ms(n.hist.value_at_quantile(0.99))
        );
    }
    let redirects = redirect_counts(r);
    if !redirects.is_empty() {
        let _ = writeln!(s, "  redirects: {redirects}");
    }
}

/// `300 timed out at 500 ms`: requests failed by `--timeout`, shown beside the latency figures (their
/// wait is in no histogram).
fn timed_out(r: &TestResult) -> Option<String> {
    let ms = r.timeout_ms?;
    (r.stats.timed_out > 0).then(|| format!("{} timed out at {ms} ms", r.stats.timed_out))
}

/// Most seconds listed around a failover.
const FAILOVER_SECONDS: usize = 20;

/// Each master lost during a cluster test: when, who answered for its slots and how much later, and the
/// replies per second around it.
fn failover_lines(c: &crate::stats::cluster::ClusterStats) -> String {
    let mut s = String::new();
    for f in &c.failovers {
        let _ = write!(s, "  failover: {} lost at {:.2} s", f.node, f.lost_s);
        match (&f.new_master, f.recovery_s()) {
            (Some(m), Some(gap)) => {
                let _ = writeln!(
                    s,
                    "; {m} answered for its slots at {:.2} s ({gap:.2} s after the loss)",
                    f.answered_s.unwrap_or(0.0)
                );
            }
            _ => s.push_str("; no other node answered for its slots\n"),
        }
        let from = (f.lost_s as usize).saturating_sub(2);
        let until = f.answered_s.unwrap_or(f.lost_s) as usize + 3;
        let until = until.min(c.per_second.len()).min(from + FAILOVER_SECONDS);
        if from < until {
            let counts: Vec<String> = c.per_second[from..until]
                .iter()
                .map(u64::to_string)
                .collect();
            let _ = writeln!(
                s,
                "    requests per second from {from} s to {until} s: {}",
                counts.join(", ")
            );
        }
    }
    s
}

/// `12 MOVED, 3 ASK, 2 retried`: the nonzero redirect and retry counts of a cluster test.
fn redirect_counts(r: &TestResult) -> String {
    let Some(c) = &r.stats.cluster else {
        return String::new();
    };
    let mut parts = Vec::new();
    if c.moved > 0 {
        parts.push(format!("{} MOVED", c.moved));
    }
    if c.ask > 0 {
        parts.push(format!("{} ASK", c.ask));
    }
    if c.retries > 0 {
        parts.push(format!("{} retried", c.retries));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ShardStats;
    use std::time::{Duration, Instant};

    fn result() -> TestResult {
        let mut st = ShardStats::new(3);
        for v in [150_000u64, 300_000, 300_000, 450_000, 2_500_000] {
            st.hist.record(v).unwrap();
        }
        st.completed = 5;
        let t = Instant::now();
        st.start = Some(t);
        st.end = Some(t + Duration::from_millis(500));
        TestResult::new("SET".into(), 5, st)
    }

    #[test]
    fn csv_shape() {
        let row = csv_row(&result());
        let fields: Vec<&str> = row.trim_end().split(',').collect();
        assert_eq!(fields.len(), 8);
        assert!(
            fields
                .iter()
                .all(|f| f.starts_with('"') && f.ends_with('"'))
        );
        assert_eq!(fields[0], "\"SET\"");
        assert_eq!(fields[1], "\"10.00\"");
        assert_eq!(CSV_HEADER.trim_end().split(',').count(), 8);
    }

    #[test]
    fn quiet_shape() {
        let l = quiet_line(&result());
        assert!(
            l.starts_with("SET: 10.00 requests per second, p50=0.300 msec"),
            "{l}"
        );
    }

    #[test]
    fn normal_sections() {
        let h = Header {
            clients: 50,
            data_size: 3,
            data_min: None,
            keepalive: true,
            save: Some(String::new()),
            appendonly: Some("no".into()),
            multi_thread: true,
            threads: 2,
            threads_note: Some("sharing 1 cores".into()),
            tls: None,
            cluster_nodes: None,
            expiry: None,
            replay: None,
        };
        let b = normal_block(&result(), &h);
        for want in [
            "====== SET ======",
            "  5 requests completed in 0.50 seconds",
            "  50 parallel clients",
            "  3 bytes payload",
            "  keep alive: 1",
            "  host configuration \"appendonly\": no",
            "  multi-thread: yes",
            "  threads: 2 (sharing 1 cores)",
            "Latency by percentile distribution:",
            "Cumulative distribution of latencies:",
            "Summary:",
            "  throughput summary: 10.00 requests per second",
            "  latency summary (msec):",
        ] {
            assert!(b.contains(want), "missing {want:?} in\n{b}");
        }
        assert!(b.contains("100.000% <= 2.50"), "{b}");
        let cum: Vec<&str> = b
            .lines()
            .skip_while(|l| !l.starts_with("Cumulative"))
            .skip(1)
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(
            cum.last().unwrap().starts_with("100.000% <= 3.000"),
            "{cum:?}"
        );
    }

    #[test]
    fn timeouts_unsent_and_failovers_are_shown() {
        use crate::stats::cluster::{ClusterStats, Failover};
        let mut r = result();
        r.requested = 20;
        r.stats.failed = 4;
        r.stats.timed_out = 3;
        r.stats.not_sent = 11;
        r.timeout_ms = Some(500);
        r.stats.cluster = Some(ClusterStats {
            per_second: vec![10, 9, 1, 0, 0, 8, 10, 10, 10],
            failovers: vec![Failover {
                node: "127.0.0.1:7001".into(),
                lost_s: 2.25,
                new_master: Some("127.0.0.1:7004".into()),
                answered_s: Some(4.75),
            }],
            ..ClusterStats::default()
        });
        let b = normal_block(&r, &Header::default());
        for want in [
            "  3 timed out at 500 ms\n",
            "  requests: 20 requested, 5 completed, 4 failed (sent, no reply), 11 not sent\n",
            "  failover: 127.0.0.1:7001 lost at 2.25 s; 127.0.0.1:7004 answered for its slots at 4.75 s (2.50 s after the loss)\n",
            "    requests per second from 0 s to 7 s: 10, 9, 1, 0, 0, 8, 10\n",
        ] {
            assert!(b.contains(want), "missing {want:?} in\n{b}");
        }
        // Beside the latency figures: right under the summary row.
        let after = b.split("latency summary (msec):").nth(1).unwrap();
        assert_eq!(after.lines().nth(3), Some("  3 timed out at 500 ms"));
        let q = quiet_line(&r);
        assert!(
            q.contains(", 4 failed, 11 not sent, 3 timed out at 500 ms"),
            "{q}"
        );
    }

    #[test]
    fn cluster_header_and_per_node_lines() {
        use crate::net::discovery::NodeConfig;
        use crate::stats::cluster::ClusterStats;
        let h = Header {
            clients: 50,
            data_size: 3,
            keepalive: true,
            cluster_nodes: Some(vec![
                NodeConfig {
                    save: Some(String::new()),
                    appendonly: Some("no".into()),
                },
                NodeConfig::default(),
            ]),
            ..Header::default()
        };
        let mut r = result();
        let mut cs = ClusterStats::default();
        let n = cs.node_mut("127.0.0.1:7000", 3);
        n.completed = 5;
        n.hist.record(300_000).unwrap();
        cs.node_mut("127.0.0.1:7001", 3);
        cs.moved = 2;
        r.stats.cluster = Some(cs);
        let b = normal_block(&r, &h);
        for want in [
            "  cluster mode: yes (2 masters)\n  node [0] configuration:\n    save: NONE\n    appendonly: no\n  node [1] configuration:\n  multi-thread: no",
            "    127.0.0.1:7000: 5 requests, 10.00 requests per second, p50=0.300 msec, p99=0.300 msec",
            "    127.0.0.1:7001: 0 requests",
            "  redirects: 2 MOVED\n",
        ] {
            assert!(b.contains(want), "missing {want:?} in\n{b}");
        }
        assert!(!b.contains("host configuration"), "{b}");
        assert!(
            quiet_line(&r).ends_with(", 2 MOVED\n"),
            "{}",
            quiet_line(&r)
        );
    }
}
