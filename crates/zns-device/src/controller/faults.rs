//! Faults and power: power cut and power-on (what survives a cut: the
//! pending-write log, FUA-durable ends, the restart's recovery), a failed
//! controller, and injected read errors and zone faults.

use std::collections::{HashMap, VecDeque};

use rand::Rng;
use zns_core::{NvmeError, NvmeStatus, ZoneDescriptor, ZoneState};
use zns_sim::rng::SimRng;

use super::{Controller, InjectedFault, NsState};
use crate::profile::{CompletedWritePolicy, InFlightWritePolicy, ZrwaPowerPolicy};
use crate::store::StoreError;

impl Controller {
    /// Cuts power now. Commands in flight complete with "aborted due to power
    /// loss"; writes that were not durable survive, vanish or are torn per the
    /// profile's policy and the seed; zone write pointers become what the medium
    /// holds. Until `power_on`, every command fails with Namespace Not Ready.
    pub fn power_cut(&self) {
        let now_ns = self.inner.handle.now_ns();
        let policy = self.inner.profile.power_loss;
        let mut guard = self.inner.state.borrow_mut();
        let st = &mut *guard;
        if !st.powered {
            return;
        }
        st.powered = false;
        st.epoch += 1;
        st.stats.power_cuts += 1;
        st.faults.push(InjectedFault::PowerCut { at_ns: now_ns });

        // Decide the fate of every non-durable write: how many of its blocks reach the medium.
        let mut lost: Vec<(u32, u64, u64)> = Vec::new(); // (ns, first lost lba, end)
        let durable_end = st.power_log.durable_ends(&st.namespaces, now_ns);
        let pending = st.power_log.take_all();
        for w in pending {
            let completed = w.complete_ns <= now_ns;
            if completed && w.fua {
                continue;
            }
            let covered = zone_of_write(&st.namespaces, &w)
                .and_then(|z| durable_end.get(&(w.ns, z)))
                .is_some_and(|&end| w.slba + w.nlb <= end);
            if covered {
                continue;
            }
            let kept_blocks = if completed {
                match policy.completed_unflushed {
                    CompletedWritePolicy::Keep => w.nlb,
                    CompletedWritePolicy::Drop => 0,
                    CompletedWritePolicy::Random => random_fate(&mut st.rng, w.nlb),
                }
            } else {
                match policy.in_flight {
                    InFlightWritePolicy::Drop => 0,
                    InFlightWritePolicy::Torn => st.rng.gen_range(0..w.nlb.max(1)).min(w.nlb),
                    InFlightWritePolicy::Random => random_fate(&mut st.rng, w.nlb),
                }
            };
            if kept_blocks < w.nlb {
                lost.push((w.ns, w.slba + kept_blocks, w.slba + w.nlb));
            }
        }

        let keep_zrwa = policy.zrwa == ZrwaPowerPolicy::Keep;
        for (ns_index, ns) in st.namespaces.iter_mut().enumerate() {
            let ns_lost: Vec<(u64, u64)> = lost
                .iter()
                .filter(|(n, _, _)| *n as usize == ns_index)
                .map(|&(_, a, b)| (a, b))
                .collect();
            match ns {
                NsState::Conventional { store, ftl, config } => {
                    let lba = u64::from(config.lba_bytes);
                    for (a, b) in ns_lost {
                        let _ = store.deallocate(a, b - a);
                        if let Some(ftl) = ftl.as_mut() {
                            ftl.trim(a * lba, (b - a) * lba);
                        }
                    }
                }
                NsState::Zoned { zones, store } => {
                    let cfg = zones.config().clone();
                    // Durable WP of each zone: below the first lost block.
                    let mut first_lost: HashMap<u32, u64> = HashMap::new();
                    for &(a, _) in &ns_lost {
                        if let Some(z) = zones.zone_of(a) {
                            let e = first_lost.entry(z).or_insert(a);
                            *e = (*e).min(a);
                        }
                    }
                    let before: Vec<ZoneDescriptor> = (0..cfg.zone_count)
                        .filter_map(|z| zones.descriptor(z))
                        .collect();
                    let durable = |z: u32| -> u64 {
                        let wp = before[z as usize].write_pointer;
                        first_lost.get(&z).map_or(wp, |&l| l.min(wp))
                    };
                    zones.power_cycle(&durable, keep_zrwa);
                    // Deallocate what no longer stands: lost blocks, and (ZRWA
                    // discarded) everything above the new WP in formerly active zones.
                    for (a, b) in &ns_lost {
                        let _ = store.deallocate(*a, b - a);
                    }
                    for (z, old) in before.iter().enumerate() {
                        let Some(new) = zones.descriptor(z as u32) else {
                            continue;
                        };
                        if new.write_pointer < old.write_pointer && new.state != ZoneState::Full {
                            let _ = store.deallocate(
                                new.write_pointer,
                                old.write_pointer - new.write_pointer,
                            );
                        }
                        if !keep_zrwa && old.attributes.zrwa_valid {
                            if let Some(zrwa) = &cfg.zrwa {
                                let zone_end = old.start_lba + cfg.zone_capacity_lbas;
                                let end = (new.write_pointer + 2 * zrwa.size_lbas).min(zone_end);
                                if end > new.write_pointer {
                                    let _ = store
                                        .deallocate(new.write_pointer, end - new.write_pointer);
                                }
                            }
                        }
                    }
                }
            }
        }
        drop(guard);
        self.inner
            .locks
            .abort_waiting(Err(NvmeError::injected(NvmeStatus::AbortedPowerLoss)));
        let _ = self.persist_metadata();
    }

