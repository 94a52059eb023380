//! Many client processes as one run: `--shard`/`--shards`, the Kubernetes Indexed Job that
//! `fleet kubernetes` renders (its pods simulated here: the rendered command run once per index with
//! `JOB_COMPLETION_INDEX` set), and `merge -` with its shard checks, all against a real redis-server.

use crate::common::bench::Bench;
use crate::common::*;
use ringbench::RunFile;
use serde_json::Value;

/// The manifest's document: comment lines on top, then the Job as JSON (which YAML reads the same).
fn job(manifest: &str) -> Value {
    let body: Vec<&str> = manifest.lines().filter(|l| !l.starts_with('#')).collect();
    serde_json::from_str(&body.join("\n")).unwrap_or_else(|e| panic!("{e} in\n{manifest}"))
}

/// The manifest's container command and arguments.
fn pod_command(manifest: &str) -> (Vec<String>, Vec<String>) {
    let c = &job(manifest)["spec"]["template"]["spec"]["containers"][0];
    let list = |key: &str| -> Vec<String> { serde_json::from_value(c[key].clone()).unwrap() };
    (list("command"), list("args"))
}

fn render(args: &[&str]) -> String {
    let out = Bench::new()
        .args(["fleet", "kubernetes"])
        .args(args)
        .output();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the pods of `manifest` on this machine, all at once, and returns their logs (stdout) by index.
fn run_pods(manifest: &str, pods: usize) -> Vec<Vec<u8>> {
    let (command, args) = pod_command(manifest);
    assert_eq!(command, ["ringbench"]);
    let children: Vec<_> = (0..pods)
        .map(|i| {
            Bench::new()
                .args(&args)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .spawn()
        })
        .collect();
    children
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success() && out.stderr.is_empty(),
                "pod {i}: {:?} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        })
        .collect()
}

/// `ringbench merge - ARGS` with `input` on stdin.
fn merge_stdin(input: &[u8], args: &[&str]) -> std::process::Output {
    Bench::new().args(["merge", "-"]).args(args).input(input)
}

/// Checks a result document against schema/ringbench-result.schema.json.
fn assert_valid(doc: &[u8]) {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema/ringbench-result.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    let doc: Value = serde_json::from_slice(doc).unwrap();
    let v = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
}

fn docs(logs: &[Vec<u8>]) -> Vec<RunFile> {
    for l in logs {
        assert_valid(l);
    }
    logs.iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

#[test]
fn simulated_pods_of_the_rendered_job_make_one_run() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let port = s.port.to_string();
    let manifest = render(&[
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "set",
        "-n",
        "1000001",
        "-c",
        "10",
        "-P",
        "16",
        "-r",
        "30000",
        "--distribution",
        "sequential",
        "--seed",
        "7",
        "--pods",
        "3",
        "--lead",
        "2",
    ]);
    let logs = run_pods(&manifest, 3);
    let shards = docs(&logs);

    // Every shard ran its exact share, and the shares add up to the flags' totals.
    let requests: Vec<u64> = shards.iter().map(|f| f.config.requests).collect();
    assert_eq!(requests, [333_334, 333_334, 333_333]);
    let done: Vec<u64> = shards.iter().map(|f| f.tests[0].requests).collect();
    assert_eq!(done, requests);
    let clients: Vec<u64> = shards.iter().map(|f| f.config.clients).collect();
    assert_eq!(clients, [4, 3, 3]);
    for (i, f) in shards.iter().enumerate() {
        let sh = f.config.shard.expect("the JSON records the shard");
        assert_eq!((sh.index, sh.count), (i as u64, 3));
    }
    let mut seeds: Vec<u64> = shards.iter().map(|f| f.config.seed).collect();
    seeds.dedup();
    assert_eq!(seeds.len(), 3, "a seed per shard: {seeds:?}");

    // They started together: at the rendered --start-at, within 50 ms of each other.
    let at = shards[0].config.start_at.unwrap();
    assert!(shards.iter().all(|f| f.config.start_at == Some(at)));
    let starts: Vec<f64> = shards.iter().map(|f| f.tests[0].start_unix).collect();
    assert!(starts.iter().all(|&t| t >= at), "{starts:?} before {at}");
    let spread = starts.iter().cloned().fold(f64::MIN, f64::max)
        - starts.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread < 0.050, "first sends {spread} s apart");

    // The pods' logs, in any order, merge into the whole run, which is what the server counted.
    let mut input = Vec::new();
    for i in [2, 0, 1] {
        input.extend_from_slice(&logs[i]);
    }
    let out = merge_stdin(&input, &["--json", "-"]);
    // The only thing merge may say is that the shards did not all end together (on 2 shared cores, the
    // shard with 4 connections can finish well before the others).
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.lines().all(|l| l.contains("overlap for only")),
        "{err}"
    );
    assert_valid(&out.stdout);
    let merged: RunFile = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged.tests[0].requests, 1_000_001);
    assert_eq!(s.calls("set"), 1_000_001);
    assert_eq!(merged.config.requests, 1_000_001);
    assert_eq!(merged.config.clients, 10);
    assert_eq!(merged.config.shard, None);
    assert_eq!(merged.merged_from.len(), 3);
    assert_eq!(merged.tests[0].histogram.decode().unwrap().len(), 1_000_001);
    // Sequential keys: each shard wrote its own slice of -r, so together every key once.
    assert_eq!(s.cli(&["dbsize"]), "30000");

    let out = merge_stdin(&input, &["-q"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("Merged 3 runs") && text.contains("All 3 shards of one run"),
        "{text}"
    );
}

