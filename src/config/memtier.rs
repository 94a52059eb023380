//! memtier_benchmark's options checked and mapped onto ringbench's: the benchmark flags (`Cli`) the
//! engine runs with, memtier's test (its `--ratio` SET/GET or its `--command` list, in memtier's order
//! on each connection, keys named `--key-prefix` + a decimal number), and how its results are written.
//! An option ringbench cannot honour is refused in one line that names it.

use crate::cli::Cli;
use crate::cli::memtier::MemtierFlags;
use crate::config::error::UsageError;
use crate::workload::TestSpec;
use crate::workload::compose::{Composer, Entry, Expiry, MemtierStyle, Sizes, ValueSpec};
use crate::workload::memtier_keys::{KeySpace, Pattern};
use std::sync::Arc;

/// memtier's default `-c` (per thread), `-t`, `-n` (per client), `-d`, `--ratio` and key range.
const CLIENTS: u64 = 50;
const THREADS: u64 = 4;
const REQUESTS: u64 = 10_000;
const DATA_SIZE: usize = 32;
const KEY_MAXIMUM: u64 = 10_000_000;
/// memtier's seed when `--randomize` is not given: every run draws the same keys.
const CONSTANT_SEED: u64 = 0x006d_656d_7469_6572;

/// How memtier's results are written.
#[derive(Debug, Clone, PartialEq)]
pub struct MemtierOutput {
    /// `--print-percentiles` (default 50, 99, 99.9).
    pub percentiles: Vec<f64>,
    pub hide_histogram: bool,
    pub print_all_runs: bool,
    /// `--command-stats-breakdown line`: each command line its own row (default: by command name).
    pub by_line: bool,
    pub json_out_file: Option<String>,
    pub hdr_file_prefix: Option<String>,
    /// The configuration memtier echoes in its JSON, as `key: value` pairs.
    pub echo: Vec<(String, serde_json::Value)>,
    /// `-t`, `-c` (per thread), `-n` (per client; `None` with `--test-time`) and `--test-time`, as the
    /// run information lines say them.
    pub threads: u64,
    pub clients: u64,
    pub requests: Option<u64>,
    pub test_time: u64,
}

/// One command of memtier's test: its arguments (placeholders expanded), title and name, ratio and
/// key pattern.
#[derive(Debug, Clone, PartialEq)]
struct Command {
    args: Vec<Vec<u8>>,
    title: String,
    name: String,
    ratio: u64,
    pattern: Pattern,
}

/// memtier's command line mapped: the flags the engine runs with, its test, its outputs.
#[derive(Debug, Clone)]
pub struct MemtierPlan {
    pub cli: Cli,
    pub output: MemtierOutput,
    /// `-n` per client (none with `--test-time`).
    pub per_connection: Option<u64>,
    /// `--distinct-client-seed`.
    pub distinct_seeds: bool,
    /// `-o`: the file stdout's report goes to.
    pub out_file: Option<String>,
    /// `--rate-limiting`: each connection's rate, in memtier's bursts.
    pub burst_rate: Option<u64>,
    commands: Vec<Command>,
    keys: KeySpace,
    value: ValueSpec,
    sizes: Option<Sizes>,
    expiry: Option<Expiry>,
}

fn usage(msg: String) -> UsageError {
    UsageError(msg)
}

fn refuse(option: &str, why: &str) -> UsageError {
    usage(format!("option '{option}' is not supported: {why}"))
}

/// A whole number above 0 for `option`.
fn positive(option: &str, v: &str) -> Result<u64, UsageError> {
    match v.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(usage(format!(
            "invalid value '{v}' for '{option}': must be a whole number greater than zero"
        ))),
    }
}

/// `A:B` (memtier's `--ratio`), each a whole number.
fn ratio(option: &str, v: &str) -> Result<(u64, u64), UsageError> {
    let bad = || {
        usage(format!(
            "invalid value '{v}' for '{option}': must be expressed as [0-n]:[0-n]"
        ))
    };
    let (a, b) = v.split_once(':').ok_or_else(bad)?;
    let (a, b) = (
        a.parse::<u64>().map_err(|_| bad())?,
        b.parse::<u64>().map_err(|_| bad())?,
    );
    if a + b == 0 || a.max(b) > crate::workload::mix::MAX_WEIGHT {
        return Err(bad());
    }
    Ok((a, b))
}

