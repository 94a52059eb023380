//! The pure step of building a config: [`Settings::parse`] validates the flags against an explicit
//! [`Env`] and does no I/O (no DNS, no file, no stdin, no environment read, no printing), so every usage
//! error it finds can be tested without a server or files. [`Config::resolve`](crate::config::Config::resolve)
//! does the I/O afterwards.

use super::run::{Connecting, Load, OutputMode, Pace, ReadFrom, Record, Results, RunSettings};
use crate::cli::{Cli, CommandFlag};
use crate::config::error::{UsageError, usage};
use crate::config::paths::check_extension;
use crate::config::shape::Shape;
use crate::config::shard::{INDEX_VAR, Shard};
use crate::config::start_at::parse_start_at;
use crate::net::tls::{self, TlsOptions};
use crate::workload::TestSpec;
use crate::workload::keys::Distribution;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Most executors `--threads` accepts.
pub const MAX_THREADS: i64 = 1024;
/// Most connections `-c` accepts.
pub const MAX_CLIENTS: i64 = 1_000_000;

/// What the flags are read against besides themselves: the process's environment variables, the time and
/// the cores it may use. [`Env::of_process`] reads them; a test gives its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `JOB_COMPLETION_INDEX`: the shard index for `--shards`.
    pub shard_index: Option<String>,
    /// `REDISCLI_AUTH`: the password when no flag gives one.
    pub auth: Option<String>,
    /// Now, since the Unix epoch (`--start-at` is checked against it; the default seed is taken from it).
    pub now: Duration,
    /// The cores this process may use (`--cpus` is checked against them); empty when unknown.
    pub usable_cores: Vec<usize>,
}

impl Env {
    /// The environment of this process.
    pub fn of_process() -> Env {
        Env {
            shard_index: std::env::var(INDEX_VAR).ok(),
            auth: std::env::var("REDISCLI_AUTH").ok(),
            now: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
            usable_cores: crate::config::cpus::usable_cores(),
        }
    }
}

/// Which tests to run, as the flags name them; the suite is built by `Config::resolve`.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteFlags {
    /// `-t`, as given.
    pub tests: Option<String>,
    /// `--mix`, as given.
    pub mix: Option<String>,
    /// memtier_benchmark's `--command` flags, each with its ratio and key pattern.
    pub commands: Vec<crate::config::shape::MixCommand>,
    /// The custom command's arguments (empty: the default suite).
    pub command: Vec<Vec<u8>>,
    /// `-x`: the command's last argument is read from stdin.
    pub stdin_last_arg: bool,
    /// `--dataset`: the file whose rows fill the command's `__field:name__` placeholders.
    pub dataset: Option<PathBuf>,
    /// `--maxdocs`: the dataset's first rows only (`None` or 0: all of them).
    pub maxdocs: Option<u64>,
    /// `--xml-root-element`: the element each document of an XML dataset is.
    pub xml_root: Option<String>,
    /// `--replay`: the file whose commands are the run's one test, and their pace.
    pub replay: Option<crate::config::suite::replay::ReplayFlags>,
}

/// The flags, validated: everything a [`Config`](crate::config::Config) holds before anything is looked
/// up, read or built.
#[derive(Clone)]
pub struct Settings {
    /// `-h` (unbracketed) or the URI's host.
    pub host: String,
    pub port: u16,
    /// `-s`: a unix socket instead of `host:port`.
    pub socket: Option<PathBuf>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub dbnum: u32,
    pub resp3: bool,
    pub tracking: bool,
    /// The TLS flags, checked against each other; `None` without TLS.
    pub tls: Option<TlsOptions>,
    pub suite: SuiteFlags,
    pub run: RunSettings,
    /// A test its caller built (the memtier personality's one test), run instead of the suite's.
    pub given_test: Option<TestSpec>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The password is never printed, not even in debug output.
        f.debug_struct("Settings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("socket", &self.socket)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .field("run", &self.run)
            .field("suite", &self.suite)
            .finish_non_exhaustive()
    }
}

