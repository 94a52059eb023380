//! `--replay`: a real `redis-cli MONITOR` capture made from a real server, replayed on a fresh server
//! and across a real cluster's masters, checked against the servers' own commandstats; and files that
//! cannot be replayed, refused before anything is sent.

use crate::common::bench::Bench;
use crate::common::cluster::Cluster;
use crate::common::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The capture's last command: once it is in the file, so is everything before it.
const SENTINEL: &str = "end-of-capture";

/// Commands that are the tests' own, not the capture's: MONITOR itself, CONFIG RESETSTAT, CLIENT LIST
/// (while waiting for the monitor to attach), INFO (reading commandstats), ringbench's CONFIG GETs
/// and CLUSTER SLOTS / NODES.
const NOT_CAPTURED: [&str; 5] = ["monitor", "config", "client", "info", "cluster"];

fn scratch_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ringbench-replay-{}-{name}", std::process::id()))
}

/// Sends one command a line of `commands` through one redis-cli connection (quoted as redis-cli reads
/// them from stdin).
fn batch(port: u16, commands: &str) {
    cli_batch(port, commands);
}

/// Commandstats without the tests' own commands, subcommands folded into their command.
fn captured_stats(stats: &HashMap<String, u64>) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for (name, calls) in stats {
        let cmd = name.split('|').next().unwrap_or(name);
        if !NOT_CAPTURED.contains(&cmd) {
            *out.entry(cmd.to_string()).or_insert(0) += calls;
        }
    }
    out
}

/// A capture of mixed traffic from four clients (one of them sending a Lua script whose own
/// commands MONITOR also shows), made with a real `redis-cli MONITOR`; returns the file and the
/// source server's commandstats for the captured commands.
fn capture(source: &RedisServer, path: &Path, tag: &str) -> HashMap<String, u64> {
    source.reset();
    let file = std::fs::File::create(path).unwrap();
    let mut monitor = Command::new("redis-cli")
        .args(["-p", &source.port.to_string(), "monitor"])
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The monitor is attached once the server lists it (CLIENT is not shown by MONITOR).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !source.cli(&["client", "list"]).contains("cmd=monitor") {
        assert!(Instant::now() < deadline, "MONITOR never attached");
        std::thread::sleep(Duration::from_millis(10));
    }
    let k = |name: &str| format!("{{{tag}}}{name}");
    // Client 1: strings with every kind of byte redis quotes, and counters.
    let mut one = String::new();
    one.push_str(&format!(
        "set {} \"\\x00\\xff\\r\\n\\t\\\"q\\\\ x\"\n",
        k("bin")
    ));
    for i in 0..40 {
        one.push_str(&format!("incr {}\nset {}:{i} 'v {i}'\n", k("n"), k("s")));
    }
    one.push_str(&format!(
        "get {}\nmset {} 1 {} 2\n",
        k("bin"),
        k("m1"),
        k("m2")
    ));
    batch(source.port, &one);
    // Client 2: a list whose order is the commands' order.
    let mut two = String::new();
    for i in 0..30 {
        two.push_str(&format!("rpush {} e{i}\n", k("list")));
    }
    two.push_str(&format!("lpop {}\nlrange {} 0 -1\n", k("list"), k("list")));
    batch(source.port, &two);
    // Client 3: hashes, sets, sorted sets, a script (its SET is MONITOR's `[0 lua]` line) and an error.
    let three = format!(
        "hset {h} f1 v1 f2 v2\nsadd {st} a b c\nzadd {z} 1 a 2 b\nzincrby {z} 5 a\n\
         eval \"return redis.call('set', KEYS[1], ARGV[1])\" 1 {lua} from-lua\n\
         incr {bin}\nexpire {h} 1000\ndel {st}\n",
        h = k("h"),
        st = k("set"),
        z = k("z"),
        lua = k("lua"),
        bin = k("bin"),
    );
    batch(source.port, &three);
    // Client 4: the end.
    source.cli(&["echo", SENTINEL]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(path)
        .unwrap_or_default()
        .contains(SENTINEL)
    {
        assert!(Instant::now() < deadline, "the capture never got its end");
        std::thread::sleep(Duration::from_millis(10));
    }
    monitor.kill().unwrap();
    monitor.wait().unwrap();
    captured_stats(&source.commandstats())
}

/// What the capture's keys hold, as redis-cli prints them.
fn contents(port: u16, tag: &str) -> Vec<String> {
    let k = |name: &str| format!("{{{tag}}}{name}");
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-p", &port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    vec![
        cli(&["get", &k("bin")]),
        cli(&["get", &k("n")]),
        cli(&["get", &k("s:39")]),
        cli(&["lrange", &k("list"), "0", "-1"]),
        cli(&["hgetall", &k("h")]),
        cli(&["zrange", &k("z"), "0", "-1", "withscores"]),
        cli(&["get", &k("lua")]),
        cli(&["exists", &k("set")]),
    ]
}

