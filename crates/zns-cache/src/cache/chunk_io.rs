//! A chunk's trip to and from the device: reads and writes split into
//! commands of the device's transfer size, all in flight, the reusable
//! chunk buffers, and the copy GC makes.

use zns_core::{CmdFuture, NvmeError};
use zns_sim::join::try_join_all;

use super::pattern::{expected_byte, fill_chunk_bytes};
use super::{Cache, IO_READ, IO_WRITE};
use crate::error::CacheError;

impl Cache {
    pub(super) fn take_buffer(&self) -> Vec<u8> {
        self.buffers
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| vec![0u8; self.zeros.len()])
    }

    pub(super) fn put_buffer(&self, b: Vec<u8>) {
        self.buffers.borrow_mut().push(b);
    }

    pub(super) fn window_lbas(&self) -> u64 {
        self.zeros.len() as u64 / u64::from(self.geo.lba_bytes)
    }

    /// Reads `nlb` blocks at `slba` into `buf` in io-size pieces, all in flight.
    /// The bytes count as disk reads when they have all arrived (so the
    /// disk throughput series follows the device window by window).
    pub(super) async fn read_range(&self, slba: u64, buf: &mut [u8]) -> Result<(), NvmeError> {
        let piece = (self.geo.io_lbas * u64::from(self.geo.lba_bytes)) as usize;
        let bytes = buf.len() as u64;
        if buf.len() <= piece {
            self.dev.read(slba, buf).await?;
        } else {
            let lba = u64::from(self.geo.lba_bytes);
            let futs: Vec<CmdFuture<'_, ()>> = buf
                .chunks_mut(piece)
                .enumerate()
                .map(|(i, b)| self.dev.read(slba + (i * piece) as u64 / lba, b))
                .collect();
            try_join_all(futs).await?;
        }
        self.st.borrow_mut().counters.disk_read_bytes += bytes;
        Ok(())
    }

    /// Writes `data` at `slba` (zone `zslba`) in pieces, all in flight, in
    /// order; checks that each piece landed where expected. The bytes count
    /// as disk writes when all pieces have completed.
    pub(super) async fn write_range(
        &self,
        zslba: u64,
        slba: u64,
        data: &[u8],
    ) -> Result<(), CacheError> {
        let piece = (self.geo.io_lbas * u64::from(self.geo.lba_bytes)) as usize;
        let lba = u64::from(self.geo.lba_bytes);
        let landed = if data.len() <= piece {
            vec![self
                .dev
                .write_at(zslba, slba, data)
                .await
                .map_err(CacheError::io(IO_WRITE))?]
        } else {
            let futs: Vec<CmdFuture<'_, u64>> = data
                .chunks(piece)
                .enumerate()
                .map(|(i, d)| self.dev.write_at(zslba, slba + (i * piece) as u64 / lba, d))
                .collect();
            try_join_all(futs).await.map_err(CacheError::io(IO_WRITE))?
        };
        for (i, at) in landed.iter().enumerate() {
            let want = slba + (i * piece) as u64 / lba;
            if *at != want {
                return Err(CacheError::Internal(format!(
                    "a chunk piece landed at LBA {at}, expected {want} (another writer in the zone?)"
                )));
            }
        }
        self.st.borrow_mut().counters.disk_write_bytes += data.len() as u64;
        Ok(())
    }

    pub(super) async fn read_chunk(&self, g: u32, key: u32) -> Result<(), CacheError> {
        let t0 = self.handle.now_ns();
        let base = self.geo.slot_slba(g);
        let lba = u64::from(self.geo.lba_bytes);
        let win = self.window_lbas();
        let mut buf = self.take_buffer();
        let mut off = 0u64;
        let mut result = Ok(());
        while off < self.geo.chunk_lbas {
            let n = win.min(self.geo.chunk_lbas - off);
            let b = &mut buf[..(n * lba) as usize];
            if let Err(e) = self.read_range(base + off, b).await {
                result = Err(CacheError::Io {
                    op: IO_READ,
                    err: e,
                });
                break;
            }
            if self.cfg.verify {
                let start = off * lba;
                if let Some(i) = b
                    .iter()
                    .enumerate()
                    .position(|(i, &v)| v != expected_byte(key, start + i as u64))
                {
                    result = Err(CacheError::Corrupt {
                        key,
                        zone: g / self.geo.chunks_per_zone,
                        slot: g % self.geo.chunks_per_zone,
                        offset: start + i as u64,
                    });
                    break;
                }
            }
            off += n;
        }
        self.put_buffer(buf);
        let dt = self.handle.now_ns() - t0;
        let mut st = self.st.borrow_mut();
        st.lat.disk_read.record(dt);
        result
    }

    pub(super) async fn write_chunk(&self, g: u32, key: u32) -> Result<(), CacheError> {
        let t0 = self.handle.now_ns();
        self.st.borrow_mut().writes.start(t0);
        let z = g / self.geo.chunks_per_zone;
        let zslba = self.geo.zone_slba(z);
        let base = self.geo.slot_slba(g);
        let lba = u64::from(self.geo.lba_bytes);
        let win = self.window_lbas();
        let mut off = 0u64;
        let mut buf = if self.cfg.verify {
            Some(self.take_buffer())
        } else {
            None
        };
        let mut result = Ok(());
        while off < self.geo.chunk_lbas {
            let n = win.min(self.geo.chunk_lbas - off);
            let bytes = (n * lba) as usize;
            let data: &[u8] = match buf.as_mut() {
                Some(b) => {
                    fill_chunk_bytes(key, off * lba, &mut b[..bytes]);
                    &b[..bytes]
                }
                None => &self.zeros[..bytes],
            };
            if let Err(e) = self.write_range(zslba, base + off, data).await {
                result = Err(e);
                break;
            }
            off += n;
        }
        if let Some(b) = buf {
            self.put_buffer(b);
        }
        let now = self.handle.now_ns();
        let mut st = self.st.borrow_mut();
        st.lat.disk_write.record(now - t0);
        st.writes.end(now);
        result
    }

    /// Copies chunk slot `from` to slot `to` (host GC), window by window.
    pub(super) async fn copy_chunk(&self, from: u32, to: u32) -> Result<(), CacheError> {
        let lba = u64::from(self.geo.lba_bytes);
        let (src, dst) = (self.geo.slot_slba(from), self.geo.slot_slba(to));
        let zslba = self.geo.zone_slba(to / self.geo.chunks_per_zone);
        let win = self.window_lbas();
        let mut buf = self.take_buffer();
        let mut off = 0;
        let mut result = Ok(());
        while off < self.geo.chunk_lbas {
            let n = win.min(self.geo.chunk_lbas - off);
            let b = &mut buf[..(n * lba) as usize];
            if let Err(e) = self.read_range(src + off, b).await {
                result = Err(CacheError::Io {
                    op: "GC read",
                    err: e,
                });
                break;
            }
            if let Err(e) = self.write_range(zslba, dst + off, b).await {
                result = Err(e);
                break;
            }
            off += n;
        }
        self.put_buffer(buf);
        result
    }
}