/// `MIN-MAX` (memtier's ranges).
fn range(option: &str, v: &str, lowest: u64) -> Result<(u64, u64), UsageError> {
    let bad = || {
        usage(format!(
            "invalid value '{v}' for '{option}': must be expressed as [{lowest}-n]-[1-n] with the minimum not above the maximum"
        ))
    };
    let (a, b) = v.split_once('-').ok_or_else(bad)?;
    let (a, b) = (
        a.parse::<u64>().map_err(|_| bad())?,
        b.parse::<u64>().map_err(|_| bad())?,
    );
    if a < lowest || b < 1 || a > b {
        return Err(bad());
    }
    Ok((a, b))
}

/// The options ringbench cannot honour, each refused by name.
fn refused(f: &MemtierFlags) -> Result<(), UsageError> {
    let checks: [(bool, &str, &str); 22] = [
        (
            f.ipv6,
            "--ipv6",
            "ringbench connects to the address the host name resolves to first",
        ),
        (
            f.ipv4,
            "--ipv4",
            "ringbench connects to the address the host name resolves to first",
        ),
        (
            f.tls_protocols.is_some(),
            "--tls-protocols",
            "ringbench's TLS offers TLS 1.2 and 1.3",
        ),
        (f.debug > 0, "--debug", "ringbench has no debug output"),
        (
            f.client_stats.is_some(),
            "--client-stats",
            "ringbench keeps no per-client files",
        ),
        (
            f.show_config,
            "--show-config",
            "ringbench does not print its configuration",
        ),
        (
            f.graphite_port.is_some(),
            "--graphite-port",
            "ringbench sends no Graphite annotations",
        ),
        (
            f.clients_start.is_some() || f.clients_step.is_some() || f.step_duration.is_some(),
            "--clients-start",
            "the client staircase is not implemented; use ringbench capacity",
        ),
        (
            f.reconnect_interval.is_some(),
            "--reconnect-interval",
            "not implemented (ringbench's -k 0 reconnects after every batch)",
        ),
        (
            f.reconnect_on_error,
            "--reconnect-on-error",
            "ringbench always reconnects a lost connection",
        ),
        (
            f.max_reconnect_attempts.is_some(),
            "--max-reconnect-attempts",
            "ringbench always reconnects a lost connection",
        ),
        (
            f.reconnect_backoff_factor.is_some(),
            "--reconnect-backoff-factor",
            "ringbench's reconnect backoff is fixed",
        ),
        (
            f.jitter_min.is_some() || f.jitter_max.is_some(),
            "--thread-conn-start-min-jitter-micros",
            "ringbench opens its connections together",
        ),
        (
            f.multi_key_get.is_some(),
            "--multi-key-get",
            "memtier_benchmark itself has no multi-key GET for redis",
        ),
        (
            f.monitor_input.is_some() || f.monitor_pattern.is_some(),
            "--monitor-input",
            "use ringbench --replay FILE for a MONITOR capture",
        ),
        (
            f.scan_incremental_iteration || f.scan_incremental_max_iterations.is_some(),
            "--scan-incremental-iteration",
            "SCAN cursors are not followed",
        ),
        (
            f.data_offset.is_some(),
            "--data-offset",
            "SETRANGE/GETRANGE requests are not implemented",
        ),
        (
            f.data_import.is_some() || f.generate_keys || f.no_expiry,
            "--data-import",
            "importing a memcached dump is not implemented",
        ),
        (
            f.data_verify || f.verify_only,
            "--data-verify",
            "use ringbench --data-verify (its own key names)",
        ),
        (
            f.wait_ratio.is_some() || f.num_slaves.is_some() || f.wait_timeout.is_some(),
            "--wait-ratio",
            "WAIT requests are not implemented",
        ),
        (
            f.command_stats_breakdown.as_deref().is_some_and(|b| {
                !b.eq_ignore_ascii_case("command") && !b.eq_ignore_ascii_case("line")
            }),
            "--command-stats-breakdown",
            "must be 'command' or 'line'",
        ),
        (
            f.statsd_host.is_none()
                && (f.statsd_port.is_some()
                    || f.statsd_prefix.is_some()
                    || f.statsd_run_label.is_some()),
            "--statsd-port",
            "needs --statsd-host",
        ),
    ];
    match checks.iter().find(|(given, _, _)| *given) {
        Some((_, option, why)) => Err(refuse(option, why)),
        None => Ok(()),
    }
}

