//! The whole command line as one clap definition: the benchmark's flags (`Cli`) and every subcommand.
//! `--help`, every error, the shell completions and the man page come from it.
//!
//! redis-benchmark's form stays: words after the flags are a command to benchmark (`ringbench set k v`),
//! and a subcommand is only recognised as the first word. A first word that is no subcommand and no
//! server command, but close to a subcommand's name, is refused (`misspelled_subcommand`).

use super::Cli;
use super::capacity::SearchFlags;
use super::fleet::JobFlags;
use super::subcommands::{CompareArgs, HelpFlag, MergeArgs, ReportArgs};
use clap::{Args, Command, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// The end of `--help`: a few command lines to start from.
const AFTER_HELP: &str = "\
Examples:
  ringbench -t set,get -n 1000000 -q                 SET and GET against 127.0.0.1:6379, one line each
  ringbench -h 10.0.0.5 -a secret -c 200 -P 16 --threads 4 -t get -r 1000000
  ringbench -r 100000 lpush mylist ele:__rand_int__  a command of your own instead of the suite
  ringbench --rps 50000 --duration 30 --warmup 5 -t get -r 1000000 --json run.results.json
  ringbench -u rediss://cache.example:6380 --cacert ca.crt -t set -q
  ringbench --cluster -p 7000 -t set,get -r 100000
  ringbench compare before.json after.json --plot latency.svg
  ringbench capacity --slo p99=1ms -t get -r 100000";

const USAGE: &str = "ringbench [OPTIONS] [COMMAND ARGS...]
       ringbench <SUBCOMMAND> [ARGS]   (ringbench help <SUBCOMMAND> for its flags)
       ringbench compare FILE.json FILE.json... [--plot FILE.svg]
       ringbench merge FILE.json FILE.json... [--json FILE] [--plot FILE.svg] [-q]
       ringbench memtier [memtier_benchmark options]   (memtier_benchmark's command line and results)";

/// `ringbench`: a benchmark run, or a subcommand.
#[derive(Parser, Debug)]
#[command(
    name = "ringbench",
    version,
    about = "A thread-per-core load generator for Redis, Valkey and any RESP server; a drop-in for redis-benchmark.",
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true,
    args_conflicts_with_subcommands = true,
    override_usage = USAGE,
    after_help = AFTER_HELP
)]
pub struct Ringbench {
    #[command(flatten)]
    pub bench: Cli,
    #[command(subcommand)]
    pub sub: Option<Sub>,
}

const CAPACITY_ABOUT: &str = "\
Search the highest rate the server sustains within latency objectives: open-loop steps (latency from each
request's intended send time) rising geometrically, then bisecting between the last passing and the first
failing rate. A step fails when a percentile is over its objective, the achieved rate is under 95% of the
offered one, or requests failed. A failing step, and a passing one within --borderline of an objective, is
run again to confirm it (a third run breaks a tie) before the search moves on; a run spoiled by the client
(behind its schedule while off a CPU, or CPU steal) is run again. The server is not restarted between steps.";

const CAPACITY_AFTER: &str = "\
Benchmark options are those of a normal run: connection, TLS, -c, -P, --threads, --cpus, -d, -r,
--distribution, --cluster, --json FILE (every step's full result), --plot FILE.svg (latency against offered
load, with the objectives), -q (the answer only); --warmup is each step's warmup (default 1 s, 0: none).
Not accepted: -n, --rps, --duration, -l, -I, --csv, --hdr-out, --start-at.";

const FLEET_AFTER: &str = "\
The one engine is kubernetes; for Ansible see deploy/ansible/.";