    /// Restores power after `power_cut`.
    pub fn power_on(&self) {
        self.inner.state.borrow_mut().powered = true;
    }

    /// Fails the whole device: every command from now on (and every command in
    /// flight) fails with Host Pathing Error, marked injected.
    pub fn fail(&self) {
        let now_ns = self.inner.handle.now_ns();
        let mut st = self.inner.state.borrow_mut();
        st.failed = true;
        st.faults
            .push(InjectedFault::DeviceFailed { at_ns: now_ns });
    }

    /// Reads covering `lba` of namespace `nsid` fail with Unrecovered Read Error.
    pub fn inject_read_error(&self, nsid: u32, lba: u64) -> Result<(), NvmeError> {
        if nsid == 0 || nsid > self.namespace_count() {
            return Err(NvmeStatus::InvalidNamespace.into());
        }
        let mut st = self.inner.state.borrow_mut();
        st.read_errors.insert((nsid.saturating_sub(1), lba));
        st.faults.push(InjectedFault::ReadError { nsid, lba });
        Ok(())
    }

    /// Forces a zone read-only (a controller-initiated transition to ZSRO).
    pub fn inject_zone_read_only(&self, nsid: u32, zone: u32) -> Result<(), NvmeError> {
        self.inject_zone_fault(nsid, zone, false)
    }

    /// Forces a zone offline (ZSO).
    pub fn inject_zone_offline(&self, nsid: u32, zone: u32) -> Result<(), NvmeError> {
        self.inject_zone_fault(nsid, zone, true)
    }

    pub(super) fn inject_zone_fault(
        &self,
        nsid: u32,
        zone: u32,
        offline: bool,
    ) -> Result<(), NvmeError> {
        {
            let mut st = self.inner.state.borrow_mut();
            let ns = st
                .namespaces
                .get_mut(nsid.wrapping_sub(1) as usize)
                .ok_or(NvmeError::from(NvmeStatus::InvalidNamespace))?;
            let NsState::Zoned { zones, .. } = ns else {
                return Err(NvmeStatus::InvalidNamespace.into());
            };
            if offline {
                zones.inject_offline(zone)?;
            } else {
                zones.inject_read_only(zone)?;
            }
            st.faults.push(if offline {
                InjectedFault::ZoneOffline { nsid, zone }
            } else {
                InjectedFault::ZoneReadOnly { nsid, zone }
            });
        }
        self.persist_metadata()
            .map_err(|_| NvmeError::from(NvmeStatus::InternalError))?;
        Ok(())
    }

