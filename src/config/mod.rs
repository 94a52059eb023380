//! Turns parsed flags into one validated, immutable `Config`; every user mistake is caught here.

pub(crate) mod cpus;
pub(crate) mod limits;
pub(crate) mod shape;
pub(crate) mod shard;
pub mod start_at;

use crate::cli::Cli;
use crate::config::shape::Shape;
use crate::net::target::{Setup, Target};
use crate::workload::{self, SuiteParams, TestSpec};
use std::io::Read;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

/// A usage error: one line naming the flag and the value; exit code 2.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct UsageError(pub String);

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// Largest value size accepted by `-d` (the server's default proto-max-bulk-len).
pub const MAX_DATA_SIZE: i64 = 512 * 1024 * 1024;
/// Most executors `--threads` accepts.
pub const MAX_THREADS: i64 = 1024;
/// Most connections `-c` accepts.
pub const MAX_CLIENTS: i64 = 1_000_000;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// The full per-test block.
    Normal,
    /// `-q`: one line per test.
    Quiet,
    /// `--csv`.
    Csv,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    pub target: Target,
    pub setup: Setup,
    pub clients: usize,
    pub requests: u64,
    pub data_size: usize,
    pub keyspace: Option<u64>,
    pub pipeline: usize,
    /// Executors to start (1 without `--threads`).
    pub threads: usize,
    /// Whether `--threads` was given (the header says `multi-thread: yes`).
    pub multi_thread: bool,
    /// `--cpus`: the cores executors are pinned to, in order (`None`: the usable cores in order).
    pub cpus: Option<Vec<usize>>,
    pub keepalive: bool,
    pub output: OutputMode,
    pub loop_forever: bool,
    pub idle: bool,
    pub seed: u64,
    pub precision: u8,
    pub show_errors: bool,
    /// `--cluster`: route every request to the master that owns its key's slot.
    pub cluster: bool,
    /// `--failover-timeout`: with `--cluster`, how long a request for a slot that no master answers
    /// (its master lost, no replica promoted yet) is retried before the run gives up.
    pub failover_timeout: Duration,
    /// `--timeout`: how long a request may wait for its reply.
    pub timeout: Option<Duration>,
    /// `--connect-timeout`: how long connecting (and setup) may take.
    pub connect_timeout: Duration,
    pub tests: Vec<TestSpec>,
    /// TLS settings with `--tls` or `rediss://`.
    pub tls: Option<crate::net::tls::TlsClient>,
    /// `--json`: a file, or `-` for stdout.
    pub json: Option<String>,
    /// `--hdr-out`: interval logs go to `<prefix><test>.hlog`.
    pub hdr_out: Option<String>,
    /// `--plot`: an SVG file.
    pub plot: Option<PathBuf>,
    /// `--start-at`: Unix time to wait for before the first test.
    pub start_at: Option<f64>,
    /// Pacing and request shape: `--rps`, `--duration`, `--warmup`, distributions, values, mixes.
    pub shape: Shape,
    /// `--shard` / `--shards`: this process's place in a run of several; `clients`, `requests`, the rate,
    /// the seed and the sequential key slice above are already this shard's share.
    pub shard: Option<crate::config::shard::Shard>,
}

/// The longest title a custom command gets (in characters, `...` included).
const MAX_TITLE: usize = 60;

