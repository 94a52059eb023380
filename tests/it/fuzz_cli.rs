//! No input panics: the binary over thousands of generated flag and value combinations (a seeded
//! generator, a fixed budget), and the inputs that used to panic or abort, each run as the user would.
//!
//! Every generated run ends quickly: the server address is a loopback port nobody listens on, so a run
//! whose flags are valid stops at the connection ("Could not connect", exit 1). What may not happen is
//! exit 101 (a panic), a death by signal (an abort, e.g. a failed allocation), a backtrace on stderr,
//! or a run that outlives its timeout. `RINGBENCH_FUZZ_SEED` and `RINGBENCH_FUZZ_CASES` replay or
//! widen a search.

use crate::common::bench::Bench;
use crate::common::scratch::Scratch;
use crate::common::*;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// How long one generated run may take before it counts as a hang.
const RUN_TIMEOUT: Duration = Duration::from_secs(10);
/// The address space each generated run may map (`ulimit -v`): a run that would take more must refuse
/// with a message, not abort, and none takes a shared machine's memory.
const ADDRESS_SPACE: u64 = 8 << 30;
const CASES: usize = 3000;

/// Runs the binary with `args` (and `envs`), in `dir`, under [`ADDRESS_SPACE`]; kills it past
/// [`RUN_TIMEOUT`]. `None` for a run that had to be killed.
fn run_bounded(
    args: &[OsString],
    envs: &[(&str, String)],
    dir: &std::path::Path,
) -> Option<Output> {
    let mut bench = Bench::new().args(args);
    for (k, v) in envs {
        bench = bench.env(k, v);
    }
    let mut child = bench
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("REDISCLI_AUTH")
        .current_dir(dir)
        .address_space(ADDRESS_SPACE)
        .command()
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // stderr is read on its own thread so a chatty child never blocks on a full pipe.
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut err = Vec::new();
        let _ = pipe.read_to_end(&mut err);
        err
    });
    let began = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if began.elapsed() > RUN_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let stderr = reader.join().unwrap();
    status.map(|status| Output {
        status,
        stdout: Vec::new(),
        stderr,
    })
}

/// What went wrong with one run, if anything.
fn verdict(out: &Option<Output>) -> Option<String> {
    let Some(out) = out else {
        return Some(format!("still running after {RUN_TIMEOUT:?}: killed"));
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if let Some(sig) = out.status.signal() {
        return Some(format!("killed by signal {sig}: {err}"));
    }
    if out.status.code() == Some(101) {
        return Some(format!("exit 101: {err}"));
    }
    if err.contains("panicked")
        || err.contains("RUST_BACKTRACE")
        || err.contains("memory allocation")
    {
        return Some(format!(
            "exit {:?} with a backtrace: {err}",
            out.status.code()
        ));
    }
    None
}

fn pick<'a, T>(rng: &mut SmallRng, from: &'a [T]) -> &'a T {
    &from[rng.random_range(0..from.len())]
}

/// Numbers of every kind: edges of the integer types, negatives, floats, junk and non-ASCII digits.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "16",
    "-1",
    "-0",
    "+1",
    "1000000",
    "1000001",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999",
    "0.5",
    "1.5",
    "1e3",
    "1e308",
    "1e309",
    "-1e309",
    "5e-324",
    "inf",
    "-inf",
    "NaN",
    "0x10",
    "1_000",
    "",
    " ",
    " 1",
    "1 ",
    "\u{0663}",
    "\u{ff11}",
    "\u{e9}",
    "1\u{e9}",
    "x",
];

/// Durations with and without units (the flags take plain numbers).
const DURATIONS: &[&str] = &[
    "0", "0.001", "0.2", "1", "-1", "1s", "500ms", "1m", "1h", "10us", "1e9", "1e-12", "86400",
    "86401", "nan", "inf", "", "\u{e9}s",
];

