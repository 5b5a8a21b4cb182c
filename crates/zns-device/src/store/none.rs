//! The `none` store: keeps no data at all. Writes are checked and dropped,
//! reads return zeros. It costs O(1) memory and a bounds check per command, so
//! the emulator can run at its full command rate when only timing and zone
//! semantics matter.

use super::{DataStore, Geometry, StoreError, StoreKind};

/// A store that keeps nothing; every read returns zeros.
#[derive(Debug, Clone)]
pub struct NoneStore {
    geometry: Geometry,
}

impl NoneStore {
    /// A store for `lba_count` blocks of `lba_bytes` (see [`super::Geometry`] rules).
    pub fn new(lba_bytes: u32, lba_count: u64) -> Result<NoneStore, StoreError> {
        Ok(NoneStore::with_geometry(Geometry::new(
            lba_bytes, lba_count,
        )?))
    }

    pub(crate) fn with_geometry(geometry: Geometry) -> NoneStore {
        NoneStore { geometry }
    }
}

impl DataStore for NoneStore {
    fn kind(&self) -> StoreKind {
        StoreKind::None
    }
    fn lba_bytes(&self) -> u32 {
        self.geometry.lba_bytes
    }
    #[inline]
    fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), StoreError> {
        self.geometry.check_io(lba, data.len()).map(|_| ())
    }
    #[inline]
    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), StoreError> {
        self.geometry.check_io(lba, buf.len())?;
        buf.fill(0);
        Ok(())
    }
    #[inline]
    fn deallocate(&mut self, lba: u64, nlb: u64) -> Result<(), StoreError> {
        self.geometry.check_range(lba, nlb)
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    fn resident_bytes(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_store_reads_zeros_and_holds_nothing() {
        // A 1 TB namespace of 4 KiB blocks.
        let mut store = NoneStore::new(4096, 244_190_646).unwrap();
        store.write(12_345, &[0xAB; 8192]).unwrap();
        let mut buf = [0xFFu8; 8192];
        store.read(12_345, &mut buf).unwrap();
        assert!(buf.iter().all(|b| *b == 0));
        store.deallocate(0, 244_190_646).unwrap();
        store.sync().unwrap();
        assert_eq!(store.resident_bytes(), 0);
        assert_eq!(store.kind(), StoreKind::None);
        assert_eq!(store.lba_bytes(), 4096);
    }
}