/// `--print-percentiles`: numbers in [0, 100], comma-separated.
fn percentiles(v: Option<&str>) -> Result<Vec<f64>, UsageError> {
    let Some(v) = v else {
        return Ok(vec![50.0, 99.0, 99.9]);
    };
    v.split(',')
        .map(|p| match p.trim().parse::<f64>() {
            Ok(x) if (0.0..=100.0).contains(&x) => Ok(x),
            _ => Err(usage(format!(
                "invalid value '{v}' for '--print-percentiles': quantiles must be expressed as [0.0-100.0],[0.0-100.0](,...)"
            ))),
        })
        .collect()
}

/// A `--command` line's arguments, its `__key__` (the first in an argument) named as memtier names keys
/// and a whole `__data__` left for the value.
fn command_args(line: &str, prefix: &str) -> Result<Vec<Vec<u8>>, UsageError> {
    let (words, _) = crate::workload::mix::split_words(line)
        .map_err(|why| usage(format!("invalid value '{line}' for '--command': {why}")))?;
    let key = b"__key__";
    let data = crate::workload::compose::DATA;
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        if let Some(i) = memchr::memmem::find(&w, key) {
            let mut a = w[..i].to_vec();
            a.extend_from_slice(prefix.as_bytes());
            a.extend_from_slice(crate::workload::RAND_INT);
            a.extend_from_slice(&w[i + key.len()..]);
            out.push(a);
        } else if memchr::memmem::find(&w, data).is_some() && w != data {
            return Err(usage(format!(
                "invalid value '{line}' for '--command': the data placeholder can't be combined with other data"
            )));
        } else {
            out.push(w);
        }
    }
    Ok(out)
}

impl MemtierPlan {
    /// Checks memtier's options and maps them; `cores` are the cores this process may use.
    pub fn from_flags(f: &MemtierFlags, cores: usize) -> Result<MemtierPlan, UsageError> {
        refused(f)?;
        let mut cli = Cli::parse_args(["ringbench"]).map_err(|e| usage(e.to_string()))?;
        connection(f, &mut cli)?;
        let threads = f
            .threads
            .as_deref()
            .map_or(Ok(THREADS), |v| positive("--threads", v))?;
        let clients = f
            .clients
            .as_deref()
            .map_or(Ok(CLIENTS), |v| positive("--clients", v))?;
        let total = threads.saturating_mul(clients);
        cli.clients = i64::try_from(total).unwrap_or(i64::MAX);
        cli.threads = Some(threads.min(cores.max(1) as u64) as i64);
        if let Some(p) = &f.pipeline {
            cli.pipeline = positive("--pipeline", p)? as i64;
        }
        if let Some(x) = &f.run_count {
            cli.run_count = positive("--run-count", x)?;
        }
        let keys = key_space(f, total)?;
        let per_connection = requests(f, &keys, &mut cli)?;
        let burst_rate = match &f.rate_limiting {
            Some(r) => {
                // Per connection, in memtier's bursts; --rps is the whole run's rate.
                let rate = positive("--rate-limiting", r)?;
                cli.rps = Some(rate as f64 * total as f64);
                Some(rate)
            }
            None => None,
        };
        cli.seed = Some(if f.randomize {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        } else {
            CONSTANT_SEED
        });
        let (value, sizes) = value_spec(f, &keys)?;
        let expiry = match f.expiry_range.as_deref() {
            None => None,
            Some(v) => match range("--expiry-range", v, 0)? {
                (0, 0) => None,
                (0, _) => {
                    return Err(refuse(
                        "--expiry-range",
                        "a range from 0 (some SETs without a TTL) is not implemented; start it at 1",
                    ));
                }
                (min, max) => Some(Expiry { min, max }),
            },
        };
        let commands = commands(f, &keys, expiry.is_some())?;
        let output = MemtierOutput {
            percentiles: percentiles(f.print_percentiles.as_deref())?,
            hide_histogram: f.hide_histogram,
            print_all_runs: f.print_all_runs,
            by_line: f
                .command_stats_breakdown
                .as_deref()
                .is_some_and(|b| b.eq_ignore_ascii_case("line")),
            json_out_file: f.json_out_file.clone(),
            hdr_file_prefix: f.hdr_file_prefix.clone(),
            echo: echo(f, threads, clients, &keys, per_connection),
            threads,
            clients,
            requests: per_connection,
            test_time: cli.duration.map_or(0, |d| d as u64),
        };
        Ok(MemtierPlan {
            cli,
            output,
            per_connection,
            distinct_seeds: f.distinct_client_seed,
            out_file: f.out_file.clone(),
            burst_rate,
            commands,
            keys,
            value,
            sizes,
            expiry,
        })
    }

