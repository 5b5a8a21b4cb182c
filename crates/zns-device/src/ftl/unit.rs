//! The FTL's erase units and their pools: an erase unit's state and valid
//! count ([`Unit`]), an open unit's write position ([`Open`]), and a pool's
//! free units, open host and GC units and closed units bucketed by valid
//! count ([`Pool`]).

use std::collections::VecDeque;

use super::config::GcMode;
use super::map::NONE;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BlockState {
    Free,
    Open,
    Closed,
}

/// An erase unit: one block (per-die allocation) or one superblock (the
/// block of the same index on every die), erased and collected as a whole.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit {
    pub(super) valid: u32,
    pub(super) erases: u32,
    pub(super) state: BlockState,
    /// Programmed in SLC mode (SLC cache): holds 1 / bits per cell of the
    /// slots; closed SLC units are in the fold queue, not the buckets.
    pub(super) slc: bool,
    /// Device-wide slot write counter when the unit was closed.
    pub(super) closed_seq: u64,
    /// Bucket list links (closed units of a pool, by valid count).
    pub(super) prev: u32,
    pub(super) next: u32,
}

/// An open erase unit and where its next data goes.
#[derive(Debug)]
pub(super) struct Open {
    pub(super) unit: u32,
    /// Per member die: next slot in its block.
    pub(super) next: Vec<u32>,
    /// Member die that takes the next data (GC frontier: round robin).
    pub(super) cursor: u32,
    /// Usable slots per block (all of them, or 1 / bits per cell in SLC mode).
    pub(super) cap: u32,
    /// Slots per program unit (TLC, or SLC mode).
    pub(super) spu: u32,
}

impl Open {
    pub(super) fn has_room(&self) -> bool {
        self.next.iter().any(|&n| n < self.cap)
    }
}

/// The dies whose blocks form the erase units of one pool (one die per pool
/// with per-die allocation; every die in one pool with superblocks): free
/// units, the open host and GC units, closed units bucketed by valid count.
#[derive(Debug)]
pub(super) struct Pool {
    /// Free units: taken from the back, erased ones go to the front (FIFO:
    /// wear spreads over the units).
    pub(super) free: VecDeque<u32>,
    pub(super) host: Option<Open>,
    pub(super) gc: Option<Open>,
    /// Head of the closed-unit list of each valid count.
    pub(super) buckets: Vec<u32>,
    /// No bucket below this is non-empty.
    pub(super) min_bucket: u32,
    /// `gc_modes`: what the pool's GC does now ...
    pub(super) mode: GcMode,
    /// ... the GC slots it may still move (ppm of a slot): earned with each
    /// host program unit at the mode's ratio, spent by each victim's valid
    /// slots (negative: the last victim is not yet paid for) ...
    pub(super) credit_ppm: i64,
    /// ... and the GC program units each host program unit pays of a die's
    /// relocation debt at least (the ratio, rounded up).
    pub(super) pace_units: u64,
}

impl Unit {
    /// A unit never written: free, no valid slot, in no list.
    pub(super) const FREE: Unit = Unit {
        valid: 0,
        erases: 0,
        state: BlockState::Free,
        slc: false,
        closed_seq: 0,
        prev: NONE,
        next: NONE,
    };
}

impl Pool {
    /// The pool of units `first..first + units` (all free, lowest taken
    /// first), with `buckets` valid counts (0 to a unit's slots).
    pub(super) fn new(first: u32, units: u32, buckets: usize) -> Pool {
        Pool {
            // Taken from the back: lowest unit first.
            free: (first..first + units).rev().collect(),
            host: None,
            gc: None,
            buckets: vec![NONE; buckets],
            min_bucket: 0,
            mode: GcMode::Background,
            credit_ppm: 0,
            pace_units: 0,
        }
    }
}
