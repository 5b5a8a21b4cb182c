//! `FlashArray`: the per-controller timing model, which times each command
//! through the parts it meets, each a type of its own module: the host's
//! costs and link (`host`), the front end (`frontend`), the engines' service
//! times (`engine_cost`), the write buffer (`buffer`), the dies and channels
//! (`media`, placed by `placement`), read-ahead (`readahead`), the reset
//! engine (`reset`) and the seeded draws (`draws`). See the module docs of
//! `timing` and `docs/timing-model.md`.

use super::buffer::WriteBuffer;
use super::draws::Draws;
use super::engine_cost;
use super::flash::Rate;
use super::frontend::FrontEnd;
use super::host::{HostCosts, HostLink};
use super::media::Media;
use super::op::{FtlPlace, FtlProgram, MediaOp, NamespaceKind};
use super::placement::DiePlacement;
use super::profile::{HostStack, InvalidTimingProfile, TimingProfile, ZrwaMedium};
use super::readahead::{Lookup, ReadAhead, RING};
use super::reset::{IoClass, ResetEngine};

/// A single command is timed over at most this many program units (larger
/// commands are beyond any MDTS; the bound keeps `submit` O(1) and hang-free).
const MAX_UNITS_PER_COMMAND: u64 = 4096;
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
    /// Dies and channels, and how they read and program.
    media: Media,
    /// Which die a program unit is on.
    place: DiePlacement,
    unit_bytes: u64,
    host: HostCosts,
    conv_rate: Rate,
    zrwa_rate: Rate,
    /// The front end and the engine queue.
    fe: FrontEnd,
    write_eng_free: u64,
    append_eng_free: u64,
    conv_read_free: u64,
    conv_write_free: u64,
    zrwa_free: u64,
    buffer: WriteBuffer,
    conv_cursor_bytes: u64,
    ns_kinds: Vec<(u32, NamespaceKind)>,
    /// The reset engine and the recent I/O that slows it.
    resets: ResetEngine,
    /// The pseudo-random draws (jitter, out-of-order service).
    draws: Draws,
    /// Sequential read streams and their prefetch (read-ahead).
    ra: ReadAhead,
    /// Host link (device → host).
    link: HostLink,
}

