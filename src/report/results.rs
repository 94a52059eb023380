//! A finished test's text as the chosen output prints it (the normal block with the server's side, the
//! `-q` line or the CSV row), and where the JSON goes.

use crate::config::{Config, OutputMode};
use crate::report::{self, Header, rate_report};
use crate::stats::TestResult;

/// A finished test as the chosen output prints it: the normal block, the `-q` line or the CSV row, each
/// with its `--rps` figures.
pub fn test_text(r: &TestResult, h: &Header, mode: OutputMode) -> String {
    let verify = r.stats.verify.as_ref().map(report::verify::verify_text);
    match mode {
        OutputMode::Normal => {
            let mut text = normal_text(r, h);
            if let Some(v) = verify {
                // Above the block's closing blank line, with the summary.
                if text.ends_with("\n\n") {
                    text.pop();
                }
                text.push_str(&v);
                text.push('\n');
            }
            text
        }
        OutputMode::Quiet => {
            report::quiet_line(r) + &rate_report::quiet_parts(r) + verify.as_deref().unwrap_or("")
        }
        // A CSV row has no room for it: the run says it on stderr.
        OutputMode::Csv => report::csv_row(r) + &rate_report::csv_parts(r),
    }
}

/// The normal block with the server's side under the summary.
pub fn normal_text(r: &TestResult, h: &Header) -> String {
    let mut text = report::normal_block(r, h);
    if let Some(v) = &r.server {
        // The block ends with a blank line; the server lines belong above it, with the summary.
        if text.ends_with("\n\n") {
            text.pop();
        }
        text.push_str(&v.summary_text());
        text.push('\n');
    }
    text
}

/// True when the JSON goes to stdout, which then carries nothing else.
pub fn json_to_stdout(cfg: &Config) -> bool {
    cfg.results.json.as_deref() == Some("-")
}
