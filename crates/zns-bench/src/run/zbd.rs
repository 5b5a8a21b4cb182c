//! zonemode=zbd data I/O: reads below write pointers, writes at the write
//! pointer of open zones (opening, finishing, resetting and waiting as fio's
//! zbd code would), ZRWA windows and their flushes.
//!
//! As in fio, the zones of a device have one state that every job of a
//! group writing them shares ([`ZoneTable`]: write pointer, writes in
//! flight, open or not): `numjobs` clones and jobs whose ranges overlap
//! write at the same write pointers, a zone one job opened is open for all
//! (max_open_zones counts it once), and a job counts the zones it opened
//! against job_max_open_zones. A job's own view ([`ZbdState`]) holds its
//! range of the table, the zones it opened and its position.

use std::cell::{Ref, RefCell, RefMut};
use std::rc::Rc;

use zns_core::{ZoneAction, ZoneDescriptor, ZoneSendCmd, ZoneState};

use super::{send, JobRun, JobState, RunError, Step};

/// A zone of a zbd range, as the jobs writing it see it.
#[derive(Debug, Clone, Default)]
pub(super) struct ZoneCursor {
    pub(super) start_lba: u64,
    /// LBAs the jobs may write in it (capacity, or zone_write_limit).
    pub(super) limit_lbas: u64,
    /// Next LBA offset to write (issued so far): the shared write pointer.
    pub(super) next: u64,
    /// LBAs readable (write pointer at job start, raised by completed writes).
    pub(super) readable: u64,
    pub(super) inflight: u32,
    /// libaio under mq-deadline: since when a request waits in the
    /// scheduler (the zone is write-locked); later writes merge into it
    /// until a later completion dispatches it.
    pub(super) sched_queued_at: Option<u64>,
    /// A reset / finish / open / flush of this zone is in flight.
    pub(super) busy: bool,
    /// Holds one of the device's open-zone slots.
    pub(super) open: bool,
    /// Opened with a ZRWA.
    pub(super) zrwa: bool,
    /// LBA offset up to which the ZRWA was explicitly flushed.
    pub(super) flushed: u64,
    /// Completed LBAs since the zone was (re)started.
    pub(super) done: u64,
    /// The job that issued the last write (`JobRun::id`), and how many jobs
    /// wait to write: a job gives way to a waiting one after its own write,
    /// as fio's jobs take turns on a zone's lock.
    pub(super) last_writer: Option<usize>,
    pub(super) waiting: u32,
}

impl ZoneCursor {
    pub(super) fn room(&self) -> u64 {
        self.limit_lbas.saturating_sub(self.next)
    }

    /// A cursor of zone `z` as the device reported it: written up to its
    /// write pointer, writable up to its capacity or `write_limit_bytes`.
    fn reported(z: &ZoneDescriptor, lba_bytes: u64, write_limit_bytes: Option<u64>) -> ZoneCursor {
        let written = if z.wp_valid() {
            z.written_lbas()
        } else if z.state == ZoneState::Full {
            z.capacity_lbas
        } else {
            0
        };
        let limit = match write_limit_bytes {
            Some(b) => (b / lba_bytes).clamp(1, z.capacity_lbas),
            None => z.capacity_lbas,
        };
        ZoneCursor {
            start_lba: z.start_lba,
            limit_lbas: limit,
            next: written,
            readable: written,
            flushed: written,
            done: written,
            ..ZoneCursor::default()
        }
    }
}

/// The zones of one device as the jobs of a group see them, by zone
/// number: a zone's cursor is taken from the device's report by the first
/// job whose range holds it, and shared from then on.
#[derive(Debug, Default)]
pub(super) struct ZoneTable {
    cursors: RefCell<Vec<Option<ZoneCursor>>>,
}

