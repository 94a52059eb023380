//! Turns parsed flags into one validated, immutable `Config`, in two steps: [`Settings::parse`] (pure:
//! every usage error is caught there, with no I/O) and [`Config::resolve`] (the I/O: DNS, TLS files, stdin,
//! the output files' checks, the memory check, building the suite). Errors are defined in `error.rs`.

pub(crate) mod cpus;
pub mod error;
pub(crate) mod limits;
pub(crate) mod memtier;
pub(crate) mod metrics;
pub mod paths;
pub mod run;
pub mod settings;
pub(crate) mod shape;
pub(crate) mod shard;
pub mod start_at;
pub mod suite;
pub(crate) mod verify;

use crate::config::paths::{check_writable, log_path};
use crate::net::target::{Setup, Target};
use crate::workload::{self, TestSpec};
use std::io::{Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

pub use error::{ConfigError, ResolveError, UsageError};
pub use run::{EngineSettings, OutputMode, ReadFrom, Results, RunSettings};
pub use settings::{Env, Settings, parse_uri};
pub use suite::suite_size;
use suite::{build_tests, load_replay, sizes};

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub tests: Vec<TestSpec>,
    /// Where results go (output mode, files, live metrics).
    pub results: Results,
    /// The server, the load, its pace and how to connect: the section the engine is handed.
    pub engine: Arc<EngineSettings>,
}

fn lookup(host: &str, port: u16) -> Result<SocketAddr, ResolveError> {
    match (host, port).to_socket_addrs() {
        Ok(mut addrs) => addrs.next().ok_or_else(|| ResolveError::NoAddress {
            host: host.to_string(),
            port,
        }),
        Err(source) => Err(ResolveError::Lookup {
            host: host.to_string(),
            port,
            source,
        }),
    }
}

/// `--json`, `--plot` and `--report`: each file can be written.
fn check_output_files(run: &RunSettings) -> Result<(), ConfigError> {
    if let Some(j) = run.results.json.as_deref().filter(|j| *j != "-") {
        check_writable("--json", j, j)?;
    }
    if let Some(p) = run.results.plot.as_ref().and_then(|p| p.to_str()) {
        check_writable("--plot", p, p)?;
    }
    if let Some(p) = run.results.report.as_ref().and_then(|p| p.to_str()) {
        check_writable("--report", p, p)?;
    }
    Ok(())
}

/// The default suite and --mix hold `-d` bytes per value: in every compiled request with a fixed -d,
/// in each test's value pool when values vary (`-d MIN-MAX`, `--random-data`). They are sized from two
/// builds with fixed 1- and 2-byte values and checked before the real build, which could not be undone
/// once it ran out of memory (or spent minutes drawing random pools for it).
fn check_value_memory(
    s: &Settings,
    per_request: bool,
    load: limits::Load,
    room: &limits::MemoryRoom,
) -> Result<(), ConfigError> {
    let value = s.run.pace.shape.value;
    let small = |d: usize| {
        let mut shape = s.run.pace.shape.clone();
        shape.value = workload::compose::ValueSpec {
            min: d,
            max: d,
            random: false,
        };
        build_tests(s, &shape, &mut std::io::empty(), &mut std::io::sink())
            .map(|t| sizes(&t, per_request))
    };
    let (one, two) = (small(1)?, small(2)?);
    let mut held = 0u64;
    let scaled: Vec<limits::TestSize> = one
        .iter()
        .zip(&two)
        .map(|(a, b)| {
            let mut t = limits::TestSize::scaled(a, b, value.max as u64);
            let has_values = b.request_len > a.request_len;
            if value.varies() {
                // Composed per request, from a pool of at least -d's maximum.
                t.per_connection |= has_values;
                held = held.saturating_add(if has_values { value.max as u64 } else { 0 });
            } else {
                held = held.saturating_add(t.request_len);
            }
            t
        })
        .collect();
    limits::check_memory(&scaled, held, load, room)?;
    Ok(())
}

