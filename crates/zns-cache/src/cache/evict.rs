//! Eviction: the background task and its rounds, ZPLRU's whole-zone
//! reclaim and CLRU's chunk eviction with host GC (the log zone's
//! collection, the GC slot).

use std::collections::{HashSet, VecDeque};
use std::future::{poll_fn, Future};
use std::hash::BuildHasherDefault;
use std::pin::pin;
use std::rc::Rc;
use std::task::Poll;

use super::{Cache, Geometry, Policy, SpaceMode, State};
use crate::error::CacheError;
use crate::keymap::{IdHasher, IdMap};

/// Where a zone (or a slot-mode region) is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ZoneState {
    Free,
    /// Partly written, no writer inside.
    Active,
    /// A writer (insert or GC) is inside.
    Writing,
    Full,
    /// Being evicted or collected.
    Reclaiming,
}

/// One zone (or slot-mode region) of the cache.
#[derive(Debug, Clone, Copy)]
pub(super) struct Zone {
    pub(super) state: ZoneState,
    /// Next slot to write (log mode).
    pub(super) next_slot: u32,
    /// Chunks in it that are mapped.
    pub(super) valid: u32,
    /// Slot-mode chunks being written into this region.
    pub(super) writing: u32,
    /// Gets reading a chunk of it now.
    pub(super) readers: u32,
}

/// The cache's space: its zones and chunk slots (global slot `g` is slot
/// `g % chunks_per_zone` of zone `g / chunks_per_zone`), what each holds,
/// and the free lists writers take space from. Eviction gives space back.
pub(super) struct Space {
    /// The key each slot holds.
    pub(super) slot_key: Vec<Option<u32>>,
    pub(super) zones: Vec<Zone>,
    /// Log mode: free zones, in the order they were freed.
    pub(super) free: VecDeque<u32>,
    /// Log mode: active zones no writer is in.
    pub(super) idle_active: VecDeque<u32>,
    /// Log mode: zones opened for inserts and not full yet.
    pub(super) insert_active: u32,
    /// Log mode: the zone host GC copies into.
    pub(super) gc_zone: Option<u32>,
    /// Slot mode: slots free to write, FIFO.
    pub(super) free_slots: VecDeque<u32>,
    /// Slot mode: gets reading each slot now.
    pub(super) slot_readers: IdMap<u32>,
    /// Slot mode: evicted slots that become free when their readers leave.
    pub(super) deferred_free: HashSet<u32, BuildHasherDefault<IdHasher>>,
    /// Mapped chunks.
    pub(super) valid: u64,
}

impl Space {
    /// A fresh cache's space: every zone free (log mode) or every slot free
    /// (slot mode).
    pub(super) fn new(geo: &Geometry) -> Space {
        let total = geo.total_chunks as usize;
        Space {
            slot_key: vec![None; total],
            zones: vec![
                Zone {
                    state: ZoneState::Free,
                    next_slot: 0,
                    valid: 0,
                    writing: 0,
                    readers: 0,
                };
                geo.zones as usize
            ],
            free: (0..geo.zones).collect(),
            idle_active: VecDeque::new(),
            insert_active: 0,
            gc_zone: None,
            free_slots: if geo.mode == SpaceMode::Slots {
                (0..total as u32).collect()
            } else {
                VecDeque::new()
            },
            slot_readers: IdMap::default(),
            deferred_free: HashSet::default(),
            valid: 0,
        }
    }

    /// Zones (regions) in state `state`.
    pub(super) fn count(&self, state: ZoneState) -> usize {
        self.zones.iter().filter(|z| z.state == state).count()
    }

    /// Slot-mode chunks being written now.
    pub(super) fn writing(&self) -> u64 {
        self.zones.iter().map(|z| u64::from(z.writing)).sum()
    }
}

