//! The memtier_benchmark personality (`ringbench memtier ...`, or the binary started as
//! `memtier_benchmark`): memtier's command lines, checked by what a real redis-server saw (its
//! commandstats, key names, DBSIZE, TTLs, value lengths, hits and misses) and by the shape of the results.

use crate::common::bench::Bench;
use crate::common::scratch::Scratch;
use crate::common::*;
use std::process::{Command, Stdio};

fn keys(s: &RedisServer) -> Vec<String> {
    s.cli(&["--scan"]).lines().map(String::from).collect()
}

fn info(s: &RedisServer, field: &str) -> u64 {
    s.cli(&["info", "stats"])
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO stats"))
}

/// memtier's way of writing every key of `1..=max` once: SETs only, `-n allkeys` over parallel slices.
fn write_all(s: &RedisServer, max: &str, more: &[&str]) {
    let max = format!("--key-maximum={max}");
    Bench::memtier(s)
        .args([
            "--ratio=1:0",
            "-n",
            "allkeys",
            "--key-pattern=P:P",
            "--key-minimum=1",
            &max,
        ])
        .args(more)
        .ok();
}

#[test]
fn a_ratio_line_sends_memtiers_order_counts_and_key_names() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let (_, stats) = Bench::memtier(&s)
        .args([
            "-t",
            "1",
            "-c",
            "5",
            "-n",
            "100",
            "--ratio",
            "1:3",
            "--key-maximum",
            "1000",
        ])
        .counted();
    // -n is per client: 5 x 100, a SET then three GETs on each connection.
    assert_eq!(stats.get("set"), Some(&125), "{stats:?}");
    assert_eq!(stats.get("get"), Some(&375), "{stats:?}");
    let names = keys(&s);
    assert!(!names.is_empty());
    for k in &names {
        let n: u64 = k
            .strip_prefix("memtier-")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("key {k} is not memtier-<number>"));
        assert!(n <= 1000, "{k}");
        assert_eq!(format!("memtier-{n}"), *k, "no zero padding");
    }
    // Without --distinct-client-seed every client draws the same keys, as memtier's do.
    assert_eq!(
        names.len(),
        25,
        "memtier_benchmark writes 25 keys with this line"
    );
}

#[test]
fn transactions_stay_in_order_on_every_connection() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let (_, stats) = Bench::memtier(&s)
        .args([
            "--command=MULTI",
            "--command=SET __key__ __data__",
            "--command=INCR counter:__key__",
            "--command",
            "EXEC",
            "-t",
            "2",
            "-c",
            "5",
            "-n",
            "400",
            "--pipeline",
            "8",
            "--key-maximum",
            "100",
        ])
        .counted();
    for c in ["multi", "set", "incr", "exec"] {
        assert_eq!(stats.get(c), Some(&1000), "{c}: {stats:?}");
    }
    let errors = s.cli(&["info", "errorstats"]);
    assert!(!errors.contains("errorstat_"), "{errors}");
    assert!(keys(&s).iter().any(|k| k.starts_with("counter:memtier-")));
}

#[test]
fn allkeys_with_the_parallel_pattern_writes_each_key_once() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    write_all(&s, "2000", &["-t", "2", "-c", "5", "--key-prefix", "k:"]);
    assert_eq!(s.calls("set"), 2000);
    assert_eq!(s.cli(&["dbsize"]), "2000");
    assert_eq!(s.cli(&["exists", "k:1", "k:2000"]), "2");
    assert_eq!(s.cli(&["exists", "k:0", "k:2001"]), "0");
}

#[test]
fn expiry_and_data_size_ranges_reach_the_server() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    Bench::memtier(&s)
        .args([
            "--ratio=1:0",
            "--expiry-range=100-200",
            "--data-size-range=10-50",
            "-t",
            "1",
            "-c",
            "2",
            "-n",
            "50",
            "--key-pattern=S:S",
            "--key-minimum=1",
            "--key-maximum=50",
        ])
        .ok();
    assert_eq!(s.calls("setex"), 100);
    for k in keys(&s) {
        let ttl: i64 = s.cli(&["ttl", &k]).parse().unwrap();
        assert!((90..=200).contains(&ttl), "{k}: ttl {ttl}");
        let len: u64 = s.cli(&["strlen", &k]).parse().unwrap();
        assert!((10..=50).contains(&len), "{k}: {len} bytes");
    }
    // S: each connection walks 1..=50 from the start: the 50 keys, all written.
    assert_eq!(s.cli(&["dbsize"]), "50");
}

