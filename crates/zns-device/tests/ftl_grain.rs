//! The coarse map (`Ftl::new`: one entry per 8 mapping units while every
//! write and trim is aligned to 8 units) makes exactly the decisions of the
//! fine map (`Ftl::with_max_grain(.., 1)`): under the same aligned writes,
//! trims and idle GC both produce the same program units, GC work and
//! counters, and place every mapping unit on the same die and offset; after
//! the first unaligned write the coarse map splits (`refine`) and the two
//! stay identical.

use zns_device::ftl::{
    Allocation, DieLoad, Ftl, FtlConfig, FtlEffects, GcModesConfig, VictimPolicy,
};

#[path = "support/splitmix.rs"]
mod splitmix;
use splitmix::Rng;

const MAP: u64 = 4096;
/// A program unit of 8 mapping units (32 KiB): the grain divides it.
const UNIT: u64 = 8 * MAP;
const DIES: u32 = 4;
/// Mapping units of the logical space (a multiple of 8).
const LOGICAL: u64 = 16_384;
const GRAIN: u64 = 8;

fn config(alloc: Allocation, victim: VictimPolicy, modes: bool, idle: bool) -> FtlConfig {
    FtlConfig {
        overprovisioning_ppm: 300_000,
        map_unit_bytes: MAP,
        units_per_block: 8,
        gc_start_free_blocks: 2,
        gc_stop_free_blocks: 3,
        victim,
        allocation: alloc,
        idle_gc_after_ns: if idle { 1_000 } else { 0 },
        idle_gc_free_blocks: if idle { 6 } else { 0 },
        slc_cache: None,
        gc_modes: modes.then_some(GcModesConfig {
            foreground_free_blocks: 4,
            resume_free_blocks: 10,
            defer_free_blocks: 16,
            foreground_gc_ratio_ppm: 6_000_000,
            background_gc_ratio_high_ppm: 2_500_000,
            background_gc_ratio_low_ppm: 1_200_000,
            background_min_reclaim_ppm: 1_050_000,
        }),
    }
}

fn load(rng: &mut Rng) -> DieLoad {
    DieLoad {
        until_ns: (0..DIES).map(|_| rng.below(5_000_000)).collect(),
        program_ns: 2_564_000,
        unit_read_ns: 180_000,
        erase_ns: 3_500_000,
        slc_program_ns: 0,
        slc_read_ns: 0,
    }
}

struct Pair {
    fine: Ftl,
    coarse: Ftl,
    fxf: FtlEffects,
    fxc: FtlEffects,
}

impl Pair {
    fn write(&mut self, off: u64, len: u64, l: DieLoad) {
        self.fxf.clear();
        self.fxc.clear();
        self.fxf.load = l.clone();
        self.fxc.load = l;
        self.fine.write(off, len, &mut self.fxf).unwrap();
        self.coarse.write(off, len, &mut self.fxc).unwrap();
        assert_eq!(
            self.fxf.units, self.fxc.units,
            "program units of {off}+{len}"
        );
        assert_eq!(self.fxf.gc, self.fxc.gc, "GC work of {off}+{len}");
        assert_eq!(self.fxf.load.until_ns, self.fxc.load.until_ns);
    }

    fn same(&self, rng: &mut Rng) {
        assert_eq!(self.fine.stats(), {
            let mut s = self.coarse.stats();
            s.map_resident_bytes = self.fine.stats().map_resident_bytes;
            s
        });
        assert_eq!(self.fine.gc_modes(), self.coarse.gc_modes());
        assert_eq!(
            self.fine.free_blocks_per_die(),
            self.coarse.free_blocks_per_die()
        );
        assert_eq!(
            self.fine.block_erase_counts(),
            self.coarse.block_erase_counts()
        );
        for m in 0..LOGICAL {
            assert_eq!(self.fine.lookup(m), self.coarse.lookup(m), "unit {m}");
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            let off = rng.below(LOGICAL) * MAP;
            let len = (1 + rng.below(64)) * MAP;
            self.fine.places(off, len, &mut a);
            self.coarse.places(off, len, &mut b);
            assert_eq!(a, b, "places of {off}+{len}");
        }
        self.fine.places(0, LOGICAL * MAP, &mut a);
        self.coarse.places(0, LOGICAL * MAP, &mut b);
        assert_eq!(a, b);
        self.fine.check_consistency().unwrap();
        self.coarse.check_consistency().unwrap();
    }
}

