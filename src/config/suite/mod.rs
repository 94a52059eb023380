//! Where the run's tests are built, and the one place that decides them from the flags: the default
//! suite or `-t`'s selection, a custom command (with `-x`), a `;` sequence, `--mix`, memtier's
//! `--command`s, a `--dataset`'s rows, a `--replay` capture, or `--data-verify`'s passes. The requests
//! themselves are compiled by the workload stage (templates, composers); [`mix`] holds the builders of
//! the tests that send several commands, [`dataset`] and [`replay`] read their files. The memtier
//! personality's one test comes in ready-made (`Settings::given_test`), built by `config::memtier` with
//! the same mix builders.

pub mod dataset;
pub(crate) mod mix;
pub mod replay;

use crate::config::error::{ConfigError, UsageError, usage};
use crate::config::limits;
use crate::config::settings::{Settings, SuiteFlags};
use crate::config::shape::{Shape, command_title};
use crate::workload::{self, SuiteParams, TestSpec};
use std::io::{Read, Write};

/// What the suite is built from: the flags that name its tests and the settings that shape them.
struct SuiteInput<'a> {
    flags: &'a SuiteFlags,
    shape: &'a Shape,
    keyspace: Option<u64>,
    cluster: bool,
    seed: u64,
}

impl SuiteInput<'_> {
    fn params(&self) -> SuiteParams {
        SuiteParams {
            value: self.shape.suite_value(),
            randomize: self.keyspace.is_some(),
            tag: String::new(),
            cluster: self.cluster,
        }
    }
}

/// Builds the tests the flags name. `stdin` is read only with `-x`; the warning for `-t` beside a
/// command goes to `stderr`.
fn build_suite(
    input: &SuiteInput<'_>,
    stdin: &mut dyn Read,
    stderr: &mut dyn Write,
) -> Result<Vec<TestSpec>, ConfigError> {
    let (flags, shape) = (input.flags, input.shape);
    if !flags.commands.is_empty() {
        return Ok(vec![shape.command_mix_test(
            &flags.commands,
            &input.params(),
            input.seed,
        )]);
    }
    if let Some(mix) = &flags.mix {
        if !flags.command.is_empty() || flags.tests.is_some() {
            return Err(usage(
                "'--mix' names its own tests: it cannot be combined with -t or a command",
            )
            .into());
        }
        return Ok(vec![shape.mix_test(mix, &input.params(), input.seed)?]);
    }
    if flags.command.is_empty() {
        return Ok(named_tests(flags.tests.as_deref(), &input.params())?);
    }
    if flags.tests.is_some() {
        let _ = writeln!(stderr, "WARNING: -t is ignored when a command is given");
    }
    let raw = &flags.command;
    let title = command_title(raw);
    if let Some(path) = &flags.dataset {
        return Ok(vec![dataset::test(
            path,
            flags.maxdocs,
            flags.xml_root.as_deref(),
            raw,
            title,
            input.keyspace.is_some(),
            shape.expiry,
        )?]);
    }
    if !raw.iter().any(|a| a == b";") {
        return Ok(vec![one_command(input, title, stdin)?]);
    }
    command_sequence(input, title)
}

/// How many tests the flags name, known from the flags alone (nothing is read or resolved, so a usage
/// check can rest on it): one for a command, a `;` sequence, `--mix`, memtier's `--command`s, a dataset
/// or a replay; otherwise the default-suite tests `-t` selects, a name that brings a second test with it
/// (lrange_100 its LPUSH) counting both.
pub fn suite_size(flags: &SuiteFlags) -> Result<usize, UsageError> {
    let one = !flags.commands.is_empty()
        || flags.mix.is_some()
        || !flags.command.is_empty()
        || flags.replay.is_some();
    if one {
        return Ok(1);
    }
    let params = SuiteParams {
        value: b"x".to_vec(),
        randomize: false,
        tag: String::new(),
        cluster: false,
    };
    Ok(named_tests(flags.tests.as_deref(), &params)?.len())
}

/// The default suite, or the tests `-t` selects from it.
fn named_tests(tests: Option<&str>, params: &SuiteParams) -> Result<Vec<TestSpec>, UsageError> {
    let selection: Option<Vec<String>> = tests.map(|t| {
        t.split(',')
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect()
    });
    workload::default_suite(selection.as_deref(), params).map_err(|bad| {
        usage(format!(
            "invalid value '{}' for '-t': valid tests are {}",
            bad.0,
            workload::test_names().join(", ")
        ))
    })
}

