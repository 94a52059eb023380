//! The thread-per-core engine: one pinned glommio executor per `--threads`, each driving its own shard of connections.

pub(crate) mod clock;
pub(crate) mod cluster;
pub(crate) mod connect;
mod opening;
pub(crate) mod ring;
pub(crate) mod schedule;
pub(crate) mod shared;

pub(crate) use schedule::QUANTUM;
pub use shared::RunControl;
pub(crate) use shared::{GateGuard, ShardPlan, ShardState, StartGate};

use crate::config::EngineSettings;
use crate::net::ConnError;
use crate::stats::intervals::IntervalRecorder;
use crate::stats::live::{LiveCounters, LiveView};
use crate::stats::{ExecutorStats, ShardStats, thread_cpu_seconds};
use crate::workload::TestSpec;
use glommio::{LocalExecutorBuilder, Placement};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// io_uring buffer memory per executor. ringbench does no file I/O, so a small registration
/// stays well under the default memlock limit.
const IO_MEMORY: usize = 64 * 1024;

/// The cores executors are pinned to, in order: `cpus` (from `--cpus`) or the cores this process may use;
/// `warning` is set when there are more executors than cores. `local_servers` counts the servers of the
/// run on this machine (see `Budget::local_servers`).
pub fn plan_cores(
    threads: usize,
    cpus: Option<&[usize]>,
    local_servers: usize,
) -> (Vec<Option<usize>>, Option<String>) {
    let cores: Vec<usize> = match cpus {
        Some(list) => list.to_vec(),
        None => crate::config::cpus::usable_cores(),
    };
    if cores.is_empty() {
        return (
            vec![None; threads],
            Some("could not read the CPUs this process may use; executors are not pinned".into()),
        );
    }
    // Executors pinned to every core leave a server on this machine no core of its own: the scheduler
    // cannot move a pinned executor out of its way. Measured with a local redis-server on 2 cores,
    // `--threads 2 -P 64` ran about 40% slower pinned than unpinned. The same holds for several local
    // servers (a cluster on this machine): one executor pinned beside three masters on 2 cores ran
    // `--cluster -P 16` 3.5% slower than unpinned, with more idle time. So when no `--cpus` was given
    // and the executors and the local servers outnumber the cores, executors are left to the scheduler.
    if cpus.is_none() && local_servers > 0 && threads + local_servers > cores.len() {
        let warning = (threads > cores.len()).then(|| {
            format!(
                "{threads} threads on {} usable cores: executors share cores (not pinned, so the server on this machine gets its share)",
                cores.len()
            )
        });
        return (vec![None; threads], warning);
    }
    let warning = (threads > cores.len()).then(|| {
        format!(
            "{threads} threads on {} usable cores: executors are pinned round-robin and share cores",
            cores.len()
        )
    });
    (
        (0..threads).map(|i| Some(cores[i % cores.len()])).collect(),
        warning,
    )
}

/// Splits `total` into `parts` shares that differ by at most one.
pub fn split(total: u64, parts: usize) -> Vec<u64> {
    let parts = parts as u64;
    (0..parts)
        .map(|i| total / parts + u64::from(i < total % parts))
        .collect()
}

/// How much and how fast one phase (a test, its warmup, a capacity step) runs: `requests` in total, or
/// for `duration` when set; at `rps` requests a second over all connections (open loop), or as fast as
/// the replies come back (`None`, closed loop). The phase's own, not the config's: one config runs phases
/// of different rates. `local_servers`: how many of the servers the run drives are on this machine
/// (loopback or a unix socket; under `--cluster` the local masters), a fact the session learns when it
/// connects: executors are not pinned when they and these servers outnumber the cores
/// ([`plan_cores`]).
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub requests: u64,
    pub duration: Option<Duration>,
    pub rps: Option<f64>,
    pub local_servers: usize,
}

/// Why a test could not run.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Conn(#[from] ConnError),
    #[error("{0}")]
    Executor(String),
}

