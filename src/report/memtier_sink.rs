//! The memtier personality's outputs as one [`Sink`]: memtier's tables on stdout once every run has
//! ended (its BEST / WORST / AGGREGATED sections need them all), its `--json-out-file` document and its
//! `--hdr-file-prefix` files.

use crate::config::memtier::MemtierOutput;
use crate::report::memtier::{self, Breakdown, MemtierView, Options, RunInfo};
use crate::report::sink::{Sink, SinkError};
use crate::stats::TestResult;
use std::io::Write;
use std::sync::Arc;

/// memtier's results, written when the run ends.
pub struct MemtierSink {
    out: Arc<MemtierOutput>,
    views: Vec<MemtierView>,
}

impl MemtierSink {
    pub fn new(out: Arc<MemtierOutput>) -> MemtierSink {
        MemtierSink {
            out,
            views: Vec::new(),
        }
    }

    fn breakdown(&self) -> Breakdown {
        if self.out.by_line {
            Breakdown::Line
        } else {
            Breakdown::Command
        }
    }

    fn info(&self) -> RunInfo {
        let o = &self.out;
        RunInfo {
            threads: o.threads.min(u32::MAX as u64) as u32,
            clients: o.clients.min(u32::MAX as u64) as u32,
            requests: o.requests,
            test_time: o.test_time,
        }
    }

    fn options(&self) -> Options {
        Options {
            percentiles: self.out.percentiles.clone(),
            hide_histogram: self.out.hide_histogram,
            print_all_runs: self.out.print_all_runs,
        }
    }
}

impl Sink for MemtierSink {
    fn test(&mut self, r: &TestResult, _out: &mut dyn Write) -> Result<(), SinkError> {
        let view = MemtierView::of(r, self.breakdown());
        if let Some(prefix) = &self.out.hdr_file_prefix {
            let run = self.views.len() + 1;
            memtier::write_hdr_files(prefix, run, &view)
                .map_err(|e| SinkError::MemtierFile(format!("{prefix}_FULL_RUN_{run}"), e))?;
        }
        self.views.push(view);
        Ok(())
    }

    fn finish(
        &mut self,
        _results: &[TestResult],
        _stopped: bool,
        out: &mut dyn Write,
    ) -> Result<(), SinkError> {
        if self.views.is_empty() {
            return Ok(());
        }
        let (info, opts) = (self.info(), self.options());
        memtier::write_report(out, &info, &self.views, &opts)?;
        out.flush()?;
        if let Some(path) = &self.out.json_out_file {
            let text = memtier::json_text(&self.out.echo, &info, &self.views, &opts);
            std::fs::write(path, text).map_err(|e| SinkError::MemtierFile(path.clone(), e))?;
        }
        Ok(())
    }
}