    /// memtier's one test: its commands in their order on every connection.
    pub fn test(&self, seed: u64) -> TestSpec {
        let templates: Vec<_> = self
            .commands
            .iter()
            .map(|c| crate::workload::RequestTemplate::from_args(&c.args, true))
            .collect();
        let entries: Vec<Entry<'_>> = self
            .commands
            .iter()
            .zip(&templates)
            .map(|(c, t)| Entry {
                weight: c.ratio,
                ..Entry::one(&c.title, &c.name, t)
            })
            .collect();
        let mut keys = self.keys.clone();
        keys.patterns = self.commands.iter().map(|c| c.pattern).collect();
        let style = MemtierStyle {
            keys: Some(Arc::new(keys)),
            sizes: self.sizes.clone(),
        };
        let composer = Composer::memtier(&entries, self.value, self.expiry, seed, style);
        let first = &self.commands[0];
        TestSpec {
            title: "ALL STATS".into(),
            command: if self.commands.len() == 1 {
                first.name.clone()
            } else {
                "MIX".into()
            },
            template: templates[0].clone(),
            compose: Some(Arc::new(composer)),
            replay: None,
        }
    }
}

/// Where the server is and how to talk to it.
fn connection(f: &MemtierFlags, cli: &mut Cli) -> Result<(), UsageError> {
    if let Some(s) = &f.server {
        cli.host = s.clone();
    }
    if let Some(p) = &f.port {
        cli.port = match p.parse::<u16>() {
            Ok(n) if n > 0 => i64::from(n),
            _ => {
                return Err(usage(format!(
                    "invalid value '{p}' for '--port': port must be a number in the range [1-65535]"
                )));
            }
        };
    }
    cli.socket = f.unix_socket.clone();
    cli.uri = f.uri.clone();
    match f.protocol.as_deref() {
        None | Some("redis") | Some("resp2") => {}
        Some("resp3") => cli.resp3 = true,
        Some(p @ ("memcache_text" | "memcache_binary")) => {
            return Err(refuse(
                "--protocol",
                &format!("ringbench speaks RESP only, not {p}"),
            ));
        }
        Some(p) => {
            return Err(usage(format!(
                "invalid value '{p}' for '--protocol': supported protocols are 'redis', 'resp2' and 'resp3'"
            )));
        }
    }
    if let Some(a) = &f.authenticate {
        match a.split_once(':') {
            Some((user, pass)) if !user.is_empty() => {
                cli.user = Some(user.to_string());
                cli.password = Some(pass.to_string());
            }
            _ => cli.password = Some(a.clone()),
        }
    }
    cli.tls = f.tls;
    cli.cert = f.cert.clone();
    cli.key = f.key.clone();
    cli.cacert = f.cacert.clone();
    cli.insecure = f.tls_skip_verify;
    cli.sni = f.sni.clone();
    cli.cluster = f.cluster_mode;
    if let Some(db) = &f.select_db {
        cli.dbnum = db.parse::<u32>().map_err(|_| {
            usage(format!(
                "invalid value '{db}' for '--select-db': select-db must be greater or equal zero"
            ))
        })? as i64;
    }
    if let Some(t) = &f.connection_timeout {
        let secs = t.parse::<u64>().map_err(|_| {
            usage(format!(
                "invalid value '{t}' for '--connection-timeout': must be a whole number of seconds"
            ))
        })?;
        // memtier's 0 waits as long as the system does.
        cli.connect_timeout = if secs == 0 {
            600_000
        } else {
            secs.min(600) as i64 * 1000
        };
    }
    if let Some(h) = &f.statsd_host {
        cli.statsd_host = Some(h.clone());
        if let Some(p) = &f.statsd_port {
            cli.statsd_port = match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(usage(format!(
                        "invalid value '{p}' for '--statsd-port': statsd-port must be a valid port number"
                    )));
                }
            };
        }
        cli.statsd_prefix = f.statsd_prefix.clone().unwrap_or_else(|| "memtier".into());
        if let Some(l) = &f.statsd_run_label {
            cli.statsd_run_label = l.clone();
        }
    }
    Ok(())
}

