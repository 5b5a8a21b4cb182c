//! The FTL's GC modes (`ftl.gc_modes`, docs/ftl.md "GC modes"): under
//! sustained random overwrites of a full device the pools cycle deferred →
//! foreground → background → deferred at the watermarks; deferred GC moves
//! nothing, foreground GC moves its ratio of GC data per host data, the map
//! stays consistent, and bad parameters are rejected with the field named.

use zns_device::ftl::{Ftl, FtlConfig, FtlEffects, GcMode, GcModesConfig, VictimPolicy};

#[path = "support/splitmix.rs"]
mod splitmix;
use splitmix::Rng;

const MAP: u64 = 4096;
/// A program unit of 3 mapping units, 4 dies, superblocks of 4 × 16 units.
const UNIT: u64 = 3 * MAP;
const DIES: u32 = 4;
const LOGICAL: u64 = 24_000;

fn modes() -> GcModesConfig {
    GcModesConfig {
        foreground_free_blocks: 4,
        resume_free_blocks: 20,
        defer_free_blocks: 40,
        foreground_gc_ratio_ppm: 8_000_000,
        background_gc_ratio_high_ppm: 2_500_000,
        background_gc_ratio_low_ppm: 1_500_000,
        background_min_reclaim_ppm: 0,
    }
}

fn config(m: Option<GcModesConfig>) -> FtlConfig {
    FtlConfig {
        overprovisioning_ppm: 600_000,
        map_unit_bytes: MAP,
        units_per_block: 16,
        gc_start_free_blocks: 2,
        gc_stop_free_blocks: 3,
        victim: VictimPolicy::Greedy,
        allocation: Default::default(),
        idle_gc_after_ns: 0,
        idle_gc_free_blocks: 0,
        slc_cache: None,
        gc_modes: m,
    }
}

#[test]
fn gc_modes_cycle_at_the_watermarks() {
    let cfg = config(Some(modes()));
    let geo = cfg.geometry(DIES, UNIT, LOGICAL * MAP, 4096).unwrap();
    let mut ftl = Ftl::new(&cfg, geo);
    let mut fx = FtlEffects::default();
    for m in 0..LOGICAL {
        fx.clear();
        ftl.write(m * MAP, MAP, &mut fx).unwrap();
    }
    let mut rng = Rng(15);
    // Host mapping units and GC-moved bytes written in each mode.
    let (mut host, mut moved) = ([0u64; 3], [0u64; 3]);
    let idx = |m: GcMode| match m {
        GcMode::Deferred => 0,
        GcMode::Background => 1,
        GcMode::Foreground => 2,
    };
    let (mut min_free, mut max_free) = (u32::MAX, 0);
    for _ in 0..8 * LOGICAL {
        let before = ftl.stats().gc_relocated_bytes;
        fx.clear();
        ftl.write(rng.below(LOGICAL) * MAP, MAP, &mut fx).unwrap();
        // The mode the write's GC ran in (a switch comes before the GC).
        let mode = ftl.gc_modes()[0];
        host[idx(mode)] += 1;
        moved[idx(mode)] += ftl.stats().gc_relocated_bytes - before;
        let free = ftl.free_blocks_per_die()[0];
        min_free = min_free.min(free);
        // After the fill's spare has been used up once.
        if ftl.stats().gc_foreground_entries > 0 {
            max_free = max_free.max(free);
        }
    }
    ftl.check_consistency().unwrap();
    let s = ftl.stats();
    assert!(
        s.gc_foreground_entries >= 2 && s.gc_deferred_entries >= 3,
        "cycles: {} foreground, {} deferred entries",
        s.gc_foreground_entries,
        s.gc_deferred_entries
    );
    // Deferred GC moves nothing (the floor at gc_start is never reached).
    assert!(host[0] > 0);
    assert_eq!(moved[0], 0, "GC moved data in deferred mode");
    assert!(min_free >= 3, "the pool fell to {min_free} free units");
    assert!(max_free <= 41, "the pool rose to {max_free} free units");
    // Foreground: 8 GC units per host unit (victims are collected whole,
    // so the stretch is a few victims off).
    let fg = moved[2] as f64 / MAP as f64 / host[2] as f64;
    assert!(
        (fg - 8.0).abs() < 1.0,
        "foreground GC per host unit {fg:.2}"
    );
    // Background: between its ratios.
    let bg = moved[1] as f64 / MAP as f64 / host[1] as f64;
    assert!(
        (1.3..2.8).contains(&bg),
        "background GC per host unit {bg:.2}"
    );
}

