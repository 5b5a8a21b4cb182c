//! `RaidArray`: the ZRAID write path, reads, zone management and the ZRWA
//! manager. Recovery, creation and rebuild are in `recovery.rs`.
//!
//! Write path. A logical write is accepted by a `ZoneSet` for the logical
//! namespace (so the logical device has exact ZNS semantics) and split into
//! per-stripe pieces. The data is folded into the zone's running parity (one
//! chunk, for the stripe at the submission write pointer: no ring, no
//! aliasing; ZRAID keeps no copy of the partial stripe, which the media and
//! its PP hold); a piece that completes its stripe carries the full parity
//! (FP); the last
//! piece of a write that ends inside a stripe carries its partial parity (PP):
//! XOR of the stripe's data chunks so far, written by Rule 1 into the PP slot
//! H rows ahead on the member of the next chunk — up to two PPs when a write
//! spans chunks and ends chunk-unaligned. A write that ends inside the last
//! data chunk of a stripe writes its PP in place, at the parity chunk (the
//! FP later completes it): ZRAID writes no PP there, which leaves that data
//! unprotected. Near the zone end the PP slot row would fall past the zone, and
//! the PP is appended to the metadata zone of the stripe's parity member.
//!
//! Every member sub-I/O waits (gating) until (1) its end is inside the member's
//! ZRWA window, so no implicit flush ever happens, and (2) for data and parity
//! at row r, every stripe up to r − H has been completed and its write
//! pointers advanced, so the PP slot being overwritten is dead. A logical
//! write is one runtime task that polls its sub-I/Os in place. A piece
//! completes when all its sub-I/Os have; a per-zone completion bitmap turns
//! piece completions into the completed prefix D. The ZRWA manager (one task
//! per zone, run on demand) advances member write pointers to the targets
//! `Layout::targets(D)`: the Rule-2 pair first, then the stripe sweep.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use zns_core::{
    CmdFuture, IoFlags, NvmeError, NvmeStatus, ReportFilter, ZoneAction, ZoneDescriptor,
    ZoneSendCmd, ZoneSet, ZoneState, ZonedConfig, ZonedDevice,
};
use zns_sim::sync::Notify;
use zns_sim::{Handle, JoinHandle};

use crate::layout::Layout;
use crate::md::{Record, RecordKind, WpEntry};
use crate::{Policy, RaidOptions};

/// Counters of what the array wrote to its members, in blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RaidStats {
    /// Logical blocks written by the host.
    pub host_blocks: u64,
    pub data_blocks: u64,
    /// Full parity (and in-place partial parity of a stripe's last chunk).
    pub parity_blocks: u64,
    /// Partial parity written into the ZRWA (later overwritten: not permanent).
    pub pp_zrwa_blocks: u64,
    /// Partial parity logged in metadata zones near zone ends (permanent).
    pub pp_md_blocks: u64,
    /// WP-log entries written (each copy counts).
    pub wplog_blocks: u64,
    /// Every block appended to metadata zones (headers included).
    pub md_blocks: u64,
    pub zrwa_flushes: u64,
    pub member_flushes: u64,
    pub degraded_reads: u64,
    /// Partial parity appended to PP log zones (RAIZN and the ablation
    /// variants; permanent).
    pub pp_log_blocks: u64,
    /// Metadata header blocks of those PP log records (permanent).
    pub pp_header_blocks: u64,
    /// PP log zones garbage-collected (switched, the old one reset).
    pub pp_gc_count: u64,
    /// Blocks GC re-appended (partial stripes of open zones) to the new PP log zone.
    pub pp_gc_blocks: u64,
}

/// Counters of several runs, summed.
impl std::ops::AddAssign for RaidStats {
    fn add_assign(&mut self, o: RaidStats) {
        let RaidStats {
            host_blocks,
            data_blocks,
            parity_blocks,
            pp_zrwa_blocks,
            pp_md_blocks,
            wplog_blocks,
            md_blocks,
            zrwa_flushes,
            member_flushes,
            degraded_reads,
            pp_log_blocks,
            pp_header_blocks,
            pp_gc_count,
            pp_gc_blocks,
        } = o;
        self.host_blocks += host_blocks;
        self.data_blocks += data_blocks;
        self.parity_blocks += parity_blocks;
        self.pp_zrwa_blocks += pp_zrwa_blocks;
        self.pp_md_blocks += pp_md_blocks;
        self.wplog_blocks += wplog_blocks;
        self.md_blocks += md_blocks;
        self.zrwa_flushes += zrwa_flushes;
        self.member_flushes += member_flushes;
        self.degraded_reads += degraded_reads;
        self.pp_log_blocks += pp_log_blocks;
        self.pp_header_blocks += pp_header_blocks;
        self.pp_gc_count += pp_gc_count;
        self.pp_gc_blocks += pp_gc_blocks;
    }
}

impl RaidStats {
    /// Blocks programmed permanently into member flash: data, full parity,
    /// everything appended to metadata and PP log zones. PP and WP-log entries
    /// in the ZRWA are overwritten by later data and never reach the flash.
    pub fn flash_blocks(&self) -> u64 {
        self.data_blocks
            + self.parity_blocks
            + self.md_blocks
            + self.pp_log_blocks
            + self.pp_header_blocks
            + self.pp_gc_blocks
    }
    /// Partial parity that stays in flash (the paper's "permanent PP",
    /// §6.4): logged near zone ends (ZRAID), appended to PP log zones and
    /// re-appended by their GC (RAIZN and the ablation variants).
    pub fn permanent_pp_blocks(&self) -> u64 {
        self.pp_md_blocks + self.pp_log_blocks + self.pp_gc_blocks
    }
    /// Partial parity written into the ZRWA and overwritten by later data
    /// (the paper's "temporary PP"): it never reaches the flash.
    pub fn temporary_pp_blocks(&self) -> u64 {
        self.pp_zrwa_blocks
    }
    /// Every partial-parity-related block written to members: PP, temporary
    /// or permanent, and the metadata headers of logged PP (the paper's
    /// "PP-related writes", −24 % for ZRAID against RAIZN+).
    pub fn pp_related_blocks(&self) -> u64 {
        self.permanent_pp_blocks() + self.temporary_pp_blocks() + self.pp_header_blocks
    }
    /// Every block written to a member (including ZRWA overwrites).
    pub fn member_write_blocks(&self) -> u64 {
        self.flash_blocks() + self.pp_zrwa_blocks + self.wplog_blocks
    }
    /// Flash write amplification: permanent member blocks per host block
    /// (the paper's "flash WAF", §6.4; 1.25 is full parity alone with 4 + 1).
    pub fn flash_waf(&self) -> f64 {
        if self.host_blocks == 0 {
            return 0.0;
        }
        self.flash_blocks() as f64 / self.host_blocks as f64
    }
}

/// Which gate a member sub-I/O waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Data or parity at a stripe row.
    Row(u64),
    /// A PP or WP-log slot: only the ZRWA window; skipped if already committed.
    Slot,
}

pub(crate) enum SubIo {
    Write {
        dev: u32,
        off: u64,
        data: Payload,
        gate: Gate,
    },
    /// Host data: bytes `range` of the logical write's data (which the write's
    /// task holds: no copy per sub-I/O).
    Data {
        dev: u32,
        off: u64,
        range: std::ops::Range<usize>,
        gate: Gate,
    },
    Md {
        dev: u32,
        rec: Record,
    },
    /// Partial parity `pp` appended to a member's PP log zone (RAIZN), with
    /// or without a metadata header block (`rec`, its payload left empty).
    PpLog {
        dev: u32,
        rec: Record,
        pp: Payload,
    },
}

/// The bytes of a parity or log sub-I/O: computed into a pooled buffer, or
/// (timing-only arrays, `RaidOptions::timing_only`) that many zero bytes.
pub(crate) enum Payload {
    Bytes(Vec<u8>),
    Zeros(usize),
}

impl Payload {
    /// The bytes as an owned buffer (for a log record).
    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            Payload::Bytes(v) => v,
            Payload::Zeros(n) => vec![0; n],
        }
    }
}

struct Piece {
    start: u64,
    end: u64,
    ios: Vec<SubIo>,
}

/// Per logical zone runtime state.
pub(crate) struct ZoneRt {
    pub gen: u64,
    /// The member zones hold their ZRWA (opened for this generation).
    pub ready: bool,
    pub opening: bool,
    /// A reset or finish is being applied to the members.
    pub busy: bool,
    pub submit_end: u64,
    /// The stripe at the submission write pointer and how many of its blocks
    /// are submitted.
    pub buf_stripe: u64,
    pub filled: u64,
    /// Stripe buffer: the data of stripe `buf_stripe` submitted so far, kept
    /// only by the variants whose PP log GC re-appends it (RAIZN and the
    /// ablation steps). ZRAID keeps no copy: its partial stripe is on the
    /// media, recoverable from the PP (`recovery::partial_stripe_data`).
    pub buf: Vec<u8>,
    /// Running parity of the stripe buffer (one chunk): at in-chunk block x,
    /// the XOR of every chunk of the stripe written at x (defined where chunk 0
    /// is). Partial and full parity are read from it.
    pub par: Vec<u8>,
    /// In-chunk blocks of the last data chunk's parity written in place.
    pub par_prefix: u64,
    /// Completion bitmap: bit i = block `done_base + i` completed.
    pub done_base: u64,
    pub done: VecDeque<u64>,
    /// Completed prefix D (logical LBAs from the zone start).
    pub frontier: u64,
    /// D whose member write-pointer targets are applied.
    pub applied: u64,
    pub member_wp: Vec<u64>,
    /// Normal (non-ZRWA) member zones: where the next sub-I/O of each member
    /// must start (sub-I/Os are submitted in LBA order, as RAIZN does).
    pub sub_wp: Vec<u64>,
    pub manager: bool,
    pub inflight: u32,
    pub old_inflight: u32,
    pub wplog_idx: u64,
    /// A WP-log entry of this generation says "complete up to" this much.
    pub logged_end: u64,
    /// Progress of the zone's first chunk is on the media twice (a WP-log
    /// entry, or a progress past the first chunk): the member write pointers
    /// alone encode one chunk on a single member (`Layout::targets`).
    pub first_chunk_logged: bool,
    /// The member zones of this generation were opened and still hold an
    /// active resource on every member (counted in
    /// `State::member_active_zones`).
    pub holds_members: bool,
}

