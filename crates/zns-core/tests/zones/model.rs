//! Property tests: random command sequences run against `ZoneSet` and against a
//! small reference model written here from docs/semantics.md — a plain Vec of
//! zones, counts recomputed by brute force on every use, the auto-close order
//! from an open sequence number, 128-bit arithmetic for ranges — comparing every
//! result (effect or status) and every descriptor after every command.
//! Plus a fuzz test of arbitrary u64 arguments: no panic, counters consistent.

use proptest::prelude::*;
use zns_core::NvmeStatus::*;
use zns_core::ZoneState::*;
use zns_core::*;

// ---------------------------------------------------------------- reference model

#[derive(Debug, Clone, Copy, PartialEq)]
struct MZ {
    state: ZoneState,
    wp: u64,
    /// End of the highest write into the ZRWA (meaningful while `zrwa`).
    hwm: u64,
    zrwa: bool,
    fe: bool,
    zfc: bool,
    /// When the zone last became ZSIO.
    seq: u64,
}

struct Model {
    c: ZonedConfig,
    z: Vec<MZ>,
    seq: u64,
}

type R<T> = Result<T, NvmeStatus>;

fn lim(x: u32) -> u64 {
    if x == 0 {
        u64::MAX
    } else {
        x as u64
    }
}

fn is_open(s: ZoneState) -> bool {
    s == ImplicitlyOpened || s == ExplicitlyOpened
}
fn is_active(s: ZoneState) -> bool {
    is_open(s) || s == Closed
}

impl Model {
    fn new(c: ZonedConfig) -> Model {
        let z = (0..c.zone_count as u64)
            .map(|i| MZ {
                state: Empty,
                wp: i * c.zone_size_lbas,
                hwm: i * c.zone_size_lbas,
                zrwa: false,
                fe: false,
                zfc: false,
                seq: 0,
            })
            .collect();
        Model { c, z, seq: 0 }
    }
    fn n(&self) -> usize {
        self.z.len()
    }
    fn total(&self) -> u64 {
        self.n() as u64 * self.c.zone_size_lbas
    }
    fn zslba(&self, i: usize) -> u64 {
        i as u64 * self.c.zone_size_lbas
    }
    fn cap_end(&self, i: usize) -> u64 {
        self.zslba(i) + self.c.zone_capacity_lbas
    }
    fn zrwas(&self) -> u64 {
        self.c.zrwa.map_or(0, |z| z.size_lbas)
    }
    fn fg(&self) -> u64 {
        self.c.zrwa.map_or(1, |z| z.flush_granularity_lbas)
    }
    fn res(&self) -> u64 {
        self.c.zrwa.map_or(0, |z| z.resources as u64)
    }
    fn open(&self) -> u64 {
        self.z.iter().filter(|z| is_open(z.state)).count() as u64
    }
    fn active(&self) -> u64 {
        self.z.iter().filter(|z| is_active(z.state)).count() as u64
    }
    fn zrwa_used(&self) -> u64 {
        self.z.iter().filter(|z| z.zrwa).count() as u64
    }
    fn imp_order(&self) -> Vec<u32> {
        let mut v: Vec<(u64, u32)> = (0..self.n())
            .filter(|&i| self.z[i].state == ImplicitlyOpened)
            .map(|i| (self.z[i].seq, i as u32))
            .collect();
        v.sort();
        v.into_iter().map(|(_, i)| i).collect()
    }
    fn set(&mut self, i: usize, st: ZoneState) {
        if st == ImplicitlyOpened && self.z[i].state != ImplicitlyOpened {
            self.seq += 1;
            self.z[i].seq = self.seq;
        }
        self.z[i].state = st;
        if !is_active(st) {
            self.z[i].zrwa = false;
        }
        if st != Full {
            self.z[i].fe = false;
            self.z[i].zfc = false;
        }
    }
    fn desc(&self, i: usize) -> ZoneDescriptor {
        let z = &self.z[i];
        ZoneDescriptor {
            zone_type: ZoneType::SequentialWriteRequired,
            state: z.state,
            attributes: ZoneAttributes {
                finished_by_controller: z.zfc,
                zrwa_valid: z.zrwa,
            },
            start_lba: self.zslba(i),
            capacity_lbas: self.c.zone_capacity_lbas,
            write_pointer: if z.state == Full {
                self.cap_end(i)
            } else {
                z.wp
            },
        }
    }
    fn push(
        &self,
        i: usize,
        b: MZ,
        committed: Option<(u64, u64)>,
        ctrl: bool,
        out: &mut Vec<ZoneChange>,
    ) {
        let a = self.z[i];
        if (a.state, a.wp, a.zrwa, a.fe, a.zfc) != (b.state, b.wp, b.zrwa, b.fe, b.zfc) {
            out.push(ZoneChange {
                zone: i as u32,
                from: b.state,
                to: a.state,
                written_lbas: b.wp - self.zslba(i),
                finished_early: b.fe,
                committed,
                zrwa_released: b.zrwa && !a.zrwa,
                zrwa_allocated: !b.zrwa && a.zrwa,
                controller_initiated: ctrl,
            });
        }
    }

