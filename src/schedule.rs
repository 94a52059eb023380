//! The per-request driver: open-loop pacing for `--rps` (latency from each request's intended send time,
//! service time from its actual send) and the closed loop for composed requests (varying values, mixes).
//!
//! Open loop, per connection: request `i` of connection `c` (of `C` in the whole run) is due at
//! `start + (c + i * C) / rps`, so the connections interleave into one even stream at the target rate.
//! A connection keeps up to `-P` requests in flight: while it has room, it sends each request when due and
//! meanwhile reads replies; when it has `-P` waiting, it only reads, and the requests that fall due
//! meanwhile are sent as soon as replies make room. Their latency still counts from when they were due, so
//! a stalled server shows its stall (no coordinated omission). One slow reply therefore holds back a
//! connection's schedule only once `-P` requests pile up behind it; `-c` and `-P` bound how many requests
//! can wait at once (`-c * -P`), which is what the report names when the target is missed.

use crate::compose::Composer;
use crate::config::Config;
use crate::engine::{Conn, READ_BUFFER, note_error, reconnect};
use crate::net::{self, ConnError};
use crate::replies::ReplyBuffer;
use crate::resp::Scanned;
use crate::stats::{PartStats, ShardStats, new_histogram};
use crate::workload::TestSpec;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A request sent later than this after its intended time counts as late in the report.
pub(crate) const LATE: Duration = Duration::from_millis(1);

/// One connection's open-loop schedule.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    start: Instant,
    index: u64,
    conns: u64,
    ns_per_request: f64,
}

impl Pacing {
    /// The schedule of connection `index` of `conns`, sharing `rps` from `start`.
    pub fn new(start: Instant, index: usize, conns: usize, rps: f64) -> Pacing {
        Pacing {
            start,
            index: index as u64,
            conns: conns.max(1) as u64,
            ns_per_request: 1e9 / rps,
        }
    }

    /// When this connection's request number `i` is due.
    pub fn intended(&self, i: u64) -> Instant {
        let slot = self.index + i * self.conns;
        self.start + Duration::from_nanos((slot as f64 * self.ns_per_request) as u64)
    }
}

/// The composer a test runs with on the per-request path, or `None` for the fixed-layout fast path.
/// Open-loop runs always take the per-request path, compiling the test's own template if needed.
pub(crate) fn composer_for(cfg: &Config, test: &TestSpec) -> Option<Arc<Composer>> {
    match (&test.compose, cfg.shape.rps) {
        (Some(c), _) => Some(c.clone()),
        (None, Some(_)) => Some(Arc::new(Composer::new(
            &[(test.title.clone(), test.command.clone(), &test.template, 1)],
            cfg.keyspace.is_some(),
            cfg.shape.value,
            cfg.seed,
        ))),
        (None, None) => None,
    }
}

/// Adds the histograms a shard needs beyond the plain one: service time (open loop), one per mixed command.
pub(crate) fn prepare_stats(stats: &mut ShardStats, cfg: &Config, test: &TestSpec) {
    if cfg.shape.rps.is_some() {
        stats.service = Some(new_histogram(cfg.precision));
    }
    if let Some(c) = &test.compose
        && c.variants().len() > 1
    {
        stats.parts = c
            .variants()
            .iter()
            .map(|v| PartStats {
                title: v.title.clone(),
                hist: new_histogram(cfg.precision),
                completed: 0,
                errors: 0,
            })
            .collect();
    }
}

/// A request waiting for its reply.
#[derive(Debug, Clone, Copy)]
struct Flight {
    intended: Instant,
    sent: Instant,
    kind: usize,
}

