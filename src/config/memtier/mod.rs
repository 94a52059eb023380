//! memtier_benchmark's options checked and mapped onto ringbench's: the benchmark flags (`Cli`) the
//! engine runs with, memtier's test (its `--ratio` SET/GET or its `--command` list, in memtier's order
//! on each connection, keys named `--key-prefix` + a decimal number), and how its results are written.
//! An option ringbench cannot honour is refused in one line that names it.

use crate::cli::Cli;
use crate::cli::memtier::MemtierFlags;
use crate::config::error::UsageError;
use crate::workload::TestSpec;
use crate::workload::compose::{Composer, Entry, Expiry, MemtierStyle, Sizes, ValueSpec};
use crate::workload::memtier_keys::KeySpace;
use std::sync::Arc;

mod echo;
mod options;
pub(crate) mod output;
#[cfg(test)]
mod tests;
mod values;

use options::{commands, connection, key_space, requests, value_spec};
pub use output::MemtierOutput;
use values::{CLIENTS, CONSTANT_SEED, Command, THREADS, positive, range, refuse, usage};

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

/// The options ringbench cannot honour, in the order they are checked: whether the flags give it, the
/// option the message names, and why it is refused.
type Refusal = (fn(&MemtierFlags) -> bool, &'static str, &'static str);
const REFUSED: [Refusal; 20] = [
    (
        |f| f.ipv6,
        "--ipv6",
        "ringbench connects to the address the host name resolves to first",
    ),
    (
        |f| f.ipv4,
        "--ipv4",
        "ringbench connects to the address the host name resolves to first",
    ),
    (
        |f| f.tls_protocols.is_some(),
        "--tls-protocols",
        "ringbench's TLS offers TLS 1.2 and 1.3",
    ),
    (|f| f.debug > 0, "--debug", "ringbench has no debug output"),
    (
        |f| f.client_stats.is_some(),
        "--client-stats",
        "ringbench keeps no per-client files",
    ),
    (
        |f| f.show_config,
        "--show-config",
        "ringbench does not print its configuration",
    ),
    (
        |f| f.graphite_port.is_some(),
        "--graphite-port",
        "ringbench sends no Graphite annotations",
    ),
    (
        |f| f.clients_start.is_some() || f.clients_step.is_some() || f.step_duration.is_some(),
        "--clients-start",
        "the client staircase is not implemented; use ringbench capacity",
    ),
    (
        |f| f.reconnect_on_error,
        "--reconnect-on-error",
        "ringbench always reconnects a lost connection",
    ),
    (
        |f| f.max_reconnect_attempts.is_some(),
        "--max-reconnect-attempts",
        "ringbench always reconnects a lost connection",
    ),
    (
        |f| f.reconnect_backoff_factor.is_some(),
        "--reconnect-backoff-factor",
        "ringbench's reconnect backoff is fixed",
    ),
    (
        |f| f.jitter_min.is_some() || f.jitter_max.is_some(),
        "--thread-conn-start-min-jitter-micros",
        "ringbench opens its connections together",
    ),
    (
        |f| f.multi_key_get.is_some(),
        "--multi-key-get",
        "memtier_benchmark itself has no multi-key GET for redis",
    ),
    (
        |f| f.monitor_input.is_some() || f.monitor_pattern.is_some(),
        "--monitor-input",
        "use ringbench --replay FILE for a MONITOR capture",
    ),
    (
        |f| f.data_offset.is_some(),
        "--data-offset",
        "SETRANGE/GETRANGE requests are not implemented",
    ),
    (
        |f| f.data_import.is_some() || f.generate_keys || f.no_expiry,
        "--data-import",
        "importing a memcached dump is not implemented",
    ),
    (
        |f| f.data_verify || f.verify_only,
        "--data-verify",
        "use ringbench --data-verify (its own key names)",
    ),
    (
        |f| f.wait_ratio.is_some() || f.num_slaves.is_some() || f.wait_timeout.is_some(),
        "--wait-ratio",
        "WAIT requests are not implemented",
    ),
    (
        |f| {
            f.command_stats_breakdown.as_deref().is_some_and(|b| {
                !b.eq_ignore_ascii_case("command") && !b.eq_ignore_ascii_case("line")
            })
        },
        "--command-stats-breakdown",
        "must be 'command' or 'line'",
    ),
    (
        |f| {
            f.statsd_host.is_none()
                && (f.statsd_port.is_some()
                    || f.statsd_prefix.is_some()
                    || f.statsd_run_label.is_some())
        },
        "--statsd-port",
        "needs --statsd-host",
    ),
];

/// The options ringbench cannot honour, each refused by name (the first of [`REFUSED`] given).
fn refused(f: &MemtierFlags) -> Result<(), UsageError> {
    match REFUSED.iter().find(|(given, _, _)| given(f)) {
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

/// `--expiry-range`: the TTL range of memtier's SETs (`None` without one, or with `0-0`).
fn expiry_range(f: &MemtierFlags) -> Result<Option<Expiry>, UsageError> {
    let Some(v) = f.expiry_range.as_deref() else {
        return Ok(None);
    };
    match range("--expiry-range", v, 0)? {
        (0, 0) => Ok(None),
        (0, _) => Err(refuse(
            "--expiry-range",
            "a range from 0 (some SETs without a TTL) is not implemented; start it at 1",
        )),
        (min, max) => Ok(Some(Expiry { min, max })),
    }
}

/// `--reconnect-interval`: requests per connection before it is opened again (`paced`: with
/// `--rate-limiting`, which it cannot be combined with).
fn reconnect_interval(f: &MemtierFlags, paced: bool) -> Result<Option<u64>, UsageError> {
    match f.reconnect_interval.as_deref() {
        None => Ok(None),
        Some(_) if f.cluster_mode => Err(refuse(
            "--reconnect-interval",
            "not with --cluster-mode (memtier refuses it too)",
        )),
        Some(_) if paced => Err(refuse(
            "--reconnect-interval",
            "not with --rate-limiting (a paced connection is never renewed)",
        )),
        Some(v) => positive("--reconnect-interval", v).map(Some),
    }
}

/// The run's seed: the clock's with `--randomize`, memtier's constant one without.
fn seed(f: &MemtierFlags) -> u64 {
    if f.randomize {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    } else {
        CONSTANT_SEED
    }
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
        cli.seed = Some(seed(f));
        let (value, sizes) = value_spec(f, &keys)?;
        let expiry = expiry_range(f)?;
        let commands = commands(f, &keys, expiry.is_some())?;
        let scan = scan_iteration(f, &commands, cli.pipeline)?;
        let reconnect_every = reconnect_interval(f, burst_rate.is_some())?;
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