const KUBERNETES_AFTER: &str = "\
The flags of the run are ringbench's usual ones; -n, --rps and -c are totals that the pods share.
The server's address must be given (-h, -u or -s) as the pods see it. Every pod prints its result as
JSON (--json -), so its log is its result: the commands to run and collect are printed at the top.";

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Sub {
    /// Search the highest rate the server sustains within latency objectives (p99=1ms, ...)
    #[command(
        long_about = CAPACITY_ABOUT,
        after_help = CAPACITY_AFTER,
        override_usage = "ringbench capacity [SEARCH OPTIONS] [BENCHMARK OPTIONS] [-t TEST | --mix SPEC | COMMAND ARGS...]",
        version,
        disable_help_flag = true,
        disable_version_flag = true,
        args_override_self = true
    )]
    Capacity(CapacityArgs),
    /// Print a Kubernetes Indexed Job that runs one benchmark as N pods, each its shard of the whole
    #[command(
        subcommand_required = true,
        arg_required_else_help = true,
        after_help = FLEET_AFTER
    )]
    Fleet {
        #[command(subcommand)]
        engine: FleetEngine,
        #[command(flatten)]
        help: HelpFlag,
    },
    /// Compare result files written with --json, test by test (the first file is the base)
    ///
    /// Compare result files written with --json, test by test: changes are against the first file.
    /// `A.json... vs B.json...` compares two sides of several runs each, with a bootstrap of the median
    /// telling a change from the runs' noise. A file is given once (on each side of `vs`, at most).
    Compare(CompareArgs),
    /// Merge result files of one workload run from several client machines at once
    Merge(MergeArgs),
    /// Write result files (--json) as one self-contained HTML page: several files are compared too
    Report(ReportArgs),
    /// Print a completion script for a shell (bash, zsh, fish, ...)
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
        #[command(flatten)]
        help: HelpFlag,
    },
    /// Write the man pages (ringbench.1 and one per subcommand) into DIR
    #[command(hide = true)]
    Manpage { dir: PathBuf },
}

/// `ringbench capacity`: the search's flags and the benchmark's.
#[derive(Args, Debug)]
#[command(mut_arg("warmup", |a| a.help(
    "Time per step before it, at the same rate, dropped from its figures, in seconds (0: none) [default: 1]"
)))]
pub struct CapacityArgs {
    #[command(flatten)]
    pub search: SearchFlags,
    #[command(flatten, next_help_heading = "Benchmark options")]
    pub bench: Cli,
}

/// `ringbench fleet ENGINE`.
#[derive(Subcommand, Debug)]
pub enum FleetEngine {
    /// Print a Kubernetes Indexed Job whose pods each run one shard of the run the flags describe
    #[command(
        after_help = KUBERNETES_AFTER,
        override_usage = "ringbench fleet kubernetes [FLAGS OF A RUN] --pods N [--image IMAGE] [--lead SECONDS] [--name NAME] [--namespace NS] [--memory QUANTITY]",
        version,
        disable_help_flag = true,
        disable_version_flag = true,
        args_override_self = true
    )]
    Kubernetes(KubernetesArgs),
}

/// `ringbench fleet kubernetes`: the Job's flags and the run's.
#[derive(Args, Debug)]
pub struct KubernetesArgs {
    #[command(flatten)]
    pub job: JobFlags,
    #[command(flatten, next_help_heading = "Flags of the run")]
    pub bench: Cli,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    Bench(Box<Cli>),
    Capacity(SearchFlags, Box<Cli>),
    /// The Job's flags, and the run's flags as written (what every pod is given).
    Fleet(JobFlags, Vec<String>),
    Compare(CompareArgs),
    Merge(MergeArgs),
    Report(ReportArgs),
    Completions(clap_complete::Shell),
    Manpage(PathBuf),
}

/// Why the command line was not parsed: help or version to print (`clap::Error::print`, exit 0), or a
/// usage error (exit 2) whose one line is `Refused::line`.
#[derive(Debug)]
pub struct Refused {
    /// `ringbench: `, or the subcommand's own prefix.
    pub prefix: String,
    pub error: clap::Error,
}

