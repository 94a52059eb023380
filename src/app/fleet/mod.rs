//! `ringbench fleet kubernetes [flags of a run] --pods N`: prints a Kubernetes Indexed Job whose N pods run
//! one shard each of the run the flags describe, all starting at one moment, and the commands to run it and
//! to collect the merged result.
//!
//! Nothing here talks to a cluster: the manifest goes to `kubectl apply`, and the pods' result documents
//! (`--json -`, so each pod's log is its result) come back through `kubectl logs ... | ringbench merge -`.
//! The manifest is built as a JSON value (serde_json) and written as JSON, which YAML reads as the same
//! document, under comment lines with those commands.

use crate::cli::Cli;
use crate::cli::fleet::JobFlags;
use crate::config::shard::MAX_SHARDS;
use crate::config::{Config, ConfigError, Env, Settings, UsageError};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

/// Default seconds between rendering the manifest and the pods' common start.
pub const DEFAULT_LEAD: f64 = 60.0;

/// Where kubelet finds deploy/seccomp/ringbench-io-uring.json, relative to its seccomp directory
/// (`/var/lib/kubelet/seccomp` by default).
pub const SECCOMP_PROFILE: &str = "profiles/ringbench-io-uring.json";

/// The pods' seccomp profile (`--seccomp`). Kubernetes' RuntimeDefault commonly refuses io_uring.
#[derive(Debug, Clone, PartialEq)]
pub enum Seccomp {
    /// A profile file on every node (default: deploy/seccomp's, RuntimeDefault plus io_uring).
    Localhost(String),
    /// No seccomp filter at all.
    Unconfined,
    /// The runtime's default, for runtimes whose default allows io_uring.
    RuntimeDefault,
}

impl Seccomp {
    /// `localhost[:PATH]`, `unconfined` or `runtime-default`; `None` is `localhost`.
    pub fn parse(v: Option<&str>) -> Result<Seccomp, UsageError> {
        match v {
            None | Some("localhost") => Ok(Seccomp::Localhost(SECCOMP_PROFILE.to_string())),
            Some("unconfined") => Ok(Seccomp::Unconfined),
            Some("runtime-default") => Ok(Seccomp::RuntimeDefault),
            Some(o) => match o.strip_prefix("localhost:") {
                Some(p)
                    if !p.is_empty()
                        && !p.starts_with('/')
                        && !p.split('/').any(|c| c == "..")
                        && !p.chars().any(char::is_whitespace) =>
                {
                    Ok(Seccomp::Localhost(p.to_string()))
                }
                _ => Err(usage(format!(
                    "invalid value '{o}' for '--seccomp': localhost[:PATH] (PATH relative to kubelet's seccomp directory), unconfined or runtime-default"
                ))),
            },
        }
    }

    /// The container's `seccompProfile`.
    fn profile(&self) -> Value {
        match self {
            Seccomp::Localhost(path) => json!({ "type": "Localhost", "localhostProfile": path }),
            Seccomp::Unconfined => json!({ "type": "Unconfined" }),
            Seccomp::RuntimeDefault => json!({ "type": "RuntimeDefault" }),
        }
    }
}

/// What `fleet kubernetes` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub pods: u64,
    pub image: String,
    pub name: String,
    pub namespace: Option<String>,
    pub memory: String,
    /// `--auth-secret NAME[:KEY]`: the password comes from this Secret's key, as `REDISCLI_AUTH`.
    pub auth_secret: Option<(String, String)>,
    /// `--seccomp`: the pods' seccomp profile.
    pub seccomp: Seccomp,
    /// Cores each pod asks for: its executors (`--threads`, 1 without).
    pub cpus: u64,
    /// The common start, Unix seconds.
    pub start_at: f64,
    /// The run's flags as given (without the fleet's own).
    pub run_args: Vec<String>,
}

fn usage(msg: impl Into<String>) -> UsageError {
    UsageError(msg.into())
}

/// Runs `ringbench fleet kubernetes`: `flags` are the Job's, `run_args` the run's flags as written.
/// `err` is where its error lines (and the run's warnings) go.
pub fn run(
    flags: &JobFlags,
    run_args: Vec<String>,
    out: &mut dyn Write,
    err: &mut dyn Write,
    now: f64,
) -> ExitCode {
    match JobSpec::from_flags(flags, run_args, now, err) {
        Ok(spec) => match out
            .write_all(spec.render().as_bytes())
            .and_then(|_| out.flush())
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                let _ = writeln!(err, "ringbench fleet: could not write the manifest: {e}");
                ExitCode::from(1)
            }
        },
        Err(e) => {
            let _ = writeln!(err, "ringbench fleet: {e}");
            ExitCode::from(2)
        }
    }
}

