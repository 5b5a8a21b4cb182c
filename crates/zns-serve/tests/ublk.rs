//! The server end to end through a real kernel: an emulated `tiny` device
//! served with ublk, then driven through `/dev/ublkbN` by zns-linux's
//! backend (zone ioctls, O_DIRECT reads and writes) — the kernel's block
//! layer between the two. Needs Linux ≥ 6.6 with `ublk_drv` loaded and
//! root, so it runs inside the QEMU guest (scripts/serve-guest-test); on a
//! host without `/dev/ublk-control` it is skipped, unless
//! `ZNSKIT_REQUIRE_UBLK=1` makes that a failure.

use std::path::Path;
use std::rc::Rc;

use zns_core::{
    IoFlags, NvmeStatus, ReportFilter, ZoneAction, ZoneSendCmd, ZoneState, ZonedDevice,
};
use zns_device::{Controller, ControllerOptions, Profile, StoreKind};
use zns_linux::{LinuxOptions, LinuxZoned};
use zns_serve::{Host, HostConfig, Opened, UblkDevice, UblkOptions};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;
use zns_target::Target;

fn ublk_available(test: &str) -> bool {
    if Path::new("/dev/ublk-control").exists() {
        return true;
    }
    if std::env::var("ZNSKIT_REQUIRE_UBLK").as_deref() == Ok("1") {
        panic!("{test}: /dev/ublk-control is missing but ZNSKIT_REQUIRE_UBLK=1");
    }
    eprintln!(
        "{test}: skipped: no /dev/ublk-control (scripts/serve-guest-test runs it in a guest)"
    );
    false
}

fn serve_tiny() -> (Host, UblkDevice) {
    let host = Host::start(
        HostConfig {
            seed: 1,
            speed: 1.0,
            io_buf_bytes: 512 * 1024,
        },
        |rt: &mut Runtime| {
            let p = Profile::builtin("tiny").map_err(|e| e.to_string())?;
            let c = Controller::new(
                &rt.handle(),
                p,
                ControllerOptions {
                    store: StoreKind::Memory,
                    host_stack: HostStack::IoUringNone,
                },
            )
            .map_err(|e| e.to_string())?;
            let z = Rc::new(c.first_zoned().ok_or("no zoned namespace")?) as Rc<dyn ZonedDevice>;
            Ok(Opened {
                served: vec![("tiny".into(), Target::Zoned(z))],
                keep_alive: Box::new(c),
            })
        },
    )
    .unwrap();
    let dev = UblkDevice::add(&host.devices()[0], host.link(0), UblkOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    (host, dev)
}

fn send(action: ZoneAction, slba: u64) -> ZoneSendCmd {
    ZoneSendCmd {
        action,
        slba,
        select_all: false,
    }
}

#[test]
fn a_served_zoned_device_behaves_through_the_kernel() {
    if !ublk_available("a_served_zoned_device_behaves_through_the_kernel") {
        return;
    }
    let (mut host, mut served) = serve_tiny();
    eprintln!("served tiny at {}", served.block_path);
    {
        let mut rt = Runtime::new(9);
        let dev = LinuxZoned::open(
            &rt.handle(),
            Path::new(&served.block_path),
            LinuxOptions::default(),
        )
        .unwrap_or_else(|e| panic!("open {}: {e}", served.block_path));
        let c = dev.config().clone();
        eprintln!(
            "as the kernel sees it: {c:?} limits {:?}",
            dev.limit_sources()
        );
        assert_eq!(c.lba_bytes, 4096);
        assert_eq!(c.zone_count, 16);
        assert_eq!(c.zone_size_lbas, 256);
        assert_eq!(c.zone_capacity_lbas, 192);
        assert_eq!((c.max_open_zones, c.max_active_zones), (4, 6));

        // write at the WP, read it back
        let data: Vec<u8> = (0..8 * 4096).map(|i| (i % 253) as u8).collect();
        rt.block_on(dev.write(0, &data, IoFlags::NONE)).unwrap();
        let mut back = vec![0u8; data.len()];
        rt.block_on(dev.read(0, &mut back)).unwrap();
        assert!(back == data, "read-back differs");
        let z0 = rt
            .block_on(dev.report_zones(0, ReportFilter::All, 1))
            .unwrap()[0];
        assert_eq!(
            (z0.state, z0.write_pointer),
            (ZoneState::ImplicitlyOpened, 8)
        );

        // a write off the WP fails
        let e = rt
            .block_on(dev.write(16, &data[..4096], IoFlags::FUA))
            .unwrap_err();
        // (EIO from the kernel, diagnosed from a fresh report)
        assert_eq!(e.status, NvmeStatus::ZoneInvalidWrite, "{e:?}");

        // finish, then reset, through the zone ioctls
        rt.block_on(dev.zone_send(send(ZoneAction::Finish, 256)))
            .unwrap();
        let z1 = rt
            .block_on(dev.report_zones(256, ReportFilter::All, 1))
            .unwrap()[0];
        assert_eq!(z1.state, ZoneState::Full);
        rt.block_on(dev.zone_send(send(ZoneAction::Reset, 256)))
            .unwrap();
        let z1 = rt
            .block_on(dev.report_zones(256, ReportFilter::All, 1))
            .unwrap()[0];
        assert_eq!((z1.state, z1.write_pointer), (ZoneState::Empty, 256));

        // the open limit: 4 explicit opens, the fifth refused
        for z in 2..6u64 {
            rt.block_on(dev.zone_send(send(ZoneAction::Open { zrwa: false }, z * 256)))
                .unwrap_or_else(|e| panic!("open zone {z}: {e:?}"));
        }
        // (zone 0, implicitly open, was closed by the device to make room)
        let e = rt
            .block_on(dev.zone_send(send(ZoneAction::Open { zrwa: false }, 6 * 256)))
            .unwrap_err();
        assert_eq!(e.status, NvmeStatus::TooManyOpenZones, "{e:?}");
    }
    served.stop();
    assert!(
        !Path::new(&served.block_path).exists(),
        "{} still exists after stop",
        served.block_path
    );
    host.stop();
}
