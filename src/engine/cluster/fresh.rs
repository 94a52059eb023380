//! Lean clients: closed loop, a fixed layout, and a key whose slot follows from the numbers drawn for
//! it. Such a client builds each request straight into its node's stage, as the bytes it is sent as;
//! a key drawn for a busy node waits there and leaves with that node's next batch in one copy, and its
//! reply is counted with its batch. A staged or sent request holds room in the pool but no entry of
//! it: it takes one, rebuilt from its numbers, only when something other than its reply happens to it
//! (a redirect, a wait, a loss, the end of the run), and goes on as any pooled request.

use super::stage::LeanKey;
use super::{Client, ClusterLayer, NO_CONN, Req};
use crate::protocol::cluster::UNASSIGNED;
use crate::protocol::digits::digit_pairs;
use std::time::Instant;

/// Placeholders a request may have and still draw its numbers onto the stack.
const FEW: usize = 4;

impl ClusterLayer<'_> {
    /// True while connection `j` owes replies (to pooled requests or staged ones).
    pub(super) fn owes(&self, j: usize) -> bool {
        !self.owed[j].is_empty() || self.flight[j].owed > 0
    }

    /// Replies connection `j` owes.
    pub(super) fn owed_len(&self, j: usize) -> usize {
        self.owed[j].len() + self.flight[j].owed
    }

    /// The slot of a lean request whose placeholders hold `nums`.
    fn lean_slot(&self, nums: &[u64]) -> u16 {
        match (self.lean, &self.digits) {
            (Some(LeanKey::Fixed(s)), _) => s,
            (_, Some((index, slots))) => slots.slot(nums[*index]),
            // Not reached: a lean layer has one of the two.
            _ => 0,
        }
    }

    /// Lean client `c` draws one request and stages it for its slot's node; returns the node, or
    /// `None` when the slot has no owner now (the request takes a pool entry and waits on the retry
    /// list). The caller checked that the pool has room.
    pub(super) fn build_staged(&mut self, c: usize) -> Option<usize> {
        if let (Some(one), Some((_, slots))) = (self.one, &self.digits) {
            // One number: divided once into digit pairs, for the digits and for the slot.
            let Client { keys, rng, .. } = &mut self.clients[c];
            let v = keys.next_group(one.group, rng);
            let pairs = digit_pairs(v);
            let node = self.route(c, slots.slot_of_pairs(&pairs), 0);
            let cl = &mut self.clients[c];
            cl.fresh_held += 1;
            let Some(st) = cl.stage.get_mut(node) else {
                self.wait_for_slot(c, &[v]);
                return None;
            };
            st.push_one(one.offset, &pairs, v);
            return Some(node);
        }
        let t = &self.plan.test.template;
        let groups = t.rand_groups();
        let Client { keys, rng, .. } = &mut self.clients[c];
        if groups.len() <= FEW {
            // The usual request (a key or two): its numbers stay on the stack.
            let mut few = [0u64; FEW];
            for (n, &g) in few.iter_mut().zip(groups) {
                *n = keys.next_group(g, rng);
            }
            let per = groups.len();
            return self.stage_one(c, &few[..per]);
        }
        let mut nums = std::mem::take(&mut self.scratch);
        nums.clear();
        nums.extend(groups.iter().map(|&g| keys.next_group(g, rng)));
        let staged = self.stage_one(c, &nums);
        self.scratch = nums;
        staged
    }

    /// Stages client `c`'s request whose placeholders take `nums` (see [`Self::build_staged`]).
    #[inline]
    fn stage_one(&mut self, c: usize, nums: &[u64]) -> Option<usize> {
        let node = self.route(c, self.lean_slot(nums), 0);
        let cl = &mut self.clients[c];
        cl.fresh_held += 1;
        let Some(st) = cl.stage.get_mut(node) else {
            self.wait_for_slot(c, nums);
            return None;
        };
        st.push(&self.plan.test.template, nums);
        Some(node)
    }

    /// Client `c`'s request (placeholders `nums`) found no owner (or a node the map does not hold):
    /// it takes a pool entry and waits for its slot on the retry list.
    #[cold]
    #[inline(never)]
    fn wait_for_slot(&mut self, c: usize, nums: &[u64]) {
        let i = self.pooled(c, nums, 0);
        let cl = &mut self.clients[c];
        cl.retry.push(i);
        cl.wait = true;
    }

    /// Gives a staged request of client `c` (placeholders `nums`) a pool entry, built again from its
    /// numbers: `sent_ns` is the stamp of its send (0: not sent). Returns the entry.
    fn pooled(&mut self, c: usize, nums: &[u64], sent_ns: u64) -> u32 {
        let slot = self.lean_slot(nums);
        let cl = &mut self.clients[c];
        // A staged request holds room in the pool: an entry is free for it.
        let i = cl
            .free
            .pop()
            .expect("a staged request holds a pool entry's room");
        cl.fresh_held -= 1;
        let mut k = 0;
        cl.pipe.fill_request(i as usize, |_| {
            k += 1;
            nums[k - 1]
        });
        cl.reqs[i as usize] = Req {
            intended: sent_ns,
            first_sent: sent_ns,
            slot,
            target: UNASSIGNED,
            sent: sent_ns != 0,
            ..Req::default()
        };
        i
    }

    /// Lean client `c`'s staged requests for node `n`, unsent, to route again: onto its retry list.
    pub(super) fn unstage(&mut self, c: usize, n: usize) {
        if n >= self.clients[c].stage.len() {
            return;
        }
        let mut nums = std::mem::take(&mut self.scratch);
        while self.clients[c].stage[n].count > 0 {
            let st = &mut self.clients[c].stage[n];
            nums.clear();
            nums.extend_from_slice(st.back());
            st.pop();
            let i = self.pooled(c, &nums, 0);
            self.clients[c].retry.push(i);
        }
        self.scratch = nums;
    }

    /// Drops lean client `c`'s staged requests (the end of `--duration`: never sent, not counted).
    pub(super) fn drop_staged(&mut self, c: usize) {
        let cl = &mut self.clients[c];
        for st in cl.stage.iter_mut() {
            cl.fresh_held -= st.count;
            st.clear();
        }
    }

    /// Writes the oldest `f` of client `c`'s staged requests for node `n` after what `out` holds (the
    /// send buffer of connection `j`, which owes nothing staged), telling `verify` their keys.
    pub(super) fn send_staged(
        &mut self,
        c: usize,
        n: usize,
        j: usize,
        f: usize,
        out: &mut Vec<u8>,
        verify: Option<&mut crate::workload::verify::Verifier>,
    ) {
        let fl = &mut self.flight[j];
        debug_assert_eq!(fl.owed, 0);
        fl.nums.clear();
        fl.sent = f;
        fl.owed = f;
        self.clients[c].stage[n].take(f, out, &mut fl.nums, verify);
    }

    /// Takes `n` replies to connection `conn`'s staged requests in flight; returns how many it owed.
    pub(super) fn answer_staged(&mut self, conn: usize, n: u64, now: Instant) -> u64 {
        let fl = &mut self.flight[conn];
        let m = (n as usize).min(fl.owed);
        let first = fl.sent - fl.owed;
        fl.owed -= m;
        let (c, node) = self.ends[conn];
        self.clients[c].fresh_held -= m;
        if self.watching {
            // A lost master's failover ends with the first reply for one of its slots from elsewhere.
            let g = self.clients[c].pipe.placeholders();
            let nums = std::mem::take(&mut self.flight[conn].nums);
            for k in first..first + m {
                let slot = self.lean_slot(&nums[k * g..(k + 1) * g]);
                self.note_answer(node, slot, now);
            }
            self.flight[conn].nums = nums;
        }
        m as u64
    }

    /// The next staged request in flight on connection `conn`, given a pool entry (its reply is not
    /// a plain completion); `None` when it owes none.
    pub(super) fn next_staged(&mut self, conn: usize) -> Option<u32> {
        let fl = &mut self.flight[conn];
        if fl.owed == 0 {
            return None;
        }
        let k = fl.sent - fl.owed;
        fl.owed -= 1;
        let c = self.ends[conn].0;
        let g = self.clients[c].pipe.placeholders();
        let nums = std::mem::take(&mut self.flight[conn].nums);
        let i = self.pooled(c, &nums[k * g..(k + 1) * g], self.sent_ns[conn]);
        self.flight[conn].nums = nums;
        Some(i)
    }

    /// Every staged request still in flight on connection `conn`, given pool entries (to retry).
    pub(super) fn land_staged(&mut self, conn: usize) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(i) = self.next_staged(conn) {
            out.push(i);
        }
        out
    }

    /// Forgets the staged requests in flight on connection `conn` (they failed or ended the run);
    /// returns how many.
    pub(super) fn forget_staged(&mut self, conn: usize) -> u64 {
        let fl = &mut self.flight[conn];
        let m = fl.owed;
        fl.owed = 0;
        let c = self.ends[conn].0;
        if c < self.clients.len() {
            self.clients[c].fresh_held -= m;
        }
        m as u64
    }

    /// Client `c`'s staged requests in flight, and those staged and not sent.
    pub(super) fn staged_counts(&self, c: usize) -> (u64, u64) {
        let cl = &self.clients[c];
        let sent = cl
            .links
            .iter()
            .filter(|&&j| j != NO_CONN)
            .map(|&j| self.flight[j].owed as u64)
            .sum();
        let unsent = cl.stage.iter().map(|s| s.count as u64).sum();
        (sent, unsent)
    }

    /// The slot of the first staged request connection `j` owes a reply to.
    pub(super) fn staged_slot(&self, j: usize) -> Option<u16> {
        let fl = &self.flight[j];
        if fl.owed == 0 {
            return None;
        }
        let g = self.clients[self.ends[j].0].pipe.placeholders();
        let k = fl.sent - fl.owed;
        Some(self.lean_slot(&fl.nums[k * g..(k + 1) * g]))
    }
}