/// A job's view of its zones (zonemode=zbd data I/O and zone_op jobs): its
/// range of the device's [`ZoneTable`] (index `zi` = the range's zone
/// `zi`), the zones it opened and its position.
#[derive(Debug, Default)]
pub(super) struct ZbdState {
    table: Rc<ZoneTable>,
    /// The range's first zone number on the device, and its zone count.
    first: usize,
    count: usize,
    /// Zones this job opened and holds open (indexes into the range),
    /// oldest first: job_max_open_zones counts them.
    pub(super) open_set: Vec<usize>,
    /// Sequential writes: the zone of the job's position.
    pub(super) next_zone: usize,
    /// Sequential writes: the position just moved to `next_zone` (a full
    /// zone the job comes to is reset; one that fills while the job is in
    /// it moves the job on).
    pub(super) arrived: bool,
    /// The zone the job waits to write in (counted in its `waiting`).
    waiting_on: Option<usize>,
    /// zbd reads: zones with readable data.
    pub(super) read_zones: Vec<usize>,
    /// Sequential reads: (zone index, LBA offset in it) of the next read.
    pub(super) seq_read: (usize, u64),
    /// Writes since zone_reset_frequency last looked at the range's fill.
    pub(super) writes_since_reset_check: u64,
    /// zone_op jobs: the next zone of the range a worker takes.
    pub(super) zone_op_next: usize,
}

impl ZbdState {
    /// A view of `table`, its range set by [`ZbdState::set_zones`].
    pub(super) fn new(table: Rc<ZoneTable>) -> ZbdState {
        ZbdState {
            table,
            arrived: true,
            ..ZbdState::default()
        }
    }

    /// Zones in the job's range.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Zone `zi` of the range.
    pub(super) fn zone(&self, zi: usize) -> Ref<'_, ZoneCursor> {
        Ref::map(self.table.cursors.borrow(), |v| {
            v[self.first + zi]
                .as_ref()
                .expect("set_zones took every zone of the range")
        })
    }

    /// Zone `zi` of the range, to change.
    pub(super) fn zone_mut(&self, zi: usize) -> RefMut<'_, ZoneCursor> {
        RefMut::map(self.table.cursors.borrow_mut(), |v| {
            v[self.first + zi]
                .as_mut()
                .expect("set_zones took every zone of the range")
        })
    }

    /// Every zone of the range, in order.
    pub(super) fn zones(&self) -> Vec<ZoneCursor> {
        (0..self.count).map(|zi| self.zone(zi).clone()).collect()
    }

    /// Takes the range starting at zone number `first` from the zones the
    /// device reported for it (written up to their write pointers, writable
    /// up to their capacity or `write_limit_bytes`, zone_write_limit), a zone
    /// another job of the group already took as that job left it; the ones
    /// holding data are the readable zones.
    pub(super) fn set_zones(
        &mut self,
        first: usize,
        zones: &[ZoneDescriptor],
        lba_bytes: u64,
        write_limit_bytes: Option<u64>,
    ) {
        self.first = first;
        self.count = zones.len();
        {
            let mut v = self.table.cursors.borrow_mut();
            if v.len() < first + zones.len() {
                v.resize(first + zones.len(), None);
            }
            for (slot, z) in v[first..].iter_mut().zip(zones) {
                if slot.is_none() {
                    *slot = Some(ZoneCursor::reported(z, lba_bytes, write_limit_bytes));
                }
            }
        }
        self.read_zones = (0..self.count)
            .filter(|&i| self.zone(i).readable > 0)
            .collect();
    }

    /// Zone `zi` was reset: empty again, nothing in it to read. Returns its
    /// first LBA.
    pub(super) fn reset_done(&mut self, zi: usize) -> u64 {
        let start = {
            let mut z = self.zone_mut(zi);
            z.next = 0;
            z.readable = 0;
            z.flushed = 0;
            z.done = 0;
            z.zrwa = false;
            z.start_lba
        };
        self.read_zones.retain(|&i| i != zi);
        start
    }

    /// Lets go of every zone the job opened that is still open; returns how
    /// many there were.
    pub(super) fn release_all(&mut self) -> u32 {
        self.stop_waiting();
        let mut held = 0;
        for zi in std::mem::take(&mut self.open_set) {
            let mut z = self.zone_mut(zi);
            if z.open {
                z.open = false;
                held += 1;
            }
        }
        held
    }

    /// Lets go of zone `zi` if it is open (whichever job opened it); says
    /// whether it was.
    fn release(&mut self, zi: usize) -> bool {
        self.open_set.retain(|&i| i != zi);
        let mut z = self.zone_mut(zi);
        std::mem::replace(&mut z.open, false)
    }

    /// Forgets the zones the job opened that another job closed since
    /// (a zone filled by another job's write is released by that job).
    fn prune_open_set(&mut self) {
        let table = self.table.cursors.borrow();
        let first = self.first;
        self.open_set
            .retain(|&i| table[first + i].as_ref().is_some_and(|z| z.open));
    }

    /// Counts the job among the writers waiting for zone `zi`.
    fn wait_on(&mut self, zi: usize) {
        if self.waiting_on != Some(zi) {
            self.stop_waiting();
            self.zone_mut(zi).waiting += 1;
            self.waiting_on = Some(zi);
        }
    }

    /// The job no longer waits for a zone.
    fn stop_waiting(&mut self) {
        if let Some(zi) = self.waiting_on.take() {
            let mut z = self.zone_mut(zi);
            z.waiting = z.waiting.saturating_sub(1);
        }
    }

    /// Whether another job waits to write zone `z` (`zi`) while this one
    /// wrote last: this one gives way.
    fn gives_way(&self, zi: usize, z: &ZoneCursor, me: usize) -> bool {
        let mine = u32::from(self.waiting_on == Some(zi));
        z.last_writer == Some(me) && z.waiting > mine
    }

    /// Marks zone `zi` open by this job.
    fn open(&mut self, zi: usize) {
        self.zone_mut(zi).open = true;
        self.open_set.push(zi);
    }
}

