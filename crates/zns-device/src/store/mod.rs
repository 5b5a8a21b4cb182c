//! Data stores: where an emulated namespace keeps the bytes written to it.
//!
//! This module owns the [`DataStore`] contract and its four implementations:
//!
//! | kind | type | keeps | memory |
//! |---|---|---|---|
//! | `none` | [`NoneStore`] | nothing; every read returns zeros | O(1) |
//! | `stamp` | [`StampStore`] | a 64-bit tag per written block ([`stamp`]) | ~8 bytes per written block |
//! | `memory` | [`MemoryStore`] | every byte, in lazily allocated 1 MiB extents | ~bytes written |
//! | `image` | [`PersistentImage`] | every byte, in a crash-safe file | a few KiB |
//!
//! # Contract (every store)
//! - `lba` is namespace-relative; a buffer is a whole number of blocks
//!   (`len % lba_bytes == 0`) and `[lba, lba + len / lba_bytes)` lies inside
//!   the namespace, otherwise the call returns [`StoreError::Invalid`] and
//!   changes nothing. A zero-length buffer is a no-op.
//! - A block never written, or deallocated since, reads as zeros.
//! - A read returns what the last write to each block wrote (the stamp store
//!   reconstructs it; see [`stamp`] for blocks that are not stamp blocks).
//! - `sync` makes every completed write and deallocate durable; it is a no-op
//!   for the in-memory stores. Power loss is *not* modelled here: the device
//!   (and fault wrappers) decide what a power cut drops; the image store only
//!   guarantees what `sync` promises for a real `kill -9` or power loss.
//! - On error the contents of a read buffer are unspecified.
//! - No argument makes a store panic.

mod image;
mod memory;
mod none;
pub mod stamp;

use std::path::PathBuf;

pub use image::{ImageOptions, PersistentImage, SyncPolicy};
pub use memory::MemoryStore;
pub use none::NoneStore;
pub use stamp::StampStore;

/// Smallest logical block size a store accepts, in bytes (NVMe LBADS 9).
pub const LBA_BYTES_MIN: u32 = 512;
/// Largest logical block size a store accepts, in bytes (NVMe LBADS 16).
pub const LBA_BYTES_MAX: u32 = 64 * 1024;

/// Errors of the data stores.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The operating system refused an operation on the image file.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// Another process (or another open in this one) holds the image's
    /// lock: the image is fine, only busy.
    #[error("image {} is in use (another process, or another open in this one, holds its lock)", .path.display())]
    InUse {
        /// The file.
        path: PathBuf,
    },
    /// The image holds something it never wrote; the message names what
    /// (header field, metadata slot, file length, ...).
    #[error("image corrupt: {0}")]
    Corrupt(String),
    /// A block's content does not match its stored checksum (the device maps
    /// this to Unrecovered Read Error).
    #[error("block {lba} failed its checksum")]
    BadBlock {
        /// Namespace-relative LBA of the first bad block of the read.
        lba: u64,
    },
    /// A bad argument (buffer not a whole number of blocks, LBA range outside
    /// the namespace, unsupported block size, ...).
    #[error("{0}")]
    Invalid(String),
}

/// Which data store a namespace uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StoreKind {
    /// Keeps nothing; reads return zeros (the default).
    #[default]
    None,
    /// Keeps the 64-bit stamp tag of each written block.
    Stamp,
    /// Keeps every byte in memory.
    Memory,
    /// Keeps every byte in a persistent image file.
    Image,
}

impl StoreKind {
    /// The kebab-case name (`none`, `stamp`, `memory`, `image`).
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::None => "none",
            StoreKind::Stamp => "stamp",
            StoreKind::Memory => "memory",
            StoreKind::Image => "image",
        }
    }
}

impl std::fmt::Display for StoreKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for StoreKind {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<StoreKind, StoreError> {
        match s {
            "none" => Ok(StoreKind::None),
            "stamp" => Ok(StoreKind::Stamp),
            "memory" => Ok(StoreKind::Memory),
            "image" => Ok(StoreKind::Image),
            other => Err(StoreError::Invalid(format!(
                "unknown data store '{other}' (expected none, stamp, memory or image)"
            ))),
        }
    }
}

