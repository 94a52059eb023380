//! The command line as a newcomer meets it: `--help` and `ringbench help` list every subcommand, a
//! mistyped subcommand is refused before anything reaches the server, redis-benchmark's trailing command
//! still is one, the completions and man page come out of the same definition, and `merge`/`compare`
//! refuse a file given twice.

use crate::common::RedisServer;
use crate::common::bench::Bench;
use crate::common::scratch::Scratch;
use std::collections::HashMap;
use std::process::Command;

const SUBCOMMANDS: [&str; 6] = [
    "capacity",
    "fleet",
    "compare",
    "merge",
    "report",
    "completions",
];

/// A usage error: exit 2, one line on stderr, nothing on stdout; returns the line.
fn usage_error(args: &[&str]) -> String {
    let out = Bench::new().args(args).output();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    err
}

/// What the server has seen: connections received, error replies and every command's calls (without
/// the INFO calls that read them).
fn seen(s: &RedisServer) -> (u64, u64, HashMap<String, u64>) {
    let stats = s.cli(&["info", "stats"]);
    let field = |name: &str| -> u64 {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{stats}"))
    };
    let (connections, errors) = (
        field("total_connections_received"),
        field("total_error_replies"),
    );
    let mut calls = s.commandstats();
    calls.remove("info");
    (connections, errors, calls)
}

#[test]
fn help_lists_every_subcommand() {
    let _turn = crate::common::lock::shared();
    for args in [&["--help"][..], &["help"]] {
        let out = Bench::new().args(args).output();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        let listed = help
            .split("Commands:")
            .nth(1)
            .unwrap_or_else(|| panic!("{args:?}: no Commands: section\n{help}"));
        for name in SUBCOMMANDS {
            assert!(
                listed.lines().any(|l| l.trim_start().starts_with(name)),
                "{args:?}: {name} not listed\n{help}"
            );
        }
        assert!(out.stderr.is_empty(), "{args:?}");
    }
    // Each subcommand has its help, with exit code 0.
    for name in SUBCOMMANDS {
        let out = Bench::new().args([name, "--help"]).output();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && help.contains(&format!("Usage: ringbench {name}")),
            "{name} --help: {help}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A subcommand's help is its own flags.
    let out = Bench::new().args(["help", "capacity"]).output();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && help.contains("--slo") && help.contains("-P <numreq>"));
    let out = Bench::new().args(["capacity", "--help"]).output();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("--step-duration")
    );
}

#[test]
fn a_mistyped_subcommand_sends_nothing() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let port = s.port.to_string();
    let before = seen(&s);
    for (args, want) in [
        (
            vec!["compre", "a.json", "b.json"],
            "did you mean `compare`?",
        ),
        (vec!["capacty", "-t", "get"], "did you mean `capacity`?"),
        (vec!["-c", "1", "mrege", "a.json"], "did you mean `merge`?"),
        (vec!["-q", "compare", "a.json"], "it comes first"),
    ] {
        let mut a = args.clone();
        a.extend(["-p", &port]);
        let e = usage_error(&a);
        assert!(e.contains(want), "{args:?}: {e}");
    }
    let after = seen(&s);
    // Only `seen`'s own two connections came in between.
    assert_eq!(after.0, before.0 + 2, "connections");
    assert_eq!((after.1, &after.2), (before.1, &before.2));
    // After `--` the word is a command, sent as redis-benchmark would (and the check above would fail).
    let out = Bench::on(&s)
        .args(["-n", "5", "-c", "1", "-q", "--", "compre", "a"])
        .output();
    assert_eq!(out.status.code(), Some(1), "error replies");
    let sent = seen(&s);
    assert!(sent.0 > after.0 + 2 && sent.1 >= after.1 + 5, "{sent:?}");
}

#[test]
fn server_commands_stay_commands() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let port = s.port.to_string();
    Bench::on(&s)
        .args(["-p", &port, "-n", "7", "-c", "1", "-q", "set", "k", "v"])
        .ok();
    Bench::on(&s)
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-n",
            "3",
            "-c",
            "1",
            "get",
            "k",
        ])
        .ok();
    // HELLO is two edits from `help`, and a server command.
    Bench::on(&s)
        .args(["-p", &port, "-n", "2", "-c", "1", "-q", "hello", "2"])
        .ok();
    assert_eq!((s.calls("set"), s.calls("get")), (7, 3));
    assert!(s.calls("hello") >= 2);
}

