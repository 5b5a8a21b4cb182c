//! zns-raid owns RAID-5 over ZNS devices: `RaidArray`, an array of N ≥ 3
//! `ZonedDevice`s that is itself a `ZonedDevice`, built as ZRAID (ASPLOS '25)
//! describes it — data and full parity striped over the same zone of every
//! member, partial parity (PP) of incomplete stripes written into the ZRWA of
//! the data zones (Rule 1) where later data overwrites it, member write
//! pointers advanced by explicit ZRWA flushes in two steps per chunk (Rule 2)
//! so that they alone say how far the array got, WP-log entries for FUA and
//! flush, and a metadata ("superblock") zone per member for the corner cases
//! (PP near the zone end, zone reset and finish logs). It also owns crash
//! recovery (logical write pointers recomputed from member write pointers and
//! WP logs, stripe buffers reloaded from the media), degraded reads with one
//! member failed, rebuild onto a spare, and the crash-test harness
//! (`crashtest`). `docs/raid.md` describes the design and the on-media formats.
//!
//! Everything runs on the `zns_sim` runtime: no wall clock, no threads; the
//! array's background work (ZRWA manager, sub-I/O submission) are tasks of the
//! runtime handle it is given.

mod array;
pub mod crashtest;
pub mod layout;
pub mod md;
mod recovery;

pub use array::{RaidArray, RaidStats};
pub use layout::Layout;

use zns_core::NvmeError;

/// Default chunk size.
pub const DEFAULT_CHUNK_BYTES: u64 = 64 * 1024;

/// How the array makes completed writes recoverable after power loss
/// (paper Table 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Member write pointers advance only over whole stripes; recovery rounds
    /// down to a stripe; FUA and flush get no special treatment.
    Stripe,
    /// Two-step (Rule 2) write-pointer advancement per chunk; FUA ignored.
    Chunk,
    /// Chunk, plus a WP-log entry (two copies) before a FUA write or a flush
    /// completes, so chunk-unaligned data is recovered too (ZRAID).
    WpLog,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Stripe => "stripe",
            Policy::Chunk => "chunk",
            Policy::WpLog => "wplog",
        }
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Policy, String> {
        match s {
            "stripe" => Ok(Policy::Stripe),
            "chunk" => Ok(Policy::Chunk),
            "wplog" | "wp-log" | "log" => Ok(Policy::WpLog),
            other => Err(format!(
                "unknown consistency policy {other:?}: expected stripe, chunk or wplog"
            )),
        }
    }
}

/// Array options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaidOptions {
    /// Chunk size in bytes (default 64 KiB): a multiple of 2 × ZRWAFG, at most
    /// half the ZRWA.
    pub chunk_bytes: u64,
    pub policy: Policy,
    /// Flush every member before advancing write pointers. Needed only for
    /// members without power-loss protection whose completed writes can be
    /// lost (the ZN540 keeps them, so ZRAID does not do this).
    pub flush_before_advance: bool,
}

impl Default for RaidOptions {
    fn default() -> Self {
        RaidOptions {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            policy: Policy::WpLog,
            flush_before_advance: false,
        }
    }
}

/// Why an array could not be built, opened or rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum RaidError {
    #[error("a RAID-5 array needs at least 3 members, got {members}")]
    TooFewMembers { members: usize },
    #[error("member {member} differs from member 0: {detail} (all members must have the same geometry, limits and ZRWA)")]
    MixedGeometry { member: usize, detail: String },
    #[error("the members have no ZRWA: ZRAID keeps partial parity in the zone random write area")]
    NoZrwa,
    #[error("chunk of {chunk_bytes} bytes is not a whole number of {lba_bytes}-byte blocks")]
    ChunkNotBlocks { chunk_bytes: u64, lba_bytes: u64 },
    #[error("chunk of {chunk_lbas} LBAs must be a non-zero multiple of 2 × ZRWAFG = {} LBAs (write pointers advance by half chunks)", 2 * .fg_lbas)]
    ChunkTooSmall { chunk_lbas: u64, fg_lbas: u64 },
    #[error("ZRWA of {zrwa_lbas} LBAs is smaller than 4 × ZRWAFG = {} LBAs (a chunk of at least 2 × ZRWAFG and its partial parity must both fit)", 4 * .fg_lbas)]
    ZrwaTooSmall { zrwa_lbas: u64, fg_lbas: u64 },
    #[error("chunk of {chunk_lbas} LBAs is larger than half the ZRWA ({zrwa_lbas} LBAs): a chunk and its partial parity must both fit in the ZRWA")]
    ChunkTooLarge { chunk_lbas: u64, zrwa_lbas: u64 },
    #[error("chunk of {chunk_lbas} LBAs exceeds the members' {what} of {limit_lbas} LBAs")]
    ChunkOverLimit {
        chunk_lbas: u64,
        what: &'static str,
        limit_lbas: u64,
    },
    #[error(
        "members have {zones} zones: the array needs 2 metadata zones plus at least one data zone"
    )]
    TooFewZones { zones: u32 },
    #[error(
        "member zone capacity of {cap_lbas} LBAs holds no whole stripe row of {chunk_lbas} LBAs"
    )]
    ZoneTooSmall { cap_lbas: u64, chunk_lbas: u64 },
    #[error("members have no open/active zone left for data zones (one is the metadata zone)")]
    NoZoneResources,
    #[error("members {failed:?} are failed: RAID-5 survives one")]
    TooManyFailed { failed: Vec<usize> },
    #[error("not a znskit RAID array: {0}")]
    NotAnArray(String),
    #[error("member {member}: {error}")]
    Device { member: usize, error: NvmeError },
    #[error("rebuild: {0}")]
    Rebuild(String),
}
