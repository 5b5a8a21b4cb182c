//! Conformance of `LinuxZoned` on a real NVMe ZNS namespace: geometry and
//! limits, zone state transitions through the kernel ioctls, writes at and
//! off the write pointer with the NVMe status a controller posts, reads,
//! zone append returning the LBA, ZRWA open + random writes inside the ZRWA +
//! explicit flush moving the write pointer, and the open/active/ZRWA limits.
//!
//! Needs `ZNSKIT_LINUX_DEV=/dev/nvmeXnY` (a namespace whose zones it may
//! destroy); skipped without it. `scripts/guest-test` runs it inside a QEMU
//! guest. Tests share the device, so they take a lock.

mod support;

use std::sync::Mutex;

use zns_core::{
    IoFlags, NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneDescriptor, ZoneSendCmd,
    ZoneState, ZonedDevice,
};
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
    rt.block_on(dev.zone_send(send(ZoneAction::Reset, 0, true)))
        .expect("reset all");
    f(&mut rt, &dev);
    rt.block_on(dev.zone_send(send(ZoneAction::Reset, 0, true)))
        .expect("reset all");
}

fn send(action: ZoneAction, slba: u64, select_all: bool) -> ZoneSendCmd {
    ZoneSendCmd {
        action,
        slba,
        select_all,
    }
}

fn zone(rt: &mut Runtime, dev: &LinuxZoned, z: u64) -> ZoneDescriptor {
    let zs = dev.config().zone_size_lbas;
    rt.block_on(dev.report_zones(z * zs, ReportFilter::All, 1))
        .expect("report")[0]
}

fn status<T: std::fmt::Debug>(r: Result<T, NvmeError>) -> NvmeStatus {
    r.expect_err("the command should fail").status
}

#[test]
fn geometry_and_limits_come_from_the_device() {
    with_device("geometry", |rt, dev| {
        let c = dev.config().clone();
        eprintln!(
            "geometry: {c:?} model {:?} nsid {:?} limits {:?}",
            dev.model(),
            dev.nsid(),
            dev.limit_sources()
        );
        assert!(dev.nsid().is_some(), "passthrough needs an NVMe namespace");
        if let Some(v) = support::expect("ZONE_LBAS") {
            assert_eq!(c.zone_size_lbas, v);
        }
        if let Some(v) = support::expect("ZONE_CAP_LBAS") {
            assert_eq!(c.zone_capacity_lbas, v);
        }
        if let Some(v) = support::expect("MAX_OPEN") {
            assert_eq!(u64::from(c.max_open_zones), v);
        }
        if let Some(v) = support::expect("MAX_ACTIVE") {
            assert_eq!(u64::from(c.max_active_zones), v);
        }
        // an NVMe namespace's limits come from its Identify data, which the
        // device enforces, whatever the kernel's sysfs says
        let sources = dev.limit_sources();
        let identify = sources
            .identify
            .expect("Identify (ZNS) through passthrough");
        assert_eq!(identify.max_open_zones, c.max_open_zones);
        assert_eq!(identify.max_active_zones, c.max_active_zones);
        // and sysfs agrees (through the multipath path where the head has
        // none: QEMU 10's shared namespaces on Linux 6.1)
        assert_eq!(sources.sysfs, identify);
        if let Some(v) = support::expect("ZRWA_LBAS") {
            assert_eq!(c.zrwa.expect("ZRWA").size_lbas, v);
        }
        if let Some(v) = support::expect("ZRWAFG_LBAS") {
            assert_eq!(c.zrwa.expect("ZRWA").flush_granularity_lbas, v);
        }
        if let Some(v) = support::expect("NUMZRWA") {
            assert_eq!(u64::from(c.zrwa.expect("ZRWA").resources), v);
        }
        let all = rt
            .block_on(dev.report_zones(0, ReportFilter::All, usize::MAX))
            .unwrap();
        assert_eq!(all.len(), c.zone_count as usize);
        for (i, z) in all.iter().enumerate() {
            assert_eq!(z.start_lba, i as u64 * c.zone_size_lbas);
            assert_eq!(z.state, ZoneState::Empty);
            assert_eq!(z.write_pointer, z.start_lba);
            assert_eq!(z.capacity_lbas, c.zone_capacity_lbas);
        }
        // a filtered report, and a report past the end
        let empty = rt
            .block_on(dev.report_zones(c.zone_size_lbas, ReportFilter::Full, 10))
            .unwrap();
        assert!(empty.is_empty());
        assert_eq!(
            status(rt.block_on(dev.report_zones(c.total_lbas(), ReportFilter::All, 1))),
            NvmeStatus::LbaOutOfRange
        );
    });
}

