//! The flash as one controller drives it: dies and channels, how a piece of
//! a program unit is read (tR by page type, programs suspended at segment
//! boundaries, the channel transfer, the ECC decode stage), how a unit is
//! programmed, the finish filler and erases, and the GC engine's slots
//! (`gc_inflight_units`). Busy-until times only; which die a unit is on is
//! `placement`'s, when a command may start is the array's.

use super::flash::{Channel, Die, Rate, Suspend};
use super::profile::TimingProfile;

/// The dies, the channels and their timing parameters.
#[derive(Debug, Clone)]
pub(super) struct Media {
    dies: Vec<Die>,
    channels: Vec<Channel>,
    n_channels: u64,
    /// Bytes of one page over every plane (a page type's stripe of a unit).
    stripe_bytes: u64,
    read_page_ns: [u64; 16],
    n_page_types: u64,
    pages_per_program: u64,
    /// One sense per page, each page out before the next (`read_pages_serial`).
    read_pages_serial: bool,
    /// How reads suspend host programs: segment, budget, suspend and resume
    /// costs.
    sus: Suspend,
    /// Channel time of one program unit.
    pub(super) unit_xfer_ns: u64,
    ch_rate: Rate,
    program_ns: u64,
    erase_ns: u64,
    /// ECC decode of read data, one pipelined stage per channel after the
    /// channel transfer (`read_decode_mibps`; None = no separate stage).
    decode_rate: Option<Rate>,
    decode_free: Vec<u64>,
    /// GC engine slots (`gc_inflight_units`): when each frees; empty = no
    /// limit.
    gc_slots: Vec<u64>,
}

impl Media {
    pub(super) fn new(p: &TimingProfile) -> Media {
        let total = p.total_dies() as usize;
        let mut read_page_ns = [0u64; 16];
        read_page_ns[..p.read_page_ns.len()].copy_from_slice(&p.read_page_ns);
        let ch_rate = Rate::from_mibps(p.channel_mibps);
        Media {
            dies: vec![Die::default(); total],
            channels: vec![Channel::default(); p.channels as usize],
            n_channels: u64::from(p.channels),
            stripe_bytes: p.page_bytes * u64::from(p.planes_per_die),
            n_page_types: p.read_page_ns.len() as u64,
            read_page_ns,
            pages_per_program: u64::from(p.pages_per_program),
            read_pages_serial: p.read_pages_serial,
            sus: Suspend {
                seg_ns: p.program_suspend_granularity_ns,
                budget_ns: p.program_suspend_budget_ns,
                suspend_ns: p.program_suspend_ns,
                resume_ns: p.program_resume_ns,
                resume_each_read: false,
            },
            unit_xfer_ns: ch_rate.ns(p.program_unit_bytes()),
            ch_rate,
            program_ns: p.program_ns,
            erase_ns: p.erase_ns,
            decode_rate: (p.read_decode_mibps > 0).then(|| Rate::from_mibps(p.read_decode_mibps)),
            decode_free: vec![0; p.channels as usize],
            gc_slots: vec![0; p.gc_inflight_units as usize],
        }
    }

    /// End of the programs (host and GC) and erases queued on `die`.
    pub(super) fn die_program_until(&self, die: usize) -> u64 {
        self.dies
            .get(die)
            .map_or(0, |d| d.prog_until().max(d.busy_until()))
    }

    /// Die time to read every page of one program unit (GC reads).
    pub(super) fn unit_read_ns(&self) -> u64 {
        (0..self.pages_per_program)
            .map(|pg| self.read_page_ns[(pg % self.n_page_types) as usize])
            .sum()
    }

    /// When all flash work scheduled so far has ended.
    pub(super) fn idle_at(&self) -> u64 {
        self.dies.iter().map(Die::busy_until).max().unwrap_or(0)
    }

    #[inline]
    fn channel(&self, die: usize) -> usize {
        (die as u64 % self.n_channels) as usize
    }

    /// How a read at `t` suspends programs: while writes wait for
    /// write-buffer room (the latest admission, `admitting_until`, is later
    /// than `t`), the controller resumes the program after every read.
    fn sus_at(&self, t: u64, admitting_until: u64) -> Suspend {
        let mut s = self.sus;
        s.resume_each_read = admitting_until > t;
        s
    }

    /// Array read of bytes `[cs, ce)` of the program unit starting at
    /// `unit_start` on `die`, from `t`: tR of the slowest page type touched,
    /// then the channel transfer. Returns when the data is in the controller.
    pub(super) fn read(
        &mut self,
        t: u64,
        die: usize,
        unit_start: u64,
        (cs, ce): (u64, u64),
        admitting_until: u64,
    ) -> u64 {
        let first = (cs - unit_start) / self.stripe_bytes;
        let last = (ce - 1 - unit_start) / self.stripe_bytes;
        if self.read_pages_serial && last > first {
            // One sense per page, each page's data out over the channel
            // before the next sense (the page register holds one page).
            let ch = self.channel(die);
            let mut at = t;
            for pg in first..=last {
                let ps = cs.max(unit_start + pg * self.stripe_bytes);
                let pe = ce.min(unit_start + (pg + 1) * self.stripe_bytes);
                let tr = self.read_page_ns[(pg % self.n_page_types) as usize];
                let sus = self.sus_at(at, admitting_until);
                let re = self.dies[die].read(at, tr, sus);
                let xe = self.channels[ch].read_xfer(re, self.ch_rate.ns(pe - ps));
                at = self.decode(ch, xe, pe - ps);
            }
            return at;
        }
        let mut tr = 0;
        for pg in first..=last.min(first + self.n_page_types - 1) {
            tr = tr.max(self.read_page_ns[(pg % self.n_page_types) as usize]);
        }
        let sus = self.sus_at(t, admitting_until);
        let re = self.dies[die].read(t, tr, sus);
        let ch = self.channel(die);
        let xe = self.channels[ch].read_xfer(re, self.ch_rate.ns(ce - cs));
        self.decode(ch, xe, ce - cs)
    }

