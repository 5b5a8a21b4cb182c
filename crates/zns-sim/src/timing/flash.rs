//! Flash resources as busy-until bookkeeping: dies and channels with priority
//! classes, and a fixed-point rate helper.
//!
//! Invariants:
//! * Every method takes the earliest time the work may start and returns when
//!   it ends; nothing here reads a clock.
//! * Priority on a die: reads > host programs > filler (finish). A
//!   higher-class operation that finds lower-class work running waits only for
//!   the end of the current segment (`program_suspend_granularity_ns`), then
//!   runs, and pushes the lower-class work back by its own duration. Lower-class
//!   work never delays higher-class work beyond one segment.
//! * On a channel, read data-out preempts program data-in the same way, at the
//!   granularity of one transfer.

/// Converts bytes to nanoseconds at a fixed rate, with 32-bit fixed point.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rate {
    /// ns per byte, times 2^32.
    ns_per_byte_q32: u64,
}

impl Rate {
    /// A rate in MiB/s (`mibps` > 0).
    pub(crate) fn from_mibps(mibps: u64) -> Rate {
        // 1e9 ns/s / (mibps * 2^20 B/s) * 2^32 = 1e9 * 4096 / mibps
        let q = 1_000_000_000u128 * 4096 / u128::from(mibps.max(1));
        Rate {
            ns_per_byte_q32: q as u64,
        }
    }

    /// Transfer time of `bytes`, rounded up.
    #[inline]
    pub(crate) fn ns(self, bytes: u64) -> u64 {
        let v = u128::from(bytes) * u128::from(self.ns_per_byte_q32);
        ((v + 0xFFFF_FFFF) >> 32) as u64
    }
}

/// End of the segment of a busy period anchored at `anchor` in which `s` falls.
#[inline]
fn segment_end(anchor: u64, s: u64, seg: u64) -> u64 {
    if seg == 0 || s <= anchor {
        return s;
    }
    let d = s - anchor;
    anchor + d.div_ceil(seg) * seg
}

/// One die (LUN).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Die {
    /// End of the queued reads.
    read_until: u64,
    /// Start of the current host-program busy period (segment grid origin).
    prog_anchor: u64,
    /// End of the queued host programs.
    prog_until: u64,
    /// Programs started in the current host-program busy period, and the
    /// read time that has pushed them back (see `Die::read`'s budget).
    prog_count: u64,
    prog_pushed: u64,
    /// Start of the current filler busy period.
    fill_anchor: u64,
    /// End of the queued filler programs.
    fill_until: u64,
}

impl Die {
    /// End of all work currently scheduled on the die.
    pub(crate) fn busy_until(&self) -> u64 {
        self.read_until.max(self.prog_until).max(self.fill_until)
    }

    /// End of the host programs scheduled on the die.
    pub(crate) fn prog_until(&self) -> u64 {
        self.prog_until
    }

    /// A page read of `tr` ns that may start at `t`; returns its end.
    /// `budget` (0: none) bounds how much read time may push back each host
    /// program of the current busy period: once the programs queued on the
    /// die have been pushed back by `budget` each, further reads wait for
    /// them to end (a program suspended too often is let finish).
    #[inline]
    pub(crate) fn read(&mut self, t: u64, tr: u64, seg: u64, budget: u64) -> u64 {
        let mut s = t.max(self.read_until);
        let exhausted = budget > 0
            && self.prog_until > s
            && self.prog_pushed >= budget.saturating_mul(self.prog_count.max(1));
        if exhausted {
            s = self.prog_until;
        } else if s == t {
            // Nothing queued ahead in the read class: suspend whatever program
            // runs at the next segment boundary.
            if self.prog_until > s && self.prog_anchor <= s {
                s = segment_end(self.prog_anchor, s, seg).min(self.prog_until);
            } else if self.fill_until > s && self.fill_anchor <= s {
                s = segment_end(self.fill_anchor, s, seg).min(self.fill_until);
            }
        }
        let e = s + tr;
        if self.prog_until > s {
            self.prog_until += tr;
            self.prog_pushed += tr;
        }
        if self.fill_until > s {
            self.fill_until += tr;
        }
        self.read_until = e;
        e
    }

