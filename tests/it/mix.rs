//! Mixes of any command (`--mix` with commands, memtier_benchmark's `--command` / `--command-ratio` /
//! `--command-key-pattern`), valkey-benchmark 9's independent `__rand_Nth__` sequences and `--expiry-range`,
//! each checked against a real redis-server's own counts, keys, values and TTLs.

use crate::common::bench::Bench;
use crate::common::scratch::Scratch;
use crate::common::*;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use serde_json::Value;

/// The `per command` table's row of `title`: (requests, errors).
fn row(out: &str, title: &str) -> (u64, u64) {
    let l = out
        .lines()
        .find(|l| {
            l.trim_start()
                .strip_prefix(title)
                .is_some_and(|r| r.starts_with(' ') && r.contains('%'))
        })
        .unwrap_or_else(|| panic!("no per-command row for {title} in:\n{out}"));
    let w: Vec<&str> = l[l.find(title).unwrap() + title.len()..]
        .split_whitespace()
        .collect();
    (w[0].parse().unwrap(), w.last().unwrap().parse().unwrap())
}

/// Sends `commands` (one per line) through `redis-cli` and returns its answers, one per line.
fn batch(s: &RedisServer, commands: &str) -> Vec<String> {
    cli_batch(s.port, commands)
}

fn keys(s: &RedisServer, pattern: &str) -> Vec<String> {
    s.cli(&["--scan", "--pattern", pattern])
        .lines()
        .map(String::from)
        .collect()
}

fn json(path: &str) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The replies an interval log holds (every interval at most a second long).
fn log_count(file: &str) -> u64 {
    let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut count = 0;
    for entry in IntervalLogIterator::new(&bytes) {
        if let LogEntry::Interval(iv) = entry.expect("every line parses") {
            use base64::Engine as _;
            assert!(iv.duration().as_secs_f64() <= 1.0, "{file}");
            let raw = base64::engine::general_purpose::STANDARD
                .decode(iv.encoded_histogram())
                .unwrap();
            let h: Histogram<u64> = Deserializer::new()
                .deserialize(&mut raw.as_slice())
                .unwrap();
            count += h.len();
        }
    }
    count
}