impl FlashArray {
    /// Builds the model; fails with the validation message of a bad profile.
    pub fn new(profile: &TimingProfile) -> Result<FlashArray, InvalidTimingProfile> {
        profile.validate()?;
        let p = profile.clone();
        let unit = p.program_unit_bytes();
        Ok(FlashArray {
            media: Media::new(&p),
            place: DiePlacement::new(&p),
            unit_bytes: unit,
            host: HostCosts::new(&p),
            conv_rate: Rate::from_mibps(p.conv_write_mibps),
            zrwa_rate: Rate::from_mibps(p.zrwa_medium_mibps.max(1)),
            fe: FrontEnd::new(&p),
            write_eng_free: 0,
            append_eng_free: 0,
            conv_read_free: 0,
            conv_write_free: 0,
            zrwa_free: 0,
            buffer: WriteBuffer::new(p.write_buffer_bytes, unit),
            conv_cursor_bytes: 0,
            ns_kinds: Vec::with_capacity(8),
            resets: ResetEngine::new(&p),
            draws: Draws::new(&p),
            ra: ReadAhead::new(
                p.readahead_streams as usize,
                p.readahead_hit_mibps,
                u64::from(p.readahead_window_units),
                p.readahead_trigger_reads,
            ),
            link: HostLink::new(&p),
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
        self.place.total_dies as u32
    }

    /// End of the programs (host and GC) and erases queued on `die`: an FTL
    /// steering new program units to the least busy die reads this.
    pub fn die_program_until(&self, die: u32) -> u64 {
        self.media.die_program_until(die as usize)
    }

    /// Die time to read every page of one program unit (GC reads).
    pub fn unit_read_ns(&self) -> u64 {
        self.media.unit_read_ns()
    }

    /// Virtual time at which all flash work scheduled so far has ended
    /// (programs, filler, reads); a quiescent device is idle from then on.
    pub fn flash_idle_at(&self) -> u64 {
        self.media.idle_at()
    }

    /// Returns the virtual time (ns) at which the command completes, as seen by
    /// the host (host-stack submission and completion overheads included).
    /// `ZrwaCommit` is background work: it returns when its data is in flash.
    pub fn submit(&mut self, now_ns: u64, stack: HostStack, op: &MediaOp) -> u64 {
        let now_ns = now_ns.min(MAX_SUBMIT_NS);
        let (hs, hc) = if matches!(op, MediaOp::Read { .. }) {
            self.host.of_read(stack)
        } else {
            self.host.of(stack)
        };
        let t = now_ns.saturating_add(hs);
        let op = op.clamped(MAX_UNITS_PER_COMMAND * self.unit_bytes);
        let done = match op {
            MediaOp::Read {
                ns,
                lba_offset_bytes,
                bytes,
            } => {
                let d = self.read(t, ns, lba_offset_bytes, bytes, None);
                self.resets.record(IoClass::Read, t, d);
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
                self.resets.record(IoClass::Write, t, d);
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
                self.resets.record(IoClass::Append, t, d);
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
                self.resets.record(IoClass::Write, t, d);
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
                let fe = self.fe.pass(t);
                self.commit(fe, zone, zone_offset_bytes, bytes);
                fe + self.profile.zrwa_flush_ns
            }
            MediaOp::Open { .. } => self.fe.pass(t) + self.profile.open_ns,
            MediaOp::Close { .. } => self.fe.pass(t) + self.profile.close_ns,
            MediaOp::ZoneMgmtNoop { .. } => self.fe.pass(t) + self.profile.zone_mgmt_noop_ns,
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
                let die = self.place.die(die);
                return self.media.gc_relocate(
                    now_ns,
                    die,
                    read_units,
                    slc_ns,
                    bytes,
                    program_units,
                );
            }
            MediaOp::Erase { die, .. } => {
                return self.media.erase(self.place.die(die), now_ns);
            }
            MediaOp::Flush { .. } => {
                let fe = self.fe.pass(t) + self.profile.flush_ns;
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
        let (hs, hc) = self.host.of(stack);
        let t = now_ns.saturating_add(hs);
        let bytes = bytes.min(MAX_UNITS_PER_COMMAND * self.unit_bytes);
        self.ra
            .written(ns, 0, lba_offset_bytes, bytes, self.unit_bytes);
        let d = self.conv_write(t, ns, bytes, fua, Some(units));
        self.resets.record(IoClass::Write, t, d);
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
        let (hs, hc) = self.host.of_read(stack);
        let t = now_ns.saturating_add(hs);
        let bytes = bytes.min(MAX_UNITS_PER_COMMAND * self.unit_bytes);
        let d = self.read(t, ns, lba_offset_bytes, bytes, Some(places));
        self.resets.record(IoClass::Read, t, d);
        d.saturating_add(hc)
    }

    // ------------------------------------------------------------ internals

    /// Programs one unit (of which `bytes` are buffered data) on `die` once
    /// its data is complete at `t`, and frees its buffer room then; returns
    /// the end of the program.
    fn program_unit(&mut self, t: u64, die: usize, bytes: u64) -> u64 {
        let pe = self.media.program_unit(t, die);
        self.buffer.release_at(pe, bytes);
        pe
    }

    /// Array read of bytes `[cs, ce)` of the unit at `unit_start` on `die`
    /// from `t` (`Media::read`; programs suspend as the buffer's admissions
    /// say).
    fn flash_read(&mut self, t: u64, die: usize, unit_start: u64, cs: u64, ce: u64) -> u64 {
        let admitting = self.buffer.admitting_until();
        self.media.read(t, die, unit_start, (cs, ce), admitting)
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
            let die = self.place.program_die(zone, k);
            last = last.max(self.program_unit(t, die, unit));
        }
        // A zone capacity that is not a multiple of the program unit ends in
        // a partial unit, programmed (padded) when the data reaches capacity.
        let tail = cap % unit;
        if tail != 0 && off < cap && end >= cap && cap - off <= MAX_UNITS_PER_COMMAND * unit {
            let die = self.place.program_die(zone, cap / unit);
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
            d = d.max(adm + self.media.unit_xfer_ns + self.profile.program_ns);
        }
        d
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
        let (svc, bg) = engine_cost::write_ns(p, off, bytes);
        let extra = if implicit_open {
            p.implicit_open_write_extra_ns
        } else {
            0
        };
        let complete = p.write_complete_ns + extra;
        let medium = p.zrwa_medium;
        let fe = self.fe.pass(t);
        let es = fe.max(self.write_eng_free);
        self.fe.engine_entered(es);
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
            let mut d = self.draws.jitter(ready + complete);
            if fua && !self.profile.write_buffer_power_loss_protected {
                // FUA without power-loss protection: the data must be on the
                // non-volatile medium.
                match medium {
                    ZrwaMedium::WriteBuffer => {
                        d = d.max(ready + self.media.unit_xfer_ns + self.profile.program_ns);
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
        let d = self
            .draws
            .out_of_order(d, adm.saturating_sub(fe + svc), fua);
        self.draws.jitter(d)
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
        let svc = engine_cost::append_ns(p, bytes);
        let extra = if implicit_open {
            p.implicit_open_append_extra_ns
        } else {
            0
        };
        let complete = p.append_complete_ns + extra;
        let fe = self.fe.pass(t);
        let es = fe.max(self.append_eng_free);
        self.fe.engine_entered(es);
        let adm = self.buffer.admit(es + svc, bytes, true);
        self.append_eng_free = adm;
        let last = self.schedule_zone_range(adm, zone, off, bytes);
        let d = self.write_path_done(adm, last, off.saturating_add(bytes), fua) + complete;
        let d = self
            .draws
            .out_of_order(d, adm.saturating_sub(fe + svc), fua);
        self.draws.jitter(d)
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
        let fe = self.fe.pass(t);
        let es = fe.max(self.conv_write_free);
        self.fe.engine_entered(es);
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
            let gate = self.media.gc_gate();
            for u in units.iter().take(MAX_UNITS_PER_COMMAND as usize) {
                let die = self.place.die(u.die);
                let ub = u.bytes.min(unit);
                let pe = self
                    .media
                    .program_ftl_unit(adm, gate, die, ub, u.program_ns);
                self.buffer.release_at(pe, ub);
                last = last.max(pe);
            }
        } else if new >= old {
            for _ in (old / unit)..(new / unit).min(old / unit + MAX_UNITS_PER_COMMAND) {
                let die = self.place.rotate_die();
                last = last.max(self.program_unit(adm, die, unit));
            }
        }
        let d = self.write_path_done(adm, last, new, fua) + complete;
        self.draws.jitter(d)
    }

    /// ZRWA data `[off, off + bytes)` of `zone` moves into the write buffer and
    /// its completed units are programmed; returns when they are in flash.
    fn commit(&mut self, t: u64, zone: u32, off: u64, bytes: u64) -> u64 {
        self.buffer.add(bytes);
        self.schedule_zone_range(t, zone, off, bytes)
    }

    fn read(&mut self, t: u64, ns: u32, off: u64, bytes: u64, places: Option<&[FtlPlace]>) -> u64 {
        let conv = self.namespace_kind(ns) == NamespaceKind::Conventional;
        let fe = self.fe.pass_read(t);
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
                    let die = self.place.die(p.die);
                    let e = if p.read_ns > 0 {
                        // SLC-mode block: one page type, its own tR.
                        let admitting = self.buffer.admitting_until();
                        self.media.read_slc(t0, die, p.read_ns, ce - cs, admitting)
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
                (self.place.conv_die(k), k * unit, u64::MAX)
            } else {
                let in_zone = pos % zs;
                let k = in_zone / unit;
                let zone_start = pos - in_zone;
                (
                    self.place.zone_die(pos / zs, k),
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
        let link = self.link.read(fe, end - off);
        done.max(link) + self.profile.read_complete_ns + self.profile.read_flash_extra_ns
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
        hit_done.max(self.link.read(t, end - off)) + self.profile.read_complete_ns
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
                    self.place.conv_die(k)
                } else {
                    self.place.zone_die(zone, k)
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

    fn finish(&mut self, t: u64, zone: u32, written: u64, capacity: u64) -> u64 {
        let fe = self.fe.pass(t);
        if written == 0 || written >= capacity {
            return fe + self.profile.finish_empty_ns;
        }
        let unit = self.unit_bytes;
        let zone64 = u64::from(zone);
        let mut last = fe;
        // The open unit: pad and program what is buffered.
        let partial = written % unit;
        if partial != 0 {
            let die = self.place.program_die(zone64, written / unit);
            last = last.max(self.program_unit(fe, die, partial));
        }
        // Filler for every remaining unit, on the zone's dies, lowest priority.
        let k0 = written.div_ceil(unit);
        let k_end = capacity.div_ceil(unit);
        let n = k_end.saturating_sub(k0);
        let dpz = self.place.dies_per_zone;
        let per = n / dpz;
        let rem = n % dpz;
        let first_j = (k0 + zone64) % dpz;
        let tp = self.profile.program_ns;
        for i in 0..dpz.min(n) {
            let j = (first_j + i) % dpz;
            let count = per + u64::from(i < rem);
            let die = ((zone64 * dpz + j) % self.place.total_dies) as usize;
            last = last.max(self.media.fill(die, fe, count.saturating_mul(tp)));
        }
        last + self.profile.finish_base_ns
    }

    fn reset(&mut self, t: u64, written: u64, finished_early: bool) -> u64 {
        let fe = self.fe.pass(t);
        let p = &self.profile;
        let done = self
            .resets
            .reset(p, &mut self.draws, fe, written, finished_early);
        // Partial program unit of an unfinished zone: discarded from the buffer.
        if !finished_early && written < p.zone_capacity_bytes {
            self.buffer.discard(written % self.unit_bytes);
        }
        done
    }
}