/// Words an executor start failure the way a user can act on it.
fn executor_error(e: glommio::GlommioError<()>) -> EngineError {
    let text = e.to_string();
    let lower = text.to_lowercase();
    EngineError::Executor(if lower.contains("memlock") {
        format!(
            "could not start an executor: the locked-memory limit (RLIMIT_MEMLOCK) is too low for io_uring: {text}; raise it with `ulimit -l 512` or more (or in /etc/security/limits.conf)"
        )
    } else if lower.contains("function not implemented")
        || lower.contains("operation not permitted")
    {
        format!(
            "could not start an executor: io_uring is not available here ({text}); a container's seccomp profile or an old kernel blocks it"
        )
    } else {
        format!("could not start an executor: {text}")
    })
}

/// Runs one test on `cfg.threads` executors; `on_tick` is called about every 250 ms with the executors' live
/// counters while it runs; what the executors have to say (`-e`) goes to `stderr`.
pub fn run_test(
    cfg: &Arc<EngineSettings>,
    test: &TestSpec,
    requests: u64,
    local_servers: usize,
    control: &RunControl,
    stderr: &mut dyn Write,
    on_tick: impl FnMut(&LiveView),
) -> Result<ShardStats, EngineError> {
    let budget = Budget {
        requests: if cfg.pace.shape.duration.is_some() {
            u64::MAX
        } else {
            requests
        },
        duration: cfg.pace.shape.duration,
        rps: cfg.pace.shape.rps,
        local_servers,
    };
    run_phase(cfg, test, budget, control, stderr, on_tick)
}