impl JobRun {
    /// Bookkeeping after a write of `lbas` to zone `zi` completed: readable
    /// data, then the zone's follow-up commands (ZRWA flushes, the finish of a
    /// zone_write_limit zone) until it needs none, retiring a zone whose
    /// writes are all done from the open set.
    pub(super) async fn zone_write_done(&self, zi: usize, lbas: u64) -> Result<(), RunError> {
        {
            let mut st = self.st.borrow_mut();
            let rnd_zrwa = self.spec.zrwa && self.spec.rw.is_random();
            let readable = {
                let mut z = st.zbd.zone_mut(zi);
                z.inflight -= 1;
                if !rnd_zrwa {
                    z.done += lbas;
                    z.readable = z.readable.max(z.done);
                }
                z.readable
            };
            if readable > 0 && !st.zbd.read_zones.contains(&zi) {
                st.zbd.read_zones.push(zi);
            }
        }
        while let Some((cmd, key)) = self.zone_followup(zi) {
            let r = self.timed_mgmt(cmd, key).await;
            {
                let st = self.st.borrow();
                let mut z = st.zbd.zone_mut(zi);
                z.busy = false;
                if key == "finish" {
                    z.next = self.geo.zone_cap_bytes / self.lba;
                }
            }
            self.shared.changed.notify_waiters();
            r?;
        }
        self.shared.changed.notify_waiters();
        Ok(())
    }

    /// The next command zone `zi` needs now that no write of it is in
    /// flight (marking the zone busy), or `None`; a zone left with nothing to
    /// do and no room is released from the open set.
    pub(super) fn zone_followup(&self, zi: usize) -> Option<(ZoneSendCmd, &'static str)> {
        let mut st = self.st.borrow_mut();
        let z = st.zbd.zone(zi).clone();
        if (!z.zrwa && !z.open) || z.inflight > 0 || z.busy {
            return None;
        }
        // explicit ZRWA flush every zrwa_flush_bytes
        if let Some(fb) = self.spec.zrwa_flush_bytes {
            let f = fb.resolve(self.geo.capacity_bytes, self.geo.zone_bytes, self.lba) / self.lba;
            if z.zrwa && f > 0 && z.next - z.flushed >= f {
                let to = z.flushed + (z.next - z.flushed) / f * f;
                let mut zm = st.zbd.zone_mut(zi);
                zm.flushed = to;
                zm.busy = true;
                return Some((
                    send(ZoneAction::FlushZrwa, z.start_lba + to - 1),
                    "zrwa_flush",
                ));
            }
        }
        if !z.open || z.room() > 0 {
            return None;
        }
        let cap = self.geo.zone_cap_bytes / self.lba;
        if z.limit_lbas < cap && z.next < cap {
            // zone_write_limit: finish the partly written zone
            let mut zm = st.zbd.zone_mut(zi);
            zm.busy = true;
            zm.readable = z.limit_lbas;
            return Some((send(ZoneAction::Finish, z.start_lba), "finish"));
        }
        if z.zrwa && z.flushed < z.limit_lbas {
            // the last ZRWA data: flush it so the zone becomes full
            let mut zm = st.zbd.zone_mut(zi);
            zm.busy = true;
            zm.flushed = z.limit_lbas;
            return Some((
                send(ZoneAction::FlushZrwa, z.start_lba + z.limit_lbas - 1),
                "zrwa_flush",
            ));
        }
        self.release_zone(&mut st, zi);
        None
    }

