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
//! member failed, rebuild onto a spare, the crash-test harness (`crashtest`,
//! behind the `crashtest` feature: it runs arrays of emulated devices, so it
//! alone needs zns-device), and zone aggregation (`aggr`, for small-zone
//! members such as the PM1731a). Arrays are built over any `ZonedDevice`s;
//! building one from device names is zns-target's. `docs/raid.md` describes
//! the design and the on-media formats.
//!
//! Everything runs on the `zns_sim` runtime: no wall clock, no threads; the
//! array's background work (ZRWA manager, sub-I/O submission) are tasks of the
//! runtime handle it is given.

pub mod aggr;
mod array;
#[cfg(feature = "crashtest")]
pub mod crash_params;
#[cfg(feature = "crashtest")]
pub mod crashtest;
mod create;
mod engine;
mod join;
pub mod layout;
pub mod md;
mod media;
mod plan;
mod recovery;
mod state;
mod stats;
mod superblock;

pub use aggr::AggregatedZns;
pub use array::RaidArray;
pub use layout::Layout;
pub use stats::RaidStats;

use zns_core::NvmeError;

/// Default host time per logical write in a submission worker (see
/// `RaidOptions::worker_ns_per_write`).
pub const DEFAULT_WORKER_NS_PER_WRITE: u64 = 2_000;

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

/// Which design the array runs: ZRAID, the RAIZN baseline (ASPLOS '23) and
/// its per-zone-queue fix RAIZN+, and the ablation steps of the ZRAID paper
/// §6.3 between RAIZN+ and ZRAID. One write path with switches
/// (`docs/raid.md`, "Variants"):
///
/// | variant | member zones | PP goes to | PP header block | member scheduler | submission FIFOs |
/// |---|---|---|---|---|---|
/// | `raizn`  | normal | PP log zone | yes | mq-deadline | one for the array |
/// | `raizn+` | normal | PP log zone | yes | mq-deadline | one per zone |
/// | `z`      | ZRWA   | PP log zone | yes | mq-deadline | one per zone |
/// | `z+s`    | ZRWA   | PP log zone | yes | none        | one per zone |
/// | `z+s+m`  | ZRWA   | PP log zone | no  | none        | one per zone |
/// | `zraid`  | ZRWA   | ZRWA of the data zones (Rule 1) | no | none | one per zone |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
pub enum Variant {
    Raizn,
    RaiznPlus,
    Z,
    ZS,
    ZSM,
    #[default]
    Zraid,
}

