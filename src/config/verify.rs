//! `--data-verify` and `--verify-only` checked against the other flags: what they cannot be combined
//! with, each a one-line usage error naming the flag.

use crate::cli::Cli;
use crate::config::error::{UsageError, usage};
use crate::workload::compose::ValueSpec;
use crate::workload::verify::VerifySpec;

/// Keys are `key:` and 12 digits: a larger keyspace would wrap around onto itself.
const MAX_KEYSPACE: u64 = 1_000_000_000_000;

/// The verification asked for (`None`: neither flag), with `keyspace` (`-r`) and `value` (`-d`,
/// `--random-data`) already validated.
pub fn verify_spec(
    cli: &Cli,
    keyspace: Option<u64>,
    value: ValueSpec,
) -> Result<Option<VerifySpec>, UsageError> {
    if !cli.data_verify && !cli.verify_only {
        return Ok(None);
    }
    let flag = if cli.verify_only {
        "--verify-only"
    } else {
        "--data-verify"
    };
    let Some(r) = keyspace else {
        return Err(usage(format!(
            "'{flag}' needs '-r <keyspacelen>': it checks every key of the keyspace"
        )));
    };
    if r > MAX_KEYSPACE {
        return Err(usage(format!(
            "invalid value '{r}' for '-r': {flag} checks keys key:000000000000 to key:999999999999, at most {MAX_KEYSPACE}"
        )));
    }
    if cli.requests_given && cli.requests as u64 != r {
        return Err(usage(format!(
            "invalid value '{}' for '-n': {flag} sends one request per key of '-r {r}' (leave -n out)",
            cli.requests
        )));
    }
    let conflict = |other: &str| Err(usage(format!("'{flag}' cannot be combined with {other}")));
    if cli.tests.is_some() {
        return conflict("-t: it runs its own tests (SET, then GET of every key)");
    }
    if cli.mix.is_some() {
        return conflict("--mix: it runs its own tests (SET, then GET of every key)");
    }
    if !cli.command.is_empty() {
        return conflict("a command: it runs its own tests (SET, then GET of every key)");
    }
    if cli.cluster {
        return conflict("--cluster yet: it is not supported in cluster mode");
    }
    if cli.rps.is_some() {
        return conflict("--rps");
    }
    if cli.duration.is_some() {
        return conflict("--duration: each pass covers the keyspace once");
    }
    if cli.warmup.is_some() {
        return conflict("--warmup");
    }
    if cli.loop_forever {
        return conflict("-l");
    }
    if cli.idle {
        return conflict("-I");
    }
    if cli.enable_tracking {
        return conflict("--enable-tracking: its push messages are not GET replies");
    }
    if cli.distribution_given && cli.distribution != "sequential" {
        return conflict(&format!(
            "'--distribution {}': each pass walks the keyspace in order",
            cli.distribution
        ));
    }
    Ok(Some(VerifySpec {
        value,
        seed: cli.seed.unwrap_or(0),
        write: !cli.verify_only,
    }))
}