    fn release_zone(&self, st: &mut JobState, zi: usize) {
        if st.zbd.release(zi) {
            self.slots.open.set(self.slots.open.get().saturating_sub(1));
        }
    }

    /// A read below a write pointer (fio's zbd rule).
    pub(super) fn zbd_read(&self, st: &mut JobState, bs: u64) -> Step {
        let bs_lbas = bs / self.lba;
        if st.zbd.read_zones.is_empty() {
            return if st.zbd.open_set.is_empty() && !self.spec.rw.has_writes() {
                Step::Done
            } else {
                Step::WaitChange
            };
        }
        if self.spec.rw.is_random() {
            let k = match st.sampler.as_mut() {
                // random_distribution: the drawn block's zone, or the next
                // zone with data after it (wrapping), at the drawn offset
                // within what the zone holds (fio moves a read past a write
                // pointer below it the same way)
                Some(sampler) => {
                    let lba = sampler.next(&mut st.rng) * (self.spec.bs / self.lba);
                    let zone_lbas = (self.geo.zone_bytes / self.lba).max(1);
                    let zi = (lba / zone_lbas) as usize;
                    let at_or_after = st.zbd.read_zones.iter().copied().filter(|&i| i >= zi).min();
                    let first = st.zbd.read_zones.iter().copied().min();
                    let z = st
                        .zbd
                        .zone(at_or_after.or(first).unwrap_or(st.zbd.read_zones[0]))
                        .clone();
                    let n = bs_lbas.min(z.readable);
                    let off = (lba % zone_lbas) % z.readable / bs_lbas.max(1) * bs_lbas;
                    return Step::Read {
                        slba: z.start_lba + off.min(z.readable - n),
                        bytes: n * self.lba,
                    };
                }
                None => st.rng.below_u64(st.zbd.read_zones.len() as u64) as usize,
            };
            let z = st.zbd.zone(st.zbd.read_zones[k]).clone();
            let blocks = (z.readable / bs_lbas).max(1);
            let n = bs_lbas.min(z.readable);
            let off = st.rng.below_u64(blocks) * bs_lbas;
            let off = off.min(z.readable - n);
            return Step::Read {
                slba: z.start_lba + off,
                bytes: n * self.lba,
            };
        }
        // sequential: zone by zone up to the readable end, wrapping
        let nz = st.zbd.len();
        for _ in 0..=nz {
            let (zi, off) = st.zbd.seq_read;
            let z = st.zbd.zone(zi % nz).clone();
            if off < z.readable {
                let n = bs_lbas.min(z.readable - off);
                let slba = z.start_lba + off;
                st.zbd.seq_read = (zi % nz, off + n);
                return Step::Read {
                    slba,
                    bytes: n * self.lba,
                };
            }
            st.zbd.seq_read = ((zi + 1) % nz, 0);
        }
        Step::WaitChange
    }

    /// A write at the write pointer of an open zone, opening, resetting or
    /// waiting as fio's zbd code would.
    pub(super) fn zbd_write(&self, st: &mut JobState, bs: u64) -> Step {
        let bs_lbas = bs / self.lba;
        st.zbd.prune_open_set();
        if let Some(reset) = self.threshold_reset(st) {
            return reset;
        }
        let chosen = if self.spec.rw.is_random() {
            self.random_write_zone(st)
        } else {
            self.seq_write_zone(st)
        };
        let zi = match chosen {
            Ok(zi) => zi,
            Err(step) => return step,
        };
        let (room, busy, zrwa, zslba) = {
            let z = st.zbd.zone(zi);
            (z.room(), z.busy, z.zrwa, z.start_lba)
        };
        if room == 0 || busy {
            return Step::WaitChange;
        }
        if self.spec.zrwa && !zrwa {
            // first write since the zone was opened (or reset): open it with a ZRWA
            let mut z = st.zbd.zone_mut(zi);
            z.zrwa = true;
            z.busy = true;
            return Step::Mgmt {
                cmd: send(ZoneAction::Open { zrwa: true }, zslba),
                key: "open",
                zone: zi,
            };
        }
        self.write_in(st, zi, bs_lbas)
    }

