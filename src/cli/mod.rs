//! Command-line flags, spelled as redis-benchmark spells them. Parsing only: no I/O, no validation beyond types.

pub(crate) mod capacity;
pub(crate) mod command;
pub(crate) mod fleet;
pub(crate) mod memtier;
pub(crate) mod subcommands;

use clap::{ArgAction, ArgMatches, Args, Command};
use std::ffi::OsString;

/// Flags of a benchmark run. `-h` is the host (as in redis-benchmark); help is `--help` only. The same
/// flags are the benchmark flags of `capacity` and `fleet kubernetes` (flattened into them, `command.rs`).
#[derive(Args, Debug, Clone)]
pub struct Cli {
    /// Server hostname
    #[arg(short = 'h', value_name = "hostname", default_value = "127.0.0.1")]
    pub host: String,
    /// Server port
    #[arg(
        short = 'p',
        value_name = "port",
        default_value_t = 6379,
        allow_negative_numbers = true
    )]
    pub port: i64,
    /// Server unix socket (overrides host and port)
    #[arg(short = 's', value_name = "socket")]
    pub socket: Option<String>,
    /// Password for AUTH (REDISCLI_AUTH in the environment works too)
    #[arg(short = 'a', value_name = "password")]
    pub password: Option<String>,
    /// User name for ACL-style AUTH user pass; needs -a
    #[arg(long = "user", value_name = "username")]
    pub user: Option<String>,
    #[arg(
        short = 'u',
        value_name = "uri",
        help = "Server URI: redis://[user:pass@]host[:port][/db] (rediss:// for TLS; valkey:// and valkeys:// too)"
    )]
    pub uri: Option<String>,
    /// Number of parallel connections
    #[arg(
        short = 'c',
        value_name = "clients",
        default_value_t = 50,
        allow_negative_numbers = true
    )]
    pub clients: i64,
    /// Total number of requests per test
    #[arg(
        short = 'n',
        value_name = "requests",
        default_value_t = 100_000,
        allow_negative_numbers = true
    )]
    pub requests: i64,
    /// Data size of SET/GET values in bytes, or a range MIN-MAX (each value's length drawn from it)
    #[arg(short = 'd', value_name = "size", default_value = "3")]
    pub data_size: String,
    /// SELECT this db number before the run
    #[arg(
        long = "dbnum",
        value_name = "db",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub dbnum: i64,
    /// Start sessions in RESP3 mode (HELLO 3)
    #[arg(short = '3', long = "resp3", action = ArgAction::SetTrue)]
    pub resp3: bool,
    /// Number of executors (each pinned to its own core)
    #[arg(long = "threads", value_name = "num", allow_negative_numbers = true)]
    pub threads: Option<i64>,
    /// Pin the executors to these cores, in order (e.g. 2,3 or 0-1; default: the cores this process may use)
    #[arg(long = "cpus", value_name = "list")]
    pub cpus: Option<String>,
    /// Redis Cluster mode: discover the masters and send each request to its key's slot owner
    #[arg(long = "cluster", action = ArgAction::SetTrue)]
    pub cluster: bool,
    /// --cluster: read from replicas: no (masters only), yes (reads to replicas only), all (reads spread
    /// over masters and replicas); writes always go to masters
    #[arg(long = "rfr", value_name = "no|yes|all")]
    pub rfr: Option<String>,
    /// How many seconds requests for slots no master answers (--cluster), or reconnects the server
    /// refuses (after a stall, say), are retried before the run gives up
    #[arg(
        long = "failover-timeout",
        value_name = "seconds",
        default_value_t = 10.0
    )]
    pub failover_timeout: f64,
    /// Send CLIENT TRACKING on before the run
    #[arg(long = "enable-tracking", action = ArgAction::SetTrue)]
    pub enable_tracking: bool,
    /// 1 = keep alive, 0 = reconnect after each batch
    #[arg(
        short = 'k',
        value_name = "boolean",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub keepalive: i64,
    /// Replace __rand_int__ with a 12-digit random number in [0, keyspacelen)
    #[arg(short = 'r', value_name = "keyspacelen", allow_negative_numbers = true)]
    pub keyspace: Option<i64>,
    #[arg(
        help = "Pipeline <numreq> requests per connection",
        short = 'P',
        value_name = "numreq",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub pipeline: i64,
    /// Quiet: one line per test
    #[arg(short = 'q', action = ArgAction::SetTrue)]
    pub quiet: bool,
    /// Output in CSV format
    #[arg(long = "csv", action = ArgAction::SetTrue)]
    pub csv: bool,
    /// Loop: run the tests until interrupted
    #[arg(short = 'l', action = ArgAction::SetTrue)]
    pub loop_forever: bool,
    /// Run the whole suite this many times; then each test's median, min and max (memtier's flag)
    #[arg(long = "run-count", value_name = "N", default_value_t = 1)]
    pub run_count: u64,
    /// Only run this comma-separated list of tests
    #[arg(short = 't', value_name = "tests")]
    pub tests: Option<String>,
    /// Idle mode: open the connections and wait
    #[arg(short = 'I', action = ArgAction::SetTrue)]
    pub idle: bool,
    /// Read the last argument of the command from stdin
    #[arg(short = 'x', action = ArgAction::SetTrue)]
    pub stdin_last_arg: bool,
    /// Random seed (default: time based)
    #[arg(long = "seed", value_name = "n")]
    pub seed: Option<u64>,
    /// Latency histogram significant figures (1 to 5)
    #[arg(
        long = "precision",
        value_name = "n",
        default_value_t = 3,
        allow_negative_numbers = true
    )]
    pub precision: i64,
    /// Print server error replies as they come (at most one per second)
    #[arg(short = 'e', action = ArgAction::SetTrue)]
    pub show_errors: bool,
    /// Establish a secure TLS connection
    #[arg(long = "tls", action = ArgAction::SetTrue)]
    pub tls: bool,
    /// Server name indication for TLS (also the name the server's certificate must match)
    #[arg(long = "sni", value_name = "host")]
    pub sni: Option<String>,
    /// CA certificate file to verify with
    #[arg(long = "cacert", value_name = "file")]
    pub cacert: Option<String>,
    /// Directory where trusted CA certificates are stored (default: the system's trusted roots)
    #[arg(long = "cacertdir", value_name = "dir")]
    pub cacertdir: Option<String>,
    /// Allow insecure TLS connection by skipping certificate validation
    #[arg(long = "insecure", action = ArgAction::SetTrue)]
    pub insecure: bool,
    /// Client certificate to authenticate with
    #[arg(long = "cert", value_name = "file")]
    pub cert: Option<String>,
    /// Private key file to authenticate with
    #[arg(long = "key", value_name = "file")]
    pub key: Option<String>,
    /// Preferred TLS 1.2 ciphers (OpenSSL names, ':'-separated)
    #[arg(long = "tls-ciphers", value_name = "list")]
    pub tls_ciphers: Option<String>,
    /// Preferred TLS 1.3 ciphersuites (':'-separated)
    #[arg(long = "tls-ciphersuites", value_name = "list")]
    pub tls_ciphersuites: Option<String>,
    /// Key exchange groups to offer, ':'-separated (X25519, prime256v1/P-256, secp384r1/P-384)
    #[arg(long = "tls-groups", value_name = "list")]
    pub tls_groups: Option<String>,
    /// Write the results as JSON to FILE ('-' for stdout, then no text report)
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<String>,
    #[arg(
        long = "hdr-out",
        value_name = "PREFIX",
        help = "Write one HdrHistogram interval log per test to PREFIX<test>.hlog (one interval per second)"
    )]
    pub hdr_out: Option<String>,
    /// Draw latency by percentile, one line per test: SVG, or PNG for a .png name
    #[arg(long = "plot", value_name = "FILE.svg|FILE.png")]
    pub plot: Option<String>,
    /// Write one self-contained HTML page of the run: header, tables, charts, failures
    #[arg(long = "report", value_name = "FILE.html")]
    pub report: Option<String>,
    /// Serve live Prometheus metrics at http://ADDR:PORT/metrics while the run lasts (port 0: any free one)
    #[arg(long = "metrics-listen", value_name = "ADDR:PORT")]
    pub metrics_listen: Option<String>,
    /// After the run, keep serving the final metrics until a scrape has read them, at most this long
    #[arg(long = "metrics-linger", value_name = "seconds", default_value = "5")]
    pub metrics_linger: String,
    /// Push rates and percentiles once a second to this StatsD server over UDP
    #[arg(long = "statsd", value_name = "HOST:PORT")]
    pub statsd: Option<String>,
    /// StatsD server host name (memtier's flag; the port is --statsd-port)
    #[arg(long = "statsd-host", value_name = "HOST")]
    pub statsd_host: Option<String>,
    /// StatsD server UDP port, with --statsd-host
    #[arg(long = "statsd-port", value_name = "PORT", default_value_t = 8125)]
    pub statsd_port: u16,
    /// Prefix of every StatsD metric name
    #[arg(
        long = "statsd-prefix",
        value_name = "PREFIX",
        default_value = "ringbench"
    )]
    pub statsd_prefix: String,
    /// Label of this run in StatsD metric names, to tell runs apart on a dashboard
    #[arg(
        long = "statsd-run-label",
        value_name = "LABEL",
        default_value = "default"
    )]
    pub statsd_run_label: String,
    /// Wait until this Unix time (seconds, fractions allowed) before the first test
    #[arg(long = "start-at", value_name = "UNIX_TIME")]
    pub start_at: Option<String>,
    /// Run shard INDEX of COUNT of one run made by COUNT processes (its share of -n, --rps, -c and sequential keys)
    #[arg(long = "shard", value_name = "INDEX/COUNT")]
    pub shard: Option<String>,
    /// Like --shard, with the index read from JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job)
    #[arg(long = "shards", value_name = "COUNT")]
    pub shards: Option<String>,
    /// Open loop: send this many requests per second in total, on a fixed schedule
    #[arg(long = "rps", value_name = "rate")]
    pub rps: Option<f64>,
    /// Run each test for this many seconds instead of -n requests
    #[arg(long = "duration", value_name = "seconds")]
    pub duration: Option<f64>,
    /// Run each test this many seconds first and discard its figures
    #[arg(long = "warmup", value_name = "seconds")]
    pub warmup: Option<f64>,
    #[arg(
        long = "distribution",
        value_name = "name",
        default_value = "uniform",
        help = "Key distribution for __rand_int__: uniform, sequential, zipf[:exponent] or gaussian"
    )]
    pub distribution: String,
    /// Same as --distribution sequential (valkey-benchmark's spelling)
    #[arg(long = "sequential", action = ArgAction::SetTrue)]
    pub sequential: bool,
    /// Make each written value differ (bytes drawn from a random pool)
    #[arg(long = "random-data", action = ArgAction::SetTrue)]
    pub random_data: bool,
    /// One test mixing tests or commands by weight, e.g. get:80,set:20 or 'GET __key__:80,SET __key__ __data__:20'
    #[arg(long = "mix", value_name = "name:weight,...")]
    pub mix: Option<String>,
    /// CSV or TSV file whose rows fill the command's __field:name__ placeholders, one row per request (as valkey-benchmark's --dataset)
    #[arg(long = "dataset", value_name = "file", value_parser = clap::builder::OsStringValueParser::new())]
    pub dataset: Option<std::ffi::OsString>,
    /// Use only the first N rows of --dataset (0: all, the default)
    #[arg(long = "maxdocs", value_name = "num")]
    pub maxdocs: Option<u64>,
    /// The element each document of an XML --dataset is (needed for a name with .xml), e.g. page
    #[arg(long = "xml-root-element", value_name = "name")]
    pub xml_root_element: Option<String>,
    /// Write every key of -r, then read each back and check its value (memtier_benchmark's flag)
    #[arg(long = "data-verify", action = ArgAction::SetTrue)]
    pub data_verify: bool,
    /// Only the read pass of --data-verify: check the values an earlier --data-verify wrote (memtier_benchmark's flag)
    #[arg(long = "verify-only", action = ArgAction::SetTrue)]
    pub verify_only: bool,
    /// A command of the mix, as memtier_benchmark takes it (repeatable), e.g. "SET __key__ __data__"
    #[arg(long = "command", value_name = "\"CMD ARGS\"", action = ArgAction::Append)]
    pub mix_command: Vec<String>,
    /// The weight of the --command before it (default 1)
    #[arg(long = "command-ratio", value_name = "N", action = ArgAction::Append)]
    pub command_ratio: Vec<String>,
    /// The key pattern of the --command before it: R random, S sequential, P parallel, G gaussian, Z zipf
    #[arg(long = "command-key-pattern", value_name = "R|S|P|G|Z", action = ArgAction::Append)]
    pub command_key_pattern: Vec<String>,
    /// Every SET gets a TTL (EX seconds) drawn from this range, as memtier_benchmark's
    #[arg(long = "expiry-range", value_name = "MIN-MAX")]
    pub expiry_range: Option<String>,
    /// --command, --command-ratio and --command-key-pattern in the order written (filled in by `parse_args`)
    #[arg(skip)]
    pub command_flags: Vec<CommandFlag>,
    /// Send the commands of a redis-cli MONITOR capture (or a file of one command a line), each once, in order
    #[arg(long = "replay", visible_alias = "monitor-input", value_name = "FILE")]
    pub replay: Option<String>,
    /// --replay's pace: max (closed loop, the default), recorded (the capture's own times) or a speed-up such as 2x
    #[arg(long = "replay-pace", value_name = "max|recorded|Nx")]
    pub replay_pace: Option<String>,
    /// Whether -n was given on the command line (not a flag: filled in by `parse_args`)
    #[arg(skip)]
    pub requests_given: bool,
    /// Whether --distribution was given on the command line (filled in by `parse_args`)
    #[arg(skip)]
    pub distribution_given: bool,
    /// Fail a request whose reply takes longer than this many milliseconds (default: wait forever); also
    /// how long each reply to the run's own questions (CONFIG GET, INFO, CLUSTER SLOTS) may take
    #[arg(long = "timeout", value_name = "ms", allow_negative_numbers = true)]
    pub timeout: Option<i64>,
    /// Give up connecting (and setting a connection up) after this many milliseconds; without
    /// --timeout, also how long each reply to the run's own questions may take
    #[arg(
        long = "connect-timeout",
        value_name = "ms",
        default_value_t = 5000,
        allow_negative_numbers = true
    )]
    pub connect_timeout: i64,
    /// Print help
    #[arg(long = "help", action = ArgAction::Help)]
    pub help: Option<bool>,
    /// Print version
    #[arg(long = "version", action = ArgAction::Version)]
    pub version: Option<bool>,
    /// A command to benchmark instead of the default suite
    #[arg(value_name = "COMMAND ARGS", allow_negative_numbers = true, value_parser = clap::builder::OsStringValueParser::new())]
    pub command: Vec<std::ffi::OsString>,
}