/// The key range and patterns (`--key-*`).
fn key_space(f: &MemtierFlags, clients: u64) -> Result<KeySpace, UsageError> {
    let min = match &f.key_minimum {
        Some(v) => positive("--key-minimum", v)?,
        None => 0,
    };
    let max = match &f.key_maximum {
        Some(v) => positive("--key-maximum", v)?,
        None => KEY_MAXIMUM,
    };
    if min > max {
        return Err(usage(format!(
            "invalid value '{max}' for '--key-maximum': it is below --key-minimum {min}"
        )));
    }
    let float = |option: &str, v: &Option<String>, ok: fn(f64) -> bool, why: &str| match v {
        None => Ok(0.0),
        Some(s) => match s.parse::<f64>() {
            Ok(x) if ok(x) => Ok(x),
            _ => Err(usage(format!("invalid value '{s}' for '{option}': {why}"))),
        },
    };
    let stddev = float(
        "--key-stddev",
        &f.key_stddev,
        |x| x > 0.0,
        "must be greater than zero",
    )?;
    let median = float(
        "--key-median",
        &f.key_median,
        |x| x > 0.0,
        "must be greater than zero",
    )?;
    if median != 0.0 && (median < min as f64 || median > max as f64) {
        return Err(usage(format!(
            "invalid value '{median}' for '--key-median': must be between key-minimum and key-maximum"
        )));
    }
    let zipf_exp = match float(
        "--key-zipf-exp",
        &f.key_zipf_exp,
        |x| x > 0.0 && x < 5.0,
        "must be within interval (0, 5)",
    )? {
        0.0 => 1.0,
        e => e,
    };
    Ok(KeySpace {
        min,
        max,
        patterns: Vec::new(),
        stddev,
        median,
        zipf_exp,
        clients,
        seed: if f.randomize {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.subsec_nanos() ^ d.as_secs() as u32)
        } else {
            0
        },
        distinct: f.distinct_client_seed,
    })
}

/// `-n` (per client, or `allkeys`) or `--test-time`: the run's total and each connection's share.
fn requests(f: &MemtierFlags, keys: &KeySpace, cli: &mut Cli) -> Result<Option<u64>, UsageError> {
    if f.requests.is_some() && f.test_time.is_some() {
        return Err(usage(
            "'--test-time' and '--requests' are mutually exclusive: give one of them".into(),
        ));
    }
    if let Some(t) = &f.test_time {
        cli.duration = Some(positive("--test-time", t)? as f64);
        return Ok(None);
    }
    let n = match f.requests.as_deref() {
        None => REQUESTS,
        Some("allkeys") => {
            let parallel = f.key_pattern.as_deref() == Some("P:P");
            let span = keys.max - keys.min;
            if parallel {
                span / keys.clients.max(1) + 1
            } else {
                span.max(1)
            }
        }
        Some(v) => positive("--requests", v)?,
    };
    let total = n.saturating_mul(keys.clients);
    cli.requests = i64::try_from(total).map_err(|_| {
        usage(format!(
            "invalid value '{n}' for '--requests': {n} per client x {} clients is too many",
            keys.clients
        ))
    })?;
    cli.requests_given = true;
    Ok(Some(n))
}

/// Value sizes (`-d`, `--data-size-range` with `--data-size-pattern`, `--data-size-list`) and
/// `--random-data`.
fn value_spec(f: &MemtierFlags, keys: &KeySpace) -> Result<(ValueSpec, Option<Sizes>), UsageError> {
    let limit = crate::config::shape::MAX_DATA_SIZE as u64;
    let given = [
        f.data_size.is_some(),
        f.data_size_range.is_some(),
        f.data_size_list.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(usage(
            "'--data-size', '--data-size-range' and '--data-size-list' cannot be used together: give one".into(),
        ));
    }
    let pattern = f.data_size_pattern.as_deref().unwrap_or("R");
    if pattern != "R" && pattern != "S" {
        return Err(usage(format!(
            "invalid value '{pattern}' for '--data-size-pattern': must be either R or S"
        )));
    }
    let mut sizes = None;
    let (min, max) = if let Some(d) = &f.data_size {
        let n = positive("--data-size", d)?.min(limit);
        (n, n)
    } else if let Some(r) = &f.data_size_range {
        let (a, b) = range("--data-size-range", r, 1)?;
        if pattern == "S" {
            sizes = Some(Sizes::ByKey {
                key_min: keys.min,
                key_max: keys.max,
            });
        }
        (a, b)
    } else if let Some(l) = &f.data_size_list {
        let list = size_list(l)?;
        let lo = list.iter().map(|(s, _)| *s).min().unwrap_or(1);
        let hi = list.iter().map(|(s, _)| *s).max().unwrap_or(1);
        sizes = Some(Sizes::Cycle(list));
        (lo as u64, hi as u64)
    } else {
        (DATA_SIZE as u64, DATA_SIZE as u64)
    };
    let spec = ValueSpec {
        min: min.min(limit) as usize,
        max: max.min(limit) as usize,
        random: f.random_data,
    };
    Ok((spec, sizes))
}

