//! How a driver's connections start: each one's requests and their buffers, keys, pacing and
//! verifier, built from the shard's plan and its socket when the driver takes them over
//! ([`Driver::new`]); and which of the test's commands are GETs.

use super::conn::{Conn, InFlight, Life, Reader, Requests, Socket, Source, Transport};
use crate::engine::shared::ShardPlan;
use crate::workload::PipelineBuffer;
use crate::workload::compose::Composer;
use crate::workload::keys::Cursors;
use crate::workload::verify::{Values, Verifier};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// Per command of the test (its mix's, else the test's own): whether it is a GET.
pub(super) fn gets(plan: &ShardPlan, composer: &Option<Arc<Composer>>) -> Vec<bool> {
    match (composer, &plan.test.replay) {
        (Some(c), _) => c.variants().iter().map(|v| v.command == "GET").collect(),
        (None, Some(r)) => r
            .names()
            .iter()
            .map(|n| n.eq_ignore_ascii_case("GET"))
            .collect(),
        (None, None) => vec![plan.test.command == "GET"],
    }
}

/// What every connection of a new driver is built from: the shard's, shared by its connections.
pub(super) struct ConnSetup<'s> {
    pub(super) plan: &'s ShardPlan,
    pub(super) composer: &'s Option<Arc<Composer>>,
    /// Requests without placeholders: one buffer of them for the executor.
    pub(super) shared: &'s Option<Rc<PipelineBuffer>>,
    /// `--data-verify`'s read pass: the values the connections' comparators expect.
    pub(super) values: &'s Option<Rc<Values>>,
    pub(super) cursor: Rc<Cursors>,
    /// Under a layer (`--cluster`), which writes each connection's requests and paces them.
    pub(super) layered: bool,
    pub(super) began: Instant,
}

impl ConnSetup<'_> {
    /// Connection `i` over `sock` (`None`: a slot a layer connects later, done until then).
    pub(super) fn conn(&self, i: usize, sock: Option<Socket>) -> Conn {
        let (plan, began) = (self.plan, self.began);
        let cfg = &*plan.cfg;
        let depth = cfg.load.pipeline;
        let (fd, tls) = match sock {
            Some((fd, tls)) => (Some(fd), tls),
            None => (None, None),
        };
        let seed = if cfg.load.same_seed {
            cfg.load.seed
        } else {
            crate::workload::keys::connection_seed(cfg.load.seed, plan.index, i)
        };
        let (requests, out, capacity) = self.requests(i);
        // Under a layer (`--cluster`) redirected requests are sent again: their replies are no answer.
        let retried = self.layered;
        // A layer paces its own requests.
        let pacing = plan.pacing(began, i).filter(|_| !self.layered);
        Conn {
            io: Transport::new(fd, tls),
            src: Source::new(
                requests,
                out,
                plan.keys(&self.cursor, i),
                SmallRng::seed_from_u64(seed),
                cfg.load.per_connection.unwrap_or(u64::MAX),
                pacing,
            ),
            flight: InFlight::new(capacity, began),
            rx: Reader::new(
                self.values
                    .as_ref()
                    .map(|v| Verifier::new(v.clone(), depth, retried)),
            ),
            life: Life::new(began),
        }
    }

    /// What fills connection `i`'s sends, the buffer it writes them into, and how many requests it
    /// keeps one by one while they wait for their replies.
    fn requests(&self, i: usize) -> (Requests, Vec<u8>, usize) {
        let plan = self.plan;
        let depth = plan.cfg.load.pipeline;
        match (&plan.test.replay, self.composer) {
            _ if self.layered => (Requests::Raw, Vec::new(), 0),
            (Some(r), _) => (
                Requests::Replay(r.clone(), plan.first_client + i),
                Vec::with_capacity(depth * r.max_request_len()),
                depth,
            ),
            (None, Some(c)) => (
                Requests::Composed(c.clone()),
                Vec::with_capacity(depth * c.max_request_len()),
                depth,
            ),
            (None, None) => (
                match self.shared {
                    Some(b) => Requests::Shared(b.clone()),
                    None => Requests::Fixed(PipelineBuffer::new(&plan.test.template, depth)),
                },
                Vec::new(),
                0,
            ),
        }
    }
}

/// A slot a layer adds during the run (a node that appeared), closed until the layer opens it: its
/// requests are the layer's (retried after redirects), its keys and draws unused.
pub(super) fn added(plan: &ShardPlan, values: &Option<Rc<Values>>, now: Instant) -> Conn {
    let depth = plan.cfg.load.pipeline;
    Conn {
        io: Transport::new(None, None),
        src: Source::new(
            Requests::Raw,
            Vec::new(),
            plan.keys(&plan.cursors(), 0),
            SmallRng::seed_from_u64(0),
            u64::MAX,
            None,
        ),
        flight: InFlight::new(0, now),
        rx: Reader::new(
            values
                .as_ref()
                .map(|v| Verifier::new(v.clone(), depth, true)),
        ),
        life: Life::new(now),
    }
}