    /// Power-on of an image after the last process ended (cleanly or not):
    /// open zones become closed, and data past a zone's write pointer (and
    /// past its ZRWA, if it holds one) — written after the last saved zone
    /// table — is deallocated, so nothing beyond the WP is claimed.
    pub(super) fn restore_after_restart(&self, discard_past_wp: bool) -> Result<(), StoreError> {
        let mut st = self.inner.state.borrow_mut();
        for ns in st.namespaces.iter_mut() {
            if let NsState::Zoned { zones, store } = ns {
                let cfg = zones.config().clone();
                let wps: Vec<u64> = (0..cfg.zone_count)
                    .map(|z| zones.descriptor(z).map_or(0, |d| d.write_pointer))
                    .collect();
                zones.power_cycle(&|z| wps[z as usize], true);
                if !discard_past_wp {
                    continue;
                }
                for z in 0..cfg.zone_count {
                    let Some(d) = zones.descriptor(z) else {
                        continue;
                    };
                    if !matches!(d.state, ZoneState::Empty | ZoneState::Closed) {
                        continue;
                    }
                    let zrwa_lbas = match (&cfg.zrwa, d.attributes.zrwa_valid) {
                        (Some(w), true) => 2 * w.size_lbas,
                        _ => 0,
                    };
                    let zone_end = d.start_lba + cfg.zone_size_lbas;
                    let keep_end = (d.write_pointer + zrwa_lbas).min(zone_end);
                    if keep_end < zone_end {
                        store.deallocate(keep_end, zone_end - keep_end)?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn random_fate(rng: &mut SimRng, nlb: u64) -> u64 {
    match rng.gen_range(0..3u32) {
        0 => nlb,
        1 => 0,
        _ => rng.gen_range(0..nlb.max(1)),
    }
}

/// A write that is not durable yet.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingWrite {
    pub(super) ns: u32,
    pub(super) slba: u64,
    pub(super) nlb: u64,
    pub(super) complete_ns: u64,
    pub(super) fua: bool,
}

/// The power-fail log: every write that is not durable yet, oldest first.
/// A power cut decides the fate of each; a flush, a zone reset and later
/// FUA writes take writes off it.
pub(super) struct PowerLog {
    writes: VecDeque<PendingWrite>,
    /// Log length at which `log` next drops the writes later FUA writes
    /// made durable (doubles with what stays, at least 1024).
    retain_at_len: usize,
}

impl PowerLog {
    pub(super) fn new() -> PowerLog {
        PowerLog {
            writes: VecDeque::new(),
            retain_at_len: 1024,
        }
    }

    /// Logs `w`, accepted at `now_ns`, dropping the writes that can no
    /// longer be lost.
    pub(super) fn log(
        &mut self,
        namespaces: &[NsState],
        w: PendingWrite,
        now_ns: u64,
        completed_policy: CompletedWritePolicy,
    ) {
        // Completed writes that can no longer be lost need no log entry.
        let settled = |p: &PendingWrite| {
            p.complete_ns <= now_ns && (p.fua || completed_policy == CompletedWritePolicy::Keep)
        };
        while self.writes.front().is_some_and(settled) {
            self.writes.pop_front();
        }
        self.writes.push_back(w);
        if self.writes.len() >= self.retain_at_len {
            // Also drop writes made durable by a later completed FUA write to the same zone.
            let durable_end = self.durable_ends(namespaces, now_ns);
            self.writes.retain(|p| {
                if settled(p) {
                    return false;
                }
                match zone_of_write(namespaces, p).and_then(|z| durable_end.get(&(p.ns, z))) {
                    Some(&end) => p.slba + p.nlb > end,
                    None => true,
                }
            });
            self.retain_at_len = (self.writes.len() * 2).max(1024);
        }
    }

    /// Per (namespace, zone): the end LBA of the furthest FUA write completed by
    /// `now_ns`. A zone's medium is written in order, so everything before it in the
    /// zone is durable too — except in a zone holding a ZRWA, whose writes land in
    /// any order inside the window: there a FUA write makes only its own data
    /// durable.
    pub(super) fn durable_ends(
        &self,
        namespaces: &[NsState],
        now_ns: u64,
    ) -> HashMap<(u32, u32), u64> {
        let mut durable_end: HashMap<(u32, u32), u64> = HashMap::new();
        for w in self
            .writes
            .iter()
            .filter(|w| w.fua && w.complete_ns <= now_ns)
        {
            if let Some(z) =
                zone_of_write(namespaces, w).filter(|&z| !zone_has_zrwa(namespaces, w.ns, z))
            {
                let e = durable_end.entry((w.ns, z)).or_insert(0);
                *e = (*e).max(w.slba + w.nlb);
            }
        }
        durable_end
    }

    /// Empties the log (a power cut decides the fate of what it held).
    pub(super) fn take_all(&mut self) -> Vec<PendingWrite> {
        self.writes.drain(..).collect()
    }

    /// Zone `[start, start + zone_lbas)` of namespace `ns` was reset: its
    /// writes are gone, nothing of them to lose.
    pub(super) fn forget_zone(&mut self, ns: u32, start: u64, zone_lbas: u64) {
        self.writes
            .retain(|w| w.ns != ns || w.slba < start || w.slba >= start + zone_lbas);
    }

    /// A flush submitted at `submit_ns` completed: everything completed
    /// before it is durable.
    pub(super) fn flushed(&mut self, submit_ns: u64) {
        self.writes.retain(|w| w.complete_ns > submit_ns);
    }
}

/// A ZRWA is allocated to the zone now.
fn zone_has_zrwa(namespaces: &[NsState], ns: u32, zone: u32) -> bool {
    match &namespaces[ns as usize] {
        NsState::Zoned { zones, .. } => zones
            .descriptor(zone)
            .is_some_and(|d| d.attributes.zrwa_valid),
        NsState::Conventional { .. } => false,
    }
}

/// The zone a pending write went to (None on a conventional namespace).
fn zone_of_write(namespaces: &[NsState], w: &PendingWrite) -> Option<u32> {
    match &namespaces[w.ns as usize] {
        NsState::Zoned { zones, .. } => zones.zone_of(w.slba),
        NsState::Conventional { .. } => None,
    }
}