impl ZoneRt {
    pub fn new(n: usize) -> ZoneRt {
        ZoneRt {
            gen: 0,
            ready: false,
            opening: false,
            busy: false,
            submit_end: 0,
            buf_stripe: 0,
            filled: 0,
            buf: Vec::new(),
            par: Vec::new(),
            par_prefix: 0,
            done_base: 0,
            done: VecDeque::new(),
            frontier: 0,
            applied: 0,
            member_wp: vec![0; n],
            sub_wp: vec![0; n],
            manager: false,
            inflight: 0,
            old_inflight: 0,
            wplog_idx: 0,
            logged_end: 0,
            first_chunk_logged: false,
            holds_members: false,
        }
    }

    /// Forget the zone's contents (reset), starting generation `gen`.
    fn restart(&mut self, gen: u64) {
        let n = self.member_wp.len();
        let old = self.inflight + self.old_inflight;
        *self = ZoneRt::new(n);
        self.gen = gen;
        self.old_inflight = old;
    }

    /// Sets `d` as the completed, submitted and applied prefix (recovery):
    /// the media already say `d`. Below one chunk the first chunk still
    /// needs its WP-log entry when it completes.
    pub fn set_progress(&mut self, d: u64, chunk_lbas: u64) {
        self.submit_end = d;
        self.frontier = d;
        self.applied = d;
        self.done_base = d;
        self.done.clear();
        self.logged_end = d;
        self.first_chunk_logged = d >= chunk_lbas;
    }

    /// Starts stripe `s` (nothing of it submitted), keeping the allocations.
    pub fn start_stripe(&mut self, s: u64) {
        self.buf.clear();
        self.buf_stripe = s;
        self.filled = 0;
        self.par_prefix = 0;
    }

    /// Folds `data` (the next blocks of the stripe) into the running parity,
    /// and into the stripe buffer when `keep`.
    fn absorb(&mut self, lba_bytes: usize, chunk_bytes: usize, data: &[u8], keep: bool) {
        let mut at = self.filled as usize * lba_bytes;
        if keep {
            self.buf.extend_from_slice(data);
        }
        self.filled += (data.len() / lba_bytes) as u64;
        if self.par.len() != chunk_bytes {
            self.par = vec![0u8; chunk_bytes];
        }
        let mut src = data;
        while !src.is_empty() {
            let in_chunk = at % chunk_bytes;
            let n = (chunk_bytes - in_chunk).min(src.len());
            let dst = &mut self.par[in_chunk..in_chunk + n];
            if at < chunk_bytes {
                dst.copy_from_slice(&src[..n]);
            } else {
                xor_into(dst, &src[..n]);
            }
            at += n;
            src = &src[n..];
        }
    }

    /// Loads the submitted prefix `data` of the current stripe (recovery):
    /// running parity, fill, and the buffer itself when `keep`.
    pub fn load_stripe(&mut self, lba_bytes: usize, chunk_bytes: usize, data: Vec<u8>, keep: bool) {
        self.par.clear();
        self.par.resize(chunk_bytes, 0);
        for chunk in data.chunks(chunk_bytes) {
            xor_into(&mut self.par, chunk);
        }
        self.filled = (data.len() / lba_bytes) as u64;
        self.buf = if keep { data } else { Vec::new() };
    }

    /// Partial parity "XOR of data chunks 0..=m" of the current stripe at
    /// in-chunk blocks [x, y): the running parity, minus what chunks after m
    /// already hold there — which can only be data of the piece being
    /// planned (`piece`: its bytes, from stripe byte offset `piece_at`), as a
    /// write covers the chunks it ends in from their start. `out` is an empty
    /// buffer to fill (from the array's pool).
    #[allow(clippy::too_many_arguments)]
    fn parity_through(
        &self,
        mut out: Vec<u8>,
        lba_bytes: usize,
        chunk_lbas: u64,
        m: u32,
        x: u64,
        y: u64,
        piece_at: usize,
        piece: &[u8],
    ) -> Vec<u8> {
        let cb = chunk_lbas as usize * lba_bytes;
        let (xb, yb) = (x as usize * lba_bytes, y as usize * lba_bytes);
        out.clear();
        out.extend_from_slice(&self.par[xb..yb]);
        let end = piece_at + piece.len();
        let mut i = m as usize + 1;
        while i * cb + xb < end {
            let from = (i * cb + xb).max(piece_at);
            let to = (i * cb + yb).min(end);
            if from < to {
                let o = from - (i * cb + xb);
                xor_into(&mut out[o..], &piece[from - piece_at..to - piece_at]);
            }
            i += 1;
        }
        out
    }

    fn mark(&mut self, a: u64, b: u64) {
        let a = a.max(self.done_base);
        for blk in a..b {
            let i = (blk - self.done_base) as usize;
            while self.done.len() <= i / 64 {
                self.done.push_back(0);
            }
            self.done[i / 64] |= 1 << (i % 64);
        }
        // advance the frontier over set bits
        loop {
            let i = (self.frontier - self.done_base) as usize;
            match self.done.get(i / 64) {
                Some(w) if w & (1 << (i % 64)) != 0 => self.frontier += 1,
                _ => break,
            }
        }
        while self.frontier - self.done_base >= 64 {
            self.done.pop_front();
            self.done_base += 64;
        }
    }
}

/// Metadata-zone state of one member.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MdMember {
    /// Which of the two metadata zones is current (0 or 1).
    pub cur: u32,
    pub epoch: u64,
    pub switching: bool,
}

/// The two kinds of append-only log zones a member holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogZone {
    /// Metadata ("superblock") zones: superblocks, reset/finish logs, PP and
    /// WP-log records near zone ends.
    Md,
    /// PP log zones (RAIZN's MD_PARITY_LOG): every partial parity.
    Pp,
}

pub(crate) struct State {
    pub zones: ZoneSet,
    pub z: Vec<ZoneRt>,
    pub seq: u64,
    pub poisoned: Option<NvmeError>,
    pub stats: RaidStats,
    pub md: Vec<MdMember>,
    /// PP log zones of each member (variants with a PP log zone).
    pub pplog: Vec<MdMember>,
    /// When each submission FIFO is free again (virtual ns): one per
    /// logical zone, or a single one for RAIZN.
    pub fifo_free_ns: Vec<u64>,
    /// Logical zones whose member zones hold an active resource. It runs
    /// ahead of the logical zone states: a zone full by its last write, or
    /// being reset, holds its member zones until the ZRWA manager, the
    /// finish or the reset is done with them. New member zones open only
    /// below `cfg.max_active_zones`, so the members never see one too many.
    pub member_active_zones: u32,
}

pub(crate) struct Inner {
    pub handle: Handle,
    pub members: RefCell<Vec<Rc<dyn ZonedDevice>>>,
    pub failed: RefCell<Vec<bool>>,
    pub layout: Layout,
    pub opts: RaidOptions,
    pub cfg: ZonedConfig,
    pub member_cfg: ZonedConfig,
    pub array_id: Cell<u64>,
    pub st: RefCell<State>,
    /// Wakes waiters of array-wide conditions (log zone switches, member
    /// failure, poisoning).
    pub wake: Notify,
    /// Wakes waiters of one logical zone's conditions (gates, progress,
    /// drains); array-wide events wake every zone too.
    pub zwake: Vec<Notify>,
    /// Byte buffers for sub-I/O payloads and the copies of write data,
    /// reused instead of allocated per command.
    pub pool: RefCell<Vec<Vec<u8>>>,
    /// A chunk and a block of zero bytes: what a timing-only array's sub-I/Os
    /// (data, parity, PP records with their header) carry.
    pub zeros: Vec<u8>,
    /// Wakes waiters of one logical zone's progress only (completed prefix,
    /// in-flight count): piece completions need not wake gated sub-I/Os.
    pub pwake: Vec<Notify>,
    /// The command gate: closed while `rebuild` runs, so that no command
    /// meets a spare whose zones are not rebuilt yet.
    pub gate: CommandGate,
}

/// Holds the array's commands (read, write, append, zone management, flush)
/// while a rebuild runs: `rebuild` closes it and waits for the commands
/// already inside to finish; commands arriving meanwhile wait at the gate and
/// run, in arrival order, once it opens again.
#[derive(Default)]
pub(crate) struct CommandGate {
    closed: Cell<bool>,
    inside: Cell<usize>,
    wake: Notify,
}

/// A command's pass through the gate; dropping it lets a waiting rebuild on.
pub(crate) struct GatePass<'a>(&'a CommandGate);

