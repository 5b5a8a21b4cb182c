//! The FTL's dynamic SLC cache (`ftl.slc_cache`): its own invariants on the
//! pure FTL — no data lost (the map against a reference model), the map
//! consistent (`check_consistency`, which also checks that SLC blocks hold
//! at most 1 / bits per cell of their slots and the fold queue), the cache
//! shrinking to nothing as the drive fills, and the WAF counting SLC
//! programs and folds as flash writes — plus the device path (reads of SLC
//! data, fold work, parameter checks). docs/ftl.md.

#[path = "support/ctrl.rs"]
mod test_ctrl;

use std::collections::HashMap;

use zns_core::{BlockDevice, IoFlags};
use zns_device::ftl::{FoldPolicy, Ftl, FtlConfig, FtlEffects, SlcCacheConfig, VictimPolicy};
use zns_device::{Profile, StoreKind};
use zns_sim::timing::HostStack;
use zns_sim::Runtime;

#[path = "support/splitmix.rs"]
mod splitmix;
use splitmix::Rng;

const MAP: u64 = 4096;
/// A TLC one-shot program unit of 3 pages of 4 KiB: an SLC unit is one page.
const UNIT: u64 = 3 * MAP;
const DIES: u32 = 4;

fn slc_config(fraction_ppm: u64) -> FtlConfig {
    FtlConfig {
        overprovisioning_ppm: 280_000,
        map_unit_bytes: MAP,
        units_per_block: 16,
        gc_start_free_blocks: 2,
        gc_stop_free_blocks: 3,
        victim: VictimPolicy::Greedy,
        allocation: Default::default(),
        idle_gc_after_ns: 0,
        idle_gc_free_blocks: 0,
        slc_cache: Some(SlcCacheConfig {
            max_free_fraction_ppm: fraction_ppm,
            bits_per_cell: 3,
            program_ns: 200_000,
            read_ns: 30_000,
            fold: FoldPolicy::WhenFull,
        }),
        gc_modes: None,
    }
}

fn new_ftl(cfg: &FtlConfig, logical_units: u64) -> Ftl {
    let geo = cfg.geometry(DIES, UNIT, logical_units * MAP, 4096).unwrap();
    assert_eq!(geo.slc_slots_per_unit, 1);
    Ftl::new(cfg, geo)
}

/// Random writes (1–8 units), trims and a sequential fill against a
/// reference set of mapped units: the map stays consistent, every mapped
/// unit of the model is mapped in the FTL and nothing else, and flash bytes
/// are exactly host mapping units + relocations (SLC programs and folds
/// included).
#[test]
fn slc_cache_keeps_the_map_and_counts_every_flash_write() {
    for allocation in ["superblock", "per-die"] {
        let mut cfg = slc_config(1_000_000);
        if allocation == "per-die" {
            cfg.allocation = zns_device::ftl::Allocation::PerDie;
        }
        let logical = 4096u64;
        let mut ftl = new_ftl(&cfg, logical);
        let mut fx = FtlEffects::default();
        let mut model: HashMap<u64, ()> = HashMap::new();
        let mut rng = Rng(7);
        let mut host_unit_bytes = 0u64;
        let mut slc_seen = 0u64;
        for step in 0..40_000u64 {
            fx.clear();
            let r = rng.below(100);
            if r < 85 {
                let m = rng.below(logical);
                let n = (1 + rng.below(8)).min(logical - m);
                ftl.write(m * MAP, n * MAP, &mut fx).unwrap();
                for u in m..m + n {
                    model.insert(u, ());
                }
                host_unit_bytes += n * MAP;
            } else if r < 95 {
                let m = rng.below(logical);
                let n = (1 + rng.below(300)).min(logical - m);
                ftl.trim(m * MAP, n * MAP);
                for u in m..m + n {
                    model.remove(&u);
                }
            } else {
                // A sequential run: fills the drive at times.
                let m = rng.below(logical);
                let n = (256 + rng.below(1024)).min(logical - m);
                ftl.write(m * MAP, n * MAP, &mut fx).unwrap();
                for u in m..m + n {
                    model.insert(u, ());
                }
                host_unit_bytes += n * MAP;
            }
            // SLC programs are smaller units with their own program time.
            for p in &fx.units {
                assert!(p.bytes == MAP || p.bytes == UNIT, "{p:?}");
                slc_seen += u64::from(p.bytes == MAP);
            }
            if step % 2000 == 0 {
                ftl.check_consistency().unwrap();
            }
        }
        ftl.check_consistency().unwrap();
        for m in 0..logical {
            assert_eq!(
                ftl.lookup(m).is_some(),
                model.contains_key(&m),
                "{allocation}: unit {m}"
            );
        }
        let s = ftl.stats();
        assert_eq!(s.mapped_units, model.len() as u64);
        assert_eq!(
            s.flash_bytes_written,
            host_unit_bytes + s.gc_relocated_bytes,
            "{allocation}: flash = host units + relocations (folds included)"
        );
        assert!(s.slc_written_bytes > 0, "{allocation}: {s:?}");
        assert!(
            s.slc_folds > 0 && s.slc_folded_bytes > 0,
            "{allocation}: {s:?}"
        );
        assert!(s.slc_folded_bytes <= s.slc_written_bytes);
        assert!(s.slc_folded_bytes <= s.gc_relocated_bytes);
        assert_eq!(slc_seen * MAP, s.slc_written_bytes, "{allocation}");
        assert!(s.waf() > 1.0);
    }
}