#[test]
fn zone_state_transitions_through_the_ioctls() {
    with_device("transitions", |rt, dev| {
        let zs = dev.config().zone_size_lbas;
        let lba = dev.config().lba_bytes as usize;
        let z1 = zs;
        rt.block_on(dev.write(z1, &support::pattern(z1, 1, lba, 1), IoFlags::NONE))
            .unwrap();
        let d = zone(rt, dev, 1);
        assert_eq!(
            (d.state, d.write_pointer),
            (ZoneState::ImplicitlyOpened, z1 + 1)
        );
        rt.block_on(dev.zone_send(send(ZoneAction::Close, z1, false)))
            .unwrap();
        assert_eq!(zone(rt, dev, 1).state, ZoneState::Closed);
        rt.block_on(dev.zone_send(send(ZoneAction::Open { zrwa: false }, z1, false)))
            .unwrap();
        assert_eq!(zone(rt, dev, 1).state, ZoneState::ExplicitlyOpened);
        rt.block_on(dev.zone_send(send(ZoneAction::Finish, z1, false)))
            .unwrap();
        let d = zone(rt, dev, 1);
        assert_eq!(d.state, ZoneState::Full);
        assert_eq!(d.write_pointer, d.start_lba + d.capacity_lbas);
        // a full zone cannot be opened; an empty one cannot be closed
        assert_eq!(
            status(rt.block_on(dev.zone_send(send(ZoneAction::Open { zrwa: false }, z1, false)))),
            NvmeStatus::InvalidZoneStateTransition
        );
        assert_eq!(
            status(rt.block_on(dev.zone_send(send(ZoneAction::Close, 2 * zs, false)))),
            NvmeStatus::InvalidZoneStateTransition
        );
        rt.block_on(dev.zone_send(send(ZoneAction::Reset, z1, false)))
            .unwrap();
        let d = zone(rt, dev, 1);
        assert_eq!((d.state, d.write_pointer), (ZoneState::Empty, z1));
        // not a zone start
        assert_eq!(
            status(rt.block_on(dev.zone_send(send(ZoneAction::Reset, z1 + 1, false)))),
            NvmeStatus::InvalidField
        );
    });
}

#[test]
fn writes_at_the_write_pointer_and_errors_off_it() {
    with_device("writes", |rt, dev| {
        let c = dev.config().clone();
        let lba = c.lba_bytes as usize;
        let z = 2 * c.zone_size_lbas;
        let data = support::pattern(z, 8, lba, 2);
        rt.block_on(dev.write(z, &data, IoFlags::NONE)).unwrap();
        rt.block_on(dev.write(z + 8, &support::pattern(z + 8, 4, lba, 2), IoFlags::FUA))
            .unwrap();
        assert_eq!(zone(rt, dev, 2).write_pointer, z + 12);
        // off the write pointer, ahead and behind
        assert_eq!(
            status(rt.block_on(dev.write(z + 20, &data[..lba], IoFlags::NONE))),
            NvmeStatus::ZoneInvalidWrite
        );
        assert_eq!(
            status(rt.block_on(dev.write(z, &data[..lba], IoFlags::NONE))),
            NvmeStatus::ZoneInvalidWrite
        );
        assert_eq!(
            zone(rt, dev, 2).write_pointer,
            z + 12,
            "failed writes moved the WP"
        );
        // read back
        let mut back = vec![0u8; 12 * lba];
        rt.block_on(dev.read(z, &mut back)).unwrap();
        assert_eq!(&back[..8 * lba], &data[..]);
        assert_eq!(&back[8 * lba..], &support::pattern(z + 8, 4, lba, 2)[..]);
        // a full zone
        rt.block_on(dev.zone_send(send(ZoneAction::Finish, z, false)))
            .unwrap();
        assert_eq!(
            status(rt.block_on(dev.write(z + 12, &data[..lba], IoFlags::NONE))),
            NvmeStatus::ZoneIsFull
        );
        // bad buffers and ranges are refused before reaching the device
        assert_eq!(
            status(rt.block_on(dev.write(z, &data[..lba - 1], IoFlags::NONE))),
            NvmeStatus::InvalidField
        );
        let mut one = vec![0u8; lba];
        assert_eq!(
            status(rt.block_on(dev.read(c.total_lbas(), &mut one))),
            NvmeStatus::LbaOutOfRange
        );
        let too_big = vec![0u8; (c.max_transfer_lbas as usize + 1) * lba];
        assert_eq!(
            status(rt.block_on(dev.write(3 * c.zone_size_lbas, &too_big, IoFlags::NONE))),
            NvmeStatus::InvalidField
        );
    });
}

