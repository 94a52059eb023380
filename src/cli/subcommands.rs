//! The flags of the `compare`, `merge` and `report` subcommands (subcommands of `command::Ringbench`):
//! they read result files and never touch a server; `app::files` runs them.

use clap::{ArgAction, Args};
use std::path::PathBuf;

/// `-h`/`--help` for a subcommand without the benchmark's flags (where `-h` is the host, clap's own help
/// flag is off for the whole command line).
#[derive(Args, Debug, Clone, Default)]
pub struct HelpFlag {
    /// Print help
    #[arg(short = 'h', long = "help", action = ArgAction::Help)]
    help: Option<bool>,
}

/// `ringbench compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub help: HelpFlag,
    /// Result files; the first is the base
    #[arg(value_name = "FILE.json", num_args = 2.., required = true)]
    pub files: Vec<PathBuf>,
    /// Also draw latency by percentile, one line per file (and test): SVG, or PNG for a .png name
    #[arg(long = "plot", value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
}

/// `ringbench report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub help: HelpFlag,
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
#[derive(Args, Debug)]
pub struct MergeArgs {
    #[command(flatten)]
    pub help: HelpFlag,
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