#[test]
fn get_hits_and_misses_match_the_servers_count() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("memtier-hits");
    let js = dir.path("run.json");
    // Keys 1..=500 exist; GETs over 1..=1000 find about half.
    write_all(&s, "500", &["-t", "1", "-c", "5"]);
    s.cli(&["config", "resetstat"]);
    let out = Bench::on(&s)
        .args(["-t", "get", "-n", "3000", "--json", &js, "-q"])
        .ok();
    assert!(out.contains("GET"), "{out}");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&js).unwrap()).unwrap();
    let gets = &run["tests"][0]["gets"];
    // ringbench's own keys are not memtier's: every GET misses, and the server agrees.
    assert_eq!(gets["misses"], info(&s, "keyspace_misses"), "{gets}");
    assert_eq!(gets["hits"], info(&s, "keyspace_hits"), "{gets}");
    s.cli(&["config", "resetstat"]);
    Bench::memtier(&s)
        .args([
            "--ratio=0:1",
            "--key-minimum=1",
            "--key-maximum=1000",
            "-t",
            "1",
            "-c",
            "4",
            "-n",
            "500",
            "--distinct-client-seed",
        ])
        .ok();
    let (hits, misses) = (info(&s, "keyspace_hits"), info(&s, "keyspace_misses"));
    assert_eq!(hits + misses, 2000);
    assert!(hits > 700 && misses > 700, "{hits} hits, {misses} misses");
}

