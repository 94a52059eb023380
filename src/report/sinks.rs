//! The run's outputs behind the one [`Sink`] interface, built once from the flags: the text report
//! (normal block, `-q` line or CSV row, and `--run-count`'s summary), `--hdr-out`, `--json`, `--plot`,
//! `--report` and the live metrics. `lib::run` hands each event to [`Sinks`], which calls them in turn.

use crate::config::{Config, OutputMode};
use crate::report::metrics::LiveMetrics;
use crate::report::result_file::{ResultFileError, RunConfig, RunFile};
use crate::report::sink::{Sink, SinkError};
use crate::report::{self, Header, results};
use crate::stats::TestResult;
use crate::stats::live::LiveView;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// Every output a run writes, and the file outputs that could not be written so far.
pub struct Sinks {
    sinks: Vec<Box<dyn Sink>>,
    /// Reported after the run: the other outputs still went on.
    pub unwritten: Vec<SinkError>,
}

impl Sinks {
    /// The outputs `cfg` asks for; `header` heads the text report. Starts the live metrics.
    pub fn for_run(
        cfg: &Arc<Config>,
        header: Header,
    ) -> Result<Sinks, crate::report::metrics::MetricsError> {
        let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
        if let Some(m) = &cfg.results.memtier {
            // memtier's personality: its tables and files instead of ringbench's report.
            sinks.push(Box::new(crate::report::memtier_sink::MemtierSink::new(
                m.clone(),
            )));
        } else if !results::json_to_stdout(cfg) {
            // With `--json -` stdout carries the JSON alone.
            sinks.push(Box::new(Text {
                header,
                mode: cfg.results.output,
                repeated: cfg.engine.pace.run_count > 1,
            }));
        }
        if let Some(prefix) = &cfg.results.hdr_out {
            sinks.push(Box::new(HdrLog(prefix.clone())));
        }
        if cfg.results.json.is_some() || cfg.results.report.is_some() {
            sinks.push(Box::new(Files(cfg.clone())));
        }
        if let Some(path) = &cfg.results.plot {
            sinks.push(Box::new(Plot {
                path: path.clone(),
                title: format!(
                    "ringbench: latency by percentile\n{}",
                    RunConfig::of(cfg).summary(true)
                ),
            }));
        }
        if let Some(m) = LiveMetrics::start(cfg)? {
            sinks.push(Box::new(m));
        }
        Ok(Sinks {
            sinks,
            unwritten: Vec::new(),
        })
    }

    /// Calls `f` on every sink: a file's error is kept for after the run, stdout's is returned.
    fn each(
        &mut self,
        mut f: impl FnMut(&mut dyn Sink) -> Result<(), SinkError>,
    ) -> Result<(), std::io::Error> {
        for s in &mut self.sinks {
            match f(s.as_mut()) {
                Ok(()) => {}
                Err(SinkError::Output(e)) => return Err(e),
                Err(other) => self.unwritten.push(other),
            }
        }
        Ok(())
    }

    /// Before the first test.
    pub fn start(&mut self, out: &mut dyn Write) -> Result<(), std::io::Error> {
        self.each(|s| s.start(out))
    }

    /// Test `title` starts.
    pub fn begin(&mut self, title: &str) {
        for s in &mut self.sinks {
            s.begin(title);
        }
    }

    /// A progress tick of test `title`.
    pub fn tick(&mut self, title: &str, live: &LiveView) {
        for s in &mut self.sinks {
            s.tick(title, live);
        }
    }

    /// A test ended.
    pub fn test(&mut self, r: &TestResult, out: &mut dyn Write) -> Result<(), std::io::Error> {
        self.each(|s| s.test(r, out))
    }

    /// The run ended.
    pub fn finish(
        &mut self,
        results: &[TestResult],
        stopped: bool,
        out: &mut dyn Write,
    ) -> Result<(), std::io::Error> {
        self.each(|s| s.finish(results, stopped, out))
    }
}

/// The text report on stdout.
struct Text {
    header: Header,
    mode: OutputMode,
    /// `--run-count`: the `-q` and CSV lines wait for the medians.
    repeated: bool,
}

impl Sink for Text {
    fn start(&mut self, out: &mut dyn Write) -> Result<(), SinkError> {
        if self.mode == OutputMode::Csv {
            out.write_all(report::CSV_HEADER.as_bytes())?;
        }
        Ok(())
    }

    fn test(&mut self, r: &TestResult, out: &mut dyn Write) -> Result<(), SinkError> {
        if !self.repeated || self.mode == OutputMode::Normal {
            out.write_all(results::test_text(r, &self.header, self.mode).as_bytes())?;
            out.flush()?;
        }
        Ok(())
    }

    fn finish(
        &mut self,
        results: &[TestResult],
        _stopped: bool,
        out: &mut dyn Write,
    ) -> Result<(), SinkError> {
        if !self.repeated {
            return Ok(());
        }
        for r in report::repeats::summarize(results) {
            let text = match self.mode {
                OutputMode::Normal => report::repeats::text(&r),
                OutputMode::Quiet => report::repeats::quiet_line(&r),
                OutputMode::Csv => report::repeats::csv_row(&r),
            };
            out.write_all(text.as_bytes())?;
        }
        out.flush()?;
        Ok(())
    }
}

/// `--hdr-out`: each test's interval log when it ends.
struct HdrLog(String);

impl Sink for HdrLog {
    fn test(&mut self, r: &TestResult, _out: &mut dyn Write) -> Result<(), SinkError> {
        crate::report::hdrlog::write(&self.0, r)?;
        Ok(())
    }
}

/// `--json` and `--report`: the run's result file, and its page.
struct Files(Arc<Config>);

impl Sink for Files {
    fn finish(
        &mut self,
        results: &[TestResult],
        stopped: bool,
        out: &mut dyn Write,
    ) -> Result<(), SinkError> {
        let cfg = &self.0;
        if let Some(dest) = &cfg.results.json {
            RunFile::of_run(cfg, results, stopped).write_to(dest, out)?;
        }
        if let Some(path) = &cfg.results.report {
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
}

/// `--plot`: latency by percentile, one line per test, then one per command of a mix. The title's second
/// line is the run's target and flags.
struct Plot {
    path: PathBuf,
    title: String,
}

impl Sink for Plot {
    fn finish(
        &mut self,
        results: &[TestResult],
        _stopped: bool,
        _out: &mut dyn Write,
    ) -> Result<(), SinkError> {
        use crate::report::plot::Series;
        let series: Vec<Series> = results
            .iter()
            .flat_map(|r| {
                std::iter::once(Series::of(r.title.clone(), &r.stats.hist)).chain(
                    r.stats
                        .parts
                        .iter()
                        .map(|p| Series::of(format!("{} / {}", r.title, p.title), &p.hist)),
                )
            })
            .collect();
        crate::report::plot::write(&self.path, &self.title, &series)?;
        Ok(())
    }
}
