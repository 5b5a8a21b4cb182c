//! The two backends, behind one object-safe trait the cache core uses:
//!
//! - [`ZnsBackend`] over any `ZonedDevice`: a cache zone is a device zone;
//!   chunks go in at the write pointer (plain writes, or Zone Append with the
//!   returned LBA checked), a zone whose capacity is not a whole number of
//!   chunks is finished after its last chunk (releasing its active
//!   resource), eviction and GC reset zones.
//! - [`BlockBackend`] over any `BlockDevice`: the namespace is split into
//!   regions of a chosen size (ZNCache's default 1077 MiB, the ZN540 zone
//!   capacity) that play the zones; "reset" and "finish" are no-ops (ZNCache
//!   issues no TRIM; `discard` turns on Dataset Management deallocation of
//!   freed regions and chunk slots). Device GC, if the device has any, is the
//!   device's business; an FTL device may expose its flash-write counters
//!   through [`BlockBackend::with_flash_counters`] for the device WAF.

use std::rc::Rc;

use zns_core::{
    BlockDevice, CmdFuture, IoFlags, NvmeError, ReportFilter, ZoneAction, ZoneSendCmd, ZoneState,
    ZonedDevice,
};

use crate::error::CacheError;
use crate::metrics::FlashCounters;

/// Which kind of device the cache runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    Zns,
    Block,
}

impl BackendKind {
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Zns => "zns",
            BackendKind::Block => "block",
        }
    }
}

/// Zone (or region) layout the backend offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ZoneLayout {
    pub lba_bytes: u32,
    pub zone_count: u32,
    /// Distance between zone starts, in LBAs (ZNS zone size).
    pub zone_stride_lbas: u64,
    /// Writable LBAs per zone (ZNS zone capacity; block region size).
    pub zone_capacity_lbas: u64,
    /// Zones that may be partly written at once (0 = no limit).
    pub max_active_zones: u32,
    /// Largest transfer of one command, in LBAs.
    pub max_transfer_lbas: u32,
}

/// What the cache core needs from a device. Object safe: one `Rc<dyn ChunkDevice>`.
pub trait ChunkDevice {
    fn kind(&self) -> BackendKind;
    fn layout(&self) -> ZoneLayout;
    /// Write `data` at `slba`, which is the zone's write pointer on ZNS.
    /// Returns the LBA the data landed at (differs from `slba` only if an
    /// append went elsewhere, which the caller reports as an error).
    fn write_at<'a>(&'a self, zslba: u64, slba: u64, data: &'a [u8]) -> CmdFuture<'a, u64>;
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()>;
    /// Zone reset (ZNS) or region reuse (block: deallocate if enabled).
    fn reset_zone(&self, zslba: u64) -> CmdFuture<'_, ()>;
    /// Zone finish (ZNS; block: nothing).
    fn finish_zone(&self, zslba: u64) -> CmdFuture<'_, ()>;
    /// A chunk slot was freed for reuse in place (block: deallocate if enabled).
    fn free_slot(&self, slba: u64, nlb: u64) -> CmdFuture<'_, ()>;
    /// Before a run: zones of the cache that are not empty (ZNS) are reset;
    /// block devices are left as they are (preconditioned data stays valid
    /// for the FTL, as on the paper's SSD).
    fn prepare(&self, zones: u32) -> CmdFuture<'_, ()>;
    /// Device write counters, when the device has an FTL that counts them.
    fn flash_counters(&self) -> Option<FlashCounters>;
}

fn ready<'a, T: 'a>(v: Result<T, NvmeError>) -> CmdFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

/// How chunks are written to a zoned device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZnsWrite {
    /// Write commands at the zone's write pointer (ZNCache's way).
    WritePointer,
    /// Zone Append (the LBA it returns must be the expected one).
    Append,
}

/// The ZNS backend over any zoned device.
pub struct ZnsBackend<Z: ZonedDevice> {
    dev: Z,
    write_mode: ZnsWrite,
}

impl<Z: ZonedDevice> ZnsBackend<Z> {
    pub fn new(dev: Z, write_mode: ZnsWrite) -> ZnsBackend<Z> {
        ZnsBackend { dev, write_mode }
    }
    pub fn device(&self) -> &Z {
        &self.dev
    }
}

