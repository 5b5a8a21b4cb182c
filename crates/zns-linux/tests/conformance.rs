//! Conformance of `LinuxZoned` on a real NVMe ZNS namespace: the generic
//! suite of zns-conformance (geometry, reports, state transitions, writes
//! at and off the write pointer with the NVMe status a controller posts,
//! reads, zone append, ZRWA, open/active/ZRWA limits, select-all, flush —
//! docs/conformance.md), with every capability an NVMe namespace carries
//! through passthrough, and the geometry `ZNSKIT_EXPECT_*` names. Plus what
//! only this backend has: where its zone limits come from.
//!
//! Needs `ZNSKIT_LINUX_DEV=/dev/nvmeXnY` (a namespace whose zones it may
//! destroy); skipped without it. `scripts/guest-test` runs it inside a QEMU
//! guest. Tests share the device, so they take a lock.

mod support;

use std::sync::Mutex;

use zns_conformance::{Capabilities, ExpectedGeometry};
use zns_core::ZonedDevice;
use zns_linux::{LinuxOptions, LinuxZoned};
use zns_sim::Runtime;

static DEVICE_LOCK: Mutex<()> = Mutex::new(());

fn with_device(test: &str, f: impl FnOnce(&mut Runtime, &LinuxZoned)) {
    let Some(devs) = support::devices("ZNSKIT_LINUX_DEV", test) else {
        return;
    };
    let _guard = DEVICE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut rt = Runtime::new(7);
    let dev = LinuxZoned::open(&rt.handle(), &devs[0], LinuxOptions::default())
        .unwrap_or_else(|e| panic!("{test}: open: {e}"));
    f(&mut rt, &dev);
}

/// The geometry the harness gave QEMU (`ZNSKIT_EXPECT_*`), where set.
fn expected() -> ExpectedGeometry {
    let u32_of = |name| support::expect(name).map(|v| v as u32);
    ExpectedGeometry {
        lba_bytes: u32_of("LBA_BYTES"),
        zone_count: u32_of("ZONE_COUNT"),
        zone_size_lbas: support::expect("ZONE_LBAS"),
        zone_capacity_lbas: support::expect("ZONE_CAP_LBAS"),
        max_open_zones: u32_of("MAX_OPEN"),
        max_active_zones: u32_of("MAX_ACTIVE"),
        zrwa_size_lbas: support::expect("ZRWA_LBAS"),
        zrwa_flush_granularity_lbas: support::expect("ZRWAFG_LBAS"),
        zrwa_resources: u32_of("NUMZRWA"),
    }
}

#[test]
fn the_conformance_suite_passes_on_an_nvme_namespace() {
    with_device("conformance suite", |rt, dev| {
        eprintln!(
            "{:?} model {:?} nsid {:?}",
            dev.config(),
            dev.model(),
            dev.nsid()
        );
        assert!(dev.nsid().is_some(), "passthrough needs an NVMe namespace");
        let expected = expected();
        let caps = Capabilities::declared_by(dev.config()).expecting(expected);
        // an NVMe namespace carries append (passthrough); ZRWA when the
        // harness made one
        assert!(caps.zone_append, "append limit {:?}", dev.config());
        if expected.zrwa_size_lbas.is_some() {
            assert!(caps.zrwa, "the namespace was given a ZRWA");
        }
        let r = zns_conformance::run_all(rt, dev, &caps);
        eprintln!("conformance of {}:\n{r}", dev.path().display());
        r.assert_passed(&dev.path().display().to_string());
    });
}

#[test]
fn zone_limits_come_from_the_namespace_identify_data() {
    with_device("limit sources", |_rt, dev| {
        let c = dev.config();
        let sources = dev.limit_sources();
        eprintln!("limits {sources:?}");
        // an NVMe namespace's limits come from its Identify data, which the
        // device enforces, whatever the kernel's sysfs says
        let identify = sources
            .identify
            .expect("Identify (ZNS) through passthrough");
        assert_eq!(identify.max_open_zones, c.max_open_zones);
        assert_eq!(identify.max_active_zones, c.max_active_zones);
        // and sysfs agrees (through the multipath path where the head has
        // none: QEMU 10's shared namespaces on Linux 6.1)
        assert_eq!(sources.sysfs, identify);
    });
}
