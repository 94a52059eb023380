//! memtier's `--json-out-file` document, written as memtier's `json_handler` writes it: its key order,
//! a tab per level, a comma leading each next item, numbers in memtier's formats, repeated keys kept
//! (two "Sets" rows with `--command-stats-breakdown=line`).

use crate::report::memtier::hist::{
    compressed, mean_us, percentile_steps, step_figures, value_at_percentile,
};
use crate::report::memtier::view::{MemtierView, Options, Row, RunInfo, Second, sections};
use hdrhistogram::Histogram;

/// memtier's JSON writer (its `json_handler`): a tab per level, each item on its own line, a comma
/// leading the next item; numbers as memtier formats them, NaN as null.
struct JsonText {
    out: String,
    depth: usize,
}

impl JsonText {
    fn newline(&mut self) {
        self.out.push('\n');
        self.out.extend(std::iter::repeat_n('\t', self.depth));
    }

    fn key(&mut self, key: Option<&str>) {
        if let Some(k) = key {
            self.out
                .push_str(&serde_json::to_string(k).unwrap_or_default());
            self.out.push(':');
        }
    }

    /// Opens an object (`{`) or an array (`[`), named or not.
    fn open(&mut self, key: Option<&str>, bracket: char) {
        self.key(key);
        self.out.push(bracket);
        self.depth += 1;
        self.newline();
    }

    /// Closes what [`Self::open`] opened: memtier seeks back over the last comma (or the last tab
    /// of an empty nesting).
    fn close(&mut self, bracket: char) {
        self.out.pop();
        self.out.push(bracket);
        self.depth -= 1;
        self.newline();
        if self.depth > 0 {
            self.out.push(',');
        }
    }

    /// One item whose value is `text`, already JSON.
    fn raw(&mut self, key: &str, text: &str) {
        self.key(Some(key));
        self.out.push(' ');
        self.out.push_str(text);
        self.newline();
        self.out.push(',');
    }

    fn int(&mut self, key: &str, v: u64) {
        self.raw(key, &v.to_string());
    }

    fn fixed(&mut self, key: &str, v: f64, decimals: usize) {
        let text = if v.is_nan() {
            "null".to_string()
        } else {
            format!("{v:.decimals$}")
        };
        self.raw(key, &text);
    }

    fn str(&mut self, key: &str, v: &str) {
        self.raw(key, &serde_json::to_string(v).unwrap_or_default());
    }
}

/// memtier's `--json-out-file` document for these runs. `configuration` is memtier's configuration
/// echo in its order, each value already JSON text as memtier formats it (`%11u`, `%f`, quoted
/// strings, `null`).
pub fn json_text(
    configuration: &[(String, String)],
    info: &RunInfo,
    runs: &[MemtierView],
    opts: &Options,
) -> String {
    let mut w = JsonText {
        out: String::new(),
        depth: 0,
    };
    w.open(None, '{');
    w.open(Some("configuration"), '{');
    for (k, v) in configuration {
        w.raw(k, v);
    }
    w.close('}');
    w.open(Some("run information"), '{');
    w.int("Threads", info.threads.into());
    w.int("Connections per thread", info.clients.into());
    match info.requests {
        Some(n) => w.int("Requests per client", n),
        None => w.int("Seconds", info.test_time),
    }
    w.int("Format version", 2);
    w.close('}');
    let mut quantiles: Vec<f64> = opts
        .percentiles
        .iter()
        .map(|&p| f64::from(p as f32))
        .collect();
    quantiles.sort_by(f64::total_cmp);
    for (title, view) in sections(runs, opts.print_all_runs) {
        w.open(Some(&title), '{');
        section_json(&mut w, &view, &quantiles, opts.hide_histogram);
        w.close('}');
    }
    w.close('}');
    w.out
}

fn section_json(w: &mut JsonText, view: &MemtierView, quantiles: &[f64], hide_histogram: bool) {
    let (start_ms, end_ms) = (view.start_us / 1000, view.end_us / 1000);
    w.open(Some("Runtime"), '{');
    w.int("Start time", start_ms);
    w.int("Finish time", end_ms);
    w.int("Total duration", end_ms - start_ms);
    w.str("Time unit", "MILLISECONDS");
    w.str(
        "Interrupted",
        if view.interrupted { "true" } else { "false" },
    );
    w.close('}');
    for row in &view.rows {
        row_json(w, row, view, quantiles);
    }
    row_json(w, &view.totals, view, quantiles);
    if let Some(h) = &view.from_send {
        from_send_json(w, h, quantiles);
    }
    if hide_histogram {
        return;
    }
    for row in &view.rows {
        w.open(Some(&row.label), '[');
        for step in percentile_steps(&row.hist) {
            let (ms, pct) = step_figures(&step);
            w.open(None, '{');
            w.fixed("<=msec", ms, 3);
            w.fixed("percent", pct, 3);
            w.close('}');
        }
        w.close(']');
    }
}