/// `--data-size-list SIZE:WEIGHT,...`.
fn size_list(v: &str) -> Result<Vec<(usize, u64)>, UsageError> {
    let bad = || {
        usage(format!(
            "invalid value '{v}' for '--data-size-list': must be expressed as [size1:weight1],...[sizeN:weightN]"
        ))
    };
    let limit = crate::config::shape::MAX_DATA_SIZE as usize;
    v.split(',')
        .map(|item| {
            let (s, w) = item.split_once(':').ok_or_else(bad)?;
            let size = s.parse::<usize>().ok().filter(|s| (1..=limit).contains(s));
            let weight = w.parse::<u64>().ok().filter(|w| *w > 0);
            size.zip(weight).ok_or_else(bad)
        })
        .collect()
}

/// A pattern letter for `option`.
fn pattern(option: &str, v: &str) -> Result<Pattern, UsageError> {
    Pattern::parse(v).ok_or_else(|| {
        usage(format!(
            "invalid value '{v}' for '{option}': must be one of S, R, G, P or Z"
        ))
    })
}

/// memtier's commands: its `--command` list with ratios and key patterns, or `--ratio` SET:GET.
fn commands(f: &MemtierFlags, keys: &KeySpace, expiry: bool) -> Result<Vec<Command>, UsageError> {
    let prefix = f.key_prefix.as_deref().unwrap_or("memtier-");
    if f.command.is_empty() {
        if let Some((_, option, value)) = f.command_order.first() {
            return Err(usage(format!(
                "'{option} {value}' applies to the --command before it: give a --command first"
            )));
        }
        return ratio_commands(f, prefix, expiry, keys);
    }
    if f.key_pattern.is_some() {
        return Err(usage(
            "'--key-pattern' cannot be used with '--command': give each command its --command-key-pattern".into(),
        ));
    }
    if f.ratio.is_some() {
        return Err(usage(
            "'--ratio' cannot be used with '--command': give each command its --command-ratio"
                .into(),
        ));
    }
    let mut out: Vec<(Command, bool, bool)> = Vec::new();
    for (_, option, value) in &f.command_order {
        if *option == "--command" {
            let args = command_args(value, prefix)?;
            let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
            out.push((
                Command {
                    args,
                    title: value.trim().to_string(),
                    name,
                    ratio: 1,
                    pattern: Pattern::Random,
                },
                false,
                false,
            ));
            continue;
        }
        let Some((cmd, ratio_given, pattern_given)) = out.last_mut() else {
            return Err(usage(format!(
                "'{option} {value}' applies to the --command before it: give a --command first"
            )));
        };
        let given = if *option == "--command-ratio" {
            ratio_given
        } else {
            pattern_given
        };
        if std::mem::replace(given, true) {
            return Err(usage(format!(
                "'{option}' was given twice for --command '{}'",
                cmd.title
            )));
        }
        if *option == "--command-ratio" {
            cmd.ratio = positive(option, value)?.min(crate::workload::mix::MAX_WEIGHT);
        } else {
            cmd.pattern = pattern(option, value)?;
        }
    }
    let commands: Vec<Command> = out.into_iter().map(|(c, _, _)| c).collect();
    let parallel = commands
        .iter()
        .filter(|c| c.pattern == Pattern::Parallel)
        .count();
    if parallel > 0 && parallel != commands.len() {
        return Err(usage(
            "invalid value 'P' for '--command-key-pattern': the parallel key pattern must be given to every command".into(),
        ));
    }
    let _ = keys;
    Ok(commands)
}

