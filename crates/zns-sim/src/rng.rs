//! Seeded randomness for the simulation: [`SimRng`], the only random number
//! generator layers above zns-sim may use.
//!
//! A `SimRng` is a ChaCha8 stream. Its output depends only on its seed (and,
//! for a forked stream, on the parent's state at the fork), never on the
//! machine, the thread or the wall clock, so a run with the same seed draws
//! the same numbers everywhere. The runtime owns a master `SimRng` built from
//! the run's seed and hands out forked streams (`Handle::rng`); each component
//! keeps its own stream so that adding draws in one component does not shift
//! the numbers another one sees.
//!
//! `SimRng` implements [`rand::RngCore`], so `rand::Rng` and `rand_distr`
//! distributions work on it directly.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A deterministic random number generator (ChaCha8) seeded from a `u64`.
#[derive(Clone, Debug)]
pub struct SimRng {
    inner: ChaCha8Rng,
}

impl SimRng {
    /// The stream for `seed`. Equal seeds give equal streams on every
    /// platform (the seed is expanded to a 256-bit ChaCha key with PCG32, as
    /// `rand_core::SeedableRng::seed_from_u64` specifies).
    pub fn from_seed_u64(seed: u64) -> SimRng {
        SimRng {
            inner: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A new independent stream whose key is drawn from this one. Each call
    /// advances this stream by 256 bits, so successive forks differ.
    pub fn fork(&mut self) -> SimRng {
        let mut key = [0u8; 32];
        self.inner.fill_bytes(&mut key);
        SimRng {
            inner: ChaCha8Rng::from_seed(key),
        }
    }

    /// A uniformly distributed `u64` in `0..bound` (`bound` > 0), without the
    /// modulo bias of `next_u64() % bound`. Returns 0 when `bound` is 0.
    pub fn below_u64(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        // Lemire's multiply-and-reject method.
        let zone = bound.wrapping_neg() % bound;
        loop {
            let product = u128::from(self.inner.next_u64()) * u128::from(bound);
            if (product as u64) >= zone {
                return (product >> 64) as u64;
            }
        }
    }

    /// `true` with probability `p` (clamped to `0.0..=1.0`).
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        // 53 random bits give every representable probability step.
        let unit = (self.inner.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        unit < p
    }
}

impl RngCore for SimRng {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        self.inner.next_u32()
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    #[inline]
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.inner.fill_bytes(dest)
    }

    #[inline]
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.inner.try_fill_bytes(dest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn equal_seeds_equal_streams() {
        let mut a = SimRng::from_seed_u64(7);
        let mut b = SimRng::from_seed_u64(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut c = SimRng::from_seed_u64(8);
        assert_ne!(a.next_u64(), c.next_u64());
    }

    #[test]
    fn forks_are_deterministic_and_distinct() {
        let mut a = SimRng::from_seed_u64(1);
        let mut b = SimRng::from_seed_u64(1);
        let mut a1 = a.fork();
        let mut a2 = a.fork();
        let mut b1 = b.fork();
        assert_eq!(a1.next_u64(), b1.next_u64());
        assert_ne!(a1.next_u64(), a2.next_u64());
    }

    #[test]
    fn helpers_stay_in_range() {
        let mut r = SimRng::from_seed_u64(3);
        for _ in 0..1000 {
            assert!(r.below_u64(10) < 10);
            assert!(r.gen_range(5..9u32) >= 5);
        }
        assert_eq!(r.below_u64(0), 0);
        assert!(!r.chance(0.0));
        assert!(r.chance(1.0));
    }
}
