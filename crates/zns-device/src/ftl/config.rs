//! The FTL's configuration: the `[namespace.ftl]` table (victim policy,
//! allocation, GC modes, the SLC cache and its folding), its checks against
//! the flash and the namespace, and the geometry it derives.

use serde::{Deserialize, Serialize};

use super::map::NONE;

/// Parts per million.
pub(super) const PPM: u64 = 1_000_000;

/// How the GC picks its victim block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    /// Fewest valid slots.
    #[default]
    Greedy,
    /// Largest (1 − u) · age / (1 + u) (Rosenblum & Ousterhout, LFS).
    CostBenefit,
    /// The oldest closed block with an invalid slot (FIFO or round-robin
    /// cleaning; Desnoyers, "Analytic modeling of SSD write performance").
    Fifo,
}

/// How erase blocks are grouped for writing and collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Allocation {
    /// A superblock is the block of the same index on every die: the host
    /// and the GC each fill one open superblock, striped over the dies
    /// program unit by program unit, and the GC collects and erases whole
    /// superblocks (what enterprise firmware does: die parallelism for every
    /// stream, parity across the dies, one block-table entry per superblock).
    #[default]
    Superblock,
    /// Every die has its own open host and GC blocks and collects its own
    /// blocks.
    PerDie,
}

/// When an SLC cache folds its data into TLC blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FoldPolicy {
    /// Only when forced: the cache's allowance (a share of the free user
    /// space) shrank below what it holds, or a pool needs free blocks.
    #[default]
    WhenFull,
    /// Also in the background at idle (`idle_gc_after_ns`): the cache is
    /// emptied while the host is quiet, ready for the next burst.
    Idle,
}

/// `ftl.slc_cache`: a dynamic SLC cache. Host data is programmed in SLC mode
/// (one bit per cell: a block holds 1 / `bits_per_cell` of its TLC data, a
/// program unit is one page per plane) into free blocks while the SLC
/// blocks' footprint stays within `max_free_fraction_ppm` of the free user
/// space (logical space not mapped), so the cache shrinks as the drive
/// fills and disappears when it is full. Folding moves the valid data of
/// the oldest SLC block into the GC's TLC block (SLC reads, TLC programs:
/// die work like GC) and erases it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlcCacheConfig {
    /// Most of the free user space (ppm, 1..=1000000) SLC blocks may occupy
    /// (their physical footprint, counted as TLC capacity).
    pub max_free_fraction_ppm: u64,
    /// Bits per cell of the native (TLC) mode: an SLC block or program unit
    /// holds 1 / this of the data. Must equal the timing's
    /// `pages_per_program` (one-shot TLC programs one page per bit).
    #[serde(default = "default_bits_per_cell")]
    pub bits_per_cell: u32,
    /// Die time of one SLC program unit (one page per plane).
    pub program_ns: u64,
    /// Array read time (tR) of an SLC page.
    pub read_ns: u64,
    /// When SLC data is folded into TLC.
    #[serde(default)]
    pub fold: FoldPolicy,
}

fn default_bits_per_cell() -> u32 {
    3
}

/// The `[namespace.ftl]` table of a conventional namespace: present, the
/// namespace is an SSD with a page-mapped FTL and device-side GC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    /// Overprovisioning ρ = (physical − logical) / logical, in parts per
    /// million (70000 = 7 %). Must be in (0, 100 %).
    pub overprovisioning_ppm: u64,
    /// Mapping unit (one L2P entry). A write covering part of a unit rewrites
    /// the whole unit (read-modify-write). Default 4096.
    #[serde(default = "default_map_unit")]
    pub map_unit_bytes: u64,
    /// Program units per erase block (per die).
    pub units_per_block: u32,
    /// A die starts collecting when it has fewer free blocks than this.
    pub gc_start_free_blocks: u32,
    /// ... and stops once it has this many.
    pub gc_stop_free_blocks: u32,
    /// Victim selection.
    #[serde(default)]
    pub victim: VictimPolicy,
    /// Superblocks (default) or per-die blocks. With superblocks the free
    /// block watermarks count superblocks.
    #[serde(default)]
    pub allocation: Allocation,
    /// Background GC at idle: once no command has been in flight for this
    /// long (ns), the FTL collects victims until every pool has
    /// `idle_gc_free_blocks` free units (and pays its paced GC debt), as far
    /// as the idle time allows. 0 = off (default).
    #[serde(default)]
    pub idle_gc_after_ns: u64,
    /// Free units per pool that idle GC works towards (> gc_stop_free_blocks
    /// when idle GC is on).
    #[serde(default)]
    pub idle_gc_free_blocks: u32,
    /// Dynamic SLC cache (off when absent).
    #[serde(default)]
    pub slc_cache: Option<SlcCacheConfig>,
    /// Firmware GC modes: free-space watermarks with hysteresis switching
    /// between deferred, background and foreground GC (off when absent:
    /// GC only at `gc_start_free_blocks`).
    #[serde(default)]
    pub gc_modes: Option<GcModesConfig>,
}