/// `--ratio SET:GET` with `--key-pattern SET:GET`: SETs (SETEX with `--expiry-range`), then GETs.
fn ratio_commands(
    f: &MemtierFlags,
    prefix: &str,
    expiry: bool,
    keys: &KeySpace,
) -> Result<Vec<Command>, UsageError> {
    let (sets, gets) = ratio("--ratio", f.ratio.as_deref().unwrap_or("1:10"))?;
    let (set_p, get_p) = match f.key_pattern.as_deref() {
        None => (Pattern::Random, Pattern::Random),
        Some(v) => {
            let bad = || {
                usage(format!(
                    "invalid value '{v}' for '--key-pattern': must be in the format of [S/R/G/P/Z]:[S/R/G/P/Z]"
                ))
            };
            let (a, b) = v.split_once(':').ok_or_else(bad)?;
            let (a, b) = (
                Pattern::parse(a).ok_or_else(bad)?,
                Pattern::parse(b).ok_or_else(bad)?,
            );
            if (a == Pattern::Parallel || b == Pattern::Parallel) && a != b {
                return Err(usage(format!(
                    "invalid value '{v}' for '--key-pattern': the parallel key pattern must be given to both SET and GET"
                )));
            }
            (a, b)
        }
    };
    if (f.key_stddev.is_some() || f.key_median.is_some())
        && set_p != Pattern::Gaussian
        && get_p != Pattern::Gaussian
    {
        return Err(usage(
            "'--key-stddev' and '--key-median' are only allowed together with --key-pattern G"
                .into(),
        ));
    }
    let _ = keys;
    let key = format!("{prefix}__rand_int__").into_bytes();
    let data = crate::workload::compose::DATA.to_vec();
    let mut out = Vec::new();
    if sets > 0 {
        let (name, args) = if expiry {
            let ttl = crate::workload::compose::EXPIRY.to_vec();
            ("SETEX", vec![b"SETEX".to_vec(), key.clone(), ttl, data])
        } else {
            ("SET", vec![b"SET".to_vec(), key.clone(), data])
        };
        out.push(Command {
            args,
            title: "SET".into(),
            name: name.into(),
            ratio: sets,
            pattern: set_p,
        });
    }
    if gets > 0 {
        out.push(Command {
            args: vec![b"GET".to_vec(), key],
            title: "GET".into(),
            name: "GET".into(),
            ratio: gets,
            pattern: get_p,
        });
    }
    Ok(out)
}