    /// A read of `bytes` of an SLC-mode block on `die` from `t`: one page
    /// type, its own tR (`read_ns`), then the transfer and the decode.
    pub(super) fn read_slc(
        &mut self,
        t: u64,
        die: usize,
        read_ns: u64,
        bytes: u64,
        admitting_until: u64,
    ) -> u64 {
        let sus = self.sus_at(t, admitting_until);
        let re = self.dies[die].read(t, read_ns, sus);
        let ch = self.channel(die);
        let xe = self.channels[ch].read_xfer(re, self.ch_rate.ns(bytes));
        self.decode(ch, xe, bytes)
    }

    /// ECC decode of `bytes` of read data that left channel `ch` at `t`:
    /// the channel's decoder is a serial stage of its own (pipelined with
    /// the transfers); returns when the data is decoded.
    #[inline]
    fn decode(&mut self, ch: usize, t: u64, bytes: u64) -> u64 {
        match self.decode_rate {
            None => t,
            Some(rate) => {
                let s = t.max(self.decode_free[ch]);
                self.decode_free[ch] = s + rate.ns(bytes);
                self.decode_free[ch]
            }
        }
    }

    /// Programs one unit on `die` once its data is complete at `t`; returns
    /// the end of the program.
    pub(super) fn program_unit(&mut self, t: u64, die: usize) -> u64 {
        let tp = self.program_ns;
        let ch = self.channel(die);
        // One cached unit per die: the transfer may overlap the previous program.
        let xs = t.max(self.dies[die].prog_until().saturating_sub(tp));
        let xe = self.channels[ch].program_xfer(xs, self.unit_xfer_ns);
        self.dies[die].program(xe, tp, self.sus.seg_ns)
    }

    /// Programs `bytes` an FTL placed on `die` (`program_ns`: its mode's
    /// program time): transferred from `t`, programmed not before `gate`.
    pub(super) fn program_ftl_unit(
        &mut self,
        t: u64,
        gate: u64,
        die: usize,
        bytes: u64,
        program_ns: u64,
    ) -> u64 {
        let ch = self.channel(die);
        let xe = self.channels[ch].program_xfer(t, self.ch_rate.ns(bytes));
        self.dies[die].program(xe.max(gate), program_ns, self.sus.seg_ns)
    }

    /// When the GC engine can take new work (its first slot frees; 0 with
    /// no limit): host data is not programmed before.
    pub(super) fn gc_gate(&self) -> u64 {
        self.gc_slots.iter().copied().min().unwrap_or(0)
    }

    /// Finish filler of `dur` on `die` from `t`, below every other program.
    pub(super) fn fill(&mut self, die: usize, t: u64, dur: u64) -> u64 {
        self.dies[die].fill(t, dur)
    }

    /// A block erase on `die` from `t` (`erase_ns`, host program class).
    pub(super) fn erase(&mut self, die: usize, t: u64) -> u64 {
        self.dies[die].program(t, self.erase_ns, self.sus.seg_ns)
    }

    /// Garbage-collection relocation on one die (see `MediaOp::GcRelocate`).
    pub(super) fn gc_relocate(
        &mut self,
        t: u64,
        die: usize,
        read_units: u64,
        slc_read_ns: u64,
        bytes: u64,
        program_units: u64,
    ) -> u64 {
        let unit_read = self.unit_read_ns();
        let reads = read_units
            .saturating_mul(unit_read)
            .saturating_add(slc_read_ns);
        let ch = self.channel(die);
        let xe = self.channels[ch].program_xfer(t, self.ch_rate.ns(bytes.saturating_mul(2)));
        if self.gc_slots.is_empty() || program_units == 0 {
            let dur = reads.saturating_add(program_units.saturating_mul(self.program_ns));
            return self.dies[die].program(t, dur, self.sus.seg_ns).max(xe);
        }
        // GC engine slots: each relocated unit (its share of the reads, then
        // its program) starts once its die has finished the work queued
        // before it and a slot is free: the slot freed last before then
        // (best fit, so a die's units follow each other in one slot), else
        // the one that frees first; the slot is busy until the program
        // ends. Very large requests go in at most 1024 pieces.
        let pieces = program_units.min(1024);
        let mut e = t;
        for j in 0..pieces {
            let units = program_units * (j + 1) / pieces - program_units * j / pieces;
            let r = reads * (j + 1) / pieces - reads * j / pieces;
            let dur = r.saturating_add(units.saturating_mul(self.program_ns));
            let ready = t.max(self.dies[die].prog_until());
            let mut fit: Option<(usize, u64)> = None;
            let mut first = (0usize, u64::MAX);
            for (k, &f) in self.gc_slots.iter().enumerate() {
                if f <= ready && fit.map_or(true, |(_, b)| f > b) {
                    fit = Some((k, f));
                }
                if f < first.1 {
                    first = (k, f);
                }
            }
            let (k, free) = fit.unwrap_or(first);
            e = self.dies[die].program(ready.max(free), dur, self.sus.seg_ns);
            self.gc_slots[k] = e;
        }
        e.max(xe)
    }
}