#[test]
fn completions_are_scripts_each_shell_reads() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("completions");
    for (shell, marker, long) in [
        ("bash", "complete -F", "--"),
        ("zsh", "#compdef ringbench", "--"),
        ("fish", "complete -c ringbench", "-l "),
    ] {
        let out = Bench::new().args(["completions", shell]).output();
        assert!(out.status.success() && out.stderr.is_empty(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(marker), "{shell}: no {marker}");
        for name in SUBCOMMANDS {
            assert!(script.contains(name), "{shell}: no {name}");
        }
        // The subcommands' own flags, as each shell spells a long flag.
        for flag in ["slo", "pods", "rps"] {
            assert!(
                script.contains(&format!("{long}{flag}")),
                "{shell}: no {flag}"
            );
        }
        if shell == "bash" {
            let path = dir.path("ringbench.bash");
            std::fs::write(&path, &script).unwrap();
            let check = Command::new("bash").args(["-n", &path]).output().unwrap();
            assert!(
                check.status.success(),
                "bash -n: {}",
                String::from_utf8_lossy(&check.stderr)
            );
        }
    }
    let e = usage_error(&["completions", "tcsh"]);
    assert!(e.contains("'tcsh'"), "{e}");
}

#[test]
fn the_man_page_renders() {
    let _turn = crate::common::lock::shared();
    let dir = Scratch::new("man");
    let out = Bench::new().arg("manpage").arg(&dir.0).output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let render = |page: &str| {
        let out = Command::new("man")
            .args(["-P", "cat", "-l", &dir.path(page)])
            .env("MANWIDTH", "100")
            .output()
            .expect("man (man-db) must be installed: scripts/test.sh installs it");
        assert!(
            out.status.success(),
            "man -l {page}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let main = render("ringbench.1");
    for want in [
        "NAME", "SYNOPSIS", "-P", "--rps", "capacity", "merge", "VERSION",
    ] {
        assert!(main.contains(want), "{want} not in\n{main}");
    }
    let capacity = render("ringbench-capacity.1");
    assert!(capacity.contains("--slo") && capacity.contains("--step-duration"));
    assert!(render("ringbench-fleet-kubernetes.1").contains("--pods"));
}

#[test]
fn merge_and_compare_refuse_a_file_twice_and_warn_on_other_setups() {
    let _turn = crate::common::lock::shared();
    let s = RedisServer::start();
    let port = s.port.to_string();
    let dir = Scratch::new("twice");
    let (a, b) = (dir.path("a.json"), dir.path("b.json"));
    let base = ["-p", &port, "-t", "get", "-n", "1000", "-q"];
    Bench::on(&s).args(base).json(&a).args(["-c", "2"]).ok();
    Bench::on(&s)
        .args(base)
        .json(&b)
        .args(["-c", "4", "-P", "4"])
        .ok();
    let link = dir.path("link.json");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let dotted = format!("{}/./a.json", dir.0.display());
    for twice in [&a, &dotted, &link] {
        let e = usage_error(&["merge", &a, twice]);
        assert!(
            e.starts_with("ringbench: merge: ") && e.contains("same file"),
            "{e}"
        );
        let e = usage_error(&["compare", &a, &b, twice]);
        assert!(
            e.starts_with("ringbench: compare: ") && e.contains("same file"),
            "{e}"
        );
    }
    // Once a side: an A/A comparison.
    let out = Bench::new().args(["compare", &a, "vs", &a]).output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    // Other -P and -c: compared, with a warning.
    let out = Bench::new().args(["compare", &a, &b]).output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning") && err.contains("-P 4 (not 1)") && err.contains("-c 4 (not 2)"),
        "{err}"
    );
    // No files: one whole line.
    let e = usage_error(&["merge"]);
    assert!(e.contains("<FILE.json>"), "{e}");
}
