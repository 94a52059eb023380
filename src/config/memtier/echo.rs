//! The configuration memtier_benchmark echoes at the top of its `--json-out-file` document: its keys, in
//! its order, with its value forms (the password masked).

use crate::cli::memtier::MemtierFlags;
use crate::config::memtier::values::DATA_SIZE;
use crate::workload::memtier_keys::KeySpace;

/// What a password is written as.
const MASK: &str = "*****";

/// The "configuration" memtier's JSON echoes: its keys in its order (a TLS build's), each value as
/// the JSON text memtier writes (`%u`, `%11u` key bounds, `%f` floats, quoted strings, `null` for a
/// string option not given), after its defaults and a `--uri`'s host, port, database, credentials
/// and TLS. Two deliberate differences: strings are escaped (memtier writes a `"` as is, breaking its
/// JSON) and the key bounds are never cut to 32 bits. `-4`/`-6` and `--clients-start` are refused
/// before this, so the address family is "Unspecified" and the staircase's keys never appear.
pub(super) fn echo(
    f: &MemtierFlags,
    threads: u64,
    clients: u64,
    keys: &KeySpace,
    per_connection: Option<u64>,
) -> Vec<(String, String)> {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let opt = |v: &Option<String>| v.as_deref().map_or("null".to_string(), q);
    let yes = |b: bool| q(if b { "true" } else { "false" });
    let num = |v: &Option<String>, d: u64| {
        let n = v.as_deref().and_then(|s| s.parse::<u64>().ok());
        n.unwrap_or(d).to_string()
    };
    let float = |v: &Option<String>| {
        let x = v.as_deref().and_then(|s| s.parse::<f64>().ok());
        format!("{:.6}", x.unwrap_or(0.0))
    };
    // memtier's "A:B" ratios and "MIN-MAX" ranges, printed with `out` between the numbers.
    let pair = |v: &Option<String>, sep: char, out: char| {
        let (a, b) = v
            .as_deref()
            .and_then(|s| s.split_once(sep))
            .unwrap_or(("0", "0"));
        let n = |x: &str| x.parse::<u64>().unwrap_or(0);
        q(&format!("{}{out}{}", n(a), n(b)))
    };
    let [server, port, authenticate, select_db, tls] = echo_target(f);
    let sized = f.data_size_range.is_some() || f.data_size_list.is_some();
    let ratio = pair(&f.ratio.clone().or(Some("1:10".into())), ':', ':');
    let out = vec![
        ("server", server),
        ("port", port),
        ("uri", q(f.uri.as_deref().unwrap_or(""))),
        ("unix socket", opt(&f.unix_socket)),
        ("address family", q("Unspecified")),
        ("protocol", q(f.protocol.as_deref().unwrap_or("redis"))),
        ("out_file", opt(&f.out_file)),
        ("tls", tls),
        ("cert", opt(&f.cert)),
        ("key", opt(&f.key)),
        ("cacert", opt(&f.cacert)),
        ("tls_skip_verify", yes(f.tls_skip_verify)),
        ("sni", opt(&f.sni)),
        ("client_stats", opt(&f.client_stats)),
        ("run_count", num(&f.run_count, 1)),
        ("debug", f.debug.to_string()),
        ("requests", per_connection.unwrap_or(0).to_string()),
        ("rate_limit", num(&f.rate_limiting, 0)),
        ("clients", clients.to_string()),
        ("threads", threads.to_string()),
        ("test_time", num(&f.test_time, 0)),
        ("ratio", ratio),
        ("pipeline", num(&f.pipeline, 1)),
        (
            "data_size",
            num(&f.data_size, if sized { 0 } else { DATA_SIZE as u64 }),
        ),
        ("data_offset", num(&f.data_offset, 0)),
        ("random_data", yes(f.random_data)),
        ("data_size_range", pair(&f.data_size_range, '-', ':')),
        (
            "data_size_list",
            q(f.data_size_list.as_deref().unwrap_or("")),
        ),
        (
            "data_size_pattern",
            q(f.data_size_pattern.as_deref().unwrap_or("R")),
        ),
        ("expiry_range", pair(&f.expiry_range, '-', ':')),
        ("data_import", opt(&f.data_import)),
        ("data_verify", yes(f.data_verify)),
        ("verify_only", yes(f.verify_only)),
        ("generate_keys", yes(f.generate_keys)),
        (
            "key_prefix",
            q(f.key_prefix.as_deref().unwrap_or("memtier-")),
        ),
        ("key_minimum", format!("{:>11}", keys.min)),
        ("key_maximum", format!("{:>11}", keys.max)),
        ("key_pattern", q(f.key_pattern.as_deref().unwrap_or("R:R"))),
        ("key_stddev", float(&f.key_stddev)),
        ("key_median", float(&f.key_median)),
        ("key_zipf_exp", float(&f.key_zipf_exp)),
        ("reconnect_interval", num(&f.reconnect_interval, 0)),
        ("connection_timeout", num(&f.connection_timeout, 0)),
        ("thread_conn_start_min_jitter_micros", num(&f.jitter_min, 0)),
        ("thread_conn_start_max_jitter_micros", num(&f.jitter_max, 0)),
        ("multi_key_get", num(&f.multi_key_get, 0)),
        ("authenticate", authenticate),
        ("select-db", select_db),
        ("no-expiry", yes(f.no_expiry)),
        ("wait-ratio", pair(&f.wait_ratio, ':', ':')),
        ("num-slaves", pair(&f.num_slaves, '-', ':')),
        ("wait-timeout", pair(&f.wait_timeout, '-', '-')),
        ("print-all-runs", yes(f.print_all_runs)),
    ];
    out.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// memtier's echo of the server and credentials as JSON text: "server", "port", "authenticate",
/// "select-db" and "tls", a `--uri`'s parts overriding the options as memtier's `parse_uri` does.
fn echo_target(f: &MemtierFlags) -> [String; 5] {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let uri = f
        .uri
        .as_deref()
        .and_then(|u| crate::config::settings::parse_uri(u).ok());
    let uri = uri.unwrap_or_default();
    let server = match uri.host.as_deref().or(f.server.as_deref()) {
        Some(h) => q(h),
        None if f.unix_socket.is_none() => q("localhost"),
        None => "null".into(),
    };
    let given_port = f.port.as_deref().and_then(|p| p.parse::<u16>().ok());
    let default_port = if f.unix_socket.is_none() { 6379 } else { 0 };
    let port = uri.port.or(given_port).unwrap_or(default_port);
    // A password is never written out: memtier writes it as given, ringbench masks it.
    let authenticate = match (&uri.user, &uri.password) {
        (Some(user), Some(_)) => format!("{user}:{MASK}"),
        (None, Some(_)) => MASK.to_string(),
        _ => match f.authenticate.as_deref() {
            None | Some("") => String::new(),
            Some(a) => match a.split_once(':') {
                Some((user, _)) if !user.is_empty() => format!("{user}:{MASK}"),
                _ => MASK.to_string(),
            },
        },
    };
    let given_db = f.select_db.as_deref().and_then(|d| d.parse::<u32>().ok());
    let select_db = uri.db.or(given_db).unwrap_or(0);
    let tls = if f.tls || uri.tls { "true" } else { "false" };
    [
        server,
        port.to_string(),
        q(&authenticate),
        select_db.to_string(),
        q(tls),
    ]
}