/// A fresh drive written sequentially: the first writes go to SLC, the
/// cache shrinks as the drive fills (its footprint stays within the free
/// user space, up to the open unit and one being folded), and once the
/// drive is full every SLC unit has been folded and overwrites go to TLC.
#[test]
fn slc_cache_shrinks_as_the_drive_fills() {
    let cfg = slc_config(1_000_000);
    let logical = 8192u64;
    let mut ftl = new_ftl(&cfg, logical);
    let geo = *ftl.geometry();
    let unit_slots = u64::from(geo.slots_per_block()) * u64::from(geo.dies_per_unit);
    let mut fx = FtlEffects::default();
    let chunk = 32u64;
    let mut max_slc = 0u64;
    for m in (0..logical).step_by(chunk as usize) {
        fx.clear();
        ftl.write(m * MAP, chunk * MAP, &mut fx).unwrap();
        let s = ftl.stats();
        max_slc = max_slc.max(s.slc_units);
        let free_user = logical - s.mapped_units;
        assert!(
            s.slc_units.saturating_sub(2) * unit_slots <= free_user,
            "at {m}: {} SLC units over {free_user} free slots",
            s.slc_units
        );
    }
    let filled = ftl.stats();
    assert!(max_slc >= 2, "the cache was used: {max_slc} units");
    // The first unit's worth of data went to SLC.
    assert!(
        filled.slc_written_bytes >= unit_slots / 3 * MAP,
        "{filled:?}"
    );
    // One overwrite pass of the full drive: no more SLC.
    for m in (0..logical).step_by(chunk as usize) {
        fx.clear();
        ftl.write(m * MAP, chunk * MAP, &mut fx).unwrap();
    }
    let s = ftl.stats();
    assert_eq!(s.slc_units, 0, "{s:?}");
    assert!(
        s.slc_written_bytes - filled.slc_written_bytes <= unit_slots / 3 * MAP,
        "a full drive writes TLC: {s:?}"
    );
    ftl.check_consistency().unwrap();
}

/// Trimming half the drive makes room for the cache again.
#[test]
fn slc_cache_comes_back_after_trim() {
    let cfg = slc_config(1_000_000);
    let logical = 8192u64;
    let mut ftl = new_ftl(&cfg, logical);
    let mut fx = FtlEffects::default();
    for pass in 0..2 {
        for m in (0..logical).step_by(64) {
            fx.clear();
            ftl.write(m * MAP, 64 * MAP, &mut fx).unwrap();
        }
        let _ = pass;
    }
    let full = ftl.stats();
    ftl.trim(0, logical / 2 * MAP);
    for m in (logical / 2..logical).step_by(64) {
        fx.clear();
        ftl.write(m * MAP, 64 * MAP, &mut fx).unwrap();
    }
    let s = ftl.stats();
    assert!(
        s.slc_written_bytes > full.slc_written_bytes,
        "{full:?} -> {s:?}"
    );
    ftl.check_consistency().unwrap();
}

#[test]
fn slc_parameters_are_checked() {
    let geo = |c: &FtlConfig| c.geometry(DIES, UNIT, 4096 * MAP, 4096);
    let mut c = slc_config(0);
    assert!(geo(&c).unwrap_err().contains("max_free_fraction_ppm"));
    c = slc_config(2_000_000);
    assert!(geo(&c).unwrap_err().contains("max_free_fraction_ppm"));
    c = slc_config(500_000);
    c.slc_cache.as_mut().unwrap().bits_per_cell = 2;
    assert!(geo(&c).unwrap_err().contains("bits_per_cell"));
    c = slc_config(500_000);
    c.slc_cache.as_mut().unwrap().program_ns = 0;
    assert!(geo(&c).unwrap_err().contains("program_ns"));
    c = slc_config(500_000);
    c.slc_cache.as_mut().unwrap().fold = FoldPolicy::Idle;
    assert!(geo(&c).unwrap_err().contains("idle_gc_after_ns"));
    // The profile: bits per cell must match the timing's pages per program.
    let p = Profile::builtin("tiny-ftl").unwrap();
    let err = p
        .with_overrides(&[(
            "namespace.0.ftl.slc_cache".to_string(),
            "{ max_free_fraction_ppm = 1000000, program_ns = 200000, read_ns = 30000 }".to_string(),
        )])
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bits_per_cell") || err.contains("slc_cache"),
        "{err}"
    );
}