/// Foreground and deferred entries after `capacities` × the logical space of
/// random overwrites of a full drive.
fn cycles(m: GcModesConfig, capacities: u64) -> (u64, u64) {
    let cfg = config(Some(m));
    let geo = cfg.geometry(DIES, UNIT, LOGICAL * MAP, 4096).unwrap();
    let mut ftl = Ftl::new(&cfg, geo);
    let mut fx = FtlEffects::default();
    let mut rng = Rng(17);
    for m in 0..LOGICAL {
        fx.clear();
        ftl.write(m * MAP, MAP, &mut fx).unwrap();
    }
    for _ in 0..capacities * LOGICAL {
        fx.clear();
        ftl.write(rng.below(LOGICAL) * MAP, MAP, &mut fx).unwrap();
    }
    ftl.check_consistency().unwrap();
    let s = ftl.stats();
    (s.gc_foreground_entries, s.gc_deferred_entries)
}

#[test]
fn background_min_reclaim_escapes_the_equilibrium() {
    // A background ratio of 0.3 frees less than the host consumes once the
    // victims are a quarter valid: the pool sinks back into foreground GC
    // and never reaches the defer watermark again (one burst: the fill's) ...
    let low = GcModesConfig {
        background_gc_ratio_high_ppm: 300_000,
        background_gc_ratio_low_ppm: 300_000,
        ..modes()
    };
    let (fg, deferred) = cycles(low.clone(), 8);
    assert!(
        fg >= 2 && deferred == 1,
        "without the reclaim floor: {fg} foreground, {deferred} deferred entries"
    );
    // ... unless background GC frees at least 1.1 units per host unit.
    let (fg, deferred) = cycles(
        GcModesConfig {
            background_min_reclaim_ppm: 1_100_000,
            ..low
        },
        8,
    );
    assert!(
        fg >= 2 && deferred >= 3,
        "with it: {fg} foreground, {deferred} deferred entries"
    );
}

#[test]
fn gc_modes_off_keeps_the_watermark_gc() {
    let cfg = config(None);
    let geo = cfg.geometry(DIES, UNIT, LOGICAL * MAP, 4096).unwrap();
    let mut ftl = Ftl::new(&cfg, geo);
    let mut fx = FtlEffects::default();
    let mut rng = Rng(16);
    for m in 0..LOGICAL {
        fx.clear();
        ftl.write(m * MAP, MAP, &mut fx).unwrap();
    }
    for _ in 0..3 * LOGICAL {
        fx.clear();
        ftl.write(rng.below(LOGICAL) * MAP, MAP, &mut fx).unwrap();
    }
    // The fill's spare is used up and GC holds the pool at its watermarks.
    assert!(ftl.free_blocks_per_die()[0] <= 4);
    let s = ftl.stats();
    assert_eq!((s.gc_foreground_entries, s.gc_deferred_entries), (0, 0));
    assert!(ftl.gc_modes().iter().all(|&m| m == GcMode::Background));
}

#[test]
fn gc_modes_parameters_are_checked() {
    let bad = |f: &dyn Fn(&mut GcModesConfig)| {
        let mut m = modes();
        f(&mut m);
        config(Some(m))
            .geometry(DIES, UNIT, LOGICAL * MAP, 4096)
            .unwrap_err()
    };
    let e = bad(&|m| m.resume_free_blocks = 50);
    assert!(
        e.contains("ftl.gc_modes") && e.contains("resume_free_blocks = 50"),
        "{e}"
    );
    let e = bad(&|m| m.foreground_free_blocks = 2);
    assert!(e.contains("foreground_free_blocks = 2"), "{e}");
    let e = bad(&|m| m.defer_free_blocks = 100_000);
    assert!(e.contains("ftl.gc_modes.defer_free_blocks = 100000"), "{e}");
    let e = bad(&|m| m.foreground_gc_ratio_ppm = 0);
    assert!(e.contains("foreground_gc_ratio_ppm = 0"), "{e}");
    let e = bad(&|m| m.background_gc_ratio_low_ppm = 3_000_000);
    assert!(e.contains("background_gc_ratio_low_ppm = 3000000"), "{e}");
    // Unknown keys in the profile are rejected too (serde deny_unknown_fields).
    let toml_err = toml::from_str::<GcModesConfig>(
        "foreground_free_blocks = 4\nresume_free_blocks = 20\ndefer_free_blocks = 40\n\
         foreground_gc_ratio_ppm = 1\nbackground_gc_ratio_high_ppm = 1\n\
         background_gc_ratio_low_ppm = 1\nhysteresis = 3\n",
    )
    .unwrap_err()
    .to_string();
    assert!(toml_err.contains("hysteresis"), "{toml_err}");
}
