//! End-to-end checks of the core engine against a real redis-server, counted from the server's side.

use crate::common::bench::Bench;
use crate::common::*;

#[test]
fn each_command_reaches_the_server_exactly_n_times() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let (_, stats) = Bench::on(&s)
        .args([
            "-t",
            "set,get,incr,lpush,sadd,hset",
            "-n",
            "20000",
            "-c",
            "20",
            "-q",
        ])
        .counted();
    for cmd in ["set", "get", "incr", "lpush", "sadd", "hset"] {
        assert_eq!(
            stats.get(cmd).copied(),
            Some(20000),
            "calls of {cmd}: {stats:?}"
        );
    }
}

#[test]
fn pipelined_threads_without_r_hit_one_literal_key() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    Bench::on(&s)
        .args([
            "-t",
            "incr",
            "-n",
            "30000",
            "-c",
            "50",
            "-P",
            "16",
            "--threads",
            "2",
            "-q",
        ])
        .ok();
    assert_eq!(s.cli(&["get", "counter:__rand_int__"]), "30000");
    assert_eq!(s.calls("incr"), 30000);
}

#[test]
fn random_keys_stay_in_the_keyspace() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    Bench::on(&s)
        .args(["-t", "set", "-r", "1000", "-n", "20000", "-q"])
        .ok();
    let dbsize: u64 = s.cli(&["dbsize"]).parse().unwrap();
    assert!(dbsize > 0 && dbsize <= 1000, "dbsize {dbsize}");
    let keys = s.cli(&["--scan"]);
    let mut seen = 0;
    for k in keys.lines() {
        let digits = k
            .strip_prefix("key:")
            .unwrap_or_else(|| panic!("unexpected key {k}"));
        assert_eq!(digits.len(), 12, "{k}");
        assert!(digits.bytes().all(|b| b.is_ascii_digit()), "{k}");
        assert!(digits.parse::<u64>().unwrap() < 1000, "{k}");
        seen += 1;
    }
    assert_eq!(seen, dbsize);
    assert_eq!(s.calls("set"), 20000);
}

#[test]
fn custom_command_with_random_elements() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    Bench::on(&s)
        .args([
            "-r",
            "100",
            "-n",
            "5000",
            "lpush",
            "mylist",
            "ele:__rand_int__",
            "-q",
        ])
        .ok();
    assert_eq!(s.cli(&["llen", "mylist"]), "5000");
    let first = s.cli(&["lindex", "mylist", "0"]);
    assert!(first.starts_with("ele:") && first.len() == 16, "{first}");
}

#[test]
fn value_size_follows_d() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    Bench::on(&s)
        .args(["-d", "100", "-t", "set", "-n", "100", "-q"])
        .ok();
    assert_eq!(s.cli(&["strlen", "key:__rand_int__"]), "100");
    assert_eq!(s.cli(&["get", "key:__rand_int__"]), "x".repeat(100));
}

#[test]
fn dbnum_selects_the_db() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    Bench::on(&s)
        .args(["--dbnum", "3", "-t", "set", "-n", "100", "-q"])
        .ok();
    assert_eq!(s.cli(&["-n", "3", "dbsize"]), "1");
    assert_eq!(s.cli(&["-n", "0", "dbsize"]), "0");
}

#[test]
fn wrong_password_ends_the_run_with_the_servers_message() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--requirepass", "right-one"]);
    let out = Bench::on(&s)
        .args(["-a", "wrong", "-t", "set", "-n", "100"])
        .output();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("WRONGPASS") || err.contains("invalid password"),
        "{err}"
    );
    assert!(
        !err.contains("wrong\n") && !err.contains(" wrong "),
        "password echoed: {err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
}

#[test]
fn right_password_and_user_work() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--requirepass", "right-one"]);
    let out = Bench::on(&s)
        .args([
            "--user",
            "default",
            "-a",
            "right-one",
            "-t",
            "set",
            "-n",
            "300",
            "-q",
        ])
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = s.cli(&[
        "-a",
        "right-one",
        "--no-auth-warning",
        "info",
        "commandstats",
    ]);
    assert_eq!(parse_commandstats(&calls).get("set"), Some(&300));
}

