//! The timing model's vocabulary: [`MediaOp`], one command as the model
//! sees it, the FTL's placements of reads ([`FtlPlace`]) and programs
//! ([`FtlProgram`]), and how a namespace maps to flash ([`NamespaceKind`]).

/// One command as the timing model sees it. Offsets are bytes relative to the
/// namespace (`Read`, `ConvWrite`) or to the zone start (`zone_offset_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaOp {
    /// Read of any namespace (zoned or conventional).
    Read {
        ns: u32,
        lba_offset_bytes: u64,
        bytes: u64,
    },
    /// Zoned write at the write pointer (or inside the ZRWA when `zrwa`).
    /// `implicit_open`: this write moved the zone from Empty/Closed to
    /// Implicitly Opened.
    Write {
        ns: u32,
        zone: u32,
        zone_offset_bytes: u64,
        bytes: u64,
        implicit_open: bool,
        zrwa: bool,
        fua: bool,
    },
    /// Zone Append; `zone_offset_bytes` is where the data lands (the write
    /// pointer the device assigned).
    Append {
        ns: u32,
        zone: u32,
        zone_offset_bytes: u64,
        bytes: u64,
        implicit_open: bool,
        fua: bool,
    },
    /// Write to a conventional (randomly writable) namespace.
    ConvWrite {
        ns: u32,
        lba_offset_bytes: u64,
        bytes: u64,
        fua: bool,
    },
    /// Data leaving the ZRWA for the zone's flash (implicit flush side effect).
    /// Background only: it returns when the committed data is programmed,
    /// which no host command waits for.
    ZrwaCommit {
        ns: u32,
        zone: u32,
        zone_offset_bytes: u64,
        bytes: u64,
    },
    /// Explicit ZRWA flush command; the commit of `bytes` from
    /// `zone_offset_bytes` happens in the background.
    ZrwaFlush {
        ns: u32,
        zone: u32,
        zone_offset_bytes: u64,
        bytes: u64,
    },
    /// Explicit open.
    Open { ns: u32, zone: u32 },
    /// Close.
    Close { ns: u32, zone: u32 },
    /// Finish: the device programs filler over `capacity_bytes - written_bytes`.
    Finish {
        ns: u32,
        zone: u32,
        written_bytes: u64,
        capacity_bytes: u64,
    },
    /// Reset. `written_bytes` = host data in the zone; `finished_early` = the
    /// zone became Full through a Finish (not by being written to capacity).
    /// A reset of a zone in state Empty changes nothing: use `ZoneMgmtNoop`.
    Reset {
        ns: u32,
        zone: u32,
        written_bytes: u64,
        finished_early: bool,
    },
    /// Flush (volatile write cache).
    Flush { ns: u32 },
    /// A zone-management command that changes nothing (reset of an Empty
    /// zone, close of a Closed zone, open of an open zone...).
    ZoneMgmtNoop { ns: u32, zone: u32 },
    /// Device-side garbage collection of an FTL namespace (background, no
    /// host overhead): on `die`, read the valid data of `read_units` program
    /// units of a victim block (every page type of each unit), move `bytes`
    /// over the die's channel (out and back in, for ECC), and program
    /// `program_units` units of the die's GC block. Die time in the host
    /// program class: host reads suspend it at segment boundaries like any
    /// program; host programs queue behind it. Returns when it ends.
    ///
    /// Folding of an SLC cache is the same work with SLC sources: it also
    /// reads `slc_read_units` SLC program units (one page per plane, sensed
    /// in `slc_read_ns` each).
    GcRelocate {
        ns: u32,
        die: u32,
        read_units: u64,
        bytes: u64,
        program_units: u64,
        slc_read_units: u64,
        slc_read_ns: u64,
    },
    /// Block erase on `die` (`erase_ns`, background, host program class).
    Erase { ns: u32, die: u32 },
}

/// Where a piece of a read lies on flash, as an FTL namespace's page map
/// says (`FlashArray::submit_ftl_read`): `bytes` from `unit_offset_bytes`
/// inside a program unit on `die`. The offset gives the page type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FtlPlace {
    pub die: u32,
    pub unit_offset_bytes: u64,
    pub bytes: u64,
    /// Array read time (tR) of the piece if the FTL knows it (an SLC-mode
    /// block: one page per cell, `ftl.slc_cache.read_ns`); 0 = the page
    /// type given by the offset in a TLC unit.
    pub read_ns: u64,
}

/// One program an FTL namespace's write completed (`submit_ftl_write`):
/// `bytes` of buffered data programmed on `die` in `program_ns` (a TLC
/// one-shot unit, or a smaller SLC-mode unit with its own program time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FtlProgram {
    pub die: u32,
    pub bytes: u64,
    pub program_ns: u64,
}

/// How a namespace maps to flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceKind {
    /// Zones striped over `dies_per_zone` dies (default for undeclared namespaces).
    Zoned,
    /// Page-mapped, log-structured over all dies; has its own read/write engines.
    Conventional,
}

impl MediaOp {
    /// The command with sizes beyond any real command (more than `max`
    /// bytes of data) cut to that size, so that no input can overflow
    /// the arithmetic or make `submit` loop for long.
    pub(super) fn clamped(mut self, max: u64) -> MediaOp {
        let cap = |v: &mut u64| *v = (*v).min(max);
        match &mut self {
            MediaOp::Read { bytes, .. }
            | MediaOp::Write { bytes, .. }
            | MediaOp::Append { bytes, .. }
            | MediaOp::ConvWrite { bytes, .. }
            | MediaOp::ZrwaCommit { bytes, .. }
            | MediaOp::ZrwaFlush { bytes, .. } => cap(bytes),
            MediaOp::Finish {
                written_bytes,
                capacity_bytes,
                ..
            } => {
                *written_bytes = (*written_bytes).min(1 << 50);
                *capacity_bytes = (*capacity_bytes).min(1 << 50);
            }
            MediaOp::Reset { written_bytes, .. } => *written_bytes = (*written_bytes).min(1 << 50),
            MediaOp::GcRelocate {
                read_units,
                bytes,
                program_units,
                slc_read_units,
                slc_read_ns,
                ..
            } => {
                *read_units = (*read_units).min(1 << 24);
                *slc_read_units = (*slc_read_units).min(1 << 24);
                *slc_read_ns = (*slc_read_ns).min(1 << 30);
                *program_units = (*program_units).min(1 << 24);
                *bytes = (*bytes).min(1 << 50);
            }
            MediaOp::Erase { .. }
            | MediaOp::Open { .. }
            | MediaOp::Close { .. }
            | MediaOp::Flush { .. }
            | MediaOp::ZoneMgmtNoop { .. } => {}
        }
        self
    }
}
