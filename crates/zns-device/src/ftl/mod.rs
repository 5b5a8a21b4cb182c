//! A page-mapped flash translation layer (FTL): what turns a conventional
//! namespace into a block-interface SSD with device-side garbage collection
//! (profile `sn540`, the block-firmware twin of the ZN540). Design, parameters
//! and validation: `docs/ftl.md`.
//!
//! * **Geometry.** The flash of the timing model (`dies`, program unit =
//!   planes × page × pages per program) is cut into erase blocks of
//!   `units_per_block` program units per die. A mapping unit (`map_unit_bytes`,
//!   4 KiB by default) is one slot; a program unit holds `slots_per_unit`
//!   slots. `blocks_per_die` follows from the logical capacity and the
//!   overprovisioning ρ = (physical − logical) / logical.
//! * **Map.** L2P: one `u32` per mapping unit, in segments of 2^16 entries
//!   allocated when first written. P2L: one `u32` per slot, per block,
//!   allocated when the block is first opened. A full 960 GB device at 4 KiB
//!   holds 234 M + 268 M entries (about 2.0 GB); a run that touches 10 GiB
//!   holds about 23 MB.
//! * **Erase units.** With superblocks (the default, `allocation`) an erase
//!   unit is the block of the same index on every die; with per-die
//!   allocation it is one block. The units of one die (per-die) or of all
//!   dies (superblocks) form a *pool*: its free list, open host and GC units
//!   and closed units bucketed by valid count.
//! * **Write frontier.** The pool's open host unit takes host data one
//!   program unit at a time on one die, then the next die (round robin, or
//!   the least busy die given `DieLoad`; with superblocks only dies with room
//!   in the open superblock), so a large write is striped over the dies unit
//!   by unit and every completed unit is one program on its die.
//! * **GC.** Per pool: when it needs a new unit and has fewer than
//!   `gc_start_free_blocks` free units, it collects victims until it has
//!   `gc_stop_free_blocks`. The victim is the closed unit with the fewest
//!   valid slots (`greedy`) or the largest (1 − u) · age / (1 + u)
//!   (`cost-benefit`, u = valid fraction, age = slots written device-wide
//!   since the unit was closed), or the oldest closed unit with an invalid
//!   slot (`fifo`). Valid slots move to the pool's GC unit; the
//!   victim is erased and freed. Each victim is one `GcWork` per die for the
//!   timing model (reads, programs, erase on that die, competing with host
//!   I/O); with superblocks the relocation is paced: a slice with each host
//!   program unit (`pay_debt`).
//! * **GC modes** (optional, `gc_modes`): free-unit watermarks with
//!   hysteresis switch each pool between deferred GC (none: the host spends
//!   the free pool at full speed), foreground GC (a fixed GC:host ratio, a
//!   stall) and background GC (a ratio falling as the pool refills); the
//!   ratio is earned as credit per host program unit and sets the minimum
//!   debt paid per host unit (`gc_step`).
//! * **TRIM** unmaps: the slots become invalid, like overwritten ones.
//! * **SLC cache** (optional, `slc_cache`): new host units are opened in SLC
//!   mode (1 / bits per cell of the slots, smaller program units with their
//!   own program and read times) while their footprint fits a share of the
//!   free user space; folding relocates the oldest SLC unit into the TLC GC
//!   unit (forced when the drive fills, or at idle).
//!
//! Invariants (checked by `check_consistency`, property-tested): every mapped
//! mapping unit points at a slot whose P2L entry points back at it; every
//! slot is referenced by at most one mapping unit; a block's valid count is
//! the number of such slots in it; free blocks hold no valid slot.
//!
//! Everything is integer arithmetic on the FTL's own counters: no clock, no
//! randomness, so the same commands give the same placement.
//!
//! Files: `config` holds the `[namespace.ftl]` parameters, their checks and
//! the geometry they derive; `report` what the FTL reports (counters, the
//! die work a write hands the timing model); `unit` the erase units and
//! their pools; `map` the L2P and P2L tables; `debt` the superblocks' paced
//! GC; this module the FTL itself (placement, frontier, GC, SLC cache).

use std::collections::VecDeque;

mod config;
mod debt;
mod map;
mod report;
mod unit;

pub use config::{
    Allocation, FoldPolicy, FtlConfig, FtlGeometry, GcMode, GcModesConfig, SlcCacheConfig,
    VictimPolicy,
};
pub use report::{DieLoad, FtlEffects, FtlStats, GcWork};

use config::PPM;
use debt::GcDebt;
use map::{PageMap, NONE};
use unit::{BlockState, Open, Pool, Unit};

/// Largest number of mapping units one map entry holds while writes are
/// aligned (`Ftl::new`).
pub const MAX_GRAIN: u32 = 8;

/// The FTL of one namespace.
#[derive(Debug)]
pub struct Ftl {
    cfg: FtlConfig,
    /// The geometry the map works in: `view` with `grain` mapping units
    /// per entry (slots, units and bytes per entry scaled by `grain`).
    geo: FtlGeometry,
    /// The geometry users see (mapping units of `map_unit_bytes`).
    view: FtlGeometry,
    /// Mapping units per map entry: > 1 while every write and trim so far
    /// was aligned to whole entries (a coarse map, exactly equivalent, see
    /// `Ftl::new`); 1 once one was not (`refine`).
    grain: u32,
    /// Slots per block.
    spb: u32,
    /// Dies per erase unit (1, or all dies for superblocks).
    group: u32,
    /// The L2P and the P2L.
    map: PageMap,
    /// Per unit (pool-major).
    units: Vec<Unit>,
    pools: Vec<Pool>,
    /// Die that takes the next host program unit.
    host_die: u32,
    /// Slots written device-wide (host + GC): the age clock.
    seq: u64,
    stats: FtlStats,
    /// Per member die of the victim being collected (scratch).
    gc_scratch: Vec<GcWork>,
    /// Superblocks: GC die work done in the map but not yet handed to the
    /// timing model, per die; paid a slice per host program unit.
    debt: GcDebt,
    /// Collecting at idle: GC work goes to the timing model at once.
    idle: bool,
    /// Latest completion time of a command to the namespace (idle GC).
    busy_until_ns: u64,
    /// Closed SLC-mode units, oldest first (the fold order).
    slc_closed: VecDeque<u32>,
    /// Units in SLC mode (open or closed).
    slc_units: u64,
    /// The cache ran out (no room for a new SLC unit): host data goes to
    /// TLC until the cache has been emptied (folded at idle, or forced).
    slc_exhausted: bool,
    /// Scratch effects of `write_untimed` (discarded).
    untimed_fx: FtlEffects,
}

