//! The model's pseudo-random draws, all from `TimingProfile::seed`: the
//! jitter of completions and resets (one stream) and the out-of-order
//! service of queued writes (a stream of its own, so that turning it on
//! leaves the other draws as they were).

use super::buffer::splitmix64;
use super::profile::TimingProfile;

/// Parts per million.
pub(super) const PPM: u64 = 1_000_000;
/// Salt of the random stream of the out-of-order service of queued writes.
const REORDER_STREAM: u64 = 0x9E6C_63D0_676A_9A99;

/// The two streams and the parameters that draw from them.
#[derive(Debug, Clone)]
pub(super) struct Draws {
    seed: u64,
    io_jitter_ns: u64,
    reorder_ppm: u64,
    power_loss_protected: bool,
    /// Draws of the jitter stream so far.
    draws: u64,
    /// Draws of the out-of-order service of queued writes (own stream).
    reorder_draws: u64,
}

impl Draws {
    pub(super) fn new(p: &TimingProfile) -> Draws {
        Draws {
            seed: p.seed,
            io_jitter_ns: p.io_jitter_ns,
            reorder_ppm: p.write_queue_reorder_ppm,
            power_loss_protected: p.write_buffer_power_loss_protected,
            draws: 0,
            reorder_draws: 0,
        }
    }

    /// The next draw of the jitter stream (a completion's or a reset's).
    #[inline]
    pub(super) fn next(&mut self) -> u64 {
        self.draws += 1;
        splitmix64(self.seed ^ splitmix64(self.draws))
    }

    /// Uniform jitter in [-j, +j] around `t` (deterministic from the seed).
    #[inline]
    pub(super) fn jitter(&mut self, t: u64) -> u64 {
        let j = self.io_jitter_ns;
        if j == 0 {
            return t;
        }
        let r = self.next() % (2 * j + 1);
        (t + r).saturating_sub(j)
    }

    /// Out-of-order service of queued writes: a write (append) that waited
    /// `wait` ns for its engine and for buffer room completes at a point
    /// drawn uniformly within +/- `write_queue_reorder_ppm` of that wait
    /// around its arrival-order completion `d` (deterministic from the seed,
    /// own stream). Never earlier than an idle device would complete it; the
    /// engine and buffer reservations stay as they are, so throughput does
    /// not change.
    #[inline]
    pub(super) fn out_of_order(&mut self, d: u64, wait: u64, fua: bool) -> u64 {
        let ppm = self.reorder_ppm;
        if ppm == 0 || wait == 0 || (fua && !self.power_loss_protected) {
            return d;
        }
        let span = (u128::from(wait) * u128::from(ppm) / u128::from(PPM)) as u64;
        if span == 0 {
            return d;
        }
        // Its own stream, so that the other draws (jitter) are unchanged.
        self.reorder_draws += 1;
        let r = splitmix64(self.seed ^ REORDER_STREAM ^ splitmix64(self.reorder_draws));
        d - span + r % (2 * span + 1)
    }
}
