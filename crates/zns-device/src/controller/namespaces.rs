//! The namespaces a controller serves, as devices: a zoned namespace
//! (`ZonedDevice`) and a conventional one (`BlockDevice`), each a handle on
//! the shared controller.

use zns_core::{CmdFuture, IoFlags, ReportFilter, ZoneDescriptor, ZoneSendCmd, ZonedConfig};
use zns_sim::Handle;

use super::{Controller, ControllerOptions, DeviceError};
use crate::ftl::FtlStats;
use crate::profile::{ConventionalConfig, Profile};

/// A zoned namespace of an emulated controller: the `ZonedDevice` users open.
#[derive(Clone)]
pub struct EmulatedZns {
    pub(super) ctrl: Controller,
    pub(super) ns: u32,
}

impl EmulatedZns {
    /// A one-namespace device from a built-in profile name, with no data store.
    pub fn from_profile(
        handle: &Handle,
        profile: Profile,
        options: ControllerOptions,
    ) -> Result<EmulatedZns, DeviceError> {
        let ctrl = Controller::new(handle, profile, options)?;
        ctrl.first_zoned()
            .ok_or_else(|| DeviceError::Invalid("the profile has no zoned namespace".into()))
    }

    pub fn controller(&self) -> &Controller {
        &self.ctrl
    }

    /// NSID (1-based).
    pub fn nsid(&self) -> u32 {
        self.ns + 1
    }
}

impl zns_core::ZonedDevice for EmulatedZns {
    fn config(&self) -> &ZonedConfig {
        self.ctrl.zoned_config(self.ns)
    }

    fn report_zones(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> CmdFuture<'_, Vec<ZoneDescriptor>> {
        Box::pin(async move { self.ctrl.report(self.ns, start_lba, filter, max_zones) })
    }

    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        Box::pin(
            self.ctrl
                .run(self.ns, self.ctrl.read_ns(self.ns, slba, buf)),
        )
    }

    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        Box::pin(
            self.ctrl
                .run(self.ns, self.ctrl.zoned_write(self.ns, slba, data, flags)),
        )
    }

    fn append<'a>(&'a self, zslba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, u64> {
        Box::pin(
            self.ctrl
                .run(self.ns, self.ctrl.zoned_append(self.ns, zslba, data, flags)),
        )
    }

    fn zone_send(&self, cmd: ZoneSendCmd) -> CmdFuture<'_, ()> {
        Box::pin(self.ctrl.run(self.ns, self.ctrl.zone_send_ns(self.ns, cmd)))
    }

    fn flush(&self) -> CmdFuture<'_, ()> {
        Box::pin(self.ctrl.run(self.ns, self.ctrl.flush_all(self.ns)))
    }
}

/// A conventional namespace of an emulated controller: a `BlockDevice`.
#[derive(Clone)]
pub struct EmulatedConventionalNs {
    pub(super) ctrl: Controller,
    pub(super) ns: u32,
    pub(super) config: ConventionalConfig,
}

impl EmulatedConventionalNs {
    pub fn controller(&self) -> &Controller {
        &self.ctrl
    }
    /// FTL counters (device WAF: `flash_bytes_written / host_bytes_written`,
    /// GC, erases, wear) if this namespace is an SSD with an FTL.
    pub fn ftl_stats(&self) -> Option<FtlStats> {
        self.ctrl.ftl_stats(self.ns + 1)
    }
    pub fn nsid(&self) -> u32 {
        self.ns + 1
    }
}

impl zns_core::BlockDevice for EmulatedConventionalNs {
    fn lba_bytes(&self) -> u32 {
        self.config.lba_bytes
    }
    fn capacity_lbas(&self) -> u64 {
        self.config.capacity_lbas
    }
    fn max_transfer_lbas(&self) -> u32 {
        self.config.max_transfer_lbas
    }
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        Box::pin(
            self.ctrl
                .run(self.ns, self.ctrl.read_ns(self.ns, slba, buf)),
        )
    }
    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        Box::pin(
            self.ctrl.run(
                self.ns,
                self.ctrl
                    .conv_write(self.ns, &self.config, slba, data, flags),
            ),
        )
    }
    fn discard(&self, slba: u64, nlb: u64) -> CmdFuture<'_, ()> {
        Box::pin(self.ctrl.run(
            self.ns,
            self.ctrl.conv_discard(self.ns, &self.config, slba, nlb),
        ))
    }
    fn flush(&self) -> CmdFuture<'_, ()> {
        Box::pin(self.ctrl.run(self.ns, self.ctrl.flush_all(self.ns)))
    }
}