impl Ftl {
    /// A fresh (empty, every block free) FTL.
    ///
    /// While every write and trim is aligned to `MAX_GRAIN` mapping units
    /// (32 KiB at 4 KiB) the map keeps one entry per `MAX_GRAIN` units
    /// (if that divides the program unit and the logical space; no SLC
    /// cache): every decision is the one the fine map makes (the units of
    /// an aligned entry are written, invalidated, moved and read together,
    /// in consecutive slots; valid counts, GC credit and the age clock all
    /// scale by the grain), at an eighth of the work and memory. The first
    /// write or trim that is not aligned splits the map into mapping units
    /// (`refine`, O(map)). `tests/ftl_grain.rs` checks the equivalence.
    pub fn new(cfg: &FtlConfig, geo: FtlGeometry) -> Ftl {
        Ftl::with_max_grain(cfg, geo, MAX_GRAIN)
    }

    /// [`Ftl::new`] with map entries of at most `max_grain` mapping units
    /// (1: a fine map from the start).
    pub fn with_max_grain(cfg: &FtlConfig, view: FtlGeometry, max_grain: u32) -> Ftl {
        let mut grain = 1u32;
        if cfg.slc_cache.is_none() {
            while grain < max_grain
                && view.slots_per_unit % (grain * 2) == 0
                && view.logical_units % u64::from(grain * 2) == 0
            {
                grain *= 2;
            }
        }
        let geo = FtlGeometry {
            slots_per_unit: view.slots_per_unit / grain,
            map_unit_bytes: view.map_unit_bytes * u64::from(grain),
            logical_units: view.logical_units / u64::from(grain),
            physical_slots: view.physical_slots / u64::from(grain),
            ..view
        };
        let spb = geo.slots_per_block();
        let group = geo.dies_per_unit;
        let bpd = geo.blocks_per_die;
        let npools = geo.dies / group;
        let nblocks = geo.dies as usize * bpd as usize;
        let units = vec![Unit::FREE; npools as usize * bpd as usize];
        let pools = (0..npools)
            .map(|p| Pool::new(p * bpd, bpd, (spb * group) as usize + 1))
            .collect();
        Ftl {
            cfg: cfg.clone(),
            geo,
            view,
            grain,
            spb,
            group,
            map: PageMap::new(geo.logical_units, nblocks),
            units,
            pools,
            host_die: 0,
            seq: 0,
            stats: FtlStats::default(),
            gc_scratch: Vec::new(),
            debt: GcDebt::new(geo.dies),
            idle: false,
            busy_until_ns: 0,
            slc_closed: VecDeque::new(),
            slc_units: 0,
            slc_exhausted: false,
            untimed_fx: FtlEffects::default(),
        }
    }

    pub fn geometry(&self) -> &FtlGeometry {
        &self.view
    }

    /// Mapping units per map entry now (see [`Ftl::new`]).
    pub fn grain(&self) -> u32 {
        self.grain
    }

    pub fn config(&self) -> &FtlConfig {
        &self.cfg
    }

    /// Counters (WAF, GC, wear, map memory).
    pub fn stats(&self) -> FtlStats {
        let mut s = self.stats;
        s.max_block_erases = self.units.iter().map(|u| u.erases).max().unwrap_or(0);
        s.map_resident_bytes = self.map.resident_entries(self.spb) * 4;
        s.mapped_units *= u64::from(self.grain);
        s.slc_units = self.slc_units;
        s
    }

    /// Erase count of every block (die-major order).
    pub fn block_erase_counts(&self) -> Vec<u32> {
        (0..self.map.blocks() as u32)
            .map(|b| self.units[self.unit_of_block(b) as usize].erases)
            .collect()
    }

    /// Free blocks of each die.
    pub fn free_blocks_per_die(&self) -> Vec<u32> {
        (0..self.geo.dies)
            .map(|d| self.pools[(d / self.group) as usize].free.len() as u32)
            .collect()
    }

    // ------------------------------------------------------------ addressing

    #[inline]
    fn block_of(&self, slot: u32) -> u32 {
        slot / self.spb
    }

    #[inline]
    fn die_of_block(&self, block: u32) -> u32 {
        block / self.geo.blocks_per_die
    }

    /// The erase unit a block belongs to.
    #[inline]
    fn unit_of_block(&self, block: u32) -> u32 {
        let bpd = self.geo.blocks_per_die;
        (block / bpd / self.group) * bpd + block % bpd
    }

    #[inline]
    fn pool_of_unit(&self, unit: u32) -> u32 {
        unit / self.geo.blocks_per_die
    }

    /// The block of `unit` on its pool's member die `k`.
    #[inline]
    fn block_in_unit(&self, unit: u32, k: u32) -> u32 {
        let bpd = self.geo.blocks_per_die;
        let die = (unit / bpd) * self.group + k;
        die * bpd + unit % bpd
    }

    /// The mapping-unit range `[first, end)` covering bytes `[off, off + len)`.
    pub fn unit_range(&self, off_bytes: u64, len_bytes: u64) -> (u64, u64) {
        let mu = self.view.map_unit_bytes;
        let first = off_bytes / mu;
        let end = off_bytes.saturating_add(len_bytes).div_ceil(mu);
        (first, end.min(self.view.logical_units))
    }

    /// The map-entry range `[first, end)` covering bytes `[off, off + len)`.
    fn entry_range(&self, off_bytes: u64, len_bytes: u64) -> (u64, u64) {
        let mu = self.geo.map_unit_bytes;
        let first = off_bytes / mu;
        let end = off_bytes.saturating_add(len_bytes).div_ceil(mu);
        (first, end.min(self.geo.logical_units))
    }

