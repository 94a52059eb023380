//! The mapping of memtier's options, checked without a server.

use crate::cli::memtier::MemtierFlags;
use crate::config::error::UsageError;
use crate::config::memtier::MemtierPlan;
use crate::workload::compose::Expiry;
use crate::workload::memtier_keys::Pattern;
use std::ffi::OsString;

fn plan(args: &[&str]) -> Result<MemtierPlan, UsageError> {
    let v: Vec<OsString> = std::iter::once("memtier_benchmark")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    MemtierPlan::from_flags(&MemtierFlags::parse_args(&v).unwrap(), 2)
}

#[test]
fn defaults_are_memtiers() {
    let p = plan(&[]).unwrap();
    assert_eq!(p.cli.clients, 200);
    assert_eq!(p.cli.threads, Some(2));
    assert_eq!(p.cli.requests, 2_000_000);
    assert_eq!(p.per_connection, Some(10_000));
    assert_eq!((p.keys.min, p.keys.max), (0, 10_000_000));
    let names: Vec<(&str, u64)> = p
        .commands
        .iter()
        .map(|c| (c.name.as_str(), c.ratio))
        .collect();
    assert_eq!(names, [("SET", 1), ("GET", 10)]);
    assert_eq!(p.commands[1].args[1], b"memtier-__rand_int__");
    assert_eq!((p.value.min, p.value.max), (32, 32));
    assert_eq!(p.output.percentiles, [50.0, 99.0, 99.9]);
}

#[test]
fn commands_keep_their_order_ratios_and_patterns() {
    let p = plan(&[
        "--command=SET __key__ __data__",
        "--command-ratio=2",
        "--command-key-pattern=S",
        "--command",
        "HSET h:__key__:x f __data__",
        "--key-prefix=k",
        "-t",
        "1",
        "-c",
        "3",
        "-n",
        "7",
    ])
    .unwrap();
    assert_eq!(p.cli.requests, 21);
    let c = &p.commands;
    assert_eq!((c[0].ratio, c[0].pattern), (2, Pattern::Sequential));
    assert_eq!((c[1].ratio, c[1].pattern), (1, Pattern::Random));
    assert_eq!(c[1].args[1], b"h:k__rand_int__:x");
    assert_eq!(c[1].name, "HSET");
}

#[test]
fn mistakes_and_unsupported_options_name_the_option() {
    let e = |a: &[&str]| plan(a).unwrap_err().0;
    assert!(e(&["--pipeline=0"]).contains("'--pipeline'"));
    assert!(e(&["--ratio=a:b"]).contains("'--ratio'"));
    assert!(e(&["--key-pattern=X:R"]).contains("'--key-pattern'"));
    assert!(e(&["--key-pattern=P:R"]).contains("parallel"));
    assert!(e(&["-n", "5", "--test-time=3"]).contains("mutually exclusive"));
    assert!(e(&["--protocol=memcache_text"]).contains("'--protocol'"));
    assert!(e(&["--wait-ratio=1:1"]).contains("'--wait-ratio'"));
    assert!(e(&["--command=SET k x__data__"]).contains("'--command'"));
    assert!(e(&["--command-ratio=2"]).contains("give a --command first"));
    assert!(e(&["--command=GET __key__", "--ratio=1:1"]).contains("'--ratio'"));
    assert!(e(&["--data-size=3", "--data-size-range=1-5"]).contains("--data-size-range"));
    assert!(e(&["--data-size-list=3:1,x"]).contains("'--data-size-list'"));
    assert!(e(&["--data-size-pattern=Q"]).contains("'--data-size-pattern'"));
}

#[test]
fn echo_is_memtiers_configuration() {
    // The keys and value forms of memtier_benchmark's own "configuration" (a TLS build).
    const KEYS: &str = "server|port|uri|unix socket|address family|protocol|out_file|tls|cert|\
        key|cacert|tls_skip_verify|sni|client_stats|run_count|debug|requests|rate_limit|clients|\
        threads|test_time|ratio|pipeline|data_size|data_offset|random_data|data_size_range|\
        data_size_list|data_size_pattern|expiry_range|data_import|data_verify|verify_only|\
        generate_keys|key_prefix|key_minimum|key_maximum|key_pattern|key_stddev|key_median|\
        key_zipf_exp|reconnect_interval|connection_timeout|thread_conn_start_min_jitter_micros|\
        thread_conn_start_max_jitter_micros|multi_key_get|authenticate|select-db|no-expiry|\
        wait-ratio|num-slaves|wait-timeout|print-all-runs";
    let p = plan(&[
        "-u=redis://bob:pw@10.0.0.1:7000/2",
        "--data-size-range=10-20",
        "--expiry-range=5-10",
        "--key-pattern=G:G",
        "--key-stddev=5.5",
        "--key-maximum=200",
        "--test-time=3",
    ])
    .unwrap();
    let echo = &p.output.echo;
    let keys: Vec<&str> = echo.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys.join("|"), KEYS);
    let value = |k: &str| echo.iter().find(|e| e.0 == k).unwrap().1.as_str();
    let want = [
        ("server", "\"10.0.0.1\""),
        ("port", "7000"),
        ("select-db", "2"),
        ("authenticate", "\"bob:*****\""),
        ("unix socket", "null"),
        ("out_file", "null"),
        ("requests", "0"),
        ("data_size", "0"),
        ("data_size_range", "\"10:20\""),
        ("expiry_range", "\"5:10\""),
        ("key_minimum", "          0"),
        ("key_maximum", "        200"),
        ("key_stddev", "5.500000"),
        ("key_zipf_exp", "0.000000"),
        ("wait-timeout", "\"0-0\""),
        ("tls", "\"false\""),
    ];
    for (k, v) in want {
        assert_eq!(value(k), v, "{k}");
    }
}

#[test]
fn allkeys_and_expiry() {
    let p = plan(&[
        "-n",
        "allkeys",
        "--key-minimum=1",
        "--key-maximum=1000",
        "--key-pattern=P:P",
        "-t",
        "2",
        "-c",
        "5",
    ])
    .unwrap();
    assert_eq!(p.per_connection, Some(999 / 10 + 1));
    let p = plan(&["--expiry-range=10-20", "--ratio=1:0"]).unwrap();
    assert_eq!(p.commands.len(), 1);
    assert_eq!(p.commands[0].name, "SETEX");
    assert_eq!(p.expiry, Some(Expiry { min: 10, max: 20 }));
}