#[test]
fn mistakes_and_unsupported_options_are_one_line_and_exit_2() {
    let _turn = crate::common::lock::shared();
    for (args, named) in [
        (&["--pipeline=0"][..], "--pipeline"),
        (&["--ratio", "x"][..], "--ratio"),
        (&["--wait-ratio=1:1"][..], "--wait-ratio"),
        (&["--protocol=memcache_text"][..], "--protocol"),
        (&["--key-pattern=P:R"][..], "--key-pattern"),
        (&["-n", "5", "--test-time=2"][..], "--test-time"),
        (&["--no-such-option"][..], "--no-such-option"),
        (&["--command=SET k pre__data__"][..], "--command"),
    ] {
        let out = Bench::new()
            .args(["memtier", "-p", "1"])
            .args(args)
            .output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(named), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn started_as_memtier_benchmark_it_is_memtier() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("memtier-name");
    let link = dir.path("memtier_benchmark");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_ringbench"), &link).unwrap();
    // Not a Bench: the program is the link, whose name is what is tested.
    let out = Command::new(&link)
        .args(["--server", "127.0.0.1", "--port", &s.port.to_string()])
        .args([
            "-t",
            "1",
            "-c",
            "2",
            "-n",
            "10",
            "--ratio=1:1",
            "--hide-histogram",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(s.calls("set"), 10);
    assert_eq!(s.calls("get"), 10);
}

#[test]
fn size_lists_cycle_and_the_s_pattern_grows_with_the_key() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let one_client = [
        "-t",
        "1",
        "-c",
        "1",
        "--ratio=1:0",
        "--key-pattern=S:S",
        "--key-minimum=1",
    ];
    Bench::memtier(&s)
        .args(one_client)
        .args(["--data-size-list=10:2,20:1", "--key-maximum=30", "-n", "30"])
        .ok();
    for k in 1..=30u64 {
        let len: u64 = s.cli(&["strlen", &format!("memtier-{k}")]).parse().unwrap();
        let want = if (k - 1) % 3 < 2 { 10 } else { 20 };
        assert_eq!(len, want, "memtier-{k}");
    }
    s.cli(&["flushall"]);
    Bench::memtier(&s)
        .args(one_client)
        .args([
            "--data-size-range=10-100",
            "--data-size-pattern=S",
            "--key-maximum=10",
            "-n",
            "10",
        ])
        .ok();
    let lens: Vec<u64> = (1..=10)
        .map(|k| s.cli(&["strlen", &format!("memtier-{k}")]).parse().unwrap())
        .collect();
    assert_eq!(lens, [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
}

#[test]
fn results_have_memtiers_table_json_and_hdr_files() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("memtier-out");
    let (js, hdr, report) = (dir.path("m.json"), dir.path("h"), dir.path("out.txt"));
    let stdout = Bench::memtier(&s)
        .args([
            "-t",
            "2",
            "-c",
            "3",
            "-n",
            "200",
            "--ratio=1:4",
            "--key-maximum=500",
            "--json-out-file",
            &js,
            "--hdr-file-prefix",
            &hdr,
            "--hide-histogram",
            "--print-percentiles",
            "50,99.9",
        ])
        .ok();
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row in:\n{stdout}"))
            .to_string()
    };
    assert!(stdout.contains("ALL STATS"), "{stdout}");
    assert!(line("Type").contains("p99.9"), "{stdout}");
    assert!(
        !stdout.contains("Request Latency Distribution"),
        "--hide-histogram"
    );
    for row in ["Sets", "Gets", "Waits", "Totals"] {
        line(row);
    }
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&js).unwrap()).unwrap();
    let all = &run["ALL STATS"];
    // What the spec runner reads: every row's Ops/sec, the percentiles.
    assert!(all["Totals"]["Ops/sec"].as_f64().unwrap() > 0.0, "{all}");
    assert!(
        all["Totals"]["Percentile Latencies"]["p99.90"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(all["Sets"]["Count"], s.calls("set"));
    assert_eq!(all["Gets"]["Count"], s.calls("get"));
    assert_eq!(all["Totals"]["Count"], 1200);
    assert_eq!(run["run information"]["Connections per thread"], 3);
    // Hits and misses are the server's own count, per second of the run.
    let secs = all["Runtime"]["Total duration"].as_f64().unwrap() / 1000.0;
    let hits = all["Gets"]["Hits/sec"].as_f64().unwrap() * secs;
    let server_hits = info(&s, "keyspace_hits") as f64;
    assert!(
        (hits - server_hits).abs() <= 1.0 + server_hits * 0.01,
        "{hits} against {server_hits}"
    );
    for f in [
        "_FULL_RUN_1.txt",
        "_FULL_RUN_1.hgrm",
        "_SET_command_run_1.txt",
        "_GET_command_run_1.hgrm",
    ] {
        assert!(
            std::path::Path::new(&format!("{hdr}{f}")).exists(),
            "{hdr}{f}"
        );
    }
    // -o: the report goes to the file, nothing to stdout.
    let out = Bench::memtier(&s)
        .args([
            "-t",
            "1",
            "-c",
            "1",
            "-n",
            "10",
            "-o",
            &report,
            "--run-count=2",
        ])
        .ok();
    assert!(out.is_empty(), "{out}");
    let text = std::fs::read_to_string(&report).unwrap();
    for section in [
        "BEST RUN RESULTS",
        "WORST RUN RESULTS",
        "AGGREGATED AVERAGE RESULTS (2 runs)",
    ] {
        assert!(text.contains(section), "{section} in:\n{text}");
    }
}

#[test]
fn statsd_gets_memtiers_metric_names() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let port = udp.local_addr().unwrap().port().to_string();
    Bench::memtier(&s)
        .args([
            "-t",
            "1",
            "-c",
            "2",
            "-n",
            "500",
            "--statsd-host",
            "127.0.0.1",
            "--statsd-port",
            &port,
            "--statsd-run-label",
            "lbl",
            "--hide-histogram",
        ])
        .ok();
    let mut buf = vec![0u8; 65536];
    let n = udp.recv(&mut buf).expect("a StatsD datagram");
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    let names: Vec<&str> = text.lines().filter_map(|l| l.split(':').next()).collect();
    for want in [
        "memtier.lbl.ops_sec",
        "memtier.lbl.ops_sec_avg",
        "memtier.lbl.connections",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
}

#[test]
fn a_password_is_used_but_never_written() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--requirepass", "s3cret-pw"]);
    let dir = Scratch::new("memtier-auth");
    let js = dir.path("m.json");
    let out = Bench::memtier(&s)
        .args([
            "-a",
            "s3cret-pw",
            "-t",
            "1",
            "-c",
            "2",
            "-n",
            "20",
            "--json-out-file",
            &js,
            "--hide-histogram",
        ])
        .output();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success() && stderr.is_empty(), "{stderr}");
    let json = std::fs::read_to_string(&js).unwrap();
    assert!(
        !json.contains("s3cret") && !stdout.contains("s3cret"),
        "{json}"
    );
    assert!(json.contains("\"authenticate\": \"*****\""), "{json}");
    let wrong = Bench::memtier(&s)
        .args(["-a", "nope-pw", "-n", "5"])
        .output();
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert_eq!(wrong.status.code(), Some(1), "{err}");
    assert!(
        !err.contains("nope-pw") && err.lines().count() == 1,
        "{err}"
    );
}