/// Runs ringbench against `server`; the capture holds one command that gets an error reply, so the
/// run ends with exit code 1 after its full report.
fn run_with_errors(server: &RedisServer, args: &[&str]) -> String {
    let out = Bench::on(server).args(args).output();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{args:?}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The result file, checked against the result schema first.
fn json_file(path: &Path) -> serde_json::Value {
    let doc = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/ringbench-result.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
    doc
}

#[test]
fn a_monitor_capture_replays_to_the_same_commandstats_on_a_fresh_server() {
    let _turn = crate::common::lock::shared();
    let source = RedisServer::start();
    let path = scratch_file("capture.txt");
    let want = capture(&source, &path, "t");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("[0 lua]") && text.contains(r#"\x00\xff\r\n\t\"q\\ x"#),
        "{text}"
    );
    assert_eq!(want.get("rpush"), Some(&30), "{want:?}");
    let json = scratch_file("replay.json");
    let j = json.to_str().unwrap();
    let p = path.to_str().unwrap();
    // Closed loop, fewer connections than recorded clients, pipelined; then at the recorded pace.
    for args in [
        &["--replay", p, "-c", "3", "-P", "8", "--json", j][..],
        &[
            "--monitor-input",
            p,
            "-c",
            "8",
            "--replay-pace",
            "recorded",
            "--json",
            j,
        ][..],
    ] {
        let fresh = RedisServer::start();
        fresh.reset();
        let out = run_with_errors(&fresh, args);
        assert_eq!(
            captured_stats(&fresh.commandstats()),
            want,
            "{args:?}\n{out}"
        );
        assert_eq!(
            contents(fresh.port, "t"),
            contents(source.port, "t"),
            "{args:?}"
        );
        assert!(out.contains("skipped: 1 issued by Lua scripts"), "{out}");
        // Per-command figures: every replayed command once, each name with its own count.
        let v = json_file(&json);
        let t = &v["tests"][0];
        let sent: u64 = want.values().sum::<u64>() - 1; // the script's SET is not sent
        assert_eq!(t["requests"].as_u64(), Some(sent), "{t}");
        let commands = t["commands"].as_array().unwrap();
        let count = |name: &str| {
            commands
                .iter()
                .find(|c| c["title"] == name && c["command"] == name)
                .and_then(|c| c["requests"].as_u64())
        };
        assert_eq!(count("RPUSH"), Some(30));
        assert_eq!(count("INCR"), Some(41));
        let errors: u64 = commands.iter().map(|c| c["errors"].as_u64().unwrap()).sum();
        assert_eq!(
            errors, 1,
            "INCR of a string that is not a number: {commands:?}"
        );
        assert_eq!(count("INCR"), want.get("incr").copied());
        // The text report has a row per command.
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with("RPUSH ") && l.contains(" 30 ")),
            "{out}"
        );
    }
}

