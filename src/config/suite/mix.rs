//! The tests that send several commands from one test: a `;` sequence, `--mix` and memtier's
//! `--command`s, each one composer over its commands; and the composers of single-command tests whose
//! requests differ one from the next (`-d MIN-MAX`, `--expiry-range`, random values).

use crate::config::error::UsageError;
use crate::config::shape::{MixCommand, Shape, command_title};
use crate::workload::compose::{self, Composer, Entry};
use crate::workload::keys::Distribution;
use crate::workload::mix::{self, MixItem};
use crate::workload::{self, SuiteParams, TestSpec};
use std::sync::Arc;

/// The longest title a mix gets after `MIX ` (in characters, `...` included; titles name `--hdr-out` files).
const MAX_MIX_TITLE: usize = 120;

/// One entry of a mix being built: a compiled test, its weight and its own key pattern.
struct Picked {
    test: TestSpec,
    weight: u64,
    pattern: Option<Distribution>,
}

impl Shape {
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
    use crate::cli::Cli;
    use crate::config::shape::Shape;
    use crate::workload::SuiteParams;

    fn shape(args: &[&str]) -> Shape {
        Shape::from_cli(
            &Cli::parse_args(std::iter::once("ringbench").chain(args.iter().copied())).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn a_mix_keeps_its_commands_when_values_vary() {
        let s = shape(&["-d", "5-50"]);
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
        let s = shape(&[]);
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