    fn io_check(&self, slba: u64, nlb: u64) -> R<u64> {
        if nlb == 0 || nlb > self.c.max_transfer_lbas as u64 {
            return Err(InvalidField);
        }
        if slba as u128 + nlb as u128 > self.total() as u128 {
            return Err(LbaOutOfRange);
        }
        Ok(slba + nlb)
    }

    fn read(&self, slba: u64, nlb: u64) -> R<()> {
        let end = self.io_check(slba, nlb)?;
        let first = (slba / self.c.zone_size_lbas) as usize;
        let last = ((end - 1) / self.c.zone_size_lbas) as usize;
        if self.z[first].state == Offline {
            return Err(ZoneIsOffline);
        }
        if last != first {
            if !self.c.read_across_zone_boundary {
                return Err(ZoneBoundaryError);
            }
            for k in first + 1..=last {
                if self.z[k].state == Offline {
                    return Err(ZoneIsOffline);
                }
            }
        }
        Ok(())
    }

    /// Resources to open zone i (ZSE/ZSC), QEMU order, auto-close first.
    fn acquire(
        &mut self,
        i: usize,
        need_zrwa: bool,
        out: Option<&mut Vec<ZoneChange>>,
    ) -> R<Option<u32>> {
        let mut ac = None;
        if self.c.auto_close_implicit
            && self.c.max_open_zones != 0
            && self.open() == self.c.max_open_zones as u64
        {
            if let Some(&v) = self.imp_order().first() {
                let b = self.z[v as usize];
                self.set(v as usize, Closed);
                if let Some(out) = out {
                    self.push(v as usize, b, None, true, out);
                }
                ac = Some(v);
            }
        }
        if self.z[i].state == Empty && self.active() + 1 > lim(self.c.max_active_zones) {
            return Err(TooManyActiveZones);
        }
        if self.open() + 1 > lim(self.c.max_open_zones) {
            return Err(TooManyOpenZones);
        }
        if need_zrwa && self.zrwa_used() + 1 > self.res() {
            return Err(ZrwaResourcesUnavailable);
        }
        Ok(ac)
    }

    fn write_at(&mut self, i: usize, slba: u64, nlb: u64, end: u64) -> R<WriteEffect> {
        let z = self.z[i];
        match z.state {
            Full => return Err(ZoneIsFull),
            ReadOnly => return Err(ZoneIsReadOnly),
            Offline => return Err(ZoneIsOffline),
            _ => {}
        }
        if z.zrwa {
            if slba < z.wp || end as u128 > z.wp as u128 + 2 * self.zrwas() as u128 {
                return Err(ZoneInvalidWrite);
            }
        } else if slba != z.wp {
            return Err(ZoneInvalidWrite);
        }
        if end > self.cap_end(i) {
            return Err(ZoneBoundaryError);
        }
        let mut e = WriteEffect {
            zone: i as u32,
            slba,
            nlb,
            implicitly_opened: false,
            auto_closed: None,
            zrwa: z.zrwa,
            committed: None,
            became_full: false,
        };
        if z.state == Empty || z.state == Closed {
            e.auto_closed = self.acquire(i, false, None)?;
            self.set(i, ImplicitlyOpened);
            e.implicitly_opened = true;
        }
        let cap_end = self.cap_end(i);
        if z.zrwa {
            self.z[i].hwm = self.z[i].hwm.max(end);
            if end > z.wp + self.zrwas() {
                let mut adv = 0;
                while z.wp + adv + self.zrwas() < end {
                    adv += self.fg();
                }
                let new = (z.wp + adv).min(cap_end);
                self.z[i].wp = new;
                e.committed = Some((z.wp, new));
                if new == cap_end {
                    self.set(i, Full);
                    e.became_full = true;
                }
            }
        } else {
            self.z[i].wp = end;
            if end == cap_end {
                self.set(i, Full);
                e.became_full = true;
            }
        }
        Ok(e)
    }

    fn write(&mut self, slba: u64, nlb: u64) -> R<WriteEffect> {
        let end = self.io_check(slba, nlb)?;
        let i = (slba / self.c.zone_size_lbas) as usize;
        self.write_at(i, slba, nlb, end)
    }

    fn append(&mut self, zslba: u64, nlb: u64) -> R<WriteEffect> {
        self.io_check(zslba, nlb)?;
        let i = (zslba / self.c.zone_size_lbas) as usize;
        if self.z[i].zrwa {
            return Err(InvalidZoneOperation);
        }
        if zslba != self.zslba(i) {
            return Err(InvalidField);
        }
        if nlb > self.c.append_limit_lbas() as u64 {
            return Err(InvalidField);
        }
        let wp = self.z[i].wp;
        self.write_at(i, wp, nlb, wp + nlb)
    }

    fn finish(&mut self, i: usize) -> Option<(u64, u64)> {
        let z = self.z[i];
        let committed = (z.zrwa && z.hwm > z.wp).then_some((z.wp, z.hwm));
        if z.zrwa {
            self.z[i].wp = z.hwm.max(z.wp);
        }
        let fe = self.z[i].wp < self.cap_end(i);
        self.set(i, Full);
        self.z[i].fe = fe;
        self.z[i].zfc = false;
        committed
    }