impl Cache {
    pub(super) async fn eviction_task(self: Rc<Self>) {
        loop {
            if self.stopped.get() {
                return;
            }
            let due = {
                let st = self.st.borrow();
                !st.evicting && st.failure.is_none() && self.wants_eviction(&st)
            };
            if due {
                match self.evict_round(false).await {
                    Err(e) => {
                        self.st.borrow_mut().failure = Some(e.to_string());
                        self.space_changed.notify_waiters();
                        return;
                    }
                    Ok(true) => continue,
                    // Nothing could be freed now (e.g. no zone is full yet):
                    // wait for the next poll or wake-up.
                    Ok(false) => {}
                }
            }
            let mut sleep = pin!(self.handle.sleep(self.cfg.eviction_interval_ns));
            let mut wake = pin!(self.evict_wake.notified());
            poll_fn(|cx| {
                if sleep.as_mut().poll(cx).is_ready() || wake.as_mut().poll(cx).is_ready() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
        }
    }

    /// One eviction round (at most one runs at a time). `foreground`: a
    /// writer found no space; evict even if no watermark is crossed.
    /// Returns whether anything was freed.
    pub(super) async fn evict_round(self: &Rc<Self>, foreground: bool) -> Result<bool, CacheError> {
        {
            let mut st = self.st.borrow_mut();
            if st.evicting {
                return Ok(false);
            }
            st.evicting = true;
            if foreground {
                st.counters.foreground_evictions += 1;
            }
        }
        let r = match (self.cfg.policy, self.geo.mode) {
            (Policy::Zplru, _) => self.evict_zplru(foreground).await,
            (Policy::Clru, SpaceMode::Slots) => self.evict_clru_slots(foreground).await,
            (Policy::Clru, SpaceMode::Log) => self.evict_clru_log(foreground).await,
        };
        let wake = {
            let mut st = self.st.borrow_mut();
            st.evicting = false;
            // Writers waiting for space wake when space was freed, on an
            // error, or when nothing else could wake them (no write in
            // flight): then one of them evicts in the foreground. Waking them
            // after a round that freed nothing while writes are in flight
            // would only make them wake the evictor again, at the same instant.
            let writing: u64 = match self.geo.mode {
                SpaceMode::Slots => st.space.writing(),
                SpaceMode::Log => u64::from(st.space.insert_active),
            };
            !matches!(r, Ok(false)) || writing == 0
        };
        if wake {
            self.space_changed.notify_waiters();
        }
        r
    }

    pub(super) fn mark_first_eviction(&self, st: &mut State) {
        if st.first_eviction_ns.is_none() {
            st.first_eviction_ns = Some(self.handle.now_ns());
        }
    }

    pub(super) async fn evict_zplru(self: &Rc<Self>, foreground: bool) -> Result<bool, CacheError> {
        let mut progress = false;
        {
            let st = self.st.borrow();
            if !foreground && st.space.free.len() as u32 > self.cfg.zone_high {
                return Ok(false);
            }
        }
        loop {
            let victim = {
                let mut st = self.st.borrow_mut();
                if st.space.free.len() as u32 >= self.cfg.zone_low {
                    None
                } else {
                    st.zone_lru.pop_front()
                }
            };
            let Some(z) = victim else { break };
            self.reclaim_zone(z).await?;
            progress = true;
        }
        Ok(progress)
    }

    /// Drops every key of zone `z`, waits for its readers, resets it, frees it.
    pub(super) async fn reclaim_zone(&self, z: u32) -> Result<(), CacheError> {
        {
            let mut st = self.st.borrow_mut();
            self.mark_first_eviction(&mut st);
            st.space.zones[z as usize].state = ZoneState::Reclaiming;
            let cpz = self.geo.chunks_per_zone;
            for g in z * cpz..(z + 1) * cpz {
                if let Some(k) = st.space.slot_key[g as usize].take() {
                    st.map.remove(&k);
                    st.chunk_lru.remove(g);
                    st.space.valid -= 1;
                    st.counters.evicted_chunks += 1;
                }
            }
            st.space.zones[z as usize].valid = 0;
        }
        self.free_zone(z).await
    }

    /// The end of reclaiming or collecting zone `z` (its keys already
    /// dropped): waits for its readers, resets it, returns it to the free
    /// list and wakes the writers waiting for space.
    async fn free_zone(&self, z: u32) -> Result<(), CacheError> {
        self.wait_readers(z).await;
        self.dev
            .reset_zone(self.geo.zone_slba(z))
            .await
            .map_err(CacheError::io("zone reset"))?;
        let mut st = self.st.borrow_mut();
        let zone = &mut st.space.zones[z as usize];
        zone.state = ZoneState::Free;
        zone.next_slot = 0;
        st.space.free.push_back(z);
        st.counters.zone_resets += 1;
        drop(st);
        self.space_changed.notify_waiters();
        Ok(())
    }

    pub(super) async fn wait_readers(&self, z: u32) {
        loop {
            if self.st.borrow().space.zones[z as usize].readers == 0 {
                return;
            }
            self.drained.notified().await;
        }
    }

    /// CLRU: invalidates global slot `g` (drops its key). Slot mode returns
    /// the slot to the free list (or defers that until its readers leave).
    pub(super) fn invalidate(&self, st: &mut State, g: u32) -> Option<u32> {
        let k = st.space.slot_key[g as usize].take()?;
        st.map.remove(&k);
        st.chunk_lru.remove(g);
        st.space.zones[(g / self.geo.chunks_per_zone) as usize].valid -= 1;
        st.space.valid -= 1;
        st.counters.evicted_chunks += 1;
        self.mark_first_eviction(st);
        if self.geo.mode == SpaceMode::Slots {
            if st.space.slot_readers.contains_key(&g) {
                st.space.deferred_free.insert(g);
            } else {
                st.space.free_slots.push_back(g);
            }
        }
        Some(k)
    }

    pub(super) async fn evict_clru_slots(
        self: &Rc<Self>,
        foreground: bool,
    ) -> Result<bool, CacheError> {
        let mut progress = false;
        let trigger = {
            let st = self.st.borrow();
            foreground || st.space.free_slots.len() as u64 <= self.geo.chunk_high
        };
        if !trigger {
            return Ok(false);
        }
        loop {
            let freed = {
                let mut st = self.st.borrow_mut();
                if (st.space.free_slots.len() + st.space.deferred_free.len()) as u64
                    >= self.geo.chunk_low
                {
                    None
                } else {
                    match st.chunk_lru.pop_front() {
                        Some(g) => self.invalidate(&mut st, g).map(|_| g),
                        None => None,
                    }
                }
            };
            let Some(g) = freed else { break };
            progress = true;
            self.dev
                .free_slot(self.geo.slot_slba(g), self.geo.chunk_lbas)
                .await
                .map_err(CacheError::io("deallocate"))?;
        }
        if progress {
            self.space_changed.notify_waiters();
        }
        Ok(progress)
    }

    pub(super) async fn evict_clru_log(
        self: &Rc<Self>,
        foreground: bool,
    ) -> Result<bool, CacheError> {
        let mut progress = false;
        let cpz = self.geo.chunks_per_zone;
        // Evicts LRU chunks up to the low watermark when free chunk slots
        // are at the high one (or always, in the foreground).
        let evict_chunks = |st: &mut State, force: bool| {
            let mut evicted = false;
            if force || self.geo.total_chunks - st.space.valid <= self.geo.chunk_high {
                while self.geo.total_chunks - st.space.valid < self.geo.chunk_low {
                    let Some(g) = st.chunk_lru.pop_front() else {
                        break;
                    };
                    self.invalidate(st, g);
                    evicted = true;
                }
            }
            evicted
        };
        progress |= evict_chunks(&mut self.st.borrow_mut(), foreground);
        let collect = {
            let st = self.st.borrow();
            foreground || st.space.free.len() as u32 <= self.cfg.zone_high
        };
        if !collect {
            return Ok(progress);
        }
        loop {
            let victim = {
                let mut st = self.st.borrow_mut();
                if st.space.free.len() as u32 >= self.cfg.zone_low {
                    break;
                }
                // Collections use up free chunk slots (the GC zone fills):
                // top them up before each one, or the GC would go on moving
                // nearly full zones to free a chunk or two each.
                progress |= evict_chunks(&mut st, false);
                let best = st
                    .space
                    .zones
                    .iter()
                    .enumerate()
                    .filter(|(_, z)| z.state == ZoneState::Full)
                    .min_by_key(|(i, z)| (z.valid, *i))
                    .map(|(i, z)| (i as u32, z.valid));
                match best {
                    None => break,
                    Some((_, v)) if v >= cpz => {
                        // No full zone has an invalid chunk: evict the LRU
                        // chunk and look again.
                        match st.chunk_lru.pop_front() {
                            Some(g) => {
                                self.invalidate(&mut st, g);
                                progress = true;
                                continue;
                            }
                            None => break,
                        }
                    }
                    Some((z, _)) => z,
                }
            };
            self.collect_zone(victim).await?;
            progress = true;
        }
        Ok(progress)
    }

    /// Host GC of zone `v`: copy its valid chunks to the GC zone, switch the
    /// map, reset `v`.
    pub(super) async fn collect_zone(&self, v: u32) -> Result<(), CacheError> {
        let cpz = self.geo.chunks_per_zone;
        self.st.borrow_mut().space.zones[v as usize].state = ZoneState::Reclaiming;
        for g in v * cpz..(v + 1) * cpz {
            let key = {
                let mut st = self.st.borrow_mut();
                match st.space.slot_key[g as usize] {
                    Some(k) => {
                        st.space.zones[v as usize].readers += 1;
                        Some(k)
                    }
                    None => None,
                }
            };
            let Some(key) = key else { continue };
            let dst = self.gc_slot();
            let dst = match dst {
                Ok(d) => d,
                Err(e) => {
                    self.st.borrow_mut().space.zones[v as usize].readers -= 1;
                    return Err(e);
                }
            };
            let r = self.copy_chunk(g, dst).await;
            let dz = dst / cpz;
            let r = match r {
                Ok(()) if (dst % cpz) + 1 == cpz && self.geo.finish_full_zones => self
                    .dev
                    .finish_zone(self.geo.zone_slba(dz))
                    .await
                    .map_err(CacheError::io("zone finish")),
                other => other,
            };
            let mut st = self.st.borrow_mut();
            st.space.zones[v as usize].readers -= 1;
            st.space.zones[dz as usize].next_slot += 1;
            if r.is_ok()
                && st.space.slot_key[g as usize] == Some(key)
                && st.map.get(&key) == Some(&g)
            {
                st.space.slot_key[g as usize] = None;
                st.space.slot_key[dst as usize] = Some(key);
                st.map.insert(key, dst);
                st.space.zones[v as usize].valid -= 1;
                st.space.zones[dz as usize].valid += 1;
                st.chunk_lru.replace(g, dst);
                st.counters.gc_relocations += 1;
                st.counters.gc_relocated_bytes += self.geo.chunk_bytes;
            }
            self.return_zone(&mut st, dz, true);
            drop(st);
            r?;
        }
        {
            let mut st = self.st.borrow_mut();
            // Anything left (nothing, unless a key changed under us) is dropped.
            for g in v * cpz..(v + 1) * cpz {
                if st.space.slot_key[g as usize].is_some() {
                    self.invalidate(&mut st, g);
                }
            }
            st.space.zones[v as usize].valid = 0;
        }
        self.free_zone(v).await
    }

    /// The next slot of the GC zone (opening one from the free list, the
    /// reserved zone included).
    pub(super) fn gc_slot(&self) -> Result<u32, CacheError> {
        let mut st = self.st.borrow_mut();
        let z = match st.space.gc_zone {
            Some(z) => z,
            None => {
                let Some(z) = st.space.free.pop_front() else {
                    return Err(CacheError::Internal(
                        "host GC found no free zone (the GC reserve was used by inserts)".into(),
                    ));
                };
                st.space.zones[z as usize].state = ZoneState::Writing;
                st.space.gc_zone = Some(z);
                z
            }
        };
        let s = st.space.zones[z as usize].next_slot;
        Ok(z * self.geo.chunks_per_zone + s)
    }
}
