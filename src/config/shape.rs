//! How a run is paced and what its requests look like beyond the command itself: `--rps`, `--duration`,
//! `--warmup`, `--distribution`, `-d MIN-MAX`, `--random-data`, `--expiry-range`, and the mixes of `--mix`
//! and memtier_benchmark's `--command` / `--command-ratio` / `--command-key-pattern`, validated from the flags.

use crate::cli::{Cli, CommandFlag};
use crate::config::error::UsageError;
use crate::workload::compose::{self, Expiry, ValueSpec};
use crate::workload::keys::Distribution;
use crate::workload::mix;
use std::time::Duration;

/// Largest value size accepted by `-d` (the server's default proto-max-bulk-len).
pub const MAX_DATA_SIZE: i64 = 512 * 1024 * 1024;
/// The longest `--duration` or `--warmup` accepted: a week.
const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// The highest `--rps` accepted.
const MAX_RPS: f64 = 1e9;

/// Pacing and request shape of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// `--rps`: the target rate over all executors and connections (open loop).
    pub rps: Option<f64>,
    /// `--duration`: each test runs this long instead of `-n` requests.
    pub duration: Option<Duration>,
    /// `--warmup`: each test first runs this long with its figures discarded.
    pub warmup: Option<Duration>,
    pub distribution: Distribution,
    pub value: ValueSpec,
    /// `--expiry-range`: the TTL of every SET.
    pub expiry: Option<Expiry>,
}

/// The longest title a custom command gets (in characters, `...` included).
pub(crate) const MAX_TITLE: usize = 60;

/// A custom command's title: its arguments joined by spaces, bytes that are not printable text escaped
/// (`\r`, `\n`, `\t`, `\xNN`), shortened to `MAX_TITLE` characters with `...`.
pub fn command_title(args: &[Vec<u8>]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        for chunk in a.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\r' => out.push_str("\\r"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c if c.is_control() => {
                        let mut buf = [0u8; 4];
                        for b in c.encode_utf8(&mut buf).bytes() {
                            out.push_str(&format!("\\x{b:02x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            for b in chunk.invalid() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
        if out.chars().count() > MAX_TITLE {
            break;
        }
    }
    if out.chars().count() > MAX_TITLE {
        out = out.chars().take(MAX_TITLE - 3).collect::<String>() + "...";
    }
    out
}

/// One `--command` of a memtier-style mix, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct MixCommand {
    /// The command line as written.
    pub text: String,
    /// Its arguments, split as memtier_benchmark splits them.
    pub args: Vec<Vec<u8>>,
    /// `--command-ratio` (default 1).
    pub ratio: u64,
    /// `--command-key-pattern`, when given.
    pub pattern: Option<Distribution>,
}

/// Reads memtier_benchmark's per-command flags in the order written: `--command-ratio` and
/// `--command-key-pattern` apply to the `--command` before them, at most once each.
pub fn mix_commands(
    flags: &[CommandFlag],
    run: Distribution,
) -> Result<Vec<MixCommand>, UsageError> {
    let mut out: Vec<(MixCommand, bool, bool)> = Vec::new();
    for f in flags {
        let (name, value) = match f {
            CommandFlag::Command(c) => {
                let (args, _) = mix::split_words(c).map_err(|why| {
                    UsageError(format!("invalid value '{c}' for '--command': {why}"))
                })?;
                out.push((
                    MixCommand {
                        text: c.trim().to_string(),
                        args,
                        ratio: 1,
                        pattern: None,
                    },
                    false,
                    false,
                ));
                continue;
            }
            CommandFlag::Ratio(v) => ("--command-ratio", v),
            CommandFlag::KeyPattern(v) => ("--command-key-pattern", v),
        };
        let Some((cmd, ratio_given, pattern_given)) = out.last_mut() else {
            return Err(UsageError(format!(
                "'{name} {value}' applies to the --command before it: give a --command first"
            )));
        };
        let given = if name == "--command-ratio" {
            ratio_given
        } else {
            pattern_given
        };
        if std::mem::replace(given, true) {
            return Err(UsageError(format!(
                "'{name}' was given twice for --command '{}'",
                cmd.text
            )));
        }
        if name == "--command-ratio" {
            cmd.ratio = mix::parse_weight(value).ok_or_else(|| {
                UsageError(format!(
                    "invalid value '{value}' for '--command-ratio': must be a whole number from 1 to {}",
                    mix::MAX_WEIGHT
                ))
            })?;
        } else {
            cmd.pattern = Some(mix::key_pattern(value, run).map_err(|why| {
                UsageError(format!(
                    "invalid value '{value}' for '--command-key-pattern': {why}"
                ))
            })?);
        }
    }
    Ok(out.into_iter().map(|(c, _, _)| c).collect())
}

/// What an open-loop test aimed at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateTarget {
    /// `--rps`.
    pub rps: f64,
    /// How many requests may wait at once: `-c` times `-P`.
    pub slots: usize,
}