/// The `ftl.gc_modes` table: how much GC the firmware does per host write,
/// by the pool's free units, with hysteresis (docs/ftl.md, "GC modes").
/// Ratios are GC program units per host program unit, in ppm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcModesConfig {
    /// Deferred GC (no GC, the host at full speed) from when a pool has this
    /// many free units ...
    pub defer_free_blocks: u32,
    /// ... until it has fewer than this: foreground GC, the host throttled
    /// to `foreground_gc_ratio_ppm` ...
    pub foreground_free_blocks: u32,
    /// ... until it has this many again: background GC, at a ratio falling
    /// linearly from `background_gc_ratio_high_ppm` (here) to
    /// `background_gc_ratio_low_ppm` (at `defer_free_blocks`).
    pub resume_free_blocks: u32,
    pub foreground_gc_ratio_ppm: u64,
    pub background_gc_ratio_high_ppm: u64,
    pub background_gc_ratio_low_ppm: u64,
    /// Background GC frees at least this many erase units' worth of slots
    /// per host unit written (ppm; above 10^6 the pool grows whatever the
    /// victims' valid fraction): the ratio is raised to
    /// `reclaim × valid / (slots − valid)` of the next victim when the
    /// linear one would free less. 0 = off.
    #[serde(default)]
    pub background_min_reclaim_ppm: u64,
}

impl GcModesConfig {
    /// Checks the watermarks' order against the GC floor and the pool size.
    fn check(&self, gc_stop_free_blocks: u32, units_per_pool: u64) -> Result<(), String> {
        let (fg, resume, defer) = (
            self.foreground_free_blocks,
            self.resume_free_blocks,
            self.defer_free_blocks,
        );
        if !(gc_stop_free_blocks <= fg && fg < resume && resume < defer) {
            return Err(format!(
                "ftl.gc_modes: foreground_free_blocks = {fg}, resume_free_blocks = {resume}, \
                 defer_free_blocks = {defer}: need gc_stop_free_blocks ({gc_stop_free_blocks}) <= \
                 foreground < resume < defer"
            ));
        }
        if u64::from(defer) >= units_per_pool {
            return Err(format!(
                "ftl.gc_modes.defer_free_blocks = {defer}: must be below the {units_per_pool} erase units of a pool"
            ));
        }
        if self.foreground_gc_ratio_ppm == 0
            || self.background_gc_ratio_low_ppm == 0
            || self.background_gc_ratio_high_ppm < self.background_gc_ratio_low_ppm
        {
            return Err(format!(
                "ftl.gc_modes: foreground_gc_ratio_ppm = {}, background_gc_ratio_high_ppm = {}, \
                 background_gc_ratio_low_ppm = {}: need foreground > 0 and high >= low > 0",
                self.foreground_gc_ratio_ppm,
                self.background_gc_ratio_high_ppm,
                self.background_gc_ratio_low_ppm
            ));
        }
        Ok(())
    }