    /// The slot mapping unit `m` is stored in, if mapped (slots counted in
    /// mapping units, whatever the grain).
    #[inline]
    pub fn lookup(&self, m: u64) -> Option<u32> {
        let g = u64::from(self.grain);
        self.map
            .entry(m / g)
            .map(|s| s * self.grain + (m % g) as u32)
    }

    /// Whether the mapping units `[first, end)` are whole map entries.
    #[inline]
    fn aligned(&self, first: u64, end: u64) -> bool {
        let g = u64::from(self.grain);
        first >= end || (first % g == 0 && end % g == 0)
    }

    /// Splits a coarse map (grain > 1) into one entry per mapping unit:
    /// the L2P, P2L, valid counts, bucket lists, open units and GC credit
    /// scaled by the grain (the age clock already counts mapping units).
    fn refine(&mut self) {
        let k = self.grain;
        if k == 1 {
            return;
        }
        let ku = k as usize;
        self.map.refine(k, self.view.logical_units);
        for u in self.units.iter_mut() {
            u.valid *= k;
        }
        for pool in self.pools.iter_mut() {
            let mut buckets = vec![NONE; pool.buckets.len() * ku - ku + 1];
            for (v, &h) in pool.buckets.iter().enumerate() {
                buckets[v * ku] = h;
            }
            pool.buckets = buckets;
            pool.min_bucket *= k;
            pool.credit_ppm *= i64::from(k);
            for o in [pool.host.as_mut(), pool.gc.as_mut()].into_iter().flatten() {
                for n in o.next.iter_mut() {
                    *n *= k;
                }
                o.cap *= k;
                o.spu *= k;
            }
        }
        self.stats.mapped_units *= u64::from(k);
        self.geo = self.view;
        self.spb = self.geo.slots_per_block();
        self.grain = 1;
    }

    /// Whether the block of `slot` is programmed in SLC mode.
    #[inline]
    fn slot_is_slc(&self, slot: u32) -> bool {
        self.units[self.unit_of_block(self.block_of(slot)) as usize].slc
    }

    /// Slots per program unit of a block in SLC mode or not.
    #[inline]
    fn spu_of(&self, slc: bool) -> u32 {
        if slc {
            self.geo.slc_slots_per_unit
        } else {
            self.geo.slots_per_unit
        }
    }

    /// Die, offset inside its program unit (bytes) of a slot (counted in
    /// mapping units, as `lookup` gives it).
    #[inline]
    pub fn place_of(&self, slot: u32) -> (u32, u64) {
        let entry = slot / self.grain;
        let block = self.block_of(entry);
        let in_block = slot % (self.spb * self.grain);
        let in_unit = in_block % (self.spu_of(self.slot_is_slc(entry)) * self.grain);
        (
            self.die_of_block(block),
            u64::from(in_unit) * self.view.map_unit_bytes,
        )
    }

    // ------------------------------------------------------------ bucket lists

    fn bucket_insert(&mut self, u: u32) {
        let pool = self.pool_of_unit(u) as usize;
        let v = self.units[u as usize].valid;
        let head = self.pools[pool].buckets[v as usize];
        self.units[u as usize].prev = NONE;
        self.units[u as usize].next = head;
        if head != NONE {
            self.units[head as usize].prev = u;
        }
        self.pools[pool].buckets[v as usize] = u;
        if v < self.pools[pool].min_bucket {
            self.pools[pool].min_bucket = v;
        }
    }

    fn bucket_remove(&mut self, u: u32) {
        let pool = self.pool_of_unit(u) as usize;
        let Unit {
            prev, next, valid, ..
        } = self.units[u as usize];
        if prev != NONE {
            self.units[prev as usize].next = next;
        } else {
            self.pools[pool].buckets[valid as usize] = next;
        }
        if next != NONE {
            self.units[next as usize].prev = prev;
        }
        self.units[u as usize].prev = NONE;
        self.units[u as usize].next = NONE;
    }

    // ------------------------------------------------------------ slots

    /// Marks `slot` invalid (its data was overwritten, trimmed or moved).
    fn invalidate(&mut self, slot: u32) {
        let b = self.block_of(slot);
        self.map.set_owner(b, slot % self.spb, NONE);
        let u = self.unit_of_block(b);
        let closed = self.in_buckets(u);
        if closed {
            self.bucket_remove(u);
        }
        let unit = &mut self.units[u as usize];
        unit.valid = unit.valid.saturating_sub(1);
        if closed {
            self.bucket_insert(u);
        }
    }

    /// Whether unit `u` is in its pool's bucket lists (closed, TLC).
    #[inline]
    fn in_buckets(&self, u: u32) -> bool {
        let unit = &self.units[u as usize];
        unit.state == BlockState::Closed && !unit.slc
    }

    /// Opens a free unit of `pool` (the P2L of its blocks allocated on
    /// first use), in SLC mode if `slc`; `reuse` gives back the `next`
    /// vector of a closed one.
    fn open_unit(&mut self, pool: u32, reuse: Option<Vec<u32>>, slc: bool) -> Option<Open> {
        let u = self.pools[pool as usize].free.pop_back()?;
        for k in 0..self.group {
            let b = self.block_in_unit(u, k);
            self.map.open_block(b, self.spb);
        }
        let unit = &mut self.units[u as usize];
        unit.state = BlockState::Open;
        unit.valid = 0;
        unit.slc = slc;
        if slc {
            self.slc_units += 1;
        }
        let mut next = reuse.unwrap_or_default();
        next.clear();
        next.resize(self.group as usize, 0);
        let spu = self.spu_of(slc);
        Some(Open {
            unit: u,
            next,
            cursor: 0,
            cap: self.spb / self.geo.slots_per_unit * spu,
            spu,
        })
    }

    fn close_unit(&mut self, u: u32) {
        self.units[u as usize].state = BlockState::Closed;
        self.units[u as usize].closed_seq = self.seq;
        if self.units[u as usize].slc {
            self.slc_closed.push_back(u);
        } else {
            self.bucket_insert(u);
        }
    }

