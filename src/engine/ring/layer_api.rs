//! What a layer (`--cluster`) asks of the driver: connection slots added as nodes appear, each
//! connection's state, and its send buffer (checked: never while the kernel reads it).

use super::*;

impl Driver<'_> {
    /// Adds a connection slot with no socket (a layer's, for a node that appeared during the run) and
    /// returns its index; [`Self::open`] connects it.
    pub(crate) fn add_connection(&mut self) -> usize {
        let now = Instant::now();
        self.conns.push(Conn {
            fd: None,
            generation: 0,
            phase: Phase::Done,
            recv_armed: false,
            send_pending: false,
            out: Vec::new(),
            sealed: Vec::new(),
            out_len: 0,
            out_at: 0,
            requests: Requests::Raw,
            due: 0,
            batch_sent: now,
            flights: VecDeque::new(),
            reader: InPlaceScanner::default(),
            left: u64::MAX,
            verify: self
                .values
                .as_ref()
                .map(|v| Box::new(Verifier::new(v.clone(), self.cfg.run.pipeline, true))),
            keys: self.plan.keys(&self.plan.cursors(), 0),
            rng: SmallRng::seed_from_u64(0),
            pacing: None,
            seq: 0,
            next_due: None,
            done_sending: false,
            room_at: now,
            last_progress: now,
            restart_clock: false,
            queued: false,
            renew: false,
            since_open: 0,
            fresh: true,
            refused: false,
            tls: None,
            attempt: 0,
            retry_at: now,
            opening: None,
            connect_pending: false,
            open_error: None,
        });
        self.done += 1;
        self.conns.len() - 1
    }

    /// True when connection `i` is connected and driven.
    pub(crate) fn is_live(&self, i: usize) -> bool {
        self.conns[i].phase == Phase::Live
    }

    /// True when slot `i` has no socket and nothing in the kernel: [`Self::open`] may use it.
    pub(crate) fn is_closed(&self, i: usize) -> bool {
        self.conns[i].phase == Phase::Done
    }

    /// True while connection `i` has a send in the kernel (its buffer must not change).
    pub(crate) fn is_sending(&self, i: usize) -> bool {
        self.conns[i].send_pending
    }

    /// Replies connection `i` still owes, and when it last sent or received.
    pub(crate) fn owed(&self, i: usize) -> (usize, Instant) {
        (self.conns[i].due, self.conns[i].last_progress)
    }

    /// Connection `i`'s send buffer, for a layer to write `replies` more requests into before [`Self::send`].
    /// Panics while a send is in the kernel ([`Self::is_sending`]): the bytes being sent are the
    /// send's then (out of reach: see `lent.rs`), and what comes back at its completion would replace
    /// what was written meanwhile.
    pub(crate) fn out(&mut self, i: usize, replies: usize) -> &mut Vec<u8> {
        let c = &mut self.conns[i];
        assert!(
            !c.send_pending,
            "connection {i}'s send buffer is in the kernel"
        );
        if c.out_len > 0 {
            // The last send is done: its bytes go.
            c.out.clear();
            c.out_len = 0;
        }
        c.restart_clock |= c.due == 0;
        c.due += replies;
        &mut c.out
    }

    /// [`Self::out`], with connection `i`'s `--data-verify` comparator (`None` when the test checks
    /// nothing): it is told the key of each request written to the buffer, in order.
    pub(crate) fn out_verified(
        &mut self,
        i: usize,
        replies: usize,
    ) -> (&mut Vec<u8>, Option<&mut Verifier>) {
        self.out(i, replies);
        let c = &mut self.conns[i];
        (&mut c.out, c.verify.as_deref_mut())
    }

    /// Sends connection `i`'s buffer; on failure the connection is shut and its requests are the
    /// caller's to retry.
    /// Panics while the last send is still in the kernel, as [`Self::out`].
    pub(crate) fn send(&mut self, i: usize, now: Instant) -> Result<(), ConnError> {
        let c = &mut self.conns[i];
        assert!(
            !c.send_pending,
            "connection {i}'s send buffer is in the kernel"
        );
        if std::mem::take(&mut c.restart_clock) {
            c.last_progress = now;
        }
        let r = self.start_send(i);
        if r.is_err() {
            self.conns[i].due = 0;
            self.shut(i);
        }
        r
    }
}
