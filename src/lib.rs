//! ringbench: a thread-per-core load generator for Redis, Valkey and any RESP server.
//!
//! `run(config)` (the benchmark, `app::benchmark`) drives the whole pipeline (control connection, every
//! test on the engine, reports), so integration tests exercise exactly what the binary does; `dispatch`
//! parses the command line and runs the subcommands that need no benchmark run (`compare`, `merge`,
//! `report`, `fleet`, `completions`).

mod app;
mod cli;
mod config;
mod engine;
mod net;
mod os_error;
mod protocol;
mod report;
mod stats;
mod sys;
mod workload;

// What `main.rs`, `tests/` and `benches/` name besides `run`, `dispatch` and `capacity`.
pub use cli::Cli;
pub use cli::capacity::SearchFlags;
pub use config::start_at::unix_now;
pub use config::{Config, ConfigError, Env, Settings};
pub use engine::RunControl;
pub use protocol::cluster::key_slot;
pub use protocol::resp::{ReplyScanner, Scanned};
pub use report::result_file::RunFile;
pub use stats::thread_cpu_seconds;
pub use sys::os::{StopSignal, on_stop_signals};
#[doc(hidden)]
pub use sys::testkit;
pub use workload::{PipelineBuffer, RequestTemplate};

pub use app::benchmark::{ProgressSink, run};
pub use app::capacity;
pub use app::outcome::{RunError, RunOutcome};
use app::{fleet, memtier};
use cli::command::{self, Parsed};
use config::start_at;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

/// What the command line asks `main` to do once `dispatch` has parsed it.
pub enum Invocation {
    /// A benchmark run with these flags.
    Bench(Box<Cli>),
    /// `ringbench capacity`: the search's flags (`capacity::SearchArgs::from_flags` checks them) and the
    /// benchmark's.
    Capacity(SearchFlags, Box<Cli>),
    /// memtier_benchmark's command line (`ringbench memtier ...`, or started as `memtier_benchmark`):
    /// its run's config, and the `-o` file its report goes to.
    Memtier(Box<Config>, Option<String>),
    /// Nothing more: a subcommand that needs no benchmark ran, help was printed, or a usage error.
    Done(ExitCode),
}

/// Parses the command line (one clap definition, `cli::command`) and runs the subcommands that need no
/// benchmark run (`compare`, `merge`, `report`, `fleet`, `completions`); a usage error is one line on
/// `err` and exit code 2, and nothing is sent anywhere.
pub fn dispatch(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> Invocation {
    let personality = match args {
        [argv0, ..] if memtier::is_memtier_name(argv0) => Some(args.to_vec()),
        [argv0, first, rest @ ..] if first == "memtier" => Some(
            std::iter::once(argv0.clone())
                .chain(rest.iter().cloned())
                .collect(),
        ),
        _ => None,
    };
    if let Some(words) = personality {
        return match memtier::configure(&words, out, err) {
            memtier::Start::Run(cfg, file) => Invocation::Memtier(cfg, file),
            memtier::Start::Done(code) => Invocation::Done(code),
        };
    }
    let parsed = match command::parse(args, &protocol::commands::is_command) {
        Ok(p) => p,
        Err(refused) if refused.is_help() => {
            // Help goes to stdout, with exit code 0 (also for `ringbench fleet` alone).
            let _ = write!(out, "{}", refused.error.render());
            return Invocation::Done(ExitCode::SUCCESS);
        }
        Err(refused) => {
            let _ = writeln!(err, "{}", refused.line());
            return Invocation::Done(ExitCode::from(2));
        }
    };
    let (name, outcome) = match parsed {
        Parsed::Bench(cli) => return Invocation::Bench(cli),
        Parsed::Capacity(flags, cli) => return Invocation::Capacity(flags, cli),
        Parsed::Fleet(flags, run) => {
            return Invocation::Done(fleet::run(&flags, run, out, err, start_at::unix_now()));
        }
        Parsed::Compare(a) => ("compare", app::files::run_compare(&a, out, err)),
        Parsed::Merge(a) => ("merge", app::files::run_merge(&a, out, err)),
        Parsed::Report(a) => ("report", app::files::run_report(&a)),
        Parsed::Completions(shell) => {
            clap_complete::generate(shell, &mut command::definition(), "ringbench", out);
            return Invocation::Done(ExitCode::SUCCESS);
        }
        Parsed::Manpage(dir) => ("manpage", write_man_pages(&dir)),
    };
    Invocation::Done(match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The error may quote a result file (a test's title): never a raw control character.
            let line = report::printable::printable(&e.to_string()).into_owned();
            let _ = writeln!(err, "ringbench: {name}: {line}");
            ExitCode::from(e.code())
        }
    })
}

/// `ringbench manpage DIR` (hidden; `scripts/man.sh` runs it): `ringbench.1` and one page per subcommand.
fn write_man_pages(dir: &std::path::Path) -> Result<(), app::files::ToolError> {
    std::fs::create_dir_all(dir)
        .and_then(|()| clap_mangen::generate_to(command::definition(), dir))
        .map_err(|e| {
            app::files::ToolError::Other(format!(
                "could not write the man pages to {}: {}",
                dir.display(),
                os_error::describe(e)
            ))
        })
}
