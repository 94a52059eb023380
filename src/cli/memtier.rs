//! memtier_benchmark's command line, as its 2.x `--help` and option parser define it: every option it
//! takes, with its short letter, its `--name=value` and `--name value` forms and unambiguous
//! abbreviations of long names (getopt_long's). Parsing only: `config::memtier` checks the values and
//! maps them onto the engine, refusing in one line what ringbench cannot honour.

use clap::{ArgAction, Parser};
use std::ffi::OsString;

/// memtier_benchmark's options, as written (values are checked by `config::memtier`).
#[derive(Parser, Debug, Clone, Default)]
#[command(
    name = "memtier_benchmark",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true,
    about = "ringbench's memtier_benchmark personality: memtier_benchmark's command line and results"
)]
pub struct MemtierFlags {
    // Connection and general options.
    #[arg(
        short = 's',
        long = "server",
        visible_alias = "host",
        short_alias = 'h'
    )]
    pub server: Option<String>,
    #[arg(short = 'p', long = "port")]
    pub port: Option<String>,
    #[arg(short = 'S', long = "unix-socket")]
    pub unix_socket: Option<String>,
    #[arg(short = '4', long = "ipv4", action = ArgAction::SetTrue)]
    pub ipv4: bool,
    #[arg(short = '6', long = "ipv6", action = ArgAction::SetTrue)]
    pub ipv6: bool,
    #[arg(short = 'P', long = "protocol")]
    pub protocol: Option<String>,
    #[arg(short = 'a', long = "authenticate")]
    pub authenticate: Option<String>,
    #[arg(short = 'u', long = "uri")]
    pub uri: Option<String>,
    #[arg(long = "tls", action = ArgAction::SetTrue)]
    pub tls: bool,
    #[arg(long = "cert")]
    pub cert: Option<String>,
    #[arg(long = "key")]
    pub key: Option<String>,
    #[arg(long = "cacert")]
    pub cacert: Option<String>,
    #[arg(long = "tls-skip-verify", action = ArgAction::SetTrue)]
    pub tls_skip_verify: bool,
    #[arg(long = "tls-protocols")]
    pub tls_protocols: Option<String>,
    #[arg(long = "sni")]
    pub sni: Option<String>,
    #[arg(short = 'x', long = "run-count")]
    pub run_count: Option<String>,
    #[arg(short = 'D', long = "debug", action = ArgAction::Count)]
    pub debug: u8,
    #[arg(long = "cluster-mode", action = ArgAction::SetTrue)]
    pub cluster_mode: bool,
    #[arg(long = "help", action = ArgAction::SetTrue)]
    pub help: bool,
    #[arg(short = 'v', long = "version", action = ArgAction::SetTrue)]
    pub version: bool,

    // Results output options.
    #[arg(short = 'o', long = "out-file")]
    pub out_file: Option<String>,
    #[arg(long = "json-out-file")]
    pub json_out_file: Option<String>,
    #[arg(long = "client-stats")]
    pub client_stats: Option<String>,
    #[arg(long = "hdr-file-prefix")]
    pub hdr_file_prefix: Option<String>,
    #[arg(long = "show-config", action = ArgAction::SetTrue)]
    pub show_config: bool,
    #[arg(long = "hide-histogram", action = ArgAction::SetTrue)]
    pub hide_histogram: bool,
    #[arg(long = "print-percentiles")]
    pub print_percentiles: Option<String>,
    #[arg(long = "print-all-runs", action = ArgAction::SetTrue)]
    pub print_all_runs: bool,
    #[arg(long = "command-stats-breakdown")]
    pub command_stats_breakdown: Option<String>,
    #[arg(long = "statsd-host")]
    pub statsd_host: Option<String>,
    #[arg(long = "statsd-port")]
    pub statsd_port: Option<String>,
    #[arg(long = "statsd-prefix")]
    pub statsd_prefix: Option<String>,
    #[arg(long = "statsd-run-label")]
    pub statsd_run_label: Option<String>,
    #[arg(long = "graphite-port")]
    pub graphite_port: Option<String>,

    // Test options.
    #[arg(short = 'n', long = "requests")]
    pub requests: Option<String>,
    #[arg(long = "rate-limiting")]
    pub rate_limiting: Option<String>,
    #[arg(short = 'c', long = "clients")]
    pub clients: Option<String>,
    #[arg(short = 't', long = "threads")]
    pub threads: Option<String>,
    #[arg(long = "test-time")]
    pub test_time: Option<String>,
    #[arg(long = "clients-start")]
    pub clients_start: Option<String>,
    #[arg(long = "clients-step")]
    pub clients_step: Option<String>,
    #[arg(long = "step-duration")]
    pub step_duration: Option<String>,
    #[arg(long = "ratio")]
    pub ratio: Option<String>,
    #[arg(long = "pipeline")]
    pub pipeline: Option<String>,
    #[arg(long = "reconnect-interval")]
    pub reconnect_interval: Option<String>,
    #[arg(long = "reconnect-on-error", action = ArgAction::SetTrue)]
    pub reconnect_on_error: bool,
    #[arg(long = "max-reconnect-attempts")]
    pub max_reconnect_attempts: Option<String>,
    #[arg(long = "reconnect-backoff-factor")]
    pub reconnect_backoff_factor: Option<String>,
    #[arg(long = "connection-timeout")]
    pub connection_timeout: Option<String>,
    #[arg(long = "thread-conn-start-min-jitter-micros")]
    pub jitter_min: Option<String>,
    #[arg(long = "thread-conn-start-max-jitter-micros")]
    pub jitter_max: Option<String>,
    #[arg(long = "multi-key-get")]
    pub multi_key_get: Option<String>,
    #[arg(long = "select-db")]
    pub select_db: Option<String>,
    #[arg(long = "distinct-client-seed", action = ArgAction::SetTrue)]
    pub distinct_client_seed: bool,
    #[arg(long = "randomize", action = ArgAction::SetTrue)]
    pub randomize: bool,

    // Arbitrary commands.
    #[arg(long = "command", action = ArgAction::Append)]
    pub command: Vec<String>,
    #[arg(long = "command-ratio", action = ArgAction::Append)]
    pub command_ratio: Vec<String>,
    #[arg(long = "command-key-pattern", action = ArgAction::Append)]
    pub command_key_pattern: Vec<String>,
    #[arg(long = "monitor-input")]
    pub monitor_input: Option<String>,
    #[arg(long = "monitor-pattern")]
    pub monitor_pattern: Option<String>,
    #[arg(long = "scan-incremental-iteration", action = ArgAction::SetTrue)]
    pub scan_incremental_iteration: bool,
    #[arg(long = "scan-incremental-max-iterations")]
    pub scan_incremental_max_iterations: Option<String>,

    // Object options.
    #[arg(short = 'd', long = "data-size")]
    pub data_size: Option<String>,
    #[arg(long = "data-offset")]
    pub data_offset: Option<String>,
    #[arg(short = 'R', long = "random-data", action = ArgAction::SetTrue)]
    pub random_data: bool,
    #[arg(long = "data-size-range")]
    pub data_size_range: Option<String>,
    #[arg(long = "data-size-list")]
    pub data_size_list: Option<String>,
    #[arg(long = "data-size-pattern")]
    pub data_size_pattern: Option<String>,
    #[arg(long = "expiry-range")]
    pub expiry_range: Option<String>,

    // Imported data options.
    #[arg(long = "data-import")]
    pub data_import: Option<String>,
    #[arg(long = "data-verify", action = ArgAction::SetTrue)]
    pub data_verify: bool,
    #[arg(long = "verify-only", action = ArgAction::SetTrue)]
    pub verify_only: bool,
    #[arg(long = "generate-keys", action = ArgAction::SetTrue)]
    pub generate_keys: bool,
    #[arg(long = "no-expiry", action = ArgAction::SetTrue)]
    pub no_expiry: bool,

    // Key options.
    #[arg(long = "key-prefix")]
    pub key_prefix: Option<String>,
    #[arg(long = "key-minimum")]
    pub key_minimum: Option<String>,
    #[arg(long = "key-maximum")]
    pub key_maximum: Option<String>,
    #[arg(long = "key-pattern")]
    pub key_pattern: Option<String>,
    #[arg(long = "key-stddev")]
    pub key_stddev: Option<String>,
    #[arg(long = "key-median")]
    pub key_median: Option<String>,
    #[arg(long = "key-zipf-exp")]
    pub key_zipf_exp: Option<String>,

    // WAIT options.
    #[arg(long = "wait-ratio")]
    pub wait_ratio: Option<String>,
    #[arg(long = "num-slaves")]
    pub num_slaves: Option<String>,
    #[arg(long = "wait-timeout")]
    pub wait_timeout: Option<String>,

    /// The order the per-command options were written in: (argument index, option, value).
    #[arg(skip)]
    pub command_order: Vec<(usize, &'static str, String)>,
}

