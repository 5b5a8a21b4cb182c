//! Stamp blocks and the `stamp` store.
//!
//! A *stamp block* carries a 64-bit tag and is fully determined by it: bytes
//! 0..8 hold the tag (little endian), the rest is a deterministic expansion of
//! the tag (an xorshift64* stream seeded from the tag), so a reader can check
//! a whole block against the tag it expects. Writers (benchmarks, tests, the
//! trace runner) fill blocks with [`fill_block`]; readers check them with
//! [`tag_of`] or [`is_stamp_of`].
//!
//! [`StampStore`] keeps only the tag of each written block (8 bytes plus 2 bits
//! per block, in extents of [`EXTENT_BLOCKS`] blocks allocated on first write
//! and freed when their last block is deallocated), and rebuilds the block on
//! read. Memory is proportional to the blocks written, never to the namespace
//! size: a 1 TB namespace costs nothing until it is written.
//!
//! What a read returns, per block:
//! - never written, deallocated, or last written with all zeros: zeros;
//! - last written with a stamp block: that exact block;
//! - last written with anything else (a *foreign* block, whose bytes the store
//!   cannot keep): the stamp block of a 64-bit hash of the written bytes. It
//!   is a valid stamp block but never equal to what was written (which was not
//!   a stamp block), so byte comparison detects it; [`StampStore::block`]
//!   reports such blocks as [`StampBlock::Foreign`].

use std::collections::BTreeMap;

use super::{
    deallocate_extents, extent_pieces, BlockBits, DataStore, Geometry, StoreError, StoreKind,
    MAP_ENTRY_OVERHEAD_BYTES,
};

/// Smallest block, in bytes, that [`tag_of`] can recognise (the tag plus one
/// check word).
pub const STAMP_BLOCK_BYTES_MIN: usize = 16;

/// Seed of the expansion stream of `tag` (never zero: xorshift needs a non-zero state).
#[inline]
fn stream_seed(tag: u64) -> u64 {
    let mut z = tag ^ 0x5EED_57A3_B10C_0000;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    if z == 0 {
        0x9E37_79B9_7F4A_7C15
    } else {
        z
    }
}

/// Next word of an xorshift64* stream.
#[inline]
fn next_word(state: &mut u64) -> u64 {
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Fills `block` with the stamp block of `tag`. Blocks shorter than 8 bytes
/// get the low bytes of the tag only.
pub fn fill_block(tag: u64, block: &mut [u8]) {
    let tag_bytes = tag.to_le_bytes();
    let head = block.len().min(8);
    block[..head].copy_from_slice(&tag_bytes[..head]);
    if block.len() <= 8 {
        return;
    }
    let mut state = stream_seed(tag);
    let mut words = block[8..].chunks_exact_mut(8);
    for word in &mut words {
        word.copy_from_slice(&next_word(&mut state).to_le_bytes());
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        let last = next_word(&mut state).to_le_bytes();
        let n = tail.len();
        tail.copy_from_slice(&last[..n]);
    }
}

/// The tag of `block` if it is a valid stamp block (every byte as
/// [`fill_block`] writes it), `None` otherwise (including all-zero blocks and
/// blocks shorter than [`STAMP_BLOCK_BYTES_MIN`]).
pub fn tag_of(block: &[u8]) -> Option<u64> {
    if block.len() < STAMP_BLOCK_BYTES_MIN {
        return None;
    }
    let tag = u64::from_le_bytes(block[..8].try_into().ok()?);
    let mut state = stream_seed(tag);
    let mut words = block[8..].chunks_exact(8);
    for word in &mut words {
        if word != next_word(&mut state).to_le_bytes() {
            return None;
        }
    }
    let tail = words.remainder();
    if !tail.is_empty() && tail != &next_word(&mut state).to_le_bytes()[..tail.len()] {
        return None;
    }
    Some(tag)
}

/// Whether `block` is exactly the stamp block of `tag`.
pub fn is_stamp_of(tag: u64, block: &[u8]) -> bool {
    tag_of(block) == Some(tag)
}

/// A 64-bit hash of a block's bytes (the tag kept for a foreign block).
fn content_hash(block: &[u8]) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325 ^ block.len() as u64;
    let mut words = block.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes([
            word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7],
        ]);
        h = (h ^ w).wrapping_mul(0x0000_0100_0000_01B3).rotate_left(29);
    }
    for b in words.remainder() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    stream_seed(h)
}

