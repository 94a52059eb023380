//! `--replay FILE` (memtier's `--monitor-input`) and `--replay-pace`: which flags a replay takes
//! (checked by `Settings::parse`, no I/O), and the file read, checked and encoded into the run's one
//! test (by `Config::resolve`).

use crate::cli::Cli;
use crate::config::error::{UsageError, usage};
use crate::workload::replay::{Format, Pace, Replay};
use crate::workload::{RequestTemplate, TestSpec};
use std::sync::Arc;

/// The highest `--replay-pace` speed-up accepted.
const MAX_SPEED: f64 = 1e6;

/// `--replay` and its pace, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayFlags {
    pub path: String,
    pub pace: Pace,
}

// The pace's numbers are finite (checked when parsed), so equality is an equivalence.
impl Eq for ReplayFlags {}

/// The replay flags, or `None` without `--replay`; a flag a replay cannot take is a usage error.
/// `rps` is `--rps`, already validated.
pub fn from_cli(cli: &Cli, rps: Option<f64>) -> Result<Option<ReplayFlags>, UsageError> {
    let Some(path) = &cli.replay else {
        if cli.replay_pace.is_some() {
            return Err(usage("'--replay-pace' needs '--replay FILE'"));
        }
        return Ok(None);
    };
    let refuse = |flag: &str, why: &str| {
        Err(usage(format!(
            "'{flag}' cannot be used with '--replay': {why}"
        )))
    };
    if cli.requests_given {
        return refuse("-n", "every command of the file is sent once");
    }
    if cli.tests.is_some() || cli.mix.is_some() || !cli.command.is_empty() {
        return refuse(
            if cli.tests.is_some() {
                "-t"
            } else if cli.mix.is_some() {
                "--mix"
            } else {
                "a command"
            },
            "the file holds the commands",
        );
    }
    if !cli.command_flags.is_empty() {
        return refuse("--command", "the file holds the commands");
    }
    if cli.expiry_range.is_some() {
        return refuse(
            "--expiry-range",
            "captured commands are sent as they were recorded",
        );
    }
    if cli.duration.is_some() {
        return refuse("--duration", "a replay ends with the file's last command");
    }
    if cli.warmup.is_some() {
        return refuse("--warmup", "the file's commands are sent once");
    }
    if cli.idle {
        return refuse("-I", "a replay sends its commands");
    }
    if cli.stdin_last_arg {
        return refuse("-x", "the file holds the commands");
    }
    if cli.shard.is_some() || cli.shards.is_some() {
        return refuse(
            if cli.shard.is_some() {
                "--shard"
            } else {
                "--shards"
            },
            "a capture is replayed by one process",
        );
    }
    if cli.keyspace.is_some() {
        return refuse("-r", "captured commands are sent as they were recorded");
    }
    if cli.random_data || cli.distribution_given {
        return refuse(
            if cli.random_data {
                "--random-data"
            } else {
                "--distribution"
            },
            "captured commands are sent as they were recorded",
        );
    }
    let pace = match (cli.replay_pace.as_deref(), rps) {
        (None | Some("max"), None) => Pace::Max,
        (None, Some(r)) => Pace::Rate(r),
        (Some(p), Some(_)) => {
            return Err(usage(format!(
                "'--replay-pace {p}' and '--rps' cannot be used together: give one of them"
            )));
        }
        (Some("recorded"), None) => Pace::Recorded(1.0),
        (Some(p), None) => {
            let speed = p
                .strip_suffix(['x', 'X'])
                .and_then(|n| n.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s > 0.0 && *s <= MAX_SPEED);
            match speed {
                Some(s) => Pace::Recorded(s),
                None => {
                    return Err(usage(format!(
                        "invalid value '{p}' for '--replay-pace': must be max, recorded, or a speed-up of the recorded pace such as 2x or 0.5x (above 0, at most {MAX_SPEED}x)"
                    )));
                }
            }
        }
    };
    Ok(Some(ReplayFlags {
        path: path.clone(),
        pace,
    }))
}

/// The replay test: the file read, every line checked (a line that cannot be replayed is a usage
/// error naming it, and nothing is sent), the commands encoded and shared out over `clients`.
pub fn load(flags: &ReplayFlags, clients: usize) -> Result<TestSpec, UsageError> {
    let bad = |why: String| {
        usage(format!(
            "invalid value '{}' for '--replay': {why}",
            flags.path
        ))
    };
    let text = std::fs::read(&flags.path)
        .map_err(|e| bad(format!("cannot read it: {}", crate::os_error::wording(&e))))?;
    let replay = Replay::parse(&text, clients, flags.pace).map_err(|e| bad(e.to_string()))?;
    let name = std::path::Path::new(&flags.path)
        .file_name()
        .map_or_else(|| flags.path.clone(), |n| n.to_string_lossy().into_owned());
    // The longest command stands for the test's request where buffers are sized.
    let template = RequestTemplate::raw(replay.longest().to_vec());
    Ok(TestSpec {
        title: format!("REPLAY {name}"),
        command: "REPLAY".into(),
        template,
        compose: None,
        replay: Some(Arc::new(replay)),
    })
}

