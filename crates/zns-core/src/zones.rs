//! The ZNS state machine of one zoned namespace: zone states and transitions,
//! open/active/ZRWA resources, write pointers, Zone Append, Zone Management Send
//! (open, close, finish, reset, offline, ZRWA explicit flush, select all), read
//! checks, fault injection (read-only / offline zones) and power cycles.
//!
//! [`ZoneSet`] is pure: it never sees data, time or threads. A device feeds it a
//! command and gets back either the effect (where the data lands, which zones
//! changed state, which LBAs a ZRWA flush committed) or the exact NVMe status a
//! controller posts. The rules, the order of the checks and every place where the
//! specification, QEMU and FEMU differ are written down in `docs/semantics.md`;
//! the code follows that page.
//!
//! Performance: per zone the set keeps 32 bytes; a write is O(1) and does not
//! allocate. Implicitly opened zones form an intrusive doubly linked list in
//! open order (QEMU's `imp_open_zones` queue), so the controller-initiated
//! auto-close of the zone opened longest ago is O(1) too.

use serde::{Deserialize, Serialize};

use crate::status::NvmeStatus;
use crate::types::{
    InvalidZoneConfig, ReportFilter, ZnsResult, ZoneAction, ZoneAttributes, ZoneDescriptor,
    ZoneSendCmd, ZoneState, ZoneType, ZonedConfig,
};

use NvmeStatus::*;
use ZoneState::*;

/// Link terminator of the implicitly-opened list.
const NIL: u32 = u32::MAX;

/// Largest zone count a `ZoneSet` accepts (2^24 zones = 512 MiB of zone state),
/// so that a typo in a profile is an error, not an out-of-memory abort.
pub const MAX_ZONES: u32 = 1 << 24;

/// One zone as a persistent image stores it.
///
/// `write_pointer` is the internal write pointer: for a zone that became Full by
/// writes it is ZSLBA + ZCAP, for a zone finished early (`finished_early`) it is
/// where its data ends, for ReadOnly/Offline zones the last known value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneRecord {
    pub state: ZoneState,
    pub write_pointer: u64,
    /// The zone holds a ZRWA (only for open or closed zones).
    pub zrwa: bool,
    /// The zone is Full because of a Finish with capacity left unwritten.
    pub finished_early: bool,
    /// ZA.ZFC: the controller finished the zone (only after a power cycle that
    /// found no active resource for a zone that lost its tail). Absent in older
    /// images: defaults to false.
    #[serde(default)]
    pub finished_by_controller: bool,
}

/// What a successful Write or Zone Append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteEffect {
    pub zone: u32,
    /// Where the data landed (for an append: the LBA assigned and returned to the host).
    pub slba: u64,
    pub nlb: u64,
    /// This command moved the zone from ZSE or ZSC to ZSIO.
    pub implicitly_opened: bool,
    /// A zone the controller closed (ZSIO -> ZSC) to free an open resource.
    pub auto_closed: Option<u32>,
    /// The zone holds a ZRWA: the data landed in it and is not committed yet
    /// (except the part below the new WP when `committed` is set).
    pub zrwa: bool,
    /// `[from, to)`: the LBAs the WP moved over by an implicit ZRWA flush.
    pub committed: Option<(u64, u64)>,
    /// The write reached ZSLBA + ZCAP: the zone is now Full (open/active/ZRWA released).
    pub became_full: bool,
}

/// One zone changed by a management command, a fault injection or a power cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZoneChange {
    pub zone: u32,
    pub from: ZoneState,
    pub to: ZoneState,
    /// Internal WP − ZSLBA before the action (for a zone finished early: where its
    /// data ended; for a zone Full by writes: ZCAP).
    pub written_lbas: u64,
    /// `finished_early` before the action.
    pub finished_early: bool,
    /// `[from, to)` committed by a ZRWA explicit flush, or by the Finish of a zone
    /// holding a ZRWA (then: from the WP to the end of the highest ZRWA write).
    pub committed: Option<(u64, u64)>,
    /// The zone gave its ZRWA back.
    pub zrwa_released: bool,
    /// The zone got a ZRWA (Open with ZRWAA).
    pub zrwa_allocated: bool,
    /// The controller did this on its own (auto-close to free an open resource,
    /// or a Finish because a power cycle found no active resource), not the
    /// command's action.
    pub controller_initiated: bool,
}

/// The effect of a Zone Management Send command: one entry per zone whose state,
/// write pointer or ZRWA changed, in the order the changes happened. A command
/// that changes nothing (reset of an empty zone, close of a closed zone, a
/// select-all that matches no zone) succeeds with no entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MgmtEffect {
    pub changes: Vec<ZoneChange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Zone {
    /// Internal write pointer (absolute LBA).
    wp: u64,
    /// While a ZRWA is held: end (exclusive) of the highest LBA written into the
    /// zone so far, ≥ `wp`. Lets Finish commit exactly what the ZRWA holds.
    hwm: u64,
    /// Implicitly-opened list links (valid only in ZSIO).
    prev: u32,
    next: u32,
    state: ZoneState,
    zrwa: bool,
    finished_early: bool,
    /// ZA.ZFC: finished by the controller.
    zfc: bool,
}