impl Drop for GatePass<'_> {
    fn drop(&mut self) {
        let g = self.0;
        g.inside.set(g.inside.get() - 1);
        if g.closed.get() && g.inside.get() == 0 {
            g.wake.notify_waiters();
        }
    }
}

impl CommandGate {
    /// Waits while the gate is closed, then counts the command in.
    pub async fn enter(&self) -> GatePass<'_> {
        while self.closed.get() {
            self.wake.notified().await;
        }
        self.inside.set(self.inside.get() + 1);
        GatePass(self)
    }

    /// Closes the gate and waits until no command is inside; the gate opens
    /// again when the returned hold is dropped. `None` if another rebuild
    /// holds it already.
    pub async fn close(&self) -> Option<GateHold<'_>> {
        if self.closed.replace(true) {
            return None;
        }
        // from here on the hold reopens the gate, also if this future is
        // dropped while it waits
        let hold = GateHold(self);
        while self.inside.get() > 0 {
            self.wake.notified().await;
        }
        Some(hold)
    }
}

/// A rebuild's hold on the closed gate; dropping it opens the gate and lets
/// the waiting commands in.
pub(crate) struct GateHold<'a>(&'a CommandGate);

impl Drop for GateHold<'_> {
    fn drop(&mut self) {
        self.0.closed.set(false);
        self.0.wake.notify_waiters();
    }
}

/// A RAID-5 array of zoned devices (ZRAID), itself a `ZonedDevice`.
#[derive(Clone)]
pub struct RaidArray {
    pub(crate) inner: Rc<Inner>,
}

fn is_member_gone(e: &NvmeError) -> bool {
    e.status == NvmeStatus::HostPathingError
}

fn aborted() -> NvmeError {
    NvmeError::injected(NvmeStatus::AbortedPowerLoss)
}

impl Inner {
    pub fn n(&self) -> usize {
        self.layout.n as usize
    }
    pub fn lba_bytes(&self) -> usize {
        self.layout.lba_bytes as usize
    }
    pub fn member(&self, dev: u32) -> Option<Rc<dyn ZonedDevice>> {
        if self.failed.borrow()[dev as usize] {
            return None;
        }
        Some(self.members.borrow()[dev as usize].clone())
    }
    pub fn failed_count(&self) -> usize {
        self.failed.borrow().iter().filter(|&&f| f).count()
    }
    pub fn failed_members(&self) -> Vec<usize> {
        let f = self.failed.borrow();
        (0..f.len()).filter(|&i| f[i]).collect()
    }
    /// Wakes everything waiting on the zone (gates and progress).
    /// An empty byte buffer from the pool.
    pub fn take_buf(&self) -> Vec<u8> {
        self.pool.borrow_mut().pop().unwrap_or_default()
    }
    /// Returns a buffer to the pool (small ones only, never empty ones, and a
    /// bounded number).
    pub fn put_buf(&self, mut v: Vec<u8>) {
        const POOL_BUFFERS: usize = 512;
        const POOL_BUFFER_BYTES: usize = 1 << 20;
        let mut pool = self.pool.borrow_mut();
        if pool.len() < POOL_BUFFERS && (1..=POOL_BUFFER_BYTES).contains(&v.capacity()) {
            v.clear();
            pool.push(v);
        }
    }

    pub fn wake_zone(&self, zone: u32) {
        self.zwake[zone as usize].notify_waiters();
        self.pwake[zone as usize].notify_waiters();
    }
    /// Wakes the waiters of the zone's progress (frontier, drains).
    pub fn wake_progress(&self, zone: u32) {
        self.pwake[zone as usize].notify_waiters();
    }
    pub fn wake_all(&self) {
        self.wake.notify_waiters();
        for n in self.zwake.iter().chain(&self.pwake) {
            n.notify_waiters();
        }
    }
    /// Zone `zone`'s member zones (now open) hold an active resource.
    pub fn hold_members(st: &mut State, zone: u32) {
        st.member_active_zones += 1;
        st.z[zone as usize].holds_members = true;
    }
    /// Zone `zone` (generation `gen`) no longer holds its member zones'
    /// active resources (they are full, finished or reset).
    pub fn release_members(&self, zone: u32, gen: u64) {
        let mut st = self.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.gen != gen || !z.holds_members {
            return;
        }
        z.holds_members = false;
        st.member_active_zones -= 1;
        drop(st);
        self.wake.notify_waiters();
    }
    pub fn mark_failed(&self, dev: u32) {
        self.failed.borrow_mut()[dev as usize] = true;
        self.wake_all();
    }
    pub fn poison(&self, e: NvmeError) {
        let mut st = self.st.borrow_mut();
        if st.poisoned.is_none() {
            st.poisoned = Some(e);
        }
        drop(st);
        self.wake_all();
    }
    /// Member zone start of logical zone `zone`.
    pub fn mzone_start(&self, zone: u32) -> u64 {
        zone as u64 * self.layout.member_zone_size
    }
    /// Start of a member's metadata zone `which` (0 or 1).
    pub fn md_zone_start(&self, which: u32) -> u64 {
        (self.member_cfg.zone_count - 2 + which) as u64 * self.layout.member_zone_size
    }
    /// Start of a member's PP log zone `which` (0 or 1), the two member
    /// zones before the metadata zones.
    pub fn pp_zone_start(&self, which: u32) -> u64 {
        (self.member_cfg.zone_count - 4 + which) as u64 * self.layout.member_zone_size
    }
    /// Start of log zone `which` of kind `log`.
    pub fn log_zone_start(&self, log: LogZone, which: u32) -> u64 {
        match log {
            LogZone::Md => self.md_zone_start(which),
            LogZone::Pp => self.pp_zone_start(which),
        }
    }
    pub fn logical_zone_start(&self, zone: u32) -> u64 {
        zone as u64 * self.cfg.zone_size_lbas
    }

    /// Zone Management Send `action` to member `dev`'s zone of logical zone
    /// `zone`; `Ok(false)` when the member has failed (nothing is sent),
    /// errors handled as [`Inner::member_result`] does.
    pub async fn member_zone_send(
        &self,
        dev: u32,
        zone: u32,
        action: ZoneAction,
    ) -> Result<bool, NvmeError> {
        let Some(m) = self.member(dev) else {
            return Ok(false);
        };
        let r = m
            .zone_send(ZoneSendCmd {
                action,
                slba: self.mzone_start(zone),
                select_all: false,
            })
            .await;
        self.member_result(dev, r).map(|()| true)
    }

    /// Handles a member command's error: a failed member is recorded and the
    /// command counts as done (the array runs degraded); anything else poisons
    /// the array (power loss) and is returned.
    pub fn member_result(&self, dev: u32, r: Result<(), NvmeError>) -> Result<(), NvmeError> {
        match r {
            Ok(()) => Ok(()),
            Err(e) if is_member_gone(&e) => {
                self.mark_failed(dev);
                if self.failed_count() > 1 {
                    self.poison(e);
                    return Err(e);
                }
                Ok(())
            }
            Err(e) => {
                self.poison(e);
                Err(e)
            }
        }
    }

    fn check_alive(&self) -> Result<(), NvmeError> {
        if let Some(e) = self.st.borrow().poisoned {
            return Err(e);
        }
        if self.failed_count() > 1 {
            return Err(NvmeError::injected(NvmeStatus::HostPathingError));
        }
        Ok(())
    }

    pub(crate) fn next_seq(&self) -> u64 {
        let mut st = self.st.borrow_mut();
        st.seq += 1;
        st.seq
    }

