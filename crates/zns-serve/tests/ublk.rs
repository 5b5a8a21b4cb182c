//! The server end to end through a real kernel: an emulated `tiny` device
//! and a ZRAID array of three served with ublk, then checked through
//! `/dev/ublkbN` by the generic conformance suite (zns-conformance) on
//! zns-linux's backend (zone ioctls, O_DIRECT reads and writes) — the
//! kernel's block layer between the two. Needs Linux ≥ 6.6 with `ublk_drv`
//! loaded and root, so it runs inside the QEMU guest
//! (scripts/serve-guest-test); on a host without `/dev/ublk-control` it is
//! skipped, unless `ZNSKIT_REQUIRE_UBLK=1` makes that a failure.

use std::path::Path;
use std::rc::Rc;

use zns_conformance::{Capabilities, ExpectedGeometry};
use zns_core::ZonedDevice;
use zns_device::{NamespaceProfile, Profile, StoreKind};
use zns_linux::{LinuxOptions, LinuxZoned};
use zns_serve::{Host, HostConfig, Opened, UblkDevice, UblkOptions};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;
use zns_target::{OpenOptions, TargetSpec};

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

fn serve_opened<F>(open: F) -> (Host, UblkDevice)
where
    F: FnOnce(&mut Runtime) -> Result<Opened, zns_target::TargetError> + Send + 'static,
{
    let host = Host::start(
        HostConfig {
            seed: 1,
            speed: 1.0,
            io_buf_bytes: 512 * 1024,
        },
        open,
    )
    .unwrap();
    let dev = UblkDevice::add(&host.devices()[0], host.link(0), UblkOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    (host, dev)
}

/// The cases a ublk device skips: it has no NVMe namespace, so no zone
/// append, ZRWA or select-all passthrough.
const THROUGH_THE_BLOCK_LAYER_SKIPS: &[&str] = &[
    "select_all",
    "zone_append",
    "zrwa_implicit_flush",
    "zrwa_resources",
    "zrwa_window_and_explicit_flush",
];

/// Runs the suite on the served device at `path` (a ublk device carries no
/// append, ZRWA or select-all passthrough: those cases are skipped by
/// capability) and checks which cases were skipped.
fn conformance_through_the_kernel(path: &str, expected: ExpectedGeometry, skipped: &[&str]) {
    let mut rt = Runtime::new(9);
    let dev = LinuxZoned::open(&rt.handle(), Path::new(path), LinuxOptions::default())
        .unwrap_or_else(|e| panic!("open {path}: {e}"));
    eprintln!(
        "as the kernel sees it: {:?} limits {:?}",
        dev.config(),
        dev.limit_sources()
    );
    let caps = Capabilities::declared_by(dev.config())
        .with_zone_append(false)
        .with_zrwa(false)
        .with_select_all(false)
        .expecting(expected);
    let r = zns_conformance::run_all(&mut rt, &dev, &caps);
    eprintln!("conformance of {path}:\n{r}");
    r.assert_passed(&format!("served device at {path}"));
    let mut names = r.skipped_names();
    names.sort_unstable();
    assert_eq!(names, skipped, "{r}");
}

fn stop(mut host: Host, mut served: UblkDevice) {
    served.stop();
    assert!(
        !Path::new(&served.block_path).exists(),
        "{} still exists after stop",
        served.block_path
    );
    host.stop();
}

/// Serves the device `name` names, opened as `zns serve` opens it.
fn serve_name(name: &'static str) -> (Host, UblkDevice) {
    serve_opened(move |rt: &mut Runtime| {
        let spec = TargetSpec::parse(name)?;
        let opts = OpenOptions {
            store: StoreKind::Memory,
            host_stack: HostStack::IoUringNone,
        };
        let dev = zns_target::open(rt, &spec, &opts)?;
        let target = dev.target(name, None)?;
        Ok(Opened {
            served: vec![(name.into(), target)],
            keep_alive: Box::new(Rc::new(dev)),
            finish: Box::new(|_| serde_json::Value::Null),
        })
    })
}

#[test]
fn a_served_zoned_device_behaves_through_the_kernel() {
    if !ublk_available("a_served_zoned_device_behaves_through_the_kernel") {
        return;
    }
    let (host, served) = serve_name("tiny");
    eprintln!("served tiny at {}", served.block_path);
    let tiny = Profile::builtin("tiny").unwrap();
    let Some(NamespaceProfile::Zoned(ns)) = tiny.namespaces.first() else {
        panic!("tiny has no zoned namespace");
    };
    conformance_through_the_kernel(
        &served.block_path,
        ExpectedGeometry::of(ns),
        THROUGH_THE_BLOCK_LAYER_SKIPS,
    );
    stop(host, served);
}

/// A ZRAID array of three `tiny` members, opened by name as `zns serve`
/// opens it, served as one zoned device: the same suite through the kernel,
/// against the array's own geometry (it offers no ZRWA: its members' ZRWAs
/// hold the partial parity).
#[test]
fn a_served_raid_array_behaves_through_the_kernel() {
    if !ublk_available("a_served_raid_array_behaves_through_the_kernel") {
        return;
    }
    let (host, served) = serve_name("raid:3xtiny,chunk=32k");
    let g = host.devices()[0].geometry;
    let z = g.zoned.expect("an array is zoned");
    eprintln!(
        "served {} at {}: {g:?}",
        host.devices()[0].name,
        served.block_path
    );
    let expected = ExpectedGeometry {
        lba_bytes: Some(g.lba_bytes as u32),
        zone_count: Some(z.zones as u32),
        zone_size_lbas: Some(z.zone_bytes / g.lba_bytes),
        zone_capacity_lbas: Some(z.zone_capacity_bytes / g.lba_bytes),
        max_open_zones: Some(z.max_open_zones),
        max_active_zones: Some(z.max_active_zones),
        zrwa_size_lbas: None,
        zrwa_flush_granularity_lbas: None,
        zrwa_resources: None,
    };
    conformance_through_the_kernel(&served.block_path, expected, THROUGH_THE_BLOCK_LAYER_SKIPS);
    stop(host, served);
}
