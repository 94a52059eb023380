//! The one interface every output of a run implements ([`Sink`]), and why one could not be written.
//! A leaf: `sinks.rs` builds the run's sinks, and each output's file implements the trait.

use crate::report::hdrlog::HdrLogError;
use crate::report::plot::PlotError;
use crate::report::result_file::ResultFileError;
use crate::stats::TestResult;
use crate::stats::live::LiveView;
use std::io::Write;

/// One place a run's results go: the text report, a log or file, or the live metrics. Every method
/// has a default that does nothing, so a sink implements what it needs.
pub trait Sink {
    /// Before the first test: a first line of its own (the CSV header, the metrics address).
    fn start(&mut self, _out: &mut dyn Write) -> Result<(), SinkError> {
        Ok(())
    }
    /// Test `title` starts.
    fn begin(&mut self, _title: &str) {}
    /// A progress tick of test `title` (about every 250 ms).
    fn tick(&mut self, _title: &str, _live: &LiveView) {}
    /// A test ended with `r`.
    fn test(&mut self, _r: &TestResult, _out: &mut dyn Write) -> Result<(), SinkError> {
        Ok(())
    }
    /// The run ended (also after a signal) with every result kept.
    fn finish(
        &mut self,
        _results: &[TestResult],
        _stopped: bool,
        _out: &mut dyn Write,
    ) -> Result<(), SinkError> {
        Ok(())
    }
}

/// A sink that could not be written. A file's problem is reported after the run, whose other outputs
/// still go on; stdout's ends the run.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error(transparent)]
    HdrLog(#[from] HdrLogError),
    #[error(transparent)]
    Json(#[from] ResultFileError),
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// A file of memtier's (`--json-out-file`, `--hdr-file-prefix`) could not be written.
    #[error("could not write '{0}': {1}")]
    MemtierFile(String, std::io::Error),
    /// Stdout could not be written.
    #[error("could not write the output: {0}")]
    Output(#[from] std::io::Error),
}
