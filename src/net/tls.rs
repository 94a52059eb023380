//! TLS settings from redis-benchmark's TLS flags, built on rustls with the *ring* provider (no OpenSSL), and
//! the one-line reasons a TLS connection fails.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore,
    SignatureScheme, SupportedCipherSuite,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The TLS flags as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// `--sni`: the name sent to the server and checked against its certificate (default: `-h`).
    pub sni: Option<String>,
    /// `--cacert`: a PEM file of trusted CA certificates.
    pub cacert: Option<PathBuf>,
    /// `--cacertdir`: a directory of PEM files of trusted CA certificates.
    pub cacertdir: Option<PathBuf>,
    /// `--insecure`: accept any server certificate.
    pub insecure: bool,
    /// `--cert`: the client certificate chain (PEM).
    pub cert: Option<PathBuf>,
    /// `--key`: the client certificate's private key (PEM).
    pub key: Option<PathBuf>,
    /// `--tls-ciphers`: TLS 1.2 cipher names, OpenSSL spelling, `:`-separated.
    pub ciphers: Option<String>,
    /// `--tls-ciphersuites`: TLS 1.3 suite names, `:`-separated.
    pub ciphersuites: Option<String>,
    /// `--tls-groups`: key exchange groups, `:`-separated.
    pub groups: Option<String>,
}

/// The key exchange groups `--tls-groups` names, in the user's order. OpenSSL's names and aliases are
/// accepted; groups rustls lacks (ffdhe*, secp521r1 with *ring*) are skipped, an error only when none is left.
fn kx_groups(
    list: &str,
) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, TlsFlagError> {
    let mut out: Vec<&'static dyn rustls::crypto::SupportedKxGroup> = Vec::new();
    for name in list
        .split([':', ',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let group = match name.to_ascii_lowercase().as_str() {
            "x25519" => Some(ring::kx_group::X25519),
            "prime256v1" | "p-256" | "secp256r1" => Some(ring::kx_group::SECP256R1),
            "secp384r1" | "p-384" => Some(ring::kx_group::SECP384R1),
            _ => None,
        };
        if let Some(g) = group
            && !out.iter().any(|o| o.name() == g.name())
        {
            out.push(g);
        }
    }
    if out.is_empty() {
        return Err(flag_err(format!(
            "invalid value '{list}' for '--tls-groups': no group rustls supports; supported: X25519, prime256v1 (P-256), secp384r1 (P-384)"
        )));
    }
    Ok(out)
}

/// What every TLS connection of a run uses: the shared rustls config and the name the server must prove.
#[derive(Debug, Clone)]
pub struct TlsClient {
    /// Shared by all connections (and executors): it also holds the session cache used when `-k 0` reconnects.
    pub config: Arc<ClientConfig>,
    /// The name sent as SNI (for DNS names) and checked against the server's certificate.
    pub server_name: ServerName<'static>,
    /// Whether a client certificate is configured (changes how a refusal is worded).
    pub client_cert: bool,
    /// Which checks of the server's certificate run, for the report's header.
    pub checks: String,
}

/// A TLS flag whose value cannot be used; the message names the flag and the value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct TlsFlagError(pub String);

fn flag_err(msg: impl Into<String>) -> TlsFlagError {
    TlsFlagError(msg.into())
}

