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
    if !cli.mix_command.is_empty() {
        return conflict("--command: it runs its own tests (SET, then GET of every key)");
    }
    if cli.replay.is_some() {
        return conflict("--replay");
    }
    if cli.expiry_range.is_some() {
        return conflict("--expiry-range: keys would expire before the read pass");
    }
    if !cli.command.is_empty() {
        return conflict("a command: it runs its own tests (SET, then GET of every key)");
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
    if cli.run_count > 1 {
        return conflict("--run-count: each pass covers the keyspace once");
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

#[cfg(test)]
mod tests {
    use crate::cli::Cli;
    use crate::config::{Env, Settings};
    use crate::workload::keys::Distribution;

    fn parse(args: &[&str]) -> Result<Settings, String> {
        let cli = Cli::parse_args(std::iter::once("ringbench").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        let env = Env {
            now: std::time::Duration::from_secs(1_700_000_000),
            ..Env::default()
        };
        Settings::parse(&cli, &env).map_err(|e| e.0)
    }

    #[test]
    fn each_pass_is_one_request_per_key_in_order() {
        let s = parse(&["--data-verify", "-r", "500"]).unwrap();
        assert_eq!(s.run.load.requests, 500);
        assert_eq!(
            s.run.pace.shape.distribution,
            Distribution::Sequential { part: 0, parts: 1 }
        );
        let v = s.run.load.verify.unwrap();
        assert!(v.write);
        assert_eq!(v.seed, 0);
        let s = parse(&["--verify-only", "-r", "500", "-n", "500", "--seed", "4"]).unwrap();
        let v = s.run.load.verify.unwrap();
        assert!(!v.write);
        assert_eq!(v.seed, 4);
        // A shard's share of the keyspace, and its own slice of the keys.
        let s = parse(&["--data-verify", "-r", "501", "--shard", "1/2"]).unwrap();
        assert_eq!(s.run.load.requests, 250);
        assert_eq!(
            s.run.pace.shape.distribution,
            Distribution::Sequential { part: 1, parts: 2 }
        );
        assert_eq!(s.run.load.verify.unwrap().seed, 0);
        assert!(parse(&["-r", "5"]).unwrap().run.load.verify.is_none());
    }

    #[test]
    fn what_it_cannot_be_combined_with_is_one_line_naming_the_flag() {
        let e = |args: &[&str]| parse(args).unwrap_err();
        assert_eq!(
            e(&["--data-verify"]),
            "'--data-verify' needs '-r <keyspacelen>': it checks every key of the keyspace"
        );
        assert!(e(&["--verify-only"]).starts_with("'--verify-only' needs '-r"));
        assert_eq!(
            e(&["--data-verify", "-r", "10", "-n", "20"]),
            "invalid value '20' for '-n': --data-verify sends one request per key of '-r 10' (leave -n out)"
        );
        for (flag, args) in [
            ("-t", &["-t", "get"][..]),
            ("--mix", &["--mix", "get:1"]),
            ("--command", &["--command", "GET __key__"]),
            ("--expiry-range", &["--expiry-range", "10-20"]),
            ("a command", &["get", "k"]),
            ("--rps", &["--rps", "100"]),
            ("--duration", &["--duration", "1"]),
            ("--warmup", &["--warmup", "1"]),
            ("-l", &["-l"]),
            ("--run-count", &["--run-count", "3"]),
            ("-I", &["-I"]),
            ("--enable-tracking", &["--enable-tracking"]),
            ("'--distribution zipf'", &["--distribution", "zipf"]),
        ] {
            let mut all = vec!["--data-verify", "-r", "10"];
            all.extend_from_slice(args);
            let msg = e(&all);
            assert!(
                msg.starts_with(&format!("'--data-verify' cannot be combined with {flag}")),
                "{args:?}: {msg}"
            );
            assert!(!msg.contains('\n'));
        }
        assert!(
            e(&["--data-verify", "-r", "1000000000001"])
                .starts_with("invalid value '1000000000001' for '-r'")
        );
        assert!(parse(&["--data-verify", "-r", "10", "--sequential"]).is_ok());
    }
}