    /// GC program units per host program unit (ppm) in `mode` with `free`
    /// free units; `victim` = (valid, all) slots of the next victim.
    pub(super) fn ratio_ppm(&self, mode: GcMode, free: u64, victim: Option<(u64, u64)>) -> u64 {
        match mode {
            GcMode::Deferred => 0,
            GcMode::Foreground => self.foreground_gc_ratio_ppm,
            GcMode::Background => {
                let (lo, hi) = (
                    u64::from(self.resume_free_blocks),
                    u64::from(self.defer_free_blocks),
                );
                let f = free.clamp(lo, hi);
                let (rh, rl) = (
                    self.background_gc_ratio_high_ppm,
                    self.background_gc_ratio_low_ppm,
                );
                let linear = rh - (rh - rl) * (f - lo) / (hi - lo);
                let reclaim = match victim {
                    Some((valid, all)) if valid < all => {
                        (u128::from(self.background_min_reclaim_ppm) * u128::from(valid)
                            / u128::from(all - valid)) as u64
                    }
                    _ => 0,
                };
                linear.max(reclaim)
            }
        }
    }
}

/// What a pool's GC does now (`ftl.gc_modes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GcMode {
    /// No GC: the host writes at full speed into the free units.
    Deferred,
    /// GC at a ratio that falls as free units grow.
    Background,
    /// GC at the foreground ratio: the host waits for what GC frees.
    Foreground,
}

fn default_map_unit() -> u64 {
    4096
}

/// The FTL's derived geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FtlGeometry {
    pub dies: u32,
    pub blocks_per_die: u32,
    /// Dies whose blocks form one erase unit: 1 (per-die allocation) or all
    /// of them (a superblock).
    pub dies_per_unit: u32,
    pub units_per_block: u32,
    pub slots_per_unit: u32,
    /// Slots of an SLC-mode program unit (0: no SLC cache).
    pub slc_slots_per_unit: u32,
    pub map_unit_bytes: u64,
    /// Mapping units of the logical space.
    pub logical_units: u64,
    /// Slots of the whole flash.
    pub physical_slots: u64,
}

impl FtlGeometry {
    pub fn slots_per_block(&self) -> u32 {
        self.units_per_block * self.slots_per_unit
    }
    pub fn block_bytes(&self) -> u64 {
        u64::from(self.slots_per_block()) * self.map_unit_bytes
    }
    pub fn physical_bytes(&self) -> u64 {
        self.physical_slots * self.map_unit_bytes
    }
    /// Effective overprovisioning after rounding to whole blocks, in ppm.
    pub fn effective_op_ppm(&self) -> u64 {
        (self.physical_slots.saturating_sub(self.logical_units)) * PPM / self.logical_units.max(1)
    }
}