#[test]
fn unix_socket_resp3_and_tracking() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let out = Bench::new()
        .arg("-s")
        .arg(&s.socket)
        .args([
            "-3",
            "--enable-tracking",
            "-t",
            "get,set",
            "-n",
            "2000",
            "-c",
            "4",
            "-q",
        ])
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every GET's key is then overwritten by SET: the server sends invalidation pushes, which are not replies.
    assert_eq!(s.calls("get"), 2000);
    assert_eq!(s.calls("set"), 2000);
    assert_eq!(
        s.calls("hello"),
        9,
        "one HELLO per connection per test (4 x 2) plus the control connection"
    );
}

#[test]
fn error_replies_are_counted_and_the_run_goes_on() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    s.cli(&["set", "notalist", "x"]);
    let out = Bench::on(&s)
        .args(["-n", "500", "-c", "5", "lpush", "notalist", "a"])
        .output();
    // The full report comes first; the exit code then says the results hide failures.
    assert_eq!(out.status.code(), Some(1));
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("error replies: 500"), "{out}");
    assert!(out.contains("WRONGTYPE"), "{out}");
    assert_eq!(s.calls("lpush"), 500);
}

#[test]
fn keepalive_zero_reconnects_per_batch() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let before: u64 = connections_received(&s);
    Bench::on(&s)
        .args(["-k", "0", "-t", "ping_mbulk", "-n", "200", "-c", "4", "-q"])
        .ok();
    let after = connections_received(&s);
    assert_eq!(s.calls("ping"), 200);
    // 200 batches of one request each reconnect after the batch: about 200 connections.
    assert!(after - before >= 200, "{before} -> {after}");
}

fn connections_received(s: &RedisServer) -> u64 {
    let info = s.cli(&["info", "stats"]);
    info.lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn stdin_gives_the_last_argument() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let out = Bench::on(&s)
        .args(["-x", "-n", "10", "-q", "set", "fromstdin"])
        .input(b"hello\n");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("set fromstdin: "));
    assert_eq!(s.cli(&["strlen", "fromstdin"]), "6");
}

#[test]
fn csv_output_shape() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let out = Bench::on(&s)
        .args(["--csv", "-t", "set,get", "-n", "1000"])
        .ok();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(
        lines[0],
        r#""test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms""#
    );
    for (line, title) in lines[1..].iter().zip(["SET", "GET"]) {
        let f: Vec<&str> = line.split(',').map(|f| f.trim_matches('"')).collect();
        assert_eq!(f.len(), 8);
        assert_eq!(f[0], title);
        assert!(f[1].parse::<f64>().unwrap() > 0.0);
        assert_eq!(
            f[1].split('.').nth(1).unwrap().len(),
            2,
            "rps has 2 decimals: {line}"
        );
        for v in &f[2..] {
            assert_eq!(
                v.split('.').nth(1).unwrap().len(),
                3,
                "latency has 3 decimals: {line}"
            );
        }
        let min: f64 = f[3].parse().unwrap();
        let max: f64 = f[7].parse().unwrap();
        assert!(min <= max);
    }
}

#[test]
fn quiet_line_shape() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let out = Bench::on(&s).args(["-q", "-t", "get", "-n", "1000"]).ok();
    let line = out.trim_end();
    let rest = line
        .strip_prefix("GET: ")
        .unwrap_or_else(|| panic!("{line}"));
    let (rps, tail) = rest.split_once(" requests per second, p50=").unwrap();
    assert!(rps.parse::<f64>().unwrap() > 0.0);
    assert!(tail.ends_with(" msec"));
    tail.trim_end_matches(" msec").parse::<f64>().unwrap();
}