/// A custom command's title: its arguments joined by spaces, bytes that are not printable text escaped
/// (`\r`, `\n`, `\t`, `\xNN`), shortened to `MAX_TITLE` characters with `...`.
pub fn command_title(args: &[Vec<u8>]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        for chunk in a.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\r' => out.push_str("\\r"),
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    c if c.is_control() => {
                        let mut buf = [0u8; 4];
                        for b in c.encode_utf8(&mut buf).bytes() {
                            out.push_str(&format!("\\x{b:02x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            for b in chunk.invalid() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        }
        if out.chars().count() > MAX_TITLE {
            break;
        }
    }
    if out.chars().count() > MAX_TITLE {
        out = out.chars().take(MAX_TITLE - 3).collect::<String>() + "...";
    }
    out
}

/// Checks before the run that `path` (the file `value` of `flag` leads to) can be written, as far as
/// that can be known without writing it: not empty, not a folder, its folder exists and takes a new file
/// (probed by creating and removing one), and an existing file opens for writing (not truncated).
fn output_path(flag: &str, value: &str, path: &str) -> Result<(), UsageError> {
    if value.is_empty() {
        return Err(usage(format!(
            "invalid value '' for '{flag}': give a file name"
        )));
    }
    let bad = |why: String| usage(format!("invalid value '{value}' for '{flag}': {why}"));
    let file = std::path::Path::new(path);
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(format!("folder '{}' does not exist", dir.display())));
    }
    if file.is_dir() {
        return Err(bad(format!("'{path}' is a folder")));
    }
    let reason = |e: std::io::Error| crate::net::io_reason(e);
    if file.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(file)
            .map_err(|e| bad(format!("cannot write '{path}': {}", reason(e))))?;
    } else {
        let probe = dir.join(format!(".ringbench-probe-{}", std::process::id()));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map_err(|e| {
                bad(format!(
                    "cannot create a file in folder '{}': {}",
                    dir.display(),
                    reason(e)
                ))
            })?;
        let _ = std::fs::remove_file(&probe);
    }
    Ok(())
}

fn in_range(flag: &str, v: i64, lo: i64, hi: i64) -> Result<i64, UsageError> {
    if v < lo || v > hi {
        Err(usage(format!(
            "invalid value '{v}' for '{flag}': must be between {lo} and {hi}"
        )))
    } else {
        Ok(v)
    }
}

/// What a `redis://` URI says.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Uri {
    pub tls: bool,
    pub user: Option<String>,
    pub password: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub db: Option<u32>,
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `redis://[[user]:pass@]host[:port][/db]` (and `rediss://`, `valkey://`, `valkeys://`).
pub fn parse_uri(uri: &str) -> Result<Uri, UsageError> {
    let bad = |why: &str| usage(format!("invalid value '{uri}' for '-u': {why}"));
    // valkey-benchmark's schemes mean the same as Redis's.
    let schemes = [
        ("redis://", false),
        ("rediss://", true),
        ("valkey://", false),
        ("valkeys://", true),
    ];
    let Some((tls, rest)) = schemes
        .iter()
        .find_map(|(scheme, tls)| uri.strip_prefix(scheme).map(|r| (*tls, r)))
    else {
        return Err(bad(
            "the URI must start with redis://, rediss://, valkey:// or valkeys://",
        ));
    };
    let mut out = Uri {
        tls,
        ..Uri::default()
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let hostport = match authority.rfind('@') {
        Some(i) => {
            let cred = &authority[..i];
            match cred.find(':') {
                Some(j) => {
                    if j > 0 {
                        out.user = Some(percent_decode(&cred[..j]));
                    }
                    out.password = Some(percent_decode(&cred[j + 1..]));
                }
                None => out.password = Some(percent_decode(cred)),
            }
            &authority[i + 1..]
        }
        None => authority,
    };
    let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
        let end = r.find(']').ok_or_else(|| bad("unclosed '[' in the host"))?;
        (&r[..end], r[end + 1..].strip_prefix(':'))
    } else {
        match hostport.rfind(':') {
            Some(i) => (&hostport[..i], Some(&hostport[i + 1..])),
            None => (hostport, None),
        }
    };
    if !host.is_empty() {
        out.host = Some(host.to_string());
    }
    if let Some(p) = port {
        out.port = Some(
            p.parse()
                .map_err(|_| bad(&format!("port '{p}' is not a number from 0 to 65535")))?,
        );
    }
    if !path.is_empty() {
        out.db = Some(
            path.parse()
                .map_err(|_| bad(&format!("database '{path}' is not a number")))?,
        );
    }
    Ok(out)
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    match (host, port).to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .ok_or_else(|| format!("Could not connect to {host}:{port}: no address for the name")),
        Err(e) => Err(format!("Could not connect to {host}:{port}: {e}")),
    }
}

/// A failure while building the config: a usage error (exit 2) or an unreachable name (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Usage(#[from] UsageError),
    #[error("{0}")]
    Resolve(String),
}