impl Refused {
    /// True when this is help or the version, to print with exit code 0.
    pub fn is_help(&self) -> bool {
        use clap::error::ErrorKind::*;
        matches!(
            self.error.kind(),
            DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
        )
    }

    /// The error as one line, the prefix first.
    pub fn line(&self) -> String {
        format!("{}{}", self.prefix, one_line(&self.error))
    }
}

/// Clap's message as one line: the lines before its first blank line (so a list of missing arguments
/// stays with its header), without `error: `, its usage and tips.
pub fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let line = line.trim_start_matches("error: ");
    if line.is_empty() {
        "invalid arguments".into()
    } else {
        line.to_string()
    }
}

/// The prefix of a subcommand's error lines (as each subcommand has always written them).
fn prefix_of(first: Option<&str>) -> String {
    match first {
        Some(s @ ("capacity" | "fleet")) => format!("ringbench {s}: "),
        Some(s @ ("compare" | "merge" | "report" | "completions" | "manpage")) => {
            format!("ringbench: {s}: ")
        }
        _ => "ringbench: ".into(),
    }
}

fn refused(prefix: &str, msg: String) -> Refused {
    Refused {
        prefix: prefix.to_string(),
        error: clap::Error::raw(clap::error::ErrorKind::InvalidSubcommand, msg),
    }
}

/// The whole definition, for help, completions and the man page.
pub fn definition() -> Command {
    Ringbench::command()
}

/// Parses the command line (`args[0]` is the program). `is_command` says whether a word is a server
/// command: such a first word is always a command to benchmark, never a misspelled subcommand.
pub fn parse(args: &[OsString], is_command: &dyn Fn(&str) -> bool) -> Result<Parsed, Refused> {
    let first = args.get(1).and_then(|a| a.to_str());
    let prefix = prefix_of(first);
    // `-h` is the host, as in redis-benchmark; alone (no host after it) it most likely meant help.
    if args.len() >= 2 && args.last().is_some_and(|a| a == "-h") {
        return Err(refused(
            &prefix,
            "'-h' needs a host name (-h <hostname>); for help use --help".into(),
        ));
    }
    let command = definition();
    let words = super::resp3_words(&command, args.iter().cloned());
    let fail = |error: clap::Error| Refused {
        prefix: prefix.clone(),
        error,
    };
    let matches = command.try_get_matches_from(words).map_err(fail)?;
    let parsed = match matches.subcommand() {
        None => {
            let cli = Cli::from_matches(&matches).map_err(fail)?;
            if !args.iter().any(|a| a == "--")
                && let Some(msg) = cli
                    .command
                    .first()
                    .and_then(|w| w.to_str())
                    .and_then(|w| misspelled_subcommand(w, is_command))
            {
                return Err(refused(&prefix, msg));
            }
            Parsed::Bench(Box::new(cli))
        }
        Some(("capacity", m)) => {
            let search = SearchFlags::from_arg_matches(m).map_err(fail)?;
            Parsed::Capacity(search, Box::new(Cli::from_matches(m).map_err(fail)?))
        }
        Some(("fleet", m)) => {
            let Some(("kubernetes", k)) = m.subcommand() else {
                return Err(refused(&prefix, "the one engine is 'kubernetes'".into()));
            };
            let job = JobFlags::from_arg_matches(k).map_err(fail)?;
            let written = args.get(3..).unwrap_or_default();
            let run: Option<Vec<String>> = run_words(written)
                .into_iter()
                .map(|a| a.into_string().ok())
                .collect();
            let run =
                run.ok_or_else(|| refused(&prefix, "an argument is not valid UTF-8".into()))?;
            Parsed::Fleet(job, run)
        }
        Some(_) => match Sub::from_arg_matches(&matches).map_err(fail)? {
            Sub::Compare(a) => Parsed::Compare(a),
            Sub::Merge(a) => Parsed::Merge(a),
            Sub::Report(a) => Parsed::Report(a),
            Sub::Completions { shell, .. } => Parsed::Completions(shell),
            Sub::Manpage { dir } => Parsed::Manpage(dir),
            Sub::Capacity(_) | Sub::Fleet { .. } => unreachable!("matched above"),
        },
    };
    Ok(parsed)
}