/// Runs the first pod of `manifest` under its Localhost seccomp profile (the file in deploy/seccomp/ that
/// kubelet finds at the rendered path), loaded by libseccomp as a runtime would, without the system calls
/// in `drop`. Returns its exit status and stderr.
fn run_pod_under_seccomp(manifest: &str, drop: &str) -> (std::process::ExitStatus, String) {
    let c = &job(manifest)["spec"]["template"]["spec"]["containers"][0];
    let sc = &c["securityContext"]["seccompProfile"];
    assert_eq!(sc["type"], "Localhost", "{manifest}");
    let name = sc["localhostProfile"].as_str().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let profile = root
        .join("deploy/seccomp")
        .join(name.rsplit('/').next().unwrap());
    assert!(profile.is_file(), "{name}: no {}", profile.display());
    let (_, args) = pod_command(manifest);
    let script = root.join("scripts/lib/under-seccomp.py");
    let out = Bench::new()
        .under(
            "/usr/bin/python3",
            [script.as_os_str(), profile.as_os_str(), drop.as_ref()],
        )
        .args(&args)
        .env("JOB_COMPLETION_INDEX", "0")
        .command()
        .output()
        .expect("/usr/bin/python3 runs (with python3-seccomp)");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_pod_runs_under_the_rendered_seccomp_profile_and_needs_its_io_uring_calls() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let flags = format!(
        "-h 127.0.0.1 -p {} -t set -n 20000 --pods 1 --lead 1",
        s.port
    );
    let args: Vec<&str> = flags.split_whitespace().collect();
    let (status, err) = run_pod_under_seccomp(&render(&args), "");
    assert!(status.success() && err.is_empty(), "{status:?} {err}");
    assert_eq!(s.calls("set"), 20000);
    // Without io_uring's calls (RuntimeDefault's list alone), the pod stops at ringbench's io_uring line.
    let (status, err) = run_pod_under_seccomp(
        &render(&args),
        "io_uring_setup,io_uring_enter,io_uring_register",
    );
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("io_uring is not available: io_uring_setup was refused (EPERM)"),
        "{err}"
    );
    assert_eq!(s.calls("set"), 20000, "nothing sent without io_uring");
}