/// Runs one test, or one warmup, with an explicit budget.
pub fn run_phase(
    cfg: &Arc<EngineSettings>,
    test: &TestSpec,
    budget: Budget,
    control: &RunControl,
    stderr: &mut dyn Write,
    mut on_tick: impl FnMut(&LiveView),
) -> Result<ShardStats, EngineError> {
    let requests = budget.requests;
    // A shard with no connection could not send its share, so there are never more shards than connections.
    let shards = cfg.connect.threads.min(cfg.load.clients);
    let (cores, _) = plan_cores(shards, cfg.connect.cpus.as_deref(), budget.local_servers);
    check_memory(cfg, test, shards, budget.rps)?;
    let base_rss = crate::stats::ClientMemory::start();
    let clients = split(cfg.load.clients as u64, shards);
    let shares = shares(cfg, test, requests, &clients);
    let gate = Arc::new(StartGate::default());
    let error_clock = Arc::new(AtomicU64::new(0));
    let first_error: Arc<Mutex<Option<ConnError>>> = Arc::new(Mutex::new(None));
    let epoch = Instant::now();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (lines_tx, lines) = mpsc::channel::<String>();
    // Executors' lines reach `stderr` from this thread, in the order they were sent.
    let relay = |stderr: &mut dyn Write| {
        for line in lines.try_iter() {
            let _ = writeln!(stderr, "{line}");
        }
    };
    let launch = Launch {
        cfg,
        test,
        clients: &clients,
        shares: &shares,
        duration: budget.duration,
        rps: budget.rps,
        gate: &gate,
        control,
        error_clock: &error_clock,
        stderr: &lines_tx,
        epoch,
        done: &done_tx,
        first_error: &first_error,
    };
    let mut handles = Vec::with_capacity(shards);
    let mut lives = Vec::with_capacity(shards);
    for (i, core) in cores.iter().enumerate() {
        let live = Arc::new(LiveCounters::default());
        lives.push(live.clone());
        match launch.spawn(i, *core, live) {
            Ok(h) => handles.push(h),
            Err(e) => {
                gate.abort.store(true, Ordering::Release);
                for h in handles {
                    let _ = h.join();
                }
                return Err(e);
            }
        }
    }
    drop(done_tx);
    let mut finished = 0;
    // One extra tick as soon as every connection is open (the server view samples its clients then).
    let mut opened = false;
    let mut next_tick = Instant::now() + Duration::from_millis(250);
    while finished < handles.len() {
        let wait = if opened {
            next_tick.saturating_duration_since(Instant::now())
        } else {
            Duration::from_millis(2)
        };
        let woke = done_rx.recv_timeout(wait);
        relay(stderr);
        match woke {
            Ok(()) => finished += 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let open_now = !opened && gate.ready.load(Ordering::Acquire) >= shards;
                opened |= open_now;
                if !open_now && Instant::now() < next_tick {
                    continue;
                }
                next_tick = Instant::now() + Duration::from_millis(250);
                on_tick(&LiveView::new(&lives));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let joined = join_all(handles, cfg.record.precision);
    relay(stderr);
    let mut merged = joined?;
    merged.client_memory = crate::stats::ClientMemory::finish(base_rss, cfg.load.clients);
    if let Some(e) = first_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(e.into());
    }
    Ok(merged)
}

/// Refuses a test whose request buffers would take more than half of this machine's memory.
fn check_memory(
    cfg: &EngineSettings,
    test: &TestSpec,
    shards: usize,
    rps: Option<f64>,
) -> Result<(), EngineError> {
    let need = ring::request_memory(cfg, test, shards, rps);
    if let Some(total) = ring::total_memory()
        && need > total / 2
    {
        return Err(EngineError::Executor(format!(
            "{}: -d {} with -P {} and -c {} needs {:.1} GB of request buffers, more than half of this machine's {:.1} GB; lower -c, -P or -d",
            test.title,
            cfg.load.data_size,
            cfg.load.pipeline,
            cfg.load.clients,
            need as f64 / 1e9,
            total as f64 / 1e9
        )));
    }
    Ok(())
}

/// Each shard's share of `requests`, given its `clients`: an even split, or memtier's `-n` per
/// connection, or a replay's commands of the shard's connections.
fn shares(cfg: &EngineSettings, test: &TestSpec, requests: u64, clients: &[u64]) -> Vec<u64> {
    let mut shares = split(requests, clients.len());
    if let Some(n) = cfg.load.per_connection.filter(|_| requests != u64::MAX) {
        // memtier's -n: each connection sends its own n, so a shard's share is n per connection.
        for (share, c) in shares.iter_mut().zip(clients) {
            *share = n.saturating_mul(*c);
        }
    }
    if let Some(r) = &test.replay {
        // Each connection sends its own share of the capture: a shard, its connections' commands.
        let mut first = 0;
        for (share, n) in shares.iter_mut().zip(clients) {
            *share = r.share(first..first + *n as usize);
            first += *n as usize;
        }
    }
    shares
}

/// What every executor of a phase is started with: the run's settings, each shard's clients and
/// share, and what the shards share (the start gate, the error clock, the lines to `stderr`, the
/// end signal and the first error).
struct Launch<'x> {
    cfg: &'x Arc<EngineSettings>,
    test: &'x TestSpec,
    clients: &'x [u64],
    shares: &'x [u64],
    duration: Option<Duration>,
    rps: Option<f64>,
    gate: &'x Arc<StartGate>,
    control: &'x RunControl,
    error_clock: &'x Arc<AtomicU64>,
    stderr: &'x mpsc::Sender<String>,
    epoch: Instant,
    done: &'x mpsc::Sender<()>,
    first_error: &'x Arc<Mutex<Option<ConnError>>>,
}

/// An executor's handle: what its shard ends with.
type Shard = glommio::ExecutorJoinHandle<Result<ShardStats, ConnError>>;

impl Launch<'_> {
    /// Starts shard `i`'s executor, pinned to `core` when given, counting live into `live`.
    fn spawn(
        &self,
        i: usize,
        core: Option<usize>,
        live: Arc<LiveCounters>,
    ) -> Result<Shard, EngineError> {
        let (clients, shares) = (self.clients, self.shares);
        let plan = ShardPlan {
            cfg: self.cfg.clone(),
            test: self.test.clone(),
            index: i,
            clients: clients[i] as usize,
            first_client: clients[..i].iter().sum::<u64>() as usize,
            requests: shares[i],
            first_request: shares[..i]
                .iter()
                .fold(self.cfg.load.first_request, |a, &b| a.saturating_add(b)),
            duration: self.duration,
            rps: self.rps,
            gate: self.gate.clone(),
            control: self.control.clone(),
            live,
            error_clock: self.error_clock.clone(),
            stderr: self.stderr.clone(),
            epoch: self.epoch,
        };
        let placement = match core {
            Some(c) => Placement::Fixed(c),
            None => Placement::Unbound,
        };
        let done = self.done.clone();
        let first = self.first_error.clone();
        let guard = GateGuard {
            gate: self.gate.clone(),
            passed: false,
        };
        LocalExecutorBuilder::new(placement)
            .name(&format!("ringbench-{i}"))
            .io_memory(IO_MEMORY)
            .spawn(move || async move {
                let r = run_shard(plan, guard).await;
                if let Err(e) = &r {
                    let mut f = first.lock().unwrap_or_else(|p| p.into_inner());
                    if f.is_none() {
                        *f = Some(e.clone());
                    }
                }
                let _ = done.send(());
                r
            })
            .map_err(executor_error)
    }
}

