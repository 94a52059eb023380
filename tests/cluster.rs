//! `--cluster` against a real local Redis Cluster (three masters started with scripts/cluster.sh),
//! every figure checked from the masters' side (DBSIZE, INFO commandstats, CLUSTER KEYSLOT).

mod common;
use common::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A cluster of three masters owned by one test; stopped when dropped.
struct Cluster {
    dir: PathBuf,
    ports: Vec<u16>,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster.sh")
}

impl Cluster {
    fn start() -> Cluster {
        let mut last = String::new();
        // A port picked by the script can be taken by another test in between; try again then.
        for _ in 0..3 {
            let out = Command::new(script())
                .args(["start", "3"])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            if out.status.success() {
                let mut lines = text.lines();
                let dir = PathBuf::from(lines.next().unwrap());
                let ports = lines
                    .map(|l| l.rsplit_once(':').unwrap().1.parse().unwrap())
                    .collect::<Vec<u16>>();
                assert_eq!(ports.len(), 3, "{text}");
                let c = Cluster { dir, ports };
                // The start script's own PINGs are not the run's.
                for &p in &c.ports {
                    c.cli(p, &["config", "resetstat"]);
                }
                return c;
            }
            last = String::from_utf8_lossy(&out.stderr).to_string();
        }
        panic!("scripts/cluster.sh start failed: {last}");
    }

