//! A ringbench run put together step by step: the binary under test (`cluster::bin`, so
//! `RINGBENCH_BIN` may name another), where it goes (a server of the harness, any port, a cluster, or
//! the `capacity` and `memtier` subcommands against a server), its arguments, result file, environment
//! and limits, then how it runs: to its end (checked to have succeeded, and then the server's command
//! counts read), with bytes on its stdin, killed past a time limit, or in the background with its output
//! piped.

use super::RedisServer;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A ringbench command line being built; stdin is empty unless [`Bench::input`] gives it bytes.
pub struct Bench {
    /// A program that starts the binary (`nice -n 19`, `prlimit ...`), with its own arguments.
    under: Vec<OsString>,
    args: Vec<OsString>,
    /// Variables set (`Some`) or removed (`None`) for the run.
    envs: Vec<(OsString, Option<OsString>)>,
    dir: Option<PathBuf>,
    /// `RLIMIT_AS` of the run, in bytes.
    address_space: Option<u64>,
    /// The port of the server the run goes to, whose `INFO commandstats` [`Bench::counted`] reads.
    server: Option<u16>,
}

impl Bench {
    /// The binary with no arguments yet.
    pub fn new() -> Bench {
        Bench {
            under: Vec::new(),
            args: Vec::new(),
            envs: Vec::new(),
            dir: None,
            address_space: None,
            server: None,
        }
    }

    /// Against `server` (`-p PORT` first).
    pub fn on(server: &RedisServer) -> Bench {
        Bench {
            server: Some(server.port),
            ..Bench::port(server.port)
        }
    }

    /// Against whatever listens on `port` (`-p PORT` first): a fake server, a TLS port, no one.
    pub fn port(port: u16) -> Bench {
        Bench::new().args(["-p", &port.to_string()])
    }

    /// Against the cluster that `seed` is a node of, with `--cluster`.
    pub fn cluster(seed: u16) -> Bench {
        Bench::new().args(["-p", &seed.to_string(), "--cluster"])
    }

    /// `ringbench capacity -p PORT` against `server`.
    pub fn capacity(server: &RedisServer) -> Bench {
        Bench {
            server: Some(server.port),
            ..Bench::new().args(["capacity", "-p", &server.port.to_string()])
        }
    }

    /// `ringbench memtier -s 127.0.0.1 -p PORT` against `server`.
    pub fn memtier(server: &RedisServer) -> Bench {
        Bench {
            server: Some(server.port),
            ..Bench::new().args(["memtier", "-s", "127.0.0.1", "-p", &server.port.to_string()])
        }
    }

    /// More arguments, in order.
    pub fn args<I, S>(mut self, args: I) -> Bench
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// One more argument.
    pub fn arg(self, arg: impl AsRef<OsStr>) -> Bench {
        self.args([arg])
    }

    /// Writes the run's JSON result to `path` (`--json PATH`, here in the order).
    pub fn json(self, path: impl AsRef<OsStr>) -> Bench {
        self.args([OsStr::new("--json"), path.as_ref()])
    }

    /// Sets `key` to `value` in the run's environment.
    pub fn env(mut self, key: &str, value: impl AsRef<OsStr>) -> Bench {
        self.envs
            .push((key.into(), Some(value.as_ref().to_os_string())));
        self
    }

    /// Removes `key` from the run's environment.
    pub fn env_remove(mut self, key: &str) -> Bench {
        self.envs.push((key.into(), None));
        self
    }

    /// Runs in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Bench {
        self.dir = Some(dir.into());
        self
    }

    /// Started by `program` with `args`, which then runs the binary with its arguments.
    pub fn under<I, S>(mut self, program: &str, args: I) -> Bench
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.under = std::iter::once(program.into())
            .chain(args.into_iter().map(|a| a.as_ref().to_os_string()))
            .collect();
        self
    }

    /// Runs under an address-space limit (`ulimit -v`) of `bytes`.
    pub fn address_space(mut self, bytes: u64) -> Bench {
        self.address_space = Some(bytes);
        self
    }

    /// The command as built so far (stdin empty), for a run the methods here cannot make.
    pub fn command(self) -> Command {
        let mut cmd = match self.under.split_first() {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(super::cluster::bin());
                cmd
            }
            None => Command::new(super::cluster::bin()),
        };
        cmd.args(&self.args).stdin(Stdio::null());
        for (key, value) in &self.envs {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        if let Some(bytes) = self.address_space {
            super::sys::limit_address_space(&mut cmd, bytes);
        }
        cmd
    }

    /// Runs to the end and returns what it wrote and how it exited.
    pub fn output(self) -> Output {
        self.command().output().unwrap()
    }

    /// Runs to the end, asserts it exited 0 with nothing on stderr, and returns its stdout.
    pub fn ok(self) -> String {
        let mut cmd = self.command();
        let shown = format!("{cmd:?}");
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.is_empty(),
            "{shown} failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        stdout
    }

    /// Runs as [`Bench::ok`] against the server of [`Bench::on`] (or `capacity`, `memtier`), then reads
    /// that server's `INFO commandstats`: the run's stdout, and the calls of each command.
    pub fn counted(self) -> (String, HashMap<String, u64>) {
        let port = self
            .server
            .expect("counted() reads the server of Bench::on, Bench::capacity or Bench::memtier");
        let out = self.ok();
        let stats = super::parse_commandstats(&super::redis_cli(port, &["info", "commandstats"]));
        (out, stats)
    }

    /// Runs to the end with `input` on its stdin; returns what it wrote and how it exited.
    pub fn input(self, input: &[u8]) -> Output {
        use std::io::Write;
        let mut child = self
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs to the end like [`Bench::output`], but kills it when it has not ended within `limit` and then
    /// fails the test with what it printed: for faults whose old behaviour was to run for good.
    pub fn within(self, limit: Duration) -> Output {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let mut cmd = self.command();
        let shown = format!("{cmd:?}");
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let ended = Arc::new(AtomicBool::new(false));
        let watch = {
            let ended = ended.clone();
            std::thread::spawn(move || {
                let start = Instant::now();
                while start.elapsed() < limit {
                    if ended.load(Ordering::SeqCst) {
                        return false;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                // Our own child, not reaped yet (ended is false).
                super::sys::kill(pid, libc::SIGKILL);
                true
            })
        };
        let out = child.wait_with_output().unwrap();
        ended.store(true, Ordering::SeqCst);
        let killed = watch.join().unwrap();
        assert!(
            !killed,
            "{shown} did not end within {limit:?}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Starts it in the background with stdout and stderr piped.
    pub fn spawn(self) -> Child {
        self.command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}
