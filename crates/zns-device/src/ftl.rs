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
//! * **Write frontier.** Each die has an open host block and an open GC block
//!   (hot/cold separation). Host data fills one program unit of one die, then
//!   moves to the next die (round robin), so a large write is striped over
//!   the dies unit by unit and every completed unit is one program on its die.
//! * **GC.** Per die: when a die needs a new block and has fewer than
//!   `gc_start_free_blocks` free blocks, it collects victims until it has
//!   `gc_stop_free_blocks`. The victim is the closed block with the fewest
//!   valid slots (`greedy`) or the largest (1 − u) · age / (1 + u)
//!   (`cost-benefit`, u = valid fraction, age = slots written device-wide
//!   since the block was closed). Valid slots move to the die's GC block; the
//!   victim is erased and freed. Each victim is one `GcWork` for the timing
//!   model (reads, programs, erase on that die, competing with host I/O).
//! * **TRIM** unmaps: the slots become invalid, like overwritten ones.
//!
//! Invariants (checked by `check_consistency`, property-tested): every mapped
//! mapping unit points at a slot whose P2L entry points back at it; every
//! slot is referenced by at most one mapping unit; a block's valid count is
//! the number of such slots in it; free blocks hold no valid slot.
//!
//! Everything is integer arithmetic on the FTL's own counters: no clock, no
//! randomness, so the same commands give the same placement.

use serde::{Deserialize, Serialize};

/// Marks an unmapped L2P entry and an invalid P2L slot.
const NONE: u32 = u32::MAX;
/// L2P segment: 2^16 mapping units (256 KiB of entries).
const SEG_SHIFT: u32 = 16;
const SEG_LEN: usize = 1 << SEG_SHIFT;
const PPM: u64 = 1_000_000;

/// How the GC picks its victim block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum VictimPolicy {
    /// Fewest valid slots.
    #[default]
    Greedy,
    /// Largest (1 − u) · age / (1 + u) (Rosenblum & Ousterhout, LFS).
    CostBenefit,
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
}

fn default_map_unit() -> u64 {
    4096
}

/// The FTL's derived geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FtlGeometry {
    pub dies: u32,
    pub blocks_per_die: u32,
    pub units_per_block: u32,
    pub slots_per_unit: u32,
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
        let bpd = blocks_per_die as u64;
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
            units_per_block: self.units_per_block,
            slots_per_unit: spu as u32,
            map_unit_bytes: mu,
            logical_units,
            physical_slots: physical_slots as u64,
        })
    }
}

/// Counters of an FTL (device write amplification, GC, wear).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FtlStats {
    /// Bytes the host wrote (as sent).
    pub host_bytes_written: u64,
    /// Bytes programmed to flash: host mapping units (whole units: a partial
    /// write is a read-modify-write) plus GC relocations.
    pub flash_bytes_written: u64,
    /// Bytes GC moved.
    pub gc_relocated_bytes: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Victims collected.
    pub gc_victims: u64,
    /// Bytes unmapped by TRIM (mapping units that held data).
    pub trimmed_bytes: u64,
    /// Mapping units currently mapped.
    pub mapped_units: u64,
    /// Largest erase count of any block (wear).
    pub max_block_erases: u32,
    /// Bytes of page-map memory allocated (L2P + P2L).
    pub map_resident_bytes: u64,
}

impl FtlStats {
    /// Device write amplification: flash bytes / host bytes (0 before any write).
    pub fn waf(&self) -> f64 {
        if self.host_bytes_written == 0 {
            0.0
        } else {
            self.flash_bytes_written as f64 / self.host_bytes_written as f64
        }
    }
}

/// GC work on one die, for the timing model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcWork {
    pub die: u32,
    /// Program units of the victim that held valid data (read).
    pub read_units: u64,
    /// Bytes relocated.
    pub bytes: u64,
    /// Program units of the GC block completed.
    pub program_units: u64,
    /// Blocks erased (the victim).
    pub erases: u64,
}