/// A custom command's one test (its last argument read from `stdin` with `-x`).
fn one_command(
    input: &SuiteInput<'_>,
    title: String,
    stdin: &mut dyn Read,
) -> Result<TestSpec, ConfigError> {
    let shape = input.shape;
    let mut args = crate::workload::compose::expand_args(&input.flags.command, &shape.value);
    if input.flags.stdin_last_arg {
        let mut last = Vec::new();
        stdin.read_to_end(&mut last).map_err(ConfigError::Stdin)?;
        args.push(last);
    }
    let mut test = workload::custom_test(&args, title, input.keyspace.is_some());
    if input.cluster
        && memchr::memmem::find(test.template.bytes(), crate::protocol::cluster::SLOT_TAG).is_some()
    {
        // valkey-benchmark's `{tag}`: a hash tag per request, written where each request is composed.
        test.compose = Some(std::sync::Arc::new(workload::compose::Composer::new(
            &[workload::compose::Entry::one(
                &test.title,
                &test.command,
                &test.template,
            )],
            input.keyspace.is_some(),
            shape.value,
            shape.expiry,
            input.seed,
        )));
    }
    Ok(test)
}

/// valkey-benchmark's command sequence: `cmd1 ; 3 cmd2` sends cmd1 once and cmd2 three times per
/// round, each command one request.
fn command_sequence(input: &SuiteInput<'_>, title: String) -> Result<Vec<TestSpec>, ConfigError> {
    if input.flags.stdin_last_arg {
        return Err(usage(
            "'-x' reads one command's last argument: it cannot be used with a ';' sequence",
        )
        .into());
    }
    let (shape, randomize) = (input.shape, input.keyspace.is_some());
    let mut parts = Vec::new();
    for part in input.flags.command.split(|a| a == b";") {
        let count = part
            .first()
            .and_then(|w| std::str::from_utf8(w).ok())
            .and_then(|w| w.parse::<u64>().ok());
        let (count, words) = match count {
            Some(n) if part.len() > 1 => (n, &part[1..]),
            _ => (1, part),
        };
        if words.is_empty() || count == 0 {
            return Err(usage(format!(
                "invalid command sequence '{title}': each ';'-separated part needs a command (and a repeat count of 1 or more)"
            ))
            .into());
        }
        let args = crate::workload::compose::expand_args(words, &shape.value);
        let spec = workload::custom_test(&args, command_title(words), randomize);
        parts.push((spec, count));
    }
    let test = shape.sequence_test(title, parts, randomize, input.seed);
    let mut tests = vec![test];
    shape.attach_composers(&mut tests, randomize, input.seed);
    Ok(tests)
}

/// The run's tests with `shape`'s values: the verification's passes with `--data-verify`, else the
/// suite the flags name, with its composers.
pub(super) fn build_tests(
    s: &Settings,
    shape: &Shape,
    stdin: &mut dyn Read,
    stderr: &mut dyn Write,
) -> Result<Vec<TestSpec>, ConfigError> {
    if let Some(v) = s.run.load.verify {
        let spec = workload::verify::VerifySpec {
            value: shape.value,
            ..v
        };
        return Ok(workload::verify::verify_tests(&spec));
    }
    let input = SuiteInput {
        flags: &s.suite,
        shape,
        keyspace: s.run.load.keyspace,
        cluster: s.run.connect.cluster,
        seed: s.run.load.seed,
    };
    let mut tests = build_suite(&input, stdin, stderr)?;
    shape.attach_composers(&mut tests, s.run.load.keyspace.is_some(), s.run.load.seed);
    Ok(tests)
}

/// What each test holds in memory, for `limits::check_memory`.
pub(super) fn sizes(tests: &[TestSpec], per_request: bool) -> Vec<limits::TestSize> {
    tests
        .iter()
        .map(|t| limits::TestSize::of(t, per_request))
        .collect()
}

/// `--replay`: the file is the run's one test; its commands set the count (and the pace's average
/// rate, the report's target, when it is paced).
pub(super) fn load_replay(s: &mut Settings) -> Result<Option<TestSpec>, ConfigError> {
    let Some(flags) = &s.suite.replay else {
        return Ok(None);
    };
    let test = replay::load(flags, s.run.load.clients)?;
    if let Some(r) = &test.replay {
        s.run.load.requests = r.len() as u64;
        s.run.pace.shape.rps = replay::target_rate(r);
    }
    Ok(Some(test))
}