    /// Stores mapping unit `m` in the next slot of member die `k` of `o`;
    /// returns whether it completed a program unit.
    fn put(&mut self, o: &mut Open, k: u32, m: u64) -> bool {
        let b = self.block_in_unit(o.unit, k);
        let off = o.next[k as usize];
        let slot = b * self.spb + off;
        self.map.set_owner(b, off, m as u32);
        self.units[o.unit as usize].valid += 1;
        self.map.set(m, slot);
        o.next[k as usize] = off + 1;
        // The age clock counts mapping units, whatever the grain.
        self.seq += u64::from(self.grain);
        (off + 1) % o.spu == 0
    }

    // ------------------------------------------------------------ GC

    /// The victim of `pool` under the configured policy (a closed unit with
    /// at least one invalid slot), if any.
    fn pick_victim(&mut self, pool: u32) -> Option<u32> {
        let full = self.spb * self.group;
        match self.cfg.victim {
            VictimPolicy::Greedy => {
                let p = &mut self.pools[pool as usize];
                let mut v = p.min_bucket;
                while v < full {
                    if p.buckets[v as usize] != NONE {
                        p.min_bucket = v;
                        return Some(p.buckets[v as usize]);
                    }
                    v += 1;
                }
                p.min_bucket = full;
                None
            }
            VictimPolicy::CostBenefit => {
                let first = pool * self.geo.blocks_per_die;
                let mut best: Option<(u32, u64, u64)> = None; // unit, (1-u)*age, (1+u) scaled
                for u in first..first + self.geo.blocks_per_die {
                    let unit = &self.units[u as usize];
                    if unit.state != BlockState::Closed || unit.slc || unit.valid >= full {
                        continue;
                    }
                    let age = self.seq.saturating_sub(unit.closed_seq) + 1;
                    let num = u64::from(full - unit.valid) * age;
                    let den = u64::from(full + unit.valid);
                    let better = match best {
                        None => true,
                        Some((_, bn, bd)) => {
                            u128::from(num) * u128::from(bd) > u128::from(bn) * u128::from(den)
                        }
                    };
                    if better {
                        best = Some((u, num, den));
                    }
                }
                best.map(|(u, _, _)| u)
            }
            VictimPolicy::Fifo => {
                let first = pool * self.geo.blocks_per_die;
                (first..first + self.geo.blocks_per_die)
                    .filter(|&u| {
                        let unit = &self.units[u as usize];
                        unit.state == BlockState::Closed && !unit.slc && unit.valid < full
                    })
                    .min_by_key(|&u| self.units[u as usize].closed_seq)
            }
        }
    }

    /// Moves mapping unit `m` into the GC unit of `pool` (a new one opened
    /// when it is full); counts completed programs in `work` (per member
    /// die). False if no unit can be opened (cannot happen: room is checked).
    fn gc_put(&mut self, pool: u32, m: u64, work: &mut [GcWork]) -> bool {
        let mut o = match self.pools[pool as usize].gc.take() {
            Some(o) if o.has_room() => o,
            other => {
                let reuse = other.map(|full| {
                    self.close_unit(full.unit);
                    full.next
                });
                match self.open_unit(pool, reuse, false) {
                    Some(o) => o,
                    None => return false,
                }
            }
        };
        let g = self.group;
        let mut k = o.cursor;
        while o.next[k as usize] >= o.cap {
            k = (k + 1) % g;
        }
        if self.put(&mut o, k, m) {
            work[k as usize].program_units += 1;
            o.cursor = (k + 1) % g;
        } else {
            o.cursor = k;
        }
        self.pools[pool as usize].gc = Some(o);
        true
    }

    /// Collects one victim of `pool`; false if nothing can be collected.
    fn collect_one(&mut self, pool: u32, out: &mut Vec<GcWork>) -> bool {
        let Some(victim) = self.pick_victim(pool) else {
            return false;
        };
        self.relocate(pool, victim, out)
    }

    /// Folds the oldest SLC unit (of `pool`, or of any pool if None): its
    /// valid data moves to its pool's TLC GC unit, it is erased and freed.
    /// False if there is none or no room.
    fn fold_one(&mut self, pool: Option<u32>, out: &mut Vec<GcWork>) -> bool {
        let pos = self
            .slc_closed
            .iter()
            .position(|&u| pool.map_or(true, |p| self.pool_of_unit(u) == p));
        let Some(victim) = pos.map(|i| self.slc_closed[i]) else {
            return false;
        };
        let vpool = self.pool_of_unit(victim);
        let valid = self.units[victim as usize].valid;
        let before = self.stats.gc_relocated_bytes;
        if !self.relocate(vpool, victim, out) {
            return false;
        }
        if let Some(i) = pos {
            self.slc_closed.remove(i);
        }
        self.stats.slc_folds += 1;
        self.stats.slc_folded_bytes += self.stats.gc_relocated_bytes - before;
        debug_assert_eq!(
            self.stats.gc_relocated_bytes - before,
            u64::from(valid) * self.geo.map_unit_bytes
        );
        true
    }

    /// Physical footprint (slots, as TLC capacity) the SLC units may have
    /// now: a share of the free user space (logical units not mapped).
    fn slc_allowance_slots(&self) -> u64 {
        let Some(c) = &self.cfg.slc_cache else {
            return 0;
        };
        let free_user = self
            .geo
            .logical_units
            .saturating_sub(self.stats.mapped_units);
        (u128::from(free_user) * u128::from(c.max_free_fraction_ppm) / u128::from(PPM)) as u64
    }

    /// Physical slots of one erase unit.
    #[inline]
    fn unit_slots(&self) -> u64 {
        u64::from(self.spb) * u64::from(self.group)
    }

    /// Forced folding: while the SLC units' footprint exceeds the allowance
    /// (the drive filled up), fold the oldest.
    fn maybe_fold(&mut self, out: &mut Vec<GcWork>) {
        if self.cfg.slc_cache.is_none() {
            return;
        }
        let allowed = self.slc_allowance_slots();
        while self.slc_units * self.unit_slots() > allowed {
            if !self.fold_one(None, out) {
                break;
            }
        }
    }

