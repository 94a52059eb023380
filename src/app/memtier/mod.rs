//! The memtier_benchmark personality: `ringbench memtier ARGS`, or the binary started under the name
//! `memtier_benchmark`. memtier's command line is parsed (`cli::memtier`), checked and mapped onto the
//! engine (`config::memtier`), and the run's results are memtier's (`report::memtier`), through the same
//! run session as a benchmark (`lib::run`).

use crate::cli::memtier::MemtierFlags;
use crate::config::memtier::MemtierPlan;
use crate::config::{Config, ConfigError, Env, Settings};
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

/// What a memtier command line asks for: a run (its config and the `-o` file for its report), or
/// nothing more (help, version, a usage error already said).
pub enum Start {
    Run(Box<Config>, Option<String>),
    Done(ExitCode),
}

/// Whether `argv0` names memtier_benchmark (a link to ringbench under that name).
pub fn is_memtier_name(argv0: &OsString) -> bool {
    std::path::Path::new(argv0)
        .file_name()
        .is_some_and(|n| n == "memtier_benchmark")
}

/// Parses and maps memtier's arguments (`args[0]` is the program's name) and resolves the run's config;
/// usage errors are one line on `err` (exit code 2), help and the version go to `out`.
pub fn configure(args: &[OsString], out: &mut dyn Write, err: &mut dyn Write) -> Start {
    let flags = match MemtierFlags::parse_args(args) {
        Ok(f) => f,
        Err(e) => {
            let _ = writeln!(
                err,
                "ringbench memtier: {}",
                crate::cli::command::one_line(&e)
            );
            return Start::Done(ExitCode::from(2));
        }
    };
    if flags.help {
        let _ = write!(out, "{}", help());
        return Start::Done(ExitCode::SUCCESS);
    }
    if flags.version {
        let _ = writeln!(
            out,
            "ringbench {} (memtier_benchmark personality)",
            env!("CARGO_PKG_VERSION")
        );
        return Start::Done(ExitCode::SUCCESS);
    }
    let env = Env::of_process();
    let plan = match MemtierPlan::from_flags(&flags, env.usable_cores.len()) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(err, "ringbench memtier: {e}");
            return Start::Done(ExitCode::from(2));
        }
    };
    // memtier's settings go in before the config is built (its one test included, so the memory
    // checks see it); the config is not changed after.
    let out_file = plan.out_file.clone();
    let resolved = Settings::parse(&plan.cli, &env)
        .map_err(ConfigError::from)
        .and_then(|mut s| {
            s.given_test = Some(plan.test(s.run.load.seed));
            s.run.load.per_connection = plan.per_connection;
            s.run.load.same_seed = !plan.distinct_seeds;
            s.run.pace.burst_rate = plan.burst_rate;
            s.run.load.reconnect_every = plan.reconnect_every;
            s.run.results.memtier = Some(Arc::new(plan.output));
            if let Some(m) = s
                .run
                .results
                .metrics
                .as_mut()
                .and_then(|m| m.statsd.as_mut())
            {
                m.flat = true;
            }
            Config::resolve(s, &mut std::io::empty(), err)
        });
    match resolved {
        Ok(cfg) => Start::Run(Box::new(cfg), out_file),
        Err(e) => {
            let _ = writeln!(err, "ringbench memtier: {e}");
            Start::Done(ExitCode::from(e.exit_code()))
        }
    }
}

/// `--help`: memtier's options, and where the differences are written down.
fn help() -> String {
    use clap::CommandFactory;
    let mut c = MemtierFlags::command().override_usage(
        "ringbench memtier [memtier_benchmark options]\n       memtier_benchmark [options]   (ringbench started under that name)",
    );
    format!(
        "{}\nmemtier_benchmark's options, with its meanings; README's \"For memtier_benchmark users\" lists \
         what ringbench does differently and the options it refuses.\n",
        c.render_help()
    )
}