impl MemtierFlags {
    /// Parses memtier_benchmark's arguments (`args[0]` is the program name).
    pub fn parse_args(args: &[OsString]) -> Result<MemtierFlags, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let matches = MemtierFlags::command().try_get_matches_from(args)?;
        let mut flags = MemtierFlags::from_arg_matches(&matches)?;
        let mut order = Vec::new();
        for (id, name) in [
            ("command", "--command"),
            ("command_ratio", "--command-ratio"),
            ("command_key_pattern", "--command-key-pattern"),
        ] {
            let (Some(at), Some(values)) = (matches.indices_of(id), matches.get_many::<String>(id))
            else {
                continue;
            };
            order.extend(at.zip(values).map(|(i, v)| (i, name, v.clone())));
        }
        order.sort_by_key(|(i, _, _)| *i);
        flags.command_order = order;
        Ok(flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<MemtierFlags, clap::Error> {
        let v: Vec<OsString> = std::iter::once("memtier_benchmark")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        MemtierFlags::parse_args(&v)
    }

    #[test]
    fn spec_runner_lines_parse() {
        let f = parse(&[
            "--json-out-file",
            "r.json",
            "--port",
            "6379",
            "--server",
            "127.0.0.1",
            "--data-size",
            "100",
            "--command=SET __key__ __data__",
            "--command-key-pattern=P",
            "--command=GET __key__",
            "--command-ratio",
            "3",
            "-c",
            "50",
            "-t",
            "4",
            "--hide-histogram",
            "--test-time",
            "180",
            "--key-minimum=1",
            "--key-maximum",
            "1000000",
        ])
        .unwrap();
        assert_eq!(f.server.as_deref(), Some("127.0.0.1"));
        assert_eq!(f.threads.as_deref(), Some("4"));
        assert_eq!(f.json_out_file.as_deref(), Some("r.json"));
        let order: Vec<(&str, &str)> = f
            .command_order
            .iter()
            .map(|(_, n, v)| (*n, v.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("--command", "SET __key__ __data__"),
                ("--command-key-pattern", "P"),
                ("--command", "GET __key__"),
                ("--command-ratio", "3"),
            ]
        );
        assert!(f.hide_histogram);
    }

    #[test]
    fn host_short_forms_and_abbreviations() {
        let f = parse(&["-h", "db1", "--hide-hist", "-n", "allkeys"]).unwrap();
        assert_eq!(f.server.as_deref(), Some("db1"));
        assert!(f.hide_histogram);
        assert_eq!(f.requests.as_deref(), Some("allkeys"));
        let f = parse(&["--host=db2", "-S", "/tmp/s"]).unwrap();
        assert_eq!(f.server.as_deref(), Some("db2"));
        assert_eq!(f.unix_socket.as_deref(), Some("/tmp/s"));
        assert!(parse(&["--no-such-option"]).is_err());
    }
}