/// A percentile's key, as memtier's 7-byte buffer cuts it: `p50.00`, `p99.99`, `p100.0`.
pub(super) fn percentile_key(q: f64, decimals: usize) -> String {
    format!("p{q:.decimals$}").chars().take(6).collect()
}

fn row_json(w: &mut JsonText, row: &Row, view: &MemtierView, quantiles: &[f64]) {
    let hist = &row.hist;
    let ms = |us: u64| us as f64 / 1000.0;
    let some = !hist.is_empty();
    let kb = row.kb_sec.unwrap_or(0.0);
    w.open(Some(&row.name), '{');
    w.int("Count", row.ops);
    w.fixed("Ops/sec", row.ops_sec, 2);
    w.fixed("Hits/sec", row.hits_sec.unwrap_or(0.0), 2);
    w.fixed("Misses/sec", row.misses_sec.unwrap_or(0.0), 2);
    w.fixed("Connection Errors/sec", 0.0, 2);
    w.int("Connection Errors", 0);
    w.fixed("Latency", row.latency_ms, 3);
    w.fixed("Average Latency", row.latency_ms, 3);
    w.int("Accumulated Latency", row.total_us / 1000);
    w.fixed("Min Latency", if some { ms(hist.min()) } else { 0.0 }, 3);
    w.fixed("Max Latency", if some { ms(hist.max()) } else { 0.0 }, 3);
    w.fixed("KB/sec", kb, 2);
    w.fixed("KB/sec RX/TX", kb, 2);
    w.fixed("KB/sec RX", row.kb_sec_rx, 2);
    w.fixed("KB/sec TX", row.kb_sec_tx, 2);
    w.open(Some("Time-Serie"), '{');
    for (t, s) in view.timestamps.iter().zip(&row.seconds) {
        second_json(w, &t.to_string(), s, quantiles);
    }
    w.close('}');
    w.open(Some("Percentile Latencies"), '{');
    for &q in quantiles {
        w.fixed(
            &percentile_key(q, 3),
            ms(value_at_percentile(hist, q, true)),
            3,
        );
    }
    w.open(Some("Histogram log format"), '{');
    w.str("Compressed Histogram", &compressed(hist));
    w.close('}');
    w.close('}');
    w.close('}');
}

/// `--rate-limiting`: "Latency From Send", the latencies from each request's actual send (memtier's
/// measure; the rows' run from the intended send), in the rows' terms.
fn from_send_json(w: &mut JsonText, hist: &Histogram<u64>, quantiles: &[f64]) {
    let ms = |us: u64| us as f64 / 1000.0;
    let some = !hist.is_empty();
    w.open(Some("Latency From Send"), '{');
    w.int("Count", hist.len());
    w.fixed(
        "Average Latency",
        if some { mean_us(hist) / 1000.0 } else { 0.0 },
        3,
    );
    w.fixed("Min Latency", if some { ms(hist.min()) } else { 0.0 }, 3);
    w.fixed("Max Latency", if some { ms(hist.max()) } else { 0.0 }, 3);
    w.open(Some("Percentile Latencies"), '{');
    for &q in quantiles {
        w.fixed(
            &percentile_key(q, 3),
            ms(value_at_percentile(hist, q, true)),
            3,
        );
    }
    w.close('}');
    w.close('}');
}

fn second_json(w: &mut JsonText, key: &str, s: &Second, quantiles: &[f64]) {
    w.open(Some(key), '{');
    w.int("Bytes RX", s.bytes_rx);
    w.int("Bytes TX", s.bytes_tx);
    w.int("Count", s.ops);
    if s.ops > 0 {
        w.fixed(
            "Average Latency",
            s.total_us as f64 / s.ops as f64 / 1000.0,
            3,
        );
        w.int("Accumulated Latency", s.total_us / 1000);
        w.fixed("Min Latency", s.min_us as f64 / 1000.0, 3);
        w.fixed("Max Latency", s.max_us as f64 / 1000.0, 3);
        for &q in quantiles {
            let v = value_at_percentile(&s.hist, q, false) as f64 / 1000.0;
            w.fixed(&percentile_key(q, 2), v, 3);
        }
    }
    w.close('}');
}