#[test]
fn normal_block_sections() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let out = Bench::on(&s)
        .args(["-t", "set", "-n", "2000", "--threads", "2"])
        .ok();
    let want = [
        "====== SET ======",
        "  2000 requests completed in ",
        "  50 parallel clients",
        "  3 bytes payload",
        "  keep alive: 1",
        "  host configuration \"save\":",
        "  host configuration \"appendonly\": no",
        "  multi-thread: yes",
        "  threads: 2",
        "Latency by percentile distribution:",
        "Cumulative distribution of latencies:",
        "Summary:",
        "  throughput summary: ",
        "  latency summary (msec):",
    ];
    let mut pos = 0;
    for w in want {
        let at = out[pos..]
            .find(w)
            .unwrap_or_else(|| panic!("missing {w:?} after byte {pos}:\n{out}"));
        pos += at + w.len();
    }
    assert!(out.contains("100.000% <= "), "{out}");
    assert!(out.contains("(cumulative count 2000)"), "{out}");
}

#[test]
fn no_progress_line_in_pipes() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let out = Bench::on(&s)
        .args(["-t", "set", "-n", "20000", "-c", "5", "-q"])
        .output();
    assert!(out.status.success());
    let all = [out.stdout, out.stderr].concat();
    assert!(!all.contains(&b'\r'), "{}", String::from_utf8_lossy(&all));
    assert!(!String::from_utf8_lossy(&all).contains("rps="));
}

#[test]
fn same_titles_as_redis_benchmark() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let ours = Bench::on(&s).args(["-q", "-n", "200", "-c", "5"]).ok();
    let theirs = std::process::Command::new("redis-benchmark")
        .args(["-p", &s.port.to_string(), "-q", "-n", "200", "-c", "5"])
        .output()
        .unwrap();
    let theirs = String::from_utf8_lossy(&theirs.stdout).to_string();
    // redis-benchmark writes its progress with \r even into pipes: keep what follows the last \r of each line.
    let titles = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.rsplit('\r').next().unwrap().trim())
            .filter(|l| l.contains(" requests per second"))
            .map(|l| l.split(": ").next().unwrap().to_string())
            .collect()
    };
    let (a, b) = (titles(&ours), titles(&theirs));
    assert_eq!(a.len(), 20, "{ours}");
    assert_eq!(a, b);
}

#[test]
fn progress_line_on_a_terminal_shows_a_stall() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    // Writes wait for 800 ms while CONFIG GET (a read) still answers: the run starts and stalls.
    assert_eq!(s.cli(&["client", "pause", "800", "write"]), "OK");
    let cmd = format!(
        "{} -p {} -t set -n 100 -c 2 -q",
        env!("CARGO_BIN_EXE_ringbench"),
        s.port
    );
    // `script` gives the program a terminal for stdout and stderr (not a Bench: it takes the command
    // line as one string).
    let out = std::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\rSET: rps=0.0 (overall: 0.0)")
            || text.contains("\r\x1b[KSET: rps=0.0 (overall: 0.0)"),
        "{text:?}"
    );
    assert!(
        text.contains("SET: ") && text.contains(" requests per second, p50="),
        "{text:?}"
    );
    assert_eq!(s.calls("set"), 100);
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let _turn = crate::common::lock::shared();
    use std::io::{BufRead, BufReader};
    let s = RedisServer::start();
    // As `ringbench ... | head -1`: the reader takes one line and goes away before GET's report.
    let mut child = Bench::on(&s)
        .args(["-t", "set,get", "-n", "20000", "-c", "5"])
        .spawn();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "====== SET ======\n");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_bracketed_ipv6_host_works() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let out = Bench::on(&s)
        .args([
            "-h", "[::1]", "-t", "set", "-n", "1000", "-c", "2", "--json", "-",
        ])
        .ok();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["config"]["target"], format!("[::1]:{}", s.port));
    assert_eq!(s.calls("set"), 1000);
}