/// TLS 1.2 suites of the *ring* provider under their OpenSSL names (what `--tls-ciphers` takes).
fn tls12_suites() -> [(&'static str, SupportedCipherSuite); 6] {
    use ring::cipher_suite::*;
    [
        (
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "ECDHE-ECDSA-CHACHA20-POLY1305",
            TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
        (
            "ECDHE-RSA-AES256-GCM-SHA384",
            TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "ECDHE-RSA-AES128-GCM-SHA256",
            TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "ECDHE-RSA-CHACHA20-POLY1305",
            TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
    ]
}

/// TLS 1.3 suites of the *ring* provider (OpenSSL and IANA spell them the same).
fn tls13_suites() -> [(&'static str, SupportedCipherSuite); 3] {
    use ring::cipher_suite::*;
    [
        ("TLS_AES_256_GCM_SHA384", TLS13_AES_256_GCM_SHA384),
        ("TLS_AES_128_GCM_SHA256", TLS13_AES_128_GCM_SHA256),
        (
            "TLS_CHACHA20_POLY1305_SHA256",
            TLS13_CHACHA20_POLY1305_SHA256,
        ),
    ]
}

/// A word of an OpenSSL cipher string that names a group of suites rather than one suite. Groups
/// rustls has no suite in (`RC4`, `3DES`, `DHE`, `PSK`, ...) are known and select nothing.
fn alias_matches(alias: &str, name: &str, iana: &str) -> Option<bool> {
    let has = |part: &str| name.contains(part) || iana.contains(part);
    let tls13 =
        iana.starts_with("TLS13_") || name.starts_with("TLS_AES") || name.starts_with("TLS_CHACHA");
    let a = alias.to_ascii_uppercase();
    Some(match a.as_str() {
        "ALL" | "DEFAULT" | "HIGH" | "FIPS" => true,
        "COMPLEMENTOFDEFAULT"
        | "COMPLEMENTOFALL"
        | "MEDIUM"
        | "LOW"
        | "EXPORT"
        | "EXP"
        | "NULL"
        | "ENULL"
        | "ANULL"
        | "RC4"
        | "DES"
        | "3DES"
        | "MD5"
        | "SHA1"
        | "SHA"
        | "PSK"
        | "SRP"
        | "CAMELLIA"
        | "ARIA"
        | "SEED"
        | "IDEA"
        | "CCM"
        | "CCM8"
        | "DH"
        | "DHE"
        | "EDH"
        | "KDHE"
        | "KEDH"
        | "KRSA"
        | "ADH"
        | "AECDH"
        | "KPSK"
        | "ECDHEPSK"
        | "DHEPSK"
        | "RSAPSK"
        | "SUITEB128"
        | "SUITEB192"
        | "SUITEB128ONLY"
        | "GOST"
        | "SSLV3"
        | "TLSV1"
        | "TLSV1.0"
        | "TLSV1.1" => false,
        "ECDHE" | "EECDH" | "KECDHE" | "KEECDH" | "ECDH" | "KECDH" => !tls13,
        "TLSV1.2" => !tls13,
        "TLSV1.3" => tls13,
        "AES" => has("AES"),
        "AESGCM" => has("GCM"),
        "AES128" => has("AES128") || has("AES_128"),
        "AES256" => has("AES256") || has("AES_256"),
        "CHACHA20" => has("CHACHA20"),
        "ECDSA" | "AECDSA" => has("ECDSA"),
        "RSA" | "ARSA" => has("-RSA-") || has("_RSA_"),
        "SHA256" => has("SHA256"),
        "SHA384" => has("SHA384"),
        _ => return None,
    })
}

/// Key bits of a suite's cipher, for `@STRENGTH`.
fn strength(name: &str) -> u32 {
    if name.contains("AES128") || name.contains("AES_128") {
        128
    } else {
        256
    }
}

/// Parses an OpenSSL cipher string against `table`, with OpenSSL's meaning: words separated by `:`, `,`
/// or spaces; a word is a suite name (OpenSSL or IANA spelling), a group (`DEFAULT`, `ALL`, `HIGH`,
/// `ECDHE`, `AESGCM`, `CHACHA20`, ...) or several joined by `+` (suites in all of them). `!W` removes W
/// for good, `-W` removes it (a later word may add it again), `+W` moves it to the end, `@STRENGTH`
/// sorts by key bits. Names rustls does not implement select nothing, as unknown names do in OpenSSL;
/// an error only when no suite is left.
fn select_suites(
    flag: &str,
    list: &str,
    table: &[(&'static str, SupportedCipherSuite)],
) -> Result<Vec<SupportedCipherSuite>, TlsFlagError> {
    let iana = |s: &SupportedCipherSuite| s.suite().as_str().unwrap_or("").to_string();
    // Indices into `table` the word selects, in table order; None when no part of it is known.
    let select = |word: &str| -> (Vec<usize>, bool) {
        let mut known = true;
        let picked = (0..table.len())
            .filter(|&i| {
                let (name, suite) = &table[i];
                let iana = iana(suite);
                word.split('+').filter(|p| !p.is_empty()).all(|part| {
                    if name.eq_ignore_ascii_case(part) || iana.eq_ignore_ascii_case(part) {
                        return true;
                    }
                    alias_matches(part, name, &iana).unwrap_or(false)
                })
            })
            .collect::<Vec<_>>();
        if picked.is_empty() {
            known = word
                .split('+')
                .filter(|p| !p.is_empty())
                .all(|part| alias_matches(part, "", "").is_some());
        }
        (picked, known)
    };
    let mut chosen: Vec<usize> = Vec::new();
    let mut banned: Vec<usize> = Vec::new();
    let mut unknown: Vec<&str> = Vec::new();
    for item in list
        .split([':', ',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if let Some(cmd) = item.strip_prefix('@') {
            if cmd.eq_ignore_ascii_case("STRENGTH") {
                chosen.sort_by_key(|&i| std::cmp::Reverse(strength(table[i].0)));
            } else if !cmd.to_ascii_uppercase().starts_with("SECLEVEL=") {
                unknown.push(item);
            }
            continue;
        }
        let (op, word) = match item.as_bytes()[0] {
            b'!' | b'-' | b'+' => (item.as_bytes()[0], &item[1..]),
            _ => (b' ', item),
        };
        let (picked, known) = select(word);
        if picked.is_empty() && !known {
            unknown.push(word);
        }
        match op {
            b'!' => {
                banned.extend(&picked);
                chosen.retain(|i| !picked.contains(i));
            }
            b'-' => chosen.retain(|i| !picked.contains(i)),
            b'+' => {
                let (moved, kept): (Vec<usize>, Vec<usize>) =
                    chosen.iter().partition(|i| picked.contains(i));
                chosen = kept;
                chosen.extend(moved);
            }
            _ => {
                for i in picked {
                    if !banned.contains(&i) && !chosen.contains(&i) {
                        chosen.push(i);
                    }
                }
            }
        }
    }
    if chosen.is_empty() {
        let supported: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
        let why = if unknown.is_empty() {
            String::new()
        } else {
            format!(" (not supported by rustls: {})", unknown.join(", "))
        };
        return Err(flag_err(format!(
            "invalid value '{list}' for '{flag}': selects no cipher{why}; supported: {}",
            supported.join(", ")
        )));
    }
    Ok(chosen.into_iter().map(|i| table[i].1).collect())
}

/// The cipher suites offered: the given lists, each version defaulting to all of its suites.
fn cipher_suites(opts: &TlsOptions) -> Result<Vec<SupportedCipherSuite>, TlsFlagError> {
    let all = |t: &[(&str, SupportedCipherSuite)]| t.iter().map(|(_, s)| *s).collect::<Vec<_>>();
    let mut suites = match &opts.ciphersuites {
        Some(l) => select_suites("--tls-ciphersuites", l, &tls13_suites())?,
        None => all(&tls13_suites()),
    };
    suites.extend(match &opts.ciphers {
        Some(l) => select_suites("--tls-ciphers", l, &tls12_suites())?,
        None => all(&tls12_suites()),
    });
    Ok(suites)
}

fn load_certs(flag: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsFlagError> {
    let bad = |why: String| {
        flag_err(format!(
            "invalid value for '{flag}': {}: {why}",
            path.display()
        ))
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(pem_reason(e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(pem_reason(e)))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in the file".into()));
    }
    Ok(certs)
}

fn pem_reason(e: rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        other => format!("not a valid PEM file ({other:?})"),
    }
}

/// Trusted roots: `--cacert` and `--cacertdir` when given, else the platform's store.
fn root_store(opts: &TlsOptions) -> Result<RootCertStore, TlsFlagError> {
    let mut roots = RootCertStore::empty();
    if let Some(file) = &opts.cacert {
        for c in load_certs("--cacert", file)? {
            roots.add(c).map_err(|e| {
                flag_err(format!(
                    "invalid value for '--cacert': {}: {e}",
                    file.display()
                ))
            })?;
        }
    }
    if let Some(dir) = &opts.cacertdir {
        let bad = |why: String| {
            flag_err(format!(
                "invalid value for '--cacertdir': {}: {why}",
                dir.display()
            ))
        };
        let entries = std::fs::read_dir(dir).map_err(|e| bad(e.to_string()))?;
        let mut found = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            // A CA directory may hold other files (CRLs, READMEs): files without certificates are skipped.
            if let Ok(iter) = CertificateDer::pem_file_iter(&path) {
                for c in iter.flatten() {
                    if roots.add(c).is_ok() {
                        found += 1;
                    }
                }
            }
        }
        if found == 0 {
            return Err(bad("no PEM CA certificate in the directory".into()));
        }
    }
    if opts.cacert.is_none() && opts.cacertdir.is_none() {
        let native = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(native.certs);
        if added == 0 {
            return Err(flag_err(
                "'--tls': no trusted CA certificates found on this system; give --cacert or --cacertdir (or --insecure)",
            ));
        }
    }
    Ok(roots)
}

/// Checks the TLS flags against each other, reading no file: a TLS flag needs `tls` (`--tls` or a
/// `rediss://` URI), and TLS needs a TCP server (`unix` is true for `-s`). [`build`] does the rest.
pub fn check_flags(opts: &TlsOptions, tls: bool, unix: bool) -> Result<(), TlsFlagError> {
    if !tls {
        // A TLS flag without TLS would silently benchmark a plaintext connection: say so instead.
        let given = [
            ("--sni", opts.sni.is_some()),
            ("--cacert", opts.cacert.is_some()),
            ("--cacertdir", opts.cacertdir.is_some()),
            ("--insecure", opts.insecure),
            ("--cert", opts.cert.is_some()),
            ("--key", opts.key.is_some()),
            ("--tls-ciphers", opts.ciphers.is_some()),
            ("--tls-ciphersuites", opts.ciphersuites.is_some()),
            ("--tls-groups", opts.groups.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
            return Err(flag_err(format!(
                "'{flag}' needs '--tls' (or a rediss:// URI with -u)"
            )));
        }
        return Ok(());
    }
    if unix {
        return Err(flag_err(
            "'--tls' needs a TCP server: it cannot be used with '-s'",
        ));
    }
    Ok(())
}

/// Builds the TLS settings of a run. `host` is the server's name as given with `-h` or `-u`.
pub fn build(opts: &TlsOptions, host: &str) -> Result<TlsClient, TlsFlagError> {
    let name = opts.sni.as_deref().unwrap_or(host);
    let server_name = ServerName::try_from(name.to_string()).map_err(|_| {
        let flag = if opts.sni.is_some() { "--sni" } else { "-h" };
        flag_err(format!(
            "invalid value '{name}' for '{flag}': not a DNS name or IP address usable with TLS"
        ))
    })?;
    let mut provider = CryptoProvider {
        cipher_suites: cipher_suites(opts)?,
        ..ring::default_provider()
    };
    if let Some(list) = &opts.groups {
        provider.kx_groups = kx_groups(list)?;
    }
    let provider = Arc::new(provider);
    let provider_for_keys = provider.clone();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| flag_err(format!("invalid TLS settings: {e}")))?;
    let (verifier, checks) = server_verifier(opts, provider, &server_name)?;
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&opts.cert, &opts.key) {
        (Some(cert), Some(key)) => {
            let certified = client_key(&provider_for_keys, cert, key)?;
            builder.with_client_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(
                certified,
            )))
        }
        (Some(_), None) => return Err(flag_err("'--cert' needs '--key'")),
        (None, Some(_)) => return Err(flag_err("'--key' needs '--cert'")),
        (None, None) => builder.with_no_client_auth(),
    };
    Ok(TlsClient {
        config: Arc::new(config),
        server_name,
        client_cert: opts.cert.is_some(),
        checks,
    })
}

/// How the server's certificate is checked, and the words that say so: not at all (`--insecure`), the
/// chain and the name, or the chain alone (a server reached by IP address without `--sni`).
fn server_verifier(
    opts: &TlsOptions,
    provider: Arc<CryptoProvider>,
    server_name: &ServerName<'static>,
) -> Result<(Arc<dyn ServerCertVerifier>, String), TlsFlagError> {
    // The name is checked when the user named the server: by host name, or with --sni. An IP literal
    // is not checked (as redis-benchmark does not): test certificates often carry a CN and no
    // subjectAltName, and are used at 127.0.0.1.
    let check_name = opts.sni.is_some() || matches!(server_name, ServerName::DnsName(_));
    let trust = if opts.cacert.is_some() || opts.cacertdir.is_some() {
        let mut given = Vec::new();
        if opts.cacert.is_some() {
            given.push("--cacert");
        }
        if opts.cacertdir.is_some() {
            given.push("--cacertdir");
        }
        given.join(" and ")
    } else {
        "the system's CAs".to_string()
    };
    if opts.insecure {
        return Ok((
            Arc::new(AcceptAnyServerCert { provider }),
            "certificate not verified (--insecure)".to_string(),
        ));
    }
    let roots = Arc::new(root_store(opts)?);
    let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
        .build()
        .map_err(|e| flag_err(format!("invalid TLS settings: {e}")))?;
    if check_name {
        Ok((
            webpki,
            format!(
                "chain verified against {trust}, name '{}' checked",
                name_text(server_name)
            ),
        ))
    } else {
        Ok((
            Arc::new(ChainOnly { inner: webpki }),
            format!(
                "chain verified against {trust}, name not checked (IP address {}; give --sni to check one)",
                name_text(server_name)
            ),
        ))
    }
}

/// The client certificate chain of `--cert` with the private key of `--key`, loaded with `provider`'s
/// key loader; refused when the key is provably not the certificate's.
fn client_key(
    provider: &CryptoProvider,
    cert: &Path,
    key: &Path,
) -> Result<rustls::sign::CertifiedKey, TlsFlagError> {
    let chain = load_certs("--cert", cert)?;
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        flag_err(format!(
            "invalid value for '--key': {}: {}",
            key.display(),
            match e {
                rustls::pki_types::pem::Error::NoItemsFound =>
                    "no PEM private key in the file".to_string(),
                other => pem_reason(other),
            }
        ))
    })?;
    let signing_key = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| flag_err(format!("invalid value for '--key': {}: {e}", key.display())))?;
    let certified = rustls::sign::CertifiedKey::new(chain, signing_key);
    // Only a proven mismatch is refused: rustls cannot parse X.509 v1 certificates (which
    // `openssl x509 -req` makes by default) to compare keys, yet servers accept them.
    if let Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) =
        certified.keys_match()
    {
        return Err(flag_err(format!(
            "invalid value for '--key': {} is not the key of the certificate {}",
            key.display(),
            cert.display()
        )));
    }
    Ok(certified)
}