/// True for a DNS-1123 label (what a Job's name must be), leaving room for the pods' suffixes.
fn dns_label(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A Kubernetes quantity such as `512Mi`, `2G` or `1000000`.
fn quantity(s: &str) -> bool {
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &s[digits.len()..];
    !digits.is_empty()
        && digits.parse::<f64>().is_ok_and(|v| v > 0.0)
        && ["", "Ki", "Mi", "Gi", "Ti", "k", "M", "G", "T"].contains(&suffix)
}

impl JobSpec {
    /// Checks the Job's flags, and the run's as shard N-1 of N would (its warnings go to `err`).
    pub fn from_flags(
        flags: &JobFlags,
        run_args: Vec<String>,
        now: f64,
        err: &mut dyn Write,
    ) -> Result<JobSpec, UsageError> {
        let JobFlags {
            pods,
            image,
            lead,
            name,
            namespace,
            memory,
            auth_secret,
            seccomp,
        } = flags.clone();
        let pods_s =
            pods.ok_or_else(|| usage("'--pods N' is required: how many pods share the run"))?;
        let pods: u64 = pods_s
            .parse()
            .ok()
            .filter(|p| (1..=MAX_SHARDS).contains(p))
            .ok_or_else(|| {
                usage(format!(
                    "invalid value '{pods_s}' for '--pods': must be a number from 1 to {MAX_SHARDS}"
                ))
            })?;
        let lead = match lead {
            None => DEFAULT_LEAD,
            Some(l) => l
                .parse::<f64>()
                .ok()
                .filter(|l| l.is_finite() && *l >= 1.0 && *l <= crate::config::start_at::MAX_AHEAD)
                .ok_or_else(|| {
                    usage(format!(
                        "invalid value '{l}' for '--lead': must be a number of seconds from 1 to {}",
                        crate::config::start_at::MAX_AHEAD
                    ))
                })?,
        };
        // Milliseconds are plenty, and keep the value short and exact in text.
        let start_at = ((now + lead) * 1000.0).round() / 1000.0;
        let name = name.unwrap_or_else(|| format!("ringbench-{}", start_at as u64));
        // Pods are named NAME-INDEX-RANDOM and labelled job-name=NAME (at most 63 characters).
        if !dns_label(&name, 52) {
            return Err(usage(format!(
                "invalid value '{name}' for '--name': lower-case letters, digits and '-', at most 52 characters, starting and ending with a letter or digit"
            )));
        }
        if let Some(ns) = &namespace
            && !dns_label(ns, 63)
        {
            return Err(usage(format!(
                "invalid value '{ns}' for '--namespace': lower-case letters, digits and '-', at most 63 characters"
            )));
        }
        let auth_secret = match auth_secret {
            None => None,
            Some(v) => {
                let (n, k) = v.split_once(':').unwrap_or((v.as_str(), "password"));
                let key_ok = !k.is_empty()
                    && k.len() <= 253
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
                if !dns_label(n, 253) || !key_ok {
                    return Err(usage(format!(
                        "invalid value '{v}' for '--auth-secret': NAME[:KEY], a Secret's name and one of its keys"
                    )));
                }
                Some((n.to_string(), k.to_string()))
            }
        };
        let memory = memory.unwrap_or_else(|| "512Mi".into());
        if !quantity(&memory) {
            return Err(usage(format!(
                "invalid value '{memory}' for '--memory': a Kubernetes quantity such as 512Mi or 2Gi"
            )));
        }
        let image = image.unwrap_or_else(|| format!("ringbench:{}", env!("CARGO_PKG_VERSION")));
        if image.is_empty() || image.chars().any(|c| c.is_whitespace()) {
            return Err(usage(format!(
                "invalid value '{image}' for '--image': an image reference without spaces"
            )));
        }
        let seccomp = Seccomp::parse(seccomp.as_deref())?;
        let cpus = check_run(&run_args, pods, auth_secret.is_some(), err)?;
        Ok(JobSpec {
            pods,
            image,
            name,
            namespace,
            memory,
            auth_secret,
            seccomp,
            cpus,
            start_at,
            run_args,
        })
    }

    /// The pods' arguments to ringbench: the fleet's flags first (a `--` in the run's flags ends options).
    pub fn pod_args(&self) -> Vec<String> {
        let mut a = vec![
            "--shards".to_string(),
            self.pods.to_string(),
            "--start-at".to_string(),
            format!("{:.3}", self.start_at),
            "--json".to_string(),
            "-".to_string(),
        ];
        a.extend(self.run_args.iter().cloned());
        a
    }

    /// The manifest, with the commands to run and collect it as comments on top.
    pub fn render(&self) -> String {
        let ns_flag = self
            .namespace
            .as_ref()
            .map(|n| format!(" -n {n}"))
            .unwrap_or_default();
        let mut y = String::new();
        let _ = writeln!(
            y,
            "# ringbench fleet kubernetes: {} pods, each one shard of one run, all starting at Unix time {:.3}.",
            self.pods, self.start_at
        );
        let _ = writeln!(
            y,
            "# Run (before that moment: a pod that starts more than {} s late exits with an error):",
            crate::config::start_at::MAX_LATE
        );
        let _ = writeln!(y, "#   kubectl apply{ns_flag} -f THIS_FILE");
        let _ = writeln!(y, "# Collect (when the Job is complete):");
        let _ = writeln!(
            y,
            "#   kubectl wait{ns_flag} --for=condition=complete --timeout=1h job/{n} && kubectl logs{ns_flag} -l job-name={n} --tail=-1 | ringbench merge -",
            n = self.name
        );
        if let Seccomp::Localhost(path) = &self.seccomp {
            let _ = writeln!(
                y,
                "# Seccomp: every node needs deploy/seccomp/ringbench-io-uring.json as {path} under kubelet's seccomp directory"
            );
        }
        y.push_str(&serde_json::to_string_pretty(&self.job()).expect("a JSON value serializes"));
        y.push('\n');
        y
    }

    /// The Job, as the JSON value kubectl reads (the manifest is YAML written as JSON, which YAML is).
    fn job(&self) -> Value {
        let mut metadata = json!({
            "name": self.name,
            "labels": { "app.kubernetes.io/name": "ringbench" },
        });
        if let Some(ns) = &self.namespace {
            metadata["namespace"] = json!(ns);
        }
        let mut container = json!({
            "name": "ringbench",
            "image": self.image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["ringbench"],
            "args": self.pod_args(),
            // Requests equal to limits, in whole cores: a Guaranteed pod, which a node's static CPU
            // manager gives cores of its own (the executors pin themselves to the cores they are given).
            "resources": {
                "requests": { "cpu": self.cpus.to_string(), "memory": self.memory },
                "limits": { "cpu": self.cpus.to_string(), "memory": self.memory },
            },
            // ringbench needs no privilege: io_uring, pinning and sockets work for any user.
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": 65534,
                "runAsGroup": 65534,
                "allowPrivilegeEscalation": false,
                "capabilities": { "drop": ["ALL"] },
                "seccompProfile": self.seccomp.profile(),
            },
        });
        if let Some((name, key)) = &self.auth_secret {
            container["env"] = json!([{
                "name": "REDISCLI_AUTH",
                "valueFrom": { "secretKeyRef": { "name": name, "key": key } },
            }]);
        }
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": metadata,
            "spec": {
                "completionMode": "Indexed",
                "completions": self.pods,
                "parallelism": self.pods,
                // A retried pod could not make the common start; the run is then incomplete, and merge says so.
                "backoffLimit": 0,
                "template": {
                    "metadata": {
                        "labels": {
                            "app.kubernetes.io/name": "ringbench",
                            "ringbench/run": self.name,
                        },
                    },
                    "spec": {
                        "restartPolicy": "Never",
                        "affinity": {
                            "podAntiAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [{
                                    "labelSelector": { "matchLabels": { "ringbench/run": self.name } },
                                    "topologyKey": "kubernetes.io/hostname",
                                }],
                            },
                        },
                        "containers": [container],
                    },
                },
            },
        })
    }
}

