//! How a run is judged: `judge` reads a finished run against the objectives into a `Verdict` (passed, or
//! why not; whether the client, not the server, was the limit; whether the client's machine spoiled it;
//! borderline), with the words for an executor off a CPU and for requests that waited for their
//! connection; `carry_client_limit` gives a step the client limit one of its runs showed.

use crate::app::capacity::args::Objective;
use crate::app::capacity::machine::Machine;
#[cfg(test)]
use crate::app::capacity::machine::QUIET;
use crate::app::capacity::numbers::{fmt_ms, thousands};
use crate::stats::TestResult;

/// A step whose achieved rate is below this share of the offered one fails.
const REACHED: f64 = 0.95;

/// Fewer late sends than this never make a step client-limited (a few at a tiny rate are noise).
const MIN_LATE: u64 = 10;

/// Whether a step passed, and why not.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub pass: bool,
    pub reasons: Vec<String>,
    /// The busiest executor's CPU share of the step.
    pub busy: f64,
    /// Failed with an executor busy at least `cost::BUSY_WARNING`, or with more than 1% of the requests
    /// sent late while their connection had room (the client fell behind its own schedule).
    pub client_limited: bool,
    /// Client-limited although no executor was busy: it fell behind while off a CPU (other processes held
    /// the cores). Such a step says nothing about the server, so the search runs it again.
    pub starved: bool,
    /// Passed, but a percentile is within the borderline margin of its objective.
    pub borderline: bool,
    /// Why the client spoiled a failing run (it fell behind while off a CPU, or the hypervisor stole CPU
    /// time): such a run says nothing about the server and is run again.
    pub spoiled: Option<String>,
    /// What the machine's CPUs did during the run (steal, idle).
    pub machine: Machine,
    /// The server's CPU during the run, in cores (INFO `used_cpu_user` + `used_cpu_sys` over the run's
    /// time; under `--cluster` the masters' sum); `None` without the server's view.
    pub server_busy: Option<f64>,
    /// Requests sent over 1 ms late while their connection had room.
    pub late: u64,
    /// A failing run whose server met the objectives (service time, from each actual send) while
    /// requests waited for their connection: why, in words.
    pub waited: Option<String>,
}

/// A client that fell behind while off a CPU with at least this share of the machine idle was not
/// crowded out by other processes: its wake-ups came late (the kernel's or the hypervisor's timers).
const IDLE_WOKEN_LATE: f64 = 0.25;

/// Why an executor that fell behind its schedule was off a CPU: crowded out, or woken late.
pub(super) fn off_cpu_cause(idle: f64) -> String {
    if idle >= IDLE_WOKEN_LATE {
        format!(
            "the machine was {:.0}% idle, so nothing held its cores: its wake-ups came late (the kernel's \
             or the hypervisor's timers)",
            idle * 100.0
        )
    } else {
        format!(
            "other processes held its cores (the machine was {:.0}% idle)",
            idle * 100.0
        )
    }
}

/// Why a failing run failed when the server met every objective from each request's actual send (its
/// service time) and requests were sent over 1 ms late because their connection already had `-P`
/// waiting: the latency over the objective was spent waiting for a connection (one behind its schedule
/// sends each request as the last reply comes), not in the server. `None` otherwise.
fn waited_text(r: &TestResult, objectives: &[Objective]) -> Option<String> {
    let st = &r.stats;
    let service = st.service.as_ref().filter(|h| !h.is_empty())?;
    if st.late_full < MIN_LATE || st.late_full <= st.late_free {
        return None;
    }
    let mut within = Vec::new();
    for o in objectives {
        let v = service.value_at_quantile(o.percentile / 100.0) as f64 / 1e6;
        if v > o.max_ms {
            return None;
        }
        within.push(format!("{} {} ms", o.label(), fmt_ms(v)));
    }
    let slots = r.rate.map_or(0, |t| t.slots);
    Some(format!(
        "the server answered within the objective from each request's actual send (service time {}); \
         the time over it was spent before the send: {} requests waited over 1 ms for their connection \
         (-P already waiting), their connections behind schedule. The answer is the limit of {slots} \
         requests in flight (-c x -P) on this machine, not of the server alone",
        within.join(", "),
        thousands(st.late_full as f64)
    ))
}