const URIS: &[&str] = &[
    "redis://:%a\u{e9}@127.0.0.1",
    "redis://:%\u{e9}@127.0.0.1",
    "redis://:%@127.0.0.1",
    "redis://:%%@127.0.0.1",
    "redis://:%4@127.0.0.1",
    "redis://:%zz@127.0.0.1",
    "redis://:%ff%fe@127.0.0.1",
    "redis://:%C3%A9@127.0.0.1",
    "redis://%C3%A9:p%C3%A4ss@127.0.0.1",
    "redis://u\u{e9}:\u{65e5}\u{672c}@127.0.0.1",
    "redis://:pw@127.0.0.1/99999999999",
    "redis://:pw@127.0.0.1/-1",
    "redis://:pw@127.0.0.1/\u{e9}",
    "redis://127.0.0.1:99999999999999999999",
    "redis://127.0.0.1:-1",
    "redis://127.0.0.1:\u{e9}",
    "redis://[::1",
    "redis://[::1]x",
    "redis://[",
    "redis://[]",
    "redis://@",
    "redis://:@",
    "redis://::::@",
    "redis://@@@",
    "redis://",
    "rediss://127.0.0.1",
    "valkey://:pw@[::1]",
    "valkeys://",
    "redis:/",
    "http://127.0.0.1",
    "",
    "%",
    "\u{e9}",
];

const CPUS: &[&str] = &[
    "0",
    "1",
    "0-1",
    "0,1",
    "1,0",
    "0-18446744073709551615",
    "0-18446744073709551616",
    "0-4294967296",
    "4294967296",
    "18446744073709551615-18446744073709551615",
    "1-0",
    "0-",
    "-0",
    "-",
    "--",
    "0--1",
    "0-1-2",
    "0,,1",
    ",",
    "",
    "0,0",
    "0-1,0-1",
    "8191",
    "8192",
    "\u{0660}",
    "0-\u{e9}",
    " 0 - 1 ",
];

const SIZES: &[&str] = &[
    "1",
    "3",
    "100",
    "1000000",
    "0",
    "-1",
    "1-10",
    "10-1",
    "0-5",
    "1-",
    "-",
    "536870912",
    "536870912-1",
    "536870913",
    "1-536870913",
    "18446744073709551616",
    "1k",
    "1MB",
    "\u{e9}",
    "",
];

const TESTS: &[&str] = &[
    "set",
    "get,set",
    "ping",
    "SET",
    "lrange_600",
    "mset",
    "",
    ",",
    ",,set,,",
    "nope",
    "set,nope",
    "\u{e9}",
    "xadd",
];

const MIXES: &[&str] = &[
    "set:1,get:2",
    "set:0",
    "set:-1",
    "set:1000001",
    "set:99999999999999999999",
    "set:nan",
    "set",
    ":",
    ":1",
    "",
    ",",
    "\u{e9}:1",
    "get:1,get:1",
    "set:1,",
    "GET __key__:80,SET __key__ __data__:20",
    "SET \"a,b\" v:1",
    "SET \"a:1",
    "'DBSIZE':1",
    "HSET h:__rand_1st__ f __rand_9th__:3,get:1",
];

/// memtier_benchmark's `--command` lines, `--command-ratio` and `--command-key-pattern` values.
const COMMAND_LINES: &[&str] = &[
    "SET __key__ __data__",
    "GET __key__",
    "",
    "   ",
    "SET \"k",
    "SET 'k'v",
    "HSET \"\\x41\" f __data__",
    "\u{e9} __key__",
];
const PATTERNS: &[&str] = &["R", "S", "P", "G", "Z", "r", "X", "RS", ""];
const EXPIRIES: &[&str] = &["1-10", "10-1", "0-5", "5", "1-", "-", "1-1000000001", "7-7"];

const DISTRIBUTIONS: &[&str] = &[
    "uniform",
    "sequential",
    "gaussian",
    "zipf",
    "zipf:0",
    "zipf:0.5",
    "zipf:10",
    "zipf:10.1",
    "zipf:1e309",
    "zipf:nan",
    "zipf:",
    "zipf:-1",
    "ZIPF:1",
    "",
    "\u{e9}",
];

const SHARDS: &[&str] = &[
    "0/1",
    "0/3",
    "2/3",
    "3/3",
    "0/0",
    "1/0",
    "-1/3",
    "0/-3",
    "0/100000",
    "0/100001",
    "18446744073709551615/18446744073709551616",
    "99999999999999999999/3",
    "/",
    "0/",
    "/3",
    "0/3/3",
    "\u{e9}/3",
    "0/\u{0663}",
    "",
];

