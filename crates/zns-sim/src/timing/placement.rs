//! Where program units lie: a zone's units striped over `dies_per_zone`
//! dies from a place of its own, or — a zone striped over every die, and
//! the log-structured conventional namespace — on the dies in arrival
//! order (one rotating pointer).

use super::profile::TimingProfile;

/// The dies and the rotating pointer.
#[derive(Debug, Clone)]
pub(super) struct DiePlacement {
    /// Dies of the controller.
    pub(super) total_dies: u64,
    /// Dies a zone's program units are striped over.
    pub(super) dies_per_zone: u64,
    /// Next die for a program unit of a zone striped over every die.
    next_die: u64,
}

impl DiePlacement {
    pub(super) fn new(p: &TimingProfile) -> DiePlacement {
        DiePlacement {
            total_dies: u64::from(p.total_dies()),
            dies_per_zone: u64::from(p.dies_per_zone),
            next_die: 0,
        }
    }

    /// The die an FTL or a command names (any number, taken modulo the dies).
    #[inline]
    pub(super) fn die(&self, die: u32) -> usize {
        (u64::from(die) % self.total_dies) as usize
    }

    /// Die holding program unit `k` of `zone`.
    #[inline]
    pub(super) fn zone_die(&self, zone: u64, k: u64) -> usize {
        let dpz = self.dies_per_zone;
        let base = zone.wrapping_mul(dpz) % self.total_dies;
        ((base + k.wrapping_add(zone) % dpz) % self.total_dies) as usize
    }

    /// Die that programs the next unit of `zone` (unit `k`). A zone striped
    /// over every die takes the dies in arrival order (one rotating pointer
    /// for all zones), which keeps them equally loaded whatever the number of
    /// zones being written; otherwise the unit goes to its static place.
    #[inline]
    pub(super) fn program_die(&mut self, zone: u64, k: u64) -> usize {
        if self.dies_per_zone == self.total_dies {
            self.rotate_die()
        } else {
            self.zone_die(zone, k)
        }
    }

    /// The next die in arrival order (shared by every striped zone and the
    /// log-structured conventional namespace).
    #[inline]
    pub(super) fn rotate_die(&mut self) -> usize {
        let d = self.next_die;
        self.next_die = (d + 1) % self.total_dies;
        d as usize
    }

    /// Die assumed to hold program unit `k` of a conventional namespace (for
    /// reads; the page map is not modelled): the units of a namespace written
    /// in LBA order lie on consecutive dies, as the log-structured writes put
    /// them (one die after the other), so a sequential or multi-unit read
    /// spreads over dies and channels; a random read lands on a uniformly
    /// random die.
    #[inline]
    pub(super) fn conv_die(&self, k: u64) -> usize {
        (k % self.total_dies) as usize
    }
}