/// Waits for every executor and merges what their shards counted; an executor that failed to run is
/// the error (the first of them).
fn join_all(handles: Vec<Shard>, precision: u8) -> Result<ShardStats, EngineError> {
    let mut merged = ShardStats::new(precision);
    let mut start_failure = None;
    for h in handles {
        match h.join() {
            Ok(Ok(s)) => merged.merge(&s),
            Ok(Err(_)) => {}
            Err(e) => start_failure = start_failure.or(Some(executor_error(e))),
        }
    }
    match start_failure {
        Some(e) => Err(e),
        None => Ok(merged),
    }
}

async fn run_shard(plan: ShardPlan, mut guard: GateGuard) -> Result<ShardStats, ConnError> {
    let cfg = plan.cfg.clone();
    // Phase 1: open this shard's connections (neither counted nor timed), all driven by the
    // executor's ring: one per client, or under `--cluster` one per client and master.
    let opened = if cfg.connect.cluster {
        cluster::open(&cfg, plan.clients, &|| plan.control.stopped())
    } else {
        let targets = vec![cfg.target.clone(); plan.clients];
        connect::open_all(&cfg, targets, &|| plan.control.stopped()).map(|socks| (socks, None))
    };
    if opened.is_err() {
        plan.gate.abort.store(true, Ordering::Release);
    }
    // Phase 2: every shard starts sending at the same moment, or none does.
    let shards = cfg.connect.threads.min(cfg.load.clients);
    let go = plan.gate.wait(shards).await;
    guard.passed = true;
    let (sockets, topology) = opened?;
    if !go {
        return Ok(ShardStats::new(cfg.record.precision));
    }

    // Phase 3: drive the connections.
    let cpu_start = thread_cpu_seconds();
    let began = Instant::now();
    let mut stats = ShardStats::new(cfg.record.precision);
    stats.start = Some(began);
    schedule::prepare_stats(&mut stats, &cfg, &plan.test, plan.rps);
    // One-second intervals for `--hdr-out` and the JSON's per-second series (cut once a second, off
    // the per-request path).
    let intervals = Some(IntervalRecorder::new(began, &stats.hist, stats.parts.len()));
    let state = ShardState {
        remaining: Cell::new(plan.requests),
        stats: RefCell::new(stats),
        latency_sum_ns: Cell::new(0),
        intervals: RefCell::new(intervals),
        deadline: plan.duration.map(|d| began + d),
    };
    let composer = schedule::composer_for(&cfg, &plan.test, plan.rps);
    let layer = match topology {
        Some(t) if !cfg.load.idle => {
            Some(cluster::layer(&plan, &state, t, composer.clone(), began))
        }
        _ => None,
    };
    let (io, failure) = match ring::Driver::new(&plan, &state, sockets, composer, began, layer) {
        Ok(mut driver) => {
            driver.run();
            (driver.mode().describe(), driver.take_failure())
        }
        Err(e) => {
            return Err(ConnError::Lost {
                addr: cfg.target.display(),
                reason: format!("could not set up the executor's io_uring: {e}"),
            });
        }
    };
    if let Some(e) = failure {
        return Err(e);
    }
    if cfg.load.idle {
        return Ok(ShardStats::new(cfg.record.precision));
    }
    Ok(finish_shard(&plan, &state, cpu_start, began, io))
}