/// Drives one connection with composed requests: open loop when `pacing` is set, closed loop otherwise.
/// A lost connection fails its in-flight requests and is reconnected; the schedule goes on.
pub(crate) async fn drive_composed(conn: Conn, composer: Arc<Composer>, pacing: Option<Pacing>) {
    let Conn {
        mut stream,
        state,
        plan,
        setup,
        names,
        mut keys,
        seed,
        turn,
    } = conn;
    let cfg = &plan.cfg;
    let addr = cfg.target.display();
    let depth = cfg.pipeline;
    let mixed = composer.variants().len() > 1;
    let mut out = Vec::with_capacity(depth * composer.max_request_len());
    let mut inflight: VecDeque<Flight> = VecDeque::with_capacity(depth);
    let mut replies = ReplyBuffer::new(READ_BUFFER);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut seq = 0u64;
    let mut next_due = pacing.map(|p| p.intended(0));
    let mut done_sending = false;
    // Set when the next request fell due while this connection waited with `-P` requests in flight.
    let mut was_full = false;
    let lost = |reason: String| ConnError::Lost {
        addr: addr.clone(),
        reason,
    };
    loop {
        if plan.control.stopped() {
            return;
        }
        // Send whatever is due (open loop) or a new batch (closed loop).
        let now = Instant::now();
        out.clear();
        let mut k = 0usize;
        match &pacing {
            Some(p) => {
                while !done_sending && inflight.len() < depth {
                    let due = next_due.unwrap_or(now);
                    if state.deadline.is_some_and(|d| due >= d || now >= d) {
                        done_sending = true;
                        break;
                    }
                    if due > now {
                        break;
                    }
                    if state.claim(1) == 0 {
                        done_sending = true;
                        break;
                    }
                    if now.duration_since(due) > LATE {
                        let mut st = state.stats.borrow_mut();
                        if was_full {
                            st.late_full += 1;
                        } else {
                            st.late_free += 1;
                        }
                    }
                    let kind = composer.write_request(&mut out, &mut keys, &mut rng, &turn);
                    inflight.push_back(Flight {
                        intended: due,
                        sent: now,
                        kind,
                    });
                    k += 1;
                    seq += 1;
                    next_due = Some(p.intended(seq));
                }
            }
            None => {
                if inflight.is_empty() && !done_sending {
                    let n = if state.deadline.is_some_and(|d| now >= d) {
                        0
                    } else {
                        state.claim(depth)
                    };
                    if n == 0 {
                        done_sending = true;
                    }
                    for _ in 0..n {
                        let kind = composer.write_request(&mut out, &mut keys, &mut rng, &turn);
                        inflight.push_back(Flight {
                            intended: now,
                            sent: now,
                            kind,
                        });
                    }
                    k = n;
                }
            }
        }
        if k > 0 {
            was_full = false;
            let sent = Instant::now();
            for f in inflight.iter_mut().rev().take(k) {
                f.sent = sent;
                if pacing.is_none() {
                    f.intended = sent;
                }
            }
            if let Err(e) = stream.write_all(&out).await {
                fail(&state, &mut inflight, &lost(net::io_reason(e)));
                match reconnect(&plan, &setup, &names).await {
                    Some(s) => {
                        stream = s;
                        replies.reset();
                        continue;
                    }
                    None => return,
                }
            }
        }
        if inflight.is_empty() {
            if done_sending {
                return;
            }
            if let Some(due) = next_due {
                // Nothing to read: sleep until the next request is due.
                let wait = due.saturating_duration_since(Instant::now());
                if !wait.is_zero() {
                    glommio::timer::sleep(wait).await;
                }
            }
            continue;
        }

        // Wait for replies; in the open loop with room left, only until the next request is due.
        let room = inflight.len() < depth;
        let read = match next_due {
            Some(due) if !done_sending && room => {
                let wait = due.saturating_duration_since(Instant::now());
                if wait.is_zero() {
                    continue;
                }
                // glommio reads are readiness-based: a read dropped because the timer won consumed nothing.
                let reading =
                    async { Some(stream.read_within(replies.spare(), cfg.timeout).await) };
                let timer = async {
                    glommio::timer::sleep(wait).await;
                    None
                };
                match futures_lite::future::or(reading, timer).await {
                    Some(r) => r,
                    None => continue,
                }
            }
            _ => stream.read_within(replies.spare(), cfg.timeout).await,
        };
        let n = match ConnError::from_read(read, &addr, cfg.timeout) {
            Ok(n) => n,
            Err(e) => {
                fail(&state, &mut inflight, &e);
                match reconnect(&plan, &setup, &names).await {
                    Some(s) => {
                        stream = s;
                        replies.reset();
                        continue;
                    }
                    None => return,
                }
            }
        };
        let now = Instant::now();
        replies.filled(n);
        // A request that fell due while this connection had no room is late because of `-P`/`-c`
        // (or the server), not because the client was busy.
        was_full = !room && !done_sending && next_due.is_some_and(|d| now > d + LATE);
        let mut got = 0u64;
        // Set when the stream can no longer be trusted (not RESP, or more replies than requests).
        let mut garbled = false;
        loop {
            let (event, raw) = match replies.next_reply() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    fail(
                        &state,
                        &mut inflight,
                        &ConnError::Protocol(format!("{addr}: {e}")),
                    );
                    garbled = true;
                    break;
                }
            };
            match event {
                Scanned::Reply { error } => {
                    let Some(f) = inflight.pop_front() else {
                        let e = ConnError::Protocol(format!(
                            "{addr}: the server sent more replies than requests"
                        ));
                        state.stats.borrow_mut().note_conn_error(&e.to_string());
                        garbled = true;
                        break;
                    };
                    if error {
                        note_error(&state, &plan, raw);
                    }
                    let lat = now.saturating_duration_since(f.intended).as_nanos() as u64;
                    state.record(now, lat, 1);
                    let mut st = state.stats.borrow_mut();
                    if let Some(svc) = st.service.as_mut() {
                        let service = now.saturating_duration_since(f.sent).as_nanos() as u64;
                        svc.saturating_record(service.max(1));
                    }
                    if mixed && let Some(part) = st.parts.get_mut(f.kind) {
                        part.hist.saturating_record(lat.max(1));
                        part.completed += 1;
                        part.errors += u64::from(error);
                    }
                    drop(st);
                    got += 1;
                }
                Scanned::Push => {}
            }
        }
        if got > 0 {
            plan.live
                .publish(state.stats.borrow().completed, state.latency_sum_ns.get());
        }
        if (inflight.is_empty() && !cfg.keepalive && !done_sending) || garbled {
            match reconnect(&plan, &setup, &names).await {
                Some(s) => {
                    stream = s;
                    replies.reset();
                }
                None => return,
            }
        }
    }
}

/// Fails the requests a broken connection had in flight.
fn fail(state: &crate::engine::ShardState, inflight: &mut VecDeque<Flight>, e: &ConnError) {
    let mut st = state.stats.borrow_mut();
    st.failed += inflight.len() as u64;
    st.timed_out += u64::from(matches!(e, ConnError::Timeout { .. })) * inflight.len() as u64;
    st.note_conn_error(&e.to_string());
    inflight.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_interleave_into_one_even_stream() {
        let t0 = Instant::now();
        let rps = 1000.0;
        let conns = 4;
        let mut all: Vec<u128> = (0..conns)
            .flat_map(|c| {
                let p = Pacing::new(t0, c, conns, rps);
                (0..250).map(move |i| p.intended(i).duration_since(t0).as_micros())
            })
            .collect();
        all.sort();
        assert_eq!(all.len(), 1000);
        for (j, t) in all.iter().enumerate() {
            assert_eq!(*t, j as u128 * 1000, "request {j}");
        }
    }
}