/// The zones of one zoned namespace and the rules they obey.
#[derive(Debug, Clone)]
pub struct ZoneSet {
    cfg: ZonedConfig,
    zones: Vec<Zone>,
    total_lbas: u64,
    zone_size_lbas: u64,
    zone_cap_lbas: u64,
    zone_shift: Option<u32>,
    max_transfer_lbas: u64,
    append_limit_lbas: u64,
    zrwa_size_lbas: u64,
    zrwa_fg_lbas: u64,
    zrwa_resources: u32,
    open: u32,
    active: u32,
    zrwa_used: u32,
    imp_head: u32,
    imp_tail: u32,
    imp_count: u32,
}

impl ZoneSet {
    /// A namespace with every zone Empty. Fails (naming the field) if `cfg` is invalid.
    pub fn new(cfg: ZonedConfig) -> Result<ZoneSet, InvalidZoneConfig> {
        cfg.validate()?;
        if cfg.zone_count > MAX_ZONES {
            return Err(InvalidZoneConfig(format!(
                "zone_count = {}: at most {MAX_ZONES} zones are supported (32 bytes of state each)",
                cfg.zone_count
            )));
        }
        let zsze = cfg.zone_size_lbas;
        let zones = (0..cfg.zone_count as u64)
            .map(|i| {
                let zslba = i * zsze;
                Zone {
                    wp: zslba,
                    hwm: zslba,
                    prev: NIL,
                    next: NIL,
                    state: Empty,
                    zrwa: false,
                    finished_early: false,
                    zfc: false,
                }
            })
            .collect();
        let (zrwa_size_lbas, zrwa_fg_lbas, zrwa_resources) = match &cfg.zrwa {
            Some(z) => (z.size_lbas, z.flush_granularity_lbas, z.resources),
            None => (0, 1, 0),
        };
        Ok(ZoneSet {
            total_lbas: cfg.total_lbas(),
            zone_size_lbas: zsze,
            zone_cap_lbas: cfg.zone_capacity_lbas,
            zone_shift: zsze.is_power_of_two().then(|| zsze.trailing_zeros()),
            max_transfer_lbas: cfg.max_transfer_lbas as u64,
            append_limit_lbas: cfg.append_limit_lbas() as u64,
            zrwa_size_lbas,
            zrwa_fg_lbas,
            zrwa_resources,
            zones,
            cfg,
            open: 0,
            active: 0,
            zrwa_used: 0,
            imp_head: NIL,
            imp_tail: NIL,
            imp_count: 0,
        })
    }

    pub fn config(&self) -> &ZonedConfig {
        &self.cfg
    }

    pub fn zone_count(&self) -> u32 {
        self.zones.len() as u32
    }

    pub fn total_lbas(&self) -> u64 {
        self.total_lbas
    }

    /// The zone holding `lba`; None if `lba` is beyond the namespace.
    pub fn zone_of(&self, lba: u64) -> Option<u32> {
        (lba < self.total_lbas).then(|| self.idx(lba) as u32)
    }

    /// ZSLBA of `zone` (saturates for zone indices past the end; never panics).
    pub fn zone_start_lba(&self, zone: u32) -> u64 {
        (zone as u64).saturating_mul(self.zone_size_lbas)
    }

    /// The zone's descriptor as Report Zones returns it; None for a bad index.
    pub fn descriptor(&self, zone: u32) -> Option<ZoneDescriptor> {
        self.zones
            .get(zone as usize)
            .map(|_| self.desc(zone as usize))
    }

    /// The internal write pointer of `zone` (see [`ZoneRecord::write_pointer`]).
    pub fn write_pointer(&self, zone: u32) -> Option<u64> {
        self.zones.get(zone as usize).map(|z| z.wp)
    }

    /// Zone Management Receive: descriptors of the zones from the one holding
    /// `start_lba` on, matching `filter`, at most `max_zones`.
    pub fn report(
        &self,
        start_lba: u64,
        filter: ReportFilter,
        max_zones: usize,
    ) -> ZnsResult<Vec<ZoneDescriptor>> {
        if start_lba >= self.total_lbas {
            return Err(LbaOutOfRange);
        }
        let first = self.idx(start_lba);
        Ok((first..self.zones.len())
            .filter(|&i| filter.matches(self.zones[i].state))
            .take(max_zones)
            .map(|i| self.desc(i))
            .collect())
    }

    /// Zones in ZSIO or ZSEO.
    pub fn open_zones(&self) -> u32 {
        self.open
    }

    /// Zones in ZSIO, ZSEO or ZSC.
    pub fn active_zones(&self) -> u32 {
        self.active
    }

    /// ZRWAs currently allocated.
    pub fn zrwa_in_use(&self) -> u32 {
        self.zrwa_used
    }

