//! The one boundary of znskit: `ZonedDevice` (and its conventional twin
//! `BlockDevice`). Everything above the device layer — the benchmark runner,
//! RAID, the cache, the CLI — talks to these traits, so an emulated device, a RAID
//! array of devices, or (later) a real Linux zoned block device are
//! interchangeable.
//!
//! The traits are object safe: methods return boxed futures that are not `Send`
//! (the simulation runtime is single threaded). Data buffers are whole LBAs; a
//! buffer whose length is not a non-zero multiple of the LBA size is rejected with
//! Invalid Field.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::status::NvmeError;
use crate::types::{ReportFilter, ZoneDescriptor, ZoneSendCmd, ZonedConfig};

/// The future every device command returns.
pub type CmdFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, NvmeError>> + 'a>>;

/// Per-command I/O flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IoFlags {
    /// Force Unit Access: the command completes only once its data is durable.
    pub fua: bool,
}

impl IoFlags {
    pub const NONE: IoFlags = IoFlags { fua: false };
    pub const FUA: IoFlags = IoFlags { fua: true };

    /// Flags with Force Unit Access set or not.
    pub const fn with_fua(fua: bool) -> IoFlags {
        IoFlags { fua }
    }
}

/// A zoned block device (NVMe ZNS namespace, or anything that behaves like one).
pub trait ZonedDevice {
    /// Geometry, limits and ZRWA capability (Identify Namespace, ZNS).
    fn config(&self) -> &ZonedConfig;

    /// Zone Management Receive (Report Zones): descriptors of the zones whose start
    /// LBA is ≥ the zone containing `start_lba`, filtered, at most `max_zones`.
    fn report_zones(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> CmdFuture<'_, Vec<ZoneDescriptor>>;

    /// Read `buf.len() / lba_bytes` blocks starting at `slba`.
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()>;

    /// Write at `slba` (the zone's WP, or inside the ZRWA window for a ZRWA zone).
    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()>;

    /// Zone Append to the zone starting at `zslba`; returns the LBA the data landed at.
    fn append<'a>(&'a self, zslba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, u64>;

    /// Zone Management Send: open (optionally with ZRWA), close, finish, reset,
    /// offline, ZRWA explicit flush.
    fn zone_send(&self, cmd: ZoneSendCmd) -> CmdFuture<'_, ()>;

    /// NVM Flush: every write completed before the flush was submitted is durable
    /// when it completes.
    fn flush(&self) -> CmdFuture<'_, ()>;

    /// True when the device serialises the writes to a zone itself, in the
    /// order they were submitted, so a client may have several writes to one
    /// zone in flight (a RAID array: its logical write pointer moves at
    /// submission). False for an NVMe ZNS namespace, where a write must wait
    /// until the one before it in the zone has completed (or go through a
    /// host scheduler that orders them, or be a zone append).
    fn orders_zone_writes(&self) -> bool {
        false
    }
}

/// A conventional (randomly writable) block device: the NVM command set without zones.
pub trait BlockDevice {
    /// Logical block size in bytes.
    fn lba_bytes(&self) -> u32;
    /// Capacity in LBAs.
    fn capacity_lbas(&self) -> u64;
    /// Largest transfer of one command, in LBAs.
    fn max_transfer_lbas(&self) -> u32;
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()>;
    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()>;
    /// Dataset Management deallocate (TRIM) of `nlb` blocks at `slba`.
    fn discard(&self, slba: u64, nlb: u64) -> CmdFuture<'_, ()>;
    fn flush(&self) -> CmdFuture<'_, ()>;
}

/// A shared device is the device (so `Rc<dyn ZonedDevice>` is a `ZonedDevice`).
impl<D: ZonedDevice + ?Sized> ZonedDevice for Rc<D> {
    fn config(&self) -> &ZonedConfig {
        (**self).config()
    }
    fn report_zones(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> CmdFuture<'_, Vec<ZoneDescriptor>> {
        (**self).report_zones(start_lba, filter, max_zones)
    }
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        (**self).read(slba, buf)
    }
    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        (**self).write(slba, data, flags)
    }
    fn append<'a>(&'a self, zslba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, u64> {
        (**self).append(zslba, data, flags)
    }
    fn zone_send(&self, cmd: ZoneSendCmd) -> CmdFuture<'_, ()> {
        (**self).zone_send(cmd)
    }
    fn flush(&self) -> CmdFuture<'_, ()> {
        (**self).flush()
    }
    fn orders_zone_writes(&self) -> bool {
        (**self).orders_zone_writes()
    }
}

/// A shared device is the device (so `Rc<dyn BlockDevice>` is a `BlockDevice`).
impl<D: BlockDevice + ?Sized> BlockDevice for Rc<D> {
    fn lba_bytes(&self) -> u32 {
        (**self).lba_bytes()
    }
    fn capacity_lbas(&self) -> u64 {
        (**self).capacity_lbas()
    }
    fn max_transfer_lbas(&self) -> u32 {
        (**self).max_transfer_lbas()
    }
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        (**self).read(slba, buf)
    }
    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        (**self).write(slba, data, flags)
    }
    fn discard(&self, slba: u64, nlb: u64) -> CmdFuture<'_, ()> {
        (**self).discard(slba, nlb)
    }
    fn flush(&self) -> CmdFuture<'_, ()> {
        (**self).flush()
    }
}
