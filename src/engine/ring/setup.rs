//! How a driver's connections start: each one's requests and their buffers, keys, pacing and
//! verifier, built from the shard's plan and its socket when the driver takes them over
//! ([`Driver::new`]); and which of the test's commands are GETs.

use super::*;
use crate::workload::keys::Cursors;

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
        let depth = cfg.run.pipeline;
        let (fd, tls) = match sock {
            Some((fd, tls)) => (Some(fd), tls),
            None => (None, None),
        };
        let seed = if cfg.run.same_seed {
            cfg.run.seed
        } else {
            crate::workload::keys::connection_seed(cfg.run.seed, plan.index, i)
        };
        let (requests, out, flights) = self.requests(i);
        // Under a layer (`--cluster`) redirected requests are sent again: their replies are no answer.
        let retried = self.layered;
        // A layer paces its own requests.
        let pacing = plan.pacing(began, i).filter(|_| !self.layered);
        Conn {
            phase: if fd.is_some() {
                Phase::Live
            } else {
                Phase::Done
            },
            fd,
            generation: 0,
            recv_armed: false,
            send_pending: false,
            out,
            sealed: Vec::new(),
            out_len: 0,
            out_at: 0,
            requests,
            due: 0,
            batch_sent: began,
            flights,
            reader: InPlaceScanner::default(),
            left: cfg.run.per_connection.unwrap_or(u64::MAX),
            verify: self
                .values
                .as_ref()
                .map(|v| Box::new(Verifier::new(v.clone(), depth, retried))),
            keys: plan.keys(&self.cursor, i),
            rng: SmallRng::seed_from_u64(seed),
            next_due: pacing.as_ref().map(|p| p.intended(0)),
            pacing,
            seq: 0,
            done_sending: false,
            room_at: began,
            last_progress: began,
            restart_clock: false,
            queued: false,
            renew: false,
            since_open: 0,
            attempt: 0,
            retry_at: began,
            fresh: true,
            refused: false,
            tls: tls.map(TlsSession::new),
            opening: None,
            connect_pending: false,
            open_error: None,
        }
    }

    /// What fills connection `i`'s sends, the buffer it writes them into, and its queue of requests
    /// waiting for their replies.
    fn requests(&self, i: usize) -> (Requests, Vec<u8>, VecDeque<Flight>) {
        let plan = self.plan;
        let depth = plan.cfg.run.pipeline;
        match (&plan.test.replay, self.composer) {
            _ if self.layered => (Requests::Raw, Vec::new(), VecDeque::new()),
            (Some(r), _) => (
                Requests::Replay(r.clone(), plan.first_client + i),
                Vec::with_capacity(depth * r.max_request_len()),
                VecDeque::with_capacity(depth),
            ),
            (None, Some(c)) => (
                Requests::Composed(c.clone()),
                Vec::with_capacity(depth * c.max_request_len()),
                VecDeque::with_capacity(depth),
            ),
            (None, None) => (
                match self.shared {
                    Some(b) => Requests::Shared(b.clone()),
                    None => Requests::Fixed(PipelineBuffer::new(&plan.test.template, depth)),
                },
                Vec::new(),
                VecDeque::new(),
            ),
        }
    }
}