/// One of memtier_benchmark's per-command flags, in the order written: a ratio or key pattern applies
/// to the `--command` before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandFlag {
    Command(String),
    Ratio(String),
    KeyPattern(String),
}

/// The benchmark's flags alone (no subcommands): what `Cli::parse_args` reads.
fn bench_command() -> Command {
    Cli::augment_args(
        Command::new("ringbench")
            .version(env!("CARGO_PKG_VERSION"))
            .disable_help_flag(true)
            .disable_version_flag(true)
            .args_override_self(true),
    )
}

/// Every argument of `command` and of its subcommands, at any depth.
fn all_arguments(command: &Command) -> Vec<&clap::Arg> {
    let mut all: Vec<&clap::Arg> = command.get_arguments().collect();
    for sub in command.get_subcommands() {
        all.extend(all_arguments(sub));
    }
    all
}

/// The words as clap should read them: `-3` is a flag (RESP3) even though it looks like a negative
/// number, unless it is a flag's value (`-P -3`) or comes after `--`; a command may take a negative
/// number as an argument (`zadd z -1 m`). `command` is the definition the words are parsed with.
pub(crate) fn resp3_words<I, T>(command: &Command, args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let arguments = all_arguments(command);
    // Whether `a` is a flag whose value is the next argument (`-P`, `--threads`, ...).
    let takes_value = |a: &std::ffi::OsStr| -> bool {
        let Some(a) = a.to_str() else { return false };
        let wants = |arg: &&clap::Arg| arg.get_action().takes_values();
        if let Some(long) = a.strip_prefix("--") {
            return !long.contains('=')
                && arguments
                    .iter()
                    .any(|x| x.get_long() == Some(long) && wants(x));
        }
        let mut chars = a.chars();
        match (chars.next(), chars.next(), chars.next()) {
            (Some('-'), Some(c), None) => arguments
                .iter()
                .any(|x| x.get_short() == Some(c) && wants(x)),
            _ => false,
        }
    };
    let mut options_ended = false;
    let mut value_next = false;
    let mut given = Vec::new();
    for a in args {
        let a: OsString = a.into();
        let is_value = std::mem::take(&mut value_next);
        if a == "--" && !is_value {
            options_ended = true;
        }
        if options_ended || is_value {
            given.push(a);
        } else if a == "-3" {
            // `-P -3` gives -P the value -3 (refused with the flag's range), not RESP3.
            given.push("--resp3".into());
        } else {
            value_next = takes_value(&a);
            given.push(a);
        }
    }
    given
}