    /// zone_reset_threshold / zone_reset_frequency: every 1/frequency
    /// writes, when more than the threshold of the range holds data, the
    /// reset of a written zone no writer has open.
    fn threshold_reset(&self, st: &mut JobState) -> Option<Step> {
        if self.spec.zone_reset_frequency <= 0.0 {
            return None;
        }
        let period = (1.0 / self.spec.zone_reset_frequency).ceil().max(1.0) as u64;
        if st.zbd.writes_since_reset_check >= period {
            let n = st.zbd.len();
            let written: u64 = (0..n).map(|zi| st.zbd.zone(zi).readable).sum();
            let range = (self.len / self.lba).max(1);
            if written as f64 / range as f64 > self.spec.zone_reset_threshold {
                st.zbd.writes_since_reset_check = 0;
                let from = st.rng.below_u64(n.max(1) as u64) as usize;
                for k in 0..n {
                    let zi = (from + k) % n;
                    let mut z = st.zbd.zone_mut(zi);
                    if !z.open && !z.busy && z.inflight == 0 && z.next > 0 {
                        z.busy = true;
                        return Some(Step::Reset { zone: zi });
                    }
                }
            }
        }
        st.zbd.writes_since_reset_check += 1;
        None
    }

    /// Whether zone `z` can take a write of this job now.
    fn usable(&self, z: &ZoneCursor) -> bool {
        !z.busy && (self.deep_zone_writes() || z.inflight == 0) && z.room() > 0
    }

    /// The `n`th zone the job opened that can take a write now.
    fn nth_usable(&self, st: &JobState, n: usize) -> Option<usize> {
        st.zbd
            .open_set
            .iter()
            .copied()
            .filter(|&i| self.usable(&st.zbd.zone(i)))
            .nth(n)
    }

    /// Whether the job may open one more zone (job_max_open_zones, and a
    /// free open-zone slot of the device: max_open_zones).
    fn may_open(&self, st: &JobState) -> bool {
        st.zbd.open_set.len() < self.job_open_limit() as usize
            && self.slots.open.get() < self.slots.limit.get()
    }

    /// Opens zone `zi` for the job (one of the device's open-zone slots); a
    /// full zone is reset first (fio resets a full zone a writer comes to).
    fn open_zone(&self, st: &mut JobState, zi: usize) -> Result<usize, Step> {
        self.slots.open.set(self.slots.open.get() + 1);
        st.zbd.open(zi);
        let mut z = st.zbd.zone_mut(zi);
        if z.room() == 0 {
            z.busy = true;
            return Err(Step::Reset { zone: zi });
        }
        Ok(zi)
    }

    /// Random writes (fio): a zone the job opened, at random, or another
    /// zone while the job may open more: from a random zone of the range
    /// the first one that is idle (opened), or open and able to take the
    /// write (another job opened it: an open zone is open for every job).
    fn random_write_zone(&self, st: &mut JobState) -> Result<usize, Step> {
        let want_more = st.zbd.open_set.len() < self.job_open_limit() as usize;
        // (counted, not collected: this runs for every write)
        let n_usable = st
            .zbd
            .open_set
            .iter()
            .filter(|&&i| self.usable(&st.zbd.zone(i)))
            .count();
        if n_usable > 0 && (!want_more || st.rng.below_u64(2) == 0) {
            let n = st.rng.below_u64(n_usable as u64) as usize;
            return self.nth_usable(st, n).ok_or(Step::WaitChange);
        }
        if !self.may_open(st) {
            return self.nth_usable(st, 0).ok_or(Step::WaitChange);
        }
        let nz = st.zbd.len();
        let from = st.rng.below_u64(nz as u64) as usize;
        for k in 0..nz {
            let zi = (from + k) % nz;
            let z = st.zbd.zone(zi).clone();
            if z.open {
                if self.usable(&z) && !st.zbd.open_set.contains(&zi) {
                    return Ok(zi);
                }
                continue;
            }
            if z.busy || z.inflight > 0 {
                continue;
            }
            return self.open_zone(st, zi);
        }
        // everything else is busy: use a zone the job holds, or wait
        self.nth_usable(st, 0).ok_or(Step::WaitChange)
    }