#[test]
fn a_capture_replays_across_a_clusters_masters() {
    let _turn = crate::common::lock::shared();
    let source = RedisServer::start();
    let path = scratch_file("cluster-capture.txt");
    // Three key sets, each under its own hash tag, so the commands spread over the masters.
    let mut want = HashMap::new();
    let mut text = String::new();
    let mut lists = Vec::new();
    for tag in ["a", "b", "c"] {
        for (cmd, calls) in capture(&source, &path, tag) {
            *want.entry(cmd).or_insert(0) += calls;
        }
        text.push_str(&std::fs::read_to_string(&path).unwrap());
        lists.push(contents(source.port, tag)[3].clone());
    }
    std::fs::write(&path, &text).unwrap();
    let c = Cluster::start();
    let p = path.to_str().unwrap();
    // Closed loop on two executors, then the open loop at twice the recorded pace.
    for pace in ["max", "2x"] {
        for &node in &c.ports {
            c.cli(node, &["flushall"]);
        }
        c.reset_stats();
        let out = Bench::cluster(c.ports[0])
            .args([
                "--replay",
                p,
                "--replay-pace",
                pace,
                "-c",
                "4",
                "-P",
                "4",
                "--threads",
                "2",
            ])
            .output();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{pace}: one error reply per capture: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut got = HashMap::new();
        for &node in &c.ports {
            let stats = parse_commandstats(&c.cli(node, &["info", "commandstats"]));
            for (cmd, calls) in captured_stats(&stats) {
                *got.entry(cmd).or_insert(0) += calls;
            }
        }
        assert_eq!(got, want, "{pace}: {stdout}");
        // Each command went to its key's master: no redirect was needed.
        assert!(!stdout.contains("MOVED"), "{pace}: {stdout}");
        // The data is where the source had it, each list in its recorded order.
        for (tag, list) in ["a", "b", "c"].iter().zip(&lists) {
            let slot: u16 = c
                .cli(c.ports[0], &["cluster", "keyslot", tag])
                .parse()
                .unwrap();
            assert_eq!(&contents(c.owner(slot), tag)[3], list, "{pace}: {tag}");
            assert!(list.starts_with("e1\ne2\n"), "{list}");
        }
    }
}

#[test]
fn a_malformed_line_is_refused_with_its_number_and_nothing_is_sent() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let before = s.commandstats();
    let cases: [(&str, &str, &str); 4] = [
        (
            "set a 1\nget a\nset \"b 2\n",
            "line 3: unterminated",
            "plain file",
        ),
        (
            "OK\n1.000001 [0 127.0.0.1:1] \"SET\" \"a\" \"1\"\n1.5 [0 127.0.0.1:1 \"GET\" \"a\"\n",
            "line 3: the [<db> <client>] part has no closing ']'",
            "MONITOR capture",
        ),
        (
            "1.000001 [0 127.0.0.1:1] \"SET\" \"a\" \"1\"\n\nget a\n",
            "line 3: not a MONITOR line",
            "a plain line in a capture",
        ),
        (
            "set a \"1\"x\n",
            "line 1: a closing quote",
            "text after a quote",
        ),
    ];
    for (text, want, what) in cases {
        let path = scratch_file("bad.txt");
        std::fs::write(&path, text).unwrap();
        let out = Bench::on(&s).arg("--replay").arg(&path).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{what}: one line: {stderr}");
        assert!(
            stderr.contains("'--replay'") && stderr.contains(want),
            "{what}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{what}");
    }
    // Nothing reached the server: not one command, not even ringbench's own INFO or CONFIG GET
    // (the INFO is the one that read `before`).
    let own = |info: u64| {
        let mut m = before.clone();
        m.insert("info".to_string(), info);
        m
    };
    assert_eq!(s.commandstats(), own(1));
    // Flags a replay cannot take are usage errors too.
    let path = scratch_file("good.txt");
    std::fs::write(&path, "set a 1\n").unwrap();
    let p = path.to_str().unwrap();
    for (args, want) in [
        (
            &["--replay", p, "-n", "10"][..],
            "'-n' cannot be used with '--replay'",
        ),
        (
            &["--replay", p, "-t", "get"][..],
            "'-t' cannot be used with '--replay'",
        ),
        (
            &["--replay", p, "--replay-pace", "recorded"][..],
            "no timestamps",
        ),
        (
            &["--replay", p, "--replay-pace", "fast"][..],
            "'--replay-pace'",
        ),
        (
            &["--replay", p, "--replay-pace", "2x", "--rps", "10"][..],
            "'--rps'",
        ),
    ] {
        let out = Bench::on(&s).args(args).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    assert_eq!(s.commandstats(), own(2));
}