impl Variant {
    pub const ALL: [Variant; 6] = [
        Variant::Raizn,
        Variant::RaiznPlus,
        Variant::Z,
        Variant::ZS,
        Variant::ZSM,
        Variant::Zraid,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Variant::Raizn => "raizn",
            Variant::RaiznPlus => "raizn+",
            Variant::Z => "z",
            Variant::ZS => "z+s",
            Variant::ZSM => "z+s+m",
            Variant::Zraid => "zraid",
        }
    }
    /// Member zones are opened with a ZRWA (write pointers advanced by
    /// explicit ZRWA flushes); otherwise they are normal zones written in order.
    pub fn zrwa_zones(self) -> bool {
        !matches!(self, Variant::Raizn | Variant::RaiznPlus)
    }
    /// Partial parity is appended to a dedicated PP log zone per member
    /// (RAIZN) instead of the ZRWA of the data zones.
    pub fn pp_log_zone(self) -> bool {
        self != Variant::Zraid
    }
    /// A PP log record starts with a metadata header block.
    pub fn pp_header(self) -> bool {
        matches!(
            self,
            Variant::Raizn | Variant::RaiznPlus | Variant::Z | Variant::ZS
        )
    }
    /// The members run behind mq-deadline's per-zone write lock (queue depth
    /// one per zone); otherwise behind `none` (high queue depth).
    pub fn members_mq_deadline(self) -> bool {
        matches!(self, Variant::Raizn | Variant::RaiznPlus | Variant::Z)
    }
    /// All zones share one submission FIFO (RAIZN's single work queue).
    pub fn single_fifo(self) -> bool {
        self == Variant::Raizn
    }
    /// Member zones reserved for the array's own logs: 2 metadata zones, plus
    /// 2 PP log zones (the current one and the one GC switches to).
    pub fn reserved_zones(self) -> u32 {
        if self.pp_log_zone() {
            4
        } else {
            2
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Variant, String> {
        let l = s.trim().to_ascii_lowercase();
        let l = match l.as_str() {
            "raiznplus" | "raizn-plus" => "raizn+",
            "zs" => "z+s",
            "zsm" => "z+s+m",
            "z+s+m+p" => "zraid",
            x => x,
        };
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == l)
            .ok_or_else(|| {
                format!(
                    "unknown RAID variant {s:?}: expected raizn, raizn+, z, z+s, z+s+m or zraid"
                )
            })
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
    /// Design variant (default ZRAID).
    pub variant: Variant,
    /// Mark a logical write's blocks complete (and so let the ZRWA manager
    /// advance write pointers over them) only when all of the write's member
    /// sub-I/Os have completed, as ZRAID's completion handler does (paper
    /// §4.4). Default off: each per-stripe piece is marked when its own
    /// sub-I/Os complete, so the completed stripes of a write still in flight
    /// are already encoded in the write pointers.
    pub progress_per_write: bool,
    /// Host time one submission worker spends per logical write (splitting,
    /// copying, parity). Work of zones sharing a FIFO is serial: RAIZN's one
    /// work queue is its bottleneck, RAIZN+ and the others have one per zone.
    pub worker_ns_per_write: u64,
    /// Picoseconds per byte of a logical write the worker copies into the
    /// stripe buffer (every design). Default 0 (issue 16: a per-design,
    /// size-dependent worker cost, tried and measured in docs/raid.md).
    pub worker_copy_ps_per_byte: u64,
    /// Picoseconds per byte the worker XORs: ZRAID and its ablation builds
    /// the partial parity of the chunks written so far in the stripe
    /// (`calc_parity`, chunks 0..k over the written range) or the full
    /// parity of a stripe it completes; RAIZN and RAIZN+ the whole stripe
    /// buffer for every stripe a write touches (`raizn_stripe_buffer_parity`,
    /// `raizn_bio_parity`). Default 0.
    pub worker_xor_ps_per_byte: u64,
    /// Host time a PP-log append holds its member's metadata mutex
    /// (`raizn_md_lba`), shared by every zone: the out-of-place designs'
    /// PP appends to one member are serial. Default 0.
    pub pp_mutex_ns: u64,
    /// Timing only: skip the bytes. Data and parity sub-I/Os carry zero-filled
    /// blocks of the sizes they would have, the stripe buffers and running
    /// parity are not kept, and partial parity records hold zeros; the member
    /// commands, their sizes and order, and so the timing, are the same. For
    /// arrays whose members keep no data anyway (`zns bench`'s `raid:`
    /// targets): what such an array reads back is zeros, not what was written.
    pub timing_only: bool,
}

impl Default for RaidOptions {
    fn default() -> Self {
        RaidOptions {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            policy: Policy::WpLog,
            flush_before_advance: false,
            variant: Variant::Zraid,
            progress_per_write: false,
            worker_ns_per_write: DEFAULT_WORKER_NS_PER_WRITE,
            worker_copy_ps_per_byte: 0,
            worker_xor_ps_per_byte: 0,
            pp_mutex_ns: 0,
            timing_only: false,
        }
    }
}

/// `lbas` blocks of `lba_bytes` as a size a user reads: `32 KiB`, or bytes.
fn size_text(lbas: u64, lba_bytes: u64) -> String {
    let bytes = lbas.saturating_mul(lba_bytes);
    if bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// The same size as the `chunk=` option takes it (`32k`, or bytes).
fn size_arg(lbas: u64, lba_bytes: u64) -> String {
    let bytes = lbas.saturating_mul(lba_bytes);
    if bytes % 1024 == 0 {
        format!("{}k", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

/// Why an array could not be built, opened or rebuilt.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RaidError {
    #[error("a RAID-5 array needs at least 3 members, got {members}")]
    TooFewMembers { members: usize },
    #[error("member {member} differs from member 0: {detail} (all members must have the same geometry, limits and ZRWA)")]
    MixedGeometry { member: usize, detail: String },
    #[error("the members have no ZRWA: ZRAID keeps partial parity in the zone random write area")]
    NoZrwa,
    #[error("chunk of {chunk_bytes} bytes is not a whole number of {lba_bytes}-byte blocks")]
    ChunkNotBlocks { chunk_bytes: u64, lba_bytes: u64 },
    #[error("chunk of {} ({chunk_lbas} LBAs) must be a non-zero multiple of 2 × ZRWAFG = {} (write pointers advance by half chunks)", size_text(*.chunk_lbas, *.lba_bytes), size_text(2 * *.fg_lbas, *.lba_bytes))]
    ChunkTooSmall {
        chunk_lbas: u64,
        fg_lbas: u64,
        lba_bytes: u64,
    },
    #[error("ZRWA of {zrwa_lbas} LBAs is smaller than 4 × ZRWAFG = {} LBAs (a chunk of at least 2 × ZRWAFG and its partial parity must both fit)", 4 * .fg_lbas)]
    ZrwaTooSmall { zrwa_lbas: u64, fg_lbas: u64 },
    #[error("chunk of {} ({chunk_lbas} LBAs) is larger than half the ZRWA = {}: a chunk and its partial parity must both fit in the ZRWA (chunk={} or less)", size_text(*.chunk_lbas, *.lba_bytes), size_text(*.zrwa_lbas / 2, *.lba_bytes), size_arg(*.zrwa_lbas / 2, *.lba_bytes))]
    ChunkTooLarge {
        chunk_lbas: u64,
        zrwa_lbas: u64,
        lba_bytes: u64,
    },
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
    #[error("the {variant} variant does not support {what}: power-loss recovery and rebuild are built for ZRAID's design (member write pointers and WP logs)")]
    Unsupported {
        variant: Variant,
        what: &'static str,
    },
    #[error("rebuild: {0}")]
    Rebuild(String),
    /// A member that `AggregatedZns` cannot present as larger zones.
    #[error("{0}")]
    Aggregation(String),
}
