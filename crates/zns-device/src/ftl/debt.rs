//! Superblocks' paced GC: die work done in the map but not yet handed to
//! the timing model, per die, paid a slice with each host program unit (as
//! firmware interleaves GC with host writes) or all at once at idle.

use super::report::GcWork;

/// Each die's GC debt and the slice it pays per host program unit.
#[derive(Debug)]
pub(super) struct GcDebt {
    /// Per die: reads, relocated bytes and programs owed.
    owed: Vec<GcWork>,
    /// Per die: GC program units paid per host program unit.
    rate: Vec<u64>,
}

impl GcDebt {
    pub(super) fn new(dies: u32) -> GcDebt {
        GcDebt {
            owed: (0..dies)
                .map(|die| GcWork {
                    die,
                    ..GcWork::default()
                })
                .collect(),
            rate: vec![0; dies as usize],
        }
    }

    /// Adds a victim's relocation on `w.die` (its erases are not owed: they
    /// go to the timing model at once); the die then pays it over the next
    /// `units_per_block` host program units.
    pub(super) fn add(&mut self, w: &GcWork, units_per_block: u64) {
        let d = &mut self.owed[w.die as usize];
        d.read_units += w.read_units;
        d.slc_read_units += w.slc_read_units;
        d.bytes += w.bytes;
        d.program_units += w.program_units;
        self.rate[w.die as usize] = d.program_units.div_ceil(units_per_block).max(1);
    }

    /// One slice of die `die`'s debt, if it has any: its rate, or `pace`
    /// program units if more.
    pub(super) fn pay(&mut self, die: u32, pace: u64) -> Option<GcWork> {
        let rate = self.rate[die as usize].max(pace);
        let d = &mut self.owed[die as usize];
        if d.program_units == 0 && d.read_units == 0 && d.slc_read_units == 0 && d.bytes == 0 {
            return None;
        }
        let p = d.program_units.min(rate);
        let (r, sr, b) = if p >= d.program_units {
            (d.read_units, d.slc_read_units, d.bytes)
        } else {
            (
                d.read_units * p / d.program_units,
                d.slc_read_units * p / d.program_units,
                d.bytes * p / d.program_units,
            )
        };
        d.program_units -= p;
        d.read_units -= r;
        d.slc_read_units -= sr;
        d.bytes -= b;
        Some(GcWork {
            die,
            read_units: r,
            bytes: b,
            program_units: p,
            erases: 0,
            slc_read_units: sr,
        })
    }

    /// Every die's whole debt, appended to `out` (idle GC), and forgotten.
    pub(super) fn pay_all(&mut self, out: &mut Vec<GcWork>) {
        for d in self.owed.iter_mut() {
            if d.program_units + d.read_units + d.slc_read_units + d.bytes > 0 {
                out.push(*d);
                *d = GcWork {
                    die: d.die,
                    ..GcWork::default()
                };
            }
        }
    }
}
