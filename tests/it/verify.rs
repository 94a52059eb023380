//! `--data-verify` / `--verify-only` against a real redis-server: the write pass's keys and values are
//! read back from the server, and a value a side client changes between the passes is reported.

use crate::common::bench::Bench;
use crate::common::*;

/// Runs `bench`; returns its exit code, stdout and stderr.
fn run(bench: Bench) -> (i32, String, String) {
    let out = bench.output();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `data verify:` line of a report.
fn verify_line(out: &str) -> &str {
    out.lines()
        .find(|l| l.starts_with("data verify:"))
        .unwrap_or_else(|| panic!("no data verify line in\n{out}"))
}

fn dbsize(s: &RedisServer) -> u64 {
    s.cli(&["dbsize"]).parse().unwrap()
}

#[test]
fn data_verify_reports_a_value_changed_between_the_passes() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let flags = [
        "-r",
        "5000",
        "-d",
        "20",
        "-c",
        "4",
        "-P",
        "8",
        "--threads",
        "2",
        "-q",
    ];
    let mut args = vec!["--data-verify"];
    args.extend_from_slice(&flags);
    let (code, out, err) = run(Bench::on(&s).args(&args));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(err, "");
    assert_eq!(
        verify_line(&out),
        "data verify: 5000 keys checked, 5000 verified, 0 mismatched, 0 missing, 0 errors"
    );
    // Every key of the keyspace written once and read once, with the value the read pass expects.
    assert_eq!(s.calls("set"), 5000);
    assert_eq!(s.calls("get"), 5000);
    assert_eq!(dbsize(&s), 5000);
    assert_eq!(s.cli(&["get", "key:000000004999"]), "x".repeat(20));

    // A side client changes one value, deletes another and puts a list in a third's place.
    s.cli(&["set", "key:000000000042", "xxxxxxxxxxxxxxxxxxxy"]);
    s.cli(&["del", "key:000000003210"]);
    s.cli(&["del", "key:000000004000"]);
    s.cli(&["rpush", "key:000000004000", "x"]);
    s.cli(&["config", "resetstat"]);
    let mut args = vec!["--verify-only"];
    args.extend_from_slice(&flags);
    let (code, out, err) = run(Bench::on(&s).args(&args));
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        verify_line(&out),
        "data verify: 5000 keys checked, 4997 verified, 1 mismatched, 1 missing, 1 errors"
    );
    for example in [
        "  key:000000000042 mismatched",
        "  key:000000003210 missing",
        "  key:000000004000 error",
    ] {
        assert!(out.lines().any(|l| l == example), "{example} in\n{out}");
    }
    // Only the read pass ran.
    assert_eq!(s.calls("set"), 0);
    assert_eq!(s.calls("get"), 5000);
}

/// The report's writer of an in-process run: when the write pass's report line arrives (the write pass
/// has ended, the read pass not begun), it runs `between` once, as a side client would.
struct BetweenPasses<F: FnMut()> {
    text: Vec<u8>,
    between: Option<F>,
}