/// Fails unless `run` follows schema/ringbench-result.schema.json.
fn assert_valid(run: &Value) {
    let schema: Value = serde_json::from_slice(
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schema/ringbench-result.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(run).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
}

#[test]
fn memtier_commands_are_counted_exactly_per_command_in_every_format() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("memtier");
    let js = dir.path("run.json");
    let prefix = dir.path("log-");
    let (out, stats) = Bench::on(&s)
        .args([
            "--command",
            "SET __key__ __data__",
            "--command-ratio",
            "2",
            "--command=GET __key__",
            "--command-key-pattern",
            "R",
            "--command",
            "HSET h:__key__ f \"a b\"",
            "--command-key-pattern",
            "S",
            "--command-ratio",
            "3",
            "-n",
            "6000",
            "-r",
            "1000",
            "-c",
            "10",
            "-P",
            "4",
            "-d",
            "20",
            "--json",
            &js,
            "--hdr-out",
            &prefix,
        ])
        .counted();
    assert_eq!(stats.get("set"), Some(&2000), "{stats:?}");
    assert_eq!(stats.get("get"), Some(&1000), "{stats:?}");
    assert_eq!(stats.get("hset"), Some(&3000), "{stats:?}");
    // HSET walks its own sequence (S) over -r 1000 three times: every key once, with the quoted value.
    let hashes = keys(&s, "h:*");
    assert_eq!(hashes.len(), 1000);
    assert_eq!(s.cli(&["hget", "h:000000000999", "f"]), "a b");
    assert_eq!(s.cli(&["strlen", &keys(&s, "0*")[0]]), "20");
    let title = "MIX SET __key__ __data__:2,GET __key__:1,HSET h:__key__ f a b:3";
    assert!(out.contains(&format!("====== {title} ======")), "{out}");
    assert_eq!(row(&out, "SET __key__ __data__"), (2000, 0), "{out}");
    assert_eq!(row(&out, "GET __key__"), (1000, 0), "{out}");
    assert_eq!(row(&out, "HSET h:__key__ f a b"), (3000, 0), "{out}");
    // JSON: each command's own figures, its histogram holding its replies.
    let run = json(&js);
    let cmds = run["tests"][0]["commands"].as_array().unwrap();
    let got: Vec<(&str, &str, u64)> = cmds
        .iter()
        .map(|c| {
            (
                c["title"].as_str().unwrap(),
                c["command"].as_str().unwrap(),
                c["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("SET __key__ __data__", "SET", 2000),
            ("GET __key__", "GET", 1000),
            ("HSET h:__key__ f a b", "HSET", 3000)
        ]
    );
    for c in cmds {
        assert_eq!(c["errors"].as_u64(), Some(0));
        assert!(c["rps"].as_f64().unwrap() > 0.0);
        assert!(c["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
        let raw = {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(c["histogram"]["data"].as_str().unwrap())
                .unwrap()
        };
        let h: Histogram<u64> = Deserializer::new()
            .deserialize(&mut raw.as_slice())
            .unwrap();
        assert_eq!(h.len(), c["requests"].as_u64().unwrap());
    }
    assert_valid(&run);
    // HDR: the test's log, and one per command holding that command's replies.
    let slug = "mix_set_key_data_2_get_key_1_hset_h_key_f_a_b_3";
    assert!(std::path::Path::new(&format!("{prefix}{slug}.hlog")).exists());
    for (i, name, n) in [
        (1, "set_key_data", 2000),
        (2, "get_key", 1000),
        (3, "hset_h_key_f_a_b", 3000),
    ] {
        let file = format!("{prefix}{slug}_cmd{i}_{name}.hlog");
        assert_eq!(log_count(&file), n, "{file}");
    }
    // -q and CSV: a line per command.
    s.reset();
    let q = Bench::on(&s)
        .args([
            "--command",
            "SET __key__ v",
            "--command",
            "GET __key__",
            "-n",
            "1000",
            "-r",
            "10",
            "-q",
        ])
        .ok();
    assert!(
        q.contains("MIX SET __key__ v:1,GET __key__:1 / SET __key__ v: "),
        "{q}"
    );
    assert!(
        q.contains("MIX SET __key__ v:1,GET __key__:1 / GET __key__: "),
        "{q}"
    );
    let csv = Bench::on(&s)
        .args([
            "--command",
            "SET __key__ v",
            "--command",
            "GET __key__",
            "-n",
            "1000",
            "-r",
            "10",
            "--csv",
        ])
        .ok();
    assert!(
        csv.contains("\"MIX SET __key__ v:1,GET __key__:1 / GET __key__\","),
        "{csv}"
    );
    assert_eq!(s.calls("set"), 1000);
    assert_eq!(s.calls("get"), 1000);
}

#[test]
fn mix_takes_commands_and_test_names_with_exact_weights() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let (out, stats) = Bench::on(&s)
        .args([
            "--mix",
            "GET user:__key__:80, SET user:__key__ __data__:15,incr:5",
            "-n",
            "10000",
            "-r",
            "100",
            "-P",
            "8",
            "--threads",
            "2",
            "-c",
            "4",
        ])
        .counted();
    assert_eq!(stats.get("get"), Some(&8000), "{stats:?}");
    assert_eq!(stats.get("set"), Some(&1500), "{stats:?}");
    assert_eq!(stats.get("incr"), Some(&500), "{stats:?}");
    assert_eq!(row(&out, "GET user:__key__"), (8000, 0), "{out}");
    assert_eq!(row(&out, "INCR"), (500, 0), "{out}");
    assert!(keys(&s, "user:*").len() <= 100);
    assert!(keys(&s, "counter:*").len() <= 100);
}

#[test]
fn each_command_counts_its_own_error_replies() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("errors");
    let js = dir.path("run.json");
    let flags = [
        "--command",
        "LPUSH l v",
        "--command",
        "GET l",
        "-n",
        "200",
        "-c",
        "1",
        "--json",
        &js,
    ];
    let o = Bench::on(&s).args(flags).output();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert_eq!(row(&out, "LPUSH l v"), (100, 0), "{out}");
    assert_eq!(row(&out, "GET l"), (100, 100), "{out}");
    assert_eq!(s.calls("lpush"), 100);
    let run = json(&js);
    let cmds = &run["tests"][0]["commands"];
    assert_eq!(cmds[0]["errors"].as_u64(), Some(0));
    assert_eq!(cmds[1]["errors"].as_u64(), Some(100));
    // -q and the CSV's stderr line name the command.
    let o = Bench::on(&s).args(flags).arg("-q").output();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("/ GET l: ") && out.contains(", 100 error replies\n"),
        "{out}"
    );
}

#[test]
fn a_mix_runs_open_loop_for_a_duration() {
    let _turn = lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("open");
    let prefix = dir.path("o-");
    let out = Bench::on(&s)
        .args([
            "--command",
            "SET __key__ __data__",
            "--command",
            "GET __key__",
            "--command-key-pattern",
            "G",
            "--rps",
            "2000",
            "--duration",
            "1.5",
            "-r",
            "1000",
            "-P",
            "2",
            "--hdr-out",
            &prefix,
        ])
        .ok();
    let (done, _) = completed(&out);
    let (sets, gets) = (s.calls("set"), s.calls("get"));
    assert_eq!(sets + gets, done, "{out}");
    assert_eq!(row(&out, "SET __key__ __data__").0, sets, "{out}");
    assert_eq!(row(&out, "GET __key__").0, gets, "{out}");
    assert!(sets.abs_diff(gets) <= 1, "{sets} {gets}");
    // Each command's log holds its replies, second by second.
    let slug = "mix_set_key_data_1_get_key_1";
    assert_eq!(
        log_count(&format!("{prefix}{slug}_cmd1_set_key_data.hlog")),
        sets
    );
    assert_eq!(
        log_count(&format!("{prefix}{slug}_cmd2_get_key.hlog")),
        gets
    );
    let lines = std::fs::read_to_string(format!("{prefix}{slug}_cmd2_get_key.hlog")).unwrap();
    let intervals = lines.lines().filter(|l| l.starts_with("Tag=")).count();
    assert!(intervals >= 2, "{lines}");
    assert!(out.contains("target 2000.00"), "{out}");
}

#[test]
fn mix_mistakes_are_one_line_usage_errors() {
    let _turn = crate::common::lock::shared();
    for (args, says) in [
        (&["--command-ratio", "2"][..], "give a --command first"),
        (
            &[
                "--command",
                "GET k",
                "--command-key-pattern",
                "Q",
                "-r",
                "5",
            ],
            "invalid value 'Q' for '--command-key-pattern'",
        ),
        (
            &["--command", "GET __key__", "--command-key-pattern", "S"],
            "'--command-key-pattern S' needs '-r",
        ),
        (
            &["--command", "GET k", "--command-ratio", "0"],
            "invalid value '0' for '--command-ratio'",
        ),
        (
            &[
                "--command",
                "GET k",
                "--command-ratio",
                "2",
                "--command-ratio",
                "3",
            ],
            "'--command-ratio' was given twice for --command 'GET k'",
        ),
        (
            &["--command", "SET \"k v"],
            "invalid value 'SET \"k v' for '--command': a quote is not closed",
        ),
        (
            &["--command", "GET k", "--mix", "get:1"],
            "cannot be combined with --mix",
        ),
        (&["--command", "GET k", "-t", "get"], "cannot be combined"),
        (&["--mix", "gett:1"], "invalid value 'gett' for '--mix'"),
        (&["--mix", "GET k:0"], "must be a whole number"),
        (
            &["--expiry-range", "10-5"],
            "invalid value '10-5' for '--expiry-range'",
        ),
        (&["--expiry-range", "0-5"], "whole seconds from 1"),
        (&["--expiry-range", "5"], "must be MIN-MAX"),
    ] {
        let o = Bench::new().args(args).output();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn rand_nth_placeholders_are_independent_sequences() {
    let _turn = crate::common::lock::shared();
    // valkey-benchmark's tests/integration/valkey-benchmark.tcl, checked the same way.
    let s = RedisServer::start();
    s.reset();
    let seq = |args: &[&str]| {
        s.reset();
        Bench::on(&s).args(args).ok();
    };
    seq(&[
        "-r",
        "50",
        "-n",
        "1000",
        "--sequential",
        "-q",
        "--",
        "set",
        "j__rand_int__",
        "rain",
        ";",
        "set",
        "k__rand_1st__",
        "rain",
    ]);
    assert_eq!(s.calls("set"), 1000);
    assert_eq!(s.cli(&["dbsize"]), "100");
    assert_eq!(keys(&s, "j*").len(), 50);
    assert_eq!(keys(&s, "k*").len(), 50);
    seq(&["-r", "50", "-n", "50", "--sequential", "-t", "zadd", "-q"]);
    assert_eq!(s.calls("zadd"), 50);
    assert_eq!(s.cli(&["dbsize"]), "1");
    assert_eq!(s.cli(&["zcard", "myzset"]), "50");
    // Repeated __rand_int__ take successive numbers; a repeated __rand_1st__ keeps one.
    seq(&[
        "-r",
        "100",
        "-n",
        "100",
        "--sequential",
        "-q",
        "--",
        "set",
        "rain__rand_int__",
        "rain__rand_int__",
    ]);
    assert_eq!(s.cli(&["dbsize"]), "50");
    for k in keys(&s, "rain*") {
        let n: u64 = k[4..].parse().unwrap();
        assert_eq!(s.cli(&["get", &k]), format!("rain{:012}", n + 1), "{k}");
    }
    seq(&[
        "-r",
        "100",
        "-n",
        "100",
        "-P",
        "5",
        "--sequential",
        "-q",
        "--",
        "set",
        "rain__rand_1st__",
        "rain__rand_1st__",
    ]);
    assert_eq!(s.cli(&["dbsize"]), "100");
    for k in keys(&s, "rain*").iter().take(20) {
        assert_eq!(&s.cli(&["get", k]), k);
    }
}

/// The TTL of every key matching `pattern`.
fn ttls(s: &RedisServer, pattern: &str) -> Vec<i64> {
    let ks = keys(s, pattern);
    let cmds: String = ks.iter().map(|k| format!("TTL {k}\n")).collect();
    batch(s, &cmds).iter().map(|l| l.parse().unwrap()).collect()
}

#[test]
fn sets_carry_a_ttl_from_the_expiry_range() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("ttl");
    let js = dir.path("run.json");
    // The default suite's SET test.
    let out = Bench::on(&s)
        .args([
            "-t",
            "set,get",
            "-r",
            "500",
            "-n",
            "3000",
            "--expiry-range",
            "100-200",
        ])
        .ok();
    assert!(
        out.contains("  SETs expire: EX 100-200 seconds (--expiry-range)"),
        "{out}"
    );
    let t = ttls(&s, "key:*");
    assert!(t.len() > 400, "{} keys", t.len());
    assert!(t.iter().all(|x| (99..=200).contains(x)), "{t:?}");
    assert!(
        t.iter().min() < Some(&130) && t.iter().max() > Some(&170),
        "{t:?}"
    );
    assert_eq!(s.calls("set"), 3000);
    // SETs of a mix and of a memtier command get one; a SET with its own TTL and other commands do not.
    s.reset();
    Bench::on(&s)
        .args([
            "--command",
            "SET a:__key__ __data__",
            "--command",
            "SET b:__key__ v PX 900000",
            "--command",
            "LPUSH c:__key__ v",
            "-r",
            "300",
            "-n",
            "3000",
            "--expiry-range",
            "50-60",
            "-P",
            "4",
            "-q",
        ])
        .ok();
    assert_eq!(s.calls("set"), 2000);
    let a = ttls(&s, "a:*");
    assert!(
        !a.is_empty() && a.iter().all(|x| (49..=60).contains(x)),
        "{a:?}"
    );
    let b = ttls(&s, "b:*");
    assert!(
        !b.is_empty() && b.iter().all(|x| (880..=900).contains(x)),
        "{b:?}"
    );
    assert!(ttls(&s, "c:*").iter().all(|&x| x == -1));
    s.reset();
    Bench::on(&s)
        .args([
            "--mix",
            "set:1,get:1",
            "-r",
            "100",
            "-n",
            "2000",
            "--expiry-range",
            "7-7",
            "-q",
            "--json",
            &js,
        ])
        .ok();
    let run = json(&js);
    assert_eq!(run["config"]["expiry_range"], serde_json::json!([7, 7]));
    assert_valid(&run);
    let t = ttls(&s, "key:*");
    assert!(
        !t.is_empty() && t.iter().all(|x| (6..=7).contains(x)),
        "{t:?}"
    );
}

#[test]
fn merge_sums_each_command_of_a_mix() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let dir = Scratch::new("merge");
    let (a, b, m) = (dir.path("a.json"), dir.path("b.json"), dir.path("m.json"));
    for (file, n) in [(&a, "2000"), (&b, "4000")] {
        Bench::on(&s)
            .args([
                "--mix",
                "SET k:__key__ v:1,get:1",
                "-r",
                "100",
                "-n",
                n,
                "-q",
                "--json",
                file,
            ])
            .ok();
    }
    let o = Bench::new()
        .args(["merge", &a, &b, "--json", &m, "-q"])
        .output();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let q = String::from_utf8_lossy(&o.stdout);
    assert!(q.contains("MIX SET k:__key__ v:1,get:1 / GET: "), "{q}");
    let run = json(&m);
    let cmds = run["tests"][0]["commands"].as_array().unwrap();
    let got: Vec<(&str, u64)> = cmds
        .iter()
        .map(|c| {
            (
                c["title"].as_str().unwrap(),
                c["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [("SET k:__key__ v", 3000), ("GET", 3000)]);
    assert_eq!((s.calls("set"), s.calls("get")), (3000, 3000));
    assert_valid(&run);
}

#[test]
fn plot_has_a_line_per_command_of_a_mix() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let dir = Scratch::new("plot");
    let svg = dir.path("mix.svg");
    Bench::on(&s)
        .args(["--mix", "set:1,GET k:1", "-n", "2000", "-q", "--plot", &svg])
        .ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let labels: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for label in [
        "MIX set:1,GET k:1",
        "MIX set:1,GET k:1 / SET",
        "MIX set:1,GET k:1 / GET k",
    ] {
        assert!(labels.contains(&label), "no text {label} in {labels:?}");
    }
}
