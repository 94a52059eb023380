//! A slot map's owners as a few ranges: a stable cluster routes a slot by comparing it with the
//! ranges' ends, all in one cache line, instead of reading its entry of the 16384-slot table (an
//! entry that is rarely still in the cache once the network stack has run between two requests).

use crate::protocol::cluster::{SLOTS, UNASSIGNED};

/// At most this many ranges are compared; a map cut finer is read from its table.
const MAX_RANGES: usize = 16;

/// The owners of consecutive slot ranges, rebuilt from the table whenever it changes.
#[derive(Debug, Clone)]
pub struct Owners {
    /// The last slot of each range but the final one (which ends at the last slot), ascending; the
    /// entries past them hold the last slot, which no slot exceeds, so every lookup compares all of
    /// them (a few vector instructions, no loop bound to branch on). Slots are below 2^14, so they
    /// compare as `i16`, which the baseline's vector compare takes.
    ends: [i16; MAX_RANGES],
    /// Each range's owner.
    nodes: [u16; MAX_RANGES],
    /// False when the map has more than [`MAX_RANGES`] ranges or changed since they were read: slots
    /// are read from the table.
    ranged: bool,
    /// The table changed since the ranges were read.
    stale: bool,
}

impl Default for Owners {
    fn default() -> Self {
        Owners {
            ends: [SLOTS as i16 - 1; MAX_RANGES],
            nodes: [UNASSIGNED; MAX_RANGES],
            ranged: false,
            stale: false,
        }
    }
}

impl Owners {
    /// The ranges of `owner` (a slot map's table, one entry per slot).
    pub fn new(owner: &[u16]) -> Self {
        let mut o = Owners::default();
        o.rebuild(owner);
        o
    }

    /// The table changed: until [`Owners::refresh`], slots are read from it (a burst of redirects
    /// costs one rebuild, not one each).
    pub fn invalidate(&mut self) {
        self.ranged = false;
        self.stale = true;
    }

    /// Rebuilds the ranges if the table changed since they were read.
    pub fn refresh(&mut self, owner: &[u16]) {
        if self.stale {
            self.rebuild(owner);
        }
    }

    /// Reads the ranges again from `owner`.
    pub fn rebuild(&mut self, owner: &[u16]) {
        *self = Owners::default();
        debug_assert_eq!(owner.len(), SLOTS);
        let Some(&first) = owner.first() else {
            return;
        };
        let mut k = 0;
        self.nodes[0] = first;
        for s in 1..owner.len() {
            if owner[s] != owner[s - 1] {
                if k + 1 == MAX_RANGES {
                    *self = Owners::default();
                    return;
                }
                self.ends[k] = s as i16 - 1;
                k += 1;
                self.nodes[k] = owner[s];
            }
        }
        self.ranged = true;
    }

    /// The owner of `slot` ([`UNASSIGNED`] for none), read from `owner` (the table the ranges were
    /// built from) when the map has too many ranges.
    #[inline]
    pub fn of(&self, slot: u16, owner: &[u16]) -> u16 {
        if !self.ranged {
            return owner.get(slot as usize).copied().unwrap_or(UNASSIGNED);
        }
        // Without branches: a slot's range is the number of range ends below it.
        let slot = slot as i16;
        let k: i16 = self.ends.iter().map(|&e| i16::from(slot > e)).sum();
        self.nodes[k as usize & (MAX_RANGES - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(ranges: &[(usize, u16)]) -> Vec<u16> {
        // (first slot, owner) pairs in order; each range runs to the next one's first slot.
        let mut t = vec![UNASSIGNED; SLOTS];
        for (k, &(from, node)) in ranges.iter().enumerate() {
            let to = ranges.get(k + 1).map_or(SLOTS, |r| r.0);
            t[from..to].fill(node);
        }
        t
    }

    #[test]
    fn every_slot_routes_as_the_table_says() {
        let maps = [
            table(&[(0, 0), (5461, 1), (10923, 2)]),
            table(&[(0, 2)]),
            table(&[(0, UNASSIGNED), (100, 1), (101, UNASSIGNED), (16383, 0)]),
        ];
        for t in maps {
            let o = Owners::new(&t);
            assert!(o.ranged);
            for s in 0..SLOTS {
                assert_eq!(o.of(s as u16, &t), t[s], "slot {s}");
            }
        }
    }

    #[test]
    fn a_map_cut_finer_than_the_ranges_reads_its_table() {
        let mut t = vec![0u16; SLOTS];
        for (s, o) in t.iter_mut().enumerate() {
            *o = (s % 3) as u16;
        }
        let o = Owners::new(&t);
        assert!(!o.ranged);
        for s in [0u16, 1, 2, 16383] {
            assert_eq!(o.of(s, &t), t[s as usize]);
        }
    }

    #[test]
    fn a_moved_slot_is_seen_after_a_rebuild() {
        let mut t = table(&[(0, 0), (5461, 1), (10923, 2)]);
        let mut o = Owners::new(&t);
        t[7000] = 2;
        o.invalidate();
        assert_eq!(o.of(7000, &t), 2, "read from the table until refreshed");
        o.refresh(&t);
        assert!(o.ranged);
        assert_eq!(o.of(7000, &t), 2);
        assert_eq!(o.of(6999, &t), 1);
        assert_eq!(o.of(7001, &t), 1);
    }
}