/// A failing run during which the hypervisor stole at least this share of the machine's CPU time was
/// spoiled by the client's machine.
const STEAL_SPOILS: f64 = 0.02;

/// Judges a finished step against the objectives; `machine` is what the machine's CPUs did during it.
pub(super) fn judge(
    r: &TestResult,
    offered: f64,
    objectives: &[Objective],
    borderline: f64,
    machine: Machine,
) -> Verdict {
    let mut reasons = Vec::new();
    for o in objectives {
        let v = r.quantile_ms(o.percentile / 100.0);
        if v > o.max_ms {
            reasons.push(format!(
                "{} {} ms > {} ms",
                o.label(),
                fmt_ms(v),
                fmt_ms(o.max_ms)
            ));
        }
    }
    let achieved = r.rps();
    if achieved < REACHED * offered {
        reasons.push(format!(
            "achieved {:.1}% of offered",
            100.0 * achieved / offered
        ));
    }
    if r.stats.failed > 0 {
        reasons.push(format!("{} requests failed", r.stats.failed));
    }
    if r.stats.errors > 0 {
        reasons.push(format!("{} error replies", r.stats.errors));
    }
    let busy = r
        .stats
        .executors
        .iter()
        .map(crate::stats::ExecutorStats::busy)
        .fold(0.0, f64::max);
    let pass = reasons.is_empty();
    let st = &r.stats;
    let late_with_room = client_held_back(r, achieved, offered);
    let saturated = busy >= crate::stats::cost::BUSY_WARNING;
    let starved = !pass && late_with_room && !saturated;
    let near = pass
        && borderline > 0.0
        && objectives
            .iter()
            .any(|o| r.quantile_ms(o.percentile / 100.0) >= o.max_ms * (1.0 - borderline));
    let spoiled = if starved {
        Some(format!(
            "behind its schedule while off a CPU (executor on a CPU {:.0}% of the step, {} sent late with room; {})",
            busy * 100.0,
            st.late_free,
            off_cpu_cause(machine.idle)
        ))
    } else if !pass && machine.steal >= STEAL_SPOILS {
        Some(format!(
            "CPU steal {:.1}% of the machine",
            machine.steal * 100.0
        ))
    } else {
        None
    };
    let client_limited = !pass && (saturated || late_with_room);
    let waited = if pass || client_limited {
        None
    } else {
        waited_text(r, objectives)
    };
    let server_busy = r
        .server
        .as_ref()
        .filter(|_| r.seconds > 0.0)
        .map(|v| v.cpu_s() / r.seconds);
    Verdict {
        pass,
        waited,
        server_busy,
        client_limited,
        starved,
        borderline: near,
        spoiled,
        machine,
        late: st.late_free,
        reasons,
        busy,
    }
}

/// Whether the client, not the server, held requests back during a run that achieved `achieved` of the
/// `offered` rate: it sent requests late although their connection had room, or it fell short of the
/// rate with the connections mostly empty.
fn client_held_back(r: &TestResult, achieved: f64, offered: f64) -> bool {
    let st = &r.stats;
    // Requests sent late although their connection had room: the client, not the server, held them.
    let late_with_room = st.late_free > st.late_full
        && st.late_free >= MIN_LATE
        && st.late_free * 100 > st.completed.max(1);
    // Short of the rate with the connections mostly empty: by Little's law the requests in flight were
    // the achieved rate times the service time (from the actual send); a server that held the rate back
    // would have held every slot. Under half of them in flight, the client did not send (it sent too
    // little to count many late sends when it was off a CPU most of the step).
    let slots = r.rate.map_or(0, |t| t.slots) as f64;
    // Nothing answered (no service time): the requests the step left unanswered are those in
    // flight. None sent to a server that took the connections is a client that never ran its
    // schedule (a step entirely off a CPU); a server that held the rate back would have them all.
    let in_flight = st
        .service
        .as_ref()
        .filter(|h| !h.is_empty())
        .map(|h| achieved * h.mean() / 1e9)
        .or_else(|| {
            (st.completed == 0 && st.conn_errors.is_empty())
                .then_some((st.in_flight + st.failed) as f64)
        });
    let idle_slots =
        achieved < REACHED * offered && slots > 0.0 && in_flight.is_some_and(|n| n < 0.5 * slots);
    late_with_room || idle_slots
}

