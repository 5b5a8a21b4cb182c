//! What an FTL reports: its counters ([`FtlStats`]), and what a host write
//! hands the timing model — the program units it completed and the GC
//! work it triggered, per die ([`GcWork`]), placed against the dies' loads
//! ([`DieLoad`]) — gathered in [`FtlEffects`].

use serde::Serialize;

/// Counters of an FTL (device write amplification, GC, wear).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FtlStats {
    /// Bytes the host wrote (as sent).
    pub host_bytes_written: u64,
    /// Bytes programmed to flash: host mapping units (whole units: a partial
    /// write is a read-modify-write) plus GC relocations.
    pub flash_bytes_written: u64,
    /// Bytes GC moved.
    pub gc_relocated_bytes: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Victims collected.
    pub gc_victims: u64,
    /// Bytes unmapped by TRIM (mapping units that held data).
    pub trimmed_bytes: u64,
    /// Mapping units currently mapped.
    pub mapped_units: u64,
    /// Largest erase count of any block (wear).
    pub max_block_erases: u32,
    /// Bytes of page-map memory allocated (L2P + P2L).
    pub map_resident_bytes: u64,
    /// Host bytes (whole mapping units) programmed in SLC mode (also in
    /// `flash_bytes_written`).
    pub slc_written_bytes: u64,
    /// Bytes folded from SLC into TLC blocks (also in `flash_bytes_written`
    /// and, as relocations, in `gc_relocated_bytes`).
    pub slc_folded_bytes: u64,
    /// SLC blocks (erase units) folded.
    pub slc_folds: u64,
    /// Erase units currently in SLC mode (open or holding data).
    pub slc_units: u64,
    /// `gc_modes`: times a pool entered foreground GC (the host throttled)
    /// and deferred GC (the host at full speed).
    pub gc_foreground_entries: u64,
    pub gc_deferred_entries: u64,
}

impl FtlStats {
    /// Device write amplification: flash bytes / host bytes (0 before any write).
    pub fn waf(&self) -> f64 {
        if self.host_bytes_written == 0 {
            0.0
        } else {
            self.flash_bytes_written as f64 / self.host_bytes_written as f64
        }
    }
}

/// GC work on one die, for the timing model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GcWork {
    pub die: u32,
    /// Program units of the victim that held valid data (read).
    pub read_units: u64,
    /// Bytes relocated.
    pub bytes: u64,
    /// Program units of the GC block completed.
    pub program_units: u64,
    /// Blocks erased (the victim).
    pub erases: u64,
    /// SLC program units of the victim that held valid data (read, one page
    /// per plane each: folding).
    pub slc_read_units: u64,
}

/// How busy each die is, so that the host frontier can steer each new
/// program unit to the die that will be free first (set by the device layer
/// from the timing model before a write; empty = strict round robin).
#[derive(Debug, Default, Clone)]
pub struct DieLoad {
    /// Per die: when its queued programs, GC work and erases end (ns).
    pub until_ns: Vec<u64>,
    /// Die time of one program unit.
    pub program_ns: u64,
    /// Die time to read one program unit (GC).
    pub unit_read_ns: u64,
    /// Die time of an erase.
    pub erase_ns: u64,
    /// Die time of an SLC program unit and of an SLC read (SLC cache).
    pub slc_program_ns: u64,
    pub slc_read_ns: u64,
}

/// What a host write or trim produced for the timing model.
#[derive(Debug, Default)]
pub struct FtlEffects {
    /// Input: die loads (see `DieLoad`); the FTL adds the work it places.
    pub load: DieLoad,
    /// The host program units this write completed, in order (die, bytes,
    /// die time: TLC, or SLC mode).
    pub units: Vec<zns_sim::timing::FtlProgram>,
    /// GC work triggered by this write (before its units, in time).
    pub gc: Vec<GcWork>,
}

impl FtlEffects {
    /// Clears the outputs (the die loads are left as they are).
    pub fn clear(&mut self) {
        self.units.clear();
        self.gc.clear();
    }

    /// Adds the die time of `gc[from..]` to the die loads (if any).
    pub(super) fn add_gc_load(&mut self, from: usize) {
        if self.load.until_ns.is_empty() {
            return;
        }
        let l = &mut self.load;
        for g in &self.gc[from..] {
            let cost = g.read_units * l.unit_read_ns
                + g.slc_read_units * l.slc_read_ns
                + g.program_units * l.program_ns
                + g.erases * l.erase_ns;
            if let Some(u) = l.until_ns.get_mut(g.die as usize) {
                *u += cost;
            }
        }
    }
}