    /// Splits a write at zone offset `off` into pieces, updating the stripe buffer.
    fn plan(&self, st: &mut State, zone: u32, off: u64, data: &[u8]) -> Vec<Piece> {
        let l = self.layout;
        let b = self.lba_bytes();
        let sl = l.stripe_lbas();
        let c = l.chunk_lbas;
        let nd = l.data_chunks() as u32;
        let nlb = (data.len() / b) as u64;
        let end = off + nlb;
        let array_id = self.array_id.get();
        let keep = self.opts.variant.pp_log_zone();
        let timing_only = self.opts.timing_only;
        // "XOR of data chunks 0..=m at in-chunk blocks [x, y)" of the stripe
        // being filled (zeros of that size in a timing-only array)
        let parity = |z: &ZoneRt, m: u32, x: u64, y: u64, rel: usize, src: &[u8]| {
            if timing_only {
                Payload::Zeros((y - x) as usize * b)
            } else {
                Payload::Bytes(z.parity_through(self.take_buf(), b, c, m, x, y, rel, src))
            }
        };
        let mut pieces = Vec::with_capacity(((end - 1) / sl - off / sl + 1) as usize);
        let mut s = off / sl;
        while s * sl < end {
            let a = off.max(s * sl);
            let e = end.min((s + 1) * sl);
            let mut ios = Vec::with_capacity(4);
            let z = &mut st.z[zone as usize];
            if z.buf_stripe != s {
                z.start_stripe(s);
            }
            // writes and appends go to the write pointer: the piece starts
            // where the stripe's submitted prefix ends
            debug_assert_eq!(a - s * sl, z.filled, "piece not at the stripe's fill");
            let rel = ((a - s * sl) as usize) * b;
            let src = &data[((a - off) as usize) * b..((e - off) as usize) * b];
            if timing_only {
                z.filled += e - a;
            } else {
                z.absorb(b, c as usize * b, src, keep);
            }
            // data sub-I/Os, one per chunk portion
            let mut x = a;
            while x < e {
                let loc = l.locate(x);
                let len = (c - loc.in_chunk).min(e - x);
                let from = ((x - off) as usize) * b;
                ios.push(SubIo::Data {
                    dev: l.data_dev(zone, s, loc.idx),
                    off: l.member_off(s, loc.in_chunk),
                    range: from..from + len as usize * b,
                    gate: Gate::Row(s),
                });
                st.stats.data_blocks += len;
                x += len;
            }
            let z = &mut st.z[zone as usize];
            if e == (s + 1) * sl {
                // full parity (what is not already written in place)
                let p0 = z.par_prefix;
                let fp = parity(z, nd - 1, p0, c, rel, src);
                ios.push(SubIo::Write {
                    dev: l.parity_dev(zone, s),
                    off: l.member_off(s, p0),
                    data: fp,
                    gate: Gate::Row(s),
                });
                st.stats.parity_blocks += c - p0;
                z.start_stripe(s + 1);
            } else {
                // the write ends inside stripe s: partial parity
                let sa = l.locate(a);
                let se = l.locate(e - 1);
                let e_off = (e - 1) % c + 1;
                // (m, from, to): at most two, kept inline (no allocation)
                let from_a = if sa.idx == se.idx { sa.in_chunk } else { 0 };
                let mut pps = [(se.idx, from_a, e_off), (0, 0, 0)];
                let mut n_pps = 1;
                if e_off < c && sa.idx < se.idx {
                    let from_b = if sa.idx + 1 == se.idx { sa.in_chunk } else { 0 };
                    pps[1] = (se.idx - 1, from_b, c);
                    n_pps = 2;
                }
                for &(m, x0, y0) in &pps[..n_pps] {
                    if self.opts.variant.pp_log_zone() {
                        // RAIZN: every PP is appended to the PP log zone of
                        // the stripe's parity member (permanent)
                        let pp = parity(z, m, x0, y0, rel, src);
                        st.seq += 1;
                        ios.push(SubIo::PpLog {
                            dev: l.parity_dev(zone, s),
                            rec: Record {
                                kind: RecordKind::Pp,
                                array_id,
                                zone,
                                gen: z.gen,
                                seq: st.seq,
                                f: [s, m as u64, x0, y0 - x0, 0, 0],
                                payload: Vec::new(),
                            },
                            pp,
                        });
                        continue;
                    }
                    if m == nd - 1 {
                        // last data chunk: its partial parity goes in place
                        let x0 = x0.min(z.par_prefix);
                        let pp = parity(z, m, x0, y0, rel, src);
                        ios.push(SubIo::Write {
                            dev: l.parity_dev(zone, s),
                            off: l.member_off(s, x0),
                            data: pp,
                            gate: Gate::Row(s),
                        });
                        z.par_prefix = z.par_prefix.max(y0);
                        st.stats.parity_blocks += y0 - x0;
                        continue;
                    }
                    let pp = parity(z, m, x0, y0, rel, src);
                    match l.slot_row(s) {
                        Some(row) => {
                            ios.push(SubIo::Write {
                                dev: l.pp_dev(zone, s, m),
                                off: l.member_off(row, x0),
                                data: pp,
                                gate: Gate::Slot,
                            });
                            st.stats.pp_zrwa_blocks += y0 - x0;
                        }
                        None => {
                            st.seq += 1;
                            ios.push(SubIo::Md {
                                dev: l.parity_dev(zone, s),
                                rec: Record {
                                    kind: RecordKind::Pp,
                                    array_id,
                                    zone,
                                    gen: z.gen,
                                    seq: st.seq,
                                    f: [s, m as u64, x0, y0 - x0, 0, 0],
                                    payload: pp.into_vec(),
                                },
                            });
                            st.stats.pp_md_blocks += y0 - x0;
                        }
                    }
                }
            }
            pieces.push(Piece {
                start: a,
                end: e,
                ios,
            });
            s += 1;
        }
        pieces
    }
}

/// `dst ^= src` over their common length: 64-byte blocks (fixed-size, so
/// the compiler unrolls them into vector operations with one loop step per
/// block), then the remaining bytes.
pub(crate) fn xor_into(dst: &mut [u8], src: &[u8]) {
    const BLOCK_BYTES: usize = 64;
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    let mut d_blocks = dst.chunks_exact_mut(BLOCK_BYTES);
    let mut s_blocks = src.chunks_exact(BLOCK_BYTES);
    for (d, s) in (&mut d_blocks).zip(&mut s_blocks) {
        // always exact blocks: the conversions only tell the compiler the length
        if let (Ok(d), Ok(s)) = (
            <&mut [u8; BLOCK_BYTES]>::try_from(d),
            <&[u8; BLOCK_BYTES]>::try_from(s),
        ) {
            for (d, s) in d.iter_mut().zip(s) {
                *d ^= *s;
            }
        }
    }
    for (d, s) in d_blocks
        .into_remainder()
        .iter_mut()
        .zip(s_blocks.remainder())
    {
        *d ^= *s;
    }
}

/// Runs one member sub-I/O of zone `zone`, generation `gen`, after its gate
/// opens; `shared` is the logical write's data (for `SubIo::Data`).
pub(crate) async fn run_subio(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    io: SubIo,
    fua: bool,
    shared: &[u8],
) -> Result<(), NvmeError> {
    // the log appends are rare and their futures large: boxed, so the
    // common sub-I/O's future stays small (it is moved into a box per sub-I/O)
    match io {
        SubIo::Md { dev, rec } => Box::pin(md_append(inner, dev, rec)).await,
        SubIo::PpLog { dev, rec, pp } => Box::pin(pp_append(inner, dev, rec, pp)).await,
        SubIo::Write {
            dev,
            off,
            data: Payload::Bytes(data),
            gate,
        } => {
            let r = member_write(inner, zone, gen, dev, off, &data, gate, fua).await;
            inner.put_buf(data);
            r
        }
        SubIo::Write {
            dev,
            off,
            data: Payload::Zeros(n),
            gate,
        } => {
            let data = inner.zeros.get(..n).ok_or(NvmeStatus::InternalError)?;
            member_write(inner, zone, gen, dev, off, data, gate, fua).await
        }
        SubIo::Data {
            dev,
            off,
            range,
            gate,
        } => {
            let data = if inner.opts.timing_only {
                inner.zeros.get(..range.len())
            } else {
                shared.get(range)
            };
            let data = data.ok_or(NvmeStatus::InternalError)?;
            member_write(inner, zone, gen, dev, off, data, gate, fua).await
        }
    }
}