    /// Implicitly opened zones, opened longest ago first (the auto-close order).
    pub fn implicit_open_order(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.imp_count as usize);
        let mut i = self.imp_head;
        while i != NIL {
            v.push(i);
            i = self.zones[i as usize].next;
        }
        v
    }

    /// The zone is Full because a Finish left capacity unwritten.
    pub fn finished_early(&self, zone: u32) -> bool {
        self.zones
            .get(zone as usize)
            .is_some_and(|z| z.finished_early)
    }

    /// Checks a Read (also Compare/Verify) of `nlb` blocks at `slba`.
    pub fn check_read(&self, slba: u64, nlb: u64) -> ZnsResult<()> {
        let end = self.check_io(slba, nlb)?;
        let mut i = self.idx(slba);
        if self.zones[i].state == Offline {
            return Err(ZoneIsOffline);
        }
        let mut boundary = self.zslba(i) + self.zone_size_lbas;
        if end > boundary {
            if !self.cfg.read_across_zone_boundary {
                return Err(ZoneBoundaryError);
            }
            while end > boundary {
                i += 1;
                if self.zones[i].state == Offline {
                    return Err(ZoneIsOffline);
                }
                boundary += self.zone_size_lbas;
            }
        }
        Ok(())
    }

    /// Write of `nlb` blocks at `slba` (at the WP, or inside the ZRWA window).
    pub fn write(&mut self, slba: u64, nlb: u64) -> ZnsResult<WriteEffect> {
        let end = self.check_io(slba, nlb)?;
        let i = self.idx(slba);
        self.do_write(i, slba, nlb, end)
    }

    /// Zone Append of `nlb` blocks to the zone starting at `zslba`.
    pub fn append(&mut self, zslba: u64, nlb: u64) -> ZnsResult<WriteEffect> {
        self.check_io(zslba, nlb)?;
        let i = self.idx(zslba);
        if self.zones[i].zrwa {
            return Err(InvalidZoneOperation);
        }
        if zslba != self.zslba(i) {
            return Err(InvalidField);
        }
        if nlb > self.append_limit_lbas {
            return Err(InvalidField);
        }
        let slba = self.zones[i].wp;
        self.do_write(i, slba, nlb, slba.saturating_add(nlb))
    }

    /// Zone Management Send.
    pub fn zone_send(&mut self, cmd: ZoneSendCmd) -> ZnsResult<MgmtEffect> {
        if cmd.select_all {
            return match cmd.action {
                ZoneAction::FlushZrwa => Err(InvalidField),
                ZoneAction::Open { zrwa } => self.open_all(zrwa),
                ZoneAction::Close => Ok(self.bulk(|s| s.is_open(), |s, i| s.close_zone(i))),
                ZoneAction::Finish => {
                    Ok(self.bulk(|s| s.is_active(), |s, i| s.finish_zone(i, false)))
                }
                ZoneAction::Reset => {
                    Ok(self.bulk(|s| s.is_active() || s == Full, |s, i| s.reset_zone(i)))
                }
                ZoneAction::Offline => {
                    Ok(self.bulk(|s| s == ReadOnly, |s, i| s.transition(i, Offline)))
                }
            };
        }
        if cmd.slba >= self.total_lbas {
            return Err(LbaOutOfRange);
        }
        let i = self.idx(cmd.slba);
        if cmd.action != ZoneAction::FlushZrwa && cmd.slba != self.zslba(i) {
            return Err(InvalidField);
        }
        let mut fx = MgmtEffect::default();
        let state = self.zones[i].state;
        match cmd.action {
            ZoneAction::Open { zrwa } => self.open_one(i, zrwa, &mut fx)?,
            ZoneAction::Close => match state {
                ImplicitlyOpened | ExplicitlyOpened => {
                    self.record(i, &mut fx, None, false, |s| s.close_zone(i))
                }
                Closed => {}
                Empty | Full | ReadOnly | Offline => return Err(InvalidZoneStateTransition),
            },
            ZoneAction::Finish => match state {
                Full => {}
                Empty | ImplicitlyOpened | ExplicitlyOpened | Closed => {
                    let committed = self.finish_commit_range(i);
                    self.record(i, &mut fx, committed, false, |s| s.finish_zone(i, false))
                }
                ReadOnly | Offline => return Err(InvalidZoneStateTransition),
            },
            ZoneAction::Reset => match state {
                Empty => {}
                ImplicitlyOpened | ExplicitlyOpened | Closed | Full => {
                    self.record(i, &mut fx, None, false, |s| s.reset_zone(i))
                }
                ReadOnly | Offline => return Err(InvalidZoneStateTransition),
            },
            ZoneAction::Offline => match state {
                ReadOnly => self.record(i, &mut fx, None, false, |s| s.transition(i, Offline)),
                Offline => {}
                Empty | ImplicitlyOpened | ExplicitlyOpened | Closed | Full => {
                    return Err(InvalidZoneStateTransition)
                }
            },
            ZoneAction::FlushZrwa => self.flush_zrwa(i, cmd.slba, &mut fx)?,
        }
        Ok(fx)
    }

    /// Fault injection: the controller makes `zone` read only (from any state but
    /// Offline; ReadOnly is a no-op returning from == to). Open, active and ZRWA
    /// resources are released; the WP keeps its last value.
    pub fn inject_read_only(&mut self, zone: u32) -> ZnsResult<ZoneChange> {
        let i = self.check_zone_index(zone)?;
        if self.zones[i].state == Offline {
            return Err(InvalidZoneStateTransition);
        }
        Ok(self.force(i, ReadOnly))
    }

    /// Fault injection: the controller takes `zone` offline (from any state;
    /// Offline is a no-op returning from == to).
    pub fn inject_offline(&mut self, zone: u32) -> ZnsResult<ZoneChange> {
        let i = self.check_zone_index(zone)?;
        Ok(self.force(i, Offline))
    }

    /// Power loss then power on (see `docs/semantics.md`, "Power cycle").
    ///
    /// * Open and closed zones: WP := `durable_wp(zone)` clamped to
    ///   `[ZSLBA, WP]`; they come back Closed, or Empty when the WP is ZSLBA and
    ///   no ZRWA is kept. Without `keep_zrwa` every ZRWA is released.
    /// * Zones Full by writes (not by Finish): WP := `durable_wp(zone)` clamped to
    ///   `[ZSLBA, ZSLBA + ZCAP]`; if that is below ZCAP the zone is no longer Full:
    ///   Empty at ZSLBA, else Closed if an active resource is free, else it stays
    ///   Full, finished early by the controller (ZA.ZFC).
    /// * Zones Full by Finish, Empty, ReadOnly, Offline: untouched (`durable_wp`
    ///   is not called for them).
    ///
    /// Returns one change per zone whose state, WP or ZRWA changed, in zone order
    /// (active zones first, then the formerly Full ones).
    pub fn power_cycle(
        &mut self,
        durable_wp: &dyn Fn(u32) -> u64,
        keep_zrwa: bool,
    ) -> Vec<ZoneChange> {
        let mut changes = Vec::new();
        let mut full_by_writes = Vec::new();
        for i in 0..self.zones.len() {
            let before = self.zones[i];
            let zslba = self.zslba(i);
            match before.state {
                ImplicitlyOpened | ExplicitlyOpened | Closed => {
                    let durable = durable_wp(i as u32).clamp(zslba, before.wp);
                    let keep = keep_zrwa && before.zrwa;
                    // A kept ZRWA needs a WP on a flush-granule boundary: what lies
                    // between the boundary and the durable WP stays in the ZRWA.
                    let d = if keep {
                        durable - (durable - zslba) % self.zrwa_fg_lbas
                    } else {
                        durable
                    };
                    if before.zrwa && !keep {
                        self.release_zrwa(i);
                    }
                    let to = if d == zslba && !keep { Empty } else { Closed };
                    self.transition(i, to);
                    let z = &mut self.zones[i];
                    z.wp = d;
                    if keep {
                        let window_end = d
                            .saturating_add(self.zrwa_size_lbas)
                            .min(zslba + self.zone_cap_lbas);
                        z.hwm = before.hwm.clamp(durable, window_end.max(durable));
                    } else {
                        z.hwm = d;
                    }
                }
                Full if !before.finished_early => {
                    full_by_writes.push(i);
                    continue;
                }
                _ => continue,
            }
            self.push_change(i, before, None, false, &mut changes);
        }
        for i in full_by_writes {
            let before = self.zones[i];
            let zslba = self.zslba(i);
            let cap_end = zslba + self.zone_cap_lbas;
            let d = durable_wp(i as u32).clamp(zslba, cap_end);
            if d == cap_end {
                continue;
            }
            let mut by_controller = false;
            if d == zslba {
                self.transition(i, Empty);
            } else if self.cfg.max_active_zones == 0 || self.active < self.cfg.max_active_zones {
                self.transition(i, Closed);
            } else {
                let z = &mut self.zones[i];
                z.finished_early = true;
                z.zfc = true;
                by_controller = true;
            }
            self.zones[i].wp = d;
            self.zones[i].hwm = d;
            self.push_change(i, before, None, by_controller, &mut changes);
        }
        changes
    }

    /// The zone table for a persistent image.
    pub fn snapshot(&self) -> Vec<ZoneRecord> {
        self.zones
            .iter()
            .map(|z| ZoneRecord {
                state: z.state,
                write_pointer: z.wp,
                zrwa: z.zrwa,
                finished_early: z.finished_early,
                finished_by_controller: z.zfc,
            })
            .collect()
    }

    /// Rebuilds a zone set from `snapshot()` records, validating every record (the
    /// error names the zone index and the field) and the resource limits.
    /// Implicitly opened zones get the open order of their index.
    pub fn from_snapshot(
        cfg: ZonedConfig,
        records: &[ZoneRecord],
    ) -> Result<ZoneSet, InvalidZoneConfig> {
        let mut set = ZoneSet::new(cfg)?;
        set.restore(records).map_err(InvalidZoneConfig)?;
        Ok(set)
    }

    /// Loads `records` into a new set (from_snapshot's checks).
    fn restore(&mut self, records: &[ZoneRecord]) -> Result<(), String> {
        let set = self;
        if records.len() != set.zones.len() {
            return Err(format!(
                "zone table has {} records but zone_count = {}",
                records.len(),
                set.zones.len()
            ));
        }
        for (i, r) in records.iter().enumerate() {
            set.validate_record(i, r)?;
            let zslba = set.zslba(i);
            set.transition(i, r.state);
            let z = &mut set.zones[i];
            z.wp = r.write_pointer;
            z.finished_early = r.finished_early;
            z.zfc = r.finished_by_controller;
            if r.zrwa {
                z.zrwa = true;
                z.hwm = r
                    .write_pointer
                    .saturating_add(set.zrwa_size_lbas)
                    .min(zslba + set.zone_cap_lbas);
                set.zrwa_used += 1;
            } else {
                z.hwm = r.write_pointer;
            }
        }
        let lim = |max: u32| if max == 0 { u32::MAX } else { max };
        if set.open > lim(set.cfg.max_open_zones) {
            return Err(format!(
                "zone table: {} open zones exceed max_open_zones = {}",
                set.open, set.cfg.max_open_zones
            ));
        }
        if set.active > lim(set.cfg.max_active_zones) {
            return Err(format!(
                "zone table: {} active zones exceed max_active_zones = {}",
                set.active, set.cfg.max_active_zones
            ));
        }
        if set.zrwa_used > set.zrwa_resources {
            return Err(format!(
                "zone table: {} zones hold a ZRWA but zrwa.resources = {}",
                set.zrwa_used, set.zrwa_resources
            ));
        }
        Ok(())
    }

    /// Recounts everything from scratch and compares with the kept counters and
    /// the implicit-open list. For tests and debug assertions.
    pub fn check_invariants(&self) -> Result<(), String> {
        let open = self.zones.iter().filter(|z| z.state.is_open()).count() as u32;
        let active = self.zones.iter().filter(|z| z.state.is_active()).count() as u32;
        let zrwa = self.zones.iter().filter(|z| z.zrwa).count() as u32;
        let imp = self
            .zones
            .iter()
            .filter(|z| z.state == ImplicitlyOpened)
            .count() as u32;
        if (open, active, zrwa, imp) != (self.open, self.active, self.zrwa_used, self.imp_count) {
            return Err(format!(
                "counters (open, active, zrwa, imp) = {:?}, recount = {:?}",
                (self.open, self.active, self.zrwa_used, self.imp_count),
                (open, active, zrwa, imp)
            ));
        }
        let order = self.implicit_open_order();
        if order.len() as u32 != imp
            || order
                .iter()
                .any(|&i| self.zones[i as usize].state != ImplicitlyOpened)
        {
            return Err(format!(
                "implicit-open list {order:?} does not match the ZSIO zones"
            ));
        }
        for (i, z) in self.zones.iter().enumerate() {
            let r = ZoneRecord {
                state: z.state,
                write_pointer: z.wp,
                zrwa: z.zrwa,
                finished_early: z.finished_early,
                finished_by_controller: z.zfc,
            };
            self.validate_record(i, &r)?;
            if z.zrwa && (z.hwm < z.wp || z.hwm > self.zslba(i) + self.zone_cap_lbas) {
                return Err(format!(
                    "zone {i}: ZRWA high-water mark {} outside [WP, ZCAP]",
                    z.hwm
                ));
            }
        }
        let lim = |max: u32| if max == 0 { u32::MAX } else { max };
        if open > lim(self.cfg.max_open_zones)
            || active > lim(self.cfg.max_active_zones)
            || zrwa > self.zrwa_resources
        {
            return Err(format!(
                "resource limits exceeded: open {open}, active {active}, zrwa {zrwa}"
            ));
        }
        Ok(())
    }

    // ------------------------------------------------------------------ internals

    #[inline]
    fn idx(&self, lba: u64) -> usize {
        match self.zone_shift {
            Some(s) => (lba >> s) as usize,
            None => (lba / self.zone_size_lbas) as usize,
        }
    }

    #[inline]
    fn zslba(&self, i: usize) -> u64 {
        i as u64 * self.zone_size_lbas
    }

    fn desc(&self, i: usize) -> ZoneDescriptor {
        let z = &self.zones[i];
        let start_lba = self.zslba(i);
        ZoneDescriptor {
            zone_type: ZoneType::SequentialWriteRequired,
            state: z.state,
            attributes: ZoneAttributes {
                finished_by_controller: z.zfc,
                zrwa_valid: z.zrwa,
            },
            start_lba,
            capacity_lbas: self.zone_cap_lbas,
            write_pointer: if z.state == Full {
                start_lba + self.zone_cap_lbas
            } else {
                z.wp
            },
        }
    }

    fn check_zone_index(&self, zone: u32) -> ZnsResult<usize> {
        if (zone as usize) < self.zones.len() {
            Ok(zone as usize)
        } else {
            Err(InvalidField)
        }
    }

    /// Transfer size then namespace range; returns the end LBA (exclusive).
    #[inline]
    fn check_io(&self, slba: u64, nlb: u64) -> ZnsResult<u64> {
        if nlb == 0 || nlb > self.max_transfer_lbas {
            return Err(InvalidField);
        }
        match slba.checked_add(nlb) {
            Some(end) if end <= self.total_lbas => Ok(end),
            _ => Err(LbaOutOfRange),
        }
    }

    fn do_write(&mut self, i: usize, slba: u64, nlb: u64, end: u64) -> ZnsResult<WriteEffect> {
        let z = self.zones[i];
        match z.state {
            Full => return Err(ZoneIsFull),
            ReadOnly => return Err(ZoneIsReadOnly),
            Offline => return Err(ZoneIsOffline),
            _ => {}
        }
        if z.zrwa {
            let window_end = z.wp.saturating_add(self.zrwa_size_lbas.saturating_mul(2));
            if slba < z.wp || end > window_end {
                return Err(ZoneInvalidWrite);
            }
        } else if slba != z.wp {
            return Err(ZoneInvalidWrite);
        }
        let cap_end = self.zslba(i) + self.zone_cap_lbas;
        if end > cap_end {
            return Err(ZoneBoundaryError);
        }
        let mut fx = WriteEffect {
            zone: i as u32,
            slba,
            nlb,
            implicitly_opened: false,
            auto_closed: None,
            zrwa: z.zrwa,
            committed: None,
            became_full: false,
        };
        if matches!(z.state, Empty | Closed) {
            fx.auto_closed = self.acquire_open(i, false)?;
            self.transition(i, ImplicitlyOpened);
            fx.implicitly_opened = true;
        }
        if z.zrwa {
            let zone = &mut self.zones[i];
            zone.hwm = zone.hwm.max(end);
            let flush_from = z.wp.saturating_add(self.zrwa_size_lbas);
            if end > flush_from {
                let fg = self.zrwa_fg_lbas;
                let units = (end - flush_from).div_ceil(fg);
                let new_wp = z.wp.saturating_add(units.saturating_mul(fg)).min(cap_end);
                zone.wp = new_wp;
                fx.committed = Some((z.wp, new_wp));
                if new_wp == cap_end {
                    self.transition(i, Full);
                    fx.became_full = true;
                }
            }
        } else {
            self.zones[i].wp = end;
            if end == cap_end {
                self.transition(i, Full);
                fx.became_full = true;
            }
        }
        Ok(fx)
    }

    /// Resources for moving zone `i` (Empty or Closed) to an open state, QEMU
    /// order: auto-close first (when enabled and every open resource is in use),
    /// then active, open and ZRWA checks. The auto-close is not undone when a
    /// later check fails (QEMU does the same). Returns the auto-closed zone.
    fn acquire_open(&mut self, i: usize, need_zrwa: bool) -> ZnsResult<Option<u32>> {
        let max_open = self.cfg.max_open_zones;
        let max_active = self.cfg.max_active_zones;
        let mut auto_closed = None;
        if self.cfg.auto_close_implicit
            && max_open != 0
            && self.open >= max_open
            && self.imp_head != NIL
        {
            let victim = self.imp_head;
            self.transition(victim as usize, Closed);
            auto_closed = Some(victim);
        }
        if self.zones[i].state == Empty && max_active != 0 && self.active >= max_active {
            return Err(TooManyActiveZones);
        }
        if max_open != 0 && self.open >= max_open {
            return Err(TooManyOpenZones);
        }
        if need_zrwa && self.zrwa_used >= self.zrwa_resources {
            return Err(ZrwaResourcesUnavailable);
        }
        Ok(auto_closed)
    }

    fn open_one(&mut self, i: usize, zrwa: bool, fx: &mut MgmtEffect) -> ZnsResult<()> {
        if zrwa && self.cfg.zrwa.is_none() {
            return Err(InvalidZoneOperation);
        }
        let z = self.zones[i];
        if matches!(z.state, Full | ReadOnly | Offline) {
            return Err(InvalidZoneStateTransition);
        }
        let need_zrwa = zrwa && !z.zrwa;
        if need_zrwa && (z.wp - self.zslba(i)) % self.zrwa_fg_lbas != 0 {
            return Err(ZrwaResourcesUnavailable);
        }
        match z.state {
            Empty | Closed => {
                let auto = self.acquire_open(i, need_zrwa)?;
                self.report_auto_close(auto, fx);
                self.record(i, fx, None, false, |s| {
                    s.transition(i, ExplicitlyOpened);
                    if need_zrwa {
                        s.allocate_zrwa(i);
                    }
                });
            }
            _ => {
                if need_zrwa && self.zrwa_used >= self.zrwa_resources {
                    return Err(ZrwaResourcesUnavailable);
                }
                self.record(i, fx, None, false, |s| {
                    s.transition(i, ExplicitlyOpened);
                    if need_zrwa {
                        s.allocate_zrwa(i);
                    }
                });
            }
        }
        Ok(())
    }

    /// Open with Select All: every Closed zone goes to ZSEO, all or nothing.
    fn open_all(&mut self, zrwa: bool) -> ZnsResult<MgmtEffect> {
        let targets: Vec<usize> = (0..self.zones.len())
            .filter(|&i| self.zones[i].state == Closed)
            .collect();
        let mut need_zrwa = 0u32;
        for &i in &targets {
            let z = self.zones[i];
            if zrwa && !z.zrwa {
                if self.cfg.zrwa.is_none() {
                    return Err(InvalidZoneOperation);
                }
                if (z.wp - self.zslba(i)) % self.zrwa_fg_lbas != 0 {
                    return Err(ZrwaResourcesUnavailable);
                }
                need_zrwa += 1;
            }
        }
        let n = targets.len() as u32;
        let max_open = self.cfg.max_open_zones;
        let mut to_close = 0u32;
        if max_open != 0 {
            let free = max_open.saturating_sub(self.open);
            if n > free {
                to_close = n - free;
                if !self.cfg.auto_close_implicit || to_close > self.imp_count {
                    return Err(TooManyOpenZones);
                }
            }
        }
        if self.zrwa_used.saturating_add(need_zrwa) > self.zrwa_resources {
            return Err(ZrwaResourcesUnavailable);
        }
        let mut fx = MgmtEffect::default();
        for _ in 0..to_close {
            let v = self.imp_head as usize;
            let before = self.zones[v];
            self.transition(v, Closed);
            self.push_change(v, before, None, true, &mut fx.changes);
        }
        for i in targets {
            let give = zrwa && !self.zones[i].zrwa;
            self.record(i, &mut fx, None, false, |s| {
                s.transition(i, ExplicitlyOpened);
                if give {
                    s.allocate_zrwa(i);
                }
            });
        }
        Ok(fx)
    }

    /// Select-all Close/Finish/Reset/Offline: apply `op` to every zone whose state
    /// matches, in zone order. None of these can fail.
    fn bulk(
        &mut self,
        select: impl Fn(ZoneState) -> bool,
        op: impl Fn(&mut Self, usize),
    ) -> MgmtEffect {
        let mut fx = MgmtEffect::default();
        for i in 0..self.zones.len() {
            if select(self.zones[i].state) {
                let committed = self.finish_commit_range(i);
                let before = self.zones[i];
                op(self, i);
                // Only Finish commits a ZRWA; for the others the range is dropped.
                let committed = if self.zones[i].state == Full && before.state != Full {
                    committed
                } else {
                    None
                };
                self.push_change(i, before, committed, false, &mut fx.changes);
            }
        }
        fx
    }

    fn flush_zrwa(&mut self, i: usize, elba: u64, fx: &mut MgmtEffect) -> ZnsResult<()> {
        if self.cfg.zrwa.is_none() {
            return Err(InvalidZoneOperation);
        }
        let z = self.zones[i];
        if !z.zrwa {
            return Err(InvalidField);
        }
        let cap_end = self.zslba(i) + self.zone_cap_lbas;
        if elba < z.wp || elba >= z.wp.saturating_add(self.zrwa_size_lbas) || elba >= cap_end {
            return Err(ZoneBoundaryError);
        }
        let n = elba - z.wp + 1;
        if n % self.zrwa_fg_lbas != 0 && elba + 1 != cap_end {
            return Err(InvalidField);
        }
        if z.state == Closed {
            let auto = self.acquire_open(i, false)?;
            self.report_auto_close(auto, fx);
        }
        let new_wp = elba + 1;
        self.record(i, fx, Some((z.wp, new_wp)), false, |s| {
            if z.state == Closed {
                s.transition(i, ImplicitlyOpened);
            }
            let zone = &mut s.zones[i];
            zone.wp = new_wp;
            zone.hwm = zone.hwm.max(new_wp);
            if new_wp == cap_end {
                s.transition(i, Full);
            }
        });
        Ok(())
    }

    /// Adds the entry for a zone `acquire_open` auto-closed. The auto-close only
    /// changed its state (ZSIO -> ZSC; the flags it clears are never set in ZSIO).
    fn report_auto_close(&self, auto: Option<u32>, fx: &mut MgmtEffect) {
        if let Some(v) = auto {
            let before = Zone {
                state: ImplicitlyOpened,
                ..self.zones[v as usize]
            };
            self.push_change(v as usize, before, None, true, &mut fx.changes);
        }
    }

    /// What a Finish of zone `i` commits: `[WP, highest ZRWA write)` if it holds a ZRWA.
    fn finish_commit_range(&self, i: usize) -> Option<(u64, u64)> {
        let z = &self.zones[i];
        (z.zrwa && z.hwm > z.wp).then_some((z.wp, z.hwm))
    }

    fn close_zone(&mut self, i: usize) {
        self.transition(i, Closed);
    }

    fn finish_zone(&mut self, i: usize, by_controller: bool) {
        let cap_end = self.zslba(i) + self.zone_cap_lbas;
        let z = &mut self.zones[i];
        if z.zrwa {
            z.wp = z.hwm.max(z.wp);
        }
        let early = z.wp < cap_end;
        self.transition(i, Full);
        let z = &mut self.zones[i];
        z.finished_early = early;
        z.zfc = by_controller;
    }

    fn reset_zone(&mut self, i: usize) {
        let zslba = self.zslba(i);
        self.transition(i, Empty);
        let z = &mut self.zones[i];
        z.wp = zslba;
        z.hwm = zslba;
        z.finished_early = false;
        z.zfc = false;
    }

    fn force(&mut self, i: usize, to: ZoneState) -> ZoneChange {
        let before = self.zones[i];
        self.transition(i, to);
        self.change(i, before, None, true)
    }

    fn allocate_zrwa(&mut self, i: usize) {
        let z = &mut self.zones[i];
        debug_assert!(!z.zrwa);
        z.zrwa = true;
        z.hwm = z.wp;
        self.zrwa_used += 1;
    }

    fn release_zrwa(&mut self, i: usize) {
        let z = &mut self.zones[i];
        if z.zrwa {
            z.zrwa = false;
            self.zrwa_used -= 1;
        }
    }

    /// The one place that changes a zone's state: keeps the open/active counters,
    /// the implicit-open list and the ZRWA count right, releases the ZRWA when the
    /// zone stops being active and clears the Full-only flags outside Full.
    fn transition(&mut self, i: usize, to: ZoneState) {
        let from = self.zones[i].state;
        if from == to {
            return;
        }
        if from == ImplicitlyOpened {
            self.imp_unlink(i);
        }
        if from.is_open() {
            self.open -= 1;
        }
        if from.is_active() {
            self.active -= 1;
        }
        if to.is_open() {
            self.open += 1;
        }
        if to.is_active() {
            self.active += 1;
        }
        if to == ImplicitlyOpened {
            self.imp_push(i);
        }
        self.zones[i].state = to;
        if !to.is_active() {
            self.release_zrwa(i);
        }
        if to != Full {
            let z = &mut self.zones[i];
            z.finished_early = false;
            z.zfc = false;
        }
    }

    fn imp_push(&mut self, i: usize) {
        let tail = self.imp_tail;
        {
            let z = &mut self.zones[i];
            z.prev = tail;
            z.next = NIL;
        }
        if tail == NIL {
            self.imp_head = i as u32;
        } else {
            self.zones[tail as usize].next = i as u32;
        }
        self.imp_tail = i as u32;
        self.imp_count += 1;
    }

    fn imp_unlink(&mut self, i: usize) {
        let (prev, next) = (self.zones[i].prev, self.zones[i].next);
        if prev == NIL {
            self.imp_head = next;
        } else {
            self.zones[prev as usize].next = next;
        }
        if next == NIL {
            self.imp_tail = prev;
        } else {
            self.zones[next as usize].prev = prev;
        }
        let z = &mut self.zones[i];
        z.prev = NIL;
        z.next = NIL;
        self.imp_count -= 1;
    }

    /// Runs `op` on zone `i` and appends a change entry if anything changed.
    fn record(
        &mut self,
        i: usize,
        fx: &mut MgmtEffect,
        committed: Option<(u64, u64)>,
        by_controller: bool,
        op: impl FnOnce(&mut Self),
    ) {
        let before = self.zones[i];
        op(self);
        self.push_change(i, before, committed, by_controller, &mut fx.changes);
    }

    fn push_change(
        &self,
        i: usize,
        before: Zone,
        committed: Option<(u64, u64)>,
        by_controller: bool,
        out: &mut Vec<ZoneChange>,
    ) {
        let after = &self.zones[i];
        let same = before.state == after.state
            && before.wp == after.wp
            && before.zrwa == after.zrwa
            && before.finished_early == after.finished_early
            && before.zfc == after.zfc;
        if !same {
            out.push(self.change(i, before, committed, by_controller));
        }
    }

    fn change(
        &self,
        i: usize,
        before: Zone,
        committed: Option<(u64, u64)>,
        by_controller: bool,
    ) -> ZoneChange {
        let after = &self.zones[i];
        ZoneChange {
            zone: i as u32,
            from: before.state,
            to: after.state,
            written_lbas: before.wp - self.zslba(i),
            finished_early: before.finished_early,
            committed,
            zrwa_released: before.zrwa && !after.zrwa,
            zrwa_allocated: !before.zrwa && after.zrwa,
            controller_initiated: by_controller,
        }
    }

    fn validate_record(&self, i: usize, r: &ZoneRecord) -> Result<(), String> {
        let zslba = self.zslba(i);
        let cap_end = zslba + self.zone_cap_lbas;
        let wp = r.write_pointer;
        let st = r.state.abbrev();
        let bad = |field: &str, why: String| Err(format!("zone {i} ({st}): {field} {why}"));
        if r.finished_early && r.state != Full {
            return bad(
                "finished_early",
                "= true is only valid for a Full zone".into(),
            );
        }
        if r.finished_by_controller && !r.finished_early {
            return bad(
                "finished_by_controller",
                "= true is only valid for a Full zone finished early".into(),
            );
        }
        if r.zrwa && !r.state.is_active() {
            return bad(
                "zrwa",
                "= true is only valid for an open or closed zone".into(),
            );
        }
        if r.zrwa && self.cfg.zrwa.is_none() {
            return bad(
                "zrwa",
                "= true but the namespace has no ZRWA support".into(),
            );
        }
        match r.state {
            Empty if wp != zslba => bad(
                "write_pointer",
                format!("= {wp}: an empty zone's WP is its ZSLBA {zslba}"),
            ),
            ImplicitlyOpened | ExplicitlyOpened | Closed if wp < zslba || wp >= cap_end => bad(
                "write_pointer",
                format!("= {wp}: must be in [{zslba}, {cap_end}) for an active zone"),
            ),
            Full if !r.finished_early && wp != cap_end => bad(
                "write_pointer",
                format!("= {wp}: a zone Full by writes has its WP at ZSLBA + ZCAP = {cap_end}"),
            ),
            Full if r.finished_early && (wp < zslba || wp >= cap_end) => bad(
                "write_pointer",
                format!("= {wp}: a zone finished early has its WP in [{zslba}, {cap_end})"),
            ),
            ReadOnly | Offline if wp < zslba || wp > cap_end => bad(
                "write_pointer",
                format!("= {wp}: must be in [{zslba}, {cap_end}]"),
            ),
            _ if r.zrwa && (wp - zslba) % self.zrwa_fg_lbas != 0 => bad(
                "write_pointer",
                format!(
                    "= {wp}: a ZRWA zone's WP is a multiple of the flush granularity from ZSLBA"
                ),
            ),
            _ => Ok(()),
        }
    }
}
