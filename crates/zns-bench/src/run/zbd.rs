//! zonemode=zbd data I/O: reads below write pointers, writes at the write
//! pointer of the zones a job holds open (opening, finishing, resetting and
//! waiting as fio's zbd code would), ZRWA windows and their flushes.

use zns_core::{ZoneAction, ZoneDescriptor, ZoneSendCmd, ZoneState};

use super::{send, JobRun, JobState, RunError, Step};

/// A zone of a zbd job's range, as the job sees it.
#[derive(Debug, Clone)]
pub(super) struct ZoneCursor {
    pub(super) start_lba: u64,
    /// LBAs the job may write in it (capacity, or zone_write_limit).
    pub(super) limit_lbas: u64,
    /// Next LBA offset to write (issued so far).
    pub(super) next: u64,
    /// LBAs readable (write pointer at job start, raised by completed writes).
    pub(super) readable: u64,
    pub(super) inflight: u32,
    /// libaio under mq-deadline: since when a request of this job waits in
    /// the scheduler (the zone is write-locked); later writes merge into it
    /// until a later completion dispatches it.
    pub(super) sched_queued_at: Option<u64>,
    /// A reset / finish / open / flush of this zone is in flight.
    pub(super) busy: bool,
    /// Holds an open-zone slot for this job.
    pub(super) open: bool,
    /// Opened with a ZRWA by this job.
    pub(super) zrwa: bool,
    /// LBA offset up to which the ZRWA was explicitly flushed.
    pub(super) flushed: u64,
    /// Completed LBAs since the zone was (re)started by this job.
    pub(super) done: u64,
}

impl ZoneCursor {
    pub(super) fn room(&self) -> u64 {
        self.limit_lbas.saturating_sub(self.next)
    }
}