impl Config {
    /// Validates `cli` into a config. `stdin` is read only with `-x`.
    pub fn from_cli(cli: &Cli, stdin: &mut dyn Read) -> Result<Config, ConfigError> {
        let mut clients = in_range("-c", cli.clients, 1, MAX_CLIENTS)? as usize;
        let mut requests = in_range("-n", cli.requests, 1, i64::MAX)? as u64;
        let mut shape = Shape::from_cli(cli)?;
        let shard = crate::config::shard::Shard::from_flags(
            cli.shard.as_deref(),
            cli.shards.as_deref(),
            std::env::var(crate::config::shard::INDEX_VAR)
                .ok()
                .as_deref(),
        )?;
        if let Some(sh) = shard {
            // This process runs its share; the shares of all shards add up to the flags' totals.
            clients = sh.nonzero_share("-c", clients as u64)? as usize;
            if shape.duration.is_none() {
                requests = sh.nonzero_share("-n", requests)?;
            }
            if let Some(rps) = shape.rps {
                shape.rps = Some(sh.share_rate(rps));
                if shape.rps == Some(0.0) {
                    return Err(usage(format!(
                        "invalid value '{rps}' for '--rps': {} shards need at least {} requests per second (shard {sh} would get none)",
                        sh.count, sh.count
                    ))
                    .into());
                }
            }
            if let crate::workload::keys::Distribution::Sequential { .. } = shape.distribution {
                shape.distribution = crate::workload::keys::Distribution::Sequential {
                    part: sh.index,
                    parts: sh.count,
                };
            }
        }
        let data_size = shape.value.max;
        let pipeline = in_range("-P", cli.pipeline, 1, 1_000_000)? as usize;
        let dbnum = in_range("--dbnum", cli.dbnum, 0, u32::MAX as i64)? as u32;
        let keyspace = match cli.keyspace {
            Some(r) => Some(in_range("-r", r, 1, i64::MAX)? as u64),
            None => None,
        };
        if cli.distribution_given && keyspace.is_none() {
            // Without -r every key is the literal `key:__rand_int__`: there is nothing to distribute.
            return Err(usage(format!(
                "'--distribution {}' needs '-r <keyspacelen>': without -r keys are not randomized",
                cli.distribution
            ))
            .into());
        }
        let threads = match cli.threads {
            Some(t) => in_range("--threads", t, 1, MAX_THREADS)? as usize,
            None => 1,
        };
        let cpus = match &cli.cpus {
            Some(list) => Some(crate::config::cpus::parse_cpus(
                list,
                &crate::config::cpus::usable_cores(),
            )?),
            None => None,
        };
        let keepalive = match cli.keepalive {
            0 => false,
            1 => true,
            v => return Err(usage(format!("invalid value '{v}' for '-k': must be 0 or 1")).into()),
        };
        let precision = in_range("--precision", cli.precision, 1, 5)? as u8;
        let ms = |flag: &str, v: i64| -> Result<Duration, UsageError> {
            Ok(Duration::from_millis(
                in_range(flag, v, 1, 86_400_000)? as u64
            ))
        };
        let timeout = match cli.timeout {
            Some(t) => Some(ms("--timeout", t)?),
            None => None,
        };
        let connect_timeout = ms("--connect-timeout", cli.connect_timeout)?;
        let failover_timeout = match cli.failover_timeout {
            s if s.is_finite() && s > 0.0 && s <= 86_400.0 => Duration::from_secs_f64(s),
            s => {
                return Err(usage(format!(
                    "invalid value '{s}' for '--failover-timeout': must be a number of seconds above 0 and at most 86400"
                ))
                .into());
            }
        };
        let mut port = in_range("-p", cli.port, 0, 65535)? as u16;
        // `-h [::1]`: an IPv6 address may come bracketed, as in a URI.
        let mut host = match cli.host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(inner) if inner.contains(':') => inner.to_string(),
            _ => cli.host.clone(),
        };
        let mut user = cli.user.clone();
        let mut password = cli.password.clone();
        let mut dbnum = dbnum;
        let mut tls_on = cli.tls;
        if let Some(u) = &cli.uri {
            let uri = parse_uri(u)?;
            tls_on |= uri.tls;
            host = uri.host.unwrap_or(host);
            port = uri.port.unwrap_or(port);
            user = uri.user.or(user);
            password = uri.password.or(password);
            dbnum = uri.db.unwrap_or(dbnum);
        }
        if password.is_none()
            && let Ok(p) = std::env::var("REDISCLI_AUTH")
            && !p.is_empty()
        {
            password = Some(p);
        }
        if user.is_some() && password.is_none() {
            return Err(usage("'--user' needs a password: give it with -a").into());
        }
        if cli.cluster && dbnum != 0 {
            return Err(usage(format!(
                "invalid value '{dbnum}' for '--dbnum': a cluster has only database 0 (--cluster)"
            ))
            .into());
        }
        if cli.stdin_last_arg && cli.command.is_empty() {
            return Err(
                usage("'-x' needs a command whose last argument it reads from stdin").into(),
            );
        }
        let output = if cli.csv {
            OutputMode::Csv
        } else if cli.quiet {
            OutputMode::Quiet
        } else {
            OutputMode::Normal
        };

