//! The flags of the `compare` and `merge` subcommands: they read result files and never touch a server.
//!
//! They are recognised by the first argument only (no Redis command is named `compare` or `merge`), before
//! the benchmark's own flags are parsed (`ringbench::dispatch`); `report::subcommands` runs them.

use clap::Parser;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// `ringbench compare`.
#[derive(Parser, Debug)]
#[command(
    name = "ringbench compare",
    about = "Compare result files (--json) side by side; changes are against the first file"
)]
pub struct CompareArgs {
    /// Result files; the first is the base
    #[arg(value_name = "FILE.json", num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// Also draw latency by percentile, one line per file (and test): SVG, or PNG for a .png name
    #[arg(long = "plot", value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
}

/// `ringbench report`.
#[derive(Parser, Debug)]
#[command(
    name = "ringbench report",
    about = "Write result files (--json) as one self-contained HTML page: several files are compared too"
)]
pub struct ReportArgs {
    /// Result files
    #[arg(value_name = "FILE.json", num_args = 1.., required = true)]
    pub files: Vec<PathBuf>,
    /// The page to write
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE.html",
        required = true
    )]
    pub output: PathBuf,
}

/// `ringbench merge`.
#[derive(Parser, Debug)]
#[command(
    name = "ringbench merge",
    about = "Merge result files of one workload run on several client machines"
)]
pub struct MergeArgs {
    /// Result files to merge; '-' reads result documents one after the other from stdin
    /// (e.g. `kubectl logs -l job-name=NAME --tail=-1 | ringbench merge -`)
    #[arg(value_name = "FILE.json", num_args = 1.., required = true)]
    pub files: Vec<PathBuf>,
    /// Merge shards of a run even when some are missing, repeated or started apart
    #[arg(long = "ignore-shards")]
    pub ignore_shards: bool,
    /// Write the merged result as JSON to FILE ('-' for stdout, then no text report)
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    /// Draw latency by percentile of the merged result, one line per test: SVG, or PNG for a .png name
    #[arg(long = "plot", value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
    /// Quiet: one line per test
    #[arg(short = 'q')]
    pub quiet: bool,
}

/// Parses the words after `ringbench <name>`; the error is the exit code, help printed or its line already
/// written to `err`.
pub fn parse<T: Parser>(
    name: &str,
    rest: impl Iterator<Item = OsString>,
    err: &mut dyn Write,
) -> Result<T, ExitCode> {
    let argv = std::iter::once(OsString::from(format!("ringbench {name}"))).chain(rest);
    T::try_parse_from(argv).map_err(|e| {
        use clap::error::ErrorKind;
        if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or("invalid arguments");
        let _ = writeln!(
            err,
            "ringbench: {name}: {}",
            first.trim_start_matches("error: ")
        );
        ExitCode::from(2)
    })
}