#[test]
fn command_arguments_are_bytes_and_titles_are_escaped_and_short() {
    let _turn = crate::common::lock::shared();
    use std::os::unix::ffi::OsStrExt;
    let s = RedisServer::start();
    s.reset();
    let key = std::ffi::OsStr::from_bytes(b"k\xff\r\n\x01");
    let value = "v".repeat(100_000);
    let out = Bench::on(&s)
        .args(["-n", "100", "-c", "2", "-q", "set"])
        .arg(key)
        .arg(&value)
        .output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // The key reached the server byte for byte (redis-cli escapes it the same way).
    assert_eq!(
        s.cli(&["--no-raw", "keys", "*"]),
        "1) \"k\\xff\\r\\n\\x01\""
    );
    assert_eq!(s.calls("set"), 100);
    assert_eq!(s.cli(&["strlen", "k\u{fffd}"]), "0");
    // One line, the title escaped and cut short.
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let title = stdout.split(": ").next().unwrap();
    assert!(title.starts_with("set k\\xff\\r\\n\\x01 vvv"), "{title}");
    assert!(
        title.ends_with("...") && title.chars().count() == 60,
        "{title}"
    );
}

#[test]
fn a_server_that_demands_auth_fails_before_the_first_test() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--requirepass", "secret"]);
    for format in ["-q", "--csv", "--json=-"] {
        let out = Bench::on(&s)
            .args(["-t", "set", "-n", "2000", format])
            .output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {err}");
        // The server's own message, as redis-benchmark prints it, on ringbench's one error line.
        assert_eq!(
            err.trim(),
            "ringbench: Error from server: NOAUTH Authentication required."
        );
        assert!(out.stdout.is_empty(), "{format}: a result was printed");
    }
    let calls = s.cli(&["-a", "secret", "--no-auth-warning", "info", "commandstats"]);
    assert_eq!(
        parse_commandstats(&calls).get("set"),
        None,
        "no SET was sent"
    );
}

#[test]
fn error_replies_show_next_to_the_rate_in_every_format_and_exit_1() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    s.cli(&["set", "notalist", "x"]);
    let base = |fmt: &[&str]| {
        Bench::on(&s)
            .args(["-n", "300", "-c", "3"])
            .args(fmt)
            .args(["lpush", "notalist", "a"])
            .output()
    };
    let q = base(&["-q"]);
    assert_eq!(q.status.code(), Some(1));
    let line = String::from_utf8_lossy(&q.stdout);
    assert!(
        line.contains("requests per second") && line.contains(", 300 error replies"),
        "{line}"
    );
    let n = base(&[]);
    assert_eq!(n.status.code(), Some(1));
    let text = String::from_utf8_lossy(&n.stdout);
    let rate = text
        .lines()
        .find(|l| l.contains("throughput summary"))
        .unwrap();
    assert!(
        rate.ends_with("requests per second, 300 error replies"),
        "{rate}"
    );
    let c = base(&["--csv"]);
    assert_eq!(c.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&c.stdout).lines().count(),
        2,
        "header and one row"
    );
    let err = String::from_utf8_lossy(&c.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("300 error replies (first: WRONGTYPE"), "{err}");
    assert_eq!(s.calls("lpush"), 900);
}

#[test]
fn a_successful_run_with_a_password_writes_nothing_to_stderr() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--requirepass", "pw"]);
    let uri = format!("redis://default:pw@127.0.0.1:{}", s.port);
    for bench in [
        Bench::on(&s).args(["-a", "pw"]),
        Bench::new().args(["-u", &uri]),
    ] {
        let out = bench.args(["-t", "set", "-n", "200", "-q"]).output();
        assert!(out.status.success());
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("SET: "));
    }
}

#[test]
fn more_threads_than_clients_or_cores_goes_into_the_header_not_stderr() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let cores = std::thread::available_parallelism().unwrap().get();
    let flags = ["-t", "set", "-n", "500", "--threads", "10", "-c", "5"];
    let out = Bench::on(&s).args(flags).json("-").output();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["config"]["threads"], 5, "the executors that ran");
    let out = Bench::on(&s).args(flags).output();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("threads:"))
        .unwrap();
    let want = if cores < 5 {
        let unit = if cores == 1 { "core" } else { "cores" };
        format!("  threads: 5 (10 asked, one per client; sharing {cores} {unit})")
    } else {
        "  threads: 5 (10 asked, one per client)".to_string()
    };
    assert_eq!(line, want);
}