/// How busy each die is, so that the host frontier can steer each new
/// program unit to the die that will be free first (set by the device layer
/// from the timing model before a write; empty = strict round robin).
#[derive(Debug, Default, Clone)]
pub struct DieLoad {
    /// Per die: when its queued programs, GC work and erases end (ns).
    pub until_ns: Vec<u64>,
    /// Die time of one program unit.
    pub program_ns: u64,
    /// Die time to read one program unit (GC).
    pub unit_read_ns: u64,
    /// Die time of an erase.
    pub erase_ns: u64,
}

/// What a host write or trim produced for the timing model.
#[derive(Debug, Default)]
pub struct FtlEffects {
    /// Input: die loads (see `DieLoad`); the FTL adds the work it places.
    pub load: DieLoad,
    /// Dies of the host program units this write completed, in order.
    pub unit_dies: Vec<u32>,
    /// GC work triggered by this write (before its units, in time).
    pub gc: Vec<GcWork>,
}

impl FtlEffects {
    /// Clears the outputs (the die loads are left as they are).
    pub fn clear(&mut self) {
        self.unit_dies.clear();
        self.gc.clear();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Closed,
}

#[derive(Debug, Clone, Copy)]
struct Block {
    valid: u32,
    erases: u32,
    state: BlockState,
    /// Device-wide slot write counter when the block was closed.
    closed_seq: u64,
    /// Bucket list links (closed blocks, by valid count, per die).
    prev: u32,
    next: u32,
}

/// An open block and its next slot.
#[derive(Debug, Clone, Copy)]
struct Frontier {
    block: u32,
    next_slot: u32,
}

#[derive(Debug)]
struct Die {
    free: Vec<u32>,
    host: Option<Frontier>,
    gc: Option<Frontier>,
    /// Head of the closed-block list of each valid count.
    buckets: Vec<u32>,
    /// No bucket below this is non-empty.
    min_bucket: u32,
}

/// The FTL of one namespace.
#[derive(Debug)]
pub struct Ftl {
    cfg: FtlConfig,
    geo: FtlGeometry,
    spb: u32,
    l2p: Vec<Option<Box<[u32]>>>,
    p2l: Vec<Option<Box<[u32]>>>,
    blocks: Vec<Block>,
    dies: Vec<Die>,
    /// Die that takes the next host program unit.
    host_die: u32,
    /// Slots written device-wide (host + GC): the age clock.
    seq: u64,
    stats: FtlStats,
}

impl Ftl {
    /// A fresh (empty, every block free) FTL.
    pub fn new(cfg: &FtlConfig, geo: FtlGeometry) -> Ftl {
        let spb = geo.slots_per_block();
        let nblocks = geo.dies as usize * geo.blocks_per_die as usize;
        let blocks = vec![
            Block {
                valid: 0,
                erases: 0,
                state: BlockState::Free,
                closed_seq: 0,
                prev: NONE,
                next: NONE,
            };
            nblocks
        ];
        let dies = (0..geo.dies)
            .map(|d| {
                let first = d * geo.blocks_per_die;
                Die {
                    // Popped from the end: lowest block first.
                    free: (first..first + geo.blocks_per_die).rev().collect(),
                    host: None,
                    gc: None,
                    buckets: vec![NONE; spb as usize + 1],
                    min_bucket: 0,
                }
            })
            .collect();
        let segs = (geo.logical_units as usize).div_ceil(SEG_LEN);
        Ftl {
            cfg: cfg.clone(),
            geo,
            spb,
            l2p: (0..segs).map(|_| None).collect(),
            p2l: (0..nblocks).map(|_| None).collect(),
            blocks,
            dies,
            host_die: 0,
            seq: 0,
            stats: FtlStats::default(),
        }
    }

    pub fn geometry(&self) -> &FtlGeometry {
        &self.geo
    }

    pub fn config(&self) -> &FtlConfig {
        &self.cfg
    }