        if let Some(j) = cli.json.as_deref().filter(|j| *j != "-") {
            output_path("--json", j, j)?;
        }
        if let Some(p) = &cli.plot {
            output_path("--plot", p, p)?;
            crate::report::plot::check_extension("--plot", std::path::Path::new(p))
                .map_err(usage)?;
        }
        let start_at = match &cli.start_at {
            Some(v) => Some(crate::config::start_at::parse_start_at(
                v,
                crate::config::start_at::unix_now(),
            )?),
            None => None,
        };
        let seed = cli.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
        });
        let seed = shard.map_or(seed, |sh| sh.seed(seed));
        let mut tests = if let Some(mix) = &cli.mix {
            if !cli.command.is_empty() || cli.tests.is_some() {
                return Err(usage(
                    "'--mix' names its own tests: it cannot be combined with -t or a command",
                )
                .into());
            }
            let params = SuiteParams {
                value: shape.suite_value(),
                randomize: keyspace.is_some(),
                tag: String::new(),
                cluster: cli.cluster,
            };
            vec![shape.mix_test(mix, &params, seed)?]
        } else if cli.command.is_empty() {
            let selection: Option<Vec<String>> = cli.tests.as_ref().map(|t| {
                t.split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect()
            });
            let params = SuiteParams {
                value: shape.suite_value(),
                randomize: keyspace.is_some(),
                tag: String::new(),
                cluster: cli.cluster,
            };
            workload::default_suite(selection.as_deref(), &params).map_err(|bad| {
                usage(format!(
                    "invalid value '{bad}' for '-t': valid tests are {}",
                    workload::test_names().join(", ")
                ))
            })?
        } else {
            if cli.tests.is_some() {
                eprintln!("WARNING: -t is ignored when a command is given");
            }
            use std::os::unix::ffi::OsStrExt;
            let raw: Vec<Vec<u8>> = cli.command.iter().map(|a| a.as_bytes().to_vec()).collect();
            let title = command_title(&raw);
            if raw.iter().any(|a| a == b";") {
                // valkey-benchmark's command sequence: `cmd1 ; 3 cmd2` sends cmd1 once and cmd2 three
                // times per round, each command one request.
                if cli.stdin_last_arg {
                    return Err(usage("'-x' reads one command's last argument: it cannot be used with a ';' sequence").into());
                }
                let mut parts = Vec::new();
                for part in raw.split(|a| a == b";") {
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
                    let spec =
                        workload::custom_test(&args, command_title(words), keyspace.is_some());
                    parts.push((spec, count));
                }
                let test = shape.sequence_test(title, parts, keyspace.is_some(), seed);
                let mut tests = vec![test];
                shape.attach_composers(&mut tests, keyspace.is_some(), seed);
                tests
            } else {
                let mut args = crate::workload::compose::expand_args(&raw, &shape.value);
                if cli.stdin_last_arg {
                    let mut last = Vec::new();
                    stdin
                        .read_to_end(&mut last)
                        .map_err(|e| usage(format!("'-x': could not read stdin: {e}")))?;
                    args.push(last);
                }
                vec![workload::custom_test(&args, title, keyspace.is_some())]
            }
        };
        shape.attach_composers(&mut tests, keyspace.is_some(), seed);
        if let Some(p) = &cli.hdr_out {
            // Every test's log, so a name taken by a folder is found before the run.
            for t in &tests {
                output_path(
                    "--hdr-out",
                    p,
                    &crate::report::hdrlog::log_path(p, &t.title),
                )?;
            }
        }

        let tls_options = crate::net::tls::TlsOptions {
            sni: cli.sni.clone(),
            cacert: cli.cacert.as_ref().map(PathBuf::from),
            cacertdir: cli.cacertdir.as_ref().map(PathBuf::from),
            insecure: cli.insecure,
            cert: cli.cert.as_ref().map(PathBuf::from),
            key: cli.key.as_ref().map(PathBuf::from),
            ciphers: cli.tls_ciphers.clone(),
            ciphersuites: cli.tls_ciphersuites.clone(),
            groups: cli.tls_groups.clone(),
        };
        let tls =
            crate::net::tls::client_from_options(tls_options, tls_on, &host, cli.socket.is_some())
                .map_err(|e| usage(e.0))?;
        let target = match &cli.socket {
            Some(path) => Target::Unix(PathBuf::from(path)),
            None => {
                let addr = resolve(&host, port).map_err(ConfigError::Resolve)?;
                Target::Tcp { host, port, addr }
            }
        };
        Ok(Config {
            target,
            setup: Setup {
                user,
                password,
                dbnum,
                resp3: cli.resp3,
                tracking: cli.enable_tracking,
            },
            clients,
            requests,
            data_size,
            keyspace,
            pipeline,
            threads,
            multi_thread: cli.threads.is_some(),
            cpus,
            keepalive,
            output,
            loop_forever: cli.loop_forever,
            idle: cli.idle,
            seed,
            precision,
            show_errors: cli.show_errors,
            cluster: cli.cluster,
            failover_timeout,
            timeout,
            connect_timeout,
            tests,
            tls,
            json: cli.json.clone(),
            hdr_out: cli.hdr_out.clone(),
            plot: cli.plot.as_ref().map(PathBuf::from),
            start_at,
            shape,
            shard,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_escape_and_shorten() {
        assert_eq!(command_title(&[b"set".to_vec(), b"k".to_vec()]), "set k");
        assert_eq!(
            command_title(&[b"set".to_vec(), b"a\r\n\t\x01\xff\x7f".to_vec()]),
            "set a\\r\\n\\t\\x01\\xff\\x7f"
        );
        let long = command_title(&[b"set".to_vec(), vec![b'v'; 120_000]]);
        assert_eq!(long.chars().count(), MAX_TITLE);
        assert!(
            long.starts_with("set vvv") && long.ends_with("..."),
            "{long}"
        );
    }

    #[test]
    fn a_bracketed_ipv6_host_is_unwrapped() {
        let c = config(&["-h", "[::1]", "-p", "7000"]).unwrap();
        assert_eq!(c.target.display(), "[::1]:7000");
    }

    fn config(args: &[&str]) -> Result<Config, ConfigError> {
        let cli =
            Cli::parse_args(std::iter::once("ringbench").chain(args.iter().copied())).unwrap();
        Config::from_cli(&cli, &mut std::io::empty())
    }

    fn usage_msg(args: &[&str]) -> String {
        match config(args) {
            Err(ConfigError::Usage(u)) => u.0,
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
        assert_eq!(c.target.display(), "127.0.0.1:7001");
        assert_eq!(c.setup.user.as_deref(), Some("u"));
        assert_eq!(c.setup.dbnum, 2);
        assert!(!format!("{c:?}").contains("\"p\""));
    }

    #[test]
    fn rediss_turns_tls_on_and_tls_flags_need_it() {
        let c = config(&["-u", "rediss://localhost:6380", "--insecure"]).unwrap();
        let tls = c.tls.expect("rediss:// enables TLS");
        assert_eq!(tls.server_name.to_str(), "localhost");
        assert!(config(&["--insecure"]).is_err());
        assert!(usage_msg(&["--sni", "x"]).contains("'--sni' needs '--tls'"));
        assert!(usage_msg(&["--tls", "--insecure", "-s", "/tmp/r.sock"]).contains("'-s'"));
        let c = config(&["--tls", "--insecure", "--sni", "redis.example"]).unwrap();
        assert_eq!(c.tls.unwrap().server_name.to_str(), "redis.example");
        assert!(config(&[]).unwrap().tls.is_none());
    }

    #[test]
    fn custom_command_title() {
        let c = config(&["-r", "10", "lpush", "mylist", "ele:__rand_int__"]).unwrap();
        assert_eq!(c.tests.len(), 1);
        assert_eq!(c.tests[0].title, "lpush mylist ele:__rand_int__");
        assert_eq!(c.tests[0].command, "LPUSH");
        assert_eq!(c.tests[0].template.rand_offsets().len(), 1);
    }
}