/// `parse` of `ringbench WORDS...`, no word a server command: for the tests of the stages that check
/// a subcommand's flags.
#[cfg(test)]
pub(crate) fn parse_words(words: &[&str]) -> Result<Parsed, Refused> {
    let argv: Vec<OsString> = std::iter::once("ringbench")
        .chain(words.iter().copied())
        .map(OsString::from)
        .collect();
    parse(&argv, &|_| false)
}

/// The words after `fleet kubernetes` without the Job's own flags (and their values): the run's flags,
/// as the pods are given them. The Job's flags are those `JobFlags` defines.
fn run_words(words: &[OsString]) -> Vec<OsString> {
    let job = JobFlags::augment_args(Command::new("fleet"));
    let is_job_flag = |long: &str| job.get_arguments().any(|a| a.get_long() == Some(long));
    let mut run = Vec::new();
    let mut it = words.iter();
    while let Some(w) = it.next() {
        if w == "--" {
            run.push(w.clone());
            run.extend(it.cloned());
            break;
        }
        let Some(long) = w.to_str().and_then(|s| s.strip_prefix("--")) else {
            run.push(w.clone());
            continue;
        };
        match long.split_once('=') {
            Some((flag, _)) if is_job_flag(flag) => {}
            None if is_job_flag(long) => {
                it.next();
            }
            _ => run.push(w.clone()),
        }
    }
    run
}

/// The most edits (insertions, deletions, substitutions, swaps of neighbours) between a word and a
/// subcommand's name for the word to be taken as that name mistyped: 1 for names of up to 4 letters
/// (`help`), 2 for longer ones.
fn max_edits(name: &str) -> usize {
    if name.len() <= 4 { 1 } else { 2 }
}

