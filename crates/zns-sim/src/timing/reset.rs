//! The reset engine: a zone reset's cost (a base, per MiB written, the
//! extra of a full or partly written zone), its jitter, and the
//! interference of recent I/O, which the activity meters of each class of
//! command measure. Resets never take front-end, engine or flash time from
//! I/O; I/O slows resets.

use super::buffer::ActivityMeter;
use super::draws::{Draws, PPM};
use super::profile::TimingProfile;

const MIB: u128 = 1 << 20;

/// The classes of host I/O whose recent activity slows a reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IoClass {
    Read = 0,
    Write = 1,
    Append = 2,
}

/// The reset engine's state.
#[derive(Debug, Clone)]
pub(super) struct ResetEngine {
    /// Recent activity by [`IoClass`].
    meters: [ActivityMeter; 3],
    /// Accumulated probability of a slowed reset, ppm (a slowed reset
    /// whenever it passes 1).
    hit_acc: u64,
    /// When the engine is free.
    free: u64,
}

impl ResetEngine {
    pub(super) fn new(p: &TimingProfile) -> ResetEngine {
        ResetEngine {
            meters: [ActivityMeter::new(p.reset_interference_window_ns); 3],
            hit_acc: PPM / 2,
            free: 0,
        }
    }

    /// A command of `class` submitted at `t` completes at `done`.
    #[inline]
    pub(super) fn record(&mut self, class: IoClass, t: u64, done: u64) {
        self.meters[class as usize].record(t, done);
    }

    /// A reset of a zone holding `written` bytes that passed the front end
    /// at `fe`; `finished_early`: the zone became Full through a Finish.
    /// Returns when it ends.
    pub(super) fn reset(
        &mut self,
        p: &TimingProfile,
        draws: &mut Draws,
        fe: u64,
        written: u64,
        finished_early: bool,
    ) -> u64 {
        let cap = p.zone_capacity_bytes;
        let mut cost = u128::from(p.reset_base_ns)
            + u128::from(p.reset_per_written_mib_ns) * u128::from(written) / MIB;
        if !finished_early {
            if written >= cap {
                cost += u128::from(p.reset_full_extra_ns);
            } else if written > 0 {
                let sat = p.reset_partial_saturation_bytes.max(1);
                cost += u128::from(p.reset_partial_extra_ns) * u128::from(written.min(sat))
                    / u128::from(sat);
            }
        }
        // Jitter, uniform in +/- reset_jitter_ppm.
        let j = p.reset_jitter_ppm;
        if j > 0 {
            let r = draws.next() % (2 * j + 1);
            cost = cost * u128::from(PPM - j + r) / u128::from(PPM);
        }
        // Interference: recent I/O makes a slowed reset likely.
        let w = [
            p.reset_interference_read_ppm,
            p.reset_interference_write_ppm,
            p.reset_interference_append_ppm,
        ];
        let slowdown = p.reset_interference_slowdown_pct;
        let mut prob: u64 = 0;
        for (c, wc) in w.into_iter().enumerate() {
            let busy = self.meters[c].busy_ppm(fe);
            prob = prob.saturating_add(wc.saturating_mul(busy) / PPM);
        }
        self.hit_acc += prob.min(PPM);
        if self.hit_acc >= PPM {
            self.hit_acc -= PPM;
            cost = cost * u128::from(slowdown) / 100;
        }
        let s = fe.max(self.free);
        self.free = s.saturating_add(cost.min(u128::from(u64::MAX / 4)) as u64);
        self.free
    }
}
