//! A network namespace made by a test (`ip netns`), with its own loopback, where `iptables` rules
//! make the network faults a real server cannot: dropped connection attempts, black holes. Removed when
//! dropped. Creating one needs root (CI runs as root); a test that cannot make one fails, it never skips.

use super::bench::Bench;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static COUNT: AtomicU32 = AtomicU32::new(0);

pub struct NetNs {
    pub name: String,
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed (network namespace tests need root, iproute2 and iptables): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl NetNs {
    /// A new namespace with its loopback up.
    pub fn new() -> NetNs {
        let name = format!(
            "ringbench-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::SeqCst)
        );
        run(Command::new("ip").args(["netns", "add", &name]));
        let ns = NetNs { name };
        run(Command::new("ip").args(["-n", &ns.name, "link", "set", "lo", "up"]));
        ns
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// The ringbench under test, to run inside the namespace (`ip netns exec`, which execs it in place).
    pub fn ringbench(&self) -> Bench {
        Bench::new().under("ip", ["netns", "exec", &self.name])
    }

    /// Runs `iptables` with `args` inside the namespace and asserts that it worked.
    pub fn iptables(&self, args: &[&str]) {
        run(self.command("iptables").args(args));
    }

    /// Starts a redis-server without persistence on `port` inside the namespace and waits until it
    /// answers. It listens on 127.0.0.1, where tests send load and drop packets, and on 127.0.0.2,
    /// where [`NsRedis::cli`] reaches it whatever the rules do to the first.
    pub fn redis(&self, port: u16) -> NsRedis {
        self.redis_with(port, &[])
    }

    /// As [`Self::redis`], with more of redis-server's flags (`--cluster-enabled yes`, ...).
    pub fn redis_with(&self, port: u16, extra: &[&str]) -> NsRedis {
        let dir = std::env::temp_dir().join(format!("{}-redis-{port}", self.name));
        std::fs::create_dir_all(&dir).unwrap();
        let child = self
            .command("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1 127.0.0.2"])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(&dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed");
        let r = NsRedis {
            ns: self.name.clone(),
            port,
            child,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while r.cli(&["ping"]) != "PONG" {
            assert!(
                Instant::now() < deadline,
                "redis-server in {} did not start",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        r
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// A redis-server running inside a namespace; stopped when dropped.
pub struct NsRedis {
    ns: String,
    pub port: u16,
    child: Child,
    dir: std::path::PathBuf,
}

impl NsRedis {
    /// `redis-cli` against it, from inside the namespace; its trimmed stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "redis-cli",
                "-h",
                "127.0.0.2",
                "-p",
            ])
            .arg(self.port.to_string())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Calls of `command` in its commandstats.
    pub fn calls(&self, command: &str) -> u64 {
        let info = self.cli(&["info", "commandstats"]);
        super::parse_commandstats(&info)
            .get(command)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for NsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