/// A step that failed with the client as the limit in one of its runs (`client`, the first such) says
/// so in its verdict `v`, even when its last run fell short for a reason the client cannot see, and
/// gives that run's figures (not the last run's, which did not show it).
pub(super) fn carry_client_limit(v: &mut Verdict, client: Option<Verdict>) {
    if let Some(c) = client.filter(|_| !v.pass && !v.client_limited) {
        v.client_limited = true;
        // The client, not a wait for connections, is then what the step says failed it.
        v.waited = None;
        v.starved = c.starved;
        v.busy = c.busy;
        v.machine = c.machine;
        v.late = c.late;
    }
}

/// A verdict for tests (here, in `search.rs` and in `step.rs`): passed, or failed for one reason (`x`),
/// with nothing else to say.
#[cfg(test)]
pub(super) fn verdict(pass: bool) -> Verdict {
    Verdict {
        pass,
        reasons: if pass { vec![] } else { vec!["x".into()] },
        busy: 0.5,
        client_limited: false,
        starved: false,
        borderline: false,
        spoiled: None,
        machine: QUIET,
        server_busy: None,
        late: 0,
        waited: None,
    }
}

#[cfg(test)]
mod tests {
    use super::{Verdict, carry_client_limit, judge, verdict};
    use crate::app::capacity::args::parse_slo;
    use crate::app::capacity::machine::{Machine, QUIET};
    use crate::app::capacity::search::{Answer, Judged};
    use crate::app::capacity::text::answer_text;
    use crate::config::shape::RateTarget;
    use crate::stats::TestResult;

    fn result_with(completed: u64, seconds: f64, busy: f64, late_free: u64) -> TestResult {
        let mut st = crate::stats::ShardStats::new(3);
        st.hist.record_n(100_000, completed).unwrap();
        st.completed = completed;
        st.late_free = late_free;
        st.executors.push(crate::stats::ExecutorStats {
            cpu_user_s: busy * seconds,
            wall_s: seconds,
            ..Default::default()
        });
        let mut r = TestResult::new("t".into(), completed, st);
        r.seconds = seconds;
        r
    }

    #[test]
    fn a_step_whose_server_met_the_objective_says_its_requests_waited_for_their_connections() {
        let slo = parse_slo("p99=1ms").unwrap();
        // p99 5 ms from the intended sends, 0.2 ms from the actual ones, 40 sent late behind a full
        // pipeline: the time over the objective was spent waiting for a connection.
        let waiting = |late_full: u64, service_ns: u64| {
            let mut r = result_with(1000, 1.0, 0.5, 0);
            r.stats.hist.reset();
            r.stats.hist.record_n(5_000_000, 1000).unwrap();
            let mut svc = crate::stats::new_histogram(3);
            svc.record_n(service_ns, 1000).unwrap();
            r.stats.service = Some(svc);
            r.stats.late_full = late_full;
            r.rate = Some(RateTarget {
                rps: 1000.0,
                slots: 50,
            });
            r
        };
        let v = judge(&waiting(40, 200_000), 1000.0, &slo, 0.0, QUIET);
        assert!(!v.pass && !v.client_limited, "{v:?}");
        let w = v.waited.as_deref().expect("the wait is named");
        assert!(
            w.contains("service time p99 0.2 ms")
                && w.contains("40 requests waited")
                && w.contains("50"),
            "{w}"
        );
        let steps = [Judged {
            offered: 1000.0,
            verdict: v,
        }];
        let a = Answer {
            capacity: None,
            next: Some(0),
        };
        let text = answer_text(&steps, &a, &slo, 1000.0, 1, false);
        assert!(
            text.contains("in-flight limit: at 1,000 rps the server answered"),
            "{text}"
        );
        // A step made client-limited by an earlier run of it (carry_client_limit) names the client,
        // not a wait for connections.
        let mut carried = judge(&waiting(40, 200_000), 1000.0, &slo, 0.0, QUIET);
        carry_client_limit(
            &mut carried,
            Some(Verdict {
                client_limited: true,
                busy: 0.95,
                ..verdict(false)
            }),
        );
        let steps = [Judged {
            offered: 1000.0,
            verdict: carried,
        }];
        let text = answer_text(&steps, &a, &slo, 1000.0, 1, false);
        assert!(
            text.contains("client-limited:") && !text.contains("in-flight limit"),
            "{text}"
        );
        // The server over the objective itself, or no sends held behind a full pipeline: not said.
        assert_eq!(
            judge(&waiting(40, 3_000_000), 1000.0, &slo, 0.0, QUIET).waited,
            None
        );
        assert_eq!(
            judge(&waiting(0, 200_000), 1000.0, &slo, 0.0, QUIET).waited,
            None
        );
    }