/// The configuration memtier's JSON echoes.
fn echo(
    f: &MemtierFlags,
    threads: u64,
    clients: u64,
    keys: &KeySpace,
    per_connection: Option<u64>,
) -> Vec<(String, serde_json::Value)> {
    use serde_json::json;
    let or = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| d.to_string());
    vec![
        ("server".into(), json!(or(&f.server, "localhost"))),
        (
            "port".into(),
            json!(
                f.port
                    .as_deref()
                    .and_then(|p| p.parse::<u64>().ok())
                    .unwrap_or(6379)
            ),
        ),
        ("unix socket".into(), json!(or(&f.unix_socket, ""))),
        ("protocol".into(), json!(or(&f.protocol, "redis"))),
        ("out_file".into(), json!(or(&f.out_file, "stdout"))),
        ("client_stats".into(), json!("")),
        (
            "run_count".into(),
            json!(
                f.run_count
                    .as_deref()
                    .and_then(|p| p.parse::<u64>().ok())
                    .unwrap_or(1)
            ),
        ),
        ("debug".into(), json!(0)),
        ("requests".into(), json!(per_connection.unwrap_or(0))),
        (
            "rate_limit".into(),
            json!(
                f.rate_limiting
                    .as_deref()
                    .and_then(|p| p.parse::<u64>().ok())
                    .unwrap_or(0)
            ),
        ),
        ("clients".into(), json!(clients)),
        ("threads".into(), json!(threads)),
        (
            "test_time".into(),
            json!(
                f.test_time
                    .as_deref()
                    .and_then(|p| p.parse::<u64>().ok())
                    .unwrap_or(0)
            ),
        ),
        ("ratio".into(), json!(or(&f.ratio, "1:10"))),
        (
            "pipeline".into(),
            json!(
                f.pipeline
                    .as_deref()
                    .and_then(|p| p.parse::<u64>().ok())
                    .unwrap_or(1)
            ),
        ),
        (
            "data_size".into(),
            json!(
                f.data_size
                    .as_deref()
                    .and_then(|p| p.parse::<u64>().ok())
                    .unwrap_or(if f.data_size_range.is_some() {
                        0
                    } else {
                        DATA_SIZE as u64
                    })
            ),
        ),
        (
            "data_size_range".into(),
            json!(or(&f.data_size_range, "0-0")),
        ),
        (
            "random_data".into(),
            json!(if f.random_data { "true" } else { "false" }),
        ),
        ("expiry_range".into(), json!(or(&f.expiry_range, "0-0"))),
        ("key_prefix".into(), json!(or(&f.key_prefix, "memtier-"))),
        ("key_minimum".into(), json!(keys.min)),
        ("key_maximum".into(), json!(keys.max)),
        ("key_pattern".into(), json!(or(&f.key_pattern, "R:R"))),
        (
            "select_db".into(),
            json!(
                f.select_db
                    .as_deref()
                    .and_then(|p| p.parse::<u64>().ok())
                    .unwrap_or(0)
            ),
        ),
        (
            "distinct_client_seed".into(),
            json!(if f.distinct_client_seed {
                "true"
            } else {
                "false"
            }),
        ),
        (
            "randomize".into(),
            json!(if f.randomize { "true" } else { "false" }),
        ),
        (
            "cluster_mode".into(),
            json!(if f.cluster_mode { "true" } else { "false" }),
        ),
        ("reconnect_interval".into(), json!(0)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn plan(args: &[&str]) -> Result<MemtierPlan, UsageError> {
        let v: Vec<OsString> = std::iter::once("memtier_benchmark")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        MemtierPlan::from_flags(&MemtierFlags::parse_args(&v).unwrap(), 2)
    }

    #[test]
    fn defaults_are_memtiers() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.cli.clients, 200);
        assert_eq!(p.cli.threads, Some(2));
        assert_eq!(p.cli.requests, 2_000_000);
        assert_eq!(p.per_connection, Some(10_000));
        assert_eq!((p.keys.min, p.keys.max), (0, 10_000_000));
        let names: Vec<(&str, u64)> = p
            .commands
            .iter()
            .map(|c| (c.name.as_str(), c.ratio))
            .collect();
        assert_eq!(names, [("SET", 1), ("GET", 10)]);
        assert_eq!(p.commands[1].args[1], b"memtier-__rand_int__");
        assert_eq!((p.value.min, p.value.max), (32, 32));
        assert_eq!(p.output.percentiles, [50.0, 99.0, 99.9]);
    }

    #[test]
    fn commands_keep_their_order_ratios_and_patterns() {
        let p = plan(&[
            "--command=SET __key__ __data__",
            "--command-ratio=2",
            "--command-key-pattern=S",
            "--command",
            "HSET h:__key__:x f __data__",
            "--key-prefix=k",
            "-t",
            "1",
            "-c",
            "3",
            "-n",
            "7",
        ])
        .unwrap();
        assert_eq!(p.cli.requests, 21);
        let c = &p.commands;
        assert_eq!((c[0].ratio, c[0].pattern), (2, Pattern::Sequential));
        assert_eq!((c[1].ratio, c[1].pattern), (1, Pattern::Random));
        assert_eq!(c[1].args[1], b"h:k__rand_int__:x");
        assert_eq!(c[1].name, "HSET");
    }

    #[test]
    fn mistakes_and_unsupported_options_name_the_option() {
        let e = |a: &[&str]| plan(a).unwrap_err().0;
        assert!(e(&["--pipeline=0"]).contains("'--pipeline'"));
        assert!(e(&["--ratio=a:b"]).contains("'--ratio'"));
        assert!(e(&["--key-pattern=X:R"]).contains("'--key-pattern'"));
        assert!(e(&["--key-pattern=P:R"]).contains("parallel"));
        assert!(e(&["-n", "5", "--test-time=3"]).contains("mutually exclusive"));
        assert!(e(&["--protocol=memcache_text"]).contains("'--protocol'"));
        assert!(e(&["--wait-ratio=1:1"]).contains("'--wait-ratio'"));
        assert!(e(&["--command=SET k x__data__"]).contains("'--command'"));
        assert!(e(&["--command-ratio=2"]).contains("give a --command first"));
        assert!(e(&["--command=GET __key__", "--ratio=1:1"]).contains("'--ratio'"));
        assert!(e(&["--data-size=3", "--data-size-range=1-5"]).contains("--data-size-range"));
        assert!(e(&["--data-size-list=3:1,x"]).contains("'--data-size-list'"));
        assert!(e(&["--data-size-pattern=Q"]).contains("'--data-size-pattern'"));
    }

    #[test]
    fn allkeys_and_expiry() {
        let p = plan(&[
            "-n",
            "allkeys",
            "--key-minimum=1",
            "--key-maximum=1000",
            "--key-pattern=P:P",
            "-t",
            "2",
            "-c",
            "5",
        ])
        .unwrap();
        assert_eq!(p.per_connection, Some(999 / 10 + 1));
        let p = plan(&["--expiry-range=10-20", "--ratio=1:0"]).unwrap();
        assert_eq!(p.commands.len(), 1);
        assert_eq!(p.commands[0].name, "SETEX");
        assert_eq!(p.expiry, Some(Expiry { min: 10, max: 20 }));
    }
}
