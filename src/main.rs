//! The `ringbench` binary: parse, run, print, and map errors to exit codes.

use clap::error::ErrorKind;
use ringbench::cli::Cli;
use ringbench::config::{Config, ConfigError};
use ringbench::engine::RunControl;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(code) = ringbench::tools::dispatch(&args, &mut std::io::stdout().lock()) {
        return code;
    }
    if args.get(1).and_then(|a| a.to_str()) == Some("capacity") {
        return capacity(&args[2..]);
    }
    let cli = match parse_cli(args) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let cfg = match config(&cli) {
        Ok(c) => c,
        Err(code) => return code,
    };

    let (control, sigint, sigterm) = signals();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut stderr = std::io::stderr();
    let progress: ringbench::ProgressSink<'_> = if stderr.is_terminal() {
        Some(&mut stderr)
    } else {
        None
    };
    let result = ringbench::run(cfg, &control, &mut out, progress);
    let code = match result {
        Ok(outcome) => {
            if sigint.load(Ordering::Relaxed) {
                130
            } else if sigterm.load(Ordering::Relaxed) {
                143
            } else if outcome.any_failed() {
                1
            } else {
                0
            }
        }
        Err(ringbench::RunError::Usage(u)) => {
            eprintln!("ringbench: {u}");
            2
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    };
    ExitCode::from(code)
}

/// Parses the benchmark's flags; the error is the exit code, its line already printed.
fn parse_cli(args: Vec<std::ffi::OsString>) -> Result<Cli, ExitCode> {
    match Cli::parse_args(args) {
        Ok(c) => Ok(c),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            Err(ExitCode::SUCCESS)
        }
        Err(e) => {
            // One line: clap's first line, without its own prefix and hints.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("ringbench: {}", first.trim_start_matches("error: "));
            Err(ExitCode::from(2))
        }
    }
}

/// Validates the flags into a config; the error is the exit code, its line already printed.
fn config(cli: &Cli) -> Result<Config, ExitCode> {
    let uri_has_password = cli
        .uri
        .as_deref()
        .and_then(|u| ringbench::config::parse_uri(u).ok())
        .is_some_and(|u| u.password.is_some());
    if cli.password.is_some() || uri_has_password {
        eprintln!(
            "Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe."
        );
    }
    match Config::from_cli(cli, &mut std::io::stdin()) {
        Ok(c) => Ok(c),
        Err(ConfigError::Usage(u)) => {
            eprintln!("ringbench: {u}");
            Err(ExitCode::from(2))
        }
        Err(ConfigError::Resolve(r)) => {
            eprintln!("{r}");
            Err(ExitCode::from(1))
        }
    }
}

/// The run's stop flag, set by SIGINT or SIGTERM, and which of them came.
fn signals() -> (RunControl, Arc<AtomicBool>, Arc<AtomicBool>) {
    let control = RunControl::default();
    let sigint = Arc::new(AtomicBool::new(false));
    let sigterm = Arc::new(AtomicBool::new(false));
    for (sig, flag) in [
        (signal_hook::consts::SIGINT, &sigint),
        (signal_hook::consts::SIGTERM, &sigterm),
    ] {
        // A second signal while the first is still being handled ends the process at once.
        let code = if sig == signal_hook::consts::SIGINT {
            130
        } else {
            143
        };
        let _ = signal_hook::flag::register_conditional_shutdown(sig, code, control.stop.clone());
        let _ = signal_hook::flag::register(sig, control.stop.clone());
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    (control, sigint, sigterm)
}

/// `ringbench capacity ...`: the search's flags, then the benchmark's.
fn capacity(args: &[std::ffi::OsString]) -> ExitCode {
    if args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--help")
    {
        print!("{}", ringbench::capacity::HELP);
        return ExitCode::SUCCESS;
    }
    let (search, rest) = match ringbench::capacity::split_args(args) {
        Ok(v) => v,
        Err(u) => {
            eprintln!("ringbench capacity: {u}");
            return ExitCode::from(2);
        }
    };
    let cli = match parse_cli(rest) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Err(u) = ringbench::capacity::check_cli(&cli) {
        eprintln!("ringbench capacity: {u}");
        return ExitCode::from(2);
    }
    let cfg = match config(&cli) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (control, sigint, sigterm) = signals();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match ringbench::capacity::run(cfg, &search, &control, &mut out) {
        Ok(_) if sigint.load(Ordering::Relaxed) => ExitCode::from(130),
        Ok(_) if sigterm.load(Ordering::Relaxed) => ExitCode::from(143),
        Ok(_) => ExitCode::SUCCESS,
        Err(ringbench::RunError::Usage(u)) => {
            eprintln!("ringbench capacity: {u}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}