    fn reset(&mut self, i: usize) {
        self.set(i, Empty);
        self.z[i].wp = self.zslba(i);
        self.z[i].hwm = self.zslba(i);
    }

    fn give_zrwa(&mut self, i: usize) {
        self.z[i].zrwa = true;
        self.z[i].hwm = self.z[i].wp;
    }

    fn send(&mut self, cmd: ZoneSendCmd) -> R<MgmtEffect> {
        let mut out = Vec::new();
        if cmd.select_all {
            let sel: fn(ZoneState) -> bool = match cmd.action {
                ZoneAction::FlushZrwa => return Err(InvalidField),
                ZoneAction::Open { zrwa } => return self.open_all(zrwa),
                ZoneAction::Close => is_open,
                ZoneAction::Finish => is_active,
                ZoneAction::Reset => |s| is_active(s) || s == Full,
                ZoneAction::Offline => |s| s == ReadOnly,
            };
            for i in 0..self.n() {
                if sel(self.z[i].state) {
                    let b = self.z[i];
                    let committed = match cmd.action {
                        ZoneAction::Close => {
                            self.set(i, Closed);
                            None
                        }
                        ZoneAction::Finish => self.finish(i),
                        ZoneAction::Reset => {
                            self.reset(i);
                            None
                        }
                        _ => {
                            self.set(i, Offline);
                            None
                        }
                    };
                    self.push(i, b, committed, false, &mut out);
                }
            }
            return Ok(MgmtEffect { changes: out });
        }
        if cmd.slba >= self.total() {
            return Err(LbaOutOfRange);
        }
        let i = (cmd.slba / self.c.zone_size_lbas) as usize;
        if cmd.action != ZoneAction::FlushZrwa && cmd.slba != self.zslba(i) {
            return Err(InvalidField);
        }
        let b = self.z[i];
        match cmd.action {
            ZoneAction::Open { zrwa } => {
                if zrwa && self.c.zrwa.is_none() {
                    return Err(InvalidZoneOperation);
                }
                if matches!(b.state, Full | ReadOnly | Offline) {
                    return Err(InvalidZoneStateTransition);
                }
                let need = zrwa && !b.zrwa;
                if need && (b.wp - self.zslba(i)) % self.fg() != 0 {
                    return Err(ZrwaResourcesUnavailable);
                }
                if b.state == Empty || b.state == Closed {
                    self.acquire(i, need, Some(&mut out))?;
                } else if need && self.zrwa_used() + 1 > self.res() {
                    return Err(ZrwaResourcesUnavailable);
                }
                let b = self.z[i];
                self.set(i, ExplicitlyOpened);
                if need {
                    self.give_zrwa(i);
                }
                self.push(i, b, None, false, &mut out);
            }
            ZoneAction::Close => match b.state {
                ImplicitlyOpened | ExplicitlyOpened => {
                    self.set(i, Closed);
                    self.push(i, b, None, false, &mut out);
                }
                Closed => {}
                _ => return Err(InvalidZoneStateTransition),
            },
            ZoneAction::Finish => match b.state {
                Full => {}
                Empty | ImplicitlyOpened | ExplicitlyOpened | Closed => {
                    let c = self.finish(i);
                    self.push(i, b, c, false, &mut out);
                }
                _ => return Err(InvalidZoneStateTransition),
            },
            ZoneAction::Reset => match b.state {
                Empty => {}
                ReadOnly | Offline => return Err(InvalidZoneStateTransition),
                _ => {
                    self.reset(i);
                    self.push(i, b, None, false, &mut out);
                }
            },
            ZoneAction::Offline => match b.state {
                ReadOnly => {
                    self.set(i, Offline);
                    self.push(i, b, None, false, &mut out);
                }
                Offline => {}
                _ => return Err(InvalidZoneStateTransition),
            },
            ZoneAction::FlushZrwa => {
                if self.c.zrwa.is_none() {
                    return Err(InvalidZoneOperation);
                }
                if !b.zrwa {
                    return Err(InvalidField);
                }
                let elba = cmd.slba;
                if elba < b.wp
                    || elba as u128 >= b.wp as u128 + self.zrwas() as u128
                    || elba >= self.cap_end(i)
                {
                    return Err(ZoneBoundaryError);
                }
                if (elba - b.wp + 1) % self.fg() != 0 && elba + 1 != self.cap_end(i) {
                    return Err(InvalidField);
                }
                if b.state == Closed {
                    self.acquire(i, false, Some(&mut out))?;
                    self.set(i, ImplicitlyOpened);
                }
                self.z[i].wp = elba + 1;
                self.z[i].hwm = self.z[i].hwm.max(elba + 1);
                if elba + 1 == self.cap_end(i) {
                    self.set(i, Full);
                }
                self.push(i, b, Some((b.wp, elba + 1)), false, &mut out);
            }
        }
        Ok(MgmtEffect { changes: out })
    }

