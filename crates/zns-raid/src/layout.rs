//! The static geometry of a ZRAID array: where a logical block, a parity
//! chunk, a partial-parity (PP) chunk and a WP-log slot live, the member write
//! pointers that encode a given logical progress (Rule 2 and the stripe sweep),
//! and the inverse (the progress a member write pointer claims after a crash).
//!
//! Notation (paper §4.2): N members, chunk C LBAs, R stripe rows per member
//! zone, H = N_zrwa / 2 rows between a stripe and its PP slot. All offsets here
//! are zone-relative (logical offsets within the logical zone, member offsets
//! within the member zone).

use crate::Policy;

/// The geometry of an array (all sizes in LBAs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Members (N ≥ 3).
    pub n: u32,
    /// Chunk size C.
    pub chunk_lbas: u64,
    /// Stripe rows per member zone R = ⌊ZCAP / C⌋.
    pub rows: u64,
    /// PP distance H = (ZRWASZ / C) / 2, in rows.
    pub h: u64,
    pub zrwa_lbas: u64,
    pub fg_lbas: u64,
    pub lba_bytes: u64,
    pub member_zone_size: u64,
    pub member_zone_cap: u64,
}

/// Where the chunk of a logical offset lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    pub stripe: u64,
    /// Data chunk index in the stripe (0..N-2).
    pub idx: u32,
    /// Offset inside the chunk.
    pub in_chunk: u64,
}

impl Layout {
    pub fn data_chunks(&self) -> u64 {
        self.n as u64 - 1
    }
    pub fn stripe_lbas(&self) -> u64 {
        self.data_chunks() * self.chunk_lbas
    }
    pub fn half(&self) -> u64 {
        self.chunk_lbas / 2
    }
    /// Logical zone capacity: (N−1) · R · C.
    pub fn logical_cap(&self) -> u64 {
        self.rows * self.stripe_lbas()
    }
    /// Chunks in a logical zone.
    pub fn zone_chunks(&self) -> u64 {
        self.rows * self.data_chunks()
    }

    /// Parity member of a stripe: left-symmetric, shifted by the zone number
    /// (`N − 1 − ((stripe + zone) mod N)`).
    pub fn parity_dev(&self, zone: u32, stripe: u64) -> u32 {
        let n = self.n as u64;
        (n - 1 - ((stripe + zone as u64) % n)) as u32
    }
    /// Member holding data chunk `idx` of a stripe: the members after the parity one.
    pub fn data_dev(&self, zone: u32, stripe: u64, idx: u32) -> u32 {
        (self.parity_dev(zone, stripe) + 1 + idx) % self.n
    }
    /// A member's position in a stripe: 0..N−2 data chunk, N−1 parity.
    pub fn seq_of(&self, zone: u32, stripe: u64, dev: u32) -> u32 {
        let p = self.parity_dev(zone, stripe);
        (dev + self.n - p - 1) % self.n
    }
    pub fn locate(&self, off: u64) -> Loc {
        let c = off / self.chunk_lbas;
        Loc {
            stripe: c / self.data_chunks(),
            idx: (c % self.data_chunks()) as u32,
            in_chunk: off % self.chunk_lbas,
        }
    }
    /// Member-zone offset of row `row`, in-chunk offset `o`.
    pub fn member_off(&self, row: u64, o: u64) -> u64 {
        row * self.chunk_lbas + o
    }
    /// Member of the PP slot of "XOR through data chunk `m`" (Rule 1): the member
    /// of chunk m+1. Only for m ≤ N−3 (the last chunk's partial parity is written
    /// in place, at the parity chunk).
    pub fn pp_dev(&self, zone: u32, stripe: u64, m: u32) -> u32 {
        (self.data_dev(zone, stripe, m) + 1) % self.n
    }
    /// Row of a stripe's PP / WP-log slots, or None when it falls past the zone
    /// (near-end fallback to the metadata zone).
    pub fn slot_row(&self, stripe: u64) -> Option<u64> {
        let r = stripe + self.h;
        (r < self.rows).then_some(r)
    }
    /// The two members that hold WP-log entries of a stripe: its parity member
    /// and the member of its first data chunk (their PP slots are never used).
    pub fn wplog_devs(&self, zone: u32, stripe: u64) -> [u32; 2] {
        [
            self.parity_dev(zone, stripe),
            self.data_dev(zone, stripe, 0),
        ]
    }
    /// Blocks of a WP-log slot that entries rotate over (the first half of the
    /// chunk: always inside the member's ZRWA when the entry is written).
    pub fn wplog_slots(&self) -> u64 {
        self.half().max(1)
    }