impl Cli {
    /// Parses a benchmark's arguments (no subcommand) as redis-benchmark reads them.
    pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString>,
    {
        let command = bench_command();
        let words = resp3_words(&command, args);
        let matches = command.try_get_matches_from(words)?;
        Cli::from_matches(&matches)
    }

    /// The flags of `matches` (the benchmark's own, or those of a subcommand that takes them), with what
    /// clap cannot tell by itself filled in: the order of the `--command` flags, and which defaults were
    /// written on the command line.
    pub(crate) fn from_matches(matches: &ArgMatches) -> Result<Cli, clap::Error> {
        use clap::{FromArgMatches, parser::ValueSource};
        let mut cli = Cli::from_arg_matches(matches)?;
        let mut flags: Vec<(usize, CommandFlag)> = Vec::new();
        let mut ordered = |id: &str, values: &[String], make: fn(String) -> CommandFlag| {
            if let Some(at) = matches.indices_of(id) {
                flags.extend(at.zip(values).map(|(i, v)| (i, make(v.clone()))));
            }
        };
        ordered("mix_command", &cli.mix_command, CommandFlag::Command);
        ordered("command_ratio", &cli.command_ratio, CommandFlag::Ratio);
        ordered(
            "command_key_pattern",
            &cli.command_key_pattern,
            CommandFlag::KeyPattern,
        );
        flags.sort_by_key(|(i, _)| *i);
        cli.command_flags = flags.into_iter().map(|(_, f)| f).collect();
        // --duration conflicts with -n only when -n was written, not with its default.
        cli.requests_given = matches.value_source("requests") == Some(ValueSource::CommandLine);
        cli.distribution_given =
            matches.value_source("distribution") == Some(ValueSource::CommandLine);
        if cli.sequential {
            if cli.distribution_given && cli.distribution != "sequential" {
                return Err(clap::Error::raw(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "'--sequential' conflicts with '--distribution {}'",
                        cli.distribution
                    ),
                ));
            }
            cli.distribution = "sequential".into();
            cli.distribution_given = true;
        }
        Ok(cli)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Cli {
        Cli::parse_args(std::iter::once("ringbench").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn defaults_match_redis_benchmark() {
        let c = parse(&[]);
        assert_eq!(c.host, "127.0.0.1");
        assert_eq!(c.port, 6379);
        assert_eq!(c.clients, 50);
        assert_eq!(c.requests, 100_000);
        assert_eq!(c.data_size, "3");
        assert_eq!(c.pipeline, 1);
        assert_eq!(c.keepalive, 1);
        assert_eq!(c.dbnum, 0);
        assert!(c.keyspace.is_none() && c.threads.is_none() && c.command.is_empty());
        assert!(!c.cluster);
    }

    #[test]
    fn cluster_flag() {
        assert!(parse(&["--cluster", "-t", "set"]).cluster);
    }

    #[test]
    fn rate_and_workload_flags_parse() {
        let c = parse(&[
            "--rps",
            "5000",
            "--duration",
            "3",
            "--warmup",
            "0.5",
            "--distribution",
            "zipf:0.9",
            "--random-data",
            "--mix",
            "get:80,set:20",
            "-d",
            "10-20",
        ]);
        assert_eq!(
            (c.rps, c.duration, c.warmup),
            (Some(5000.0), Some(3.0), Some(0.5))
        );
        assert_eq!(c.distribution, "zipf:0.9");
        assert!(c.random_data && !c.requests_given);
        assert_eq!(c.mix.as_deref(), Some("get:80,set:20"));
        let m = parse(&[
            "--command",
            "SET __key__ __data__",
            "--command-ratio",
            "2",
            "--command=GET __key__",
            "--command-key-pattern",
            "G",
            "--command-ratio=3",
        ]);
        assert_eq!(
            m.command_flags,
            [
                CommandFlag::Command("SET __key__ __data__".into()),
                CommandFlag::Ratio("2".into()),
                CommandFlag::Command("GET __key__".into()),
                CommandFlag::KeyPattern("G".into()),
                CommandFlag::Ratio("3".into()),
            ]
        );
        assert!(m.command.is_empty());
        assert_eq!(c.data_size, "10-20");
        assert!(parse(&["-n", "100000"]).requests_given);
        assert_eq!(parse(&[]).distribution, "uniform");
    }

    #[test]
    fn dash_h_is_the_host() {
        assert_eq!(parse(&["-h", "::1"]).host, "::1");
    }

    #[test]
    fn each_flag_parses() {
        let c = parse(&[
            "-p",
            "7000",
            "-s",
            "/tmp/r.sock",
            "-a",
            "pw",
            "--user",
            "u",
            "-c",
            "7",
            "-n",
            "9",
            "-d",
            "100",
            "--dbnum",
            "3",
            "-3",
            "--threads",
            "2",
            "--enable-tracking",
            "-k",
            "0",
            "-r",
            "1000",
            "-P",
            "16",
            "-q",
            "--csv",
            "-l",
            "-t",
            "set,get",
            "-I",
            "-x",
            "--seed",
            "42",
            "--precision",
            "2",
            "-e",
            "-u",
            "redis://h:1",
            "--json",
            "out.json",
            "--hdr-out",
            "run1-",
            "--plot",
            "p.svg",
            "--start-at",
            "1700000000.5",
            "--shard",
            "1/3",
            "--shards",
            "3",
        ]);
        assert_eq!(c.shard.as_deref(), Some("1/3"));
        assert_eq!(c.shards.as_deref(), Some("3"));
        assert_eq!(c.json.as_deref(), Some("out.json"));
        assert_eq!(c.hdr_out.as_deref(), Some("run1-"));
        assert_eq!(c.plot.as_deref(), Some("p.svg"));
        assert_eq!(c.start_at.as_deref(), Some("1700000000.5"));
        assert_eq!(c.port, 7000);
        assert_eq!(c.socket.as_deref(), Some("/tmp/r.sock"));
        assert_eq!(c.password.as_deref(), Some("pw"));
        assert_eq!(c.user.as_deref(), Some("u"));
        assert_eq!(
            (c.clients, c.requests, c.data_size.as_str(), c.dbnum),
            (7, 9, "100", 3)
        );
        assert!(
            c.resp3 && c.enable_tracking && c.quiet && c.csv && c.loop_forever,
            "{c:?}"
        );
        assert!(c.idle && c.stdin_last_arg && c.show_errors);
        assert_eq!(c.threads, Some(2));
        assert_eq!(c.keepalive, 0);
        assert_eq!(c.keyspace, Some(1000));
        assert_eq!(c.pipeline, 16);
        assert_eq!(c.tests.as_deref(), Some("set,get"));
        assert_eq!(c.seed, Some(42));
        assert_eq!(c.precision, 2);
        assert_eq!(c.uri.as_deref(), Some("redis://h:1"));
    }

    #[test]
    fn tls_flags_parse() {
        let c = parse(&[
            "--tls",
            "--sni",
            "redis.example",
            "--cacert",
            "ca.pem",
            "--cacertdir",
            "/etc/ssl/certs",
            "--insecure",
            "--cert",
            "c.pem",
            "--key",
            "k.pem",
            "--tls-ciphers",
            "ECDHE-RSA-AES128-GCM-SHA256",
            "--tls-ciphersuites",
            "TLS_AES_128_GCM_SHA256",
        ]);
        assert!(c.tls && c.insecure);
        assert_eq!(c.sni.as_deref(), Some("redis.example"));
        assert_eq!(c.cacert.as_deref(), Some("ca.pem"));
        assert_eq!(c.cacertdir.as_deref(), Some("/etc/ssl/certs"));
        assert_eq!(
            (c.cert.as_deref(), c.key.as_deref()),
            (Some("c.pem"), Some("k.pem"))
        );
        assert_eq!(
            c.tls_ciphers.as_deref(),
            Some("ECDHE-RSA-AES128-GCM-SHA256")
        );
        assert_eq!(
            c.tls_ciphersuites.as_deref(),
            Some("TLS_AES_128_GCM_SHA256")
        );
    }

    #[test]
    fn options_after_the_command_are_options() {
        let c = parse(&[
            "lpush",
            "mylist",
            "ele:__rand_int__",
            "-r",
            "100",
            "-n",
            "5",
        ]);
        assert_eq!(c.command, ["lpush", "mylist", "ele:__rand_int__"]);
        assert_eq!((c.keyspace, c.requests), (Some(100), 5));
    }

    #[test]
    fn double_dash_ends_options() {
        let c = parse(&["-n", "5", "--", "set", "k", "-q"]);
        assert_eq!(c.command, ["set", "k", "-q"]);
        assert!(!c.quiet);
    }

    #[test]
    fn a_negative_count_is_a_value_not_resp3() {
        let c = parse(&["-P", "-3", "-c", "-1"]);
        assert_eq!((c.pipeline, c.clients, c.resp3), (-3, -1, false));
        assert!(parse(&["-3", "-P", "4"]).resp3);
    }

    #[test]
    fn command_arguments_are_bytes() {
        use std::os::unix::ffi::OsStringExt;
        let raw = std::ffi::OsString::from_vec(vec![b'k', 0xff, b'\r']);
        let c = Cli::parse_args([
            std::ffi::OsString::from("ringbench"),
            "set".into(),
            raw.clone(),
            "v".into(),
        ])
        .unwrap();
        assert_eq!(c.command, ["set".into(), raw, "v".into()]);
    }

    #[test]
    fn negative_numbers_in_a_command_are_arguments() {
        let c = parse(&["zadd", "z", "-1", "m"]);
        assert_eq!(c.command, ["zadd", "z", "-1", "m"]);
    }
}