    fn open_all(&mut self, zrwa: bool) -> R<MgmtEffect> {
        let targets: Vec<usize> = (0..self.n())
            .filter(|&i| self.z[i].state == Closed)
            .collect();
        let mut need = 0;
        for &t in &targets {
            if zrwa && !self.z[t].zrwa {
                if self.c.zrwa.is_none() {
                    return Err(InvalidZoneOperation);
                }
                if (self.z[t].wp - self.zslba(t)) % self.fg() != 0 {
                    return Err(ZrwaResourcesUnavailable);
                }
                need += 1;
            }
        }
        let n = targets.len() as u64;
        let free = lim(self.c.max_open_zones) - self.open();
        let mut to_close = 0;
        if n > free {
            to_close = n - free;
            if !self.c.auto_close_implicit || to_close > self.imp_order().len() as u64 {
                return Err(TooManyOpenZones);
            }
        }
        if self.zrwa_used() + need > self.res() {
            return Err(ZrwaResourcesUnavailable);
        }
        let mut out = Vec::new();
        for _ in 0..to_close {
            let v = self.imp_order()[0] as usize;
            let b = self.z[v];
            self.set(v, Closed);
            self.push(v, b, None, true, &mut out);
        }
        for t in targets {
            let b = self.z[t];
            self.set(t, ExplicitlyOpened);
            if zrwa && !b.zrwa {
                self.give_zrwa(t);
            }
            self.push(t, b, None, false, &mut out);
        }
        Ok(MgmtEffect { changes: out })
    }

    fn inject(&mut self, zone: u32, to: ZoneState) -> R<ZoneChange> {
        let i = zone as usize;
        if i >= self.n() {
            return Err(InvalidField);
        }
        let b = self.z[i];
        if to == ReadOnly && b.state == Offline {
            return Err(InvalidZoneStateTransition);
        }
        self.set(i, to);
        let a = self.z[i];
        Ok(ZoneChange {
            zone,
            from: b.state,
            to: a.state,
            written_lbas: b.wp - self.zslba(i),
            finished_early: b.fe,
            committed: None,
            zrwa_released: b.zrwa && !a.zrwa,
            zrwa_allocated: false,
            controller_initiated: true,
        })
    }

    fn power_cycle(&mut self, durable: &dyn Fn(u32) -> u64, keep: bool) -> Vec<ZoneChange> {
        let mut out = Vec::new();
        let mut full = Vec::new();
        for i in 0..self.n() {
            let b = self.z[i];
            if is_active(b.state) {
                let dur = durable(i as u32).clamp(self.zslba(i), b.wp);
                let k = keep && b.zrwa;
                let mut d = dur;
                while k && (d - self.zslba(i)) % self.fg() != 0 {
                    d -= 1;
                }
                if !k {
                    self.z[i].zrwa = false;
                }
                self.set(
                    i,
                    if d == self.zslba(i) && !k {
                        Empty
                    } else {
                        Closed
                    },
                );
                self.z[i].wp = d;
                self.z[i].hwm = if k {
                    let hi = (d + self.zrwas()).min(self.cap_end(i)).max(dur);
                    b.hwm.clamp(dur, hi)
                } else {
                    d
                };
                self.push(i, b, None, false, &mut out);
            } else if b.state == Full && !b.fe {
                full.push(i);
            }
        }
        for i in full {
            let b = self.z[i];
            let d = durable(i as u32).clamp(self.zslba(i), self.cap_end(i));
            if d == self.cap_end(i) {
                continue;
            }
            let mut ctrl = false;
            if d == self.zslba(i) {
                self.set(i, Empty);
            } else if self.active() < lim(self.c.max_active_zones) {
                self.set(i, Closed);
            } else {
                self.z[i].fe = true;
                self.z[i].zfc = true;
                ctrl = true;
            }
            self.z[i].wp = d;
            self.z[i].hwm = d;
            self.push(i, b, None, ctrl, &mut out);
        }
        out
    }
}

// ---------------------------------------------------------------- commands

#[derive(Debug, Clone, Copy)]
enum Pos {
    Wp,
    Ahead(u8),
    Behind(u8),
    Raw(u16),
}

#[derive(Debug, Clone)]
enum Cmd {
    Write {
        zone: u8,
        pos: Pos,
        nlb: u8,
    },
    Append {
        zone: u8,
        skew: u8,
        nlb: u8,
    },
    Read {
        lba: u16,
        nlb: u8,
    },
    Send {
        action: u8,
        zone: u8,
        pos: Pos,
        all: bool,
    },
    InjectRo(u8),
    InjectOffline(u8),
    Power {
        seed: u32,
        keep: bool,
        all_durable: bool,
    },
    Snapshot,
}

fn pos() -> impl Strategy<Value = Pos> {
    prop_oneof![
        6 => Just(Pos::Wp),
        3 => any::<u8>().prop_map(Pos::Ahead),
        1 => any::<u8>().prop_map(Pos::Behind),
        1 => any::<u16>().prop_map(Pos::Raw),
    ]
}

