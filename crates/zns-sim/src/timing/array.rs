//! `FlashArray`: the per-controller timing model. See the module docs of
//! `timing` and `docs/timing-model.md`.

use super::buffer::{splitmix64, ActivityMeter, WriteBuffer};
use super::flash::{Channel, Die, Rate, Suspend};
use super::profile::{HostStack, InvalidTimingProfile, TimingProfile, ZrwaMedium};
use super::readahead::{Lookup, ReadAhead, RING};

/// One command as the timing model sees it. Offsets are bytes relative to the
/// namespace (`Read`, `ConvWrite`) or to the zone start (`zone_offset_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaOp {
    /// Read of any namespace (zoned or conventional).
    Read {
        ns: u32,
        lba_offset_bytes: u64,
        bytes: u64,
    },
    /// Zoned write at the write pointer (or inside the ZRWA when `zrwa`).
    /// `implicit_open`: this write moved the zone from Empty/Closed to
    /// Implicitly Opened.
    Write {
        ns: u32,
        zone: u32,
        zone_offset_bytes: u64,
        bytes: u64,
        implicit_open: bool,
        zrwa: bool,
        fua: bool,
    },
    /// Zone Append; `zone_offset_bytes` is where the data lands (the write
    /// pointer the device assigned).
    Append {
        ns: u32,
        zone: u32,
        zone_offset_bytes: u64,
        bytes: u64,
        implicit_open: bool,
        fua: bool,
    },
    /// Write to a conventional (randomly writable) namespace.
    ConvWrite {
        ns: u32,
        lba_offset_bytes: u64,
        bytes: u64,
        fua: bool,
    },
    /// Data leaving the ZRWA for the zone's flash (implicit flush side effect).
    /// Background only: it returns when the committed data is programmed,
    /// which no host command waits for.
    ZrwaCommit {
        ns: u32,
        zone: u32,
        zone_offset_bytes: u64,
        bytes: u64,
    },
    /// Explicit ZRWA flush command; the commit of `bytes` from
    /// `zone_offset_bytes` happens in the background.
    ZrwaFlush {
        ns: u32,
        zone: u32,
        zone_offset_bytes: u64,
        bytes: u64,
    },
    /// Explicit open.
    Open { ns: u32, zone: u32 },
    /// Close.
    Close { ns: u32, zone: u32 },
    /// Finish: the device programs filler over `capacity_bytes - written_bytes`.
    Finish {
        ns: u32,
        zone: u32,
        written_bytes: u64,
        capacity_bytes: u64,
    },
    /// Reset. `written_bytes` = host data in the zone; `finished_early` = the
    /// zone became Full through a Finish (not by being written to capacity).
    /// A reset of a zone in state Empty changes nothing: use `ZoneMgmtNoop`.
    Reset {
        ns: u32,
        zone: u32,
        written_bytes: u64,
        finished_early: bool,
    },
    /// Flush (volatile write cache).
    Flush { ns: u32 },
    /// A zone-management command that changes nothing (reset of an Empty
    /// zone, close of a Closed zone, open of an open zone...).
    ZoneMgmtNoop { ns: u32, zone: u32 },
    /// Device-side garbage collection of an FTL namespace (background, no
    /// host overhead): on `die`, read the valid data of `read_units` program
    /// units of a victim block (every page type of each unit), move `bytes`
    /// over the die's channel (out and back in, for ECC), and program
    /// `program_units` units of the die's GC block. Die time in the host
    /// program class: host reads suspend it at segment boundaries like any
    /// program; host programs queue behind it. Returns when it ends.
    ///
    /// Folding of an SLC cache is the same work with SLC sources: it also
    /// reads `slc_read_units` SLC program units (one page per plane, sensed
    /// in `slc_read_ns` each).
    GcRelocate {
        ns: u32,
        die: u32,
        read_units: u64,
        bytes: u64,
        program_units: u64,
        slc_read_units: u64,
        slc_read_ns: u64,
    },
    /// Block erase on `die` (`erase_ns`, background, host program class).
    Erase { ns: u32, die: u32 },
}

/// Where a piece of a read lies on flash, as an FTL namespace's page map
/// says (`FlashArray::submit_ftl_read`): `bytes` from `unit_offset_bytes`
/// inside a program unit on `die`. The offset gives the page type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FtlPlace {
    pub die: u32,
    pub unit_offset_bytes: u64,
    pub bytes: u64,
    /// Array read time (tR) of the piece if the FTL knows it (an SLC-mode
    /// block: one page per cell, `ftl.slc_cache.read_ns`); 0 = the page
    /// type given by the offset in a TLC unit.
    pub read_ns: u64,
}

/// One program an FTL namespace's write completed (`submit_ftl_write`):
/// `bytes` of buffered data programmed on `die` in `program_ns` (a TLC
/// one-shot unit, or a smaller SLC-mode unit with its own program time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FtlProgram {
    pub die: u32,
    pub bytes: u64,
    pub program_ns: u64,
}

/// How a namespace maps to flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceKind {
    /// Zones striped over `dies_per_zone` dies (default for undeclared namespaces).
    Zoned,
    /// Page-mapped, log-structured over all dies; has its own read/write engines.
    Conventional,
}

const CLASS_READ: usize = 0;
const CLASS_WRITE: usize = 1;
const CLASS_APPEND: usize = 2;
const PPM: u64 = 1_000_000;
/// Salt of the random stream of the out-of-order service of queued writes.
const REORDER_STREAM: u64 = 0x9E6C_63D0_676A_9A99;
/// A single command is timed over at most this many program units (larger
/// commands are beyond any MDTS; the bound keeps `submit` O(1) and hang-free).
const MAX_UNITS_PER_COMMAND: u64 = 4096;
const MIB: u128 = 1 << 20;
/// Latest submission instant the model times as given (2^62 ns, ~146 years).
/// The clock can be moved further (`Handle::sleep(u64::MAX)`, a trace `wait`);
/// a command submitted later is timed as if submitted at this instant, so the
/// model's additions (each at most hours) cannot overflow.
const MAX_SUBMIT_NS: u64 = 1 << 62;

