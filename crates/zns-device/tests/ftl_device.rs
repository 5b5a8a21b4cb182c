//! The FTL namespace as a device: property tests (no panic, page-map
//! consistency, reads return what was written / zeros after TRIM), GC
//! slowing host writes, and the stats API.

#[path = "support/ctrl.rs"]
mod test_ctrl;

use std::collections::HashMap;

use proptest::prelude::*;
use zns_core::{BlockDevice, IoFlags};
use zns_device::{Controller, ControllerOptions, EmulatedConventionalNs, Profile, StoreKind};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

fn tiny_ftl(rt: &Runtime, store: StoreKind) -> EmulatedConventionalNs {
    tiny_ftl_with(rt, store, "superblock")
}

/// `tiny-ftl` with `[namespace.ftl] allocation` set.
fn tiny_ftl_with(rt: &Runtime, store: StoreKind, allocation: &str) -> EmulatedConventionalNs {
    let profile = Profile::builtin("tiny-ftl")
        .unwrap()
        .with_overrides(&[(
            "namespace.0.ftl.allocation".to_string(),
            allocation.to_string(),
        )])
        .unwrap();
    let ctrl = test_ctrl::open(&rt.handle(), profile, store, HostStack::Spdk);
    ctrl.conventional(1).unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Write { lba: u64, nlb: u64, tag: u8 },
    Trim { lba: u64, nlb: u64 },
    Read { lba: u64, nlb: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    // Biased to a hot range so that GC runs often on the 16 MiB device.
    let lba = prop_oneof![0u64..4096, 0u64..256];
    prop_oneof![
        6 => (lba.clone(), 1u64..=32, any::<u8>()).prop_map(|(lba, nlb, tag)| Op::Write { lba, nlb, tag }),
        1 => (lba.clone(), 1u64..=600).prop_map(|(lba, nlb)| Op::Trim { lba, nlb }),
        2 => (lba, 1u64..=32).prop_map(|(lba, nlb)| Op::Read { lba, nlb }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    /// Any mix of writes, trims and reads (in range or not): no panic, the
    /// page map stays consistent, reads return the last data written (zeros
    /// after a trim or before any write), out-of-range commands are rejected.
    #[test]
    fn ftl_namespace_keeps_a_consistent_map(fill in any::<bool>(), per_die in any::<bool>(), ops in prop::collection::vec(op(), 1..400)) {
        let mut rt = Runtime::new(3);
        let dev = tiny_ftl_with(&rt, StoreKind::Memory, if per_die { "per-die" } else { "superblock" });
        let cap = dev.capacity_lbas();
        rt.block_on(async {
            let mut model: HashMap<u64, u8> = HashMap::new();
            if fill {
                let buf = vec![0xAAu8; 32 * 4096];
                for lba in (0..cap).step_by(32) {
                    dev.write(lba, &buf, IoFlags::NONE).await.unwrap();
                    for l in lba..lba + 32 { model.insert(l, 0xAA); }
                }
            }
            // Overwrite twice over so the GC runs in every case.
            let buf = vec![0x55u8; 32 * 4096];
            for pass in 0..2u64 {
                for i in 0..cap / 32 {
                    let lba = (i * 37 + pass * 11) % (cap / 32) * 32;
                    dev.write(lba, &buf, IoFlags::NONE).await.unwrap();
                    for l in lba..lba + 32 { model.insert(l, 0x55); }
                }
            }
            for op in &ops {
                match *op {
                    Op::Write { lba, nlb, tag } => {
                        let data = vec![tag; (nlb * 4096) as usize];
                        let r = dev.write(lba, &data, IoFlags::NONE).await;
                        if lba + nlb <= cap {
                            r.unwrap();
                            for l in lba..lba + nlb { model.insert(l, tag); }
                        } else {
                            assert!(r.is_err());
                        }
                    }
                    Op::Trim { lba, nlb } => {
                        let r = dev.discard(lba, nlb).await;
                        if lba + nlb <= cap {
                            r.unwrap();
                            for l in lba..lba + nlb { model.remove(&l); }
                        } else {
                            assert!(r.is_err());
                        }
                    }
                    Op::Read { lba, nlb } => {
                        let mut buf = vec![0u8; (nlb * 4096) as usize];
                        let r = dev.read(lba, &mut buf).await;
                        if lba + nlb <= cap {
                            r.unwrap();
                            for l in lba..lba + nlb {
                                let want = model.get(&l).copied().unwrap_or(0);
                                let off = ((l - lba) * 4096) as usize;
                                assert!(buf[off..off + 4096].iter().all(|&b| b == want), "lba {l}");
                            }
                        } else {
                            assert!(r.is_err());
                        }
                    }
                }
            }
            dev.controller().ftl_check(1).unwrap();
            let s = dev.ftl_stats().unwrap();
            // Every LBA the model holds is mapped, nothing else.
            assert_eq!(s.mapped_units, model.len() as u64);
            assert!(s.flash_bytes_written >= s.host_bytes_written);
            assert!(s.erases > 0);
        });
    }
}

#[test]
fn gc_slows_host_writes_and_counts_device_waf() {
    let mut rt = Runtime::new(1);
    let dev = tiny_ftl(&rt, StoreKind::None);
    let h = rt.handle();
    let cap = dev.capacity_lbas();
    let (fresh_us, steady_us, s) = rt.block_on(async {
        let buf = vec![0u8; 4096];
        // Time of random 4 KiB writes on the empty device (no GC) ...
        let t0 = h.now_ns();
        let mut x = 12345u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % cap
        };
        for _ in 0..1000 {
            dev.write(next(), &buf, IoFlags::NONE).await.unwrap();
        }
        let fresh = (h.now_ns() - t0) as f64 / 1000.0 / 1000.0;
        // ... then fill and overwrite until GC runs in steady state.
        let big = vec![0u8; 32 * 4096];
        for lba in (0..cap).step_by(32) {
            dev.write(lba, &big, IoFlags::NONE).await.unwrap();
        }
        for _ in 0..4 * cap {
            dev.write(next(), &buf, IoFlags::NONE).await.unwrap();
        }
        let before = dev.ftl_stats().unwrap();
        let t0 = h.now_ns();
        for _ in 0..2000 {
            dev.write(next(), &buf, IoFlags::NONE).await.unwrap();
        }
        let steady = (h.now_ns() - t0) as f64 / 2000.0 / 1000.0;
        let after = dev.ftl_stats().unwrap();
        (fresh, steady, (before, after))
    });
    let (before, after) = s;
    let waf = (after.flash_bytes_written - before.flash_bytes_written) as f64
        / (after.host_bytes_written - before.host_bytes_written) as f64;
    println!("QD1 4 KiB write: {fresh_us:.1} us fresh, {steady_us:.1} us in GC steady state; WAF {waf:.2}");
    assert!(waf > 1.5, "WAF {waf}");
    assert!(after.gc_relocated_bytes > before.gc_relocated_bytes);
    assert!(after.erases > before.erases && after.max_block_erases > 0);
    assert!(
        steady_us > fresh_us * 1.5,
        "GC should slow writes: {fresh_us} -> {steady_us}"
    );
    let wear = dev.controller().ftl_block_erase_counts(1).unwrap();
    assert_eq!(
        wear.iter().map(|&e| u64::from(e)).sum::<u64>(),
        after.erases
    );
    // Not an FTL namespace: no stats.
    let rt2 = Runtime::new(1);
    let z = test_ctrl::open_default(&rt2.handle(), Profile::builtin("zn540-cns").unwrap());
    assert!(z.ftl_stats(1).is_none() && z.ftl_stats(2).is_none());
}

#[test]
fn ftl_namespaces_are_refused_in_device_images() {
    // The page map is not stored in images: refusing beats reopening an
    // image whose data has lost its placement, GC state and counters.
    let rt = Runtime::new(1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ftl.img");
    let e = Controller::create_image(
        &rt.handle(),
        Profile::builtin("tiny-ftl").unwrap(),
        &path,
        HostStack::Spdk,
    )
    .err()
    .expect("an FTL profile must be refused");
    let msg = e.to_string();
    assert!(msg.contains("FTL") && msg.contains("image"), "{msg}");
    assert!(!path.exists(), "nothing may be created");
}

/// tiny-ftl in GC steady state, idle for 2 s, then a burst of 4 KiB random
/// writes at QD1: (mean burst latency in µs, victims collected during the
/// burst, victims collected while idle).
fn idle_then_burst(idle_gc: bool) -> (f64, u64, u64) {
    let mut rt = Runtime::new(1);
    let mut profile = Profile::builtin("tiny-ftl").unwrap();
    if idle_gc {
        profile = profile
            .with_overrides(&[
                (
                    "namespace.0.ftl.idle_gc_after_ns".to_string(),
                    "1000000".to_string(),
                ),
                (
                    "namespace.0.ftl.idle_gc_free_blocks".to_string(),
                    "12".to_string(),
                ),
            ])
            .unwrap();
    }
    let ctrl = test_ctrl::open_default(&rt.handle(), profile);
    let dev = ctrl.conventional(1).unwrap();
    let h = rt.handle();
    let cap = dev.capacity_lbas();
    let r = rt.block_on(async {
        let buf = vec![0u8; 4096];
        let mut x = 99u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % cap
        };
        let big = vec![0u8; 32 * 4096];
        for lba in (0..cap).step_by(32) {
            dev.write(lba, &big, IoFlags::NONE).await.unwrap();
        }
        for _ in 0..3 * cap {
            dev.write(next(), &buf, IoFlags::NONE).await.unwrap();
        }
        h.sleep(2_000_000_000).await;
        let before = dev.ftl_stats().unwrap();
        // The first write after the pause runs the idle GC (in the past).
        dev.write(next(), &buf, IoFlags::NONE).await.unwrap();
        let after_idle = dev.ftl_stats().unwrap();
        let n = 200u64;
        let t0 = h.now_ns();
        for _ in 0..n {
            dev.write(next(), &buf, IoFlags::NONE).await.unwrap();
        }
        let mean_us = (h.now_ns() - t0) as f64 / n as f64 / 1000.0;
        let end = dev.ftl_stats().unwrap();
        (
            mean_us,
            end.gc_victims - after_idle.gc_victims,
            after_idle.gc_victims - before.gc_victims,
        )
    });
    ctrl.ftl_check(1).unwrap();
    r
}

#[test]
fn idle_gc_frees_blocks_before_a_burst() {
    let (off_us, off_burst, off_idle) = idle_then_burst(false);
    let (on_us, on_burst, on_idle) = idle_then_burst(true);
    println!(
        "burst after 2 s idle: without idle GC {off_us:.1} us, {off_burst} victims in the burst; \
         with idle GC {on_us:.1} us, {on_burst} victims in the burst, {on_idle} while idle"
    );
    assert_eq!(off_idle, 0, "no idle GC when it is off");
    assert!(on_idle > 0, "idle GC collected nothing");
    assert!(on_burst < off_burst, "{on_burst} vs {off_burst}");
    assert!(on_us < off_us, "{on_us} vs {off_us}");
}

#[test]
fn idle_gc_parameters_are_checked() {
    let p = Profile::builtin("tiny-ftl").unwrap();
    let e: Result<(), String> = p
        .with_overrides(&[(
            "namespace.0.ftl.idle_gc_after_ns".to_string(),
            "1000000".to_string(),
        )])
        .map_err(|e| e.to_string())
        .and_then(|p| {
            let rt = Runtime::new(1);
            Controller::new(&rt.handle(), p, ControllerOptions::default())
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
    let msg = format!("{e:?}");
    assert!(msg.contains("idle_gc_free_blocks"), "{msg}");
}

/// A namespace grown k times keeps its steady state: the spare beyond the
/// GC's free-block reserve is the same share of the logical space.
#[test]
fn a_grown_ftl_namespace_keeps_its_spare_beyond_the_gc_reserve() {
    use zns_device::NamespaceProfile;
    let p = Profile::builtin("sn540-960g-mini").unwrap();
    let NamespaceProfile::Conventional(c) = &p.namespaces[0] else {
        panic!("sn540-960g-mini's first namespace is conventional")
    };
    let spare = |c: &zns_device::profile::ConventionalConfig| {
        let g = c.ftl_geometry(&p.timing).unwrap().unwrap();
        let f = c.ftl.as_ref().unwrap();
        let reserve =
            u64::from(f.gc_start_free_blocks) * u64::from(g.dies) * u64::from(g.slots_per_block());
        (
            (g.physical_slots - reserve - g.logical_units) as f64 / g.logical_units as f64,
            g,
        )
    };
    let (s1, g1) = spare(c);
    let grown = c.grown(&p.timing, 4).unwrap();
    assert_eq!(grown.capacity_lbas, 4 * c.capacity_lbas);
    let (s4, g4) = spare(&grown);
    // equal up to the rounding of the flash to whole erase units (one
    // superblock of the grown drive)
    let unit = f64::from(g4.dies) * f64::from(g4.slots_per_block()) / g4.logical_units as f64;
    assert!(
        (s4 - s1).abs() <= unit,
        "spare {s1:.4} -> {s4:.4}, one erase unit {unit:.4}"
    );
    assert!(
        grown.ftl.as_ref().unwrap().overprovisioning_ppm
            < c.ftl.as_ref().unwrap().overprovisioning_ppm
    );
    assert!(
        (4 * g1.blocks_per_die).abs_diff(g4.blocks_per_die) <= 8,
        "{g1:?} {g4:?}"
    );
    // without an FTL only the capacity grows
    let cns = Profile::builtin("zn540-cns").unwrap();
    let NamespaceProfile::Conventional(c) = &cns.namespaces[0] else {
        panic!("zn540-cns's first namespace is conventional")
    };
    let g = c.grown(&cns.timing, 3).unwrap();
    assert_eq!(g.capacity_lbas, 3 * c.capacity_lbas);
    assert!(c.grown(&cns.timing, 0).is_err());
}