/// Blocks per extent of the stamp store (32 KiB of tags per extent).
pub const EXTENT_BLOCKS: u64 = 4096;

/// What the stamp store holds for one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampBlock {
    /// Never written, deallocated, or last written with zeros: reads as zeros.
    Unwritten,
    /// Last written with the stamp block of this tag.
    Stamp(u64),
    /// Last written with bytes that are not a stamp block; the value is the
    /// hash whose stamp block a read returns.
    Foreign(u64),
}

#[derive(Debug)]
struct StampExtent {
    tags: Box<[u64]>,
    written: BlockBits,
    foreign: BlockBits,
}

impl StampExtent {
    fn new() -> StampExtent {
        StampExtent {
            tags: vec![0u64; EXTENT_BLOCKS as usize].into_boxed_slice(),
            written: BlockBits::new(EXTENT_BLOCKS as usize),
            foreign: BlockBits::new(EXTENT_BLOCKS as usize),
        }
    }
}

/// Keeps the stamp tag of each written block (see the module docs).
#[derive(Debug)]
pub struct StampStore {
    geometry: Geometry,
    extents: BTreeMap<u64, StampExtent>,
}

impl StampStore {
    /// A store for `lba_count` blocks of `lba_bytes`.
    pub fn new(lba_bytes: u32, lba_count: u64) -> Result<StampStore, StoreError> {
        Ok(StampStore::with_geometry(Geometry::new(
            lba_bytes, lba_count,
        )?))
    }

    pub(crate) fn with_geometry(geometry: Geometry) -> StampStore {
        StampStore {
            geometry,
            extents: BTreeMap::new(),
        }
    }

    /// What the store holds for block `lba` (`Unwritten` outside the namespace).
    pub fn block(&self, lba: u64) -> StampBlock {
        let Some(extent) = self.extents.get(&(lba / EXTENT_BLOCKS)) else {
            return StampBlock::Unwritten;
        };
        let i = (lba % EXTENT_BLOCKS) as usize;
        match (extent.written.get(i), extent.foreign.get(i)) {
            (false, _) => StampBlock::Unwritten,
            (true, false) => StampBlock::Stamp(extent.tags[i]),
            (true, true) => StampBlock::Foreign(extent.tags[i]),
        }
    }

    /// Number of blocks currently held as foreign (written with non-stamp bytes).
    pub fn foreign_blocks(&self) -> u64 {
        self.extents
            .values()
            .map(|e| u64::from(e.foreign.count()))
            .sum()
    }

    /// Number of blocks currently held (stamp or foreign).
    pub fn written_blocks(&self) -> u64 {
        self.extents
            .values()
            .map(|e| u64::from(e.written.count()))
            .sum()
    }
}