/// The timing state of one emulated controller. All its namespaces share it,
/// so traffic on one slows the others.
///
/// `submit` must be called with non-decreasing `now_ns` (virtual time); it is
/// O(1) per command apart from one step per flash program unit completed or
/// per program unit a read spans, and it never allocates in steady state.
#[derive(Debug, Clone)]
pub struct FlashArray {
    profile: TimingProfile,
    dies: Vec<Die>,
    channels: Vec<Channel>,
    n_channels: u64,
    total_dies: u64,
    dies_per_zone: u64,
    unit_bytes: u64,
    stripe_bytes: u64,
    read_page_ns: [u64; 16],
    n_page_types: u64,
    /// How reads suspend host programs: segment, budget, suspend and resume
    /// costs.
    sus: Suspend,
    unit_xfer_ns: u64,
    host: [(u64, u64); 4],
    ch_rate: Rate,
    conv_rate: Rate,
    zrwa_rate: Rate,
    fe_free: u64,
    /// The reads' own front-end lane (`reads_pass_stalled_writes`).
    fe_read_free: u64,
    /// Engine start times of the last write-path commands (ring).
    eng_starts: [u64; 64],
    eng_pos: usize,
    eng_slots: usize,
    write_eng_free: u64,
    append_eng_free: u64,
    conv_read_free: u64,
    conv_write_free: u64,
    zrwa_free: u64,
    reset_free: u64,
    buffer: WriteBuffer,
    conv_cursor_bytes: u64,
    /// Next die for a program unit of a zone striped over every die.
    next_die: u64,
    ns_kinds: Vec<(u32, NamespaceKind)>,
    meters: [ActivityMeter; 3],
    reset_hit_acc: u64,
    draws: u64,
    /// Draws of the out-of-order service of queued writes (own stream).
    reorder_draws: u64,
    /// Sequential read streams and their prefetch (read-ahead).
    ra: ReadAhead,
    /// Host link (device → host) busy-until and rate; `None` = unlimited.
    link_read_free: u64,
    link_read_rate: Option<Rate>,
    /// ECC decode of read data, one pipelined stage per channel after the
    /// channel transfer (`read_decode_mibps`; None = no separate stage).
    decode_rate: Option<Rate>,
    decode_free: Vec<u64>,
    /// GC engine slots (`gc_inflight_units`): when each frees; empty = no
    /// limit.
    gc_slots: Vec<u64>,
}

impl FlashArray {
    /// Builds the model; fails with the validation message of a bad profile.
    pub fn new(profile: &TimingProfile) -> Result<FlashArray, InvalidTimingProfile> {
        profile.validate()?;
        let p = profile.clone();
        let total = u64::from(p.total_dies());
        let mut read_page_ns = [0u64; 16];
        read_page_ns[..p.read_page_ns.len()].copy_from_slice(&p.read_page_ns);
        let ch_rate = Rate::from_mibps(p.channel_mibps);
        let unit = p.program_unit_bytes();
        let host = [
            (p.host_spdk_submit_ns, p.host_spdk_complete_ns),
            (
                p.host_io_uring_none_submit_ns,
                p.host_io_uring_none_complete_ns,
            ),
            (
                p.host_io_uring_mq_deadline_submit_ns,
                p.host_io_uring_mq_deadline_complete_ns,
            ),
            (0, 0),
        ];
        Ok(FlashArray {
            dies: vec![Die::default(); total as usize],
            channels: vec![Channel::default(); p.channels as usize],
            n_channels: u64::from(p.channels),
            total_dies: total,
            dies_per_zone: u64::from(p.dies_per_zone),
            unit_bytes: unit,
            stripe_bytes: p.page_bytes * u64::from(p.planes_per_die),
            n_page_types: p.read_page_ns.len() as u64,
            read_page_ns,
            sus: Suspend {
                seg_ns: p.program_suspend_granularity_ns,
                budget_ns: p.program_suspend_budget_ns,
                suspend_ns: p.program_suspend_ns,
                resume_ns: p.program_resume_ns,
                resume_each_read: false,
            },
            unit_xfer_ns: ch_rate.ns(unit),
            host,
            ch_rate,
            conv_rate: Rate::from_mibps(p.conv_write_mibps),
            zrwa_rate: Rate::from_mibps(p.zrwa_medium_mibps.max(1)),
            fe_free: 0,
            fe_read_free: 0,
            eng_starts: [0; 64],
            eng_pos: 0,
            eng_slots: p.engine_queue_slots as usize,
            write_eng_free: 0,
            append_eng_free: 0,
            conv_read_free: 0,
            conv_write_free: 0,
            zrwa_free: 0,
            reset_free: 0,
            buffer: WriteBuffer::new(p.write_buffer_bytes, unit),
            conv_cursor_bytes: 0,
            next_die: 0,
            ns_kinds: Vec::with_capacity(8),
            meters: [ActivityMeter::new(p.reset_interference_window_ns); 3],
            reset_hit_acc: PPM / 2,
            draws: 0,
            reorder_draws: 0,
            ra: ReadAhead::new(
                p.readahead_streams as usize,
                p.readahead_hit_mibps,
                u64::from(p.readahead_window_units),
                p.readahead_trigger_reads,
            ),
            link_read_free: 0,
            link_read_rate: (p.host_link_read_mibps > 0)
                .then(|| Rate::from_mibps(p.host_link_read_mibps)),
            decode_rate: (p.read_decode_mibps > 0).then(|| Rate::from_mibps(p.read_decode_mibps)),
            decode_free: vec![0; p.channels as usize],
            gc_slots: vec![0; p.gc_inflight_units as usize],
            profile: p,
        })
    }

    /// The profile this model was built from.
    pub fn profile(&self) -> &TimingProfile {
        &self.profile
    }

    /// Declares how namespace `ns` maps to flash. Undeclared namespaces are
    /// zoned until they receive a `ConvWrite`.
    pub fn declare_namespace(&mut self, ns: u32, kind: NamespaceKind) {
        if let Some(e) = self.ns_kinds.iter_mut().find(|e| e.0 == ns) {
            e.1 = kind;
        } else {
            self.ns_kinds.push((ns, kind));
        }
    }

    /// How namespace `ns` maps to flash.
    pub fn namespace_kind(&self, ns: u32) -> NamespaceKind {
        self.ns_kinds
            .iter()
            .find(|e| e.0 == ns)
            .map_or(NamespaceKind::Zoned, |e| e.1)
    }

    /// Bytes currently held by the write buffer (diagnostics).
    pub fn write_buffer_used_bytes(&self) -> u64 {
        self.buffer.used()
    }

    /// Number of dies.
    pub fn dies(&self) -> u32 {
        self.total_dies as u32
    }

    /// End of the programs (host and GC) and erases queued on `die`: an FTL
    /// steering new program units to the least busy die reads this.
    pub fn die_program_until(&self, die: u32) -> u64 {
        self.dies
            .get(die as usize)
            .map_or(0, |d| d.prog_until().max(d.busy_until()))
    }

    /// Die time to read every page of one program unit (GC reads).
    pub fn unit_read_ns(&self) -> u64 {
        let ppp = u64::from(self.profile.pages_per_program);
        (0..ppp)
            .map(|pg| self.read_page_ns[(pg % self.n_page_types) as usize])
            .sum()
    }

    /// Virtual time at which all flash work scheduled so far has ended
    /// (programs, filler, reads); a quiescent device is idle from then on.
    pub fn flash_idle_at(&self) -> u64 {
        self.dies.iter().map(Die::busy_until).max().unwrap_or(0)
    }