impl<F: FnMut()> std::io::Write for BetweenPasses<F> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.text.extend_from_slice(b);
        if String::from_utf8_lossy(&self.text).contains("SET (data verify):")
            && let Some(mut f) = self.between.take()
        {
            f();
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn data_verify_reports_what_a_side_client_changed_between_its_own_passes() {
    let _turn = crate::common::lock::shared();
    use ringbench::{Cli, Config, Env, RunControl, Settings};
    let s = RedisServer::start();
    s.reset();
    let port = s.port.to_string();
    let argv = [
        "ringbench",
        "-p",
        &port,
        "--data-verify",
        "-r",
        "4000",
        "-d",
        "8-64",
        "--random-data",
        "-c",
        "4",
        "-P",
        "8",
        "-q",
    ];
    let settings = Settings::parse(&Cli::parse_args(argv).unwrap(), &Env::of_process()).unwrap();
    let cfg = Config::resolve(settings, &mut std::io::empty(), &mut std::io::sink()).unwrap();
    let mut out = BetweenPasses {
        text: Vec::new(),
        between: Some(|| {
            // Every key is written by now, and none read yet.
            assert_eq!(dbsize(&s), 4000);
            assert_eq!(s.calls("get"), 0);
            s.cli(&["set", "key:000000000123", "changed by a side client"]);
            s.cli(&["del", "key:000000003999"]);
        }),
    };
    let mut err = Vec::new();
    let outcome = ringbench::run(cfg, &RunControl::default(), &mut out, &mut err, None).unwrap();
    let text = String::from_utf8_lossy(&out.text).into_owned();
    assert!(
        out.between.is_none(),
        "the write pass's line never came:\n{text}"
    );
    assert!(outcome.any_failed(), "{text}");
    assert_eq!(
        verify_line(&text),
        "data verify: 4000 keys checked, 3998 verified, 1 mismatched, 1 missing, 0 errors"
    );
    assert!(
        text.lines().any(|l| l == "  key:000000000123 mismatched"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l == "  key:000000003999 missing"),
        "{text}"
    );
    assert_eq!((s.calls("set"), s.calls("get")), (4000 + 1, 4000));
}

#[test]
fn data_verify_checks_random_values_of_varying_length() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let flags = [
        "-r",
        "3000",
        "-d",
        "5-300",
        "--random-data",
        "--seed",
        "9",
        "-c",
        "3",
        "-P",
        "4",
        "-q",
    ];
    let mut args = vec!["--data-verify"];
    args.extend_from_slice(&flags);
    let (code, out, err) = run(Bench::on(&s).args(&args));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        verify_line(&out),
        "data verify: 3000 keys checked, 3000 verified, 0 mismatched, 0 missing, 0 errors"
    );
    assert_eq!(
        (s.calls("set"), s.calls("get"), dbsize(&s)),
        (3000, 3000, 3000)
    );
    // The server holds values of many lengths within the range, of more than one byte value.
    let mut lens = std::collections::BTreeSet::new();
    for k in (0..3000).step_by(97) {
        let len: usize = s.cli(&["strlen", &format!("key:{k:012}")]).parse().unwrap();
        assert!((5..=300).contains(&len), "key {k}: {len}");
        lens.insert(len);
    }
    assert!(lens.len() > 10, "{lens:?}");
    let v = s.cli(&["get", "key:000000000007"]);
    assert!(v.bytes().any(|b| b != v.as_bytes()[0]), "{v}");

    // One byte more on one key; the same flags find exactly it.
    s.cli(&["append", "key:000000001234", "z"]);
    let mut args = vec!["--verify-only"];
    args.extend_from_slice(&flags);
    let (code, out, _) = run(Bench::on(&s).args(&args));
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        verify_line(&out),
        "data verify: 3000 keys checked, 2999 verified, 1 mismatched, 0 missing, 0 errors"
    );
    assert!(
        out.lines().any(|l| l == "  key:000000001234 mismatched"),
        "{out}"
    );
    // Another seed expects other values.
    let other: Vec<&str> = args
        .iter()
        .map(|a| if *a == "9" { "10" } else { a })
        .collect();
    let (code, out, _) = run(Bench::on(&s).args(&other));
    assert_eq!(code, 1, "{out}");
    assert!(verify_line(&out).starts_with("data verify: 3000 keys checked, 0 verified"));
}