    /// Member write pointers (zone-relative) that encode logical progress `d`
    /// (LBAs completed from the zone start), and the members to advance first
    /// (the Rule-2 pair). Lower bounds: members may be ahead.
    pub fn targets(&self, zone: u32, d: u64, policy: Policy) -> (Vec<u64>, Vec<u32>) {
        let c = self.chunk_lbas;
        let nd = self.data_chunks();
        let mut k = d / c;
        if policy == Policy::Stripe {
            k = k / nd * nd;
        }
        if k >= self.zone_chunks() {
            return (vec![self.rows * c; self.n as usize], Vec::new());
        }
        let s = k / nd;
        let j = (k % nd) as u32;
        let mut t = vec![s * c; self.n as usize];
        let mut first = Vec::new();
        if j == 0 {
            if s >= 1 {
                let last = self.data_dev(zone, s - 1, nd as u32 - 1);
                t[last as usize] = (s - 1) * c + self.half();
                first.push(last);
                if nd >= 2 {
                    first.push(self.data_dev(zone, s - 1, nd as u32 - 2));
                }
            }
        } else {
            for i in 0..j - 1 {
                t[self.data_dev(zone, s, i) as usize] = (s + 1) * c;
            }
            let cur = self.data_dev(zone, s, j - 1);
            t[cur as usize] = s * c + self.half();
            first.push(cur);
            if j >= 2 {
                first.push(self.data_dev(zone, s, j - 2));
            } else if s >= 1 {
                first.push(self.data_dev(zone, s - 1, nd as u32 - 1));
            }
        }
        (t, first)
    }

    /// Chunks of progress a member write pointer claims (paper §4.5): a data
    /// member at half a chunk says its chunk is the last complete one, at the
    /// chunk end that the next chunk is complete too; a parity member at the
    /// row end that the stripe is complete.
    pub fn claim(&self, zone: u32, dev: u32, wp: u64) -> u64 {
        let c = self.chunk_lbas;
        let nd = self.data_chunks();
        let wp = wp.min(self.rows * c);
        if wp == 0 {
            return 0;
        }
        let mut s = (wp - 1) / c;
        let mut frac = wp - s * c;
        if frac < self.half() {
            if s == 0 {
                return 0;
            }
            s -= 1;
            frac = c;
        }
        let q = self.seq_of(zone, s, dev) as u64;
        let k = if q == nd {
            if frac == c {
                (s + 1) * nd
            } else {
                s * nd
            }
        } else if frac == c {
            s * nd + q + 2
        } else {
            s * nd + q + 1
        };
        k.min(self.zone_chunks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lay(n: u32, h: u64) -> Layout {
        Layout {
            n,
            chunk_lbas: 8,
            rows: 24,
            h,
            zrwa_lbas: 16 * h,
            fg_lbas: 4,
            lba_bytes: 4096,
            member_zone_size: 256,
            member_zone_cap: 192,
        }
    }

    #[test]
    fn rotation_is_a_permutation_and_pp_follows_rule_1() {
        for n in 3..7u32 {
            let l = lay(n, 2);
            for z in 0..5u32 {
                for s in 0..12u64 {
                    let mut seen = vec![false; n as usize];
                    seen[l.parity_dev(z, s) as usize] = true;
                    for i in 0..n - 1 {
                        let d = l.data_dev(z, s, i);
                        assert!(!seen[d as usize]);
                        seen[d as usize] = true;
                        assert_eq!(l.seq_of(z, s, d), i);
                        if i + 2 < n {
                            assert_eq!(l.pp_dev(z, s, i), l.data_dev(z, s, i + 1));
                        }
                    }
                    // the last data member of a stripe is the next stripe's parity member
                    assert_eq!(l.data_dev(z, s, n - 2), l.parity_dev(z, s + 1));
                }
            }
        }
    }

    #[test]
    fn claims_of_the_targets_recover_the_chunk_progress_with_one_member_missing() {
        for n in 3..7u32 {
            let l = lay(n, 2);
            for z in 0..3u32 {
                for k in 0..=l.zone_chunks() {
                    let d = k * l.chunk_lbas;
                    let (t, _) = l.targets(z, d, Policy::Chunk);
                    let claims: Vec<u64> =
                        (0..n).map(|dev| l.claim(z, dev, t[dev as usize])).collect();
                    assert_eq!(*claims.iter().max().unwrap(), k, "n={n} z={z} k={k}");
                    // never an over-claim, and one member missing loses nothing
                    // (except the zone's very first chunk: the WP log covers it)
                    for gone in 0..n as usize {
                        let best = (0..n as usize)
                            .filter(|&i| i != gone)
                            .map(|i| claims[i])
                            .max()
                            .unwrap();
                        if k != 1 {
                            assert_eq!(best, k, "n={n} z={z} k={k} gone={gone}");
                        }
                    }
                    // with a partial chunk on top nothing changes
                    let (t2, _) = l.targets(z, d + 3, Policy::Chunk);
                    if k < l.zone_chunks() {
                        assert_eq!(t, t2);
                    }
                }
            }
        }
    }

    #[test]
    fn targets_are_monotone() {
        let l = lay(5, 2);
        let mut prev = vec![0u64; 5];
        for d in 0..=l.logical_cap() {
            let (t, _) = l.targets(1, d, Policy::Chunk);
            for i in 0..5 {
                assert!(t[i] >= prev[i], "d={d}");
                assert!(t[i] % l.fg_lbas == 0);
            }
            prev = t;
        }
    }
}