    /// Returns the virtual time (ns) at which the command completes, as seen by
    /// the host (host-stack submission and completion overheads included).
    /// `ZrwaCommit` is background work: it returns when its data is in flash.
    pub fn submit(&mut self, now_ns: u64, stack: HostStack, op: &MediaOp) -> u64 {
        let now_ns = now_ns.min(MAX_SUBMIT_NS);
        let (hs, hc) = if matches!(op, MediaOp::Read { .. }) {
            self.read_host_costs(stack)
        } else {
            self.host_costs(stack)
        };
        let t = now_ns.saturating_add(hs);
        let op = self.clamp(*op);
        let done = match op {
            MediaOp::Read {
                ns,
                lba_offset_bytes,
                bytes,
            } => {
                let d = self.read(t, ns, lba_offset_bytes, bytes, None);
                self.meters[CLASS_READ].record(t, d);
                d
            }
            MediaOp::Write {
                ns,
                zone,
                zone_offset_bytes,
                bytes,
                implicit_open,
                zrwa,
                fua,
            } => {
                self.ra_zone_written(ns, zone, zone_offset_bytes, bytes);
                let d =
                    self.zoned_write(t, zone, zone_offset_bytes, bytes, implicit_open, zrwa, fua);
                self.meters[CLASS_WRITE].record(t, d);
                d
            }
            MediaOp::Append {
                ns,
                zone,
                zone_offset_bytes,
                bytes,
                implicit_open,
                fua,
            } => {
                self.ra_zone_written(ns, zone, zone_offset_bytes, bytes);
                let d = self.append(t, zone, zone_offset_bytes, bytes, implicit_open, fua);
                self.meters[CLASS_APPEND].record(t, d);
                d
            }
            MediaOp::ConvWrite {
                ns,
                lba_offset_bytes,
                bytes,
                fua,
            } => {
                self.ra
                    .written(ns, 0, lba_offset_bytes, bytes, self.unit_bytes);
                let d = self.conv_write(t, ns, bytes, fua, None);
                self.meters[CLASS_WRITE].record(t, d);
                d
            }
            MediaOp::ZrwaCommit {
                zone,
                zone_offset_bytes,
                bytes,
                ..
            } => {
                // Background: no host overhead, nobody waits for it.
                return self.commit(now_ns, zone, zone_offset_bytes, bytes);
            }
            MediaOp::ZrwaFlush {
                zone,
                zone_offset_bytes,
                bytes,
                ..
            } => {
                let fe = self.frontend(t);
                self.commit(fe, zone, zone_offset_bytes, bytes);
                fe + self.profile.zrwa_flush_ns
            }
            MediaOp::Open { .. } => self.frontend(t) + self.profile.open_ns,
            MediaOp::Close { .. } => self.frontend(t) + self.profile.close_ns,
            MediaOp::ZoneMgmtNoop { .. } => self.frontend(t) + self.profile.zone_mgmt_noop_ns,
            MediaOp::Finish {
                ns,
                zone,
                written_bytes,
                capacity_bytes,
            } => {
                self.ra_zone_dropped(ns, zone);
                self.finish(t, zone, written_bytes, capacity_bytes)
            }
            MediaOp::Reset {
                ns,
                zone,
                written_bytes,
                finished_early,
            } => {
                self.ra_zone_dropped(ns, zone);
                self.reset(t, written_bytes, finished_early)
            }
            MediaOp::GcRelocate {
                die,
                read_units,
                bytes,
                program_units,
                slc_read_units,
                slc_read_ns,
                ..
            } => {
                // Background: no host overhead, nobody waits for it.
                let slc_ns = slc_read_units.saturating_mul(slc_read_ns);
                return self.gc_relocate(now_ns, die, read_units, slc_ns, bytes, program_units);
            }
            MediaOp::Erase { die, .. } => {
                let d = (u64::from(die) % self.total_dies) as usize;
                return self.dies[d].program(now_ns, self.profile.erase_ns, self.sus.seg_ns);
            }
            MediaOp::Flush { .. } => {
                let fe = self.frontend(t) + self.profile.flush_ns;
                if self.profile.write_buffer_power_loss_protected {
                    fe
                } else {
                    fe.max(self.buffer.last_release())
                }
            }
        };
        done.saturating_add(hc)
    }