    /// Whether a new host unit may be opened in SLC mode: the cache has
    /// room for it and has not run out since it was last empty (a drive
    /// whose cache is full writes TLC directly rather than folding to make
    /// room, until the cache has been folded away).
    fn slc_may_open(&mut self) -> bool {
        if self.cfg.slc_cache.is_none() {
            return false;
        }
        if self.slc_exhausted && self.slc_units == 0 {
            self.slc_exhausted = false;
        }
        let room = (self.slc_units + 1) * self.unit_slots() <= self.slc_allowance_slots();
        if !room {
            self.slc_exhausted = true;
        }
        room && !self.slc_exhausted
    }

    /// Moves the valid data of `victim` (a closed unit of `pool`, TLC or
    /// SLC) to the pool's GC unit, erases and frees it; false if there is
    /// no room.
    fn relocate(&mut self, pool: u32, victim: u32, out: &mut Vec<GcWork>) -> bool {
        let valid = u64::from(self.units[victim as usize].valid);
        // Room for the valid slots: the GC unit's rest plus free units. A
        // victim holds fewer than a unit of valid slots, so collecting it
        // never lowers the free count.
        let spb = self.spb;
        let gc_room: u64 = self.pools[pool as usize].gc.as_ref().map_or(0, |o| {
            o.next.iter().map(|&n| u64::from(spb - n.min(spb))).sum()
        });
        let free = self.pools[pool as usize].free.len() as u64;
        if gc_room + free * u64::from(spb) * u64::from(self.group) < valid {
            return false;
        }
        let slc = self.units[victim as usize].slc;
        if !slc {
            self.bucket_remove(victim);
        }
        let g = self.group;
        let first_die = pool * g;
        let mut work = std::mem::take(&mut self.gc_scratch);
        work.clear();
        work.extend((0..g).map(|k| GcWork {
            die: first_die + k,
            read_units: 0,
            bytes: 0,
            program_units: 0,
            erases: 1,
            slc_read_units: 0,
        }));
        let spu = self.spu_of(slc);
        let mut moved = 0u64;
        for k in 0..g {
            let b = self.block_in_unit(victim, k);
            let p2l = self.map.take_block(b);
            if let Some(p2l) = &p2l {
                let mut unit_has_valid = false;
                for (i, &m) in p2l.iter().enumerate() {
                    if i as u32 % spu == 0 {
                        unit_has_valid = false;
                    }
                    if m == NONE {
                        continue;
                    }
                    if !unit_has_valid {
                        unit_has_valid = true;
                        if slc {
                            work[k as usize].slc_read_units += 1;
                        } else {
                            work[k as usize].read_units += 1;
                        }
                    }
                    if !self.gc_put(pool, u64::from(m), &mut work) {
                        break; // cannot happen: room was checked
                    }
                    work[k as usize].bytes += self.geo.map_unit_bytes;
                    moved += 1;
                }
            }
            // Erased (its P2L buffer is kept for reuse).
            self.map.erased_block(b, p2l);
        }
        let unit = &mut self.units[victim as usize];
        unit.valid = 0;
        unit.erases += 1;
        unit.state = BlockState::Free;
        unit.slc = false;
        if slc {
            self.slc_units -= 1;
        }
        self.pools[pool as usize].free.push_front(victim);
        let bytes = moved * self.geo.map_unit_bytes;
        self.stats.gc_relocated_bytes += bytes;
        self.stats.flash_bytes_written += bytes;
        self.stats.erases += u64::from(g);
        self.stats.gc_victims += 1;
        self.account_gc(&work, out);
        self.gc_scratch = work;
        true
    }

    /// Hands a victim's die work to the timing model: at once with per-die
    /// blocks (the host steers around the busy die); with superblocks the
    /// erases at once and the relocation as a debt paid over the next
    /// superblock of host data (`pay_debt`), as firmware interleaves GC
    /// with host writes — otherwise every die would stall the host for the
    /// whole superblock's relocation.
    fn account_gc(&mut self, work: &[GcWork], out: &mut Vec<GcWork>) {
        if self.group == 1 || self.idle {
            out.extend_from_slice(work);
            return;
        }
        let upb = u64::from(self.geo.units_per_block);
        for w in work {
            self.debt.add(w, upb);
            out.push(GcWork {
                die: w.die,
                erases: w.erases,
                ..GcWork::default()
            });
        }
    }

    /// One slice of die `die`'s GC debt (superblocks), if it has any: at
    /// least the pool's GC pace.
    fn pay_debt(&mut self, die: u32) -> Option<GcWork> {
        let pace = self.pools[(die / self.group) as usize].pace_units;
        self.debt.pay(die, pace)
    }

    /// GC on `pool` when its free units are below the start watermark,
    /// until it reaches the stop watermark or nothing more can be collected.
    fn maybe_collect(&mut self, pool: u32, out: &mut Vec<GcWork>) {
        if self.pools[pool as usize].free.len() >= self.cfg.gc_start_free_blocks as usize {
            return;
        }
        // Bounded: each victim frees a unit or the loop ends.
        let mut budget = self.geo.blocks_per_die as usize;
        while self.pools[pool as usize].free.len() < self.cfg.gc_stop_free_blocks as usize
            && budget > 0
        {
            // No TLC victim (or no room): fold SLC data instead.
            if !self.collect_one(pool, out) && !self.fold_one(Some(pool), out) {
                break;
            }
            budget -= 1;
        }
    }