/// The error for a command's first word that looks like a subcommand: the subcommand itself after
/// flags (subcommands come first), or a name a few edits from one that is no server command.
fn misspelled_subcommand(word: &str, is_command: &dyn Fn(&str) -> bool) -> Option<String> {
    if is_command(word) {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    let command = definition();
    let names = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_string())
        .chain(std::iter::once("help".to_string()));
    let mut best: Option<(usize, String)> = None;
    for name in names {
        if word == name {
            return Some(format!(
                "'{word}' is a subcommand: it comes first, before any flag (ringbench {name} ...)"
            ));
        }
        let d = strsim::damerau_levenshtein(&lower, &name);
        if d <= max_edits(&name) && best.as_ref().is_none_or(|(b, _)| d < *b) {
            best = Some((d, name));
        }
    }
    best.map(|(_, name)| {
        format!(
            "'{word}' is not a subcommand nor a server command: did you mean `{name}`? (to send it to the server anyway: ringbench [OPTIONS] -- {word} ...)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<OsString> {
        std::iter::once("ringbench")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect()
    }

    fn never(_: &str) -> bool {
        false
    }

    fn parse_ok(args: &[&str]) -> Parsed {
        parse(&words(args), &|w| {
            ["SET", "GET"].contains(&w.to_ascii_uppercase().as_str())
        })
        .unwrap_or_else(|e| panic!("{args:?}: {}", e.line()))
    }

    #[test]
    fn the_definition_is_consistent() {
        definition().debug_assert();
    }

    #[test]
    fn help_lists_every_subcommand_with_examples() {
        let command = definition();
        let help = command.clone().render_long_help().to_string();
        let listed = help.split("Commands:").nth(1).unwrap_or_default();
        for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
            let name = sub.get_name();
            assert!(
                listed.lines().any(|l| l.trim_start().starts_with(name)),
                "{name} missing from\n{help}"
            );
        }
        assert!(help.contains("Examples:") && help.contains("ringbench -t set,get"));
        assert!(!help.contains("manpage"), "{help}");
    }

    #[test]
    fn commands_stay_commands_and_subcommands_are_found() {
        match parse_ok(&["set", "k", "v", "-n", "5"]) {
            Parsed::Bench(c) => assert_eq!((c.command.len(), c.requests), (3, 5)),
            p => panic!("{p:?}"),
        }
        match parse_ok(&["-h", "host", "get", "k"]) {
            Parsed::Bench(c) => assert_eq!((c.host.as_str(), c.command.len()), ("host", 2)),
            p => panic!("{p:?}"),
        }
        match parse_ok(&["capacity", "--slo", "p99=2ms", "-t", "get", "-P", "4", "-3"]) {
            Parsed::Capacity(s, c) => {
                assert_eq!(s.slo, ["p99=2ms"]);
                assert_eq!((c.pipeline, c.resp3), (4, true));
            }
            p => panic!("{p:?}"),
        }
        match parse_ok(&["merge", "a.json", "b.json", "-q"]) {
            Parsed::Merge(m) => assert!(m.quiet && m.files.len() == 2),
            p => panic!("{p:?}"),
        }
    }

    #[test]
    fn the_fleet_keeps_the_run_flags_as_written() {
        match parse_ok(&[
            "fleet",
            "kubernetes",
            "-h",
            "r",
            "--pods=3",
            "-P",
            "4",
            "--image",
            "x:1",
            "--",
            "set",
            "--name",
        ]) {
            Parsed::Fleet(j, run) => {
                assert_eq!(j.pods.as_deref(), Some("3"));
                assert_eq!(j.image.as_deref(), Some("x:1"));
                assert_eq!(run, ["-h", "r", "-P", "4", "--", "set", "--name"]);
            }
            p => panic!("{p:?}"),
        }
    }

    #[test]
    fn a_mistyped_subcommand_is_refused() {
        for (w, want) in [
            ("compre", "`compare`"),
            ("capacty", "`capacity`"),
            ("mrege", "`merge`"),
            ("Fleet", "`fleet`"),
            ("hepl", "`help`"),
        ] {
            let e = parse(&words(&[w, "a"]), &never).unwrap_err();
            assert!(!e.is_help() && e.line().contains(want), "{w}: {}", e.line());
        }
        let e = parse(&words(&["-q", "merge", "a"]), &never).unwrap_err();
        assert!(e.line().contains("comes first"), "{}", e.line());
        // A server command near a name, a word far from all, and `--` are commands.
        assert!(matches!(parse_ok(&["set", "k"]), Parsed::Bench(_)));
        let known = |w: &str| w.eq_ignore_ascii_case("hello");
        assert!(parse(&words(&["hello", "3"]), &known).is_ok());
        assert!(parse(&words(&["xadd", "s", "*", "f", "v"]), &never).is_ok());
        assert!(parse(&words(&["--", "compre", "a"]), &never).is_ok());
    }

    #[test]
    fn errors_are_one_line_with_their_prefix() {
        let e = parse(&words(&["merge"]), &never).unwrap_err();
        let line = e.line();
        assert!(
            line.starts_with("ringbench: merge: ") && line.contains("<FILE.json>"),
            "{line}"
        );
        let e = parse(&words(&["capacity", "-P", "x"]), &never).unwrap_err();
        assert!(e.line().starts_with("ringbench capacity: "), "{}", e.line());
        assert!(parse(&words(&["help"]), &never).unwrap_err().is_help());
        assert!(
            parse(&words(&["help", "merge"]), &never)
                .unwrap_err()
                .is_help()
        );
        assert!(
            parse(&words(&["capacity", "--help"]), &never)
                .unwrap_err()
                .is_help()
        );
    }
}
