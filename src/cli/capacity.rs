//! The search flags of `ringbench capacity`, as written (`capacity::SearchArgs::from_flags` checks them);
//! its benchmark flags are the run's (`Cli`, flattened beside these in `command.rs`).

use clap::{ArgAction, Args};

/// `ringbench capacity`'s own flags. `--warmup` is the benchmark's flag, read as each step's warmup.
/// Numbers are taken as written, negative too, so that the search's check names the flag.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Search options")]
pub struct SearchFlags {
    /// Latency objectives, e.g. p99=1ms or p50=300us,p99.9=5ms (repeatable) [default: p99=1ms]
    #[arg(long = "slo", value_name = "pNN=LATENCY,...", action = ArgAction::Append)]
    pub slo: Vec<String>,
    /// First step's rate [default: the upper bound / 16]
    #[arg(long = "from", value_name = "rate", allow_negative_numbers = true)]
    pub from: Option<String>,
    /// Highest rate offered [default: 1.25 x a short closed-loop probe's rate]
    #[arg(long = "to", value_name = "rate", allow_negative_numbers = true)]
    pub to: Option<String>,
    /// Measured time per step, in seconds [default: 5]
    #[arg(
        long = "step-duration",
        value_name = "secs",
        allow_negative_numbers = true
    )]
    pub step_duration: Option<String>,
    /// Stop when the first failing rate is within this of the last passing one [default: 5%]
    #[arg(long = "within", value_name = "percent", allow_negative_numbers = true)]
    pub within: Option<String>,
    /// Confirm a passing step whose worst percentile is within this of its objective (0: confirm
    /// failing steps only) [default: 10%]
    #[arg(
        long = "borderline",
        value_name = "percent",
        allow_negative_numbers = true
    )]
    pub borderline: Option<String>,
    /// Run a step spoiled by the client again at most this many times [default: 2]
    #[arg(long = "retries", value_name = "n", allow_negative_numbers = true)]
    pub retries: Option<String>,
    /// Run this many whole searches; the answer is their median, with min and max [default: 1]
    #[arg(long = "repeat", value_name = "n", allow_negative_numbers = true)]
    pub repeat: Option<String>,
}
