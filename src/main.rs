//! The `ringbench` binary: parse, run, print, and map errors to exit codes.

use ringbench::{Cli, Config, ConfigError, Env, Settings};
use ringbench::{Invocation, RunControl, StopSignal, on_stop_signals};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let (cfg, out_file) =
        match ringbench::dispatch(&args, &mut std::io::stdout().lock(), &mut std::io::stderr()) {
            Invocation::Bench(cli) => match config(&cli) {
                Ok(c) => (c, None),
                Err(code) => return code,
            },
            Invocation::Memtier(cfg, file) => (*cfg, file),
            Invocation::Capacity(flags, cli) => return capacity(&flags, *cli),
            Invocation::Done(code) => return code,
        };
    let (control, sigint, sigterm) = signals();

    let stdout = std::io::stdout();
    // memtier's -o: the report goes to that file instead of stdout.
    let mut out: Box<dyn std::io::Write> = match out_file {
        Some(path) => match std::fs::File::create(&path) {
            Ok(f) => Box::new(std::io::BufWriter::new(f)),
            Err(e) => {
                eprintln!("ringbench memtier: cannot write '--out-file {path}': {e}");
                return ExitCode::from(2);
            }
        },
        None => Box::new(stdout.lock()),
    };
    let mut stderr = std::io::stderr();
    let mut terminal = std::io::stderr();
    let progress: ringbench::ProgressSink<'_> = if terminal.is_terminal() {
        Some(&mut terminal)
    } else {
        None
    };
    let result = ringbench::run(cfg, &control, &mut out, &mut stderr, progress);
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
        Err(e) if e.exit_code() == 2 => {
            error_lines(&e.to_string());
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

/// Validates the flags (the pure step), then resolves them into a config (the I/O: DNS, files, stdin);
/// the error is the exit code, its line already printed.
fn config(cli: &Cli) -> Result<Config, ExitCode> {
    settings(cli).and_then(resolve)
}

/// The pure step: the flags checked, nothing read or opened. A usage error is printed here.
fn settings(cli: &Cli) -> Result<Settings, ExitCode> {
    Settings::parse(cli, &Env::of_process()).map_err(|e| {
        let e = ConfigError::from(e);
        eprintln!("ringbench: {e}");
        ExitCode::from(e.exit_code())
    })
}

/// The I/O step: names, files, stdin, the suite. An error is printed here.
fn resolve(settings: Settings) -> Result<Config, ExitCode> {
    Config::resolve(settings, &mut std::io::stdin(), &mut std::io::stderr()).map_err(|e| {
        match &e {
            ConfigError::Resolve(r) => error_lines(&r.to_string()),
            usage => eprintln!("ringbench: {usage}"),
        }
        ExitCode::from(e.exit_code())
    })
}

/// The run's stop flag, set by SIGINT or SIGTERM, and which of them came.
fn signals() -> (RunControl, Arc<AtomicBool>, Arc<AtomicBool>) {
    let control = RunControl::default();
    let sigint = Arc::new(AtomicBool::new(false));
    let sigterm = Arc::new(AtomicBool::new(false));
    install_signal_handlers(&control, &sigint, &sigterm);
    (control, sigint, sigterm)
}

/// `ringbench capacity`: the highest rate within the latency objectives (its flags parsed by `dispatch`).
fn capacity(flags: &ringbench::SearchFlags, mut cli: Cli) -> ExitCode {
    // The benchmark's --warmup is each step's warmup.
    let search = ringbench::capacity::SearchArgs::from_flags(flags, cli.warmup.take())
        .and_then(|s| ringbench::capacity::check_cli(&cli).map(|()| s));
    let search = match search {
        Ok(s) => s,
        Err(u) => {
            eprintln!("ringbench capacity: {u}");
            return ExitCode::from(2);
        }
    };
    let settings = match settings(&cli) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if let Err(u) = ringbench::capacity::check_suite(&settings) {
        eprintln!("ringbench capacity: {u}");
        return ExitCode::from(2);
    }
    let cfg = match resolve(settings) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (control, sigint, sigterm) = signals();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match ringbench::capacity::run(cfg, &search, &control, &mut out, &mut std::io::stderr()) {
        Ok(_) if sigint.load(Ordering::Relaxed) => ExitCode::from(130),
        Ok(_) if sigterm.load(Ordering::Relaxed) => ExitCode::from(143),
        Ok(_) => ExitCode::SUCCESS,
        // Stopped while the control connection waited, before the first step.
        Err(e) if e.is_stop() => ExitCode::from(if sigterm.load(Ordering::Relaxed) {
            143
        } else {
            130
        }),
        Err(e) if e.exit_code() == 2 => {
            eprintln!("ringbench capacity: {e}");
            ExitCode::from(2)
        }
        // Stdout closed by its reader: end quietly.
        Err(ringbench::RunError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            error_lines(&e.to_string());
            ExitCode::from(1)
        }
    }
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

/// Signals closer together than this are one request to stop: `timeout -s INT` and a terminal's Ctrl+C
/// reach both the process and its group, so one stop often arrives twice within microseconds.
const SECOND_SIGNAL_AFTER_NS: u64 = 1_000_000_000;

/// SIGINT / SIGTERM: the first asks the run to stop and report what it measured; another one at least
/// a second later ends the process at once (130 / 143). Signals arriving together count as one.
fn install_signal_handlers(
    control: &RunControl,
    sigint: &Arc<AtomicBool>,
    sigterm: &Arc<AtomicBool>,
) {
    let signals = vec![
        StopSignal {
            signal: signal_hook::consts::SIGINT,
            flag: sigint.clone(),
            exit_code: 130,
        },
        StopSignal {
            signal: signal_hook::consts::SIGTERM,
            flag: sigterm.clone(),
            exit_code: 143,
        },
    ];
    on_stop_signals(signals, &control.stop, SECOND_SIGNAL_AFTER_NS);
}