/// `tiny-ftl` with a TLC-like one-shot unit (3 pages) and an SLC cache.
fn tiny_slc(rt: &Runtime, fold: &str) -> zns_device::EmulatedConventionalNs {
    let mut o = vec![
        ("timing.pages_per_program", "3"),
        ("timing.read_page_ns", "[40000, 50000, 60000]"),
        ("timing.program_ns", "1500000"),
    ];
    let slc = format!(
        "{{ max_free_fraction_ppm = 1000000, program_ns = 150000, read_ns = 20000, fold = \"{fold}\" }}"
    );
    o.push(("namespace.0.ftl.slc_cache", slc.as_str()));
    if fold == "idle" {
        o.push(("namespace.0.ftl.idle_gc_after_ns", "1000000"));
        o.push(("namespace.0.ftl.idle_gc_free_blocks", "6"));
    }
    let o: Vec<(String, String)> = o
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let profile = Profile::builtin("tiny-ftl")
        .unwrap()
        .with_overrides(&o)
        .unwrap();
    let ctrl = test_ctrl::open(&rt.handle(), profile, StoreKind::Memory, HostStack::Spdk);
    ctrl.conventional(1).unwrap()
}

/// On the device: data written through the SLC cache, folded and GC'd reads
/// back; SLC writes are faster than TLC writes of the full drive; idle
/// folding empties the cache.
#[test]
fn slc_device_reads_back_and_is_faster_while_free() {
    for fold in ["when-full", "idle"] {
        let mut rt = Runtime::new(5);
        let dev = tiny_slc(&rt, fold);
        let cap = dev.capacity_lbas();
        let h = rt.handle();
        let (fresh_ns, full_ns, s_fill, s_end) = rt.block_on(async {
            let mut rng = Rng(11);
            let mut model: HashMap<u64, u8> = HashMap::new();
            let qd1 = |n: u64, tag: u8| {
                let data = vec![tag; (n * 4096) as usize];
                data
            };
            // QD1 4 KiB writes on the empty drive (SLC).
            let t0 = h.now_ns();
            for i in 0..64u64 {
                dev.write(i, &qd1(1, 1), IoFlags::NONE).await.unwrap();
                model.insert(i, 1);
            }
            let fresh_ns = (h.now_ns() - t0) / 64;
            // Fill (sequential) and age (random 32-LBA writes, 2 capacities).
            for k in 0..3 * cap / 32 {
                let lba = if k < cap / 32 {
                    k * 32
                } else {
                    rng.below(cap / 32) * 32
                };
                let tag = (k % 250) as u8 + 2;
                dev.write(lba, &qd1(32, tag), IoFlags::NONE).await.unwrap();
                for l in lba..lba + 32 {
                    model.insert(l, tag);
                }
                if k == cap / 32 {
                    // idle time for the background fold
                    h.sleep(50_000_000).await;
                }
            }
            let s_fill = dev.ftl_stats().unwrap();
            let t0 = h.now_ns();
            for _ in 0..64u64 {
                let lba = rng.below(cap);
                dev.write(lba, &qd1(1, 255), IoFlags::NONE).await.unwrap();
                model.insert(lba, 255);
            }
            let full_ns = (h.now_ns() - t0) / 64;
            let mut buf = vec![0u8; 32 * 4096];
            for lba in (0..cap).step_by(32) {
                dev.read(lba, &mut buf).await.unwrap();
                for l in lba..lba + 32 {
                    let off = ((l - lba) * 4096) as usize;
                    let want = model[&l];
                    assert!(
                        buf[off..off + 4096].iter().all(|&b| b == want),
                        "{fold}: lba {l}"
                    );
                }
            }
            dev.controller().ftl_check(1).unwrap();
            (fresh_ns, full_ns, s_fill, dev.ftl_stats().unwrap())
        });
        assert!(
            s_fill.slc_written_bytes > 0 && s_fill.slc_folds > 0,
            "{fold}: {s_fill:?}"
        );
        assert_eq!(s_end.slc_units, 0, "{fold}: a full drive has no SLC cache");
        assert!(
            fresh_ns < full_ns,
            "{fold}: SLC QD1 write {fresh_ns} ns vs full-drive {full_ns} ns"
        );
    }
}
