//! How a run is paced and what its requests look like beyond the command itself: `--rps`, `--duration`,
//! `--warmup`, `--distribution`, `-d MIN-MAX`, `--random-data` and `--mix`, validated from the flags.

use crate::cli::Cli;
use crate::config::error::UsageError;
use crate::workload::compose::{self, Composer, ValueSpec};
use crate::workload::keys::Distribution;
use crate::workload::{self, SuiteParams, TestSpec};
use std::sync::Arc;
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

    /// Attaches a composer to every test whose requests differ one from the next (a `--mix` test has
    /// its own already: it is kept).
    pub fn attach_composers(&self, tests: &mut [TestSpec], randomize: bool, seed: u64) {
        for t in tests {
            // A mix or sequence already has its composer (built from all of its commands).
            if t.compose.is_none() && compose::needs_composer(&t.template, randomize) {
                t.compose = Some(Arc::new(Composer::new(
                    &[(t.title.clone(), t.command.clone(), &t.template, 1)],
                    randomize,
                    self.value,
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
            .map(|(t, n)| (t.title.clone(), t.command.clone(), &t.template, *n))
            .collect();
        let composer = Composer::new(&entries, randomize, self.value, seed);
        let mut test = parts.swap_remove(0).0;
        test.title = title;
        test.command = "SEQUENCE".into();
        test.compose = Some(Arc::new(composer));
        test
    }

    /// The single test of `--mix`: each entry is a default-suite test name with its weight.
    pub fn mix_test(
        &self,
        spec: &str,
        params: &SuiteParams,
        seed: u64,
    ) -> Result<TestSpec, UsageError> {
        let parts = compose::parse_mix(spec)
            .map_err(|why| UsageError(format!("invalid value '{spec}' for '--mix': {why}")))?;
        let mut picked = Vec::with_capacity(parts.len());
        for (name, weight) in &parts {
            let tests = workload::default_suite(Some(std::slice::from_ref(name)), params).map_err(
                |bad| {
                    UsageError(format!(
                        "invalid value '{}' for '--mix': valid tests are {}",
                        bad.0,
                        workload::test_names().join(", ")
                    ))
                },
            )?;
            // A name that selects a group (lrange_100 brings its LPUSH) stands for its last test.
            let t = tests.into_iter().last().ok_or_else(|| {
                UsageError(format!(
                    "invalid value '{name}' for '--mix': selects no test"
                ))
            })?;
            picked.push((t, *weight));
        }
        let entries: Vec<_> = picked
            .iter()
            .map(|(t, w)| (t.title.clone(), t.command.clone(), &t.template, *w))
            .collect();
        let composer = Composer::new(&entries, params.randomize, self.value, seed);
        let title = parts
            .iter()
            .map(|(n, w)| format!("{n}:{w}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut test = picked.swap_remove(0).0;
        test.title = format!("MIX {title}");
        test.command = "MIX".into();
        test.compose = Some(Arc::new(composer));
        Ok(test)
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