    /// `gc_modes`: after a host program unit of `pool`, switch the pool's
    /// mode at the watermarks (hysteresis: deferred GC runs down to the
    /// foreground watermark, foreground GC up to the resume one), earn GC
    /// credit at the mode's ratio and collect victims while it lasts.
    fn gc_step(&mut self, pool: u32, out: &mut Vec<GcWork>) {
        let Some(m) = &self.cfg.gc_modes else {
            return;
        };
        let p = &mut self.pools[pool as usize];
        let free = p.free.len() as u64;
        let next = match p.mode {
            GcMode::Deferred if free < u64::from(m.foreground_free_blocks) => GcMode::Foreground,
            GcMode::Foreground if free >= u64::from(m.resume_free_blocks) => GcMode::Background,
            GcMode::Background if free >= u64::from(m.defer_free_blocks) => GcMode::Deferred,
            GcMode::Background if free < u64::from(m.foreground_free_blocks) => GcMode::Foreground,
            same => same,
        };
        if next != p.mode {
            p.mode = next;
            match next {
                GcMode::Foreground => self.stats.gc_foreground_entries += 1,
                GcMode::Deferred => self.stats.gc_deferred_entries += 1,
                GcMode::Background => {}
            }
        }
        let victim = if next == GcMode::Background && m.background_min_reclaim_ppm > 0 {
            let all = u64::from(self.spb) * u64::from(self.group);
            self.pick_victim(pool)
                .map(|v| (u64::from(self.units[v as usize].valid), all))
        } else {
            None
        };
        let Some(m) = &self.cfg.gc_modes else {
            return;
        };
        let ratio = m.ratio_ppm(next, free, victim);
        let spu = i64::from(self.geo.slots_per_unit);
        // At most one erase unit's worth of credit is banked.
        let cap = i64::from(self.spb) * i64::from(self.group) * PPM as i64;
        let p = &mut self.pools[pool as usize];
        p.pace_units = ratio.div_ceil(PPM);
        p.credit_ppm = if next == GcMode::Deferred {
            0
        } else {
            (p.credit_ppm + ratio as i64 * spu).min(cap)
        };
        let mut budget = self.geo.blocks_per_die as usize;
        while self.pools[pool as usize].credit_ppm > 0 && budget > 0 {
            let before = self.stats.gc_relocated_bytes;
            if !self.collect_one(pool, out) {
                break;
            }
            let moved = ((self.stats.gc_relocated_bytes - before) / self.geo.map_unit_bytes) as i64;
            self.pools[pool as usize].credit_ppm -= moved * PPM as i64;
            budget -= 1;
        }
    }

    /// The GC mode of each pool (`gc_modes`; Background without it).
    pub fn gc_modes(&self) -> Vec<GcMode> {
        self.pools.iter().map(|p| p.mode).collect()
    }

    /// Whether die `d` can take host data without opening a new unit.
    #[inline]
    fn host_room_on(&self, d: u32) -> bool {
        // An erase unit is one die's block or a block of every die: one
        // pool per die, or one pool (no division on this hot path).
        let (pool, k) = if self.group == 1 { (d, 0) } else { (0, d) };
        debug_assert!(self.group == 1 || self.group == self.geo.dies);
        let o = &self.pools[pool as usize].host;
        o.as_ref().is_some_and(|o| o.next[k as usize] < o.cap)
    }

    /// The die that takes the next host data: the current one if its pool's
    /// open unit has room there; with superblocks another die of the open
    /// superblock; else a new unit of its pool (GC first if the pool is low
    /// on free units); a pool with no room is skipped. None only if no die
    /// can take data.
    fn host_frontier(&mut self, gc: &mut Vec<GcWork>) -> Option<u32> {
        let g = self.group;
        for _ in 0..self.geo.dies {
            let d = self.host_die;
            if self.host_room_on(d) {
                return Some(d);
            }
            let pool = d / g;
            let open_has_room = self.pools[pool as usize]
                .host
                .as_ref()
                .is_some_and(|o| o.has_room());
            if open_has_room {
                // Superblock: another member die still has room.
                let k = d % g;
                let next = (1..g)
                    .map(|i| pool * g + (k + i) % g)
                    .find(|&e| self.host_room_on(e));
                if let Some(e) = next {
                    self.host_die = e;
                    return Some(e);
                }
            }
            let reuse = self.pools[pool as usize].host.take().map(|full| {
                self.close_unit(full.unit);
                full.next
            });
            self.maybe_fold(gc);
            self.maybe_collect(pool, gc);
            let slc = self.slc_may_open();
            if let Some(o) = self.open_unit(pool, reuse, slc) {
                self.pools[pool as usize].host = Some(o);
                return Some(d);
            }
            self.host_die = (pool * g + g) % self.geo.dies;
        }
        None
    }

    /// The die after `die` takes the next host unit: the next one in round
    /// robin, or with die loads the one whose queue ends first (ties: round
    /// robin order), whose load then grows by one program. With superblocks
    /// only the dies with room in the open superblock are candidates (all of
    /// them once it is full).
    fn next_host_die(&self, die: u32, program_ns: u64, load: &mut DieLoad) -> u32 {
        let n = self.geo.dies;
        if let Some(u) = load.until_ns.get_mut(die as usize) {
            *u += program_ns;
        }
        let restrict = self.group > 1 && (0..n).any(|d| self.host_room_on(d));
        let eligible = |d: u32| !restrict || self.host_room_on(d);
        let mut best: Option<u32> = None;
        let mut d = die;
        for _ in 0..n {
            d += 1;
            if d >= n {
                d = 0;
            }
            if !eligible(d) {
                continue;
            }
            let better = match best {
                None => true,
                Some(b) => {
                    load.until_ns.len() == n as usize
                        && load.until_ns[d as usize] < load.until_ns[b as usize]
                }
            };
            if better {
                best = Some(d);
                if load.until_ns.len() != n as usize {
                    break;
                }
            }
        }
        best.unwrap_or((die + 1) % n)
    }

    // ------------------------------------------------------------ idle GC

    /// A command to the namespace completes at `done_ns` (idle tracking).
    pub fn note_done(&mut self, done_ns: u64) {
        self.busy_until_ns = self.busy_until_ns.max(done_ns);
    }