#[test]
fn valkey_uri_schemes_work_like_redis_ones() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--requirepass", "pw"]);
    let uri = format!("valkey://default:pw@127.0.0.1:{}/3", s.port);
    let out = Bench::new()
        .args(["-u", &uri, "-t", "set", "-n", "150", "-q"])
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    let keys = s.cli(&["-a", "pw", "--no-auth-warning", "-n", "3", "dbsize"]);
    assert_eq!(keys, "1", "SET key:__rand_int__ landed in db 3");
    let bad = Bench::new().args(["-u", "valkeyx://127.0.0.1"]).output();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("'-u'"));
}

/// Waits (polling the server, no fixed sleep) until it has `n` clients besides the asking one.
fn wait_for_clients(s: &RedisServer, n: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let info = s.cli(&["info", "clients"]);
        let connected: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix("connected_clients:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        if connected > n {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{connected} clients");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Waits for `child` at most 20 s (killing it then: a hang is the failure).
fn wait_bounded(mut child: std::process::Child) -> std::process::Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running after 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn idle_mode_refused_by_maxclients_reports_the_server_error() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--maxclients", "5"]);
    for threads in ["1", "2"] {
        // The previous run's connections must be gone, or the control connection is refused first.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !s
            .cli(&["info", "clients"])
            .contains("connected_clients:1\r")
        {
            assert!(
                std::time::Instant::now() < deadline,
                "connections stay open"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let child = Bench::on(&s)
            .args(["-c", "10", "-I", "--threads", threads])
            .spawn();
        let out = wait_bounded(child);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "ringbench: Error from server: ERR max number of clients reached\n"
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("Creating 10 idle connections"));
    }
}

#[test]
fn idle_mode_shows_open_clients_on_a_terminal_and_fails_when_they_are_closed() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    // Under `script`, for a terminal (not a Bench: it takes the command line as one string).
    let cmd = format!("{} -p {} -c 3 -I", env!("CARGO_BIN_EXE_ringbench"), s.port);
    let mut child = std::process::Command::new("script")
        .args(["-qfec", &cmd, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let seen = seen.clone();
        let mut stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            use std::io::Read;
            let mut buf = [0u8; 256];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let text = || String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !text().contains("\r\x1b[Kclients: 3") {
        assert!(std::time::Instant::now() < deadline, "{:?}", text());
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    wait_for_clients(&s, 3);
    // The server closes every connection but the asking one, as its `timeout` would.
    assert_eq!(s.cli(&["client", "kill", "type", "normal"]), "3");
    let out = wait_bounded(child);
    reader.join().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text().contains("closed by the server"), "{:?}", text());
}

#[test]
fn small_usage_points_name_their_flag() {
    let _turn = crate::common::lock::shared();
    let usage = |args: &[&str]| {
        let out = Bench::new().args(args).output();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(out.stdout.is_empty());
        err
    };
    let e = usage(&["-h"]);
    assert!(e.contains("'-h'") && e.contains("--help"), "{e}");
    let e = usage(&["--distribution", "zipf", "-t", "get"]);
    assert!(
        e.contains("'--distribution zipf'") && e.contains("'-r"),
        "{e}"
    );
    let e = usage(&["--plot", "x.jpg", "-t", "get"]);
    assert!(e.contains("'x.jpg'") && e.contains("'--plot'"), "{e}");
    let out = Bench::new()
        .args(["compare", "a.json", "b.json", "--plot", "x.jpg"])
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'x.jpg' for '--plot'"));
    let help = Bench::new().arg("--help").output();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("ringbench compare ") && help.contains("ringbench merge "),
        "{help}"
    );
    assert!(help.contains("Examples:"), "{help}");
}

#[test]
fn a_value_size_range_shows_in_the_header() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let out = Bench::on(&s)
        .args(["-d", "10-200", "-t", "set", "-n", "300", "-r", "50"])
        .ok();
    assert!(out.contains("\n  10-200 bytes payload\n"), "{out}");
    let out = Bench::on(&s)
        .args(["-d", "64", "-t", "set", "-n", "100"])
        .ok();
    assert!(out.contains("\n  64 bytes payload\n"), "{out}");
}