/// `--rate-limiting` at `--pipeline 1`: the rest of each burst goes out as replies come back, not at
/// the next burst (which put half the requests a whole burst interval late); the table's latencies run
/// from the intended send, "Latency From Send" (memtier's measure) from the actual send, never longer.
#[test]
fn a_rate_limited_burst_is_sent_as_its_replies_return() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("memtier-rate");
    let js = dir.path("r.json");
    // 250 a second per connection: bursts of 5 requests every 20 ms on each of the 10 connections.
    let stdout = Bench::memtier(&s)
        .args([
            "-t",
            "1",
            "-c",
            "10",
            "--rate-limiting",
            "250",
            "--test-time",
            "2",
            "--ratio=0:1",
            "--hide-histogram",
            "--json-out-file",
            &js,
        ])
        .ok();
    assert!(stdout.contains("\nSent "), "no from-send row:\n{stdout}");
    let run: serde_json::Value = serde_json::from_slice(&std::fs::read(&js).unwrap()).unwrap();
    let all = &run["ALL STATS"];
    let intended = all["Totals"]["Average Latency"].as_f64().unwrap();
    let sent = all["Latency From Send"]["Average Latency"]
        .as_f64()
        .unwrap();
    let count = all["Totals"]["Count"].as_u64().unwrap();
    assert_eq!(all["Latency From Send"]["Count"].as_u64(), Some(count));
    assert!(count > 2500, "{count} requests in 2 s at 2500 a second");
    assert!(
        sent <= intended,
        "from the send {sent} ms, from the intended send {intended} ms"
    );
    // A request sent one burst late is 20 ms late: half of them late make the average 10 ms (before
    // the mend this line averaged 27 ms; now about 1 ms).
    assert!(
        intended < 10.0,
        "average latency from the intended send {intended} ms: the bursts' second requests waited for the next burst"
    );
}