    /// Background GC for the idle time before `now_ns` (`idle_gc_after_ns`
    /// after the last completion): pays the paced GC debt, then collects
    /// victims while a pool has fewer than `idle_gc_free_blocks` free units
    /// and the work so far fits in the idle window (die times from `load`:
    /// dies work in parallel, the busiest bounds it). Returns when the work
    /// starts (the timing model runs `out` from then); None if not idle.
    pub fn idle_gc(&mut self, now_ns: u64, load: &DieLoad, out: &mut Vec<GcWork>) -> Option<u64> {
        let after = self.cfg.idle_gc_after_ns;
        let start = self.busy_until_ns.checked_add(after)?;
        if after == 0 || now_ns <= start {
            return None;
        }
        let budget_ns = now_ns - start;
        let mut die_ns = vec![0u64; self.geo.dies as usize];
        let cost = |g: &GcWork| {
            g.read_units * load.unit_read_ns
                + g.slc_read_units * load.slc_read_ns
                + g.program_units * load.program_ns
                + g.erases * load.erase_ns
        };
        let first = out.len();
        self.debt.pay_all(out);
        for g in &out[first..] {
            die_ns[g.die as usize] += cost(g);
        }
        self.idle = true;
        let target = self.cfg.idle_gc_free_blocks as usize;
        let mut fits = die_ns.iter().all(|&t| t <= budget_ns);
        // Background folding: the SLC cache is emptied, oldest first.
        let fold_idle = self
            .cfg
            .slc_cache
            .as_ref()
            .is_some_and(|c| c.fold == FoldPolicy::Idle);
        while fold_idle && fits {
            let from = out.len();
            if !self.fold_one(None, out) {
                break;
            }
            for g in &out[from..] {
                die_ns[g.die as usize] += cost(g);
            }
            fits = die_ns.iter().all(|&t| t <= budget_ns);
        }
        for pool in 0..self.pools.len() as u32 {
            let mut budget = self.geo.blocks_per_die as usize;
            while fits && self.pools[pool as usize].free.len() < target && budget > 0 {
                let from = out.len();
                if !self.collect_one(pool, out) {
                    break;
                }
                budget -= 1;
                for g in &out[from..] {
                    die_ns[g.die as usize] += cost(g);
                }
                fits = die_ns.iter().all(|&t| t <= budget_ns);
            }
        }
        self.idle = false;
        // The work is in the past: nothing is busy until it ends.
        self.busy_until_ns = now_ns;
        (out.len() > first).then_some(start)
    }

    // ------------------------------------------------------------ commands

    /// A host write of bytes `[off, off + len)`: remaps every mapping unit it
    /// touches. Fills `fx` with the program units it completed and the GC it
    /// triggered. Err if the flash is full (cannot happen with a valid
    /// geometry).
    pub fn write(
        &mut self,
        off_bytes: u64,
        len_bytes: u64,
        fx: &mut FtlEffects,
    ) -> Result<(), String> {
        let (f, e) = self.unit_range(off_bytes, len_bytes);
        if !self.aligned(f, e) {
            self.refine();
        }
        let (first, end) = self.entry_range(off_bytes, len_bytes);
        self.stats.host_bytes_written += len_bytes;
        // The data the command overwrites is dead when it arrives: none of
        // it is moved by the GC the command triggers.
        for m in first..end {
            if let Some(old) = self.map.entry(m) {
                self.invalidate(old);
                self.map.set(m, NONE);
                self.stats.mapped_units -= 1;
            }
        }
        for m in first..end {
            let gc_before = fx.gc.len();
            let Some(die) = self.host_frontier(&mut fx.gc) else {
                return Err("ftl: no free block on any die".into());
            };
            fx.add_gc_load(gc_before);
            let pool = (die / self.group) as usize;
            let Some(mut o) = self.pools[pool].host.take() else {
                return Err("ftl: the host frontier has no open unit".into());
            };
            let unit_done = self.put(&mut o, die % self.group, m);
            let slc = self.units[o.unit as usize].slc;
            let unit_bytes = u64::from(o.spu) * self.geo.map_unit_bytes;
            self.pools[pool].host = Some(o);
            self.stats.mapped_units += 1;
            self.stats.flash_bytes_written += self.geo.map_unit_bytes;
            if slc {
                self.stats.slc_written_bytes += self.geo.map_unit_bytes;
            }
            if unit_done {
                let program_ns = match (&self.cfg.slc_cache, slc) {
                    (Some(c), true) => c.program_ns,
                    _ => fx.load.program_ns,
                };
                fx.units.push(zns_sim::timing::FtlProgram {
                    die,
                    bytes: unit_bytes,
                    program_ns,
                });
                let gc_before = fx.gc.len();
                self.gc_step(pool as u32, &mut fx.gc);
                fx.add_gc_load(gc_before);
                if let Some(slice) = self.pay_debt(die) {
                    fx.gc.push(slice);
                    fx.add_gc_load(fx.gc.len() - 1);
                }
                let load_ns = if slc {
                    fx.load.slc_program_ns
                } else {
                    fx.load.program_ns
                };
                self.host_die = self.next_host_die(die, load_ns, &mut fx.load);
            }
        }
        Ok(())
    }

    /// A host write applied to the map only, for preconditioning: the same
    /// remapping, invalidations, GC-mode switches and GC decisions as
    /// [`Ftl::write`], with no die loads (the host frontier goes round
    /// robin over the dies) and the die work it would hand to the timing
    /// model dropped — the drive reaches the state the writes leave behind
    /// without their timing.
    pub fn write_untimed(&mut self, off_bytes: u64, len_bytes: u64) -> Result<(), String> {
        let mut fx = std::mem::take(&mut self.untimed_fx);
        fx.clear();
        fx.load.until_ns.clear();
        let r = self.write(off_bytes, len_bytes, &mut fx);
        self.untimed_fx = fx;
        r
    }