fn seconds(flag: &str, v: Option<f64>) -> Result<Option<Duration>, UsageError> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s <= MAX_SECONDS => {
            Ok(Some(Duration::from_secs_f64(s)))
        }
        Some(s) => Err(UsageError(format!(
            "invalid value '{s}' for '{flag}': must be a number of seconds above 0 and at most {MAX_SECONDS}"
        ))),
    }
}

impl Shape {
    /// Validates the flags this module owns.
    pub fn from_cli(cli: &Cli) -> Result<Shape, UsageError> {
        let rps = match cli.rps {
            None => None,
            Some(r) if r.is_finite() && r > 0.0 && r <= MAX_RPS => Some(r),
            Some(r) => {
                return Err(UsageError(format!(
                    "invalid value '{r}' for '--rps': must be above 0 and at most {MAX_RPS}"
                )));
            }
        };
        let duration = seconds("--duration", cli.duration)?;
        if duration.is_some() && cli.requests_given {
            return Err(UsageError(
                "Options -n and --duration are mutually exclusive: give one of them".into(),
            ));
        }
        let warmup = seconds("--warmup", cli.warmup)?;
        let distribution = Distribution::parse(&cli.distribution).map_err(|why| {
            UsageError(format!(
                "invalid value '{}' for '--distribution': {why}",
                cli.distribution
            ))
        })?;
        let (min, max) =
            compose::parse_data_size(&cli.data_size, MAX_DATA_SIZE as usize).map_err(|why| {
                UsageError(format!("invalid value '{}' for '-d': {why}", cli.data_size))
            })?;
        let expiry = match &cli.expiry_range {
            None => None,
            Some(e) => Some(compose::parse_expiry(e).map_err(|why| {
                UsageError(format!("invalid value '{e}' for '--expiry-range': {why}"))
            })?),
        };
        Ok(Shape {
            rps,
            duration,
            warmup,
            distribution,
            value: ValueSpec {
                min,
                max,
                random: cli.random_data,
            },
            expiry,
        })
    }

    /// The value the default suite writes: `-d` bytes of `x`, or the `__data__` slot when values vary.
    pub fn suite_value(&self) -> Vec<u8> {
        if self.value.varies() {
            compose::DATA.to_vec()
        } else {
            vec![b'x'; self.value.min]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(args: &[&str]) -> Result<Shape, UsageError> {
        Shape::from_cli(
            &Cli::parse_args(std::iter::once("ringbench").chain(args.iter().copied())).unwrap(),
        )
    }

    #[test]
    fn bad_values_name_their_flag() {
        let e = |a: &[&str]| shape(a).unwrap_err().0;
        assert!(e(&["--rps", "0"]).contains("'--rps'"));
        assert!(e(&["--duration", "-1"]).contains("'--duration'"));
        assert!(e(&["--warmup", "nan"]).contains("'--warmup'"));
        assert!(e(&["--distribution", "pareto"]).contains("'--distribution'"));
        assert!(e(&["-d", "9-3"]).contains("'-d'"));
        assert!(
            e(&["-n", "5", "--duration", "2"])
                .contains("Options -n and --duration are mutually exclusive")
        );
    }

    #[test]
    fn duration_with_default_n_is_fine() {
        let s = shape(&["--duration", "2", "-d", "4-8", "--random-data"]).unwrap();
        assert_eq!(s.duration, Some(Duration::from_secs(2)));
        assert_eq!((s.value.min, s.value.max, s.value.random), (4, 8, true));
        assert_eq!(s.suite_value(), compose::DATA);
    }

    #[test]
    fn titles_escape_and_shorten() {
        assert_eq!(command_title(&[b"set".to_vec(), b"k".to_vec()]), "set k");
        assert_eq!(
            command_title(&[b"set".to_vec(), b"a\r\n\t\x01\xff\x7f".to_vec()]),
            "set a\\r\\n\\t\\x01\\xff\\x7f"
        );
        let long = command_title(&[b"set".to_vec(), vec![b'v'; 120_000]]);
        assert_eq!(long.chars().count(), MAX_TITLE);
        assert!(
            long.starts_with("set vvv") && long.ends_with("..."),
            "{long}"
        );
    }
}