fn run(cfg: FtlConfig, seed: u64) {
    let geo = cfg.geometry(DIES, UNIT, LOGICAL * MAP, 4096).unwrap();
    let mut p = Pair {
        fine: Ftl::with_max_grain(&cfg, geo, 1),
        coarse: Ftl::new(&cfg, geo),
        fxf: FtlEffects::default(),
        fxc: FtlEffects::default(),
    };
    assert_eq!(p.fine.grain(), 1);
    assert_eq!(p.coarse.grain(), GRAIN as u32);
    let mut rng = Rng(seed);
    // Sequential fill in 512 KiB writes, then aligned random overwrites
    // (32 KiB .. 512 KiB), trims and idle windows.
    let bs = 128 * MAP;
    for i in 0..LOGICAL * MAP / bs {
        let l = load(&mut rng);
        p.write(i * bs, bs, l);
    }
    p.same(&mut rng);
    let entries = LOGICAL / GRAIN;
    let mut now = 0u64;
    for i in 0..6 * LOGICAL / GRAIN {
        let n = 1 + rng.below(16);
        let e = rng.below(entries - n);
        let l = load(&mut rng);
        if i % 97 == 0 {
            let off = e * GRAIN * MAP;
            let len = n * GRAIN * MAP;
            p.fine.trim(off, len);
            p.coarse.trim(off, len);
        } else if i % 211 == 0 {
            now += 50_000_000;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let ta = p.fine.idle_gc(now, &l, &mut a);
            let tb = p.coarse.idle_gc(now, &l, &mut b);
            assert_eq!((ta, &a), (tb, &b), "idle GC");
        } else {
            p.write(e * GRAIN * MAP, n * GRAIN * MAP, l);
        }
        now += 1_000;
        p.fine.note_done(now);
        p.coarse.note_done(now);
    }
    p.same(&mut rng);
    assert_eq!(p.coarse.grain(), GRAIN as u32);
    assert!(p.fine.stats().gc_victims > 100, "{:?}", p.fine.stats());
    // A 4 KiB write splits the coarse map; both go on identically.
    let l = load(&mut rng);
    p.write(12_345 * MAP, MAP, l);
    assert_eq!(p.coarse.grain(), 1);
    p.same(&mut rng);
    for _ in 0..2 * LOGICAL {
        let m = rng.below(LOGICAL - 3);
        let l = load(&mut rng);
        p.write(m * MAP + 512, MAP, l);
    }
    p.same(&mut rng);
}

#[test]
fn coarse_map_decides_as_the_fine_map_superblocks() {
    for (modes, idle) in [(false, false), (true, false), (false, true)] {
        run(
            config(Allocation::Superblock, VictimPolicy::Greedy, modes, idle),
            7,
        );
    }
    run(
        config(
            Allocation::Superblock,
            VictimPolicy::CostBenefit,
            true,
            false,
        ),
        8,
    );
}

#[test]
fn coarse_map_decides_as_the_fine_map_per_die() {
    run(
        config(Allocation::PerDie, VictimPolicy::Greedy, false, false),
        9,
    );
    run(
        config(Allocation::PerDie, VictimPolicy::CostBenefit, true, true),
        10,
    );
}

#[test]
fn an_unaligned_trim_splits_the_map() {
    let cfg = config(Allocation::Superblock, VictimPolicy::Greedy, false, false);
    let geo = cfg.geometry(DIES, UNIT, LOGICAL * MAP, 4096).unwrap();
    let mut fine = Ftl::with_max_grain(&cfg, geo, 1);
    let mut coarse = Ftl::new(&cfg, geo);
    let mut fx = FtlEffects::default();
    for f in [&mut fine, &mut coarse] {
        fx.clear();
        f.write(0, LOGICAL * MAP, &mut fx).unwrap();
        f.trim(3 * MAP, 10 * MAP);
    }
    assert_eq!(coarse.grain(), 1);
    assert_eq!(fine.stats(), coarse.stats());
    for m in 0..LOGICAL {
        assert_eq!(fine.lookup(m), coarse.lookup(m));
    }
    coarse.check_consistency().unwrap();
}
