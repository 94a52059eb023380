//! Tests of `net/tls.rs`: the TLS settings, certificate checks and the wrapped stream.

use super::*;

#[test]
fn cipher_names_in_both_spellings_keep_their_order() {
    let s = select_suites(
        "--tls-ciphers",
        "ECDHE-RSA-CHACHA20-POLY1305:TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        &tls12_suites(),
    )
    .unwrap();
    assert_eq!(
        s,
        [
            ring::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
            ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        ]
    );
}

#[test]
fn unsupported_cipher_names_are_named_when_nothing_is_left() {
    let e = select_suites(
        "--tls-ciphers",
        "AES128-SHA:DHE-RSA-AES256-GCM-SHA384",
        &tls12_suites(),
    )
    .unwrap_err();
    assert!(
        e.0.contains("'--tls-ciphers'")
            && e.0.contains("selects no cipher")
            && e.0.contains("AES128-SHA, DHE-RSA-AES256-GCM-SHA384"),
        "{e}"
    );
    let e = select_suites(
        "--tls-ciphersuites",
        "TLS_AES_128_CCM_SHA256",
        &tls13_suites(),
    )
    .unwrap_err();
    assert!(e.0.contains("TLS_AES_128_CCM_SHA256"), "{e}");
    // Next to a usable suite, a name rustls lacks is skipped (OpenSSL skips names it lacks too).
    let s = select_suites(
        "--tls-ciphers",
        "ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA",
        &tls12_suites(),
    )
    .unwrap();
    assert_eq!(
        s,
        [ring::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
    );
}

fn names(list: &str) -> Vec<&'static str> {
    let table = tls12_suites();
    select_suites("--tls-ciphers", list, &table)
        .unwrap()
        .iter()
        .map(|s| table.iter().find(|(_, t)| t == s).unwrap().0)
        .collect()
}

#[test]
fn groups_by_openssl_names() {
    let g = kx_groups("prime256v1:X25519:ffdhe2048").unwrap();
    let names: Vec<_> = g.iter().map(|g| g.name()).collect();
    assert_eq!(
        names,
        [rustls::NamedGroup::secp256r1, rustls::NamedGroup::X25519]
    );
    assert!(
        kx_groups("ffdhe2048")
            .unwrap_err()
            .0
            .contains("'--tls-groups'")
    );
}

#[test]
fn openssl_cipher_string_operators() {
    // DEFAULT minus a suite rustls never had: everything.
    assert_eq!(names("DEFAULT:-AES128-SHA256").len(), 6);
    // `-` removes, a later word adds back at the end; `!` removes for good.
    assert_eq!(
        names("ALL:-ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256").last(),
        Some(&"ECDHE-RSA-AES128-GCM-SHA256")
    );
    assert!(
        !names("ALL:!ECDSA:ECDHE-ECDSA-AES128-GCM-SHA256")
            .iter()
            .any(|n| n.contains("ECDSA"))
    );
    // `A+B` is the suites in both; `+W` moves W to the end; spaces and commas separate too.
    assert_eq!(
        names("ECDHE+AESGCM+RSA"),
        ["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"]
    );
    let moved = names("HIGH, +CHACHA20 !ECDSA");
    assert_eq!(moved.len(), 3);
    assert_eq!(moved[2], "ECDHE-RSA-CHACHA20-POLY1305");
    // @STRENGTH puts 256-bit ciphers first, keeping the order among equals.
    let strong = names("ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:@STRENGTH");
    assert_eq!(
        strong,
        ["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"]
    );
    assert!(select_suites("--tls-ciphers", "HIGH:!HIGH", &tls12_suites()).is_err());
    assert!(select_suites("--tls-ciphers", "RC4:3DES", &tls12_suites()).is_err());
}

#[test]
fn cert_needs_key() {
    let opts = TlsOptions {
        cert: Some("c.pem".into()),
        insecure: true,
        ..Default::default()
    };
    assert_eq!(
        build(&opts, "localhost").unwrap_err().0,
        "'--cert' needs '--key'"
    );
}

#[test]
fn missing_ca_file_names_the_flag() {
    let opts = TlsOptions {
        cacert: Some("/nonexistent/ca.pem".into()),
        ..Default::default()
    };
    let e = build(&opts, "localhost").unwrap_err();
    assert!(
        e.0.starts_with("invalid value for '--cacert': /nonexistent/ca.pem"),
        "{e}"
    );
}