/// A shard's figures once its connections are done: requests left unsent, the last interval, and
/// the executor's CPU time.
fn finish_shard(
    plan: &ShardPlan,
    state: &ShardState,
    cpu_start: (f64, f64),
    began: Instant,
    io: &'static str,
) -> ShardStats {
    let mut stats = state.stats.borrow().clone();
    // Every connection gave up (or a signal stopped the run) while requests were left: never sent.
    // (With --duration there is no count to fall short of.)
    if state.deadline.is_none() {
        stats.not_sent += state.remaining.get();
    }
    // Elapsed is wall time: a test that ended in a stall (server lost, reconnects) took that long too.
    stats.end = Some(Instant::now());
    if let Some(rec) = state.intervals.borrow_mut().take() {
        let (whole, parts) = rec.finish(&stats.hist, |i| stats.parts.get(i).map(|p| &p.hist));
        stats.interval_logs.push(whole);
        stats.part_interval_logs.push(parts);
    }
    let executor = ExecutorStats::of_shard(plan.index, &stats, cpu_start, began, io);
    stats.executors.push(executor);
    stats
}

/// Sleeps until Unix time `t`, waking early when the run is stopped. Returns false when stopped.
pub fn wait_until(t: f64, control: &RunControl) -> bool {
    loop {
        if control.stopped() {
            return false;
        }
        let left = t - crate::config::start_at::unix_now();
        if left <= 0.0 {
            return true;
        }
        // Short naps keep Ctrl+C responsive; the last one lands on the moment itself.
        std::thread::sleep(Duration::from_secs_f64(left.min(0.05)));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn waits_until_the_moment() {
        let t = crate::config::start_at::unix_now() + 0.2;
        assert!(wait_until(t, &RunControl::default()));
        assert!(crate::config::start_at::unix_now() >= t);
    }

    use super::*;

    #[test]
    fn split_is_exact() {
        assert_eq!(split(10, 3), [4, 3, 3]);
        assert_eq!(split(30000, 2).iter().sum::<u64>(), 30000);
        assert_eq!(split(1, 2), [1, 0]);
    }

    #[test]
    fn bounded_stays_in_range() {
        use crate::workload::keys::bounded;
        assert_eq!(bounded(u64::MAX, 1000), 999);
        assert_eq!(bounded(0, 1000), 0);
        assert_eq!(bounded(u64::MAX / 2, 1000), 499);
    }

    #[test]
    fn more_threads_than_cores_are_pinned_round_robin() {
        let (cores, warning) = plan_cores(64, None, 0);
        assert_eq!(cores.len(), 64);
        assert!(cores.iter().all(|c| c.is_some()));
        assert!(warning.is_some() || std::thread::available_parallelism().unwrap().get() >= 64);
    }

    #[test]
    fn executors_taking_every_core_are_not_pinned_next_to_a_local_server() {
        let n = crate::config::cpus::usable_cores().len();
        let (cores, _) = plan_cores(n, None, 1);
        assert!(cores.iter().all(|c| c.is_none()));
        let (cores, _) = plan_cores(n, None, 0);
        assert!(cores.iter().all(|c| c.is_some()));
        let first = crate::config::cpus::usable_cores()[0];
        let (cores, _) = plan_cores(n, Some(&[first]), 1);
        assert!(
            cores.iter().all(|c| *c == Some(first)),
            "--cpus always pins"
        );
        if n > 1 {
            let (cores, _) = plan_cores(n - 1, None, 1);
            assert!(
                cores.iter().all(|c| c.is_some()),
                "a core stays free for the server"
            );
        }
    }

    #[test]
    fn executors_beside_local_servers_that_fill_the_cores_are_not_pinned() {
        let n = crate::config::cpus::usable_cores().len();
        // One executor and a cluster of n local masters: together more than the cores.
        let (cores, warning) = plan_cores(1, None, n);
        assert_eq!(cores, vec![None]);
        assert!(
            warning.is_none(),
            "one executor shares no core with another"
        );
        // The same masters elsewhere: pinned.
        let (cores, _) = plan_cores(1, None, 0);
        assert!(cores[0].is_some());
        // --cpus pins whatever runs beside it.
        let first = crate::config::cpus::usable_cores()[0];
        assert_eq!(plan_cores(1, Some(&[first]), n).0, vec![Some(first)]);
    }
}