pub(crate) fn in_range(flag: &str, v: i64, lo: i64, hi: i64) -> Result<i64, UsageError> {
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

/// Why a URI's user name or password cannot be decoded (its text is never part of the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DecodeError {
    /// A `%` not followed by two hexadecimal digits.
    BadEscape,
    /// The decoded bytes are not UTF-8.
    NotUtf8,
}

/// Decodes `%XX` escapes (percent-encoding's decoder). It passes a malformed escape through as text,
/// which would silently change a password, so a `%` must be followed by two hexadecimal digits.
fn percent_decode(s: &str) -> Result<String, DecodeError> {
    let malformed = s.match_indices('%').any(|(i, _)| {
        let b = s.as_bytes();
        !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if malformed {
        return Err(DecodeError::BadEscape);
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .map(|t| t.into_owned())
        .map_err(|_| DecodeError::NotUtf8)
}

/// `uri` with the password (what lies between the first `:` after the scheme and the last `@`) shown as `***`.
fn redacted(uri: &str) -> String {
    let Some(scheme_end) = uri.find("://").map(|i| i + 3) else {
        return uri.to_string();
    };
    let rest = &uri[scheme_end..];
    let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
    match authority.rfind('@') {
        Some(at) => {
            let cred = &authority[..at];
            let user = cred.find(':').map_or("", |j| &cred[..j]);
            format!("{}{user}:***{}", &uri[..scheme_end], &rest[at..])
        }
        None => uri.to_string(),
    }
}

/// Parses `redis://[[user]:pass@]host[:port][/db]` (and `rediss://`, `valkey://`, `valkeys://`).
pub fn parse_uri(uri: &str) -> Result<Uri, UsageError> {
    // The password is never printed: a message shows the URI with `***` in its place.
    let bad = |why: &str| usage(format!("invalid value '{}' for '-u': {why}", redacted(uri)));
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
            let decode = |part: &str, what: &str| {
                percent_decode(part).map_err(|e| {
                    bad(&match e {
                        DecodeError::BadEscape => format!(
                            "the {what} has a '%' not followed by two hexadecimal digits (write '%' as %25)"
                        ),
                        DecodeError::NotUtf8 => {
                            format!("the {what}'s %-escapes do not decode to UTF-8 text")
                        }
                    })
                })
            };
            match cred.find(':') {
                Some(j) => {
                    if j > 0 {
                        out.user = Some(decode(&cred[..j], "user name")?);
                    }
                    out.password = Some(decode(&cred[j + 1..], "password")?);
                }
                None => out.password = Some(decode(cred, "password")?),
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

/// What to send and how much of it, once this shard's share is taken: the `-c`/`-n`/`-r` counts, the
/// request shape, `--data-verify`, memtier's `--command` mix, `--replay` and `--shard`.
struct Workload {
    clients: usize,
    requests: u64,
    first_request: u64,
    shape: Shape,
    keyspace: Option<u64>,
    verify: Option<crate::workload::verify::VerifySpec>,
    commands: Vec<crate::config::shape::MixCommand>,
    replay: Option<crate::config::suite::replay::ReplayFlags>,
    shard: Option<Shard>,
}

/// The flags that say what to send, checked in the order `Settings::parse` has always checked them.
fn workload(cli: &Cli, env: &Env) -> Result<Workload, UsageError> {
    let clients = in_range("-c", cli.clients, 1, MAX_CLIENTS)? as usize;
    let mut requests = in_range("-n", cli.requests, 1, i64::MAX)? as u64;
    let mut shape = Shape::from_cli(cli)?;
    let keyspace = match cli.keyspace {
        Some(r) => Some(in_range("-r", r, 1, i64::MAX)? as u64),
        None => None,
    };
    // --data-verify: each pass sends one request per key, walking the keyspace in order (each
    // shard and executor its own slice of it, as sequential keys are shared).
    let verify = crate::config::verify::verify_spec(cli, keyspace, shape.value)?;
    if let (Some(_), Some(r)) = (verify, keyspace) {
        requests = r;
        shape.distribution = Distribution::Sequential { part: 0, parts: 1 };
    }
    let commands = crate::config::shape::mix_commands(&cli.command_flags, shape.distribution)?;
    if !commands.is_empty() && (cli.mix.is_some() || cli.tests.is_some() || !cli.command.is_empty())
    {
        return Err(usage(
            "'--command' names the mix's commands: it cannot be combined with --mix, -t or a command",
        ));
    }
    let replay = crate::config::suite::replay::from_cli(cli, shape.rps)?;
    let shard = Shard::from_flags(
        cli.shard.as_deref(),
        cli.shards.as_deref(),
        env.shard_index.as_deref(),
    )?;
    let mut w = Workload {
        clients,
        requests,
        first_request: 0,
        shape,
        keyspace,
        verify,
        commands,
        replay,
        shard,
    };
    if let Some(sh) = shard {
        take_share(&mut w, sh)?;
    }
    Ok(w)
}

/// `--shard`: this process runs its share; the shares of all shards add up to the flags' totals.
fn take_share(w: &mut Workload, sh: Shard) -> Result<(), UsageError> {
    w.clients = sh.nonzero_share("-c", w.clients as u64)? as usize;
    if w.shape.duration.is_none() {
        w.first_request = crate::workload::keys::share_slice(w.requests, sh.index, sh.count).0;
        w.requests = sh.nonzero_share("-n", w.requests)?;
    }
    if let Some(rps) = w.shape.rps {
        w.shape.rps = Some(sh.share_rate(rps));
        if w.shape.rps == Some(0.0) {
            return Err(usage(format!(
                "invalid value '{rps}' for '--rps': {} shards need at least {} requests per second (shard {sh} would get none)",
                sh.count, sh.count
            )));
        }
    }
    if let Distribution::Sequential { .. } = w.shape.distribution {
        w.shape.distribution = Distribution::Sequential {
            part: sh.index,
            parts: sh.count,
        };
    }
    for c in &mut w.commands {
        if let Some(Distribution::Sequential { .. }) = c.pattern {
            c.pattern = Some(Distribution::Sequential {
                part: sh.index,
                parts: sh.count,
            });
        }
    }
    Ok(())
}

/// `--distribution` and `--command-key-pattern` other than `R` need `-r`: without it every key is the
/// literal `key:__rand_int__` and there is nothing to distribute.
fn check_randomized_keys(cli: &Cli, keyspace: Option<u64>) -> Result<(), UsageError> {
    if cli.distribution_given && keyspace.is_none() {
        return Err(usage(format!(
            "'--distribution {}' needs '-r <keyspacelen>': without -r keys are not randomized",
            cli.distribution
        )));
    }
    if keyspace.is_none()
        && let Some(CommandFlag::KeyPattern(p)) = cli.command_flags.iter().find(
            |f| matches!(f, CommandFlag::KeyPattern(p) if !p.trim().eq_ignore_ascii_case("r")),
        )
    {
        return Err(usage(format!(
            "'--command-key-pattern {p}' needs '-r <keyspacelen>': without -r keys are not randomized"
        )));
    }
    Ok(())
}

/// How the run is paced and driven: executors and their cores, keepalive, precision, timeouts,
/// live metrics, how many times the suite runs and where a cluster's reads go.
struct Pacing {
    threads: usize,
    cpus: Option<Vec<usize>>,
    keepalive: bool,
    precision: u8,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    failover_timeout: Duration,
    metrics: Option<crate::config::metrics::MetricsSettings>,
    run_count: u64,
    read_from: ReadFrom,
}

/// The flags that say how the run is driven, checked in the order `Settings::parse` has always checked
/// them.
fn pacing(cli: &Cli, env: &Env) -> Result<Pacing, UsageError> {
    let threads = match cli.threads {
        Some(t) => in_range("--threads", t, 1, MAX_THREADS)? as usize,
        None => 1,
    };
    let cpus = match &cli.cpus {
        Some(list) => Some(crate::config::cpus::parse_cpus(list, &env.usable_cores)?),
        None => None,
    };
    let keepalive = match cli.keepalive {
        0 => false,
        1 => true,
        v => {
            return Err(usage(format!(
                "invalid value '{v}' for '-k': must be 0 or 1"
            )));
        }
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
            )));
        }
    };
    let metrics = crate::config::metrics::from_cli(cli)?;
    let run_count = cli.run_count;
    if !(1..=100_000).contains(&run_count) {
        return Err(usage(format!(
            "invalid value '{run_count}' for '--run-count': must be between 1 and 100000"
        )));
    }
    if run_count > 1 && cli.loop_forever {
        return Err(usage(
            "--run-count runs the suite a given number of times and -l until interrupted: give one of them"
                .to_string(),
        ));
    }
    Ok(Pacing {
        threads,
        cpus,
        keepalive,
        precision,
        timeout,
        connect_timeout,
        failover_timeout,
        metrics,
        run_count,
        read_from: read_from(cli)?,
    })
}

/// `--rfr`: where a cluster's reads go (only with `--cluster`).
fn read_from(cli: &Cli) -> Result<ReadFrom, UsageError> {
    let read_from = match cli.rfr.as_deref() {
        None | Some("no") => ReadFrom::Masters,
        Some("yes") => ReadFrom::Replicas,
        Some("all") => ReadFrom::All,
        Some(v) => {
            return Err(usage(format!(
                "invalid value '{v}' for '--rfr': must be no, yes or all"
            )));
        }
    };
    if read_from != ReadFrom::Masters && !cli.cluster {
        return Err(usage(
            "--rfr reads from a cluster's replicas: it needs --cluster".to_string(),
        ));
    }
    Ok(read_from)
}

/// Where the server is and who the run is: `-h`, `-p`, `-u`, the credentials (`REDISCLI_AUTH` from
/// `env` when no flag gives a password), the database, and whether `-u` turns TLS on.
struct Connection {
    host: String,
    port: u16,
    user: Option<String>,
    password: Option<String>,
    dbnum: u32,
    tls_on: bool,
}

/// The connection flags, `-u` over `-h`/`-p`/`--user`/`-a`/`--dbnum` (`dbnum` already checked).
fn connection(cli: &Cli, env: &Env, dbnum: u32) -> Result<Connection, UsageError> {
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
        && let Some(p) = env.auth.as_ref().filter(|p| !p.is_empty())
    {
        password = Some(p.clone());
    }
    if user.is_some() && password.is_none() {
        return Err(usage("'--user' needs a password: give it with -a"));
    }
    if cli.cluster && dbnum != 0 {
        return Err(usage(format!(
            "invalid value '{dbnum}' for '--dbnum': a cluster has only database 0 (--cluster)"
        )));
    }
    Ok(Connection {
        host,
        port,
        user,
        password,
        dbnum,
        tls_on,
    })
}

/// How results are printed (`--csv`, `-q`), after `--plot` and `--report` are checked by name.
fn output(cli: &Cli) -> Result<OutputMode, UsageError> {
    let output = if cli.csv {
        OutputMode::Csv
    } else if cli.quiet {
        OutputMode::Quiet
    } else {
        OutputMode::Normal
    };
    if let Some(p) = &cli.plot {
        check_extension("--plot", std::path::Path::new(p))?;
    }
    if let Some(p) = &cli.report
        && !p.to_ascii_lowercase().ends_with(".html")
        && !p.to_ascii_lowercase().ends_with(".htm")
    {
        return Err(usage(format!(
            "invalid value '{p}' for '--report': the page is HTML, name it FILE.html"
        )));
    }
    Ok(output)
}

/// The TLS flags, checked against each other and against TLS being on and `-s`.
fn tls_options(cli: &Cli, tls_on: bool) -> Result<TlsOptions, UsageError> {
    let tls_options = TlsOptions {
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
    tls::check_flags(&tls_options, tls_on, cli.socket.is_some()).map_err(|e| UsageError(e.0))?;
    Ok(tls_options)
}

/// Which tests to run, with the custom command and `--dataset` checked against each other.
fn suite_flags(
    cli: &Cli,
    commands: Vec<crate::config::shape::MixCommand>,
    replay: Option<crate::config::suite::replay::ReplayFlags>,
) -> Result<SuiteFlags, UsageError> {
    use std::os::unix::ffi::OsStrExt;
    let command: Vec<Vec<u8>> = cli.command.iter().map(|a| a.as_bytes().to_vec()).collect();
    let dataset = cli.dataset.as_ref().map(PathBuf::from);
    crate::config::suite::dataset::check(&crate::config::suite::dataset::DatasetFlags {
        dataset: dataset.as_deref(),
        maxdocs: cli.maxdocs,
        xml_root: cli.xml_root_element.as_deref(),
        command: &command,
        mix: cli.mix.is_some(),
        stdin_last_arg: cli.stdin_last_arg,
    })?;
    Ok(SuiteFlags {
        tests: cli.tests.clone(),
        mix: cli.mix.clone(),
        commands,
        command,
        stdin_last_arg: cli.stdin_last_arg,
        dataset,
        maxdocs: cli.maxdocs,
        xml_root: cli.xml_root_element.clone(),
        replay,
    })
}

impl Settings {
    /// Validates `cli` against `env`. Pure: the same flags and `env` give the same settings or the same
    /// error, and nothing outside them is read or written. The sections are checked in this order, so a
    /// command line with several mistakes is always told the same first one.
    pub fn parse(cli: &Cli, env: &Env) -> Result<Settings, UsageError> {
        let w = workload(cli, env)?;
        let data_size = w.shape.value.max;
        let pipeline = in_range("-P", cli.pipeline, 1, 1_000_000)? as usize;
        let dbnum = in_range("--dbnum", cli.dbnum, 0, u32::MAX as i64)? as u32;
        check_randomized_keys(cli, w.keyspace)?;
        let pace = pacing(cli, env)?;
        let conn = connection(cli, env, dbnum)?;
        if cli.stdin_last_arg && cli.command.is_empty() {
            return Err(usage(
                "'-x' needs a command whose last argument it reads from stdin",
            ));
        }
        let output = output(cli)?;
        let now = env.now.as_secs_f64();
        let start_at = match &cli.start_at {
            Some(v) => Some(parse_start_at(v, now)?),
            None => None,
        };
        let seed = cli.seed.unwrap_or(env.now.as_nanos() as u64);
        let seed = w.shard.map_or(seed, |sh| sh.seed(seed));
        let tls_options = tls_options(cli, conn.tls_on)?;
        let suite = suite_flags(cli, w.commands, w.replay)?;
        Ok(Settings {
            host: conn.host,
            port: conn.port,
            socket: cli.socket.as_ref().map(PathBuf::from),
            user: conn.user,
            password: conn.password,
            dbnum: conn.dbnum,
            resp3: cli.resp3,
            tracking: cli.enable_tracking,
            tls: conn.tls_on.then_some(tls_options),
            suite,
            run: RunSettings {
                load: Load {
                    clients: w.clients,
                    requests: w.requests,
                    first_request: w.first_request,
                    data_size,
                    keyspace: w.keyspace,
                    pipeline,
                    seed,
                    same_seed: false,
                    per_connection: None,
                    idle: cli.idle,
                    verify: w.verify,
                    keepalive: pace.keepalive,
                    reconnect_every: None,
                    shard: w.shard,
                },
                pace: Pace {
                    shape: w.shape,
                    burst_rate: None,
                    start_at,
                    loop_forever: cli.loop_forever,
                    run_count: pace.run_count,
                },
                connect: Connecting {
                    threads: pace.threads,
                    multi_thread: cli.threads.is_some(),
                    cpus: pace.cpus,
                    cluster: cli.cluster,
                    read_from: pace.read_from,
                    failover_timeout: pace.failover_timeout,
                    timeout: pace.timeout,
                    connect_timeout: pace.connect_timeout,
                },
                record: Record {
                    precision: pace.precision,
                    show_errors: cli.show_errors,
                    live: pace.metrics.is_some(),
                },
                results: Results {
                    output,
                    json: cli.json.clone(),
                    hdr_out: cli.hdr_out.clone(),
                    plot: cli.plot.as_ref().map(PathBuf::from),
                    report: cli.report.as_ref().map(PathBuf::from),
                    metrics: pace.metrics,
                    memtier: None,
                },
            },
            given_test: None,
        })
    }
}