const TEXTS: &[&str] = &[
    "",
    " ",
    "a",
    "\u{e9}",
    "\u{65e5}\u{672c}\u{8a9e}",
    "%",
    "%zz",
    "-",
    "--",
    "-h",
    "x.json",
    "x.svg",
    "x.png",
    "x.jpg",
    "/nonexistent/x.json",
    "/",
    ".",
    "DEFAULT",
    "TLS_AES_128_GCM_SHA256",
    "X25519:P-256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "__rand_int__",
];

const SUBCOMMANDS: &[&[&str]] = &[
    &["merge"],
    &["merge", "-"],
    &["merge", "/nonexistent.json"],
    &["compare"],
    &["compare", "/nonexistent.json", "/nonexistent2.json"],
    &["fleet"],
    &["fleet", "kubernetes"],
    &["fleet", "kubernetes", "-h", "r", "--pods"],
    &["fleet", "kubernetes", "-h", "r", "--pods", "3"],
    &[
        "fleet",
        "kubernetes",
        "-h",
        "r",
        "--pods",
        "18446744073709551616",
    ],
    &["capacity"],
    &["capacity", "--rps-max", "-1"],
    &["capacity", "--slo", "p99:\u{e9}"],
];

/// A trailing custom command (or `;`-separated sequence), with placeholders and repeat counts.
const COMMANDS: &[&[&str]] = &[
    &["set", "k", "__rand_int__"],
    &["set", "k:__rand_1st__", "__data__"],
    &["ping", ";"],
    &[";"],
    &["3", "set", "a", "b", ";", "0", "get", "a"],
    &["99999999999999999999", "set", "a", "b", ";", "get", "a"],
    &["\u{e9}", "\u{65e5}"],
    &["set", "", ""],
];

/// Up to 24 characters from digits and the separators of every flag's syntax, some multi-byte.
fn random_text(rng: &mut SmallRng) -> String {
    const CHARS: &[char] = &[
        '0',
        '1',
        '2',
        '9',
        '-',
        ',',
        '/',
        ':',
        '.',
        '%',
        '@',
        '[',
        ']',
        ';',
        '=',
        ' ',
        'e',
        'x',
        'a',
        'f',
        'F',
        '_',
        '\u{e9}',
        '\u{65e5}',
        '\u{0663}',
        '\u{1f600}',
        '\u{200b}',
    ];
    let len = rng.random_range(0..24);
    let mut out: String = (0..len).map(|_| *pick(rng, CHARS)).collect();
    if rng.random_range(0..3) == 0 {
        let prefix = *pick(rng, &["redis://", "rediss://", "zipf:", "set:", "0-", "0/"]);
        out.insert_str(0, prefix);
    }
    out
}

