//! The array's shared state and its small helpers: `Inner` (members, layout,
//! options, wakers, the buffer pool and the rebuild `CommandGate`), `State`
//! (the logical `ZoneSet`, one `ZoneRt` per logical zone, counters and the
//! members' log-zone state), and `ZoneRt` itself (generation, readiness,
//! completion bitmap and frontier, member write pointers). `ZoneRt`'s stripe
//! buffer and running-parity methods belong to the planner (`plan.rs`); the
//! tasks that drive the state are in `engine.rs`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use zns_core::{NvmeError, NvmeStatus, ZoneAction, ZoneSendCmd, ZoneSet, ZonedConfig, ZonedDevice};
use zns_sim::sync::Notify;
use zns_sim::Handle;

use crate::layout::Layout;
use crate::stats::RaidStats;
use crate::RaidOptions;

/// Where a logical zone's member zones are in being opened for the zone's
/// current generation (`engine::ensure_ready`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ZonePhase {
    /// Not opened for this generation (a new or reset zone).
    Closed,
    /// Being opened (with a ZRWA where the variant uses one).
    Opening,
    /// The member zones hold their ZRWA (opened for this generation).
    Ready,
}

/// Per logical zone runtime state.
pub(crate) struct ZoneRt {
    pub gen: u64,
    /// The member zones' opening for this generation. The other flags below
    /// (`busy`, `manager`, `first_chunk_logged`, `holds_members`) are not
    /// phases of it: each can be set in any phase.
    pub phase: ZonePhase,
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
    /// media, recoverable from the PP (`media::partial_stripe_data`).
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
            phase: ZonePhase::Closed,
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

    /// The member zones hold their ZRWA (opened for this generation).
    pub fn ready(&self) -> bool {
        self.phase == ZonePhase::Ready
    }

    /// Forget the zone's contents (reset), starting generation `gen`.
    pub fn restart(&mut self, gen: u64) {
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

    pub fn mark(&mut self, a: u64, b: u64) {
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
    /// When each member's PP-log append mutex is free again (virtual ns;
    /// `RaidOptions::pp_mutex_ns`), grown on first use.
    pub pp_mutex_free_ns: Vec<u64>,
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

pub(crate) fn is_member_gone(e: &NvmeError) -> bool {
    e.status == NvmeStatus::HostPathingError
}

pub(crate) fn aborted() -> NvmeError {
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

    pub(crate) fn check_alive(&self) -> Result<(), NvmeError> {
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
}