impl<Z: ZonedDevice> ChunkDevice for ZnsBackend<Z> {
    fn kind(&self) -> BackendKind {
        BackendKind::Zns
    }
    fn layout(&self) -> ZoneLayout {
        let c = self.dev.config();
        let mtl = match self.write_mode {
            ZnsWrite::WritePointer => c.max_transfer_lbas,
            ZnsWrite::Append => c.max_transfer_lbas.min(c.append_limit_lbas().max(1)),
        };
        ZoneLayout {
            lba_bytes: c.lba_bytes,
            zone_count: c.zone_count,
            zone_stride_lbas: c.zone_size_lbas,
            zone_capacity_lbas: c.zone_capacity_lbas,
            max_active_zones: c.max_active_zones,
            max_transfer_lbas: mtl,
        }
    }
    fn write_at<'a>(&'a self, zslba: u64, slba: u64, data: &'a [u8]) -> CmdFuture<'a, u64> {
        match self.write_mode {
            ZnsWrite::WritePointer => {
                let f = self.dev.write(slba, data, IoFlags::NONE);
                Box::pin(async move { f.await.map(|()| slba) })
            }
            ZnsWrite::Append => self.dev.append(zslba, data, IoFlags::NONE),
        }
    }
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        self.dev.read(slba, buf)
    }
    fn reset_zone(&self, zslba: u64) -> CmdFuture<'_, ()> {
        self.dev.zone_send(ZoneSendCmd {
            action: ZoneAction::Reset,
            slba: zslba,
            select_all: false,
        })
    }
    fn finish_zone(&self, zslba: u64) -> CmdFuture<'_, ()> {
        self.dev.zone_send(ZoneSendCmd {
            action: ZoneAction::Finish,
            slba: zslba,
            select_all: false,
        })
    }
    fn free_slot(&self, _slba: u64, _nlb: u64) -> CmdFuture<'_, ()> {
        ready(Ok(()))
    }
    fn prepare(&self, zones: u32) -> CmdFuture<'_, ()> {
        Box::pin(async move {
            let stride = self.dev.config().zone_size_lbas;
            let report = self
                .dev
                .report_zones(0, ReportFilter::All, zones as usize)
                .await?;
            for z in report {
                match z.state {
                    ZoneState::Empty => {}
                    ZoneState::ReadOnly | ZoneState::Offline => {
                        return Err(zns_core::NvmeStatus::ZoneIsOffline.into())
                    }
                    _ => self.reset_zone(z.start_lba).await?,
                }
                let _ = stride;
            }
            Ok(())
        })
    }
    fn flash_counters(&self) -> Option<FlashCounters> {
        None
    }
}

type CounterFn = Rc<dyn Fn() -> FlashCounters>;

/// The block backend over any block device, split into regions.
pub struct BlockBackend<B: BlockDevice> {
    dev: B,
    region_lbas: u64,
    discard: bool,
    counters: Option<CounterFn>,
}

impl<B: BlockDevice> BlockBackend<B> {
    /// Regions of `region_bytes` (a whole number of LBAs, at least one LBA).
    pub fn new(dev: B, region_bytes: u64, discard: bool) -> Result<BlockBackend<B>, CacheError> {
        let lba = u64::from(dev.lba_bytes());
        if region_bytes == 0 || region_bytes % lba != 0 {
            return Err(CacheError::Param(format!(
                "region size {region_bytes} B is not a positive multiple of the {lba} B LBA"
            )));
        }
        let region_lbas = region_bytes / lba;
        if region_lbas > dev.capacity_lbas() {
            return Err(CacheError::Param(format!(
                "region size {} is larger than the device ({})",
                crate::units::fmt_bytes(region_bytes),
                crate::units::fmt_bytes(dev.capacity_lbas() * lba)
            )));
        }
        Ok(BlockBackend {
            dev,
            region_lbas,
            discard,
            counters: None,
        })
    }

    /// The hook for an FTL device's counters (host and flash bytes written):
    /// with it, reports carry the device WAF.
    pub fn with_flash_counters(mut self, f: impl Fn() -> FlashCounters + 'static) -> Self {
        self.counters = Some(Rc::new(f));
        self
    }

    pub fn device(&self) -> &B {
        &self.dev
    }
}

impl<B: BlockDevice> ChunkDevice for BlockBackend<B> {
    fn kind(&self) -> BackendKind {
        BackendKind::Block
    }
    fn layout(&self) -> ZoneLayout {
        ZoneLayout {
            lba_bytes: self.dev.lba_bytes(),
            zone_count: (self.dev.capacity_lbas() / self.region_lbas).min(u64::from(u32::MAX))
                as u32,
            zone_stride_lbas: self.region_lbas,
            zone_capacity_lbas: self.region_lbas,
            max_active_zones: 0,
            max_transfer_lbas: self.dev.max_transfer_lbas(),
        }
    }
    fn write_at<'a>(&'a self, _zslba: u64, slba: u64, data: &'a [u8]) -> CmdFuture<'a, u64> {
        let f = self.dev.write(slba, data, IoFlags::NONE);
        Box::pin(async move { f.await.map(|()| slba) })
    }
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        self.dev.read(slba, buf)
    }
    fn reset_zone(&self, zslba: u64) -> CmdFuture<'_, ()> {
        if self.discard {
            self.dev.discard(zslba, self.region_lbas)
        } else {
            ready(Ok(()))
        }
    }
    fn finish_zone(&self, _zslba: u64) -> CmdFuture<'_, ()> {
        ready(Ok(()))
    }
    fn free_slot(&self, slba: u64, nlb: u64) -> CmdFuture<'_, ()> {
        if self.discard {
            self.dev.discard(slba, nlb)
        } else {
            ready(Ok(()))
        }
    }
    fn prepare(&self, _zones: u32) -> CmdFuture<'_, ()> {
        ready(Ok(()))
    }
    fn flash_counters(&self) -> Option<FlashCounters> {
        self.counters.as_ref().map(|f| f())
    }
}