    /// TRIM of bytes `[off, off + len)`: unmaps the mapping units it covers
    /// entirely (a partly covered unit keeps its data).
    pub fn trim(&mut self, off_bytes: u64, len_bytes: u64) {
        let vm = self.view.map_unit_bytes;
        let (f, e) = (
            off_bytes.div_ceil(vm),
            (off_bytes.saturating_add(len_bytes) / vm).min(self.view.logical_units),
        );
        if !self.aligned(f, e) {
            self.refine();
        }
        let mu = self.geo.map_unit_bytes;
        let first = off_bytes.div_ceil(mu);
        let end = (off_bytes.saturating_add(len_bytes) / mu).min(self.geo.logical_units);
        let mut m = first;
        while m < end {
            if let Some(next) = self.map.unwritten_until(m) {
                // Nothing was ever written in this segment.
                m = next;
                continue;
            }
            if let Some(old) = self.map.entry(m) {
                self.invalidate(old);
                self.map.set(m, NONE);
                self.stats.mapped_units -= 1;
                self.stats.trimmed_bytes += mu;
            }
            m += 1;
        }
    }

    /// Where the data of bytes `[off, off + len)` lies: one `(die,
    /// offset in unit, bytes)` piece per run of mapping units in the same
    /// program unit; unmapped units have none. `out` is cleared first.
    pub fn places(&self, off_bytes: u64, len_bytes: u64, out: &mut Vec<zns_sim::timing::FtlPlace>) {
        out.clear();
        let (first, end) = self.unit_range(off_bytes, len_bytes);
        let mu = self.view.map_unit_bytes;
        let slc_read_ns = self.cfg.slc_cache.as_ref().map_or(0, |c| c.read_ns);
        let mut last: Option<u32> = None;
        for m in first..end {
            let Some(slot) = self.lookup(m) else {
                last = None;
                continue;
            };
            let slc = self.slot_is_slc(slot / self.grain);
            let spu = self.spu_of(slc) * self.grain;
            let contiguous = last.is_some_and(|l| l + 1 == slot && slot % spu != 0);
            if contiguous {
                if let Some(p) = out.last_mut() {
                    p.bytes += mu;
                }
            } else {
                let (die, uo) = self.place_of(slot);
                out.push(zns_sim::timing::FtlPlace {
                    die,
                    unit_offset_bytes: uo,
                    bytes: mu,
                    read_ns: if slc { slc_read_ns } else { 0 },
                });
            }
            last = Some(slot);
        }
    }

    /// Checks every invariant (see the module docs); the error says which
    /// failed. O(physical + logical): for tests.
    pub fn check_consistency(&self) -> Result<(), String> {
        let mut counted = vec![0u32; self.map.blocks()];
        let mut mapped = 0u64;
        for m in 0..self.geo.logical_units {
            let Some(slot) = self.map.entry(m) else {
                continue;
            };
            mapped += 1;
            let b = self.block_of(slot);
            if b as usize >= self.map.blocks() {
                return Err(format!("unit {m} maps to slot {slot} beyond the flash"));
            }
            let back = self.map.owner(b, slot % self.spb);
            if u64::from(back) != m {
                return Err(format!(
                    "unit {m} -> slot {slot}, but the slot holds {back}"
                ));
            }
            let u = self.unit_of_block(b);
            if self.units[u as usize].state == BlockState::Free {
                return Err(format!("unit {m} maps into block {b} of free unit {u}"));
            }
            counted[b as usize] += 1;
        }
        if mapped != self.stats.mapped_units {
            return Err(format!(
                "{mapped} units mapped, counter says {}",
                self.stats.mapped_units
            ));
        }
        let mut unit_counted = vec![0u32; self.units.len()];
        let slc_cap = (self.spb / self.geo.slots_per_unit * self.geo.slc_slots_per_unit) as usize;
        for (b, &c) in counted.iter().enumerate() {
            let slc = self.units[self.unit_of_block(b as u32) as usize].slc;
            if slc
                && self
                    .map
                    .block(b)
                    .is_some_and(|p| p[slc_cap..].iter().any(|&m| m != NONE))
            {
                return Err(format!(
                    "SLC block {b} holds data beyond its SLC capacity ({slc_cap} slots)"
                ));
            }
            // Slots whose P2L names a unit that maps elsewhere would be
            // double references.
            let live = self
                .map
                .block(b)
                .map_or(0, |p| p.iter().filter(|&&m| m != NONE).count() as u32);
            if live != c {
                return Err(format!("block {b}: P2L live {live} / mapped here {c}"));
            }
            unit_counted[self.unit_of_block(b as u32) as usize] += c;
        }
        for (u, unit) in self.units.iter().enumerate() {
            if unit.valid != unit_counted[u] {
                return Err(format!(
                    "erase unit {u}: valid {} / mapped here {}",
                    unit.valid, unit_counted[u]
                ));
            }
        }
        for (p, pool) in self.pools.iter().enumerate() {
            for (v, &head) in pool.buckets.iter().enumerate() {
                let mut u = head;
                let mut n = 0;
                while u != NONE {
                    let unit = &self.units[u as usize];
                    if unit.state != BlockState::Closed || unit.valid as usize != v {
                        return Err(format!("pool {p} bucket {v} holds unit {u} ({unit:?})"));
                    }
                    u = unit.next;
                    n += 1;
                    if n > self.units.len() {
                        return Err(format!("pool {p} bucket {v} loops"));
                    }
                }
            }
            if pool
                .free
                .iter()
                .any(|&u| self.units[u as usize].state != BlockState::Free)
            {
                return Err(format!("pool {p}: a unit in the free list is not free"));
            }
        }
        let slc_now = self.units.iter().filter(|u| u.slc).count() as u64;
        if slc_now != self.slc_units {
            return Err(format!(
                "{slc_now} units in SLC mode, counter says {}",
                self.slc_units
            ));
        }
        let slc_closed = self
            .units
            .iter()
            .filter(|u| u.slc && u.state == BlockState::Closed)
            .count();
        if slc_closed != self.slc_closed.len()
            || self.slc_closed.iter().any(|&u| {
                let unit = &self.units[u as usize];
                !unit.slc || unit.state != BlockState::Closed
            })
        {
            return Err(format!(
                "fold queue holds {} units, {slc_closed} closed SLC units exist",
                self.slc_closed.len()
            ));
        }
        if self
            .units
            .iter()
            .any(|u| u.slc && u.state == BlockState::Free)
        {
            return Err("a free unit is marked SLC".into());
        }
        Ok(())
    }
}