    fn cli(&self, port: u16, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Sends one command per line of `commands` through a single redis-cli; returns its output lines.
    fn batch(&self, port: u16, commands: &str) -> Vec<String> {
        use std::io::Write;
        let mut child = Command::new("redis-cli")
            .args(["-p", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(commands.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect()
    }

    fn dbsizes(&self) -> Vec<u64> {
        self.ports
            .iter()
            .map(|&p| self.cli(p, &["dbsize"]).parse().unwrap())
            .collect()
    }

    /// Calls of `command` summed over the masters.
    fn calls(&self, command: &str) -> u64 {
        self.ports
            .iter()
            .map(|&p| {
                parse_commandstats(&self.cli(p, &["info", "commandstats"]))
                    .get(command)
                    .copied()
                    .unwrap_or(0)
            })
            .sum()
    }

    fn node_id(&self, port: u16) -> String {
        self.cli(port, &["cluster", "myid"])
    }

    /// The port of the master that owns `slot`.
    fn owner(&self, slot: u16) -> u16 {
        let nodes = self.cli(self.ports[0], &["cluster", "nodes"]);
        for line in nodes.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            if !f[2].contains("master") {
                continue;
            }
            let port: u16 = f[1]
                .split('@')
                .next()
                .unwrap()
                .rsplit_once(':')
                .unwrap()
                .1
                .parse()
                .unwrap();
            for r in &f[8..] {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                if let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>())
                    && (a..=b).contains(&slot)
                {
                    return port;
                }
            }
        }
        panic!("no owner for slot {slot}:\n{nodes}");
    }

    fn addr(&self) -> Vec<String> {
        vec!["-p".into(), self.ports[0].to_string(), "--cluster".into()]
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .args(["stop", self.dir.to_str().unwrap()])
            .output();
    }
}

fn run(c: &Cluster, args: &[&str]) -> (bool, String, String) {
    let mut all = c.addr();
    all.extend(args.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = all.iter().map(|s| s.as_str()).collect();
    let out = ringbench(&refs);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The count before `label` in a "redirects: 3 MOVED, 2 ASK" line (0 when absent).
fn redirect_count(out: &str, label: &str) -> u64 {
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("redirects: "))
        .flat_map(|l| l.split(", "))
        .filter_map(|p| p.strip_suffix(&format!(" {label}")))
        .map(|n| n.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn random_keys_spread_evenly_and_reach_the_server_exactly_n_times() {
    let c = Cluster::start();
    let (ok, out, err) = run(&c, &["-t", "set", "-r", "100000", "-n", "30000"]);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("cluster mode: yes (3 masters)"), "{out}");
    for i in 0..3 {
        assert!(out.contains(&format!("node [{i}] configuration:")), "{out}");
    }
    assert!(out.contains("  30000 requests completed"), "{out}");
    assert!(
        !out.contains("redirects:"),
        "a redirect was counted:\n{out}"
    );
    assert_eq!(c.calls("set"), 30000);
    let sizes = c.dbsizes();
    let total: u64 = sizes.iter().sum();
    for (port, size) in c.ports.iter().zip(&sizes) {
        let share = *size as f64 / total as f64;
        assert!(
            (share - 1.0 / 3.0).abs() <= 0.2 / 3.0,
            "master {port} holds {size} of {total} keys"
        );
    }
    // The per-node lines add up to the requests, and each names a master that has the keys.
    let per_node: HashMap<u16, u64> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("127.0.0.1:"))
        .map(|l| {
            let (port, rest) = l.split_once(": ").unwrap();
            (
                port.parse().unwrap(),
                rest.split(' ').next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(per_node.len(), 3, "{out}");
    assert_eq!(per_node.values().sum::<u64>(), 30000, "{out}");
    for &p in &c.ports {
        let calls = parse_commandstats(&c.cli(p, &["info", "commandstats"]))["set"];
        assert_eq!(per_node[&p], calls, "master {p}");
    }
}

#[test]
fn the_long_suite_runs_without_errors() {
    let c = Cluster::start();
    let (ok, out, err) = run(
        &c,
        &[
            "-t",
            "ping,set,get,incr,lpush,lpop,sadd,hset,spop,zadd,lrange,mset",
            "-n",
            "10000",
            "-r",
            "100000",
            // Pipelining keeps this test short on a busy machine; routing is per request either way.
            "-P",
            "16",
            "-q",
        ],
    );
    assert!(ok, "{out}\n{err}");
    assert!(!out.contains("error") && !out.contains("failed"), "{out}");
    assert!(!out.contains("MOVED") && !out.contains("ASK"), "{out}");
    assert_eq!(out.lines().count(), 17, "{out}");
    for (cmd, n) in [
        ("ping", 20000),
        ("set", 10000),
        ("get", 10000),
        ("incr", 10000),
        ("lpush", 20000),
        ("lpop", 10000),
        ("sadd", 10000),
        ("hset", 10000),
        ("spop", 10000),
        ("zadd", 10000),
        ("lrange", 40000),
        ("mset", 10000),
    ] {
        assert_eq!(c.calls(cmd), n, "calls of {cmd}");
    }
    // Each MSET wrote ten keys under one tag; those tags spread over all masters.
    for &p in &c.ports {
        let keys = c.cli(p, &["--scan", "--pattern", "key:{*}:9"]);
        assert!(keys.lines().count() > 100, "master {p}: {keys}");
    }
}

#[test]
fn a_custom_command_is_routed_by_its_key() {
    let c = Cluster::start();
    let (ok, out, err) = run(
        &c,
        &[
            "-r",
            "1000",
            "-n",
            "5000",
            "-q",
            "set",
            "foo:__rand_int__",
            "bar",
        ],
    );
    assert!(ok, "{out}\n{err}");
    assert!(!out.contains("error") && !out.contains("MOVED"), "{out}");
    assert_eq!(c.calls("set"), 5000);
    let sizes = c.dbsizes();
    assert!(sizes.iter().all(|&s| s > 200), "{sizes:?}");
    assert!(sizes.iter().sum::<u64>() <= 1000, "{sizes:?}");
    // Every key sits on the master that owns its slot.
    for &p in &c.ports {
        for k in c.cli(p, &["--scan"]).lines().take(20) {
            let slot: u16 = c.cli(p, &["cluster", "keyslot", k]).parse().unwrap();
            assert_eq!(c.owner(slot), p, "{k}");
        }
    }
}

#[test]
fn too_few_clients_for_the_masters_is_a_usage_error() {
    let c = Cluster::start();
    let (ok, out, err) = run(&c, &["-c", "2", "-n", "10", "-t", "set"]);
    assert!(!ok && out.is_empty(), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("'-c'") && err.contains("3 masters"), "{err}");
}

#[test]
fn slots_migrated_during_a_run_are_followed() {
    let c = Cluster::start();
    // Keys first, so there is something to migrate.
    let (ok, out, err) = run(&c, &["-t", "set", "-r", "3000", "-n", "20000", "-q"]);
    assert!(ok, "{out}\n{err}");

    // Move the first 2000 slots of the master owning slot 0 to another master. Begin the migration
    // (IMPORTING / MIGRATING, keys moved with MIGRATE) before the run: requests for those slots now
    // get ASK from the old owner.
    let from = c.owner(0);
    let to = *c.ports.iter().find(|&&p| p != from).unwrap();
    let (from_id, to_id) = (c.node_id(from), c.node_id(to));
    let slots = 0u16..1000;
    let setslot = |state: &str, id: &str| -> String {
        slots
            .clone()
            .map(|s| format!("cluster setslot {s} {state} {id}\n"))
            .collect()
    };
    let ok = |lines: Vec<String>| assert!(lines.iter().all(|l| l == "OK"), "{lines:?}");
    ok(c.batch(to, &setslot("importing", &from_id)));
    ok(c.batch(from, &setslot("migrating", &to_id)));
    let listing: String = slots
        .clone()
        .map(|s| format!("cluster getkeysinslot {s} 1000\n"))
        .collect();
    let keys = c.batch(from, &listing);
    let mut by_slot: HashMap<u16, Vec<String>> = HashMap::new();
    for k in keys.into_iter().filter(|k| !k.is_empty()) {
        by_slot
            .entry(ringbench::cluster::key_slot(k.as_bytes()))
            .or_default()
            .push(k);
    }
    let moved_keys: usize = by_slot.values().map(Vec::len).sum();
    let migrate: String = by_slot
        .values()
        .map(|keys| {
            format!(
                "migrate 127.0.0.1 {to} \"\" 0 5000 KEYS {}\n",
                keys.join(" ")
            )
        })
        .collect();
    ok(c.batch(from, &migrate));
    assert!(
        moved_keys > 100,
        "only {moved_keys} keys in the migrated slots"
    );

    let n = 60000u64;
    let mut all = c.addr();
    all.extend(
        [
            "-t",
            "set,get",
            "-r",
            "3000",
            "-n",
            &n.to_string(),
            "-P",
            "4",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringbench"))
        .args(&all)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Finish the migration while the run goes: once the new owner has served asked-for requests, give it
    // the slots for good (the old owner then answers MOVED).
    let deadline = Instant::now() + Duration::from_secs(60);
    while c.calls("asking") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        c.calls("asking") > 0,
        "no ASKING reached the importing master"
    );
    // The importing side first, as redis-cli --cluster reshard does.
    for &p in [to, from]
        .iter()
        .chain(c.ports.iter().filter(|&&p| p != to && p != from))
    {
        ok(c.batch(p, &setslot("node", &to_id)));
    }
    let finished_during_run = child.try_wait().unwrap().is_none();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ask = redirect_count(&stdout, "ASK");
    let moved = redirect_count(&stdout, "MOVED");
    assert!(ask > 0, "no ASK counted:\n{stdout}");
    if finished_during_run {
        assert!(
            moved > 0,
            "the slots changed owner during the run, yet no MOVED:\n{stdout}"
        );
    }
    // Every request completed exactly once: the run's own count, and the masters' count.
    assert_eq!(
        stdout.matches(&format!("  {n} requests completed")).count(),
        2,
        "{stdout}"
    );
    assert!(
        !stdout.contains("failed") && !stdout.contains("error"),
        "{stdout}"
    );
    assert_eq!(c.calls("set"), 20000 + n);
    assert_eq!(c.calls("get"), n);
    assert_eq!(c.owner(0), to);
}

#[test]
fn a_cluster_node_without_cluster_flag_gets_a_hint_and_exit_1() {
    let c = Cluster::start();
    let port = c.ports[0].to_string();
    let out = ringbench(&["-p", &port, "-r", "1000", "-n", "600", "-t", "set", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    // Two thirds of the keys belong to the other masters: each of those SETs is answered MOVED.
    let moved = 600 - c.calls("set");
    assert!(moved > 200, "{stdout}");
    assert!(
        stdout.contains(&format!(", {moved} error replies")),
        "{stdout}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("MOVED") && err.contains("add --cluster"),
        "{err}"
    );
}

#[test]
fn the_server_view_sums_every_master_and_the_json_lists_each() {
    let c = Cluster::start();
    let json = c.dir.join("view.json");
    let (ok, out, err) = run(
        &c,
        &[
            "-t",
            "set",
            "-r",
            "100000",
            "-n",
            "30000",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(ok && err.is_empty(), "{out}\n{err}");
    let per_master: Vec<u64> = c
        .ports
        .iter()
        .map(|&p| parse_commandstats(&c.cli(p, &["info", "commandstats"]))["set"])
        .collect();
    assert_eq!(per_master.iter().sum::<u64>(), 30000);
    assert!(
        out.contains("  server side (INFO before and after the test, summed over 3 masters):"),
        "{out}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(doc["config"]["cluster"], true);
    let server = &doc["tests"][0]["server"];
    let nodes = server["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    let mut total = 0;
    for (i, &p) in c.ports.iter().enumerate() {
        let name = format!("127.0.0.1:{p}");
        let n = nodes.iter().find(|n| n["node"] == name.as_str()).unwrap();
        let processed = n["commands_processed"].as_u64().unwrap();
        // Each master processed its SETs (and at most a few setup commands of the run's connections).
        assert!(
            processed >= per_master[i] && processed < per_master[i] + 100,
            "{name}: {processed} vs {} SETs",
            per_master[i]
        );
        assert!(
            out.contains(&format!(
                "    master {name}: commands processed: {processed}, CPU "
            )),
            "{out}"
        );
        total += processed;
    }
    assert_eq!(server["commands_processed"].as_u64().unwrap(), total);
    assert!(
        out.contains(&format!("    commands processed: {total}, CPU ")),
        "{out}"
    );
}