    /// Sequential writes (fio): the zone of the job's position, at its
    /// write pointer, which every job writing the zone advances (clones of
    /// a job share it). A zone that fills while the job is in it moves the
    /// job to the next zone; a full zone the job comes to is reset. At the
    /// end of its range the job starts again at its first zone when it
    /// runs on ([`JobRun::seq_writes_wrap`]), else it is done. (Where fio's
    /// zone locks let a clone whose position lags in a zone another clone
    /// just filled reset that zone, the clone moves on here.)
    fn seq_write_zone(&self, st: &mut JobState) -> Result<usize, Step> {
        let nz = st.zbd.len();
        for _ in 0..=nz {
            let zi = st.zbd.next_zone;
            let z = st.zbd.zone(zi).clone();
            if z.room() == 0 && (!st.zbd.arrived || z.open || z.inflight > 0) {
                // filled while the job was in it, or being filled: the next zone
                st.zbd.stop_waiting();
                if zi + 1 < nz {
                    st.zbd.next_zone = zi + 1;
                } else if self.seq_writes_wrap() {
                    st.zbd.next_zone = 0;
                } else {
                    return Err(Step::Done);
                }
                st.zbd.arrived = true;
                continue;
            }
            if z.busy {
                return Err(Step::WaitChange);
            }
            st.zbd.arrived = false;
            if z.open {
                if self.usable(&z) && !st.zbd.gives_way(zi, &z, self.id) {
                    st.zbd.stop_waiting();
                    return Ok(zi);
                }
                st.zbd.wait_on(zi);
                return Err(Step::WaitChange);
            }
            if z.inflight > 0 || !self.may_open(st) {
                return Err(Step::WaitChange);
            }
            st.zbd.stop_waiting();
            return self.open_zone(st, zi);
        }
        Err(Step::WaitChange)
    }

    /// Whether a sequential zbd writer starts again at its range's first
    /// zone at the end of the range (fio's time_based, an io_size, number_ios
    /// or loops beyond the range; a mixed or ZRWA job), resetting the full
    /// zones it comes to; otherwise the end of the range ends it.
    pub(super) fn seq_writes_wrap(&self) -> bool {
        let s = &self.spec;
        s.time_based
            || s.io_size.is_some()
            || s.number_ios > 0
            || s.loops > 1
            || s.rw != crate::job::Rw::Write
            || s.zrwa
    }

    pub(super) fn write_in(&self, st: &mut JobState, zi: usize, bs_lbas: u64) -> Step {
        if self.spec.zrwa && self.spec.rw.is_random() {
            let zrwa_lbas = self.geo.zrwa.as_ref().map_or(bs_lbas, |z| z.size_lbas);
            let (flushed, limit) = {
                let z = st.zbd.zone(zi);
                (z.flushed, z.limit_lbas)
            };
            let window = zrwa_lbas.min(limit - flushed);
            let slots = (window / bs_lbas).max(1);
            let off = flushed + st.rng.below_u64(slots) * bs_lbas;
            let n = bs_lbas.min(limit - off);
            let mut z = st.zbd.zone_mut(zi);
            z.inflight += 1;
            return Step::Write {
                slba: z.start_lba + off,
                bytes: n * self.lba,
                zone: Some(zi),
            };
        }
        let mut z = st.zbd.zone_mut(zi);
        z.last_writer = Some(self.id);
        let n = bs_lbas.min(z.room());
        let slba = z.start_lba + z.next;
        z.next += n;
        z.inflight += 1;
        let zslba = z.start_lba;
        if self.spec.zone_append {
            Step::Append {
                zslba,
                bytes: n * self.lba,
                zone: zi,
            }
        } else {
            Step::Write {
                slba,
                bytes: n * self.lba,
                zone: Some(zi),
            }
        }
    }
}