    /// A host write to an FTL namespace (page-mapped, with its own
    /// placement): timed like `MediaOp::ConvWrite` (conventional write
    /// engine, write buffer), but the program units it completes go to the
    /// dies the FTL's write frontier chose (`units`, in order, each with its
    /// size and program time), not to the model's rotating pointer.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_ftl_write(
        &mut self,
        now_ns: u64,
        stack: HostStack,
        ns: u32,
        lba_offset_bytes: u64,
        bytes: u64,
        fua: bool,
        units: &[FtlProgram],
    ) -> u64 {
        let now_ns = now_ns.min(MAX_SUBMIT_NS);
        let (hs, hc) = self.host_costs(stack);
        let t = now_ns.saturating_add(hs);
        let bytes = bytes.min(MAX_UNITS_PER_COMMAND * self.unit_bytes);
        self.ra
            .written(ns, 0, lba_offset_bytes, bytes, self.unit_bytes);
        let d = self.conv_write(t, ns, bytes, fua, Some(units));
        self.meters[CLASS_WRITE].record(t, d);
        d.saturating_add(hc)
    }

    /// A host read of an FTL namespace: timed like `MediaOp::Read` of a
    /// conventional namespace, but each piece is read from the die the page
    /// map names (`places`; unmapped blocks have no piece and cost no die
    /// time). Read-ahead prefetches of such a namespace still place units
    /// by hash (the prefetcher has no page map).
    pub fn submit_ftl_read(
        &mut self,
        now_ns: u64,
        stack: HostStack,
        ns: u32,
        lba_offset_bytes: u64,
        bytes: u64,
        places: &[FtlPlace],
    ) -> u64 {
        let now_ns = now_ns.min(MAX_SUBMIT_NS);
        let (hs, hc) = self.read_host_costs(stack);
        let t = now_ns.saturating_add(hs);
        let bytes = bytes.min(MAX_UNITS_PER_COMMAND * self.unit_bytes);
        let d = self.read(t, ns, lba_offset_bytes, bytes, Some(places));
        self.meters[CLASS_READ].record(t, d);
        d.saturating_add(hc)
    }

    /// Host costs of a read: under mq-deadline a read may cost less than a
    /// write (`host_io_uring_mq_deadline_read_*_ns`).
    #[inline]
    fn read_host_costs(&self, stack: HostStack) -> (u64, u64) {
        let (hs, hc) = self.host_costs(stack);
        if stack == HostStack::IoUringMqDeadline {
            let p = &self.profile;
            (
                p.host_io_uring_mq_deadline_read_submit_ns.unwrap_or(hs),
                p.host_io_uring_mq_deadline_read_complete_ns.unwrap_or(hc),
            )
        } else {
            (hs, hc)
        }
    }

    #[inline]
    fn host_costs(&self, stack: HostStack) -> (u64, u64) {
        self.host[match stack {
            HostStack::Spdk => 0,
            HostStack::IoUringNone => 1,
            HostStack::IoUringMqDeadline => 2,
            HostStack::Device => 3,
        }]
    }

    // ------------------------------------------------------------ internals

    /// Sizes beyond any real command (more than `MAX_UNITS_PER_COMMAND`
    /// program units) are timed as that size, so that no input can overflow
    /// the arithmetic or make `submit` loop for long.
    fn clamp(&self, mut op: MediaOp) -> MediaOp {
        let max = MAX_UNITS_PER_COMMAND * self.unit_bytes;
        let cap = |v: &mut u64| *v = (*v).min(max);
        match &mut op {
            MediaOp::Read { bytes, .. }
            | MediaOp::Write { bytes, .. }
            | MediaOp::Append { bytes, .. }
            | MediaOp::ConvWrite { bytes, .. }
            | MediaOp::ZrwaCommit { bytes, .. }
            | MediaOp::ZrwaFlush { bytes, .. } => cap(bytes),
            MediaOp::Finish {
                written_bytes,
                capacity_bytes,
                ..
            } => {
                *written_bytes = (*written_bytes).min(1 << 50);
                *capacity_bytes = (*capacity_bytes).min(1 << 50);
            }
            MediaOp::Reset { written_bytes, .. } => *written_bytes = (*written_bytes).min(1 << 50),
            MediaOp::GcRelocate {
                read_units,
                bytes,
                program_units,
                slc_read_units,
                slc_read_ns,
                ..
            } => {
                *read_units = (*read_units).min(1 << 24);
                *slc_read_units = (*slc_read_units).min(1 << 24);
                *slc_read_ns = (*slc_read_ns).min(1 << 30);
                *program_units = (*program_units).min(1 << 24);
                *bytes = (*bytes).min(1 << 50);
            }
            MediaOp::Erase { .. }
            | MediaOp::Open { .. }
            | MediaOp::Close { .. }
            | MediaOp::Flush { .. }
            | MediaOp::ZoneMgmtNoop { .. } => {}
        }
        op
    }

    #[inline]
    fn frontend(&mut self, t: u64) -> u64 {
        let e = t.max(self.fe_free) + self.profile.frontend_ns;
        self.fe_free = e;
        e
    }

    /// The front end for a read: the shared FIFO, or with
    /// `reads_pass_stalled_writes` the reads' own lane, which writes stalled
    /// for engine or buffer room do not hold.
    #[inline]
    fn frontend_read(&mut self, t: u64) -> u64 {
        if !self.profile.reads_pass_stalled_writes {
            return self.frontend(t);
        }
        let e = t.max(self.fe_read_free) + self.profile.frontend_ns;
        self.fe_read_free = e;
        e
    }

    /// A write-path command entered its engine at `es`: the front end may pass
    /// a new command only once the engine queue has room, i.e. once the
    /// command `engine_queue_slots` places back has started.
    #[inline]
    fn engine_entered(&mut self, es: u64) {
        self.eng_starts[self.eng_pos] = es;
        self.eng_pos = (self.eng_pos + 1) % 64;
        let oldest = self.eng_starts[(self.eng_pos + 64 - self.eng_slots) % 64];
        self.fe_free = self.fe_free.max(oldest);
    }

    /// Uniform jitter in [-j, +j] around `t` (deterministic from the seed).
    #[inline]
    fn jitter(&mut self, t: u64) -> u64 {
        let j = self.profile.io_jitter_ns;
        if j == 0 {
            return t;
        }
        self.draws += 1;
        let r = splitmix64(self.profile.seed ^ splitmix64(self.draws)) % (2 * j + 1);
        (t + r).saturating_sub(j)
    }

    /// Out-of-order service of queued writes: a write (append) that waited
    /// `wait` ns for its engine and for buffer room completes at a point
    /// drawn uniformly within +/- `write_queue_reorder_ppm` of that wait
    /// around its arrival-order completion `d` (deterministic from the seed,
    /// own stream). Never earlier than an idle device would complete it; the
    /// engine and buffer reservations stay as they are, so throughput does
    /// not change.
    #[inline]
    fn out_of_order(&mut self, d: u64, wait: u64, fua: bool) -> u64 {
        let ppm = self.profile.write_queue_reorder_ppm;
        if ppm == 0 || wait == 0 || (fua && !self.profile.write_buffer_power_loss_protected) {
            return d;
        }
        let span = (u128::from(wait) * u128::from(ppm) / u128::from(PPM)) as u64;
        if span == 0 {
            return d;
        }
        // Its own stream, so that the other draws (jitter) are unchanged.
        self.reorder_draws += 1;
        let r = splitmix64(self.profile.seed ^ REORDER_STREAM ^ splitmix64(self.reorder_draws));
        d - span + r % (2 * span + 1)
    }

    /// Host transfer granules a write of `bytes` at zone offset `off`
    /// touches, and whether its first or last one is only partly written.
    #[inline]
    fn granules(&self, off: u64, bytes: u64) -> (u64, bool) {
        let g = self.profile.host_xfer_unit_bytes;
        if !self.profile.write_granules_by_lba {
            return (bytes.div_ceil(g).max(1), bytes < g);
        }
        let end = off.saturating_add(bytes.max(1));
        let spanned = end.div_ceil(g) - off / g;
        (spanned, off % g != 0 || end % g != 0)
    }

    #[inline]
    fn extra_units(&self, bytes: u64) -> u64 {
        bytes
            .div_ceil(self.profile.host_xfer_unit_bytes)
            .saturating_sub(1)
    }

    /// Die holding program unit `k` of `zone`.
    #[inline]
    fn zone_die(&self, zone: u64, k: u64) -> usize {
        let dpz = self.dies_per_zone;
        let base = zone.wrapping_mul(dpz) % self.total_dies;
        ((base + k.wrapping_add(zone) % dpz) % self.total_dies) as usize
    }

    /// Die that programs the next unit of `zone` (unit `k`). A zone striped
    /// over every die takes the dies in arrival order (one rotating pointer
    /// for all zones), which keeps them equally loaded whatever the number of
    /// zones being written; otherwise the unit goes to its static place.
    #[inline]
    fn program_die(&mut self, zone: u64, k: u64) -> usize {
        if self.dies_per_zone == self.total_dies {
            self.rotate_die()
        } else {
            self.zone_die(zone, k)
        }
    }

    /// The next die in arrival order (shared by every striped zone and the
    /// log-structured conventional namespace).
    #[inline]
    fn rotate_die(&mut self) -> usize {
        let d = self.next_die;
        self.next_die = (d + 1) % self.total_dies;
        d as usize
    }

    /// Die assumed to hold program unit `k` of a conventional namespace (for
    /// reads; the page map is not modelled): the units of a namespace written
    /// in LBA order lie on consecutive dies, as the log-structured writes put
    /// them (one die after the other), so a sequential or multi-unit read
    /// spreads over dies and channels; a random read lands on a uniformly
    /// random die.
    #[inline]
    fn conv_die(&self, k: u64) -> usize {
        (k % self.total_dies) as usize
    }

    /// Programs one unit (of which `bytes` are buffered data) on `die` once
    /// its data is complete at `t`; returns the end of the program.
    fn program_unit(&mut self, t: u64, die: usize, bytes: u64) -> u64 {
        let tp = self.profile.program_ns;
        let ch = (die as u64 % self.n_channels) as usize;
        // One cached unit per die: the transfer may overlap the previous program.
        let xs = t.max(self.dies[die].prog_until().saturating_sub(tp));
        let xe = self.channels[ch].program_xfer(xs, self.unit_xfer_ns);
        let pe = self.dies[die].program(xe, tp, self.sus.seg_ns);
        self.buffer.release_at(pe, bytes);
        pe
    }

    /// Schedules the programs of the units of `zone` completed by data
    /// `[off, off + bytes)` arriving at `t`; returns the last program end (or `t`).
    fn schedule_zone_range(&mut self, t: u64, zone: u32, off: u64, bytes: u64) -> u64 {
        let unit = self.unit_bytes;
        let cap = self.profile.zone_capacity_bytes;
        let zone = u64::from(zone);
        let end = off.saturating_add(bytes);
        let mut last = t;
        let k_end = (end / unit).min(off / unit + MAX_UNITS_PER_COMMAND);
        for k in (off / unit)..k_end {
            let die = self.program_die(zone, k);
            last = last.max(self.program_unit(t, die, unit));
        }
        // A zone capacity that is not a multiple of the program unit ends in
        // a partial unit, programmed (padded) when the data reaches capacity.
        let tail = cap % unit;
        if tail != 0 && off < cap && end >= cap && cap - off <= MAX_UNITS_PER_COMMAND * unit {
            let die = self.program_die(zone, cap / unit);
            last = last.max(self.program_unit(t, die, tail));
        }
        last
    }

    fn write_path_done(&self, adm: u64, last_prog: u64, end_off: u64, fua: bool) -> u64 {
        if !fua || self.profile.write_buffer_power_loss_protected {
            return adm;
        }
        // FUA without power-loss protection: the data must be in flash. A
        // partial unit is padded and programmed now.
        let mut d = adm.max(last_prog);
        let open_unit_bytes = end_off % self.unit_bytes;
        if open_unit_bytes != 0 {
            d = d.max(adm + self.unit_xfer_ns + self.profile.program_ns);
        }
        d
    }

    /// Service time of the write or append engine for one command: a base
    /// cost, an extra for requests below one host transfer unit, and a cost
    /// per further transfer unit.
    fn engine_service_ns(
        &self,
        base_ns: u64,
        small_extra_ns: u64,
        per_extra_unit_ns: u64,
        bytes: u64,
    ) -> u64 {
        let small = if bytes < self.profile.host_xfer_unit_bytes {
            small_extra_ns
        } else {
            0
        };
        base_ns + small + per_extra_unit_ns.saturating_mul(self.extra_units(bytes))
    }

    #[allow(clippy::too_many_arguments)]
    fn zoned_write(
        &mut self,
        t: u64,
        zone: u32,
        off: u64,
        bytes: u64,
        implicit_open: bool,
        zrwa: bool,
        fua: bool,
    ) -> u64 {
        let p = &self.profile;
        // A write pays per host transfer granule, and the sub-granule
        // (read-modify-write) extra; with `write_granules_by_lba` by the
        // granules it touches: an 8 KiB write at a 4 KiB offset touches two,
        // both partial (issue 16: mq-deadline's merged requests start
        // wherever the previous dispatch ended).
        let (spanned, partial) = self.granules(off, bytes);
        let svc = p.write_engine_ns
            + if partial {
                p.write_engine_small_extra_ns
            } else {
                0
            }
            + p.write_engine_per_extra_unit_ns
                .saturating_mul(spanned.saturating_sub(1));
        // Background part of a sub-granule write's extra: the engine does it
        // after the data is admitted, the completion does not wait for it.
        let bg = if partial {
            p.write_engine_small_background_ns
        } else {
            0
        };
        let svc = svc - bg;
        let extra = if implicit_open {
            p.implicit_open_write_extra_ns
        } else {
            0
        };
        let complete = p.write_complete_ns + extra;
        let medium = p.zrwa_medium;
        let fe = self.frontend(t);
        let es = fe.max(self.write_eng_free);
        self.engine_entered(es);
        let ee = es + svc;
        if zrwa {
            // ZRWA data is not programmed until committed; the write waits only
            // if committed data has over-filled the buffer (back-pressure).
            let ready = match medium {
                ZrwaMedium::WriteBuffer => {
                    let r = self.buffer.admit(ee, bytes, false);
                    self.write_eng_free = r + bg;
                    r
                }
                ZrwaMedium::Dram => {
                    // The engine hands the data to the DRAM medium, a pipeline
                    // stage of its own.
                    let r = self.buffer.admit(ee, 0, false);
                    self.write_eng_free = r + bg;
                    let zs = r.max(self.zrwa_free);
                    self.zrwa_free = zs + self.zrwa_rate.ns(bytes);
                    self.zrwa_free
                }
                ZrwaMedium::Flash => {
                    // Admitted into the write buffer like a normal write (and
                    // acknowledged there); the bytes leave the buffer when the
                    // serial ZRWA medium has written them. Sustained ZRWA
                    // traffic above the medium's rate fills the buffer and
                    // stalls the write path, as programs do.
                    let adm = self.buffer.admit(ee, bytes, true);
                    self.write_eng_free = adm + bg;
                    let zs = adm.max(self.zrwa_free);
                    self.zrwa_free = zs + self.zrwa_rate.ns(bytes);
                    self.buffer.release_at(self.zrwa_free, bytes);
                    adm
                }
            };
            let mut d = self.jitter(ready + complete);
            if fua && !self.profile.write_buffer_power_loss_protected {
                // FUA without power-loss protection: the data must be on the
                // non-volatile medium.
                match medium {
                    ZrwaMedium::WriteBuffer => {
                        d = d.max(ready + self.unit_xfer_ns + self.profile.program_ns);
                    }
                    ZrwaMedium::Flash => d = d.max(self.zrwa_free + complete),
                    ZrwaMedium::Dram => {}
                }
            }
            return d;
        }
        let adm = self.buffer.admit(ee, bytes, true);
        self.write_eng_free = adm + bg;
        let last = self.schedule_zone_range(adm, zone, off, bytes);
        let d = self.write_path_done(adm, last, off.saturating_add(bytes), fua) + complete;
        let d = self.out_of_order(d, adm.saturating_sub(fe + svc), fua);
        self.jitter(d)
    }

    fn append(
        &mut self,
        t: u64,
        zone: u32,
        off: u64,
        bytes: u64,
        implicit_open: bool,
        fua: bool,
    ) -> u64 {
        let p = &self.profile;
        let svc = self.engine_service_ns(
            p.append_engine_ns,
            p.append_engine_small_extra_ns,
            p.append_engine_per_extra_unit_ns,
            bytes,
        );
        let extra = if implicit_open {
            p.implicit_open_append_extra_ns
        } else {
            0
        };
        let complete = p.append_complete_ns + extra;
        let fe = self.frontend(t);
        let es = fe.max(self.append_eng_free);
        self.engine_entered(es);
        let adm = self.buffer.admit(es + svc, bytes, true);
        self.append_eng_free = adm;
        let last = self.schedule_zone_range(adm, zone, off, bytes);
        let d = self.write_path_done(adm, last, off.saturating_add(bytes), fua) + complete;
        let d = self.out_of_order(d, adm.saturating_sub(fe + svc), fua);
        self.jitter(d)
    }

    fn conv_write(
        &mut self,
        t: u64,
        ns: u32,
        bytes: u64,
        fua: bool,
        ftl_units: Option<&[FtlProgram]>,
    ) -> u64 {
        if self.namespace_kind(ns) != NamespaceKind::Conventional {
            self.declare_namespace(ns, NamespaceKind::Conventional);
        }
        let p = &self.profile;
        let base = if bytes < p.conv_full_page_bytes {
            p.conv_small_write_ns
        } else {
            p.conv_write_ns
        };
        let svc = base.max(self.conv_rate.ns(bytes));
        let complete = p.write_complete_ns;
        let fe = self.frontend(t);
        let es = fe.max(self.conv_write_free);
        self.engine_entered(es);
        let adm = self.buffer.admit(es + svc, bytes, true);
        self.conv_write_free = adm;
        // Log-structured: data fills program units in arrival order.
        let unit = self.unit_bytes;
        let old = self.conv_cursor_bytes;
        let new = old.wrapping_add(bytes);
        self.conv_cursor_bytes = new;
        let mut last = adm;
        if let Some(units) = ftl_units {
            // An FTL namespace: its frontier chose the dies (and the mode:
            // TLC units or smaller SLC units with their own program time).
            // Its units are transferred over the channel in arrival order
            // (an FTL's dies can have long GC queues: a transfer reserved
            // behind one would hold the channel for every other die).
            // With a bounded GC engine (`gc_inflight_units`) host data is
            // not programmed before the engine can take new work (its first
            // slot frees): the host cannot run ahead of the GC its writes
            // owe, whichever die its units land on.
            let gate = self.gc_slots.iter().copied().min().unwrap_or(0);
            for u in units.iter().take(MAX_UNITS_PER_COMMAND as usize) {
                let die = (u64::from(u.die) % self.total_dies) as usize;
                let ub = u.bytes.min(unit);
                let ch = (die as u64 % self.n_channels) as usize;
                let xe = self.channels[ch].program_xfer(adm, self.ch_rate.ns(ub));
                let pe = self.dies[die].program(xe.max(gate), u.program_ns, self.sus.seg_ns);
                self.buffer.release_at(pe, ub);
                last = last.max(pe);
            }
        } else if new >= old {
            for _ in (old / unit)..(new / unit).min(old / unit + MAX_UNITS_PER_COMMAND) {
                let die = self.rotate_die();
                last = last.max(self.program_unit(adm, die, unit));
            }
        }
        let d = self.write_path_done(adm, last, new, fua) + complete;
        self.jitter(d)
    }

    /// ZRWA data `[off, off + bytes)` of `zone` moves into the write buffer and
    /// its completed units are programmed; returns when they are in flash.
    fn commit(&mut self, t: u64, zone: u32, off: u64, bytes: u64) -> u64 {
        self.buffer.add(bytes);
        self.schedule_zone_range(t, zone, off, bytes)
    }

    /// How a read at `t` suspends programs: while writes wait for
    /// write-buffer room (the latest admission is later than `t`), the
    /// controller resumes the program after every read.
    fn sus_at(&self, t: u64) -> Suspend {
        let mut s = self.sus;
        s.resume_each_read = self.buffer.admitting_until() > t;
        s
    }

    /// Array read of bytes `[cs, ce)` of the program unit starting at
    /// `unit_start` on `die`, from `t`: tR of the slowest page type touched,
    /// then the channel transfer. Returns when the data is in the controller.
    fn flash_read(&mut self, t: u64, die: usize, unit_start: u64, cs: u64, ce: u64) -> u64 {
        let first = (cs - unit_start) / self.stripe_bytes;
        let last = (ce - 1 - unit_start) / self.stripe_bytes;
        if self.profile.read_pages_serial && last > first {
            // One sense per page, each page's data out over the channel
            // before the next sense (the page register holds one page).
            let ch = (die as u64 % self.n_channels) as usize;
            let mut at = t;
            for pg in first..=last {
                let ps = cs.max(unit_start + pg * self.stripe_bytes);
                let pe = ce.min(unit_start + (pg + 1) * self.stripe_bytes);
                let tr = self.read_page_ns[(pg % self.n_page_types) as usize];
                let sus = self.sus_at(at);
                let re = self.dies[die].read(at, tr, sus);
                let xe = self.channels[ch].read_xfer(re, self.ch_rate.ns(pe - ps));
                at = self.decode(ch, xe, pe - ps);
            }
            return at;
        }
        let mut tr = 0;
        for pg in first..=last.min(first + self.n_page_types - 1) {
            tr = tr.max(self.read_page_ns[(pg % self.n_page_types) as usize]);
        }
        let sus = self.sus_at(t);
        let re = self.dies[die].read(t, tr, sus);
        let ch = (die as u64 % self.n_channels) as usize;
        let xe = self.channels[ch].read_xfer(re, self.ch_rate.ns(ce - cs));
        self.decode(ch, xe, ce - cs)
    }

    /// ECC decode of `bytes` of read data that left channel `ch` at `t`:
    /// the channel's decoder is a serial stage of its own (pipelined with
    /// the transfers); returns when the data is decoded.
    #[inline]
    fn decode(&mut self, ch: usize, t: u64, bytes: u64) -> u64 {
        match self.decode_rate {
            None => t,
            Some(rate) => {
                let s = t.max(self.decode_free[ch]);
                self.decode_free[ch] = s + rate.ns(bytes);
                self.decode_free[ch]
            }
        }
    }

    fn read(&mut self, t: u64, ns: u32, off: u64, bytes: u64, places: Option<&[FtlPlace]>) -> u64 {
        let conv = self.namespace_kind(ns) == NamespaceKind::Conventional;
        let fe = self.frontend_read(t);
        let unit = self.unit_bytes;
        let end = off.saturating_add(bytes.min(MAX_UNITS_PER_COMMAND * unit));
        // Read-ahead: a hit is served from the prefetched data; a read that
        // continues a stream is a flash read that (re)starts its prefetch.
        let mut cont = None;
        if self.ra.table.enabled() && end > off {
            let (base, limit) = ReadAhead::area(
                conv,
                off,
                self.profile.zone_size_bytes,
                self.profile.zone_capacity_bytes,
            );
            if end <= limit {
                match self.ra.table.lookup(ns, base, off, end, unit) {
                    Lookup::Hit(i) => {
                        let u0 = (off - base) / unit;
                        let u1 = (end - 1 - base) / unit;
                        let st = &self.ra.table.s[i];
                        if self.ra.table.next(i) == off {
                            if u1 - u0 + 1 + self.ra.window_units <= RING {
                                return self.ra_hit(fe, conv, i, limit, off, end);
                            }
                            // Too large for the window: a flash read.
                            cont = Some((i, limit));
                        } else if u1 < st.hi {
                            // Not the stream's next read (a re-read, a random
                            // read): served from the prefetched data, the
                            // stream is left as it is.
                            return self.ra_serve(
                                fe + self.profile.read_controller_ns,
                                i,
                                off,
                                end,
                            );
                        }
                    }
                    Lookup::Continue(i) => cont = Some((i, limit)),
                    Lookup::Miss => {}
                }
            }
        }
        let mut t0 = fe;
        if conv {
            let s = t0.max(self.conv_read_free);
            self.conv_read_free = s + self.profile.conv_read_engine_ns;
            t0 = self.conv_read_free;
        }
        t0 += self.profile.read_controller_ns;
        let zs = self.profile.zone_size_bytes;
        let mut pos = off;
        let mut done = t0;
        if let Some(places) = places {
            // An FTL namespace: the page map placed every piece.
            for p in places.iter().take(MAX_UNITS_PER_COMMAND as usize) {
                let cs = p.unit_offset_bytes.min(unit - 1);
                let ce = cs.saturating_add(p.bytes).min(unit);
                if ce > cs {
                    let die = (u64::from(p.die) % self.total_dies) as usize;
                    let e = if p.read_ns > 0 {
                        // SLC-mode block: one page type, its own tR.
                        let sus = self.sus_at(t0);
                        let re = self.dies[die].read(t0, p.read_ns, sus);
                        let ch = (die as u64 % self.n_channels) as usize;
                        let xe = self.channels[ch].read_xfer(re, self.ch_rate.ns(ce - cs));
                        self.decode(ch, xe, ce - cs)
                    } else {
                        self.flash_read(t0, die, 0, cs, ce)
                    };
                    done = done.max(e);
                }
            }
            pos = end;
        }
        while pos < end {
            let (die, unit_start, limit) = if conv {
                let k = pos / unit;
                (self.conv_die(k), k * unit, u64::MAX)
            } else {
                let in_zone = pos % zs;
                let k = in_zone / unit;
                let zone_start = pos - in_zone;
                (
                    self.zone_die(pos / zs, k),
                    zone_start + k * unit,
                    zone_start.saturating_add(zs),
                )
            };
            let chunk_end = end.min(unit_start.saturating_add(unit)).min(limit);
            done = done.max(self.flash_read(t0, die, unit_start, pos, chunk_end));
            pos = chunk_end;
        }
        if let Some((i, limit)) = cont {
            self.ra_continue(t0, conv, i, limit, end);
        }
        let link = self.link_read(fe, end - off);
        done.max(link) + self.profile.read_complete_ns + self.profile.read_flash_extra_ns
    }

    /// The host link's share of a read of `bytes` whose command passed the
    /// front end at `t`: link time is reserved in command order (front-end
    /// times never decrease), `bytes / host_link_read_mibps` per read, and
    /// the read cannot complete before its slot ends. An idle link adds
    /// nothing (the slot ends long before the flash data is there); a
    /// saturated one caps read bandwidth at the link rate.
    fn link_read(&mut self, t: u64, bytes: u64) -> u64 {
        match self.link_read_rate {
            None => t,
            Some(rate) => {
                let s = t.max(self.link_read_free);
                self.link_read_free = s + rate.ns(bytes);
                self.link_read_free
            }
        }
    }

    /// Stream `i` was continued by a flash read ending at `end`: once the run
    /// is long enough, prefetch from `end` up to `readahead_window_units`
    /// units past its last unit.
    fn ra_continue(&mut self, t: u64, conv: bool, i: usize, limit: u64, end: u64) {
        if let Some(upto) = self.ra.continued(i, end, self.unit_bytes) {
            self.ra_fill(t, conv, i, limit, upto);
        }
    }

    /// A read of `[off, end)` served from stream `i`'s prefetched data: it
    /// waits for the data of its units, then occupies the hit engine.
    fn ra_hit(&mut self, fe: u64, conv: bool, i: usize, limit: u64, off: u64, end: u64) -> u64 {
        let t1 = fe + self.profile.read_controller_ns;
        let upto = self.ra.hit(i, off, end, self.unit_bytes);
        self.ra_fill(t1, conv, i, limit, upto);
        self.ra_serve(t1, i, off, end)
    }

    /// Serves `[off, end)` (held by stream `i`) from DRAM from `t`, then
    /// over the host link.
    fn ra_serve(&mut self, t: u64, i: usize, off: u64, end: u64) -> u64 {
        let hit_done = self.ra.serve(
            t,
            i,
            off,
            end,
            self.unit_bytes,
            self.profile.readahead_hit_ns,
        );
        hit_done.max(self.link_read(t, end - off)) + self.profile.read_complete_ns
    }

    /// Prefetches the units of stream `i` not yet issued, up to unit `upto`
    /// (bounded by `limit` and the ring), from `t`, on their dies.
    fn ra_fill(&mut self, t: u64, conv: bool, i: usize, limit: u64, upto: u64) {
        let unit = self.unit_bytes;
        let st = self.ra.table.s[i];
        let upto = self.ra.fill_upto(i, limit, upto, unit);
        let zone = st.base / self.profile.zone_size_bytes;
        let mut k = st.hi;
        while k <= upto {
            let us = st.base + k * unit;
            let cs = us.max(st.from);
            let ce = us.saturating_add(unit).min(limit);
            let r = if cs < ce {
                let die = if conv {
                    self.conv_die(k)
                } else {
                    self.zone_die(zone, k)
                };
                self.flash_read(t, die, us, cs, ce)
            } else {
                t
            };
            self.ra.table.ready[i][(k % RING) as usize] = r;
            k += 1;
        }
        self.ra.filled(i, k);
    }

    /// Zoned data `[off, off + bytes)` of `zone` was written: prefetched data
    /// over it is stale.
    #[inline]
    fn ra_zone_written(&mut self, ns: u32, zone: u32, off: u64, bytes: u64) {
        let base = u64::from(zone).saturating_mul(self.profile.zone_size_bytes);
        self.ra
            .written(ns, base, base.saturating_add(off), bytes, self.unit_bytes);
    }

    /// `zone` was reset or finished: its streams are forgotten.
    #[inline]
    fn ra_zone_dropped(&mut self, ns: u32, zone: u32) {
        let base = u64::from(zone).saturating_mul(self.profile.zone_size_bytes);
        self.ra.zone_dropped(ns, base);
    }

    /// Garbage-collection relocation on one die (see `MediaOp::GcRelocate`).
    fn gc_relocate(
        &mut self,
        t: u64,
        die: u32,
        read_units: u64,
        slc_read_ns: u64,
        bytes: u64,
        program_units: u64,
    ) -> u64 {
        let die = (u64::from(die) % self.total_dies) as usize;
        let unit_read = self.unit_read_ns();
        let reads = read_units
            .saturating_mul(unit_read)
            .saturating_add(slc_read_ns);
        let ch = (die as u64 % self.n_channels) as usize;
        let xe = self.channels[ch].program_xfer(t, self.ch_rate.ns(bytes.saturating_mul(2)));
        if self.gc_slots.is_empty() || program_units == 0 {
            let dur = reads.saturating_add(program_units.saturating_mul(self.profile.program_ns));
            return self.dies[die].program(t, dur, self.sus.seg_ns).max(xe);
        }
        // GC engine slots: each relocated unit (its share of the reads, then
        // its program) starts once its die has finished the work queued
        // before it and a slot is free: the slot freed last before then
        // (best fit, so a die's units follow each other in one slot), else
        // the one that frees first; the slot is busy until the program
        // ends. Very large requests go in at most 1024 pieces.
        let pieces = program_units.min(1024);
        let mut e = t;
        for j in 0..pieces {
            let units = program_units * (j + 1) / pieces - program_units * j / pieces;
            let r = reads * (j + 1) / pieces - reads * j / pieces;
            let dur = r.saturating_add(units.saturating_mul(self.profile.program_ns));
            let ready = t.max(self.dies[die].prog_until());
            let mut fit: Option<(usize, u64)> = None;
            let mut first = (0usize, u64::MAX);
            for (k, &f) in self.gc_slots.iter().enumerate() {
                if f <= ready && fit.map_or(true, |(_, b)| f > b) {
                    fit = Some((k, f));
                }
                if f < first.1 {
                    first = (k, f);
                }
            }
            let (k, free) = fit.unwrap_or(first);
            e = self.dies[die].program(ready.max(free), dur, self.sus.seg_ns);
            self.gc_slots[k] = e;
        }
        e.max(xe)
    }

    fn finish(&mut self, t: u64, zone: u32, written: u64, capacity: u64) -> u64 {
        let fe = self.frontend(t);
        if written == 0 || written >= capacity {
            return fe + self.profile.finish_empty_ns;
        }
        let unit = self.unit_bytes;
        let zone64 = u64::from(zone);
        let mut last = fe;
        // The open unit: pad and program what is buffered.
        let partial = written % unit;
        if partial != 0 {
            let die = self.program_die(zone64, written / unit);
            last = last.max(self.program_unit(fe, die, partial));
        }
        // Filler for every remaining unit, on the zone's dies, lowest priority.
        let k0 = written.div_ceil(unit);
        let k_end = capacity.div_ceil(unit);
        let n = k_end.saturating_sub(k0);
        let dpz = self.dies_per_zone;
        let per = n / dpz;
        let rem = n % dpz;
        let first_j = (k0 + zone64) % dpz;
        let tp = self.profile.program_ns;
        for i in 0..dpz.min(n) {
            let j = (first_j + i) % dpz;
            let count = per + u64::from(i < rem);
            let die = ((zone64 * dpz + j) % self.total_dies) as usize;
            last = last.max(self.dies[die].fill(fe, count.saturating_mul(tp)));
        }
        last + self.profile.finish_base_ns
    }

    fn reset(&mut self, t: u64, written: u64, finished_early: bool) -> u64 {
        let fe = self.frontend(t);
        let p = &self.profile;
        let cap = p.zone_capacity_bytes;
        let mut cost = u128::from(p.reset_base_ns)
            + u128::from(p.reset_per_written_mib_ns) * u128::from(written) / MIB;
        if !finished_early {
            if written >= cap {
                cost += u128::from(p.reset_full_extra_ns);
            } else if written > 0 {
                let sat = p.reset_partial_saturation_bytes.max(1);
                cost += u128::from(p.reset_partial_extra_ns) * u128::from(written.min(sat))
                    / u128::from(sat);
            }
        }
        // Jitter, uniform in +/- reset_jitter_ppm.
        let j = p.reset_jitter_ppm;
        if j > 0 {
            self.draws += 1;
            let r = splitmix64(p.seed ^ splitmix64(self.draws)) % (2 * j + 1);
            cost = cost * u128::from(PPM - j + r) / u128::from(PPM);
        }
        // Interference: recent I/O makes a slowed reset likely.
        let w = [
            p.reset_interference_read_ppm,
            p.reset_interference_write_ppm,
            p.reset_interference_append_ppm,
        ];
        let slowdown = p.reset_interference_slowdown_pct;
        let mut prob: u64 = 0;
        for (c, wc) in w.into_iter().enumerate() {
            let busy = self.meters[c].busy_ppm(fe);
            prob = prob.saturating_add(wc.saturating_mul(busy) / PPM);
        }
        self.reset_hit_acc += prob.min(PPM);
        if self.reset_hit_acc >= PPM {
            self.reset_hit_acc -= PPM;
            cost = cost * u128::from(slowdown) / 100;
        }
        // Partial program unit of an unfinished zone: discarded from the buffer.
        if !finished_early && written < cap {
            self.buffer.discard(written % self.unit_bytes);
        }
        let s = fe.max(self.reset_free);
        self.reset_free = s.saturating_add(cost.min(u128::from(u64::MAX / 4)) as u64);
        self.reset_free
    }
}