    #[test]
    fn verdicts_name_the_limit() {
        let slo = parse_slo("p99=1ms").unwrap();
        // Reached, fast: pass.
        let v = judge(&result_with(1000, 1.0, 0.5, 0), 1000.0, &slo, 0.0, QUIET);
        assert!(v.pass && !v.client_limited, "{v:?}");
        // Short of the rate with a saturated executor: the client is the limit.
        let v = judge(&result_with(800, 1.0, 0.95, 0), 1000.0, &slo, 0.0, QUIET);
        assert!(!v.pass && v.client_limited && !v.starved, "{v:?}");
        assert_eq!(v.reasons, ["achieved 80.0% of offered"]);
        // Short with an idle executor and no late sends: the server.
        let v = judge(&result_with(800, 1.0, 0.3, 0), 1000.0, &slo, 0.0, QUIET);
        assert!(!v.pass && !v.client_limited, "{v:?}");
        // Late with room while off a CPU: starved, run again.
        let v = judge(&result_with(800, 1.0, 0.3, 100), 1000.0, &slo, 0.0, QUIET);
        assert!(v.client_limited && v.starved, "{v:?}");
        // Over the objective.
        let v = judge(
            &result_with(1000, 1.0, 0.3, 0),
            1000.0,
            &parse_slo("p50=50us").unwrap(),
            0.0,
            QUIET,
        );
        assert_eq!(v.reasons, ["p50 0.1 ms > 0.05 ms"]);
        let steps = [
            Judged {
                offered: 500.0,
                verdict: judge(&result_with(500, 1.0, 0.5, 0), 500.0, &slo, 0.0, QUIET),
            },
            Judged {
                offered: 1000.0,
                verdict: judge(&result_with(800, 1.0, 0.95, 0), 1000.0, &slo, 0.0, QUIET),
            },
        ];
        let a = Answer {
            capacity: Some(0),
            next: Some(1),
        };
        let text = answer_text(&steps, &a, &slo, 1000.0, 1, false);
        assert!(
            text.starts_with(
                "capacity: 500 rps at p99 <= 1 ms (next step 1,000 rps: achieved 80.0% of offered)\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("client-limited: the client was the limit at 1,000 rps"),
            "{text}"
        );
        assert!(
            text.contains("busy 95%") && text.contains("--threads 1"),
            "{text}"
        );
    }

    #[test]
    fn a_step_client_limited_by_an_earlier_run_quotes_that_runs_figures() {
        // The first run: 94% busy with 50 sent late, client-limited. The confirming run fails too, at
        // 85% with none late: the step is client-limited, and says so with the first run's figures.
        let first = Verdict {
            client_limited: true,
            busy: 0.94,
            late: 50,
            machine: Machine {
                steal: 0.0,
                idle: 0.1,
            },
            ..verdict(false)
        };
        let mut last = Verdict {
            busy: 0.85,
            ..verdict(false)
        };
        carry_client_limit(&mut last, Some(first.clone()));
        assert!(last.client_limited && !last.starved, "{last:?}");
        assert_eq!((last.busy, last.late, last.machine.idle), (0.94, 50, 0.1));
        // A last run that passed, or one client-limited itself, keeps its own verdict.
        let mut passed = verdict(true);
        carry_client_limit(&mut passed, Some(first.clone()));
        assert_eq!(passed, verdict(true));
        let own = Verdict {
            client_limited: true,
            busy: 0.97,
            late: 3,
            ..verdict(false)
        };
        let mut v = own.clone();
        carry_client_limit(&mut v, Some(first));
        assert_eq!(v, own);
    }

    #[test]
    fn spoiled_and_borderline_runs_are_recognised() {
        let slo = parse_slo("p99=1ms").unwrap();
        // Off a CPU and behind its schedule: spoiled. With the machine busy, other processes held the
        // cores; with it mostly idle, nothing did: the executor's wake-ups came late.
        let v = judge(&result_with(800, 1.0, 0.3, 100), 1000.0, &slo, 0.1, QUIET);
        let why = v.spoiled.as_deref().unwrap();
        assert!(
            why.contains("off a CPU") && why.contains("other processes held"),
            "{v:?}"
        );
        let idle = Machine {
            steal: 0.0,
            idle: 0.6,
        };
        let v = judge(&result_with(800, 1.0, 0.3, 100), 1000.0, &slo, 0.1, idle);
        let why = v.spoiled.as_deref().unwrap();
        assert!(
            why.contains("60% idle") && why.contains("wake-ups came late"),
            "{v:?}"
        );
        assert!(!why.contains("other processes"), "{v:?}");
        // CPU steal during a failing run: spoiled; during a passing one: nothing to retry.
        let stolen = Machine {
            steal: 0.05,
            idle: 0.5,
        };
        let v = judge(&result_with(800, 1.0, 0.3, 0), 1000.0, &slo, 0.1, stolen);
        assert_eq!(v.spoiled.as_deref(), Some("CPU steal 5.0% of the machine"));
        let v = judge(&result_with(1000, 1.0, 0.3, 0), 1000.0, &slo, 0.1, stolen);
        assert!(v.pass && v.spoiled.is_none(), "{v:?}");
        // Short of the rate with the slots mostly empty (0.8 in flight of 10 by Little's law): the
        // client did not send, although it counted few late sends.
        let mut r = result_with(800, 1.0, 0.3, 0);
        r.rate = Some(RateTarget {
            rps: 1000.0,
            slots: 10,
        });
        let mut service = crate::stats::new_histogram(3);
        service.record_n(1_000_000, 800).unwrap();
        r.stats.service = Some(service);
        let v = judge(&r, 1000.0, &slo, 0.1, QUIET);
        assert!(
            v.client_limited && v.starved && v.spoiled.is_some(),
            "{v:?}"
        );
        // The same shortfall with every slot full (10 in flight): the server.
        let mut service = crate::stats::new_histogram(3);
        service.record_n(12_500_000, 800).unwrap();
        r.stats.service = Some(service);
        let v = judge(&r, 1000.0, &slo, 0.1, QUIET);
        assert!(!v.client_limited && v.spoiled.is_none(), "{v:?}");
        // Nothing sent and nothing answered, the connections up: the client never ran its schedule.
        let mut idle = result_with(0, 0.3, 0.0, 0);
        idle.rate = Some(RateTarget {
            rps: 1000.0,
            slots: 10,
        });
        let v = judge(&idle, 1000.0, &slo, 0.1, QUIET);
        assert!(
            v.client_limited && v.starved && v.spoiled.is_some(),
            "{v:?}"
        );
        // Every slot sent and none answered: the server.
        idle.stats.in_flight = 10;
        let v = judge(&idle, 1000.0, &slo, 0.1, QUIET);
        assert!(!v.client_limited && v.spoiled.is_none(), "{v:?}");
        // Nothing sent because the connections failed: not the client's schedule.
        idle.stats.in_flight = 0;
        idle.stats.conn_errors.push("refused".into());
        let v = judge(&idle, 1000.0, &slo, 0.1, QUIET);
        assert!(!v.client_limited && v.spoiled.is_none(), "{v:?}");
        // Saturated: the client's ceiling, not spoiled (a rerun would say the same).
        let v = judge(&result_with(800, 1.0, 0.95, 0), 1000.0, &slo, 0.1, QUIET);
        assert!(v.client_limited && v.spoiled.is_none(), "{v:?}");
        // p99 of 0.1 ms against 0.105 ms: within 10%, borderline; against 1 ms: not.
        let tight = parse_slo("p99=105us").unwrap();
        let v = judge(&result_with(1000, 1.0, 0.3, 0), 1000.0, &tight, 0.1, QUIET);
        assert!(v.pass && v.borderline, "{v:?}");
        let v = judge(&result_with(1000, 1.0, 0.3, 0), 1000.0, &tight, 0.0, QUIET);
        assert!(v.pass && !v.borderline, "{v:?}");
        let v = judge(&result_with(1000, 1.0, 0.3, 0), 1000.0, &slo, 0.1, QUIET);
        assert!(v.pass && !v.borderline, "{v:?}");
    }
}