/// The data of ONE namespace. See the module docs for the contract.
pub trait DataStore {
    /// Which kind of store this is.
    fn kind(&self) -> StoreKind;
    /// Logical block size, in bytes.
    fn lba_bytes(&self) -> u32;
    /// Writes whole blocks starting at `lba`.
    fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), StoreError>;
    /// Reads whole blocks starting at `lba`; never-written and deallocated
    /// blocks read as zeros.
    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StoreError>;
    /// Forgets `nlb` blocks from `lba` (zone reset, power-loss rollback, TRIM):
    /// they read as zeros afterwards.
    fn deallocate(&mut self, lba: u64, nlb: u64) -> Result<(), StoreError>;
    /// Makes every write and deallocate so far durable (FUA, Flush); a no-op
    /// for in-memory stores.
    fn sync(&mut self) -> Result<(), StoreError>;
    /// Memory held by the store, in bytes (for reports).
    fn resident_bytes(&self) -> u64;
}

/// A store of `kind` for a namespace of `lba_count` blocks of `lba_bytes`.
///
/// Never panics: for [`StoreKind::Image`] (which needs a file: use
/// [`PersistentImage`]) or an invalid geometry it returns a store whose every
/// operation fails with [`StoreError::Invalid`] saying why. Use
/// [`try_new_store`] to get that error up front.
pub fn new_store(kind: StoreKind, lba_bytes: u32, lba_count: u64) -> Box<dyn DataStore> {
    match try_new_store(kind, lba_bytes, lba_count) {
        Ok(store) => store,
        Err(e) => Box::new(FailedStore::new(kind, lba_bytes, e.to_string())),
    }
}

/// Like [`new_store`], but reports an invalid kind or geometry as an error.
pub fn try_new_store(
    kind: StoreKind,
    lba_bytes: u32,
    lba_count: u64,
) -> Result<Box<dyn DataStore>, StoreError> {
    let geometry = Geometry::new(lba_bytes, lba_count)?;
    match kind {
        StoreKind::None => Ok(Box::new(NoneStore::with_geometry(geometry))),
        StoreKind::Stamp => Ok(Box::new(StampStore::with_geometry(geometry))),
        StoreKind::Memory => Ok(Box::new(MemoryStore::with_geometry(geometry))),
        StoreKind::Image => Err(StoreError::Invalid(
            "the image store needs a file: create or open it with PersistentImage".into(),
        )),
    }
}

/// A namespace's block geometry, validated: `lba_bytes` is a power of two in
/// `LBA_BYTES_MIN..=LBA_BYTES_MAX`, `lba_count >= 1` and the namespace fits in
/// `i64::MAX` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub lba_bytes: u32,
    pub lba_count: u64,
}

impl Geometry {
    pub fn new(lba_bytes: u32, lba_count: u64) -> Result<Geometry, StoreError> {
        if !lba_bytes.is_power_of_two() || !(LBA_BYTES_MIN..=LBA_BYTES_MAX).contains(&lba_bytes) {
            return Err(StoreError::Invalid(format!(
                "lba_bytes {lba_bytes} is not a power of two in {LBA_BYTES_MIN}..={LBA_BYTES_MAX}"
            )));
        }
        if lba_count == 0 {
            return Err(StoreError::Invalid(
                "lba_count 0: a namespace needs at least one block".into(),
            ));
        }
        match lba_count.checked_mul(u64::from(lba_bytes)) {
            Some(bytes) if bytes <= i64::MAX as u64 => Ok(Geometry {
                lba_bytes,
                lba_count,
            }),
            _ => Err(StoreError::Invalid(format!(
                "lba_count {lba_count} x lba_bytes {lba_bytes} does not fit in a file"
            ))),
        }
    }

    /// Namespace size, in bytes (fits: checked in `new`).
    pub fn bytes(self) -> u64 {
        self.lba_count * u64::from(self.lba_bytes)
    }

    /// Checks a transfer of `len_bytes` at `lba`; returns its block count.
    #[inline]
    pub fn check_io(self, lba: u64, len_bytes: usize) -> Result<u64, StoreError> {
        let mask = self.lba_bytes as usize - 1;
        if len_bytes & mask != 0 {
            return Err(StoreError::Invalid(format!(
                "buffer of {len_bytes} bytes is not a whole number of {}-byte blocks",
                self.lba_bytes
            )));
        }
        let nlb = (len_bytes >> self.lba_bytes.trailing_zeros()) as u64;
        self.check_range(lba, nlb)?;
        Ok(nlb)
    }