/// The zones of a job's range as the job sees them (zonemode=zbd data I/O
/// and zone_op jobs), the ones it holds open and its cursors over them.
#[derive(Debug, Default)]
pub(super) struct ZbdState {
    pub(super) zones: Vec<ZoneCursor>,
    /// Zones held open for writing (indexes into `zones`), oldest first.
    pub(super) open_set: Vec<usize>,
    /// Sequential writes: next zone to open.
    pub(super) next_zone: usize,
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
    /// Takes the zones the device reported for the job's range: written up
    /// to their write pointers, writable up to their capacity or
    /// `write_limit_bytes` (zone_write_limit); the ones holding data are
    /// the readable zones.
    pub(super) fn set_zones(
        &mut self,
        zones: &[ZoneDescriptor],
        lba_bytes: u64,
        write_limit_bytes: Option<u64>,
    ) {
        let zones: Vec<ZoneCursor> = zones
            .iter()
            .map(|z| {
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
                    inflight: 0,
                    sched_queued_at: None,
                    busy: false,
                    open: false,
                    zrwa: false,
                    flushed: written,
                    done: written,
                }
            })
            .collect();
        self.read_zones = (0..zones.len())
            .filter(|&i| zones[i].readable > 0)
            .collect();
        self.zones = zones;
    }

    /// Zone `zi` was reset: empty again, nothing in it to read. Returns its
    /// first LBA.
    pub(super) fn reset_done(&mut self, zi: usize) -> u64 {
        let z = &mut self.zones[zi];
        z.next = 0;
        z.readable = 0;
        z.flushed = 0;
        z.done = 0;
        z.zrwa = false;
        self.read_zones.retain(|&i| i != zi);
        z.start_lba
    }

    /// Lets go of every zone held open; returns how many there were.
    pub(super) fn release_all(&mut self) -> u32 {
        let held = self.open_set.len() as u32;
        for zi in std::mem::take(&mut self.open_set) {
            self.zones[zi].open = false;
        }
        held
    }

    /// Lets go of zone `zi` if it is held open; says whether it was.
    fn release(&mut self, zi: usize) -> bool {
        if !self.zones[zi].open {
            return false;
        }
        self.zones[zi].open = false;
        self.open_set.retain(|&i| i != zi);
        true
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
            let z = &mut st.zbd.zones[zi];
            z.inflight -= 1;
            if !rnd_zrwa {
                z.done += lbas;
                z.readable = z.readable.max(z.done);
            }
            if st.zbd.zones[zi].readable > 0 && !st.zbd.read_zones.contains(&zi) {
                st.zbd.read_zones.push(zi);
            }
        }
        while let Some((cmd, key)) = self.zone_followup(zi) {
            let r = self.timed_mgmt(cmd, key).await;
            {
                let mut st = self.st.borrow_mut();
                st.zbd.zones[zi].busy = false;
                if key == "finish" {
                    st.zbd.zones[zi].next = self.geo.zone_cap_bytes / self.lba;
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
        let z = st.zbd.zones[zi].clone();
        if (!z.zrwa && !z.open) || z.inflight > 0 || z.busy {
            return None;
        }
        // explicit ZRWA flush every zrwa_flush_bytes
        if let Some(fb) = self.spec.zrwa_flush_bytes {
            let f = fb.resolve(self.geo.capacity_bytes, self.geo.zone_bytes, self.lba) / self.lba;
            if z.zrwa && f > 0 && z.next - z.flushed >= f {
                let to = z.flushed + (z.next - z.flushed) / f * f;
                st.zbd.zones[zi].flushed = to;
                st.zbd.zones[zi].busy = true;
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
            st.zbd.zones[zi].busy = true;
            st.zbd.zones[zi].readable = z.limit_lbas;
            return Some((send(ZoneAction::Finish, z.start_lba), "finish"));
        }
        if z.zrwa && z.flushed < z.limit_lbas {
            // the last ZRWA data: flush it so the zone becomes full
            st.zbd.zones[zi].busy = true;
            st.zbd.zones[zi].flushed = z.limit_lbas;
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
                    let z = &st.zbd.zones[at_or_after.or(first).unwrap_or(st.zbd.read_zones[0])];
                    let n = bs_lbas.min(z.readable);
                    let off = (lba % zone_lbas) % z.readable / bs_lbas.max(1) * bs_lbas;
                    return Step::Read {
                        slba: z.start_lba + off.min(z.readable - n),
                        bytes: n * self.lba,
                    };
                }
                None => st.rng.below_u64(st.zbd.read_zones.len() as u64) as usize,
            };
            let z = &st.zbd.zones[st.zbd.read_zones[k]];
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
        let nz = st.zbd.zones.len();
        for _ in 0..=nz {
            let (zi, off) = st.zbd.seq_read;
            let z = &st.zbd.zones[zi % nz];
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

    /// A write at the write pointer of a zone the job holds open, opening,
    /// resetting or waiting as fio's zbd code would.
    pub(super) fn zbd_write(&self, st: &mut JobState, bs: u64) -> Step {
        let bs_lbas = bs / self.lba;
        let deep = self.deep_zone_writes();
        let random = self.spec.rw.is_random();
        // zone_reset_threshold / zone_reset_frequency
        if self.spec.zone_reset_frequency > 0.0 {
            let period = (1.0 / self.spec.zone_reset_frequency).ceil().max(1.0) as u64;
            if st.zbd.writes_since_reset_check >= period {
                let written: u64 = st.zbd.zones.iter().map(|z| z.readable).sum();
                let range = (self.len / self.lba).max(1);
                if written as f64 / range as f64 > self.spec.zone_reset_threshold {
                    st.zbd.writes_since_reset_check = 0;
                    let n = st.zbd.zones.len() as u64;
                    let from = st.rng.below_u64(n.max(1)) as usize;
                    for k in 0..st.zbd.zones.len() {
                        let zi = (from + k) % st.zbd.zones.len();
                        let z = &st.zbd.zones[zi];
                        if !z.open && !z.busy && z.inflight == 0 && z.next > 0 {
                            st.zbd.zones[zi].busy = true;
                            return Step::Reset { zone: zi };
                        }
                    }
                }
            }
            st.zbd.writes_since_reset_check += 1;
        }
        // zones held open that can take a write now
        let usable = |z: &ZoneCursor| !z.busy && (deep || z.inflight == 0) && z.room() > 0;
        let want_more = st.zbd.open_set.len() < self.job_open_limit() as usize;
        // (counted, not collected: this runs for every write)
        let n_usable = st
            .zbd
            .open_set
            .iter()
            .filter(|&&i| usable(&st.zbd.zones[i]))
            .count();
        let nth_usable = |st: &JobState, n: usize| {
            st.zbd
                .open_set
                .iter()
                .copied()
                .filter(|&i| usable(&st.zbd.zones[i]))
                .nth(n)
        };
        let use_open = if random {
            // fio: a random offset; its zone if held, else open another while allowed
            if n_usable > 0 && (!want_more || st.rng.below_u64(2) == 0) {
                let n = st.rng.below_u64(n_usable as u64) as usize;
                nth_usable(st, n)
            } else {
                None
            }
        } else {
            nth_usable(st, 0)
        };
        let zi = match use_open {
            Some(zi) => zi,
            None => {
                if !want_more || self.slots.open.get() >= self.slots.limit.get() {
                    match nth_usable(st, 0) {
                        Some(zi) => zi,
                        None => return Step::WaitChange,
                    }
                } else if !random && st.zbd.open_set.iter().any(|&i| st.zbd.zones[i].room() > 0) {
                    // sequential: keep writing the held zone; wait for it
                    return Step::WaitChange;
                } else {
                    // open a new zone
                    let nz = st.zbd.zones.len();
                    let from = if random {
                        st.rng.below_u64(nz as u64) as usize
                    } else {
                        st.zbd.next_zone
                    };
                    let mut chosen = None;
                    for k in 0..nz {
                        let i = (from + k) % nz;
                        let z = &st.zbd.zones[i];
                        if z.open || z.busy || z.inflight > 0 {
                            continue;
                        }
                        chosen = Some(i);
                        break;
                    }
                    let Some(zi) = chosen else {
                        // everything else is busy: use a held zone, or wait
                        return match nth_usable(st, 0) {
                            Some(zi) => self.write_in(st, zi, bs_lbas),
                            None => Step::WaitChange,
                        };
                    };
                    if !random {
                        st.zbd.next_zone = (zi + 1) % nz;
                    }
                    self.slots.open.set(self.slots.open.get() + 1);
                    st.zbd.zones[zi].open = true;
                    st.zbd.open_set.push(zi);
                    if st.zbd.zones[zi].room() == 0 {
                        // full (or at its write limit): reset before writing again
                        st.zbd.zones[zi].busy = true;
                        return Step::Reset { zone: zi };
                    }
                    zi
                }
            }
        };
        if st.zbd.zones[zi].room() == 0 || st.zbd.zones[zi].busy {
            return Step::WaitChange;
        }
        if self.spec.zrwa && !st.zbd.zones[zi].zrwa {
            // first write since the zone was taken (or reset): open it with a ZRWA
            st.zbd.zones[zi].zrwa = true;
            st.zbd.zones[zi].busy = true;
            let zslba = st.zbd.zones[zi].start_lba;
            return Step::Mgmt {
                cmd: send(ZoneAction::Open { zrwa: true }, zslba),
                key: "open",
                zone: zi,
            };
        }
        self.write_in(st, zi, bs_lbas)
    }

    pub(super) fn write_in(&self, st: &mut JobState, zi: usize, bs_lbas: u64) -> Step {
        if self.spec.zrwa && self.spec.rw.is_random() {
            let zrwa_lbas = self.geo.zrwa.as_ref().map_or(bs_lbas, |z| z.size_lbas);
            let z = &st.zbd.zones[zi];
            let window = zrwa_lbas.min(z.limit_lbas - z.flushed);
            let slots = (window / bs_lbas).max(1);
            let off = z.flushed + st.rng.below_u64(slots) * bs_lbas;
            let n = bs_lbas.min(z.limit_lbas - off);
            st.zbd.zones[zi].inflight += 1;
            return Step::Write {
                slba: st.zbd.zones[zi].start_lba + off,
                bytes: n * self.lba,
                zone: Some(zi),
            };
        }
        let z = &mut st.zbd.zones[zi];
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