/// Writes `data` at member offset `off` of member `dev`'s zone once the
/// sub-I/O's gate opens.
#[allow(clippy::too_many_arguments)]
async fn member_write(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    dev: u32,
    off: u64,
    data: &[u8],
    gate: Gate,
    fua: bool,
) -> Result<(), NvmeError> {
    let nlb = (data.len() / inner.lba_bytes()) as u64;
    loop {
        {
            let mut st = inner.st.borrow_mut();
            if let Some(e) = st.poisoned {
                return Err(e);
            }
            let z = &mut st.z[zone as usize];
            if z.gen != gen {
                return Err(aborted());
            }
            if inner.failed.borrow()[dev as usize] {
                return Ok(());
            }
            let wp = z.member_wp[dev as usize];
            let l = inner.layout;
            if z.ready && !inner.opts.variant.zrwa_zones() {
                // normal zones: strictly in order per member zone
                // (the member's scheduler keeps the order downstream)
                let sub = z.sub_wp[dev as usize];
                if off < sub {
                    return Err(NvmeStatus::ZoneInvalidWrite.into());
                }
                if off == sub {
                    z.sub_wp[dev as usize] = off + nlb;
                    drop(st);
                    inner.wake_zone(zone);
                    break;
                }
            } else if z.ready {
                let window = off + nlb <= wp + l.zrwa_lbas;
                match gate {
                    Gate::Slot if off < wp => return Ok(()),
                    Gate::Slot if window => break,
                    Gate::Row(r) => {
                        if off < wp {
                            return Err(NvmeStatus::ZoneInvalidWrite.into());
                        }
                        let need = (r + 1).saturating_sub(l.h) * l.stripe_lbas();
                        if window && z.applied >= need {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
        inner.zwake[zone as usize].notified().await;
    }
    let Some(m) = inner.member(dev) else {
        return Ok(());
    };
    let slba = inner.mzone_start(zone) + off;
    let r = m.write(slba, data, IoFlags::with_fua(fua)).await;
    inner.member_result(dev, r)
}

/// Appends a record to a member's current metadata zone (switching to the
/// other one when it is full).
pub(crate) async fn md_append(inner: &Rc<Inner>, dev: u32, rec: Record) -> Result<(), NvmeError> {
    let data = rec.encode(inner.lba_bytes());
    let blocks = (data.len() / inner.lba_bytes()) as u64;
    log_append(inner, LogZone::Md, dev, &data).await?;
    inner.st.borrow_mut().stats.md_blocks += blocks;
    Ok(())
}

/// Appends a partial parity record to a member's PP log zone: a metadata
/// header block and the PP (RAIZN, Z, Z+S), or the PP alone (Z+S+M).
pub(crate) async fn pp_append(
    inner: &Rc<Inner>,
    dev: u32,
    mut rec: Record,
    pp: Payload,
) -> Result<(), NvmeError> {
    let b = inner.lba_bytes();
    let header_blocks = u64::from(inner.opts.variant.pp_header());
    let data = match pp {
        // timing only: the record's size in zeros (header included)
        Payload::Zeros(n) => {
            let len = header_blocks as usize * b + n;
            match inner.zeros.get(..len) {
                Some(z) => std::borrow::Cow::Borrowed(z),
                None => std::borrow::Cow::Owned(vec![0; len]),
            }
        }
        Payload::Bytes(v) if header_blocks > 0 => {
            rec.payload = v;
            std::borrow::Cow::Owned(rec.encode(b))
        }
        Payload::Bytes(v) => std::borrow::Cow::Owned(v),
    };
    log_append(inner, LogZone::Pp, dev, &data).await?;
    let mut st = inner.st.borrow_mut();
    st.stats.pp_log_blocks += (data.len() / b) as u64 - header_blocks;
    st.stats.pp_header_blocks += header_blocks;
    Ok(())
}

fn log_state(st: &mut State, log: LogZone, dev: u32) -> &mut MdMember {
    match log {
        LogZone::Md => &mut st.md[dev as usize],
        LogZone::Pp => &mut st.pplog[dev as usize],
    }
}

/// Appends `data` (FUA) to the current log zone of kind `log` of member
/// `dev`, switching to the other one when it is full.
async fn log_append(
    inner: &Rc<Inner>,
    log: LogZone,
    dev: u32,
    data: &[u8],
) -> Result<(), NvmeError> {
    for _attempt in 0..3 {
        loop {
            if log_state(&mut inner.st.borrow_mut(), log, dev).switching {
                inner.wake.notified().await;
            } else {
                break;
            }
        }
        let Some(m) = inner.member(dev) else {
            return Ok(());
        };
        let cur = log_state(&mut inner.st.borrow_mut(), log, dev).cur;
        let r = m
            .append(inner.log_zone_start(log, cur), data, IoFlags::FUA)
            .await;
        match r {
            Ok(_) => return Ok(()),
            Err(e)
                if matches!(
                    e.status,
                    NvmeStatus::ZoneIsFull | NvmeStatus::ZoneBoundaryError
                ) =>
            {
                log_switch(inner, log, dev, cur).await?;
            }
            Err(e) => return inner.member_result(dev, Err(e)),
        }
    }
    Err(NvmeStatus::InternalError.into())
}

/// The current log zone of `dev` is full (or the next record does not fit):
/// finish it, reset the other one and make it current. A metadata zone
/// starts with a new superblock and the zone generations; a PP log zone
/// (RAIZN's GC) with the partial stripes of the open zones whose parity
/// lives on `dev`, so the PP records in the zone being dropped are no longer
/// needed.
async fn log_switch(inner: &Rc<Inner>, log: LogZone, dev: u32, full: u32) -> Result<(), NvmeError> {
    {
        let mut st = inner.st.borrow_mut();
        let md = log_state(&mut st, log, dev);
        if md.cur != full || md.switching {
            return Ok(()); // someone else switched
        }
        md.switching = true;
    }
    let result = async {
        let Some(m) = inner.member(dev) else {
            return Ok(());
        };
        // an append that does not fit leaves the zone short of full but
        // active: finish it (a no-op when full, as RAIZN's GC does), or it
        // and the new one would hold two of the member's active zones
        let new = 1 - full;
        for (action, which) in [(ZoneAction::Finish, full), (ZoneAction::Reset, new)] {
            let r = m
                .zone_send(ZoneSendCmd {
                    action,
                    slba: inner.log_zone_start(log, which),
                    select_all: false,
                })
                .await;
            inner.member_result(dev, r)?;
        }
        let epoch = log_state(&mut inner.st.borrow_mut(), log, dev).epoch + 1;
        let recs = match log {
            LogZone::Md => vec![
                crate::recovery::superblock(inner, dev, epoch),
                crate::recovery::gen_table(inner),
            ],
            LogZone::Pp => {
                inner.st.borrow_mut().stats.pp_gc_count += 1;
                partial_stripes_on(inner, dev)
            }
        };
        for rec in recs {
            let data = if log == LogZone::Pp && !inner.opts.variant.pp_header() {
                rec.payload
            } else {
                rec.encode(inner.lba_bytes())
            };
            let r = m
                .append(inner.log_zone_start(log, new), &data, IoFlags::FUA)
                .await
                .map(|_| ());
            inner.member_result(dev, r)?;
            let blocks = (data.len() / inner.lba_bytes()) as u64;
            let mut st = inner.st.borrow_mut();
            match log {
                LogZone::Md => st.stats.md_blocks += blocks,
                LogZone::Pp => st.stats.pp_gc_blocks += blocks,
            }
        }
        let mut st = inner.st.borrow_mut();
        let md = log_state(&mut st, log, dev);
        md.cur = new;
        md.epoch = epoch;
        Ok(())
    }
    .await;
    log_state(&mut inner.st.borrow_mut(), log, dev).switching = false;
    inner.wake_all();
    result
}

/// The partial stripe data of every zone whose parity member is `dev`, as
/// records for a PP log zone GC.
fn partial_stripes_on(inner: &Inner, dev: u32) -> Vec<Record> {
    let l = inner.layout;
    let mut st = inner.st.borrow_mut();
    let mut out = Vec::new();
    let mut seq = st.seq;
    for (zone, z) in st.z.iter().enumerate() {
        let zone = zone as u32;
        let s = z.buf_stripe;
        let kept = inner.opts.timing_only || !z.buf.is_empty();
        if !kept || !z.ready || l.parity_dev(zone, s) != dev {
            continue;
        }
        let filled = z.submit_end.saturating_sub(s * l.stripe_lbas());
        if filled == 0 || filled >= l.stripe_lbas() {
            continue;
        }
        seq += 1;
        let bytes = filled as usize * inner.lba_bytes();
        let payload = if inner.opts.timing_only {
            vec![0; bytes]
        } else {
            z.buf[..bytes.min(z.buf.len())].to_vec()
        };
        out.push(Record {
            kind: RecordKind::Pp,
            array_id: inner.array_id.get(),
            zone,
            gen: z.gen,
            seq,
            // raw data of the partial stripe (f[4] = 1), as RAIZN's GC keeps it
            f: [s, 0, 0, filled, 1, 0],
            payload,
        });
    }
    st.seq = seq;
    out
}

/// Opens every member zone of `zone` with a ZRWA (first write of a generation).
async fn ensure_ready(inner: &Rc<Inner>, zone: u32, gen: u64) -> Result<(), NvmeError> {
    loop {
        // wait for the zone itself, or for a member active zone
        let for_members = {
            let st = inner.st.borrow();
            if let Some(e) = st.poisoned {
                return Err(e);
            }
            let z = &st.z[zone as usize];
            if z.gen != gen {
                return Err(aborted());
            }
            if z.ready {
                return Ok(());
            }
            if !z.busy && !z.opening {
                if st.member_active_zones < inner.cfg.max_active_zones {
                    break;
                }
                // every member active zone is taken, by zones still
                // finishing or resetting
                true
            } else {
                false
            }
        };
        if for_members {
            inner.wake.notified().await;
        } else {
            inner.zwake[zone as usize].notified().await;
        }
    }
    {
        let mut st = inner.st.borrow_mut();
        Inner::hold_members(&mut st, zone);
        st.z[zone as usize].opening = true;
    }
    let mut result = Ok(());
    for dev in 0..inner.layout.n {
        let opened = inner
            .member_zone_send(
                dev,
                zone,
                ZoneAction::Open {
                    zrwa: inner.opts.variant.zrwa_zones(),
                },
            )
            .await;
        if let Err(e) = opened {
            result = Err(e);
            break;
        }
    }
    let mut st = inner.st.borrow_mut();
    let z = &mut st.z[zone as usize];
    z.opening = false;
    if result.is_ok() && z.gen == gen {
        z.ready = true;
    }
    drop(st);
    inner.wake_zone(zone);
    result
}

/// Starts the ZRWA manager of a zone if it has work and is not running.
pub(crate) fn kick_manager(inner: &Rc<Inner>, zone: u32) {
    let gen = {
        let mut st = inner.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.manager || z.applied >= z.frontier {
            return;
        }
        z.manager = true;
        z.inflight += 1;
        z.gen
    };
    let inner2 = inner.clone();
    drop(inner.handle.spawn(async move {
        let _ = manage(&inner2, zone, gen).await;
        let mut st = inner2.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.gen == gen {
            z.manager = false;
            z.inflight -= 1;
        } else {
            z.old_inflight -= 1;
        }
        drop(st);
        inner2.wake_zone(zone);
    }));
}

/// Advances member `dev`'s write pointer in zone `zone` to `target`
/// (zone-relative) with explicit ZRWA flushes of at most ZRWASZ each.
pub(crate) async fn advance(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    dev: u32,
    target: u64,
) -> Result<(), NvmeError> {
    let l = inner.layout;
    loop {
        let (cur, g) = {
            let st = inner.st.borrow();
            let z = &st.z[zone as usize];
            (z.member_wp[dev as usize], z.gen)
        };
        if g != gen {
            return Err(aborted());
        }
        if cur >= target || cur >= l.member_zone_cap {
            return Ok(());
        }
        let Some(m) = inner.member(dev) else {
            return Ok(());
        };
        let next = target.min(cur + l.zrwa_lbas);
        let r = m
            .zone_send(ZoneSendCmd {
                action: ZoneAction::FlushZrwa,
                slba: inner.mzone_start(zone) + next - 1,
                select_all: false,
            })
            .await;
        inner.member_result(dev, r)?;
        let mut st = inner.st.borrow_mut();
        st.stats.zrwa_flushes += 1;
        let z = &mut st.z[zone as usize];
        if z.gen != gen {
            return Err(aborted());
        }
        let w = &mut z.member_wp[dev as usize];
        *w = (*w).max(next);
    }
}

/// Flushes every surviving member.
pub(crate) async fn flush_members(inner: &Rc<Inner>) -> Result<(), NvmeError> {
    let mut handles = Vec::new();
    for dev in 0..inner.layout.n {
        let Some(m) = inner.member(dev) else { continue };
        let inner2 = inner.clone();
        handles.push(inner.handle.spawn(async move {
            let r = m.flush().await;
            inner2.st.borrow_mut().stats.member_flushes += 1;
            inner2.member_result(dev, r)
        }));
    }
    let res = join_all(handles).await;
    res
}

async fn advance_all(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    list: Vec<(u32, u64)>,
) -> Result<(), NvmeError> {
    let mut futs = Vec::new();
    for (dev, t) in list {
        if inner.st.borrow().z[zone as usize].member_wp[dev as usize] >= t {
            continue; // nothing to flush (advance would return at once)
        }
        futs.push(Box::pin(advance(inner, zone, gen, dev, t)) as SubFuture<'_>);
    }
    join_in_place(futs).await
}

/// The ZRWA manager of one zone: advances member write pointers until they
/// encode the completed prefix.
async fn manage(inner: &Rc<Inner>, zone: u32, gen: u64) -> Result<(), NvmeError> {
    let l = inner.layout;
    loop {
        let d = {
            let st = inner.st.borrow();
            if st.poisoned.is_some() {
                return Ok(());
            }
            let z = &st.z[zone as usize];
            if z.gen != gen || z.applied >= z.frontier {
                return Ok(());
            }
            z.frontier
        };
        if inner.opts.flush_before_advance {
            flush_members(inner).await?;
        }
        if inner.opts.variant.zrwa_zones() {
            // first chunk of the zone: no previous member to carry step 2
            let first = {
                let mut st = inner.st.borrow_mut();
                let z = &mut st.z[zone as usize];
                if z.gen != gen {
                    return Err(aborted());
                }
                let first = inner.opts.policy != Policy::Stripe
                    && !z.first_chunk_logged
                    && d / l.chunk_lbas == 1;
                z.first_chunk_logged |= first;
                first
            };
            if first {
                log_wp(inner, zone, gen, d).await?;
            }
            let (t, pair) = l.targets(zone, d, inner.opts.policy);
            let pair_list: Vec<(u32, u64)> = pair.iter().map(|&dv| (dv, t[dv as usize])).collect();
            advance_all(inner, zone, gen, pair_list).await?;
            let rest: Vec<(u32, u64)> = (0..l.n)
                .filter(|dv| !pair.contains(dv))
                .map(|dv| (dv, t[dv as usize]))
                .collect();
            advance_all(inner, zone, gen, rest).await?;
        } else {
            // normal zones: the member write pointers moved with the writes
            let (t, _) = l.targets(zone, d, Policy::Chunk);
            let mut st = inner.st.borrow_mut();
            let z = &mut st.z[zone as usize];
            for (w, t) in z.member_wp.iter_mut().zip(t) {
                *w = (*w).max(t);
            }
        }
        if d >= l.logical_cap() {
            if l.rows * l.chunk_lbas < l.member_zone_cap {
                finish_members(inner, zone, gen).await?;
            }
            // the member zones are full
            inner.release_members(zone, gen);
        }
        let mut st = inner.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.gen != gen {
            return Ok(());
        }
        z.applied = z.applied.max(d);
        drop(st);
        inner.wake_zone(zone);
    }
}

async fn finish_members(inner: &Rc<Inner>, zone: u32, gen: u64) -> Result<(), NvmeError> {
    for dev in 0..inner.layout.n {
        if inner.st.borrow().z[zone as usize].gen != gen {
            return Err(aborted());
        }
        if !inner
            .member_zone_send(dev, zone, ZoneAction::Finish)
            .await?
        {
            continue;
        }
        let cap = inner.layout.member_zone_cap;
        let mut st = inner.st.borrow_mut();
        let z = &mut st.z[zone as usize];
        if z.gen != gen {
            return Err(aborted());
        }
        z.member_wp[dev as usize] = cap;
    }
    Ok(())
}

/// Progress (logical LBAs) the applied member write pointers of a zone claim.
fn claimed(inner: &Inner, st: &State, zone: u32) -> u64 {
    let z = &st.z[zone as usize];
    let failed = inner.failed.borrow();
    let mut k = 0;
    for dev in 0..inner.layout.n {
        if !failed[dev as usize] {
            k = k.max(inner.layout.claim(zone, dev, z.member_wp[dev as usize]));
        }
    }
    k * inner.layout.chunk_lbas
}

/// Writes WP-log entries "complete up to `end`" (two copies) unless the
/// member write pointers already say so.
pub(crate) async fn log_wp(
    inner: &Rc<Inner>,
    zone: u32,
    gen: u64,
    end: u64,
) -> Result<(), NvmeError> {
    let l = inner.layout;
    if !inner.opts.variant.zrwa_zones() {
        // normal zones: a write is durable where the members put it
        return Ok(());
    }
    let (entry, idx) = {
        let mut st = inner.st.borrow_mut();
        if claimed(inner, &st, zone) >= end || st.z[zone as usize].logged_end >= end {
            return Ok(());
        }
        st.seq += 1;
        let seq = st.seq;
        let z = &mut st.z[zone as usize];
        if z.gen != gen {
            return Err(aborted());
        }
        z.wplog_idx += 1;
        (
            WpEntry {
                array_id: inner.array_id.get(),
                zone,
                gen,
                seq,
                end,
            },
            z.wplog_idx,
        )
    };
    let s = (end - 1) / l.stripe_lbas();
    let mut handles = Vec::new();
    for dev in l.wplog_devs(zone, s) {
        let io = match l.slot_row(s) {
            Some(row) => SubIo::Write {
                dev,
                off: l.member_off(row, idx % l.wplog_slots()),
                data: Payload::Bytes(entry.encode(inner.lba_bytes())),
                gate: Gate::Slot,
            },
            None => SubIo::Md {
                dev,
                rec: Record {
                    kind: RecordKind::WpLog,
                    array_id: entry.array_id,
                    zone,
                    gen,
                    seq: entry.seq,
                    f: [end, 0, 0, 0, 0, 0],
                    payload: Vec::new(),
                },
            },
        };
        inner.st.borrow_mut().stats.wplog_blocks += 1;
        handles.push(Box::pin(run_subio(inner, zone, gen, io, true, &[])) as SubFuture<'_>);
    }
    join_in_place(handles).await?;
    let mut st = inner.st.borrow_mut();
    let z = &mut st.z[zone as usize];
    // the zone may have been reset while the entries were written: they
    // belong to the old generation and say nothing about the new one
    if z.gen != gen {
        return Err(aborted());
    }
    z.logged_end = z.logged_end.max(end);
    Ok(())
}

/// Waits until zone `zone` has completed everything below `end`.
async fn wait_frontier(inner: &Rc<Inner>, zone: u32, gen: u64, end: u64) -> Result<(), NvmeError> {
    loop {
        {
            let st = inner.st.borrow();
            if let Some(e) = st.poisoned {
                return Err(e);
            }
            let z = &st.z[zone as usize];
            if z.gen != gen {
                return Err(aborted());
            }
            if z.frontier >= end {
                return Ok(());
            }
        }
        inner.pwake[zone as usize].notified().await;
    }
}

/// Waits until no piece, WP-log write or manager of the zone's current
/// generation (or older ones) is running.
async fn drain(inner: &Rc<Inner>, zone: u32) {
    loop {
        {
            let st = inner.st.borrow();
            let z = &st.z[zone as usize];
            if (z.inflight == 0 && z.old_inflight == 0) || st.poisoned.is_some() {
                return;
            }
        }
        inner.pwake[zone as usize].notified().await;
    }
}

impl RaidArray {
    /// The array's geometry.
    pub fn layout(&self) -> Layout {
        self.inner.layout
    }
    pub fn options(&self) -> RaidOptions {
        self.inner.opts
    }
    pub fn stats(&self) -> RaidStats {
        self.inner.st.borrow().stats
    }
    /// Members that failed (their commands returned Host Pathing Error).
    pub fn failed_members(&self) -> Vec<usize> {
        self.inner.failed_members()
    }
    /// Marks a member failed (as if its commands had started failing).
    pub fn fail_member(&self, index: usize) {
        if index < self.inner.n() {
            self.inner.mark_failed(index as u32);
        }
    }
    /// Member write pointers (zone-relative) as the array last set them.
    pub fn member_write_pointers(&self, zone: u32) -> Vec<u64> {
        self.inner.st.borrow().z[zone as usize].member_wp.clone()
    }
    /// The completed prefix of a logical zone (LBAs from its start).
    pub fn completed_lbas(&self, zone: u32) -> u64 {
        self.inner.st.borrow().z[zone as usize].frontier
    }

    /// Waits until every zone's background work (pieces, WP advancement,
    /// resets) is done.
    pub async fn quiesce(&self) {
        let zones = self.inner.cfg.zone_count;
        for z in 0..zones {
            drain(&self.inner, z).await;
        }
    }

    /// Clean shutdown: waits for background work, flushes the members and
    /// logs every zone's write pointer, so that `open` finds each zone exactly
    /// where it was (except with the stripe policy, which recovers whole
    /// stripes only). The array stays usable.
    pub async fn shutdown(&self) -> Result<(), NvmeError> {
        let inner = &self.inner;
        self.quiesce().await;
        inner.check_alive()?;
        flush_members(inner).await?;
        let zones: Vec<(u32, u64, u64)> = {
            let st = inner.st.borrow();
            st.z.iter()
                .enumerate()
                .filter(|(_, z)| z.ready && z.frontier > 0)
                .map(|(i, z)| (i as u32, z.gen, z.frontier))
                .collect()
        };
        for (zone, gen, d) in zones {
            if d < inner.layout.logical_cap() {
                log_wp(inner, zone, gen, d).await?;
            }
        }
        Ok(())
    }

    async fn write_impl(
        &self,
        slba: u64,
        data: &[u8],
        fua: bool,
        append: bool,
    ) -> Result<u64, NvmeError> {
        let inner = &self.inner;
        inner.check_alive()?;
        let b = inner.lba_bytes();
        if data.is_empty() || data.len() % b != 0 {
            return Err(NvmeStatus::InvalidField.into());
        }
        let nlb = (data.len() / b) as u64;
        // the submission worker (one FIFO per zone, one for all with RAIZN)
        let cost = inner.opts.worker_ns_per_write;
        if cost > 0 {
            let fifo = {
                let st = inner.st.borrow();
                match st.zones.zone_of(slba) {
                    Some(_) if inner.opts.variant.single_fifo() => Some(0),
                    Some(z) => Some(z as usize),
                    None => None,
                }
            };
            if let Some(f) = fifo {
                let now = inner.handle.now_ns();
                let at = {
                    let mut st = inner.st.borrow_mut();
                    let free = &mut st.fifo_free_ns[f];
                    *free = (*free).max(now) + cost;
                    *free
                };
                inner.handle.sleep_until(at).await;
                inner.check_alive()?;
            }
        }
        let (zone, gen, off, pieces) = {
            let mut st = inner.st.borrow_mut();
            let eff = if append {
                st.zones.append(slba, nlb)?
            } else {
                st.zones.write(slba, nlb)?
            };
            let zone = eff.zone;
            let off = eff.slba - inner.logical_zone_start(zone);
            st.stats.host_blocks += nlb;
            let pieces = inner.plan(&mut st, zone, off, data);
            let z = &mut st.z[zone as usize];
            z.submit_end = z.submit_end.max(off + nlb);
            z.inflight += pieces.len() as u32;
            (zone, z.gen, off, pieces)
        };
        let ready = self.inner.st.borrow().z[zone as usize].ready;
        if !ready {
            let inner2 = inner.clone();
            drop(inner.handle.spawn(async move {
                let _ = ensure_ready(&inner2, zone, gen).await;
            }));
        }
        // one task per logical write (it keeps running if the caller stops
        // waiting): its sub-I/Os run in place, borrowing its copy of the data
        let task = inner.handle.spawn(run_pieces(
            inner.clone(),
            zone,
            gen,
            pieces,
            if inner.opts.timing_only {
                Vec::new() // the sub-I/Os carry zeros
            } else {
                let mut copy = inner.take_buf();
                copy.extend_from_slice(data);
                copy
            },
            fua,
        ));
        task.await?;
        if fua && inner.opts.policy == Policy::WpLog {
            // boxed: keeps the common write's future small
            Box::pin(async {
                wait_frontier(inner, zone, gen, off + nlb).await?;
                let d = inner.st.borrow().z[zone as usize].frontier;
                log_wp(inner, zone, gen, d).await
            })
            .await?;
        }
        Ok(inner.logical_zone_start(zone) + off)
    }

    async fn read_impl(&self, slba: u64, buf: &mut [u8]) -> Result<(), NvmeError> {
        let inner = &self.inner;
        if let Some(e) = inner.st.borrow().poisoned {
            return Err(e);
        }
        let b = inner.lba_bytes();
        if buf.is_empty() || buf.len() % b != 0 {
            return Err(NvmeStatus::InvalidField.into());
        }
        let nlb = (buf.len() / b) as u64;
        let (zone, written) = {
            let st = inner.st.borrow();
            st.zones.check_read(slba, nlb)?;
            let zone = st.zones.zone_of(slba).ok_or(NvmeStatus::LbaOutOfRange)?;
            let wp = st.zones.write_pointer(zone).unwrap_or(0);
            (zone, wp - inner.logical_zone_start(zone))
        };
        let l = inner.layout;
        let off = slba - inner.logical_zone_start(zone);
        let end = off + nlb;
        buf.fill(0);
        let mut x = off;
        while x < end.min(written) {
            let loc = l.locate(x);
            let len = (l.chunk_lbas - loc.in_chunk).min(end.min(written) - x);
            let dst = &mut buf[((x - off) as usize) * b..((x - off + len) as usize) * b];
            let dev = l.data_dev(zone, loc.stripe, loc.idx);
            let moff = l.member_off(loc.stripe, loc.in_chunk);
            let mut done = false;
            if let Some(m) = inner.member(dev) {
                let r = m.read(inner.mzone_start(zone) + moff, dst).await;
                match r {
                    Ok(()) => done = true,
                    Err(e) if is_member_gone(&e) => inner.mark_failed(dev),
                    Err(e) => return Err(e),
                }
            }
            if !done {
                self.degraded_read(zone, loc.stripe, dev, loc.in_chunk, dst)
                    .await?;
            }
            x += len;
        }
        Ok(())
    }

    /// Rebuilds blocks of failed member `dev` at row `stripe`, in-chunk offset
    /// `o`: for the partial stripe from the stripe buffer, or (ZRAID, no
    /// buffer) from the media and its partial parity; else XOR of the others.
    async fn degraded_read(
        &self,
        zone: u32,
        stripe: u64,
        dev: u32,
        o: u64,
        dst: &mut [u8],
    ) -> Result<(), NvmeError> {
        let inner = &self.inner;
        let l = inner.layout;
        let b = inner.lba_bytes();
        inner.st.borrow_mut().stats.degraded_reads += 1;
        let idx = l.seq_of(zone, stripe, dev) as usize;
        let from = (idx * l.chunk_lbas as usize + o as usize) * b;
        let partial = {
            let st = inner.st.borrow();
            let z = &st.z[zone as usize];
            if z.buf_stripe == stripe && z.filled > 0 {
                if from + dst.len() <= z.buf.len() {
                    dst.copy_from_slice(&z.buf[from..from + dst.len()]);
                    return Ok(());
                }
                // completed blocks of the stripe (later ones race writes)
                let sl = l.stripe_lbas();
                Some(z.frontier.clamp(stripe * sl, (stripe + 1) * sl))
            } else {
                None
            }
        };
        if let Some(d) = partial {
            dst.fill(0);
            if d > stripe * l.stripe_lbas() {
                let data = crate::recovery::partial_stripe_data(inner, zone, d).await?;
                if from < data.len() {
                    let n = dst.len().min(data.len() - from);
                    dst[..n].copy_from_slice(&data[from..from + n]);
                }
            }
            return Ok(());
        }
        dst.fill(0);
        let mut tmp = vec![0u8; dst.len()];
        for other in 0..l.n {
            if other == dev {
                continue;
            }
            let m = inner
                .member(other)
                .ok_or(NvmeError::injected(NvmeStatus::HostPathingError))?;
            m.read(inner.mzone_start(zone) + l.member_off(stripe, o), &mut tmp)
                .await?;
            xor_into(dst, &tmp);
        }
        Ok(())
    }

    async fn zone_send_impl(&self, cmd: ZoneSendCmd) -> Result<(), NvmeError> {
        let inner = &self.inner;
        inner.check_alive()?;
        let changes = inner.st.borrow_mut().zones.zone_send(cmd)?.changes;
        let mut tasks = Vec::new();
        for ch in changes {
            let zone = ch.zone;
            match ch.to {
                ZoneState::Empty if ch.from != ZoneState::Empty => {
                    let (gen, held) = {
                        let mut st = inner.st.borrow_mut();
                        let z = &mut st.z[zone as usize];
                        let gen = z.gen + 1;
                        let held = z.holds_members;
                        z.restart(gen);
                        // the member zones stay active until they are reset
                        z.holds_members = held;
                        z.busy = true;
                        (gen, held)
                    };
                    let inner2 = inner.clone();
                    tasks.push(inner.handle.spawn(async move {
                        let r = reset_members(&inner2, zone, gen).await;
                        if held {
                            inner2.release_members(zone, gen);
                        }
                        inner2.st.borrow_mut().z[zone as usize].busy = false;
                        inner2.wake_zone(zone);
                        r
                    }));
                }
                ZoneState::Full if ch.from != ZoneState::Full => {
                    let inner2 = inner.clone();
                    tasks.push(
                        inner
                            .handle
                            .spawn(async move { finish_logical(&inner2, zone).await }),
                    );
                }
                ZoneState::ExplicitlyOpened if ch.from == ZoneState::Empty => {
                    let gen = inner.st.borrow().z[zone as usize].gen;
                    let inner2 = inner.clone();
                    tasks.push(
                        inner
                            .handle
                            .spawn(async move { ensure_ready(&inner2, zone, gen).await }),
                    );
                }
                _ => {}
            }
        }
        let res = join_all(tasks).await;
        res
    }

    async fn flush_impl(&self) -> Result<(), NvmeError> {
        let inner = &self.inner;
        inner.check_alive()?;
        let snapshot: Vec<(u32, u64, u64)> = {
            let st = inner.st.borrow();
            st.z.iter()
                .enumerate()
                .filter(|(_, z)| z.frontier > 0 && z.ready)
                .map(|(i, z)| (i as u32, z.gen, z.frontier))
                .collect()
        };
        flush_members(inner).await?;
        if inner.opts.policy == Policy::WpLog {
            for (zone, gen, d) in snapshot {
                if d < inner.layout.logical_cap() {
                    log_wp(inner, zone, gen, d).await?;
                }
            }
        }
        Ok(())
    }
}

/// Reset of a logical zone: log it, reset the member zones, log completion.
async fn reset_members(inner: &Rc<Inner>, zone: u32, gen: u64) -> Result<(), NvmeError> {
    drain(inner, zone).await;
    inner.check_alive()?;
    let log = |kind| Record {
        kind,
        array_id: inner.array_id.get(),
        zone,
        gen,
        seq: inner.next_seq(),
        f: [0; 6],
        payload: Vec::new(),
    };
    for dev in 0..inner.layout.n {
        md_append(inner, dev, log(RecordKind::Reset)).await?;
    }
    for dev in 0..inner.layout.n {
        if !inner.member_zone_send(dev, zone, ZoneAction::Reset).await? {
            continue;
        }
    }
    for dev in 0..inner.layout.n {
        md_append(inner, dev, log(RecordKind::ResetDone)).await?;
    }
    Ok(())
}

/// Finish of a logical zone: wait for its writes, log where its data ends,
/// finish the member zones.
async fn finish_logical(inner: &Rc<Inner>, zone: u32) -> Result<(), NvmeError> {
    inner.st.borrow_mut().z[zone as usize].busy = true;
    drain(inner, zone).await;
    let r = async {
        inner.check_alive()?;
        let (gen, d, ready) = {
            let st = inner.st.borrow();
            let z = &st.z[zone as usize];
            (z.gen, z.frontier, z.ready)
        };
        let _ = ready;
        if d < inner.layout.logical_cap() {
            for dev in 0..inner.layout.n {
                let rec = Record {
                    kind: RecordKind::Finish,
                    array_id: inner.array_id.get(),
                    zone,
                    gen,
                    seq: inner.next_seq(),
                    f: [d, 0, 0, 0, 0, 0],
                    payload: Vec::new(),
                };
                md_append(inner, dev, rec).await?;
            }
        }
        finish_members(inner, zone, gen).await?;
        inner.release_members(zone, gen);
        Ok(())
    }
    .await;
    inner.st.borrow_mut().z[zone as usize].busy = false;
    inner.wake_zone(zone);
    r
}

impl ZonedDevice for RaidArray {
    fn config(&self) -> &ZonedConfig {
        &self.inner.cfg
    }

    /// Writes to a logical zone are ordered at submission (the logical write
    /// pointer moves there) and sent to the members in that order.
    fn orders_zone_writes(&self) -> bool {
        true
    }

    fn report_zones(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> CmdFuture<'_, Vec<ZoneDescriptor>> {
        Box::pin(async move {
            Ok(self
                .inner
                .st
                .borrow()
                .zones
                .report(start_lba, filter, max_zones)?)
        })
    }

    // every command passes the rebuild gate (`CommandGate`)
    fn read<'a>(&'a self, slba: u64, buf: &'a mut [u8]) -> CmdFuture<'a, ()> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.read_impl(slba, buf).await
        })
    }

    fn write<'a>(&'a self, slba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, ()> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.write_impl(slba, data, flags.fua, false).await?;
            Ok(())
        })
    }

    fn append<'a>(&'a self, zslba: u64, data: &'a [u8], flags: IoFlags) -> CmdFuture<'a, u64> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.write_impl(zslba, data, flags.fua, true).await
        })
    }

    fn zone_send(&self, cmd: ZoneSendCmd) -> CmdFuture<'_, ()> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.zone_send_impl(cmd).await
        })
    }

    fn flush(&self) -> CmdFuture<'_, ()> {
        Box::pin(async move {
            let _pass = self.inner.gate.enter().await;
            self.flush_impl().await
        })
    }
}