#[test]
fn paced_replays_keep_the_capture_times_or_the_rate() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    // A synthetic capture over 0.6 s from two clients: 31 commands.
    let mut text = String::from("OK\n");
    for i in 0..=30u64 {
        let us = 1_000_000 + i * 20_000;
        text.push_str(&format!(
            "{}.{:06} [0 10.0.0.{}:5000] \"INCR\" \"c{}\"\n",
            1_700_000_000 + us / 1_000_000,
            us % 1_000_000,
            i % 2,
            i % 2
        ));
    }
    let path = scratch_file("paced.txt");
    std::fs::write(&path, &text).unwrap();
    let json = scratch_file("paced.json");
    let (p, j) = (path.to_str().unwrap(), json.to_str().unwrap());
    for (args, at_least) in [
        (
            &["--replay", p, "--replay-pace", "recorded", "--json", j][..],
            0.6,
        ),
        (
            &["--replay", p, "--replay-pace", "2x", "--json", j][..],
            0.3,
        ),
        (&["--replay", p, "--rps", "50", "--json", j][..], 0.6),
    ] {
        s.reset();
        let out = Bench::on(&s).args(args).ok();
        let v = json_file(&json);
        let t = &v["tests"][0];
        // The last command is due `at_least` seconds in: the run cannot end before it was sent.
        let secs = t["duration_s"].as_f64().unwrap();
        assert!(secs >= at_least * 0.99, "{args:?}: {secs} s\n{out}");
        assert_eq!(s.calls("incr"), 31, "{args:?}");
        assert_eq!(s.cli(&["get", "c0"]), "16");
        assert_eq!(s.cli(&["get", "c1"]), "15");
        assert!(out.contains("open loop: target"), "{out}");
    }
}

/// With `--rfr yes` a replay's reads go to the replicas and its writes to the masters, each command by
/// its own name, checked against every node's commandstats.
#[test]
fn a_replay_under_rfr_reads_from_replicas_and_writes_to_masters() {
    let _turn = crate::common::lock::shared();
    let c = Cluster::start_with(1, 5000);
    let replicas = c.listed_replicas();
    let (masters, _) = c.roles(c.ports[0]);
    let path = scratch_file("rfr.txt");
    let mut text = String::new();
    for i in 0..600 {
        text.push_str(&format!("set k{i} v{i}\nget k{i}\nstrlen k{i}\n"));
    }
    std::fs::write(&path, text).unwrap();
    c.reset_stats();
    let p = path.to_str().unwrap();
    let out = Bench::cluster(c.ports[0])
        .args(["--rfr", "yes", "--replay", p, "-c", "3"])
        .output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let on = |ports: &[u16], cmd: &str| ports.iter().map(|&p| c.calls_on(p, cmd)).sum::<u64>();
    assert_eq!(on(&masters, "set"), 600, "{stdout}");
    assert_eq!(
        (on(&masters, "get"), on(&masters, "strlen")),
        (0, 0),
        "{stdout}"
    );
    assert_eq!(
        (on(&replicas, "get"), on(&replicas, "strlen")),
        (600, 600),
        "{stdout}"
    );
}