#[test]
fn data_verify_shards_each_check_their_own_slice() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    for shard in ["0/2", "1/2"] {
        let (code, out, err) = run(Bench::on(&s).args([
            "--data-verify",
            "-r",
            "3001",
            "--shard",
            shard,
            "-c",
            "4",
            "--threads",
            "2",
            "-q",
        ]));
        assert_eq!(code, 0, "{out}{err}");
        let want = if shard == "0/2" { 1501 } else { 1500 };
        assert_eq!(
            verify_line(&out),
            format!(
                "data verify: {want} keys checked, {want} verified, 0 mismatched, 0 missing, 0 errors"
            )
        );
    }
    // The shards' slices cover the keyspace once.
    assert_eq!(
        (s.calls("set"), s.calls("get"), dbsize(&s)),
        (3001, 3001, 3001)
    );
    // A key of shard 1's slice (1501..3001) is missing for shard 1 only.
    s.cli(&["del", "key:000000002000"]);
    let only = |shard: &str| {
        run(Bench::on(&s).args([
            "--verify-only",
            "-r",
            "3001",
            "--shard",
            shard,
            "-c",
            "4",
            "-q",
        ]))
    };
    let (code, out, _) = only("0/2");
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = only("1/2");
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        verify_line(&out),
        "data verify: 1500 keys checked, 1499 verified, 0 mismatched, 1 missing, 0 errors"
    );
    assert!(
        out.lines().any(|l| l == "  key:000000002000 missing"),
        "{out}"
    );
}

