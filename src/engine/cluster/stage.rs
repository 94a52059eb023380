//! A lean client's staged requests ([`super::fresh`]): per node, the requests drawn and not yet sent,
//! as the bytes they are sent as, with their numbers; per connection, those of its last send; and
//! how a lean request finds its slot.

use crate::protocol::cluster;
use crate::protocol::digits::write_pairs;
use crate::workload::RequestTemplate;

/// Requests drawn for one node by one client and not yet sent, oldest first, from the start of a
/// buffer of copies of the request laid end to end (staging one patches only its digits; what a send
/// leaves moves to the front, so the part in use stays small and in the cache), and the numbers each
/// one's placeholders were filled with.
pub(super) struct Stage {
    bytes: Vec<u8>,
    nums: Vec<u64>,
    /// A request's length and placeholders.
    len: usize,
    per: usize,
    pub(super) count: usize,
}

impl Stage {
    /// A stage for up to `cap` requests of `t` (a client holds no more than its pool).
    pub(super) fn new(t: &RequestTemplate, cap: usize) -> Self {
        let per = t.rand_offsets().len();
        Stage {
            bytes: t.bytes().repeat(cap),
            nums: vec![0; per * cap],
            len: t.bytes().len(),
            per,
            count: 0,
        }
    }

    /// Stages a request of `t` whose placeholders take `nums`.
    pub(super) fn push(&mut self, t: &RequestTemplate, nums: &[u64]) {
        let s = self.count;
        t.patch(&mut self.bytes[s * self.len..(s + 1) * self.len], nums);
        self.nums[s * self.per..(s + 1) * self.per].copy_from_slice(nums);
        self.count += 1;
    }

    /// Stages a request of one placeholder, at `offset`, whose number `v` has the digit pairs `pairs`.
    #[inline]
    pub(super) fn push_one(&mut self, offset: usize, pairs: &[u8; 6], v: u64) {
        let s = self.count;
        let at = s * self.len + offset;
        write_pairs(&mut self.bytes[at..at + 12], pairs);
        self.nums[s] = v;
        self.count += 1;
    }

    /// The numbers of the newest staged request.
    pub(super) fn back(&self) -> &[u64] {
        let s = self.count - 1;
        &self.nums[s * self.per..(s + 1) * self.per]
    }

    /// Drops the newest staged request.
    pub(super) fn pop(&mut self) {
        self.count -= 1;
    }

    /// Drops every staged request.
    pub(super) fn clear(&mut self) {
        self.count = 0;
    }

    /// Takes the oldest `f` staged requests: their bytes onto `out` (telling `verify` each one's key)
    /// and their numbers onto `nums`.
    pub(super) fn take(
        &mut self,
        f: usize,
        out: &mut Vec<u8>,
        nums: &mut Vec<u64>,
        verify: Option<&mut crate::workload::verify::Verifier>,
    ) {
        let (len, per) = (self.len, self.per);
        let bytes = &self.bytes[..f * len];
        out.extend_from_slice(bytes);
        if let Some(v) = verify {
            for req in bytes.chunks_exact(len) {
                v.expect(crate::workload::verify::key_number(req).unwrap_or(u64::MAX));
            }
        }
        nums.extend_from_slice(&self.nums[..f * per]);
        let rest = self.count - f;
        self.bytes.copy_within(f * len..(f + rest) * len, 0);
        self.nums.copy_within(f * per..(f + rest) * per, 0);
        self.count = rest;
    }
}

/// A connection's staged requests in its last send: their numbers, how many were sent, and how many
/// replies of theirs are still owed (they come after every entry of the connection's `owed`).
#[derive(Default)]
pub(super) struct Flight {
    pub(super) nums: Vec<u64>,
    pub(super) sent: usize,
    pub(super) owed: usize,
}

/// How a lean client's request finds its slot.
#[derive(Clone, Copy)]
pub(super) enum LeanKey {
    /// From the number of its key's placeholder (the layer's `digits`).
    Digits,
    /// Every request has this one (a key without placeholders).
    Fixed(u16),
}

/// The usual lean request: one placeholder, the key's, whose number gives both its digits and its
/// slot ([`super::ClusterLayer::build_staged`]'s short way).
#[derive(Clone, Copy)]
pub(super) struct OneKey {
    pub(super) group: u8,
    pub(super) offset: usize,
}

impl OneKey {
    /// When requests of `t` have one placeholder, repeated nowhere, and it is the key's (`digits`:
    /// the key's placeholder index, when its slot follows from its number).
    pub(super) fn of(t: &RequestTemplate, digits: Option<usize>) -> Option<Self> {
        (digits == Some(0) && t.rand_offsets().len() == 1 && !t.shares_placeholders()).then(|| {
            OneKey {
                group: t.rand_groups()[0],
                offset: t.rand_offsets()[0],
            }
        })
    }
}

impl LeanKey {
    /// How requests of `t` find their slot, if they can be lean (`digits`: the layer reads the key's
    /// slot from its placeholder's number).
    pub(super) fn of(t: &RequestTemplate, digits: bool) -> Option<Self> {
        if digits {
            return Some(LeanKey::Digits);
        }
        let key = t.key_range()?;
        t.key_is_constant()
            .then(|| LeanKey::Fixed(cluster::slot_of(&t.bytes()[key])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> RequestTemplate {
        RequestTemplate::from_args(
            &[b"SET".to_vec(), b"key:__rand_int__".to_vec(), b"v".to_vec()],
            true,
        )
    }

    /// The bytes of the request whose placeholder takes `v`.
    fn request(v: u64) -> Vec<u8> {
        format!("*3\r\n$3\r\nSET\r\n$16\r\nkey:{v:012}\r\n$1\r\nv\r\n").into_bytes()
    }

    #[test]
    fn a_stage_hands_out_its_requests_oldest_first() {
        let t = template();
        let mut st = Stage::new(&t, 5);
        let (mut out, mut nums) = (Vec::new(), Vec::new());
        let mut next = 0u64;
        let mut expected = Vec::new();
        // Three rounds of up to four staged and three taken: what a send leaves moves to the front.
        for _ in 0..3 {
            for _ in 0..4.min(5 - st.count) {
                st.push(&t, &[next]);
                expected.push(next);
                next += 1;
            }
            st.take(3, &mut out, &mut nums, None);
        }
        st.take(st.count, &mut out, &mut nums, None);
        assert_eq!(st.count, 0);
        assert_eq!(nums, expected);
        let want: Vec<u8> = expected.iter().flat_map(|&v| request(v)).collect();
        assert_eq!(out, want);
    }

    #[test]
    fn the_newest_staged_request_is_the_back() {
        let t = template();
        let mut st = Stage::new(&t, 2);
        st.push(&t, &[7]);
        st.push(&t, &[8]);
        assert_eq!(st.back(), &[8]);
        st.pop();
        assert_eq!(st.back(), &[7]);
        st.push(&t, &[9]);
        assert_eq!(st.back(), &[9]);
        st.clear();
        assert_eq!(st.count, 0);
    }
}
