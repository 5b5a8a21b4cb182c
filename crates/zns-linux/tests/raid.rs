//! ZRAID over real NVMe ZNS namespaces: an array of `LinuxZoned` members
//! (five QEMU namespaces in `scripts/guest-test`) survives a write / verify
//! cycle, a clean shutdown and a reopen (recovery from the members' write
//! pointers and logs), and takes writes again after it.
//!
//! Needs `ZNSKIT_LINUX_RAID_DEVS="/dev/nvme0n1 … /dev/nvme0n5"`; skipped
//! without it. Runs on a paced runtime (real time), as a real device needs.

mod support;

use std::rc::Rc;

use zns_conformance::pattern;
use zns_core::{IoFlags, ReportFilter, ZoneState, ZonedDevice};
use zns_linux::{LinuxOptions, LinuxZoned};
use zns_raid::{RaidArray, RaidOptions};
use zns_sim::Runtime;

fn members(rt: &Runtime, paths: &[std::path::PathBuf]) -> Vec<Rc<dyn ZonedDevice>> {
    paths
        .iter()
        .map(|p| {
            Rc::new(
                LinuxZoned::open(&rt.handle(), p, LinuxOptions::default())
                    .unwrap_or_else(|e| panic!("open {}: {e}", p.display())),
            ) as Rc<dyn ZonedDevice>
        })
        .collect()
}

#[test]
fn zraid_over_real_namespaces_survives_write_verify_and_reopen() {
    let Some(paths) = support::devices("ZNSKIT_LINUX_RAID_DEVS", "raid") else {
        return;
    };
    assert!(paths.len() >= 3, "ZRAID needs at least 3 members");
    let mut rt = Runtime::paced(11, 1.0).unwrap();
    let h = rt.handle();
    let opts = RaidOptions::default();
    let array = rt
        .block_on(RaidArray::create(&h, members(&rt, &paths), opts))
        .expect("create the array");
    let cfg = array.config().clone();
    let lba = cfg.lba_bytes as usize;
    eprintln!(
        "raid: {} members, logical zones {} × {} LBAs (capacity {})",
        paths.len(),
        cfg.zone_count,
        cfg.zone_size_lbas,
        cfg.zone_capacity_lbas
    );
    // zone 0: several full stripes plus a partial chunk (partial parity in
    // the ZRWA); zone 1: a few blocks written with FUA
    let io_lbas = (cfg.max_transfer_lbas as u64).min(32);
    let z0_lbas = (3 * array.layout().stripe_lbas() + 5).min(cfg.zone_capacity_lbas);
    let mut at = 0;
    while at < z0_lbas {
        let n = io_lbas.min(z0_lbas - at);
        rt.block_on(array.write(at, &pattern(at, n, lba, 1), IoFlags::NONE))
            .unwrap_or_else(|e| panic!("write at {at}: {e}"));
        at += n;
    }
    let z1 = cfg.zone_size_lbas;
    rt.block_on(array.write(z1, &pattern(z1, 3, lba, 1), IoFlags::FUA))
        .unwrap();
    let verify = |rt: &mut Runtime, array: &RaidArray, what: &str| {
        let mut at = 0;
        while at < z0_lbas {
            let n = io_lbas.min(z0_lbas - at);
            let mut buf = vec![0u8; n as usize * lba];
            rt.block_on(array.read(at, &mut buf)).unwrap();
            assert!(
                buf == pattern(at, n, lba, 1),
                "{what}: data differs at LBA {at}"
            );
            at += n;
        }
        let mut buf = vec![0u8; 3 * lba];
        rt.block_on(array.read(z1, &mut buf)).unwrap();
        assert!(buf == pattern(z1, 3, lba, 1), "{what}: zone 1 differs");
    };
    verify(&mut rt, &array, "after write");
    rt.block_on(array.shutdown()).expect("clean shutdown");
    drop(array);

    let reopened = rt
        .block_on(RaidArray::open(&h, members(&rt, &paths), opts))
        .expect("reopen (recovery)");
    let zones = rt
        .block_on(reopened.report_zones(0, ReportFilter::All, 2))
        .unwrap();
    assert_eq!(zones[0].write_pointer, z0_lbas, "zone 0 WP after recovery");
    assert_eq!(zones[1].write_pointer, z1 + 3, "zone 1 WP after recovery");
    assert_ne!(zones[0].state, ZoneState::Empty);
    verify(&mut rt, &reopened, "after reopen");
    // and the array takes writes again where it left off
    rt.block_on(reopened.write(z0_lbas, &pattern(z0_lbas, 4, lba, 1), IoFlags::NONE))
        .expect("write after reopen");
    let mut buf = vec![0u8; 4 * lba];
    rt.block_on(reopened.read(z0_lbas, &mut buf)).unwrap();
    assert!(buf == pattern(z0_lbas, 4, lba, 1));
    rt.block_on(reopened.shutdown()).unwrap();
    eprintln!("raid: write/verify, shutdown, reopen and write again: ok");
}