/// Runs the pieces of one logical write: every sub-I/O of every piece in
/// flight at once (each waits for its own gate), a piece completed (its blocks
/// marked in the zone's bitmap, the ZRWA manager kicked) when its last sub-I/O
/// is. The result is the last error, if any.
async fn run_pieces(
    inner: Rc<Inner>,
    zone: u32,
    gen: u64,
    pieces: Vec<Piece>,
    data: Vec<u8>,
    fua: bool,
) -> Result<(), NvmeError> {
    // per piece: sub-I/Os left, result so far, its span (one allocation)
    let mut left: Vec<PieceLeft> = Vec::with_capacity(pieces.len());
    let mut futs: Vec<(usize, SubFuture<'_>)> =
        Vec::with_capacity(pieces.iter().map(|p| p.ios.len()).sum());
    for (i, p) in pieces.into_iter().enumerate() {
        left.push(PieceLeft {
            ios: p.ios.len(),
            res: Ok(()),
            span: (p.start, p.end),
        });
        for io in p.ios {
            futs.push((i, Box::pin(run_subio(&inner, zone, gen, io, fua, &data))));
        }
    }
    let finish_piece = |span: (u64, u64), res: Result<(), NvmeError>| {
        {
            let mut st = inner.st.borrow_mut();
            let z = &mut st.z[zone as usize];
            if z.gen == gen {
                if res.is_ok() {
                    z.mark(span.0, span.1);
                }
                z.inflight -= 1;
            } else {
                z.old_inflight -= 1;
            }
        }
        inner.wake_progress(zone);
        if res.is_ok() {
            kick_manager(&inner, zone);
        }
        res
    };
    // per write (ZRAID's completion handler): every piece is completed once
    // the last sub-I/O of the write is
    let per_write = inner.opts.progress_per_write;
    let mut res = Ok(());
    for l in &left {
        if l.ios == 0 && !per_write {
            if let Err(e) = finish_piece(l.span, Ok(())) {
                res = Err(e);
            }
        }
    }
    poll_all(futs, |&i, r| {
        let l = &mut left[i];
        if let Err(e) = r {
            l.res = Err(e);
        }
        l.ios -= 1;
        if l.ios == 0 && !per_write {
            if let Err(e) = finish_piece(l.span, l.res) {
                res = Err(e);
            }
        }
    })
    .await;
    if per_write {
        for l in &left {
            if let Err(e) = finish_piece(l.span, l.res) {
                res = Err(e);
            }
        }
    }
    inner.put_buf(data);
    res
}

/// A piece of a logical write in flight: its sub-I/Os not done yet, the
/// last error of those done, its zone span.
struct PieceLeft {
    ios: usize,
    res: Result<(), NvmeError>,
    span: (u64, u64),
}

type SubFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), NvmeError>> + 'a>>;