fn cmd() -> impl Strategy<Value = Cmd> {
    prop_oneof![
        560 => (any::<u8>(), pos(), any::<u8>()).prop_map(|(zone, pos, nlb)| Cmd::Write { zone, pos, nlb }),
        120 => (any::<u8>(), any::<u8>(), any::<u8>()).prop_map(|(zone, skew, nlb)| Cmd::Append { zone, skew, nlb }),
        100 => (any::<u16>(), any::<u8>()).prop_map(|(lba, nlb)| Cmd::Read { lba, nlb }),
        380 => (any::<u8>(), any::<u8>(), pos(), prop::bool::weighted(0.08))
            .prop_map(|(action, zone, pos, all)| Cmd::Send { action, zone, pos, all }),
        2 => any::<u8>().prop_map(Cmd::InjectRo),
        1 => any::<u8>().prop_map(Cmd::InjectOffline),
        24 => (any::<u32>(), any::<bool>(), prop::bool::weighted(0.3))
            .prop_map(|(seed, keep, all_durable)| Cmd::Power { seed, keep, all_durable }),
        12 => Just(Cmd::Snapshot),
    ]
}

fn geometry() -> impl Strategy<Value = ZonedConfig> {
    (
        (2u32..=6, 4u64..=24, 0u64..24),
        (0u32..=4, 0u32..=4),
        (1u32..=12, 0u32..=12),
        (any::<bool>(), any::<bool>()),
        (prop::bool::weighted(0.7), 1u64..=3, 1u64..=3, 1u32..=3),
    )
        .prop_map(
            |((count, zsze, cap_off), (ma, mo), (mdts, zasl), (auto, razb), (zr, fg, k, res))| {
                let zcap = zsze - cap_off % zsze;
                let (max_active, max_open) = if ma == 0 { (0, mo) } else { (ma, 1 + mo % ma) };
                let zrwa = (zr && fg * k <= zcap).then_some(ZrwaConfig {
                    size_lbas: fg * k,
                    flush_granularity_lbas: fg,
                    resources: res,
                });
                ZonedConfig {
                    lba_bytes: 512,
                    zone_count: count,
                    zone_size_lbas: zsze,
                    zone_capacity_lbas: zcap,
                    max_open_zones: max_open,
                    max_active_zones: max_active,
                    max_transfer_lbas: mdts,
                    zone_append_limit_lbas: zasl % (mdts + 1),
                    auto_close_implicit: auto,
                    read_across_zone_boundary: razb,
                    zrwa,
                }
            },
        )
}

fn mix(seed: u32, zone: u32) -> u64 {
    let mut x = (seed as u64) << 32 | zone as u64;
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    x.wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ (x >> 31)
}

/// A transfer length: mostly small (zones are small), sometimes up to the
/// limit, sometimes 0 or one past the limit (Invalid Field).
fn pick_nlb(r: u8, limit: u64) -> u64 {
    let k = (r / 16) as u64;
    match r % 16 {
        0 => 0,
        1 => limit + 1,
        2..=12 => 1 + k % limit.min(3),
        _ => 1 + k % limit,
    }
}

#[derive(Default, Debug)]
struct Tally {
    ok: u64,
    err: u64,
}