#[test]
fn a_write_across_the_zone_capacity_is_a_boundary_error() {
    with_device("boundary", |rt, dev| {
        let c = dev.config().clone();
        let lba = c.lba_bytes as usize;
        let z = 3 * c.zone_size_lbas;
        let chunk = u64::from(c.max_transfer_lbas).min(64);
        let mut at = z;
        let end = z + c.zone_capacity_lbas - 2;
        while at < end {
            let n = chunk.min(end - at);
            rt.block_on(dev.write(at, &vec![0xA5; n as usize * lba], IoFlags::NONE))
                .unwrap();
            at += n;
        }
        assert_eq!(
            status(rt.block_on(dev.write(at, &vec![0; 4 * lba], IoFlags::NONE))),
            NvmeStatus::ZoneBoundaryError
        );
        rt.block_on(dev.write(at, &vec![0; 2 * lba], IoFlags::NONE))
            .unwrap();
        assert_eq!(zone(rt, dev, 3).state, ZoneState::Full);
    });
}

#[test]
fn zone_append_returns_the_lba_it_wrote() {
    with_device("append", |rt, dev| {
        let c = dev.config().clone();
        let lba = c.lba_bytes as usize;
        assert!(
            c.append_limit_lbas() >= 8,
            "append limit {}",
            c.append_limit_lbas()
        );
        let z = 4 * c.zone_size_lbas;
        let a = support::pattern(0, 8, lba, 41);
        let b = support::pattern(0, 3, lba, 42);
        let at_a = rt.block_on(dev.append(z, &a, IoFlags::NONE)).unwrap();
        let at_b = rt.block_on(dev.append(z, &b, IoFlags::FUA)).unwrap();
        assert_eq!((at_a, at_b), (z, z + 8));
        assert_eq!(zone(rt, dev, 4).write_pointer, z + 11);
        let mut back = vec![0u8; 3 * lba];
        rt.block_on(dev.read(at_b, &mut back)).unwrap();
        assert_eq!(back, b);
        // append must name the zone start
        assert_eq!(
            status(rt.block_on(dev.append(z + 1, &b, IoFlags::NONE))),
            NvmeStatus::InvalidField
        );
        rt.block_on(dev.zone_send(send(ZoneAction::Finish, z, false)))
            .unwrap();
        assert_eq!(
            status(rt.block_on(dev.append(z, &b, IoFlags::NONE))),
            NvmeStatus::ZoneIsFull
        );
    });
}

#[test]
fn zrwa_random_writes_then_explicit_flush_move_the_write_pointer() {
    with_device("zrwa", |rt, dev| {
        let c = dev.config().clone();
        let zrwa = c.zrwa.expect("the namespace has a ZRWA");
        let lba = c.lba_bytes as usize;
        let fg = zrwa.flush_granularity_lbas;
        let z = 5 * c.zone_size_lbas;
        rt.block_on(dev.zone_send(send(ZoneAction::Open { zrwa: true }, z, false)))
            .unwrap();
        // out of order inside the ZRWA: the second half first
        let hi = support::pattern(z + 2 * fg, 2 * fg, lba, 5);
        let lo = support::pattern(z, 2 * fg, lba, 5);
        rt.block_on(dev.write(z + 2 * fg, &hi, IoFlags::NONE))
            .unwrap();
        rt.block_on(dev.write(z, &lo, IoFlags::NONE)).unwrap();
        // and an overwrite inside the window
        let lo2 = support::pattern(z, fg, lba, 6);
        rt.block_on(dev.write(z, &lo2, IoFlags::NONE)).unwrap();
        let d = zone(rt, dev, 5);
        assert_eq!(d.state, ZoneState::ExplicitlyOpened);
        assert_eq!(
            d.write_pointer, z,
            "ZRWA writes do not move the WP before a flush"
        );
        // explicit flush of the first 3 granules
        rt.block_on(dev.zone_send(send(ZoneAction::FlushZrwa, z + 3 * fg - 1, false)))
            .unwrap();
        assert_eq!(zone(rt, dev, 5).write_pointer, z + 3 * fg);
        // past the ZRWA and its implicit flush region: an invalid write
        let beyond = z + 3 * fg + 2 * zrwa.size_lbas;
        assert_eq!(
            status(rt.block_on(dev.write(beyond, &lo2, IoFlags::NONE))),
            NvmeStatus::ZoneInvalidWrite
        );
        // below the new WP is committed: writing there fails
        assert_eq!(
            status(rt.block_on(dev.write(z, &lo2, IoFlags::NONE))),
            NvmeStatus::ZoneInvalidWrite
        );
        let mut back = vec![0u8; 4 * fg as usize * lba];
        rt.block_on(dev.read(z, &mut back)).unwrap();
        let fgb = fg as usize * lba;
        assert_eq!(&back[..fgb], &lo2[..]);
        assert_eq!(&back[fgb..2 * fgb], &lo[fgb..]);
        assert_eq!(&back[2 * fgb..], &hi[..]);
        // select-all is not allowed for a ZRWA flush; a flush below the WP fails
        assert_eq!(
            status(rt.block_on(dev.zone_send(send(ZoneAction::FlushZrwa, 0, true)))),
            NvmeStatus::InvalidField
        );
        assert!(rt
            .block_on(dev.zone_send(send(ZoneAction::FlushZrwa, z, false)))
            .is_err());
    });
}