impl DataStore for StampStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Stamp
    }

    fn lba_bytes(&self) -> u32 {
        self.geometry.lba_bytes
    }

    fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), StoreError> {
        let nlb = self.geometry.check_io(lba, data.len())?;
        let block_bytes = self.geometry.lba_bytes as usize;
        for (extent_index, first, count, done) in extent_pieces(lba, nlb, EXTENT_BLOCKS) {
            let piece = &data[done as usize * block_bytes..(done as usize + count) * block_bytes];
            for (k, block) in piece.chunks_exact(block_bytes).enumerate() {
                let i = first + k;
                let state = match tag_of(block) {
                    Some(tag) => StampBlock::Stamp(tag),
                    None if block.iter().all(|b| *b == 0) => StampBlock::Unwritten,
                    None => StampBlock::Foreign(content_hash(block)),
                };
                match state {
                    StampBlock::Unwritten => {
                        if let Some(extent) = self.extents.get_mut(&extent_index) {
                            extent.written.clear(i);
                            extent.foreign.clear(i);
                            if extent.written.count() == 0 {
                                self.extents.remove(&extent_index);
                            }
                        }
                    }
                    StampBlock::Stamp(tag) | StampBlock::Foreign(tag) => {
                        let extent = self
                            .extents
                            .entry(extent_index)
                            .or_insert_with(StampExtent::new);
                        extent.tags[i] = tag;
                        extent.written.set(i);
                        if matches!(state, StampBlock::Foreign(_)) {
                            extent.foreign.set(i);
                        } else {
                            extent.foreign.clear(i);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        let nlb = self.geometry.check_io(lba, buf.len())?;
        let block_bytes = self.geometry.lba_bytes as usize;
        for (extent_index, first, count, done) in extent_pieces(lba, nlb, EXTENT_BLOCKS) {
            let piece =
                &mut buf[done as usize * block_bytes..(done as usize + count) * block_bytes];
            let Some(extent) = self.extents.get(&extent_index) else {
                piece.fill(0);
                continue;
            };
            for (k, block) in piece.chunks_exact_mut(block_bytes).enumerate() {
                let i = first + k;
                if extent.written.get(i) {
                    fill_block(extent.tags[i], block);
                } else {
                    block.fill(0);
                }
            }
        }
        Ok(())
    }

    fn deallocate(&mut self, lba: u64, nlb: u64) -> Result<(), StoreError> {
        self.geometry.check_range(lba, nlb)?;
        deallocate_extents(&mut self.extents, EXTENT_BLOCKS, lba, nlb, |extent, r| {
            for i in r {
                extent.written.clear(i);
                extent.foreign.clear(i);
            }
            extent.written.count() == 0
        });
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    fn resident_bytes(&self) -> u64 {
        let per_extent = StampExtent::new_heap_bytes() + MAP_ENTRY_OVERHEAD_BYTES;
        self.extents.len() as u64 * per_extent
    }
}

impl StampExtent {
    fn new_heap_bytes() -> u64 {
        EXTENT_BLOCKS * 8
            + 2 * EXTENT_BLOCKS.div_ceil(64) * 8
            + std::mem::size_of::<StampExtent>() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_blocks_round_trip_their_tag_for_every_size() {
        for len in [16usize, 17, 23, 512, 520, 4096, 4100, 65536] {
            for tag in [0u64, 1, 42, u64::MAX, 0x0123_4567_89AB_CDEF] {
                let mut block = vec![0u8; len];
                fill_block(tag, &mut block);
                assert_eq!(tag_of(&block), Some(tag), "len {len} tag {tag}");
                assert!(is_stamp_of(tag, &block));
                assert!(!is_stamp_of(tag.wrapping_add(1), &block));
                // Any single flipped byte is noticed.
                for at in [0, 8, len / 2, len - 1] {
                    let mut bad = block.clone();
                    bad[at] ^= 0x01;
                    assert_ne!(tag_of(&bad), Some(tag), "len {len} flip at {at}");
                }
            }
        }
    }

    #[test]
    fn zeros_and_short_blocks_are_not_stamp_blocks() {
        assert_eq!(tag_of(&[0u8; 4096]), None);
        assert_eq!(tag_of(&[0u8; 8]), None);
        let mut tiny = [0u8; 5];
        fill_block(7, &mut tiny); // must not panic
        assert_eq!(tiny, [7, 0, 0, 0, 0]);
        assert_eq!(tag_of(&[]), None);
    }

    #[test]
    fn different_tags_give_different_blocks() {
        let mut a = vec![0u8; 512];
        let mut b = vec![0u8; 512];
        fill_block(1, &mut a);
        fill_block(2, &mut b);
        assert_ne!(a[8..], b[8..]);
    }

    #[test]
    fn stamp_store_keeps_tags_and_marks_foreign_blocks() {
        let mut store = StampStore::new(512, 1 << 20).unwrap();
        let mut data = vec![0u8; 3 * 512];
        fill_block(10, &mut data[..512]);
        data[512..1024].fill(0x77); // foreign
        fill_block(12, &mut data[1024..]);
        store.write(100, &data).unwrap();
        assert_eq!(store.block(100), StampBlock::Stamp(10));
        assert!(matches!(store.block(101), StampBlock::Foreign(_)));
        assert_eq!(store.block(102), StampBlock::Stamp(12));
        assert_eq!(store.block(103), StampBlock::Unwritten);
        assert_eq!(store.foreign_blocks(), 1);

        let mut back = vec![0u8; 4 * 512];
        store.read(100, &mut back).unwrap();
        assert_eq!(back[..512], data[..512]);
        assert_ne!(back[512..1024], data[512..1024]);
        let StampBlock::Foreign(hash) = store.block(101) else {
            unreachable!()
        };
        assert!(is_stamp_of(hash, &back[512..1024]));
        assert_eq!(back[1024..1536], data[1024..]);
        assert!(back[1536..].iter().all(|b| *b == 0));

        // Rewriting with zeros forgets the block.
        store.write(101, &[0u8; 512]).unwrap();
        assert_eq!(store.block(101), StampBlock::Unwritten);
        assert_eq!(store.foreign_blocks(), 0);
    }
}
