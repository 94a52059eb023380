//! The client's self-report and `--cpus`, checked against a real redis-server and the kernel's view of the threads.

use crate::common::bench::Bench;
use crate::common::*;

#[test]
fn normal_report_shows_the_clients_cost_per_executor() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    s.reset();
    let out = Bench::on(&s)
        .args([
            "-t",
            "set",
            "-n",
            "40000",
            "-c",
            "10",
            "-P",
            "4",
            "--threads",
            "2",
        ])
        .ok();
    assert_eq!(s.calls("set"), 40000);
    let line = out
        .lines()
        .find(|l| l.starts_with("  client: "))
        .unwrap_or_else(|| panic!("no client line in\n{out}"));
    let ns: f64 = line
        .trim_start_matches("  client: ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ns > 0.0, "{line}");
    let busy = line.split("executor busy: ").nth(1).unwrap();
    let busy = busy.split(';').next().unwrap();
    let shares: Vec<&str> = busy.split(", ").collect();
    assert_eq!(shares.len(), 2, "{line}");
    for share in shares {
        let pct: u32 = share.trim_end_matches('%').parse().unwrap();
        assert!(pct <= 100, "{line}");
    }
}

#[test]
fn quiet_and_csv_have_no_cost_line() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    for mode in ["-q", "--csv"] {
        let out = Bench::on(&s).args(["-t", "ping", "-n", "1000", mode]).ok();
        assert!(!out.contains("client:"), "{mode}: {out}");
    }
}

#[test]
fn cpus_pins_executors_in_the_order_given() {
    let _turn = crate::common::lock::shared();
    let cores = usable_cores();
    let want: Vec<usize> = cores.iter().rev().take(2).copied().collect();
    let list = want
        .iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let threads = want.len().to_string();
    let s = RedisServer::start();
    let mut child = Bench::on(&s)
        .args([
            "-t",
            "ping",
            "-l",
            "-q",
            "-c",
            "4",
            "--threads",
            &threads,
            "--cpus",
            &list,
        ])
        .spawn();
    let found = executor_cpus(&child, want.len());
    child.kill().unwrap();
    child.wait().unwrap();
    let expect: Vec<(usize, String)> = want
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c.to_string()))
        .collect();
    assert_eq!(found, expect);
}

#[test]
fn cpus_mistakes_are_usage_errors() {
    let _turn = crate::common::lock::shared();
    let beyond = (usable_cores().iter().max().unwrap() + 1).to_string();
    for list in [beyond.as_str(), "a,b", "3-1", "0,0"] {
        let out = Bench::port(1).args(["--cpus", list, "-q"]).output();
        assert_eq!(out.status.code(), Some(2), "--cpus {list}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("'{list}' for '--cpus'")), "{err}");
    }
}