    /// Checks that `[lba, lba + nlb)` lies inside the namespace.
    #[inline]
    pub fn check_range(self, lba: u64, nlb: u64) -> Result<(), StoreError> {
        match lba.checked_add(nlb) {
            Some(end) if end <= self.lba_count => Ok(()),
            _ => Err(StoreError::Invalid(format!(
                "LBA range {lba}+{nlb} is outside the namespace of {} blocks",
                self.lba_count
            ))),
        }
    }
}

/// What [`new_store`] returns when it cannot build the store asked for: every
/// call fails with [`StoreError::Invalid`] carrying the reason.
pub(crate) struct FailedStore {
    kind: StoreKind,
    lba_bytes: u32,
    reason: String,
}

impl FailedStore {
    /// `lba_bytes` is reported as given if it is a valid block size, else as
    /// `LBA_BYTES_MIN` (so callers that divide by it cannot fault).
    pub(crate) fn new(kind: StoreKind, lba_bytes: u32, reason: String) -> FailedStore {
        let valid =
            lba_bytes.is_power_of_two() && (LBA_BYTES_MIN..=LBA_BYTES_MAX).contains(&lba_bytes);
        let lba_bytes = if valid { lba_bytes } else { LBA_BYTES_MIN };
        FailedStore {
            kind,
            lba_bytes,
            reason,
        }
    }
}

impl DataStore for FailedStore {
    fn kind(&self) -> StoreKind {
        self.kind
    }
    fn lba_bytes(&self) -> u32 {
        self.lba_bytes
    }
    fn write(&mut self, _lba: u64, _data: &[u8]) -> Result<(), StoreError> {
        Err(StoreError::Invalid(self.reason.clone()))
    }
    fn read(&mut self, _lba: u64, _buf: &mut [u8]) -> Result<(), StoreError> {
        Err(StoreError::Invalid(self.reason.clone()))
    }
    fn deallocate(&mut self, _lba: u64, _nlb: u64) -> Result<(), StoreError> {
        Err(StoreError::Invalid(self.reason.clone()))
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        Err(StoreError::Invalid(self.reason.clone()))
    }
    fn resident_bytes(&self) -> u64 {
        0
    }
}

/// Bit set of one extent's blocks (written / foreign ...), with a count of set bits.
#[derive(Debug, Clone)]
pub(crate) struct BlockBits {
    words: Box<[u64]>,
    set_count: u32,
}

impl BlockBits {
    pub fn new(blocks: usize) -> BlockBits {
        BlockBits {
            words: vec![0u64; blocks.div_ceil(64)].into_boxed_slice(),
            set_count: 0,
        }
    }
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }
    #[inline]
    pub fn set(&mut self, i: usize) {
        let w = &mut self.words[i / 64];
        let bit = 1u64 << (i % 64);
        if *w & bit == 0 {
            *w |= bit;
            self.set_count += 1;
        }
    }
    #[inline]
    pub fn clear(&mut self, i: usize) {
        let w = &mut self.words[i / 64];
        let bit = 1u64 << (i % 64);
        if *w & bit != 0 {
            *w &= !bit;
            self.set_count -= 1;
        }
    }
    pub fn count(&self) -> u32 {
        self.set_count
    }
}

/// Splits `[lba, lba + nlb)` into pieces that stay inside one extent of
/// `extent_blocks` blocks: yields (extent index, first block within the
/// extent, block count, offset of the piece in blocks from `lba`).
pub(crate) fn extent_pieces(
    lba: u64,
    nlb: u64,
    extent_blocks: u64,
) -> impl Iterator<Item = (u64, usize, usize, u64)> {
    let end = lba + nlb;
    let mut at = lba;
    std::iter::from_fn(move || {
        if at >= end {
            return None;
        }
        let extent = at / extent_blocks;
        let first = at % extent_blocks;
        let count = (extent_blocks - first).min(end - at);
        let piece = (extent, first as usize, count as usize, at - lba);
        at += count;
        Some(piece)
    })
}

