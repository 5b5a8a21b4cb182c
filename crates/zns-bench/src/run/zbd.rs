//! zonemode=zbd data I/O: reads below write pointers, writes at the write
//! pointer of the zones a job holds open (opening, finishing, resetting and
//! waiting as fio's zbd code would), ZRWA windows and their flushes.

use super::*;

impl JobRun {
    /// Bookkeeping after a write of `lbas` to zone `zi` completed: readable
    /// data, then the zone's follow-up commands (ZRWA flushes, the finish of a
    /// zone_write_limit zone) until it needs none, retiring a zone whose
    /// writes are all done from the open set.
    pub(super) async fn zone_write_done(&self, zi: usize, lbas: u64) -> Result<(), RunError> {
        {
            let mut st = self.st.borrow_mut();
            let rnd_zrwa = self.spec.zrwa && self.spec.rw.is_random();
            let z = &mut st.zones[zi];
            z.inflight -= 1;
            if !rnd_zrwa {
                z.done += lbas;
                z.readable = z.readable.max(z.done);
            }
            if st.zones[zi].readable > 0 && !st.read_zones.contains(&zi) {
                st.read_zones.push(zi);
            }
        }
        while let Some((cmd, key)) = self.zone_followup(zi) {
            let r = self.timed_mgmt(cmd, key).await;
            {
                let mut st = self.st.borrow_mut();
                st.zones[zi].busy = false;
                if key == "finish" {
                    st.zones[zi].next = self.geo.zone_cap_bytes / self.lba;
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
        let z = st.zones[zi].clone();
        if (!z.zrwa && !z.open) || z.inflight > 0 || z.busy {
            return None;
        }
        // explicit ZRWA flush every zrwa_flush_bytes
        if let Some(fb) = self.spec.zrwa_flush_bytes {
            let f = fb.resolve(self.geo.capacity_bytes, self.geo.zone_bytes, self.lba) / self.lba;
            if z.zrwa && f > 0 && z.next - z.flushed >= f {
                let to = z.flushed + (z.next - z.flushed) / f * f;
                st.zones[zi].flushed = to;
                st.zones[zi].busy = true;
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
            st.zones[zi].busy = true;
            st.zones[zi].readable = z.limit_lbas;
            return Some((send(ZoneAction::Finish, z.start_lba), "finish"));
        }
        if z.zrwa && z.flushed < z.limit_lbas {
            // the last ZRWA data: flush it so the zone becomes full
            st.zones[zi].busy = true;
            st.zones[zi].flushed = z.limit_lbas;
            return Some((
                send(ZoneAction::FlushZrwa, z.start_lba + z.limit_lbas - 1),
                "zrwa_flush",
            ));
        }
        self.release_zone(&mut st, zi);
        None
    }

    pub(super) fn release_zone(&self, st: &mut JobState, zi: usize) {
        if st.zones[zi].open {
            st.zones[zi].open = false;
            st.open_set.retain(|&i| i != zi);
            self.zbd.open.set(self.zbd.open.get().saturating_sub(1));
        }
    }

    /// A read below a write pointer (fio's zbd rule).
    pub(super) fn zbd_read(&self, st: &mut JobState, bs: u64) -> Step {
        let bs_lbas = bs / self.lba;
        if st.read_zones.is_empty() {
            return if st.open_set.is_empty() && !self.spec.rw.has_writes() {
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
                    let at_or_after = st.read_zones.iter().copied().filter(|&i| i >= zi).min();
                    let first = st.read_zones.iter().copied().min();
                    let z = &st.zones[at_or_after.or(first).unwrap_or(st.read_zones[0])];
                    let n = bs_lbas.min(z.readable);
                    let off = (lba % zone_lbas) % z.readable / bs_lbas.max(1) * bs_lbas;
                    return Step::Read(z.start_lba + off.min(z.readable - n), n * self.lba);
                }
                None => st.rng.below_u64(st.read_zones.len() as u64) as usize,
            };
            let z = &st.zones[st.read_zones[k]];
            let blocks = (z.readable / bs_lbas).max(1);
            let n = bs_lbas.min(z.readable);
            let off = st.rng.below_u64(blocks) * bs_lbas;
            let off = off.min(z.readable - n);
            return Step::Read(z.start_lba + off, n * self.lba);
        }
        // sequential: zone by zone up to the readable end, wrapping
        let nz = st.zones.len();
        for _ in 0..=nz {
            let (zi, off) = st.seq_read;
            let z = &st.zones[zi % nz];
            if off < z.readable {
                let n = bs_lbas.min(z.readable - off);
                let slba = z.start_lba + off;
                st.seq_read = (zi % nz, off + n);
                return Step::Read(slba, n * self.lba);
            }
            st.seq_read = ((zi + 1) % nz, 0);
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
            if st.writes_since_reset_check >= period {
                let written: u64 = st.zones.iter().map(|z| z.readable).sum();
                let range = (self.len / self.lba).max(1);
                if written as f64 / range as f64 > self.spec.zone_reset_threshold {
                    st.writes_since_reset_check = 0;
                    let n = st.zones.len() as u64;
                    let from = st.rng.below_u64(n.max(1)) as usize;
                    for k in 0..st.zones.len() {
                        let zi = (from + k) % st.zones.len();
                        let z = &st.zones[zi];
                        if !z.open && !z.busy && z.inflight == 0 && z.next > 0 {
                            st.zones[zi].busy = true;
                            return Step::Reset(zi);
                        }
                    }
                }
            }
            st.writes_since_reset_check += 1;
        }
        // zones held open that can take a write now
        let usable = |z: &ZoneCursor| !z.busy && (deep || z.inflight == 0) && z.room() > 0;
        let want_more = st.open_set.len() < self.job_open_limit() as usize;
        // (counted, not collected: this runs for every write)
        let n_usable = st
            .open_set
            .iter()
            .filter(|&&i| usable(&st.zones[i]))
            .count();
        let nth_usable = |st: &JobState, n: usize| {
            st.open_set
                .iter()
                .copied()
                .filter(|&i| usable(&st.zones[i]))
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
                if !want_more || self.zbd.open.get() >= self.zbd.limit.get() {
                    match nth_usable(st, 0) {
                        Some(zi) => zi,
                        None => return Step::WaitChange,
                    }
                } else if !random && st.open_set.iter().any(|&i| st.zones[i].room() > 0) {
                    // sequential: keep writing the held zone; wait for it
                    return Step::WaitChange;
                } else {
                    // open a new zone
                    let nz = st.zones.len();
                    let from = if random {
                        st.rng.below_u64(nz as u64) as usize
                    } else {
                        st.next_zone
                    };
                    let mut chosen = None;
                    for k in 0..nz {
                        let i = (from + k) % nz;
                        let z = &st.zones[i];
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
                        st.next_zone = (zi + 1) % nz;
                    }
                    self.zbd.open.set(self.zbd.open.get() + 1);
                    st.zones[zi].open = true;
                    st.open_set.push(zi);
                    if st.zones[zi].room() == 0 {
                        // full (or at its write limit): reset before writing again
                        st.zones[zi].busy = true;
                        return Step::Reset(zi);
                    }
                    zi
                }
            }
        };
        if st.zones[zi].room() == 0 || st.zones[zi].busy {
            return Step::WaitChange;
        }
        if self.spec.zrwa && !st.zones[zi].zrwa {
            // first write since the zone was taken (or reset): open it with a ZRWA
            st.zones[zi].zrwa = true;
            st.zones[zi].busy = true;
            let zslba = st.zones[zi].start_lba;
            return Step::Mgmt(send(ZoneAction::Open { zrwa: true }, zslba), "open", zi);
        }
        self.write_in(st, zi, bs_lbas)
    }

    pub(super) fn write_in(&self, st: &mut JobState, zi: usize, bs_lbas: u64) -> Step {
        if self.spec.zrwa && self.spec.rw.is_random() {
            let zrwa_lbas = self.geo.zrwa.as_ref().map_or(bs_lbas, |z| z.size_lbas);
            let z = &st.zones[zi];
            let window = zrwa_lbas.min(z.limit_lbas - z.flushed);
            let slots = (window / bs_lbas).max(1);
            let off = z.flushed + st.rng.below_u64(slots) * bs_lbas;
            let n = bs_lbas.min(z.limit_lbas - off);
            st.zones[zi].inflight += 1;
            return Step::Write(st.zones[zi].start_lba + off, n * self.lba, zi);
        }
        let z = &mut st.zones[zi];
        let n = bs_lbas.min(z.room());
        let slba = z.start_lba + z.next;
        z.next += n;
        z.inflight += 1;
        let zslba = z.start_lba;
        if self.spec.zone_append {
            Step::Append(zslba, n * self.lba, zi)
        } else {
            Step::Write(slba, n * self.lba, zi)
        }
    }
}