/// Polls `futs` together until all are done; the result is the last error,
/// if any (all run to completion either way).
async fn join_in_place<'a>(futs: Vec<SubFuture<'a>>) -> Result<(), NvmeError> {
    let mut res = Ok(());
    poll_all(futs.into_iter().map(|f| ((), f)).collect(), |_, r| {
        if let Err(e) = r {
            res = Err(e);
        }
    })
    .await;
    res
}

/// Polls tagged futures together (in the caller's task, no task each) until
/// all are done, handing each one's tag and result to `done` as it finishes.
async fn poll_all<'a, T>(
    mut futs: Vec<(T, SubFuture<'a>)>,
    mut done: impl FnMut(&T, Result<(), NvmeError>),
) {
    std::future::poll_fn(|cx| {
        futs.retain_mut(|(tag, f)| match f.as_mut().poll(cx) {
            std::task::Poll::Pending => true,
            std::task::Poll::Ready(r) => {
                done(tag, r);
                false
            }
        });
        if futs.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}

/// Waits for every task; the result is the last error, if any (all tasks
/// run to completion either way).
pub(crate) async fn join_all<E>(tasks: Vec<JoinHandle<Result<(), E>>>) -> Result<(), E> {
    let mut res = Ok(());
    for t in tasks {
        if let Err(e) = t.await {
            res = Err(e);
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::xor_into;

    /// The blocked XOR equals a byte-by-byte XOR for every length and
    /// alignment around the block size, over the common length only.
    #[test]
    fn xor_into_matches_bytewise() {
        for dst_len in [0usize, 1, 63, 64, 65, 127, 128, 200, 8192] {
            for src_len in [0usize, 1, 64, 100, 8192 + 3] {
                for skew in [0usize, 1, 7] {
                    let src: Vec<u8> = (0..src_len + skew).map(|i| (i * 31 + 7) as u8).collect();
                    let mut dst: Vec<u8> =
                        (0..dst_len + skew).map(|i| (i * 17 + 3) as u8).collect();
                    let mut want = dst.clone();
                    let n = dst_len.min(src_len);
                    for i in 0..n {
                        want[skew + i] ^= src[skew + i];
                    }
                    xor_into(&mut dst[skew..], &src[skew..]);
                    assert_eq!(dst, want, "dst {dst_len} src {src_len} skew {skew}");
                }
            }
        }
    }
}