/// Runs one command on both and compares the results.
fn step(s: &mut ZoneSet, m: &mut Model, c: &Cmd, tally: &mut Tally) -> Result<(), TestCaseError> {
    let n = m.n() as u64;
    let zsze = m.c.zone_size_lbas;
    let mdts = m.c.max_transfer_lbas as u64;
    let zone_of = |z: u8| (z as u64 % n) as usize;
    // Writes mostly go to a zone that can take them (the first writable zone from
    // the drawn one on), so sequences get deep instead of bouncing off full zones.
    let writable_from = |m: &Model, z: u8| -> usize {
        let start = zone_of(z);
        if z % 4 == 0 {
            return start;
        }
        (0..m.n())
            .map(|k| (start + k) % m.n())
            .find(|&i| {
                matches!(
                    m.z[i].state,
                    Empty | ImplicitlyOpened | ExplicitlyOpened | Closed
                )
            })
            .unwrap_or(start)
    };
    let resolve = |m: &Model, zone: usize, p: Pos, span: u64| -> u64 {
        let base = m.z[zone].wp;
        match p {
            Pos::Wp => base,
            Pos::Ahead(k) => base + k as u64 % span,
            Pos::Behind(k) => base.saturating_sub(k as u64 % 4 + 1),
            Pos::Raw(r) => r as u64 % (m.total() + 2),
        }
    };
    let ok = match c {
        Cmd::Write { zone, pos, nlb } => {
            let i = writable_from(m, *zone);
            let slba = resolve(m, i, *pos, 2 * m.zrwas() + 3);
            let nlb = pick_nlb(*nlb, mdts);
            let a = s.write(slba, nlb);
            let b = m.write(slba, nlb);
            prop_assert_eq!(a, b, "write({}, {})", slba, nlb);
            a.is_ok()
        }
        Cmd::Append { zone, skew, nlb } => {
            let i = writable_from(m, *zone);
            let zslba = m.zslba(i) + u64::from(*skew % 8 == 0);
            let nlb = pick_nlb(*nlb, m.c.append_limit_lbas() as u64);
            let a = s.append(zslba, nlb);
            let b = m.append(zslba, nlb);
            prop_assert_eq!(a, b, "append({}, {})", zslba, nlb);
            a.is_ok()
        }
        Cmd::Read { lba, nlb } => {
            let slba = *lba as u64 % (m.total() + 1);
            let nlb = *nlb as u64 % (mdts + 2);
            let a = s.check_read(slba, nlb);
            prop_assert_eq!(a, m.read(slba, nlb), "read({}, {})", slba, nlb);
            a.is_ok()
        }
        Cmd::Send {
            action,
            zone,
            pos,
            all,
        } => {
            let i = zone_of(*zone);
            let action = match action % 18 {
                0..=2 => ZoneAction::Open { zrwa: false },
                3..=4 => ZoneAction::Open { zrwa: true },
                5..=6 => ZoneAction::Close,
                7..=8 => ZoneAction::Finish,
                9..=13 => ZoneAction::Reset,
                14 => ZoneAction::Offline,
                _ => ZoneAction::FlushZrwa,
            };
            let slba = match (action, pos) {
                (ZoneAction::FlushZrwa, Pos::Wp) => m.z[i].wp + m.fg() - 1,
                (ZoneAction::FlushZrwa, p) => resolve(m, i, *p, m.zrwas() + 3),
                (_, Pos::Raw(r)) => *r as u64 % (m.total() + 2),
                (_, Pos::Behind(_)) => m.zslba(i) + 1,
                _ => m.zslba(i),
            };
            let cmd = ZoneSendCmd {
                action,
                slba,
                select_all: *all,
            };
            let a = s.zone_send(cmd);
            let b = m.send(cmd);
            prop_assert_eq!(&a, &b, "{:?}", cmd);
            a.is_ok()
        }
        Cmd::InjectRo(z) => {
            let z = (*z as u64 % (n + 1)) as u32;
            let a = s.inject_read_only(z);
            prop_assert_eq!(a, m.inject(z, ReadOnly), "inject_read_only({})", z);
            a.is_ok()
        }
        Cmd::InjectOffline(z) => {
            let z = (*z as u64 % (n + 1)) as u32;
            let a = s.inject_offline(z);
            prop_assert_eq!(a, m.inject(z, Offline), "inject_offline({})", z);
            a.is_ok()
        }
        Cmd::Power {
            seed,
            keep,
            all_durable,
        } => {
            let (seed, all) = (*seed, *all_durable);
            let durable = move |z: u32| {
                if all {
                    u64::MAX
                } else {
                    z as u64 * zsze + mix(seed, z) % (zsze + 2)
                }
            };
            let a = s.power_cycle(&durable, *keep);
            let b = m.power_cycle(&durable, *keep);
            prop_assert_eq!(a, b, "power_cycle(seed {}, keep {})", seed, keep);
            true
        }
        Cmd::Snapshot => {
            let t = ZoneSet::from_snapshot(s.config().clone(), &s.snapshot());
            prop_assert!(t.is_ok(), "{:?}", t.err());
            let t = t.unwrap();
            for z in 0..n as u32 {
                prop_assert_eq!(t.descriptor(z), s.descriptor(z));
                prop_assert_eq!(t.write_pointer(z), s.write_pointer(z));
            }
            prop_assert_eq!(
                (t.open_zones(), t.active_zones(), t.zrwa_in_use()),
                (s.open_zones(), s.active_zones(), s.zrwa_in_use())
            );
            true
        }
    };
    if ok {
        tally.ok += 1;
    } else {
        tally.err += 1;
    }
    // Full comparison after every command.
    for i in 0..m.n() {
        prop_assert_eq!(
            s.descriptor(i as u32),
            Some(m.desc(i)),
            "zone {} after {:?}",
            i,
            c
        );
        prop_assert_eq!(
            s.write_pointer(i as u32),
            Some(m.z[i].wp),
            "internal WP of zone {}",
            i
        );
        prop_assert_eq!(s.finished_early(i as u32), m.z[i].fe);
    }
    prop_assert_eq!(s.open_zones() as u64, m.open());
    prop_assert_eq!(s.active_zones() as u64, m.active());
    prop_assert_eq!(s.zrwa_in_use() as u64, m.zrwa_used());
    prop_assert_eq!(s.implicit_open_order(), m.imp_order());
    if let Err(e) = s.check_invariants() {
        return Err(TestCaseError::fail(e));
    }
    Ok(())
}

const CASES: u32 = 200;
const COMMANDS: usize = 600;

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    /// 200 cases × 600 commands = 120,000 commands compared with the model.
    #[test]
    fn matches_reference_model(cfg in geometry(), cmds in prop::collection::vec(cmd(), COMMANDS)) {
        let mut s = ZoneSet::new(cfg.clone()).unwrap();
        let mut m = Model::new(cfg);
        let mut tally = Tally::default();
        for (k, c) in cmds.iter().enumerate() {
            let before = s.clone();
            step(&mut s, &mut m, c, &mut tally).map_err(|e| {
                TestCaseError::fail(format!("command #{k} {c:?} on {before:?}: {e}"))
            })?;
        }
        prop_assert_eq!(tally.ok + tally.err, COMMANDS as u64);
    }
}