    /// Counters (WAF, GC, wear, map memory).
    pub fn stats(&self) -> FtlStats {
        let mut s = self.stats;
        s.max_block_erases = self.blocks.iter().map(|b| b.erases).max().unwrap_or(0);
        let l2p = self.l2p.iter().filter(|s| s.is_some()).count() as u64 * SEG_LEN as u64;
        let p2l = self.p2l.iter().filter(|s| s.is_some()).count() as u64 * u64::from(self.spb);
        s.map_resident_bytes = (l2p + p2l) * 4;
        s
    }

    /// Erase count of every block (die-major order).
    pub fn block_erase_counts(&self) -> Vec<u32> {
        self.blocks.iter().map(|b| b.erases).collect()
    }

    /// Free blocks of each die.
    pub fn free_blocks_per_die(&self) -> Vec<u32> {
        self.dies.iter().map(|d| d.free.len() as u32).collect()
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

    /// The mapping-unit range `[first, end)` covering bytes `[off, off + len)`.
    pub fn unit_range(&self, off_bytes: u64, len_bytes: u64) -> (u64, u64) {
        let mu = self.geo.map_unit_bytes;
        let first = off_bytes / mu;
        let end = off_bytes.saturating_add(len_bytes).div_ceil(mu);
        (first, end.min(self.geo.logical_units))
    }

    /// The slot mapping unit `m` is stored in, if mapped.
    #[inline]
    pub fn lookup(&self, m: u64) -> Option<u32> {
        let seg = self.l2p.get((m >> SEG_SHIFT) as usize)?.as_ref()?;
        let s = seg[(m as usize) & (SEG_LEN - 1)];
        (s != NONE).then_some(s)
    }

    /// Die, offset inside its program unit (bytes) of a slot.
    #[inline]
    pub fn place_of(&self, slot: u32) -> (u32, u64) {
        let block = self.block_of(slot);
        let in_block = slot % self.spb;
        let in_unit = in_block % self.geo.slots_per_unit;
        (
            self.die_of_block(block),
            u64::from(in_unit) * self.geo.map_unit_bytes,
        )
    }

    #[inline]
    fn set_l2p(&mut self, m: u64, slot: u32) {
        let seg = self.l2p[(m >> SEG_SHIFT) as usize]
            .get_or_insert_with(|| vec![NONE; SEG_LEN].into_boxed_slice());
        seg[(m as usize) & (SEG_LEN - 1)] = slot;
    }

    // ------------------------------------------------------------ bucket lists

    fn bucket_insert(&mut self, b: u32) {
        let die = self.die_of_block(b) as usize;
        let v = self.blocks[b as usize].valid;
        let head = self.dies[die].buckets[v as usize];
        self.blocks[b as usize].prev = NONE;
        self.blocks[b as usize].next = head;
        if head != NONE {
            self.blocks[head as usize].prev = b;
        }
        self.dies[die].buckets[v as usize] = b;
        if v < self.dies[die].min_bucket {
            self.dies[die].min_bucket = v;
        }
    }

    fn bucket_remove(&mut self, b: u32) {
        let die = self.die_of_block(b) as usize;
        let Block {
            prev, next, valid, ..
        } = self.blocks[b as usize];
        if prev != NONE {
            self.blocks[prev as usize].next = next;
        } else {
            self.dies[die].buckets[valid as usize] = next;
        }
        if next != NONE {
            self.blocks[next as usize].prev = prev;
        }
        self.blocks[b as usize].prev = NONE;
        self.blocks[b as usize].next = NONE;
    }

    // ------------------------------------------------------------ slots

    /// Marks `slot` invalid (its data was overwritten, trimmed or moved).
    fn invalidate(&mut self, slot: u32) {
        let b = self.block_of(slot);
        if let Some(p) = self.p2l[b as usize].as_mut() {
            p[(slot % self.spb) as usize] = NONE;
        }
        let closed = self.blocks[b as usize].state == BlockState::Closed;
        if closed {
            self.bucket_remove(b);
        }
        let blk = &mut self.blocks[b as usize];
        blk.valid = blk.valid.saturating_sub(1);
        if closed {
            self.bucket_insert(b);
        }
    }

    /// Opens a free block of `die` (its P2L allocated on first use).
    fn open_block(&mut self, die: u32) -> Option<Frontier> {
        let b = self.dies[die as usize].free.pop()?;
        let spb = self.spb as usize;
        let p = self.p2l[b as usize].get_or_insert_with(|| vec![NONE; spb].into_boxed_slice());
        p.fill(NONE);
        let blk = &mut self.blocks[b as usize];
        blk.state = BlockState::Open;
        blk.valid = 0;
        Some(Frontier {
            block: b,
            next_slot: 0,
        })
    }

    fn close_block(&mut self, b: u32) {
        self.blocks[b as usize].state = BlockState::Closed;
        self.blocks[b as usize].closed_seq = self.seq;
        self.bucket_insert(b);
    }

    /// Stores mapping unit `m` in the next slot of `f`; returns the slot and
    /// whether it completed a program unit.
    fn put(&mut self, f: &mut Frontier, m: u64) -> (u32, bool) {
        let slot = f.block * self.spb + f.next_slot;
        if let Some(p) = self.p2l[f.block as usize].as_mut() {
            p[f.next_slot as usize] = m as u32;
        }
        self.blocks[f.block as usize].valid += 1;
        self.set_l2p(m, slot);
        f.next_slot += 1;
        self.seq += 1;
        (slot, f.next_slot % self.geo.slots_per_unit == 0)
    }

    // ------------------------------------------------------------ GC

    /// The victim of `die` under the configured policy (a closed block with
    /// at least one invalid slot), if any.
    fn pick_victim(&mut self, die: u32) -> Option<u32> {
        let spb = self.spb;
        match self.cfg.victim {
            VictimPolicy::Greedy => {
                let d = &mut self.dies[die as usize];
                let mut v = d.min_bucket;
                while v < spb {
                    if d.buckets[v as usize] != NONE {
                        d.min_bucket = v;
                        return Some(d.buckets[v as usize]);
                    }
                    v += 1;
                }
                d.min_bucket = spb;
                None
            }
            VictimPolicy::CostBenefit => {
                let first = die * self.geo.blocks_per_die;
                let mut best: Option<(u32, u64, u64)> = None; // block, (1-u)*age, (1+u) scaled
                for b in first..first + self.geo.blocks_per_die {
                    let blk = &self.blocks[b as usize];
                    if blk.state != BlockState::Closed || blk.valid >= spb {
                        continue;
                    }
                    let age = self.seq.saturating_sub(blk.closed_seq) + 1;
                    let num = u64::from(spb - blk.valid) * age;
                    let den = u64::from(spb + blk.valid);
                    let better = match best {
                        None => true,
                        Some((_, bn, bd)) => {
                            u128::from(num) * u128::from(bd) > u128::from(bn) * u128::from(den)
                        }
                    };
                    if better {
                        best = Some((b, num, den));
                    }
                }
                best.map(|(b, _, _)| b)
            }
        }
    }

    /// Collects one victim on `die`; false if nothing can be collected.
    fn collect_one(&mut self, die: u32, out: &mut Vec<GcWork>) -> bool {
        let Some(victim) = self.pick_victim(die) else {
            return false;
        };
        let valid = self.blocks[victim as usize].valid;
        // Room for the valid slots: the GC block's rest plus free blocks. A
        // victim holds fewer than a block of valid slots, so collecting it
        // never lowers the free count.
        let gc_room = self.dies[die as usize]
            .gc
            .map_or(0, |f| self.spb - f.next_slot);
        let free = self.dies[die as usize].free.len() as u64;
        if u64::from(gc_room) + free * u64::from(self.spb) < u64::from(valid) {
            return false;
        }
        self.bucket_remove(victim);
        let spu = self.geo.slots_per_unit;
        let mut read_units = 0u64;
        let mut program_units = 0u64;
        let mut moved = 0u64;
        let p2l = self.p2l[victim as usize].take();
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
                    read_units += 1;
                }
                let mut f = match self.dies[die as usize].gc.take() {
                    Some(f) if f.next_slot < self.spb => f,
                    other => {
                        if let Some(full) = other {
                            self.close_block(full.block);
                        }
                        match self.open_block(die) {
                            Some(f) => f,
                            None => break, // cannot happen: room was checked
                        }
                    }
                };
                let (_, unit_done) = self.put(&mut f, u64::from(m));
                self.dies[die as usize].gc = Some(f);
                if unit_done {
                    program_units += 1;
                }
                moved += 1;
            }
        }
        // Erase and free the victim (its P2L buffer is kept for reuse).
        let mut p2l = p2l;
        if let Some(p) = p2l.as_mut() {
            p.fill(NONE);
        }
        self.p2l[victim as usize] = p2l;
        let blk = &mut self.blocks[victim as usize];
        blk.valid = 0;
        blk.erases += 1;
        blk.state = BlockState::Free;
        self.dies[die as usize].free.insert(0, victim);
        let bytes = moved * self.geo.map_unit_bytes;
        self.stats.gc_relocated_bytes += bytes;
        self.stats.flash_bytes_written += bytes;
        self.stats.erases += 1;
        self.stats.gc_victims += 1;
        out.push(GcWork {
            die,
            read_units,
            bytes,
            program_units,
            erases: 1,
        });
        true
    }

    /// GC on `die` when its free pool is below the start watermark, until it
    /// reaches the stop watermark or nothing more can be collected.
    fn maybe_collect(&mut self, die: u32, out: &mut Vec<GcWork>) {
        if self.dies[die as usize].free.len() >= self.cfg.gc_start_free_blocks as usize {
            return;
        }
        // Bounded: each victim frees a block or the loop ends.
        let mut budget = self.geo.blocks_per_die as usize;
        while self.dies[die as usize].free.len() < self.cfg.gc_stop_free_blocks as usize
            && budget > 0
        {
            if !self.collect_one(die, out) {
                break;
            }
            budget -= 1;
        }
    }

    /// The host frontier's next slot: the open unit of the current die, or
    /// a new block there (GC first if the die is low on free blocks); a die
    /// with no room is skipped. None only if no die can take data.
    fn host_frontier(&mut self, gc: &mut Vec<GcWork>) -> Option<(u32, Frontier)> {
        for _ in 0..self.geo.dies {
            let die = self.host_die;
            match self.dies[die as usize].host.take() {
                Some(f) if f.next_slot < self.spb => return Some((die, f)),
                other => {
                    if let Some(full) = other {
                        self.close_block(full.block);
                    }
                    self.maybe_collect(die, gc);
                    if let Some(f) = self.open_block(die) {
                        return Some((die, f));
                    }
                }
            }
            self.host_die = (die + 1) % self.geo.dies;
        }
        None
    }

    /// The die after `die` takes the next host unit: the next one in round
    /// robin, or with die loads the one whose queue ends first (ties: round
    /// robin order), whose load then grows by one program.
    fn next_host_die(&self, die: u32, load: &mut DieLoad) -> u32 {
        let n = self.geo.dies;
        if let Some(u) = load.until_ns.get_mut(die as usize) {
            *u += load.program_ns;
        }
        if load.until_ns.len() != n as usize {
            return (die + 1) % n;
        }
        let mut best = (die + 1) % n;
        for i in 1..=n {
            let d = (die + i) % n;
            if load.until_ns[d as usize] < load.until_ns[best as usize] {
                best = d;
            }
        }
        best
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
        let (first, end) = self.unit_range(off_bytes, len_bytes);
        self.stats.host_bytes_written += len_bytes;
        for m in first..end {
            if let Some(old) = self.lookup(m) {
                self.invalidate(old);
                self.stats.mapped_units -= 1;
            }
            let gc_before = fx.gc.len();
            let Some((die, mut f)) = self.host_frontier(&mut fx.gc) else {
                return Err("ftl: no free block on any die".into());
            };
            if !fx.load.until_ns.is_empty() {
                for g in &fx.gc[gc_before..] {
                    let l = &fx.load;
                    let cost = g.read_units * l.unit_read_ns
                        + g.program_units * l.program_ns
                        + g.erases * l.erase_ns;
                    if let Some(u) = fx.load.until_ns.get_mut(g.die as usize) {
                        *u += cost;
                    }
                }
            }
            let (_, unit_done) = self.put(&mut f, m);
            self.dies[die as usize].host = Some(f);
            self.stats.mapped_units += 1;
            self.stats.flash_bytes_written += self.geo.map_unit_bytes;
            if unit_done {
                fx.unit_dies.push(die);
                self.host_die = self.next_host_die(die, &mut fx.load);
            }
        }
        Ok(())
    }

    /// TRIM of bytes `[off, off + len)`: unmaps the mapping units it covers
    /// entirely (a partly covered unit keeps its data).
    pub fn trim(&mut self, off_bytes: u64, len_bytes: u64) {
        let mu = self.geo.map_unit_bytes;
        let first = off_bytes.div_ceil(mu);
        let end = (off_bytes.saturating_add(len_bytes) / mu).min(self.geo.logical_units);
        let mut m = first;
        while m < end {
            let seg = (m >> SEG_SHIFT) as usize;
            if self.l2p[seg].is_none() {
                // Nothing was ever written in this segment.
                m = ((seg as u64) + 1) << SEG_SHIFT;
                continue;
            }
            if let Some(old) = self.lookup(m) {
                self.invalidate(old);
                self.set_l2p(m, NONE);
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
        let mu = self.geo.map_unit_bytes;
        let spu = u64::from(self.geo.slots_per_unit);
        let mut last: Option<u32> = None;
        for m in first..end {
            let Some(slot) = self.lookup(m) else {
                last = None;
                continue;
            };
            let contiguous = last.is_some_and(|l| l + 1 == slot && u64::from(slot) % spu != 0);
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
                });
            }
            last = Some(slot);
        }
    }

    /// Checks every invariant (see the module docs); the error says which
    /// failed. O(physical + logical): for tests.
    pub fn check_consistency(&self) -> Result<(), String> {
        let mut counted = vec![0u32; self.blocks.len()];
        let mut mapped = 0u64;
        for m in 0..self.geo.logical_units {
            let Some(slot) = self.lookup(m) else { continue };
            mapped += 1;
            let b = self.block_of(slot);
            if b as usize >= self.blocks.len() {
                return Err(format!("unit {m} maps to slot {slot} beyond the flash"));
            }
            let back = self.p2l[b as usize]
                .as_ref()
                .map_or(NONE, |p| p[(slot % self.spb) as usize]);
            if u64::from(back) != m {
                return Err(format!(
                    "unit {m} -> slot {slot}, but the slot holds {back}"
                ));
            }
            if self.blocks[b as usize].state == BlockState::Free {
                return Err(format!("unit {m} maps into free block {b}"));
            }
            counted[b as usize] += 1;
        }
        if mapped != self.stats.mapped_units {
            return Err(format!(
                "{mapped} units mapped, counter says {}",
                self.stats.mapped_units
            ));
        }
        for (b, blk) in self.blocks.iter().enumerate() {
            // Slots whose P2L names a unit that maps elsewhere would be
            // double references.
            let live = self.p2l[b]
                .as_ref()
                .map_or(0, |p| p.iter().filter(|&&m| m != NONE).count() as u32);
            if blk.valid != counted[b] || live != counted[b] {
                return Err(format!(
                    "block {b}: valid {} / P2L live {live} / mapped here {}",
                    blk.valid, counted[b]
                ));
            }
        }
        for (d, die) in self.dies.iter().enumerate() {
            for (v, &head) in die.buckets.iter().enumerate() {
                let mut b = head;
                let mut n = 0;
                while b != NONE {
                    let blk = &self.blocks[b as usize];
                    if blk.state != BlockState::Closed || blk.valid as usize != v {
                        return Err(format!("die {d} bucket {v} holds block {b} ({blk:?})"));
                    }
                    b = blk.next;
                    n += 1;
                    if n > self.blocks.len() {
                        return Err(format!("die {d} bucket {v} loops"));
                    }
                }
            }
        }
        Ok(())
    }
}
