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
//!   work never delays higher-class work beyond one segment. A read that
//!   suspends a host program may cost the program more than its own time
//!   (suspend latency and resume re-setup, `Suspend`).
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

/// How reads suspend the host programs of a die (`TimingProfile`'s
/// `program_suspend_*` and `program_resume_ns`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Suspend {
    /// Segment length: a read waits for the end of the program's current one.
    pub(crate) seg_ns: u64,
    /// Die time that may push back each host program (0: no bound).
    pub(crate) budget_ns: u64,
    /// Suspend latency: a read that suspends a program starts this much later.
    pub(crate) suspend_ns: u64,
    /// Resume re-setup: die time after the read before the program goes on.
    pub(crate) resume_ns: u64,
    /// Writes wait for write-buffer room: the controller resumes the program
    /// after every read, so reads back to back do not share a suspension.
    pub(crate) resume_each_read: bool,
}

impl Suspend {
    /// Segment length only: no budget, free suspensions (tests).
    #[cfg(test)]
    fn seg(seg_ns: u64) -> Suspend {
        Suspend {
            seg_ns,
            ..Suspend::default()
        }
    }
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
    /// `sus.budget_ns` (0: none) bounds how much die time reads may push back
    /// each host program of the current busy period: once the programs
    /// queued on the die have been pushed back by the budget each, further
    /// reads wait for them to end (a program suspended too often is let
    /// finish).
    /// A read that finds a host program pending suspends it: it starts
    /// `sus.suspend_ns` later (the die stops the program) and the program is
    /// pushed back by `suspend_ns + tr + resume_ns` (the resume re-sets the
    /// program up). A read that follows the previous one back to back shares
    /// its suspension (the program is pushed back by `tr` only), unless
    /// `sus.resume_each_read`. With both costs 0 every read pushes the
    /// program back by `tr`.
    #[inline]
    pub(crate) fn read(&mut self, t: u64, tr: u64, sus: Suspend) -> u64 {
        let (seg, budget) = (sus.seg_ns, sus.budget_ns);
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
        let suspends = self.prog_until > s && (sus.resume_each_read || s > self.read_until);
        let (sus_ns, res_ns) = if suspends {
            (sus.suspend_ns, sus.resume_ns)
        } else {
            (0, 0)
        };
        let push = sus_ns + tr + res_ns;
        if self.prog_until > s {
            self.prog_until += push;
            self.prog_pushed += push;
        }
        if self.fill_until > s {
            self.fill_until += push;
        }
        let e = s + sus_ns + tr;
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
        assert_eq!(d.read(150, 50, Suspend::seg(100)), 250);
        assert_eq!(d.prog_until(), 1050);
        // a second read at 160 queues behind the first, no extra segment wait
        assert_eq!(d.read(160, 50, Suspend::seg(100)), 300);
        assert_eq!(d.prog_until(), 1100);
        // idle die: read starts at once
        let mut d2 = Die::default();
        assert_eq!(d2.read(10, 50, Suspend::seg(100)), 60);
    }

    #[test]
    fn reads_push_a_program_back_only_by_the_budget() {
        let b = Suspend {
            seg_ns: 100,
            budget_ns: 120,
            ..Suspend::default()
        };
        let mut d = Die::default();
        assert_eq!(d.program(0, 1000, 100), 1000);
        // budget 120 per program: the first three 50 ns reads push it back
        // (150 >= 120 after the third), the fourth waits for its end
        assert_eq!(d.read(150, 50, b), 250);
        assert_eq!(d.read(160, 50, b), 300);
        assert_eq!(d.read(170, 50, b), 350);
        assert_eq!(d.prog_until(), 1150);
        assert_eq!(d.read(180, 50, b), 1200);
        assert_eq!(d.prog_until(), 1150);
        // two programs queued in one busy period: twice the budget
        let mut d = Die::default();
        d.program(0, 1000, 100);
        assert_eq!(d.program(0, 1000, 100), 2000);
        for i in 0..5 {
            d.read(150 + i, 50, b);
        }
        assert_eq!(d.prog_until(), 2250);
        assert_eq!(d.read(160, 50, b), 2300);
        // without a budget (0) reads always push programs back
        let mut d2 = Die::default();
        d2.program(0, 1000, 100);
        for i in 0..10 {
            d2.read(150 + i, 50, Suspend::seg(100));
        }
        assert_eq!(d2.prog_until(), 1500);
    }

    #[test]
    fn a_suspension_costs_die_time_and_back_to_back_reads_share_it() {
        let sus = Suspend {
            seg_ns: 100,
            suspend_ns: 10,
            resume_ns: 20,
            ..Suspend::default()
        };
        let mut d = Die::default();
        d.program(0, 1000, 100);
        // read at 150: segment end 200, suspend 10, sense 50; the program is
        // pushed back by 10 + 50 + 20
        assert_eq!(d.read(150, 50, sus), 260);
        assert_eq!(d.prog_until(), 1080);
        // queued behind it: same suspension, the sense only
        assert_eq!(d.read(160, 50, sus), 310);
        assert_eq!(d.prog_until(), 1130);
        // a later read after a gap suspends again (segment end 500)
        assert_eq!(d.read(450, 50, sus), 560);
        assert_eq!(d.prog_until(), 1210);
        // while writes wait for buffer room, every read is its own suspension
        let each = Suspend {
            resume_each_read: true,
            ..sus
        };
        let mut d = Die::default();
        d.program(0, 1000, 100);
        assert_eq!(d.read(150, 50, each), 260);
        assert_eq!(d.read(160, 50, each), 320);
        assert_eq!(d.prog_until(), 1160);
        // an idle die: no suspension, no cost
        let mut d2 = Die::default();
        assert_eq!(d2.read(10, 50, sus), 60);
        // the costs count against the budget: 80 of 100 after one read, the
        // second read still suspends (80 < 100), the third waits
        let budgeted = Suspend {
            budget_ns: 100,
            ..each
        };
        let mut d = Die::default();
        d.program(0, 1000, 100);
        assert_eq!(d.read(150, 50, budgeted), 260);
        assert_eq!(d.read(160, 50, budgeted), 320);
        assert_eq!(d.prog_until(), 1160);
        assert_eq!(d.read(170, 50, budgeted), 1210);
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