/// The values one flag may get.
fn value_for(flag: &str, rng: &mut SmallRng, dead_port: &str) -> OsString {
    // Now and then a value meant for another flag, bytes that are not UTF-8, or a random string of
    // the characters the parsers split on.
    match rng.random_range(0..20) {
        0 => return OsString::from_vec(vec![b'1', 0xff, 0xfe]),
        1 => return pick(rng, TEXTS).into(),
        2 => return pick(rng, NUMBERS).into(),
        3 | 4 => return random_text(rng).into(),
        _ => {}
    }
    let v: String =
        match flag {
            "-h" => pick(
                rng,
                &[
                    "127.0.0.1",
                    "::1",
                    "[::1]",
                    "localhost",
                    "",
                    "[",
                    "[]",
                    "::",
                ],
            )
            .to_string(),
            "-p" => pick(
                rng,
                &[
                    dead_port,
                    "0",
                    "-1",
                    "65536",
                    "",
                    "\u{e9}",
                    "99999999999999999999",
                ],
            )
            .to_string(),
            "-s" => pick(rng, &["/nonexistent/redis.sock", "", "/", "\u{e9}.sock"]).to_string(),
            "-u" => {
                let base = pick(rng, URIS).to_string();
                // A URI with a host but no port would take the default one: point it at the dead port.
                match rng.random_range(0..3) {
                    0 if base.ends_with("127.0.0.1") || base.ends_with("[::1]") => {
                        format!("{base}:{dead_port}")
                    }
                    _ => base,
                }
            }
            "--cpus" => pick(rng, CPUS).to_string(),
            "-d" => pick(rng, SIZES).to_string(),
            "-t" => pick(rng, TESTS).to_string(),
            "--mix" => pick(rng, MIXES).to_string(),
            "--command" => pick(rng, COMMAND_LINES).to_string(),
            "--command-ratio" => pick(rng, NUMBERS).to_string(),
            "--command-key-pattern" => pick(rng, PATTERNS).to_string(),
            "--expiry-range" => pick(rng, EXPIRIES).to_string(),
            "--dataset" | "--xml-root-element" => pick(rng, TEXTS).to_string(),
            "--replay" => pick(
                rng,
                &["/nonexistent/capture.txt", "/", "/dev/null", "Cargo.toml"],
            )
            .to_string(),
            "--replay-pace" => {
                pick(rng, &["max", "recorded", "2x", "0x", "-1x", "1e9x", "fast"]).to_string()
            }
            "--distribution" => pick(rng, DISTRIBUTIONS).to_string(),
            "--shard" => pick(rng, SHARDS).to_string(),
            "--shards" => pick(rng, NUMBERS).to_string(),
            "--start-at" => {
                let now = ringbench::unix_now();
                let t = *pick(
                    rng,
                    &[
                        now - 0.5,
                        now - 5.0,
                        now + 200_000.0,
                        0.0,
                        -1.0,
                        now * 1000.0,
                    ],
                );
                match rng.random_range(0..3) {
                    0 => pick(rng, NUMBERS).to_string(),
                    _ => format!("{t:.3}"),
                }
            }
            "--duration" | "--warmup" | "--failover-timeout" | "--timeout"
            | "--connect-timeout" => pick(rng, DURATIONS).to_string(),
            "--json" | "--plot" | "--hdr-out" | "--cacert" | "--cacertdir" | "--cert" | "--key"
            | "--sni" | "--tls-ciphers" | "--tls-ciphersuites" | "--tls-groups" | "--user"
            | "-a" => pick(rng, TEXTS).to_string(),
            _ => pick(rng, NUMBERS).to_string(),
        };
    v.into()
}

/// Flags that take a value.
const VALUED: &[&str] = &[
    "-h",
    "-p",
    "-s",
    "-a",
    "--user",
    "-u",
    "-c",
    "-n",
    "-d",
    "--dbnum",
    "--threads",
    "--cpus",
    "--failover-timeout",
    "-k",
    "-r",
    "-P",
    "-t",
    "--seed",
    "--precision",
    "--sni",
    "--cacert",
    "--cacertdir",
    "--cert",
    "--key",
    "--tls-ciphers",
    "--tls-ciphersuites",
    "--tls-groups",
    "--json",
    "--hdr-out",
    "--plot",
    "--start-at",
    "--shard",
    "--shards",
    "--rps",
    "--duration",
    "--warmup",
    "--distribution",
    "--mix",
    "--command",
    "--command-ratio",
    "--command-key-pattern",
    "--expiry-range",
    "--replay",
    "--replay-pace",
    "--dataset",
    "--maxdocs",
    "--xml-root-element",
    "--timeout",
    "--connect-timeout",
    "--run-count",
    "--rfr",
];

/// Flags that stand alone.
const SWITCHES: &[&str] = &[
    "-3",
    "--cluster",
    "--enable-tracking",
    "-q",
    "--csv",
    "-l",
    "-I",
    "-x",
    "-e",
    "--tls",
    "--insecure",
    "--sequential",
    "--random-data",
    "--data-verify",
    "--verify-only",
];

