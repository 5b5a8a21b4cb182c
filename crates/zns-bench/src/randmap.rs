//! fio's random map without the map: with `norandommap=0` (fio's default) a
//! random job visits every block of its range exactly once per pass, in a
//! random order. fio keeps a bitmap of visited blocks; znskit walks a keyed
//! pseudo-random permutation instead (a 4-round Feistel network over the
//! smallest power of four ≥ n, skipping values ≥ n), which needs no memory
//! whatever the range and costs a few ns per I/O. A new pass draws new keys.

use zns_sim::SimRng;

/// A random order of `0..n`, pass after pass.
#[derive(Debug, Clone)]
pub struct BlockPermutation {
    n: u64,
    /// Bits of each Feistel half.
    half_bits: u32,
    keys: [u64; 4],
    /// Position in the current pass over the permutation's domain.
    counter: u64,
}

fn mix(x: u64, key: u64) -> u64 {
    // splitmix64 finaliser of the half and the round key
    let mut z = x ^ key;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl BlockPermutation {
    /// A permutation of `0..n` (n ≥ 1) keyed from `rng`.
    pub fn new(n: u64, rng: &mut SimRng) -> BlockPermutation {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut p = BlockPermutation {
            n,
            half_bits,
            keys: [0; 4],
            counter: 0,
        };
        p.rekey(rng);
        p
    }

    fn rekey(&mut self, rng: &mut SimRng) {
        for k in &mut self.keys {
            *k = rng.below_u64(u64::MAX);
        }
        self.counter = 0;
    }

    fn domain(&self) -> u64 {
        1u64 << (2 * self.half_bits)
    }

    fn permute(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for &k in &self.keys {
            let f = mix(r, k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// Where block `i` (< n) goes in the current key's order: a bijection
    /// of `0..n` (the permutation of the domain, walked until it lands
    /// below n).
    pub fn map(&self, i: u64) -> u64 {
        let mut v = self.permute(i % self.n);
        while v >= self.n {
            v = self.permute(v);
        }
        v
    }

    /// The next block of the current pass; a new pass (new order) starts
    /// after every block was returned once.
    pub fn next(&mut self, rng: &mut SimRng) -> u64 {
        loop {
            if self.counter >= self.domain() {
                self.rekey(rng);
            }
            let v = self.permute(self.counter);
            self.counter += 1;
            if v < self.n {
                return v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_once_per_pass_in_a_seeded_order() {
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let mut rng = SimRng::from_seed_u64(n);
            let mut p = BlockPermutation::new(n, &mut rng);
            for _pass in 0..2 {
                let mut seen = vec![false; n as usize];
                for _ in 0..n {
                    let b = p.next(&mut rng) as usize;
                    assert!(!seen[b], "block {b} twice in one pass of {n}");
                    seen[b] = true;
                }
            }
        }
        let order = |seed| {
            let mut rng = SimRng::from_seed_u64(seed);
            let mut p = BlockPermutation::new(1000, &mut rng);
            (0..10).map(|_| p.next(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(order(1), order(1));
        assert_ne!(order(1), order(2));
        assert_ne!(order(1), (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn map_is_a_bijection() {
        for n in [1u64, 5, 1000, 4097] {
            let mut rng = SimRng::from_seed_u64(n);
            let p = BlockPermutation::new(n, &mut rng);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let b = p.map(i) as usize;
                assert!(!seen[b], "{b} twice for n={n}");
                seen[b] = true;
            }
        }
    }
}