/// Checks the run's flags as the pod with the smallest share will read them; returns the executors per pod.
fn check_run(
    run_args: &[String],
    pods: u64,
    secret: bool,
    err: &mut dyn Write,
) -> Result<u64, UsageError> {
    for a in run_args {
        if a == "--" {
            break;
        }
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        let refused = match flag {
            "--shard" | "--shards" | "--start-at" | "--json" => {
                Some("the fleet sets it for every pod")
            }
            "-l" => Some("a looping pod never completes, and its result is never written"),
            "-I" => Some("an idle pod never completes"),
            "-x" => Some("a pod has no stdin to read"),
            "-a" => Some(
                "the password would be written in the Job (and its warning in every pod's result): use --auth-secret",
            ),
            "--hdr-out" | "--plot" => {
                Some("files written inside a pod are lost with it; merge the results, then plot")
            }
            _ => None,
        };
        if let Some(why) = refused {
            return Err(usage(format!(
                "'{flag}' cannot be given to 'fleet kubernetes': {why}"
            )));
        }
    }
    let uri_password = run_args
        .iter()
        .take_while(|a| *a != "--")
        .zip(run_args.iter().skip(1))
        .filter(|(f, _)| *f == "-u")
        .any(|(_, v)| crate::config::parse_uri(v).is_ok_and(|u| u.password.is_some()));
    if uri_password {
        return Err(usage(
            "'-u' with a password cannot be given to 'fleet kubernetes': the password would be written in the Job (and its warning in every pod's result): use --auth-secret",
        ));
    }
    let target_given = run_args
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| ["-h", "-u", "-s"].iter().any(|f| a.starts_with(f)));
    if !target_given {
        return Err(usage(
            "'fleet kubernetes' needs the server's address as the pods see it: give -h HOST (or -u URI, -s SOCKET)",
        ));
    }
    // The last pod has the smallest share: if it gets some of everything, every pod does.
    let mut argv = vec![
        "ringbench".to_string(),
        "--shard".to_string(),
        format!("{}/{pods}", pods - 1),
    ];
    if secret {
        // The pods will have a password (REDISCLI_AUTH from the Secret): `--user` is valid with it.
        argv.extend(["-a".to_string(), "from-the-secret".to_string()]);
    }
    argv.extend(run_args.iter().cloned());
    let cli = Cli::parse_args(argv).map_err(|e| {
        let text = e.render().to_string();
        usage(
            text.lines()
                .next()
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_string(),
        )
    })?;
    let settings = Settings::parse(&cli, &Env::of_process())?;
    match Config::resolve(settings, &mut std::io::empty(), err) {
        // The server's name may resolve only inside the cluster.
        Ok(_) | Err(ConfigError::Resolve(_)) => {}
        // The fleet's errors are usage lines: a file flag or a TLS file that cannot be used.
        Err(e) => return Err(UsageError(e.to_string())),
    }
    Ok(cli.threads.unwrap_or(1).max(1) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manifest's document: the comment lines on top, then JSON.
    fn job(manifest: &str) -> Value {
        let body: String = manifest
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        serde_json::from_str(&body).unwrap()
    }

    /// The Job of `ringbench fleet kubernetes ARGS`, parsed with the command line's definition.
    fn spec(args: &[&str]) -> Result<JobSpec, UsageError> {
        match crate::cli::command::parse_words(&[&["fleet", "kubernetes"][..], args].concat()) {
            Ok(crate::cli::command::Parsed::Fleet(flags, run)) => {
                JobSpec::from_flags(&flags, run, 1_700_000_000.0, &mut std::io::sink())
            }
            Ok(p) => panic!("{p:?}"),
            Err(e) => Err(UsageError(e.line())),
        }
    }

    #[test]
    fn renders_an_indexed_job_with_the_shared_start() {
        let s = spec(&[
            "-h",
            "redis",
            "-n",
            "1000001",
            "--pods",
            "3",
            "--threads",
            "2",
            "--lead",
            "30",
            "--image",
            "reg/rb:1",
            "-t",
            "set",
        ])
        .unwrap();
        assert_eq!(s.start_at, 1_700_000_030.0);
        assert_eq!(s.auth_secret, None);
        let with_secret = spec(&[
            "-h",
            "r",
            "--user",
            "bench",
            "--pods",
            "2",
            "--auth-secret",
            "redis-auth:pass",
        ])
        .unwrap();
        let c = &job(&with_secret.render())["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(
            c["env"],
            json!([{
                "name": "REDISCLI_AUTH",
                "valueFrom": { "secretKeyRef": { "name": "redis-auth", "key": "pass" } },
            }])
        );
        assert_eq!(s.cpus, 2);
        assert_eq!(
            s.pod_args()[..6],
            [
                "--shards",
                "3",
                "--start-at",
                "1700000030.000",
                "--json",
                "-"
            ]
        );
        let y = s.render();
        assert!(
            y.contains(
                "kubectl logs -l job-name=ringbench-1700000030 --tail=-1 | ringbench merge -"
            ),
            "{y}"
        );
        let j = job(&y);
        let spec = &j["spec"];
        assert_eq!(
            (
                &spec["completionMode"],
                &spec["completions"],
                &spec["parallelism"]
            ),
            (&json!("Indexed"), &json!(3), &json!(3))
        );
        let pod = &spec["template"]["spec"];
        assert_eq!(
            pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
                ["topologyKey"],
            "kubernetes.io/hostname"
        );
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "reg/rb:1");
        assert_eq!(c["resources"]["limits"]["cpu"], "2");
        assert_eq!(c["args"], json!(s.pod_args()));
        assert_eq!(
            (&c["args"][6], &c["args"][7]),
            (&json!("-h"), &json!("redis"))
        );
        assert_eq!(
            c["securityContext"]["seccompProfile"],
            json!({ "type": "Localhost", "localhostProfile": "profiles/ringbench-io-uring.json" })
        );
    }

    #[test]
    fn seccomp_is_localhost_unless_asked() {
        for (flag, want) in [
            (
                None,
                json!({ "type": "Localhost", "localhostProfile": SECCOMP_PROFILE }),
            ),
            (Some("unconfined"), json!({ "type": "Unconfined" })),
            (Some("runtime-default"), json!({ "type": "RuntimeDefault" })),
            (
                Some("localhost:lab/rb.json"),
                json!({ "type": "Localhost", "localhostProfile": "lab/rb.json" }),
            ),
        ] {
            let mut args = vec!["-h", "r", "--pods", "2"];
            args.extend(flag.map(|f| ["--seccomp", f]).iter().flatten());
            let j = job(&spec(&args).unwrap().render());
            let sc = &j["spec"]["template"]["spec"]["containers"][0]["securityContext"];
            assert_eq!(sc["seccompProfile"], want, "{flag:?}");
            assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
        }
        // The shipped profile is the one the default names, and it allows io_uring.
        let shipped = include_str!("../../../deploy/seccomp/ringbench-io-uring.json");
        let p: Value = serde_json::from_str(shipped).unwrap();
        let allowed = p["syscalls"][0]["names"].as_array().unwrap();
        for call in ["io_uring_setup", "io_uring_enter", "io_uring_register"] {
            assert!(allowed.contains(&json!(call)), "{call}");
        }
        assert!(SECCOMP_PROFILE.ends_with("/ringbench-io-uring.json"));
    }

    #[test]
    fn mistakes_name_the_flag() {
        for (args, want) in [
            (vec!["-h", "r"], "'--pods N'"),
            (vec!["-h", "r", "--pods", "0"], "'--pods'"),
            (vec!["-h", "r", "--pods", "2", "--lead", "0"], "'--lead'"),
            (
                vec!["-h", "r", "--pods", "2", "--name", "Bad_Name"],
                "'--name'",
            ),
            (
                vec!["-h", "r", "--pods", "2", "--memory", "lots"],
                "'--memory'",
            ),
            (vec!["-h", "r", "--pods", "2", "--json", "x"], "'--json'"),
            (vec!["-h", "r", "--pods", "2", "-l"], "'-l'"),
            (vec!["--pods", "2"], "-h HOST"),
            (vec!["-h", "r", "--pods", "3", "-c", "2"], "'-c'"),
            (vec!["-h", "r", "--pods", "3", "-n", "2"], "'-n'"),
            (vec!["-h", "r", "--pods", "2", "-P", "0"], "'-P'"),
            (vec!["-h", "r", "--pods"], "'--pods <N>'"),
            (vec!["-h", "r", "--pods", "2", "-a", "pw"], "'-a'"),
            (vec!["-u", "redis://:pw@r", "--pods", "2"], "'-u'"),
            (
                vec!["-h", "r", "--pods", "2", "--auth-secret", "Bad"],
                "'--auth-secret'",
            ),
            (vec!["-h", "r", "--pods", "2", "--user", "u"], "'--user'"),
            (
                vec!["-h", "r", "--pods", "2", "--seccomp", "default"],
                "'--seccomp'",
            ),
            (
                vec![
                    "-h",
                    "r",
                    "--pods",
                    "2",
                    "--seccomp",
                    "localhost:/etc/x.json",
                ],
                "'--seccomp'",
            ),
        ] {
            let e = spec(&args).unwrap_err().0;
            assert!(e.contains(want), "{args:?}: {e}");
        }
    }
}
