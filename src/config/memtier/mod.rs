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

mod echo;
mod options;
mod output;
#[cfg(test)]
mod tests;

use options::{commands, connection, key_space, requests, value_spec};
pub use output::MemtierOutput;

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
    /// `--reconnect-interval`: requests per connection before it is opened again.
    pub reconnect_every: Option<u64>,
    /// `--scan-incremental-iteration`: its `--scan-incremental-max-iterations` (0: no limit).
    scan: Option<u64>,
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
    let checks: [(bool, &str, &str); 20] = [
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

/// `--scan-incremental-iteration`'s conditions, as memtier checks them: `--pipeline 1`, not
/// `--cluster-mode`, exactly one `--command`, a SCAN with its cursor. Its limit, 0 for none.
fn scan_iteration(
    f: &MemtierFlags,
    commands: &[Command],
    pipeline: i64,
) -> Result<Option<u64>, UsageError> {
    let max = match f.scan_incremental_max_iterations.as_deref() {
        Some(v) => v.parse::<u32>().map_err(|_| {
            usage(format!(
                "invalid value '{v}' for '--scan-incremental-max-iterations': a number of continuations (0: no limit)"
            ))
        })?,
        None => 0,
    };
    if !f.scan_incremental_iteration {
        return Ok(None);
    }
    let why = if pipeline != 1 {
        "requires --pipeline 1"
    } else if f.command.is_empty() {
        "requires --command with a SCAN command"
    } else if f.cluster_mode {
        "is not supported with --cluster-mode"
    } else if commands.len() != 1 {
        "requires exactly one --command (a SCAN command)"
    } else if commands[0].name != "SCAN" {
        "requires the command to be a SCAN command"
    } else if commands[0].args.len() < 2 {
        "needs a SCAN with its cursor argument (e.g. 'SCAN 0')"
    } else {
        return Ok(Some(u64::from(max)));
    };
    Err(usage(format!("'--scan-incremental-iteration' {why}")))
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
        let scan = scan_iteration(f, &commands, cli.pipeline)?;
        let reconnect_every = match f.reconnect_interval.as_deref() {
            None => None,
            Some(_) if f.cluster_mode => {
                return Err(refuse(
                    "--reconnect-interval",
                    "not with --cluster-mode (memtier refuses it too)",
                ));
            }
            Some(_) if burst_rate.is_some() => {
                return Err(refuse(
                    "--reconnect-interval",
                    "not with --rate-limiting (a paced connection is never renewed)",
                ));
            }
            Some(v) => Some(positive("--reconnect-interval", v)?),
        };
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
            echo: echo::echo(f, threads, clients, &keys, per_connection),
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
            reconnect_every,
            scan,
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
            scan: self.scan,
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