/// The model tests above must see both accepted and rejected commands in
/// quantity, and reach the interesting states; this pins the generator's mix.
#[test]
fn generator_reaches_interesting_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut seen = std::collections::HashSet::new();
    let (mut ok, mut err, mut full_by_flush, mut auto_closed, mut implicit_flush) = (0, 0, 0, 0, 0);
    for _ in 0..40 {
        let cfg = geometry().new_tree(&mut runner).unwrap().current();
        let cmds = prop::collection::vec(cmd(), COMMANDS)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let mut s = ZoneSet::new(cfg.clone()).unwrap();
        let mut m = Model::new(cfg);
        let mut t = Tally::default();
        for c in &cmds {
            let before = s.clone();
            step(&mut s, &mut m, c, &mut t).unwrap();
            for z in 0..s.zone_count() {
                seen.insert((
                    s.descriptor(z).unwrap().state,
                    s.descriptor(z).unwrap().attributes.zrwa_valid,
                ));
            }
            if let Cmd::Write { .. } = c {
                if s.implicit_open_order() != before.implicit_open_order()
                    && s.open_zones() == before.open_zones()
                {
                    auto_closed += 1;
                }
            }
            if s.zrwa_in_use() < before.zrwa_in_use()
                && (0..s.zone_count())
                    .any(|z| state_of(&s, z) == Full && state_of(&before, z) != Full)
            {
                full_by_flush += 1;
            }
            if (0..s.zone_count()).any(|z| {
                before.descriptor(z).unwrap().attributes.zrwa_valid
                    && s.descriptor(z).unwrap().attributes.zrwa_valid
                    && s.write_pointer(z) > before.write_pointer(z)
            }) {
                implicit_flush += 1;
            }
        }
        ok += t.ok;
        err += t.err;
    }
    eprintln!("generator: {ok} accepted, {err} rejected");
    assert!(ok > 8_000 && err > 4_000, "ok {ok}, err {err}");
    for st in ZoneState::ALL {
        assert!(seen.contains(&(st, false)), "never saw {st:?}");
    }
    for st in [ImplicitlyOpened, ExplicitlyOpened, Closed] {
        assert!(seen.contains(&(st, true)), "never saw {st:?} with a ZRWA");
    }
    assert!(
        full_by_flush > 0 && auto_closed > 0 && implicit_flush > 0,
        "{full_by_flush} {auto_closed} {implicit_flush}"
    );
}

fn state_of(s: &ZoneSet, z: u32) -> ZoneState {
    s.descriptor(z).unwrap().state
}

// ---------------------------------------------------------------- fuzz

#[derive(Debug, Clone, Copy)]
enum V {
    Raw(u64),
    Small(u16),
    NearTotal(i8),
    NearWp(u8, i8),
    Max(u8),
}

fn v() -> impl Strategy<Value = V> {
    prop_oneof![
        any::<u64>().prop_map(V::Raw),
        any::<u16>().prop_map(V::Small),
        any::<i8>().prop_map(V::NearTotal),
        (any::<u8>(), any::<i8>()).prop_map(|(z, d)| V::NearWp(z, d)),
        any::<u8>().prop_map(V::Max),
    ]
}

fn val(s: &ZoneSet, x: V) -> u64 {
    match x {
        V::Raw(r) => r,
        V::Small(r) => r as u64,
        V::NearTotal(d) => s.total_lbas().wrapping_add(d as i64 as u64),
        V::NearWp(z, d) => s
            .write_pointer(z as u32 % s.zone_count())
            .unwrap()
            .wrapping_add(d as i64 as u64),
        V::Max(k) => u64::MAX - k as u64,
    }
}

fn any_config() -> impl Strategy<Value = ZonedConfig> {
    (
        (1u32..=4, any::<u64>(), any::<u64>()),
        (0u32..=3, 0u32..=3, any::<u32>(), any::<u32>()),
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            any::<u64>(),
            any::<u64>(),
            1u32..=3,
        ),
    )
        .prop_filter_map(
            "invalid config",
            |((count, zsze, zcap), (ma, mo, mdts, zasl), (auto, razb, zr, fg, k, res))| {
                let zsze = (zsze % (u64::MAX / count as u64)).max(1);
                let zcap = zcap % zsze + 1;
                let fg = fg % zcap + 1;
                let zrwa = zr.then(|| ZrwaConfig {
                    size_lbas: fg.saturating_mul(k % 4 + 1).min(zcap / fg * fg),
                    flush_granularity_lbas: fg,
                    resources: res,
                });
                let mdts = mdts.max(1);
                let c = ZonedConfig {
                    lba_bytes: 4096,
                    zone_count: count,
                    zone_size_lbas: zsze,
                    zone_capacity_lbas: zcap,
                    max_open_zones: if ma == 0 { mo } else { 1 + mo % ma },
                    max_active_zones: ma,
                    max_transfer_lbas: mdts,
                    zone_append_limit_lbas: zasl % mdts,
                    auto_close_implicit: auto,
                    read_across_zone_boundary: razb,
                    zrwa,
                };
                c.validate().is_ok().then_some(c)
            },
        )
}

