//! A ringbench run put together step by step: the binary under test (`cluster::bin`, so
//! `RINGBENCH_BIN` may name another), the server it goes to, its arguments and result file, then how it
//! runs: to its end, checked to have succeeded, or in the background with its output piped.

use super::RedisServer;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

/// A ringbench command line being built; stdin is always empty.
pub struct Bench {
    cmd: Command,
}

impl Bench {
    /// The binary with no arguments yet.
    pub fn new() -> Bench {
        let mut cmd = Command::new(super::cluster::bin());
        cmd.stdin(Stdio::null());
        Bench { cmd }
    }

    /// Against `server` (its port or socket first).
    pub fn on(server: &RedisServer) -> Bench {
        Bench::new().args(server.port_args())
    }

    /// Against the cluster that `seed` is a node of, with `--cluster`.
    pub fn cluster(seed: u16) -> Bench {
        Bench::new().args(["-p", &seed.to_string(), "--cluster"])
    }

    /// More arguments, in order.
    pub fn args<I, S>(mut self, args: I) -> Bench
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// One more argument.
    pub fn arg(self, arg: impl AsRef<OsStr>) -> Bench {
        self.args([arg])
    }

    /// Writes the run's JSON result to `path`.
    pub fn json(self, path: &Path) -> Bench {
        self.args([OsStr::new("--json"), path.as_os_str()])
    }

    /// Runs to the end and returns what it wrote and how it exited.
    pub fn output(mut self) -> Output {
        self.cmd.output().unwrap()
    }

    /// Runs to the end, asserts it exited 0 with nothing on stderr, and returns its stdout.
    pub fn ok(mut self) -> String {
        let shown = format!("{:?}", self.cmd);
        let out = self.cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.is_empty(),
            "{shown} failed: {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        stdout
    }

    /// Starts it in the background with stdout and stderr piped.
    pub fn spawn(mut self) -> Child {
        self.cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}
