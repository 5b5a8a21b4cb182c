//! The server end to end through a real kernel: an emulated `tiny` device
//! served with ublk, then checked through `/dev/ublkbN` by the generic
//! conformance suite (zns-conformance) on zns-linux's backend (zone ioctls,
//! O_DIRECT reads and writes) — the kernel's block layer between the two. Needs Linux ≥ 6.6 with `ublk_drv` loaded and
//! root, so it runs inside the QEMU guest (scripts/serve-guest-test); on a
//! host without `/dev/ublk-control` it is skipped, unless
//! `ZNSKIT_REQUIRE_UBLK=1` makes that a failure.

use std::path::Path;
use std::rc::Rc;

use zns_conformance::{Capabilities, ExpectedGeometry};
use zns_core::ZonedDevice;
use zns_device::{Controller, ControllerOptions, NamespaceProfile, Profile, StoreKind};
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
        eprintln!(
            "as the kernel sees it: {:?} limits {:?}",
            dev.config(),
            dev.limit_sources()
        );
        // the generic suite, command by command through the kernel's block
        // layer (zone ioctls, O_DIRECT): a ublk device has no NVMe
        // namespace, so no zone append, ZRWA or select-all open/close/finish
        // passthrough — those cases are skipped by capability
        let tiny = Profile::builtin("tiny").unwrap();
        let Some(NamespaceProfile::Zoned(ns)) = tiny.namespaces.first() else {
            panic!("tiny has no zoned namespace");
        };
        let caps = Capabilities::declared_by(dev.config())
            .with_zone_append(false)
            .with_zrwa(false)
            .with_select_all(false)
            .expecting(ExpectedGeometry::of(ns));
        let r = zns_conformance::run_all(&mut rt, &dev, &caps);
        eprintln!("conformance of {}:\n{r}", served.block_path);
        r.assert_passed(&format!("served tiny at {}", served.block_path));
        let mut skipped = r.skipped_names();
        skipped.sort_unstable();
        assert_eq!(
            skipped,
            [
                "select_all",
                "zone_append",
                "zrwa_implicit_flush",
                "zrwa_resources",
                "zrwa_window_and_explicit_flush"
            ],
            "{r}"
        );
    }
    served.stop();
    assert!(
        !Path::new(&served.block_path).exists(),
        "{} still exists after stop",
        served.block_path
    );
    host.stop();
}