#[derive(Debug, Clone)]
enum F {
    Write(V, V),
    Append(V, V),
    Read(V, V),
    Send(u8, V, bool),
    Inject(bool, u32),
    Power(V, bool),
    Report(V, u8),
}

fn fcmd() -> impl Strategy<Value = F> {
    prop_oneof![
        4 => (v(), v()).prop_map(|(a, b)| F::Write(a, b)),
        2 => (v(), v()).prop_map(|(a, b)| F::Append(a, b)),
        2 => (v(), v()).prop_map(|(a, b)| F::Read(a, b)),
        4 => (any::<u8>(), v(), any::<bool>()).prop_map(|(a, b, c)| F::Send(a, b, c)),
        1 => (any::<bool>(), any::<u32>()).prop_map(|(a, b)| F::Inject(a, b)),
        1 => (v(), any::<bool>()).prop_map(|(a, b)| F::Power(a, b)),
        1 => (v(), any::<u8>()).prop_map(|(a, b)| F::Report(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// Arbitrary u64 arguments on arbitrary (valid) geometries, including zones of
    /// nearly 2^64 LBAs: never a panic, counters always consistent.
    #[test]
    fn arbitrary_u64_commands_never_panic(cfg in any_config(), cmds in prop::collection::vec(fcmd(), 300)) {
        let mut s = ZoneSet::new(cfg).unwrap();
        for c in &cmds {
            match *c {
                F::Write(a, b) => { let (a, b) = (val(&s, a), val(&s, b)); let _ = s.write(a, b); }
                F::Append(a, b) => { let (a, b) = (val(&s, a), val(&s, b)); let _ = s.append(a, b); }
                F::Read(a, b) => { let _ = s.check_read(val(&s, a), val(&s, b)); }
                F::Send(act, a, all) => {
                    let action = match act % 7 {
                        0 => ZoneAction::Open { zrwa: false },
                        1 => ZoneAction::Open { zrwa: true },
                        2 => ZoneAction::Close,
                        3 => ZoneAction::Finish,
                        4 => ZoneAction::Reset,
                        5 => ZoneAction::Offline,
                        _ => ZoneAction::FlushZrwa,
                    };
                    let slba = val(&s, a);
                    let _ = s.zone_send(ZoneSendCmd { action, slba, select_all: all });
                }
                F::Inject(off, z) => {
                    let z = if z % 2 == 0 { z % (s.zone_count() + 1) } else { z };
                    let _ = if off { s.inject_offline(z) } else { s.inject_read_only(z) };
                }
                F::Power(a, keep) => {
                    let d = val(&s, a);
                    s.power_cycle(&|z| d.wrapping_mul(z as u64 + 1), keep);
                }
                F::Report(a, k) => { let _ = s.report(val(&s, a), ReportFilter::All, k as usize); }
            }
            if let Err(e) = s.check_invariants() {
                return Err(TestCaseError::fail(format!("{e} after {c:?}")));
            }
            let recount = (0..s.zone_count()).filter(|&z| s.descriptor(z).unwrap().state.is_active()).count() as u32;
            prop_assert_eq!(recount, s.active_zones());
        }
    }
}

#[test]
fn extreme_arguments_on_a_huge_namespace() {
    let c = ZonedConfig {
        lba_bytes: 4096,
        zone_count: 3,
        zone_size_lbas: u64::MAX / 3,
        zone_capacity_lbas: u64::MAX / 3,
        max_open_zones: 0,
        max_active_zones: 0,
        max_transfer_lbas: u32::MAX,
        zone_append_limit_lbas: 0,
        auto_close_implicit: true,
        read_across_zone_boundary: true,
        zrwa: Some(ZrwaConfig {
            size_lbas: u64::MAX / 3,
            flush_granularity_lbas: u64::MAX / 3,
            resources: 3,
        }),
    };
    let mut s = ZoneSet::new(c).unwrap();
    let zsze = u64::MAX / 3;
    let last = 2 * zsze;
    assert!(s
        .zone_send(ZoneSendCmd {
            action: ZoneAction::Open { zrwa: true },
            slba: last,
            select_all: false
        })
        .is_ok());
    // Window end (WP + 2·ZRWASZ) saturates; writes up to ZCAP are fine.
    let e = s
        .write(last + zsze - u32::MAX as u64, u32::MAX as u64)
        .unwrap();
    assert!(e.zrwa);
    assert_eq!(s.write(u64::MAX, 1), Err(LbaOutOfRange));
    assert!(s.check_read(0, u32::MAX as u64).is_ok());
    assert_eq!(
        s.zone_send(ZoneSendCmd {
            action: ZoneAction::FlushZrwa,
            slba: last + zsze - 1,
            select_all: false
        })
        .map(|fx| fx.changes[0].to),
        Ok(Full)
    );
    s.power_cycle(&|_| u64::MAX, false);
    s.check_invariants().unwrap();
}