/// One generated command line and its environment.
fn case(rng: &mut SmallRng, dead_port: &str) -> (Vec<OsString>, Vec<(&'static str, String)>) {
    let mut args: Vec<OsString> = Vec::new();
    if rng.random_range(0..25) == 0 {
        args.extend(pick(rng, SUBCOMMANDS).iter().map(OsString::from));
    }
    let mut used: Vec<&str> = Vec::new();
    for _ in 0..rng.random_range(1..6) {
        let flag = if rng.random_range(0..4) == 0 {
            *pick(rng, SWITCHES)
        } else {
            *pick(rng, VALUED)
        };
        if used.contains(&flag) && rng.random_range(0..10) != 0 {
            continue; // mostly distinct flags (a repeat is a clap error, tried now and then)
        }
        used.push(flag);
        if SWITCHES.contains(&flag) {
            args.push(flag.into());
        } else if rng.random_range(0..3) == 0 && flag.starts_with("--") {
            let mut joined = OsString::from(format!("{flag}="));
            joined.push(value_for(flag, rng, dead_port));
            args.push(joined);
        } else {
            args.push(flag.into());
            args.push(value_for(flag, rng, dead_port));
        }
    }
    // Always somewhere nobody listens, and few requests, unless the case chose its own.
    if !used.contains(&"-p") {
        args.extend(["-p".into(), dead_port.into()]);
    }
    if !used.contains(&"-h") && !used.contains(&"-u") {
        args.extend(["-h".into(), "127.0.0.1".into()]);
    }
    if !used.contains(&"-n") {
        args.extend(["-n".into(), "1".into()]);
    }
    if rng.random_range(0..8) == 0 {
        if rng.random_range(0..2) == 0 {
            args.push("--".into());
        }
        args.extend(pick(rng, COMMANDS).iter().map(OsString::from));
    }
    if rng.random_range(0..30) == 0 {
        // A trailing lone -h: "needs a host name".
        args.push("-h".into());
    }
    let mut envs = Vec::new();
    if rng.random_range(0..6) == 0 {
        envs.push(("JOB_COMPLETION_INDEX", pick(rng, NUMBERS).to_string()));
    }
    if rng.random_range(0..10) == 0 {
        envs.push(("REDISCLI_AUTH", pick(rng, TEXTS).to_string()));
    }
    (args, envs)
}

#[test]
fn thousands_of_generated_command_lines_never_panic_abort_or_hang() {
    let _turn = crate::common::lock::shared();
    let seed: u64 = std::env::var("RINGBENCH_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2222);
    let cases: usize = std::env::var("RINGBENCH_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES);
    let dead_port = free_port().to_string();
    let dir = Scratch::new("fuzz");
    let mut rng = SmallRng::seed_from_u64(seed);
    let all: Vec<_> = (0..cases).map(|_| case(&mut rng, &dead_port)).collect();
    let began = Instant::now();
    // Two workers, one per core of a small CI machine.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let (all, dir) = (&all, &dir.0);
                scope.spawn(move || {
                    let mut bad = Vec::new();
                    let mut codes = [0usize; 3];
                    for (args, envs) in all.iter().skip(w).step_by(2) {
                        let out = run_bounded(args, envs, dir);
                        if let Some(why) = verdict(&out) {
                            bad.push(format!("{args:?} {envs:?}: {why}"));
                        } else if let Some(o) = &out {
                            let c = o.status.code().unwrap_or(-1);
                            codes[(c.clamp(0, 2)) as usize] += 1;
                        }
                    }
                    (bad, codes)
                })
            })
            .collect();
        let mut bad = Vec::new();
        let mut codes = [0usize; 3];
        for w in workers {
            let (b, c) = w.join().unwrap();
            bad.extend(b);
            for (sum, n) in codes.iter_mut().zip(c) {
                *sum += n;
            }
        }
        eprintln!(
            "{cases} runs in {:.1} s, exit codes 0/1/2: {codes:?}",
            began.elapsed().as_secs_f64()
        );
        // The generator reaches both the flag checks and the connection: a generator that only
        // produced usage errors (or none) would test little.
        assert!(
            codes[2] > cases / 4 && codes[1] > cases / 20,
            "exit codes 0/1/2: {codes:?} of {cases}"
        );
        bad
    });
    assert!(
        failures.is_empty(),
        "{} of {cases} runs failed (seed {seed}, {:.1} s); the first:\n{}",
        failures.len(),
        began.elapsed().as_secs_f64(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// One run of the binary as the user types it, stderr returned; asserts exit 2 and one line.
fn usage_error(args: &[&str]) -> String {
    let out = Bench::new().args(args).output();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: {:?} {err}",
        out.status
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    err
}

#[test]
fn a_uri_escape_cut_inside_a_character_is_a_usage_error_that_hides_the_password() {
    let _turn = crate::common::lock::shared();
    let port = free_port().to_string();
    let err = usage_error(&["-u", "redis://:%a\u{e9}@h", "-p", &port]);
    assert_eq!(
        err.trim_end(),
        "ringbench: invalid value 'redis://:***@h' for '-u': the password has a '%' not followed by two hexadecimal digits (write '%' as %25)"
    );
    let err = usage_error(&["-u", "redis://bob:hunter2%ff@127.0.0.1", "-p", &port]);
    assert!(
        err.contains("'redis://bob:***@127.0.0.1' for '-u'") && !err.contains("hunter2"),
        "{err}"
    );
}

#[test]
fn non_ascii_and_bad_escapes_in_a_uri_are_one_line_and_exit_2() {
    let _turn = crate::common::lock::shared();
    let port = free_port().to_string();
    for (uri, want) in [
        (
            "redis://j\u{fc}rgen:p%C3%28w@127.0.0.1",
            "'redis://j\u{fc}rgen:***@127.0.0.1' for '-u': the password's %-escapes do not decode to UTF-8 text",
        ),
        (
            "redis://%\u{e9}9:pw@h\u{e9}",
            "'redis://%\u{e9}9:***@h\u{e9}' for '-u': the user name has a '%' not followed by two hexadecimal digits",
        ),
        (
            "redis://\u{e9}\u{e8}:\u{1f600}%@h",
            "'redis://\u{e9}\u{e8}:***@h' for '-u': the password has a '%' not followed by two hexadecimal digits",
        ),
        (
            "redis://:%FF%FE@h",
            "'redis://:***@h' for '-u': the password's %-escapes do not decode to UTF-8 text",
        ),
    ] {
        let err = usage_error(&["-u", uri, "-p", &port]);
        assert!(err.contains(want), "{uri}: {err}");
        assert!(!err.contains("panicked"), "{uri}: {err}");
    }
}

#[test]
fn a_huge_cpus_range_is_a_usage_error() {
    let _turn = crate::common::lock::shared();
    let port = free_port().to_string();
    for list in ["0-18446744073709551615", "0-4294967296"] {
        let err = usage_error(&["--cpus", list, "-p", &port]);
        assert!(
            err.starts_with(&format!(
                "ringbench: invalid value '{list}' for '--cpus': core "
            )),
            "{err}"
        );
    }
}

#[test]
fn request_buffers_past_the_address_space_limit_are_refused_before_the_run() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    // `ulimit -v 6000000` (kB): 8.0 GB of buffers cannot be mapped. Exit 1, as for the other limits a
    // run does not fit in (open files, local ports).
    let out = Bench::on(&s)
        .args(["-t", "set", "-r", "1000", "-d", "10000000", "-P", "16"])
        .args(["-c", "50", "-n", "100"])
        .address_space(6_000_000 * 1024)
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?} {err}", out.status);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "ringbench: SET: -d 10000000 with -P 16 and -c 50 needs 8.0 GB of request buffers, more than the "
        ) && err.contains("the address-space limit leaves (RLIMIT_AS 6.1 GB, ulimit -v 6000000)"),
        "{err}"
    );
    assert_eq!(s.calls("set"), 0);
}

#[test]
fn a_suite_whose_values_cannot_be_held_is_refused_before_it_is_built() {
    let _turn = crate::common::lock::shared();
    // -d 536870912 (the most -d allows): the default suite's MSET alone holds ten 512 MiB values. Under
    // `ulimit -v 4000000` building the suite aborted ("memory allocation of 536870912 bytes failed").
    let port = free_port();
    let began = Instant::now();
    let out = Bench::port(port)
        .args(["-d", "536870912", "-n", "1"])
        .address_space(4_000_000 * 1024)
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?} {err}", out.status);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ringbench: MSET (10 keys): -d 536870912 with -P 1 and -c 50 needs 5.4 GB of request buffers (and ")
            && err.contains(" GB for the suite's requests and values), more than the ")
            && err.contains("ulimit -v 4000000"),
        "{err}"
    );
    // Refused from the sizes of two small builds, without building the real one.
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
}
