//! The `memory` store: every byte written, held in memory.
//!
//! Invariants: data lives in extents of [`EXTENT_BYTES`] (or one block if a
//! block is larger), allocated on the first write that touches them and freed
//! when their last written block is deallocated, so memory follows the data
//! written, never the namespace size. Inside an allocated extent every block
//! that is not marked written holds zeros (deallocate zeroes what it forgets),
//! so a read can copy an extent's bytes without looking at the marks.

use std::collections::BTreeMap;

use super::{
    deallocate_extents, BlockBits, DataStore, Geometry, StoreError, StoreKind,
    MAP_ENTRY_OVERHEAD_BYTES,
};

/// Size of one memory extent, in bytes.
pub const EXTENT_BYTES: u64 = 1 << 20;

#[derive(Debug)]
struct MemoryExtent {
    data: Box<[u8]>,
    written: BlockBits,
}

/// Keeps every written byte in lazily allocated extents.
#[derive(Debug)]
pub struct MemoryStore {
    geometry: Geometry,
    extent_blocks: u64,
    extents: BTreeMap<u64, MemoryExtent>,
}

impl MemoryStore {
    /// A store for `lba_count` blocks of `lba_bytes`.
    pub fn new(lba_bytes: u32, lba_count: u64) -> Result<MemoryStore, StoreError> {
        Ok(MemoryStore::with_geometry(Geometry::new(
            lba_bytes, lba_count,
        )?))
    }

    pub(crate) fn with_geometry(geometry: Geometry) -> MemoryStore {
        let extent_blocks = (EXTENT_BYTES / u64::from(geometry.lba_bytes)).max(1);
        MemoryStore {
            geometry,
            extent_blocks,
            extents: BTreeMap::new(),
        }
    }

    /// Number of extents allocated.
    pub fn extent_count(&self) -> usize {
        self.extents.len()
    }

    fn extent_bytes(&self) -> usize {
        self.extent_blocks as usize * self.geometry.lba_bytes as usize
    }
}

impl DataStore for MemoryStore {
    fn kind(&self) -> StoreKind {
        StoreKind::Memory
    }

    fn lba_bytes(&self) -> u32 {
        self.geometry.lba_bytes
    }

    fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), StoreError> {
        let nlb = self.geometry.check_io(lba, data.len())?;
        let block_bytes = self.geometry.lba_bytes as usize;
        let extent_bytes = self.extent_bytes();
        let extent_blocks = self.extent_blocks as usize;
        for (extent_index, first, count, done) in super::extent_pieces(lba, nlb, self.extent_blocks)
        {
            let piece = &data[done as usize * block_bytes..(done as usize + count) * block_bytes];
            let extent = match self.extents.get_mut(&extent_index) {
                Some(extent) => extent,
                // Zeros into an unallocated extent change nothing a read can see.
                None if piece.iter().all(|b| *b == 0) => continue,
                None => self
                    .extents
                    .entry(extent_index)
                    .or_insert_with(|| MemoryExtent {
                        data: vec![0u8; extent_bytes].into_boxed_slice(),
                        written: BlockBits::new(extent_blocks),
                    }),
            };
            extent.data[first * block_bytes..(first + count) * block_bytes].copy_from_slice(piece);
            for i in first..first + count {
                extent.written.set(i);
            }
        }
        Ok(())
    }

    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        let nlb = self.geometry.check_io(lba, buf.len())?;
        let block_bytes = self.geometry.lba_bytes as usize;
        for (extent_index, first, count, done) in super::extent_pieces(lba, nlb, self.extent_blocks)
        {
            let piece =
                &mut buf[done as usize * block_bytes..(done as usize + count) * block_bytes];
            match self.extents.get(&extent_index) {
                Some(extent) => piece.copy_from_slice(
                    &extent.data[first * block_bytes..(first + count) * block_bytes],
                ),
                None => piece.fill(0),
            }
        }
        Ok(())
    }

    fn deallocate(&mut self, lba: u64, nlb: u64) -> Result<(), StoreError> {
        self.geometry.check_range(lba, nlb)?;
        let block_bytes = self.geometry.lba_bytes as usize;
        deallocate_extents(
            &mut self.extents,
            self.extent_blocks,
            lba,
            nlb,
            |extent, r| {
                extent.data[r.start * block_bytes..r.end * block_bytes].fill(0);
                for i in r {
                    extent.written.clear(i);
                }
                extent.written.count() == 0
            },
        );
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    fn resident_bytes(&self) -> u64 {
        let per_extent = self.extent_bytes() as u64
            + self.extent_blocks.div_ceil(64) * 8
            + std::mem::size_of::<MemoryExtent>() as u64
            + MAP_ENTRY_OVERHEAD_BYTES;
        self.extents.len() as u64 * per_extent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_deallocate_zeroes_and_last_block_frees_the_extent() {
        let mut store = MemoryStore::new(4096, 1024).unwrap();
        store.write(0, &vec![0xAA; 4 * 4096]).unwrap();
        assert_eq!(store.extent_count(), 1);
        store.deallocate(1, 2).unwrap();
        let mut buf = vec![0xFFu8; 4 * 4096];
        store.read(0, &mut buf).unwrap();
        assert!(buf[..4096].iter().all(|b| *b == 0xAA));
        assert!(buf[4096..3 * 4096].iter().all(|b| *b == 0));
        assert!(buf[3 * 4096..].iter().all(|b| *b == 0xAA));
        store.deallocate(0, 1).unwrap();
        assert_eq!(store.extent_count(), 1);
        store.deallocate(3, 1).unwrap();
        assert_eq!(store.extent_count(), 0);
        assert_eq!(store.resident_bytes(), 0);
    }

    #[test]
    fn zero_writes_do_not_allocate() {
        let mut store = MemoryStore::new(512, 1 << 30).unwrap();
        store.write(77, &[0u8; 4096]).unwrap();
        assert_eq!(store.extent_count(), 0);
    }
}