/// `--scan-incremental-iteration`: each connection sends `SCAN 0 ...`, then the cursor each reply
/// returned, and starts over after `--scan-incremental-max-iterations` continuations. Checked against
/// the server's MONITOR: every connection's cursors are the chain redis-cli walks itself.
#[test]
fn scan_iteration_follows_each_replys_cursor() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    write_all(&s, "2000", &["-t", "1", "-c", "4"]);
    // The chain of cursors from 0, COUNT 10, as the server gives it to anyone.
    let mut chain = vec!["0".to_string()];
    for _ in 0..3 {
        let out = s.cli(&["scan", chain.last().unwrap(), "count", "10"]);
        chain.push(out.lines().next().unwrap().trim().to_string());
    }
    assert!(
        chain[1..].iter().all(|c| c != "0"),
        "2000 keys ended a scan early: {chain:?}"
    );
    let path = std::env::temp_dir().join(format!("ringbench-scan-monitor-{}", std::process::id()));
    let mut monitor = Command::new("redis-cli")
        .args(["-p", &s.port.to_string(), "monitor"])
        .stdout(std::fs::File::create(&path).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !s.cli(&["client", "list"]).contains("cmd=monitor") {
        assert!(
            std::time::Instant::now() < deadline,
            "MONITOR never attached"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let stdout = Bench::memtier(&s)
        .args([
            "--command",
            "SCAN 0 COUNT 10",
            "--scan-incremental-iteration",
            "--scan-incremental-max-iterations",
            "3",
            "-t",
            "1",
            "-c",
            "3",
            "-n",
            "40",
            "--hide-histogram",
        ])
        .ok();
    // The monitor has every SCAN once the server counted them all (it writes them as it runs them).
    while std::fs::read_to_string(&path)
        .unwrap()
        .matches("\"SCAN\"")
        .count()
        < 120
    {
        assert!(
            std::time::Instant::now() < deadline,
            "MONITOR saw too few SCANs"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    monitor.kill().unwrap();
    monitor.wait().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    // Each connection's cursors, in its order.
    let mut by_client: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for line in text.lines().filter(|l| l.contains("\"SCAN\"")) {
        let client = line
            .split('[')
            .nth(1)
            .unwrap()
            .split(']')
            .next()
            .unwrap()
            .to_string();
        let args: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
        assert_eq!(args[0], "SCAN", "{line}");
        assert_eq!(&args[2..], ["COUNT", "10"], "{line}");
        by_client
            .entry(client)
            .or_default()
            .push(args[1].to_string());
    }
    assert_eq!(by_client.len(), 3, "{by_client:?}");
    for (client, cursors) in &by_client {
        assert_eq!(cursors.len(), 40, "{client}");
        for (i, c) in cursors.iter().enumerate() {
            assert_eq!(c, &chain[i % 4], "{client}'s SCAN {i}: {cursors:?}");
        }
    }
    // memtier's rows: the starts and the continuations apart.
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{stdout}"))
            .to_string()
    };
    row("Scan 0s ");
    row("Scan <cursor>s ");
    // Its conditions, as memtier states them: one line, exit 2.
    for (args, says) in [
        (
            vec![
                "--command",
                "SCAN 0",
                "--scan-incremental-iteration",
                "--pipeline",
                "4",
            ],
            "--pipeline 1",
        ),
        (
            vec!["--command", "GET x", "--scan-incremental-iteration"],
            "SCAN command",
        ),
        (vec!["--scan-incremental-iteration"], "--command"),
    ] {
        let out = Bench::memtier(&s).args(&args).output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(says) && err.contains("--scan-incremental-iteration"),
            "{err}"
        );
    }
}

/// `--reconnect-interval N`: each connection is opened again, AUTH included, after every N requests
/// (batches cut to fit), but not after its last; the server counts one AUTH per connection.
#[test]
fn reconnect_interval_opens_a_new_connection_every_n_requests() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start_with(&["--requirepass", "pw-reconnect"]);
    let stats =
        |section: &str| s.cli(&["-a", "pw-reconnect", "--no-auth-warning", "info", section]);
    let before = parse_commandstats(&stats("commandstats"));
    Bench::memtier(&s)
        .args([
            "-a",
            "pw-reconnect",
            "-t",
            "2",
            "-c",
            "1",
            "-n",
            "45",
            "--reconnect-interval",
            "10",
            "--pipeline",
            "4",
            "--ratio=0:1",
            "--hide-histogram",
        ])
        .ok();
    let after = parse_commandstats(&stats("commandstats"));
    let calls =
        |name: &str| after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0);
    assert_eq!(calls("get"), 90);
    // 45 requests in tens: 5 connections per client, 10 in all; the one that asks the server's
    // CONFIG before the run authenticates too, and so did the test's own INFO after it.
    assert_eq!(calls("auth"), 10 + calls("config|get") + 1, "{after:?}");
    let refused = Bench::memtier(&s)
        .args([
            "-a",
            "pw-reconnect",
            "--reconnect-interval",
            "5",
            "--rate-limiting",
            "10",
        ])
        .output();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--reconnect-interval") && err.lines().count() == 1,
        "{err}"
    );
}
