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
    let cli = match Cli::parse_args(args) {
        Ok(c) => c,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line: clap's first line, without its own prefix and hints.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            eprintln!("ringbench: {}", first.trim_start_matches("error: "));
            return ExitCode::from(2);
        }
    };
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
    let cfg = match Config::from_cli(&cli, &mut std::io::stdin()) {
        Ok(c) => c,
        Err(ConfigError::Usage(u)) => {
            eprintln!("ringbench: {u}");
            return ExitCode::from(2);
        }
        Err(ConfigError::Resolve(r)) => {
            error_lines(&r);
            return ExitCode::from(1);
        }
    };

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
            error_lines(&u);
            2
        }
        // Stdout closed by its reader (`| head -1`): what it wanted was written; end quietly.
        Err(ringbench::RunError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            error_lines(&e.to_string());
            1
        }
    };
    ExitCode::from(code)
}

/// Prints an error, each of its lines starting with `ringbench: `.
fn error_lines(msg: &str) {
    for line in msg.lines() {
        match line.strip_prefix("ringbench: ") {
            Some(rest) => eprintln!("ringbench: {rest}"),
            None => eprintln!("ringbench: {line}"),
        }
    }
}