#[test]
fn sequential_flag_covers_the_keyspace_like_valkey_benchmark() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    Bench::on(&s)
        .args(["-r", "50", "-t", "set", "-n", "50", "--sequential", "-q"])
        .ok();
    assert_eq!(s.calls("set"), 50);
    assert_eq!(s.cli(&["dbsize"]), "50", "each of the 50 keys once");
    let out = Bench::new()
        .args(["--sequential", "--distribution", "zipf", "-r", "5"])
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'--sequential'"));
}

#[test]
fn a_command_sequence_sends_each_part_its_repeat_count() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let out = Bench::on(&s)
        .args([
            "-n", "12", "-q", "--", "incr", "foo", ";", "3", "incr", "bar",
        ])
        .ok();
    assert!(out.starts_with("incr foo ; 3 incr bar: "), "{out}");
    assert_eq!(s.cli(&["get", "foo"]), "3");
    assert_eq!(s.cli(&["get", "bar"]), "9");
    assert_eq!(s.calls("incr"), 12);
    s.reset();
    Bench::on(&s)
        .args([
            "-n", "4000", "-c", "7", "-P", "3", "-q", "--", "incr", "a", ";", "incr", "b",
        ])
        .ok();
    assert_eq!(
        (s.cli(&["get", "a"]), s.cli(&["get", "b"])),
        ("2000".into(), "2000".into())
    );
    let out = Bench::new()
        .args(["-n", "5", "--", "incr", "a", ";", ";", "incr", "b"])
        .output();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid command sequence"));
}

/// Runs ringbench in-process against `s`, both config steps included: the run's result, and what it wrote
/// to the stdout and stderr writers it was given.
fn run_in_process(
    s: &RedisServer,
    args: &[&str],
) -> (
    Result<ringbench::RunOutcome, ringbench::RunError>,
    String,
    String,
) {
    use ringbench::{Config, Env, Settings};
    let mut argv = vec!["ringbench".to_string(), "-p".into(), s.port.to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let cli = ringbench::Cli::parse_args(argv).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let settings = Settings::parse(&cli, &Env::of_process()).unwrap();
    let cfg = Config::resolve(settings, &mut std::io::empty(), &mut err).unwrap();
    let control = ringbench::RunControl::default();
    let r = ringbench::run(cfg, &control, &mut out, &mut err, None);
    (
        r,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn a_successful_in_process_run_writes_nothing_to_its_stderr() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let (r, out, err) = run_in_process(&s, &["-q", "-t", "set,get", "-n", "2000", "-c", "4"]);
    assert!(!r.unwrap().any_failed());
    assert!(out.contains("SET: ") && out.contains("GET: "), "{out}");
    assert_eq!(err, "");
}

#[test]
fn error_replies_shown_with_e_go_to_the_given_stderr() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    // INCR of a key holding text: every reply is an error.
    s.cli(&["set", "word", "text"]);
    let (r, out, err) = run_in_process(&s, &["-e", "-q", "-n", "100", "incr", "word"]);
    assert!(r.unwrap().error_replies);
    assert!(out.contains("incr word"), "{out}");
    // Shown at most once a second: a run this short shows the first one only.
    assert_eq!(
        err,
        "Error from server: ERR value is not an integer or out of range\n"
    );
    // In CSV the count goes to stderr too, where a reader of the file still sees it.
    let (_, _, err) = run_in_process(&s, &["--csv", "-n", "100", "incr", "word"]);
    assert_eq!(
        err,
        "ringbench: incr word: 100 error replies (first: ERR value is not an integer or out of range)\n"
    );
}

#[test]
fn the_t_warning_goes_to_the_given_stderr() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let (r, _, err) = run_in_process(&s, &["-q", "-n", "100", "-t", "get", "set", "k", "v"]);
    assert!(!r.unwrap().any_failed());
    assert_eq!(err, "WARNING: -t is ignored when a command is given\n");
}
