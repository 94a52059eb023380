//! How a run is paced and what its requests look like beyond the command itself: `--rps`, `--duration`,
//! `--warmup`, `--distribution`, `-d MIN-MAX`, `--random-data`, `--expiry-range`, and the mixes of `--mix`
//! and memtier_benchmark's `--command` / `--command-ratio` / `--command-key-pattern`, validated from the flags.

use crate::cli::{Cli, CommandFlag};
use crate::config::error::UsageError;
use crate::workload::compose::{self, Composer, Entry, Expiry, ValueSpec};
use crate::workload::keys::Distribution;
use crate::workload::mix::{self, MixItem};
use crate::workload::{self, SuiteParams, TestSpec};
use std::sync::Arc;
use std::time::Duration;

/// Largest value size accepted by `-d` (the server's default proto-max-bulk-len).
pub const MAX_DATA_SIZE: i64 = 512 * 1024 * 1024;
/// The longest `--duration` or `--warmup` accepted: a week.
const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// The longest title a mix gets after `MIX ` (in characters, `...` included).
const MAX_MIX_TITLE: usize = 120;
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

/// One entry of a mix being built: a compiled test, its weight and its own key pattern.
struct Picked {
    test: TestSpec,
    weight: u64,
    pattern: Option<Distribution>,
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
                "'--duration' and '-n' cannot be used together: give one of them".into(),
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

    /// Attaches a composer to every test whose requests differ one from the next, or that are SETs
    /// given a TTL by `--expiry-range` (a `--mix` test has its own already: it is kept).
    pub fn attach_composers(&self, tests: &mut [TestSpec], randomize: bool, seed: u64) {
        for t in tests {
            // A mix or sequence already has its composer (built from all of its commands).
            let ttl = self.expiry.is_some() && compose::wants_expiry(&t.template);
            if t.compose.is_none() && (ttl || compose::needs_composer(&t.template, randomize)) {
                t.compose = Some(Arc::new(Composer::new(
                    &[Entry::one(&t.title, &t.command, &t.template)],
                    randomize,
                    self.value,
                    self.expiry,
                    seed,
                )));
            }
        }
    }

    /// The single test of a `;`-separated command sequence: each command with its repeat count, sent in
    /// those proportions exactly (one executor walks one cycle of them with one counter).
    pub fn sequence_test(
        &self,
        title: String,
        mut parts: Vec<(TestSpec, u64)>,
        randomize: bool,
        seed: u64,
    ) -> TestSpec {
        let entries: Vec<_> = parts
            .iter()
            .map(|(t, n)| Entry {
                weight: *n,
                ..Entry::one(&t.title, &t.command, &t.template)
            })
            .collect();
        let composer = Composer::new(&entries, randomize, self.value, self.expiry, seed);
        let mut test = parts.swap_remove(0).0;
        test.title = title;
        test.command = "SEQUENCE".into();
        test.compose = Some(Arc::new(composer));
        test
    }

    /// The single test of `--mix`: each entry is a default-suite test name or a command, with its weight.
    pub fn mix_test(
        &self,
        spec: &str,
        params: &SuiteParams,
        seed: u64,
    ) -> Result<TestSpec, UsageError> {
        let bad = |why: String| UsageError(format!("invalid value '{spec}' for '--mix': {why}"));
        let parts = mix::parse_mix(spec).map_err(|why| bad(why.to_string()))?;
        let mut picked = Vec::with_capacity(parts.len());
        for p in &parts {
            let test = match &p.item {
                MixItem::Word(name) => self.suite_entry(name, params)?,
                MixItem::Command(args) => self.command_entry(args, params),
            };
            picked.push(Picked {
                test,
                weight: p.weight,
                pattern: None,
            });
        }
        let title = parts
            .iter()
            .map(|p| format!("{}:{}", p.text, p.weight))
            .collect::<Vec<_>>()
            .join(",");
        Ok(self.mix_of(picked, title, params.randomize, seed))
    }