/// Verifies the chain to a trusted root (dates, signatures, usage) but not the name: for a server reached
/// by IP address without `--sni`. webpki checks the chain before the name, so a name mismatch reported
/// here means the chain passed.
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `--insecure`: any certificate is accepted; handshake signatures are still checked, so the session keys
/// belong to whoever holds the presented certificate's key.
#[derive(Debug)]
struct AcceptAnyServerCert {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The rustls error inside an I/O error, if the I/O error came from TLS.
pub fn rustls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

/// A TLS failure in words a user can act on. `tls` gives the server name and whether a client certificate
/// was configured, when known.
pub fn describe(e: &rustls::Error, tls: Option<&TlsClient>) -> String {
    let name = tls.map(|t| name_text(&t.server_name));
    let client_cert = tls.is_some_and(|t| t.client_cert);
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => "the server's certificate is not signed by a trusted CA \
                 (give its CA with --cacert or --cacertdir, or skip the check with --insecure)"
                .into(),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!(
                    "the server's certificate is not valid for the name '{}' (set the expected name with --sni)",
                    name.unwrap_or_default()
                )
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired".into()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet".into()
            }
            other => format!("the server's certificate was rejected: {other:?}"),
        },
        rustls::Error::AlertReceived(alert) => match alert {
            AlertDescription::CertificateRequired => {
                "the server requires a client certificate (give --cert and --key)".into()
            }
            AlertDescription::HandshakeFailure if !client_cert => {
                "the server refused the handshake (alert: handshake failure); it may require a client \
                 certificate (--cert and --key) or ciphers not offered (--tls-ciphers, --tls-ciphersuites)"
                    .into()
            }
            AlertDescription::DecryptError if client_cert => {
                "the server could not verify the client certificate's signature (is --key the key of --cert?)"
                    .into()
            }
            AlertDescription::CertificateExpired => {
                "the server rejected the client certificate: it has expired".into()
            }
            AlertDescription::UnknownCA
            | AlertDescription::BadCertificate
            | AlertDescription::CertificateUnknown
            | AlertDescription::CertificateRevoked
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::AccessDenied
                if client_cert =>
            {
                format!("the server rejected the client certificate (alert: {alert:?})")
            }
            other => format!("the server ended the handshake (alert: {other:?})"),
        },
        rustls::Error::PeerIncompatible(p) => {
            format!("the server and ringbench share no TLS version or cipher ({p:?})")
        }
        other => other.to_string(),
    }
}

fn name_text(n: &ServerName<'_>) -> String {
    match n {
        ServerName::DnsName(d) => d.as_ref().to_string(),
        ServerName::IpAddress(ip) => std::net::IpAddr::from(*ip).to_string(),
        _ => "?".into(),
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
