//! Where a run's results go besides the text report: the server view under the summary, `--hdr-out` logs
//! after each test, and `--json` / `--plot` when the run ends.

use crate::config::{Config, OutputMode};
use crate::report::hdrlog::HdrLogError;
use crate::report::plot::PlotError;
use crate::report::result_file::{ResultFileError, RunConfig, RunFile};
use crate::report::{self, Header, rate_report};
use crate::stats::TestResult;
use std::io::Write;

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

/// A sink besides the text report that could not be written: it is reported after the run.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    HdrLog(#[from] HdrLogError),
    #[error(transparent)]
    Json(#[from] ResultFileError),
    #[error(transparent)]
    Plot(#[from] PlotError),
}

/// True when the JSON goes to stdout, which then carries nothing else.
pub fn json_to_stdout(cfg: &Config) -> bool {
    cfg.run.json.as_deref() == Some("-")
}

/// Called when a test ends: writes its interval log with `--hdr-out`.
pub fn after_test(cfg: &Config, r: &TestResult) -> Result<(), SinkError> {
    if let Some(prefix) = &cfg.run.hdr_out {
        crate::report::hdrlog::write(prefix, r)?;
    }
    Ok(())
}

/// Called when the run ends (also after a signal): writes `--json` and `--plot`.
pub fn after_run(
    cfg: &Config,
    results: &[TestResult],
    stopped: bool,
    out: &mut dyn Write,
) -> Result<(), SinkError> {
    if let Some(dest) = &cfg.run.json {
        RunFile::of_run(cfg, results, stopped).write_to(dest, out)?;
    }
    if let Some(path) = &cfg.run.plot {
        // One line per test, then one per command of a mix.
        let series: Vec<crate::report::plot::Series<'_>> = results
            .iter()
            .flat_map(|r| {
                std::iter::once(crate::report::plot::Series {
                    label: r.title.clone(),
                    hist: &r.stats.hist,
                })
                .chain(r.stats.parts.iter().map(|p| {
                    crate::report::plot::Series {
                        label: format!("{} / {}", r.title, p.title),
                        hist: &p.hist,
                    }
                }))
            })
            .collect();
        let title = format!(
            "ringbench: latency by percentile\n{}",
            RunConfig::of(cfg).summary()
        );
        crate::report::plot::write(path, &title, &series)?;
    }
    if let Some(path) = &cfg.run.report {
        let loaded = [crate::report::compare::Loaded {
            label: "this run".into(),
            file: RunFile::of_run(cfg, results, stopped),
        }];
        std::fs::write(path, crate::report::html::page(&loaded)).map_err(|e| {
            ResultFileError::Write {
                path: path.display().to_string(),
                reason: crate::os_error::describe(e),
            }
        })?;
    }
    Ok(())
}