#[test]
fn rate_and_clients_shares_add_up() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let at = format!("{:.3}", ringbench::unix_now() + 1.0);
    let children: Vec<_> = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            Bench::on(&s)
                .args([
                    "-t",
                    "ping_inline",
                    "-n",
                    "301",
                    "-c",
                    "7",
                    "--rps",
                    "1000.5",
                    "--shard",
                    &shard,
                    "--start-at",
                    &at,
                    "--json",
                    "-",
                ])
                .spawn()
        })
        .collect();
    let logs: Vec<Vec<u8>> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success() && out.stderr.is_empty());
            out.stdout
        })
        .collect();
    let shards = docs(&logs);
    let rps: Vec<f64> = shards.iter().map(|f| f.config.rps.unwrap()).collect();
    assert_eq!(rps, [334.5, 333.0, 333.0]);
    let n: Vec<u64> = shards.iter().map(|f| f.tests[0].requests).collect();
    assert_eq!(n, [101, 100, 100]);
    let c: Vec<u64> = shards.iter().map(|f| f.config.clients).collect();
    assert_eq!(c, [3, 2, 2]);
    assert_eq!(s.calls("ping"), 301);
    let out = merge_stdin(&logs.concat(), &["--json", "-"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: RunFile = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(merged.config.rps, Some(1000.5));
    assert_eq!(merged.tests[0].requests, 301);
}

/// Three shard documents of one run (small, started together).
fn three_shards(s: &RedisServer) -> Vec<Value> {
    let at = format!("{:.3}", ringbench::unix_now() + 1.0);
    let children: Vec<_> = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            Bench::on(s)
                .args(["-t", "set", "-n", "3000", "-c", "3", "--shard", &shard])
                .args(["--start-at", &at, "--json", "-"])
                .spawn()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect()
}

fn stream(docs: &[&Value]) -> Vec<u8> {
    docs.iter()
        .flat_map(|d| serde_json::to_vec_pretty(d).unwrap())
        .collect()
}

#[test]
fn merge_refuses_duplicate_missing_and_foreign_shards() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let d = three_shards(&s);
    let ok = merge_stdin(&stream(&[&d[0], &d[1], &d[2]]), &["-q"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    let mut late = d[2].clone();
    late["tests"][0]["start_unix"] =
        (late["tests"][0]["start_unix"].as_f64().unwrap() + 2.5).into();
    let mut other_run = d[2].clone();
    other_run["config"]["start_at"] =
        (other_run["config"]["start_at"].as_f64().unwrap() + 60.0).into();
    let mut unsharded = d[2].clone();
    unsharded["config"]["shard"] = Value::Null;
    let mut of_four = d[2].clone();
    of_four["config"]["shard"]["count"] = 4.into();
    let mut past_the_end = d[2].clone();
    past_the_end["config"]["shard"]["index"] = 7.into();
    for (input, want) in [
        (vec![&d[0], &d[1], &d[1]], "shard 1/3 appears twice"),
        (vec![&d[0], &d[1]], "1 of 3 shards missing: 2/3"),
        (vec![&d[0], &d[1], &late], "s apart"),
        (vec![&d[0], &d[1], &other_run], "--start-at"),
        (vec![&d[0], &d[1], &unsharded], "not a shard"),
        (vec![&d[0], &d[1], &of_four], "shard 2/4"),
        (vec![&d[0], &d[1], &past_the_end], "7/3 is not valid"),
    ] {
        let out = merge_stdin(&stream(&input), &["-q"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{want}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(
            err.contains(want) && err.contains("--ignore-shards"),
            "{want}: {err}"
        );
        let forced = merge_stdin(&stream(&input), &["-q", "--ignore-shards"]);
        assert!(
            forced.status.success(),
            "{}",
            String::from_utf8_lossy(&forced.stderr)
        );
    }

    // Text between documents (a failed pod's error in `kubectl logs`) is named by its line.
    let mut input = stream(&[&d[0]]);
    let line = input.iter().filter(|&&b| b == b'\n').count() + 2;
    input.extend_from_slice(b"\nringbench: invalid value '9' in JOB_COMPLETION_INDEX\n");
    input.extend(stream(&[&d[1]]));
    let out = merge_stdin(&input, &["-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("stdin, line {line}")) && err.contains("JOB_COMPLETION_INDEX"),
        "{err}"
    );
    let out = merge_stdin(b"", &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn shard_mistakes_are_one_line_and_exit_2() {
    let _turn = crate::common::lock::shared();
    for (args, env, want) in [
        (vec!["--shard", "3/3"], None, "'--shard'"),
        (vec!["--shard", "a/b"], None, "'--shard'"),
        (vec!["--shards", "3"], None, "JOB_COMPLETION_INDEX"),
        (vec!["--shards", "3"], Some("3"), "JOB_COMPLETION_INDEX"),
        (vec!["--shards", "0"], Some("0"), "'--shards'"),
        (vec!["--shard", "0/3", "--shards", "3"], None, "together"),
        (vec!["--shard", "2/3", "-c", "2"], None, "'-c'"),
        (vec!["--shard", "2/3", "-n", "2"], None, "'-n'"),
        (vec!["--shard", "2/3", "--rps", "2.5"], None, "'--rps'"),
        (
            vec!["fleet", "kubernetes", "-h", "r", "--pods", "3", "-c", "2"],
            None,
            "'-c'",
        ),
        (vec!["fleet", "kubernetes", "--pods", "3"], None, "-h HOST"),
        (vec!["fleet", "kubernetes", "-h", "r"], None, "'--pods N'"),
        (
            vec![
                "fleet",
                "kubernetes",
                "-h",
                "r",
                "--pods",
                "2",
                "--start-at",
                "1",
            ],
            None,
            "'--start-at'",
        ),
        (
            vec![
                "fleet",
                "kubernetes",
                "-h",
                "r",
                "--pods",
                "2",
                "--shard",
                "0/2",
            ],
            None,
            "'--shard'",
        ),
        (
            vec![
                "fleet",
                "kubernetes",
                "-h",
                "r",
                "--pods",
                "2",
                "-t",
                "nope",
            ],
            None,
            "'-t'",
        ),
        (vec!["fleet", "nomad"], None, "'nomad'"),
    ] {
        let mut bench = Bench::new().args(&args).env_remove("JOB_COMPLETION_INDEX");
        if let Some(v) = env {
            bench = bench.env("JOB_COMPLETION_INDEX", v);
        }
        let out = bench.output();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Runs `--shard I/3` for I = 0, 1, 2 at once with `args` and returns each shard's result document.
fn run_three_shards(s: &RedisServer, args: &[&str]) -> Vec<RunFile> {
    let children: Vec<_> = (0..3)
        .map(|i| {
            let shard = format!("{i}/3");
            Bench::on(s)
                .args(["--shard", &shard, "--json", "-"])
                .args(args)
                .spawn()
        })
        .collect();
    let logs: Vec<Vec<u8>> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success() && out.stderr.is_empty(),
                "{args:?}: {:?} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        })
        .collect();
    docs(&logs)
}

#[test]
fn odd_requests_and_keyspace_split_exactly_over_shards() {
    let _turn = crate::common::lock::shared();
    // -n and -r odd and equal: shard 0 sends one request more than the others, so its key slice is one
    // key longer, and with sequential keys every key is written exactly once. Two executors per shard
    // split each shard's share and slice again (10,001 = 5,001 + 5,000).
    let s = RedisServer::start();
    for threads in ["1", "2"] {
        s.reset();
        let shards = run_three_shards(
            &s,
            &[
                "-t",
                "set",
                "-n",
                "30001",
                "-r",
                "30001",
                "--distribution",
                "sequential",
                "-c",
                "12",
                "-P",
                "7",
                "--threads",
                threads,
            ],
        );
        let done: Vec<u64> = shards.iter().map(|f| f.tests[0].requests).collect();
        assert_eq!(done, [10_001, 10_000, 10_000], "--threads {threads}");
        assert_eq!(s.calls("set"), 30_001, "--threads {threads}");
        assert_eq!(s.cli(&["dbsize"]), "30001", "--threads {threads}");
        // Keys 0 and 30000, the ends of the first and the last slice, are both written.
        assert_eq!(s.cli(&["exists", "key:000000000000"]), "1");
        assert_eq!(s.cli(&["exists", "key:000000030000"]), "1");
    }

    // Uniform keys: each shard still sends exactly its share, and every key is one of -r.
    s.reset();
    let shards = run_three_shards(&s, &["-t", "set", "-n", "30001", "-r", "30001", "-c", "3"]);
    let done: Vec<u64> = shards.iter().map(|f| f.tests[0].requests).collect();
    assert_eq!(done, [10_001, 10_000, 10_000]);
    assert_eq!(s.calls("set"), 30_001);
    let keys: u64 = s.cli(&["dbsize"]).parse().unwrap();
    assert!(keys > 15_000 && keys <= 30_001, "{keys} keys");
}