/// The rate a paced replay aims at on average, for the report's target: `--rps`, or the capture's
/// commands over its span at the chosen speed-up. `None` for a closed-loop replay.
pub fn target_rate(r: &Replay) -> Option<f64> {
    match r.pace {
        Pace::Max => None,
        Pace::Rate(rps) => Some(rps),
        Pace::Recorded(speed) => {
            let span_s = (r.span_ns as f64 / 1e9 / speed).max(1e-6);
            Some((r.len() as f64 / span_s).min(1e9))
        }
    }
}

/// The header line that says what is replayed: `replay: 1204 commands from 3 clients over 12.500 s
/// (MONITOR capture) on 3 of the 50 connections, at the recorded pace; skipped: 2 issued by Lua
/// scripts`.
pub fn describe(r: &Replay) -> String {
    let mut s = format!("replay: {} commands", r.len());
    match r.format {
        Format::Monitor => {
            s.push_str(&format!(
                " from {} client{} over {:.3} s (MONITOR capture)",
                r.clients,
                if r.clients == 1 { "" } else { "s" },
                r.span_ns as f64 / 1e9
            ));
        }
        Format::Plain => s.push_str(" (one a line)"),
    }
    let used = r.connections_used();
    if used < r.connections() {
        s.push_str(&format!(
            " on {used} of the {} connections",
            r.connections()
        ));
    }
    match r.pace {
        Pace::Max => s.push_str(", as fast as the closed loop goes"),
        Pace::Recorded(1.0) => s.push_str(", at the recorded pace"),
        Pace::Recorded(x) => s.push_str(&format!(", at {x}x the recorded pace")),
        Pace::Rate(rps) => s.push_str(&format!(", at {rps} per second in the file's order")),
    }
    let k = r.skipped;
    let skipped: Vec<String> = [
        (k.lua, "issued by Lua scripts"),
        (k.redacted, "with redacted arguments"),
        (
            k.streams,
            "that take a connection over or close it (SUBSCRIBE, MONITOR, QUIT, ...)",
        ),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !skipped.is_empty() {
        s.push_str(&format!("; skipped: {}", skipped.join(", ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Result<Option<ReplayFlags>, UsageError> {
        let cli =
            Cli::parse_args(std::iter::once("ringbench").chain(args.iter().copied())).unwrap();
        let rps = cli.rps;
        from_cli(&cli, rps)
    }

    #[test]
    fn paces_and_refusals() {
        let pace = |a: &[&str]| flags(a).unwrap().unwrap().pace;
        assert_eq!(pace(&["--replay", "f"]), Pace::Max);
        assert_eq!(
            pace(&["--monitor-input", "f", "--replay-pace", "max"]),
            Pace::Max
        );
        assert_eq!(
            pace(&["--replay", "f", "--replay-pace", "recorded"]),
            Pace::Recorded(1.0)
        );
        assert_eq!(
            pace(&["--replay", "f", "--replay-pace", "0.5x"]),
            Pace::Recorded(0.5)
        );
        assert_eq!(pace(&["--replay", "f", "--rps", "100"]), Pace::Rate(100.0));
        assert_eq!(flags(&["-n", "5"]).unwrap(), None);
        let err = |a: &[&str]| flags(a).unwrap_err().0;
        assert!(err(&["--replay-pace", "max"]).contains("needs '--replay FILE'"));
        assert!(
            err(&["--replay", "f", "-n", "5"]).starts_with("'-n' cannot be used with '--replay'")
        );
        assert!(err(&["--replay", "f", "--mix", "get:1"]).starts_with("'--mix'"));
        assert!(err(&["--replay", "f", "--command", "GET k"]).starts_with("'--command'"));
        assert!(err(&["--replay", "f", "--expiry-range", "1-2"]).starts_with("'--expiry-range'"));
        assert!(err(&["--replay", "f", "get", "k"]).starts_with("'a command'"));
        assert!(err(&["--replay", "f", "--duration", "1"]).starts_with("'--duration'"));
        assert!(err(&["--replay", "f", "--shard", "1/2"]).starts_with("'--shard'"));
        assert!(err(&["--replay", "f", "-r", "10"]).starts_with("'-r'"));
        assert!(err(&["--replay", "f", "--replay-pace", "0x"]).contains("'--replay-pace'"));
        assert!(err(&["--replay", "f", "--replay-pace", "2x", "--rps", "5"]).contains("'--rps'"));
    }

    #[test]
    fn a_file_that_cannot_be_read_is_named() {
        let f = ReplayFlags {
            path: "/nonexistent/capture.txt".into(),
            pace: Pace::Max,
        };
        let e = load(&f, 1).unwrap_err().0;
        assert!(
            e.starts_with(
                "invalid value '/nonexistent/capture.txt' for '--replay': cannot read it"
            ),
            "{e}"
        );
    }
}