    /// The single test of memtier_benchmark's `--command` flags: each command with its ratio and key pattern.
    pub fn command_mix_test(
        &self,
        commands: &[MixCommand],
        params: &SuiteParams,
        seed: u64,
    ) -> TestSpec {
        let picked = commands
            .iter()
            .map(|c| Picked {
                test: self.command_entry(&c.args, params),
                weight: c.ratio,
                pattern: c.pattern,
            })
            .collect();
        let title = commands
            .iter()
            .map(|c| format!("{}:{}", command_title(&c.args), c.ratio))
            .collect::<Vec<_>>()
            .join(",");
        self.mix_of(picked, title, params.randomize, seed)
    }

    /// A mix entry naming a default-suite test.
    fn suite_entry(&self, name: &str, params: &SuiteParams) -> Result<TestSpec, UsageError> {
        let tests = workload::default_suite(Some(&[name.to_string()]), params).map_err(|bad| {
            UsageError(format!(
                "invalid value '{}' for '--mix': valid tests are {} (a command needs its arguments, or quotes: '\"DBSIZE\":1')",
                bad.0,
                workload::test_names().join(", ")
            ))
        })?;
        // A name that selects a group (lrange_100 brings its LPUSH) stands for its last test.
        tests.into_iter().last().ok_or_else(|| {
            UsageError(format!(
                "invalid value '{name}' for '--mix': selects no test"
            ))
        })
    }

    /// A mix entry that is a command: `__key__` and `__data__` as in a custom command, titled by its line.
    fn command_entry(&self, raw: &[Vec<u8>], params: &SuiteParams) -> TestSpec {
        let args = compose::expand_args(raw, &self.value);
        workload::custom_test(&args, command_title(raw), params.randomize)
    }

    /// One test sending `picked` in their weights' proportions, each counted on its own.
    fn mix_of(
        &self,
        mut picked: Vec<Picked>,
        title: String,
        randomize: bool,
        seed: u64,
    ) -> TestSpec {
        let entries: Vec<_> = picked
            .iter()
            .map(|p| Entry {
                weight: p.weight,
                pattern: p.pattern,
                ..Entry::one(&p.test.title, &p.test.command, &p.test.template)
            })
            .collect();
        let composer = Composer::new(&entries, randomize, self.value, self.expiry, seed);
        let mut test = picked.swap_remove(0).test;
        // Titles name files (--hdr-out): a long mix's is shortened.
        let title = if title.chars().count() > MAX_MIX_TITLE {
            title.chars().take(MAX_MIX_TITLE - 3).collect::<String>() + "..."
        } else {
            title
        };
        test.title = format!("MIX {title}");
        test.command = "MIX".into();
        test.compose = Some(Arc::new(composer));
        test
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
        assert!(e(&["-n", "5", "--duration", "2"]).contains("'--duration' and '-n'"));
    }

    #[test]
    fn duration_with_default_n_is_fine() {
        let s = shape(&["--duration", "2", "-d", "4-8", "--random-data"]).unwrap();
        assert_eq!(s.duration, Some(Duration::from_secs(2)));
        assert_eq!((s.value.min, s.value.max, s.value.random), (4, 8, true));
        assert_eq!(s.suite_value(), compose::DATA);
    }

    #[test]
    fn a_mix_keeps_its_commands_when_values_vary() {
        let s = shape(&["-d", "5-50"]).unwrap();
        let p = SuiteParams {
            value: s.suite_value(),
            randomize: true,
            tag: String::new(),
            cluster: false,
        };
        let mut tests = vec![s.mix_test("set:1,get:1", &p, 1).unwrap()];
        s.attach_composers(&mut tests, true, 1);
        let c = tests[0].compose.as_ref().unwrap();
        let names: Vec<&str> = c.variants().iter().map(|v| v.command.as_str()).collect();
        assert_eq!(names, ["SET", "GET"]);
    }

    #[test]
    fn mix_names_are_checked() {
        let s = shape(&[]).unwrap();
        let p = SuiteParams {
            value: b"xxx".to_vec(),
            randomize: false,
            tag: String::new(),
            cluster: false,
        };
        let t = s.mix_test("get:80,set:20", &p, 1).unwrap();
        assert_eq!(t.title, "MIX get:80,set:20");
        let c = t.compose.unwrap();
        let names: Vec<&str> = c.variants().iter().map(|v| v.command.as_str()).collect();
        assert_eq!(names, ["GET", "SET"]);
        assert!(
            s.mix_test("get:80,nope:20", &p, 1)
                .unwrap_err()
                .0
                .contains("'nope'")
        );
    }
}