/// `--hdr-out`: every test's log can be written, so a name taken by a folder is found before the run.
fn check_hdr_logs(prefix: &str, tests: &[TestSpec]) -> Result<(), ConfigError> {
    for t in tests {
        check_writable("--hdr-out", prefix, &log_path(prefix, &t.title))?;
        // A mix's commands have a log each.
        let variants = t.compose.as_ref().map_or(&[][..], |c| c.variants());
        for (i, v) in variants.iter().enumerate().filter(|_| variants.len() > 1) {
            let title = crate::config::paths::part_log_title(&t.title, i, &v.title);
            check_writable("--hdr-out", prefix, &log_path(prefix, &title))?;
        }
    }
    Ok(())
}

impl Config {
    /// The I/O a config needs once its settings are valid: checks that the output files can be written,
    /// builds the suite (reading `stdin` with `-x`; a warning goes to `stderr`) once its requests and
    /// buffers are known to fit in memory (/proc/meminfo, `RLIMIT_AS`: `limits::check_memory`), reads
    /// the TLS files and resolves the server's name.
    pub fn resolve(
        settings: Settings,
        stdin: &mut dyn Read,
        stderr: &mut dyn Write,
    ) -> Result<Config, ConfigError> {
        let mut s = settings;
        let replayed = load_replay(&mut s)?;
        check_output_files(&s.run)?;
        let room = limits::MemoryRoom::of_process();
        let per_request = s.run.pace.shape.rps.is_some();
        let load = limits::Load {
            data_size: s.run.load.data_size,
            clients: s.run.load.clients,
            pipeline: s.run.load.pipeline,
            executors: s.run.connect.threads.min(s.run.load.clients),
        };
        if replayed.is_none() && s.suite.command.is_empty() && s.run.pace.shape.value.max > 2 {
            check_value_memory(&s, per_request, load, &room)?;
        }
        let tests = match replayed.or_else(|| s.given_test.take()) {
            Some(t) => vec![t],
            None => build_tests(&s, &s.run.pace.shape, stdin, stderr)?,
        };
        let held = tests.iter().map(|t| t.template.bytes().len() as u64).sum();
        limits::check_memory(&sizes(&tests, per_request), held, load, &room)?;
        if let Some(p) = &s.run.results.hdr_out {
            check_hdr_logs(p, &tests)?;
        }
        let tls = match &s.tls {
            Some(opts) => Some(crate::net::tls::build(opts, &s.host)?),
            None => None,
        };
        let target = match &s.socket {
            Some(path) => Target::Unix(path.clone()),
            None => Target::Tcp {
                addr: lookup(&s.host, s.port)?,
                host: s.host,
                port: s.port,
            },
        };
        let run = s.run;
        Ok(Config {
            tests,
            results: run.results,
            engine: Arc::new(EngineSettings {
                target,
                setup: Setup {
                    user: s.user,
                    password: s.password,
                    dbnum: s.dbnum,
                    resp3: s.resp3,
                    tracking: s.tracking,
                    readonly: run.connect.cluster && run.connect.read_from != ReadFrom::Masters,
                },
                tls,
                load: run.load,
                pace: run.pace,
                connect: run.connect,
                record: run.record,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use std::time::Duration;

    #[test]
    fn a_bracketed_ipv6_host_is_unwrapped() {
        let c = config(&["-h", "[::1]", "-p", "7000"]).unwrap();
        assert_eq!(c.engine.target.display(), "[::1]:7000");
    }

    fn cli(args: &[&str]) -> Cli {
        Cli::parse_args(std::iter::once("ringbench").chain(args.iter().copied())).unwrap()
    }

    fn config(args: &[&str]) -> Result<Config, ConfigError> {
        let settings = Settings::parse(&cli(args), &Env::of_process())?;
        Config::resolve(settings, &mut std::io::empty(), &mut std::io::sink())
    }

    fn usage_msg(args: &[&str]) -> String {
        match config(args) {
            Err(e) if e.exit_code() == 2 => e.to_string(),
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn uri_parts() {
        let u = parse_uri("redis://bob:s%40cret@example.com:7000/3").unwrap();
        assert_eq!(u.user.as_deref(), Some("bob"));
        assert_eq!(u.password.as_deref(), Some("s@cret"));
        assert_eq!(u.host.as_deref(), Some("example.com"));
        assert_eq!((u.port, u.db, u.tls), (Some(7000), Some(3), false));
        let u = parse_uri("rediss://:pw@[::1]:6380").unwrap();
        assert_eq!(
            (u.host.as_deref(), u.port, u.tls),
            (Some("::1"), Some(6380), true)
        );
        assert_eq!(u.password.as_deref(), Some("pw"));
        assert!(u.user.is_none());
        assert!(parse_uri("http://x").is_err());
        let v = parse_uri("valkey://:pw@127.0.0.1:7002/1").unwrap();
        assert_eq!((v.tls, v.port, v.db), (false, Some(7002), Some(1)));
        assert_eq!(v.password.as_deref(), Some("pw"));
        assert!(parse_uri("valkeys://localhost").unwrap().tls);
        assert!(parse_uri("redis://h:99999").is_err());
    }

    #[test]
    fn uri_escapes_decode_as_bytes_and_errors_hide_the_password() {
        // Multi-byte text around and after a '%' is not cut inside a character.
        let u = parse_uri("redis://%C3%A9l%C3%A8ve:p%C3%A4ss%20w\u{f6}rd@h").unwrap();
        assert_eq!(u.user.as_deref(), Some("\u{e9}l\u{e8}ve"));
        assert_eq!(u.password.as_deref(), Some("p\u{e4}ss w\u{f6}rd"));
        for (uri, why) in [
            (
                "redis://:%a\u{e9}@h",
                "'%' not followed by two hexadecimal digits",
            ),
            (
                "redis://:secret%@h",
                "'%' not followed by two hexadecimal digits",
            ),
            (
                "redis://:secret%4@h",
                "'%' not followed by two hexadecimal digits",
            ),
            (
                "redis://:secret%zz@h",
                "'%' not followed by two hexadecimal digits",
            ),
            ("redis://:secret%ff@h", "do not decode to UTF-8"),
            ("redis://bo%b:secret@h", "the user name has a '%'"),
            ("redis://secret%@h", "the password has a '%'"),
            ("redis://:secret@h:99999", "port '99999'"),
            ("redis://u:secret@h/x", "database 'x'"),
        ] {
            let e = parse_uri(uri).unwrap_err().0;
            assert!(e.starts_with("invalid value 'redis://"), "{e}");
            assert!(e.contains("for '-u': ") && e.contains(why), "{uri}: {e}");
            assert!(!e.contains("secret") && !e.contains("%a\u{e9}"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let e = usage_msg(&["-u", "redis://:%a\u{e9}@h"]);
        assert_eq!(
            e,
            "invalid value 'redis://:***@h' for '-u': the password has a '%' not followed by two hexadecimal digits (write '%' as %25)"
        );
    }

    #[test]
    fn bad_values_name_the_flag() {
        assert!(usage_msg(&["-c", "0"]).contains("'-c'"));
        assert!(usage_msg(&["-n", "-5"]).contains("'-n'"));
        assert!(usage_msg(&["-P", "0"]).contains("'-P'"));
        assert!(usage_msg(&["-k", "2"]).contains("'-k'"));
        assert!(usage_msg(&["-p", "70000"]).contains("'-p'"));
        assert!(usage_msg(&["-t", "nope"]).contains("valid tests are ping_inline"));
        assert!(usage_msg(&["--user", "u"]).contains("'--user'"));
        assert!(usage_msg(&["--cluster", "--dbnum", "2"]).contains("'--dbnum'"));
        assert!(usage_msg(&["--json", "/no/such/dir/r.json"]).contains("'--json'"));
        assert!(usage_msg(&["--plot", ""]).contains("'--plot'"));
        assert!(usage_msg(&["--plot", "x.jpg"]).contains("invalid value 'x.jpg' for '--plot'"));
        assert!(config(&["--plot", "x.png"]).is_ok());
        assert!(config(&["--plot", "x.SVG"]).is_ok());
        assert!(usage_msg(&["--distribution", "zipf"]).contains("'-r"));
        assert!(config(&["--distribution", "zipf", "-r", "100"]).is_ok());
        assert!(usage_msg(&["--hdr-out", "/no/such/dir/p-"]).contains("'--hdr-out'"));
        assert!(usage_msg(&["--start-at", "12"]).contains("'--start-at'"));
    }

    #[test]
    fn uri_sets_target_and_credentials() {
        let c = config(&["-u", "redis://u:p@127.0.0.1:7001/2"]).unwrap();
        assert_eq!(c.engine.target.display(), "127.0.0.1:7001");
        assert_eq!(c.engine.setup.user.as_deref(), Some("u"));
        assert_eq!(c.engine.setup.dbnum, 2);
        assert!(!format!("{c:?}").contains("\"p\""));
    }

    #[test]
    fn rediss_turns_tls_on_and_tls_flags_need_it() {
        let c = config(&["-u", "rediss://localhost:6380", "--insecure"]).unwrap();
        let tls = c.engine.tls.as_ref().expect("rediss:// enables TLS");
        assert_eq!(tls.server_name.to_str(), "localhost");
        assert!(config(&["--insecure"]).is_err());
        assert!(usage_msg(&["--sni", "x"]).contains("'--sni' needs '--tls'"));
        assert!(usage_msg(&["--tls", "--insecure", "-s", "/tmp/r.sock"]).contains("'-s'"));
        let c = config(&["--tls", "--insecure", "--sni", "redis.example"]).unwrap();
        assert_eq!(
            c.engine.tls.as_ref().unwrap().server_name.to_str(),
            "redis.example"
        );
        assert!(config(&[]).unwrap().engine.tls.is_none());
    }

    #[test]
    fn custom_command_title() {
        let c = config(&["-r", "10", "lpush", "mylist", "ele:__rand_int__"]).unwrap();
        assert_eq!(c.tests.len(), 1);
        assert_eq!(c.tests[0].title, "lpush mylist ele:__rand_int__");
        assert_eq!(c.tests[0].command, "LPUSH");
        assert_eq!(c.tests[0].template.rand_offsets().len(), 1);
    }

    /// An environment that reads nothing: a fixed clock, no variables, unknown cores.
    fn quiet_env() -> Env {
        Env {
            now: Duration::from_secs(1_700_000_000),
            ..Env::default()
        }
    }

    #[test]
    fn parse_reads_only_what_it_is_given() {
        // An unresolvable name, a missing CA file, a folder that does not exist: all I/O, none looked at.
        let args = [
            "-h",
            "no-such-host.invalid",
            "--tls",
            "--cacert",
            "/nonexistent/ca.pem",
            "--json",
            "/no/such/dir/r.json",
            "--start-at",
            "1700000010",
        ];
        let s = Settings::parse(&cli(&args), &quiet_env()).unwrap();
        assert_eq!(s.host, "no-such-host.invalid");
        assert_eq!(s.run.pace.start_at, Some(1_700_000_010.0));
        // The same flags against the same environment give the same settings (the seed is the clock's).
        let again = Settings::parse(&cli(&args), &quiet_env()).unwrap();
        assert_eq!(s.run.load.seed, again.run.load.seed);
        // The environment is an argument: the shard index and the password come from it alone.
        let env = Env {
            shard_index: Some("2".into()),
            auth: Some("from-env".into()),
            ..quiet_env()
        };
        let s = Settings::parse(&cli(&["--shards", "3", "--user", "u"]), &env).unwrap();
        assert_eq!(s.run.load.shard.map(|sh| sh.index), Some(2));
        assert_eq!(s.password.as_deref(), Some("from-env"));
        assert!(!format!("{s:?}").contains("from-env"));
        let e = Settings::parse(&cli(&["--shards", "3"]), &quiet_env()).unwrap_err();
        assert!(e.0.contains("JOB_COMPLETION_INDEX"), "{e}");
    }

    #[test]
    fn an_unresolvable_name_fails_only_at_resolve() {
        let s = Settings::parse(&cli(&["-h", "no-such-host.invalid"]), &quiet_env()).unwrap();
        let e = Config::resolve(s, &mut std::io::empty(), &mut std::io::sink()).unwrap_err();
        assert!(matches!(e, ConfigError::Resolve(_)), "{e:?}");
        assert_eq!(e.exit_code(), 1);
        assert!(
            e.to_string()
                .starts_with("Could not connect to no-such-host.invalid:6379: "),
            "{e}"
        );
    }

    #[test]
    fn a_missing_tls_file_fails_only_at_resolve() {
        let args = ["--tls", "--cacert", "/nonexistent/ca.pem"];
        let s = Settings::parse(&cli(&args), &quiet_env()).unwrap();
        let e = Config::resolve(s, &mut std::io::empty(), &mut std::io::sink()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string()
                .starts_with("invalid value for '--cacert': /nonexistent/ca.pem"),
            "{e}"
        );
        let e = Settings::parse(&cli(&["--json", "/no/such/dir/r.json"]), &quiet_env())
            .map(|s| Config::resolve(s, &mut std::io::empty(), &mut std::io::sink()))
            .unwrap()
            .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.to_string(),
            "invalid value '/no/such/dir/r.json' for '--json': folder '/no/such/dir' does not exist"
        );
    }

    #[test]
    fn usage_mistakes_are_found_without_io() {
        let e = |args: &[&str]| Settings::parse(&cli(args), &quiet_env()).unwrap_err().0;
        assert!(e(&["-c", "0"]).contains("'-c'"));
        assert!(e(&["--sni", "x"]).contains("'--sni' needs '--tls'"));
        assert!(e(&["--plot", "x.jpg"]).contains("invalid value 'x.jpg' for '--plot'"));
        assert!(e(&["--start-at", "12"]).contains("'--start-at'"));
        // The usable cores are the environment's too.
        let env = Env {
            usable_cores: vec![0, 1],
            ..quiet_env()
        };
        let e = Settings::parse(&cli(&["--cpus", "5"]), &env).unwrap_err().0;
        assert!(
            e.contains("core 5 is not one this process may use (0-1)"),
            "{e}"
        );
    }

    #[test]
    fn memtier_commands_take_their_shard_slice_and_make_one_mix() {
        use crate::workload::keys::Distribution;
        let args = [
            "--shard",
            "1/2",
            "-r",
            "100",
            "--command",
            "SET __key__ v",
            "--command-key-pattern",
            "S",
            "--command",
            "GET __key__",
            "--command-ratio",
            "3",
        ];
        let s = Settings::parse(&cli(&args), &quiet_env()).unwrap();
        let c = &s.suite.commands;
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0].pattern,
            Some(Distribution::Sequential { part: 1, parts: 2 })
        );
        assert_eq!((c[1].ratio, c[1].pattern), (3, None));
        let cfg = Config::resolve(s, &mut std::io::empty(), &mut std::io::sink()).unwrap();
        assert_eq!(cfg.tests.len(), 1);
        assert_eq!(cfg.tests[0].title, "MIX SET __key__ v:1,GET __key__:3");
        let comp = cfg.tests[0].compose.as_ref().unwrap();
        let names: Vec<&str> = comp.variants().iter().map(|v| v.command.as_str()).collect();
        assert_eq!(names, ["SET", "GET"]);
    }

    #[test]
    fn a_command_with_t_warns_on_the_given_writer() {
        let s = Settings::parse(&cli(&["-t", "get", "set", "k", "v"]), &quiet_env()).unwrap();
        let mut err = Vec::new();
        let c = Config::resolve(s, &mut std::io::empty(), &mut err).unwrap();
        assert_eq!(c.tests[0].title, "set k v");
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "WARNING: -t is ignored when a command is given\n"
        );
    }

    #[test]
    fn x_reads_the_given_stdin() {
        let s = Settings::parse(&cli(&["-x", "set", "k"]), &quiet_env()).unwrap();
        let c = Config::resolve(s, &mut &b"value"[..], &mut std::io::sink()).unwrap();
        assert_eq!(
            c.tests[0].template.bytes(),
            b"*3\r\n$3\r\nset\r\n$1\r\nk\r\n$5\r\nvalue\r\n"
        );
    }
}
