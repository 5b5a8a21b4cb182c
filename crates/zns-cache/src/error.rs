//! Errors of the cache layer, as values: bad parameters (checked before a
//! run starts), bad workload files, device errors met during a run, data
//! that did not read back as written, and runs that stopped making progress.

use zns_core::NvmeError;

/// Why a cache could not be built or a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// A parameter is out of range or inconsistent with the device.
    #[error("bad parameter: {0}")]
    Param(String),
    /// A workload or trace file is malformed or empty.
    #[error("bad workload: {0}")]
    Workload(String),
    /// The device (profile, namespace) could not be opened as asked.
    #[error("device: {0}")]
    Device(String),
    /// zns-target could not name or open the device.
    #[error("device: {0}")]
    Target(#[from] zns_target::TargetError),
    /// A command the device rejected during the run.
    #[error("{op} failed: {err}")]
    Io { op: &'static str, err: NvmeError },
    /// A hit returned bytes other than the ones stored for its key.
    #[error("data mismatch: key {key} read from zone {zone} slot {slot} at byte {offset} is not what was stored")]
    Corrupt {
        key: u32,
        zone: u32,
        slot: u32,
        offset: u64,
    },
    /// No request completed for a long stretch of virtual time.
    #[error("the run stalled: no request completed between {since_ns} ns and {now_ns} ns of virtual time ({space})")]
    Stalled {
        since_ns: u64,
        now_ns: u64,
        /// The cache's space at the stall (zones per state, open and GC zones, valid chunks).
        space: String,
    },
    /// An internal invariant did not hold (a bug; reported, never a panic).
    #[error("internal error: {0}")]
    Internal(String),
    /// Reading or writing a file.
    #[error("{path}: {message}")]
    File { path: String, message: String },
}

impl CacheError {
    pub(crate) fn io(op: &'static str) -> impl FnOnce(NvmeError) -> CacheError {
        move |err| CacheError::Io { op, err }
    }
}