#[test]
fn data_verify_usage_errors_exit_2_naming_the_flag() {
    let _turn = crate::common::lock::shared();
    for (args, want) in [
        (
            &["--data-verify"][..],
            "'--data-verify' needs '-r <keyspacelen>'",
        ),
        (
            &["--data-verify", "-r", "10", "-t", "get"],
            "'--data-verify' cannot be combined with -t",
        ),
        (
            &["--verify-only", "-r", "10", "-n", "5", "--cluster"],
            "invalid value '5' for '-n': --verify-only sends one request per key",
        ),
        (
            &["capacity", "--verify-only", "-r", "10", "--slo", "p99=2ms"],
            "'capacity' cannot be combined with --data-verify or --verify-only",
        ),
    ] {
        // Nothing listens on port 1: the mistake is found before connecting.
        let out = Bench::new().args(args).args(["-p", "1"]).output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

fn schema_errors(doc: &serde_json::Value) -> Vec<String> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema/ringbench-result.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    v.iter_errors(doc).map(|e| e.to_string()).collect()
}

fn json(path: &str) -> serde_json::Value {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let errors = schema_errors(&doc);
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
    doc
}

#[test]
fn data_verify_figures_in_json_and_in_a_merge_of_shards() {
    let _turn = crate::common::lock::shared();
    let dir = crate::common::scratch::Scratch::new("verify-json");
    let s = RedisServer::start();
    s.reset();
    let files = [dir.path("a.json"), dir.path("b.json")];
    for (shard, file) in ["0/2", "1/2"].iter().zip(&files) {
        let (code, out, err) = run(Bench::on(&s).args([
            "--data-verify",
            "-r",
            "2001",
            "--shard",
            shard,
            "-c",
            "2",
            "-q",
            "--json",
            file,
        ]));
        assert_eq!(code, 0, "{out}{err}");
    }
    let a = json(&files[0]);
    // The write pass has no figures of its own; the read pass has the shard's checks.
    assert!(a["tests"][0].get("data_verify").is_none());
    let v = &a["tests"][1]["data_verify"];
    assert_eq!(v["checked"], 1001);
    assert_eq!(v["verified"], 1001);
    assert_eq!(v["examples"], serde_json::json!([]));
    let merged = dir.path("m.json");
    // The shards ran one after the other, so their starts are the first one's run time apart; on a
    // loaded machine that passes merge's 1 s clock check, which is not what this test is about.
    let out = Bench::new()
        .args([
            "merge",
            &files[0],
            &files[1],
            "--ignore-shards",
            "--json",
            &merged,
        ])
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m = json(&merged);
    let v = &m["tests"][1]["data_verify"];
    assert_eq!(
        (v["checked"].as_u64(), v["verified"].as_u64()),
        (Some(2001), Some(2001))
    );
    assert_eq!(s.calls("get"), 2001);

    s.cli(&["del", "key:000000000017"]);
    let file = dir.path("c.json");
    let (code, out, _) =
        run(Bench::on(&s).args(["--verify-only", "-r", "2001", "-q", "--json", &file]));
    assert_eq!(code, 1, "{out}");
    let c = json(&file);
    let v = &c["tests"][0]["data_verify"];
    assert_eq!(
        (v["checked"].as_u64(), v["missing"].as_u64()),
        (Some(2001), Some(1))
    );
    assert_eq!(
        v["examples"],
        serde_json::json!([{"key": "key:000000000017", "problem": "missing"}])
    );
}

#[test]
fn cluster_data_verify_checks_every_key_on_its_master() {
    let _turn = crate::common::lock::shared();
    use crate::common::cluster::Cluster;
    let c = Cluster::start();
    let run_c = |args: &[&str]| run(Bench::cluster(c.ports[0]).arg("--cluster").args(args));
    let flags = [
        "-r",
        "6000",
        "-d",
        "5-200",
        "--random-data",
        "--seed",
        "3",
        "-c",
        "6",
        "-P",
        "8",
        "--threads",
        "2",
        "-q",
    ];
    let (code, out, err) = run_c(&[&["--data-verify"][..], &flags].concat());
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(err, "");
    assert_eq!(
        verify_line(&out),
        "data verify: 6000 keys checked, 6000 verified, 0 mismatched, 0 missing, 0 errors"
    );
    assert_eq!((c.calls("set"), c.calls("get")), (6000, 6000));
    assert_eq!(c.dbsizes().iter().sum::<u64>(), 6000);
    // Every master holds its share of the keys.
    assert!(c.dbsizes().iter().all(|&n| n > 1000), "{:?}", c.dbsizes());

    // A side client changes a key and deletes another, each on the master that owns it.
    let owner = |key: &str| c.owner(ringbench::key_slot(key.as_bytes()));
    let changed = "key:000000000777";
    let gone = "key:000000005555";
    c.cli(owner(changed), &["set", changed, "not the value"]);
    c.cli(owner(gone), &["del", gone]);
    c.reset_stats();
    let (code, out, err) = run_c(&[&["--verify-only"][..], &flags].concat());
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        verify_line(&out),
        "data verify: 6000 keys checked, 5998 verified, 1 mismatched, 1 missing, 0 errors"
    );
    assert!(
        out.lines().any(|l| l == "  key:000000000777 mismatched"),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l == "  key:000000005555 missing"),
        "{out}"
    );
    assert_eq!((c.calls("set"), c.calls("get")), (0, 6000));

    // A key moved to another master while its slot migrates: its old master answers -ASK, and the
    // GET sent again (after ASKING) to the new one is the answer that counts.
    let moved = "key:000000000100";
    let slot = ringbench::key_slot(moved.as_bytes());
    let from = owner(moved);
    let to = *c.ports.iter().find(|&&p| p != from).unwrap();
    let slot_s = slot.to_string();
    c.cli(
        to,
        &["cluster", "setslot", &slot_s, "importing", &c.node_id(from)],
    );
    c.cli(
        from,
        &["cluster", "setslot", &slot_s, "migrating", &c.node_id(to)],
    );
    assert_eq!(
        c.cli(
            from,
            &["migrate", "127.0.0.1", &to.to_string(), moved, "0", "5000"]
        ),
        "OK"
    );
    c.reset_stats();
    let (code, out, err) = run_c(&[&["--verify-only"][..], &flags].concat());
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        verify_line(&out),
        "data verify: 6000 keys checked, 5998 verified, 1 mismatched, 1 missing, 0 errors"
    );
    assert_eq!(c.calls_on(to, "asking"), 1);
    // The GET its old master answered with -ASK is a rejected call, not one of its calls.
    assert_eq!(c.calls("get"), 6000);
    let rejected: u64 = c
        .cli(from, &["info", "commandstats"])
        .lines()
        .filter(|l| l.starts_with("cmdstat_get:"))
        .filter_map(|l| l.split("rejected_calls=").nth(1))
        .filter_map(|v| v.split(',').next()?.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(rejected, 1);
}
