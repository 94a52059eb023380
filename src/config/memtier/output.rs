//! How the memtier personality's results are written: a leaf, so the run's settings can hold it.

/// How memtier's results are written.
#[derive(Debug, Clone, PartialEq)]
pub struct MemtierOutput {
    /// `--print-percentiles` (default 50, 99, 99.9).
    pub percentiles: Vec<f64>,
    pub hide_histogram: bool,
    pub print_all_runs: bool,
    /// `--command-stats-breakdown line`: each command line its own row (default: by command name).
    pub by_line: bool,
    pub json_out_file: Option<String>,
    pub hdr_file_prefix: Option<String>,
    /// The configuration memtier echoes in its JSON: each key and its value as JSON text.
    pub echo: Vec<(String, String)>,
    /// `-t`, `-c` (per thread), `-n` (per client; `None` with `--test-time`) and `--test-time`, as the
    /// run information lines say them.
    pub threads: u64,
    pub clients: u64,
    pub requests: Option<u64>,
    pub test_time: u64,
}
