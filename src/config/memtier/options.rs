//! memtier's options by topic, checked and mapped: the server and how to reach it, the keyspace, the
//! request count, value sizes and the commands (its `--ratio` SET/GET or its `--command` list).

use crate::cli::Cli;
use crate::cli::memtier::MemtierFlags;
use crate::config::error::UsageError;
use crate::config::memtier::values::{
    Command, DATA_SIZE, KEY_MAXIMUM, REQUESTS, command_args, positive, range, ratio, refuse, usage,
};
use crate::workload::compose::{Sizes, ValueSpec};
use crate::workload::memtier_keys::{KeySpace, Pattern};

/// Where the server is and how to talk to it.
pub(super) fn connection(f: &MemtierFlags, cli: &mut Cli) -> Result<(), UsageError> {
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
pub(super) fn key_space(f: &MemtierFlags, clients: u64) -> Result<KeySpace, UsageError> {
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
pub(super) fn requests(
    f: &MemtierFlags,
    keys: &KeySpace,
    cli: &mut Cli,
) -> Result<Option<u64>, UsageError> {
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
pub(super) fn value_spec(
    f: &MemtierFlags,
    keys: &KeySpace,
) -> Result<(ValueSpec, Option<Sizes>), UsageError> {
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
pub(super) fn commands(
    f: &MemtierFlags,
    keys: &KeySpace,
    expiry: bool,
) -> Result<Vec<Command>, UsageError> {
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