impl FtlConfig {
    /// Checks the parameters against the flash (`dies`, program unit) and the
    /// namespace (`logical_bytes`, `lba_bytes`); returns the geometry. The
    /// error names the field.
    pub fn geometry(
        &self,
        dies: u32,
        program_unit_bytes: u64,
        logical_bytes: u64,
        lba_bytes: u32,
    ) -> Result<FtlGeometry, String> {
        if self.overprovisioning_ppm == 0 || self.overprovisioning_ppm >= PPM {
            return Err(format!(
                "ftl.overprovisioning_ppm = {}: overprovisioning must be above 0 and below 100 % (1000000 ppm)",
                self.overprovisioning_ppm
            ));
        }
        let mu = self.map_unit_bytes;
        if mu == 0 || !mu.is_power_of_two() || mu < u64::from(lba_bytes) {
            return Err(format!(
                "ftl.map_unit_bytes = {mu}: must be a power of two, at least the LBA size ({lba_bytes})"
            ));
        }
        if program_unit_bytes == 0 || program_unit_bytes % mu != 0 {
            return Err(format!(
                "ftl.map_unit_bytes = {mu}: must divide the program unit ({program_unit_bytes} bytes)"
            ));
        }
        if self.units_per_block == 0 || self.units_per_block > 1 << 16 {
            return Err(format!(
                "ftl.units_per_block = {}: must be in 1..=65536",
                self.units_per_block
            ));
        }
        if dies == 0 {
            return Err("ftl: the flash has no die".into());
        }
        let spu = program_unit_bytes / mu;
        let spb = spu * u64::from(self.units_per_block);
        if spb > 1 << 24 {
            return Err(format!(
                "ftl.units_per_block = {}: a block of {spb} mapping units is too large (at most 2^24)",
                self.units_per_block
            ));
        }
        let logical_units = logical_bytes.div_ceil(mu);
        let physical_wanted = (u128::from(logical_units)
            * u128::from(PPM + self.overprovisioning_ppm))
        .div_ceil(u128::from(PPM));
        let per_die_slots = physical_wanted.div_ceil(u128::from(dies));
        let blocks_per_die = per_die_slots.div_ceil(u128::from(spb));
        let physical_slots = blocks_per_die * u128::from(spb) * u128::from(dies);
        if physical_slots >= u128::from(NONE) {
            return Err(format!(
                "ftl: {physical_slots} physical mapping units do not fit the 32-bit page map; use a larger ftl.map_unit_bytes"
            ));
        }
        let (start, stop) = (self.gc_start_free_blocks, self.gc_stop_free_blocks);
        if start < 2 || stop <= start {
            return Err(format!(
                "ftl.gc_start_free_blocks = {start}, ftl.gc_stop_free_blocks = {stop}: need 2 <= start < stop \
                 (the GC needs a free block to move valid data into)"
            ));
        }
        if self.idle_gc_after_ns > 0 && self.idle_gc_free_blocks <= stop {
            return Err(format!(
                "ftl.idle_gc_free_blocks = {}: with ftl.idle_gc_after_ns set it must be above \
                 ftl.gc_stop_free_blocks ({stop})",
                self.idle_gc_free_blocks
            ));
        }
        let slc_spu = match &self.slc_cache {
            None => 0,
            Some(c) => {
                if c.max_free_fraction_ppm == 0 || c.max_free_fraction_ppm > PPM {
                    return Err(format!(
                        "ftl.slc_cache.max_free_fraction_ppm = {}: must be in 1..=1000000",
                        c.max_free_fraction_ppm
                    ));
                }
                let bits = u64::from(c.bits_per_cell);
                if bits < 2 || spu % bits != 0 {
                    return Err(format!(
                        "ftl.slc_cache.bits_per_cell = {}: must be at least 2 and divide the {spu} mapping units \
                         of a program unit",
                        c.bits_per_cell
                    ));
                }
                if c.program_ns == 0 || c.read_ns == 0 {
                    return Err(format!(
                        "ftl.slc_cache: program_ns = {}, read_ns = {}: both must be above 0",
                        c.program_ns, c.read_ns
                    ));
                }
                if c.fold == FoldPolicy::Idle && self.idle_gc_after_ns == 0 {
                    return Err(
                        "ftl.slc_cache.fold = \"idle\" needs ftl.idle_gc_after_ns (when the drive counts as idle)"
                            .into(),
                    );
                }
                (spu / bits) as u32
            }
        };
        let bpd = blocks_per_die as u64;
        if let Some(m) = &self.gc_modes {
            m.check(stop, bpd)?;
        }
        // Reserve per die: the open host and GC blocks plus the free pool.
        let reserve = u64::from(stop) + 2;
        let spare_blocks = (physical_slots as u64 - logical_units) / spb;
        if bpd <= reserve || spare_blocks < reserve * u64::from(dies) {
            return Err(format!(
                "ftl: {bpd} blocks per die and {spare_blocks} spare blocks in all leave no room for the GC reserve \
                 ({reserve} blocks per die: open host and GC blocks + gc_stop_free_blocks); raise \
                 ftl.overprovisioning_ppm or lower ftl.units_per_block / ftl.gc_stop_free_blocks"
            ));
        }
        Ok(FtlGeometry {
            dies,
            blocks_per_die: blocks_per_die as u32,
            dies_per_unit: match self.allocation {
                Allocation::Superblock => dies,
                Allocation::PerDie => 1,
            },
            units_per_block: self.units_per_block,
            slots_per_unit: spu as u32,
            slc_slots_per_unit: slc_spu,
            map_unit_bytes: mu,
            logical_units,
            physical_slots: physical_slots as u64,
        })
    }
}