/// Deallocates `[lba, lba + nlb)` from `extents` (extents of
/// `extent_blocks` blocks, keyed by index), visiting only extents that
/// exist (a 1 TB reset must not walk 60 000 empty slots): an extent wholly
/// inside the range is dropped; for one partly inside, `forget(extent,
/// first..end)` clears those blocks (extent-relative) and says whether the
/// extent holds nothing written any more, in which case it is dropped too.
pub(crate) fn deallocate_extents<E>(
    extents: &mut std::collections::BTreeMap<u64, E>,
    extent_blocks: u64,
    lba: u64,
    nlb: u64,
    mut forget: impl FnMut(&mut E, std::ops::Range<usize>) -> bool,
) {
    if nlb == 0 {
        return;
    }
    let first_extent = lba / extent_blocks;
    let last_extent = (lba + nlb - 1) / extent_blocks;
    let present: Vec<u64> = extents
        .range(first_extent..=last_extent)
        .map(|(k, _)| *k)
        .collect();
    for extent_index in present {
        let extent_start = extent_index * extent_blocks;
        let from = lba.max(extent_start);
        let to = (lba + nlb).min(extent_start + extent_blocks);
        let whole = from == extent_start && to == extent_start + extent_blocks;
        let emptied = whole
            || extents.get_mut(&extent_index).is_some_and(|extent| {
                forget(
                    extent,
                    (from - extent_start) as usize..(to - extent_start) as usize,
                )
            });
        if emptied {
            extents.remove(&extent_index);
        }
    }
}

/// Approximate bookkeeping cost of one `BTreeMap` entry, in bytes (for
/// `resident_bytes`).
pub(crate) const MAP_ENTRY_OVERHEAD_BYTES: u64 = 48;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_kind_names_round_trip() {
        for kind in [
            StoreKind::None,
            StoreKind::Stamp,
            StoreKind::Memory,
            StoreKind::Image,
        ] {
            assert_eq!(kind.name().parse::<StoreKind>().unwrap(), kind);
            let toml_value: StoreKind = toml::from_str::<
                std::collections::BTreeMap<String, StoreKind>,
            >(&format!("k = \"{kind}\""))
            .unwrap()["k"];
            assert_eq!(toml_value, kind);
        }
        assert!("disk".parse::<StoreKind>().is_err());
    }

    #[test]
    fn new_store_never_panics_on_bad_arguments() {
        for (kind, lba_bytes, lba_count) in [
            (StoreKind::Image, 4096, 16),
            (StoreKind::Memory, 0, 16),
            (StoreKind::Stamp, 4095, 16),
            (StoreKind::None, 4096, 0),
            (StoreKind::Memory, 65536, u64::MAX),
        ] {
            assert!(try_new_store(kind, lba_bytes, lba_count).is_err());
            let mut store = new_store(kind, lba_bytes, lba_count);
            assert!(matches!(
                store.write(0, &[0u8; 4096]),
                Err(StoreError::Invalid(_))
            ));
            assert!(matches!(
                store.read(0, &mut [0u8; 4096]),
                Err(StoreError::Invalid(_))
            ));
            assert!(store.deallocate(0, 1).is_err());
            assert!(store.sync().is_err());
        }
    }

    #[test]
    fn every_store_rejects_partial_blocks_and_out_of_range_lbas() {
        for kind in [StoreKind::None, StoreKind::Stamp, StoreKind::Memory] {
            let mut store = new_store(kind, 512, 100);
            assert!(
                matches!(store.write(0, &[1u8; 100]), Err(StoreError::Invalid(_))),
                "{kind}"
            );
            assert!(
                matches!(store.write(99, &[1u8; 1024]), Err(StoreError::Invalid(_))),
                "{kind}"
            );
            assert!(
                matches!(
                    store.read(u64::MAX, &mut [0u8; 512]),
                    Err(StoreError::Invalid(_))
                ),
                "{kind}"
            );
            assert!(
                matches!(store.deallocate(50, u64::MAX), Err(StoreError::Invalid(_))),
                "{kind}"
            );
            store.write(100, &[]).unwrap();
            store.write(99, &[7u8; 512]).unwrap();
            store.deallocate(0, 100).unwrap();
        }
    }

    #[test]
    fn extent_pieces_cover_the_range_exactly() {
        let pieces: Vec<_> = extent_pieces(250, 600, 256).collect();
        assert_eq!(
            pieces,
            vec![
                (0, 250, 6, 0),
                (1, 0, 256, 6),
                (2, 0, 256, 262),
                (3, 0, 82, 518)
            ]
        );
        assert_eq!(extent_pieces(5, 0, 256).count(), 0);
    }
}