    /// A host program of `tp` ns whose data is on the die at `t`; returns its end.
    #[inline]
    pub(crate) fn program(&mut self, t: u64, tp: u64, seg: u64) -> u64 {
        let ready = t.max(self.read_until);
        let mut s = ready.max(self.prog_until);
        let new_period = ready > self.prog_until;
        if self.fill_until > s && self.fill_anchor <= s {
            s = segment_end(self.fill_anchor, s, seg).min(self.fill_until);
        }
        if self.fill_until > s {
            self.fill_until += tp;
        }
        if new_period {
            self.prog_anchor = s;
            self.prog_count = 0;
            self.prog_pushed = 0;
        }
        self.prog_count += 1;
        self.prog_until = s + tp;
        self.prog_until
    }

    /// Filler programs (lowest class) totalling `dur` ns, from `t`; returns the end.
    pub(crate) fn fill(&mut self, t: u64, dur: u64) -> u64 {
        let s = t.max(self.busy_until());
        if s > self.fill_until {
            self.fill_anchor = s;
        }
        self.fill_until = s.saturating_add(dur);
        self.fill_until
    }
}

/// One channel (bus).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Channel {
    /// End of the queued read data-out transfers.
    fg_until: u64,
    /// End of the queued program data-in transfers.
    bg_until: u64,
}

impl Channel {
    /// Read data-out of `x` ns, from `t`; returns its end.
    #[inline]
    pub(crate) fn read_xfer(&mut self, t: u64, x: u64) -> u64 {
        let s = t.max(self.fg_until);
        if self.bg_until > s {
            self.bg_until += x;
        }
        self.fg_until = s + x;
        self.fg_until
    }

    /// Program data-in of `x` ns, from `t`; returns its end.
    #[inline]
    pub(crate) fn program_xfer(&mut self, t: u64, x: u64) -> u64 {
        let s = t.max(self.bg_until).max(self.fg_until);
        self.bg_until = s + x;
        self.bg_until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_rounds_up_and_scales() {
        let r = Rate::from_mibps(1024); // 1 GiB/s = 1.073741824 B/ns
        assert_eq!(r.ns(1 << 30), 1_000_000_000);
        assert_eq!(r.ns(0), 0);
        assert_eq!(Rate::from_mibps(1).ns(1 << 20), 1_000_000_000);
    }

    #[test]
    fn read_waits_one_segment_and_pushes_program() {
        let mut d = Die::default();
        let e = d.program(0, 1000, 100);
        assert_eq!(e, 1000);
        // read at 150: waits for segment end at 200, runs 50, program pushed to 1050
        assert_eq!(d.read(150, 50, 100, 0), 250);
        assert_eq!(d.prog_until(), 1050);
        // a second read at 160 queues behind the first, no extra segment wait
        assert_eq!(d.read(160, 50, 100, 0), 300);
        assert_eq!(d.prog_until(), 1100);
        // idle die: read starts at once
        let mut d2 = Die::default();
        assert_eq!(d2.read(10, 50, 100, 0), 60);
    }

    #[test]
    fn reads_push_a_program_back_only_by_the_budget() {
        let mut d = Die::default();
        assert_eq!(d.program(0, 1000, 100), 1000);
        // budget 120 per program: the first three 50 ns reads push it back
        // (150 >= 120 after the third), the fourth waits for its end
        assert_eq!(d.read(150, 50, 100, 120), 250);
        assert_eq!(d.read(160, 50, 100, 120), 300);
        assert_eq!(d.read(170, 50, 100, 120), 350);
        assert_eq!(d.prog_until(), 1150);
        assert_eq!(d.read(180, 50, 100, 120), 1200);
        assert_eq!(d.prog_until(), 1150);
        // two programs queued in one busy period: twice the budget
        let mut d = Die::default();
        d.program(0, 1000, 100);
        assert_eq!(d.program(0, 1000, 100), 2000);
        for i in 0..5 {
            d.read(150 + i, 50, 100, 120);
        }
        assert_eq!(d.prog_until(), 2250);
        assert_eq!(d.read(160, 50, 100, 120), 2300);
        // without a budget (0) reads always push programs back
        let mut d2 = Die::default();
        d2.program(0, 1000, 100);
        for i in 0..10 {
            d2.read(150 + i, 50, 100, 0);
        }
        assert_eq!(d2.prog_until(), 1500);
    }

    #[test]
    fn host_program_preempts_filler() {
        let mut d = Die::default();
        assert_eq!(d.fill(0, 10_000), 10_000);
        // a host program at 250 waits for the filler segment end (300), runs 1000
        assert_eq!(d.program(250, 1000, 100), 1300);
        assert_eq!(d.busy_until(), 11_000);
    }
}