#[test]
fn zrwa_resources_are_limited() {
    with_device("zrwa-limit", |rt, dev| {
        let c = dev.config().clone();
        let zrwa = c.zrwa.expect("the namespace has a ZRWA");
        let n = zrwa.resources as u64;
        assert!(n < u64::from(c.zone_count));
        for z in 0..n {
            rt.block_on(dev.zone_send(send(
                ZoneAction::Open { zrwa: true },
                z * c.zone_size_lbas,
                false,
            )))
            .unwrap_or_else(|e| panic!("ZRWA open {z} of {n}: {e}"));
        }
        assert_eq!(
            status(rt.block_on(dev.zone_send(send(
                ZoneAction::Open { zrwa: true },
                n * c.zone_size_lbas,
                false
            )))),
            NvmeStatus::ZrwaResourcesUnavailable
        );
        // a reset gives a resource back
        rt.block_on(dev.zone_send(send(ZoneAction::Reset, 0, false)))
            .unwrap();
        rt.block_on(dev.zone_send(send(
            ZoneAction::Open { zrwa: true },
            n * c.zone_size_lbas,
            false,
        )))
        .unwrap();
    });
}

#[test]
fn open_and_active_limits_are_enforced() {
    with_device("limits", |rt, dev| {
        let c = dev.config().clone();
        let limit = if c.max_active_zones != 0 {
            c.max_active_zones
        } else {
            c.max_open_zones
        } as u64;
        if limit == 0 || limit >= u64::from(c.zone_count) {
            eprintln!("limits: the device has no zone limit below its zone count; skipped");
            return;
        }
        for z in 0..limit {
            rt.block_on(dev.zone_send(send(
                ZoneAction::Open { zrwa: false },
                z * c.zone_size_lbas,
                false,
            )))
            .unwrap();
        }
        let got = status(rt.block_on(dev.zone_send(send(
            ZoneAction::Open { zrwa: false },
            limit * c.zone_size_lbas,
            false,
        ))));
        // QEMU checks the active limit first (max_open == max_active)
        assert!(
            matches!(
                got,
                NvmeStatus::TooManyActiveZones | NvmeStatus::TooManyOpenZones
            ),
            "{got:?}"
        );
        let open = rt
            .block_on(dev.report_zones(0, ReportFilter::ExplicitlyOpened, usize::MAX))
            .unwrap();
        assert_eq!(open.len() as u64, limit);
        // select-all close, then select-all finish of the closed zones
        rt.block_on(dev.zone_send(send(ZoneAction::Close, 0, true)))
            .unwrap();
        let closed = rt
            .block_on(dev.report_zones(0, ReportFilter::Closed, usize::MAX))
            .unwrap();
        assert_eq!(closed.len() as u64, limit);
        rt.block_on(dev.zone_send(send(ZoneAction::Finish, 0, true)))
            .unwrap();
        let full = rt
            .block_on(dev.report_zones(0, ReportFilter::Full, usize::MAX))
            .unwrap();
        assert_eq!(full.len() as u64, limit);
        rt.block_on(dev.flush()).unwrap();
    });
}
